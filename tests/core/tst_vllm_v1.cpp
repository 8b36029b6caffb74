// The ledger end to end on the hybrid models people deploy now, against what current vLLM (v1,
// the hybrid KV cache manager) computes: block sizes chosen by the attention backend and the
// Mamba alignment, KV cache groups with padding, "GPU KV cache size" = int(concurrency x M),
// the older log formula, the null block, the refusal and its estimated max model length.
// Model geometry is taken from each model's config.json on Hugging Face (cited per row).

#include "core/engine.h"
#include "core/ledger.h"

#include <QtTest>

using namespace kvl::core;

namespace {

constexpr qint64 G = qint64(1) << 30;

GpuSpec gpu(const char* id, std::int64_t memory, int cc) {
    GpuSpec g;
    g.id = id;
    g.name = id;
    g.vendor = "NVIDIA";
    g.memoryBytes = memory;
    g.computeCapability = cc;
    return g;
}
GpuSpec h100() {
    return gpu("h100-80gb", 85017821184LL, 90);
}

ModelSpec attentionModel(int layers, int q, int kv, int head, std::int64_t maxCtx) {
    ModelSpec m;
    m.id = "test";
    m.name = "test";
    m.layers.assign(static_cast<std::size_t>(layers), LayerSpec{});
    m.qHeads = q;
    m.kvHeads = kv;
    m.headDim = head;
    m.maxContext = maxCtx;
    m.params = 1'000'000'000;
    return m;
}

Scenario scenarioFor(const ModelSpec& m, std::int64_t kvMemory, std::int64_t maxModelLen = 0) {
    Scenario s;
    s.model = m;
    s.hardware.gpu = h100();
    s.hardware.kvMemoryBytes = kvMemory;
    s.workload.maxModelLen = maxModelLen;
    s.workload.context = 4096;
    return s;
}

// Qwen/Qwen3-Next-80B-A3B-Instruct config.json: 48 layers, no layer_types, so vLLM's
// Qwen3NextConfig makes every 4th layer full attention; 2 KV heads of 256; gated delta net
// with 16 key / 32 value heads of 128 and a 4-wide conv.
ModelSpec qwen3Next() {
    ModelSpec m = attentionModel(48, 16, 2, 256, 262144);
    for (int i = 0; i < 48; ++i)
        m.layers[static_cast<std::size_t>(i)].kind =
            (i + 1) % 4 == 0 ? LayerKind::Full : LayerKind::State;
    StateSpec st;
    st.kind = StateKind::GatedDeltaNet;
    st.numKeyHeads = 16;
    st.numValueHeads = 32;
    st.keyHeadDim = 128;
    st.valueHeadDim = 128;
    st.convKernel = 4;
    m.state = st;
    m.numExperts = 512;
    m.expertsPerToken = 10;
    return m;
}

// nvidia/Nemotron-H-8B-Base-8K: 52 layers, hybrid_override_pattern with 24 Mamba2 ("M"),
// 4 attention ("*") and MLP-only ("-") layers; Mamba2 128 heads x 64, 8 groups, state 128,
// conv 4, chunk 128; vLLM keeps its SSM state in fp32 (NemotronHForCausalLMConfig).
ModelSpec nemotronH8b() {
    ModelSpec m = attentionModel(52, 32, 8, 128, 8192);
    const std::string pattern = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-";
    for (std::size_t i = 0; i < pattern.size(); ++i)
        m.layers[i].kind = pattern[i] == 'M'   ? LayerKind::State
                           : pattern[i] == '*' ? LayerKind::Full
                                               : LayerKind::None;
    StateSpec st;
    st.kind = StateKind::Mamba2;
    st.intermediateSize = 128 * 64;
    st.numHeads = 128;
    st.headDim = 64;
    st.nGroups = 8;
    st.stateSize = 128;
    st.convKernel = 4;
    st.chunkSize = 128;
    st.ssmDtype = KvDtype::Fp32;
    m.state = st;
    return m;
}

// google/gemma-3-27b-it: 62 layers, 16 KV heads of 128, sliding window 1024 on five of every
// six layers (sliding_window_pattern 6), max_position_embeddings 131072.
ModelSpec gemma3_27b() {
    ModelSpec m = attentionModel(62, 32, 16, 128, 131072);
    for (int i = 0; i < 62; ++i)
        if ((i + 1) % 6 != 0)
            m.layers[static_cast<std::size_t>(i)] = {LayerKind::Sliding, 1024};
    return m;
}

// meta-llama/Llama-4-Scout-17B-16E-Instruct: 48 layers, 8 KV heads of 128, chunked local
// attention of 8192 with every 4th layer NoPE (full attention).
ModelSpec llama4Scout() {
    ModelSpec m = attentionModel(48, 40, 8, 128, 10485760);
    for (int i = 0; i < 48; ++i)
        if ((i + 1) % 4 != 0)
            m.layers[static_cast<std::size_t>(i)] = {LayerKind::Chunked, 8192};
    return m;
}

// openai/gpt-oss-120b: 36 layers alternating sliding (128, even layers) and full, 8 KV heads
// of 64, YaRN 32 x 4096 = 131072.
ModelSpec gptOss120b() {
    ModelSpec m = attentionModel(36, 64, 8, 64, 131072);
    for (int i = 0; i < 36; i += 2)
        m.layers[static_cast<std::size_t>(i)] = {LayerKind::Sliding, 128};
    return m;
}

// deepseek-ai/DeepSeek-V3: 61 MLA layers, kv_lora_rank 512 + qk_rope_head_dim 64.
ModelSpec deepseekV3() {
    ModelSpec m = attentionModel(61, 128, 128, 192, 163840);
    for (auto& l : m.layers)
        l.kind = LayerKind::Mla;
    m.kvLoraRank = 512;
    m.qkRopeHeadDim = 64;
    m.qkNopeHeadDim = 128;
    return m;
}

} // namespace

class TestVllmV1 : public QObject {
    Q_OBJECT
private slots:
    void capacity_data();
    void capacity();
    void qwen3NextAlignment();
    void nemotronHAlignment_data();
    void nemotronHAlignment();
    void gemma3Padding();
    void disableHybridPromotes();
    void lmcache1739();
    void refusalAndEstimate();
    void noMemoryAtAll();
    void mlaBlockSizes_data();
    void mlaBlockSizes();
    void sparseMlaStoresDsMla();
    void userBlockSizeMustBeAccepted();
    void schedulerDefaults_data();
    void schedulerDefaults();
    void stateBytes_data();
    void stateBytes();
    void stateTensorParallel();
    void pipelineStagesTakeTheFewestBlocks();
    void replicaHoldsEachLayerOnce_data();
    void replicaHoldsEachLayerOnce();
    void mlaReplicaCopies_data();
    void mlaReplicaCopies();
    void cacheDtypeNames_data();
    void cacheDtypeNames();
    void cacheDtypeNameList();
};

void TestVllmV1::capacity_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<qint64>("kvMemory");
    QTest::addColumn<qint64>("maxModelLen");
    QTest::addColumn<int>("blockSize");
    QTest::addColumn<int>("groups");
    QTest::addColumn<qint64>("bytesPerBlock");
    QTest::addColumn<qint64>("numBlocks");
    QTest::addColumn<qint64>("blocksPerRequest");
    QTest::addColumn<qint64>("tokens");
    QTest::addColumn<QString>("concurrency");
    QTest::addColumn<qint64>("legacyTokens");
    // H100 defaults: max_num_batched_tokens 8192, async scheduling: 16,384 tokens in flight.
    // Qwen3-Next: 12 full + 36 GDN layers, group size 12: 1 attention + 3 state groups of
    // 12 pages of 544 x 2 x 512 x 2 = 1,114,112 B. cdiv(262144, 544) = 482, + 3 x 2 (align).
    QTest::addRow("qwen3-next-80b 40 GiB")
        << "qwen3-next" << 40 * G << qint64(0) << 544 << 4 << qint64(12 * 1114112) << qint64(3212)
        << qint64(488) << qint64(1725423) << "6.58" << qint64(3212 / 4 * 544);
    // Gemma-3-27B: 10 full + 52 sliding, group size 10: 7 groups of 10 x 131,072 B pages;
    // per request 8192 + 6 x (cdiv(1023 + 16384, 16) + 1 = 1089).
    QTest::addRow("gemma-3-27b 20 GiB")
        << "gemma3" << 20 * G << qint64(0) << 16 << 7 << qint64(10 * 131072) << qint64(16384)
        << qint64(14726) << qint64(145829) << "1.11" << qint64(37440);
    // Llama-4-Scout at 128K: 12 full + 36 chunked; chunked cdiv(8192 + 16384, 16) = 1536.
    QTest::addRow("llama-4-scout 30 GiB @128K")
        << "scout" << 30 * G << qint64(131072) << 16 << 4 << qint64(12 * 65536) << qint64(40960)
        << qint64(8192 + 3 * 1536) << qint64(419430) << "3.20" << qint64(163840);
    // gpt-oss-120b with hf-mem issue 60's pool (9798 blocks of 2 x 18 x 32,768 B): the older
    // vLLM printed 78,384 tokens (num_blocks // 2 x 16); vLLM main budgets the sliding layers
    // with 2 batches in flight: 8192 + cdiv(127 + 16384, 16) + 1 = 9225 blocks per request.
    QTest::addRow("gpt-oss-120b hf-mem 60")
        << "gpt-oss" << qint64(9798 * 589824LL) << qint64(0) << 16 << 2 << qint64(589824)
        << qint64(9798) << qint64(9225) << qint64(139213) << "1.06" << qint64(78384);
    // Nemotron-H-8B: 4 attention + 24 Mamba2 layers, group size 4; block 1040 (align).
    QTest::addRow("nemotron-h-8b 20 GiB")
        << "nemotron" << 20 * G << qint64(0) << 1040 << 7 << qint64(4 * 4259840) << qint64(1260)
        << qint64(20) << qint64(516096) << "63.00" << qint64(1260 / 7 * 1040);
}

void TestVllmV1::capacity() {
    QFETCH(QString, model);
    QFETCH(qint64, kvMemory);
    QFETCH(qint64, maxModelLen);
    QFETCH(int, blockSize);
    QFETCH(int, groups);
    QFETCH(qint64, bytesPerBlock);
    QFETCH(qint64, numBlocks);
    QFETCH(qint64, blocksPerRequest);
    QFETCH(qint64, tokens);
    QFETCH(QString, concurrency);
    QFETCH(qint64, legacyTokens);
    const ModelSpec m = model == "qwen3-next" ? qwen3Next()
                        : model == "gemma3"   ? gemma3_27b()
                        : model == "scout"    ? llama4Scout()
                        : model == "gpt-oss"  ? gptOss120b()
                                              : nemotronH8b();
    const auto r = computeLedger(scenarioFor(m, kvMemory, maxModelLen));
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.blockSize, blockSize);
    QCOMPARE(int(r.kvCacheGroups.size()), groups);
    QCOMPARE(r.bytesPerBlock, bytesPerBlock);
    QCOMPARE(r.numGpuBlocks, numBlocks);
    QCOMPARE(r.blocksPerRequest, blocksPerRequest);
    QCOMPARE(r.gpuKvCacheTokens, tokens);
    QCOMPARE(QString::number(r.maxConcurrency, 'f', 2), concurrency);
    QCOMPARE(r.gpuKvCacheTokensLegacy, legacyTokens);
    QVERIFY(QString::fromStdString(r.capacityLogLine)
                .startsWith("GPU KV cache size: " + QLocale(QLocale::English).toString(tokens)));
}

void TestVllmV1::qwen3NextAlignment() {
    // Platform._align_hybrid_block_size: mamba page 3 x 8192 x 2 + 32 x 128 x 128 x 2 =
    // 1,097,728 B; attention 2 x (256 + 256) x 2 = 2,048 B per token; 16 x cdiv(1097728,
    // 16 x 2048) = 544; the Mamba page is padded to 544 x 2048 = 1,114,112 B.
    Scenario s = scenarioFor(qwen3Next(), 40 * G);
    const BlockSizes b = resolveBlockSizes(s);
    QCOMPARE(b.attention, 544);
    QCOMPARE(b.mamba, qint64(544)); // align mode: the Mamba block is the attention block
    QCOMPARE(b.mambaMode, MambaCacheMode::Align);
    QCOMPARE(b.mambaPagePadded, qint64(1114112));
    QVERIFY(b.forced);
    // FP8 KV halves the attention page: 16 x cdiv(1097728, 16 x 1024) = 1072, no padding.
    s.levers.quant = {true, KvFormat::defaultFor(KvDtype::Fp8E4M3)};
    QCOMPARE(resolveBlockSizes(s).attention, 1072);
    // TP 4: mamba 274,432 B per rank, attention one replicated head: 272.
    s.levers.quant.enabled = false;
    s.hardware.gpuCount = 4;
    QCOMPARE(resolveBlockSizes(s).attention, 272);
    // The state per request is the padded page x 3 groups x 2 blocks (align mode).
    s.hardware.gpuCount = 1;
    const auto r = computeLedger(s);
    QCOMPARE(r.stateBytesPerRequest, qint64(3 * 2) * 12 * 1114112);
    QCOMPARE(r.layerMix.full, 12);
    QCOMPARE(r.layerMix.state, 36);
}

void TestVllmV1::nemotronHAlignment_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("ssm");
    QTest::addColumn<int>("block");
    QTest::addColumn<qint64>("mambaBlock");
    // fp32 SSM: 61,440 + 4,194,304 = 4,255,744 B; attention 8 x 256 x 2 = 4,096 B per token.
    QTest::addRow("align: 16 x 65") << int(MambaCacheMode::Align) << -1 << 1040 << qint64(1040);
    QTest::addRow("none: max_model_len Mamba block")
        << int(MambaCacheMode::None) << -1 << 1040 << qint64(8192);
    // all: lcm(chunk 128, 16) x cdiv(cdiv(4255744, 4096) = 1039, 128) = 1152.
    QTest::addRow("all: chunk aligned") << int(MambaCacheMode::All) << -1 << 1152 << qint64(1152);
    QTest::addRow("bf16 SSM state")
        << int(MambaCacheMode::Align) << int(KvDtype::Bf16) << 528 << qint64(528);
}

void TestVllmV1::nemotronHAlignment() {
    QFETCH(int, mode);
    QFETCH(int, ssm);
    QFETCH(int, block);
    QFETCH(qint64, mambaBlock);
    Scenario s = scenarioFor(nemotronH8b(), 20 * G);
    s.engine.mambaCacheMode = static_cast<MambaCacheMode>(mode);
    if (ssm >= 0)
        s.engine.mambaSsmCacheDtype = static_cast<KvDtype>(ssm);
    const BlockSizes b = resolveBlockSizes(s);
    QCOMPARE(b.attention, block);
    QCOMPARE(b.mamba, mambaBlock);
    const auto r = computeLedger(s);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.layerMix.none, 24); // MLP-only layers hold nothing
    // One request holds one state per Mamba group in "none", two in "align".
    const qint64 statePages = mode == int(MambaCacheMode::None) ? 6 : 12;
    if (mode != int(MambaCacheMode::All))
        QCOMPARE(r.stateBytesPerRequest, statePages * r.bytesPerBlock);
}

void TestVllmV1::gemma3Padding() {
    const auto r = computeLedger(scenarioFor(gemma3_27b(), 20 * G));
    // 52 sliding layers in 6 groups of 10 slots: 8 padding slots (vLLM warns about them).
    int padding = 0;
    for (const auto& g : r.kvCacheGroups)
        padding += g.paddingSlots;
    QCOMPARE(padding, 8);
    QVERIFY(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
        return n == "Add 8 padding layers, may waste at most 15.38% KV cache memory";
    }));
    // Buckets come in layer order (layer 1 is sliding): six sliding groups of strided layers,
    // 52 = 4 x 9 + 2 x 8, then the full-attention group of 10.
    QCOMPARE(r.kvCacheGroups[0].type, SpecType::SlidingWindow);
    QCOMPARE(r.kvCacheGroups[0].window, qint64(1024));
    QCOMPARE(r.kvCacheGroups[0].layers, 9);
    QCOMPARE(r.kvCacheGroups[5].layers, 8);
    QCOMPARE(r.kvCacheGroups[5].paddingSlots, 2);
    QCOMPARE(r.kvCacheGroups.back().type, SpecType::FullAttention);
    QCOMPARE(r.kvCacheGroups.back().layers, 10);
}

void TestVllmV1::disableHybridPromotes() {
    // --disable-hybrid-kv-cache-manager: Llama-4's chunked layers cost full attention.
    Scenario s = scenarioFor(llama4Scout(), 30 * G, 131072);
    s.engine.disableHybridKvCacheManager = true;
    const auto r = computeLedger(s);
    QVERIFY(r.hybridKvCacheManagerDisabled);
    QCOMPARE(int(r.kvCacheGroups.size()), 1);
    QCOMPARE(r.bytesPerBlock, qint64(48) * 65536);
    QCOMPARE(r.numGpuBlocks, qint64(10240));
    QCOMPARE(r.blocksPerRequest, qint64(8192));
    QCOMPARE(QString::number(r.maxConcurrency, 'f', 2), QStringLiteral("1.25"));
    QCOMPARE(r.gpuKvCacheTokens, qint64(163840));
}

void TestVllmV1::lmcache1739() {
    // LMCache issue 1739's log: Qwen3-14B (40 layers, 8 KV heads of 128, bf16), 6.51 GiB at
    // max_model_len 32768 -> "GPU KV cache size: 42,656 tokens", "1.30x".
    Scenario s = scenarioFor(attentionModel(40, 40, 8, 128, 40960), gibToBytes(6.51), 32768);
    const auto r = computeLedger(s);
    QCOMPARE(r.numGpuBlocks, qint64(2666));
    QCOMPARE(r.gpuKvCacheTokens, qint64(42656));
    QCOMPARE(r.gpuKvCacheTokensLegacy, qint64(42656));
    QCOMPARE(QString::number(r.maxConcurrency, 'f', 2), QStringLiteral("1.30"));
    QCOMPARE(QString::fromStdString(r.capacityLogLine),
             QStringLiteral("GPU KV cache size: 42,656 tokens, Maximum concurrency for 32,768 "
                            "tokens per request: 1.30x"));
}

void TestVllmV1::refusalAndEstimate() {
    // Llama-3.1-8B at 128K in 10 GiB: one request needs 8192 blocks x 2 MiB = 16 GiB. With
    // the null block held back, 5119 blocks remain: the estimate is 5119 x 16 = 81,904.
    Scenario s = scenarioFor(attentionModel(32, 32, 8, 128, 131072), 10 * G);
    const auto r = computeLedger(s);
    QVERIFY(r.refused);
    QCOMPARE(r.estimatedMaxModelLen, qint64(81904));
    const QString msg = QString::fromStdString(r.error);
    QVERIFY2(msg.contains("model's max seq len (131072), (16.0 GiB KV cache is needed, which is "
                          "larger than the available KV cache memory (10.0 GiB)"),
             r.error.c_str());
    QVERIFY(msg.contains("the estimated maximum model length is 81904"));
    // At the estimate it starts; one token more and it refuses again.
    s.workload.maxModelLen = 81904;
    QVERIFY(!computeLedger(s).refused);
    s.workload.maxModelLen = 81905;
    QCOMPARE(computeLedger(s).estimatedMaxModelLen, qint64(81904));
}

void TestVllmV1::noMemoryAtAll() {
    Scenario s = scenarioFor(attentionModel(32, 32, 8, 128, 8192), 1024);
    const auto r = computeLedger(s);
    QVERIFY(r.refused);
    QVERIFY(QString::fromStdString(r.error).contains("No available memory for the cache blocks"));
}

void TestVllmV1::mlaBlockSizes_data() {
    QTest::addColumn<int>("cc");
    QTest::addColumn<int>("kv");
    QTest::addColumn<int>("block");
    QTest::addColumn<QString>("backend");
    // _get_backend_priorities (vllm/platforms/cuda.py) with each backend's kernel sizes.
    QTest::addRow("H100 bf16: FlashAttention MLA")
        << 90 << int(KvDtype::Bf16) << 16 << "FLASH_ATTN_MLA";
    QTest::addRow("H100 fp8: FlashMLA") << 90 << int(KvDtype::Fp8E4M3) << 64 << "FLASHMLA";
    QTest::addRow("B200 bf16: FlashInfer MLA")
        << 100 << int(KvDtype::Bf16) << 32 << "FLASHINFER_MLA";
    QTest::addRow("A100: Triton MLA") << 80 << int(KvDtype::Bf16) << 16 << "TRITON_MLA";
}

void TestVllmV1::mlaBlockSizes() {
    QFETCH(int, cc);
    QFETCH(int, kv);
    QFETCH(int, block);
    QFETCH(QString, backend);
    Scenario s = scenarioFor(deepseekV3(), 40 * G);
    s.hardware.gpu.computeCapability = cc;
    if (kv != int(KvDtype::Bf16))
        s.levers.quant = {true, KvFormat::defaultFor(static_cast<KvDtype>(kv))};
    const BlockSizes b = resolveBlockSizes(s);
    QCOMPARE(b.attention, block);
    QCOMPARE(QString::fromStdString(b.backend), backend);
    // The latent is one 576-wide vector per token, replicated on every rank.
    const auto r = computeLedger(s);
    const qint64 perToken = kv == int(KvDtype::Bf16) ? 1152 : 576;
    QCOMPARE(r.kvBytesPerTokenPerGpu, 61 * perToken);
    QCOMPARE(r.bytesPerBlock, 61 * perToken * block);
}

void TestVllmV1::sparseMlaStoresDsMla() {
    // DeepSeek-V3.2 on an H100 with fp8: FlashMLA's sparse kernels store fp8_ds_mla, 656 B.
    ModelSpec m = deepseekV3();
    m.sparseMla = true;
    Scenario s = scenarioFor(m, 40 * G);
    s.levers.quant = {true, KvFormat::defaultFor(KvDtype::Fp8E4M3)};
    auto r = computeLedger(s);
    QCOMPARE(r.blockSize, 64);
    QCOMPARE(r.kvBytesPerTokenPerGpu, qint64(61) * 656);
    QCOMPARE(vllmCacheDtype(s).value_or(""), std::string("fp8"));
    // With its indexer (index_head_dim 128): 128 fp8 bytes + one fp32 scale more per layer
    // (DeepseekV32IndexerCache), in fp8 and in bf16 alike.
    s.model.indexHeadDim = 128;
    r = computeLedger(s);
    QCOMPARE(r.kvBytesPerTokenPerGpu, qint64(61) * (656 + 132));
    QCOMPARE(r.bytesPerBlock, qint64(61) * 64 * (656 + 132));
    s.levers.quant.enabled = false;
    r = computeLedger(s);
    QCOMPARE(r.kvBytesPerTokenPerGpu, qint64(61) * (1152 + 132));
}

void TestVllmV1::userBlockSizeMustBeAccepted() {
    Scenario s = scenarioFor(attentionModel(32, 32, 8, 128, 8192), 20 * G);
    s.levers.paging.blockSize = 8;
    BlockSizes b = resolveBlockSizes(s);
    QVERIFY(QString::fromStdString(b.error).contains("block size 8"));
    s.levers.paging.blockSize = 32;
    QVERIFY(resolveBlockSizes(s).error.empty());
    // DeepSeek with fp8 on Hopper: 16 is not FlashMLA's, so vLLM runs Triton MLA.
    Scenario d = scenarioFor(deepseekV3(), 40 * G);
    d.levers.quant = {true, KvFormat::defaultFor(KvDtype::Fp8E4M3)};
    d.levers.paging.blockSize = 16;
    b = resolveBlockSizes(d);
    QVERIFY(b.error.empty());
    QCOMPARE(QString::fromStdString(b.backend), QStringLiteral("TRITON_MLA"));
    QVERIFY(!b.notes.empty());
}

void TestVllmV1::schedulerDefaults_data() {
    QTest::addColumn<qint64>("memory");
    QTest::addColumn<QString>("name");
    QTest::addColumn<qint64>("tokens");
    QTest::addColumn<qint64>("seqs");
    // EngineArgs.get_batch_defaults, vllm serve: >= 70 GiB and not an A100.
    QTest::addRow("H100") << qint64(85017821184LL) << "H100 SXM 80GB" << qint64(8192)
                          << qint64(1024);
    QTest::addRow("A100 80GB") << qint64(84987084800LL) << "A100 SXM 80GB" << qint64(2048)
                               << qint64(256);
    QTest::addRow("L40S 48GB") << qint64(48'305'000'000LL) << "L40S" << qint64(2048) << qint64(256);
}

void TestVllmV1::schedulerDefaults() {
    QFETCH(qint64, memory);
    QFETCH(QString, name);
    QFETCH(qint64, tokens);
    QFETCH(qint64, seqs);
    GpuSpec g = h100();
    g.memoryBytes = memory;
    g.name = name.toStdString();
    g.id = name.toLower().toStdString();
    const auto d = kvl::core::schedulerDefaults(g);
    QCOMPARE(d.maxNumBatchedTokens, tokens);
    QCOMPARE(d.maxNumSeqs, seqs);
    Scenario s = scenarioFor(attentionModel(32, 32, 8, 128, 8192), 20 * G);
    s.hardware.gpu = g;
    QCOMPARE(effectiveMaxNumBatchedTokens(s), tokens);
    QCOMPARE(inFlightTokens(s), 2 * tokens); // async scheduling: two batches in flight
    s.engine.asyncScheduling = false;
    QCOMPARE(inFlightTokens(s), tokens);
}

void TestVllmV1::stateBytes_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<int>("tp");
    QTest::addColumn<qint64>("bytes");
    // MambaStateShapeCalculator: Qwen3-Next GDN conv (3, 8192) + temporal (32, 128, 128), bf16.
    QTest::addRow("qwen3-next tp1") << 0 << 1 << qint64(3 * 8192 * 2 + 32 * 128 * 128 * 2);
    QTest::addRow("qwen3-next tp2") << 0 << 2 << qint64(548864);
    QTest::addRow("qwen3-next tp4") << 0 << 4 << qint64(274432);
    // Nemotron-H-8B Mamba2 conv (3, 8192 + 2 x 8 x 128) bf16 + temporal (128, 64, 128) fp32.
    QTest::addRow("nemotron-h-8b tp1") << 1 << 1 << qint64(61440 + 4194304);
    QTest::addRow("nemotron-h-8b tp2") << 1 << 2 << qint64(2127872);
    // 8 groups over 16 ranks are replicated to 16 (extra_groups_for_head_shards).
    QTest::addRow("nemotron-h-8b tp16 replicated groups")
        << 1 << 16 << qint64(3 * ((8192 + 2 * 16 * 128) / 16) * 2 + 8 * 64 * 128 * 4);
}

void TestVllmV1::stateBytes() {
    QFETCH(int, which);
    QFETCH(int, tp);
    QFETCH(qint64, bytes);
    const ModelSpec m = which == 0 ? qwen3Next() : nemotronH8b();
    QCOMPARE(stateBytesPerLayer(*m.state, KvDtype::Bf16, m.state->ssmDtype, tp), bytes);
}

void TestVllmV1::stateTensorParallel() {
    const ModelSpec m = qwen3Next();
    QVERIFY(checkStateTensorParallel(*m.state, 8).ok());
    const auto e = checkStateTensorParallel(*m.state, 3);
    QVERIFY(!e.ok());
    QVERIFY(QString::fromStdString(e.error().message).contains("value heads"));
    QCOMPARE(stateBytesPerLayer(*m.state, KvDtype::Bf16, std::nullopt, 3), qint64(0));
}

void TestVllmV1::pipelineStagesTakeTheFewestBlocks() {
    // 80 layers over PP 3: get_pp_indices gives 27, 27, 26. With the same memory per GPU the
    // stages with 27 layers have the fewest blocks, and the scheduler uses those.
    ModelSpec m = attentionModel(80, 64, 8, 128, 8192);
    Scenario s = scenarioFor(m, 20 * G);
    s.hardware.pipelineParallel = 3;
    const auto r = computeLedger(s);
    QCOMPARE(r.pipelineStages, 3);
    QCOMPARE(r.bytesPerBlock, qint64(27) * 65536);
    QCOMPARE(r.numGpuBlocks, 20 * G / (qint64(27) * 65536));
    QCOMPARE(r.kvBytesPerTokenPerGpu, qint64(27) * 4096);
    QCOMPARE(r.kvBytesPerToken, qint64(80) * 4096);
}

// A replica's KV is each stage's layers on each of its TP GPUs: 80 layers over PP 3 are 80
// layers' worth, not the 27-layer stage's three times (81), as busiest GPU x TP x PP counted.
void TestVllmV1::replicaHoldsEachLayerOnce_data() {
    QTest::addColumn<int>("tp");
    QTest::addColumn<bool>("paged");
    QTest::addColumn<qint64>("perToken");   // the replica's
    QTest::addColumn<qint64>("perRequest"); // the replica's, at 4,096 tokens
    // 8 KV heads of 128, BF16: 4,096 B per token per layer for the whole model.
    const qint64 model = qint64(80) * 4096;
    QTest::addRow("TP 1") << 1 << true << model << model * 4096;
    QTest::addRow("TP 2: the heads split") << 2 << true << model << model * 4096;
    // TP 16 over 8 KV heads: vLLM keeps each head on two GPUs.
    QTest::addRow("TP 16: each head twice") << 16 << true << 2 * model << 2 * model * 4096;
    // Contiguous: every request reserves the max model length (the model's 8,192).
    QTest::addRow("contiguous") << 2 << false << model << model * 8192;
}

void TestVllmV1::replicaHoldsEachLayerOnce() {
    QFETCH(int, tp);
    QFETCH(bool, paged);
    QFETCH(qint64, perToken);
    QFETCH(qint64, perRequest);
    Scenario s = scenarioFor(attentionModel(80, 64, 8, 128, 8192), 20 * G);
    s.hardware.gpuCount = tp;
    s.hardware.pipelineParallel = 3;
    s.levers.paging.enabled = paged;
    const auto r = computeLedger(s);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(r.kvBytesPerTokenPerReplica, perToken);
    QCOMPARE(r.kvBytesPerRequest, perRequest);
    // The busiest GPU holds 27 of the 80 layers.
    QCOMPARE(r.kvBytesPerTokenPerGpu * tp * 80, perToken * 27);
    // The chart's point and the sweep say the same.
    QCOMPARE(computePoint(s, 4096).bytesPerRequest, perRequest);
    const SweepResult sw = computeSweep(s);
    const auto at = std::find(sw.contexts.begin(), sw.contexts.end(), 4096);
    QVERIFY(at != sw.contexts.end());
    QCOMPARE(qint64(sw.curves.back().bytesPerRequest[std::size_t(at - sw.contexts.begin())]),
             perRequest);
}

// MLA keeps the whole latent on every TP rank (TP 8: eight copies per replica); decode context
// parallel spreads the tokens over DCP ranks instead (DCP 8: one copy). Per token x context is
// per request either way (32K is whole blocks).
void TestVllmV1::mlaReplicaCopies_data() {
    QTest::addColumn<int>("pp");
    QTest::addColumn<int>("dcp");
    QTest::addColumn<int>("copies");
    QTest::addRow("TP 8") << 1 << 1 << 8;
    QTest::addRow("TP 8 x PP 2: 31 and 30 layers") << 2 << 1 << 8;
    QTest::addRow("TP 8, DCP 8") << 1 << 8 << 1;
    QTest::addRow("TP 8, DCP 2") << 1 << 2 << 4;
}

void TestVllmV1::mlaReplicaCopies() {
    QFETCH(int, pp);
    QFETCH(int, dcp);
    QFETCH(int, copies);
    Scenario s = scenarioFor(deepseekV3(), 40 * G);
    s.hardware.gpuCount = 8;
    s.hardware.pipelineParallel = pp;
    s.hardware.decodeContextParallel = dcp;
    s.workload.context = 32768;
    const auto r = computeLedger(s);
    QVERIFY2(r.error.empty(), r.error.c_str());
    // 61 layers x (512 + 64) x 2 bytes = 70,272 B per token for the model.
    QCOMPARE(r.kvBytesPerToken, qint64(70272));
    QCOMPARE(r.kvBytesPerTokenPerReplica, qint64(70272) * copies);
    QCOMPARE(r.kvBytesPerRequest, r.kvBytesPerTokenPerReplica * 32768);
}

void TestVllmV1::cacheDtypeNames_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<qint64>("perHead"); // K + V bytes per token for one head of 128
    QTest::addRow("auto (bf16)") << "auto" << qint64(512);
    QTest::addRow("fp8") << "fp8" << qint64(256);
    QTest::addRow("int8_per_token_head") << "int8_per_token_head" << qint64(256 + 8);
    QTest::addRow("fp8_per_token_head") << "fp8_per_token_head" << qint64(256 + 8);
    QTest::addRow("int4_per_token_head") << "int4_per_token_head" << qint64(128 + 8);
    // nvfp4_kv_cache_full_dim(128) = 64 + 8 per vector.
    QTest::addRow("nvfp4") << "nvfp4" << qint64(2 * 72);
}

void TestVllmV1::cacheDtypeNames() {
    QFETCH(QString, name);
    QFETCH(qint64, perHead);
    const ModelSpec m = attentionModel(32, 32, 8, 128, 8192);
    const auto f = formatForVllmCacheDtype(name.toStdString(), m);
    QVERIFY(f.ok());
    QCOMPARE(kvBytesPerTokenPerHead(f.value(), 128), perHead);
    Scenario s = scenarioFor(m, 20 * G);
    s.levers.quant = {true, f.value()};
    QCOMPARE(QString::fromStdString(vllmCacheDtype(s).value_or("none")),
             name == "auto (bf16)" ? QStringLiteral("auto") : name);
    QVERIFY(!formatForVllmCacheDtype("fp9", m).ok());
    // INT4 per group of 128 with a zero point has no vLLM name.
    s.levers.quant = {true, KvFormat::defaultFor(KvDtype::Int4)};
    QVERIFY(!vllmCacheDtype(s).has_value());
}

void TestVllmV1::cacheDtypeNameList() {
    // Every --kv-cache-dtype name the ledger models, in the order --help lists them: built from
    // the name tables and the names read by a rule of their own, none lost or moved.
    const std::vector<std::string> names{"auto",
                                         "bfloat16",
                                         "float16",
                                         "fp8",
                                         "fp8_e4m3",
                                         "fp8_e5m2",
                                         "fp8_ds_mla",
                                         "int8_per_token_head",
                                         "fp8_per_token_head",
                                         "int4_per_token_head",
                                         "nvfp4",
                                         "turboquant_k8v4",
                                         "turboquant_4bit_nc",
                                         "turboquant_k3v4_nc",
                                         "turboquant_3bit_nc"};
    QStringList got, want;
    for (const std::string& name : vllmCacheDtypeNames())
        got << QString::fromStdString(name);
    for (const std::string& name : names)
        want << QString::fromStdString(name);
    QCOMPARE(got, want);
    // Each reads back as a format: fp8_ds_mla for DeepSeek's MLA latent, the rest for a model of
    // full attention layers.
    const ModelSpec full = attentionModel(32, 32, 8, 128, 8192);
    for (const std::string& name : names) {
        const bool dsMla = name == "fp8_ds_mla";
        const auto f = formatForVllmCacheDtype(name, dsMla ? deepseekV3() : full);
        QVERIFY2(f.ok(), name.c_str());
    }
}

QTEST_APPLESS_MAIN(TestVllmV1)
#include "tst_vllm_v1.moc"
