#include "widgets/scenario/wrap_label.h"

#include <QEvent>

namespace kvl::widgets {

WrapLabel::WrapLabel(QWidget* parent) : QLabel(parent) {
    setWordWrap(true);
}

WrapLabel::WrapLabel(const QString& text, QWidget* parent) : QLabel(text, parent) {
    setWordWrap(true);
}

WrapLabel::Key WrapLabel::key() const {
    return Key{text(), textFormat(), wordWrap(), margin(), indent(), contentsMargins()};
}

int WrapLabel::heightForWidth(int width) const {
    Key now = key();
    if (!(now == m_key)) {
        m_key = std::move(now);
        m_count = 0;
        m_next = 0;
    }
    for (int i = 0; i < m_count; ++i)
        if (m_heights[static_cast<std::size_t>(i)].first == width)
            return m_heights[static_cast<std::size_t>(i)].second;
    const int h = QLabel::heightForWidth(width);
    m_heights[static_cast<std::size_t>(m_next)] = {width, h};
    m_next = (m_next + 1) % static_cast<int>(m_heights.size());
    m_count = std::min(m_count + 1, static_cast<int>(m_heights.size()));
    return h;
}

void WrapLabel::changeEvent(QEvent* event) {
    // A new font or style lays the same text out anew.
    switch (event->type()) {
    case QEvent::FontChange:
    case QEvent::StyleChange:
    case QEvent::LayoutDirectionChange:
        m_count = 0;
        m_next = 0;
        break;
    default:
        break;
    }
    QLabel::changeEvent(event);
}

} // namespace kvl::widgets
