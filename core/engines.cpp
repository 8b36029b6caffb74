#include "engines.h"

#include "core/engine.h"
#include "core/enum_names.h"
#include "core/ledger.h"
#include "core/llamacpp/ggml_types.h"
#include "core/llamacpp/llamacpp.h"
#include "core/saturating.h"
#include "core/sglang/sglang.h"
#include "core/trtllm/trtllm.h"
#include "core/units.h"
#include "core/vllm_command.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace kvl::core {

namespace {

// The fields every engine's figures fill alike; `c` is the engine's own result, which names its
// log lines, command and error the same way.
template <class Computed>
EngineResult engineResult(Engine engine, std::string version, const Computed& c,
                          std::int64_t poolBytes, std::int64_t poolTokens,
                          std::int64_t bytesPerToken) {
    EngineResult r;
    r.engine = engine;
    r.version = std::move(version);
    r.kvPoolBytesPerGpu = poolBytes;
    r.poolTokens = poolTokens;
    r.kvBytesPerTokenPerGpu = bytesPerToken;
    r.logLines = c.logLines;
    r.command = c.command;
    r.error = c.error;
    return r;
}

EngineResult fromVllm(const Scenario& s) {
    const LedgerResult l = computeLedger(s);
    EngineResult r;
    r.engine = Engine::Vllm;
    r.version = l.vllmVersion;
    r.kvPoolBytesPerGpu = l.availableKvBytes;
    r.poolTokens = l.gpuKvCacheTokens;
    r.kvBytesPerTokenPerGpu = l.kvBytesPerTokenPerGpu;
    r.requestsAtContext = l.requestsYouCanRun;
    r.logLines = l.vllmLogLines;
    r.command = vllmServeCommand(s).text();
    r.notes = l.notes;
    r.error = l.error;
    return r;
}

EngineResult fromLlamaCpp(const Scenario& s) {
    const auto l = llamacpp::compute(s);
    EngineResult r = engineResult(Engine::Llamacpp, "master 2026 (src/llama-kv-cache.cpp)", l,
                                  l.totalBytes, l.nCtx, l.bytesPerToken);
    if (r.error.empty()) {
        // A sequence holds at most n_ctx_seq cells; with a unified cache the sequences share
        // n_ctx, without it each has its own stream.
        const std::int64_t ctx = std::max<std::int64_t>(1, s.workload.context);
        if (ctx > l.nCtxSeq)
            r.requestsAtContext = 0;
        else if (l.unified)
            r.requestsAtContext = std::min<std::int64_t>(l.nSeqMax, l.nCtx / ctx);
        else
            r.requestsAtContext = l.nSeqMax;
        if (ctx > l.nCtxSeq)
            r.notes.push_back("a request of " + std::to_string(ctx) +
                              " tokens does not fit a sequence of " + std::to_string(l.nCtxSeq) +
                              " cells (-c / -np)");
    }
    if (r.error.empty()) {
        // llama.cpp allocates the weights and the whole cache up front; with every layer
        // offloaded (-ngl 999) both must fit in the GPUs' memory (-sm layer splits them).
        const std::int64_t weights = computeLedger(s).weightsBytes;
        const std::int64_t memory =
            satMul(s.hardware.gpu.memoryBytes, std::max(1, s.hardware.gpuCount));
        if (satAdd(weights, l.totalBytes) > memory) {
            r.error =
                "llama.cpp: the weights (" + formatBytes(weights) + " at " +
                std::string(weightDtypeName(s.hardware.weightDtype.value_or(s.model.weightDtype))) +
                ") and the cache (" + formatBytes(l.totalBytes) + ") exceed the " +
                formatBytes(memory) + " of " + std::to_string(std::max(1, s.hardware.gpuCount)) +
                " GPU(s)";
            r.requestsAtContext = 0;
        }
    }
    r.notes.push_back("llama.cpp allocates the cache for -c up front; it is not sized from the "
                      "GPU's free memory");
    return r;
}

EngineResult fromSglang(const Scenario& s) {
    const auto g = sglang::compute(s);
    EngineResult r =
        engineResult(Engine::Sglang, "main 2026 (model_runner_kv_cache_mixin.py)", g,
                     satMul(g.maxTotalNumTokens, g.cellSize), g.maxTotalNumTokens, g.cellSize);
    if (r.error.empty()) {
        // The radix pool is token-granular: requests of the context that fit, at most
        // max_running_requests.
        const std::int64_t ctx = std::max<std::int64_t>(1, s.workload.context);
        r.requestsAtContext = std::min(g.maxTotalNumTokens / ctx, g.maxRunningRequests);
        if (g.memFractionDefault) {
            char f[32];
            std::snprintf(f, sizeof f, "%g", g.memFractionStatic);
            r.notes.push_back("mem_fraction_static " + std::string(f) +
                              " is SGLang's default for this GPU and TP");
        }
    }
    return r;
}

EngineResult fromTrtllm(const Scenario& s) {
    const auto t = trtllm::compute(s);
    EngineResult r = engineResult(Engine::Trtllm, "main 2026 (_torch/pyexecutor/_util.py)", t,
                                  t.poolBytes, t.poolTokens, t.kvSizePerToken);
    if (r.error.empty()) {
        // Whole blocks per request.
        const int tpb = std::max(1, s.engine.trtllm.tokensPerBlock);
        const std::int64_t need = ceilDiv(std::max<std::int64_t>(1, s.workload.context), tpb);
        r.requestsAtContext = t.blocks / need;
        if (t.peakEstimated)
            r.notes.push_back("the profiling peak is KV Ledger's estimate (weights + reserves)");
    }
    return r;
}

} // namespace

std::string pythonFloat(double v) {
    char buf[64];
    for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (std::strtod(buf, nullptr) == v)
            break;
    }
    std::string s = buf;
    if (s.find('.') == std::string::npos && s.find('e') == std::string::npos)
        s += ".0";
    return s;
}

EngineResult computeEngine(const Scenario& s) {
    switch (s.engine.kind) {
    case Engine::Vllm:
        return fromVllm(s);
    case Engine::Llamacpp:
        return fromLlamaCpp(s);
    case Engine::Sglang:
        return fromSglang(s);
    case Engine::Trtllm:
        return fromTrtllm(s);
    }
    return fromVllm(s);
}

std::vector<Engine> allEngines() {
    return {Engine::Vllm, Engine::Sglang, Engine::Trtllm, Engine::Llamacpp};
}

bool engineOffersKvDtype(Engine e, KvDtype d) {
    switch (e) {
    case Engine::Vllm: {
        // Every --kv-cache-dtype vLLM takes, as the format KV Ledger reads it as.
        ModelSpec any;
        for (const auto& name : vllmCacheDtypeNames()) {
            if (name == "auto")
                continue;
            const auto f = formatForVllmCacheDtype(name, any);
            if (f && f.value().dtype == d)
                return true;
        }
        return false;
    }
    case Engine::Sglang:
        return !sglang::kvCacheDtypeName(d).empty();
    case Engine::Trtllm:
        return !trtllm::kvCacheDtypeName(d).empty();
    case Engine::Llamacpp:
        return llamacpp::kvTypeForDtype(d).has_value();
    }
    return false;
}

std::vector<KvDtype> offeredKvDtypes(Engine e) {
    std::vector<KvDtype> out;
    for (KvDtype d : allDtypes())
        if (engineOffersKvDtype(e, d))
            out.push_back(d);
    return out;
}

std::string kvDtypeFlagText(Engine e) {
    constexpr EnumRow<Engine> kFlagTexts[] = {
        {Engine::Vllm, "--kv-cache-dtype"},
        {Engine::Sglang, "--kv-cache-dtype takes auto, fp8_e4m3, fp8_e5m2, fp4_e2m1, bf16"},
        {Engine::Trtllm, "kv_cache_config.dtype takes auto, fp8, int8, nvfp4"},
        {Engine::Llamacpp,
         "-ctk / -ctv take f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1"}};
    return std::string(lookupOr(kFlagTexts, e));
}

std::string noKvCacheError(Engine e, KvDtype d) {
    return std::string(engineDisplayName(e)) + " has no " + std::string(dtypeName(d)) +
           " KV cache (" + kvDtypeFlagText(e) + ")";
}

Scenario scenarioForEngine(const Scenario& s, Engine e) {
    Scenario out = s;
    out.engine.kind = e;
    // The attention lever's regrouped KV heads are a converted checkpoint: the other engines
    // read the heads from the model's config, so the what-if becomes the model's own heads
    // (every layer, as the ledger's leverKvHeads counts them).
    const auto& a = s.levers.attention;
    if (e != Engine::Vllm && a.enabled && a.mode != AttentionMode::Native && !s.model.isMla()) {
        const int heads = effectiveKv(s).kvHeads;
        out.model.kvHeads = heads;
        for (auto& l : out.model.layers)
            if (l.kvHeads > 0)
                l.kvHeads = heads;
        out.levers.attention.enabled = false;
    }
    if (e == Engine::Llamacpp && s.levers.quant.enabled)
        if (const auto t = llamacpp::kvTypeForDtype(s.levers.quant.format.dtype)) {
            out.engine.llamacpp.typeK = *t;
            out.engine.llamacpp.typeV = *t;
        }
    return out;
}

EngineResult computeEngineAs(const Scenario& s, Engine e) {
    const KvDtype d = s.levers.quant.format.dtype;
    if (s.levers.quant.enabled && !engineOffersKvDtype(e, d)) {
        EngineResult r;
        r.engine = e;
        r.formatOffered = false;
        r.error = noKvCacheError(e, d);
        return r;
    }
    return computeEngine(scenarioForEngine(s, e));
}

std::vector<EngineLadderRow> compareEngines(const Scenario& s) {
    std::vector<EngineLadderRow> rows;
    for (const LadderStep& st : computeLadder(s)) {
        EngineLadderRow row;
        row.step = st.id;
        row.label = st.label;
        row.applied = st.applied;
        for (Engine e : allEngines()) {
            EngineCell c;
            c.engine = e;
            if (e == Engine::Vllm) {
                // The ladder's own figures; a format vLLM has no flag for is a what-if there.
                c.offered = vllmCacheDtype(st.scenario).has_value();
                if (!c.offered)
                    c.error =
                        "vLLM has no --kv-cache-dtype for " + formatLabel(st.result.kv.format);
                else if (!st.result.error.empty())
                    c.error = st.result.error;
                else {
                    c.requests = st.result.requestsYouCanRun;
                    c.poolTokens = st.result.gpuKvCacheTokens;
                    c.kvBytesPerTokenPerGpu = st.result.kvBytesPerTokenPerGpu;
                }
            } else {
                const EngineResult r = computeEngineAs(st.scenario, e);
                c.offered = r.formatOffered;
                c.error = r.error;
                if (r.error.empty()) {
                    c.requests = r.requestsAtContext;
                    c.poolTokens = r.poolTokens;
                    c.kvBytesPerTokenPerGpu = r.kvBytesPerTokenPerGpu;
                }
            }
            row.cells.push_back(std::move(c));
        }
        rows.push_back(std::move(row));
    }
    return rows;
}

std::vector<EnginePlanRow> planEngine(const Scenario& base, const std::vector<GpuSpec>& gpus,
                                      std::int64_t users, int maxGpus) {
    std::vector<EnginePlanRow> rows;
    for (const auto& g : gpus) {
        EnginePlanRow best;
        best.gpu = g;
        for (int n = 1; n <= std::max(1, maxGpus); n *= 2) {
            Scenario s = base;
            s.hardware.gpu = g;
            s.hardware.pipelineParallel = 1;
            s.hardware.dataParallel = 1;
            s.hardware.gpuCount = n;
            if (s.engine.kind == Engine::Llamacpp) {
                // The cache does not shrink with more GPUs (-sm layer); n GPUs only add room.
                const EngineResult e = computeEngine(s);
                if (!e.error.empty()) {
                    best.why = e.error;
                    continue;
                }
                if (e.requestsAtContext <= 0) {
                    best.why = "a request of the context does not fit -c / -np";
                    break;
                }
                const std::int64_t replicas = ceilDiv(users, e.requestsAtContext);
                if (replicas * n > maxGpus) {
                    best.why = "more than " + std::to_string(maxGpus) + " GPUs";
                    break;
                }
                best = {g, n, e.requestsAtContext, int(replicas), int(replicas * n), {}};
                break;
            }
            if (s.validate()) {
                best.why = *s.validate();
                continue;
            }
            const EngineResult e = computeEngine(s);
            if (!e.error.empty() || e.requestsAtContext <= 0) {
                best.why = e.error.empty() ? "no request of the context fits" : e.error;
                continue;
            }
            const std::int64_t replicas = ceilDiv(users, e.requestsAtContext);
            if (replicas * n > maxGpus) {
                best.why = "more than " + std::to_string(maxGpus) + " GPUs";
                continue;
            }
            if (best.gpus == 0 || replicas * n < best.gpus)
                best = {g, n, e.requestsAtContext, int(replicas), int(replicas * n), {}};
        }
        rows.push_back(best);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const EnginePlanRow& a, const EnginePlanRow& b) {
        if ((a.gpus == 0) != (b.gpus == 0))
            return a.gpus != 0;
        return a.gpus < b.gpus;
    });
    return rows;
}

} // namespace kvl::core
