#pragma once
// Runs the probe off the GUI thread: a ProbeRequest (formats x contexts on one backend) goes
// in, queued progress signals and one ProbeReport value come out. Cancel sets the atomic flag
// runProbe polls between chunks of work. The probe gets (cores - 1) CPU threads so the window's
// event loop keeps a core. (Not a lower nice value: on a shared machine that made the probe
// 5-7x slower behind other processes, and cancel waits for its longest uncancellable chunk.)

#include "gpu_probe/results_io.h"

#include <QMetaType>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

class QThread;
class QTimer;

namespace kvl::widgets {

struct ProbeRequest {
    std::string backend = "cpu";
    core::ModelSpec model;
    std::vector<std::string> formatIds; // allProbeFormats() ids
    int batch = 2;
    std::vector<std::int64_t> contexts{512};
    int blockSize = 16;
    std::int64_t prefixTokens = 0;
    int repeats = 3;
    int threads = 0; // 0 = defaultProbeThreads()
    std::uint64_t seed = 1;
};

// (cores - 1), at least 1: the GUI thread keeps a core while the probe runs.
int defaultProbeThreads();

class ProbeWorker : public QObject {
    Q_OBJECT
public:
    explicit ProbeWorker(QObject* parent = nullptr);
    ~ProbeWorker() override; // cancels and joins a running probe

    // Starts a run; false (and nothing happens) while one is running.
    bool start(const ProbeRequest& request);
    // Asks the run to stop; it ends with finished(report with error "cancelled") as soon as
    // runProbe sees the flag, or after kAbandonMs at the latest (see abandon()).
    void cancel();
    bool isRunning() const { return m_thread != nullptr; }
    // Threads of abandoned runs still winding down (they stop at their next cancel poll).
    int windingDown() const { return static_cast<int>(m_orphans.size()); }
    static constexpr int kAbandonMs = 750;

    // The run itself, on the calling thread (the worker thread runs exactly this).
    static probe::ProbeReport run(const ProbeRequest& request,
                                  const std::function<void(double, const std::string&)>& progress,
                                  const std::atomic<bool>* cancel);

signals:
    void progressChanged(int percent, const QString& stage);
    // Always emitted once per start(), on the GUI thread, after the worker thread ended.
    void finished(const kvl::probe::ProbeReport& report);

private:
    void abandon();

    QThread* m_thread = nullptr;
    std::vector<QThread*> m_orphans;
    std::shared_ptr<std::atomic<bool>> m_cancel;
    std::shared_ptr<std::atomic<bool>> m_live; // false once abandoned: no more progress
    QTimer* m_abandonTimer = nullptr;
    std::string m_backend;
};

} // namespace kvl::widgets

Q_DECLARE_METATYPE(kvl::probe::ProbeReport)
