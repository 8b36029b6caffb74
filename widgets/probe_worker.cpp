#include "probe_worker.h"

#include "gpu_probe/backend.h"
#include "gpu_probe/ops.h"
#include "gpu_probe/probe_json.h"

#include <QElapsedTimer>
#include <QThread>
#include <QTimer>

#include <algorithm>

namespace kvl::widgets {

namespace {} // namespace

int defaultProbeThreads() {
    return std::max(1, probe::defaultThreads() - 1);
}

ProbeWorker::ProbeWorker(QObject* parent) : QObject(parent), m_abandonTimer(new QTimer(this)) {
    qRegisterMetaType<probe::ProbeReport>();
    m_abandonTimer->setSingleShot(true);
    m_abandonTimer->setInterval(kAbandonMs);
    connect(m_abandonTimer, &QTimer::timeout, this, &ProbeWorker::abandon);
}

ProbeWorker::~ProbeWorker() {
    if (m_cancel)
        m_cancel->store(true);
    if (m_live)
        m_live->store(false);
    for (QThread* t : m_orphans) {
        t->wait();
        delete t;
    }
    if (m_thread) {
        m_thread->wait();
        delete m_thread;
    }
}

// The probe still sits in a chunk it cannot interrupt (generating the synthetic K/V polls no
// flag): the window does not wait for it. The run is reported cancelled now; the thread stops
// at its next poll and is deleted then, its result discarded.
void ProbeWorker::abandon() {
    if (!m_thread)
        return;
    m_live->store(false);
    m_orphans.push_back(m_thread);
    m_thread = nullptr;
    probe::ProbeReport rep;
    rep.backend = m_backend;
    rep.error = "cancelled";
    emit finished(rep);
}

bool ProbeWorker::start(const ProbeRequest& request) {
    if (m_thread)
        return false;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    m_live = std::make_shared<std::atomic<bool>>(true);
    m_backend = request.backend;
    auto cancel = m_cancel;
    auto live = m_live;
    auto result = std::make_shared<probe::ProbeReport>();
    // Progress crosses to the GUI thread queued; at most one signal per percent or stage and
    // never more often than every 30 ms, so a fast run cannot flood the event loop.
    auto emitter = [this, live, last = -1, lastStage = std::string(),
                    timer = QElapsedTimer()](double pct, const std::string& stage) mutable {
        if (!live->load())
            return; // abandoned: the window has moved on
        const int p = std::clamp(int(pct), 0, 100);
        if (p == last && stage == lastStage)
            return;
        if (timer.isValid() && timer.elapsed() < 30 && p != 100)
            return;
        last = p;
        lastStage = stage;
        timer.start();
        emit progressChanged(p, QString::fromStdString(stage));
    };
    m_thread = QThread::create([request, cancel, result, emitter]() mutable {
        *result = run(request, emitter, cancel.get());
    });
    m_thread->setObjectName(QStringLiteral("kvl-probe"));
    QThread* thread = m_thread;
    connect(m_thread, &QThread::finished, this, [this, thread, result] {
        thread->wait();
        if (thread != m_thread) { // abandoned after a cancel: already reported
            m_orphans.erase(std::remove(m_orphans.begin(), m_orphans.end(), thread),
                            m_orphans.end());
            delete thread;
            return;
        }
        m_abandonTimer->stop();
        delete m_thread;
        m_thread = nullptr;
        emit finished(*result);
    });
    emit progressChanged(0, tr("starting"));
    m_thread->start();
    return true;
}

void ProbeWorker::cancel() {
    if (!m_thread)
        return;
    m_cancel->store(true);
    if (!m_abandonTimer->isActive())
        m_abandonTimer->start();
}

probe::ProbeReport ProbeWorker::run(const ProbeRequest& req,
                                    const std::function<void(double, const std::string&)>& progress,
                                    const std::atomic<bool>* cancel) {
    probe::ProbeReport rep;
    rep.command = "bench";
    rep.schemaVersion = probe::kSchemaVersion;
    rep.backend = req.backend;
    rep.date = probe::utcNow();
    rep.host = probe::hostName();
    {
        auto be = probe::makeBackend(req.backend);
        if (auto* e = std::get_if<std::string>(&be)) {
            rep.error = *e;
            return rep;
        }
        rep.device = std::get<std::unique_ptr<probe::Backend>>(be)->deviceName();
    }
    std::vector<probe::ProbeFormat> formats;
    for (const auto& id : req.formatIds) {
        auto f = probe::parseProbeFormat(id);
        if (auto* e = std::get_if<std::string>(&f)) {
            rep.error = *e;
            return rep;
        }
        formats.push_back(std::get<probe::ProbeFormat>(f));
    }
    if (formats.empty() || req.contexts.empty()) {
        rep.error = "nothing to measure: choose at least one format and one context";
        return rep;
    }
    const std::size_t total = formats.size() * req.contexts.size();
    std::size_t done = 0;
    std::vector<double> copies;
    for (const auto& f : formats) {
        for (std::int64_t ctx : req.contexts) {
            if (cancel && cancel->load()) {
                rep.error = "cancelled";
                return rep;
            }
            probe::ProbePlan p;
            p.backend = req.backend;
            p.model = req.model;
            p.format = f;
            p.blockSize = req.blockSize;
            std::string note;
            // KIVI keeps whole key groups of G tokens in a page (the bench uses 32 too).
            const int g = f.format.groupSize;
            if (f.format.granularity == core::Granularity::KPerChannelVPerToken && g > 0 &&
                p.blockSize % g != 0) {
                p.blockSize = (p.blockSize + g - 1) / g * g;
                note = "block size raised from " + std::to_string(req.blockSize) + " to " +
                       std::to_string(p.blockSize) + ": KIVI keeps whole key groups in a page";
            }
            p.batch = req.batch;
            p.context = ctx;
            p.prefixTokens = std::min(req.prefixTokens, ctx);
            p.repeats = req.repeats;
            p.warmup = 1;
            p.threads = req.threads > 0 ? req.threads : defaultProbeThreads();
            p.qualityRequests = 1;
            p.seed = req.seed;
            const double base = 100.0 * double(done) / double(total);
            const std::string tag = f.label + " @ " + std::to_string(ctx) + ": ";
            probe::ProbeResult r = probe::runProbe(
                p,
                [&](double pct, const std::string& stage) {
                    if (progress)
                        progress(base + pct / double(total), tag + stage);
                },
                cancel);
            ++done;
            if (r.cancelled) {
                rep.error = "cancelled";
                return rep;
            }
            if (!note.empty())
                r.notes.push_back(note);
            if (r.ok && r.copyGBs > 0)
                copies.push_back(r.copyGBs);
            rep.rows.push_back(std::move(r));
        }
    }
    if (!copies.empty()) {
        std::sort(copies.begin(), copies.end());
        rep.copyGBs = copies[copies.size() / 2];
    }
    if (progress)
        progress(100, "done");
    return rep;
}

} // namespace kvl::widgets
