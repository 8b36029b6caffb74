// Property test: 10,000 random scenarios through the ledger (seeded, reproducible).
// Every quantity finite and non-negative; memory per request non-decreasing and concurrency
// non-increasing in context; turning a lever on never increases memory (a wider KV format
// and the MHA what-if aside; paging may round up by at most one block per KV cache group plus
// vLLM's sliding slack block and group padding); bytes per token equal the sum over layers.

#include "core/ledger.h"

#include <QtTest>

#include <cmath>
#include <random>

using namespace kvl::core;

namespace {

class Gen {
public:
    explicit Gen(std::uint64_t seed) : m_rng(seed) {}
    std::int64_t between(std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(m_rng);
    }
    // Log-uniform, so small and huge values both appear.
    std::int64_t logBetween(std::int64_t lo, std::int64_t hi) {
        const double a = std::log(double(lo)), b = std::log(double(hi));
        return std::clamp<std::int64_t>(
            std::llround(std::exp(std::uniform_real_distribution<double>(a, b)(m_rng))), lo, hi);
    }
    bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(m_rng); }
    template <class T> T pick(std::initializer_list<T> xs) {
        return *(xs.begin() + between(0, static_cast<std::int64_t>(xs.size()) - 1));
    }

private:
    std::mt19937_64 m_rng;
};

Scenario randomScenario(Gen& g) {
    Scenario s;
    ModelSpec& m = s.model;
    m.id = "random";
    m.name = "random";
    const int kv = static_cast<int>(g.pick<std::int64_t>({1, 2, 4, 8, 16, 32, 64}));
    m.kvHeads = kv;
    m.qHeads = kv * static_cast<int>(g.pick<std::int64_t>({1, 2, 4, 8}));
    m.headDim = static_cast<int>(g.pick<std::int64_t>({64, 96, 128, 256}));
    const int layers = static_cast<int>(g.between(1, 160));
    const bool mla = g.coin(0.1);
    const bool sliding = !mla && g.coin(0.3);
    const std::int64_t window = g.pick<std::int64_t>({128, 1024, 4096});
    for (int i = 0; i < layers; ++i) {
        if (mla)
            m.layers.push_back({LayerKind::Mla, 0});
        else if (sliding && (i % 2 == 0 || g.coin(0.2)))
            m.layers.push_back({LayerKind::Sliding, window});
        else
            m.layers.push_back({LayerKind::Full, 0});
    }
    if (mla) {
        m.kvLoraRank = 512;
        m.qkRopeHeadDim = 64;
    }
    m.params = g.logBetween(100'000'000, 2'000'000'000'000);
    m.weightDtype =
        g.pick({WeightDtype::Fp16, WeightDtype::Bf16, WeightDtype::Fp8, WeightDtype::Int4});
    m.nativeKvDtype = g.pick({KvDtype::Fp16, KvDtype::Bf16, KvDtype::Fp32});
    m.maxContext = g.logBetween(2048, 1 << 20);

    auto& lv = s.levers;
    lv.attention.enabled = g.coin(0.3);
    lv.attention.mode =
        g.pick({AttentionMode::Native, AttentionMode::Mha, AttentionMode::Gqa, AttentionMode::Mqa});
    lv.attention.gqaKvHeads =
        std::max(1, m.qHeads / static_cast<int>(g.pick<std::int64_t>({1, 2, 4})));
    lv.quant.enabled = g.coin();
    const KvDtype d = g.pick({KvDtype::Fp16, KvDtype::Bf16, KvDtype::Fp8E4M3, KvDtype::Fp8E5M2,
                              KvDtype::Int8, KvDtype::Int4, KvDtype::Int2});
    lv.quant.format = KvFormat::defaultFor(d);
    if (d == KvDtype::Int4)
        lv.quant.format.groupSize = static_cast<int>(g.pick<std::int64_t>({32, 64}));
    lv.paging.enabled = g.coin(0.8);
    lv.paging.blockSize = static_cast<int>(g.pick<std::int64_t>({1, 8, 16, 32, 128}));
    lv.prefix.enabled = g.coin();
    lv.prefix.sharedTokens = g.logBetween(1, 100'000);
    lv.prefix.sharingRequests = g.pick<std::int64_t>({0, 2, 8, 100});

    s.hardware.gpu = {"g", "G", "v", g.logBetween(8LL << 30, 300LL << 30), 1000, "HBM"};
    s.hardware.gpuCount = static_cast<int>(g.pick<std::int64_t>({1, 2, 4, 8, 16}));
    s.hardware.memoryUtilization = 0.5 + 0.45 * double(g.between(0, 100)) / 100.0;
    if (g.coin(0.2))
        s.hardware.kvMemoryBytes = g.logBetween(1 << 20, 1LL << 40);
    s.workload.context = g.logBetween(1, 2'000'000);
    s.workload.maxModelLen = g.coin() ? 0 : g.logBetween(1024, 1 << 20);
    return s;
}

bool sane(double v) {
    return std::isfinite(v) && v >= 0;
}

} // namespace

class TestProperties : public QObject {
    Q_OBJECT
private slots:
    void randomScenarios();
};

void TestProperties::randomScenarios() {
    Gen g(20261129);
    int checked = 0, monotoneChecks = 0;
    for (int n = 0; n < 10'000; ++n) {
        const Scenario s = randomScenario(g);
        if (s.validate())
            continue; // e.g. a per-group format whose G does not divide head_dim
        ++checked;
        const auto r = computeLedger(s);
        const std::string where = "scenario #" + std::to_string(n);
        for (const double v :
             {double(r.kvBytesPerToken), double(r.kvBytesPerTokenPerGpu),
              double(r.kvBytesPerRequest), double(r.kvBytesPerRequestPerGpu),
              double(r.weightsBytes), double(r.availableKvBytes), double(r.numGpuBlocks),
              double(r.gpuKvCacheTokens), r.maxConcurrency, double(r.maxRequestsAtContext),
              double(r.sharedBytesPerRequestPerGpu)})
            QVERIFY2(sane(v), where.c_str());
        QVERIFY2(r.kvBytesAtMaxRequests <= r.availableKvBytes, where.c_str());
        QVERIFY2(r.sharedBytesPerRequestPerGpu <
                     std::max<std::int64_t>(1, r.kvBytesPerRequestPerGpu),
                 where.c_str());

        // Bytes per token = the sum over layers, computed here from the layer list.
        const EffectiveKv kv = effectiveKv(s);
        std::int64_t sum = 0;
        for (const auto& l : s.model.layers)
            sum +=
                l.kind == LayerKind::Mla
                    ? latentBytesPerToken(kv.format, s.model.mlaLatentDim())
                    : std::int64_t{kv.kvHeads} * kvBytesPerTokenPerHead(kv.format, s.model.headDim);
        QCOMPARE(r.kvBytesPerToken, sum);

        // Monotone in context.
        if (n % 4 == 0) {
            const auto sweep = computeSweep(s, 4);
            for (const auto& c : sweep.curves)
                for (std::size_t i = 1; i < sweep.contexts.size(); ++i) {
                    QVERIFY2(c.bytesPerRequestPerGpu[i] >= c.bytesPerRequestPerGpu[i - 1],
                             where.c_str());
                    QVERIFY2(c.maxRequests[i] <= c.maxRequests[i - 1], where.c_str());
                    ++monotoneChecks;
                }
        }

        // Levers: each one turned on, from the scenario with it off.
        const std::int64_t ctx = s.workload.context;
        Scenario off = s;
        off.levers.prefix.enabled = false;
        const auto withoutPrefix = computePoint(off, ctx);
        const auto withPrefix = computePoint(s, ctx);
        QVERIFY2(withPrefix.bytesPerRequestPerGpu == withoutPrefix.bytesPerRequestPerGpu,
                 where.c_str());
        QVERIFY2(withPrefix.maxRequests >= withoutPrefix.maxRequests, where.c_str());

        Scenario q = s;
        q.levers.quant.enabled = false;
        const auto nativeFormat = effectiveKv(q).format;
        if (kvBytesPerTokenPerHead(s.levers.quant.format, 128) <=
                kvBytesPerTokenPerHead(nativeFormat, 128) &&
            latentBytesPerToken(s.levers.quant.format, 576) <=
                latentBytesPerToken(nativeFormat, 576)) {
            Scenario on = q;
            on.levers.quant.enabled = true;
            QVERIFY2(computePoint(on, ctx).bytesPerRequestPerGpu <=
                         computePoint(q, ctx).bytesPerRequestPerGpu,
                     where.c_str());
        }

        Scenario a = s;
        a.levers.attention.enabled = false;
        Scenario aOn = a;
        aOn.levers.attention.enabled = true;
        if (effectiveKv(aOn).kvHeads <= effectiveKv(a).kvHeads) // regrouping to fewer KV heads
            QVERIFY2(computePoint(aOn, ctx).bytesPerRequestPerGpu <=
                         computePoint(a, ctx).bytesPerRequestPerGpu,
                     where.c_str());

        Scenario p = s;
        p.levers.paging.enabled = false;
        p.levers.prefix.enabled = false;
        Scenario pOn = p;
        pOn.levers.paging.enabled = true;
        const auto paged = computeLedger(pOn);
        // Rounding to whole blocks and vLLM's slack block on sliding layers (two pool blocks per
        // KV cache group at most), plus the group padding slots vLLM allocates for hybrids.
        const std::int64_t slack =
            2 * std::int64_t(paged.kvCacheGroups.size()) * paged.bytesPerBlock +
            paged.paddingBytesPerRequest;
        QVERIFY2(paged.kvBytesPerRequestPerGpu <=
                     computePoint(p, ctx).bytesPerRequestPerGpu + slack,
                 where.c_str());
    }
    QVERIFY(checked > 9'000);
    QVERIFY(monotoneChecks > 10'000);
}

QTEST_APPLESS_MAIN(TestProperties)
#include "tst_properties.moc"
