#pragma once
// View > Theme: System, Light or Dark, remembered in QSettings. Qt 6.4 (Debian 12) has no
// QStyleHints::setColorScheme (Qt 6.8), so Light and Dark are the Fusion style with a light or
// dark palette, and System puts back the style and palette the application started with. The
// charts re-colour on the PaletteChange this sends.

#include <QPalette>
#include <QString>

#include <optional>

namespace kvl::app {

enum class Theme { System, Light, Dark };

QString themeName(Theme theme);                       // "system", "light", "dark"
std::optional<Theme> parseTheme(const QString& name); // the inverse, any case
QPalette darkPalette();
QPalette lightPalette();
// Applies `theme` to the whole application (needs a QApplication).
void applyTheme(Theme theme);
Theme currentTheme();

} // namespace kvl::app
