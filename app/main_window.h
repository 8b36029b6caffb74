#pragma once
// The explorer window: scenario panel on the left; the warnings banner, memory and concurrency
// curves, the memory breakdown and the lever ladder on the right; the one-line summary in the
// status bar, with the units and figure-scope toggles. One scenario; every control edit
// recomputes the ledger once and publishes the result in one signal, snapshotChanged, to which
// every view subscribes (each chart then queues a replot). Input that does not validate is
// published too, as an invalid snapshot: the views show the error, not stale numbers.

#include "widgets/state/ledger_view_state.h"
#include "widgets/state/scenario_document.h"

#include "core/result.h"

#include <QIcon>
#include <QList>
#include <QMainWindow>
#include <QPair>
#include <QSet>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

class QAction;
class QDialog;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QSplitter;
class QTabWidget;
class QTableView;
class QToolButton;

namespace kvl::widgets {
class BreakdownChart;
struct ChartSource;
class ChartWidget;
class CurveChart;
class HfHubFetcher;
class LadderModel;
class ScenarioPanel;
class ProbePanel;
class WarningsBanner;
struct HfFetchResult;
class DeploymentPanel; // the Deployment tab
class EnginesPanel;    // the Engines tab
class SpeedPanel;      // the Speed tab
class TrafficPanel;    // the Traffic tab
} // namespace kvl::widgets

namespace kvl::app {

// The scenario a first launch shows: kvledger's default (Llama-3-8B on an H100 80GB, 4K
// requests, a 2K shared prefix on top of vLLM's defaults), one vLLM runs as printed.
core::Scenario firstLaunchScenario();

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    struct Options {
        bool useSettings = true; // restore and save QSettings (off for tests and headless)
        bool showDialogs = true; // message boxes for errors (off for tests and headless)
    };
    MainWindow();
    explicit MainWindow(const Options& options, QWidget* parent = nullptr);
    ~MainWindow() override;

    void setScenario(const core::Scenario& s);
    const core::Scenario& scenario() const;
    // What every view shows: the snapshot of the scenario, the pinned reference, the units.
    const widgets::LedgerView& view() const { return m_document->view(); }
    const widgets::LedgerSnapshot& snapshot() const { return m_document->snapshot(); }
    const widgets::LedgerSnapshot* reference() const { return m_document->view().reference.get(); }
    // The document that owns the scenario and publishes what every view shows.
    widgets::ScenarioDocument* document() const { return m_document; }

    widgets::ScenarioPanel* panel() const { return m_panel; }
    widgets::CurveChart* memoryChart() const { return m_memoryChart; }
    widgets::CurveChart* concurrencyChart() const { return m_concurrencyChart; }
    widgets::BreakdownChart* breakdownChart() const { return m_breakdownChart; }
    widgets::LadderModel* ladderModel() const { return m_ladderModel; }
    QTableView* ladderView() const { return m_ladderView; }
    QLabel* ladderTitle() const { return m_ladderTitle; }
    // A ladder column the width hides (vs baseline, vLLM conc.) asked back, or left to the fit
    // again (the ladder's column-title menu).
    void setLadderColumnShown(int column, bool shown);
    widgets::ProbePanel* probePanel() const; // brought up to date, in front or not
    // the Speed and Deployment tabs.
    widgets::SpeedPanel* speedPanel() const { return m_speedPanel; }
    widgets::DeploymentPanel* deploymentPanel() const; // brought up to date, in front or not
    widgets::TrafficPanel* trafficPanel() const;       // brought up to date, in front or not
    // The Engines tab: requests per engine per ladder step (computed when shown or exported).
    widgets::EnginesPanel* enginesPanel() const { return m_enginesPanel; }
    QTabWidget* tabs() const { return m_tabs; }
    void showMeasuredTab();
    // Brings the tab that --tab calls `name` (kTabNames, app/cli.h) to the front; false, and no
    // tab changed, for a name that is no tab's.
    bool showTab(std::string_view name);
    // Loads kvprobe results JSON into the probe panel; false (message in the panel) when bad.
    bool openProbeResults(const QString& path);
    // The chart of a chart registry name ("memory", "quality", ...); nullptr for the tables
    // and unknown names.
    widgets::ChartWidget* chart(const QString& name) const;

    // Reads and checks a scenario file through io::readFile (regular files only, one size
    // limit: a FIFO or a device never blocks). The error is one line naming the file.
    static Result<core::Scenario> loadScenarioFile(const QString& path);
    // File operations; errors go to errorRaised (and a message box when dialogs are on).
    bool openScenarioFile(const QString& path);
    // Shows a scenario loaded from `path` (loadScenarioFile) as the current file.
    void showScenarioFile(const QString& path, const core::Scenario& s);
    bool saveScenarioFile(const QString& path);
    QString currentFile() const { return m_currentFile; }
    QStringList recentFiles() const { return m_recentFiles; }
    QString lastError() const { return m_lastError; }

    // Exports a chart or table of the chart registry in one of its formats (by the suffix).
    // The file is replaced only by a complete export; `error` names the file.
    bool exportChart(const QString& name, const QString& path, double scale = 1.0, QSize size = {},
                     QString* error = nullptr);
    bool exportReport(const QString& path, QString* error = nullptr);

    QString summaryText() const;
    QString warningText() const; // the banner's items, one per line
    QString vllmCommandText() const;
    QString vllmLogText() const; // the lines the scenario's vLLM release logs, as '#' lines
    widgets::WarningsBanner* banner() const { return m_banner; }

    core::UnitSystem units() const { return m_document->view().units; }
    void setUnits(core::UnitSystem units);
    // Per GPU, per replica or cluster: the scope of every figure the views show.
    widgets::FigureScope scope() const { return m_document->view().scope; }
    void setScope(widgets::FigureScope scope);

    // The scenario differs from the one last saved, opened or started with New: New, Open and
    // Quit ask first (a message box when dialogs are on).
    bool wouldPromptToSave() const { return isWindowModified(); }

    // File > Open from Hugging Face for a repo id and revision: asynchronous; hubOpened tells
    // how it went (the model is then the scenario's, named by its repo id).
    void openFromHub(const QString& repo, const QString& revision = QStringLiteral("main"));
    widgets::HfHubFetcher* hubFetcher() const { return m_hubFetcher; }

    // Help > Formulas and Help > Keyboard shortcuts (non-modal dialogs).
    QDialog* showFormulas();
    QDialog* showShortcuts();
    // Every action with a shortcut: its menu text (no '&') and the shortcut, as Help lists them.
    QList<QPair<QString, QString>> shortcuts() const;
    void pinReference();
    void clearReference();

    // Charts with a replot requested and not yet drawn (0 = all drawn), whichever they are.
    int pendingReplots() const;

signals:
    // The one update every view takes: a recompute, the units, the reference pinned/cleared.
    void snapshotChanged(const kvl::widgets::LedgerView& view);
    void recomputed();      // the snapshot, table and status line are up to date
    void chartsReplotted(); // every chart has replotted since the last snapshotChanged
    void errorRaised(const QString& title, const QString& message);
    void hubOpened(bool ok, const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void buildUi();
    QWidget* buildLedgerTab();
    QWidget* buildLadderBox();
    void buildTabs(QWidget* ledger);
    void buildStatusBar();
    void buildActions();
    struct FileActions {
        QAction* open = nullptr;
        QAction* save = nullptr;
        QAction* report = nullptr;
    };
    struct ToolBarActions { // the menus' actions the tool bar shows too
        FileActions file;
        QAction* copyCommand = nullptr;
        QAction* pin = nullptr;
    };
    static QIcon actionIcon(const char* name); // from resources/icons
    FileActions buildFileMenu();
    QAction* buildEditMenu(); // returns Copy vLLM Command
    QAction* buildViewMenu(); // returns Pin as Reference
    void buildHelpMenu();
    void recompute(const core::Scenario& s);
    void updateModified();
    void markClean(); // the current scenario is the saved / opened / new one
    bool maybeSave(); // false when the user cancels (dialogs on and the scenario modified)
    void applyHubResult(const widgets::HfFetchResult& result);
    void openFromHubInteractive();
    void newScenario();
    void publish(const widgets::LedgerView& view);  // emits snapshotChanged
    void showView(const widgets::LedgerView& view); // the status bar, warnings, vLLM command
    void onChartReplotted();
    QString tableCsv(const QString& name) const; // the plan's or the probe's
    // The window's live charts and models, for the one export path (chart_export.h).
    widgets::ChartSource exportSource() const;
    void reportError(const QString& title, const QString& message);
    void addRecentFile(const QString& path);
    void updateRecentMenu();
    void updateTitle();
    void restoreSettings();
    void saveSettings();
    void exportChartInteractive(const QString& name);
    void exportReportInteractive();
    void openInteractive();
    bool saveInteractive(bool saveAs);
    void importInteractive();
    void copyVllmCommand();
    void notify(const QString& message); // a transient status-bar message
    void fitLadderColumns();
    static QList<int> ladderFitOrder(); // the ladder's columns that step aside when narrow
    void updateLadderTitle();           // its title, naming the columns hidden to fit
    void showLadderColumnMenu(const QPoint& pos);
    // A tab behind another takes no view: it is marked stale and takes the current one when it
    // comes to the front, or when something reads it (an export, the report, a test).
    void followWhenInFront(QWidget* tab, std::function<void(const widgets::LedgerView&)> apply);
    void syncTab(QWidget* tab) const; // the tab takes the current view if it has missed one
    bool eventFilter(QObject* watched, QEvent* event) override;
    void openProbeResultsInteractive();
    void saveProbeResultsInteractive();
    QString dialogDir() const;

    Options m_options;
    widgets::ScenarioPanel* m_panel = nullptr;
    widgets::CurveChart* m_memoryChart = nullptr;
    widgets::CurveChart* m_concurrencyChart = nullptr;
    widgets::BreakdownChart* m_breakdownChart = nullptr;
    widgets::LadderModel* m_ladderModel = nullptr;
    QTableView* m_ladderView = nullptr;
    QPlainTextEdit* m_vllmView = nullptr;
    QLabel* m_commandTitle = nullptr; // names the engine whose command the box shows
    QLabel* m_ladderTitle = nullptr;
    QString m_ladderTitleBase;     // the title before the note on hidden columns
    QList<int> m_ladderFitHidden;  // columns hidden to fit the width
    QSet<int> m_ladderShownByUser; // of those, the ones the user asked back
    QSplitter* m_mainSplitter = nullptr;
    QSplitter* m_rightSplitter = nullptr;
    QSplitter* m_topSplitter = nullptr;
    QSplitter* m_bottomSplitter = nullptr;
    QTabWidget* m_tabs = nullptr;
    widgets::ProbePanel* m_probePanel = nullptr;
    widgets::SpeedPanel* m_speedPanel = nullptr;
    widgets::DeploymentPanel* m_deploymentPanel = nullptr;
    widgets::TrafficPanel* m_trafficPanel = nullptr;
    widgets::EnginesPanel* m_enginesPanel = nullptr;
    struct TabFeed {
        QWidget* tab = nullptr;
        std::function<void(const widgets::LedgerView&)> apply;
        bool stale = true; // the tab has not seen the current view
    };
    mutable std::vector<TabFeed> m_tabFeeds;
    QLabel* m_summary = nullptr;
    widgets::WarningsBanner* m_banner = nullptr;
    QLabel* m_referenceLabel = nullptr;
    QToolButton* m_unitsButton = nullptr;
    QToolButton* m_scopeButton = nullptr;
    QMenu* m_recentMenu = nullptr;
    QAction* m_unitsAction = nullptr;
    QAction* m_clearReferenceAction = nullptr;
    QAction* m_pinAction = nullptr;
    QList<QAction*> m_scopeActions; // per GPU, per replica, cluster
    QList<QAction*> m_themeActions; // system, light, dark
    widgets::HfHubFetcher* m_hubFetcher = nullptr;

    QList<widgets::ChartWidget*> m_charts; // every chart of the window, for replot accounting
    widgets::ScenarioDocument* m_document = nullptr;
    QString m_currentFile;
    QStringList m_recentFiles;
    QString m_lastError;
    QString m_lastDir;
    std::string m_cleanScenario;    // JSON of the scenario last saved, opened or new
    bool m_awaitingReplots = false; // chartsReplotted not yet emitted since snapshotChanged
};

} // namespace kvl::app
