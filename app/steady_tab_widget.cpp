#include "steady_tab_widget.h"

#include <QEvent>
#include <QTabBar>

namespace kvl::app {

SteadyTabWidget::SteadyTabWidget(QWidget* parent) : QTabWidget(parent) {}

bool SteadyTabWidget::event(QEvent* event) {
    if (event->type() != QEvent::LayoutRequest || !isVisible())
        return QTabWidget::event(event);
    // QTabWidget::event hands a layout request to its private setUpLayout, which places the
    // tab bar and the stack and ends in update() (qtbase's src/widgets/widgets/qtabwidget.cpp).
    // With updates off for the tab widget alone, that update() and any invalidation of the
    // tab widget's own area are dropped; if the tab bar moved, the whole area is repainted
    // after, as QTabWidget would have. setUpLayout places the stack from the tab bar's place
    // and the tab widget's size, so the stack moves only with the bar (or in a resize, which
    // is not a layout request). Its children keep their updates.
    const QRect bar = tabBar()->geometry();
    const bool wasDisabled = testAttribute(Qt::WA_UpdatesDisabled);
    setAttribute(Qt::WA_UpdatesDisabled, true);
    const bool handled = QTabWidget::event(event);
    setAttribute(Qt::WA_UpdatesDisabled, wasDisabled);
    if (tabBar()->geometry() != bar)
        update();
    return handled;
}

} // namespace kvl::app
