// Change-to-finished-replot latency of the explorer window: drives lever groups, combos, spin
// boxes and the context slider offscreen, and times each change until every chart of the
// window has replotted (MainWindow::pendingReplots() counts them, whichever they are) and,
// separately, until the window has painted. Not a CTest test.

#include "main_window.h"

#include "widgets/scenario/scenario_panel.h"

#include "core/kv_format.h"

#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QGroupBox>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSlider>
#include <QSpinBox>
#include <QTest>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <vector>

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
    QApplication app(argc, argv);
    int changes = 240;
    QString jsonPath;
    const QStringList args = app.arguments();
    for (int i = 1; i < args.size(); ++i) {
        if (args[i] == QLatin1String("--json") && i + 1 < args.size())
            jsonPath = args[++i];
        else if (args[i] == QLatin1String("--changes") && i + 1 < args.size())
            changes = std::max(200, args[++i].toInt());
        else {
            std::fprintf(stderr, "usage: bench_replot [--changes N (>= 200)] [--json FILE]\n");
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

    // A mix of lever toggles, choices and slider drags (the slider dominates, as in use).
    struct Op {
        const char* kind;
        std::function<void(int)> run;
    };
    const std::vector<Op> ops = {
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
        // The vLLM version selector, as a user picks a release from its list (activated).
        {"vllm version",
         [&](int) {
             const int next = (version->currentIndex() + 1) % version->count();
             version->setCurrentIndex(next);
             Q_EMIT version->activated(next);
         }},
    };

    std::vector<double> replotMs, paintedMs, recomputeMs;
    std::map<std::string, std::vector<double>> replotByKind, recomputeByKind;
    const int warmup = 12;
    for (int i = 0; i < changes + warmup; ++i) {
        const Op& op = ops[static_cast<std::size_t>(i) % ops.size()];
        const auto t0 = Clock::now();
        op.run(i);
        const auto t1 = Clock::now(); // the ledger, table and status are recomputed synchronously
        settle();
        const auto t2 = Clock::now();
        QCoreApplication::processEvents(); // deliver the widgets' repaint to the backing store
        const auto t3 = Clock::now();
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
    }

    const double median = percentile(replotMs, 0.5);
    const double p95 = percentile(replotMs, 0.95);
    const double maxMs = *std::max_element(replotMs.begin(), replotMs.end());
    std::printf("bench_replot: %d changes (lever toggles, combos, spin boxes, context slider), "
                "window 1600x1000, platform %s\n",
                changes, qPrintable(QGuiApplication::platformName()));
    std::printf("  change -> all charts replotted: median %.2f ms, p95 %.2f ms, max %.2f ms "
                "(target p95 <= 8 ms, issue 27)\n",
                median, p95, maxMs);
    std::printf("  change -> recomputed (ledger + ladder + sweep + table + status): median %.3f "
                "ms, p95 %.3f ms\n",
                percentile(recomputeMs, 0.5), percentile(recomputeMs, 0.95));
    std::printf("  change -> window painted: median %.2f ms, p95 %.2f ms\n",
                percentile(paintedMs, 0.5), percentile(paintedMs, 0.95));
    // Per kind of change: which edits are slow (the vLLM version selector's log lines and
    // release notes are part of the recompute).
    std::printf("  per change kind (n, recompute p95 ms, replotted p95 ms):\n");
    for (const auto& [kind, times] : replotByKind)
        std::printf("    %-16s %4zu  %7.2f  %7.2f\n", kind.c_str(), times.size(),
                    percentile(recomputeByKind[kind], 0.95), percentile(times, 0.95));
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
