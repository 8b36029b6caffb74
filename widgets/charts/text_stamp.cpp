#include "widgets/charts/text_stamp_p.h"

#include <QFontMetrics>
#include <QPainter>
#include <QTransform>

#include <cmath>

namespace kvl::widgets {

namespace {
// Room around the box: drawText with Qt::TextDontClip, and antialiased glyphs, may reach past
// the box by a pixel or two.
constexpr int kPad = 8;
} // namespace

bool TextStamp::draw(QCPPainter* painter, const QRect& rect, int flags, const QString& text,
                     const QFont& font, const QColor& color, QRect* boundingRect) {
    if (painter->modes().testFlag(QCPPainter::pmNoCaching) ||
        painter->modes().testFlag(QCPPainter::pmVectorized))
        return false;
    const QTransform t = painter->transform();
    // Moves only: QCPPainter shifts antialiased elements by half a pixel, which the picture
    // repeats (the text lies as far off the pixel grid as drawText would put it).
    if (t.type() > QTransform::TxTranslate)
        return false;
    const QPointF whole(std::floor(t.dx()), std::floor(t.dy()));
    const QPointF fraction = QPointF(t.dx(), t.dy()) - whole;
    const Key key{text,
                  font,
                  color,
                  rect.size(),
                  flags,
                  painter->device() ? painter->device()->devicePixelRatioF() : 1.0,
                  painter->testRenderHint(QPainter::TextAntialiasing),
                  fraction};
    Picture* hit = nullptr;
    for (Picture& p : m_pictures)
        if (!p.picture.isNull() && p.key == key)
            hit = &p;
    if (!hit) {
        // The picture covers the box, or with Qt::TextDontClip wherever the text reaches.
        QRect area(QPoint(0, 0), rect.size());
        if (flags & Qt::TextDontClip)
            area |= QFontMetrics(font).boundingRect(area, flags, text);
        const QSize padded = area.size() + QSize(2 * kPad, 2 * kPad);
        QPixmap picture(padded * key.dpr);
        picture.setDevicePixelRatio(key.dpr);
        picture.fill(Qt::transparent);
        QPainter p(&picture);
        p.setRenderHint(QPainter::TextAntialiasing, key.antialiased);
        p.translate(fraction);
        p.setFont(font);
        p.setPen(QPen(color));
        QRect bounds;
        const QPoint at = QPoint(kPad, kPad) - area.topLeft(); // the box's corner in it
        p.drawText(QRect(at, rect.size()), flags, text, &bounds);
        p.end();
        hit = &m_pictures[m_next];
        m_next = (m_next + 1) % m_pictures.size();
        *hit = Picture{key, picture, bounds.translated(-at), at};
        ++m_drawn;
    }
    // As drawText leaves the painter.
    painter->setFont(font);
    painter->setPen(QPen(color));
    painter->setWorldTransform(QTransform());
    painter->drawPixmap(rect.topLeft() + whole.toPoint() - hit->at, hit->picture);
    painter->setWorldTransform(t);
    if (boundingRect)
        *boundingRect = hit->bounds.translated(rect.topLeft());
    return true;
}

} // namespace kvl::widgets
