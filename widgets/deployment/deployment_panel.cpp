#include "widgets/deployment/deployment_panel.h"

#include "widgets/charts/chart_factory.h"
#include "widgets/deployment/plan_model.h"
#include "widgets/scenario/form_parts.h"
#include "widgets/scenario/token_spin_box.h"
#include "widgets/state/latest_job.h"

#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/vllm_command.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QPlainTextDocumentLayout>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QTextBlock>
#include <QTextDocument>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>

namespace kvl::widgets {

namespace {
constexpr int kDebounceMs = 250;
// The command box's height, in lines: the usual command (the model and five to nine flags, one a
// line) shows whole at 1366 x 768 without scrolling, and the box keeps that height while no
// plan is shown; a longer one (many flags and "not in vLLM" notes) scrolls past the most, so
// that the table and chart above keep their room.
constexpr int kMinCommandLines = 6;
constexpr int kMaxCommandLines = 14;

std::int64_t defaultUsers(const LedgerSnapshot& snap) {
    const core::Scenario& s = snap.scenario;
    if (s.workload.targetRequests > 0)
        return s.workload.targetRequests;
    if (s.workload.concurrency > 0)
        return s.workload.concurrency;
    return std::max<std::int64_t>(1, snap.ledger.maxRequestsAtContext);
}

std::int64_t scenarioPrefix(const core::Scenario& s) {
    return s.levers.prefix.enabled ? s.levers.prefix.sharedTokens : 0;
}

int clampInt(std::int64_t v, int lo, int hi) {
    return static_cast<int>(std::clamp<std::int64_t>(v, lo, hi));
}
} // namespace

PlanFields defaultPlanFields(const LedgerSnapshot& snap) {
    PlanFields f;
    f.users = clampInt(defaultUsers(snap), 1, kPlanMaxUsers);
    f.context = clampInt(snap.scenario.workload.context, 1, kPlanMaxContext);
    f.prefixTokens = clampInt(scenarioPrefix(snap.scenario), 0, kPlanMaxContext);
    return f;
}

core::PlanRequest planRequestFor(const core::Scenario& base, const PlanFields& f) {
    core::PlanRequest req;
    req.base = base;
    req.base.levers.prefix.enabled = f.prefixTokens > 0;
    if (f.prefixTokens > 0)
        req.base.levers.prefix.sharedTokens = f.prefixTokens;
    req.users = f.users;
    req.context = f.context;
    req.maxGpus = f.maxGpus;
    req.gpusPerNode = f.gpusPerNode;
    req.rank = f.rank;
    req.minTokensPerSecondPerUser = f.minTokensPerSecondPerUser;
    // The scenario's GPU first (issue 29, item 6): the other kinds are a row away.
    req.preferredGpu = base.hardware.gpu.id;
    for (const auto& g : io::builtinGpus())
        if (f.gpuKinds.isEmpty() || f.gpuKinds.contains(qs(g.id)))
            req.gpus.push_back(g);
    return req;
}

PlanOutcome runPlan(const core::PlanRequest& request, const std::atomic<bool>* cancel) {
    // One GPU kind at a time, so a cancel takes effect within one kind's search (a few ms).
    QElapsedTimer timer;
    timer.start();
    PlanOutcome out;
    out.request = request;
    auto result = std::make_shared<core::PlanResult>();
    result->preferredGpu = request.preferredGpu;
    for (const core::GpuSpec& gpu : request.gpus) {
        if (cancel && cancel->load()) {
            out.cancelled = true;
            break;
        }
        core::PlanRequest one = request;
        one.gpus = {gpu};
        core::PlanResult r = core::planDeployments(one);
        for (auto& g : r.gpus)
            result->gpus.push_back(std::move(g));
    }
    out.result = std::move(result);
    out.elapsedMs = static_cast<double>(timer.nsecsElapsed()) / 1e6;
    return out;
}

DeploymentPanel::DeploymentPanel(QWidget* parent) : QWidget(parent) {
    m_debounce = new QTimer(this);
    m_debounce->setSingleShot(true);
    m_debounce->setInterval(kDebounceMs);
    connect(m_debounce, &QTimer::timeout, this, [this] { startPlan(); });
    buildUi();
}

DeploymentPanel::~DeploymentPanel() {
    if (m_cancel)
        m_cancel->store(true); // the worker stops after its current GPU kind
}

void DeploymentPanel::buildUi() {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    createWorkloadFields();
    createSearchFields();
    layout->addLayout(buildInputGrid());

    m_status = new QLabel;
    m_status->setObjectName(QStringLiteral("planStatusLabel"));
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_status);

    buildTable();
    buildColumnsMenu();
    layout->addWidget(buildViews(), 1);
    layout->addLayout(buildCommandRow());
    buildCommandView();
    layout->addWidget(m_command);

    connectControls();
    m_status->setText(tr("No plan yet"));
    updateCommand();
}

void DeploymentPanel::createWorkloadFields() {
    m_users = new QSpinBox;
    m_users->setObjectName(QStringLiteral("planUsersSpin"));
    m_users->setRange(1, kPlanMaxUsers);
    m_users->setGroupSeparatorShown(true);
    m_users->setToolTip(tr("Concurrent requests (users) to hold, each at the context"));
    m_context = new TokenSpinBox;
    m_context->setObjectName(QStringLiteral("planContextSpin"));
    m_context->setRange(1, kPlanMaxContext);
    m_context->setToolTip(tr("Tokens per request (prompt + output); vLLM starts with "
                             "--max-model-len at least this"));
    m_prefix = new TokenSpinBox;
    m_prefix->setObjectName(QStringLiteral("planPrefixSpin"));
    m_prefix->setRange(0, kPlanMaxContext);
    m_prefix->setSpecialValueText(tr("none"));
    m_prefix->setToolTip(tr("A prompt prefix every request shares (system prompt): its full "
                            "blocks are stored once (vLLM's prefix caching)"));
    m_gpuButton = new QPushButton;
    m_gpuButton->setObjectName(QStringLiteral("planGpuKindsButton"));
    m_gpuButton->setMenu(new QMenu(m_gpuButton));
    m_gpuButton->setToolTip(tr("The GPU kinds of the catalog to plan for"));
}

void DeploymentPanel::createSearchFields() {
    m_maxGpus = namedSpin("planMaxGpusSpin", 1, 512, core::kMaxPlanGpus,
                          tr("The most GPUs a plan may use (TP x PP x DP)"));
    m_perNode = namedSpin("planGpusPerNodeSpin", 1, 64, kPlanDefaultGpusPerNode,
                          tr("GPUs per node: a layout whose TP x PP stays inside one node "
                             "ranks first"));
    m_rank = new QComboBox;
    m_rank->setObjectName(QStringLiteral("planRankCombo"));
    m_rank->addItem(tr("fewest GPUs"), int(core::PlanRank::Gpus));
    m_rank->addItem(tr("throughput"), int(core::PlanRank::Throughput));
    m_rank->setToolTip(tr("Among layouts of the same GPU count: the one holding the most "
                          "requests, or the fastest cluster"));
    m_minSpeed = new QDoubleSpinBox;
    m_minSpeed->setObjectName(QStringLiteral("planMinSpeedSpin"));
    m_minSpeed->setRange(0, 10000);
    m_minSpeed->setDecimals(1);
    m_minSpeed->setValue(core::kDefaultMinTokensPerSecondPerUser);
    m_minSpeed->setSpecialValueText(tr("none"));
    m_minSpeed->setToolTip(tr("The speed floor: a plan slower per user (decode tokens/s) is "
                              "flagged, and not the best while one above it exists; so is one "
                              "of more than %1 pipeline stages")
                               .arg(core::kMaxRecommendedPipelineStages));
    m_planButton = namedButton(tr("&Plan"), "planButton");
    m_cancelButton = namedButton(tr("Cancel"), "planCancelButton");
    m_cancelButton->setEnabled(false);
}

QGridLayout* DeploymentPanel::buildInputGrid() {
    auto* form = new QGridLayout;
    form->setHorizontalSpacing(8);
    addLabelledRow(form, 0,
                   {{tr("&Users:"), m_users},
                    {tr("C&ontext:"), m_context},
                    {tr("Shared pre&fix:"), m_prefix}});
    form->addWidget(m_gpuButton, 0, 6, 1, 2);
    addLabelledRow(form, 1,
                   {{tr("Max &GPUs:"), m_maxGpus},
                    {tr("GPUs per &node:"), m_perNode},
                    {tr("&Rank by:"), m_rank}});
    form->addWidget(m_planButton, 1, 6);
    form->addWidget(m_cancelButton, 1, 7);
    // Spanning the first four columns, so that its longer label widens none of them.
    auto* floorRow = new QHBoxLayout;
    floorRow->addWidget(buddyLabel(tr("Min tokens/s per &user:"), m_minSpeed));
    floorRow->addWidget(m_minSpeed);
    floorRow->addStretch(1);
    form->addLayout(floorRow, 2, 0, 1, 4);
    form->setColumnStretch(8, 1);
    return form;
}

void DeploymentPanel::buildTable() {
    m_model = new PlanTableModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(PlanTableModel::SortRole);
    m_table = resultsTable(m_proxy, "planTable");
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(PlanTableModel::GpusColumn, Qt::AscendingOrder);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    // The note takes the width left and is elided (whole in its tooltip): a long one must not
    // push the numbers off screen.
    m_table->horizontalHeader()->setSectionResizeMode(PlanTableModel::ReasonColumn,
                                                      QHeaderView::Stretch);
    m_table->setTextElideMode(Qt::ElideRight);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 8);
}

void DeploymentPanel::buildColumnsMenu() {
    // Twelve columns do not fit beside the chart on a small screen: the column titles' context
    // menu shows and hides them (the GPU column stays), and the window remembers the choice.
    QHeaderView* header = m_table->horizontalHeader();
    header->setContextMenuPolicy(Qt::CustomContextMenu);
    header->setToolTip(tr("Right-click a column title to show or hide columns"));
    m_columnsMenu = new QMenu(tr("Columns"), this);
    m_columnsMenu->setObjectName(QStringLiteral("planColumnsMenu"));
    for (int column = 0; column < PlanTableModel::ColumnCount; ++column) {
        const QString title =
            m_model->headerData(column, Qt::Horizontal).toString().replace(u'\n', u' ');
        QAction* action = m_columnsMenu->addAction(title);
        action->setObjectName(QStringLiteral("planColumn%1").arg(column));
        action->setCheckable(true);
        action->setChecked(true);
        action->setEnabled(column != PlanTableModel::GpuColumn);
        connect(action, &QAction::toggled, this, [this, column](bool shown) {
            if (m_table->isColumnHidden(column) == !shown)
                return;
            m_userHidden.removeAll(column);
            m_userShown.removeAll(column);
            (shown ? m_userShown : m_userHidden).append(column);
            applyColumnVisibility();
            emit tableStateChanged();
        });
    }
    m_columnsMenu->addSeparator();
    QAction* showAll = m_columnsMenu->addAction(tr("Show All Columns"));
    showAll->setObjectName(QStringLiteral("planShowAllColumns"));
    connect(showAll, &QAction::triggered, this, [this] {
        for (QAction* action : m_columnsMenu->actions())
            if (action->isCheckable())
                action->setChecked(true);
    });
    connect(header, &QHeaderView::customContextMenuRequested, this,
            [this, header](QPoint at) { m_columnsMenu->popup(header->mapToGlobal(at)); });
}

QStackedWidget* DeploymentPanel::buildViews() {
    // At 1366 x 768 the twelve columns need twice the width the table gets beside its chart:
    // the least needed ones step aside (fitColumns) whenever the width or the rows change.
    m_table->installEventFilter(this);
    // The rows' widths decide between side by side and tabs, then which columns fit.
    const auto refit = [this] {
        updateViewMode();
        fitColumns();
    };
    connect(m_proxy, &QAbstractItemModel::modelReset, this, refit);
    connect(m_proxy, &QAbstractItemModel::layoutChanged, this, refit);
    connect(m_proxy, &QAbstractItemModel::dataChanged, this, refit);
    m_chart = static_cast<GpusNeededChart*>(createChart(*findChartSpec(u"gpus-needed")));
    m_split = new QSplitter(Qt::Horizontal);
    m_split->setObjectName(QStringLiteral("planSplitter"));
    m_split->addWidget(m_table);
    m_split->addWidget(m_chart);
    m_split->setStretchFactor(0, 2);
    m_split->setStretchFactor(1, 1);
    m_split->setChildrenCollapsible(false);
    // Too narrow for the table's essential columns beside the chart (a 1366 px window), the two
    // become tabs of their own (updateViewMode), each at the full width.
    m_viewTabs = new QTabWidget;
    m_viewTabs->setObjectName(QStringLiteral("planViewTabs"));
    m_viewTabs->setDocumentMode(true);
    m_views = new QStackedWidget;
    m_views->addWidget(m_split);
    m_views->addWidget(m_viewTabs);
    return m_views;
}

QHBoxLayout* DeploymentPanel::buildCommandRow() {
    auto* cmdRow = new QHBoxLayout;
    m_commandTitle = new QLabel;
    m_commandTitle->setObjectName(QStringLiteral("planCommandTitle"));
    cmdRow->addWidget(m_commandTitle, 1);
    m_applyButton = namedButton(tr("&Apply Layout to Scenario"), "planApplyButton",
                                tr("Set the scenario's GPU, TP, PP, DP, EP, DCP and max model "
                                   "length to the selected row's plan (or double-click the row)"));
    m_copyButton = namedButton(tr("&Copy Command"), "planCopyButton");
    cmdRow->addWidget(m_applyButton);
    cmdRow->addWidget(m_copyButton);
    return cmdRow;
}

void DeploymentPanel::buildCommandView() {
    m_command = new QPlainTextEdit;
    m_command->setObjectName(QStringLiteral("planCommandView"));
    m_command->setReadOnly(true);
    m_command->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    // One flag per line, never wrapped: a narrow window scrolls sideways instead of breaking a
    // flag over two lines. As tall as the command (fitCommandHeight).
    m_command->setLineWrapMode(QPlainTextEdit::NoWrap);
    fitCommandHeight();
}

void DeploymentPanel::fitCommandHeight() {
    // The lines' own heights and widths, as the box lays them out (the last block's height
    // holds the bottom margin), from kMinCommandLines to kMaxCommandLines lines tall. The top
    // margin and 1 px more: QPlainTextEdit scrolls unless the blocks fit in the viewport's
    // height less the margin and 1.
    QTextDocument* doc = m_command->document();
    auto* layout = qobject_cast<QPlainTextDocumentLayout*>(doc->documentLayout());
    const qreal margin = doc->documentMargin();
    const qreal line = m_command->fontMetrics().lineSpacing();
    qreal height = margin + 1, width = 0;
    int lines = 0;
    for (QTextBlock b = doc->begin(); layout && b.isValid(); b = b.next(), ++lines) {
        const QRectF r = layout->blockBoundingRect(b);
        if (lines < kMaxCommandLines)
            height += r.height();
        width = std::max(width, r.width());
    }
    if (lines > kMaxCommandLines)
        height += margin;
    height = std::max(height, kMinCommandLines * line + 2 * margin + 1);
    // A line wider than the box brings the horizontal scroll bar: room for it then only.
    const int frame = 2 * m_command->frameWidth();
    const bool sideways = width > m_command->width() - frame;
    const int bar = sideways ? m_command->style()->pixelMetric(QStyle::PM_ScrollBarExtent) : 0;
    const int fixed = static_cast<int>(std::ceil(height)) + frame + bar;
    if (m_command->height() != fixed || m_command->minimumHeight() != fixed)
        m_command->setFixedHeight(fixed);
}

void DeploymentPanel::connectControls() {
    updateGpuMenu();
    for (QSpinBox* spin : {static_cast<QSpinBox*>(m_users), static_cast<QSpinBox*>(m_context),
                           static_cast<QSpinBox*>(m_prefix), m_maxGpus, m_perNode})
        connect(spin, &QSpinBox::valueChanged, this, &DeploymentPanel::onFieldEdited);
    connect(m_rank, &QComboBox::currentIndexChanged, this, &DeploymentPanel::onFieldEdited);
    connect(m_planButton, &QPushButton::clicked, this, [this] { startPlan(); });
    connect(m_cancelButton, &QPushButton::clicked, this, &DeploymentPanel::cancelPlan);
    connect(m_applyButton, &QPushButton::clicked, this, [this] { applySelected(); });
    connect(m_table, &QTableView::doubleClicked, this, [this] { applySelected(); });
    connect(m_copyButton, &QPushButton::clicked, this,
            [this] { QApplication::clipboard()->setText(commandText()); });
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &DeploymentPanel::updateCommand);
}

const QList<int>& DeploymentPanel::fitOrder() {
    // Least needed first: what one GPU holds besides the KV pool, then cluster totals (they
    // follow from a replica's figures and the GPU count), then whether it fits (the note says
    // why not). The GPU, its count, the layout, requests per replica, speed per user and the
    // note always stay.
    static const QList<int> order{
        PlanTableModel::WeightsPerGpuColumn,   PlanTableModel::HeadroomPerGpuColumn,
        PlanTableModel::ClusterTokensColumn,   PlanTableModel::KvPerGpuColumn,
        PlanTableModel::ClusterRequestsColumn, PlanTableModel::FitsColumn};
    return order;
}

int DeploymentPanel::columnNeeds(int column) const {
    // What a column needs whole: its widest cell or its title, as ResizeToContents sizes it;
    // the note needs its title (it is elided).
    const int title = m_table->horizontalHeader()->sectionSizeHint(column);
    return column == PlanTableModel::ReasonColumn
               ? title
               : std::max(title, static_cast<const QAbstractItemView*>(m_table)->sizeHintForColumn(
                                     column));
}

bool DeploymentPanel::tabbed() const {
    return m_views->currentWidget() == m_viewTabs;
}

void DeploymentPanel::updateViewMode() {
    if (m_proxy->rowCount() == 0)
        return;
    // The table's essentials: every column but those fitColumns may hide, with its frame and
    // a vertical scroll bar.
    int essential =
        2 * m_table->frameWidth() + m_table->style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 2;
    for (int column = 0; column < PlanTableModel::ColumnCount; ++column)
        if (!fitOrder().contains(column) && !m_userHidden.contains(column))
            essential += columnNeeds(column);
    const int room = m_views->width();
    const int chart = std::max(320, m_chart->minimumSizeHint().width());
    const bool tabs = room - chart - m_split->handleWidth() < essential;
    if (tabs != tabbed()) {
        if (tabs) {
            m_viewTabs->addTab(m_table, tr("Plan table"));
            m_viewTabs->addTab(m_chart, tr("GPUs needed chart"));
            m_views->setCurrentWidget(m_viewTabs);
        } else {
            m_viewTabs->clear(); // the pages stay; the splitter takes them back
            m_split->insertWidget(0, m_table);
            m_split->insertWidget(1, m_chart);
            m_table->show();
            m_chart->show();
            m_views->setCurrentWidget(m_split);
        }
    }
    if (!tabs) {
        // Side by side: the table keeps at least its essentials' width.
        const QList<int> sizes = m_split->sizes();
        const int total = sizes.value(0) + sizes.value(1);
        if (total > 0 && sizes.value(0) < essential)
            m_split->setSizes({essential, std::max(chart, total - essential)});
    }
}

void DeploymentPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    updateViewMode();
    fitCommandHeight(); // a narrower box may need the horizontal scroll bar
}

bool DeploymentPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_table && (event->type() == QEvent::Resize || event->type() == QEvent::Show))
        fitColumns();
    return QWidget::eventFilter(watched, event);
}

void DeploymentPanel::applyColumnVisibility() {
    for (int column = 0; column < PlanTableModel::ColumnCount; ++column) {
        const bool hidden = column != PlanTableModel::GpuColumn &&
                            (m_userHidden.contains(column) ||
                             (m_fitHidden.contains(column) && !m_userShown.contains(column)));
        if (m_table->isColumnHidden(column) != hidden)
            m_table->setColumnHidden(column, hidden);
    }
    QStringList fitted;
    for (int column : m_fitHidden)
        if (m_table->isColumnHidden(column) && !m_userHidden.contains(column))
            fitted << m_model->headerData(column, Qt::Horizontal).toString().replace(u'\n', u' ');
    m_table->horizontalHeader()->setToolTip(
        fitted.isEmpty()
            ? tr("Right-click a column title to show or hide columns")
            : tr("Hidden to fit the width: %1. Right-click a column title to show them")
                  .arg(fitted.join(QStringLiteral(", "))));
    syncColumnActions();
}

void DeploymentPanel::fitColumns() {
    if (m_fitting || m_proxy->rowCount() == 0)
        return;
    if (!m_table->isVisible())
        return;
    m_fitting = true;
    auto needs = [this](int column) { return columnNeeds(column); };
    int total = 0;
    for (int column = 0; column < PlanTableModel::ColumnCount; ++column)
        if (!m_userHidden.contains(column))
            total += needs(column);
    QList<int> out;
    const int room = m_table->viewport()->width();
    for (int column : fitOrder()) {
        if (total <= room)
            break;
        if (m_userHidden.contains(column) || m_userShown.contains(column))
            continue;
        out.append(column);
        total -= needs(column);
    }
    m_fitHidden = out;
    applyColumnVisibility();
    m_fitting = false;
}

void DeploymentPanel::syncColumnActions() {
    const QList<QAction*> actions = m_columnsMenu->actions();
    for (int column = 0; column < PlanTableModel::ColumnCount; ++column) {
        const QSignalBlocker quiet(actions[column]);
        actions[column]->setChecked(!m_table->isColumnHidden(column));
    }
}

QList<int> DeploymentPanel::hiddenColumns() const {
    QList<int> hidden;
    for (int column = 0; column < PlanTableModel::ColumnCount; ++column)
        if (m_userHidden.contains(column))
            hidden.append(column);
    return hidden;
}

void DeploymentPanel::setHiddenColumns(const QList<int>& columns) {
    m_userHidden.clear();
    m_userShown.clear();
    for (int column = 0; column < PlanTableModel::ColumnCount; ++column)
        if (column != PlanTableModel::GpuColumn && columns.contains(column))
            m_userHidden.append(column);
    applyColumnVisibility();
}

void DeploymentPanel::updateGpuMenu() {
    QMenu* menu = m_gpuButton->menu();
    menu->clear();
    const auto& gpus = io::builtinGpus();
    QAction* all = menu->addAction(tr("All GPU kinds"));
    connect(all, &QAction::triggered, this, [this] { setGpuKinds({}); });
    menu->addSeparator();
    for (const core::GpuSpec& g : gpus) {
        QAction* a = menu->addAction(qs(g.name));
        a->setCheckable(true);
        const QString id = qs(g.id);
        a->setChecked(m_gpuKinds.isEmpty() || m_gpuKinds.contains(id));
        connect(a, &QAction::toggled, this, [this, id](bool on) {
            QStringList kinds = gpuKinds();
            kinds.removeAll(id);
            if (on)
                kinds << id;
            if (kinds.isEmpty())
                kinds << id; // at least one kind
            setGpuKinds(kinds);
        });
    }
    const int n =
        m_gpuKinds.isEmpty() ? static_cast<int>(gpus.size()) : static_cast<int>(m_gpuKinds.size());
    m_gpuButton->setText(m_gpuKinds.isEmpty() ? tr("GPU kinds: all %1").arg(n)
                                              : tr("GPU kinds: %1 of %2").arg(n).arg(gpus.size()));
}

void DeploymentPanel::setGpuKinds(const QStringList& ids) {
    QStringList all;
    for (const auto& g : io::builtinGpus())
        all << qs(g.id);
    QStringList kinds;
    for (const QString& id : ids)
        if (all.contains(id) && !kinds.contains(id))
            kinds << id;
    if (kinds.size() == all.size())
        kinds.clear();
    if (kinds == m_gpuKinds)
        return;
    m_gpuKinds = kinds;
    // Rebuilt after the menu's own signal returns (a toggled action must not be deleted in it).
    QTimer::singleShot(0, this, [this] { updateGpuMenu(); });
    onFieldEdited();
}

QStringList DeploymentPanel::gpuKinds() const {
    if (!m_gpuKinds.isEmpty())
        return m_gpuKinds;
    QStringList all;
    for (const auto& g : io::builtinGpus())
        all << qs(g.id);
    return all;
}

void DeploymentPanel::setUsers(std::int64_t users) {
    m_users->setValue(clampInt(users, m_users->minimum(), m_users->maximum()));
}
void DeploymentPanel::setContext(std::int64_t tokens) {
    m_context->setValue(clampInt(tokens, m_context->minimum(), m_context->maximum()));
}
void DeploymentPanel::setPrefixTokens(std::int64_t tokens) {
    m_prefix->setValue(clampInt(tokens, m_prefix->minimum(), m_prefix->maximum()));
}
void DeploymentPanel::setMaxGpus(int n) {
    m_maxGpus->setValue(n);
}
void DeploymentPanel::setGpusPerNode(int n) {
    m_perNode->setValue(n);
}
void DeploymentPanel::setRank(core::PlanRank rank) {
    m_rank->setCurrentIndex(m_rank->findData(int(rank)));
}
void DeploymentPanel::setMinTokensPerSecondPerUser(double floor) {
    m_minSpeed->setValue(floor);
}

void DeploymentPanel::setView(const LedgerView& view) {
    if (view.units != m_units) {
        m_units = view.units;
        m_model->setUnits(m_units);
        updateCommand();
    }
    if (!view.snapshot)
        return;
    const LedgerSnapshot& snap = *view.snapshot;
    m_base = snap.scenario;
    m_haveBase = true;
    // The fields follow the scenario's own values when those change.
    auto follow = [](std::int64_t value, std::int64_t& followed, QSpinBox* spin) {
        if (value == followed)
            return;
        followed = value;
        const QSignalBlocker block(spin);
        spin->setValue(clampInt(value, spin->minimum(), spin->maximum()));
    };
    follow(defaultUsers(snap), m_followedUsers, m_users);
    follow(snap.scenario.workload.context, m_followedContext, m_context);
    follow(scenarioPrefix(snap.scenario), m_followedPrefix, m_prefix);
    const std::string key = planKey(planRequest());
    // The scenario's GPU moved: the same plans, the new one first (no re-plan).
    if (m_outcome.result && m_outcome.result->preferredGpu != m_base.hardware.gpu.id &&
        key == m_outcomeKey) {
        auto resorted = std::make_shared<core::PlanResult>(*m_outcome.result);
        resorted->preferredGpu = m_base.hardware.gpu.id;
        m_outcome.result = resorted;
        m_outcome.request.preferredGpu = m_base.hardware.gpu.id;
        m_model->setPlan(m_outcome.result, m_units);
        m_chart->setPlan(m_outcome.result, m_outcome.request.users, m_outcome.request.context,
                         m_outcome.request.maxGpus);
        updateCommand();
    }
    if (key != m_outcomeKey && key != m_pendingKey)
        schedulePlan();
}

void DeploymentPanel::onFieldEdited() {
    if (m_haveBase)
        schedulePlan();
}

void DeploymentPanel::schedulePlan() {
    m_debounce->start();
}

core::PlanRequest DeploymentPanel::planRequest() const {
    PlanFields f;
    f.users = m_users->value();
    f.context = m_context->value();
    f.prefixTokens = m_prefix->value();
    f.maxGpus = m_maxGpus->value();
    f.gpusPerNode = m_perNode->value();
    f.rank = static_cast<core::PlanRank>(m_rank->currentData().toInt());
    f.minTokensPerSecondPerUser = m_minSpeed->value();
    f.gpuKinds = m_gpuKinds; // empty = all
    return planRequestFor(m_base, f);
}

std::string DeploymentPanel::planKey(const core::PlanRequest& r) const {
    // What the planner reads: the base without its GPU, layout and workload point (the plan
    // searches those), the users, the context, the kinds and the search limits.
    core::Scenario s = r.base;
    s.hardware.gpu = core::GpuSpec{};
    core::applyLayout(s, core::Layout{});
    s.hardware.kvMemoryBytes.reset();
    s.workload.context = r.context;
    s.workload.maxModelLen = std::max(r.context, r.base.workload.maxModelLen); // as planned
    s.workload.targetRequests = 0;
    s.workload.concurrency = 0;
    std::string key = io::scenarioToJson(s);
    for (const std::int64_t v : {r.users, std::int64_t{r.maxGpus}, std::int64_t{r.gpusPerNode},
                                 std::int64_t{static_cast<int>(r.rank)}}) {
        key += '|';
        key += std::to_string(v);
    }
    for (const auto& g : r.gpus) {
        key += '|';
        key.append(g.id);
    }
    // Not the preferred GPU: the scenario's GPU changes the order only (setView re-sorts).
    key += "|floor " + std::to_string(r.minTokensPerSecondPerUser);
    return key;
}

bool DeploymentPanel::resultIsCurrent() const {
    return m_outcome.result && m_outcomeKey == planKey(planRequest());
}

quint64 DeploymentPanel::startPlan() {
    m_debounce->stop();
    if (!m_haveBase)
        return m_generation;
    if (m_cancel)
        m_cancel->store(true); // an older run stops early; its result is dropped anyway
    const quint64 gen = ++m_generation;
    const core::PlanRequest req = planRequest();
    m_pendingKey = planKey(req);
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    m_planning = true;
    m_cancelButton->setEnabled(true);
    m_status->setText(tr("Planning %n GPU kind(s) for %1 users × %2 tokens…", nullptr,
                         static_cast<int>(req.gpus.size()))
                          .arg(thousandsQ(req.users), formatTokensQ(req.context)));
    // The worker gets copies only: the request and the cancel flag.
    const std::shared_ptr<std::atomic<bool>> cancel = m_cancel;
    whenLatestFinishes(this,
                       QtConcurrent::run([req, cancel] { return runPlan(req, cancel.get()); }), gen,
                       &m_generation, &m_discarded,
                       [this](PlanOutcome outcome) { onFinished(std::move(outcome)); });
    return gen;
}

void DeploymentPanel::onFinished(PlanOutcome outcome) {
    m_planning = false;
    m_pendingKey.clear();
    m_cancelButton->setEnabled(false);
    if (outcome.cancelled) {
        m_status->setText(tr("Planning cancelled; the table shows the previous plan"));
        emit planFinished();
        return;
    }
    showOutcome(std::move(outcome));
}

void DeploymentPanel::planNow() {
    if (!m_haveBase || (resultIsCurrent() && !m_planning))
        return;
    m_debounce->stop();
    if (m_cancel)
        m_cancel->store(true);
    ++m_generation; // an in-flight result is stale now
    m_planning = false;
    m_pendingKey.clear();
    m_cancelButton->setEnabled(false);
    showOutcome(runPlan(planRequest()));
}

void DeploymentPanel::cancelPlan() {
    if (!m_planning)
        return;
    if (m_cancel)
        m_cancel->store(true);
    ++m_generation;
    m_planning = false;
    m_pendingKey.clear();
    m_cancelButton->setEnabled(false);
    m_status->setText(tr("Planning cancelled; the table shows the previous plan"));
    emit planFinished();
}

void DeploymentPanel::showOutcome(PlanOutcome outcome) {
    m_outcomeKey = planKey(outcome.request);
    m_outcome = std::move(outcome);
    const QString selected =
        selectedPlan() ? qs(selectedPlan()->gpu.id) : QString(); // kept across re-plans
    m_model->setPlan(m_outcome.result, m_units);
    m_chart->setPlan(m_outcome.result, m_outcome.request.users, m_outcome.request.context,
                     m_outcome.request.maxGpus);
    const auto order = m_outcome.result->bestFirst();
    int fitting = 0;
    for (const core::GpuPlan* g : order)
        fitting += g->fits ? 1 : 0;
    QString text =
        tr("%1 users × %2 tokens of %3: %4 of %5 GPU kinds hold them (planned in %6 "
           "ms).")
            .arg(thousandsQ(m_outcome.request.users), formatTokensQ(m_outcome.request.context),
                 qs(m_outcome.request.base.model.name))
            .arg(fitting)
            .arg(order.size())
            .arg(m_outcome.elapsedMs, 0, 'f', 0);
    if (const core::GpuPlan* best = m_outcome.result->recommended()) {
        const core::Deployment& d = best->layouts.front();
        text += QLatin1Char(' ') + tr("Best: %1 × %2 as %3.")
                                       .arg(d.layout.gpus())
                                       .arg(qs(best->gpu.name), layoutText(d.layout));
        if (!d.flag.empty())
            text +=
                QLatin1Char(' ') + tr("Flagged: %1; no plan tried avoids that.").arg(qs(d.flag));
        // Why not the scenario's GPU, when it is not the answer.
        const core::GpuPlan* first = order.front();
        if (first != best && first->gpu.id == m_outcome.result->preferredGpu)
            text += QLatin1Char(' ') +
                    (first->fits
                         ? tr("Not the scenario's %1: %2.")
                               .arg(qs(first->gpu.name), qs(first->layouts.front().flag))
                         : tr("The scenario's %1 does not hold them.").arg(qs(first->gpu.name)));
    }
    text += QLatin1Char(' ') +
            tr("Memory figures are per GPU; requests per replica and for the cluster.");
    m_status->setText(text);
    if (!selected.isEmpty())
        selectGpu(selected);
    updateCommand();
    emit planFinished();
}

QString DeploymentPanel::statusText() const {
    return m_status->text();
}

QString DeploymentPanel::commandText() const {
    return m_commandText;
}

const core::GpuPlan* DeploymentPanel::selectedPlan() const {
    const QModelIndexList rows = m_table->selectionModel()->selectedRows();
    if (rows.isEmpty())
        return nullptr;
    return m_model->gpuPlan(m_proxy->mapToSource(rows.front()).row());
}

bool DeploymentPanel::selectGpu(const QString& gpuId) {
    for (int r = 0; r < m_proxy->rowCount(); ++r) {
        const QModelIndex i = m_proxy->index(r, 0);
        if (i.data(PlanTableModel::GpuIdRole).toString() == gpuId) {
            m_table->selectRow(r);
            return true;
        }
    }
    return false;
}

void DeploymentPanel::updateCommand() {
    const core::GpuPlan* g = selectedPlan();
    if (!g && m_outcome.result) {
        g = m_outcome.result->recommended();
        const auto order = m_outcome.result->bestFirst();
        if (!g && !order.empty())
            g = order.front();
    }
    const bool runs = g && g->fits && !g->layouts.empty();
    if (!g)
        m_commandTitle->setText(tr("<b>vLLM command</b>: no plan yet"));
    else if (!runs)
        m_commandTitle->setText(
            tr("<b>%1</b> does not hold the users: %2").arg(qs(g->gpu.name), qs(g->reason)));
    else
        m_commandTitle->setText(tr("<b>vLLM command</b> for %1 × %2 as %3")
                                    .arg(g->layouts.front().layout.gpus())
                                    .arg(qs(g->gpu.name), layoutText(g->layouts.front().layout)));
    m_commandText =
        runs ? qs(core::vllmServeCommand(g->layouts.front().scenario).text()) : QString();
    // Shown without the final newline (an empty last line would take a line of the box);
    // copied with it, as `kvledger` prints the command.
    QString shown = m_commandText;
    if (shown.endsWith(QLatin1Char('\n')))
        shown.chop(1);
    m_command->setPlainText(shown);
    fitCommandHeight();
    m_applyButton->setEnabled(runs);
}

bool DeploymentPanel::applySelected() {
    const core::GpuPlan* g = selectedPlan();
    if (!g && m_outcome.result)
        g = m_outcome.result->recommended();
    if (!g || !g->fits || g->layouts.empty())
        return false;
    // The planner's exact scenario (GPU, layout, max model length), holding the users as its
    // target so the window's verdict reads against them.
    core::Scenario s = g->layouts.front().scenario;
    s.workload.targetRequests = m_outcome.request.users;
    s.workload.concurrency = m_base.workload.concurrency;
    emit applyRequested(s);
    return true;
}

} // namespace kvl::widgets
