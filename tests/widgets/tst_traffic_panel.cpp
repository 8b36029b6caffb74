// The Traffic tab (widgets/traffic): the simulations run on a worker and publish curves equal to
// core::sim::simulate's for the same inputs; Cancel and a newer scenario drop a running job's
// result; the lever ladder shows in requests per second; the charts export headlessly.
// Workloads are tiny (100-150 requests per point, max_num_seqs capped) so that every function
// stays well under a few seconds, twice over in CI (release and ASan).

#include "app/headless.h"
#include "widgets/charts/chart_widget.h"
#include "widgets/state/ledger_view_state.h"
#include "widgets/traffic/traffic_charts.h"
#include "widgets/traffic/traffic_panel.h"

#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/sim/simulator.h"

#include <QImage>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <sstream>

using namespace kvl;
using widgets::TrafficInputs;
using widgets::TrafficPanel;
using widgets::TrafficResult;
using widgets::TrafficStep;

namespace {

// Llama-3.1-8B on one H100 at max_model_len 32K: a contiguous reservation (the baseline) is
// 16 GiB in MHA BF16, so only a handful run at once, while paging holds max_num_seqs.
core::Scenario llama8bH100(bool quant = true) {
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel("llama-3.1-8b");
    s.hardware.gpu = *io::findGpu("h100-80gb");
    s.workload.context = 2048;
    s.workload.maxModelLen = 32768;
    s.engine.maxNumSeqs = 64; // 2 x 64 = 128 requests per point at most
    s.levers.quant.enabled = quant;
    s.levers.prefix.enabled = false;
    return s;
}

widgets::LedgerView viewOf(const core::Scenario& s) {
    widgets::LedgerView v;
    v.snapshot = std::make_shared<const widgets::LedgerSnapshot>(widgets::computeSnapshot(s));
    return v;
}

TrafficInputs tinyInputs() {
    TrafficInputs in;
    in.prompt = "512";
    in.output = "64";
    in.requests = 100;
    in.seed = 3;
    in.sloTtftMs = 1000;
    in.sloTpotMs = 50;
    return in;
}

const TrafficStep* stepOf(const TrafficResult& r, core::LadderStepId id) {
    for (const TrafficStep& st : r.steps)
        if (st.id == id)
            return &st;
    return nullptr;
}

} // namespace

class TestTrafficPanel : public QObject {
    Q_OBJECT
private slots:
    void rateText_data();
    void rateText();
    void otherEnginesNotSimulated_data();
    void otherEnginesNotSimulated();
    void computesOffThreadAndMatchesCore_data();
    void computesOffThreadAndMatchesCore();
    void cancelPublishesNothing();
    void scenarioChangeDiscardsTheOldJob();
    void hiddenPanelWaitsUntilShown();
    void ladderRaisesSustainableRate_data();
    void ladderRaisesSustainableRate();
    void exportWritesPngOfSize_data();
    void exportWritesPngOfSize();
    void exportTakesTrafficInputs_data();
    void exportTakesTrafficInputs();
};

void TestTrafficPanel::computesOffThreadAndMatchesCore_data() {
    QTest::addColumn<int>("step");
    QTest::addColumn<int>("point");
    QTest::addColumn<int>("requests");
    // The baseline holds 3 contiguous 16 GiB reservations: 2 x 3 < the 100 asked. Paging holds
    // max_num_seqs (64): 2 x 64.
    QTest::addRow("baseline, first rate") << int(core::LadderStepId::Baseline) << 0 << 100;
    QTest::addRow("+paging, last rate") << int(core::LadderStepId::Paging) << 7 << 128;
}

void TestTrafficPanel::computesOffThreadAndMatchesCore() {
    QFETCH(int, step);
    QFETCH(int, point);
    QFETCH(int, requests);
    TrafficPanel panel;
    panel.setDebounceMs(0);
    panel.setInputs(tinyInputs());
    panel.show();
    QSignalSpy shown(&panel, &TrafficPanel::resultShown);
    const core::Scenario s = llama8bH100();
    panel.setView(viewOf(s));
    panel.start();
    // start() returns at once: the job is on the worker, nothing is published yet.
    QVERIFY(panel.isRunning());
    QVERIFY(!panel.result());
    QVERIFY(panel.cancelButton()->isEnabled());
    QVERIFY(shown.wait(20000));
    QCOMPARE(shown.count(), 1);
    QVERIFY(!panel.isRunning());
    const auto r = panel.result();
    QVERIFY(r && r->error.empty() && !r->cancelled);
    const TrafficStep* st = stepOf(*r, static_cast<core::LadderStepId>(step));
    QVERIFY(st);
    QCOMPARE(st->points.size(), std::size_t{8}); // the panel's rate grid
    const widgets::TrafficPoint& pt = st->points[static_cast<std::size_t>(point)];
    // The same run through core directly: the workload written out here, not by the panel.
    core::sim::WorkloadSpec w;
    w.rate = pt.rate;
    w.requests = requests;
    w.prompt = core::sim::LengthDist::fixed(512);
    w.output = core::sim::LengthDist::fixed(64);
    w.seed = 3;
    core::sim::SimOptions o;
    o.sloTtftMs = 1000;
    o.sloTpotMs = 50;
    o.prefixCaching = false; // the prefix lever is off: no step has the cache
    o.seriesPoints = 400;
    QCOMPARE(st->requestsPerPoint, w.requests);
    const core::sim::SimResult direct = core::sim::simulate(core::ladderScenario(s, st->id), w, o);
    QVERIFY2(direct.error.empty(), direct.error.c_str());
    QVERIFY(pt.ttftMs.count > 0);
    QCOMPARE(pt.ttftMs.p99, direct.ttftMs.p99); // exactly: same inputs, same seed
    QCOMPARE(pt.tpotMs.p50, direct.tpotMs.p50);
    QCOMPARE(pt.attainment, direct.sloAttainment);
    // The charts draw those points.
    const QString name =
        (st->current ? QStringLiteral("Current: ") : QString()) + QString::fromStdString(st->label);
    const int series = panel.ttftChart()->seriesIndex(name);
    QVERIFY(series >= 0);
    QVERIFY(panel.ttftChart()->seriesValues(series).contains(direct.ttftMs.p99));
}

void TestTrafficPanel::cancelPublishesNothing() {
    TrafficPanel panel;
    panel.setDebounceMs(0);
    panel.setInputs(tinyInputs());
    panel.show();
    QSignalSpy shown(&panel, &TrafficPanel::resultShown);
    QSignalSpy cancelled(&panel, &TrafficPanel::jobCancelled);
    panel.setView(viewOf(llama8bH100()));
    panel.start();
    QVERIFY(panel.isRunning());
    QTest::mouseClick(panel.cancelButton(), Qt::LeftButton);
    QCOMPARE(cancelled.count(), 1);
    QVERIFY(!panel.isRunning());
    QVERIFY(!panel.cancelButton()->isEnabled());
    // The worker stops and its result is dropped, never shown.
    QTRY_COMPARE_WITH_TIMEOUT(panel.discardedResults(), 1, 20000);
    QCOMPARE(shown.count(), 0);
    QVERIFY(!panel.result());
    QVERIFY(panel.statusText().contains(QStringLiteral("Cancelled")));
    QVERIFY(!panel.ttftChart()->emptyText().isEmpty()); // no curves
}

void TestTrafficPanel::scenarioChangeDiscardsTheOldJob() {
    TrafficPanel panel;
    panel.setDebounceMs(0);
    panel.setInputs(tinyInputs());
    panel.show();
    QSignalSpy shown(&panel, &TrafficPanel::resultShown);
    panel.setView(viewOf(llama8bH100(true)));
    const quint64 first = panel.start();
    QVERIFY(panel.isRunning());
    // A new scenario while it runs: the old job is cancelled, a new one starts (debounced).
    const core::Scenario second = llama8bH100(false);
    panel.setView(viewOf(second));
    QVERIFY(panel.generation() > first);
    QVERIFY(shown.wait(20000));
    QCOMPARE(shown.count(), 1);
    QTRY_VERIFY_WITH_TIMEOUT(panel.discardedResults() >= 1, 20000);
    const auto r = panel.result();
    QVERIFY(r);
    QCOMPARE(io::scenarioToJson(r->scenario), io::scenarioToJson(second));
    // Without the quantization lever its ladder step is not a curve.
    QVERIFY(!stepOf(*r, core::LadderStepId::Quantization));
    QVERIFY(stepOf(*r, core::LadderStepId::Paging));
    QTest::qWait(50);
    QCOMPARE(shown.count(), 1); // the old job never published after the new one
}

void TestTrafficPanel::hiddenPanelWaitsUntilShown() {
    TrafficPanel panel;
    panel.setDebounceMs(0);
    panel.setInputs(tinyInputs());
    QSignalSpy shown(&panel, &TrafficPanel::resultShown);
    panel.setView(viewOf(llama8bH100()));
    QTest::qWait(30);
    QVERIFY(!panel.isRunning()); // hidden: no simulation
    QVERIFY(panel.isStale());
    QCOMPARE(panel.generation(), quint64{0});
    panel.show();
    QVERIFY(shown.wait(20000));
    QVERIFY(!panel.isStale());
}

void TestTrafficPanel::ladderRaisesSustainableRate_data() {
    QTest::addColumn<int>("step");
    QTest::addRow("+quant (FP8)") << int(core::LadderStepId::Quantization);
    QTest::addRow("+paging") << int(core::LadderStepId::Paging);
}

// The baseline (MHA BF16, contiguous 32K reservations) runs a handful at once; FP8 doubles
// those, paging holds max_num_seqs: the same traffic is sustained at a higher rate, and at the
// rate where the baseline first misses the SLO the step still meets it. Were the ladder
// ignored (every step the scenario itself) the rates would be equal.
void TestTrafficPanel::ladderRaisesSustainableRate() {
    QFETCH(int, step);
    TrafficPanel panel;
    panel.setInputs(tinyInputs());
    panel.setView(viewOf(llama8bH100()));
    panel.computeNow(); // the same computation, on this thread
    const auto r = panel.result();
    QVERIFY(r && r->error.empty());
    const TrafficStep* base = stepOf(*r, core::LadderStepId::Baseline);
    const TrafficStep* lever = stepOf(*r, static_cast<core::LadderStepId>(step));
    QVERIFY(base && lever);
    QVERIFY2(base->found, base->note.c_str());
    QVERIFY2(lever->found, lever->note.c_str());
    QVERIFY2(
        lever->sustainableRate > 1.5 * base->sustainableRate,
        qPrintable(
            QStringLiteral("%1 vs %2").arg(lever->sustainableRate).arg(base->sustainableRate)));
    // The first rate of the baseline's curve that misses the SLO: saturated.
    double saturating = 0;
    for (const auto& pt : base->points)
        if (!pt.meets) {
            saturating = pt.rate;
            break;
        }
    QVERIFY(saturating > 0);
    const TrafficInputs in = panel.inputs();
    core::sim::SimOptions o = widgets::trafficOptions(in, lever->scenario);
    const auto at = core::sim::simulate(
        lever->scenario, widgets::trafficWorkload(in, saturating, lever->requestsPerPoint), o);
    QVERIFY2(at.error.empty(), at.error.c_str());
    QVERIFY2(at.sloAttainment >= in.attainment, qPrintable(QString::number(at.sloAttainment)));
    // The table lists every step, the lever's rate above the baseline's.
    QCOMPARE(panel.rateTable()->rowCount(), static_cast<int>(r->steps.size()));
}

void TestTrafficPanel::exportWritesPngOfSize_data() {
    QTest::addColumn<QString>("chart");
    QTest::addColumn<QSize>("size");
    QTest::addRow("ttft 640x400") << QStringLiteral("traffic-ttft") << QSize(640, 400);
    QTest::addRow("timeline 900x520") << QStringLiteral("traffic-timeline") << QSize(900, 520);
}

// kvledger export --chart traffic-*: no window shown, the simulation run on the export's own
// thread before the chart is drawn.
void TestTrafficPanel::exportWritesPngOfSize() {
    QFETCH(QString, chart);
    QFETCH(QSize, size);
    QTemporaryDir dir;
    const QString path = dir.filePath(chart + QStringLiteral(".png"));
    std::ostringstream out, err;
    const int rc = app::runHeadlessGuiCommand(
        {"export", "--chart", chart.toStdString(), "--out", path.toStdString(), "--size",
         std::to_string(size.width()) + "x" + std::to_string(size.height()), "--scale", "1",
         "--model", "llama-3.1-8b", "--max-model-len", "8192", "--max-num-seqs", "32",
         "--prefix-tokens", "0"},
        out, err);
    QVERIFY2(rc == 0, err.str().c_str());
    const QImage img(path);
    QCOMPARE(img.size(), size);
    // Not blank: the curves and text are drawn.
    int inked = 0;
    for (int y = 0; y < img.height(); y += 4)
        for (int x = 0; x < img.width(); x += 4)
            inked += qGray(img.pixel(x, y)) < 128 ? 1 : 0;
    QVERIFY2(inked > 200, qPrintable(QString::number(inked)));
}

// kvledger export / --screenshot take the Traffic tab's workload and SLO in simulate's options
// (--rate, --prompt-tokens, --output-tokens, --slo-ttft-ms, --slo-tpot-ms): the CSV of the
// chart shows what was simulated, against the same export with the tab's defaults.
void TestTrafficPanel::exportTakesTrafficInputs_data() {
    QTest::addColumn<QString>("chart");
    QTest::addColumn<QStringList>("options");
    QTest::addColumn<QString>("expect");
    QTest::addRow("short prompts: smaller TTFT")
        << QStringLiteral("traffic-ttft")
        << QStringList{"--prompt-tokens", "100", "--output-tokens", "20"} << QStringLiteral("ttft");
    QTest::addRow("an SLO no rate meets")
        << QStringLiteral("traffic-ttft") << QStringList{"--slo-ttft-ms", "1"}
        << QStringLiteral("none");
    QTest::addRow("a slow timeline rate: a longer run")
        << QStringLiteral("traffic-timeline") << QStringList{"--rate", "0.5"}
        << QStringLiteral("long");
    QTest::addRow("the deployment's rate over its DP replicas")
        << QStringLiteral("traffic-timeline") << QStringList{"--rate", "1", "--dp", "2"}
        << QStringLiteral("long");
    QTest::addRow("a rate the tab cannot hold")
        << QStringLiteral("traffic-timeline") << QStringList{"--rate", "0.001"}
        << QStringLiteral("refused");
}

void TestTrafficPanel::exportTakesTrafficInputs() {
    QFETCH(QString, chart);
    QFETCH(QStringList, options);
    QFETCH(QString, expect);
    QTemporaryDir dir;
    // The CSV rows after its '#' lines and header, split into cells (this scenario's series
    // labels hold no comma).
    auto exported = [&](const QStringList& extra, int* rc, std::string* error) {
        const QString path = dir.filePath(QStringLiteral("%1.csv").arg(extra.size()));
        std::vector<std::string> argv{
            "export",  "--chart",      chart.toStdString(), "--out", path.toStdString(),
            "--model", "llama-3.1-8b", "--max-model-len",   "8192",  "--max-num-seqs",
            "32"};
        for (const QString& a : extra)
            argv.push_back(a.toStdString());
        std::ostringstream out, err;
        *rc = app::runHeadlessGuiCommand(argv, out, err);
        *error = err.str();
        QFile f(path);
        std::vector<QStringList> rows;
        if (!f.open(QIODevice::ReadOnly))
            return rows;
        const QStringList lines = QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'));
        for (const QString& line : lines)
            if (!line.isEmpty() && !line.startsWith(QLatin1Char('#')) &&
                !line.startsWith(QLatin1String("series,")) &&
                !line.startsWith(QLatin1String("time_s,")))
                rows.push_back(line.split(QLatin1Char(',')));
        return rows;
    };
    int rc = 0;
    std::string error;
    const auto base = exported({}, &rc, &error);
    QVERIFY2(rc == 0, error.c_str());
    const auto got = exported(options, &rc, &error);
    if (expect == "refused") {
        QCOMPARE(rc, 2);
        QVERIFY2(error.find("--rate 0.001: the Traffic tab's field holds 0") != std::string::npos,
                 error.c_str());
        return;
    }
    QVERIFY2(rc == 0, error.c_str());
    QVERIFY(!base.empty() && !got.empty());
    if (expect == "ttft") {
        // series,rate,ttft_p50,...: the smallest p50 TTFT (a low rate: about one prefill) of
        // 100-token prompts against the default ones (the context less 256 tokens).
        auto least = [](const std::vector<QStringList>& rows) {
            double m = 1e300;
            for (const QStringList& r : rows)
                m = std::min(m, r[2].toDouble());
            return m;
        };
        QVERIFY2(least(got) < 0.2 * least(base),
                 qPrintable(QString::number(least(got)) + QLatin1String(" vs ") +
                            QString::number(least(base))));
    } else if (expect == "none") {
        // Not one point meets a 1 ms TTFT; the defaults (2 s) meet it at low rates.
        for (const QStringList& row : got) {
            QCOMPARE(row[7], QStringLiteral("no"));
            QVERIFY(row[8].isEmpty()); // no sustainable rate
        }
        QVERIFY(std::any_of(base.begin(), base.end(),
                            [](const QStringList& r) { return r[7] == QLatin1String("yes"); }));
    } else {
        // 0.5 req/s per replica: at least 400 requests arrive over about 800 s; the tab's own
        // rate (80% of the sustainable one, several req/s) ends far sooner.
        const double end = got.back()[0].toDouble(), baseEnd = base.back()[0].toDouble();
        QVERIFY2(end > 640, qPrintable(QString::number(end)));
        QVERIFY2(baseEnd < 300, qPrintable(QString::number(baseEnd)));
    }
}

// Rates as the tab prints them: a long-prompt workload's few thousandths of a request per
// second keep their digits instead of reading 0.00.
void TestTrafficPanel::rateText_data() {
    QTest::addColumn<double>("rate");
    QTest::addColumn<QString>("text");
    QTest::addRow("none") << 0.0 << "0";
    QTest::addRow("70B at 32K") << 0.00521 << "0.0052";
    QTest::addRow("hundredths") << 0.0123 << "0.012";
    QTest::addRow("below one") << 0.45 << "0.45";
    QTest::addRow("units") << 1.234 << "1.23";
    QTest::addRow("tens") << 12.34 << "12.3";
    QTest::addRow("hundreds") << 123.4 << "123";
}

void TestTrafficPanel::rateText() {
    QFETCH(double, rate);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(widgets::trafficRateText(rate)), text);
}

// The Traffic tab simulates vLLM's scheduler over vLLM's pool: for another engine it shows why
// there is nothing, instead of vLLM's numbers under that engine's name.
void TestTrafficPanel::otherEnginesNotSimulated_data() {
    QTest::addColumn<QString>("engine");
    QTest::addColumn<bool>("simulated");
    QTest::addRow("vLLM") << "vllm" << true;
    QTest::addRow("SGLang") << "sglang" << false;
    QTest::addRow("TensorRT-LLM") << "trtllm" << false;
    QTest::addRow("llama.cpp") << "llamacpp" << false;
}

void TestTrafficPanel::otherEnginesNotSimulated() {
    QFETCH(QString, engine);
    QFETCH(bool, simulated);
    core::Scenario s = llama8bH100();
    s.engine.kind = *core::parseEngine(engine.toStdString());
    const widgets::TrafficResult r = widgets::computeTraffic(s, tinyInputs());
    QCOMPARE(r.error.empty(), simulated);
    if (!simulated) {
        QVERIFY2(r.error.find("follows vLLM v1's scheduler") != std::string::npos, r.error.c_str());
        QVERIFY(r.steps.empty());
    }
}

QTEST_MAIN(TestTrafficPanel)
#include "tst_traffic_panel.moc"
