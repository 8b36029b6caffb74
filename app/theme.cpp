#include "theme.h"

#include <QApplication>
#include <QStyle>
#include <QStyleFactory>

namespace kvl::app {

namespace {
struct SystemLook {
    bool saved = false;
    QString style;
    QPalette palette;
};
SystemLook& systemLook() {
    static SystemLook look;
    return look;
}
Theme& current() {
    static Theme theme = Theme::System;
    return theme;
}
void remember() {
    SystemLook& s = systemLook();
    if (s.saved)
        return;
    s.saved = true;
    s.style = QApplication::style() ? QApplication::style()->name() : QString();
    s.palette = QApplication::palette();
}
} // namespace

namespace {
// Each theme with its name in QSettings: themeName and parseTheme read this one table, so a
// theme added here is both written and read back.
struct ThemeName {
    Theme theme;
    const char* name;
};
constexpr ThemeName kThemeNames[] = {
    {Theme::System, "system"},
    {Theme::Light, "light"},
    {Theme::Dark, "dark"},
};
} // namespace

QString themeName(Theme theme) {
    for (const ThemeName& t : kThemeNames)
        if (t.theme == theme)
            return QLatin1String(t.name);
    return {};
}

std::optional<Theme> parseTheme(const QString& name) {
    for (const ThemeName& t : kThemeNames)
        if (name.compare(QLatin1String(t.name), Qt::CaseInsensitive) == 0)
            return t.theme;
    return std::nullopt;
}

QPalette darkPalette() {
    QPalette p;
    const QColor window(45, 45, 48), base(30, 30, 32), text(222, 222, 222), dim(128, 128, 128);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, base);
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, QColor(58, 58, 62));
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, QColor(255, 100, 100));
    p.setColor(QPalette::Link, QColor(100, 170, 240));
    p.setColor(QPalette::Highlight, QColor(42, 130, 218));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::PlaceholderText, dim);
    for (auto role : {QPalette::Text, QPalette::WindowText, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, dim);
    return p;
}

QPalette lightPalette() {
    QStyle* fusion = QStyleFactory::create(QStringLiteral("Fusion"));
    QPalette p = fusion ? fusion->standardPalette() : QPalette(Qt::white);
    delete fusion;
    return p;
}

void applyTheme(Theme theme) {
    remember();
    current() = theme;
    const SystemLook& s = systemLook();
    if (theme == Theme::System) {
        if (!s.style.isEmpty() && QApplication::style()->name() != s.style)
            QApplication::setStyle(s.style);
        QApplication::setPalette(s.palette);
        return;
    }
    if (QApplication::style()->name().compare(QLatin1String("fusion"), Qt::CaseInsensitive) != 0)
        QApplication::setStyle(QStringLiteral("Fusion"));
    QApplication::setPalette(theme == Theme::Dark ? darkPalette() : lightPalette());
}

Theme currentTheme() {
    return current();
}

} // namespace kvl::app
