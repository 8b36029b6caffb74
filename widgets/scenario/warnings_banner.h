#pragma once
// The banner above the charts: the one place for what matters about the scenario, most severe
// first: a missed target (with the planner's answer), vLLM refusing to start, input that is
// not valid (nothing is computed then), max_num_seqs capping concurrency, a context beyond the
// model's length, the other warnings, a KV format vLLM has not, and vLLM's notes. The first
// items wrap in place; a longer list opens in a popup, so nothing is ever cut off.

#include "widgets/state/ledger_view_state.h"

#include <QElapsedTimer>
#include <QFrame>
#include <QPixmap>
#include <QPointer>
#include <QStyle>

#include <array>
#include <map>
#include <vector>

class QDialog;
class QLabel;
class QTimer;
class QToolButton;

namespace kvl::widgets {

enum class Severity : std::uint8_t { Error, Warning, Note };

struct BannerItem {
    Severity severity = Severity::Note;
    QString kind;          // "target", "refused", "no-fit", "invalid", "max-num-seqs", "context",
                           // "warning", "format", "note"
    QString title;         // "Target missed"
    QString text;          // one paragraph, plain text
    QString html() const;  // "<b>title:</b> text", escaped
    QString plain() const; // "title: text"
    friend bool operator==(const BannerItem&, const BannerItem&) = default;
};

// The items of a snapshot, most severe first, in the order above. Requests are per replica
// (the cluster's are DP times that) whatever the figures' scope.
std::vector<BannerItem> bannerItems(const LedgerSnapshot& snap);

class WarningsBanner : public QFrame {
    Q_OBJECT
public:
    explicit WarningsBanner(QWidget* parent = nullptr);

    void setItems(std::vector<BannerItem> items);
    const std::vector<BannerItem>& items() const { return m_items; }
    // Every item, one per line ("No warnings: ..." when there is none).
    QString plainText() const;
    int shownCount() const; // items shown in place
    QToolButton* showAllButton() const { return m_showAll; }
    QLabel* itemLabel(int i) const; // the text of shown item i (its title is beside it)
    QLabel* itemTitle(int i) const; // the bold title of shown item i ("Refused:")
    // Opens the popup with every item (non-modal) and returns it.
    QDialog* showAll();
    QDialog* popup() const;

    static constexpr int kInlineItems = 3;
    // Changes closer together than this are one interaction (a slider drag, a spin box held):
    // during it the banner grows at once but shrinks only when it ends, so the charts below
    // keep their size and are not re-laid out and redrawn at every step of the drag.
    static constexpr int kSettleMs = 600;
    // The milliseconds until a held height shrinks to the rows', or -1 when none is pending.
    int shrinkPendingMs() const;
    static QString noWarningsText();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void updatePopup();
    void holdHeight();
    int naturalHeight() const;
    struct Row {
        QWidget* row = nullptr;
        QLabel* icon = nullptr;
        QLabel* title = nullptr; // "Refused:", in bold
        QLabel* text = nullptr;  // the rest, wrapped beside the title
        int style = -1; // the tint and icon last set: the severity, or -2 for "no warnings"
    };
    std::array<Row, kInlineItems> m_rows;
    QPixmap iconPixmap(QStyle::StandardPixmap icon); // the 16 px icon, kept per style
    std::map<int, QPixmap> m_icons;
    const QStyle* m_iconStyle = nullptr;
    QTimer* m_settle = nullptr;
    QElapsedTimer m_lastChange;
    int m_heldHeight = 0;
    QToolButton* m_showAll = nullptr;
    QPointer<QDialog> m_popup;
    QLabel* m_popupText = nullptr;
    std::vector<BannerItem> m_items;
};

} // namespace kvl::widgets
