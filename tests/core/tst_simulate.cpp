// The traffic simulation (core/sim): held against theory (one request alone, Little's law, the
// static capacity bound, the ledger's prefix-sharing figure), against vLLM's own scheduler tests
// (tests/v1/core/test_scheduler.py), against published `vllm bench serve` runs
// (publishedMeasurements), and against bad input.

#include "core/engine.h"
#include "core/io/catalog.h"
#include "core/io/trace.h"
#include "core/ledger.h"
#include "core/planner.h"
#include "core/sim/simulator.h"
#include "core/speed.h"

#include "tests/core/fixtures.h"
#include <QTemporaryDir>

#include <QtTest>

#include <cmath>

using namespace kvl::core;
using namespace kvl::core::sim;

namespace {

using kvl::test::h100;
using kvl::test::llama8b;

Scenario scenario() {
    Scenario s;
    s.model = llama8b();
    s.hardware.gpu = h100();
    s.workload.context = 4096;
    s.workload.maxModelLen = 32768;
    return s;
}

WorkloadSpec poisson(double rate, std::int64_t requests, std::int64_t prompt, std::int64_t output) {
    WorkloadSpec w;
    w.rate = rate;
    w.requests = requests;
    w.prompt = LengthDist::fixed(prompt);
    w.output = LengthDist::fixed(output);
    return w;
}

double rel(double a, double b) {
    return std::abs(a - b) / std::max(std::abs(b), 1e-300);
}

// Qwen/Qwen3-4B config.json (huggingface.co/Qwen/Qwen3-4B), for a published run of a model the
// catalog does not hold.
constexpr const char* kQwen3_4bConfig = R"({"architectures": ["Qwen3ForCausalLM"],
  "model_type": "qwen3", "head_dim": 128, "hidden_size": 2560, "intermediate_size": 9728,
  "max_position_embeddings": 40960, "num_attention_heads": 32, "num_hidden_layers": 36,
  "num_key_value_heads": 8, "sliding_window": null, "use_sliding_window": false,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "vocab_size": 151936})";

} // namespace

class TestSimulate : public QObject {
    Q_OBJECT
private slots:
    void lowRateIsOneRequestAlone_data();
    void lowRateIsOneRequestAlone();
    void littlesLaw_data();
    void littlesLaw();
    void saturationMatchesStaticBound();
    void prefixSharingMatchesLedger_data();
    void prefixSharingMatchesLedger();
    void overflowPreemptsAndCompletes();
    void vllmChunkedPrefillBudget();
    void vllmBudgetStopsWaitingQueue();
    void vllmDecodeBeforeChunk();
    void vllmPreemptsTheLastRunning();
    void slidingWindowFreesBlocks();
    void determinism();
    void gammaArrivals_data();
    void gammaArrivals();
    void lengthDistributions_data();
    void lengthDistributions();
    void badLengths_data();
    void badLengths();
    void absurdWorkloadRefused_data();
    void absurdWorkloadRefused();
    void queueIsCapped();
    void seriesIsBounded();
    void stepCostMatchesSpeedModel();
    void planRankedBySlo();
    void traceIsStreamed();
    void publishedMeasurements_data();
    void publishedMeasurements();
    void cancelAndProgress_data();
    void cancelAndProgress();
    void contiguousReservation();
    void asyncSchedulingInFlight_data();
    void asyncSchedulingInFlight();
    void countingPoolMatchesNumberedPool_data();
    void countingPoolMatchesNumberedPool();
    void stopWhenSloOutOfReach_data();
    void stopWhenSloOutOfReach();
};

// At a rate so low that requests never meet, TTFT is the prefill of one prompt (chunked by
// max_num_batched_tokens) and TPOT the mean decode step of batch 1 over the growing context,
// both from core/speed.h directly.
void TestSimulate::lowRateIsOneRequestAlone_data() {
    QTest::addColumn<qint64>("prompt");
    QTest::addColumn<qint64>("output");
    QTest::newRow("1K prompt, 64 out") << qint64(1000) << qint64(64);
    QTest::newRow("3K prompt, 16 out") << qint64(3000) << qint64(16);
    QTest::newRow("20K prompt, 3 chunks of 8192") << qint64(20000) << qint64(8);
}

void TestSimulate::lowRateIsOneRequestAlone() {
    QFETCH(qint64, prompt);
    QFETCH(qint64, output);
    const Scenario s = scenario();
    const SimResult r = simulate(s, poisson(0.001, 12, prompt, output));
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.completed, 12);
    QCOMPARE(r.preemptions, 0);
    const double ttft = prefillMsEstimate(s, prompt);
    double tpot = 0;
    for (std::int64_t j = 1; j < output; ++j)
        tpot += decodeStep(s, 1, prompt + j).stepMs;
    tpot /= static_cast<double>(output - 1);
    QVERIFY2(rel(r.ttftMs.p50, ttft) < 1e-7, qPrintable(QString::number(r.ttftMs.p50)));
    QVERIFY2(rel(r.ttftMs.max, ttft) < 1e-7, qPrintable(QString::number(r.ttftMs.max)));
    QVERIFY2(rel(r.tpotMs.p50, tpot) < 1e-7,
             qPrintable(QString("%1 vs %2").arg(r.tpotMs.p50).arg(tpot)));
    QVERIFY(rel(r.e2eMs.mean, ttft + tpot * static_cast<double>(output - 1)) < 1e-7);
    // Every gap between two tokens of a lone request is one decode step: their mean is TPOT.
    QCOMPARE(r.itlMs.count, 12 * (output - 1));
    QVERIFY(rel(r.itlMs.mean, tpot) < 1e-7);
    QVERIFY(r.itlMs.max >= r.itlMs.p50);
}

// Little's law: the time-average number in the system equals the arrival rate times the mean
// time in it, over a long run (here measured over the arrivals' span).
void TestSimulate::littlesLaw_data() {
    QTest::addColumn<double>("load"); // fraction of the static bound
    QTest::addColumn<int>("arrival");
    QTest::newRow("Poisson at 30%") << 0.3 << int(ArrivalKind::Poisson);
    QTest::newRow("Poisson at 70%") << 0.7 << int(ArrivalKind::Poisson);
    QTest::newRow("Gamma CV 2 at 50%") << 0.5 << int(ArrivalKind::Gamma);
}

void TestSimulate::littlesLaw() {
    QFETCH(double, load);
    QFETCH(int, arrival);
    const Scenario s = scenario();
    WorkloadSpec w = poisson(1, 20000, 0, 0);
    w.arrival = static_cast<ArrivalKind>(arrival);
    w.cv = 2;
    w.prompt = *parseLengthDist("uniform:200:1800");
    w.output = *parseLengthDist("lognormal:200:0.6");
    // The saturation rate: what the replica serves when arrivals outrun it.
    w.rate = 5 * staticRateBound(s, w);
    w.requests = 4000;
    const double saturation = simulate(s, w).throughputRps;
    QVERIFY(saturation > 0);
    w.rate = load * saturation;
    w.requests = 20000;
    const SimResult r = simulate(s, w);
    QVERIFY2(r.error.empty() && r.capped.empty(), (r.error + r.capped).c_str());
    QCOMPARE(r.completed, 20000);
    // The arrivals' own rate, within sampling error of the one asked for.
    const double lambda = static_cast<double>(r.arrived) / r.lastArrivalS;
    QVERIFY2(rel(lambda, w.rate) < 0.05, qPrintable(QString::number(lambda / w.rate)));
    const double l = lambda * r.meanLatencyS;
    QVERIFY2(rel(r.meanInSystem, l) < 0.02,
             qPrintable(QString("L %1 vs lambda W %2").arg(r.meanInSystem).arg(l)));
}

// With max_num_seqs binding (memory holds far more), the replica saturates at max running
// requests / mean time running; the largest sustainable rate found by the search agrees with
// that bound within 5%.
void TestSimulate::saturationMatchesStaticBound() {
    Scenario s = scenario();
    s.engine.maxNumSeqs = 32;
    s.workload.context = 1200;
    const LedgerResult led = computeLedger(s);
    QCOMPARE(led.requestsYouCanRun, 32); // max_num_seqs, not memory, is the limit
    QVERIFY(led.maxRequestsAtContext > 320);

    // Closed loop at the running limit: the time scale of one request.
    WorkloadSpec closed = poisson(1, 2000, 1000, 200);
    closed.arrival = ArrivalKind::ClosedLoop;
    closed.concurrency = led.requestsYouCanRun;
    const SimResult c = simulate(s, closed);
    QVERIFY2(c.error.empty(), c.error.c_str());
    QCOMPARE(c.peakRunning, 32);

    // Overload: the open loop at twice the closed loop's rate runs 32 at a time and serves at
    // max running / mean time running.
    const double closedRate = c.throughputRps;
    const SimResult over = simulate(s, poisson(2 * closedRate, 6000, 1000, 200));
    QVERIFY2(over.error.empty() && over.capped.empty(), (over.error + over.capped).c_str());
    QCOMPARE(over.peakRunning, 32);
    QVERIFY(over.peakWaiting > 1000);
    const double bound = static_cast<double>(led.requestsYouCanRun) / over.meanServiceS;
    QVERIFY2(rel(over.throughputRps, bound) < 0.05,
             qPrintable(QString("%1 vs %2").arg(over.throughputRps).arg(bound)));

    // The search: TTFT within 10 x the time one request runs, for 99% of requests.
    SimOptions o;
    o.sloTtftMs = 10 * over.meanServiceS * 1e3;
    const RateSearch found = sustainableRate(s, poisson(1, 20000, 1000, 200), o, 0.99, 0.005);
    QVERIFY2(found.found, found.note.c_str());
    QVERIFY2(rel(found.rate, bound) < 0.05,
             qPrintable(QString("%1 vs %2").arg(found.rate).arg(bound)));
    QVERIFY(found.upperRate > found.rate);
}

// N requests of one prefix admitted in one step hold what the ledger says N requests of that
// context hold with the prefix lever: each its own blocks, the full prefix blocks once.
void TestSimulate::prefixSharingMatchesLedger_data() {
    QTest::addColumn<qint64>("prompt");
    QTest::addColumn<qint64>("prefix");
    QTest::addColumn<int>("requests");
    QTest::newRow("2K of 3000, 50 requests") << qint64(3000) << qint64(2048) << 50;
    QTest::newRow("1000 of 1500 (not block aligned)") << qint64(1500) << qint64(1000) << 20;
    QTest::newRow("whole prompt (last block unshared)") << qint64(1024) << qint64(1024) << 10;
}

void TestSimulate::prefixSharingMatchesLedger() {
    QFETCH(qint64, prompt);
    QFETCH(qint64, prefix);
    QFETCH(int, requests);
    Scenario s = scenario();
    s.workload.maxNumBatchedTokens = 200000; // every prefill in the first step
    s.workload.context = prompt;
    s.levers.prefix.enabled = true;
    s.levers.prefix.sharedTokens = prefix;
    s.levers.prefix.sharingRequests = 0;
    const LedgerResult led = computeLedger(s);
    const std::int64_t ledgerBlocks = kvBytesForRequests(s, requests) / led.bytesPerBlock;

    WorkloadSpec w = poisson(1, requests, prompt, 1);
    w.arrival = ArrivalKind::ClosedLoop;
    w.concurrency = requests;
    w.prefixShare = 1;
    w.prefixTokens = prefix;
    const SimResult r = simulate(s, w);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.completed, requests);
    QCOMPARE(r.peakRunning, requests);
    QCOMPARE(r.peakBlocksTotal, ledgerBlocks);
    // And the hand count: each request ceil(P / 16) blocks, the full prefix blocks once
    // (never the block of the last token: vLLM recomputes it).
    const std::int64_t own = (prompt + 15) / 16;
    const std::int64_t shared = std::min(prefix, prompt - 1) / 16;
    QCOMPARE(r.peakBlocksTotal, requests * own - (requests - 1) * shared);
    QCOMPARE(r.prefixHitTokens, (requests - 1) * shared * 16);

    // Without a shared prefix nothing is shared.
    w.prefixShare = 0;
    const SimResult alone = simulate(s, w);
    QCOMPARE(alone.peakBlocksTotal, requests * own);
}

// A pool too small for the running requests' growth preempts (recompute) and still serves
// everything; it never holds more blocks than the pool.
void TestSimulate::overflowPreemptsAndCompletes() {
    Scenario s = scenario();
    s.workload.maxModelLen = 4096;
    s.hardware.kvMemoryBytes = std::int64_t{800} << 20; // 400 blocks of 2 MiB
    const LedgerResult led = computeLedger(s);
    QCOMPARE(led.numGpuBlocks, 400);
    WorkloadSpec w = poisson(1, 60, 1000, 2000);
    w.arrival = ArrivalKind::ClosedLoop;
    w.concurrency = 16;
    const SimResult r = simulate(s, w);
    QVERIFY2(r.error.empty() && r.capped.empty(), (r.error + r.capped).c_str());
    QVERIFY(r.preemptions > 0);
    QCOMPARE(r.completed, 60);
    QCOMPARE(r.rejected, 0);
    QCOMPARE(r.outputTokens, 60 * 2000);
    QVERIFY(r.peakBlocksTotal <= r.numBlocks);
    QCOMPARE(r.numBlocks, 399); // the null block
    // Admission by the whole prompt: at most 399 / 63 = 6 requests start together.
    QVERIFY(r.peakRunning <= 6);
}

// vLLM tests/v1/core/test_scheduler.py test_throttle_capacity_bound_guard_admits (first step):
// budget 200, two prompts of 200 tokens: the first takes the whole budget, the second waits.
void TestSimulate::vllmBudgetStopsWaitingQueue() {
    Scenario s = scenario();
    s.workload.maxNumBatchedTokens = 200;
    s.engine.maxNumSeqs = 16;
    WorkloadSpec w = poisson(1, 2, 200, 4);
    w.arrival = ArrivalKind::ClosedLoop;
    w.concurrency = 2;
    SimOptions o;
    o.asyncScheduling = false; // test_scheduler.py steps the scheduler: schedule, update
    o.traceSteps = 2;
    const SimResult r = simulate(s, w, o);
    QCOMPARE(r.stepTrace.size(), std::size_t(2));
    QCOMPARE(r.stepTrace[0].size(), std::size_t(1));
    QCOMPARE(r.stepTrace[0][0], std::make_pair(std::int64_t(1), std::int64_t(200)));
    // Next step: the first decodes (1 token), the second takes the other 199.
    QCOMPARE(r.stepTrace[1].size(), std::size_t(2));
    QCOMPARE(r.stepTrace[1][0], std::make_pair(std::int64_t(1), std::int64_t(1)));
    QCOMPARE(r.stepTrace[1][1], std::make_pair(std::int64_t(2), std::int64_t(199)));
}

// test_scheduler.py test_schedule_concurrent_partial_requests, without its
// long_prefill_token_threshold: budget 1024, three prompts of 800: 800 + 224, then the rest of
// the second (576) with 448 of the third, running requests first.
void TestSimulate::vllmChunkedPrefillBudget() {
    Scenario s = scenario();
    s.workload.maxNumBatchedTokens = 1024;
    WorkloadSpec w = poisson(1, 3, 800, 4);
    w.arrival = ArrivalKind::ClosedLoop;
    w.concurrency = 3;
    SimOptions o;
    o.asyncScheduling = false; // test_scheduler.py steps the scheduler: schedule, update
    o.traceSteps = 3;
    const SimResult r = simulate(s, w, o);
    using P = std::pair<std::int64_t, std::int64_t>;
    QCOMPARE(r.stepTrace[0], (std::vector<P>{{1, 800}, {2, 224}}));
    QCOMPARE(r.stepTrace[1], (std::vector<P>{{1, 1}, {2, 576}, {3, 447}}));
    QCOMPARE(r.stepTrace[2], (std::vector<P>{{1, 1}, {2, 1}, {3, 353}}));
}

// test_scheduler.py test_throttle_defers_inflight_prefill_chunk (its unthrottled steps): budget
// 50, a 4-token request decoding, then an 80-token prompt: 1 decode token + a 49-token chunk.
void TestSimulate::vllmDecodeBeforeChunk() {
    Scenario s = scenario();
    s.workload.maxNumBatchedTokens = 50;
    s.engine.maxNumSeqs = 16;
    // A trace-like source: 4 tokens at 0, 80 tokens just after the first step.
    struct Two : RequestSource {
        int n = 0;
        bool next(ArrivingRequest& a) override {
            if (n == 2)
                return false;
            a = ArrivingRequest{};
            a.arrivalS = n == 0 ? 0.0 : 1e-9;
            a.promptTokens = n == 0 ? 4 : 80;
            a.outputTokens = 50;
            ++n;
            return true;
        }
    } src;
    SimOptions o;
    o.asyncScheduling = false; // test_scheduler.py steps the scheduler: schedule, update
    o.traceSteps = 3;
    const SimResult r = simulate(s, src, o);
    using P = std::pair<std::int64_t, std::int64_t>;
    QCOMPARE(r.stepTrace[0], (std::vector<P>{{1, 4}}));
    QCOMPARE(r.stepTrace[1], (std::vector<P>{{1, 1}, {2, 49}}));
    QCOMPARE(r.stepTrace[2], (std::vector<P>{{1, 1}, {2, 31}}));
}

// test_scheduler.py test_preempt_during_execution: 11 blocks of 16 (10 usable: the null block),
// prefix caching off, two 80-token prompts of 5 blocks each. When the first decodes into its
// sixth block the pool is empty and the last running request (the second) is preempted: it
// goes back to waiting with its blocks freed, and the first runs alone. Here both prompts are
// admitted in one step (vLLM's test admits the second while the first is in flight).
void TestSimulate::vllmPreemptsTheLastRunning() {
    Scenario s = scenario();
    s.workload.maxModelLen = 160; // 10 blocks: what the pool holds
    s.workload.maxNumBatchedTokens = 200;
    s.hardware.kvMemoryBytes = 11 * (std::int64_t{2} << 20); // 11 blocks of 2 MiB
    QCOMPARE(computeLedger(s).numGpuBlocks, 11);
    WorkloadSpec w = poisson(1, 2, 80, 40);
    w.arrival = ArrivalKind::ClosedLoop;
    w.concurrency = 2;
    SimOptions o;
    o.asyncScheduling = false; // test_scheduler.py steps the scheduler: schedule, update
    o.prefixCaching = false;
    o.traceSteps = 3;
    const SimResult r = simulate(s, w, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.numBlocks, 10);
    using P = std::pair<std::int64_t, std::int64_t>;
    QCOMPARE(r.stepTrace[0], (std::vector<P>{{1, 80}, {2, 80}}));
    QCOMPARE(r.peakBlocksTotal, 10);
    // The first decodes; the second was preempted for its block, and nothing is admitted in a
    // step that preempted.
    QCOMPARE(r.stepTrace[1], (std::vector<P>{{1, 1}}));
    QCOMPARE(r.stepTrace[2], (std::vector<P>{{1, 1}}));
    QVERIFY(r.preemptions >= 1);
    QCOMPARE(r.completed, 2); // the second is recomputed once the first is done
    QCOMPARE(r.outputTokens, 80);
}

// A sliding-window model holds a window's blocks per sliding group however long the request:
// SlidingWindowManager.remove_skipped_blocks.
void TestSimulate::slidingWindowFreesBlocks() {
    Scenario s = scenario();
    // Mistral-7B-v0.1 style: every layer sliding 4096.
    for (auto& l : s.model.layers) {
        l.kind = LayerKind::Sliding;
        l.window = 4096;
    }
    s.workload.maxModelLen = 32768;
    WorkloadSpec w = poisson(0.001, 1, 16000, 64);
    const SimResult r = simulate(s, w);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.completed, 1);
    QCOMPARE(r.groupLabels.size(), std::size_t(1));
    QCOMPARE(r.groupLabels[0], std::string("sliding_window 4096"));
    // A 16,000-token prompt in chunks of 8192: the first chunk allocates 512 blocks; the
    // second frees those wholly before token 8192 - 4096 + 1 (256 blocks) and adds 488.
    QCOMPARE(r.peakBlocksTotal, 512 + 488 - 256 + 0); // 744 at most during the prefill
    // The full-attention model holds every block.
    Scenario f = scenario();
    const SimResult full = simulate(f, w);
    QCOMPARE(full.peakBlocksTotal, (16000 + 63 + 15) / 16);
}

void TestSimulate::determinism() {
    const Scenario s = scenario();
    WorkloadSpec w = poisson(20, 3000, 0, 0);
    w.prompt = *parseLengthDist("lognormal:1000:0.8");
    w.output = *parseLengthDist("uniform:10:400");
    w.prefixShare = 0.5;
    w.prefixTokens = 512;
    w.seed = 7;
    const SimResult a = simulate(s, w), b = simulate(s, w);
    QCOMPARE(a.completed, b.completed);
    QCOMPARE(a.steps, b.steps);
    QCOMPARE(a.ttftMs.p99, b.ttftMs.p99);
    QCOMPARE(a.tpotMs.p50, b.tpotMs.p50);
    QCOMPARE(a.endS, b.endS);
    QCOMPARE(a.series.running, b.series.running);
    QCOMPARE(a.prefixHitTokens, b.prefixHitTokens);
    w.seed = 8;
    const SimResult c = simulate(s, w);
    QVERIFY(c.endS != a.endS);
    QVERIFY(c.ttftMs.p99 != a.ttftMs.p99);
    QVERIFY(c.promptTokens != a.promptTokens);
}

// The arrival gaps have the mean 1/rate and the coefficient of variation asked for (Poisson:
// CV 1; Gamma with shape 1/CV^2 below and above 1).
void TestSimulate::gammaArrivals_data() {
    QTest::addColumn<int>("arrival");
    QTest::addColumn<double>("cv");
    QTest::newRow("Poisson") << int(ArrivalKind::Poisson) << 1.0;
    QTest::newRow("Gamma CV 0.5") << int(ArrivalKind::Gamma) << 0.5;
    QTest::newRow("Gamma CV 2") << int(ArrivalKind::Gamma) << 2.0;
    QTest::newRow("Gamma CV 4") << int(ArrivalKind::Gamma) << 4.0;
}

void TestSimulate::gammaArrivals() {
    QFETCH(int, arrival);
    QFETCH(double, cv);
    WorkloadSpec w = poisson(8, 400001, 100, 10);
    w.arrival = static_cast<ArrivalKind>(arrival);
    w.cv = cv;
    SyntheticSource src(w);
    ArrivingRequest a;
    double last = 0, sum = 0, sum2 = 0;
    int n = 0;
    while (src.next(a)) {
        if (n > 0 || a.arrivalS > 0) {
            const double gap = a.arrivalS - last;
            sum += gap;
            sum2 += gap * gap;
        }
        last = a.arrivalS;
        ++n;
    }
    QCOMPARE(n, 400001);
    const double mean = sum / (n - 1);
    const double sd = std::sqrt(sum2 / (n - 1) - mean * mean);
    QVERIFY2(rel(mean, 1.0 / 8) < 0.02, qPrintable(QString::number(mean)));
    QVERIFY2(rel(sd / mean, cv) < 0.03, qPrintable(QString::number(sd / mean)));
}

void TestSimulate::lengthDistributions_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<double>("mean");
    QTest::addColumn<qint64>("lo");
    QTest::addColumn<qint64>("hi");
    QTest::newRow("fixed") << "1024" << 1024.0 << qint64(1024) << qint64(1024);
    QTest::newRow("uniform") << "uniform:512:2048" << 1280.0 << qint64(512) << qint64(2048);
    QTest::newRow("lognormal") << "lognormal:1000:0.5" << 1000.0 << qint64(1) << qint64(1 << 24);
    QTest::newRow("histogram") << "hist:100:3,1000:1" << 325.0 << qint64(100) << qint64(1000);
}

void TestSimulate::lengthDistributions() {
    QFETCH(QString, text);
    QFETCH(double, mean);
    QFETCH(qint64, lo);
    QFETCH(qint64, hi);
    const auto d = parseLengthDist(text.toStdString());
    QVERIFY(d.ok());
    QCOMPARE(d->text(), text.toStdString());
    QCOMPARE(d->expected(), mean);
    Rng rng(3);
    double sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
        const std::int64_t v = d->sample(rng);
        QVERIFY(v >= lo && v <= hi);
        sum += static_cast<double>(v);
    }
    QVERIFY2(rel(sum / n, mean) < 0.01, qPrintable(QString::number(sum / n)));
}

void TestSimulate::badLengths_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("says");
    QTest::newRow("zero") << "0"
                          << "must be from 1 to 16,777,216 tokens, got 0";
    QTest::newRow("absurd") << "99999999999"
                            << "must be from 1 to 16,777,216 tokens";
    QTest::newRow("word") << "lots"
                          << "expected N, uniform:MIN:MAX";
    QTest::newRow("uniform reversed") << "uniform:2048:512"
                                      << "1 <= MIN <= MAX";
    QTest::newRow("lognormal sigma") << "lognormal:1000:9"
                                     << "SIGMA above 0 and at most 4";
    QTest::newRow("hist weight") << "hist:100:-1"
                                 << "weights W >= 0";
    QTest::newRow("hist empty") << "hist:100:0"
                                << "positive total weight";
}

void TestSimulate::badLengths() {
    QFETCH(QString, text);
    QFETCH(QString, says);
    const auto d = parseLengthDist(text.toStdString());
    QVERIFY(!d.ok());
    QVERIFY2(QString::fromStdString(d.error().message).contains(says), d.error().message.c_str());
}

void TestSimulate::absurdWorkloadRefused_data() {
    QTest::addColumn<double>("rate");
    QTest::addColumn<qint64>("requests");
    QTest::addColumn<double>("duration");
    QTest::addColumn<QString>("says");
    QTest::newRow("rate 1e9") << 1e9 << qint64(10) << 0.0
                              << "--rate: must be from 1e-06 to 1,000,000";
    QTest::newRow("rate 0") << 0.0 << qint64(10) << 0.0 << "--rate: must be from";
    QTest::newRow("rate nan") << std::nan("") << qint64(10) << 0.0 << "--rate: must be from";
    QTest::newRow("no end") << 1.0 << qint64(0) << 0.0 << "--requests: give --requests N";
    QTest::newRow("too many") << 1.0 << qint64(1'000'000'000) << 0.0
                              << "--requests: must be from 1";
    QTest::newRow("duration") << 1.0 << qint64(0) << 1e12 << "--duration: must be above 0";
}

void TestSimulate::absurdWorkloadRefused() {
    QFETCH(double, rate);
    QFETCH(qint64, requests);
    QFETCH(double, duration);
    QFETCH(QString, says);
    WorkloadSpec w = poisson(rate, requests, 1000, 100);
    w.durationS = duration;
    const SimResult r = simulate(scenario(), w);
    QVERIFY2(QString::fromStdString(r.error).startsWith(says), r.error.c_str());
    QVERIFY(r.error.find('\n') == std::string::npos);
}

// Arrivals far beyond what the replica serves: the waiting queue is bounded and the run says
// where it stopped.
void TestSimulate::queueIsCapped() {
    const Scenario s = scenario();
    SimOptions o;
    o.maxWaiting = 5000;
    const SimResult r = simulate(s, poisson(1e5, 1'000'000, 1000, 256), o);
    QVERIFY(r.error.empty());
    QVERIFY2(QString::fromStdString(r.capped).startsWith("the waiting queue passed 5,000 requests"),
             r.capped.c_str());
    QVERIFY(r.arrived < 10000);
    // And the step bound.
    SimOptions steps;
    steps.maxSteps = 100;
    const SimResult t = simulate(s, poisson(10, 1000, 1000, 256), steps);
    QVERIFY2(QString::fromStdString(t.capped).contains("limit of 100 engine steps"),
             t.capped.c_str());
    QCOMPARE(t.steps, 100);
}

void TestSimulate::seriesIsBounded() {
    const Scenario s = scenario();
    SimOptions o;
    o.seriesPoints = 64;
    const SimResult r = simulate(s, poisson(5, 2000, 1000, 128), o);
    QVERIFY(r.series.t.size() <= 65);
    QVERIFY(r.series.t.size() >= 32);
    QCOMPARE(r.series.blocksInUse.size(), std::size_t(1));
    QCOMPARE(r.series.blocksInUse[0].size(), r.series.t.size());
    QVERIFY(std::is_sorted(r.series.t.begin(), r.series.t.end()));
    QCOMPARE(r.series.blocksInUse[0].back(), 0); // all served, every block back
}

// StepCost at the two ends: one decode token of one request is decodeStep(batch 1) (memory
// bound, so the attention FLOPs it leaves out do not show), a prefill chunk is
// prefillMsEstimate's.
void TestSimulate::stepCostMatchesSpeedModel() {
    const Scenario s = scenario();
    const StepCost cost(s);
    QVERIFY(cost.valid());
    const DecodeStep d = decodeStep(s, 1, 4096);
    const double kv = 256.0 * 32 * 2 * 16 * 8 * 128 * 2; // 256 blocks of the 32 layers
    QVERIFY(rel(cost.stepMs(1, 0, kv, 0), d.stepMs) < 1e-12);
    QVERIFY(rel(cost.stepMs(0, 4096, 0, 0), prefillMsEstimate(s, 4096)) < 1e-12);
    // More decode tokens read the same weights: the step grows by the KV only.
    QVERIFY(rel(cost.stepMs(64, 0, 64 * kv, 0), decodeStep(s, 64, 4096).stepMs) < 1e-12);
}

// kvledger plan --rate: layouts that meet the SLO rank first, then by GPUs; GPU kinds whose best
// layout meets it first. The SLO (TTFT twice an H100's prefill, at a rate where requests rarely
// meet) separates an H100 from an A100 40GB, whose tensor cores are about 3x slower.
void TestSimulate::planRankedBySlo() {
    PlanRequest req;
    req.base = scenario();
    req.base.workload.maxModelLen = 8192;
    req.users = 8;
    req.context = 4096;
    const GpuSpec* a100 = kvl::io::findGpu("a100-40gb");
    QVERIFY(a100);
    req.gpus = {*a100, h100()};
    PlanResult plan = planDeployments(req);
    QCOMPARE(plan.bestFirst().front()->gpu.id, std::string("a100-40gb")); // 1 GPU each: order kept
    WorkloadSpec w = poisson(1, 40, 3840, 64);
    SimOptions o;
    o.sloTtftMs = 2 * prefillMsEstimate(req.base, 3840);
    rankPlanBySlo(plan, 0.05, w, o, 0.99);
    QVERIFY(plan.rankedBySlo);
    const auto order = plan.bestFirst();
    QCOMPARE(order.front()->gpu.id, std::string("h100-80gb"));
    QVERIFY(order.front()->layouts.front().meetsSlo);
    QVERIFY(!order.back()->layouts.front().meetsSlo);
    QVERIFY(order.back()->layouts.front().ttftP99Ms > o.sloTtftMs);
    for (const GpuPlan& g : plan.gpus)
        for (std::size_t i = 1; i < g.layouts.size(); ++i) {
            const Deployment& a = g.layouts[i - 1];
            const Deployment& b = g.layouts[i];
            if (!a.sloChecked || !b.sloChecked)
                continue;
            QVERIFY(a.meetsSlo || !b.meetsSlo);
            if (a.meetsSlo == b.meetsSlo)
                QVERIFY(a.layout.gpus() <= b.layout.gpus());
        }
}

// A trace is read line by line: the simulation of a 50,000-line trace holds at most what is in
// the system, not the file (its slab of requests stays small), and gives the trace's requests.
void TestSimulate::traceIsStreamed() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("t.csv"));
    {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("prompt_tokens,arrival_s,output_tokens,prefix_id\n");
        Rng rng(9);
        double t = 0;
        for (int i = 0; i < 50000; ++i) {
            t += rng.exponential() / 4.0;
            f.write(QByteArray::number(100 + int(rng.next() % 900)) + "," +
                    QByteArray::number(t, 'f', 6) + ",16," + (i % 2 ? "7" : "") + "\n");
        }
    }
    auto src = kvl::io::TraceSource::open(path.toStdString(), 64);
    QVERIFY(src.ok());
    const SimResult r = simulate(scenario(), **src);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.completed, 50000);
    QCOMPARE(r.outputTokens, 50000 * 16);
    QVERIFY(r.peakRunning + r.peakWaiting < 200);
    QVERIFY(r.prefixHitTokens > 0); // odd lines share prefix 7's first 64 tokens
    QCOMPARE((*src)->lineNumber(), 50001);
}

// Correct against the world: published `vllm bench serve` runs, replayed with the default
// speed model (no calibration). A closed loop of C clients is `--max-concurrency C
// --request-rate inf`; `--dataset-name random` with range ratio 0 sends fixed lengths. Each row
// asserts the simulated/published ratio inside the band the README reports, so a change to the
// speed model or the scheduler that moves a figure out of its band fails here. Rows inside 20%
// have a band inside [0.8, 1.2]; a miss has a band around its measured miss.
enum class Figure { DecodeTokPerS, GainOverC1, ReqPerS, TpotMs, TtftMs };

void TestSimulate::publishedMeasurements_data() {
    QTest::addColumn<QString>("model"); // catalog id, or "qwen3-4b" (kQwen3_4bConfig)
    QTest::addColumn<QString>("gpu");
    QTest::addColumn<qint64>("maxModelLen"); // 0 = the model's
    QTest::addColumn<double>("memUtil");     // 0 = the release's default
    QTest::addColumn<qint64>("concurrency"); // 0 = all at once (an open loop at 10,000/s)
    QTest::addColumn<qint64>("prompt");
    QTest::addColumn<qint64>("output");
    QTest::addColumn<qint64>("requests");
    QTest::addColumn<int>("figure");
    QTest::addColumn<double>("published");
    QTest::addColumn<double>("lo"); // simulated / published must lie in [lo, hi]
    QTest::addColumn<double>("hi");
    // vLLM's async scheduling: the default since vllm PR #27614 (vllm issue #27679, "Async
    // Scheduling Plan"); in 0.11.x it was opt-in (--async-scheduling), off in these runs.
    QTest::addColumn<bool>("asyncScheduling");

    // John Musgrave, "vLLM throughput-latency sweep on NVIDIA A100" (johnmusgrave.com/p/
    // vllm-throughput-latency-sweep-on): meta-llama/Llama-3.1-8B-Instruct BF16 on one A100
    // 40GB, vLLM 0.23.0, `vllm serve` defaults; `vllm bench serve --dataset-name random
    // --random-input-len 1024 --random-output-len 128 --ignore-eos --max-concurrency C
    // --num-prompts 20C`. It reports decode at one request at "about 75 tokens/sec" and
    // "a 6.6x gain" in throughput from C=1 to C=8.
    QTest::newRow("A100-40GB Llama-3.1-8B v0.23.0 C=1: decode 75 tok/s")
        << "llama-3.1-8b"
        << "a100-40gb" << qint64(0) << 0.0 << qint64(1) << qint64(1024) << qint64(128) << qint64(20)
        << int(Figure::DecodeTokPerS) << 75.0 << 0.95 << 1.1 << true;
    QTest::newRow("A100-40GB Llama-3.1-8B v0.23.0 C=8: 6.6x C=1's throughput")
        << "llama-3.1-8b"
        << "a100-40gb" << qint64(0) << 0.0 << qint64(8) << qint64(1024) << qint64(128)
        << qint64(160) << int(Figure::GainOverC1) << 6.6 << 0.85 << 0.95 << true;

    // GPUStack performance lab, "Optimizing Qwen3-8B Latency on NVIDIA H100 GPUs"
    // (github.com/gpustack/gpustack docs/performance-lab/qwen3-8b/h100-latency.md, its vLLM
    // baseline): Qwen/Qwen3-8B on one H100 SXM, vLLM v0.11.0, `vllm serve Qwen/Qwen3-8B`;
    // `vllm bench serve --backend openai-chat --dataset-name sharegpt --num-prompts 100
    // --max-concurrency 4`: 23,260 input and 22,061 generated tokens, 2.25 req/s, mean TTFT
    // 64.00 ms, mean TPOT 7.38 ms. ShareGPT's lengths vary; they are replayed here fixed at
    // the run's means (233 in, 221 out). Misses, kept as measured: TTFT 0.40x (the published
    // one holds the chat template, tokenizing and the HTTP round trip, none of which the
    // simulation has; with lognormal lengths its TTFT is smaller still) and 1.28x the
    // requests, from the shorter TPOT and TTFT together. TPOT is within 20%.
    for (const auto& [name, figure, published, lo, hi] :
         {std::tuple{"H100 Qwen3-8B v0.11.0 C=4: 2.25 req/s (miss)", Figure::ReqPerS, 2.25, 1.2,
                     1.35},
          std::tuple{"H100 Qwen3-8B v0.11.0 C=4: mean TPOT 7.38 ms", Figure::TpotMs, 7.38, 0.8,
                     0.9},
          std::tuple{"H100 Qwen3-8B v0.11.0 C=4: mean TTFT 64.0 ms (miss)", Figure::TtftMs, 64.0,
                     0.33, 0.47}})
        QTest::newRow(name) << "qwen3-8b"
                            << "h100-80gb" << qint64(0) << 0.0 << qint64(4) << qint64(233)
                            << qint64(221) << qint64(100) << int(figure) << published << lo << hi
                            << false;

    // GPUStack performance lab, "Optimizing Qwen3-14B Throughput on NVIDIA H100 GPUs"
    // (github.com/gpustack/gpustack docs/performance-lab/qwen3-14b/h100.md, "Baseline benchmark
    // results"): Qwen/Qwen3-14B on one H100 SXM, vLLM v0.11.0, `vllm serve Qwen/Qwen3-14B`;
    // `vllm bench serve --dataset-name random` with every request sent at once (no
    // --max-concurrency, rate inf): 100 prompts of 32,000 tokens (9,855 generated, 99 each on
    // average) in 386.80 s, and 500 of 4,000 (1,997,942 in, 99,803 out) in 227.57 s. Sent at
    // once is an open loop here at 10,000 req/s. Misses, kept as measured: prefill-heavy load
    // runs 1.6x (4K) to 2.1x (32K) faster than measured; the default speed model's prefill
    // (FLOPs at its assumed efficiency, attention included) is optimistic on H100 at these
    // lengths.
    for (const auto& [name, prompt, output, requests, published, lo, hi] :
         {std::tuple{"H100 Qwen3-14B v0.11.0 32K in, all at once: 0.2585 req/s (miss)",
                     qint64(32000), qint64(99), qint64(100), 100 / 386.80, 1.9, 2.25},
          std::tuple{"H100 Qwen3-14B v0.11.0 4K in, all at once: 2.197 req/s (miss)", qint64(3996),
                     qint64(200), qint64(500), 500 / 227.57, 1.5, 1.75}})
        QTest::newRow(name) << "qwen3-14b"
                            << "h100-80gb" << qint64(0) << 0.0 << qint64(0) << prompt << output
                            << requests << int(Figure::ReqPerS) << published << lo << hi << false;

    // vLLM PR #38479 (github.com/vllm-project/vllm/pull/38479), its baseline run: Qwen/Qwen3-4B
    // on one H100, TP 1, --max-model-len 8192 --gpu-memory-utilization 0.85; `vllm bench serve`
    // random 512 in / 128 out, 1500 prompts at --max-concurrency 80: 41.75 req/s, mean TPOT
    // 10.17 ms, mean TTFT 596.97 ms (vLLM main at the PR's time; the figures as quoted in the
    // brief for this work, the thread itself not being in our search index to re-read).
    for (const auto& [name, figure, published, lo, hi] :
         // Misses, kept as measured: its TTFT is 0.33x (the speed model has no per-step CPU
         // cost and no API server, tokenizer or streaming time, which the published TTFT
         // holds; 0.19x before async scheduling's step of waiting was modelled), and so,
         // clients over end-to-end latency, it serves 1.53x the requests. TPOT is within 20%.
         {std::tuple{"H100 Qwen3-4B C=80: 41.75 req/s (miss)", Figure::ReqPerS, 41.75, 1.45, 1.65},
          std::tuple{"H100 Qwen3-4B C=80: mean TPOT 10.17 ms", Figure::TpotMs, 10.17, 0.8, 0.95},
          std::tuple{"H100 Qwen3-4B C=80: mean TTFT 596.97 ms (miss)", Figure::TtftMs, 596.97, 0.27,
                     0.4}})
        QTest::newRow(name) << "qwen3-4b"
                            << "h100-80gb" << qint64(8192) << 0.85 << qint64(80) << qint64(512)
                            << qint64(128) << qint64(1500) << int(figure) << published << lo << hi
                            << true;
}

void TestSimulate::publishedMeasurements() {
    QFETCH(QString, model);
    QFETCH(QString, gpu);
    QFETCH(qint64, maxModelLen);
    QFETCH(double, memUtil);
    QFETCH(qint64, concurrency);
    QFETCH(qint64, prompt);
    QFETCH(qint64, output);
    QFETCH(qint64, requests);
    QFETCH(int, figure);
    QFETCH(double, published);
    QFETCH(double, lo);
    QFETCH(double, hi);
    QFETCH(bool, asyncScheduling);

    Scenario s;
    s.engine.asyncScheduling = asyncScheduling;
    if (model == "qwen3-4b") {
        auto m = kvl::io::parseHfConfig(kQwen3_4bConfig, "Qwen/Qwen3-4B config.json");
        QVERIFY(m.ok());
        s.model = *m;
    } else {
        const ModelSpec* m = kvl::io::findModel(model.toStdString());
        QVERIFY(m);
        s.model = *m;
    }
    const GpuSpec* g = kvl::io::findGpu(gpu.toStdString());
    QVERIFY(g);
    s.hardware.gpu = *g;
    s.workload.maxModelLen = maxModelLen;
    if (memUtil > 0)
        s.hardware.memoryUtilization = memUtil;

    auto run = [&](qint64 clients, qint64 n) {
        WorkloadSpec w;
        if (clients > 0) {
            w.arrival = ArrivalKind::ClosedLoop;
            w.concurrency = clients;
        } else {
            w.rate = 10000; // `--request-rate inf`: every request at once
        }
        w.requests = n;
        w.prompt = LengthDist::fixed(prompt);
        w.output = LengthDist::fixed(output);
        return simulate(s, w);
    };
    const SimResult r = run(concurrency, requests);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.completed, requests);
    double simulated = 0;
    switch (static_cast<Figure>(figure)) {
    case Figure::DecodeTokPerS:
        simulated = 1000.0 / r.tpotMs.mean;
        break;
    case Figure::GainOverC1: {
        const SimResult one = run(1, 20);
        QVERIFY2(one.error.empty(), one.error.c_str());
        simulated = r.outputTokensPerS / one.outputTokensPerS;
        break;
    }
    case Figure::ReqPerS:
        simulated = r.throughputRps;
        break;
    case Figure::TpotMs:
        simulated = r.tpotMs.mean;
        break;
    case Figure::TtftMs:
        simulated = r.ttftMs.mean;
        break;
    }
    const double ratio = simulated / published;
    qInfo("published %.4g, simulated %.4g, ratio %.3f", published, simulated, ratio);
    QVERIFY2(ratio >= lo && ratio <= hi,
             qPrintable(QString("ratio %1 outside [%2, %3]").arg(ratio).arg(lo).arg(hi)));
}

// SimOptions::cancel and ::progress (the window's Traffic tab runs the simulation on a worker
// and stops it when the scenario changes): an uncancelled run or search reports a fraction that
// never decreases and ends at exactly 1; a cancel set from the first report stops it early,
// saying so, with fewer requests served (or fewer runs) than the whole job.
void TestSimulate::cancelAndProgress_data() {
    QTest::addColumn<bool>("search");
    QTest::addRow("simulate") << false;
    QTest::addRow("sustainableRate") << true;
}

void TestSimulate::cancelAndProgress() {
    QFETCH(bool, search);
    const Scenario s = scenario();
    const WorkloadSpec w = poisson(40, 600, 512, 128);
    SimOptions o;
    o.sloTtftMs = 2000;
    o.sloTpotMs = 50;
    std::vector<double> seen;
    o.progress = [&](double f) { seen.push_back(f); };
    const SimResult whole = search ? SimResult{} : simulate(s, w, o);
    const RateSearch wholeSearch = search ? sustainableRate(s, w, o, 0.99, 0.05) : RateSearch{};
    QVERIFY2(whole.error.empty() && wholeSearch.note.empty(),
             (whole.error + wholeSearch.note).c_str());
    QVERIFY(!whole.cancelled && !wholeSearch.cancelled);
    QVERIFY2(seen.size() >= 3, std::to_string(seen.size()).c_str()); // reports along the way
    for (std::size_t i = 1; i < seen.size(); ++i)
        QVERIFY2(seen[i] >= seen[i - 1], std::to_string(i).c_str());
    QCOMPARE(seen.back(), 1.0);
    QVERIFY(seen.front() < 1.0);
    if (search)
        QVERIFY(wholeSearch.found && wholeSearch.runs >= 3);
    else
        QCOMPARE(whole.completed, 600);

    // Cancelled at the first report.
    std::atomic<bool> cancel{false};
    o.cancel = &cancel;
    seen.clear();
    o.progress = [&](double f) {
        seen.push_back(f);
        cancel.store(true);
    };
    if (search) {
        const RateSearch r = sustainableRate(s, w, o, 0.99, 0.05);
        QVERIFY(r.cancelled);
        QVERIFY(!r.found);
        QVERIFY2(r.note.find("cancelled") != std::string::npos, r.note.c_str());
        QVERIFY2(r.runs < wholeSearch.runs, std::to_string(r.runs).c_str());
    } else {
        const SimResult r = simulate(s, w, o);
        QVERIFY(r.cancelled);
        QVERIFY2(r.error.find("cancelled") != std::string::npos, r.error.c_str());
        QVERIFY2(r.completed < whole.completed, std::to_string(r.completed).c_str());
    }
    QVERIFY(std::find(seen.begin(), seen.end(), 1.0) == seen.end()); // never "done"
}

// Without paging every request reserves max_model_len: no more run at once than the ledger's
// contiguous reservations, none is preempted, every one is served, and the same traffic meets
// the SLO at a higher rate once paging is on.
void TestSimulate::contiguousReservation() {
    Scenario s = scenario();
    s.workload.maxModelLen = 32768;
    s.levers.paging.enabled = false;
    Scenario one = s;
    one.workload.context = 1;
    const std::int64_t reservations = computeLedger(one).maxRequestsAtContext;
    QVERIFY(reservations > 0 && reservations < 64); // 4 GiB per reservation
    const WorkloadSpec w = poisson(50, 300, 1024, 128);
    const SimResult r = simulate(s, w);
    QVERIFY2(r.error.empty() && r.capped.empty(), (r.error + r.capped).c_str());
    QCOMPARE(r.completed, 300);
    QCOMPARE(r.preemptions, 0);
    QVERIFY(r.peakRunning <= reservations);
    QCOMPARE(r.peakRunning, reservations); // 50 req/s keeps every reservation busy
    QCOMPARE(r.maxNumSeqs, reservations);
    s.levers.paging.enabled = true;
    const SimResult paged = simulate(s, w);
    QVERIFY(paged.peakRunning > reservations);
    QVERIFY(paged.ttftMs.p99 < r.ttftMs.p99);
}

// vLLM's async scheduling (vllm/v1/core/sched/async_scheduler.py; vllm/v1/engine/core.py,
// step_with_batch_queue): step k+1 is scheduled while step k runs, its running requests'
// tokens in flight as placeholders (num_output_placeholders). Three requests at 0 with
// max_num_seqs 2: A (4 + 2 tokens), B (4 + 10), C (4 + 2).
//   - Synchronous: A's second token ends step 2, so C is admitted in step 3.
//   - Async: step 2 is scheduled before step 1's tokens are back, A and B decoding on
//     placeholders; step 3 is scheduled while step 2 (A's last token) runs: A is not
//     scheduled again (schedule(): "avoid scheduling an extra step" when the tokens in flight
//     reach max_tokens) but still holds its slot, so C waits for step 4.
// A request alone takes as many steps as it has tokens either way (no extra step).
void TestSimulate::asyncSchedulingInFlight_data() {
    QTest::addColumn<int>("scenarioAsync"); // EngineOptions::asyncScheduling
    QTest::addColumn<int>("optionAsync");   // SimOptions::asyncScheduling: -1 = the scenario's
    QTest::addColumn<bool>("async");
    QTest::newRow("the scenario's default (vLLM's: on)") << 1 << -1 << true;
    QTest::newRow("--no-async-scheduling") << 0 << -1 << false;
    QTest::newRow("forced on by the options") << 0 << 1 << true;
    QTest::newRow("forced off by the options") << 1 << 0 << false;
}

void TestSimulate::asyncSchedulingInFlight() {
    QFETCH(int, scenarioAsync);
    QFETCH(int, optionAsync);
    QFETCH(bool, async);
    Scenario s = scenario();
    s.engine.maxNumSeqs = 2;
    s.engine.asyncScheduling = scenarioAsync != 0;
    struct Three : RequestSource {
        int n = 0;
        bool next(ArrivingRequest& a) override {
            if (n == 3)
                return false;
            a = ArrivingRequest{};
            a.promptTokens = 4;
            a.outputTokens = n == 1 ? 10 : 2;
            ++n;
            return true;
        }
    } src;
    SimOptions o;
    if (optionAsync >= 0)
        o.asyncScheduling = optionAsync != 0;
    o.traceSteps = 4;
    const SimResult r = simulate(s, src, o);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.completed, 3);
    QCOMPARE(r.outputTokens, 14);
    using P = std::pair<std::int64_t, std::int64_t>;
    QCOMPARE(r.stepTrace[0], (std::vector<P>{{1, 4}, {2, 4}}));
    QCOMPARE(r.stepTrace[1], (std::vector<P>{{1, 1}, {2, 1}}));
    if (async) {
        QCOMPARE(r.stepTrace[2], (std::vector<P>{{2, 1}}));
        QCOMPARE(r.stepTrace[3], (std::vector<P>{{2, 1}, {3, 4}}));
    } else {
        QCOMPARE(r.stepTrace[2], (std::vector<P>{{2, 1}, {3, 4}}));
        QCOMPARE(r.stepTrace[3], (std::vector<P>{{2, 1}, {3, 1}}));
    }
    // B's 10 tokens are 10 steps either way, one after another (C's wait costs B nothing).
    QCOMPARE(r.steps, 10);

    // One request alone: a step per token, TTFT one prefill step, no step past its last token.
    WorkloadSpec one = poisson(0.001, 1, 1000, 64);
    const SimResult alone = simulate(s, one, o);
    QCOMPARE(alone.steps, 64);
    QCOMPARE(alone.outputTokens, 64);
    const StepCost cost(s);
    const double prefillMs = cost.stepMs(0, 1000, 0, 0);
    QVERIFY(std::abs(alone.ttftMs.p50 - prefillMs) < 0.2 * prefillMs);
}

// Without the prefix cache the pool keeps counts only (no block numbers, reference counts or
// free queue: nothing the scheduler reads depends on them then). With it on, where the cache
// can find nothing (no shared prefix, no preemption to recompute), the numbered pool must give
// the same run to the step: a block counted wrong anywhere (a window's freed blocks, a Mamba
// group's fixed ones, a finished request's) shows in the step times, the peaks and the series.
void TestSimulate::countingPoolMatchesNumberedPool_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("gpu");
    QTest::addColumn<qint64>("prompt");
    QTest::addColumn<double>("rate");
    QTest::newRow("full attention") << "llama-3.1-8b"
                                    << "h100-80gb" << qint64(3000) << 6.0;
    QTest::newRow("sliding 128 + full") << "gpt-oss-120b"
                                        << "h200" << qint64(6000) << 3.0;
    QTest::newRow("gated delta net + full") << "qwen3.5-27b"
                                            << "h200" << qint64(5000) << 3.0;
}

void TestSimulate::countingPoolMatchesNumberedPool() {
    QFETCH(QString, model);
    QFETCH(QString, gpu);
    QFETCH(qint64, prompt);
    QFETCH(double, rate);
    Scenario s;
    const ModelSpec* m = kvl::io::findModel(model.toStdString());
    const GpuSpec* g = kvl::io::findGpu(gpu.toStdString());
    QVERIFY(m && g);
    s.model = *m;
    s.hardware.gpu = *g;
    s.workload.maxModelLen = 16384;
    const WorkloadSpec w = poisson(rate, 300, prompt, 300);
    SimOptions counting, numbered;
    counting.prefixCaching = false;
    numbered.prefixCaching = true;
    const SimResult a = simulate(s, w, counting), b = simulate(s, w, numbered);
    QVERIFY2(a.error.empty() && b.error.empty(), (a.error + b.error).c_str());
    QCOMPARE(a.completed, 300);
    QCOMPARE(b.completed, 300);
    QCOMPARE(b.prefixHitTokens, 0);
    QCOMPARE(a.preemptions, 0);
    QCOMPARE(b.preemptions, 0);
    QVERIFY(a.peakRunning > 1); // requests overlap: blocks come and go among several
    QCOMPARE(a.steps, b.steps);
    QCOMPARE(a.endS, b.endS);
    QCOMPARE(a.peakBlocksInUse, b.peakBlocksInUse);
    QCOMPARE(a.peakBlocksTotal, b.peakBlocksTotal);
    QCOMPARE(a.series.blocksInUse, b.series.blocksInUse);
    QCOMPARE(a.ttftMs.p99, b.ttftMs.p99);
    QCOMPARE(a.tpotMs.p50, b.tpotMs.p50);
    QCOMPARE(a.itlMs.p90, b.itlMs.p90);
    // And every block comes back: the last sample, after the last request, holds none.
    for (const auto& series : a.series.blocksInUse)
        QCOMPARE(series.back(), 0);
}

// SimOptions::stopBelowAttainment (what the rate search runs with): a rate past the knee stops
// once more requests have missed the SLO than the attainment allows, and says so; whether the
// rate meets the SLO is the whole run's answer. A rate that meets it runs whole, the same run
// as without the option.
void TestSimulate::stopWhenSloOutOfReach_data() {
    QTest::addColumn<double>("rate");
    QTest::addColumn<bool>("meets");
    QTest::newRow("below the knee") << 2.0 << true;
    QTest::newRow("past the knee") << 60.0 << false;
    QTest::newRow("far past it") << 400.0 << false;
}

void TestSimulate::stopWhenSloOutOfReach() {
    QFETCH(double, rate);
    QFETCH(bool, meets);
    const Scenario s = scenario();
    const WorkloadSpec w = poisson(rate, 600, 1000, 200);
    SimOptions o;
    o.sloTtftMs = 500;
    o.sloTpotMs = 50;
    const double attainment = 0.99;
    const SimResult whole = simulate(s, w, o);
    QVERIFY2(whole.error.empty() && whole.capped.empty(), (whole.error + whole.capped).c_str());
    QCOMPARE(whole.completed, 600);
    QCOMPARE(whole.sloAttainment >= attainment, meets);
    o.stopBelowAttainment = attainment;
    const SimResult early = simulate(s, w, o);
    QVERIFY2(early.error.empty(), early.error.c_str());
    QCOMPARE(early.sloOutOfReach, !meets);
    if (meets) {
        QVERIFY(early.capped.empty());
        QCOMPARE(early.steps, whole.steps);
        QCOMPARE(early.ttftMs.p99, whole.ttftMs.p99);
        QCOMPARE(early.sloAttainment, whole.sloAttainment);
        return;
    }
    QVERIFY(!early.capped.empty());
    QVERIFY(early.steps < whole.steps);
    QVERIFY(early.completed < whole.completed);
    QVERIFY(early.sloAttainment < attainment);
    // It stopped at the first step whose completions made the SLO unreachable: 1% of 600 is 6,
    // so 7 misses or a few more (one step may finish several requests).
    const auto missed = std::llround((1 - early.sloAttainment) * double(early.completed));
    QVERIFY2(missed >= 7, std::to_string(missed).c_str());
    QVERIFY(double(600 - missed) / 600 < attainment);
}

QTEST_APPLESS_MAIN(TestSimulate)
#include "tst_simulate.moc"
