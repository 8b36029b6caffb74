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

WrapLabel::Answers& WrapLabel::current() const {
    Key now = key();
    if (m_last >= 0 && m_answers[static_cast<std::size_t>(m_last)].key == now)
        return m_answers[static_cast<std::size_t>(m_last)];
    for (int i = 0; i < m_count; ++i)
        if (m_answers[static_cast<std::size_t>(i)].key == now) {
            m_last = i;
            return m_answers[static_cast<std::size_t>(i)];
        }
    m_last = m_next;
    m_next = (m_next + 1) % static_cast<int>(m_answers.size());
    m_count = std::min(m_count + 1, static_cast<int>(m_answers.size()));
    Answers& a = m_answers[static_cast<std::size_t>(m_last)];
    a = Answers{};
    a.key = std::move(now);
    return a;
}

int WrapLabel::heightForWidth(int width) const {
    Answers& a = current();
    for (int i = 0; i < a.heightCount; ++i)
        if (a.heights[static_cast<std::size_t>(i)].first == width)
            return a.heights[static_cast<std::size_t>(i)].second;
    const int h = QLabel::heightForWidth(width);
    a.heights[static_cast<std::size_t>(a.nextHeight)] = {width, h};
    a.nextHeight = (a.nextHeight + 1) % static_cast<int>(a.heights.size());
    a.heightCount = std::min(a.heightCount + 1, static_cast<int>(a.heights.size()));
    return h;
}

QSize WrapLabel::sizeHint() const {
    Answers& a = current();
    if (!a.size)
        a.size = QLabel::sizeHint();
    return *a.size;
}

QSize WrapLabel::minimumSizeHint() const {
    Answers& a = current();
    if (!a.minimumSize)
        a.minimumSize = QLabel::minimumSizeHint();
    return *a.minimumSize;
}

void WrapLabel::changeEvent(QEvent* event) {
    // A new font or style lays the same texts out anew.
    switch (event->type()) {
    case QEvent::FontChange:
    case QEvent::StyleChange:
    case QEvent::LayoutDirectionChange:
        m_count = 0;
        m_next = 0;
        m_last = -1;
        break;
    default:
        break;
    }
    QLabel::changeEvent(event);
}

} // namespace kvl::widgets
