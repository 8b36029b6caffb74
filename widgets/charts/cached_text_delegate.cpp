#include "widgets/charts/cached_text_delegate.h"

#include <QApplication>
#include <QPainter>
#include <QStyle>

#include <algorithm>
#include <cmath>

namespace kvl::widgets {

namespace {

// The laid-out texts kept: a ladder shows about 40 cells, and a drag through every context
// makes a few thousand distinct texts; past this the cache starts again.
constexpr qsizetype kMaxCachedTexts = 4096;
constexpr std::size_t kMaxFonts = 8;

bool drawnAsOneLine(const QStyleOptionViewItem& opt) {
    using F = QStyleOptionViewItem::ViewItemFeature;
    if (opt.features & (F::HasDecoration | F::HasCheckIndicator | F::WrapText))
        return false;
    if (opt.state & QStyle::State_Editing)
        return false;
    for (QChar c : opt.text)
        if (c == QLatin1Char('\n') || c == QChar::LineSeparator || c == QChar::ParagraphSeparator)
            return false;
    return !opt.text.isEmpty();
}

} // namespace

CachedTextDelegate::CachedTextDelegate(QObject* parent) : QStyledItemDelegate(parent) {}

int CachedTextDelegate::cachedTexts() const {
    int n = 0;
    for (const FontCache& f : m_cache)
        n += static_cast<int>(f.texts.size());
    return n;
}

const QStaticText& CachedTextDelegate::laidOut(const QString& text, const QFont& font) const {
    auto byFont = std::find_if(m_cache.begin(), m_cache.end(),
                               [&](const FontCache& f) { return f.font == font; });
    if (byFont == m_cache.end()) {
        if (m_cache.size() >= kMaxFonts)
            m_cache.clear();
        m_cache.push_back({font, {}});
        byFont = m_cache.end() - 1;
    }
    QHash<QString, QStaticText>& texts = byFont->texts;
    auto it = texts.find(text);
    if (it != texts.end())
        return *it;
    if (texts.size() >= kMaxCachedTexts)
        texts.clear();
    QStaticText st(text);
    st.setTextFormat(Qt::PlainText);
    st.setPerformanceHint(QStaticText::AggressiveCaching);
    st.prepare(QTransform(), font);
    ++m_layouts;
    return *texts.insert(text, st);
}

void CachedTextDelegate::paint(QPainter* painter, const QStyleOptionViewItem& option,
                               const QModelIndex& index) const {
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    if (!drawnAsOneLine(opt)) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    const QWidget* widget = opt.widget;
    QStyle* style = widget ? widget->style() : QApplication::style();
    // Where QCommonStyle draws the text: the item's text rectangle less the focus frame's
    // margin on each side (QCommonStylePrivate::viewItemDrawText). The rectangle is asked
    // without the text, which the style would lay out to size it (a cell with no icon or check
    // box gives its text the whole cell either way).
    const QString shown = opt.text;
    opt.text.clear();
    const int margin = style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, widget) + 1;
    const QRect textRect = style->subElementRect(QStyle::SE_ItemViewItemText, &opt, widget)
                               .adjusted(margin, 0, -margin, 0);
    const QStaticText& text = laidOut(shown, opt.font);
    const QSize size(static_cast<int>(std::ceil(text.size().width())),
                     static_cast<int>(std::ceil(text.size().height())));
    if (size.width() > textRect.width()) { // QStyledItemDelegate elides it
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    // The background, selection and focus frame as the style draws them, without the text.
    style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, widget);
    // The text in the colours QCommonStyle picks.
    QPalette::ColorGroup group =
        opt.state & QStyle::State_Enabled ? QPalette::Normal : QPalette::Disabled;
    if (group == QPalette::Normal && !(opt.state & QStyle::State_Active))
        group = QPalette::Inactive;
    painter->save();
    painter->setClipRect(opt.rect);
    painter->setPen(opt.palette.color(
        group, opt.state & QStyle::State_Selected ? QPalette::HighlightedText : QPalette::Text));
    painter->setFont(opt.font);
    const QRect at = QStyle::alignedRect(
        opt.direction, QStyle::visualAlignment(opt.direction, opt.displayAlignment), size,
        textRect);
    painter->drawStaticText(at.topLeft(), text);
    painter->restore();
}

} // namespace kvl::widgets
