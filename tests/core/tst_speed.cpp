// The speed model: decode step time from the bytes each GPU reads and the FLOPs it does,
// hand-computed rows, MoE expert counting, the regime switch, calibration by measurement and
// monotonicity.

#include "core/ledger.h"
#include "core/speed.h"

#include "tests/core/fixtures.h"

#include <QtTest>

using namespace kvl::core;

namespace {

using kvl::test::h100;
using kvl::test::llama8b;

Scenario scenario(const ModelSpec& m) {
    Scenario s;
    s.model = m;
    s.hardware.gpu = h100();
    s.workload.context = 8192;
    return s;
}

SpeedAssumptions ideal() {
    SpeedAssumptions a;
    a.memoryEfficiency = 1.0;
    a.flopsEfficiency = 1.0;
    return a;
}

} // namespace

class TestSpeed : public QObject {
    Q_OBJECT
private slots:
    void llama8bBatch32_data();
    void llama8bBatch32();
    void contiguousReadsOnlyTheContext();
    void defaultsAreStated();
    void expertsTouched_data();
    void expertsTouched();
    void moeReadsOnlyTouchedExperts();
    void regimeSwitch();
    void calibrationReplacesEta();
    void pipelineRaisesLatencyNotThroughput();
    void prefillIsComputeBound();
    void monotone();
    void curves();
};

void TestSpeed::llama8bBatch32_data() {
    QTest::addColumn<int>("kv");
    QTest::addColumn<double>("weightsGB");
    QTest::addColumn<double>("kvGB");
    // Issue 11's rows: 16.06 GB of weights + 34.36 GB of KV per step in BF16; FP8 KV halves
    // the KV to 17.18 GB. At eta_mem = 1 on 3350 GB/s.
    QTest::addRow("bf16 KV") << int(KvDtype::Bf16) << 16.060522496 << 34.359738368;
    QTest::addRow("fp8 KV") << int(KvDtype::Fp8E4M3) << 16.060522496 << 17.179869184;
}

void TestSpeed::llama8bBatch32() {
    QFETCH(int, kv);
    QFETCH(double, weightsGB);
    QFETCH(double, kvGB);
    Scenario s = scenario(llama8b());
    if (kv != int(KvDtype::Bf16))
        s.levers.quant = {true, KvFormat::defaultFor(static_cast<KvDtype>(kv))};
    const DecodeStep d = decodeStep(s, 32, 8192, ideal());
    // FP8 per tensor adds vLLM's k_scale and v_scale (2 x fp32) on each of the 32 layers.
    const qint64 scales = kv == int(KvDtype::Fp8E4M3) ? 32 * 8 : 0;
    QCOMPARE(qRound64(d.weightBytes), qRound64(weightsGB * 1e9) + scales);
    QCOMPARE(qRound64(d.kvBytes), qRound64(kvGB * 1e9));
    const double expectMs = (weightsGB + kvGB + scales / 1e9) / 3350.0 * 1e3;
    QVERIFY2(std::abs(d.stepMs - expectMs) < 1e-9, qPrintable(QString::number(d.stepMs, 'f', 6)));
    if (kv == int(KvDtype::Bf16))
        QCOMPARE(QString::number(d.stepMs, 'f', 2), QStringLiteral("15.05"));
    QCOMPARE(d.regime, Regime::MemoryBound);
    QCOMPARE(d.tokensPerSecondPerUser, 1e3 / d.stepMs);
    QCOMPARE(d.clusterTokensPerSecond, 32 * 1e3 / d.stepMs);
}

// A contiguous allocation reserves max_model_len (128K here) per request, but a decode step reads
// only the 8K tokens each request holds: the same 34.36 GB as paged at a block multiple.
void TestSpeed::contiguousReadsOnlyTheContext() {
    Scenario s = scenario(llama8b());
    s.levers.paging.enabled = false;
    const DecodeStep contiguous = decodeStep(s, 32, 8192, ideal());
    QCOMPARE(qRound64(contiguous.kvBytes), qint64(32) * 8192 * 131072);
    s.levers.paging.enabled = true;
    const DecodeStep paged = decodeStep(s, 32, 8192, ideal());
    QCOMPARE(qRound64(paged.kvBytes), qRound64(contiguous.kvBytes));
}

void TestSpeed::defaultsAreStated() {
    const Scenario s = scenario(llama8b());
    const DecodeStep withDefaults = decodeStep(s, 32, 8192);
    const DecodeStep atOne = decodeStep(s, 32, 8192, ideal());
    // Memory-bound, so the step is the ideal one over eta_mem = 0.8.
    QCOMPARE(kDefaultMemoryEfficiency, 0.8);
    QCOMPARE(kDefaultFlopsEfficiency, 0.6);
    QVERIFY(std::abs(withDefaults.stepMs - atOne.stepMs / 0.8) < 1e-9);
}

void TestSpeed::expertsTouched_data() {
    QTest::addColumn<int>("experts");
    QTest::addColumn<int>("topK");
    QTest::addColumn<double>("tokens");
    QTest::addColumn<double>("expected");
    QTest::addRow("one token touches top-k") << 128 << 8 << 1.0 << 8.0;
    QTest::addRow("two tokens") << 128 << 8 << 2.0 << 128 * (1 - std::pow(120.0 / 128, 2));
    QTest::addRow("b -> infinity: all experts") << 128 << 8 << 1e6 << 128.0;
    QTest::addRow("top-k of all") << 8 << 8 << 1.0 << 8.0;
}

void TestSpeed::expertsTouched() {
    QFETCH(int, experts);
    QFETCH(int, topK);
    QFETCH(double, tokens);
    QFETCH(double, expected);
    QVERIFY(std::abs(expectedExpertsTouched(experts, topK, tokens) - expected) < 1e-9);
}

void TestSpeed::moeReadsOnlyTouchedExperts() {
    // Qwen3-30B-A3B-like: 48 layers, 128 experts top-8 of 768 x 2048.
    ModelSpec m = llama8b();
    m.layers.assign(48, LayerSpec{});
    m.hiddenSize = 2048;
    m.moeIntermediateSize = 768;
    m.numExperts = 128;
    m.expertsPerToken = 8;
    m.kvHeads = 4;
    m.params = 30'532'122'624;
    const Scenario s = scenario(m);
    const double experts = 2.0 * 48 * 128 * 3 * 2048 * 768; // bf16 bytes of every expert
    const DecodeStep one = decodeStep(s, 1, 1024, ideal());
    const DecodeStep many = decodeStep(s, 4096, 1024, ideal());
    const double dense = 2.0 * m.params - experts;
    QVERIFY(std::abs(one.weightBytes - (dense + experts * 8 / 128)) < 64);
    QVERIFY(std::abs(many.weightBytes - (dense + experts)) / experts < 1e-6);
}

void TestSpeed::regimeSwitch() {
    // Batch 1 reads all the weights for one token: memory-bound. A huge batch at a short
    // context does 2 x params FLOPs per token per step: compute-bound.
    Scenario s = scenario(llama8b());
    s.engine.maxNumSeqs = 100000;
    QCOMPARE(decodeStep(s, 1, 1024).regime, Regime::MemoryBound);
    const DecodeStep big = decodeStep(s, 20000, 128);
    QCOMPARE(big.regime, Regime::ComputeBound);
    QVERIFY(big.computeMs > big.memoryMs);
    QCOMPARE(QString::fromUtf8(regimeName(big.regime).data()), QStringLiteral("compute-bound"));
}

void TestSpeed::calibrationReplacesEta() {
    // A probe that measured INT8 attention at half the datasheet bandwidth on this GPU kind.
    Scenario s = scenario(llama8b());
    s.levers.quant = {true, KvFormat::defaultFor(KvDtype::Int8)};
    SpeedAssumptions a = ideal();
    const DecodeStep before = decodeStep(s, 32, 8192, a);
    a.calibratedGpuId = "h100-80gb";
    a.attentionEfficiency["INT8"] = 0.5;
    const DecodeStep after = decodeStep(s, 32, 8192, a);
    QVERIFY(after.calibrated && !before.calibrated);
    const double kvSeconds = before.kvBytes / 3350e9;
    QVERIFY(std::abs((after.stepMs - before.stepMs) - kvSeconds * 1e3) < 1e-9);
    // Another GPU kind is not calibrated by it.
    a.calibratedGpuId = "h200";
    QVERIFY(!decodeStep(s, 32, 8192, a).calibrated);
}

void TestSpeed::pipelineRaisesLatencyNotThroughput() {
    Scenario s = scenario(llama8b());
    const DecodeStep tp1 = decodeStep(s, 16, 8192, ideal());
    s.hardware.pipelineParallel = 2;
    const DecodeStep pp2 = decodeStep(s, 16, 8192, ideal());
    // Two stages in turn read the same bytes in all: the same step (within the LM head and
    // embedding split), so no more tokens per second at the same batch.
    QVERIFY(std::abs(pp2.stepMs - tp1.stepMs) / tp1.stepMs < 0.01);
    QVERIFY(pp2.clusterTokensPerSecond <= tp1.clusterTokensPerSecond * 1.01);
}

void TestSpeed::prefillIsComputeBound() {
    Scenario s = scenario(llama8b());
    SpeedAssumptions a = ideal();
    // 8192 tokens in one chunk (max_num_batched_tokens 8192 on an H100): 2 x 8.03e9 x 8192
    // FLOPs at 989.5 TFLOP/s.
    const double ms = prefillMsEstimate(s, 8192, a);
    QVERIFY(std::abs(ms - 2.0 * 8'030'261'248.0 * 8192 / 989.5e12 * 1e3) < 1e-6);
    QVERIFY(prefillMsEstimate(s, 16384, a) > 1.99 * ms);
}

void TestSpeed::monotone() {
    Scenario s = scenario(llama8b());
    double last = 0;
    for (std::int64_t b : {1, 2, 8, 32, 64, 128}) {
        const double t = decodeStep(s, b, 8192).stepMs;
        QVERIFY(t >= last);
        last = t;
    }
    // A narrower KV format never raises the step time.
    double wide = decodeStep(s, 32, 8192).stepMs;
    for (KvDtype d : {KvDtype::Fp8E4M3, KvDtype::Int4, KvDtype::Int2}) {
        s.levers.quant = {true, KvFormat::defaultFor(d)};
        const double narrow = decodeStep(s, 32, 8192).stepMs;
        QVERIFY(narrow <= wide);
        wide = narrow;
    }
}

void TestSpeed::curves() {
    Scenario s = scenario(llama8b());
    const SpeedCurve c = speedVsConcurrency(s, {}, 16);
    QVERIFY(c.x.front() == 1);
    QCOMPARE(c.x.back(), std::min(c.memoryLimit, c.maxNumSeqs));
    for (std::size_t i = 1; i < c.x.size(); ++i) {
        QVERIFY(c.x[i] > c.x[i - 1]);
        QVERIFY(c.clusterTokensPerSecond[i] >= c.clusterTokensPerSecond[i - 1]);
        QVERIFY(c.tokensPerSecondPerUser[i] <= c.tokensPerSecondPerUser[i - 1]);
    }
    const SpeedCurve ctx = speedVsContext(s, 8);
    for (std::size_t i = 1; i < ctx.x.size(); ++i)
        QVERIFY(ctx.tokensPerSecondPerUser[i] <= ctx.tokensPerSecondPerUser[i - 1]);
}

QTEST_APPLESS_MAIN(TestSpeed)
#include "tst_speed.moc"
