#include "steady_tab_widget.h"

#include <QEvent>
#include <QStackedWidget>
#include <QTabBar>

namespace kvl::app {

SteadyTabWidget::SteadyTabWidget(QWidget* parent) : QTabWidget(parent) {}

bool SteadyTabWidget::event(QEvent* event) {
    if (event->type() != QEvent::LayoutRequest || !isVisible())
        return QTabWidget::event(event);
    // QTabWidget::event hands a layout request to its private setUpLayout, which places the
    // tab bar and the stack and ends in update() (qtbase's src/widgets/widgets/qtabwidget.cpp).
    // With updates off for the tab widget alone, that update() and any invalidation of the
    // tab widget's own area are dropped; if the tab bar or the stack did move, the whole area
    // is repainted after, as QTabWidget would have. Its children keep their updates.
    const auto* stack = findChild<QStackedWidget*>(QString(), Qt::FindDirectChildrenOnly);
    const QRect bar = tabBar()->geometry();
    const QRect pages = stack ? stack->geometry() : QRect();
    const bool wasDisabled = testAttribute(Qt::WA_UpdatesDisabled);
    setAttribute(Qt::WA_UpdatesDisabled, true);
    const bool handled = QTabWidget::event(event);
    setAttribute(Qt::WA_UpdatesDisabled, wasDisabled);
    if (tabBar()->geometry() != bar || (stack && stack->geometry() != pages))
        update();
    return handled;
}

} // namespace kvl::app
