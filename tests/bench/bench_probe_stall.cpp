// The window's responsiveness while the probe runs: drives the explorer offscreen, runs the
// CPU probe from the probe panel (FP16 + INT8, batch 4, 4K tokens, 3 repeats, the scenario's
// defaults) while a user moves the context every 100 ms, and reports the longest event-loop
// stall (a 5 ms timer's worst gap) and how long Cancel takes to stop a run. Exits 1 when the
// stall reaches 50 ms or a cancel takes 1 s.
// Usage: bench_probe_stall [--runs N] [--cancels N]
#include "main_window.h"
#include "raster_fills.h"

#include "widgets/probe/probe_panel.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

using kvl::app::MainWindow;

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    kvl::app::keepRasterFillsSerial(); // as kvledger's main does
    QApplication app(argc, argv);
    int runs = 3, cancels = 5;
    for (int i = 1; i + 1 < argc; ++i) {
        if (!std::strcmp(argv[i], "--runs"))
            runs = std::max(1, std::atoi(argv[++i]));
        else if (!std::strcmp(argv[i], "--cancels"))
            cancels = std::max(0, std::atoi(argv[++i]));
    }
    MainWindow::Options o;
    o.useSettings = false;
    o.showDialogs = false;
    MainWindow w(o);
    w.resize(1600, 1000);
    w.show();
    QElapsedTimer settle;
    settle.start();
    while (settle.elapsed() < 500)
        app.processEvents();
    auto* panel = w.probePanel();
    panel->resetToScenario();

    // A user moving the context slider while the probe runs: one recompute + replot per 100 ms.
    QTimer user;
    user.setInterval(100);
    bool up = true;
    QObject::connect(&user, &QTimer::timeout, &w, [&] {
        kvl::core::Scenario s = w.scenario();
        s.workload.context = up ? 8192 : 4096;
        up = !up;
        w.setScenario(s);
    });

    std::vector<double> stalls;
    for (int r = 0; r < runs; ++r) {
        QSignalSpy done(panel, &kvl::widgets::ProbePanel::runFinished);
        if (!panel->run()) {
            std::fprintf(stderr, "run failed to start: %s\n", qPrintable(panel->message()));
            return 1;
        }
        user.start();
        QElapsedTimer t;
        t.start();
        if (!done.wait(300000)) {
            std::fprintf(stderr, "run did not finish\n");
            return 1;
        }
        user.stop();
        stalls.push_back(panel->lastMaxStallMs());
        std::printf("run %d: %.1f s, %d measurements, longest event-loop stall %.1f ms\n", r + 1,
                    double(t.elapsed()) / 1000.0,
                    panel->model() ? int(panel->report().rows.size()) : 0, panel->lastMaxStallMs());
    }
    std::vector<double> latencies;
    for (int c = 0; c < cancels; ++c) {
        QSignalSpy done(panel, &kvl::widgets::ProbePanel::runFinished);
        QElapsedTimer since;
        since.start();
        QMetaObject::Connection trace;
        if (qEnvironmentVariableIsSet("KVL_TRACE"))
            trace = QObject::connect(panel->worker(), &kvl::widgets::ProbeWorker::progressChanged,
                                     [&](int p, const QString& st) {
                                         std::printf("  %6lld ms %3d%% %s\n",
                                                     static_cast<long long>(since.elapsed()), p,
                                                     qPrintable(st));
                                     });
        panel->run();
        const int delay = 200 + 300 * c; // cancel at different stages of the run
        {
            QEventLoop loop; // an idle wait: a busy one would steal the probe's core
            QTimer::singleShot(delay, &loop, &QEventLoop::quit);
            loop.exec();
        }
        if (!panel->isRunning())
            continue;
        const QString stage = panel->findChild<QLabel*>(QStringLiteral("stageLabel"))->text();
        panel->cancel();
        done.wait(10000);
        QObject::disconnect(trace);
        latencies.push_back(panel->lastCancelLatencyMs());
        std::printf("cancel after %d ms (during \"%s\"): stopped in %.0f ms\n", delay,
                    qPrintable(stage), panel->lastCancelLatencyMs());
    }
    const double worstStall = *std::max_element(stalls.begin(), stalls.end());
    const double worstCancel =
        latencies.empty() ? 0 : *std::max_element(latencies.begin(), latencies.end());
    std::printf("longest event-loop stall over %d runs: %.1f ms (target < 50 ms)\n", runs,
                worstStall);
    std::printf("slowest cancel over %zu cancels: %.0f ms (target < 1000 ms)\n", latencies.size(),
                worstCancel);
    return worstStall < 50 && worstCancel < 1000 ? 0 : 1;
}
