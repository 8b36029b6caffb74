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

// A row of its own under the title (row 1) for the cursor's exact values, where they never
// hide a curve; the text element that shows them, empty until the cursor moves.
inline QCPTextElement* addCursorRow(QCustomPlot* p, const QFont& font) {
    p->plotLayout()->insertRow(1);
    auto* label = new QCPTextElement(p, QString(), font);
    label->setMargins(QMargins(0, 0, 0, 4));
    p->plotLayout()->addElement(1, 0, label);
    return label;
}

// The label centred on the plot that stands in for curves there are none of (an error, "no
// measurements"); hidden until the chart has something to say there.
inline QCPItemText* addEmptyLabel(QCustomPlot* p) {
    auto* t = new QCPItemText(p);
    t->position->setType(QCPItemPosition::ptAxisRectRatio);
    t->position->setCoords(0.5, 0.5);
    t->setPositionAlignment(Qt::AlignCenter);
    t->setVisible(false);
    return t;
}

// Moves the legend out of the plot into row `row` of the layout, under the plot where it never
// hides a curve: kept to its own height and filled row by row, three entries a row until
// legendColumnsFor says otherwise.
inline void placeLegendInRow(QCustomPlot* p, int row) {
    p->axisRect()->insetLayout()->take(p->legend);
    p->plotLayout()->addElement(row, 0, p->legend);
    p->plotLayout()->setRowStretchFactor(row, 0.001);
    p->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    p->legend->setWrap(3);
    p->legend->setMargins(QMargins(4, 2, 4, 2));
}

} // namespace kvl::widgets
