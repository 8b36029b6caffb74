// The ledger against worked examples: Llama-3-8B's 128 KiB per token, vLLM's accounting, TP
// replication, MLA, sliding windows, paging rounding, prefix sharing, the GPU count question and
// overflow bounds.

#include "core/engine.h"
#include "core/kv_cache.h"
#include "core/kv_format.h"
#include "core/ledger.h"
#include "core/result.h"
#include "core/units.h"

#include <QtTest>

using namespace kvl::core;

namespace {

ModelSpec model(const char* id, int layers, int q, int kv, int hd, std::int64_t params,
                std::int64_t maxCtx) {
    ModelSpec m;
    m.id = id;
    m.name = id;
    m.layers.assign(static_cast<std::size_t>(layers), LayerSpec{});
    m.qHeads = q;
    m.kvHeads = kv;
    m.headDim = hd;
    m.params = params;
    m.maxContext = maxCtx;
    m.weightDtype = WeightDtype::Bf16;
    m.nativeKvDtype = KvDtype::Bf16;
    return m;
}

GpuSpec h100() {
    return {"h100-80gb", "H100 SXM 80GB", "NVIDIA", 85017821184LL, 3350, "HBM3"};
}

Scenario scenario(const ModelSpec& m) {
    Scenario s;
    s.model = m;
    s.hardware.gpu = h100();
    return s;
}

ModelSpec llama3_8b() {
    return model("llama-3-8b", 32, 32, 8, 128, 8030261248LL, 8192);
}

void setFormat(Scenario& s, KvDtype d) {
    s.levers.quant.enabled = true;
    s.levers.quant.format = KvFormat::defaultFor(d);
}

} // namespace

class TestCore : public QObject {
    Q_OBJECT
private slots:
    void kvFormatBytes_data();
    void kvFormatBytes();
    void seedLlama3();
    void workedExampleVllm();
    void workedExampleFromMemory();
    void tensorParallel_data();
    void tensorParallel();
    void mla();
    void slidingWindow_data();
    void slidingWindow();
    void pagingRounding_data();
    void pagingRounding();
    void contiguousReservesMaxLength();
    void prefixSharing_data();
    void prefixSharing();
    void prefixNeedsPaging();
    void attentionLever_data();
    void attentionLever();
    void gpusNeededSeed_data();
    void gpusNeededSeed();
    void ladderSeed();
    void sweepMatchesPoints();
    void sweepContextsRange();
    void overflowBounds();
    void gpusNeededSaturates();
    void saturatesInsteadOfWrapping();
    void weightsLever_data();
    void weightsLever();
    void validation_data();
    void validation();
    void units_data();
    void units();
    void names_data();
    void names();
    void nameFallbacks();
};

void TestCore::kvFormatBytes_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<int>("dim");
    QTest::addColumn<qint64>("kvPerHead"); // K + V bytes for one token and one head
    // INT8 per-token-head (LMDeploy's online KV quantization) adds one fp32 scale per K and V
    // vector; INT4 g128 adds fp16 scale + zero per 128 elements (4.25 bits).
    QTest::addRow("fp32 d128") << int(KvDtype::Fp32) << 128 << qint64(2 * 128 * 4);
    QTest::addRow("fp16 d128") << int(KvDtype::Fp16) << 128 << qint64(2 * 128 * 2);
    QTest::addRow("bf16 d96") << int(KvDtype::Bf16) << 96 << qint64(2 * 96 * 2);
    QTest::addRow("fp8 e4m3 d128") << int(KvDtype::Fp8E4M3) << 128 << qint64(2 * 128);
    QTest::addRow("fp8 e5m2 d64") << int(KvDtype::Fp8E5M2) << 64 << qint64(2 * 64);
    QTest::addRow("int8 d128") << int(KvDtype::Int8) << 128 << qint64(2 * (128 + 4));
    QTest::addRow("int4 g128 d128") << int(KvDtype::Int4) << 128 << qint64(2 * (64 + 4));
    QTest::addRow("int4 g128 d256") << int(KvDtype::Int4) << 256 << qint64(2 * (128 + 8));
    // KIVI int2 g32: K = 32 B data + 128 channels x 4 B / 32 tokens = 16 B; V = 32 + 4 x 4 = 48.
    QTest::addRow("int2 kivi d128") << int(KvDtype::Int2) << 128 << qint64((32 + 16) + (32 + 16));
}

void TestCore::kvFormatBytes() {
    QFETCH(int, dtype);
    QFETCH(int, dim);
    QFETCH(qint64, kvPerHead);
    const auto f = KvFormat::defaultFor(static_cast<KvDtype>(dtype));
    QCOMPARE(kvBytesPerTokenPerHead(f, dim), kvPerHead);
    QVERIFY(!validate(f, dim).has_value());
}

void TestCore::seedLlama3() {
    // Llama-3-8B (HF config: 32 layers, 8 KV heads of 128): 2*32*8*128*2 = 131,072 B per token; 32K
    // tokens = 4 GiB per request.
    Scenario s = scenario(llama3_8b());
    setFormat(s, KvDtype::Fp16);
    s.workload.context = 32768;
    const auto r = computeLedger(s);
    QCOMPARE(r.kvBytesPerToken, qint64(131072));
    QCOMPARE(r.kvBytesPerRequest, qint64(4294967296));
    QCOMPARE(r.kvBytesPerRequest, 4 * kGiB);
    // The seed's table calls this MHA; the true MHA figure is 4x: 512 KiB.
    Scenario mha = s;
    mha.levers.attention = {true, AttentionMode::Mha, 0};
    QCOMPARE(computeLedger(mha).kvBytesPerToken, qint64(524288));
    // INT8 with per-vector fp32 scales: 2*32*8*(128+4) = 67,584 B = 66 KiB per token.
    setFormat(s, KvDtype::Int8);
    QCOMPARE(computeLedger(s).kvBytesPerToken, qint64(67584));
}

void TestCore::workedExampleVllm() {
    // vLLM's startup log for Llama-3.1-8B on an H100: 51.38 GiB for KV, Llama-3.1-8B, max_model_len
    // 16000 -> 26,306 blocks, 420,896 tokens, 26.31x.
    Scenario s = scenario(model("llama-3.1-8b", 32, 32, 8, 128, 8030261248LL, 131072));
    s.workload.maxModelLen = 16000;
    s.hardware.kvMemoryBytes = gibToBytes(51.38);
    const auto r = computeLedger(s);
    QCOMPARE(r.pageBytesPerGpu, qint64(2 * 16 * 8 * 128 * 2) * 32);
    QCOMPARE(r.numGpuBlocks, qint64(26306));
    QCOMPARE(r.gpuKvCacheTokens, qint64(420896));
    QCOMPARE(QString::number(r.maxConcurrency, 'f', 2), QStringLiteral("26.31"));
}

void TestCore::workedExampleFromMemory() {
    // The same example through vLLM's subtraction: 71.26 GiB requested - 14.99 weights -
    // 4.76 activation - 0.13 non-torch = 51.38 GiB.
    Scenario s = scenario(model("llama-3.1-8b", 32, 32, 8, 128, 0, 131072));
    s.workload.maxModelLen = 16000;
    s.hardware.gpu.memoryBytes = gibToBytes(71.26 / 0.9);
    s.hardware.memoryUtilization = 0.9;
    s.model.params = gibToBytes(14.99) / 2; // bf16 weights of 14.99 GiB
    s.hardware.activationBytes = gibToBytes(4.76);
    s.hardware.overheadBytes = gibToBytes(0.13);
    const auto r = computeLedger(s);
    QVERIFY(std::llabs(r.availableKvBytes - gibToBytes(51.38)) < 4096);
    QCOMPARE(r.numGpuBlocks, qint64(26306));
    QCOMPARE(r.gpuKvCacheTokens, qint64(420896));
}

void TestCore::tensorParallel_data() {
    QTest::addColumn<int>("kvHeads");
    QTest::addColumn<int>("tp");
    QTest::addColumn<int>("headsPerGpu");
    // vLLM: max(1, kv_heads // tp): fewer KV heads than GPUs are replicated.
    QTest::addRow("8 heads tp1") << 8 << 1 << 8;
    QTest::addRow("8 heads tp2") << 8 << 2 << 4;
    QTest::addRow("8 heads tp8") << 8 << 8 << 1;
    QTest::addRow("8 heads tp16 replicated") << 8 << 16 << 1;
    QTest::addRow("1 head tp4 replicated") << 1 << 4 << 1;
}

void TestCore::tensorParallel() {
    QFETCH(int, kvHeads);
    QFETCH(int, tp);
    QFETCH(int, headsPerGpu);
    Scenario s = scenario(model("m", 80, 128, kvHeads, 128, 70'000'000'000LL, 8192));
    s.hardware.gpuCount = tp;
    s.workload.context = 4096;
    const auto r = computeLedger(s);
    QCOMPARE(r.kv.kvHeadsPerGpu, headsPerGpu);
    QCOMPARE(r.kvBytesPerToken, qint64(2) * 80 * kvHeads * 128 * 2);
    QCOMPARE(r.kvBytesPerTokenPerGpu, qint64(2) * 80 * headsPerGpu * 128 * 2);
    QCOMPARE(r.kvBytesPerRequest, r.kvBytesPerRequestPerGpu * tp);
    QCOMPARE(r.weightsBytesPerGpu, (qint64(140'000'000'000) + tp - 1) / tp);
}

void TestCore::mla() {
    // DeepSeek-V3: 61 MLA layers, latent 512 + rope 64, no factor 2: 61*576*2 = 70,272 B/token.
    ModelSpec m = model("deepseek-v3", 61, 128, 128, 192, 671'000'000'000LL, 163840);
    for (auto& l : m.layers)
        l.kind = LayerKind::Mla;
    m.kvLoraRank = 512;
    m.qkRopeHeadDim = 64;
    Scenario s = scenario(m);
    s.workload.context = 4096;
    s.hardware.gpuCount = 8;
    const auto r = computeLedger(s);
    QCOMPARE(r.kvBytesPerToken, qint64(61 * 576 * 2));
    // The latent is replicated on every TP rank.
    QCOMPARE(r.kvBytesPerTokenPerGpu, qint64(61 * 576 * 2));
    QCOMPARE(r.kvBytesPerRequest, qint64(61 * 576 * 2) * 4096 * 8);
    QCOMPARE(r.kv.attentionLabel, std::string("MLA"));
    // FP8 latent: 1 byte per element, per-tensor scales outside the pages.
    setFormat(s, KvDtype::Fp8E4M3);
    QCOMPARE(computeLedger(s).kvBytesPerToken, qint64(61 * 576));
}

void TestCore::slidingWindow_data() {
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("slidingBlocks"); // per sliding layer
    // Window 4096, block 16: at most ceil(4095/16) + 1 = 257 blocks (one block of slack).
    QTest::addRow("1K under the window") << qint64(1024) << qint64(64);
    QTest::addRow("4K at the window") << qint64(4096) << qint64(256);
    QTest::addRow("4K+1") << qint64(4097) << qint64(257);
    QTest::addRow("32K capped") << qint64(32768) << qint64(257);
}

void TestCore::slidingWindow() {
    QFETCH(qint64, context);
    QFETCH(qint64, slidingBlocks);
    // Gemma-2-27B: 46 layers alternating sliding(4096)/full, 16 KV heads, head_dim 128.
    ModelSpec m = model("gemma-2-27b", 46, 32, 16, 128, 27'200'000'000LL, 8192);
    for (std::size_t i = 0; i < m.layers.size(); i += 2)
        m.layers[i] = {LayerKind::Sliding, 4096};
    Scenario s = scenario(m);
    s.workload.context = context;
    const auto r = computeLedger(s);
    QCOMPARE(r.kvBytesPerToken, qint64(376832)); // 46 x 2 x 16 x 128 x 2
    const qint64 perTokenLayer = 2 * 16 * 128 * 2;
    const qint64 fullBlocks = (context + 15) / 16;
    QCOMPARE(r.kvBytesPerRequest,
             23 * fullBlocks * 16 * perTokenLayer + 23 * slidingBlocks * 16 * perTokenLayer);
    // A config with sliding_window but use_sliding_window false has all full layers.
    Scenario full = scenario(model("qwen2-like", 46, 32, 16, 128, 1, 8192));
    full.workload.context = context;
    QCOMPARE(computeLedger(full).kvBytesPerRequest, 46 * fullBlocks * 16 * perTokenLayer);
}

void TestCore::pagingRounding_data() {
    QTest::addColumn<int>("block");
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("blocks");
    QTest::addRow("16 exact") << 16 << qint64(32768) << qint64(2048);
    QTest::addRow("16 plus one") << 16 << qint64(32769) << qint64(2049);
    QTest::addRow("16 one token") << 16 << qint64(1) << qint64(1);
    QTest::addRow("32 odd") << 32 << qint64(1000) << qint64(32);
    QTest::addRow("1 token pages") << 1 << qint64(1000) << qint64(1000);
}

void TestCore::pagingRounding() {
    QFETCH(int, block);
    QFETCH(qint64, context);
    QFETCH(qint64, blocks);
    Scenario s = scenario(llama3_8b());
    s.levers.paging = {true, block};
    s.workload.context = context;
    const auto r = computeLedger(s);
    QCOMPARE(r.groups.size(), std::size_t(1));
    QCOMPARE(r.groups[0].blocksPerRequest, blocks);
    QCOMPARE(r.kvBytesPerRequest, blocks * block * 131072);
    // vLLM's BlockPool keeps block 0 as the null block: requests share the other blocks.
    QCOMPARE(r.numGpuBlocks, r.availableKvBytes / r.bytesPerBlock);
    QCOMPARE(r.maxRequestsAtContext, (r.numGpuBlocks - 1) / blocks);
}

void TestCore::contiguousReservesMaxLength() {
    Scenario s = scenario(model("llama-3.1-8b", 32, 32, 8, 128, 8030261248LL, 131072));
    s.levers.paging.enabled = false;
    s.workload.context = 1000;
    s.workload.maxModelLen = 16384;
    const auto r = computeLedger(s);
    QCOMPARE(r.kvBytesPerRequest, qint64(16384) * 131072); // reserved up front
    QCOMPARE(r.numGpuBlocks, qint64(0));
    QCOMPARE(r.gpuKvCacheTokens, r.availableKvBytes / 131072);
    QCOMPARE(r.maxRequestsAtContext, r.availableKvBytes / (qint64(16384) * 131072));
}

void TestCore::prefixSharing_data() {
    QTest::addColumn<qint64>("prefix");
    QTest::addColumn<qint64>("context");
    QTest::addColumn<qint64>("sharedBlocks");
    // Full blocks only (vLLM hashes full blocks); the last token's block is never shared.
    QTest::addRow("2K prefix") << qint64(2048) << qint64(8192) << qint64(128);
    QTest::addRow("partial block not shared") << qint64(2050) << qint64(8192) << qint64(128);
    QTest::addRow("under one block") << qint64(15) << qint64(8192) << qint64(0);
    QTest::addRow("prefix = context keeps last block")
        << qint64(4096) << qint64(4096) << qint64(255);
}

void TestCore::prefixSharing() {
    QFETCH(qint64, prefix);
    QFETCH(qint64, context);
    QFETCH(qint64, sharedBlocks);
    Scenario s = scenario(llama3_8b());
    s.workload.context = context;
    s.levers.prefix = {true, prefix, 0};
    const auto r = computeLedger(s);
    const qint64 block = 16 * 131072;
    QCOMPARE(r.sharedBytesPerRequestPerGpu, sharedBlocks * block);
    const qint64 per = (context + 15) / 16 * block;
    const qint64 pool = (r.numGpuBlocks - 1) * block; // block 0 is vLLM's null block
    // First request pays in full; every later one pays only its unshared blocks.
    const qint64 expected = pool < per ? 0 : 1 + (pool - per) / (per - sharedBlocks * block);
    QCOMPARE(r.maxRequestsAtContext, expected);
    QVERIFY(r.kvBytesAtMaxRequests <= pool);
    QCOMPARE(kvBytesForRequests(s, r.maxRequestsAtContext), r.kvBytesAtMaxRequests);
    QCOMPARE(kvBytesForRequests(s, 3), 3 * per - 2 * sharedBlocks * block);
    QCOMPARE(kvBytesForRequests(s, 0), qint64(0));
    // Groups of 4 requests share one copy.
    s.levers.prefix.sharingRequests = 4;
    const auto g = computeLedger(s);
    const qint64 groupCost = per + 3 * (per - sharedBlocks * block);
    const qint64 groups = pool / groupCost;
    const qint64 rem = pool - groups * groupCost;
    const qint64 partial = rem < per ? 0 : 1 + (rem - per) / (per - sharedBlocks * block);
    QCOMPARE(g.maxRequestsAtContext, groups * 4 + partial);
    // 9 requests in groups of 4: three copies of the shared blocks.
    QCOMPARE(kvBytesForRequests(s, 9), 9 * per - 6 * sharedBlocks * block);
    QVERIFY(g.maxRequestsAtContext <= r.maxRequestsAtContext);
}

void TestCore::prefixNeedsPaging() {
    Scenario s = scenario(llama3_8b());
    s.levers.paging.enabled = false;
    s.levers.prefix = {true, 4096, 0};
    const auto r = computeLedger(s);
    QCOMPARE(r.sharedBytesPerRequestPerGpu, qint64(0));
    QVERIFY(!r.warnings.empty());
}

void TestCore::attentionLever_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("groups");
    QTest::addColumn<qint64>("bytesPerToken");
    QTest::addColumn<QString>("label");
    QTest::addRow("native") << int(AttentionMode::Native) << 0 << qint64(131072) << "GQA-8";
    QTest::addRow("mha") << int(AttentionMode::Mha) << 0 << qint64(524288) << "MHA-32";
    QTest::addRow("gqa 4") << int(AttentionMode::Gqa) << 4 << qint64(65536) << "GQA-4";
    QTest::addRow("mqa") << int(AttentionMode::Mqa) << 0 << qint64(16384) << "MQA";
}

void TestCore::attentionLever() {
    QFETCH(int, mode);
    QFETCH(int, groups);
    QFETCH(qint64, bytesPerToken);
    QFETCH(QString, label);
    Scenario s = scenario(llama3_8b());
    s.levers.attention = {true, static_cast<AttentionMode>(mode), groups};
    const auto r = computeLedger(s);
    QCOMPARE(r.kvBytesPerToken, bytesPerToken);
    QCOMPARE(QString::fromStdString(r.kv.attentionLabel), label);
}

void TestCore::gpusNeededSeed_data() {
    QTest::addColumn<int>("weights");
    QTest::addColumn<int>("kv");
    QTest::addColumn<int>("gpus");
    // A 70B MHA-style model (80 layers, 64 KV heads of 128), 8K x 10 requests on H100 80GB:
    // 140 GB + 200 GB -> 5 GPUs; INT8 weights -> 4; INT8 weights and INT8 KV -> 3.
    QTest::addRow("fp16 weights, fp16 KV") << int(WeightDtype::Fp16) << int(KvDtype::Fp16) << 5;
    QTest::addRow("int8 weights, fp16 KV") << int(WeightDtype::Int8) << int(KvDtype::Fp16) << 4;
    QTest::addRow("int8 weights, int8 KV") << int(WeightDtype::Int8) << int(KvDtype::Int8) << 3;
}

void TestCore::gpusNeededSeed() {
    QFETCH(int, weights);
    QFETCH(int, kv);
    QFETCH(int, gpus);
    Scenario s = scenario(model("hypothetical-70b-mha", 80, 64, 64, 128, 70'000'000'000LL, 8192));
    s.hardware.weightDtype = static_cast<WeightDtype>(weights);
    setFormat(s, static_cast<KvDtype>(kv));
    s.workload.context = 8192;
    const auto need = computeGpusNeeded(s, 10);
    QCOMPARE(need.pooledGpus, gpus);
    const qint64 kvPerToken = 80LL * 64 * kvBytesPerTokenPerHead(s.levers.quant.format, 128);
    QCOMPARE(need.kvBytes, 10 * 8192 * kvPerToken);
    QCOMPARE(need.weightsBytes, weightBytes(70'000'000'000LL, static_cast<WeightDtype>(weights)));
    // One GPU fewer must not hold it.
    const auto single = computeLedger(s);
    const qint64 budget = static_cast<qint64>(85017821184.0 * gpuMemoryUtilization(s)) -
                          single.activationBytes - single.overheadBytes;
    QVERIFY((need.totalBytes + gpus - 2) / (gpus - 1) > budget);
    // What vLLM runs: a whole layout, never fewer GPUs than the pooled count.
    QVERIFY(need.gpus >= need.pooledGpus);
    QCOMPARE(need.layout.gpus(), need.gpus);
    QCOMPARE(64 % need.tensorParallel, 0);
}

void TestCore::ladderSeed() {
    Scenario s = scenario(llama3_8b());
    s.workload.context = 32768;
    setFormat(s, KvDtype::Int8);
    s.levers.prefix = {true, 2048, 0};
    const auto ladder = computeLadder(s);
    QCOMPARE(ladder.size(), std::size_t(5));
    QCOMPARE(ladder[0].result.kvBytesPerToken, qint64(524288)); // MHA BF16
    QCOMPARE(ladder[1].result.kvBytesPerToken, qint64(131072)); // +GQA-8
    QCOMPARE(ladder[2].result.kvBytesPerToken, qint64(67584));  // +INT8
    // Contiguous until paging: reserved at max(max_model_len, context) = 32K.
    QCOMPARE(ladder[2].result.kvBytesPerRequest, qint64(67584) * 32768);
    QCOMPARE(ladder[3].result.kvBytesPerRequest, qint64(67584) * 32768);
    QVERIFY(ladder[4].result.maxRequestsAtContext > ladder[3].result.maxRequestsAtContext);
    for (std::size_t i = 1; i < ladder.size(); ++i)
        QVERIFY(ladder[i].result.maxRequestsAtContext >= ladder[i - 1].result.maxRequestsAtContext);
    // The last step is the scenario itself.
    QCOMPARE(ladder[4].result.maxRequestsAtContext, computeLedger(s).maxRequestsAtContext);
    QVERIFY(ladder[2].applied);
    Scenario off = s;
    off.levers.quant.enabled = false;
    QVERIFY(!computeLadder(off)[2].applied);
}

void TestCore::sweepMatchesPoints() {
    Scenario s = scenario(llama3_8b());
    setFormat(s, KvDtype::Fp8E4M3);
    s.levers.prefix = {true, 1000, 8};
    const auto sw = computeSweep(s);
    QCOMPARE(sw.curves.size(), std::size_t(5));
    QVERIFY(sw.curves.back().isCurrent);
    const auto ladder = computeLadder(s);
    for (std::size_t c = 0; c < sw.curves.size(); ++c)
        for (std::size_t i = 0; i < sw.contexts.size(); i += 7) {
            const auto p = computePoint(ladder[c].scenario, sw.contexts[i]);
            QCOMPARE(sw.curves[c].bytesPerRequestPerGpu[i], double(p.bytesPerRequestPerGpu));
            QCOMPARE(sw.curves[c].maxRequests[i], double(p.maxRequests));
        }
    const auto atCtx = computeLedger(s);
    QCOMPARE(computePoint(s, s.workload.context).maxRequests, atCtx.maxRequestsAtContext);
    QCOMPARE(computePoint(s, s.workload.context).bytesPerRequest, atCtx.kvBytesPerRequest);
}

void TestCore::sweepContextsRange() {
    const auto c = sweepContexts(1 << 20, 8);
    QCOMPARE(c.front(), qint64(256));
    QCOMPARE(c.back(), qint64(1 << 20));
    QCOMPARE(c.size(), std::size_t(12 * 8 + 1));
    for (std::size_t i = 1; i < c.size(); ++i)
        QVERIFY(c[i] > c[i - 1]);
    QVERIFY(std::find(c.begin(), c.end(), qint64(32768)) != c.end());
}

void TestCore::overflowBounds() {
    // A 2T-parameter model at 10M tokens x 10,000 requests stays exact in 64 bits.
    ModelSpec m = model("huge", 200, 128, 128, 256, 2'000'000'000'000LL, 10'000'000);
    Scenario s = scenario(m);
    s.model.nativeKvDtype = KvDtype::Fp32;
    s.workload.context = 10'000'000;
    s.hardware.gpuCount = 64;
    const auto r = computeLedger(s);
    const qint64 perToken = 2LL * 200 * 128 * 256 * 4;
    QCOMPARE(r.kvBytesPerToken, perToken);
    QCOMPARE(r.kvBytesPerRequest, perToken * 10'000'000);
    const auto need = computeGpusNeeded(s, 10'000);
    QCOMPARE(need.kvBytes, perToken * 10'000'000 * 10'000); // 5.2e18 < 9.2e18
    QCOMPARE(need.weightsBytes, qint64(4'000'000'000'000));
    QVERIFY(need.totalBytes > need.kvBytes);
}

void TestCore::gpusNeededSaturates() {
    // kvledger ledger --context 1000000000 --target-requests 100000 once overflowed a signed
    // product in the pooled search and said "1 x H100" (an abort under UBSan).
    Scenario s = scenario(llama3_8b());
    s.workload.context = 1'000'000'000;
    const auto need = computeGpusNeeded(s, 100'000);
    QCOMPARE(need.kvBytes, std::numeric_limits<qint64>::max());
    QCOMPARE(need.totalBytes, std::numeric_limits<qint64>::max());
    QCOMPARE(need.pooledGpus, 0);
    QCOMPARE(need.gpus, 0);
    QVERIFY(!need.note.empty());
}

void TestCore::saturatesInsteadOfWrapping() {
    ModelSpec m =
        model("absurd", kMaxLayers, kMaxHeads, kMaxHeads, kMaxHeadDim, kMaxParams, kMaxContext);
    Scenario s = scenario(m);
    s.model.nativeKvDtype = KvDtype::Fp32;
    s.workload.context = kMaxContext;
    const auto r = computeLedger(s);
    QVERIFY(r.kvBytesPerRequest > 0);
    QCOMPARE(r.kvBytesPerRequest, std::numeric_limits<qint64>::max());
    QCOMPARE(r.maxRequestsAtContext, qint64(0));
    QVERIFY(!r.error.empty());
}

void TestCore::weightsLever_data() {
    QTest::addColumn<int>("dtype");
    QTest::addColumn<qint64>("bytes");
    QTest::addRow("fp16") << int(WeightDtype::Fp16) << qint64(140'000'000'000);
    QTest::addRow("bf16") << int(WeightDtype::Bf16) << qint64(140'000'000'000);
    QTest::addRow("fp8") << int(WeightDtype::Fp8) << qint64(70'000'000'000);
    QTest::addRow("int8") << int(WeightDtype::Int8) << qint64(70'000'000'000);
    // 4 bits + fp16 scale and zero per 128 weights = 4.25 bits.
    QTest::addRow("int4") << int(WeightDtype::Int4) << qint64(35'000'000'000 + 2'187'500'000);
}

void TestCore::weightsLever() {
    QFETCH(int, dtype);
    QFETCH(qint64, bytes);
    QCOMPARE(kvl::core::weightBytes(70'000'000'000LL, static_cast<WeightDtype>(dtype)), bytes);
}

void TestCore::validation_data() {
    QTest::addColumn<QString>("field");
    QTest::addColumn<int>("which");
    QTest::addRow("no layers") << "num_layers" << 0;
    QTest::addRow("zero kv heads") << "num_kv_heads" << 1;
    QTest::addRow("indivisible") << "not divisible" << 2;
    QTest::addRow("zero head dim") << "head_dim" << 3;
    QTest::addRow("gqa indivisible") << "attention" << 4;
    QTest::addRow("block size") << "block size" << 5;
    QTest::addRow("util") << "utilization" << 6;
    QTest::addRow("context") << "context" << 7;
    QTest::addRow("int4 group") << "group size" << 8;
}

void TestCore::validation() {
    QFETCH(QString, field);
    QFETCH(int, which);
    Scenario s = scenario(llama3_8b());
    switch (which) {
    case 0:
        s.model.layers.clear();
        break;
    case 1:
        s.model.kvHeads = 0;
        break;
    case 2:
        s.model.kvHeads = 5;
        break;
    case 3:
        s.model.headDim = 0;
        break;
    case 4:
        s.levers.attention = {true, AttentionMode::Gqa, 5};
        break;
    case 5:
        s.levers.paging.blockSize = -1; // 0 is vLLM's choice
        break;
    case 6:
        s.hardware.memoryUtilization = 1.5;
        break;
    case 7:
        s.workload.context = 0;
        break;
    case 8:
        setFormat(s, KvDtype::Int4);
        s.levers.quant.format.groupSize = 48;
        break;
    }
    const auto e = s.validate();
    QVERIFY(e.has_value());
    QVERIFY2(QString::fromStdString(*e).contains(field), e->c_str());
    const auto r = computeLedger(s);
    QVERIFY(!r.error.empty());
    QCOMPARE(r.kvBytesPerRequest, qint64(0));
}

void TestCore::units_data() {
    QTest::addColumn<qint64>("bytes");
    QTest::addColumn<bool>("decimal");
    QTest::addColumn<QString>("text");
    QTest::addRow("128 KiB") << qint64(131072) << false << "128 KiB";
    QTest::addRow("4 GiB") << qint64(4294967296) << false << "4 GiB";
    QTest::addRow("4.29 GB") << qint64(4294967296) << true << "4.29 GB";
    QTest::addRow("51.38 GiB") << qint64(gibToBytes(51.38)) << false << "51.38 GiB";
    QTest::addRow("bytes") << qint64(999) << true << "999 B";
}

void TestCore::units() {
    QFETCH(qint64, bytes);
    QFETCH(bool, decimal);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(kvl::core::formatBytes(
                 std::int64_t{bytes}, decimal ? UnitSystem::Decimal : UnitSystem::Binary)),
             text);
    QCOMPARE(QString::fromStdString(withThousands(131072)), QStringLiteral("131,072"));
    QCOMPARE(QString::fromStdString(withThousands(-1234567)), QStringLiteral("-1,234,567"));
    QCOMPARE(QString::fromStdString(formatTokens(32768)), QStringLiteral("32K"));
}

// Each enum's names (core/enum_names.h tables): the name function gives the name and the parser
// reads it back; an alias (the last column) is read but never written.
void TestCore::names_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<int>("value");
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("alias");
    QTest::addRow("layer full") << QStringLiteral("layer") << int(LayerKind::Full) << "full"
                                << false;
    QTest::addRow("layer sliding")
        << QStringLiteral("layer") << int(LayerKind::Sliding) << "sliding" << false;
    QTest::addRow("layer chunked")
        << QStringLiteral("layer") << int(LayerKind::Chunked) << "chunked" << false;
    QTest::addRow("layer mla") << QStringLiteral("layer") << int(LayerKind::Mla) << "mla" << false;
    QTest::addRow("layer state") << QStringLiteral("layer") << int(LayerKind::State) << "state"
                                 << false;
    QTest::addRow("layer none") << QStringLiteral("layer") << int(LayerKind::None) << "none"
                                << false;
    QTest::addRow("state mamba1") << QStringLiteral("state") << int(StateKind::Mamba1) << "mamba1"
                                  << false;
    QTest::addRow("state mamba2") << QStringLiteral("state") << int(StateKind::Mamba2) << "mamba2"
                                  << false;
    QTest::addRow("state gated_delta_net")
        << QStringLiteral("state") << int(StateKind::GatedDeltaNet) << "gated_delta_net" << false;
    QTest::addRow("state short_conv")
        << QStringLiteral("state") << int(StateKind::ShortConv) << "short_conv" << false;
    QTest::addRow("weight fp32") << QStringLiteral("weight") << int(WeightDtype::Fp32) << "fp32"
                                 << false;
    QTest::addRow("weight fp16") << QStringLiteral("weight") << int(WeightDtype::Fp16) << "fp16"
                                 << false;
    QTest::addRow("weight bf16") << QStringLiteral("weight") << int(WeightDtype::Bf16) << "bf16"
                                 << false;
    QTest::addRow("weight fp8") << QStringLiteral("weight") << int(WeightDtype::Fp8) << "fp8"
                                << false;
    QTest::addRow("weight int8") << QStringLiteral("weight") << int(WeightDtype::Int8) << "int8"
                                 << false;
    QTest::addRow("weight int4") << QStringLiteral("weight") << int(WeightDtype::Int4) << "int4"
                                 << false;
    QTest::addRow("weight fp4") << QStringLiteral("weight") << int(WeightDtype::Fp4) << "fp4"
                                << false;
    QTest::addRow("weight float16")
        << QStringLiteral("weight") << int(WeightDtype::Fp16) << "float16" << true;
    QTest::addRow("weight bfloat16")
        << QStringLiteral("weight") << int(WeightDtype::Bf16) << "bfloat16" << true;
    QTest::addRow("weight float32")
        << QStringLiteral("weight") << int(WeightDtype::Fp32) << "float32" << true;
    QTest::addRow("weight fp8_e4m3")
        << QStringLiteral("weight") << int(WeightDtype::Fp8) << "fp8_e4m3" << true;
    QTest::addRow("weight mxfp4") << QStringLiteral("weight") << int(WeightDtype::Fp4) << "mxfp4"
                                  << true;
    QTest::addRow("weight nvfp4") << QStringLiteral("weight") << int(WeightDtype::Fp4) << "nvfp4"
                                  << true;
    QTest::addRow("granularity none")
        << QStringLiteral("granularity") << int(Granularity::None) << "none" << false;
    QTest::addRow("granularity per-tensor")
        << QStringLiteral("granularity") << int(Granularity::PerTensor) << "per-tensor" << false;
    QTest::addRow("granularity per-head")
        << QStringLiteral("granularity") << int(Granularity::PerHead) << "per-head" << false;
    QTest::addRow("granularity per-token-head")
        << QStringLiteral("granularity") << int(Granularity::PerTokenHead) << "per-token-head"
        << false;
    QTest::addRow("granularity per-group")
        << QStringLiteral("granularity") << int(Granularity::PerGroup) << "per-group" << false;
    QTest::addRow("granularity kivi") << QStringLiteral("granularity")
                                      << int(Granularity::KPerChannelVPerToken) << "kivi" << false;
    QTest::addRow("granularity ds-mla")
        << QStringLiteral("granularity") << int(Granularity::DsMla) << "ds-mla" << false;
    QTest::addRow("granularity turboquant")
        << QStringLiteral("granularity") << int(Granularity::TurboQuant) << "turboquant" << false;
    QTest::addRow("granularity per-token")
        << QStringLiteral("granularity") << int(Granularity::PerTokenHead) << "per-token" << true;
    QTest::addRow("granularity k-per-channel")
        << QStringLiteral("granularity") << int(Granularity::KPerChannelVPerToken)
        << "k-per-channel" << true;
}

void TestCore::names() {
    QFETCH(QString, kind);
    QFETCH(int, value);
    QFETCH(QString, name);
    QFETCH(bool, alias);
    const std::string text = name.toStdString();
    const auto asInt = [](auto parsed) { return parsed ? int(*parsed) : -1; };
    std::string_view shown;
    int parsed = -1;
    if (kind == QLatin1String("layer")) {
        shown = layerKindName(static_cast<LayerKind>(value));
        parsed = asInt(parseLayerKind(text));
    } else if (kind == QLatin1String("state")) {
        shown = stateKindName(static_cast<StateKind>(value));
        parsed = asInt(parseStateKind(text));
    } else if (kind == QLatin1String("weight")) {
        shown = weightDtypeName(static_cast<WeightDtype>(value));
        parsed = asInt(parseWeightDtype(text));
    } else {
        shown = granularityName(static_cast<Granularity>(value));
        parsed = asInt(parseGranularity(text));
    }
    QCOMPARE(parsed, value);
    if (!alias)
        QCOMPARE(std::string(shown), text);
}

// A value out of its enum's range is named as before the tables (a switch's fallback).
void TestCore::nameFallbacks() {
    QCOMPARE(std::string(layerKindName(static_cast<LayerKind>(99))), std::string("full"));
    QCOMPARE(std::string(stateKindName(static_cast<StateKind>(99))), std::string("mamba2"));
    QCOMPARE(std::string(specTypeName(static_cast<SpecType>(99))), std::string("full_attention"));
    QCOMPARE(std::string(kvl::errorCodeName(static_cast<kvl::ErrorCode>(99))),
             std::string("error"));
    QCOMPARE(std::string(specTypeName(SpecType::ChunkedLocal)),
             std::string("chunked_local_attention"));
    QCOMPARE(std::string(kvl::errorCodeName(kvl::ErrorCode::Io)), std::string("i/o error"));
    QVERIFY(!parseLayerKind("Full").has_value());
}

QTEST_APPLESS_MAIN(TestCore)
#include "tst_core.moc"
