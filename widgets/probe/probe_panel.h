#pragma once
// The probe panel: which backend (CPU, or the CUDA device and why it is unavailable), what to
// measure (formats, batch, contexts, block size, prefix; defaults follow the scenario until
// edited), Run with progress and Cancel, the results table and the quality and speed charts.
// Results from another machine's `kvprobe bench|run --json` load into the same views.
// Errors (no GPU, out of memory, cancelled, a bad or foreign file) become a message here; the
// results shown before stay.

#include "widgets/probe/probe_worker.h"
#include "widgets/state/ledger_view_state.h"

#include <QElapsedTimer>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QGroupBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QSplitter;
class QTableView;
class QTimer;

namespace kvl::widgets {

class ProbeResultsModel;
class QualityChart;
class SpeedChart;

// Measures the longest gap between ticks of a 5 ms timer: the event loop's worst stall (for
// bench_probe_stall and the tests; the window does not show it).
class StallMonitor : public QObject {
    Q_OBJECT
public:
    explicit StallMonitor(QObject* parent = nullptr);
    void start();
    void stop();
    bool isRunning() const;
    double maxGapMs() const { return m_maxGapMs; } // longest tick-to-tick gap seen
    double maxStallMs() const { return std::max(0.0, m_maxGapMs - kIntervalMs); }
    static constexpr int kIntervalMs = 5;

private:
    QTimer* m_timer = nullptr;
    QElapsedTimer m_clock;
    qint64 m_lastNs = 0;
    double m_maxGapMs = 0;
};

class ProbePanel : public QWidget {
    Q_OBJECT
public:
    explicit ProbePanel(QWidget* parent = nullptr);
    ~ProbePanel() override;

    // The scenario the defaults follow and the charts scale to, and the units.
    void setView(const LedgerView& view);
    // Puts every control back to the scenario's defaults.
    void resetToScenario();
    // The host memory a CPU run's default context must fit in (0: half of what is free now);
    // tests set it to check the bound without a machine of that size.
    void setHostBudgetBytes(std::int64_t bytes) { m_hostBudgetBytes = bytes; }

    // What Run would measure, from the controls; an error message instead when they are bad.
    std::variant<ProbeRequest, QString> request() const;
    bool run();    // false (with a message) when the controls are bad or a run is going
    void cancel(); // the run ends with a "cancelled" message within about a second
    bool isRunning() const;

    // False (with a message here, and the bare reason in `error`) on a bad file.
    bool loadResults(const QString& path, QString* error = nullptr);
    bool saveResults(const QString& path, QString* error = nullptr) const;
    // Shows a report (a finished run or a loaded file); `origin` names where it came from.
    void showReport(const probe::ProbeReport& report, const QString& origin);

    const probe::ProbeReport& report() const;
    bool hasResults() const;
    QString sourceText() const; // "NVIDIA H200 · 2026-11-29 (from bench.json)"
    QString message() const { return m_messageText; }
    bool messageIsError() const { return m_messageError; }
    double lastMaxStallMs() const { return m_lastStallMs; }
    double lastCancelLatencyMs() const { return m_lastCancelLatencyMs; }

    ProbeResultsModel* model() const { return m_model; }
    QTableView* resultsView() const { return m_view; }
    QualityChart* qualityChart() const { return m_quality; }
    SpeedChart* speedChart() const { return m_speed; }
    ProbeWorker* worker() const { return m_worker; }

signals:
    void reportChanged(const kvl::probe::ProbeReport& report); // the shown results changed
    void runStarted();
    void runFinished(bool ok); // after the views (or the message) are updated
    void messageChanged(const QString& message, bool error);
    void openResultsRequested(); // the Open Results... / Save Results... buttons
    void saveResultsRequested();

private:
    // buildUi's parts, each making its widgets in the order they take keyboard focus.
    void buildUi();
    QScrollArea* buildControls();
    QGroupBox* buildBackendBox();
    QGroupBox* buildMeasureBox();
    QListWidget* buildFormatList();
    QHBoxLayout* buildRepeatsRow();
    QGroupBox* buildRunBox();
    QHBoxLayout* buildFileButtons();
    QWidget* buildResults();
    QLabel* buildQualityGuide();
    void setMessage(const QString& text, bool error);
    void setRunning(bool running);
    void onFinished(const probe::ProbeReport& report);
    void updateBackendInfo();
    void applyDefaults(bool force);

    ProbeWorker* m_worker = nullptr;
    StallMonitor* m_stall = nullptr;
    ProbeResultsModel* m_model = nullptr;

    QComboBox* m_backend = nullptr;
    QLabel* m_backendInfo = nullptr;
    QLabel* m_modelLabel = nullptr;
    QListWidget* m_formats = nullptr;
    QSpinBox* m_batch = nullptr;
    QLineEdit* m_contexts = nullptr;
    QSpinBox* m_block = nullptr;
    QSpinBox* m_prefix = nullptr;
    QSpinBox* m_repeats = nullptr;
    QSpinBox* m_threads = nullptr;
    QPushButton* m_defaultsButton = nullptr;
    QPushButton* m_runButton = nullptr;
    QPushButton* m_cancelButton = nullptr;
    QPushButton* m_openButton = nullptr;
    QPushButton* m_saveButton = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_stage = nullptr;
    QLabel* m_qualityGuide = nullptr; // what the error columns mean for serving
    QLabel* m_message = nullptr;
    QLabel* m_source = nullptr;
    QLabel* m_caveat = nullptr; // the cache-residency caveat, shown when a row has it
    QTableView* m_view = nullptr;
    QualityChart* m_quality = nullptr;
    SpeedChart* m_speed = nullptr;
    QSplitter* m_splitter = nullptr;

    std::shared_ptr<const LedgerSnapshot> m_snapshot;
    // Controls the user edited stop following the scenario.
    bool m_editedFormats = false, m_editedBatch = false, m_editedContexts = false,
         m_editedBlock = false, m_editedPrefix = false;
    QString m_messageText;
    bool m_messageError = false;
    QString m_origin;
    QElapsedTimer m_runClock;
    QElapsedTimer m_cancelClock;
    double m_lastStallMs = 0;
    double m_lastCancelLatencyMs = -1;
    core::ModelSpec m_runModel;
    std::int64_t m_hostBudgetBytes = 0;
    QString m_contextKey;             // what the default context was worked out from
    std::int64_t m_contextForKey = 0; // and that context
};

// The context the probe defaults to for a scenario at `wanted` tokens: the scenario's, within
// the probe's bound (16M), and on the CPU, where the pool, the K/V data and the FP64 reference
// are host memory, halved until the memory guard's estimate of an FP16 run of `request`'s
// model, batch and block size fits in `hostBudgetBytes` (0: half of the host's free memory, so
// the window keeps room).
std::int64_t probeContextFor(std::int64_t wanted, const ProbeRequest& request,
                             std::int64_t hostBudgetBytes = 0);

// "512, 4K, 16384" -> tokens; an error names the bad entry.
std::variant<std::vector<std::int64_t>, QString> parseContextList(const QString& text);

} // namespace kvl::widgets
