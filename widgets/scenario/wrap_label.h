#pragma once
// A word-wrapped QLabel that remembers its height for a width. Qt asks a word-wrapped label for
// heightForWidth many times per layout pass (QWidgetItem::minimumHeightForWidth does not cache,
// unlike QWidgetItemV2::heightForWidth), and QLabel answers each time by laying its text out
// again: a QTextDocument relayout for rich text, a QFontMetrics::boundingRect shaping for plain
// text. In perf of tests/bench/bench_replot, an engine switch spent a fifth of its GUI-thread
// time there (QTextDocumentLayout under QLabel::heightForWidth), for texts that had not changed.

#include <QLabel>

#include <array>

namespace kvl::widgets {

class WrapLabel : public QLabel {
    Q_OBJECT
public:
    explicit WrapLabel(QWidget* parent = nullptr);
    explicit WrapLabel(const QString& text, QWidget* parent = nullptr);

    int heightForWidth(int width) const override;

protected:
    void changeEvent(QEvent* event) override;

private:
    // What QLabel's own answer depends on besides the width; the cache is kept while it holds.
    struct Key {
        QString text;
        Qt::TextFormat format = Qt::AutoText;
        bool wrap = false;
        int margin = 0;
        int indent = 0;
        QMargins contents;
        bool operator==(const Key&) const = default;
    };
    Key key() const;

    mutable Key m_key;
    // The last few widths asked: a layout pass asks for two or three.
    mutable std::array<std::pair<int, int>, 4> m_heights{};
    mutable int m_count = 0;
    mutable int m_next = 0;
};

} // namespace kvl::widgets
