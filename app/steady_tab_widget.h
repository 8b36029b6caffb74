#pragma once
// The main window's tabs: a QTabWidget that repaints itself only when its tab bar or pages move.

#include <QTabWidget>

namespace kvl::app {

// QTabWidget lays its tab bar and page stack out again at every layout request that reaches it,
// which is every layout change inside the current page (a label's new text, a table's new
// row: QLayout::activate passes updateGeometry up unconditionally), and then repaints its whole
// area, so every widget of the page: the lever ladder, the vLLM command, the tab bar, for a
// label's new text. This one lets QTabWidget lay out as before and repaints only when the tab
// bar was moved or resized (the page stack moves with it); a page's own changes repaint
// themselves.
class SteadyTabWidget : public QTabWidget {
    Q_OBJECT
public:
    explicit SteadyTabWidget(QWidget* parent = nullptr);

protected:
    bool event(QEvent* event) override;
};

} // namespace kvl::app
