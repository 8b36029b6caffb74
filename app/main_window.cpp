#include "main_window.h"

#include "widgets/atomic_write.h"
#include "widgets/breakdown_chart.h"
#include "widgets/chart_registry.h"
#include "widgets/curve_chart.h"
#include "widgets/ladder_model.h"
#include "widgets/model_picker.h"
#include "widgets/probe_charts.h"
#include "widgets/probe_overlay.h"
#include "widgets/probe_panel.h"
#include "widgets/probe_results_model.h"
#include "widgets/report.h"
#include "widgets/scenario_panel.h"
#include "widgets/vllm_command.h"

#include "core/io/json.h"
#include "core/io/scenario_file.h"
#include "core/kv_format.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QTabWidget>
#include <QTableView>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

static void initKvlResources() {
    Q_INIT_RESOURCE(kvledger);
}

namespace kvl::app {

using widgets::qs;

namespace {
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
    buildUi();
    buildActions();
    connect(m_panel, &widgets::ScenarioPanel::scenarioChanged, this, &MainWindow::recompute);
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
    connect(this, &MainWindow::snapshotChanged, m_probePanel, &widgets::ProbePanel::setView);
    connect(this, &MainWindow::snapshotChanged, m_breakdownChart,
            &widgets::BreakdownChart::setView);
    for (widgets::CurveChart* c : findChildren<widgets::CurveChart*>()) {
        connect(this, &MainWindow::snapshotChanged, c, &widgets::CurveChart::setView);
        connect(m_probePanel, &widgets::ProbePanel::reportChanged, c,
                &widgets::CurveChart::setProbeReport);
    }
    // Replots are counted over whatever charts the window holds (the probe tab's too).
    m_charts = findChildren<widgets::ChartWidget*>();
    for (widgets::ChartWidget* c : m_charts)
        connect(c, &widgets::ChartWidget::replotted, this, &MainWindow::onChartReplotted);
    if (m_options.useSettings)
        restoreSettings();
    if (!m_view.snapshot) // no settings, or a remembered scenario that no longer validates
        setScenario(firstLaunchScenario());
    updateTitle();
}

MainWindow::~MainWindow() = default;

void MainWindow::buildUi() {
    m_panel = new widgets::ScenarioPanel;
    auto* scroll = new QScrollArea;
    scroll->setWidget(m_panel);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setMinimumWidth(m_panel->sizeHint().width() + 24);
    scroll->setFrameShape(QFrame::NoFrame);

    // The ledger charts of the chart registry; the probe panel makes the measured ones.
    auto make = [](const char* name) {
        return widgets::createChart(*widgets::findChartSpec(QString::fromLatin1(name)));
    };
    m_memoryChart = static_cast<widgets::CurveChart*>(make("memory"));
    m_concurrencyChart = static_cast<widgets::CurveChart*>(make("concurrency"));
    m_breakdownChart = static_cast<widgets::BreakdownChart*>(make("breakdown"));

    m_ladderModel = new widgets::LadderModel(this);
    m_ladderView = new QTableView;
    m_ladderView->setObjectName(QStringLiteral("ladderView"));
    m_ladderView->setModel(m_ladderModel);
    m_ladderView->setAlternatingRowColors(true);
    m_ladderView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_ladderView->setWordWrap(false);
    m_ladderView->verticalHeader()->setVisible(false);
    m_ladderView->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_ladderView->horizontalHeader()->setStretchLastSection(true);
    m_ladderView->setTextElideMode(Qt::ElideMiddle);
    connect(m_ladderModel, &QAbstractItemModel::modelReset, this, [this] { fitLadderColumns(); });
    fitLadderColumns();
    auto* ladderBox = new QWidget;
    auto* ladderLayout = new QVBoxLayout(ladderBox);
    ladderLayout->setContentsMargins(0, 0, 0, 0);
    auto* ladderTitle =
        new QLabel(tr("<b>Lever ladder</b>: each step adds one lever of the scenario"));
    ladderLayout->addWidget(ladderTitle);
    ladderLayout->addWidget(m_ladderView, 3);
    auto* cmdTitle =
        new QLabel(tr("<b>vLLM command</b> for this scenario (Edit > Copy vLLM Command):"));
    ladderLayout->addWidget(cmdTitle);
    m_vllmView = new QPlainTextEdit;
    m_vllmView->setObjectName(QStringLiteral("vllmView"));
    m_vllmView->setReadOnly(true);
    m_vllmView->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    m_vllmView->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_vllmView->setToolTip(
        tr("The equivalent `vllm serve` flags; '#' lines name the levers vLLM has no flag for"));
    ladderLayout->addWidget(m_vllmView, 2);

    m_warnings = new QLabel;
    m_warnings->setObjectName(QStringLiteral("warningsLabel"));
    // One fixed line, always there: warnings coming and going must not resize the charts.
    m_warnings->setWordWrap(false);
    m_warnings->setContentsMargins(6, 2, 6, 2);
    m_warnings->setFixedHeight(m_warnings->fontMetrics().height() + 6);
    m_warnings->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);

    m_topSplitter = new QSplitter(Qt::Horizontal);
    m_topSplitter->addWidget(m_memoryChart);
    m_topSplitter->addWidget(m_concurrencyChart);
    m_bottomSplitter = new QSplitter(Qt::Horizontal);
    m_bottomSplitter->addWidget(m_breakdownChart);
    m_bottomSplitter->addWidget(ladderBox);
    m_bottomSplitter->setStretchFactor(0, 2);
    m_bottomSplitter->setStretchFactor(1, 3);
    m_rightSplitter = new QSplitter(Qt::Vertical);
    m_rightSplitter->addWidget(m_topSplitter);
    m_rightSplitter->addWidget(m_bottomSplitter);
    m_rightSplitter->setStretchFactor(0, 3);
    m_rightSplitter->setStretchFactor(1, 2);
    m_rightSplitter->setSizes({600, 380});
    m_bottomSplitter->setSizes({440, 800});
    // The probe gets a tab of its own: its table and charts need the room, and the ledger's
    // charts keep theirs (measured points appear on them as overlays).
    m_probePanel = new widgets::ProbePanel;
    m_probePanel->setObjectName(QStringLiteral("probePanel"));
    m_tabs = new QTabWidget;
    m_tabs->setObjectName(QStringLiteral("mainTabs"));
    m_tabs->setDocumentMode(true);
    m_tabs->addTab(m_rightSplitter, tr("&Ledger: predicted"));
    m_tabs->addTab(m_probePanel, tr("&Measured: probe"));
    m_tabs->setTabToolTip(0, tr("Memory, concurrency, breakdown and the lever ladder as core "
                                "predicts them (measured points overlaid)"));
    m_tabs->setTabToolTip(1, tr("Run the real KV store and paged-attention kernels, or open a GPU "
                                "machine's results: memory, speed and quality per KV format"));
    auto* right = new QWidget;
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(0, 0, 0, 0);
    rightLayout->setSpacing(2);
    rightLayout->addWidget(m_warnings);
    rightLayout->addWidget(m_tabs, 1);

    m_mainSplitter = new QSplitter(Qt::Horizontal);
    m_mainSplitter->addWidget(scroll);
    m_mainSplitter->addWidget(right);
    m_mainSplitter->setStretchFactor(0, 0);
    m_mainSplitter->setStretchFactor(1, 1);
    m_mainSplitter->setCollapsible(1, false);
    setCentralWidget(m_mainSplitter);

    m_summary = new QLabel;
    m_summary->setObjectName(QStringLiteral("summaryLabel"));
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_referenceLabel = new QLabel;
    m_referenceLabel->setObjectName(QStringLiteral("referenceLabel"));
    m_unitsButton = new QToolButton;
    m_unitsButton->setObjectName(QStringLiteral("unitsButton"));
    m_unitsButton->setAutoRaise(true);
    statusBar()->addWidget(m_summary, 1);
    statusBar()->addPermanentWidget(m_referenceLabel);
    statusBar()->addPermanentWidget(m_unitsButton);
    resize(1600, 1000);
}

void MainWindow::buildActions() {
    auto icon = [](const char* name) {
        return QIcon(QStringLiteral(":/kvledger/icons/%1.svg").arg(QLatin1String(name)));
    };
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* newAct = file->addAction(style()->standardIcon(QStyle::SP_FileIcon),
                                      tr("&New (default scenario)"), this, [this] {
                                          m_currentFile.clear();
                                          setScenario(firstLaunchScenario());
                                          updateTitle();
                                      });
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
    QMenu* exportMenu = file->addMenu(tr("&Export"));
    // The chart registry's entries: the ledger's, then (after a separator) the probe's.
    bool measuredSection = false;
    for (const auto& spec : widgets::chartSpecs()) {
        if (spec.measured != measuredSection) {
            exportMenu->addSeparator();
            measuredSection = spec.measured;
        }
        const QString label = widgets::chartMenuTitle(spec) +
                              (spec.create ? QString() : QStringLiteral(" (CSV)")) +
                              QStringLiteral("...");
        const QString name = QLatin1String(spec.name);
        exportMenu->addAction(label, this, [this, name] { exportChartInteractive(name); });
    }
    exportMenu->addSeparator();
    QAction* reportAct = exportMenu->addAction(icon("report"), tr("Review &report (PDF)..."), this,
                                               &MainWindow::exportReportInteractive);
    reportAct->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    file->addSeparator();
    QAction* openProbeAct = file->addAction(icon("report"), tr("Open &Probe Results..."), this,
                                            &MainWindow::openProbeResultsInteractive);
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

    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    QAction* copyCmd = edit->addAction(icon("terminal"), tr("Copy &vLLM Command"), this,
                                       &MainWindow::copyVllmCommand);
    copyCmd->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
    copyCmd->setToolTip(tr("Copy the equivalent `vllm serve` flags, with a note for every lever "
                           "vLLM has no flag for"));
    QAction* copySummary = edit->addAction(tr("Copy &Summary Line"), this, [this] {
        QApplication::clipboard()->setText(summaryText());
        statusBar()->showMessage(tr("Summary copied"), 3000);
    });
    Q_UNUSED(copySummary);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    QAction* pinAct =
        view->addAction(icon("pin"), tr("&Pin as Reference"), this, &MainWindow::pinReference);
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

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About KV Ledger"), this, [this] {
        QMessageBox::about(
            this, tr("About KV Ledger"),
            tr("<h3>KV Ledger %1</h3><p>How much memory an LLM's KV cache takes, and "
               "what GQA/MQA, KV quantization, paging and prefix sharing buy.</p>"
               "<p>KV bytes per token = 2 x layers x KV heads x head_dim x bytes per "
               "element (+ scales). Numbers follow vLLM's accounting.</p>")
                .arg(QCoreApplication::applicationVersion()));
    });

    QToolBar* tb = addToolBar(tr("Main"));
    tb->setObjectName(QStringLiteral("mainToolBar"));
    tb->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tb->setIconSize(QSize(18, 18));
    tb->addAction(openAct);
    tb->addAction(saveAct);
    tb->addSeparator();
    tb->addAction(pinAct);
    tb->addAction(m_clearReferenceAction);
    tb->addSeparator();
    tb->addAction(copyCmd);
    tb->addAction(reportAct);

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
}

widgets::ChartWidget* MainWindow::chart(const QString& name) const {
    const widgets::ChartSpec* spec = widgets::findChartSpec(name);
    if (!spec || !spec->create)
        return nullptr;
    return findChild<widgets::ChartWidget*>(widgets::chartObjectName(*spec));
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
    return m_panel->scenario();
}

void MainWindow::recompute(const core::Scenario& s) {
    m_view.snapshot = std::make_shared<const widgets::LedgerSnapshot>(widgets::computeSnapshot(s));
    publish();
    setWindowModified(true);
    emit recomputed();
}

void MainWindow::publish() {
    if (!m_view.snapshot)
        return; // nothing computed yet: the units wait for the first scenario
    m_awaitingReplots = true;
    emit snapshotChanged(m_view);
    onChartReplotted(); // when no chart had anything to redraw
}

void MainWindow::showView(const widgets::LedgerView& view) {
    m_summary->setText(summaryText());
    m_vllmView->setPlainText(vllmCommandText());
    const QString warn = warningText();
    m_warnings->setText(
        warn.isEmpty() ? tr("No warnings: the scenario is within the model's and vLLM's limits")
                       : warn);
    m_warnings->setToolTip(warn);
    m_clearReferenceAction->setEnabled(view.reference != nullptr);
    if (view.reference) {
        m_referenceLabel->setText(tr("Reference: %1").arg(qs(view.reference->scenario.model.name)));
        m_referenceLabel->setToolTip(widgets::summaryLine(*view.reference, view.units));
    } else {
        m_referenceLabel->clear();
        m_referenceLabel->setToolTip({});
    }
}

QString MainWindow::summaryText() const {
    return widgets::summaryLine(*m_view.snapshot, m_view.units);
}

QString MainWindow::warningText() const {
    const widgets::LedgerSnapshot& snap = *m_view.snapshot;
    QStringList lines;
    if (!snap.ledger.error.empty())
        lines << tr("<b>Does not fit:</b> %1").arg(qs(snap.ledger.error).toHtmlEscaped());
    for (const auto& w : snap.ledger.warnings)
        lines << tr("<b>Note:</b> %1").arg(qs(w).toHtmlEscaped());
    return lines.join(QStringLiteral(" &nbsp; "));
}

QString MainWindow::vllmCommandText() const {
    return widgets::vllmCommand(scenario()).text();
}

void MainWindow::copyVllmCommand() {
    QApplication::clipboard()->setText(vllmCommandText());
    const auto cmd = widgets::vllmCommand(scenario());
    statusBar()->showMessage(
        cmd.unsupported.isEmpty()
            ? tr("vLLM command copied")
            : tr("vLLM command copied (%n lever(s) without a vLLM flag, noted in comments)",
                 nullptr, static_cast<int>(cmd.unsupported.size())),
        5000);
}

void MainWindow::setUnits(core::UnitSystem units) {
    m_view.units = units;
    {
        QSignalBlocker block(m_unitsAction);
        m_unitsAction->setChecked(units == core::UnitSystem::Decimal);
    }
    m_unitsAction->setText(units == core::UnitSystem::Decimal ? tr("GB") : tr("GiB"));
    m_unitsAction->setToolTip(tr("Units: GiB (2^30 bytes) or GB (10^9 bytes); click to switch"));
    publish();
}

void MainWindow::pinReference() {
    m_view.reference = m_view.snapshot;
    publish();
    notify(tr("Pinned the current scenario as the reference (dashed)"));
}

void MainWindow::notify(const QString& message) {
    if (isVisible())
        statusBar()->showMessage(message, 4000);
}

void MainWindow::fitLadderColumns() {
    // The step labels are long ("Baseline: MHA-32 BF16 contiguous"): the numbers get their
    // width first, the step column what is left (elided, full text in the tooltip).
    QHeaderView* h = m_ladderView->horizontalHeader();
    h->setSectionResizeMode(QHeaderView::ResizeToContents);
    h->setSectionResizeMode(widgets::LadderModel::StepColumn, QHeaderView::Stretch);
    h->setStretchLastSection(false);
}

void MainWindow::clearReference() {
    m_view.reference.reset();
    publish();
}

void MainWindow::reportError(const QString& title, const QString& message) {
    m_lastError = message;
    emit errorRaised(title, message);
    if (m_options.showDialogs)
        QMessageBox::warning(this, title, message);
}

Result<core::Scenario> MainWindow::loadScenarioFile(const QString& path) {
    // io::loadScenarioFile reads through io::readFile: one size limit, no FIFO hangs.
    return io::loadScenarioFile(QFile::encodeName(path).toStdString());
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
    setWindowModified(false);
    updateTitle();
}

bool MainWindow::saveScenarioFile(const QString& path) {
    const auto saved = widgets::writeFileAtomically(
        path, QByteArray::fromStdString(io::scenarioToJson(scenario())));
    if (!saved) {
        reportError(tr("Save scenario"), qs(saved.error().message));
        return false;
    }
    m_currentFile = QFileInfo(path).absoluteFilePath();
    m_lastDir = QFileInfo(path).absolutePath();
    addRecentFile(m_currentFile);
    setWindowModified(false);
    updateTitle();
    notify(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
    return true;
}

void MainWindow::showMeasuredTab() {
    m_tabs->setCurrentWidget(m_probePanel);
}

bool MainWindow::openProbeResults(const QString& path) {
    const bool ok = m_probePanel->loadResults(path);
    if (ok) {
        m_lastDir = QFileInfo(path).absolutePath();
        notify(tr("Probe results: %1").arg(m_probePanel->sourceText()));
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
    if (!m_probePanel->hasResults()) {
        reportError(tr("Save probe results"), tr("There are no probe results to save yet."));
        return;
    }
    QString path = QFileDialog::getSaveFileName(
        this, tr("Save probe results"),
        QDir(dialogDir())
            .filePath(QStringLiteral("kvprobe-%1.json").arg(qs(m_probePanel->report().backend))),
        tr("kvprobe results (*.json)"));
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty())
        path += QStringLiteral(".json");
    QString error;
    if (!m_probePanel->saveResults(path, &error))
        reportError(tr("Save probe results"), error);
    else
        statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), 4000);
}

QString MainWindow::tableCsv(const QString& name) const {
    if (name == QLatin1String("ladder"))
        return m_ladderModel->csv();
    if (name == QLatin1String("probe"))
        return m_probePanel->model()->csv();
    return {};
}

bool MainWindow::exportChart(const QString& name, const QString& path, double scale, QSize size,
                             QString* error) {
    auto fail = [error](const QString& message) {
        if (error)
            *error = message;
        return false;
    };
    const widgets::ChartSpec* spec = widgets::findChartSpec(name);
    if (!spec)
        return fail(tr("Unknown chart \"%1\": use %2").arg(name, widgets::chartNames()));
    const auto format = widgets::formatOfPath(path);
    if (!format || !spec->formats.testFlag(*format))
        return fail(tr("The %1 exports to %2, not \"%3\"")
                        .arg(widgets::chartTitle(*spec).toLower(),
                             widgets::formatSuffixes(spec->formats), QFileInfo(path).suffix()));
    const Status written = spec->create
                               ? chart(name)->exportTo(path, scale, size)
                               : widgets::writeFileAtomically(path, tableCsv(name).toUtf8());
    return written ? true : fail(qs(written.error().message));
}

bool MainWindow::exportReport(const QString& path, QString* error) {
    widgets::ReportInputs in;
    in.snapshot = m_view.snapshot.get();
    in.reference = m_view.reference.get();
    in.memoryChart = m_memoryChart;
    in.concurrencyChart = m_concurrencyChart;
    in.breakdownChart = m_breakdownChart;
    in.ladder = m_ladderModel;
    in.units = m_view.units;
    if (m_probePanel->hasResults()) {
        in.probe = m_probePanel->model();
        in.qualityChart = m_probePanel->qualityChart();
        in.speedChart = m_probePanel->speedChart();
        in.probeSource = m_probePanel->sourceText();
    }
    return widgets::writeReviewReport(path, in, error);
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
    QString error;
    if (!exportChart(name, path, scale, {}, &error))
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
            [this, path] { openScenarioFile(path); });
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
    setWindowModified(settings.value(QStringLiteral("modified"), false).toBool());
}

void MainWindow::saveSettings() {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("window/state"), saveState());
    settings.setValue(QStringLiteral("window/mainSplitter"), m_mainSplitter->saveState());
    settings.setValue(QStringLiteral("window/rightSplitter"), m_rightSplitter->saveState());
    settings.setValue(QStringLiteral("window/topSplitter"), m_topSplitter->saveState());
    settings.setValue(QStringLiteral("window/bottomSplitter"), m_bottomSplitter->saveState());
    settings.setValue(QStringLiteral("units"), m_view.units == core::UnitSystem::Decimal
                                                   ? QStringLiteral("GB")
                                                   : QStringLiteral("GiB"));
    settings.setValue(QStringLiteral("lastScenario"),
                      QByteArray::fromStdString(io::scenarioToJson(scenario())));
    settings.setValue(QStringLiteral("currentFile"), m_currentFile);
    settings.setValue(QStringLiteral("modified"), isWindowModified());
    settings.setValue(QStringLiteral("recentFiles"), m_recentFiles);
    settings.setValue(QStringLiteral("lastDir"), m_lastDir);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (m_options.useSettings)
        saveSettings();
    event->accept();
}

} // namespace kvl::app
