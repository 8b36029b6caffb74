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

} // namespace kvl::widgets
