// The predicted Speed charts and the probe's calibration of the speed model: the plotted
// tokens/s are core::decodeStep's for each ladder step, the limits sit where the ledger and
// vLLM's max_num_seqs put them, FP8 holds more users than BF16, and a results file from the
// scenario's GPU kind changes the attention term exactly as the formula says (and one from
// another kind does not).

#include "widgets/charts/chart_factory.h"
#include "widgets/charts/chart_text_p.h"
#include "widgets/charts/speed_chart.h"
#include "widgets/probe/calibration.h"

#include "core/engine.h"
#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/kv_format.h"
#include "core/ledger.h"
#include "core/speed.h"
#include "gpu_probe/io/probe_json.h"
#include "gpu_probe/io/results_io.h"

#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace kvl;
using widgets::PredictedSpeedChart;
using widgets::SpeedMetric;
using widgets::SpeedView;

namespace {

core::Scenario llama8b(std::int64_t context, bool fp8) {
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel("llama-3.1-8b");
    s.hardware.gpu = *io::findGpu("h100-80gb");
    s.workload.context = context;
    s.workload.maxModelLen = 0;
    s.levers.quant.enabled = fp8;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Fp8E4M3);
    s.levers.prefix.enabled = false;
    return s;
}

// Every lever on: each ladder step is applied, so each is a series.
core::Scenario allLevers() {
    core::Scenario s = llama8b(32768, true);
    s.levers.attention.enabled = true;
    s.levers.attention.mode = core::AttentionMode::Gqa;
    s.levers.attention.gqaKvHeads = 8;
    s.levers.paging.enabled = true;
    s.levers.prefix.enabled = true;
    s.levers.prefix.sharedTokens = 2048;
    return s;
}

PredictedSpeedChart* makeChart(SpeedView v) {
    auto* c = static_cast<PredictedSpeedChart*>(widgets::createChart(*widgets::findChartSpec(
        v == SpeedView::Concurrency ? u"speed-concurrency" : u"speed-context")));
    c->resize(1000, 600);
    return c;
}

// A kvprobe bench results file, written and read back as the window loads one.
probe::ProbeReport resultsFile(const QString& dir, const std::string& device,
                               const std::vector<std::pair<std::string, double>>& formatGBs) {
    probe::ProbeReport rep;
    rep.command = "bench";
    rep.backend = "cuda";
    rep.device = device;
    rep.date = "2026-11-29T10:21:22Z";
    rep.host = "gpu-host";
    rep.copyGBs = 2900;
    rep.schemaVersion = probe::kSchemaVersion;
    for (const auto& [format, gbs] : formatGBs) {
        const auto f = probe::parseProbeFormat(format);
        probe::ProbeResult r;
        r.status = probe::ProbeStatus::Ok;
        r.backend = "cuda";
        r.device = device;
        r.formatId = f->id;
        r.formatLabel = f->label;
        r.dtype = std::string(core::dtypeName(f->format.dtype));
        r.modelId = "llama-3-8b";
        r.kvHeads = 8;
        r.qHeads = 32;
        r.headDim = 128;
        r.blockSize = 16;
        r.batch = 8;
        r.context = 8192;
        r.speedMeasured = true;
        r.copyGBs = 2900;
        r.attentionMs = 1.0;
        r.attentionBytes = 1 << 30;
        r.attentionGBs = gbs;
        r.attentionPctOfCopy = 100.0 * gbs / 2900;
        r.tokensPerS = 8000;
        rep.rows.push_back(r);
        // A smaller row of the same format that reads less (cache-resident): not the one used.
        r.context = 512;
        r.attentionBytes = 1 << 20;
        r.attentionGBs = gbs * 3;
        rep.rows.push_back(r);
    }
    const QString path = dir + QStringLiteral("/bench.json");
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        qFatal("cannot write %s", qPrintable(path));
    f.write(QByteArray::fromStdString(probe::benchJson(rep)));
    f.close();
    auto loaded = probe::loadProbeReport(path.toStdString());
    if (!loaded)
        qFatal("%s", loaded.error().message.c_str());
    return *loaded;
}

} // namespace

class TestSpeedChart : public QObject {
    Q_OBJECT
private slots:
    void handComputedStep_data();
    void handComputedStep();
    void seriesFollowLadder_data();
    void seriesFollowLadder();
    void limitsAndLines_data();
    void limitsAndLines();
    void fp8ExtendsFurther();
    void contextView();
    void errorState();
    void recomputesOnSnapshotOnly();
    void matchCatalogGpu_data();
    void matchCatalogGpu();
    void calibrationChangesAttentionTerm_data();
    void calibrationChangesAttentionTerm();
    void calibrationLabel();
    void titlesMeasureAsQCustomPlot_data();
    void titlesMeasureAsQCustomPlot();

private:
    QTemporaryDir m_dir;
};

void TestSpeedChart::handComputedStep_data() {
    // Llama-3.1-8B (8,030,261,248 parameters: 16,060,522,496 bytes of BF16 weights) on one
    // H100 SXM (3,350 GB/s) at 32 requests x 8,192 tokens, memory-bound (the FLOPs take under
    // 1 ms at 989 TFLOP/s x 0.6). Step = (weights + KV) / (3,350 GB/s x eta), eta_mem 0.8:
    //   BF16 KV, 128 KiB/token: 32 x 8192 x 131,072 = 34,359,738,368 B
    //     -> 50,420,260,864 / 2.68e12 = 18.8135 ms: 53.153 tok/s per user, 1,700.9 cluster.
    //   FP8 KV, 64 KiB/token: 17,179,869,184 B
    //     -> 33,240,391,680 / 2.68e12 = 12.4031 ms: 80.625 tok/s per user, 2,580.0 cluster.
    //   FP8 KV calibrated at 2,010 GB/s measured (eta_kv 0.6): 16,060,522,496 / 2.68e12 +
    //     17,179,869,184 / 2.01e12 = 5.99273 + 8.54720 = 14.5399 ms: 68.776 tok/s, 2,200.8.
    QTest::addColumn<bool>("fp8");
    QTest::addColumn<double>("calibratedGBs"); // 0 = the defaults
    QTest::addColumn<double>("perUser");
    QTest::addColumn<double>("cluster");
    QTest::addRow("BF16 KV") << false << 0.0 << 53.153 << 1700.9;
    QTest::addRow("FP8 KV") << true << 0.0 << 80.625 << 2580.0;
    QTest::addRow("FP8 KV, calibrated 2,010 GB/s") << true << 2010.0 << 68.776 << 2200.8;
}

void TestSpeedChart::handComputedStep() {
    QFETCH(bool, fp8);
    QFETCH(double, calibratedGBs);
    QFETCH(double, perUser);
    QFETCH(double, cluster);
    core::Scenario s = llama8b(8192, fp8);
    s.workload.concurrency = 32;
    s.engine.maxNumSeqs = 32; // the concurrency curve ends at exactly 32
    const auto near = [](double actual, double expected) {
        return std::abs(actual - expected) <= 2e-4 * expected;
    };
    for (const SpeedView v : {SpeedView::Concurrency, SpeedView::Context}) {
        std::unique_ptr<PredictedSpeedChart> chart(makeChart(v));
        if (calibratedGBs > 0)
            chart->setCalibration(widgets::calibrationFromReport(
                resultsFile(m_dir.path(), "NVIDIA H100 80GB HBM3", {{"fp8", calibratedGBs}}),
                io::builtinGpus()));
        chart->setView(widgets::makeLedgerView(s));
        QCOMPARE(chart->concurrency(), qint64(32));
        const int cur = chart->seriesCount() - 1;
        QVERIFY(chart->seriesName(cur).startsWith(QStringLiteral("Current")));
        const QVector<double> keys = chart->seriesKeys(cur);
        // Concurrency view: its last point is batch 32; context view: the point at 8,192.
        const qsizetype at = v == SpeedView::Concurrency ? keys.size() - 1 : keys.indexOf(8192.0);
        QVERIFY(at >= 0);
        QCOMPARE(keys[at], v == SpeedView::Concurrency ? 32.0 : 8192.0);
        if (v == SpeedView::Concurrency) {
            chart->setMetric(SpeedMetric::ClusterTokensPerSecond);
            const double c = chart->seriesValues(cur)[at];
            QVERIFY2(near(c, cluster), qPrintable(QString::number(c, 'f', 3)));
        }
        chart->setMetric(SpeedMetric::TokensPerSecondPerUser);
        const double u = chart->seriesValues(cur)[at];
        QVERIFY2(near(u, perUser), qPrintable(QString::number(u, 'f', 4)));
    }
}

void TestSpeedChart::seriesFollowLadder_data() {
    QTest::addColumn<int>("metric");
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("maxModelLen"); // 0 = the model's 128K
    QTest::addRow("per user, 32K")
        << int(SpeedMetric::TokensPerSecondPerUser) << qint64(32768) << qint64(32768);
    QTest::addRow("cluster, 32K") << int(SpeedMetric::ClusterTokensPerSecond) << qint64(32768)
                                  << qint64(32768);
    QTest::addRow("per user, 4K") << int(SpeedMetric::TokensPerSecondPerUser) << qint64(4096)
                                  << qint64(8192);
    // The contiguous MHA baseline reserves 128K x 512 KiB = 64 GiB a request: none fits.
    QTest::addRow("cluster, 32K, 128K reserved")
        << int(SpeedMetric::ClusterTokensPerSecond) << qint64(32768) << qint64(0);
}

void TestSpeedChart::seriesFollowLadder() {
    QFETCH(int, metric);
    QFETCH(qint64, context);
    QFETCH(qint64, maxModelLen);
    core::Scenario s = allLevers();
    s.workload.context = context;
    s.workload.maxModelLen = maxModelLen;
    std::unique_ptr<PredictedSpeedChart> chart(makeChart(SpeedView::Concurrency));
    chart->setMetric(static_cast<SpeedMetric>(metric));
    chart->setView(widgets::makeLedgerView(s));
    const auto ladder = core::computeLadder(s);
    for (const auto& st : ladder)
        QVERIFY(st.applied);
    QCOMPARE(chart->seriesCount(), int(ladder.size()));
    for (int i = 0; i < chart->seriesCount(); ++i) {
        const core::Scenario& step = ladder[static_cast<std::size_t>(i)].scenario;
        const QVector<double> keys = chart->seriesKeys(i);
        const QVector<double> values = chart->seriesValues(i);
        const core::LedgerResult r = core::computeLedger(step);
        if (r.maxRequestsAtContext == 0) {
            // A step that holds no request has no curve, and says so in the legend.
            QVERIFY(keys.isEmpty());
            QVERIFY(chart->seriesName(i).endsWith(QStringLiteral("(no request fits)")));
            QCOMPARE(maxModelLen, qint64(0));
            continue;
        }
        QCOMPARE(keys.front(), 1.0);
        for (int k = 0; k < keys.size(); ++k) {
            const auto batch = static_cast<std::int64_t>(keys[k]);
            const core::DecodeStep d = core::decodeStep(step, batch, context);
            // Per user: one token per step; the cluster: every running request of every replica.
            const double expected = metric == int(SpeedMetric::TokensPerSecondPerUser)
                                        ? 1000.0 / d.stepMs
                                        : 1000.0 / d.stepMs * double(batch) * 1.0;
            QCOMPARE(values[k], expected);
        }
        // Each curve ends at what its step holds: memory or max_num_seqs.
        QCOMPARE(static_cast<std::int64_t>(keys.back()),
                 std::min(r.maxRequestsAtContext, core::effectiveMaxNumSeqs(step)));
    }
    QVERIFY(chart->seriesName(chart->seriesCount() - 1).startsWith(QStringLiteral("Current")));
    // The axes name their scope.
    QVERIFY(chart->csv().startsWith(QStringLiteral("series,requests_per_replica,")));
}

void TestSpeedChart::limitsAndLines_data() {
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("maxNumSeqs"); // 0 = vLLM's default
    QTest::addColumn<qint64>("expectedSeqs");
    QTest::addColumn<bool>("caps");
    // vLLM's default on a GPU of at least 70 GiB that is not an A100: 1024 sequences.
    QTest::addRow("32K, default seqs") << qint64(32768) << qint64(0) << qint64(1024) << false;
    QTest::addRow("256, default seqs cap") << qint64(256) << qint64(0) << qint64(1024) << true;
    QTest::addRow("32K, max_num_seqs 8") << qint64(32768) << qint64(8) << qint64(8) << true;
}

void TestSpeedChart::limitsAndLines() {
    QFETCH(qint64, context);
    QFETCH(qint64, maxNumSeqs);
    QFETCH(qint64, expectedSeqs);
    QFETCH(bool, caps);
    core::Scenario s = llama8b(context, true);
    s.engine.maxNumSeqs = maxNumSeqs;
    std::unique_ptr<PredictedSpeedChart> chart(makeChart(SpeedView::Concurrency));
    chart->setView(widgets::makeLedgerView(s));
    const core::LedgerResult r = core::computeLedger(s);
    QCOMPARE(chart->memoryLimit(), r.maxRequestsAtContext);
    QCOMPARE(chart->maxNumSeqs(), expectedSeqs);
    QCOMPARE(chart->memoryLineX(), double(r.maxRequestsAtContext));
    QCOMPARE(chart->maxNumSeqsLineX(), double(expectedSeqs));
    QCOMPARE(r.maxRequestsAtContext > std::int64_t(expectedSeqs), caps);
    QCOMPARE(chart->memoryLineLabel(),
             QStringLiteral("memory holds %1")
                 .arg(QString::fromStdString(core::withThousands(r.maxRequestsAtContext))));
    QCOMPARE(chart->maxNumSeqsLineLabel().endsWith(QStringLiteral("(caps)")), caps);
    // As many as fit, by default: the cursor quotes the smaller of the two.
    QCOMPARE(chart->concurrency(), std::min<std::int64_t>(r.maxRequestsAtContext, expectedSeqs));
    QVERIFY(chart->cursorText().contains(QStringLiteral("as many as fit")));
}

void TestSpeedChart::fp8ExtendsFurther() {
    // Llama-3.1-8B on an H100 at 32K, paged: FP8 halves the KV, so more requests fit (its
    // curve goes further right) and each is faster at the same concurrency (fewer bytes read).
    const core::Scenario bf16 = llama8b(32768, false), fp8 = llama8b(32768, true);
    std::unique_ptr<PredictedSpeedChart> a(makeChart(SpeedView::Concurrency));
    std::unique_ptr<PredictedSpeedChart> b(makeChart(SpeedView::Concurrency));
    a->setMetric(SpeedMetric::TokensPerSecondPerUser);
    b->setMetric(SpeedMetric::TokensPerSecondPerUser);
    a->setView(widgets::makeLedgerView(bf16));
    b->setView(widgets::makeLedgerView(fp8));
    const int ca = a->seriesCount() - 1, cb = b->seriesCount() - 1;
    QVERIFY(a->seriesName(ca).startsWith(QStringLiteral("Current")));
    QVERIFY(b->seriesName(cb).startsWith(QStringLiteral("Current")));
    const QVector<double> ka = a->seriesKeys(ca), kb = b->seriesKeys(cb);
    const auto fitsBf16 = core::computeLedger(bf16).maxRequestsAtContext;
    const auto fitsFp8 = core::computeLedger(fp8).maxRequestsAtContext;
    QCOMPARE(static_cast<std::int64_t>(ka.back()), fitsBf16);
    QCOMPARE(static_cast<std::int64_t>(kb.back()), fitsFp8);
    QVERIFY(fitsFp8 >= 2 * fitsBf16 - 1);
    QVERIFY(kb.back() > ka.back());
    QCOMPARE(a->memoryLineX(), double(fitsBf16));
    QCOMPARE(b->memoryLineX(), double(fitsFp8));
    // At the same concurrency FP8 reads half the KV: each user is faster.
    QCOMPARE(ka.front(), 1.0);
    QCOMPARE(kb.front(), 1.0);
    QVERIFY(b->seriesValues(cb).front() > a->seriesValues(ca).front());
    // The FP8 ladder step of the FP8 scenario is its own series, beside the BF16 ones.
    QVERIFY(b->seriesIndex(QStringLiteral("+FP8 E4M3")) >= 0);
}

void TestSpeedChart::contextView() {
    core::Scenario s = llama8b(8192, true);
    s.workload.concurrency = 32;
    std::unique_ptr<PredictedSpeedChart> chart(makeChart(SpeedView::Context));
    chart->setView(widgets::makeLedgerView(s));
    QCOMPARE(chart->concurrency(), qint64(32));
    const auto ladder = core::computeLadder(s);
    for (int i = 0; i < chart->seriesCount(); ++i) {
        const auto& series = chart->series()[static_cast<std::size_t>(i)];
        const QVector<double> keys = chart->seriesKeys(i);
        const QVector<double> values = chart->seriesValues(i);
        for (int k = 0; k < keys.size(); ++k) {
            const auto t = static_cast<std::int64_t>(keys[k]);
            QCOMPARE(values[k], 1000.0 / core::decodeStep(series.scenario, 32, t).stepMs);
            QVERIFY(core::computePoint(series.scenario, t).maxRequests >= 32);
        }
        // The curve stops where 32 requests no longer fit.
        const auto all = core::sweepContexts(std::max(s.model.maxContext, s.workload.context), 4);
        if (!keys.isEmpty() && keys.back() < double(all.back())) {
            const auto next =
                *std::upper_bound(all.begin(), all.end(), static_cast<std::int64_t>(keys.back()));
            QVERIFY(core::computePoint(series.scenario, next).maxRequests < 32);
        }
    }
    QVERIFY(chart->seriesCount() >= 2);
    QVERIFY(std::isnan(chart->memoryLineX())); // the limits belong to the concurrency view
}

void TestSpeedChart::errorState() {
    // 405B in BF16 on one L4: nothing fits; the chart says so and draws no stale curve.
    core::Scenario s = llama8b(8192, false);
    std::unique_ptr<PredictedSpeedChart> chart(makeChart(SpeedView::Concurrency));
    chart->setView(widgets::makeLedgerView(s));
    QVERIFY(chart->seriesCount() > 0);
    s.model = *io::findModel("llama-3.1-405b");
    s.hardware.gpu = *io::findGpu("l4");
    chart->setView(widgets::makeLedgerView(s));
    QCOMPARE(chart->seriesCount(), 0);
    QVERIFY(!chart->emptyText().isEmpty());
    QVERIFY(std::isnan(chart->memoryLineX()));
    QVERIFY(chart->cursorText().isEmpty());
}

void TestSpeedChart::recomputesOnSnapshotOnly() {
    std::unique_ptr<PredictedSpeedChart> chart(makeChart(SpeedView::Concurrency));
    const auto view = widgets::makeLedgerView(allLevers());
    QElapsedTimer t;
    t.start();
    chart->setView(view);
    const qint64 ms = t.elapsed();
    qInfo("speed curves for 5 ladder steps: %lld ms", static_cast<long long>(ms));
    const int n = chart->recomputeCount();
    chart->setView(view); // the same snapshot: nothing to do
    chart->setMetric(SpeedMetric::TokensPerSecondPerUser);
    chart->setMetric(SpeedMetric::ClusterTokensPerSecond);
    QCOMPARE(chart->recomputeCount(), n);
    // A burst of changes is one queued replot.
    const int replots = chart->replotCount();
    chart->setView(widgets::makeLedgerView(llama8b(4096, true)));
    chart->setMetric(SpeedMetric::TokensPerSecondPerUser);
    QVERIFY(chart->replotPending());
    QTRY_COMPARE(chart->replotCount(), replots + 1);
    QCOMPARE(chart->recomputeCount(), n + 1);
}

void TestSpeedChart::matchCatalogGpu_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<QString>("gpu"); // "" = no match
    // cudaDeviceProp::name as the drivers report them.
    QTest::addRow("H100 SXM") << "NVIDIA H100 80GB HBM3"
                              << "h100-80gb";
    QTest::addRow("H100 PCIe") << "NVIDIA H100 PCIe"
                               << "h100-pcie-80gb";
    QTest::addRow("H100 NVL") << "NVIDIA H100 NVL"
                              << "h100-nvl-94gb";
    QTest::addRow("H200") << "NVIDIA H200"
                          << "h200";
    QTest::addRow("A100 SXM 80") << "NVIDIA A100-SXM4-80GB"
                                 << "a100-80gb";
    QTest::addRow("A100 SXM 40") << "NVIDIA A100-SXM4-40GB"
                                 << "a100-40gb";
    QTest::addRow("A100 PCIe 80") << "NVIDIA A100 80GB PCIe"
                                  << "a100-80gb-pcie";
    QTest::addRow("A100 PCIe 40: not in the catalog") << "NVIDIA A100-PCIE-40GB"
                                                      << "";
    QTest::addRow("L4, not L40S") << "NVIDIA L4"
                                  << "l4";
    QTest::addRow("L40S") << "NVIDIA L40S"
                          << "l40s";
    QTest::addRow("RTX 4090") << "NVIDIA GeForce RTX 4090"
                              << "rtx-4090";
    QTest::addRow("RTX 6000 Ada") << "NVIDIA RTX 6000 Ada Generation"
                                  << "rtx-6000-ada";
    QTest::addRow("RTX A6000") << "NVIDIA RTX A6000"
                               << "rtx-a6000";
    QTest::addRow("MI300X") << "AMD Instinct MI300X"
                            << "mi300x";
    QTest::addRow("H200 NVL: another part") << "NVIDIA H200 NVL"
                                            << "";
    QTest::addRow("a CPU") << "Intel(R) Xeon(R) Processor (2 threads)"
                           << "";
}

void TestSpeedChart::matchCatalogGpu() {
    QFETCH(QString, device);
    QFETCH(QString, gpu);
    const core::GpuSpec* g = widgets::matchCatalogGpu(device.toStdString(), io::builtinGpus());
    QCOMPARE(g ? QString::fromStdString(g->id) : QString(), gpu);
}

void TestSpeedChart::calibrationChangesAttentionTerm_data() {
    QTest::addColumn<QString>("device");
    QTest::addColumn<QString>("scenarioGpu");
    QTest::addColumn<double>("measuredGBs"); // FP8 E4M3 decode attention, the large row
    QTest::addColumn<bool>("applies");
    QTest::addRow("H100 results, H100 scenario") << "NVIDIA H100 80GB HBM3"
                                                 << "h100-80gb" << 2010.0 << true;
    QTest::addRow("H100 results, slow kernel") << "NVIDIA H100 80GB HBM3"
                                               << "h100-80gb" << 670.0 << true;
    QTest::addRow("H200 results, H100 scenario") << "NVIDIA H200"
                                                 << "h100-80gb" << 2010.0 << false;
    QTest::addRow("H200 results, H200 scenario") << "NVIDIA H200"
                                                 << "h200" << 2880.0 << true;
    QTest::addRow("CPU results") << "Intel(R) Xeon(R) Processor"
                                 << "h100-80gb" << 2.0 << false;
}

void TestSpeedChart::calibrationChangesAttentionTerm() {
    QFETCH(QString, device);
    QFETCH(QString, scenarioGpu);
    QFETCH(double, measuredGBs);
    QFETCH(bool, applies);
    const probe::ProbeReport rep =
        resultsFile(m_dir.path(), device.toStdString(), {{"fp8", measuredGBs}, {"fp16", 3000}});
    const widgets::SpeedCalibration cal = widgets::calibrationFromReport(rep, io::builtinGpus());
    // Llama-3.1-8B, FP8 KV, batch 32 x 8K (the hand-computed row).
    core::Scenario s = llama8b(8192, true);
    s.hardware.gpu = *io::findGpu(scenarioGpu.toStdString());
    const core::DecodeStep before = core::decodeStep(s, 32, 8192);
    const core::DecodeStep after = core::decodeStep(s, 32, 8192, cal.assumptions);
    QCOMPARE(widgets::calibratesScenario(cal.assumptions, s), applies);
    QCOMPARE(after.calibrated, applies);
    if (scenarioGpu == QLatin1String("h100-80gb")) {
        // 16.06 GB of weights and 32 x 8K of FP8 KV, 17.18 GB, per step (issue 11).
        QVERIFY(std::abs(before.weightBytes - 16.06e9) < 0.01e9);
        QVERIFY(std::abs(before.kvBytes - 17.18e9) < 0.01e9);
    }
    const double bw = s.hardware.gpu.bandwidthGBs * 1e9;
    const double etaMem = core::kDefaultMemoryEfficiency;
    // The KV term at the measured fraction of the datasheet bandwidth, the rest at eta_mem.
    const double etaKv = applies ? measuredGBs / s.hardware.gpu.bandwidthGBs : etaMem;
    const double memoryMs = 1e3 * ((before.weightBytes + before.stateBytes) / (bw * etaMem) +
                                   before.kvBytes / (bw * etaKv));
    QCOMPARE(after.memoryMs, memoryMs);
    QCOMPARE(after.computeMs, before.computeMs);
    QCOMPARE(after.stepMs, std::max(memoryMs, before.computeMs));
    QCOMPARE(after.stepMs != before.stepMs, applies);
    if (cal.calibrated) {
        QCOMPARE(cal.assumptions.attentionEfficiency.at("FP8 E4M3"),
                 measuredGBs / io::findGpu(cal.gpuId.toStdString())->bandwidthGBs);
        QCOMPARE(cal.assumptions.attentionEfficiency.at("FP16"),
                 3000 / io::findGpu(cal.gpuId.toStdString())->bandwidthGBs);
        QCOMPARE(QString::fromStdString(cal.assumptions.calibrationSource),
                 QStringLiteral("kvprobe bench, %1, %2")
                     .arg(device, QString::fromStdString(rep.date.substr(0, 10))));
    } else {
        QVERIFY(cal.assumptions.attentionEfficiency.empty());
        QVERIFY2(cal.status.contains(QStringLiteral("matches no GPU")), qPrintable(cal.status));
    }
}

void TestSpeedChart::calibrationLabel() {
    const core::Scenario s = llama8b(8192, true);
    std::unique_ptr<PredictedSpeedChart> chart(makeChart(SpeedView::Concurrency));
    chart->setView(widgets::makeLedgerView(s));
    QVERIFY2(chart->assumptionsText().contains(
                 QStringLiteral("datasheet defaults, no probe results loaded")),
             qPrintable(chart->assumptionsText()));
    QVERIFY(chart->assumptionsText().contains(QStringLiteral("η_mem 0.80")));
    QVERIFY(chart->assumptionsText().contains(QStringLiteral("3,350 GB/s")));
    QVERIFY(chart->assumptionsText().contains(QStringLiteral("Estimate")));
    const auto before = chart->seriesValues(chart->seriesCount() - 1);
    const auto rep = resultsFile(m_dir.path(), "NVIDIA H100 80GB HBM3", {{"fp8", 2010}});
    chart->setCalibration(widgets::calibrationFromReport(rep, io::builtinGpus()));
    QVERIFY2(chart->assumptionsText().contains(
                 QStringLiteral("calibrated by kvprobe bench on NVIDIA H100 80GB HBM3 %1")
                     .arg(QString::fromStdString(rep.date.substr(0, 10)))),
             qPrintable(chart->assumptionsText()));
    QVERIFY(chart->assumptionsText().contains(QStringLiteral("attention η 0.60 for FP8 E4M3")));
    QVERIFY(chart->seriesValues(chart->seriesCount() - 1) != before);
    // Results from another GPU kind: the defaults, and the chart says why.
    chart->setCalibration(widgets::calibrationFromReport(
        resultsFile(m_dir.path(), "NVIDIA H200", {{"fp8", 2010}}), io::builtinGpus()));
    QVERIFY2(chart->assumptionsText().contains(QStringLiteral("not this GPU")),
             qPrintable(chart->assumptionsText()));
    QCOMPARE(chart->seriesValues(chart->seriesCount() - 1), before);
}

// The charts' titles and notes (CachedTextElement) size themselves as QCPTextElement does, and
// follow a new text or font: a cache that kept an old size would clip a title or leave a gap.
namespace {
template <class Element> struct Sizes : Element {
    using Element::Element;
    QSize minimum() const { return this->minimumOuterSizeHint(); }
    QSize maximum() const { return this->maximumOuterSizeHint(); }
};
} // namespace

void TestSpeedChart::titlesMeasureAsQCustomPlot_data() {
    QTest::addColumn<QString>("first");
    QTest::addColumn<QString>("second");
    QTest::addColumn<int>("pointSize");
    QTest::addColumn<bool>("bold");
    QTest::addRow("title, then longer")
        << "Memory per GPU"
        << "Memory per GPU at 104 requests x 4K tokens" << 10 << true;
    QTest::addRow("note, two lines")
        << "KV cache for 104 requests"
        << "KV cache for 104 requests\n32 layers: 32 full" << 8 << false;
    QTest::addRow("empty, then text") << ""
                                      << "Cursor at 4K tokens" << 9 << false;
    QTest::addRow("text, then empty") << "Cursor at 4K tokens"
                                      << "" << 9 << false;
}

void TestSpeedChart::titlesMeasureAsQCustomPlot() {
    QFETCH(QString, first);
    QFETCH(QString, second);
    QFETCH(int, pointSize);
    QFETCH(bool, bold);
    QCustomPlot plot;
    QFont font(plot.font().family(), pointSize, bold ? QFont::Bold : QFont::Normal);
    auto* ours = new Sizes<widgets::CachedTextElement>(&plot, first, font);
    auto* theirs = new Sizes<QCPTextElement>(&plot, first, font);
    QCOMPARE(ours->minimum(), theirs->minimum());
    QCOMPARE(ours->maximum(), theirs->maximum());
    ours->setText(second);
    theirs->setText(second);
    QCOMPARE(ours->minimum(), theirs->minimum());
    QCOMPARE(ours->maximum(), theirs->maximum());
    QFont larger = font;
    larger.setPointSize(pointSize + 6);
    ours->setFont(larger);
    theirs->setFont(larger);
    QCOMPARE(ours->minimum(), theirs->minimum());
    QCOMPARE(ours->maximum(), theirs->maximum());
    ours->setMargins(QMargins(3, 7, 11, 13));
    theirs->setMargins(QMargins(3, 7, 11, 13));
    QCOMPARE(ours->minimum(), theirs->minimum());
    QCOMPARE(ours->maximum(), theirs->maximum());
}

QTEST_MAIN(TestSpeedChart)
#include "tst_speed_chart.moc"
