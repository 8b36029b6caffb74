// Tests for core/io/ledger_json: the documents of `kvledger ledger --json` and
// `kvledger plan --json`, built without the command line (the code under test has no Qt; Qt
// Test only runs it). Each ledger row is a catalog model on a catalog GPU, its figures worked
// by hand from the model's config.json and vLLM's KV-cache accounting
// (vllm/v1/kv_cache_interface.py: a block of block_size tokens holds a K and a V vector per KV
// head on this GPU, per layer; vllm/v1/core/kv_cache_utils.py: num_gpu_blocks = available KV
// memory // page size), and the document must carry exactly what core computed.

#include "core/io/ledger_json.h"
#include "core/io/scenario_args.h"
#include "core/io/scenario_file.h"
#include "core/ledger.h"
#include "core/planner.h"
#include "core/units.h"

#include <QtTest>

#include <cmath>
#include <string>
#include <vector>

using namespace kvl;

namespace {

using Json = nlohmann::ordered_json;

// The scenario `kvledger ledger --model M --gpu G --tp N --kv-dtype D` runs (vLLM's defaults
// otherwise: paging 16, prefix caching of 2,048 shared tokens, 0.92 of the GPU's memory).
core::Scenario scenario(const std::vector<io::GivenOption>& options) {
    auto s = io::applyScenarioOptions(options, io::defaultScenario());
    if (!s)
        qFatal("%s", s.error().message.c_str());
    return *s;
}

std::int64_t i64(const Json& j, const char* key) {
    return j.at(key).get<std::int64_t>();
}

} // namespace

class TestLedgerJson : public QObject {
    Q_OBJECT
private slots:
    void ledgerFigures_data();
    void ledgerFigures();
    void ledgerKeysInOrder();
    void ledgerLadder();
    void planFits();
    void planDoesNotFit();
};

void TestLedgerJson::ledgerFigures_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("gpu");
    QTest::addColumn<int>("tp");
    QTest::addColumn<QString>("kvDtype"); // --kv-dtype
    QTest::addColumn<QString>("kvDtypeName");
    QTest::addColumn<qint64>("kvPerToken");
    QTest::addColumn<qint64>("kvPerTokenPerGpu");
    QTest::addColumn<qint64>("pageBytesPerGpu");
    QTest::addColumn<qint64>("requestedBytes");
    QTest::addColumn<qint64>("numGpuBlocks");
    QTest::addColumn<double>("maxConcurrency");
    QTest::addColumn<QString>("refusal"); // a part of vLLM's refusal; empty when it starts

    // Llama-3.1-70B (80 layers, 8 KV heads of head_dim 128) on 4 x H100 SXM 80GB
    // (85,017,821,184 bytes as the driver reports them), vLLM's default max_model_len 131,072.
    //   BF16: 2 (K, V) x 8 heads x 128 x 2 B x 80 layers = 327,680 B per token; TP 4 leaves 2
    //   KV heads per GPU: 81,920 B; a block of 16 tokens 1,310,720 B.
    //   requested = floor(0.92 x 85,017,821,184) = 78,216,395,489 B per GPU;
    //   available = requested - weights per GPU (70,553,706,496 BF16 params x 2 B / 4 =
    //               35,276,853,248) - core's reserve estimate (5,253,365,760 activation +
    //               1,073,741,824 non-torch) = 36,612,434,657 B;
    //   blocks = 36,612,434,657 // 1,310,720 = 27,933 (27,933 x 1,310,720 = 36,612,341,760);
    //   tokens 27,933 x 16 = 446,928; concurrency 446,928 / 131,072 = 3.4098 -> 3.41.
    QTest::newRow("llama-3.1-70b tp4 bf16")
        << "llama-3.1-70b"
        << "h100-80gb" << 4 << "auto"
        << "bf16" << qint64(327'680) << qint64(81'920) << qint64(1'310'720)
        << qint64(78'216'395'489) << qint64(27'933) << 3.41 << QString();
    //   INT8 per token-head: 128 B + a 4 B fp32 scale per head per K or V:
    //   2 x 8 x 132 x 80 = 168,960 B per token; 42,240 per GPU; a block 675,840 B. The same
    //   36,612,434,657 B: 54,173 blocks (54,173 x 675,840 = 36,612,280,320), 866,768 tokens,
    //   866,768 / 131,072 = 6.6129 -> 6.61.
    QTest::newRow("llama-3.1-70b tp4 int8")
        << "llama-3.1-70b"
        << "h100-80gb" << 4 << "int8"
        << "int8" << qint64(168'960) << qint64(42'240) << qint64(675'840) << qint64(78'216'395'489)
        << qint64(54'173) << 6.61 << QString();
    // Llama-3.1-8B (32 layers, 8 KV heads of 128) on one L4 (24,152,899,584 B), FP8 KV:
    //   2 x 8 x 128 x 1 B x 32 = 65,536 B per token; a block 1,048,576 B.
    //   requested = floor(0.92 x 24,152,899,584) = 22,220,667,617 B; after core's
    //   16,060,522,752 B of weights and 1,313,341,440 + 676,457,349 B of reserves,
    //   4,170,346,076 B:
    //   3,977 blocks (3,977 x 1,048,576 = 4,170,186,752), 63,632 tokens, 0.4855 -> 0.49.
    //   Fewer than one request of max_model_len: vLLM refuses to start, as one needs
    //   131,072 x 65,536 B = 8 GiB.
    QTest::newRow("llama-3.1-8b l4 fp8")
        << "llama-3.1-8b"
        << "l4" << 1 << "fp8"
        << "fp8_e4m3" << qint64(65'536) << qint64(65'536) << qint64(1'048'576)
        << qint64(22'220'667'617) << qint64(3'977) << 0.49 << "(8.0 GiB KV cache is needed";
}

void TestLedgerJson::ledgerFigures() {
    QFETCH(QString, model);
    QFETCH(QString, gpu);
    QFETCH(int, tp);
    QFETCH(QString, kvDtype);
    QFETCH(QString, kvDtypeName);
    QFETCH(qint64, kvPerToken);
    QFETCH(qint64, kvPerTokenPerGpu);
    QFETCH(qint64, pageBytesPerGpu);
    QFETCH(qint64, requestedBytes);
    QFETCH(qint64, numGpuBlocks);
    QFETCH(double, maxConcurrency);
    QFETCH(QString, refusal);

    const core::Scenario s = scenario({{"model", model.toStdString()},
                                       {"gpu", gpu.toStdString()},
                                       {"tp", std::to_string(tp)},
                                       {"kv-dtype", kvDtype.toStdString()}});
    const core::LedgerResult r = core::computeLedger(s);
    const Json j = io::ledgerJson(s, r, core::computeLadder(s));

    QCOMPARE(j.at("model").get<std::string>(), model.toStdString());
    QCOMPARE(j.at("gpu").get<std::string>(), gpu.toStdString());
    QCOMPARE(i64(j, "tp"), tp);
    QCOMPARE(j.at("kv_dtype").get<std::string>(), kvDtypeName.toStdString());
    QCOMPARE(i64(j, "block_size"), 16);
    QCOMPARE(j.at("paging").get<bool>(), true);
    QCOMPARE(i64(j, "max_model_len"), 131'072);

    // The worked figures.
    QCOMPARE(i64(j, "kv_bytes_per_token"), kvPerToken);
    QCOMPARE(i64(j, "kv_bytes_per_token_per_gpu"), kvPerTokenPerGpu);
    QCOMPARE(i64(j, "page_bytes_per_gpu"), pageBytesPerGpu);
    QCOMPARE(i64(j, "bytes_per_block"), pageBytesPerGpu);
    QCOMPARE(i64(j, "requested_bytes"), requestedBytes);
    const std::int64_t available = i64(j, "available_kv_bytes");
    QCOMPARE(available, requestedBytes - i64(j, "weights_bytes_per_gpu") -
                            i64(j, "activation_bytes") - i64(j, "overhead_bytes"));
    QCOMPARE(i64(j, "num_gpu_blocks"), numGpuBlocks);
    QCOMPARE(i64(j, "num_gpu_blocks"), available / pageBytesPerGpu);
    QCOMPARE(i64(j, "gpu_kv_cache_tokens"), numGpuBlocks * 16);
    QCOMPARE(i64(j, "gpu_kv_cache_tokens_legacy"), numGpuBlocks * 16);
    QCOMPARE(j.at("max_concurrency").get<double>(), maxConcurrency);

    // And exactly what core computed.
    QCOMPARE(i64(j, "num_gpu_blocks"), r.numGpuBlocks);
    QCOMPARE(i64(j, "gpu_kv_cache_tokens"), r.gpuKvCacheTokens);
    QCOMPARE(i64(j, "kv_bytes_per_request"), r.kvBytesPerRequest);
    QCOMPARE(i64(j, "max_requests_at_context"), r.maxRequestsAtContext);
    QCOMPARE(j.at("capacity_log_line").get<std::string>(), r.capacityLogLine);
    QVERIFY(r.capacityLogLine.find(core::withThousands(numGpuBlocks * 16) + " tokens") !=
            std::string::npos);
    // One full-attention group of all the layers, one block per 16 tokens of the 4,096-token
    // context: 256 blocks.
    const Json& groups = j.at("kv_cache_groups");
    QCOMPARE(groups.size(), std::size_t{1});
    QCOMPARE(groups[0].at("kind").get<std::string>(), std::string("full_attention"));
    QCOMPARE(i64(groups[0], "layers"), s.model.numLayers());
    QCOMPARE(i64(groups[0], "blocks_at_context"), 4096 / 16);
    QCOMPARE(i64(j.at("layout"), "tp"), tp);
    QCOMPARE(i64(j.at("layout"), "gpus"), tp);
    QCOMPARE(j.at("vllm_refused").get<bool>(), !refusal.isEmpty());
    QCOMPARE(j.at("vllm_refused").get<bool>(), r.refused);
    if (refusal.isEmpty()) {
        QVERIFY(j.at("error").is_null());
    } else {
        QCOMPARE(j.at("error").get<std::string>(), r.error);
        QVERIFY2(r.error.find(refusal.toStdString()) != std::string::npos, r.error.c_str());
    }
}

// kvledger's JSON keeps its keys in the order written; scripts that diff two runs rely on it.
void TestLedgerJson::ledgerKeysInOrder() {
    const core::Scenario s = scenario({});
    const Json j = io::ledgerJson(s, core::computeLedger(s), core::computeLadder(s));
    std::vector<std::string> keys;
    for (const auto& [key, value] : j.items())
        keys.push_back(key);
    QVERIFY(keys.size() > 10);
    const std::vector<std::string> first{"model",    "model_name", "gpu",
                                         "gpu_name", "tp",         "attention"};
    QCOMPARE(std::vector<std::string>(keys.begin(), keys.begin() + 6), first);
    // The saturated list (issue 32) closes the document, after the command.
    QCOMPARE(keys.back(), std::string("saturated"));
    QCOMPARE(keys[keys.size() - 2], std::string("vllm_command"));
    // Without --target-requests there are no target figures.
    QVERIFY(!j.contains("target_requests"));
}

// The ladder: one entry per core::computeLadder step, the concurrency rounded as vLLM prints
// it (two decimals).
void TestLedgerJson::ledgerLadder() {
    const core::Scenario s =
        scenario({{"model", "llama-3.1-70b"}, {"tp", "4"}, {"kv-dtype", "int8"}});
    const core::LedgerResult r = core::computeLedger(s);
    const auto ladder = core::computeLadder(s);
    const Json j = io::ledgerJson(s, r, ladder);
    const Json& steps = j.at("ladder");
    QCOMPARE(steps.size(), ladder.size());
    QVERIFY(ladder.size() >= 2);
    for (std::size_t i = 0; i < ladder.size(); ++i) {
        QCOMPARE(steps[i].at("label").get<std::string>(), ladder[i].label);
        QCOMPARE(i64(steps[i], "kv_bytes_per_token"), ladder[i].result.kvBytesPerToken);
        QCOMPARE(i64(steps[i], "max_requests_at_context"), ladder[i].result.maxRequestsAtContext);
        QCOMPARE(steps[i].at("max_concurrency").get<double>(),
                 std::round(ladder[i].result.maxConcurrency * 100.0) / 100.0);
    }
    // The baseline is MHA: 64 KV heads in BF16, 2 x 64 x 128 x 2 x 80 = 2,621,440 B per token;
    // the last step is the scenario itself.
    QCOMPARE(i64(steps[0], "kv_bytes_per_token"), 2'621'440);
    QCOMPARE(i64(steps.back(), "kv_bytes_per_token"), 168'960);
    QCOMPARE(i64(steps.back(), "max_requests_at_context"), r.maxRequestsAtContext);
}

namespace {

// `kvledger plan --model llama-3.1-70b --context 32768 --users N [--max-gpus G]` on H100s.
core::PlanRequest planRequest(std::int64_t users, int maxGpus) {
    core::PlanRequest req;
    req.base = scenario({{"model", "llama-3.1-70b"}, {"context", "32768"}});
    req.users = users;
    req.context = req.base.workload.context;
    req.maxGpus = maxGpus;
    req.gpusPerNode = 8;
    req.gpus = {req.base.hardware.gpu};
    return req;
}

} // namespace

void TestLedgerJson::planFits() {
    const core::PlanRequest req = planRequest(50, 64);
    const core::PlanResult plan = core::planDeployments(req);
    const Json j = io::planJson(req, plan);
    QCOMPARE(j.at("model").get<std::string>(), std::string("llama-3.1-70b"));
    QCOMPARE(i64(j, "users"), 50);
    QCOMPARE(i64(j, "context"), 32'768);
    QCOMPARE(j.at("kv_dtype").get<std::string>(), std::string("auto"));
    QCOMPARE(i64(j, "max_gpus"), 64);
    const Json& plans = j.at("plans");
    QCOMPARE(plans.size(), std::size_t{1});
    const Json& p = plans[0];
    const core::GpuPlan& g = plan.gpus.front();
    QVERIFY(g.fits);
    const core::Deployment& d = g.layouts.front();
    QCOMPARE(p.at("gpu").get<std::string>(), std::string("h100-80gb"));
    QCOMPARE(p.at("fits").get<bool>(), true);
    // The layout: its GPUs are TP x PP x DP, and it is the one core chose.
    QCOMPARE(i64(p, "gpus"), i64(p, "tp") * i64(p, "pp") * i64(p, "dp"));
    QCOMPARE(i64(p, "gpus"), d.layout.gpus());
    QCOMPARE(p.at("label").get<std::string>(), core::layoutLabel(d.layout));
    // It holds the 50 users: DP replicas of requests_per_replica each.
    QCOMPARE(i64(p, "cluster_requests"), i64(p, "dp") * i64(p, "requests_per_replica"));
    QVERIFY(i64(p, "cluster_requests") >= 50);
    QCOMPARE(i64(p, "requests_per_replica"), d.requestsPerReplica);
    QCOMPARE(i64(p, "cluster_requests"), d.clusterRequests);
    QCOMPARE(i64(p, "kv_bytes_per_gpu"), d.kvBytesPerGpu);
    QCOMPARE(i64(p, "weights_bytes_per_gpu"), d.weightsBytesPerGpu);
    QCOMPARE(i64(p, "headroom_bytes_per_gpu"), d.headroomBytesPerGpu);
    QCOMPARE(p.at("alternatives").size(), g.layouts.size() - 1);
    QVERIFY(p.at("vllm_command").get<std::string>().find("--max-model-len 32768") !=
            std::string::npos);
}

void TestLedgerJson::planDoesNotFit() {
    // 5,000 users of 32K tokens need far more than 4 H100s.
    const core::PlanRequest req = planRequest(5000, 4);
    const core::PlanResult plan = core::planDeployments(req);
    const Json j = io::planJson(req, plan);
    QCOMPARE(i64(j, "users"), 5000);
    QCOMPARE(i64(j, "max_gpus"), 4);
    const Json& p = j.at("plans").at(0);
    const core::GpuPlan& g = plan.gpus.front();
    QVERIFY(!g.fits);
    QCOMPARE(p.at("fits").get<bool>(), false);
    // Issue 32, item 5: no fake 0 GPUs; the nearest layout that holds some users instead.
    QVERIFY(p.at("gpus").is_null());
    QVERIFY(!p.contains("tp"));
    QCOMPARE(p.at("reason").get<std::string>(), g.reason);
    QVERIFY(g.reason.starts_with("memory for the users: at most "));
    QVERIFY(p.at("memory_needed_bytes_per_gpu").is_null()); // one GPU is not short
    const Json& n = p.at("nearest");
    QCOMPARE(i64(n, "users"), g.nearestUsers);
    QCOMPARE(i64(n, "gpus"), g.nearestLayout.gpus());
    QVERIFY(i64(n, "gpus") <= 4);
    QCOMPARE(i64(n, "users"), i64(n, "requests_per_replica") * i64(n, "dp"));
    QVERIFY(g.nearestUsers > 0 && g.nearestUsers < 5000);
    QCOMPARE(j.at("saturated").size(), std::size_t{0});
    QCOMPARE(p.at("alternatives").size(), std::size_t{0});
}

QTEST_GUILESS_MAIN(TestLedgerJson)
#include "tst_ledger_json.moc"
