// Which vLLM: the version text a user types, the table of rules keyed by release, and what the
// ledger prints per release. Each row of core/vllm_version.cpp's table must flip its rule at
// the release it names and at no other; the ledger must print the lines that release prints
// (two capacity lines before 0.28, one since; "%.2f" before 0.12, format_gib since) and refuse
// a --kv-cache-dtype the release does not have.

#include "core/engine.h"
#include "core/ledger.h"
#include "core/vllm_version.h"

#include <QtTest>

using namespace kvl::core;

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

// The rule's own field, as text, so one comparison covers every kind of field.
QString fieldOf(VllmRule rule, const VllmRules& r) {
    switch (rule) {
    case VllmRule::ChunkedLocalHybrid:
        return QString::number(r.chunkedLocalHybridByDefault);
    case VllmRule::AvailableFormat:
        return QString::number(r.availableFormatGib);
    case VllmRule::MambaSeqsRefused:
        return QString::number(r.mambaSeqsRefused);
    case VllmRule::PerTokenHeadDtypes:
        return QString::number(r.perTokenHeadDtypes);
    case VllmRule::Nvfp4Dtype:
        return QString::number(r.nvfp4Dtype);
    case VllmRule::TurboQuantDtypes:
        return QString::number(r.turboQuantDtypes);
    case VllmRule::NemotronHSsmFp32:
        return QString::number(r.nemotronHSsmFp32);
    case VllmRule::GpuMemoryUtilization:
        return QString::number(r.defaultGpuMemoryUtilization);
    case VllmRule::CudaGraphsInProfile:
        return QString::number(r.cudaGraphsInProfile);
    case VllmRule::TokensLine:
        return QString::number(int(r.tokensLine));
    case VllmRule::Int4PerTokenHeadDtype:
        return QString::number(r.int4PerTokenHeadDtype);
    case VllmRule::AdmissionInFlight:
        return QString::number(r.admissionInFlightTokens);
    case VllmRule::CapacityOneLine:
        return QString::number(r.capacityOneLine);
    case VllmRule::HybridPrefixCaching:
        return QString::number(r.hybridPrefixCachingAlign);
    }
    return {};
}

// The release just before v: the last patch of the previous series stands for it.
VllmVersion before(const VllmVersion& v) {
    if (v.patch > 0)
        return {v.major, v.minor, v.patch - 1};
    return {v.major, v.minor - 1, 99};
}

GpuSpec gpu(int cc) {
    GpuSpec g;
    g.id = "g";
    g.name = "g";
    g.vendor = "NVIDIA";
    g.memoryBytes = 85017821184LL;
    g.computeCapability = cc;
    return g;
}

// Google's gemma-3-27b-it geometry (62 layers, 16 KV heads of 128, sliding 1024 on five of
// six): a hybrid with 7 KV cache groups, where the two "GPU KV cache size" formulas differ.
Scenario gemma3(const char* version) {
    Scenario s;
    ModelSpec& m = s.model;
    m.id = m.name = "gemma-3-27b";
    m.layers.assign(62, LayerSpec{});
    for (int i = 0; i < 62; ++i)
        if ((i + 1) % 6 != 0)
            m.layers[static_cast<std::size_t>(i)] = {LayerKind::Sliding, 1024};
    m.qHeads = 32;
    m.kvHeads = 16;
    m.headDim = 128;
    m.maxContext = 131072;
    m.params = 27'000'000'000;
    s.hardware.gpu = gpu(90);
    s.hardware.kvMemoryBytes = std::int64_t{20} << 30;
    s.workload.context = 4096;
    s.workload.maxModelLen = 131072;
    if (version)
        s.engine.vllmVersion = parseVllmVersion(version).value();
    return s;
}

} // namespace

class TestVllmVersion : public QObject {
    Q_OBJECT
private slots:
    void contiguousStepKeepsTheRelease_data();
    void contiguousStepKeepsTheRelease();
    void parse_data();
    void parse();
    void tableIsSortedAndCited();
    void eachRowFlipsAtItsRelease();
    void chunkedLocalHybridDefault_data();
    void chunkedLocalHybridDefault();
    void changesBetween();
    void newerThanKnown();
    void dtypeRefusal_data();
    void dtypeRefusal();
    void logLines_data();
    void logLines();
    void tokensLineFollowsRelease();
    void defaultUtilizationFollowsRelease();
    void kvSharedLayersHoldNothing();
    void turboQuantSlot_data();
    void turboQuantSlot();
    void turboQuantDenseModel();
    void turboQuantRefusals();
};

void TestVllmVersion::parse_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("want"); // the version, or "error: <substring>"
    QTest::addRow("series") << "0.11"
                            << "0.11.0";
    QTest::addRow("patch") << "0.20.1"
                           << "0.20.1";
    QTest::addRow("v prefix") << "v0.22.1"
                              << "0.22.1";
    QTest::addRow("release candidate") << "0.11.0rc2"
                                       << "0.11.0";
    QTest::addRow("dev build with local tag") << "0.11.0rc2.dev98+g393de22d2"
                                              << "0.11.0";
    QTest::addRow("post release") << "0.10.1.1"
                                  << "0.10.1";
    QTest::addRow("cuda local tag") << "0.19.1+cu128"
                                    << "0.19.1";
    QTest::addRow("before the V1 engine") << "0.9.2"
                                          << "error: is not modelled";
    QTest::addRow("words") << "latest"
                           << "error: expected a vLLM release";
    QTest::addRow("no minor") << "1"
                              << "error: expected a vLLM release";
    QTest::addRow("trailing junk") << "0.20x"
                                   << "error: expected a vLLM release";
    QTest::addRow("empty") << ""
                           << "error: expected a vLLM release";
    QTest::addRow("huge") << "0.99999999999"
                          << "error: expected a vLLM release";
}

void TestVllmVersion::parse() {
    QFETCH(QString, text);
    QFETCH(QString, want);
    const std::string t = text.toStdString();
    const auto r = parseVllmVersion(t);
    if (want.startsWith(QLatin1String("error: "))) {
        QVERIFY(!r);
        QVERIFY2(qs(r.error().message).contains(want.mid(7)), r.error().message.c_str());
        QVERIFY(qs(r.error().message).contains(text.left(40)));
    } else {
        QVERIFY2(r, r ? "" : r.error().message.c_str());
        QCOMPARE(qs(r.value().str()), want);
    }
}

void TestVllmVersion::tableIsSortedAndCited() {
    const auto rows = vllmRuleChanges();
    QVERIFY(rows.size() >= 13);
    for (std::size_t i = 0; i < rows.size(); ++i) {
        QVERIFY(!rows[i].what.empty() && !rows[i].effect.empty());
        // Every row names the vLLM change or file it was read from.
        const QString src =
            QString::fromUtf8(rows[i].source.data(), qsizetype(rows[i].source.size()));
        QVERIFY2(src.contains(QLatin1String("vLLM")) || src.contains(QLatin1String("vllm/")),
                 qPrintable(src));
        QVERIFY(rows[i].since >= oldestKnownVllm() && rows[i].since <= newestKnownVllm());
        if (i > 0)
            QVERIFY2(!(rows[i].since < rows[i - 1].since), rows[i].what.data());
    }
}

void TestVllmVersion::eachRowFlipsAtItsRelease() {
    const auto rows = vllmRuleChanges();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& row = rows[i];
        const VllmRules at = vllmRules(row.since);
        const VllmRules prior = vllmRules(before(row.since));
        QVERIFY2(fieldOf(row.rule, at) != fieldOf(row.rule, prior), row.what.data());
        // And it holds from its release until the next row of the same rule (a rule may
        // change twice: Llama-4's hybrid manager default went off in 0.10.1, on in 0.13).
        std::optional<VllmVersion> next;
        for (std::size_t j = i + 1; j < rows.size() && !next; ++j)
            if (rows[j].rule == row.rule)
                next = rows[j].since;
        for (const auto& v : knownVllmSeries())
            if (row.since <= v && (!next || v < *next))
                QCOMPARE(fieldOf(row.rule, vllmRules(v)), fieldOf(row.rule, at));
    }
}

// Llama-4 Scout (chunked 8192 on three of four layers): 0.10.0 keeps the hybrid manager,
// 0.10.1-0.12 disable it unless the environment allows it, 0.13 keeps it again.
void TestVllmVersion::chunkedLocalHybridDefault_data() {
    QTest::addColumn<QString>("version");
    QTest::addColumn<bool>("allow");
    QTest::addColumn<bool>("disabled");
    QTest::addRow("0.10.0") << "0.10.0" << false << false;
    QTest::addRow("0.10.1") << "0.10.1" << false << true;
    QTest::addRow("0.12.0") << "0.12.0" << false << true;
    QTest::addRow("0.12.0 with the env var") << "0.12.0" << true << false;
    QTest::addRow("0.13.0") << "0.13.0" << false << false;
    QTest::addRow("newest") << "0.31.0" << false << false;
}

void TestVllmVersion::chunkedLocalHybridDefault() {
    QFETCH(QString, version);
    QFETCH(bool, allow);
    QFETCH(bool, disabled);
    Scenario s = gemma3(version.toLatin1().constData());
    for (auto& l : s.model.layers)
        if (l.kind == LayerKind::Sliding)
            l = {LayerKind::Chunked, 8192};
    s.engine.allowChunkedLocalHybrid = allow;
    const LedgerResult r = computeLedger(s);
    QCOMPARE(r.hybridKvCacheManagerDisabled, disabled);
    // Off, the chunked layers are promoted to full attention: one group of 62 layers.
    QCOMPARE(r.kvCacheGroups.size(), disabled ? std::size_t(1) : std::size_t(7));
}

void TestVllmVersion::changesBetween() {
    const auto up = vllmChangesBetween({0, 20, 0}, {0, 21, 0});
    QCOMPARE(up.size(), std::size_t(4)); // nvfp4, utilization, CUDA graphs, tokens line
    QVERIFY(qs(up[1]).contains(QLatin1String("0.92")));
    QCOMPARE(vllmChangesBetween({0, 21, 0}, {0, 20, 0}), up);
    QVERIFY(vllmChangesBetween({0, 22, 0}, {0, 22, 1}).empty());
    const auto all = vllmChangesBetween(oldestKnownVllm(), newestKnownVllm());
    QCOMPARE(all.size(), vllmRuleChanges().size());
}

void TestVllmVersion::newerThanKnown() {
    const VllmVersion future{0, 99, 0};
    QVERIFY(vllmVersionWarning(future).has_value());
    QVERIFY(!vllmVersionWarning(newestKnownVllm()).has_value());
    QCOMPARE(vllmRules(future).version, newestKnownVllm());
    QCOMPARE(vllmRules(std::optional<VllmVersion>{}).version, newestKnownVllm());
}

void TestVllmVersion::dtypeRefusal_data() {
    QTest::addColumn<QString>("version");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("cc");
    QTest::addColumn<QString>("refusal"); // substring, empty = vLLM starts
    QTest::addRow("fp8 always") << "0.10.0"
                                << "fp8" << 80 << "";
    QTest::addRow("per-token-head before 0.19")
        << "0.18.1"
        << "int8_per_token_head" << 90 << "invalid choice: 'int8_per_token_head'";
    QTest::addRow("per-token-head in 0.19") << "0.19.0"
                                            << "fp8_per_token_head" << 90 << "";
    QTest::addRow("int4 per-token-head before 0.25.1")
        << "0.25.0"
        << "int4_per_token_head" << 90 << "exists from vLLM 0.25.1";
    QTest::addRow("nvfp4 before 0.21") << "0.20.2"
                                       << "nvfp4" << 100 << "from vLLM 0.21.0";
    QTest::addRow("nvfp4 on a B200") << "0.21.0"
                                     << "nvfp4" << 100 << "";
    QTest::addRow("nvfp4 on an H100") << "0.31.0"
                                      << "nvfp4" << 90 << "capability 10.x";
    QTest::addRow("nvfp4 on an RTX 5090") << "0.31.0"
                                          << "nvfp4" << 120 << "this one is 12.0";
    QTest::addRow("nvfp4, GPU unknown") << "0.31.0"
                                        << "nvfp4" << 0 << "";
}

void TestVllmVersion::dtypeRefusal() {
    QFETCH(QString, version);
    QFETCH(QString, dtype);
    QFETCH(int, cc);
    QFETCH(QString, refusal);
    const auto v = parseVllmVersion(version.toStdString()).value();
    const auto why = vllmCacheDtypeRefusal(vllmRules(v), dtype.toStdString(), cc);
    if (refusal.isEmpty()) {
        QVERIFY2(!why, why ? why->c_str() : "");
    } else {
        QVERIFY(why.has_value());
        QVERIFY2(qs(*why).contains(refusal), why->c_str());
    }
}

void TestVllmVersion::logLines_data() {
    QTest::addColumn<QString>("version");
    QTest::addColumn<qint64>("bytes");
    QTest::addColumn<QStringList>("lines");
    const qint64 gib49 = qint64(49) << 30;
    QTest::addRow("0.11: %%.2f, two lines")
        << "0.11.2" << gib49
        << QStringList{"Available KV cache memory: 49.00 GiB", "GPU KV cache size: 42,656 tokens",
                       "Maximum concurrency for 32,768 tokens per request: 1.30x"};
    QTest::addRow("0.27: format_gib, two lines")
        << "0.27.1" << gib49
        << QStringList{"Available KV cache memory: 49.0 GiB", "GPU KV cache size: 42,656 tokens",
                       "Maximum concurrency for 32,768 tokens per request: 1.30x"};
    QTest::addRow("0.28: one capacity line")
        << "0.28.0" << qint64(6.51 * double(qint64(1) << 30))
        << QStringList{"Available KV cache memory: 6.51 GiB",
                       "GPU KV cache size: 42,656 tokens, Maximum concurrency for 32,768 tokens "
                       "per request: 1.30x"};
}

void TestVllmVersion::logLines() {
    QFETCH(QString, version);
    QFETCH(qint64, bytes);
    QFETCH(QStringList, lines);
    const auto rules = vllmRules(parseVllmVersion(version.toStdString()).value());
    QStringList got;
    for (const auto& l : vllmKvCacheLines(rules, bytes, 42656, 32768, 1.3017578125))
        got << qs(l);
    QCOMPARE(got, lines);
}

// The same pool gives the legacy figure (blocks // 7 groups x 16: 10 full layers make one
// group, 52 sliding layers six groups of 10 with padding) before 0.21 and
// int(concurrency x max_model_len) from 0.21; the pool itself does not move.
void TestVllmVersion::tokensLineFollowsRelease() {
    const LedgerResult old = computeLedger(gemma3("0.20.2"));
    const LedgerResult now = computeLedger(gemma3("0.21.0"));
    QCOMPARE(old.numGpuBlocks, now.numGpuBlocks);
    QVERIFY(old.numGpuBlocks > 0);
    QCOMPARE(old.gpuKvCacheTokens, old.numGpuBlocks / 7 * 16);
    QCOMPARE(now.gpuKvCacheTokens, qint64(now.maxConcurrency * 131072.0));
    QVERIFY(now.gpuKvCacheTokens > 3 * old.gpuKvCacheTokens);
    // A fixed KV memory is vLLM's --kv-cache-memory-bytes: no "Available" line is printed.
    QCOMPARE(qs(old.vllmLogLines.at(0)),
             QStringLiteral("GPU KV cache size: %L1 tokens").arg(old.gpuKvCacheTokens));
    QCOMPARE(old.vllmLogLines.size(), std::size_t(2));
    QCOMPARE(computeLedger(gemma3("0.28.0")).vllmLogLines.size(), std::size_t(1));
    Scenario profiled = gemma3("0.28.0");
    profiled.hardware.kvMemoryBytes.reset();
    const LedgerResult p = computeLedger(profiled);
    QCOMPARE(p.vllmLogLines.size(), std::size_t(2));
    QVERIFY(qs(p.vllmLogLines.at(0)).startsWith(QLatin1String("Available KV cache memory: ")));
    QCOMPARE(qs(old.vllmVersion), QStringLiteral("0.20.2"));
}

void TestVllmVersion::defaultUtilizationFollowsRelease() {
    Scenario s = gemma3("0.20.0");
    s.hardware.kvMemoryBytes.reset();
    QCOMPARE(gpuMemoryUtilization(s), 0.9);
    s.engine.vllmVersion = VllmVersion{0, 21, 0};
    QCOMPARE(gpuMemoryUtilization(s), 0.92);
    s.hardware.memoryUtilization = 0.8; // the user's own value wins in every release
    QCOMPARE(gpuMemoryUtilization(s), 0.8);
}

// Gemma-3n / Gemma-4's num_kv_shared_layers: a layer that reads another layer's KV gets no
// KV cache spec, so marking the last 2 sliding layers shared frees their blocks.
void TestVllmVersion::kvSharedLayersHoldNothing() {
    Scenario s = gemma3(nullptr);
    const LedgerResult all = computeLedger(s);
    s.model.layers[60].kvShared = true;
    s.model.layers[58].kvShared = true;
    const LedgerResult shared = computeLedger(s);
    QCOMPARE(shared.layerMix.none, all.layerMix.none + 2);
    QCOMPARE(shared.layerMix.sliding, all.layerMix.sliding - 2);
    QVERIFY(shared.kvBytesPerToken < all.kvBytesPerToken);
}

// TurboQuantConfig.slot_size_aligned (vllm/model_executor/layers/quantization/turboquant/
// config.py): key fp8 = D bytes, or ceil(D x bits / 8) + 2 (fp16 norm); value ceil(D x bits / 8)
// + 4 (fp16 scale + zero); the sum rounded up to even.
void TestVllmVersion::turboQuantSlot_data() {
    QTest::addColumn<QString>("preset");
    QTest::addColumn<int>("dim");
    QTest::addColumn<qint64>("slot");
    QTest::addRow("k8v4, D 128: 128 + 68") << "turboquant_k8v4" << 128 << qint64(196);
    QTest::addRow("4bit_nc, D 128: 66 + 68") << "turboquant_4bit_nc" << 128 << qint64(134);
    QTest::addRow("k3v4_nc, D 128: 50 + 68") << "turboquant_k3v4_nc" << 128 << qint64(118);
    QTest::addRow("3bit_nc, D 128: 50 + 52") << "turboquant_3bit_nc" << 128 << qint64(102);
    QTest::addRow("k3v4_nc, D 72: 29 + 40 = 69, aligned 70")
        << "turboquant_k3v4_nc" << 72 << qint64(70);
    QTest::addRow("k8v4, D 64: 64 + 36") << "turboquant_k8v4" << 64 << qint64(100);
}

void TestVllmVersion::turboQuantSlot() {
    QFETCH(QString, preset);
    QFETCH(int, dim);
    QFETCH(qint64, slot);
    Scenario s = gemma3(nullptr);
    s.model.layers.assign(8, LayerSpec{}); // dense: TurboQuant needs full attention only
    const auto f = formatForVllmCacheDtype(preset.toStdString(), s.model);
    QVERIFY2(bool(f), f ? "" : f.error().message.c_str());
    QCOMPARE(kvBytesPerTokenPerHead(*f, dim), slot);
    QCOMPARE(qs(vllmCacheDtype([&] {
                    Scenario q = s;
                    q.levers.quant.enabled = true;
                    q.levers.quant.format = *f;
                    return q;
                }())
                    .value_or("")),
             preset); // and back to vLLM's name
}

// Qwen3-4B (36 full layers, 8 KV heads of 128, bf16) with turboquant_3bit_nc: 32 layers of
// 8 x 102 = 816 B per token, and the first and last 2 kept in bf16 (8 x 256 x 2 = 4096 B):
// 32 x 816 + 4 x 4096 = 42,496 B per token against bf16's 36 x 4096 = 147,456 (3.47x). One
// UniformTypeKVCacheSpecs group: a 16-token block holds 679,936 B; 20 GiB holds 31,583 of
// them. In vLLM PR #38479's thread the same model on an H100 at utilization 0.85 logged
// 417,440 tokens in bf16 and 1,431,184 with turboquant_3bit_nc (3.43x; the TurboQuant run had
// about 1% less memory available). Without the boundary layers it would be 5.02x.
void TestVllmVersion::turboQuantDenseModel() {
    Scenario s = gemma3("0.31.0");
    s.model.id = s.model.name = "qwen3-4b";
    s.model.layers.assign(36, LayerSpec{});
    s.model.qHeads = 32;
    s.model.kvHeads = 8;
    s.model.headDim = 128;
    s.model.maxContext = 40960;
    s.workload.maxModelLen = 8192;
    s.workload.context = 8192;
    const LedgerResult bf16 = computeLedger(s);
    QCOMPARE(bf16.kvBytesPerTokenPerGpu, qint64(147456));
    s.levers.quant.enabled = true;
    s.levers.quant.format = *formatForVllmCacheDtype("turboquant_3bit_nc", s.model);
    const LedgerResult tq = computeLedger(s);
    QVERIFY2(tq.error.empty(), tq.error.c_str());
    QCOMPARE(tq.kvBytesPerTokenPerGpu, qint64(42496));
    QCOMPARE(tq.pageBytesPerGpu, qint64(16 * 42496));
    QCOMPARE(tq.numGpuBlocks, qint64(31583));
    QCOMPARE(tq.kvCacheGroups.size(), std::size_t(1));
    QVERIFY(tq.kvCacheGroups.front().uniformType);
}

void TestVllmVersion::turboQuantRefusals() {
    Scenario s = gemma3("0.19.0");
    s.model.layers.assign(8, LayerSpec{});
    s.levers.quant.enabled = true;
    s.levers.quant.format = *formatForVllmCacheDtype("turboquant_k8v4", s.model);
    const LedgerResult old = computeLedger(s);
    QVERIFY(old.refused);
    QVERIFY2(qs(old.error).contains(QLatin1String("invalid choice: 'turboquant_k8v4' (it exists "
                                                  "from vLLM 0.20.0)")),
             old.error.c_str());
    s.engine.vllmVersion = VllmVersion{0, 20, 0};
    QVERIFY(!computeLedger(s).refused);
    // Sliding layers (Gemma-3) and MLA are not modelled: a one-line refusal, not a number.
    const auto sliding = formatForVllmCacheDtype("turboquant_4bit_nc", gemma3(nullptr).model);
    QVERIFY(!sliding);
    QCOMPARE(int(sliding.error().code), int(kvl::ErrorCode::Unsupported));
    QVERIFY(qs(sliding.error().message).contains(QLatin1String("full attention")));
}

void TestVllmVersion::contiguousStepKeepsTheRelease_data() {
    QTest::addColumn<QString>("version"); // empty: the newest
    QTest::addColumn<QString>("dtype");   // the lever's KV dtype
    QTest::addColumn<bool>("refused");
    // A contiguous (unpaged) step, as the ladder's "+INT8" before "+paging" is, is checked
    // against the release the user runs: int8_per_token_head exists from 0.19.0. An empty rule
    // set (version 0.0.0) used to refuse it in every release.
    QTest::addRow("newest, int8") << QString() << "int8" << false;
    QTest::addRow("0.19.0, int8") << "0.19.0"
                                  << "int8" << false;
    QTest::addRow("0.18.0, int8") << "0.18.0"
                                  << "int8" << true;
    QTest::addRow("0.18.0, fp8") << "0.18.0"
                                 << "fp8" << false;
}

void TestVllmVersion::contiguousStepKeepsTheRelease() {
    QFETCH(QString, version);
    QFETCH(QString, dtype);
    QFETCH(bool, refused);
    Scenario s = gemma3(version.isEmpty() ? nullptr : version.toLatin1().constData());
    s.levers.paging.enabled = false;
    s.levers.quant.enabled = true;
    s.levers.quant.format =
        formatForVllmCacheDtype(dtype == QLatin1String("int8") ? "int8_per_token_head" : "fp8",
                                s.model)
            .value();
    const LedgerResult r = computeLedger(s);
    QCOMPARE(qs(r.vllmVersion), version.isEmpty() ? qs(newestKnownVllm().str()) : version);
    QCOMPARE(qs(r.error).contains(QLatin1String("invalid choice")), refused);
    QCOMPARE(r.requestsYouCanRun == 0, refused);
}

QTEST_APPLESS_MAIN(TestVllmVersion)
#include "tst_vllm_version.moc"
