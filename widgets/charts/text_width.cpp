#include "widgets/charts/text_width.h"

#include <QFontMetrics>
#include <QHash>
#include <QStringList>

#include <algorithm>
#include <vector>

namespace kvl::widgets {

namespace {

// Per thread: QFont and QFontMetrics may be used on any thread that paints into a QImage (the
// exports), and a QHash is not thread-safe. The widths are kept by font, the fonts found with
// QFont's ==: a key made of QFont::key() and the text cost more than half of all the lookups'
// time (callgrind of bench_replot: 6,600 instructions per QFont::key()). Bounded: a font's
// texts are cleared when they pass kMaxEntries (the window's own strings are a few hundred),
// and the fonts when they pass kMaxFonts (the window measures in a handful).
struct WidthCache {
    static constexpr qsizetype kMaxEntries = 8192;
    static constexpr std::size_t kMaxFonts = 16;
    struct ByFont {
        QFont font;
        QHash<QString, int> widths;
    };
    std::vector<ByFont> fonts;
};

} // namespace

int textWidth(const QFont& font, const QString& text) {
    thread_local WidthCache cache;
    auto byFont = std::find_if(cache.fonts.begin(), cache.fonts.end(),
                               [&](const WidthCache::ByFont& f) { return f.font == font; });
    if (byFont == cache.fonts.end()) {
        if (cache.fonts.size() >= WidthCache::kMaxFonts)
            cache.fonts.clear();
        cache.fonts.push_back({font, {}});
        byFont = cache.fonts.end() - 1;
    }
    QHash<QString, int>& widths = byFont->widths;
    if (const auto it = widths.constFind(text); it != widths.cend())
        return it.value();
    if (widths.size() >= WidthCache::kMaxEntries)
        widths.clear();
    const int w = QFontMetrics(font).horizontalAdvance(text);
    widths.insert(text, w);
    return w;
}

QString wrapToWidth(const QString& text, const QFont& font, int width) {
    // Each candidate line is measured whole (a sum of its words' rounded widths would break
    // lines a few pixels differently); the cache makes the measure free when the same text is
    // wrapped again, as titles and notes are at every change.
    QStringList out;
    for (const QString& paragraph : text.split(QLatin1Char('\n'))) {
        QString line;
        for (const QString& word : paragraph.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            const QString candidate = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
            if (!line.isEmpty() && textWidth(font, candidate) > width) {
                out << line;
                line = word;
            } else {
                line = candidate;
            }
        }
        out << line;
    }
    return out.join(QLatin1Char('\n'));
}

} // namespace kvl::widgets
