#include "widgets/scenario/cached_group_box.h"

#include <QPainter>
#include <QStyleOptionGroupBox>
#include <QStylePainter>

namespace kvl::widgets {

CachedGroupBox::CachedGroupBox(const QString& title, QWidget* parent) : QGroupBox(title, parent) {
    // Opaque (filled with the window colour the panel behind it has), so that when a lever
    // above shows or hides rows and the group only moves, Qt moves its pixels in the backing
    // store (QWidgetPrivate::moveRect's accelerated move) instead of repainting the group and
    // every field in it.
    setAutoFillBackground(true);
}

void CachedGroupBox::paintEvent(QPaintEvent* event) {
    QStyleOptionGroupBox option;
    initStyleOption(&option);
    const QBrush background = palette().brush(backgroundRole());
    if (background.style() != Qt::SolidPattern) { // a texture or gradient: as QGroupBox does
        QGroupBox::paintEvent(event);
        return;
    }
    const Look look{option.rect.size(),
                    devicePixelRatioF(),
                    static_cast<int>(option.state),
                    static_cast<int>(option.subControls),
                    static_cast<int>(option.activeSubControls),
                    option.palette.cacheKey(),
                    style(),
                    font(),
                    option.text};
    Picture* hit = nullptr;
    for (Picture& p : m_pictures)
        if (!p.picture.isNull() && p.look == look)
            hit = &p;
    if (!hit) {
        QPixmap picture(look.size * look.dpr);
        picture.setDevicePixelRatio(look.dpr);
        picture.fill(background.color());
        QStylePainter p(&picture, this);
        p.drawComplexControl(QStyle::CC_GroupBox, option);
        p.end();
        hit = &m_pictures[m_next];
        m_next = (m_next + 1) % m_pictures.size();
        *hit = Picture{look, picture};
        ++m_drawnByStyle;
    }
    QPainter p(this);
    p.drawPixmap(0, 0, hit->picture);
}

} // namespace kvl::widgets
