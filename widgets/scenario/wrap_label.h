#pragma once
// A word-wrapped QLabel that remembers its height for a width. Qt asks a word-wrapped label for
// heightForWidth many times per layout pass (QWidgetItem::minimumHeightForWidth does not cache,
// unlike QWidgetItemV2::heightForWidth), and QLabel answers each time by laying its text out
// again: a QTextDocument relayout for rich text, a QFontMetrics::boundingRect shaping for plain
// text. In perf of tests/bench/bench_replot, an engine switch spent a fifth of its GUI-thread
// time there (QTextDocumentLayout under QLabel::heightForWidth), for texts that had not changed.
//
// It also remembers its size hints for its last few texts. QLabel forgets its own at each new
// text, and working them out lays a wrapped text out at two widths (QLabel::minimumSizeHint);
// the labels that change with the engine (the warnings, the ladder's title) go back and forth
// between a few texts, and their size hints were 16% of an engine switch's instructions
// (callgrind of `bench_replot --only engine`).

#include <QLabel>

#include <array>
#include <optional>
#include <utility>

namespace kvl::widgets {

class WrapLabel : public QLabel {
    Q_OBJECT
public:
    explicit WrapLabel(QWidget* parent = nullptr);
    explicit WrapLabel(const QString& text, QWidget* parent = nullptr);

    int heightForWidth(int width) const override;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void changeEvent(QEvent* event) override;

private:
    // What QLabel's own answers depend on besides the width. (QLabel also drops its size hints
    // at a new size policy, but works them out the same: QLabel::minimumSizeHint.)
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

    // What QLabel answered for one text.
    struct Answers {
        Key key;
        std::optional<QSize> size;
        std::optional<QSize> minimumSize;
        // The last few widths asked: a layout pass asks for two or three.
        std::array<std::pair<int, int>, 4> heights{};
        int heightCount = 0;
        int nextHeight = 0;
    };
    // The answers for the label's text as it is now, found or made.
    Answers& current() const;

    mutable std::array<Answers, 4> m_answers{};
    mutable int m_count = 0; // entries in use
    mutable int m_next = 0;  // the one to replace next
    mutable int m_last = -1; // the one found last
};

} // namespace kvl::widgets
