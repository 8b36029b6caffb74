#pragma once
// The width of a line of text in a font, remembered. Measuring shapes the text (HarfBuzz) every
// time, and the window measures the same strings at every change: the ladder's cells to fit its
// columns, the charts' titles and notes to wrap them. In perf, text shaping was a fifth of a
// change's GUI-thread time (tests/bench/bench_replot). QFontMetrics keeps no such cache.

#include <QFont>
#include <QString>

namespace kvl::widgets {

// QFontMetrics(font).horizontalAdvance(text), from a per-thread cache of recent strings.
int textWidth(const QFont& font, const QString& text);

// Greedy line breaks at spaces (existing newlines kept) so that no line is wider than `width`
// pixels; a single word wider than that stays whole. Measures through textWidth's cache.
QString wrapToWidth(const QString& text, const QFont& font, int width);

} // namespace kvl::widgets
