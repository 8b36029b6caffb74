#include "widgets/charts/chart_colors.h"

namespace kvl::widgets {

namespace {
QColor mix(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(static_cast<float>(a.redF() * (1 - t) + b.redF() * t),
                            static_cast<float>(a.greenF() * (1 - t) + b.greenF() * t),
                            static_cast<float>(a.blueF() * (1 - t) + b.blueF() * t));
}

ChartColors build(const QColor& bg, const QColor& fg, bool dark) {
    ChartColors c;
    c.dark = dark;
    c.background = bg;
    c.foreground = fg;
    c.axis = mix(bg, fg, 0.75);
    c.grid = mix(bg, fg, 0.18);
    c.subGrid = mix(bg, fg, 0.08);
    c.legendBackground = bg;
    c.legendBackground.setAlpha(225);
    c.current = fg;
    c.cursor = mix(bg, fg, 0.55);
    if (!dark) {
        c.steps = {QColor(0xD5, 0x5E, 0x00), QColor(0xE6, 0x9F, 0x00), QColor(0x00, 0x9E, 0x73),
                   QColor(0xCC, 0x79, 0xA7), QColor(0x00, 0x72, 0xB2)};
        c.kvLine = QColor(0xC0, 0x1C, 0x28);
        c.weights = QColor(0x5B, 0x6C, 0x7D);
        c.kv = QColor(0x00, 0x72, 0xB2);
        c.activations = QColor(0xE6, 0x9F, 0x00);
        c.free = QColor(0xC8, 0xE6, 0xC9);
        c.reserved = QColor(0xDD, 0xDD, 0xDD);
        c.overflow = QColor(0xC0, 0x1C, 0x28);
        c.cap = QColor(0x6A, 0x3D, 0x9A);
    } else {
        c.steps = {QColor(0xFF, 0x8A, 0x3D), QColor(0xF5, 0xC2, 0x42), QColor(0x3D, 0xD6, 0xA6),
                   QColor(0xE8, 0x9C, 0xC8), QColor(0x6C, 0xB8, 0xF0)};
        c.kvLine = QColor(0xFF, 0x6B, 0x6B);
        c.weights = QColor(0x9A, 0xA8, 0xB6);
        c.kv = QColor(0x4F, 0xA8, 0xE8);
        c.activations = QColor(0xF5, 0xC2, 0x42);
        c.free = QColor(0x2E, 0x5E, 0x3E);
        c.reserved = QColor(0x4A, 0x4A, 0x4A);
        c.overflow = QColor(0xFF, 0x6B, 0x6B);
        c.cap = QColor(0xC3, 0x9B, 0xE8);
    }
    return c;
}
} // namespace

ChartColors ChartColors::fromPalette(const QPalette& palette) {
    const QColor bg = palette.color(QPalette::Base);
    const QColor fg = palette.color(QPalette::Text);
    return build(bg, fg, bg.lightness() < 128);
}

ChartColors ChartColors::light() {
    return build(Qt::white, QColor(0x20, 0x20, 0x20), false);
}

} // namespace kvl::widgets
