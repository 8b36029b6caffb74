#include "widgets/charts/chart_colors.h"

namespace kvl::widgets {

namespace {
QColor mix(const QColor& a, const QColor& b, double t) {
    return QColor::fromRgbF(static_cast<float>(a.redF() * (1 - t) + b.redF() * t),
                            static_cast<float>(a.greenF() * (1 - t) + b.greenF() * t),
                            static_cast<float>(a.blueF() * (1 - t) + b.blueF() * t));
}

// The colours a theme sets besides the steps, in the order of Hues::parts.
constexpr std::array<QColor ChartColors::*, 8> kPartFields{
    &ChartColors::kvLine, &ChartColors::weights,  &ChartColors::kv,       &ChartColors::activations,
    &ChartColors::free,   &ChartColors::reserved, &ChartColors::overflow, &ChartColors::cap};
// A theme's hues (opaque RGB): Okabe-Ito on a light background, each lightened on a dark one.
struct Hues {
    std::array<QRgb, 5> steps;
    std::array<QRgb, 8> parts; // as kPartFields
};
constexpr Hues kLightHues{
    {0xD55E00, 0xE69F00, 0x009E73, 0xCC79A7, 0x0072B2},
    {0xC01C28, 0x5B6C7D, 0x0072B2, 0xE69F00, 0xC8E6C9, 0xDDDDDD, 0xC01C28, 0x6A3D9A}};
constexpr Hues kDarkHues{
    {0xFF8A3D, 0xF5C242, 0x3DD6A6, 0xE89CC8, 0x6CB8F0},
    {0xFF6B6B, 0x9AA8B6, 0x4FA8E8, 0xF5C242, 0x2E5E3E, 0x4A4A4A, 0xFF6B6B, 0xC39BE8}};

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
    const Hues& h = dark ? kDarkHues : kLightHues;
    for (std::size_t i = 0; i < c.steps.size(); ++i)
        c.steps[i] = QColor(h.steps[i]);
    for (std::size_t i = 0; i < kPartFields.size(); ++i)
        c.*kPartFields[i] = QColor(h.parts[i]);
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
