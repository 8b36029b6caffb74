#include "widgets/scenario/warnings_banner.h"
#include "widgets/scenario/wrap_label.h"

#include "widgets/state/status_text.h"

#include "core/engine.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QDialog>
#include <QDialogButtonBox>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QResizeEvent>
#include <QScrollArea>
#include <QStyle>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

namespace kvl::widgets {

namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("kvl::widgets::WarningsBanner", text);
}

BannerItem item(Severity severity, const char* kind, const QString& title, const QString& text) {
    return {severity, QLatin1String(kind), title, text};
}

bool isContextWarning(const std::string& w) {
    return w.find("exceeds") != std::string::npos &&
           w.find("max model length") != std::string::npos;
}

// vLLM's own message, without the "vLLM refuses to start: " the ledger puts in front.
QString refusalText(const core::LedgerResult& r) {
    QString text = qs(r.error);
    const QString prefix = QStringLiteral("vLLM refuses to start: ");
    if (text.startsWith(prefix))
        text = text.mid(prefix.size());
    if (r.estimatedMaxModelLen > 0 && !text.contains(QStringLiteral("estimated maximum model")))
        text += tr(" The estimated maximum model length is %1.").arg(r.estimatedMaxModelLen);
    return text;
}

BannerItem missedTarget(const LedgerSnapshot& snap, std::int64_t perReplica, bool capped) {
    const core::Scenario& s = snap.scenario;
    const std::int64_t target = s.workload.targetRequests;
    const std::int64_t cluster = scopeRequests(perReplica, s, FigureScope::Cluster);
    const core::GpusNeeded need =
        snap.gpusNeeded ? *snap.gpusNeeded : core::computeGpusNeeded(s, target);
    QString text =
        tr("%1 requests at %2 on %3: %4 fit%5")
            .arg(thousandsQ(target), formatTokensQ(s.workload.context), deploymentText(s),
                 thousandsQ(cluster), capped ? tr(" (max_num_seqs)") : QString());
    if (need.gpus > 0) {
        text += tr("; needs %1 x %2 as %3")
                    .arg(need.gpus)
                    .arg(qs(s.hardware.gpu.name), qs(core::layoutLabel(need.layout)));
        // The fewest GPUs answer memory; where the planner flags that layout, say why and give
        // the Deployment tab's answer, so the two never seem to disagree.
        if (!need.flag.empty())
            text += need.recommended ? tr(" (%1); the Deployment tab's best: %2 as %3")
                                           .arg(qs(need.flag))
                                           .arg(need.recommended->gpus())
                                           .arg(qs(core::layoutLabel(*need.recommended)))
                                     : tr(" (%1)").arg(qs(need.flag));
    } else
        text += tr("; no layout of %1 GPUs or fewer holds them (%2)")
                    .arg(core::kMaxPlanGpus)
                    .arg(qs(need.note));
    return item(Severity::Error, "target", tr("Target missed"), text);
}

} // namespace

QString BannerItem::html() const {
    return QStringLiteral("<b>%1:</b> %2").arg(title.toHtmlEscaped(), text.toHtmlEscaped());
}

QString BannerItem::plain() const {
    return title + QStringLiteral(": ") + text;
}

std::vector<BannerItem> bannerItems(const LedgerSnapshot& snap) {
    std::vector<BannerItem> out;
    const core::Scenario& s = snap.scenario;
    const core::LedgerResult& r = snap.ledger;
    if (snap.invalid) {
        out.push_back(item(Severity::Error, "invalid", tr("Not computed"),
                           qs(r.error) + tr(". Fix it in the scenario panel; the charts show "
                                            "nothing until then.")));
        return out;
    }
    if (snap.engine) {
        // SGLang, TensorRT-LLM or llama.cpp: that engine's own verdict and notes; the model's
        // context warnings hold for every engine. vLLM's refusal, max_num_seqs and notes do not.
        const core::EngineResult& e = *snap.engine;
        const QString name = qs(core::engineDisplayName(e.engine));
        if (!e.formatOffered)
            out.push_back(item(Severity::Error, "format", tr("Not in %1").arg(name), qs(e.error)));
        else if (!e.error.empty())
            out.push_back(
                item(Severity::Error, "no-fit", tr("%1 does not run this").arg(name), qs(e.error)));
        else if (s.workload.targetRequests > 0 &&
                 s.workload.targetRequests >
                     scopeRequests(e.requestsAtContext, s, FigureScope::Cluster))
            out.push_back(item(Severity::Error, "target", tr("Target missed"),
                               tr("%1 runs %2 requests of %3 per replica; the target is %4")
                                   .arg(name, thousandsQ(e.requestsAtContext),
                                        formatTokensQ(s.workload.context),
                                        thousandsQ(s.workload.targetRequests))));
        for (const auto& w : r.warnings)
            if (isContextWarning(w))
                out.push_back(
                    item(Severity::Warning, "context", tr("Context beyond the model"), qs(w)));
        out.push_back(
            item(Severity::Note, "engine", tr("%1's rules").arg(name),
                 tr("the status line, the command box and the Engines tab follow %1 "
                    "%2; the curves, breakdown, lever ladder, Speed and Deployment tabs are "
                    "vLLM's accounting")
                     .arg(name, qs(e.version))));
        for (const auto& n : e.notes)
            out.push_back(item(Severity::Note, "note", tr("Note"), qs(n)));
        return out;
    }
    const std::int64_t cap = core::effectiveMaxNumSeqs(s);
    const bool capped = r.maxRequestsAtContext > cap;
    const std::int64_t perReplica = std::min(r.maxRequestsAtContext, cap);
    if (s.workload.targetRequests > 0 &&
        s.workload.targetRequests > scopeRequests(perReplica, s, FigureScope::Cluster))
        out.push_back(missedTarget(snap, perReplica, capped));
    if (r.refused)
        out.push_back(
            item(Severity::Error, "refused", tr("vLLM would refuse to start"), refusalText(r)));
    else if (!r.error.empty())
        out.push_back(item(Severity::Error, "no-fit", tr("Does not fit"), qs(r.error)));
    if (capped)
        out.push_back(
            item(Severity::Warning, "max-num-seqs", tr("max_num_seqs caps concurrency"),
                 tr("vLLM runs at most %1 requests per replica (%2); %3 fit in memory at %4. Raise "
                    "--max-num-seqs to use the memory.")
                     .arg(thousandsQ(cap),
                          s.engine.maxNumSeqs > 0
                              ? tr("--max-num-seqs %1").arg(s.engine.maxNumSeqs)
                              : tr("vLLM's default on %1").arg(qs(s.hardware.gpu.name)),
                          thousandsQ(r.maxRequestsAtContext), formatTokensQ(r.contextTokens))));
    for (const auto& w : r.warnings)
        if (isContextWarning(w))
            out.push_back(
                item(Severity::Warning, "context", tr("Context beyond the model"), qs(w)));
    for (const auto& w : r.warnings)
        if (!isContextWarning(w))
            out.push_back(item(Severity::Warning, "warning", tr("Warning"), qs(w)));
    if (!formatInVllm(s))
        out.push_back(item(Severity::Warning, "format", tr("Not in vLLM"),
                           tr("vLLM has no --kv-cache-dtype for %1: the figures are what it "
                              "would take; the vLLM command notes it as a comment")
                               .arg(qs(core::formatLabel(r.kv.format)))));
    for (const auto& n : r.notes)
        out.push_back(item(Severity::Note, "note", tr("Note"), qs(n)));
    return out;
}

namespace {

// A banner row's background: a tint over whatever the theme paints behind it, red for errors,
// amber for warnings, none for notes. Painted here rather than by a style sheet: setting a
// sheet re-parses it and re-polishes the row, a sixth of the banner's work when a change
// turned a warning into an error (perf of bench_replot's engine switches).
class TintedRow : public QWidget {
public:
    using QWidget::QWidget;
    void setTint(const QColor& tint) {
        if (tint == m_tint)
            return;
        m_tint = tint;
        update();
    }

protected:
    void paintEvent(QPaintEvent*) override {
        if (m_tint.alpha() == 0)
            return;
        QPainter p(this);
        p.setRenderHint(QPainter::Antialiasing);
        p.setPen(Qt::NoPen);
        p.setBrush(m_tint);
        p.drawRoundedRect(QRectF(rect()), 3, 3);
    }

private:
    QColor m_tint = Qt::transparent;
};

} // namespace

WarningsBanner::WarningsBanner(QWidget* parent) : QFrame(parent) {
    setObjectName(QStringLiteral("warningsBanner"));
    setFrameShape(QFrame::NoFrame);
    auto* outer = new QHBoxLayout(this);
    outer->setContentsMargins(4, 2, 4, 2);
    outer->setSpacing(4);
    auto* rows = new QVBoxLayout;
    rows->setSpacing(2);
    for (int i = 0; i < kInlineItems; ++i) {
        Row& r = m_rows[static_cast<std::size_t>(i)];
        r.row = new TintedRow(this);
        r.row->setObjectName(QStringLiteral("bannerRow%1").arg(i));
        auto* h = new QHBoxLayout(r.row);
        h->setContentsMargins(4, 1, 4, 1);
        h->setSpacing(6);
        r.icon = new QLabel(r.row);
        r.icon->setFixedSize(16, 16);
        // Plain text in two labels, the title bold beside the wrapped text, rather than one
        // rich-text label: a rich label lays its text out in a QTextDocument (parsed, then laid
        // out for its size hints and again per width), which was a sixth of an engine switch's
        // GUI-thread time in perf of bench_replot.
        r.title = new QLabel(r.row);
        r.title->setObjectName(QStringLiteral("bannerTitle%1").arg(i));
        r.title->setTextFormat(Qt::PlainText);
        QFont bold = r.title->font();
        bold.setBold(true);
        r.title->setFont(bold);
        r.text = new WrapLabel(r.row);
        r.text->setObjectName(QStringLiteral("bannerItem%1").arg(i));
        r.text->setTextFormat(Qt::PlainText);
        r.text->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
        h->addWidget(r.icon, 0, Qt::AlignTop);
        h->addWidget(r.title, 0, Qt::AlignTop);
        h->addWidget(r.text, 1);
        rows->addWidget(r.row);
    }
    outer->addLayout(rows, 1);
    // The rows are plain labels, not selectable (see above): a right-click copies them all.
    auto* copy = new QAction(tr("Copy Warnings"), this);
    connect(copy, &QAction::triggered, this,
            [this] { QGuiApplication::clipboard()->setText(plainText()); });
    addAction(copy);
    setContextMenuPolicy(Qt::ActionsContextMenu);
    m_showAll = new QToolButton(this);
    m_showAll->setObjectName(QStringLiteral("bannerShowAll"));
    m_showAll->setToolTip(tr("Every warning and note of the scenario, in a window"));
    connect(m_showAll, &QToolButton::clicked, this, [this] { showAll(); });
    outer->addWidget(m_showAll, 0, Qt::AlignTop);
    rows->addStretch(1); // a held height leaves its room below the rows, not between them
    m_settle = new QTimer(this);
    m_settle->setSingleShot(true);
    m_settle->setInterval(kSettleMs);
    connect(m_settle, &QTimer::timeout, this, [this] {
        m_heldHeight = naturalHeight();
        setMinimumHeight(m_heldHeight);
    });
    setItems({});
}

int WarningsBanner::naturalHeight() const {
    QLayout* l = layout();
    const int w = width() > 0 ? width() : sizeHint().width();
    return l->hasHeightForWidth() ? l->totalHeightForWidth(w) : l->totalSizeHint().height();
}

void WarningsBanner::holdHeight() {
    // Grows at once; shrinks at once after a pause, otherwise when the interaction ends.
    const bool interacting = m_lastChange.isValid() && m_lastChange.elapsed() < kSettleMs;
    m_lastChange.start();
    const int natural = naturalHeight();
    if (natural > m_heldHeight || !interacting) {
        m_settle->stop();
        m_heldHeight = natural;
        setMinimumHeight(m_heldHeight);
    } else if (natural < m_heldHeight) {
        m_settle->start();
    }
}

int WarningsBanner::shrinkPendingMs() const {
    return m_settle->isActive() ? m_settle->remainingTime() : -1;
}

void WarningsBanner::resizeEvent(QResizeEvent* event) {
    QFrame::resizeEvent(event);
    // A new width wraps the rows anew: the height held for the old width means nothing now.
    if (event->oldSize().width() != event->size().width() && m_heldHeight > 0 &&
        !m_settle->isActive()) {
        const int natural = naturalHeight();
        if (natural != m_heldHeight) {
            m_heldHeight = natural;
            setMinimumHeight(m_heldHeight);
        }
    }
}

QString WarningsBanner::noWarningsText() {
    return tr("No warnings: the scenario is within the model's and vLLM's limits");
}

int WarningsBanner::shownCount() const {
    return std::min<int>(kInlineItems, static_cast<int>(m_items.size()));
}

QLabel* WarningsBanner::itemLabel(int i) const {
    return i >= 0 && i < kInlineItems ? m_rows[static_cast<std::size_t>(i)].text : nullptr;
}

QLabel* WarningsBanner::itemTitle(int i) const {
    return i >= 0 && i < kInlineItems ? m_rows[static_cast<std::size_t>(i)].title : nullptr;
}

void WarningsBanner::setItems(std::vector<BannerItem> items) {
    if (items == m_items && m_heldHeight > 0) {
        // The same rows (a slider step that moves no warning): nothing to lay out or measure
        // again (measuring wraps every row's rich text), but the interaction goes on, so a
        // pending shrink waits for its pause.
        const bool shrinkPending = m_settle->isActive();
        m_lastChange.start();
        if (shrinkPending)
            m_settle->start();
        return;
    }
    m_items = std::move(items);
    const int n = static_cast<int>(m_items.size());
    // The first items in place, whole (they wrap); "Show all N" beside them for the rest.
    const int inlineRows = std::min(n, kInlineItems);
    for (int i = 0; i < kInlineItems; ++i) {
        Row& r = m_rows[static_cast<std::size_t>(i)];
        const bool empty = n == 0 && i == 0;
        const bool shown = i < inlineRows || empty;
        r.row->setVisible(shown);
        if (!shown)
            continue;
        // Only what changed is set: a style sheet re-polishes the row, a pixmap repaints it.
        if (empty) {
            if (r.style != -2) {
                r.style = -2;
                r.icon->setPixmap(iconPixmap(QStyle::SP_DialogApplyButton));
                static_cast<TintedRow*>(r.row)->setTint(Qt::transparent);
            }
            r.title->setVisible(false);
            r.text->setText(noWarningsText());
            r.text->setToolTip({});
            continue;
        }
        const BannerItem& it = m_items[static_cast<std::size_t>(i)];
        if (r.style != static_cast<int>(it.severity)) {
            r.style = static_cast<int>(it.severity);
            const auto icon = it.severity == Severity::Error     ? QStyle::SP_MessageBoxCritical
                              : it.severity == Severity::Warning ? QStyle::SP_MessageBoxWarning
                                                                 : QStyle::SP_MessageBoxInformation;
            r.icon->setPixmap(iconPixmap(icon));
            // A tint over whatever the theme's background is: red for errors, amber for
            // warnings.
            static_cast<TintedRow*>(r.row)->setTint(
                it.severity == Severity::Error     ? QColor(220, 50, 47, 40)
                : it.severity == Severity::Warning ? QColor(230, 160, 0, 45)
                                                   : QColor(Qt::transparent));
        }
        r.title->setText(it.title + QLatin1Char(':'));
        r.title->setVisible(true);
        r.text->setText(it.text);
        r.text->setToolTip(it.plain());
    }
    m_showAll->setVisible(n > inlineRows);
    m_showAll->setText(tr("Show all %1...").arg(n));
    setToolTip(plainText());
    updatePopup();
    holdHeight();
}

QPixmap WarningsBanner::iconPixmap(QStyle::StandardPixmap icon) {
    // QStyle::standardIcon reads the icon's files again at each call.
    if (m_iconStyle != style()) {
        m_icons.clear();
        m_iconStyle = style();
    }
    auto it = m_icons.find(icon);
    if (it == m_icons.end())
        it = m_icons.emplace(icon, style()->standardIcon(icon).pixmap(16, 16)).first;
    return it->second;
}

QString WarningsBanner::plainText() const {
    if (m_items.empty())
        return noWarningsText();
    QStringList lines;
    for (const auto& it : m_items)
        lines << it.plain();
    return lines.join(QLatin1Char('\n'));
}

void WarningsBanner::updatePopup() {
    if (!m_popupText)
        return;
    QString html = QStringLiteral("<ol>");
    for (const auto& it : m_items)
        html += QStringLiteral("<li>") + it.html() + QStringLiteral("</li>");
    html += QStringLiteral("</ol>");
    m_popupText->setText(m_items.empty() ? noWarningsText().toHtmlEscaped() : html);
}

QDialog* WarningsBanner::popup() const {
    return m_popup.data();
}

QDialog* WarningsBanner::showAll() {
    if (!m_popup) {
        m_popup = new QDialog(this);
        m_popup->setObjectName(QStringLiteral("bannerPopup"));
        m_popup->setWindowTitle(tr("Warnings and notes"));
        auto* v = new QVBoxLayout(m_popup);
        auto* scroll = new QScrollArea(m_popup);
        scroll->setWidgetResizable(true);
        m_popupText = new QLabel;
        m_popupText->setObjectName(QStringLiteral("bannerPopupText"));
        m_popupText->setWordWrap(true);
        m_popupText->setTextFormat(Qt::RichText);
        m_popupText->setTextInteractionFlags(Qt::TextSelectableByMouse);
        m_popupText->setAlignment(Qt::AlignTop | Qt::AlignLeft);
        scroll->setWidget(m_popupText);
        v->addWidget(scroll);
        auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, m_popup);
        connect(buttons, &QDialogButtonBox::rejected, m_popup, &QDialog::close);
        v->addWidget(buttons);
        m_popup->resize(640, 360);
    }
    updatePopup();
    m_popup->show();
    m_popup->raise();
    return m_popup;
}

} // namespace kvl::widgets
