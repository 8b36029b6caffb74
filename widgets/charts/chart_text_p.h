#pragma once
// Text inside charts that must never be clipped: lines broken at spaces to a pixel width, and
// a legend with as many columns as its widest entry allows. Private to kvl_widgets (the _p
// suffix): QCustomPlot stays out of every public header.

#include <QFontMetrics>
#include <QString>
#include <QStringList>

#include <qcustomplot.h>

#include <algorithm>

namespace kvl::widgets {

// Greedy line breaks at spaces (existing newlines kept) so that no line is wider than `width`
// pixels; a single word wider than that stays whole.
inline QString wrapToWidth(const QString& text, const QFontMetrics& fm, int width) {
    QStringList out;
    for (const QString& paragraph : text.split(QLatin1Char('\n'))) {
        QString line;
        for (const QString& word : paragraph.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            const QString candidate = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
            if (!line.isEmpty() && fm.horizontalAdvance(candidate) > width) {
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

// Columns for a legend below the plot: as many as fit `width` at the widest entry (its icon,
// padding and text), at least one, at most `maxColumns`.
inline int legendColumnsFor(const QCPLegend* legend, int width, int maxColumns) {
    const QFontMetrics fm(legend->font());
    int widest = 0;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(i)))
            widest = std::max(widest, fm.horizontalAdvance(item->plottable()->name()));
    // The icon, its padding and the item's margins (QCPAbstractLegendItem: 8 px each side).
    const int entry = widest + legend->iconSize().width() + legend->iconTextPadding() + 16;
    return std::clamp(width / std::max(1, entry), 1, std::max(1, maxColumns));
}

} // namespace kvl::widgets
