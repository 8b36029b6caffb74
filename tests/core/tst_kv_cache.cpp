// vLLM v1's KV cache groups, block counts, admission and concurrency, row for row against the
// expectations in vLLM's own tests/v1/core/test_kv_cache_utils.py (vllm-project/vllm main):
// test_estimate_max_model_len, test_get_max_concurrency_for_kv_cache_config,
// test_get_kv_cache_config_one_worker, test_get_kv_cache_configs_pp_sharding and the
// multi-worker cases. Their helper specs: new_kv_cache_spec(block_size=16, num_kv_heads=2,
// head_size=64, dtype=float32) has a 16,384-byte page.

#include "core/kv_cache.h"

#include <QtTest>

using namespace kvl::core;

namespace {

constexpr std::int64_t kGiBytes = std::int64_t{1} << 30;

// A spec as vLLM's test helpers build it: page = B x heads x (head + head_v) x element bytes.
CacheSpec attention(SpecType type, int blockSize, int heads, int headSize, int elementBytes,
                    std::int64_t window = 0) {
    CacheSpec s;
    s.type = type;
    s.blockSize = blockSize;
    s.kvHeads = heads;
    s.headSize = headSize;
    s.headSizeV = headSize;
    s.format = KvFormat::defaultFor(elementBytes == 4 ? KvDtype::Fp32 : KvDtype::Fp16);
    s.realPageBytes = std::int64_t{blockSize} * heads * (2 * headSize) * elementBytes;
    if (type == SpecType::SlidingWindow)
        s.window = window;
    if (type == SpecType::ChunkedLocal)
        s.chunk = window;
    return s;
}

CacheSpec full(int headSize = 64, int blockSize = 16) {
    return attention(SpecType::FullAttention, blockSize, 2, headSize, 4);
}
CacheSpec sliding(std::int64_t window = 1, int headSize = 64) {
    return attention(SpecType::SlidingWindow, 16, 2, headSize, 4, window);
}

std::vector<std::optional<CacheSpec>> layers(std::initializer_list<CacheSpec> specs) {
    std::vector<std::optional<CacheSpec>> out;
    for (const auto& s : specs)
        out.emplace_back(s);
    return out;
}

std::vector<std::optional<CacheSpec>> repeat(const CacheSpec& s, int n) {
    return std::vector<std::optional<CacheSpec>>(static_cast<std::size_t>(n), s);
}

CacheGroups groupsOf(const std::vector<std::optional<CacheSpec>>& specs, bool disable = false) {
    auto g = kvCacheGroups(specs, disable);
    if (!g)
        qFatal("kvCacheGroups failed: %s", g.error().message.c_str());
    return g.value();
}

// "[[1,2],[3,5],[4,6]]" of the groups' layers, 1-based as vLLM's test names them.
QString layout(const CacheGroups& g) {
    QStringList groups;
    for (const auto& grp : g.groups) {
        QStringList ls;
        for (int l : grp.layers)
            ls << QString::number(l + 1);
        groups << "[" + ls.join(',') + "]";
    }
    return "[" + groups.join(',') + "]";
}

} // namespace

class TestKvCache : public QObject {
    Q_OBJECT
private slots:
    void estimateMaxModelLen_data();
    void estimateMaxModelLen();
    void maxConcurrency_data();
    void maxConcurrency();
    void oneWorkerGrouping_data();
    void oneWorkerGrouping();
    void nullBlockAtStartup();
    void multiWorkerTakesTheFewestBlocks();
    void admissionRules_data();
    void admissionRules();
    void inFlightTokens_data();
    void inFlightTokens();
    void mlaCannotBePadded();
    void promotionNeedsFullAttention();
    void formatGib_data();
    void formatGib();
    void logLine();
};

void TestKvCache::estimateMaxModelLen_data() {
    QTest::addColumn<qint64>("maxModelLen");
    QTest::addColumn<qint64>("expected");
    // test_estimate_max_model_len: 32 layers of Full(bs 16, 32 heads, 128, fp16), 8 GiB.
    QTest::addRow("16385 -> 16384") << qint64(16385) << qint64(16384);
    QTest::addRow("16383 fits as is") << qint64(16383) << qint64(16383);
}

void TestKvCache::estimateMaxModelLen() {
    QFETCH(qint64, maxModelLen);
    QFETCH(qint64, expected);
    const auto g = groupsOf(repeat(attention(SpecType::FullAttention, 16, 32, 128, 2), 32));
    AdmissionInputs in{maxModelLen, 32768, 1};
    QCOMPARE(kvl::core::estimateMaxModelLen(g, in, 8 * kGiBytes, maxModelLen), expected);
    // Per token 2 x 32 x 128 x 2 x 32 layers = 524,288 B; 8 GiB / 524,288 = 16,384 tokens.
    QCOMPARE(kvl::core::estimateMaxModelLen(g, in, 8 * kGiBytes - 1, maxModelLen), qint64(16368));
    QCOMPARE(kvl::core::estimateMaxModelLen(g, in, 1, maxModelLen), qint64(0));
}

void TestKvCache::maxConcurrency_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<qint64>("numBlocks");
    QTest::addColumn<qint64>("blocksPerRequest");
    // test_get_max_concurrency_for_kv_cache_config: max_model_len 16384,
    // max_num_batched_tokens 1024, async scheduling off (one batch in flight).
    QTest::addRow("full") << "full" << qint64(1536) << qint64(1024);
    QTest::addRow("sliding 1024: 129 blocks") << "sliding" << qint64(387) << qint64(129);
    QTest::addRow("full + sliding groups")
        << "hybrid" << qint64((1024 + 129) * 3) << qint64(1024 + 129);
    QTest::addRow("32-layer full + 2-layer sliding")
        << "unequal" << qint64(1153 * 3) << qint64(1153);
    QTest::addRow("uniform-type group + sliding") << "uniform" << qint64(3459) << qint64(1153);
}

void TestKvCache::maxConcurrency() {
    QFETCH(QString, kind);
    QFETCH(qint64, numBlocks);
    QFETCH(qint64, blocksPerRequest);
    const CacheSpec f = attention(SpecType::FullAttention, 16, 32, 128, 2);
    const CacheSpec w = attention(SpecType::SlidingWindow, 16, 32, 128, 2, 1024);
    CacheGroups g;
    auto add = [&](const CacheSpec& spec, int n) {
        CacheGroup grp;
        grp.spec = spec;
        for (int i = 0; i < n; ++i)
            grp.layers.push_back(static_cast<int>(g.groups.size()) * 100 + i);
        g.groups.push_back(grp);
    };
    if (kind == "full")
        add(f, 32);
    if (kind == "sliding")
        add(w, 32);
    if (kind == "hybrid" || kind == "unequal") {
        add(f, 32);
        add(w, kind == "hybrid" ? 32 : 2);
    }
    if (kind == "uniform") {
        CacheGroup u;
        u.spec = f;
        for (int i = 0; i < 4; ++i) {
            u.layers.push_back(i);
            u.layerSpecs.push_back(attention(SpecType::FullAttention, 16, 32, 64 * (1 + i % 2), 2));
        }
        g.groups.push_back(u);
        add(w, 2);
    }
    const AdmissionInputs in{16384, maxInFlightTokens(1024, false, 1), 1};
    QCOMPARE(in.inFlightTokens, qint64(1024));
    QCOMPARE(admissionBlocksPerRequest(g, in), blocksPerRequest);
    const double c = double(numBlocks) / double(admissionBlocksPerRequest(g, in));
    QCOMPARE(c, kind == "full" ? 1.5 : 3.0);
}

void TestKvCache::oneWorkerGrouping_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<bool>("disableHybrid");
    QTest::addColumn<qint64>("memory");
    QTest::addColumn<qint64>("numBlocks");
    QTest::addColumn<QString>("groups");
    constexpr qint64 page = 16384;
    // test_get_kv_cache_config_one_worker, max_model_len 16.
    QTest::addRow("2 full") << "ff" << false << page * 2 * 32 << qint64(32) << "[[1,2]]";
    QTest::addRow("2 sliding") << "ss" << false << page * 2 * 32 << qint64(32) << "[[1,2]]";
    QTest::addRow("full + sliding, hybrid manager off")
        << "fs" << true << page * 2 * 32 << qint64(32) << "[[1,2]]";
    QTest::addRow("full + sliding: two 1-layer groups")
        << "fs" << false << page * 2 * 32 << qint64(64) << "[[1],[2]]";
    QTest::addRow("2 full + 4 sliding")
        << "ffssss" << false << page * 2 * 32 << qint64(32) << "[[1,2],[3,5],[4,6]]";
    QTest::addRow("3 full + 7 sliding: strided split")
        << "fffsssssss" << false << page * 3 * 32 << qint64(32) << "[[1,2,3],[4,7,10],[5,8],[6,9]]";
    QTest::addRow("6 full + 5 sliding: group size 6 (1.5 rule)")
        << "ffffffsssss" << false << page * 6 * 32 << qint64(32) << "[[1,2,3,4,5,6],[7,8,9,10,11]]";
    QTest::addRow("full 128 + full 64: uniform type")
        << "F64" << false << page * 3 * 32 << qint64(32) << "[[1,2]]";
    QTest::addRow("full 64 + sliding 32: block size doubled")
        << "fS32" << false << page * 32 << qint64(32) << "[[1],[2]]";
    QTest::addRow("full 64 + sliding 96: full page padded")
        << "fS96" << false << page * 2 * 32 << qint64(42) << "[[1],[2]]";
}

void TestKvCache::oneWorkerGrouping() {
    QFETCH(QString, model);
    QFETCH(bool, disableHybrid);
    QFETCH(qint64, memory);
    QFETCH(qint64, numBlocks);
    QFETCH(QString, groups);
    std::vector<std::optional<CacheSpec>> specs;
    if (model == "F64")
        specs = layers({full(128), full(64)});
    else if (model == "fS32")
        specs = layers({full(64), sliding(1, 32)});
    else if (model == "fS96")
        specs = layers({full(64), sliding(1, 96)});
    else
        for (QChar c : model)
            specs.emplace_back(c == 'f' ? full() : sliding());
    const auto g = groupsOf(specs, disableHybrid);
    QCOMPARE(layout(g), groups);
    const std::int64_t bpb = bytesPerPoolBlock(g);
    QCOMPARE(memory / bpb, numBlocks);
    if (model == "fS32") {
        QCOMPARE(g.groups[1].spec.blockSize, 32); // the smaller page gets a larger block
        QCOMPARE(g.groups[1].spec.pageBytes(), qint64(16384));
    }
    if (model == "fS96") {
        QCOMPARE(g.groups[0].spec.paddedPageBytes, qint64(24576));
        QCOMPARE(bpb, qint64(24576));
    }
    if (model == "fs" && disableHybrid) {
        QVERIFY(g.hybridDisabled);
        QCOMPARE(g.groups[0].spec.type, SpecType::FullAttention);
        QCOMPARE(g.groups[0].spec.window, qint64(1)); // FullAttentionSpec(sliding_window=1)
    }
    if (model == "F64")
        QVERIFY(g.groups[0].uniformType());
}

void TestKvCache::nullBlockAtStartup() {
    // test_get_kv_cache_configs_pp_sharding: max_model_len 512 needs 512 / 16 = 32 blocks and
    // the pool holds 33: one request fits only because the null block is held back from 33.
    const auto g = groupsOf(layers({full()}));
    const AdmissionInputs in{512, 8192, 1};
    const std::int64_t bpb = bytesPerPoolBlock(g);
    QCOMPARE(neededBytes(g, in), 32 * bpb);
    const std::int64_t memory = bpb * (512 / 16 + 1);
    QCOMPARE(memory / bpb, qint64(33));
    QVERIFY(neededBytes(g, in) <= memory - bpb);    // 33 blocks: accepted
    QVERIFY(neededBytes(g, in) > memory - 2 * bpb); // 32 blocks: refused
}

void TestKvCache::multiWorkerTakesTheFewestBlocks() {
    // Groups are built on the whole model, then projected onto each stage's layers
    // (_project_kv_cache_groups_to_worker); each stage's pool block spans only its own layers.
    const auto g = groupsOf(repeat(full(), 5));
    const CacheGroups a = projectToStage(g, 0, 2);
    const CacheGroups b = projectToStage(g, 2, 5);
    QCOMPARE(int(a.groups.size()), 1);
    QCOMPARE(int(a.groups[0].layers.size()), 2);
    QCOMPARE(int(b.groups[0].layers.size()), 3);
    QCOMPARE(16384 * 2 * 10 / bytesPerPoolBlock(a), qint64(10));
    QCOMPARE(16384 * 3 * 10 / bytesPerPoolBlock(b), qint64(10));
    // A hybrid model split over two stages keeps every group on both, some empty.
    const auto h = groupsOf(layers({full(), sliding(), sliding(), full(), sliding(), sliding()}));
    QCOMPARE(layout(h), QStringLiteral("[[1,4],[2,5],[3,6]]"));
    const CacheGroups s0 = projectToStage(h, 0, 3);
    QCOMPARE(int(s0.groups.size()), 3);
    QCOMPARE(layout(s0), QStringLiteral("[[1],[2],[3]]"));
}

void TestKvCache::admissionRules_data() {
    QTest::addColumn<int>("type");
    QTest::addColumn<qint64>("window");
    QTest::addColumn<qint64>("maxModelLen");
    QTest::addColumn<qint64>("inFlight");
    QTest::addColumn<int>("dcp");
    QTest::addColumn<qint64>("blocks");
    const int fullT = int(SpecType::FullAttention), swa = int(SpecType::SlidingWindow),
              chunk = int(SpecType::ChunkedLocal);
    QTest::addRow("full 32K") << fullT << qint64(0) << qint64(32768) << qint64(0) << 1
                              << qint64(2048);
    QTest::addRow("full 32K+1") << fullT << qint64(0) << qint64(32769) << qint64(0) << 1
                                << qint64(2049);
    QTest::addRow("full 128K dcp 8")
        << fullT << qint64(0) << qint64(131072) << qint64(0) << 8 << qint64(1024);
    // cdiv(min(W - 1 + F, M), B) + 1.
    QTest::addRow("sliding 128, F 16384")
        << swa << qint64(128) << qint64(131072) << qint64(16384) << 1 << qint64(1033);
    QTest::addRow("sliding capped by max_model_len")
        << swa << qint64(4096) << qint64(2048) << qint64(16384) << 1 << qint64(129);
    // cdiv(min(C + F, M), B), no +1.
    QTest::addRow("chunked 8192, F 16384")
        << chunk << qint64(8192) << qint64(1048576) << qint64(16384) << 1 << qint64(1536);
}

void TestKvCache::admissionRules() {
    QFETCH(int, type);
    QFETCH(qint64, window);
    QFETCH(qint64, maxModelLen);
    QFETCH(qint64, inFlight);
    QFETCH(int, dcp);
    QFETCH(qint64, blocks);
    const CacheSpec s = attention(static_cast<SpecType>(type), 16, 8, 128, 2, window);
    QCOMPARE(admissionBlocks(s, AdmissionInputs{maxModelLen, inFlight, dcp}), blocks);
}

void TestKvCache::inFlightTokens_data() {
    QTest::addColumn<bool>("async");
    QTest::addColumn<int>("pp");
    QTest::addColumn<qint64>("expected");
    // VllmConfig.max_concurrent_batches x max_num_batched_tokens (8192).
    QTest::addRow("async, pp 1: 2 batches") << true << 1 << qint64(16384);
    QTest::addRow("async, pp 4: pp + 1") << true << 4 << qint64(40960);
    QTest::addRow("sync, pp 1") << false << 1 << qint64(8192);
    QTest::addRow("sync, pp 2") << false << 2 << qint64(16384);
}

void TestKvCache::inFlightTokens() {
    QFETCH(bool, async);
    QFETCH(int, pp);
    QFETCH(qint64, expected);
    QCOMPARE(maxInFlightTokens(8192, async, pp), expected);
}

void TestKvCache::mlaCannotBePadded() {
    // An MLA page that neither equals nor divides the largest page cannot be unified.
    CacheSpec mla;
    mla.type = SpecType::Mla;
    mla.blockSize = 16;
    mla.kvHeads = 1;
    mla.headSize = 576;
    mla.realPageBytes = 16 * 576 * 2;                                   // 18,432 B
    const auto r = kvCacheGroups(layers({mla, sliding(1, 96)}), false); // 24,576 B
    QVERIFY(!r.ok());
    QCOMPARE(r.error().code, kvl::ErrorCode::Unsupported);
    QVERIFY(QString::fromStdString(r.error().message).contains("cannot be padded"));
}

void TestKvCache::promotionNeedsFullAttention() {
    // Sliding windows of two sizes and no full layer cannot be promoted to one type.
    const auto r = kvCacheGroups(layers({sliding(128), sliding(4096)}), true);
    QVERIFY(!r.ok());
    QVERIFY(QString::fromStdString(r.error().message).contains("one unified type"));
    // With the hybrid manager on, they are two groups.
    const auto ok = groupsOf(layers({sliding(128), sliding(4096)}));
    QCOMPARE(int(ok.groups.size()), 2);
}

void TestKvCache::formatGib_data() {
    QTest::addColumn<qint64>("bytes");
    QTest::addColumn<QString>("text");
    QTest::addRow("6.5 not 6.50") << qint64(6.5 * 1073741824.0) << "6.5";
    QTest::addRow("12.0") << qint64(12) * 1073741824 << "12.0";
    QTest::addRow("38.87") << qint64(38.87 * 1073741824.0) << "38.87";
    QTest::addRow("0.13") << qint64(139586437) << "0.13";
}

void TestKvCache::formatGib() {
    QFETCH(qint64, bytes);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(formatGibLikeVllm(bytes)), text);
}

void TestKvCache::logLine() {
    // vLLM main prints one line; GLM-5.3's public log: 643 blocks, 414 per request, 1M tokens.
    const double c = 643.0 / 414.0;
    const auto tokens = static_cast<std::int64_t>(c * 1000000.0);
    QCOMPARE(tokens, qint64(1553140));
    QCOMPARE(QString::fromStdString(vllmCapacityLogLine(tokens, 1000000, c)),
             QStringLiteral("GPU KV cache size: 1,553,140 tokens, Maximum concurrency for "
                            "1,000,000 tokens per request: 1.55x"));
}

QTEST_APPLESS_MAIN(TestKvCache)
#include "tst_kv_cache.moc"
