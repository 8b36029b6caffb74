#pragma once
// Runs the probe off the GUI thread: a ProbeRequest (probe::SweepPlan: formats x contexts x
// batch sizes on one backend) goes in, queued progress signals and one ProbeReport value come
// out. Cancel sets the atomic flag every long step of the probe polls. The probe gets
// (cores - 1) CPU threads so the window's event loop keeps a core. (Not a lower nice value: on
// a shared machine that made the probe 5-7x slower behind other processes.)
//
// Guarantees: no progressChanged after the run's finished; finished exactly once per start(),
// within kAbandonMs of cancel(); at most one abandoned run ("orphan") winding down, and no new
// run while it still holds its memory; the destructor never blocks longer than kCloseWaitMs.

#include "gpu_probe/run/probe.h"

#include <QMetaType>
#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

class QTimer;

namespace kvl::widgets {

using ProbeRequest = probe::SweepPlan;

// (cores - 1), at least 1: the GUI thread keeps a core while the probe runs.
int defaultProbeThreads();

class ProbeWorker : public QObject {
    Q_OBJECT
public:
    // What a run's thread executes: ProbeWorker::run by default (tests pass a stand-in).
    using RunFn = std::function<probe::ProbeReport(const ProbeRequest&, const probe::ProgressFn&,
                                                   const std::atomic<bool>*)>;

    explicit ProbeWorker(QObject* parent = nullptr, RunFn run = {});
    // Cancels every run, waits at most kCloseWaitMs for them to end, and leaves a run still in an
    // uninterruptible step to end on its own (nothing of it reaches anything afterwards).
    ~ProbeWorker() override;

    // Starts a run. Refused (with a one-line message) while one runs, or while an abandoned run
    // still winds down and holds its memory.
    Status start(const ProbeRequest& request);
    // Asks the run to stop; it ends with finished(report with status Cancelled) as soon as the
    // probe sees the flag, or after kAbandonMs at the latest (see abandon()).
    void cancel();
    bool isRunning() const { return m_current != nullptr; }
    // Abandoned runs still winding down (they stop at their next cancel poll): 0 or 1.
    int windingDown() const { return static_cast<int>(m_orphans.size()); }
    static constexpr int kAbandonMs = 750;
    static constexpr int kCloseWaitMs = 500;
    static constexpr int kProgressIntervalMs = 30; // the shortest gap between two progress signals

    // The run itself, on the calling thread: probe::runSweep with the GUI's thread count, stamped
    // with the schema, date and host.
    static probe::ProbeReport run(const ProbeRequest& request, const probe::ProgressFn& progress,
                                  const std::atomic<bool>* cancel);

signals:
    void progressChanged(int percent, const QString& stage);
    // Always emitted once per successful start(), on the GUI thread.
    void finished(const kvl::probe::ProbeReport& report);

private:
    struct RunState; // shared by this object and one run's thread
    void deliverProgress(std::uint64_t id);
    // The current run's progress if new since the last delivery (whether it was sent); when
    // nothing is new, the run's next report posts a delivery again.
    bool emitLatestProgress();
    void deliverFinished(std::uint64_t id);
    void abandon();

    RunFn m_run;
    std::shared_ptr<RunState> m_current;
    std::vector<std::shared_ptr<RunState>> m_orphans;
    QTimer* m_abandonTimer = nullptr;
    std::uint64_t m_nextId = 1;
};

} // namespace kvl::widgets

Q_DECLARE_METATYPE(kvl::probe::ProbeReport)
