#include "main_window.h"
#include "widgets/scenario/wrap_label.h"

#include "cli.h"
#include "help_text.h"
#include "steady_tab_widget.h"
#include "theme.h"

#include "widgets/charts/breakdown_chart.h"
#include "widgets/charts/cached_text_delegate.h"
#include "widgets/charts/chart_factory.h"
#include "widgets/charts/curve_chart.h"
#include "widgets/charts/engines_view.h"
#include "widgets/charts/ladder_model.h"
#include "widgets/charts/speed_panel.h"
#include "widgets/charts/text_width.h"
#include "widgets/deployment/deployment_panel.h"
#include "widgets/deployment/plan_model.h"
#include "widgets/export/atomic_write.h"
#include "widgets/export/chart_export.h"
#include "widgets/export/report.h"
#include "widgets/export/table_export.h"
#include "widgets/probe/probe_charts.h"
#include "widgets/probe/probe_overlay.h"
#include "widgets/probe/probe_panel.h"
#include "widgets/probe/probe_results_model.h"
#include "widgets/scenario/hf_hub.h"
#include "widgets/scenario/model_picker.h"
#include "widgets/scenario/scenario_panel.h"
#include "widgets/scenario/vllm_command.h"
#include "widgets/scenario/warnings_banner.h"
#include "widgets/state/status_text.h"
#include "widgets/traffic/traffic_charts.h"
#include "widgets/traffic/traffic_panel.h"

#include "core/io/json.h"
#include "core/io/scenario_file.h"
#include "core/kv_format.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QResizeEvent>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <vector>

static void initKvlResources() {
    Q_INIT_RESOURCE(kvledger);
}

namespace kvl::app {

using widgets::qs;

namespace {

// A widget with one child and no layout, the child resized to fill it: the child's geometry
// updates (a new text) stop here instead of re-laying out the holder's parent.
class FollowSizeHolder : public QWidget {
public:
    explicit FollowSizeHolder(QWidget* child) : m_child(child) { child->setParent(this); }

protected:
    void resizeEvent(QResizeEvent* event) override {
        QWidget::resizeEvent(event);
        m_child->setGeometry(rect());
    }

private:
    QWidget* m_child;
};
constexpr int kMaxRecentFiles = 8;
const char* kScenarioFilter = QT_TRANSLATE_NOOP(
    "MainWindow", "KV Ledger scenario (*.kvl.json);;JSON (*.json);;All files (*)");
} // namespace

// What a new user sees is kvledger's default scenario (io::defaultScenario): the same one the
// CLI computes without options, so the window and `kvledger ledger` agree on first sight.
core::Scenario firstLaunchScenario() {
    return io::defaultScenario();
}

MainWindow::MainWindow() : MainWindow(Options{}) {}

MainWindow::MainWindow(const Options& options, QWidget* parent)
    : QMainWindow(parent), m_options(options) {
    initKvlResources();
    setWindowIcon(QIcon(QStringLiteral(":/kvledger/icons/kvledger.svg")));
    m_document = new widgets::ScenarioDocument(this);
    connect(m_document, &widgets::ScenarioDocument::viewChanged, this, &MainWindow::publish);
    buildUi();
    buildActions();
    connect(m_panel, &widgets::ScenarioPanel::scenarioChanged, this, &MainWindow::recompute);
    connect(m_panel, &widgets::ScenarioPanel::scenarioInvalid, this,
            [this](const core::Scenario& s) { recompute(s); });
    connect(m_panel, &widgets::ScenarioPanel::errorOccurred, this, &MainWindow::reportError);
    connect(m_panel, &widgets::ScenarioPanel::importRequested, this,
            &MainWindow::importInteractive);
    connect(m_probePanel, &widgets::ProbePanel::messageChanged, this,
            [this](const QString& message, bool error) {
                if (error && !message.isEmpty())
                    notify(message);
            });
    // The views: each takes the one snapshotChanged signal; nothing pushes state into them
    // one setter at a time. The window's own status bar and notes are one of them.
    connect(this, &MainWindow::snapshotChanged, this, &MainWindow::showView);
    connect(this, &MainWindow::snapshotChanged, m_ladderModel, &widgets::LadderModel::setView);
    connect(this, &MainWindow::snapshotChanged, m_breakdownChart,
            &widgets::BreakdownChart::setView);
    // --- U1: the Speed and Deployment tabs follow the snapshot; probe results calibrate the
    // speed model; the planner's chosen layout becomes the scenario. ---
    // The tabs behind the one in front follow the view only when they come to the front (or
    // are read): the Speed tab's curves (a decode step per point, per ladder step), the
    // Engines tab's 15 engine computations, the Deployment tab's plan key and the probe's and
    // Traffic tab's fields are not worked out at every slider move on another tab. In perf of
    // tests/bench/bench_replot the hidden tabs' setView took 5% of a change's GUI thread.
    connect(this, &MainWindow::snapshotChanged, this, [this] {
        for (TabFeed& f : m_tabFeeds)
            f.stale = true;
        syncTab(m_tabs->currentWidget());
    });
    connect(m_tabs, &QTabWidget::currentChanged, this,
            [this] { syncTab(m_tabs->currentWidget()); });
    followWhenInFront(m_speedPanel,
                      [this](const widgets::LedgerView& v) { m_speedPanel->setView(v); });
    followWhenInFront(m_enginesPanel, [this](const widgets::LedgerView& v) {
        if (v.snapshot)
            m_enginesPanel->setView(v);
    });
    followWhenInFront(m_deploymentPanel,
                      [this](const widgets::LedgerView& v) { m_deploymentPanel->setView(v); });
    followWhenInFront(m_probePanel,
                      [this](const widgets::LedgerView& v) { m_probePanel->setView(v); });
    connect(m_probePanel, &widgets::ProbePanel::reportChanged, this,
            [this](const probe::ProbeReport& report) {
                const auto c = widgets::calibrationFromReport(report, io::builtinGpus());
                m_speedPanel->setCalibration(c);
                m_ladderModel->setSpeedAssumptions(c.assumptions);
            });
    connect(m_deploymentPanel, &widgets::DeploymentPanel::applyRequested, this,
            &MainWindow::setScenario);
    // --- end U1 ---
    // The Traffic tab simulates only while it is shown (TrafficPanel keeps itself stale
    // otherwise), so a slider move on another tab costs no simulation.
    followWhenInFront(m_trafficPanel,
                      [this](const widgets::LedgerView& v) { m_trafficPanel->setView(v); });
    connect(m_probePanel, &widgets::ProbePanel::reportChanged, this,
            [this](const probe::ProbeReport& report) {
                m_trafficPanel->setSpeedAssumptions(
                    widgets::calibrationFromReport(report, io::builtinGpus()).assumptions);
            });
    for (widgets::CurveChart* c : findChildren<widgets::CurveChart*>()) {
        connect(this, &MainWindow::snapshotChanged, c, &widgets::CurveChart::setView);
        connect(m_probePanel, &widgets::ProbePanel::reportChanged, c,
                &widgets::CurveChart::setProbeReport);
        // A click or drag on a curve moves the context there.
        connect(c, &widgets::CurveChart::contextPicked, m_panel,
                &widgets::ScenarioPanel::setContext);
    }
    m_hubFetcher = new widgets::HfHubFetcher(this);
    connect(m_hubFetcher, &widgets::HfHubFetcher::finished, this, &MainWindow::applyHubResult);
    // Replots are counted over whatever charts the window holds (the probe tab's too).
    m_charts = findChildren<widgets::ChartWidget*>();
    for (widgets::ChartWidget* c : m_charts) {
        connect(c, &widgets::ChartWidget::replotted, this, &MainWindow::onChartReplotted);
        // Captions worked out when an export reads them, as a ChartBook's charts.
        widgets::setDocumentCaptionSource(c, m_document);
    }
    if (m_options.useSettings)
        restoreSettings();
    if (!view().snapshot) { // no settings, or a remembered scenario that no longer validates
        setScenario(firstLaunchScenario());
        markClean();
    }
    updateTitle();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildUi() {
    m_panel = new widgets::ScenarioPanel;
    auto* scroll = new QScrollArea;
    scroll->setWidget(m_panel);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // Always there: at 1600x1000 the panel's height is about the window's, and a lever or a
    // note's wrap that tips it over showed or hid the bar, which narrowed or widened every row
    // of the panel (a full re-layout and repaint, and the text jumping sideways under the
    // user's pointer).
    scroll->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
    scroll->setMinimumWidth(m_panel->sizeHint().width() + 24);
    scroll->setFrameShape(QFrame::NoFrame);
    QWidget* ledger = buildLedgerTab();

    // What matters about the scenario, most severe first; it wraps, and a long list opens in a
    // popup (widgets/scenario/warnings_banner.h).
    m_banner = new widgets::WarningsBanner;
    m_banner->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);
    buildTabs(ledger);
    auto* right = new QWidget;
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->setSpacing(2);
    rightLayout->addWidget(m_banner);
    rightLayout->addWidget(m_tabs, 1);

    m_mainSplitter = new QSplitter(Qt::Horizontal);
    m_mainSplitter->addWidget(scroll);
    m_mainSplitter->addWidget(right);
    m_mainSplitter->setStretchFactor(0, 0);
    m_mainSplitter->setStretchFactor(1, 1);
    m_mainSplitter->setCollapsible(1, false);
    setCentralWidget(m_mainSplitter);
    // No dock widgets to animate: an animated QMainWindowLayout made a QPropertyAnimation for
    // its central widget at each relayout (perf of bench_replot's engine switches).
    setAnimated(false);
    buildStatusBar();
    resize(1600, 1000);
}

// The Ledger tab: the memory and concurrency charts above, the breakdown and the ladder below.
QWidget* MainWindow::buildLedgerTab() {
    // The ledger charts of the chart registry; the probe panel makes the measured ones.
    auto make = [](const char* name) {
        return widgets::createChart(*widgets::findChartSpec(QString::fromLatin1(name)));
    };
    m_memoryChart = static_cast<widgets::CurveChart*>(make("memory"));
    m_concurrencyChart = static_cast<widgets::CurveChart*>(make("concurrency"));
    m_breakdownChart = static_cast<widgets::BreakdownChart*>(make("breakdown"));

    m_topSplitter = new QSplitter(Qt::Horizontal);
    m_topSplitter->addWidget(m_memoryChart);
    m_topSplitter->addWidget(m_concurrencyChart);
    m_bottomSplitter = new QSplitter(Qt::Horizontal);
    m_bottomSplitter->addWidget(m_breakdownChart);
    m_bottomSplitter->addWidget(buildLadderBox());
    m_bottomSplitter->setStretchFactor(0, 2);
    m_bottomSplitter->setStretchFactor(1, 3);
    m_rightSplitter = new QSplitter(Qt::Vertical);
    m_rightSplitter->addWidget(m_topSplitter);
    m_rightSplitter->addWidget(m_bottomSplitter);
    m_rightSplitter->setStretchFactor(0, 3);
    m_rightSplitter->setStretchFactor(1, 2);
    m_rightSplitter->setSizes({600, 380});
    m_bottomSplitter->setSizes({380, 620});
    return m_rightSplitter;
}

// The lever ladder's table, its title and the vLLM command below it.
QWidget* MainWindow::buildLadderBox() {
    m_ladderModel = new widgets::LadderModel(this);
    m_ladderView = new QTableView;
    m_ladderView->setObjectName(QStringLiteral("ladderView"));
    m_ladderView->setModel(m_ladderModel);
    // Cells drawn from laid-out text: a slider step repaints the cells it changes, and shaping
    // their text again at each paint was the table's whole cost.
    m_ladderView->setItemDelegate(new widgets::CachedTextDelegate(m_ladderView));
    m_ladderView->setAlternatingRowColors(true);
    m_ladderView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_ladderView->setWordWrap(false);
    m_ladderView->verticalHeader()->setVisible(false);
    m_ladderView->setTextElideMode(Qt::ElideRight); // "+GQA-8 (na..." reads, "+G...e)" not
    // Compact rows, and room for all five steps and the header: the ladder never scrolls.
    m_ladderView->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
    // All five steps, the two-line header and a horizontal scroll bar, should one appear.
    // No more either: the room left goes to the vLLM command below, which at 1366 x 768 showed
    // a line and a half under an empty row of the table.
    m_ladderView->setFixedHeight(m_ladderView->horizontalHeader()->sizeHint().height() +
                                 5 * m_ladderView->verticalHeader()->defaultSectionSize() +
                                 style()->pixelMetric(QStyle::PM_ScrollBarExtent) + 6);
    m_ladderView->setVerticalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    // The columns follow their text: new rows, new figures, new units in the headers. Once per
    // change: LadderModel::setView updates its state before it emits dataChanged (and then
    // headerDataChanged), so the headers' new text is already there at dataChanged.
    connect(m_ladderModel, &widgets::LadderModel::cellsUpdated, this,
            [this] { fitLadderColumns(); });
    // The columns follow the ladder's width: its viewport's resize, which comes after the
    // view has laid it out (the view's own Resize reaches a filter before that, with the old
    // width).
    m_ladderView->viewport()->installEventFilter(this);
    m_ladderView->horizontalHeader()->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_ladderView->horizontalHeader(), &QWidget::customContextMenuRequested, this,
            [this](const QPoint& pos) { showLadderColumnMenu(pos); });
    fitLadderColumns();
    auto* ladderBox = new QWidget;
    auto* ladderLayout = new QVBoxLayout(ladderBox);
    ladderLayout->setContentsMargins(0, 0, 0, 0);
    auto* ladderTitle =
        new widgets::WrapLabel(tr("<b>Lever ladder</b>: each step adds one lever of the scenario"));
    ladderLayout->addWidget(ladderTitle);
    ladderLayout->addWidget(m_ladderView);
    auto* cmdTitle =
        new QLabel(tr("<b>vLLM command</b> and what it logs (Edit > Copy vLLM Command):"));
    cmdTitle->setObjectName(QStringLiteral("commandTitle"));
    m_commandTitle = cmdTitle;
    ladderTitle->setObjectName(QStringLiteral("ladderTitle"));
    m_ladderTitle = ladderTitle;
    m_ladderTitleBase = ladderTitle->text();
    // Its width never sets the window's: it wraps (the engine's name and the note on hidden
    // columns make it longer than a 1366 px window's ladder).
    ladderTitle->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    ladderLayout->addWidget(cmdTitle);
    m_vllmView = new QPlainTextEdit;
    m_vllmView->setObjectName(QStringLiteral("vllmView"));
    m_vllmView->setReadOnly(true);
    m_vllmView->setLineWrapMode(QPlainTextEdit::NoWrap); // scrolls sideways, never breaks a flag
    m_vllmView->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_vllmView->setToolTip(
        tr("The equivalent `vllm serve` flags; '#' lines name the levers vLLM has no flag for"));
    // The command's first four lines at the least (model, dtype, prefix caching, utilization).
    // (It scrolls sideways, so its horizontal scroll bar is counted in.)
    m_vllmView->setMinimumHeight(4 * m_vllmView->fontMetrics().lineSpacing() +
                                 style()->pixelMetric(QStyle::PM_ScrollBarExtent) +
                                 2 * m_vllmView->frameWidth() + 8);
    ladderLayout->addWidget(m_vllmView, 1);
    return ladderBox;
}

void MainWindow::buildTabs(QWidget* ledger) {
    // The tabs in kTabNames' order (app/cli.h): --tab and showTab find a tab by its place.
    // The probe gets a tab of its own: its table and charts need the room, and the ledger's
    // charts keep theirs (measured points appear on them as overlays).
    m_probePanel = new widgets::ProbePanel;
    m_probePanel->setObjectName(QStringLiteral("probePanel"));
    m_tabs = new SteadyTabWidget;
    m_tabs->setObjectName(QStringLiteral("mainTabs"));
    m_tabs->setDocumentMode(true);
    m_tabs->addTab(ledger, tr("&Ledger: predicted"));
    m_tabs->addTab(m_probePanel, tr("&Measured: probe"));
    m_tabs->setTabToolTip(0, tr("Memory, concurrency, breakdown and the lever ladder as core "
                                "predicts them (measured points overlaid)"));
    m_tabs->setTabToolTip(1, tr("Run the real KV store and paged-attention kernels, or open a GPU "
                                "machine's results: memory, speed and quality per KV format"));
    // A panel's tab: the panel named (the tests find it by its name), its title and tip.
    auto addPanelTab = [this](QWidget* panel, const char* name, const QString& title,
                              const QString& tip) {
        panel->setObjectName(QLatin1String(name));
        m_tabs->setTabToolTip(m_tabs->addTab(panel, title), tip);
    };
    // --- U1: the Speed and Deployment tabs ---
    m_speedPanel = new widgets::SpeedPanel;
    addPanelTab(m_speedPanel, "speedPanel", tr("&Speed: predicted"),
                tr("Decode speed vs concurrency and context per ladder step: an "
                   "estimate, calibrated by probe results when loaded"));
    m_deploymentPanel = new widgets::DeploymentPanel;
    addPanelTab(m_deploymentPanel, "deploymentPanel", tr("&Deployment"),
                tr("N users at a context: the fewest GPUs of each kind and the "
                   "TP x PP x DP layout vLLM runs"));
    // --- end U1 ---
    m_trafficPanel = new widgets::TrafficPanel;
    addPanelTab(m_trafficPanel, "trafficPanel", tr("&Traffic: simulated"),
                tr("Requests arriving at a rate, simulated through vLLM v1's scheduler "
                   "per replica: latency vs rate per ladder step, the sustainable rate "
                   "at an SLO, KV occupancy and queue over time"));
    m_enginesPanel = new widgets::EnginesPanel;
    addPanelTab(m_enginesPanel, "enginesPanel", tr("&Engines"),
                tr("vLLM, SGLang, TensorRT-LLM and llama.cpp side by side: requests "
                   "per replica for the same model, GPU and workload, per ladder step"));
}

void MainWindow::buildStatusBar() {
    m_summary = new QLabel;
    m_summary->setObjectName(QStringLiteral("summaryLabel"));
    m_referenceLabel = new QLabel;
    m_referenceLabel->setObjectName(QStringLiteral("referenceLabel"));
    m_unitsButton = new QToolButton;
    m_unitsButton->setObjectName(QStringLiteral("unitsButton"));
    m_unitsButton->setAutoRaise(true);
    m_scopeButton = new QToolButton;
    m_scopeButton->setObjectName(QStringLiteral("scopeButton"));
    m_scopeButton->setAutoRaise(true);
    m_scopeButton->setToolButtonStyle(Qt::ToolButtonTextOnly);
    // The summary asks for no width of its own (its tooltip has the whole text): a long one
    // is cut at the status bar's end instead of widening the window. It sits in a holder with
    // no layout, one line high, so that its new text at every change re-lays out and repaints
    // only itself: a label's updateGeometry invalidates its parent's layout, and the status
    // bar then repainted whole (with the window behind it) at each slider step.
    auto* summaryHolder = new FollowSizeHolder(m_summary);
    summaryHolder->setObjectName(QStringLiteral("summaryHolder"));
    summaryHolder->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    summaryHolder->setFixedHeight(m_summary->sizeHint().height());
    m_summary->setAutoFillBackground(true); // opaque: the bar behind it is not painted again
    statusBar()->addWidget(summaryHolder, 1);
    statusBar()->addPermanentWidget(m_referenceLabel);
    statusBar()->addPermanentWidget(m_scopeButton);
    statusBar()->addPermanentWidget(m_unitsButton);
}

void MainWindow::buildActions() {
    const ToolBarActions shown{buildFileMenu(), buildEditMenu(), buildViewMenu()};
    buildHelpMenu();
    QToolBar* tb = addToolBar(tr("Main"));
    tb->setObjectName(QStringLiteral("mainToolBar"));
    tb->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tb->setIconSize(QSize(18, 18));
    tb->addAction(shown.file.open);
    tb->addAction(shown.file.save);
    tb->addSeparator();
    tb->addAction(shown.pin);
    tb->addAction(m_clearReferenceAction);
    tb->addSeparator();
    tb->addAction(shown.copyCommand);
    tb->addAction(shown.file.report);

    // Right-click on a chart: export it.
    for (const auto& spec : widgets::chartSpecs()) {
        const QString n = QLatin1String(spec.name);
        if (widgets::ChartWidget* c = chart(n)) {
            auto* a = new QAction(tr("Export This Chart..."), c);
            connect(a, &QAction::triggered, this, [this, n] { exportChartInteractive(n); });
            c->addAction(a);
            c->setContextMenuPolicy(Qt::ActionsContextMenu);
        }
    }
    updateRecentMenu();
    setUnits(core::UnitSystem::Binary);
    setScope(widgets::FigureScope::PerGpu);
}

QIcon MainWindow::actionIcon(const char* name) {
    return QIcon(QStringLiteral(":/kvledger/icons/%1.svg").arg(QLatin1String(name)));
}

MainWindow::FileActions MainWindow::buildFileMenu() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* newAct =
        file->addAction(style()->standardIcon(QStyle::SP_FileIcon), tr("&New (default scenario)"),
                        this, &MainWindow::newScenario);
    newAct->setShortcut(QKeySequence::New);
    QAction* openAct = file->addAction(style()->standardIcon(QStyle::SP_DialogOpenButton),
                                       tr("&Open Scenario..."), this, &MainWindow::openInteractive);
    openAct->setShortcut(QKeySequence::Open);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    QAction* saveAct =
        file->addAction(style()->standardIcon(QStyle::SP_DialogSaveButton), tr("&Save Scenario"),
                        this, [this] { saveInteractive(false); });
    saveAct->setShortcut(QKeySequence::Save);
    QAction* saveAsAct =
        file->addAction(tr("Save Scenario &As..."), this, [this] { saveInteractive(true); });
    saveAsAct->setShortcut(QKeySequence::SaveAs);
    file->addSeparator();
    QAction* importAct =
        file->addAction(tr("&Import config.json..."), this, &MainWindow::importInteractive);
    importAct->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_I));
    QAction* hubAct = file->addAction(tr("Open from &Hugging Face..."), this,
                                      &MainWindow::openFromHubInteractive);
    hubAct->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_H));
    hubAct->setToolTip(tr("Read a model's config.json from the Hub by its repo id (HF_ENDPOINT, "
                          "HF_TOKEN); cached for offline use"));
    QMenu* exportMenu = file->addMenu(tr("&Export"));
    // The chart registry's entries: the ledger's, then (after a separator) the probe's.
    bool measuredSection = false;
    for (const auto& spec : widgets::chartSpecs()) {
        if (spec.measured != measuredSection) {
            exportMenu->addSeparator();
            measuredSection = spec.measured;
        }
        const QString label = widgets::chartMenuTitle(spec) +
                              (!spec.table ? QString() : QStringLiteral(" (CSV)")) +
                              QStringLiteral("...");
        const QString name = QLatin1String(spec.name);
        exportMenu->addAction(label, this, [this, name] { exportChartInteractive(name); });
    }
    exportMenu->addSeparator();
    QAction* reportAct = exportMenu->addAction(actionIcon("report"), tr("Review &report (PDF)..."),
                                               this, &MainWindow::exportReportInteractive);
    reportAct->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    file->addSeparator();
    QAction* openProbeAct = file->addAction(actionIcon("report"), tr("Open &Probe Results..."),
                                            this, &MainWindow::openProbeResultsInteractive);
    openProbeAct->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    openProbeAct->setToolTip(tr("Load the JSON of `kvprobe bench --json` or `kvprobe run --json`, "
                                "e.g. from a GPU machine"));
    QAction* saveProbeAct = file->addAction(tr("Save Probe Res&ults..."), this,
                                            &MainWindow::saveProbeResultsInteractive);
    connect(m_probePanel, &widgets::ProbePanel::openResultsRequested, openProbeAct,
            &QAction::trigger);
    connect(m_probePanel, &widgets::ProbePanel::saveResultsRequested, saveProbeAct,
            &QAction::trigger);
    file->addSeparator();
    QAction* quitAct = file->addAction(tr("&Quit"), this, &QWidget::close);
    quitAct->setShortcut(QKeySequence::Quit);
    quitAct->setMenuRole(QAction::QuitRole);
    return {openAct, saveAct, reportAct};
}

QAction* MainWindow::buildEditMenu() {
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* copyCmd = edit->addAction(actionIcon("terminal"), tr("Copy &vLLM Command"), this,
                                       &MainWindow::copyVllmCommand);
    copyCmd->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    copyCmd->setToolTip(tr("Copy the equivalent `vllm serve` flags, with a note for every lever "
                           "vLLM has no flag for"));
    QAction* copySummary = edit->addAction(tr("Copy &Summary Line"), this, [this] {
        QApplication::clipboard()->setText(summaryText());
        statusBar()->showMessage(tr("Summary copied"), 3000);
    });
    // The summary is plain text, not selectable (a selectable label lays its text out in a
    // QTextDocument at every change, and paints twice): a right-click copies it.
    m_summary->addAction(copySummary);
    m_summary->setContextMenuPolicy(Qt::ActionsContextMenu);
    return copyCmd;
}

QAction* MainWindow::buildViewMenu() {
    QMenu* view = menuBar()->addMenu(tr("&View"));
    QAction* pinAct = view->addAction(actionIcon("pin"), tr("&Pin as Reference"), this,
                                      &MainWindow::pinReference);
    m_pinAction = pinAct;
    pinAct->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));
    pinAct->setToolTip(tr("Keep the current scenario as a dashed reference and show the deltas"));
    m_clearReferenceAction =
        view->addAction(tr("&Clear Reference"), this, &MainWindow::clearReference);
    m_clearReferenceAction->setEnabled(false);
    view->addSeparator();
    m_unitsAction = view->addAction(tr("&Decimal Units (GB)"));
    m_unitsAction->setCheckable(true);
    m_unitsAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_U));
    connect(m_unitsAction, &QAction::toggled, this, [this](bool on) {
        setUnits(on ? core::UnitSystem::Decimal : core::UnitSystem::Binary);
    });
    m_unitsButton->setDefaultAction(m_unitsAction);
    m_unitsButton->setToolButtonStyle(Qt::ToolButtonTextOnly);
    // Per GPU, per replica, cluster: one scope for every figure (widgets::FigureScope).
    QMenu* scopeMenu = view->addMenu(tr("&Figures"));
    auto* scopeGroup = new QActionGroup(this);
    const std::pair<widgets::FigureScope, QString> scopes[] = {
        {widgets::FigureScope::PerGpu, tr("Per &GPU")},
        {widgets::FigureScope::PerReplica, tr("Per &Replica (TP x PP GPUs)")},
        {widgets::FigureScope::Cluster, tr("&Cluster (DP replicas)")}};
    for (const auto& [sc, text] : scopes) {
        QAction* a = scopeMenu->addAction(text);
        a->setCheckable(true);
        a->setActionGroup(scopeGroup);
        const widgets::FigureScope target = sc;
        connect(a, &QAction::triggered, this, [this, target] { setScope(target); });
        m_scopeActions << a;
    }
    m_scopeActions[0]->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
    m_scopeActions[1]->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_2));
    m_scopeActions[2]->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_3));
    connect(m_scopeButton, &QToolButton::clicked, this, [this] {
        setScope(static_cast<widgets::FigureScope>((static_cast<int>(scope()) + 1) % 3));
    });
    QMenu* themeMenu = view->addMenu(tr("&Theme"));
    auto* themeGroup = new QActionGroup(this);
    for (Theme t : {Theme::System, Theme::Light, Theme::Dark}) {
        const QString text = t == Theme::System  ? tr("&System")
                             : t == Theme::Light ? tr("&Light")
                                                 : tr("&Dark");
        QAction* a = themeMenu->addAction(text);
        a->setCheckable(true);
        a->setChecked(t == currentTheme());
        a->setActionGroup(themeGroup);
        a->setData(themeName(t));
        connect(a, &QAction::triggered, this, [this, t] {
            applyTheme(t);
            if (m_options.useSettings)
                QSettings().setValue(QStringLiteral("theme"), themeName(t));
        });
        m_themeActions << a;
    }
    return pinAct;
}

void MainWindow::buildHelpMenu() {
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    QAction* formulasAct = help->addAction(tr("&Formulas"), this, [this] { showFormulas(); });
    formulasAct->setShortcut(QKeySequence::HelpContents);
    QAction* keysAct =
        help->addAction(tr("&Keyboard Shortcuts"), this, [this] { showShortcuts(); });
    keysAct->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Slash));
    help->addSeparator();
    help->addAction(tr("&About KV Ledger"), this, [this] {
        QMessageBox::about(
            this, tr("About KV Ledger"),
            tr("<h3>KV Ledger %1</h3><p>How much memory an LLM's KV cache takes, and "
               "what GQA/MQA, KV quantization, paging and prefix sharing buy.</p>"
               "<p>KV bytes per token = 2 x layers x KV heads x head_dim x bytes per "
               "element (+ scales). Numbers follow vLLM's accounting.</p>")
                .arg(QCoreApplication::applicationVersion()));
    });
}

void MainWindow::followWhenInFront(QWidget* tab,
                                   std::function<void(const widgets::LedgerView&)> apply) {
    m_tabFeeds.push_back({tab, std::move(apply), true});
}

void MainWindow::syncTab(QWidget* tab) const {
    for (TabFeed& f : m_tabFeeds) {
        if (f.tab != tab || !f.stale)
            continue;
        f.stale = false;
        f.apply(view());
    }
}

widgets::ProbePanel* MainWindow::probePanel() const {
    syncTab(m_probePanel);
    return m_probePanel;
}

widgets::DeploymentPanel* MainWindow::deploymentPanel() const {
    syncTab(m_deploymentPanel);
    return m_deploymentPanel;
}

widgets::TrafficPanel* MainWindow::trafficPanel() const {
    syncTab(m_trafficPanel);
    return m_trafficPanel;
}

widgets::ChartWidget* MainWindow::chart(const QString& name) const {
    const widgets::ChartSpec* spec = widgets::findChartSpec(name);
    if (!spec || spec->table)
        return nullptr;
    auto* c = findChild<widgets::ChartWidget*>(widgets::chartObjectName(*spec));
    for (const TabFeed& f : m_tabFeeds) // a chart read from a tab behind is brought up to date
        if (c && f.tab->isAncestorOf(c))
            syncTab(f.tab);
    return c;
}

int MainWindow::pendingReplots() const {
    int n = 0;
    for (const widgets::ChartWidget* c : m_charts)
        n += c->replotPending() ? 1 : 0;
    return n;
}

void MainWindow::onChartReplotted() {
    if (m_awaitingReplots && pendingReplots() == 0) {
        m_awaitingReplots = false;
        emit chartsReplotted();
    }
}

void MainWindow::setScenario(const core::Scenario& s) {
    m_panel->setScenario(s);
}

const core::Scenario& MainWindow::scenario() const {
    return m_document->scenario();
}

void MainWindow::recompute(const core::Scenario& s) {
    // The document checks the scenario (input that is not valid is published with its reason,
    // so the views show that instead of the last valid numbers), computes it and publishes.
    m_document->setScenario(s);
    updateModified();
    emit recomputed();
}

void MainWindow::updateModified() {
    setWindowModified(io::scenarioToJson(scenario()) != m_cleanScenario);
}

void MainWindow::markClean() {
    m_cleanScenario = io::scenarioToJson(scenario());
    setWindowModified(false);
}

bool MainWindow::maybeSave() {
    if (!isWindowModified() || !m_options.showDialogs)
        return true;
    const auto answer = QMessageBox::question(
        this, tr("Unsaved changes"),
        tr("The scenario has changes that are not saved. Save them first?"),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Save)
        return saveInteractive(false);
    return answer == QMessageBox::Discard;
}

void MainWindow::newScenario() {
    if (!maybeSave())
        return;
    m_currentFile.clear();
    setScenario(firstLaunchScenario());
    markClean();
    updateTitle();
}

void MainWindow::publish(const widgets::LedgerView& view) {
    m_awaitingReplots = true;
    emit snapshotChanged(view);
    onChartReplotted(); // when no chart had anything to redraw
}

void MainWindow::showView(const widgets::LedgerView& view) {
    m_summary->setText(summaryText());
    m_summary->setToolTip(summaryText());
    // Set only when it changed: a new text lays the whole document out again.
    const QString vllmText = vllmCommandText() + vllmLogText();
    if (vllmText != m_vllmView->toPlainText())
        m_vllmView->setPlainText(vllmText);
    // The ladder, the command box and the Ledger tab's charts name the engine whose rules they
    // show: the curves and the breakdown are vLLM's accounting whatever the engine.
    const QString chartNote = widgets::engineRulesNote(*view.snapshot);
    for (widgets::ChartWidget* c : std::initializer_list<widgets::ChartWidget*>{
             m_memoryChart, m_concurrencyChart, m_breakdownChart})
        c->setTitleNote(chartNote);
    if (const auto& e = view.snapshot->engine) {
        const QString name = qs(core::engineDisplayName(e->engine));
        m_commandTitle->setText(tr("<b>%1 launch command</b> and what it logs:").arg(name));
        m_ladderTitleBase =
            tr("<b>Lever ladder</b> by vLLM's rules (%1 per step: Engines tab)").arg(name);
        updateLadderTitle();
    } else {
        m_commandTitle->setText(
            tr("<b>vLLM command</b> and what it logs (Edit > Copy vLLM Command):"));
        m_ladderTitleBase = tr("<b>Lever ladder</b>: each step adds one lever of the scenario");
        updateLadderTitle();
    }
    m_banner->setItems(widgets::bannerItems(*view.snapshot));
    m_pinAction->setEnabled(!view.snapshot->invalid);
    m_clearReferenceAction->setEnabled(view.reference != nullptr);
    if (view.reference) {
        m_referenceLabel->setText(tr("Reference: %1").arg(qs(view.reference->scenario.model.name)));
        // As the status line says the scenario's: every figure in the scope shown.
        m_referenceLabel->setToolTip(
            widgets::scopedSummaryLine(*view.reference, view.units, view.scope));
    } else if (!m_referenceLabel->text().isEmpty()) {
        // QLabel::clear re-lays out the status bar even when there is nothing to clear.
        m_referenceLabel->clear();
        m_referenceLabel->setToolTip({});
    }
}

QString MainWindow::summaryText() const {
    return widgets::scopedSummaryLine(*view().snapshot, view().units, view().scope);
}

QString MainWindow::warningText() const {
    QStringList lines;
    for (const auto& it : m_banner->items())
        lines << it.plain();
    return lines.join(QLatin1Char('\n'));
}

QString MainWindow::vllmCommandText() const {
    if (view().snapshot && view().snapshot->invalid)
        return tr("# not computed: %1").arg(qs(view().snapshot->ledger.error));
    // SGLang, TensorRT-LLM, llama.cpp: that engine's own launch command (core builds it).
    if (view().snapshot && view().snapshot->engine) {
        const core::EngineResult& e = *view().snapshot->engine;
        return e.formatOffered ? qs(e.command) : tr("# not launched: %1").arg(qs(e.error));
    }
    return widgets::vllmCommand(scenario()).text();
}

QString MainWindow::vllmLogText() const {
    const widgets::LedgerSnapshot* snap = view().snapshot.get();
    if (snap && !snap->invalid && snap->engine) {
        const core::EngineResult& e = *snap->engine;
        if (e.logLines.empty())
            return {};
        QString t = tr("\n# %1 (%2) would log (per GPU):")
                        .arg(qs(core::engineDisplayName(e.engine)), qs(e.version));
        for (const auto& line : e.logLines)
            t += QStringLiteral("\n#   ") + qs(line);
        return t;
    }
    if (!snap || snap->invalid || snap->ledger.vllmLogLines.empty())
        return {};
    // As '#' lines, so the box can still be pasted into a shell whole.
    QString t = tr("\n# vLLM %1 would log (per GPU):").arg(qs(snap->ledger.vllmVersion));
    for (const auto& line : snap->ledger.vllmLogLines)
        t += QStringLiteral("\n#   ") + qs(line);
    return t;
}

void MainWindow::copyVllmCommand() {
    QApplication::clipboard()->setText(vllmCommandText());
    if (view().snapshot && view().snapshot->engine) { // the engine's own launch command
        statusBar()->showMessage(
            tr("%1 command copied")
                .arg(qs(core::engineDisplayName(view().snapshot->engine->engine))),
            5000);
        return;
    }
    const auto cmd = widgets::vllmCommand(scenario());
    statusBar()->showMessage(
        cmd.unsupported.isEmpty()
            ? tr("vLLM command copied")
            : tr("vLLM command copied (%n lever(s) without a vLLM flag, noted in comments)",
                 nullptr, static_cast<int>(cmd.unsupported.size())),
        5000);
}

void MainWindow::setUnits(core::UnitSystem units) {
    {
        QSignalBlocker block(m_unitsAction);
        m_unitsAction->setChecked(units == core::UnitSystem::Decimal);
    }
    m_unitsAction->setText(units == core::UnitSystem::Decimal ? tr("GB") : tr("GiB"));
    m_unitsAction->setToolTip(tr("Units: GiB (2^30 bytes) or GB (10^9 bytes); click to switch"));
    m_document->setUnits(units);
}

void MainWindow::setScope(widgets::FigureScope scope) {
    const int i = static_cast<int>(scope);
    if (i >= 0 && i < m_scopeActions.size())
        m_scopeActions[i]->setChecked(true);
    m_scopeButton->setText(tr("Figures: %1").arg(widgets::scopeLabel(scope)));
    m_scopeButton->setToolTip(
        tr("Which part of the deployment every figure covers: one GPU, one replica (TP x PP "
           "GPUs) or the cluster (DP replicas); click to switch"));
    m_document->setScope(scope);
}

void MainWindow::pinReference() {
    if (!m_document->pinReference())
        return;
    notify(tr("Pinned the current scenario as the reference (dashed)"));
}

void MainWindow::notify(const QString& message) {
    if (isVisible())
        statusBar()->showMessage(message, 4000);
}

void MainWindow::fitLadderColumns() {
    // The step labels are long ("Baseline: MHA-32 BF16 contiguous"): the numbers get their
    // width first, the step column what is left (elided, full text in the tooltip). The widths
    // come from the cells' own text through the font's metrics: QHeaderView::ResizeToContents
    // would measure every cell through the style and the delegate at each update of the
    // ladder, which is on the drag path (it was a tenth of a slider step's time in perf).
    QHeaderView* h = m_ladderView->horizontalHeader();
    h->setStretchLastSection(false);
    const QFontMetrics cellFm = m_ladderView->fontMetrics();
    QFont bold = m_ladderView->font(); // the current step's row (LadderModel's FontRole)
    bold.setBold(true);
    QStyle* st = m_ladderView->style();
    const int cellPad =
        2 * (st->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, m_ladderView) + 1) + 6;
    const int headPad = 2 * st->pixelMetric(QStyle::PM_HeaderMargin, nullptr, h) + 6;
    const int columns = m_ladderModel->columnCount();
    std::vector<int> want(static_cast<std::size_t>(std::max(columns, 1)), 0);
    for (int c = 1; c < columns; ++c) {
        int w = 0;
        const QString head = m_ladderModel->headerData(c, Qt::Horizontal).toString();
        for (const QString& line : head.split(QLatin1Char('\n')))
            w = std::max(w, widgets::textWidth(h->font(), line) + headPad);
        for (int r = 0; r < m_ladderModel->rowCount(); ++r)
            w = std::max(w, widgets::textWidth(
                                r + 1 == m_ladderModel->rowCount() ? bold : m_ladderView->font(),
                                m_ladderModel->index(r, c).data().toString()) +
                                cellPad);
        want[static_cast<std::size_t>(c)] = w;
        if (h->sectionResizeMode(c) != QHeaderView::Fixed)
            h->setSectionResizeMode(c, QHeaderView::Fixed);
        if (h->sectionSize(c) != w && !m_ladderView->isColumnHidden(c))
            h->resizeSection(c, w);
    }
    if (columns <= 0)
        return;
    // Narrow (a 1366 x 768 window), the least needed columns step aside so that every column
    // left is whole and the step names keep about 18 characters: "vs baseline" (the ratio of
    // the per-token bytes beside it), then "vLLM conc." (a figure vLLM's log prints). The speed
    // columns stay at every width (the ladder lost what each step does to speed when they
    // went). Right-clicking a column title brings a hidden one back; the table then scrolls.
    const int stepMin = 18 * cellFm.averageCharWidth();
    int numbers = 0;
    for (int c = 1; c < columns; ++c)
        numbers += want[static_cast<std::size_t>(c)];
    const int room = m_ladderView->viewport()->width();
    QList<int> fitHidden;
    for (int c : ladderFitOrder()) {
        if (numbers + stepMin <= room)
            break;
        if (c >= columns || m_ladderShownByUser.contains(c))
            continue;
        fitHidden << c;
        numbers -= want[static_cast<std::size_t>(c)];
    }
    for (int c = 1; c < columns; ++c) {
        const bool hide = fitHidden.contains(c);
        if (m_ladderView->isColumnHidden(c) != hide) {
            m_ladderView->setColumnHidden(c, hide);
            if (!hide)
                h->resizeSection(c, want[static_cast<std::size_t>(c)]);
        }
    }
    if (fitHidden != m_ladderFitHidden) {
        m_ladderFitHidden = fitHidden;
        updateLadderTitle();
    }
    // The step column takes what the numbers leave, but never less than about 18 characters of
    // its name (elided, the full name in the tooltip); where that is too little even so, the
    // table scrolls sideways.
    const int step = std::max(stepMin, room - numbers);
    if (h->sectionResizeMode(widgets::LadderModel::StepColumn) != QHeaderView::Fixed)
        h->setSectionResizeMode(widgets::LadderModel::StepColumn, QHeaderView::Fixed);
    if (h->sectionSize(widgets::LadderModel::StepColumn) != step)
        h->resizeSection(widgets::LadderModel::StepColumn, step);
}

QList<int> MainWindow::ladderFitOrder() {
    return {int(widgets::LadderModel::SavingColumn),
            int(widgets::LadderModel::VllmConcurrencyColumn)};
}

void MainWindow::updateLadderTitle() {
    QString title = m_ladderTitleBase;
    if (!m_ladderFitHidden.isEmpty()) {
        QStringList names;
        for (int c : m_ladderFitHidden)
            names << m_ladderModel->headerData(c, Qt::Horizontal)
                         .toString()
                         .replace(QLatin1Char('\n'), QLatin1Char(' '));
        title +=
            m_ladderFitHidden.size() == 1
                ? tr(" <small>(1 column hidden to fit)</small>")
                : tr(" <small>(%1 columns hidden to fit)</small>").arg(m_ladderFitHidden.size());
        m_ladderTitle->setToolTip(tr("Hidden to fit the width: %1. Right-click a column title "
                                     "to show them (the table then scrolls sideways)")
                                      .arg(names.join(QStringLiteral(", "))));
    } else {
        m_ladderTitle->setToolTip({});
    }
    if (m_ladderTitle->text() != title)
        m_ladderTitle->setText(title);
}

void MainWindow::setLadderColumnShown(int column, bool shown) {
    if (shown)
        m_ladderShownByUser.insert(column);
    else
        m_ladderShownByUser.remove(column);
    fitLadderColumns();
}

void MainWindow::showLadderColumnMenu(const QPoint& pos) {
    QMenu menu(this);
    for (int c : ladderFitOrder()) {
        const QString name = m_ladderModel->headerData(c, Qt::Horizontal)
                                 .toString()
                                 .replace(QLatin1Char('\n'), QLatin1Char(' '));
        QAction* a = menu.addAction(name);
        a->setCheckable(true);
        a->setChecked(!m_ladderView->isColumnHidden(c));
        connect(a, &QAction::toggled, this, [this, c](bool on) { setLadderColumnShown(c, on); });
    }
    menu.exec(m_ladderView->horizontalHeader()->mapToGlobal(pos));
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_ladderView->viewport() && event->type() == QEvent::Resize &&
        static_cast<QResizeEvent*>(event)->oldSize().width() !=
            static_cast<QResizeEvent*>(event)->size().width())
        fitLadderColumns();
    return QMainWindow::eventFilter(watched, event);
}

void MainWindow::clearReference() {
    m_document->clearReference();
}

void MainWindow::reportError(const QString& title, const QString& message) {
    m_lastError = message;
    emit errorRaised(title, message);
    if (m_options.showDialogs)
        QMessageBox::warning(this, title, message);
}

Result<core::Scenario> MainWindow::loadScenarioFile(const QString& path) {
    return widgets::loadScenarioFile(path);
}

bool MainWindow::openScenarioFile(const QString& path) {
    auto loaded = loadScenarioFile(path);
    if (!loaded) {
        reportError(tr("Open scenario"),
                    tr("Could not open %1; the current scenario is unchanged.\n\n%2")
                        .arg(QDir::toNativeSeparators(path), qs(loaded.error().message)));
        return false;
    }
    showScenarioFile(path, *loaded);
    return true;
}

void MainWindow::showScenarioFile(const QString& path, const core::Scenario& s) {
    setScenario(s);
    m_currentFile = QFileInfo(path).absoluteFilePath();
    m_lastDir = QFileInfo(path).absolutePath();
    addRecentFile(m_currentFile);
    markClean();
    updateTitle();
}

bool MainWindow::saveScenarioFile(const QString& path) {
    if (!m_panel->validationMessage().isEmpty()) {
        // It would not open again: the file format takes valid scenarios only.
        reportError(tr("Save scenario"), tr("The scenario is not valid, so it is not saved: %1")
                                             .arg(m_panel->validationMessage()));
        return false;
    }
    const auto saved = widgets::writeFileAtomically(
        path, QByteArray::fromStdString(io::scenarioToJson(scenario())));
    if (!saved) {
        reportError(tr("Save scenario"), qs(saved.error().message));
        return false;
    }
    m_currentFile = QFileInfo(path).absoluteFilePath();
    m_lastDir = QFileInfo(path).absolutePath();
    addRecentFile(m_currentFile);
    markClean();
    updateTitle();
    notify(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

void MainWindow::showMeasuredTab() {
    m_tabs->setCurrentWidget(m_probePanel);
}

bool MainWindow::showTab(std::string_view name) {
    // kTabNames are in the tab bar's order (buildTabs).
    const auto named = std::find(kTabNames.begin(), kTabNames.end(), name);
    if (named == kTabNames.end())
        return false;
    m_tabs->setCurrentIndex(static_cast<int>(named - kTabNames.begin()));
    return true;
}

bool MainWindow::openProbeResults(const QString& path) {
    const bool ok = probePanel()->loadResults(path);
    if (ok) {
        m_lastDir = QFileInfo(path).absolutePath();
        notify(tr("Probe results: %1").arg(probePanel()->sourceText()));
    }
    return ok;
}

void MainWindow::openProbeResultsInteractive() {
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open probe results"), dialogDir(), tr("kvprobe results (*.json);;All files (*)"));
    if (path.isEmpty())
        return;
    showMeasuredTab();
    openProbeResults(path);
}

void MainWindow::saveProbeResultsInteractive() {
    if (!probePanel()->hasResults()) {
        reportError(tr("Save probe results"), tr("There are no probe results to save yet."));
        return;
    }
    QString path = QFileDialog::getSaveFileName(
        this, tr("Save probe results"),
        QDir(dialogDir())
            .filePath(QStringLiteral("kvprobe-%1.json").arg(qs(probePanel()->report().backend))),
        tr("kvprobe results (*.json)"));
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty())
        path += QStringLiteral(".json");
    QString error;
    if (!probePanel()->saveResults(path, &error))
        reportError(tr("Save probe results"), error);
    else
        statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), 4000);
}

QString MainWindow::tableCsv(const QString& name) const {
    if (name == QLatin1String("plan")) {
        deploymentPanel()->planNow();
        return deploymentPanel()->model()->csv();
    }
    if (name == QLatin1String("probe"))
        return probePanel()->model()->csv();
    return {};
}

widgets::ChartSource MainWindow::exportSource() const {
    widgets::ChartSource src;
    src.view = view();
    src.chart = [this](const QString& name) -> widgets::ChartWidget* {
        // The plan and the simulation are there before they are drawn (on this thread); chart()
        // brings the tab that holds the chart up to date.
        if (name == QLatin1String("gpus-needed"))
            deploymentPanel()->planNow();
        if (name.startsWith(QLatin1String("traffic-")))
            trafficPanel()->computeNow();
        return chart(name);
    };
    src.tableCsv = [this](const QString& name) { return tableCsv(name); };
    src.ladder = m_ladderModel;
    src.font = font();
    src.palette = palette();
    return src;
}

bool MainWindow::exportChart(const QString& name, const QString& path, double scale, QSize size,
                             QString* error) {
    return widgets::exportRegistryChart(exportSource(), name, path, scale, size, error);
}

bool MainWindow::exportReport(const QString& path, QString* error) {
    widgets::ReportExtras extras;
    syncTab(m_speedPanel);
    extras.calibration = m_speedPanel->calibration();
    if (deploymentPanel()->resultIsCurrent()) {
        extras.plan = deploymentPanel()->result();
        extras.planUsers = deploymentPanel()->resultRequest().users;
    }
    // The Traffic tab's simulation, run here if the tab has not (the same computation).
    trafficPanel()->computeNow();
    if (trafficPanel()->resultIsCurrent())
        extras.traffic = trafficPanel()->result();
    syncTab(m_enginesPanel);
    extras.engines = m_enginesPanel->model();
    if (probePanel()->hasResults()) {
        extras.probe = probePanel()->model();
        extras.probeSource = probePanel()->sourceText();
    }
    return widgets::writeReviewReport(path, widgets::reportInputs(exportSource(), extras), error);
}

QString MainWindow::dialogDir() const {
    if (!m_lastDir.isEmpty() && QDir(m_lastDir).exists())
        return m_lastDir;
    return QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
}

void MainWindow::exportChartInteractive(const QString& name) {
    const widgets::ChartSpec* spec = widgets::findChartSpec(name);
    if (!spec)
        return;
    const QString filter = widgets::fileDialogFilter(spec->formats);
    // The first format of the chart (PNG, or CSV for a table) is the suggested one.
    const QString suffix = widgets::formatSuffixes(spec->formats).section(QLatin1Char('|'), 0, 0);
    const QString base = QStringLiteral("%1-%2%3").arg(qs(scenario().model.id), name, suffix);
    QString selected;
    QString path =
        QFileDialog::getSaveFileName(this, tr("Export %1").arg(widgets::chartTitle(*spec)),
                                     QDir(dialogDir()).filePath(base), filter, &selected);
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty()) {
        const QString ext =
            selected.section(QLatin1String("*."), 1).section(QLatin1Char(')'), 0, 0);
        path += QLatin1Char('.') + (ext.isEmpty() ? QStringLiteral("png") : ext);
    }
    m_lastDir = QFileInfo(path).absolutePath();
    double scale = 1.0;
    if (path.endsWith(QLatin1String(".png"), Qt::CaseInsensitive)) {
        bool ok = false;
        scale = QInputDialog::getDouble(this, tr("PNG scale"),
                                        tr("Scale factor (2 for high-DPI slides):"),
                                        std::max(2.0, devicePixelRatioF()), 0.5, 8.0, 1, &ok);
        if (!ok)
            return;
    }
    // kvledger export's size (960 x 540, 1920 px wide at 2x) for a chart, whatever the window;
    // a table takes the size it needs.
    const QSize size = !spec->table ? kDefaultChartSize : QSize();
    QString error;
    if (!exportChart(name, path, scale, size, &error))
        reportError(tr("Export"), error);
    else
        statusBar()->showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(path)), 4000);
}

void MainWindow::exportReportInteractive() {
    const QString base = QStringLiteral("%1-kv-review.pdf").arg(qs(scenario().model.id));
    QString path =
        QFileDialog::getSaveFileName(this, tr("Export review report"),
                                     QDir(dialogDir()).filePath(base), tr("PDF document (*.pdf)"));
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty())
        path += QStringLiteral(".pdf");
    m_lastDir = QFileInfo(path).absolutePath();
    QString error;
    if (!exportReport(path, &error))
        reportError(tr("Export review report"), error);
    else
        statusBar()->showMessage(tr("Wrote %1").arg(QDir::toNativeSeparators(path)), 4000);
}

void MainWindow::openInteractive() {
    if (!maybeSave())
        return;
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open scenario"), dialogDir(), tr(kScenarioFilter));
    if (!path.isEmpty())
        openScenarioFile(path);
}

bool MainWindow::saveInteractive(bool saveAs) {
    QString path = m_currentFile;
    if (saveAs || path.isEmpty()) {
        const QString suggested =
            QDir(dialogDir()).filePath(qs(scenario().model.id) + QStringLiteral(".kvl.json"));
        path = QFileDialog::getSaveFileName(this, tr("Save scenario"),
                                            m_currentFile.isEmpty() ? suggested : m_currentFile,
                                            tr(kScenarioFilter));
        if (path.isEmpty())
            return false;
        if (!path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive))
            path += QStringLiteral(".kvl.json");
    }
    return saveScenarioFile(path);
}

void MainWindow::importInteractive() {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Import HuggingFace config.json"), dialogDir(),
                                     tr("config.json (*.json);;All files (*)"));
    if (path.isEmpty())
        return;
    m_lastDir = QFileInfo(path).absolutePath();
    if (m_panel->importConfig(path))
        statusBar()->showMessage(tr("Imported %1").arg(qs(scenario().model.name)), 4000);
}

void MainWindow::openFromHub(const QString& repo, const QString& revision) {
    m_hubFetcher->fetch(repo, revision); // answers in applyHubResult
}

void MainWindow::openFromHubInteractive() {
    widgets::HfHubDialog dialog(this);
    if (dialog.exec() == QDialog::Accepted)
        applyHubResult(dialog.fetchResult());
}

void MainWindow::applyHubResult(const widgets::HfFetchResult& result) {
    if (result.cancelled) {
        notify(result.message);
        emit hubOpened(false, result.message);
        return;
    }
    if (!result.ok) {
        reportError(tr("Open from Hugging Face"), result.message);
        emit hubOpened(false, result.message);
        return;
    }
    const QString source = QStringLiteral("%1@%2").arg(result.repo, result.revision);
    if (!m_panel->importModel(result.model, source)) {
        emit hubOpened(false, m_lastError);
        return;
    }
    const QString message =
        result.message.isEmpty()
            ? tr("Opened %1 (%2) from Hugging Face").arg(result.repo, result.revision)
            : result.message;
    notify(message);
    emit hubOpened(true, message);
}

namespace {

// A dialog of one read-only page and a Close button (Help > Formulas, Keyboard shortcuts):
// made on first use, then found again by its name. `made` says whether this call made it.
struct PageDialog {
    QDialog* dialog;
    QTextBrowser* text;
    bool made;
};

PageDialog pageDialog(QWidget* window, const QString& name, const QString& title,
                      const QString& textName, QSize size) {
    if (auto* dialog = window->findChild<QDialog*>(name))
        return {dialog, dialog->findChild<QTextBrowser*>(textName), false};
    auto* dialog = new QDialog(window);
    dialog->setObjectName(name);
    dialog->setWindowTitle(title);
    auto* v = new QVBoxLayout(dialog);
    auto* text = new QTextBrowser(dialog);
    text->setObjectName(textName);
    v->addWidget(text);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
    v->addWidget(buttons);
    dialog->resize(size);
    return {dialog, text, true};
}

} // namespace

QDialog* MainWindow::showFormulas() {
    const PageDialog page = pageDialog(this, QStringLiteral("formulasDialog"), tr("Formulas"),
                                       QStringLiteral("formulaTable"), QSize(820, 560));
    if (page.made)
        page.text->setHtml(formulasHtml());
    page.dialog->show();
    page.dialog->raise();
    return page.dialog;
}

QList<QPair<QString, QString>> MainWindow::shortcuts() const {
    QList<QPair<QString, QString>> out;
    QStringList seen;
    for (const QAction* a : findChildren<QAction*>()) {
        if (a->shortcut().isEmpty())
            continue;
        const QString keys = a->shortcut().toString(QKeySequence::NativeText);
        QString text = a->text();
        text.remove(QLatin1Char('&'));
        text.remove(QStringLiteral("..."));
        if (seen.contains(keys))
            continue;
        seen << keys;
        out.append({text, keys});
    }
    std::sort(out.begin(), out.end());
    return out;
}

QDialog* MainWindow::showShortcuts() {
    const PageDialog page =
        pageDialog(this, QStringLiteral("shortcutsDialog"), tr("Keyboard shortcuts"),
                   QStringLiteral("shortcutsTable"), QSize(460, 520));
    // Generated from the actions themselves, so the list cannot drift from the menus.
    QString html = QStringLiteral("<table cellpadding='4'>");
    for (const auto& [what, keys] : shortcuts())
        html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
                    .arg(keys.toHtmlEscaped(), what.toHtmlEscaped());
    html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>")
                .arg(tr("Click / drag"), tr("on a curve chart: move the context there"));
    html += QStringLiteral("</table>");
    page.text->setHtml(html);
    page.dialog->show();
    page.dialog->raise();
    return page.dialog;
}

void MainWindow::addRecentFile(const QString& path) {
    m_recentFiles.removeAll(path);
    m_recentFiles.prepend(path);
    while (m_recentFiles.size() > kMaxRecentFiles)
        m_recentFiles.removeLast();
    updateRecentMenu();
    if (m_options.useSettings)
        QSettings().setValue(QStringLiteral("recentFiles"), m_recentFiles);
}

void MainWindow::updateRecentMenu() {
    m_recentMenu->clear();
    for (int i = 0; i < m_recentFiles.size(); ++i) {
        const QString path = m_recentFiles[i];
        QAction* a = m_recentMenu->addAction(
            QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(path).fileName()), this,
            [this, path] {
                if (maybeSave())
                    openScenarioFile(path);
            });
        a->setToolTip(QDir::toNativeSeparators(path));
    }
    if (!m_recentFiles.isEmpty()) {
        m_recentMenu->addSeparator();
        m_recentMenu->addAction(tr("Clear List"), this, [this] {
            m_recentFiles.clear();
            updateRecentMenu();
            if (m_options.useSettings)
                QSettings().remove(QStringLiteral("recentFiles"));
        });
    }
    m_recentMenu->setEnabled(!m_recentFiles.isEmpty());
}

void MainWindow::updateTitle() {
    const QString name =
        m_currentFile.isEmpty() ? tr("Untitled") : QFileInfo(m_currentFile).fileName();
    setWindowTitle(QStringLiteral("%1[*] - KV Ledger").arg(name));
}

void MainWindow::restoreSettings() {
    QSettings settings;
    m_recentFiles = settings.value(QStringLiteral("recentFiles")).toStringList();
    m_lastDir = settings.value(QStringLiteral("lastDir")).toString();
    updateRecentMenu();
    QList<int> hidden; // column numbers; anything else in the file is ignored
    for (const QVariant& column :
         settings.value(QStringLiteral("deployment/hiddenColumns")).toList())
        if (bool ok = false; column.toInt(&ok), ok)
            hidden.append(column.toInt());
    m_deploymentPanel->setHiddenColumns(hidden);
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) {
        // First launch: 1600 x 1000, or 90% of a smaller screen.
        if (const QScreen* screen = QGuiApplication::primaryScreen()) {
            const QSize avail = screen->availableGeometry().size() * 0.9;
            resize(std::min(1600, avail.width()), std::min(1000, avail.height()));
        }
    }
    restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
    m_mainSplitter->restoreState(
        settings.value(QStringLiteral("window/mainSplitter")).toByteArray());
    m_rightSplitter->restoreState(
        settings.value(QStringLiteral("window/rightSplitter")).toByteArray());
    m_topSplitter->restoreState(settings.value(QStringLiteral("window/topSplitter")).toByteArray());
    m_bottomSplitter->restoreState(
        settings.value(QStringLiteral("window/bottomSplitter")).toByteArray());
    setUnits(settings.value(QStringLiteral("units")).toString() == QLatin1String("GB")
                 ? core::UnitSystem::Decimal
                 : core::UnitSystem::Binary);
    const int scopeValue = settings.value(QStringLiteral("scope"), 0).toInt();
    setScope(scopeValue >= 0 && scopeValue <= 2 ? static_cast<widgets::FigureScope>(scopeValue)
                                                : widgets::FigureScope::PerGpu);
    if (const auto theme = parseTheme(settings.value(QStringLiteral("theme")).toString())) {
        if (*theme != currentTheme())
            applyTheme(*theme);
        for (QAction* a : m_themeActions)
            a->setChecked(a->data().toString() == themeName(*theme));
    }
    core::Scenario s = firstLaunchScenario();
    const QByteArray last = settings.value(QStringLiteral("lastScenario")).toByteArray();
    if (!last.isEmpty()) {
        auto result = io::scenarioFromJson(
            std::string_view(last.constData(), static_cast<std::size_t>(last.size())), "settings");
        if (result)
            s = result.value();
    }
    m_currentFile = settings.value(QStringLiteral("currentFile")).toString();
    if (!m_currentFile.isEmpty() && !QFileInfo::exists(m_currentFile))
        m_currentFile.clear();
    setScenario(s);
    // Modified when it was left modified: the clean state is then the file's (or none).
    if (!settings.value(QStringLiteral("modified"), false).toBool()) {
        markClean();
    } else {
        m_cleanScenario.clear();
        if (!m_currentFile.isEmpty())
            if (auto saved = loadScenarioFile(m_currentFile))
                m_cleanScenario = io::scenarioToJson(*saved);
        updateModified();
    }
}

void MainWindow::saveSettings() {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/mainSplitter"), m_mainSplitter->saveState());
    settings.setValue(QStringLiteral("window/rightSplitter"), m_rightSplitter->saveState());
    settings.setValue(QStringLiteral("window/topSplitter"), m_topSplitter->saveState());
    settings.setValue(QStringLiteral("window/bottomSplitter"), m_bottomSplitter->saveState());
    settings.setValue(QStringLiteral("units"), view().units == core::UnitSystem::Decimal
                                                   ? QStringLiteral("GB")
                                                   : QStringLiteral("GiB"));
    settings.setValue(QStringLiteral("scope"), static_cast<int>(view().scope));
    settings.setValue(QStringLiteral("lastScenario"),
                      QByteArray::fromStdString(io::scenarioToJson(scenario())));
    settings.setValue(QStringLiteral("currentFile"), m_currentFile);
    settings.setValue(QStringLiteral("modified"), isWindowModified());
    settings.setValue(QStringLiteral("recentFiles"), m_recentFiles);
    settings.setValue(QStringLiteral("lastDir"), m_lastDir);
    QVariantList hidden;
    for (int column : m_deploymentPanel->hiddenColumns())
        hidden.append(column);
    settings.setValue(QStringLiteral("deployment/hiddenColumns"), hidden);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (!maybeSave()) {
        event->ignore();
        return;
    }
    if (m_options.useSettings)
        saveSettings();
    event->accept();
}

} // namespace kvl::app
