#pragma once
// Text inside charts that must never be clipped: a legend with as many columns as its widest
// entry allows (lines broken to a pixel width: text_width.h). Private to kvl_widgets (the _p
// suffix): QCustomPlot stays out of every public header.

#include "widgets/charts/text_width.h"

#include <QString>

#include <qcustomplot.h>

#include <algorithm>

namespace kvl::widgets {

// Columns for a legend below the plot: as many as fit `width` at the widest entry (its icon,
// padding and text), at least one, at most `maxColumns`.
inline int legendColumnsFor(const QCPLegend* legend, int width, int maxColumns) {
    int widest = 0;
    for (int i = 0; i < legend->itemCount(); ++i)
        if (auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(i)))
            widest = std::max(widest, textWidth(legend->font(), item->plottable()->name()));
    // The icon, its padding and the item's margins (QCPAbstractLegendItem: 8 px each side).
    const int entry = widest + legend->iconSize().width() + legend->iconTextPadding() + 16;
    return std::clamp(width / std::max(1, entry), 1, std::max(1, maxColumns));
}

} // namespace kvl::widgets
