// Change-to-finished-replot latency of the explorer window: drives lever groups, combos, spin
// boxes and the context slider offscreen, and times each change until every chart of the
// window has replotted (MainWindow::pendingReplots() counts them, whichever they are) and,
// separately, until the window has painted. Not a CTest test.
//
// Besides wall time it prints the GUI thread's CPU time per change (steadier than wall time on
// a shared, loaded machine: another process's time on the core is not counted), what each
// chart's QCustomPlot::replot spends, and how many changes resized a chart (a resize
// reallocates a chart's paint buffers and lays the window out again).

#include "main_window.h"
#include "raster_fills.h"

#include "widgets/scenario/scenario_panel.h"

#include "core/kv_format.h"

#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QGroupBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPaintEvent>
#include <QSlider>
#include <QSpinBox>
#include <QTest>

#include <qcustomplot.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <time.h>

using Clock = std::chrono::steady_clock;

namespace {

double percentile(std::vector<double> v, double p) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const double idx = p * double(v.size() - 1);
    const auto lo = static_cast<std::size_t>(idx);
    const auto hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (idx - double(lo));
}

// CPU time of the calling thread (the GUI thread: every change, layout, replot and paint runs
// on it).
std::chrono::duration<double, std::milli> threadCpu() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::duration<double, std::milli>(double(ts.tv_sec) * 1e3 +
                                                     double(ts.tv_nsec) / 1e6);
}

// Counts resizes of the window's charts, and paints of every widget: deterministic measures of
// the work a change causes, whatever the machine's load.
class ResizeCounter : public QObject {
public:
    int resizes = 0;
    int paints = 0;
    std::map<QString, int> paintsByWidget;    // "class/objectName"
    std::map<QString, double> pixelsByWidget; // the painted regions' area
    // Widgets moved or resized by a change: each one a layout moved, and what it uncovers and
    // covers is repainted, so a change that moves nothing paints only what it changed.
    std::map<QString, int> geometryByWidget;
    int geometryChanges = 0;
    static QString nameOf(const QObject* o) {
        QString name =
            QString::fromLatin1(o->metaObject()->className()) + QLatin1Char('/') + o->objectName();
        // A widget without a name of its own (a label, a spin box's line edit) is named by the
        // nearest ancestor that has one, so the report says which control it belongs to.
        if (o->objectName().isEmpty() || o->objectName().startsWith(QLatin1String("qt_")))
            for (const QObject* a = o->parent(); a; a = a->parent())
                if (!a->objectName().isEmpty() &&
                    !a->objectName().startsWith(QLatin1String("qt_"))) {
                    name += QLatin1String(" in ") + a->objectName();
                    break;
                }
        return name;
    }
    bool eventFilter(QObject* o, QEvent* e) override {
        if (e->type() == QEvent::Resize && qobject_cast<QCustomPlot*>(o))
            ++resizes;
        if ((e->type() == QEvent::Resize || e->type() == QEvent::Move) && o->isWidgetType() &&
            static_cast<QWidget*>(o)->isVisible()) {
            ++geometryChanges;
            ++geometryByWidget[nameOf(o)];
        }
        if (e->type() == QEvent::Paint && o->isWidgetType()) {
            ++paints;
            const QString name = nameOf(o);
            ++paintsByWidget[name];
            double area = 0;
            for (const QRect& r : static_cast<QPaintEvent*>(e)->region())
                area += double(r.width()) * double(r.height());
            pixelsByWidget[name] += area;
        }
        return false;
    }
};

// Time spent in each kind of event the event loop delivers, outermost delivery only (a paint
// inside a layout counts as layout): where a change's time goes once the synchronous recompute
// is done (layout requests, paints, QCustomPlot's queued replots, timers).
class TimingApplication : public QApplication {
public:
    using QApplication::QApplication;
    bool counting = false;
    std::map<std::string, double> msByEvent;
    std::map<QString, double> layoutMsByWidget; // the layout requests' time, by receiver
    bool notify(QObject* receiver, QEvent* event) override {
        if (!counting || depth > 0) {
            ++depth;
            const bool r = QApplication::notify(receiver, event);
            --depth;
            return r;
        }
        ++depth;
        const auto c0 = threadCpu();
        const bool r = QApplication::notify(receiver, event);
        --depth;
        const double ms = (threadCpu() - c0).count();
        msByEvent[kindOf(event, receiver)] += ms;
        if (event->type() == QEvent::LayoutRequest)
            layoutMsByWidget[QString::fromLatin1(receiver->metaObject()->className()) +
                             QLatin1Char('/') + receiver->objectName()] += ms;
        return r;
    }

private:
    static std::string kindOf(const QEvent* e, const QObject* receiver) {
        switch (e->type()) {
        case QEvent::UpdateRequest:
        case QEvent::Paint:
            return "paint";
        case QEvent::LayoutRequest:
            return "layout";
        case QEvent::Timer:
        case QEvent::MetaCall:
            // QCustomPlot queues its replot (rpQueuedReplot) as a zero timer.
            return qobject_cast<const QCustomPlot*>(receiver) ? "chart replot"
                                                              : "timers and queued calls";
        default:
            return "other events";
        }
    }
    int depth = 0;
};

template <class T> T* child(QWidget* w, const char* name) {
    T* c = w->findChild<T*>(QLatin1String(name));
    if (!c) {
        std::fprintf(stderr, "bench_replot: no control %s\n", name);
        std::exit(1);
    }
    return c;
}

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    kvl::app::keepRasterFillsSerial(); // as kvledger's main does
    TimingApplication app(argc, argv);
    int changes = 240;
    QString jsonPath;
    // --only KIND[,KIND...]: those kinds of change alone, to profile one (e.g. "engine") or
    // one in the state another leaves (e.g. "engine,quant").
    QStringList only;
    const QStringList args = app.arguments();
    for (int i = 1; i < args.size(); ++i) {
        if (args[i] == QLatin1String("--json") && i + 1 < args.size())
            jsonPath = args[++i];
        else if (args[i] == QLatin1String("--changes") && i + 1 < args.size())
            changes = std::max(200, args[++i].toInt());
        else if (args[i] == QLatin1String("--only") && i + 1 < args.size())
            only = args[++i].split(QLatin1Char(','));
        else {
            std::fprintf(stderr, "usage: bench_replot [--changes N (>= 200)] [--json FILE] "
                                 "[--only KIND[,KIND...]]\n");
            return 2;
        }
    }

    kvl::app::MainWindow::Options o;
    o.useSettings = false;
    o.showDialogs = false;
    kvl::app::MainWindow w(o);
    w.resize(1600, 1000);
    w.show();
    if (!QTest::qWaitForWindowExposed(&w)) {
        std::fprintf(stderr, "bench_replot: window not exposed\n");
        return 1;
    }
    auto settle = [&] {
        while (w.pendingReplots() > 0)
            QCoreApplication::processEvents(QEventLoop::AllEvents);
    };
    settle();
    QCoreApplication::processEvents();

    auto* attention = child<QGroupBox>(&w, "attentionGroup");
    auto* attentionMode = child<QComboBox>(&w, "attentionModeCombo");
    auto* quant = child<QGroupBox>(&w, "quantGroup");
    auto* dtype = child<QComboBox>(&w, "kvDtypeCombo");
    auto* paging = child<QGroupBox>(&w, "pagingGroup");
    auto* block = child<QComboBox>(&w, "blockSizeCombo");
    auto* prefix = child<QGroupBox>(&w, "prefixGroup");
    auto* prefixTokens = child<QSpinBox>(&w, "prefixTokensSpin");
    auto* slider = child<QSlider>(&w, "contextSlider");
    auto* gpus = child<QSpinBox>(&w, "gpuCountSpin");
    auto* version = child<QComboBox>(&w, "vllmVersionCombo");
    auto* engine = child<QComboBox>(&w, "engineCombo");

    // A mix of lever toggles, choices and slider drags (the slider dominates, as in use).
    struct Op {
        const char* kind;
        std::function<void(int)> run;
    };
    std::vector<Op> ops = {
        {"slider",
         [&](int i) {
             slider->setValue((slider->value() + (i % 7) + 1) % (slider->maximum() + 1));
         }},
        {"attention", [&](int) { attention->setChecked(!attention->isChecked()); }},
        {"slider", [&](int i) { slider->setValue(std::max(0, slider->value() - (i % 5) - 1)); }},
        {"attention mode",
         [&](int) {
             attentionMode->setCurrentIndex((attentionMode->currentIndex() + 1) %
                                            attentionMode->count());
         }},
        {"quant", [&](int) { quant->setChecked(!quant->isChecked()); }},
        {"slider",
         [&](int i) {
             slider->setValue((slider->value() + (i % 3) + 2) % (slider->maximum() + 1));
         }},
        {"kv dtype",
         [&](int) { dtype->setCurrentIndex((dtype->currentIndex() + 1) % dtype->count()); }},
        {"paging", [&](int) { paging->setChecked(!paging->isChecked()); }},
        {"slider", [&](int i) { slider->setValue(std::max(0, slider->value() - (i % 4) - 1)); }},
        {"block size",
         [&](int) { block->setCurrentIndex((block->currentIndex() + 1) % block->count()); }},
        {"prefix", [&](int) { prefix->setChecked(!prefix->isChecked()); }},
        {"prefix tokens", [&](int i) { prefixTokens->setValue(512 * (1 + i % 16)); }},
        {"tensor parallel", [&](int) { gpus->setValue(gpus->value() == 1 ? 2 : 1); }},
        // The engine selector: vLLM, SGLang, TensorRT-LLM, llama.cpp in turn (issue 31: the
        // window switches engine live within the frame budget).
        {"engine",
         [&](int) { engine->setCurrentIndex((engine->currentIndex() + 1) % engine->count()); }},
        // The vLLM version selector, as a user picks a release from its list (activated).
        {"vllm version",
         [&](int) {
             const int next = (version->currentIndex() + 1) % version->count();
             version->setCurrentIndex(next);
             Q_EMIT version->activated(next);
         }},
    };
    if (!only.isEmpty()) {
        std::erase_if(ops, [&](const Op& op) { return !only.contains(QLatin1String(op.kind)); });
        if (ops.empty()) {
            std::fprintf(stderr, "bench_replot: no change of kind %s\n",
                         qPrintable(only.join(QLatin1Char(','))));
            return 2;
        }
    }

    // Each chart's own replot, from QCustomPlot's beforeReplot to its afterReplot.
    struct ChartSpan {
        QElapsedTimer timer;
        double totalMs = 0;
        int count = 0;
    };
    std::map<QString, ChartSpan> spans;
    ResizeCounter resizes;
    for (QCustomPlot* p : w.findChildren<QCustomPlot*>()) {
        const QString name = p->parent() ? p->parent()->objectName() : QString();
        if (name.isEmpty())
            continue;
        ChartSpan* span = &spans[name];
        QObject::connect(p, &QCustomPlot::beforeReplot, [span] { span->timer.start(); });
        QObject::connect(p, &QCustomPlot::afterReplot, [span] {
            span->totalMs += double(span->timer.nsecsElapsed()) / 1e6;
            ++span->count;
        });
    }
    app.installEventFilter(&resizes);

    std::vector<double> replotMs, paintedMs, recomputeMs, cpuMs;
    // Each measured change, for the list of those the p95 rests on.
    struct Change {
        int index;
        const char* kind;
        double replotMs;
        double cpuMs;
        int widgetsPainted;
    };
    std::vector<Change> perChange;
    std::map<std::string, std::vector<double>> replotByKind, recomputeByKind;
    // Per kind of change, the milliseconds of each stage summed over its changes: the
    // synchronous recompute (wall time), then the event loop's GUI-thread CPU time by event.
    std::map<std::string, std::map<std::string, double>> stagesByKind;
    const int warmup = 12;
    int resizedAtStart = 0;
    std::map<QString, double> spanAtStart;
    for (int i = 0; i < changes + warmup; ++i) {
        if (i == warmup) {
            app.counting = true;
            resizedAtStart = resizes.resizes;
            resizes.paints = 0;
            resizes.paintsByWidget.clear();
            resizes.pixelsByWidget.clear();
            resizes.geometryChanges = 0;
            resizes.geometryByWidget.clear();
            for (const auto& [name, span] : spans)
                spanAtStart[name] = span.totalMs;
        }
        const Op& op = ops[static_cast<std::size_t>(i) % ops.size()];
        const std::map<std::string, double> eventsBefore = app.msByEvent;
        const int paintsBefore = resizes.paints;
        const auto c0 = threadCpu();
        const auto t0 = Clock::now();
        op.run(i);
        const auto t1 = Clock::now(); // the ledger, table and status are recomputed synchronously
        settle();
        const auto t2 = Clock::now();
        QCoreApplication::processEvents(); // deliver the widgets' repaint to the backing store
        const auto t3 = Clock::now();
        const auto c3 = threadCpu();
        if (i < warmup)
            continue;
        auto ms = [](auto a, auto b) {
            return std::chrono::duration<double, std::milli>(b - a).count();
        };
        recomputeMs.push_back(ms(t0, t1));
        replotMs.push_back(ms(t0, t2));
        recomputeByKind[op.kind].push_back(ms(t0, t1));
        replotByKind[op.kind].push_back(ms(t0, t2));
        paintedMs.push_back(ms(t0, t3));
        cpuMs.push_back((c3 - c0).count());
        perChange.push_back(
            {i, op.kind, ms(t0, t2), (c3 - c0).count(), resizes.paints - paintsBefore});
        std::map<std::string, double>& stages = stagesByKind[op.kind];
        stages["recompute"] += ms(t0, t1);
        for (const auto& [event, total] : app.msByEvent) {
            const auto before = eventsBefore.find(event);
            stages[event] += total - (before == eventsBefore.end() ? 0.0 : before->second);
        }
    }

    const double median = percentile(replotMs, 0.5);
    const double p95 = percentile(replotMs, 0.95);
    const double maxMs = *std::max_element(replotMs.begin(), replotMs.end());
    std::printf("bench_replot: %d changes (lever toggles, combos, spin boxes, context slider), "
                "window 1600x1000, platform %s, raster fills %s\n",
                changes, qPrintable(QGuiApplication::platformName()),
                kvl::app::rasterFillsSerial() ? "on the painting thread (as kvledger)"
                                              : "in Qt's thread pool (KVL_QT_PARALLEL_FILLS=1)");
    std::printf("  change -> all charts replotted: median %.2f ms, p95 %.2f ms, max %.2f ms "
                "(target p95 <= 8 ms, issue 27)\n",
                median, p95, maxMs);
    std::printf("  change -> recomputed (ledger + ladder + sweep + table + status): median %.3f "
                "ms, p95 %.3f ms\n",
                percentile(recomputeMs, 0.5), percentile(recomputeMs, 0.95));
    std::printf("  change -> window painted: median %.2f ms, p95 %.2f ms\n",
                percentile(paintedMs, 0.5), percentile(paintedMs, 0.95));
    std::printf("  change -> window painted, GUI thread CPU time: median %.2f ms, p95 %.2f ms\n",
                percentile(cpuMs, 0.5), percentile(cpuMs, 0.95));
    std::printf(
        "  charts resized during the changes: %d (each resize re-lays out and reallocates a "
        "chart)\n",
        resizes.resizes - resizedAtStart);
    auto printTop = [changes](const std::map<QString, int>& counts) {
        std::vector<std::pair<int, QString>> top;
        for (const auto& [name, n] : counts)
            top.emplace_back(n, name);
        std::sort(top.rbegin(), top.rend());
        for (std::size_t k = 0; k < std::min<std::size_t>(8, top.size()); ++k)
            std::printf("    %-40s %.2f\n", qPrintable(top[k].second),
                        double(top[k].first) / double(changes));
    };
    std::printf("  widgets painted per change: %.1f; the most painted (paints per change):\n",
                double(resizes.paints) / double(changes));
    printTop(resizes.paintsByWidget);
    std::printf("  widgets moved or resized per change: %.1f; the most (per change):\n",
                double(resizes.geometryChanges) / double(changes));
    printTop(resizes.geometryByWidget);
    {
        // Where the painted pixels go (a widget repainted whole costs its area; one repainted
        // under a changed child costs that child's rectangle).
        double total = 0;
        std::vector<std::pair<double, QString>> top;
        for (const auto& [name, px] : resizes.pixelsByWidget) {
            total += px;
            top.emplace_back(px, name);
        }
        std::sort(top.rbegin(), top.rend());
        std::printf("  pixels painted per change: %.0f K (all widgets' paint regions); the most:\n",
                    total / double(changes) / 1000.0);
        for (std::size_t k = 0; k < std::min<std::size_t>(8, top.size()); ++k)
            std::printf("    %-40s %.0f K\n", qPrintable(top[k].second),
                        top[k].first / double(changes) / 1000.0);
    }
    std::printf("  after the recompute, the event loop's GUI-thread CPU time by kind of event (ms "
                "per change, mean):\n");
    for (const auto& [kind, total] : app.msByEvent)
        std::printf("    %-24s %.2f\n", kind.c_str(), total / double(changes));
    {
        // Which widgets' layouts the layout time goes to (a request laid out at a window
        // includes every layout below it that was invalidated).
        std::vector<std::pair<double, QString>> top;
        for (const auto& [name, ms] : app.layoutMsByWidget)
            top.emplace_back(ms, name);
        std::sort(top.rbegin(), top.rend());
        std::printf("  layout requests by widget (ms per change, mean), the most:\n");
        for (std::size_t k = 0; k < std::min<std::size_t>(6, top.size()); ++k)
            std::printf("    %-40s %.3f\n", qPrintable(top[k].second),
                        top[k].first / double(changes));
    }
    std::printf("  QCustomPlot::replot per chart (ms per change, mean):\n");
    for (const auto& [name, span] : spans)
        std::printf("    %-20s %.2f\n", qPrintable(name),
                    span.count > 0 ? (span.totalMs - spanAtStart[name]) / double(changes) : 0.0);
    // Per kind of change: which edits are slow (the vLLM version selector's log lines and
    // release notes are part of the recompute).
    std::printf("  per change kind (n, recompute p95 ms, replotted p95 ms; then the mean ms per "
                "change of: recompute, chart replot, paint, layout, other):\n");
    for (const auto& [kind, times] : replotByKind) {
        std::map<std::string, double>& st = stagesByKind[kind];
        const double n = double(times.size());
        std::printf("    %-16s %4zu  %7.2f  %7.2f   %5.2f %5.2f %5.2f %5.2f %5.2f\n", kind.c_str(),
                    times.size(), percentile(recomputeByKind[kind], 0.95), percentile(times, 0.95),
                    st["recompute"] / n, st["chart replot"] / n, st["paint"] / n, st["layout"] / n,
                    (st["other events"] + st["timers and queued calls"]) / n);
    }
    {
        // The changes at and above the p95 (5% of them): which kinds, in which states, set it.
        // Wall time mixes in the host's noise; the GUI thread's CPU time and the widgets painted
        // say whether the change itself was heavy.
        std::vector<Change> slowest = perChange;
        std::sort(slowest.begin(), slowest.end(),
                  [](const Change& a, const Change& b) { return a.replotMs > b.replotMs; });
        slowest.resize(std::min(slowest.size(), perChange.size() / 20 + 1));
        std::printf("  the slowest changes (change number, kind, replotted ms, GUI CPU ms, widgets "
                    "painted):\n");
        for (const Change& c : slowest)
            std::printf("    %4d %-16s %7.2f %7.2f %4d\n", c.index, c.kind, c.replotMs, c.cpuMs,
                        c.widgetsPainted);
    }
    if (!jsonPath.isEmpty()) {
        QJsonObject j;
        j[QStringLiteral("changes")] = changes;
        j[QStringLiteral("platform")] = QGuiApplication::platformName();
        j[QStringLiteral("window")] = QStringLiteral("1600x1000");
        j[QStringLiteral("median_ms")] = median;
        j[QStringLiteral("p95_ms")] = p95;
        j[QStringLiteral("max_ms")] = maxMs;
        j[QStringLiteral("recompute_median_ms")] = percentile(recomputeMs, 0.5);
        j[QStringLiteral("recompute_p95_ms")] = percentile(recomputeMs, 0.95);
        j[QStringLiteral("painted_median_ms")] = percentile(paintedMs, 0.5);
        j[QStringLiteral("painted_p95_ms")] = percentile(paintedMs, 0.95);
        j[QStringLiteral("gui_cpu_median_ms")] = percentile(cpuMs, 0.5);
        j[QStringLiteral("gui_cpu_p95_ms")] = percentile(cpuMs, 0.95);
        j[QStringLiteral("chart_resizes")] = resizes.resizes - resizedAtStart;
        j[QStringLiteral("widgets_moved_or_resized_per_change")] =
            double(resizes.geometryChanges) / double(changes);
        j[QStringLiteral("target_p95_ms")] = 8.0;
        j[QStringLiteral("meets_target")] = p95 <= 8.0;
        QFile f(jsonPath);
        if (!f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(j).toJson()) < 0) {
            std::fprintf(stderr, "bench_replot: could not write %s\n", qPrintable(jsonPath));
            return 1;
        }
    }
    return 0;
}
