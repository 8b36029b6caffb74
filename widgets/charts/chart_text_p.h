#pragma once
// Text inside charts that must never be clipped: a legend with as many columns as its widest
// entry allows (lines broken to a pixel width: text_width.h). Private to kvl_widgets (the _p
// suffix): QCustomPlot stays out of every public header.

#include "widgets/charts/text_width.h"

#include <QFont>
#include <QFontMetrics>
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

// A chart's title or note that measures its text once per text and font. QCustomPlot lays its
// plot out again at every replot, and QCPTextElement asks QFontMetrics for the text's
// bounding box twice each time (its minimum and maximum size): shaping every title and note of
// every chart at every step of a drag, 2.6% of the GUI thread's time per change (bench_replot).
class CachedTextElement : public QCPTextElement {
public:
    using QCPTextElement::QCPTextElement;

protected:
    // As QCPTextElement computes them, from the remembered text size.
    QSize minimumOuterSizeHint() const override {
        const QSize t = textSize();
        return {t.width() + mMargins.left() + mMargins.right(),
                t.height() + mMargins.top() + mMargins.bottom()};
    }
    QSize maximumOuterSizeHint() const override {
        return {QWIDGETSIZE_MAX, textSize().height() + mMargins.top() + mMargins.bottom()};
    }

private:
    QSize textSize() const {
        if (!m_measured || mText != m_text || mFont != m_font) {
            m_text = mText;
            m_font = mFont;
            m_size = QFontMetrics(mFont).boundingRect(0, 0, 0, 0, Qt::TextDontClip, mText).size();
            m_measured = true;
        }
        return m_size;
    }
    mutable bool m_measured = false;
    mutable QString m_text;
    mutable QFont m_font;
    mutable QSize m_size;
};

// A row of its own under the title (row 1) for the cursor's exact values, where they never
// hide a curve; the text element that shows them, empty until the cursor moves.
inline QCPTextElement* addCursorRow(QCustomPlot* p, const QFont& font) {
    p->plotLayout()->insertRow(1);
    auto* label = new CachedTextElement(p, QString(), font);
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
