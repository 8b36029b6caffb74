#include "widgets/probe/probe_worker.h"

#include "gpu_probe/io/probe_json.h"
#include "gpu_probe/ops.h"

#include <QTimer>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace kvl::widgets {

// One run's state. The thread owns a reference, so it outlives the worker if it must. `owner`
// is read and cleared under `mutex`: the thread posts to the worker only while it is set, and
// the destructor clears it, so nothing is ever posted to a destroyed worker.
struct ProbeWorker::RunState {
    std::uint64_t id = 0;
    std::string backend;
    std::atomic<bool> cancel{false};
    std::mutex mutex;
    std::condition_variable endedSignal;
    ProbeWorker* owner = nullptr;
    bool ended = false;
    probe::ProbeReport report; // written by the thread before `ended`
    // The latest progress (under `mutex`): the thread writes it, the GUI thread delivers it.
    int percent = -1;
    std::string stage;
    std::uint64_t progressSeq = 0, deliveredSeq = 0;
    bool flushPosted = false; // a delivery is queued or its 30 ms pause is running
};

int defaultProbeThreads() {
    return std::max(1, probe::defaultThreads() - 1);
}

ProbeWorker::ProbeWorker(QObject* parent, RunFn run)
    : QObject(parent), m_run(run ? std::move(run) : RunFn(&ProbeWorker::run)),
      m_abandonTimer(new QTimer(this)) {
    qRegisterMetaType<probe::ProbeReport>();
    m_abandonTimer->setSingleShot(true);
    m_abandonTimer->setInterval(kAbandonMs);
    connect(m_abandonTimer, &QTimer::timeout, this, &ProbeWorker::abandon);
}

ProbeWorker::~ProbeWorker() {
    std::vector<std::shared_ptr<RunState>> runs = m_orphans;
    if (m_current)
        runs.push_back(m_current);
    for (const auto& state : runs) {
        state->cancel = true;
        const std::lock_guard<std::mutex> lock(state->mutex);
        state->owner = nullptr;
    }
    // A moment for the runs to end and free their memory (a window closing mid-run), never more.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kCloseWaitMs);
    for (const auto& state : runs) {
        std::unique_lock<std::mutex> lock(state->mutex);
        state->endedSignal.wait_until(lock, deadline, [&] { return state->ended; });
    }
}

// The probe still sits in a step it cannot interrupt: the window does not wait for it. The run
// is reported cancelled now; its thread stops at its next poll, its result is discarded, and
// until then it counts as the one orphan (start() refuses a new run meanwhile).
void ProbeWorker::abandon() {
    if (!m_current)
        return;
    probe::ProbeReport report;
    report.backend = m_current->backend;
    report.fail(probe::cancelledError());
    m_orphans.push_back(std::move(m_current));
    m_current.reset();
    emit finished(report);
}

Status ProbeWorker::start(const ProbeRequest& request) {
    if (m_current)
        return Error{ErrorCode::BadInput, "a probe run is already going"};
    if (!m_orphans.empty())
        return Error{ErrorCode::OutOfMemory,
                     "the cancelled run is still stopping and holds its memory: try again in a "
                     "moment"};
    auto state = std::make_shared<RunState>();
    state->id = m_nextId++;
    state->backend = request.backend;
    state->owner = this;
    // Progress crosses to the GUI thread coalesced: the thread only records the latest percent
    // and stage, and posts a delivery when none is queued; the GUI thread then delivers at most
    // every 30 ms, so a fast run cannot flood the event loop, and the latest stage always
    // arrives. (Dropping the reports that came within 30 ms of the last one, as before, left
    // "planning" showing through the whole data generation that followed it, since "allocating
    // pages", "poisoning the pool" and "generating K/V" come within a few milliseconds.)
    probe::ProgressFn progress = [state](double percent, const std::string& stage) {
        const int rounded = std::clamp(int(percent), 0, 100);
        const std::lock_guard<std::mutex> lock(state->mutex);
        if (rounded == state->percent && stage == state->stage)
            return;
        state->percent = rounded;
        state->stage = stage;
        ++state->progressSeq;
        ProbeWorker* owner = state->owner;
        if (!owner || state->flushPosted)
            return;
        state->flushPosted = true;
        QMetaObject::invokeMethod(
            owner, [owner, id = state->id] { owner->deliverProgress(id); }, Qt::QueuedConnection);
    };
    std::thread thread([state, run = m_run, request, progress] {
        probe::ProbeReport report;
        try {
            report = run(request, progress, &state->cancel);
        } catch (const std::exception& e) {
            report.fail(Error{ErrorCode::Internal, std::string("the probe failed: ") + e.what()});
        }
        const std::lock_guard<std::mutex> lock(state->mutex);
        state->report = std::move(report);
        state->ended = true;
        state->endedSignal.notify_all();
        if (ProbeWorker* owner = state->owner)
            QMetaObject::invokeMethod(
                owner, [owner, id = state->id] { owner->deliverFinished(id); },
                Qt::QueuedConnection);
    });
    thread.detach(); // RunState keeps everything it needs alive
    m_current = std::move(state);
    emit progressChanged(0, tr("starting"));
    return {};
}

void ProbeWorker::deliverProgress(std::uint64_t id) {
    // Progress of an abandoned run, or one that already finished, never arrives.
    if (!m_current || m_current->id != id)
        return;
    // a pause before the next delivery; whatever arrives meanwhile goes out when it ends
    if (emitLatestProgress())
        QTimer::singleShot(kProgressIntervalMs, this, [this, id] { deliverProgress(id); });
}

bool ProbeWorker::emitLatestProgress() {
    int percent;
    std::string stage;
    {
        const std::lock_guard<std::mutex> lock(m_current->mutex);
        if (m_current->progressSeq == m_current->deliveredSeq) {
            m_current->flushPosted = false; // nothing new: the run's next report posts again
            return false;
        }
        m_current->deliveredSeq = m_current->progressSeq;
        percent = m_current->percent;
        stage = m_current->stage;
    }
    emit progressChanged(percent, QString::fromStdString(stage));
    return true;
}

void ProbeWorker::deliverFinished(std::uint64_t id) {
    if (!m_current || m_current->id != id) { // an orphan ended: its memory is free again
        m_orphans.erase(std::remove_if(m_orphans.begin(), m_orphans.end(),
                                       [&](const auto& state) { return state->id == id; }),
                        m_orphans.end());
        return;
    }
    m_abandonTimer->stop();
    emitLatestProgress(); // the run's last stage ("done") before its end
    probe::ProbeReport report;
    {
        const std::lock_guard<std::mutex> lock(m_current->mutex);
        report = std::move(m_current->report);
    }
    m_current.reset();
    emit finished(report);
}

void ProbeWorker::cancel() {
    if (!m_current)
        return;
    m_current->cancel = true;
    if (!m_abandonTimer->isActive())
        m_abandonTimer->start();
}

probe::ProbeReport ProbeWorker::run(const ProbeRequest& request, const probe::ProgressFn& progress,
                                    const std::atomic<bool>* cancel) {
    probe::SweepPlan plan = request;
    if (plan.threads <= 0)
        plan.threads = defaultProbeThreads();
    probe::ProbeReport report = probe::runSweep(plan, progress, cancel);
    report.schemaVersion = probe::kSchemaVersion;
    report.date = probe::utcNow();
    report.host = probe::hostName();
    return report;
}

} // namespace kvl::widgets
