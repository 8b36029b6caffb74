#include "widgets/charts/text_width.h"

#include <QFontMetrics>
#include <QHash>
#include <QStringList>

namespace kvl::widgets {

namespace {

// Per thread: QFont and QFontMetrics may be used on any thread that paints into a QImage (the
// exports), and a QHash is not thread-safe. Bounded: cleared when it grows past kMaxEntries
// (the window's own strings are a few hundred).
struct WidthCache {
    static constexpr qsizetype kMaxEntries = 8192;
    QHash<QString, int> widths; // font key, '\0', text
};

} // namespace

int textWidth(const QFont& font, const QString& text) {
    thread_local WidthCache cache;
    QString key = font.key();
    key += QChar(0);
    key += text;
    if (const auto it = cache.widths.constFind(key); it != cache.widths.cend())
        return it.value();
    if (cache.widths.size() >= WidthCache::kMaxEntries)
        cache.widths.clear();
    const int w = QFontMetrics(font).horizontalAdvance(text);
    cache.widths.insert(key, w);
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
