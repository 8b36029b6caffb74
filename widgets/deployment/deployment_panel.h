#pragma once
// The Deployment tab: N users at context T -> for every GPU kind tried, the fewest GPUs and the
// layout vLLM runs (core::planDeployments), as a sortable table and a bar chart "GPUs needed
// per GPU kind", with the best plan's `vllm serve` command. Selecting a row and pressing Apply
// (or double-clicking it) hands that GPU and layout to the window's scenario (applyRequested).
//
// The planner takes tens of milliseconds for every catalog GPU, so it runs on a worker thread
// (QtConcurrent): the tab shows "Planning…", a newer request makes an older one's result stale
// (a generation counter drops it), Cancel stops between GPU kinds, and a change of the
// scenario's model or levers re-plans after a short pause (debounced).

#include "widgets/state/ledger_view_state.h"

#include "core/planner.h"

#include <QPointer>
#include <QStringList>
#include <QWidget>

#include <atomic>
#include <memory>

class QComboBox;
class QDoubleSpinBox;
class QGridLayout;
class QHBoxLayout;
class QLabel;
class QMenu;
class QPlainTextEdit;
class QPushButton;
class QSortFilterProxyModel;
class QSpinBox;
class QSplitter;
class QStackedWidget;
class QTabWidget;
class QTableView;
class QTimer;

namespace kvl::widgets {

class GpusNeededChart;
class PlanTableModel;
class TokenSpinBox;

// The answer of one planning run, with the request it answers.
struct PlanOutcome {
    core::PlanRequest request;
    std::shared_ptr<const core::PlanResult> result;
    bool cancelled = false;
    double elapsedMs = 0;
};

// Plans `request`, one GPU kind after the other, stopping early when `cancel` turns true.
PlanOutcome runPlan(const core::PlanRequest& request, const std::atomic<bool>* cancel = nullptr);

// The Deployment tab's fields: what a plan asks for. The tab fills one from its fields;
// ChartBook (no tab) takes defaultPlanFields, what the tab shows for a scenario nobody edited.
inline constexpr int kPlanMaxUsers = 1'000'000;
inline constexpr int kPlanMaxContext = 16 << 20;
inline constexpr int kPlanDefaultGpusPerNode = 8;
struct PlanFields {
    std::int64_t users = 1;
    std::int64_t context = 1;
    std::int64_t prefixTokens = 0; // 0 = no shared prefix
    int maxGpus = core::kMaxPlanGpus;
    int gpusPerNode = kPlanDefaultGpusPerNode;
    core::PlanRank rank = core::PlanRank::Gpus;
    double minTokensPerSecondPerUser = core::kDefaultMinTokensPerSecondPerUser;
    QStringList gpuKinds; // empty = every catalog GPU
};
// The fields following the scenario: users = its target, else its concurrency, else what fits
// now; its context and shared prefix; each within its field's range.
PlanFields defaultPlanFields(const LedgerSnapshot& snap);
// The request of a plan of `base` for `fields` (the scenario's GPU preferred).
core::PlanRequest planRequestFor(const core::Scenario& base, const PlanFields& fields);

class DeploymentPanel : public QWidget {
    Q_OBJECT
public:
    explicit DeploymentPanel(QWidget* parent = nullptr);
    ~DeploymentPanel() override;

    // The window's scenario: the base of every plan (model, levers, engine flags) and the
    // workload's defaults (users = its target, else its concurrency, else what fits now;
    // context; shared prefix). A field follows the scenario until the user edits it; a change
    // of the scenario's own value moves it again.
    void setView(const LedgerView& view);

    // The workload and search controls (what the fields show).
    void setUsers(std::int64_t users);
    void setContext(std::int64_t tokens);
    void setPrefixTokens(std::int64_t tokens); // 0 = no shared prefix
    void setMaxGpus(int n);
    void setGpusPerNode(int n);
    void setRank(core::PlanRank rank);
    // The speed floor (decode tokens/s per user): slower plans are flagged; 0 = none.
    void setMinTokensPerSecondPerUser(double floor);
    void setGpuKinds(const QStringList& ids); // empty = every catalog GPU
    // The plan table's columns the user hid (PlanTableModel::Column; the GPU column never hides)
    QList<int> hiddenColumns() const;
    void setHiddenColumns(const QList<int>& columns);
    // The columns hidden because the table is too narrow to show them whole, least needed
    // first (kFitOrder); the columns menu shows any of them back on request.
    QList<int> fittedOutColumns() const { return m_fitHidden; }
    static const QList<int>& fitOrder();
    QMenu* columnsMenu() const { return m_columnsMenu; }
    QStringList gpuKinds() const;

    // The request a plan started now would answer.
    core::PlanRequest planRequest() const;
    // Starts planning on the worker thread; returns its generation.
    quint64 startPlan();
    // Plans now on this thread unless the shown result already answers planRequest().
    void planNow();
    void cancelPlan();
    bool isPlanning() const { return m_planning; }
    quint64 generation() const { return m_generation; }
    int discardedResults() const { return m_discarded; }
    // The result shown and the request it answers (null before the first plan).
    std::shared_ptr<const core::PlanResult> result() const { return m_outcome.result; }
    const core::PlanRequest& resultRequest() const { return m_outcome.request; }
    bool resultIsCurrent() const; // the shown result answers planRequest()

    PlanTableModel* model() const { return m_model; }
    QSortFilterProxyModel* proxy() const { return m_proxy; }
    QTableView* table() const { return m_table; }
    GpusNeededChart* chart() const { return m_chart; }
    QString statusText() const;
    QString commandText() const;

    // Selects the row of a GPU kind (by id); false when it is not in the table.
    bool selectGpu(const QString& gpuId);
    // Emits applyRequested with the selected row's best deployment (the best plan when no row
    // is selected); false when that kind does not fit.
    bool applySelected();

signals:
    void applyRequested(const kvl::core::Scenario& s);
    void planFinished();      // a result (or a cancellation) is shown
    void tableStateChanged(); // the user showed or hid a column

private:
    // buildUi's parts, called in this order (the order widgets are made and laid out is the
    // keyboard focus order).
    void buildUi();
    void createWorkloadFields();
    void createSearchFields();
    QGridLayout* buildInputGrid();
    void buildTable();
    void buildColumnsMenu();
    QStackedWidget* buildViews();
    QHBoxLayout* buildCommandRow();
    void buildCommandView();
    void connectControls();
    void onFieldEdited();
    void schedulePlan();
    void onFinished(PlanOutcome outcome); // the latest plan's answer (whenLatestFinishes)
    void showOutcome(PlanOutcome outcome);
    void updateCommand();
    void fitCommandHeight(); // the command box as tall as its lines (bounded)
    void updateGpuMenu();
    void syncColumnActions();
    void applyColumnVisibility();
    void fitColumns();
    int columnNeeds(int column) const;
    void updateViewMode();
    bool eventFilter(QObject* watched, QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

public:
    // Whether the table and the chart are tabs (too narrow to sit side by side).
    bool tabbed() const;
    QTabWidget* viewTabs() const { return m_viewTabs; }

private:
    const core::GpuPlan* selectedPlan() const;
    std::string planKey(const core::PlanRequest& r) const;

    core::Scenario m_base;
    bool m_haveBase = false;
    core::UnitSystem m_units = core::UnitSystem::Binary;
    // The scenario's values the fields last followed.
    std::int64_t m_followedUsers = -1, m_followedContext = -1, m_followedPrefix = -1;
    QStringList m_gpuKinds; // empty = all

    PlanOutcome m_outcome;
    std::string m_outcomeKey;
    std::string m_pendingKey;
    quint64 m_generation = 0;
    bool m_planning = false;
    int m_discarded = 0;
    std::shared_ptr<std::atomic<bool>> m_cancel;

    QSpinBox* m_users = nullptr;
    TokenSpinBox* m_context = nullptr;
    TokenSpinBox* m_prefix = nullptr;
    QSpinBox* m_maxGpus = nullptr;
    QSpinBox* m_perNode = nullptr;
    QComboBox* m_rank = nullptr;
    QDoubleSpinBox* m_minSpeed = nullptr;
    QPushButton* m_gpuButton = nullptr;
    QPushButton* m_planButton = nullptr;
    QPushButton* m_cancelButton = nullptr;
    QPushButton* m_applyButton = nullptr;
    QPushButton* m_copyButton = nullptr;
    QLabel* m_status = nullptr;
    QLabel* m_commandTitle = nullptr;
    QTableView* m_table = nullptr;
    PlanTableModel* m_model = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    GpusNeededChart* m_chart = nullptr;
    QPlainTextEdit* m_command = nullptr;
    QString m_commandText; // what Copy Command copies: the command and its notes
    QMenu* m_columnsMenu = nullptr;
    QSplitter* m_split = nullptr;
    QTabWidget* m_viewTabs = nullptr;
    QStackedWidget* m_views = nullptr; // the splitter or the tabs
    QList<int> m_userHidden;           // unchecked in the columns menu (remembered by the window)
    QList<int> m_userShown; // checked in the menu: shown even when the table is too narrow
    QList<int> m_fitHidden; // hidden by fitColumns
    bool m_fitting = false;
    QTimer* m_debounce = nullptr;
};

} // namespace kvl::widgets
