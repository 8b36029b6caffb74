#pragma once
// The Traffic tab: what users feel under a request rate, simulated (core/sim, vLLM v1's
// scheduler). The workload in users' words (rate, prompt and output lengths in the CLI's
// grammar, a shared prefix, the SLO), then, per replica:
//   - p50/p99 TTFT and TPOT vs arrival rate for every lever-ladder step, the SLO and the
//     scenario's sustainable rate marked;
//   - a table of the sustainable rate per ladder step;
//   - KV occupancy per KV cache group and the queue over time at the chosen rate.
//
// The simulations take about a second, so they run on a worker (QtConcurrent) with a progress
// bar and Cancel. A scenario or input change cancels the running job and starts a new one after
// a short pause (debounced); a generation counter drops any result of an older request. The
// panel simulates only while it is visible: a change while another tab is in front marks it
// stale and it runs when shown. computeNow() runs the same job on the calling thread (headless
// export, the report, screenshots).

#include "widgets/state/ledger_view_state.h"
#include "widgets/traffic/traffic_sim.h"

#include <QThreadPool>
#include <QWidget>

#include <atomic>
#include <memory>

class QDoubleSpinBox;
class QGridLayout;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QSplitter;
class QTableWidget;
class QTimer;

namespace kvl::widgets {

class TokenSpinBox;
struct TrafficField;
class TrafficLatencyChart;
class TrafficTimelineChart;

// What the charts say when the view has no scenario to simulate (none yet, or not valid).
QString trafficNotSimulatedText(const LedgerView& view);

class TrafficPanel : public QWidget {
    Q_OBJECT
public:
    explicit TrafficPanel(QWidget* parent = nullptr);
    ~TrafficPanel() override;

    // The window's snapshot (ScenarioDocument::viewChanged): the scenario every ladder step
    // derives from; the prompt (its context less the output) and the shared prefix follow it
    // until the user edits them.
    void setView(const LedgerView& view);
    void setSpeedAssumptions(const core::SpeedAssumptions& a);

    // The inputs as the fields show them; setInputs fills the fields (and re-runs).
    TrafficInputs inputs() const;
    void setInputs(const TrafficInputs& in);
    QString inputError() const; // why the fields do not make a workload; empty when they do

    // Starts the job on the worker now (no debounce); returns its generation.
    quint64 start();
    // Runs the job on this thread unless the shown result is current.
    void computeNow();
    void cancel();
    bool isRunning() const { return m_running; }
    bool isStale() const { return m_stale; }
    quint64 generation() const { return m_generation; }
    int discardedResults() const { return m_discarded; }
    // The result shown (null before the first) and whether it answers the current inputs.
    std::shared_ptr<const TrafficResult> result() const { return m_result; }
    bool resultIsCurrent() const { return m_result && !m_stale && !m_running; }

    TrafficLatencyChart* ttftChart() const { return m_ttft; }
    TrafficLatencyChart* tpotChart() const { return m_tpot; }
    TrafficTimelineChart* timelineChart() const { return m_timeline; }
    QTableWidget* rateTable() const { return m_table; }
    QProgressBar* progressBar() const { return m_progress; }
    QPushButton* cancelButton() const { return m_cancelButton; }
    QString statusText() const;
    // Debounce before a change starts a job, in ms (tests shorten it).
    void setDebounceMs(int ms);
    // How much lower than the GUI thread the worker runs (a nice increment, Linux; 0 by
    // default; raised only, as an unprivileged thread cannot take it back, so set it before the
    // first job). bench_traffic_stall compares 0 and +10.
    void setWorkerNice(int nice) { m_workerNice = nice; }
    int workerNice() const { return m_workerNice; }

signals:
    void resultShown();  // a new result is on the charts
    void jobCancelled(); // the running job was cancelled by the user (Cancel)

protected:
    void showEvent(QShowEvent* event) override;

private:
    // buildUi's parts, in the order buildUi calls them.
    void buildUi();
    void createInputs();
    // An input field that re-simulates when edited (after the debounce).
    template <class Spin> Spin* input(Spin* spin, const char* name, const QString& tip);
    QDoubleSpinBox* inputSpin(const char* name, const TrafficField& field, double value,
                              const QString& suffix, const QString& tip);
    QSpinBox* countSpin(const char* name, int lo, int hi, int value, const QString& tip);
    QLineEdit* lengthEdit(const char* name, const QString& text);
    QGridLayout* buildInputGrid();
    QHBoxLayout* buildRunRow();
    QTableWidget* buildRateTable();
    QSplitter* buildResults();
    void onInputsEdited();
    void schedule();
    void onFinished(TrafficResult r); // the latest run's answer (whenLatestFinishes)
    void showResult(TrafficResult result);
    void setCharts(const QString& status);
    void fillTable();

    core::Scenario m_scenario;
    std::string m_scenarioKey; // its JSON: a view of the same scenario starts nothing
    bool m_haveScenario = false;
    core::SpeedAssumptions m_speed;
    std::int64_t m_followedPrefix = -1;
    QString m_followedPrompt = QStringLiteral("1024"); // the prompt text the scenario last set

    std::shared_ptr<const TrafficResult> m_result;
    bool m_stale = true;    // the shown result does not answer the current scenario and inputs
    bool m_running = false; // a worker job for the current generation is in flight
    quint64 m_generation = 0;
    int m_discarded = 0;
    struct Job {
        std::atomic<bool> cancel{false};
        std::atomic<int> permille{0};
    };
    std::shared_ptr<Job> m_job;

    QDoubleSpinBox* m_rate = nullptr;
    QLineEdit* m_prompt = nullptr;
    QLineEdit* m_output = nullptr;
    QDoubleSpinBox* m_prefixShare = nullptr;
    TokenSpinBox* m_prefixTokens = nullptr;
    QDoubleSpinBox* m_sloTtft = nullptr;
    QDoubleSpinBox* m_sloTpot = nullptr;
    QDoubleSpinBox* m_attainment = nullptr;
    QSpinBox* m_requests = nullptr;
    QSpinBox* m_seed = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancelButton = nullptr;
    QLabel* m_status = nullptr;
    QLabel* m_assumptions = nullptr;
    QTableWidget* m_table = nullptr;
    TrafficLatencyChart* m_ttft = nullptr;
    TrafficLatencyChart* m_tpot = nullptr;
    TrafficTimelineChart* m_timeline = nullptr;
    QTimer* m_debounce = nullptr;
    QTimer* m_poll = nullptr;
    int m_workerNice = 0;
    // The workers' own threads (their priority is lowered, which no other pool's task should
    // inherit); declared last, so it waits for a cancelled job before the rest goes.
    QThreadPool m_pool;
};

} // namespace kvl::widgets
