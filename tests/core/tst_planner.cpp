// The deployment planner and vLLM's layout rules: TP divides the heads, KV heads split or
// replicate, PP splits layers as get_pp_indices does, EP spreads experts over TP x DP, DCP
// divides TP and only shards copies that exist; max_num_seqs caps each replica; the search
// returns a layout that holds the users and no layout with fewer GPUs does.

#include "core/deployment.h"
#include "core/engine.h"
#include "core/ledger.h"
#include "core/planner.h"
#include "core/units.h"

#include <QtTest>

using namespace kvl::core;

namespace {

GpuSpec gpu(const char* id, std::int64_t memory, int cc = 90) {
    GpuSpec g;
    g.id = id;
    g.name = id;
    g.vendor = "NVIDIA";
    g.memoryBytes = memory;
    g.computeCapability = cc;
    return g;
}
GpuSpec h100() {
    return gpu("H100 SXM 80GB", 85017821184LL);
}
GpuSpec h200() {
    return gpu("H200", 150'754'820'096LL);
}

// meta-llama/Llama-3.1-70B config.json.
ModelSpec llama70b() {
    ModelSpec m;
    m.id = m.name = "llama-3.1-70b";
    m.layers.assign(80, LayerSpec{});
    m.qHeads = 64;
    m.kvHeads = 8;
    m.headDim = 128;
    m.hiddenSize = 8192;
    m.intermediateSize = 28672;
    m.vocabSize = 128256;
    m.params = 70'553'706'496;
    m.maxContext = 131072;
    return m;
}

// Qwen/Qwen3-235B-A22B config.json: 94 layers, 64 q / 4 KV heads of 128, 128 experts top-8.
ModelSpec qwen3_235b() {
    ModelSpec m;
    m.id = m.name = "qwen3-235b-a22b";
    m.layers.assign(94, LayerSpec{});
    m.qHeads = 64;
    m.kvHeads = 4;
    m.headDim = 128;
    m.hiddenSize = 4096;
    m.intermediateSize = 12288;
    m.moeIntermediateSize = 1536;
    m.numExperts = 128;
    m.expertsPerToken = 8;
    m.vocabSize = 151936;
    m.params = 235'093'634'560;
    m.maxContext = 40960;
    return m;
}

// deepseek-ai/DeepSeek-V3 config.json: 61 MLA layers, 256 experts top-8, 3 dense layers.
ModelSpec deepseekV3() {
    ModelSpec m;
    m.id = m.name = "deepseek-v3";
    m.layers.assign(61, LayerSpec{LayerKind::Mla});
    m.qHeads = 128;
    m.kvHeads = 128;
    m.headDim = 192;
    m.kvLoraRank = 512;
    m.qkRopeHeadDim = 64;
    m.qkNopeHeadDim = 128;
    m.hiddenSize = 7168;
    m.intermediateSize = 18432;
    m.moeIntermediateSize = 2048;
    m.numExperts = 256;
    m.expertsPerToken = 8;
    m.numSharedExperts = 1;
    m.firstDenseLayers = 3;
    m.vocabSize = 129280;
    m.params = 671'026'419'200;
    m.weightDtype = WeightDtype::Fp8;
    m.maxContext = 163840;
    return m;
}

Scenario base(const ModelSpec& m) {
    Scenario s;
    s.model = m;
    s.hardware.gpu = h100();
    return s;
}

// Every valid layout of exactly n GPUs, with and without EP.
std::vector<Layout> layoutsOf(const ModelSpec& m, int n) {
    std::vector<Layout> out;
    for (int tp = 1; tp <= n; ++tp)
        for (int pp = 1; tp * pp <= n; ++pp) {
            if (n % (tp * pp) != 0)
                continue;
            for (bool ep : {false, true})
                for (int dcp = 1; dcp <= tp; ++dcp) {
                    const Layout l{tp, pp, n / (tp * pp), ep, dcp};
                    if (checkLayout(m, l))
                        out.push_back(l);
                }
        }
    return out;
}

} // namespace

class TestPlanner : public QObject {
    Q_OBJECT
private slots:
    void gpusNeededSaysWhenFlagged_data();
    void gpusNeededSaysWhenFlagged();
    void layoutRules_data();
    void layoutRules();
    void unevenPipelineSplit();
    void weightsFollowTheLayout();
    void llama70bWrongAnswerFixed();
    void searchInvariants();
    void qwen235bOnH200();
    void deepseekDpAttentionBeatsTp();
    void maxNumSeqsCaps();
    void fitsNoGpu();
    void usersDoNotFit_data();
    void usersDoNotFit();
    void seedNeedsAValidLayout_data();
    void seedNeedsAValidLayout();
};

void TestPlanner::layoutRules_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("pp");
    QTest::addColumn<bool>("ep");
    QTest::addColumn<int>("dcp");
    QTest::addColumn<QString>("error"); // empty = valid
    QTest::addRow("TP 8 divides 64 heads") << "llama" << 8 << 1 << false << 1 << "";
    QTest::addRow("TP 3 does not") << "llama" << 3 << 1 << false << 1 << "64 attention heads";
    QTest::addRow("TP 16 replicates 8 KV heads") << "llama" << 16 << 1 << false << 1 << "";
    QTest::addRow("PP over 80 layers") << "llama" << 1 << 81 << false << 1 << "exceeds the 80";
    QTest::addRow("EP needs experts") << "llama" << 8 << 1 << true << 1 << "mixture-of-experts";
    QTest::addRow("EP on a MoE") << "qwen" << 4 << 1 << true << 1 << "";
    QTest::addRow("DCP divides TP") << "deepseek" << 8 << 1 << false << 3 << "must divide";
    QTest::addRow("DCP 8 shards MLA's 8 copies") << "deepseek" << 8 << 1 << false << 8 << "";
    QTest::addRow("DCP beyond GQA's copies")
        << "llama" << 8 << 1 << false << 2 << "copies of the KV cache";
    QTest::addRow("DCP 2 with TP 16 (2 copies)") << "llama" << 16 << 1 << false << 2 << "";
}

void TestPlanner::layoutRules() {
    QFETCH(QString, model);
    QFETCH(int, tp);
    QFETCH(int, pp);
    QFETCH(bool, ep);
    QFETCH(int, dcp);
    QFETCH(QString, error);
    const ModelSpec m = model == "llama"  ? llama70b()
                        : model == "qwen" ? qwen3_235b()
                                          : deepseekV3();
    const auto st = checkLayout(m, Layout{tp, pp, 1, ep, dcp});
    if (error.isEmpty()) {
        QVERIFY2(st.ok(), st.ok() ? "" : st.error().message.c_str());
    } else {
        QVERIFY(!st.ok());
        QVERIFY2(QString::fromStdString(st.error().message).contains(error),
                 st.error().message.c_str());
    }
}

void TestPlanner::unevenPipelineSplit() {
    // get_pp_indices: 80 // 3 = 26 each, the remainder 2 to the stages before the last.
    const auto stages = pipelineStages(80, 3);
    QCOMPARE(int(stages.size()), 3);
    QCOMPARE(stages[0], std::make_pair(0, 27));
    QCOMPARE(stages[1], std::make_pair(27, 54));
    QCOMPARE(stages[2], std::make_pair(54, 80));
    const auto five = pipelineStages(61, 4); // 15 each + 1 to stage 2
    QCOMPARE(five[2].second - five[2].first, 16);
    QCOMPARE(five[3].second - five[3].first, 15);
}

void TestPlanner::weightsFollowTheLayout() {
    Scenario s = base(llama70b());
    const ParamSplit p = splitParams(s.model);
    QCOMPARE(p.embedding, qint64(128256) * 8192);
    QCOMPARE(p.lmHead, qint64(128256) * 8192);
    QCOMPARE(p.experts, qint64(0));
    // TP 4: a quarter of everything, bf16.
    const qint64 tp4 = weightsPerGpu(s, Layout{4, 1, 1, false, 1}, 0);
    QCOMPARE(tp4, (2 * s.model.params + 3) / 4);
    // PP 2 x TP 4: the first stage has the embedding and 40 layers, the last the LM head.
    const qint64 first = weightsPerGpu(s, Layout{4, 2, 1, false, 1}, 0);
    const qint64 last = weightsPerGpu(s, Layout{4, 2, 1, false, 1}, 1);
    QCOMPARE(first, last); // untied: embedding and LM head are the same size
    QVERIFY(std::llabs(first - tp4 / 2) < 16);
    // MoE: EP over TP 4 x DP 2 halves the experts on each GPU, not the rest.
    Scenario q = base(qwen3_235b());
    const ParamSplit qp = splitParams(q.model);
    QCOMPARE(qp.experts, qint64(94) * 128 * 3 * 4096 * 1536);
    QCOMPARE(qp.activePerToken, q.model.params - qp.experts + qp.experts / 16);
    const qint64 noEp = weightsPerGpu(q, Layout{4, 1, 2, false, 1}, 0);
    const qint64 ep = weightsPerGpu(q, Layout{4, 1, 2, true, 1}, 0);
    QVERIFY(std::llabs((noEp - ep) - qp.experts * 2 / 8) < 16);
}

void TestPlanner::llama70bWrongAnswerFixed() {
    // Issue: "kvledger ledger --model llama-3.1-70b --tp 4 --context 32768 --target-requests 50"
    // said "10 x H100, tensor parallel 64". Now: a layout vLLM accepts, 12 GPUs or fewer.
    PlanRequest req;
    req.base = base(llama70b());
    req.users = 50;
    req.context = 32768;
    req.gpus = {h100()};
    const auto plan = planDeployments(req);
    QCOMPARE(int(plan.gpus.size()), 1);
    const GpuPlan& g = plan.gpus[0];
    QVERIFY2(g.fits, g.reason.c_str());
    const Deployment& d = g.layouts.front();
    QVERIFY(d.layout.gpus() <= 12);
    QVERIFY(checkLayout(req.base.model, d.layout).ok());
    QVERIFY(d.clusterRequests >= 50);
    // The plan holds the users by the ledger's own numbers.
    const auto r = computeLedger(d.scenario);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY(std::min(r.maxRequestsAtContext, d.maxNumSeqs) * d.layout.dp >= 50);
    QCOMPARE(d.scenario.workload.maxModelLen, qint64(32768));
}

void TestPlanner::searchInvariants() {
    // The returned layout holds N; no valid layout with fewer GPUs does (brute force).
    for (const auto& [model, users, context] :
         {std::tuple{llama70b(), 50, 32768}, std::tuple{qwen3_235b(), 20, 16384}}) {
        PlanRequest req;
        req.base = base(model);
        req.users = users;
        req.context = context;
        req.gpus = {h100()};
        req.maxGpus = 32;
        const auto plan = planDeployments(req);
        QVERIFY2(plan.gpus[0].fits, plan.gpus[0].reason.c_str());
        const int n = plan.gpus[0].layouts.front().layout.gpus();
        for (const auto& d : plan.gpus[0].layouts) {
            QCOMPARE(d.layout.gpus(), n);
            QVERIFY(d.fits && d.clusterRequests >= users);
        }
        for (int fewer = 1; fewer < n; ++fewer)
            for (const Layout& l : layoutsOf(model, fewer)) {
                const Deployment d = evaluateDeployment(req.base, h100(), l, users, context);
                QVERIFY2(!d.fits, (model.id + " holds on " + layoutLabel(l)).c_str());
            }
    }
}

void TestPlanner::qwen235bOnH200() {
    // Issue: "For Qwen3-235B on H200 it says TP 0".
    PlanRequest req;
    req.base = base(qwen3_235b());
    req.users = 64;
    req.context = 32768;
    req.gpus = {h200()};
    const auto g = planDeployments(req).gpus[0];
    QVERIFY2(g.fits, g.reason.c_str());
    QVERIFY(g.layouts.front().layout.tp >= 1);
    QVERIFY(g.layouts.front().layout.gpus() <= 8);
}

void TestPlanner::deepseekDpAttentionBeatsTp() {
    // MLA keeps its latent on every TP rank: at 128K on H200, DP attention (experts over
    // EP) or DCP holds more than plain TP 8 on the same 8 GPUs (vLLM recipes issue 762).
    const Scenario s = base(deepseekV3());
    const Deployment tp8 = evaluateDeployment(s, h200(), Layout{8, 1, 1, false, 1}, 1, 131072);
    const Deployment dp8 = evaluateDeployment(s, h200(), Layout{1, 1, 8, true, 1}, 1, 131072);
    const Deployment dcp8 = evaluateDeployment(s, h200(), Layout{8, 1, 1, false, 8}, 1, 131072);
    QVERIFY2(tp8.clusterRequests > 0, tp8.reason.c_str());
    QVERIFY2(dp8.clusterRequests > tp8.clusterRequests, dp8.reason.c_str());
    QVERIFY2(dcp8.clusterRequests > tp8.clusterRequests, dcp8.reason.c_str());
    // DCP 8 splits the latent 8 ways: about 8x the requests of TP 8 alone.
    QVERIFY(dcp8.requestsPerReplica >= 7 * tp8.requestsPerReplica);
    PlanRequest req;
    req.base = s;
    req.users = 4 * tp8.clusterRequests;
    req.context = 131072;
    req.gpus = {h200()};
    const auto g = planDeployments(req).gpus[0];
    QVERIFY2(g.fits, g.reason.c_str());
    // Plain TP would need 4 x 8 GPUs; the plan splits the latent instead (PP stages, DP
    // attention with EP, or DCP) and needs at most 8.
    const Layout best = g.layouts.front().layout;
    QVERIFY2(best.gpus() <= 8, layoutLabel(best).c_str());
    QVERIFY2(best.pp > 1 || best.ep || best.dcp > 1, layoutLabel(best).c_str());
}

void TestPlanner::maxNumSeqsCaps() {
    // Issue: 26,260 requests "fit" at 1K with a 4K prefix. vLLM runs at most max_num_seqs
    // (1024 by default on an H100 with vllm serve) per replica.
    Scenario s = base(llama70b());
    s.model.layers.resize(8); // a small model: memory would hold tens of thousands
    s.model.params = 1'000'000'000;
    s.levers.prefix = {true, 4096, 0};
    const Deployment d = evaluateDeployment(s, h100(), Layout{}, 5000, 1024);
    QVERIFY(d.requestsMemoryHolds > 1024);
    QCOMPARE(d.requestsPerReplica, qint64(1024));
    QVERIFY(d.cappedByMaxNumSeqs);
    QVERIFY(!d.fits);
    QVERIFY(QString::fromStdString(d.reason).contains("max_num_seqs 1,024"));
    s.engine.maxNumSeqs = 8192;
    QVERIFY(evaluateDeployment(s, h100(), Layout{}, 5000, 1024).fits);
}

void TestPlanner::fitsNoGpu() {
    Scenario s = base(llama70b());
    s.model.params = 90'000'000'000'000; // 90T parameters
    PlanRequest req;
    req.base = s;
    req.users = 1;
    req.context = 4096;
    req.gpus = {h100()};
    req.maxGpus = 64;
    const auto g = planDeployments(req).gpus[0];
    QVERIFY(!g.fits);
    QVERIFY2(QString::fromStdString(g.reason).contains("the weights do not fit"), g.reason.c_str());
    QVERIFY(g.memoryNeededBytes > h100().memoryBytes);
}

void TestPlanner::usersDoNotFit_data() {
    QTest::addColumn<qint64>("users");
    QTest::addColumn<int>("maxGpus");
    // Issue 32, item 5: Llama-3.1-70B at 32K. Every layout holds some users, none holds them
    // all within maxGpus: the binding constraint is memory for the users, not the heads.
    QTest::addRow("100,000 on 64") << qint64(100'000) << 64;
    QTest::addRow("5,000 on 4") << qint64(5'000) << 4;
    QTest::addRow("5,000 on 6") << qint64(5'000) << 6;
}

void TestPlanner::usersDoNotFit() {
    QFETCH(qint64, users);
    QFETCH(int, maxGpus);
    PlanRequest req;
    req.base = base(llama70b());
    req.users = users;
    req.context = 32768;
    req.gpus = {h100()};
    req.maxGpus = maxGpus;
    const GpuPlan g = planDeployments(req).gpus[0];
    QVERIFY(!g.fits);
    const QString reason = QString::fromStdString(g.reason);
    QVERIFY2(reason.startsWith(QStringLiteral("memory for the users: at most ")),
             qPrintable(reason));
    QVERIFY2(reason.endsWith(QStringLiteral("; %1 need more than %2 GPUs")
                                 .arg(QString::fromStdString(withThousands(users)))
                                 .arg(maxGpus)),
             qPrintable(reason));
    QVERIFY(!reason.contains(QStringLiteral("heads")));
    QCOMPARE(g.memoryNeededBytes, qint64(0)); // one GPU is not short of memory
    // The nearest answer is a real layout within the limit, holding what the ledger says.
    QVERIFY(g.nearestLayout.gpus() <= maxGpus);
    QVERIFY(g.nearestUsers > 0 && g.nearestUsers < users);
    QVERIFY(checkLayout(req.base.model, g.nearestLayout));
    const Deployment d = evaluateDeployment(req.base, h100(), g.nearestLayout, users, req.context);
    QCOMPARE(d.clusterRequests, g.nearestUsers);
    QCOMPARE(d.requestsPerReplica, g.nearestPerReplica);
    QVERIFY(reason.contains(QStringLiteral("at most %1 fit on %2 x H100 SXM 80GB as %3")
                                .arg(QString::fromStdString(withThousands(g.nearestUsers)))
                                .arg(g.nearestLayout.gpus())
                                .arg(QString::fromStdString(layoutLabel(g.nearestLayout)))));
    // No layout within the limit holds more.
    for (int n = 1; n <= maxGpus; ++n)
        for (const Layout& l : layoutsOf(req.base.model, n))
            QVERIFY(evaluateDeployment(req.base, h100(), l, users, req.context).clusterRequests <=
                    g.nearestUsers);
}

void TestPlanner::seedNeedsAValidLayout_data() {
    QTest::addColumn<int>("weights");
    QTest::addColumn<int>("kv");
    QTest::addColumn<int>("pooled");
    // The 70B MHA-style model (80 layers, 64 KV heads of 128) at 8K x 10: 5 / 4 / 3 H100 by pooled
    // memory.
    QTest::addRow("fp16 / fp16") << int(WeightDtype::Fp16) << int(KvDtype::Fp16) << 5;
    QTest::addRow("int8 / fp16") << int(WeightDtype::Int8) << int(KvDtype::Fp16) << 4;
    QTest::addRow("int8 / int8") << int(WeightDtype::Int8) << int(KvDtype::Int8) << 3;
}

void TestPlanner::seedNeedsAValidLayout() {
    QFETCH(int, weights);
    QFETCH(int, kv);
    QFETCH(int, pooled);
    Scenario s = base(llama70b());
    s.model.kvHeads = 64; // the seed's MHA
    s.model.hiddenSize = 0;
    s.model.vocabSize = 0;
    s.model.params = 70'000'000'000;
    s.model.maxContext = 8192;
    s.hardware.weightDtype = static_cast<WeightDtype>(weights);
    s.levers.quant = {true, KvFormat::defaultFor(static_cast<KvDtype>(kv))};
    s.workload.context = 8192;
    QCOMPARE(computeGpusNeeded(s, 10).gpus, pooled);
    PlanRequest req;
    req.base = s;
    req.users = 10;
    req.context = 8192;
    req.gpus = {h100()};
    const auto g = planDeployments(req).gpus[0];
    QVERIFY2(g.fits, g.reason.c_str());
    // vLLM needs whole layouts: at least the pooled count, as TP x PP x DP.
    QVERIFY(g.layouts.front().layout.gpus() >= pooled);
    QVERIFY(checkLayout(s.model, g.layouts.front().layout).ok());
}

// The GPUs a target needs answer memory: the fewest GPUs of a layout vLLM accepts. Where the
// planner flags that layout (under its 10 tokens/s floor, over 4 pipeline stages), the answer
// carries the flag and the planner's own best on the GPU, the Deployment tab's.
void TestPlanner::gpusNeededSaysWhenFlagged_data() {
    QTest::addColumn<std::int64_t>("users");
    QTest::addColumn<int>("gpus");
    QTest::addColumn<QString>("layout");
    QTest::addColumn<QString>("flag");
    QTest::addColumn<int>("recommendedGpus");
    QTest::addColumn<QString>("recommended");
    QTest::addRow("70B, 50 users at 32K: PP 5 flagged")
        << std::int64_t{50} << 10 << "TP 2 x PP 5"
        << "7.9 tokens/s per user, under the floor of 10; PP 5, over 4 pipeline stages" << 12
        << "TP 2 x PP 3 x DP 2";
    QTest::addRow("70B, 10 users at 32K: nothing flagged") << std::int64_t{10} << 4 << "TP 4"
                                                           << "" << 0 << "";
}

void TestPlanner::gpusNeededSaysWhenFlagged() {
    QFETCH(std::int64_t, users);
    QFETCH(int, gpus);
    QFETCH(QString, layout);
    QFETCH(QString, flag);
    QFETCH(int, recommendedGpus);
    QFETCH(QString, recommended);
    Scenario s = base(llama70b());
    // The catalog's H100 (resources/gpus.json): the speed floor needs its bandwidth and FLOPs.
    s.hardware.gpu.bandwidthGBs = 3350;
    s.hardware.gpu.bf16Tflops = 989.5;
    s.hardware.gpu.fp8Tflops = 1979;
    s.workload.context = 32768;
    const GpusNeeded need = computeGpusNeeded(s, users);
    QCOMPARE(need.gpus, gpus);
    QCOMPARE(QString::fromStdString(layoutLabel(need.layout)), layout);
    QCOMPARE(QString::fromStdString(need.flag), flag);
    QCOMPARE(need.recommended ? need.recommended->gpus() : 0, recommendedGpus);
    if (recommendedGpus > 0)
        QCOMPARE(QString::fromStdString(layoutLabel(*need.recommended)), recommended);
}

QTEST_APPLESS_MAIN(TestPlanner)
#include "tst_planner.moc"
