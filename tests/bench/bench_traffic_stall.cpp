// The window's frame budget while the Traffic tab recomputes (issue 30: the curves recompute
// off the GUI thread "while the window stays within its frame budget"). Drives the explorer
// offscreen with the Traffic tab in front and measures the GUI thread in four phases of the
// same length:
//   idle               nothing to do;
//   worker             the tab's worker recomputes back to back (a new job as each ends);
//   changes            the context moves every 100 ms (a user dragging the slider), each change
//                      recomputing the ledger and replotting; the tab's 200 ms debounce never
//                      fires, so no worker runs;
//   changes + worker   the same changes, each followed by TrafficPanel::start(), so a worker
//                      recomputes the new scenario throughout (and the previous job is
//                      cancelled).
// The worker phases run twice: the worker at the GUI thread's priority (the panel's default),
// then 10 lower (a nice increment, TrafficPanel::setWorkerNice); the jobs it finishes show what
// that costs the recompute. In each: how late a 16 ms timer fires (one frame
// at 60 Hz; its lateness is how long any event waits for the GUI thread: p50 / p95 / max in ms),
// and how long the GUI thread takes for one change (setScenario through the replots it queues). The
// ratios of the worker phases to those without show what the background recompute costs the window.
// Not a CTest test: it prints figures and ratios, the machine being shared.
//
// Usage: bench_traffic_stall [--seconds S]
#include "main_window.h"
#include "raster_fills.h"

#include "widgets/traffic/traffic_panel.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using kvl::app::MainWindow;

namespace {

double percentile(std::vector<double> v, double p) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

struct Phase {
    const char* name;
    std::vector<double> lateMs;   // the 16 ms timer: interval less 16 ms
    std::vector<double> changeMs; // one change's GUI time
    int jobsStarted = 0, jobsFinished = 0;
};

constexpr int kFrameMs = 16;

void print(const Phase& p) {
    std::printf("  %-18s timer late p50 %5.2f  p95 %6.2f  max %6.1f ms (%zu ticks)", p.name,
                percentile(p.lateMs, 0.5), percentile(p.lateMs, 0.95),
                p.lateMs.empty() ? 0.0 : *std::max_element(p.lateMs.begin(), p.lateMs.end()),
                p.lateMs.size());
    if (!p.changeMs.empty())
        std::printf("; a change p50 %5.1f  p95 %5.1f  max %5.1f ms", percentile(p.changeMs, 0.5),
                    percentile(p.changeMs, 0.95),
                    *std::max_element(p.changeMs.begin(), p.changeMs.end()));
    std::printf("; worker jobs started %d, finished %d\n", p.jobsStarted, p.jobsFinished);
}

double ratio(double a, double b) {
    return b > 0 ? a / b : 0;
}

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    kvl::app::keepRasterFillsSerial(); // as kvledger's main does
    QApplication app(argc, argv);
    int seconds = 3;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
            seconds = std::max(1, std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "usage: bench_traffic_stall [--seconds S]\n");
            return 2;
        }
    }
    MainWindow::Options o;
    o.useSettings = false;
    o.showDialogs = false;
    MainWindow w(o);
    w.resize(1600, 1000);
    w.show();
    auto* panel = w.trafficPanel();
    panel->setWorkerNice(0); // before the first job: a worker thread's nice only goes up
    w.tabs()->setCurrentWidget(panel);
    {
        // The first result, so that every phase starts from a current tab.
        QSignalSpy shown(panel, &kvl::widgets::TrafficPanel::resultShown);
        if (!shown.wait(120000)) {
            std::fprintf(stderr, "bench_traffic_stall: the Traffic tab showed no result\n");
            return 1;
        }
    }
    QElapsedTimer settle;
    settle.start();
    while (settle.elapsed() < 300)
        app.processEvents();

    auto run = [&](const char* name, bool worker, bool changes) {
        Phase p{name, {}, {}, 0, 0};
        // Back to back: a new job as each one's result is shown.
        QMetaObject::Connection again;
        if (worker) {
            again = QObject::connect(panel, &kvl::widgets::TrafficPanel::resultShown, &w, [&] {
                ++p.jobsFinished;
                panel->start();
                ++p.jobsStarted;
            });
            panel->start();
            ++p.jobsStarted;
        }
        QTimer frame;
        frame.setTimerType(Qt::PreciseTimer);
        frame.setInterval(kFrameMs);
        QElapsedTimer since;
        QObject::connect(&frame, &QTimer::timeout, &w, [&] {
            if (since.isValid())
                p.lateMs.push_back(std::max(0.0, since.nsecsElapsed() / 1e6 - kFrameMs));
            since.restart();
        });
        QTimer user;
        user.setInterval(100);
        bool up = true;
        QObject::connect(&user, &QTimer::timeout, &w, [&] {
            kvl::core::Scenario s = w.scenario();
            s.workload.context = up ? 8192 : 4096;
            up = !up;
            QElapsedTimer t;
            t.start();
            w.setScenario(s);
            app.processEvents(); // the replots the change queued
            p.changeMs.push_back(t.nsecsElapsed() / 1e6);
            if (worker) {
                panel->start();
                ++p.jobsStarted;
            }
        });
        frame.start();
        if (changes)
            user.start();
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < seconds * 1000)
            app.processEvents(QEventLoop::WaitForMoreEvents, 50);
        frame.stop();
        user.stop();
        QObject::disconnect(again);
        panel->cancel();
        // Let a cancelled worker stop before the next phase.
        QElapsedTimer drain;
        drain.start();
        while (drain.elapsed() < 500)
            app.processEvents(QEventLoop::WaitForMoreEvents, 50);
        return p;
    };

    std::printf("bench_traffic_stall: the GUI thread while the Traffic tab recomputes, %d s a "
                "phase, a %d ms timer\n",
                seconds, kFrameMs);
    const Phase idle = run("idle", false, false);
    print(idle);
    const Phase changes = run("changes", false, true);
    print(changes);
    // The worker at the GUI thread's priority, then lowered (a thread's nice value only goes
    // up, so this order).
    double worst = 0;
    for (const int nice : {0, 10}) {
        panel->setWorkerNice(nice);
        std::printf(" worker nice +%d:\n", nice);
        const Phase worker = run("worker", true, false);
        print(worker);
        const Phase both = run("changes + worker", true, true);
        print(both);
        std::printf("  timer late p95 with the worker %.2f ms (idle %.2f), %.2f ms with changes "
                    "(%.2f without); a change's p95 %.2fx without the worker, its max %.2fx\n",
                    percentile(worker.lateMs, 0.95), percentile(idle.lateMs, 0.95),
                    percentile(both.lateMs, 0.95), percentile(changes.lateMs, 0.95),
                    ratio(percentile(both.changeMs, 0.95), percentile(changes.changeMs, 0.95)),
                    ratio(*std::max_element(both.changeMs.begin(), both.changeMs.end()),
                          *std::max_element(changes.changeMs.begin(), changes.changeMs.end())));
        worst = std::max({worst, percentile(worker.lateMs, 0.95), percentile(both.lateMs, 0.95)});
    }
    std::printf("  %s\n", worst <= kFrameMs ? "p95 lateness with the worker within one frame"
                                            : "p95 lateness with the worker over one frame");
    return 0;
}
