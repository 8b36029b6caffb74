#pragma once
// An item delegate that draws a cell's one line of plain text from a cache of laid-out text
// (QStaticText), instead of shaping it again at every paint as QStyledItemDelegate does
// (QCommonStyle lays each cell's text out through a QTextLayout per paint). The lever ladder
// repaints its changed cells at every step of a slider drag; shaping them was 7% of the GUI
// thread's time per change in bench_replot. Whatever it does not draw the same way (an icon, a
// check box, text wider than the cell, which QStyledItemDelegate elides, several lines) goes to
// QStyledItemDelegate.

#include <QFont>
#include <QHash>
#include <QStaticText>
#include <QStyledItemDelegate>

#include <vector>

namespace kvl::widgets {

class CachedTextDelegate : public QStyledItemDelegate {
    Q_OBJECT
public:
    explicit CachedTextDelegate(QObject* parent = nullptr);
    void paint(QPainter* painter, const QStyleOptionViewItem& option,
               const QModelIndex& index) const override;

    // Texts laid out so far (for tests: a repaint of the same cells lays none out again).
    int cachedTexts() const;
    int layouts() const { return m_layouts; }

private:
    const QStaticText& laidOut(const QString& text, const QFont& font) const;

    // The texts by font (a table draws in one or two: the bold row), searched by QFont's ==:
    // QFont::key() cost more than the drawing it saved.
    struct FontCache {
        QFont font;
        QHash<QString, QStaticText> texts;
    };
    mutable std::vector<FontCache> m_cache;
    mutable int m_layouts = 0;
};

} // namespace kvl::widgets
