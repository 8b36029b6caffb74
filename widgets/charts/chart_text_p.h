#pragma once
// Text inside charts that must never be clipped: a legend with as many columns as its widest
// entry allows (lines broken to a pixel width: text_width.h). Private to kvl_widgets (the _p
// suffix): QCustomPlot stays out of every public header.

#include "widgets/charts/chart_colors.h"
#include "widgets/charts/chart_widget.h"
#include "widgets/charts/text_stamp_p.h"
#include "widgets/charts/text_width.h"

#include <QFont>
#include <QFontMetrics>
#include <QString>

#include <qcustomplot.h>

#include <QtMath>

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

// Lays a below-the-plot legend out in as many columns as fit `width` (legendColumnsFor, at most
// three), entries flowing row by row. Re-flowing takes every entry out of the grid and puts it
// back, which QCustomPlot follows with a new layout: about 1% of a change's time when done at
// every change (perf of bench_replot), though the columns rarely change. QCPLegend re-flows
// itself when an entry is removed, and an entry added goes to the next free cell in this
// order, so the grid is in order whenever its wrap and fill order are.
inline void fitLegendColumns(QCPLegend* legend, int width) {
    const int columns = legendColumnsFor(legend, width, 3);
    if (legend->wrap() == columns && legend->fillOrder() == QCPLayoutGrid::foColumnsFirst &&
        legend->columnCount() <= columns)
        return;
    legend->setWrap(columns);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true); // re-flows the entries
}

// QFontMetrics::boundingRect(0, 0, 0, height, Qt::TextDontClip, text), remembered for the last
// text, font and height asked: what QCustomPlot's text elements and legend entries measure at
// every layout and draw.
class RememberedBounds {
public:
    QRect of(const QFont& font, int height, const QString& text) const {
        if (!m_measured || m_height != height || m_text != text || m_font != font) {
            m_height = height;
            m_text = text;
            m_font = font;
            m_bounds = QFontMetrics(font).boundingRect(0, 0, 0, height, Qt::TextDontClip, text);
            m_measured = true;
        }
        return m_bounds;
    }

private:
    mutable bool m_measured = false;
    mutable int m_height = 0;
    mutable QString m_text;
    mutable QFont m_font;
    mutable QRect m_bounds;
};

// A chart's title or note that measures its text once per text and font. QCustomPlot lays its
// plot out again at every replot, and QCPTextElement asks QFontMetrics for the text's
// bounding box twice each time (its minimum and maximum size): shaping every title and note of
// every chart at every step of a drag, 2.6% of the GUI thread's time per change (bench_replot).
class CachedTextElement : public QCPTextElement {
public:
    using QCPTextElement::QCPTextElement;

protected:
    // As QCPTextElement::draw, copied from a TextStamp while the text stays the same.
    void draw(QCPPainter* painter) override {
        if (!m_stamp.draw(painter, mRect, mTextFlags, mText, mainFont(), mainTextColor(),
                          &mTextBoundingRect))
            QCPTextElement::draw(painter);
    }
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
    QSize textSize() const { return m_bounds.of(mFont, 0, mText).size(); }
    RememberedBounds m_bounds;
    TextStamp m_stamp;
};

// A legend entry that measures its text once per text and font and copies the drawn text from
// a TextStamp: QCPPlottableLegendItem measures its plottable's name at each layout and each
// draw and draws it again, 9% of a change's instructions in bench_replot (callgrind). Sizes,
// places and draws as QCPPlottableLegendItem (QCustomPlot 2.1) does. ChartWidget puts these in
// place of the entries QCustomPlot makes (useCachedLegendItems).
class CachedLegendItem : public QCPPlottableLegendItem {
public:
    using QCPPlottableLegendItem::QCPPlottableLegendItem;

protected:
    void draw(QCPPainter* painter) override {
        if (!mPlottable)
            return;
        const QSize iconSize = mParentLegend->iconSize();
        const QRect textRect = measured(iconSize.height());
        const QRect at(mRect.x() + iconSize.width() + mParentLegend->iconTextPadding(), mRect.y(),
                       textRect.width(), std::max(textRect.height(), iconSize.height()));
        if (!m_stamp.draw(painter, at, Qt::TextDontClip, mPlottable->name(), getFont(),
                          getTextColor())) {
            QCPPlottableLegendItem::draw(painter);
            return;
        }
        const QRect iconRect(mRect.topLeft(), iconSize);
        painter->save();
        painter->setClipRect(iconRect, Qt::IntersectClip);
        (mPlottable->*legendIcon())(painter, iconRect);
        painter->restore();
        if (getIconBorderPen().style() != Qt::NoPen) {
            painter->setPen(getIconBorderPen());
            painter->setBrush(Qt::NoBrush);
            const int halfPen = qCeil(painter->pen().widthF() * 0.5) + 1;
            painter->setClipRect(mOuterRect.adjusted(-halfPen, -halfPen, halfPen, halfPen));
            painter->drawRect(iconRect);
        }
    }
    QSize minimumOuterSizeHint() const override {
        if (!mPlottable)
            return {};
        const QSize iconSize = mParentLegend->iconSize();
        const QRect textRect = measured(iconSize.height());
        return {iconSize.width() + mParentLegend->iconTextPadding() + textRect.width() +
                    mMargins.left() + mMargins.right(),
                std::max(textRect.height(), iconSize.height()) + mMargins.top() +
                    mMargins.bottom()};
    }

private:
    // QCPAbstractPlottable::drawLegendIcon is protected, and QCustomPlot befriends
    // QCPPlottableLegendItem but not what derives from it; a class derived from the plottable
    // may name the member, and the pointer calls the plottable's own override.
    using IconFunction = void (QCPAbstractPlottable::*)(QCPPainter*, const QRectF&) const;
    struct IconAccess : QCPAbstractPlottable {
        static IconFunction pointer() { return &IconAccess::drawLegendIcon; }
    };
    static IconFunction legendIcon() { return IconAccess::pointer(); }

    // The name's bounding box as QCPPlottableLegendItem measures it.
    QRect measured(int iconHeight) const {
        return m_bounds.of(getFont(), iconHeight, mPlottable->name());
    }
    RememberedBounds m_bounds;
    TextStamp m_stamp;
};

// Puts a CachedLegendItem in the place of each entry QCustomPlot made for a plottable
// (QCPAbstractPlottable::addToLegend makes a plain QCPPlottableLegendItem), keeping its cell,
// font, colours and selection. Cheap when there is nothing to replace: run before each replot.
// Cells are visited by index: QCPLayoutGrid::element(row, col) prints a debug message for each
// empty cell, and a legend's last row is often part empty.
inline void useCachedLegendItems(QCPLegend* legend) {
    for (int i = 0; i < legend->elementCount(); ++i) {
        auto* plain = qobject_cast<QCPPlottableLegendItem*>(legend->elementAt(i));
        if (!plain || dynamic_cast<CachedLegendItem*>(plain))
            continue;
        int row = 0;
        int col = 0;
        legend->indexToRowCol(i, row, col);
        auto* cached = new CachedLegendItem(legend, plain->plottable());
        cached->setFont(plain->font());
        cached->setTextColor(plain->textColor());
        cached->setSelectedFont(plain->selectedFont());
        cached->setSelectedTextColor(plain->selectedTextColor());
        cached->setSelectable(plain->selectable());
        cached->setSelected(plain->selected());
        cached->setLayer(plain->layer());
        cached->setVisible(plain->visible());
        legend->take(plain);
        delete plain;
        legend->addElement(row, col, cached);
    }
}

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

// A chart's two marked lines (MarkedLine), their labels in `font`. Both lines are made before
// both labels: items are drawn in the order they were made, so no line crosses a label.
inline void addMarkedLines(QCustomPlot* p, const QFont& font, MarkedLine& first,
                           MarkedLine& second) {
    for (MarkedLine* m : {&first, &second}) {
        m->line = new QCPItemStraightLine(p);
        m->line->setClipToAxisRect(true);
    }
    for (MarkedLine* m : {&first, &second}) {
        m->text = new QCPItemText(p);
        m->text->setFont(font);
        m->text->setClipToAxisRect(true);
    }
}

// The colours of a chart's two marked lines: the first (a memory or latency limit) dashed in
// the KV line's colour, its label too; the second (a request count or rate) dash-dotted in the
// cursor's, its label in the foreground colour.
inline void styleMarkedLines(const ChartColors& c, const MarkedLine& first,
                             const MarkedLine& second) {
    first.line->setPen(QPen(c.kvLine, 1.5, Qt::DashLine));
    first.text->setColor(c.kvLine);
    second.line->setPen(QPen(c.cursor, 1.5, Qt::DashDotLine));
    second.text->setColor(c.foreground);
}

// Shows or hides a marked line and its label together.
inline void showMarkedLine(const MarkedLine& m, bool on) {
    m.line->setVisible(on);
    m.text->setVisible(on);
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
