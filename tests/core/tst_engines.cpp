// Issue 31: each engine's sizing rule on worked cases, computed by hand from the engine's own
// source (the files each unit cites), and the engine input of the scenario file.
//
// - ggml's block sizes (ggml/src/ggml-common.h): q8_0 34 bytes per 32 values, q4_0 18, q4_K
//   144 per 256, so a 4096-value row takes 4352, 2304 and 2304 bytes.
// - llama.cpp's cells (src/llama-context.cpp, src/llama-kv-cache-iswa.cpp): n_ctx padded to 256,
//   per-sequence streams of PAD(n_ctx / n_seq, 256), SWA cells PAD(min(n_ctx_seq, n_swa x
//   (unified ? n_seq : 1) + n_ubatch), 256).
// - SGLang's default fraction (server_args.py) and max_total_num_tokens
//   (model_runner_kv_cache_mixin.py), worked in Python's own double arithmetic.
// - TensorRT-LLM's bytes per token (resource_manager.py get_cache_size_per_token).

#include "core/engines.h"
#include "core/io/catalog.h"
#include "core/io/scenario_file.h"
#include "core/llamacpp/ggml_types.h"
#include "core/llamacpp/llamacpp.h"
#include "core/sglang/sglang.h"
#include "core/trtllm/trtllm.h"

#include <QtTest>

#include <cmath>

using namespace kvl;

namespace {

core::Scenario on(const char* model, core::Engine e) {
    core::Scenario s = io::defaultScenario();
    s.model = *io::findModel(model);
    s.levers.prefix.enabled = false;
    s.engine.kind = e;
    return s;
}

} // namespace

class TestEngines : public QObject {
    Q_OBJECT
private slots:
    void ggmlRows_data();
    void ggmlRows();
    void llamacppCells_data();
    void llamacppCells();
    void llamacppSwaStaysF16();
    void sglangDefaultFraction_data();
    void sglangDefaultFraction();
    void sglangTokens();
    void sglangRefusesInt8();
    void trtllmRefusesInt4();
    void trtllmBytesPerToken_data();
    void trtllmBytesPerToken();
    void trtllmBlocksRoundUp();
    void trtllmFractionIsFloat32_data();
    void trtllmFractionIsFloat32();
    void scenarioFileEngine();
    void offeredKvDtypes_data();
    void offeredKvDtypes();
    void notOfferedIsRefused();
    void llamacppTypesFollowTheLever();
    void attentionLeverIsTheCheckpoints();
    void compareEnginesCells();
};

void TestEngines::ggmlRows_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<qint64>("values");
    QTest::addColumn<qint64>("bytes");
    QTest::newRow("f16 4096") << "f16" << qint64(4096) << qint64(8192);
    QTest::newRow("q8_0 4096: 128 blocks of 34") << "q8_0" << qint64(4096) << qint64(4352);
    QTest::newRow("q4_0 4096: 128 blocks of 18") << "q4_0" << qint64(4096) << qint64(2304);
    QTest::newRow("q5_1 1024: 32 blocks of 24") << "q5_1" << qint64(1024) << qint64(768);
    QTest::newRow("q4_K 4096: 16 blocks of 144") << "q4_K" << qint64(4096) << qint64(2304);
    QTest::newRow("q6_K 4096: 16 blocks of 210") << "q6_K" << qint64(4096) << qint64(3360);
    QTest::newRow("iq4_nl 512") << "iq4_nl" << qint64(512) << qint64(288);
    QTest::newRow("mxfp4 2880: 90 blocks of 17") << "mxfp4" << qint64(2880) << qint64(1530);
}

void TestEngines::ggmlRows() {
    QFETCH(QString, type);
    QFETCH(qint64, values);
    QFETCH(qint64, bytes);
    const auto* t = core::llamacpp::ggmlTypeByName(type.toStdString());
    QVERIFY(t);
    QCOMPARE(core::llamacpp::rowBytes(*t, values), bytes);
}

void TestEngines::llamacppCells_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<qint64>("ctx");
    QTest::addColumn<int>("np");
    QTest::addColumn<bool>("unified");
    QTest::addColumn<bool>("swaFull");
    QTest::addColumn<qint64>("baseCells");
    QTest::addColumn<qint64>("swaCells");
    // -c 1000 pads to 1024.
    QTest::newRow("pad") << "llama-3.1-8b" << qint64(1000) << 1 << false << false << qint64(1024)
                         << qint64(0);
    // 8192 / 3 = 2730 per stream, padded to 2816 (n_ctx becomes 8448).
    QTest::newRow("3 streams") << "llama-3.1-8b" << qint64(8192) << 3 << false << false
                               << qint64(2816) << qint64(0);
    QTest::newRow("3 unified") << "llama-3.1-8b" << qint64(8192) << 3 << true << false
                               << qint64(8192) << qint64(0);
    // gpt-oss: window 128; one stream: PAD(128 + 512, 256) = 768; unified x4:
    // PAD(128 x 4 + 512, 256) = 1024; --swa-full: the whole context.
    QTest::newRow("swa") << "gpt-oss-20b" << qint64(131072) << 1 << false << false << qint64(131072)
                         << qint64(768);
    QTest::newRow("swa unified 4")
        << "gpt-oss-20b" << qint64(32768) << 4 << true << false << qint64(32768) << qint64(1024);
    QTest::newRow("swa full") << "gpt-oss-20b" << qint64(32768) << 1 << false << true
                              << qint64(32768) << qint64(32768);
}

void TestEngines::llamacppCells() {
    QFETCH(QString, model);
    QFETCH(qint64, ctx);
    QFETCH(int, np);
    QFETCH(bool, unified);
    QFETCH(bool, swaFull);
    QFETCH(qint64, baseCells);
    QFETCH(qint64, swaCells);
    core::Scenario s = on(model.toLatin1().constData(), core::Engine::Llamacpp);
    s.engine.llamacpp.nCtx = ctx;
    s.engine.llamacpp.nParallel = np;
    s.engine.llamacpp.kvUnified = unified;
    s.engine.llamacpp.swaFull = swaFull;
    const auto r = core::llamacpp::compute(s);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QVERIFY(!r.caches.empty());
    QCOMPARE(r.caches[0].cells, baseCells);
    QCOMPARE(r.caches[0].streams, unified ? 1 : np);
    if (swaCells > 0) {
        QCOMPARE(r.caches.size(), std::size_t(2));
        QCOMPARE(r.caches[1].cells, swaCells);
    }
    // Llama-3.1-8B: 32 layers x 8 heads x 128 x 2 bytes, K and V: 131,072 bytes a cell.
    if (model == QLatin1String("llama-3.1-8b"))
        QCOMPARE(r.totalBytes, 131072 * baseCells * (unified ? 1 : np));
}

// PR 21277: an iSWA model's SWA cache stays f16 when K and V are q8_0; the base cache is q8_0.
void TestEngines::llamacppSwaStaysF16() {
    core::Scenario s = on("gpt-oss-20b", core::Engine::Llamacpp);
    s.engine.llamacpp.nCtx = 32768;
    s.engine.llamacpp.typeK = core::GgmlKvType::Q8_0;
    s.engine.llamacpp.typeV = core::GgmlKvType::Q8_0;
    const auto r = core::llamacpp::compute(s);
    QCOMPARE(r.caches.size(), std::size_t(2));
    QCOMPARE(r.caches[0].typeK, std::string("q8_0"));
    QCOMPARE(r.caches[1].typeK, std::string("f16"));
    // 12 layers x 8 heads x 64 = 6144 values: q8_0 6528 bytes a cell for K, f16 12288.
    QCOMPARE(r.caches[0].kBytes, qint64(6528) * 32768);
    QCOMPARE(r.caches[1].kBytes, qint64(12288) * 768);
}

void TestEngines::sglangDefaultFraction_data() {
    QTest::addColumn<qint64>("mib");
    QTest::addColumn<int>("tp");
    QTest::addColumn<double>("fraction");
    // H100 (81,559 MiB): 512 + 8192 x 1.5 + 256 x 2 + 128 = 13,440 (above the 10,240 floor).
    QTest::newRow("h100 tp1") << qint64(81559) << 1 << 0.835;
    // TP 8: cuda_graph_max_bs 512 and 8 x 1 / 8 x 1024: 512 + 12,288 + 1,024 + 1,024.
    QTest::newRow("h100 tp8") << qint64(81559) << 8 << 0.818;
    // A100 40GB: chunked 4096, bs 32: 512 + 6,144 + 64 + 128 = 6,848.
    QTest::newRow("a100-40 tp1") << qint64(40960) << 1 << 0.833;
    // 24 GB: chunked 2048, bs 24: 512 + 3,072 + 48 + 128 = 3,760.
    QTest::newRow("24gb tp1") << qint64(24576) << 1 << 0.847;
}

void TestEngines::sglangDefaultFraction() {
    QFETCH(qint64, mib);
    QFETCH(int, tp);
    QFETCH(double, fraction);
    namespace g = core::sglang;
    QCOMPARE(g::defaultMemFractionStatic(mib, tp, 1, g::defaultChunkedPrefillSize(mib),
                                         g::defaultCudaGraphMaxBs(mib, tp)),
             fraction);
}

// SGLang 0.4.6's Qwen3-0.6B start (tests/engine_logs/sglang): free 3.23 GB before and 2.03 GB
// after the weights, fraction 0.88, 114,688 bytes a token (28 x 8 x 256 x 2 x 2). In Python:
// int((2.03 - 3.23 * (1 - 0.88)) * (1 << 30)) // 114688 == 15376.
void TestEngines::sglangTokens() {
    core::Scenario s = on("llama-3.1-8b", core::Engine::Sglang);
    s.model.layers.assign(28, core::LayerSpec{});
    s.model.kvHeads = 8;
    s.model.headDim = 128;
    s.engine.sglang.memFractionStatic = 0.88;
    s.engine.sglang.freeBeforeLoadBytes = core::gibToBytes(3.23);
    s.engine.sglang.freeAfterLoadBytes = core::gibToBytes(2.03);
    auto r = core::sglang::compute(s);
    QCOMPARE(r.cellSize, qint64(114688));
    QCOMPARE(r.maxTotalNumTokens, qint64(15376));
    // Page size 64 rounds down to 15,360; fp8 halves the cell and doubles the tokens.
    s.engine.sglang.pageSize = 64;
    QCOMPARE(core::sglang::compute(s).maxTotalNumTokens, qint64(15360));
    s.engine.sglang.pageSize = 1;
    s.levers.quant.enabled = true;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Fp8E4M3);
    r = core::sglang::compute(s);
    QCOMPARE(r.cellSize, qint64(57344));
    QCOMPARE(r.maxTotalNumTokens, qint64(30753));
}

void TestEngines::sglangRefusesInt8() {
    core::Scenario s = on("llama-3.1-8b", core::Engine::Sglang);
    s.levers.quant.enabled = true;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int8);
    const auto e = core::computeEngine(s);
    // The list is kvDtypeFlagText's, the flag text the other engines' messages use.
    const std::string why = "SGLang has no int8 KV cache (--kv-cache-dtype takes auto, fp8_e4m3, "
                            "fp8_e5m2, fp4_e2m1, bf16)";
    QCOMPARE(e.error, why);
    QCOMPARE(core::sglang::compute(s).error, why);
    QCOMPARE(core::computeEngineAs(s, core::Engine::Sglang).error, why);
    QCOMPARE(e.requestsAtContext, qint64(0));
}

void TestEngines::trtllmRefusesInt4() {
    core::Scenario s = on("llama-3.1-8b", core::Engine::Trtllm);
    s.levers.quant.enabled = true;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int4);
    const std::string why =
        "TensorRT-LLM has no int4 KV cache (kv_cache_config.dtype takes auto, fp8, int8, nvfp4)";
    QCOMPARE(core::trtllm::compute(s).error, why);
    QCOMPARE(core::computeEngine(s).error, why);
    QCOMPARE(core::computeEngineAs(s, core::Engine::Trtllm).error, why);
}

void TestEngines::trtllmBytesPerToken_data() {
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("tp");
    QTest::addColumn<qint64>("bytes");
    // 2 x 32 layers x 128 x 8 heads: 65,536 values.
    QTest::newRow("llama bf16") << "llama-3.1-8b"
                                << "" << 1 << qint64(131072);
    QTest::newRow("llama fp8") << "llama-3.1-8b"
                               << "fp8_e4m3" << 1 << qint64(65536);
    QTest::newRow("llama bf16 tp2") << "llama-3.1-8b"
                                    << "" << 2 << qint64(65536);
    // NVFP4: 65,536 / 2 + 65,536 / 16.
    QTest::newRow("llama nvfp4") << "llama-3.1-8b"
                                 << "fp4_e2m1" << 1 << qint64(36864);
    // MLA: 61 x (512 + 64) x 2 bytes, once, whatever TP.
    QTest::newRow("deepseek-v3 tp8") << "deepseek-v3"
                                     << "" << 8 << qint64(70272);
}

void TestEngines::trtllmBytesPerToken() {
    QFETCH(QString, model);
    QFETCH(QString, dtype);
    QFETCH(int, tp);
    QFETCH(qint64, bytes);
    core::Scenario s = on(model.toLatin1().constData(), core::Engine::Trtllm);
    s.hardware.gpuCount = tp;
    if (!dtype.isEmpty()) {
        s.levers.quant.enabled = true;
        s.levers.quant.format = core::KvFormat::defaultFor(*core::parseDtype(dtype.toStdString()));
    }
    QCOMPARE(core::trtllm::cacheSizePerToken(s), bytes);
}

// max_tokens 1000 at 32 tokens a block: 32 blocks, 1,024 tokens.
void TestEngines::trtllmBlocksRoundUp() {
    core::Scenario s = on("llama-3.1-8b", core::Engine::Trtllm);
    s.engine.trtllm.maxTokens = 1000;
    const auto r = core::trtllm::compute(s);
    QCOMPARE(r.blocks, qint64(32));
    QCOMPARE(r.poolTokens, qint64(1024));
    QCOMPARE(r.poolBytes, qint64(1024) * 131072);
}

// The fraction multiplies as the float32 the C++ KvCacheConfig holds (executor.h, FloatType
// mFreeGpuMemoryFraction; the logs print 0.9 as 0.8999999761581421), a few KiB less than the
// exact product on a GPU's free memory, and the profiling line prints it that way.
void TestEngines::trtllmFractionIsFloat32_data() {
    QTest::addColumn<double>("fraction");
    QTest::addColumn<QString>("printed");
    QTest::addRow("0.9") << 0.9 << "fraction is set 0.8999999761581421,";
    QTest::addRow("0.8") << 0.8 << "fraction is set 0.800000011920929,";
    QTest::addRow("0.5 is exact in float32") << 0.5 << "fraction is set 0.5,";
}

void TestEngines::trtllmFractionIsFloat32() {
    QFETCH(double, fraction);
    QFETCH(QString, printed);
    core::Scenario s = on("llama-3.1-8b", core::Engine::Trtllm);
    s.engine.trtllm.freeGpuMemoryFraction = fraction;
    s.engine.trtllm.peakMemoryBytes = std::int64_t(16) << 30;
    const auto r = core::trtllm::compute(s);
    const std::int64_t free = r.totalBytes - r.peakBytes;
    QCOMPARE(r.availableBytes, std::int64_t(std::floor(double(free) * double(float(fraction)))));
    if (double(float(fraction)) != fraction)
        QVERIFY(r.availableBytes != std::int64_t(std::floor(double(free) * fraction)));
    QCOMPARE(r.fraction, fraction); // the launch command keeps the value the user gave
    QVERIFY2(QString::fromStdString(r.logLines.front()).contains(printed),
             r.logLines.front().c_str());
}

void TestEngines::scenarioFileEngine() {
    core::Scenario s = on("llama-3.1-8b", core::Engine::Llamacpp);
    s.engine.llamacpp.nCtx = 16384;
    s.engine.llamacpp.typeV = core::GgmlKvType::Q4_0;
    s.engine.sglang.memFractionStatic = 0.8;
    s.engine.trtllm.tokensPerBlock = 64;
    const std::string json = io::scenarioToJson(s);
    auto back = io::scenarioFromJson(json, "s.kvl.json");
    QVERIFY(back);
    QVERIFY(back.value().engine == s.engine);

    std::string bad = json;
    const auto at = bad.find("\"llamacpp\",");
    QVERIFY(at != std::string::npos); // "name": "llamacpp",
    bad.replace(at, 11, "\"vulkan\",");
    auto r = io::scenarioFromJson(bad, "s.kvl.json");
    QVERIFY(!r);
    const QString msg = QString::fromStdString(r.error().message);
    QVERIFY2(msg.contains(QLatin1String("s.kvl.json")) &&
                 msg.contains(QLatin1String("engine.name")) &&
                 msg.contains(QLatin1String("vulkan")) && !msg.contains(u'\n'),
             qPrintable(msg));
}

void TestEngines::offeredKvDtypes_data() {
    // Each engine's own list of KV cache dtypes, read from its source: vLLM's
    // CacheDType (vllm/config/cache.py), SGLang's --kv-cache-dtype choices (server_args.py),
    // TensorRT-LLM's KvCacheConfig.dtype (llm_args.py), llama.cpp's kv_cache_types
    // (common/arg.cpp) as KV Ledger's dtypes.
    QTest::addColumn<int>("engine");
    QTest::addColumn<QStringList>("offered");
    QTest::addRow("vllm") << int(core::Engine::Vllm)
                          << QStringList{"fp16", "bf16", "fp8_e4m3", "fp8_e5m2",
                                         "int8", "int4", "fp4_e2m1"};
    QTest::addRow("sglang") << int(core::Engine::Sglang)
                            << QStringList{"fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp4_e2m1"};
    QTest::addRow("trtllm") << int(core::Engine::Trtllm)
                            << QStringList{"fp16", "bf16", "fp8_e4m3", "int8", "fp4_e2m1"};
    QTest::addRow("llamacpp") << int(core::Engine::Llamacpp)
                              << QStringList{"fp32", "fp16", "bf16", "int8", "int4"};
}

void TestEngines::offeredKvDtypes() {
    QFETCH(int, engine);
    QFETCH(QStringList, offered);
    QStringList got;
    for (core::KvDtype d : core::offeredKvDtypes(core::Engine(engine)))
        got << QString::fromLatin1(core::dtypeName(d).data(), qsizetype(core::dtypeName(d).size()));
    QCOMPARE(got, offered);
    for (core::KvDtype d : core::allDtypes())
        QCOMPARE(core::engineOffersKvDtype(core::Engine(engine), d),
                 offered.contains(QString::fromLatin1(core::dtypeName(d).data(),
                                                      qsizetype(core::dtypeName(d).size()))));
}

void TestEngines::notOfferedIsRefused() {
    // llama.cpp has no fp8 cache: the lever asking for one is refused, not sized as f16.
    core::Scenario s = on("llama-3.1-8b", core::Engine::Llamacpp);
    s.levers.quant.enabled = true;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Fp8E4M3);
    const core::EngineResult r = core::computeEngineAs(s, core::Engine::Llamacpp);
    QVERIFY(!r.formatOffered);
    QCOMPARE(r.requestsAtContext, qint64(0));
    QVERIFY2(QString::fromStdString(r.error).startsWith(QLatin1String("llama.cpp has no fp8_e4m3")),
             r.error.c_str());
    // TensorRT-LLM has it.
    QVERIFY(core::computeEngineAs(s, core::Engine::Trtllm).formatOffered);
}

void TestEngines::llamacppTypesFollowTheLever() {
    core::Scenario s = on("llama-3.1-8b", core::Engine::Vllm);
    s.engine.llamacpp.typeK = core::GgmlKvType::Q5_0;
    // Lever off: llama.cpp keeps its own -ctk / -ctv.
    QCOMPARE(core::scenarioForEngine(s, core::Engine::Llamacpp).engine.llamacpp.typeK,
             core::GgmlKvType::Q5_0);
    s.levers.quant.enabled = true;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int8);
    const core::Scenario l = core::scenarioForEngine(s, core::Engine::Llamacpp);
    QCOMPARE(l.engine.kind, core::Engine::Llamacpp);
    QCOMPARE(l.engine.llamacpp.typeK, core::GgmlKvType::Q8_0);
    QCOMPARE(l.engine.llamacpp.typeV, core::GgmlKvType::Q8_0);
    // 32 layers x 8 KV heads x 128 values, K and V, in q8_0 rows of 34 bytes per 32 values.
    QCOMPARE(core::computeEngineAs(s, core::Engine::Llamacpp).kvBytesPerTokenPerGpu,
             qint64(2 * 32 * 34 * 1024 / 32));
}

void TestEngines::attentionLeverIsTheCheckpoints() {
    // MHA-32 what-if of Llama-3.1-8B: 32 KV heads instead of 8, four times the bytes per token
    // in every engine (SGLang's cell_size, TensorRT-LLM's get_cache_size_per_token, llama.cpp's
    // rows).
    core::Scenario s = on("llama-3.1-8b", core::Engine::Vllm);
    s.levers.attention.enabled = true;
    s.levers.attention.mode = core::AttentionMode::Mha;
    for (core::Engine e : {core::Engine::Sglang, core::Engine::Trtllm, core::Engine::Llamacpp}) {
        const core::Scenario m = core::scenarioForEngine(s, e);
        QCOMPARE(m.model.kvHeads, 32);
        QVERIFY(!m.levers.attention.enabled);
        QCOMPARE(core::computeEngineAs(s, e).kvBytesPerTokenPerGpu, qint64(4 * 131072));
    }
    // vLLM applies the lever itself.
    QCOMPARE(core::scenarioForEngine(s, core::Engine::Vllm).model.kvHeads, 8);
}

void TestEngines::compareEnginesCells() {
    // Every cell is that engine's own answer for that ladder step's scenario.
    core::Scenario s = on("llama-3.1-8b", core::Engine::Sglang);
    s.workload.context = 32768;
    s.levers.quant.enabled = true;
    s.levers.quant.format = core::KvFormat::defaultFor(core::KvDtype::Int8);
    const auto rows = core::compareEngines(s);
    QCOMPARE(rows.size(), std::size_t(5));
    for (const auto& row : rows) {
        QCOMPARE(row.cells.size(), std::size_t(4));
        const core::Scenario step = core::ladderScenario(s, row.step);
        for (const auto& c : row.cells) {
            if (c.engine == core::Engine::Vllm) {
                QCOMPARE(c.requests, core::computeLedger(step).requestsYouCanRun);
                continue;
            }
            const core::EngineResult r = core::computeEngineAs(step, c.engine);
            QCOMPARE(c.offered, r.formatOffered);
            QCOMPARE(c.requests, r.error.empty() ? r.requestsAtContext : 0);
        }
    }
    // INT8 from the quantization step on: SGLang has no integer cache, TensorRT-LLM and
    // llama.cpp (q8_0) have.
    const auto& last = rows.back().cells;
    QVERIFY(!last[1].offered);
    QVERIFY(last[2].offered && last[2].requests > 0);
    QVERIFY(last[3].offered);
    QVERIFY(rows.front().cells[1].offered && rows.front().cells[1].requests > 0);
}

QTEST_GUILESS_MAIN(TestEngines)
#include "tst_engines.moc"
