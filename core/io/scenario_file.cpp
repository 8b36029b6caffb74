#include "scenario_file.h"

#include "core/llamacpp/ggml_types.h"
#include "core/vllm_command.h"

#include "files.h"
#include "json.h"
#include "json_fields.h"
#include "ledger_json.h"
#include "model_fields.h"

#include <array>
#include <optional>

namespace kvl::io {

namespace {

// Written with nlohmann's ordered_json so the file keeps a readable, stable key order.
using Out = nlohmann::ordered_json;

constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50; // 1 PiB, as core's validate

constexpr std::array<std::string_view, 4> kModeNames{"native", "mha", "gqa", "mqa"};
constexpr std::array<std::string_view, 2> kScaleNames{"fp32", "fp16"};

// The window every sliding layer of `m` has in common, and the chunk every chunked layer has
// (0: no such layer, or they differ and each entry carries its own).
std::int64_t sharedWindowOf(const core::ModelSpec& m, core::LayerKind kind) {
    std::int64_t shared = 0;
    for (const auto& l : m.layers) {
        if (l.kind != kind)
            continue;
        if (shared != 0 && shared != l.window)
            return 0;
        shared = l.window;
    }
    return shared;
}

// An optional setting: its value, or null where it is left to the engine's default.
template <class T> Out orNull(const std::optional<T>& v) {
    return v ? Out(*v) : Out(nullptr);
}

// Smallest period p with layers[i] == layers[i % p] (Gemma-3's 62 layers are 6 entries), each
// entry a plain kind name, or {"kind", "window", "kv_heads", "head_dim", "head_dim_v",
// "kv_shared"} where the layer has its own window or attention geometry, or reads another
// layer's KV.
Out layerPatternToJson(const core::ModelSpec& m, std::int64_t slidingWindow,
                       std::int64_t chunkSize) {
    const auto& layers = m.layers;
    std::size_t period = layers.size();
    for (std::size_t p = 1; p < layers.size(); ++p) {
        bool ok = true;
        for (std::size_t i = p; i < layers.size() && ok; ++i)
            ok = layers[i] == layers[i % p];
        if (ok) {
            period = p;
            break;
        }
    }
    Out out = Out::array();
    for (std::size_t i = 0; i < period; ++i) {
        const auto& l = layers[i];
        const std::int64_t shared = l.kind == core::LayerKind::Sliding   ? slidingWindow
                                    : l.kind == core::LayerKind::Chunked ? chunkSize
                                                                         : 0;
        const bool plain = l.window == shared && (shared != 0 || l.window == 0) && l.kvHeads == 0 &&
                           l.headDim == 0 && l.headDimV == 0 && !l.kvShared;
        const std::string kind(core::layerKindName(l.kind));
        if (plain) {
            out.push_back(kind);
            continue;
        }
        Out e = {{"kind", kind}, {"window", l.window}};
        if (l.kvHeads != 0)
            e["kv_heads"] = l.kvHeads;
        if (l.headDim != 0)
            e["head_dim"] = l.headDim;
        if (l.headDimV != 0)
            e["head_dim_v"] = l.headDimV;
        if (l.kvShared)
            e["kv_shared"] = true;
        out.push_back(std::move(e));
    }
    return out;
}

Out modelToJson(const core::ModelSpec& m) {
    Out j = Out::object();
    j["id"] = m.id;
    j["name"] = m.name;
    j["family"] = m.family;
    j["num_layers"] = m.numLayers();
    const std::int64_t window = sharedWindowOf(m, core::LayerKind::Sliding);
    const std::int64_t chunk = sharedWindowOf(m, core::LayerKind::Chunked);
    j["layer_pattern"] = layerPatternToJson(m, window, chunk);
    if (window > 0)
        j["sliding_window"] = window;
    if (chunk > 0)
        j["attention_chunk_size"] = chunk;
    j["num_q_heads"] = m.qHeads;
    j["num_kv_heads"] = m.kvHeads;
    j["head_dim"] = m.headDim;
    j["kv_lora_rank"] = m.kvLoraRank;
    j["qk_rope_head_dim"] = m.qkRopeHeadDim;
    j["hidden_size"] = m.hiddenSize;
    writeArchitecture(j, m);
    j["state"] = m.state ? writeStateSpec(*m.state) : Out(nullptr);
    j["params"] = m.params;
    j["weight_dtype"] = std::string(core::weightDtypeName(m.weightDtype));
    j["kv_dtype"] = std::string(core::dtypeName(m.nativeKvDtype));
    j["max_context"] = m.maxContext;
    j["notes"] = m.notes;
    if (!m.hfRepo.empty())
        j["hf_repo"] = m.hfRepo;
    return j;
}

Out formatToJson(const core::KvFormat& f) {
    return {{"dtype", std::string(core::dtypeName(f.dtype))},
            {"granularity", std::string(core::granularityName(f.granularity))},
            {"group_size", f.groupSize},
            {"scale_type", std::string(kScaleNames[static_cast<std::size_t>(f.scaleType)])},
            {"zero_point", f.hasZeroPoint},
            {"key_bits", f.keyBits},
            {"value_bits", f.valueBits}};
}

Out leversToJson(const core::Levers& l) {
    Out j = Out::object();
    j["attention"] = {{"enabled", l.attention.enabled},
                      {"mode", std::string(kModeNames[static_cast<std::size_t>(l.attention.mode)])},
                      {"gqa_kv_heads", l.attention.gqaKvHeads}};
    j["quant"] = {{"enabled", l.quant.enabled}, {"format", formatToJson(l.quant.format)}};
    j["paging"] = {{"enabled", l.paging.enabled}, {"block_size", l.paging.blockSize}};
    j["prefix"] = {{"enabled", l.prefix.enabled},
                   {"shared_tokens", l.prefix.sharedTokens},
                   {"sharing_requests", l.prefix.sharingRequests}};
    return j;
}

Out hardwareToJson(const core::Hardware& h) {
    Out j = Out::object();
    j["gpu_count"] = h.gpuCount;
    j["pipeline_parallel"] = h.pipelineParallel;
    j["data_parallel"] = h.dataParallel;
    j["expert_parallel"] = h.expertParallel;
    j["decode_context_parallel"] = h.decodeContextParallel;
    // null = the vLLM release's default
    j["memory_utilization"] = orNull(h.memoryUtilization);
    j["activation_bytes"] = orNull(h.activationBytes);
    j["overhead_bytes"] = orNull(h.overheadBytes);
    j["cuda_graph_bytes"] = orNull(h.cudaGraphBytes);
    j["kv_memory_bytes"] = orNull(h.kvMemoryBytes);
    j["weight_dtype"] =
        h.weightDtype ? Out(std::string(core::weightDtypeName(*h.weightDtype))) : Out(nullptr);
    return j;
}

Out workloadToJson(const core::Workload& w) {
    return {{"context", w.context},
            {"max_model_len", w.maxModelLen},
            {"max_num_batched_tokens", w.maxNumBatchedTokens},
            {"target_requests", w.targetRequests},
            {"concurrency", w.concurrency}};
}

Out engineToJson(const core::EngineOptions& e) {
    return {{"disable_hybrid_kv_cache_manager", e.disableHybridKvCacheManager},
            {"allow_chunked_local_hybrid", e.allowChunkedLocalHybrid},
            {"async_scheduling", e.asyncScheduling},
            {"max_num_seqs", e.maxNumSeqs},
            {"mamba_cache_mode", std::string(core::mambaCacheModeName(e.mambaCacheMode))},
            {"mamba_ssm_cache_dtype", e.mambaSsmCacheDtype
                                          ? Out(std::string(core::dtypeName(*e.mambaSsmCacheDtype)))
                                          : Out(nullptr)},
            // null = the newest release KV Ledger knows
            {"vllm_version", e.vllmVersion ? Out(e.vllmVersion->str()) : Out(nullptr)},
            {"name", std::string(core::engineName(e.kind))},
            {"llamacpp",
             {{"ctx_size", e.llamacpp.nCtx},
              {"parallel", e.llamacpp.nParallel},
              {"kv_unified", e.llamacpp.kvUnified},
              {"cache_type_k", std::string(core::llamacpp::ggmlKvTypeName(e.llamacpp.typeK))},
              {"cache_type_v", std::string(core::llamacpp::ggmlKvTypeName(e.llamacpp.typeV))},
              {"swa_full", e.llamacpp.swaFull},
              {"ubatch_size", e.llamacpp.nUbatch}}},
            {"sglang",
             {{"mem_fraction_static", orNull(e.sglang.memFractionStatic)},
              {"max_total_tokens", e.sglang.maxTotalTokens},
              {"page_size", e.sglang.pageSize},
              {"chunked_prefill_size", e.sglang.chunkedPrefillSize},
              {"cuda_graph_max_bs", e.sglang.cudaGraphMaxBs},
              {"swa_full_tokens_ratio", orNull(e.sglang.swaFullTokensRatio)},
              {"free_before_load_bytes", orNull(e.sglang.freeBeforeLoadBytes)},
              {"free_after_load_bytes", orNull(e.sglang.freeAfterLoadBytes)}}},
            {"trtllm",
             {{"free_gpu_memory_fraction", e.trtllm.freeGpuMemoryFraction},
              {"max_tokens", e.trtllm.maxTokens},
              {"tokens_per_block", e.trtllm.tokensPerBlock},
              {"peak_memory_bytes", orNull(e.trtllm.peakMemoryBytes)}}}};
}

// --- reading --------------------------------------------------------------------------------

template <class Int> void readInt(const Field& f, Int& out, std::int64_t lo, std::int64_t hi) {
    if (const auto v = f.optInteger(lo, hi))
        out = static_cast<Int>(*v);
}

void readBool(const Field& f, bool& out) {
    if (const auto v = f.optBoolean())
        out = *v;
}

template <std::size_t N>
std::size_t readName(const Field& f, const std::array<std::string_view, N>& names,
                     std::size_t current) {
    if (!f.exists())
        return current;
    for (std::size_t k = 0; k < N; ++k)
        if (f.isString() && f.string() == names[k])
            return k;
    std::string list;
    for (const auto& n : names)
        list += (list.empty() ? "" : ", ") + std::string(n);
    f.fail("must be one of " + list + ", got " + f.describe());
}

// An optional section: absent or null means "all defaults"; anything but an object fails.
Field section(const Field& parent, std::string_view key) {
    Field s = parent[key];
    if (s.present())
        s.object();
    return s;
}

std::vector<core::LayerSpec> layerPatternFromJson(const Field& m) {
    const Field p = m["layer_pattern"];
    const std::size_t n = p.size();
    if (n == 0 || n > static_cast<std::size_t>(core::kMaxLayers))
        p.fail("must be a non-empty array of at most " + std::to_string(core::kMaxLayers) +
               " entries, got " + std::to_string(n));
    const auto window = m["sliding_window"].optInteger(1, core::kMaxContext);
    const auto chunk = m["attention_chunk_size"].optInteger(1, core::kMaxContext);
    std::vector<core::LayerSpec> pattern;
    for (std::size_t i = 0; i < n; ++i) {
        const Field e = p.at(i);
        core::LayerSpec l;
        Field kindField = e;
        if (e.isObject()) {
            kindField = e["kind"];
            l.window = e["window"].optInteger(0, core::kMaxContext).value_or(0);
            readInt(e["kv_heads"], l.kvHeads, 0, core::kMaxHeads);
            readInt(e["head_dim"], l.headDim, 0, core::kMaxHeadDim);
            readInt(e["head_dim_v"], l.headDimV, 0, core::kMaxHeadDim);
            readBool(e["kv_shared"], l.kvShared);
        } else if (!e.isString()) {
            e.failExpected("a layer kind (a string or {\"kind\", \"window\"})");
        }
        const auto kind = core::parseLayerKind(kindField.string());
        if (!kind)
            kindField.failOneOf({"full", "sliding", "chunked", "mla", "state", "none"});
        l.kind = *kind;
        if (l.kind == core::LayerKind::Sliding && e.isString()) {
            if (!window)
                m["sliding_window"].fail("missing (layer_pattern has sliding layers)");
            l.window = *window;
        }
        if (l.kind == core::LayerKind::Chunked && e.isString()) {
            if (!chunk)
                m["attention_chunk_size"].fail("missing (layer_pattern has chunked layers)");
            l.window = *chunk;
        }
        pattern.push_back(l);
    }
    return pattern;
}

core::ModelSpec modelFromJson(const Field& j) {
    core::ModelSpec m;
    m.id = j["id"].string();
    m.name = j["name"].string();
    m.family = j["family"].optString().value_or("");
    m.notes = j["notes"].optString().value_or("");
    m.hfRepo = j["hf_repo"].optString().value_or("");
    const auto layers = j["num_layers"].integer(1, core::kMaxLayers);
    m.qHeads = static_cast<int>(j["num_q_heads"].integer(1, core::kMaxHeads));
    // All-MLA models may carry 0 KV heads / head_dim; validate() decides below.
    m.kvHeads = static_cast<int>(j["num_kv_heads"].integer(0, core::kMaxHeads));
    m.headDim = static_cast<int>(j["head_dim"].integer(0, core::kMaxHeadDim));
    m.kvLoraRank = static_cast<int>(j["kv_lora_rank"].optInteger(0, core::kMaxHeadDim).value_or(0));
    m.qkRopeHeadDim =
        static_cast<int>(j["qk_rope_head_dim"].optInteger(0, core::kMaxHeadDim).value_or(0));
    m.hiddenSize = j["hidden_size"].optInteger(0, std::int64_t{1} << 30).value_or(0);
    readArchitecture(j, m);
    if (const Field st = j["state"]; st.present())
        m.state = readStateSpec(st);
    m.params = j["params"].integer(0, core::kMaxParams);
    m.maxContext = j["max_context"].integer(1, core::kMaxContext);
    m.weightDtype = readWeightDtype(j["weight_dtype"]);
    m.nativeKvDtype = readKvDtype(j["kv_dtype"]);

    const auto pattern = layerPatternFromJson(j);
    m.layers.resize(static_cast<std::size_t>(layers));
    for (std::size_t i = 0; i < m.layers.size(); ++i)
        m.layers[i] = pattern[i % pattern.size()];
    return m;
}

// core's GPU bounds, named as the file's field (a file always carries the bandwidth: 0 is
// refused, where a GpuSpec built in code may leave it unknown).
void failOnGpuProblem(const Field& j, const core::GpuSpec& g) {
    if (const auto p = core::gpuProblem(g, true)) {
        const std::string_view prefix = "gpu.";
        j[std::string_view(p->field).substr(prefix.size())].fail(p->message);
    }
}

core::GpuSpec gpuFromJson(const Field& j) {
    core::GpuSpec g;
    g.id = j["id"].string();
    g.name = j["name"].string();
    g.vendor = j["vendor"].optString().value_or("");
    g.memoryBytes = j["memory_bytes"].integer(1, kMaxBytes);
    g.bandwidthGBs = j["bandwidth_gbs"].number(0, 1e7);
    g.memoryType = j["memory_type"].optString().value_or("");
    // Version 1 files have no compute capability or TFLOP/s: a catalog GPU takes the
    // catalog's (vLLM's backend choice depends on the compute capability).
    if (!j["compute_capability"].exists()) {
        if (const core::GpuSpec* known = findGpu(g.id)) {
            g.computeCapability = known->computeCapability;
            g.bf16Tflops = known->bf16Tflops;
            g.fp8Tflops = known->fp8Tflops;
            g.source = known->source;
        }
        failOnGpuProblem(j, g);
        return g;
    }
    readInt(j["compute_capability"], g.computeCapability, 0, 1000);
    g.bf16Tflops = j["bf16_tflops"].optNumber(0, 1e6).value_or(0);
    g.fp8Tflops = j["fp8_tflops"].optNumber(0, 1e6).value_or(0);
    g.source = j["source"].optString().value_or("");
    failOnGpuProblem(j, g);
    return g;
}

core::KvFormat formatFromJson(const Field& j, core::KvFormat f) {
    if (const Field v = j["dtype"]; v.exists()) {
        const auto d = v.isString() ? core::parseDtype(v.string()) : std::nullopt;
        if (!d)
            v.fail("must be a KV dtype such as int8 or fp8_e4m3, got " + v.describe());
        f.dtype = *d;
    }
    if (const Field v = j["granularity"]; v.exists()) {
        const auto g = v.isString() ? core::parseGranularity(v.string()) : std::nullopt;
        if (!g)
            v.failOneOf({"none", "per-tensor", "per-head", "per-token-head", "per-group", "kivi",
                         "ds-mla", "turboquant"});
        f.granularity = *g;
    }
    readInt(j["group_size"], f.groupSize, 0, core::kMaxHeadDim);
    f.scaleType = static_cast<core::ScaleType>(
        readName(j["scale_type"], kScaleNames, static_cast<std::size_t>(f.scaleType)));
    readBool(j["zero_point"], f.hasZeroPoint);
    readInt(j["key_bits"], f.keyBits, 0, 8);     // TurboQuant only
    readInt(j["value_bits"], f.valueBits, 0, 8); // TurboQuant only
    return f;
}

core::Levers leversFromJson(const Field& j) {
    core::Levers l;
    const Field a = section(j, "attention");
    readBool(a["enabled"], l.attention.enabled);
    l.attention.mode = static_cast<core::AttentionMode>(
        readName(a["mode"], kModeNames, static_cast<std::size_t>(l.attention.mode)));
    readInt(a["gqa_kv_heads"], l.attention.gqaKvHeads, 1, core::kMaxHeads);
    const Field q = section(j, "quant");
    readBool(q["enabled"], l.quant.enabled);
    if (const Field f = section(q, "format"); f.present())
        l.quant.format = formatFromJson(f, l.quant.format);
    const Field p = section(j, "paging");
    readBool(p["enabled"], l.paging.enabled);
    readInt(p["block_size"], l.paging.blockSize, 0, 1 << 20); // 0 = vLLM's choice
    const Field x = section(j, "prefix");
    readBool(x["enabled"], l.prefix.enabled);
    readInt(x["shared_tokens"], l.prefix.sharedTokens, 0, core::kMaxContext);
    readInt(x["sharing_requests"], l.prefix.sharingRequests, 0, core::kMaxRequests);
    return l;
}

void hardwareFromJson(const Field& j, core::Hardware& h) {
    if (!j.present())
        return;
    readInt(j["gpu_count"], h.gpuCount, 1, 4096);
    readInt(j["pipeline_parallel"], h.pipelineParallel, 1, 4096);
    readInt(j["data_parallel"], h.dataParallel, 1, 4096);
    readBool(j["expert_parallel"], h.expertParallel);
    readInt(j["decode_context_parallel"], h.decodeContextParallel, 1, 4096);
    if (const Field u = j["memory_utilization"]; u.exists() && !u.isNull())
        h.memoryUtilization = u.numberAbove(0, 1);
    // null (or absent) = KV Ledger's estimate
    if (const Field f = j["activation_bytes"]; f.exists())
        h.activationBytes = f.optInteger(0, kMaxBytes);
    if (const Field f = j["overhead_bytes"]; f.exists())
        h.overheadBytes = f.optInteger(0, kMaxBytes);
    if (const Field f = j["cuda_graph_bytes"]; f.exists())
        h.cudaGraphBytes = f.optInteger(0, kMaxBytes);
    h.kvMemoryBytes = j["kv_memory_bytes"].optInteger(0, kMaxBytes);
    h.weightDtype.reset();
    if (const Field v = j["weight_dtype"]; v.present()) {
        const auto d = v.isString() ? core::parseWeightDtype(v.string()) : std::nullopt;
        if (!d)
            v.fail("must be null or one of fp32, fp16, bf16, fp8, int8, int4, fp4, got " +
                   v.describe());
        h.weightDtype = *d;
    }
}

core::Workload workloadFromJson(const Field& j) {
    core::Workload w;
    readInt(j["context"], w.context, 1, core::kMaxContext);
    readInt(j["max_model_len"], w.maxModelLen, 0, core::kMaxContext);
    readInt(j["max_num_batched_tokens"], w.maxNumBatchedTokens, 0, core::kMaxContext);
    readInt(j["target_requests"], w.targetRequests, 0, core::kMaxRequests);
    readInt(j["concurrency"], w.concurrency, 0, core::kMaxRequests); // 0 = as many as fit
    return w;
}

core::EngineOptions engineFromJson(const Field& j) {
    core::EngineOptions e;
    readBool(j["disable_hybrid_kv_cache_manager"], e.disableHybridKvCacheManager);
    readBool(j["allow_chunked_local_hybrid"], e.allowChunkedLocalHybrid);
    readBool(j["async_scheduling"], e.asyncScheduling);
    readInt(j["max_num_seqs"], e.maxNumSeqs, 0, core::kMaxRequests); // 0 = vLLM's default
    e.mambaCacheMode = static_cast<core::MambaCacheMode>(
        readName(j["mamba_cache_mode"], core::kMambaCacheModeNames,
                 static_cast<std::size_t>(e.mambaCacheMode)));
    if (const Field d = j["mamba_ssm_cache_dtype"]; d.present()) {
        const auto dt = d.isString() ? core::parseDtype(d.string()) : std::nullopt;
        if (!dt || (*dt != core::KvDtype::Fp32 && *dt != core::KvDtype::Fp16 &&
                    *dt != core::KvDtype::Bf16))
            d.fail("must be null (auto) or one of fp32, fp16, bf16, got " + d.describe());
        e.mambaSsmCacheDtype = *dt;
    }
    if (const Field v = j["vllm_version"]; v.present()) {
        if (!v.isString())
            v.fail("must be null (the newest known) or a release such as \"0.11.2\", got " +
                   v.describe());
        auto parsed = core::parseVllmVersion(v.string());
        if (!parsed)
            v.fail(parsed.error().message);
        e.vllmVersion = *parsed;
    }
    if (const Field n = j["name"]; n.present()) {
        const auto k = n.isString() ? core::parseEngine(n.string()) : std::nullopt;
        if (!k)
            n.fail("must be one of vllm, sglang, trtllm, llamacpp, got " + n.describe());
        e.kind = *k;
    }
    auto kvType = [](const Field& f, core::GgmlKvType& out) {
        if (!f.present())
            return;
        const auto t = f.isString() ? core::llamacpp::parseGgmlKvType(f.string()) : std::nullopt;
        if (!t)
            f.fail("must be one of f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1, got " +
                   f.describe());
        out = *t;
    };
    const Field l = section(j, "llamacpp");
    readInt(l["ctx_size"], e.llamacpp.nCtx, 0, core::kMaxContext);
    readInt(l["parallel"], e.llamacpp.nParallel, 1, 4096);
    readBool(l["kv_unified"], e.llamacpp.kvUnified);
    kvType(l["cache_type_k"], e.llamacpp.typeK);
    kvType(l["cache_type_v"], e.llamacpp.typeV);
    readBool(l["swa_full"], e.llamacpp.swaFull);
    readInt(l["ubatch_size"], e.llamacpp.nUbatch, 1, 1 << 20);
    const Field g = section(j, "sglang");
    if (const Field f = g["mem_fraction_static"]; f.present())
        e.sglang.memFractionStatic = f.numberAbove(0, 1);
    readInt(g["max_total_tokens"], e.sglang.maxTotalTokens, 0, core::kMaxContext);
    readInt(g["page_size"], e.sglang.pageSize, 1, 1 << 20);
    readInt(g["chunked_prefill_size"], e.sglang.chunkedPrefillSize, 0, core::kMaxContext);
    readInt(g["cuda_graph_max_bs"], e.sglang.cudaGraphMaxBs, 0, 1 << 20);
    if (const Field f = g["swa_full_tokens_ratio"]; f.present())
        e.sglang.swaFullTokensRatio = f.numberAbove(0, 1);
    e.sglang.freeBeforeLoadBytes = g["free_before_load_bytes"].optInteger(0, kMaxBytes);
    e.sglang.freeAfterLoadBytes = g["free_after_load_bytes"].optInteger(0, kMaxBytes);
    const Field t = section(j, "trtllm");
    if (const Field f = t["free_gpu_memory_fraction"]; f.present())
        e.trtllm.freeGpuMemoryFraction = f.numberAbove(0, 1);
    readInt(t["max_tokens"], e.trtllm.maxTokens, 0, core::kMaxContext);
    readInt(t["tokens_per_block"], e.trtllm.tokensPerBlock, 1, 1 << 20);
    e.trtllm.peakMemoryBytes = t["peak_memory_bytes"].optInteger(0, kMaxBytes);
    return e;
}

core::Scenario scenarioFrom(const Field& doc) {
    const Field version = doc["kvledger_scenario"];
    if (!version.exists())
        doc.fail("not a KV Ledger scenario (kvledger_scenario version is missing)");
    const std::int64_t v = version.integer(1, 1'000'000);
    if (v > kScenarioFileVersion)
        doc.fail("written by a newer KV Ledger (scenario version " + std::to_string(v) +
                 "); this version reads " + std::to_string(kScenarioFileVersion));
    core::Scenario s;
    s.model = modelFromJson(doc["model"].object());
    s.hardware.gpu = gpuFromJson(doc["gpu"].object());
    s.levers = leversFromJson(section(doc, "levers"));
    hardwareFromJson(section(doc, "hardware"), s.hardware);
    s.workload = workloadFromJson(section(doc, "workload"));
    s.engine = engineFromJson(section(doc, "engine"));
    if (auto problem = s.validate())
        doc.fail(*problem);
    // The block size vLLM refuses, as the command line's --block-size refuses it, but named as
    // this file's field (the same check for --scenario and --reference files).
    if (const auto p = core::blockSizeProblem(s))
        section(section(doc, "levers"), "paging")["block_size"].fail(p->message);
    return s;
}

} // namespace

std::string scenarioToJson(const core::Scenario& s) {
    Out doc = Out::object();
    doc["kvledger_scenario"] = kScenarioFileVersion;
    doc["model"] = modelToJson(s.model);
    doc["gpu"] = gpuJson(s.hardware.gpu);
    doc["levers"] = leversToJson(s.levers);
    doc["hardware"] = hardwareToJson(s.hardware);
    doc["workload"] = workloadToJson(s.workload);
    doc["engine"] = engineToJson(s.engine);
    return dumpJson(doc, 2) + "\n";
}

Result<core::Scenario> scenarioFromJson(std::string_view json, std::string_view sourceName) {
    return readDocument<core::Scenario>(json, sourceName, scenarioFrom);
}

Result<core::Scenario> loadScenarioFile(const std::string& path) {
    auto text = readFile(path);
    if (!text)
        return text.error();
    return scenarioFromJson(text.value(), path);
}

core::Scenario defaultScenario() {
    core::Scenario s;
    if (const auto* m = findModel("llama-3-8b"))
        s.model = *m;
    if (const auto* g = findGpu("h100-80gb"))
        s.hardware.gpu = *g;
    // The scenario both kvledger's CLI and the window's first launch show, one vLLM runs as
    // printed: vLLM's defaults (KV in the model's dtype, `--kv-cache-dtype auto`; paging with the
    // block size vLLM picks; utilization 0.92; TP 1; reserves estimated) and a 4K context under
    // max_model_len 0 = the model's maximum (8192 for Llama-3-8B).
    // No shared prefix: a capacity figure must not count on cache hits the workload may never
    // give. vLLM v1 caches prefixes by default, but what is shared depends on the traffic, and
    // vLLM's own figures (GPU KV cache size, maximum concurrency) assume none. The lever is
    // off with a 2K prompt ready, so turning it on (the ladder's "+prefix" step) shows the gain.
    s.levers.prefix.enabled = false;
    s.levers.prefix.sharedTokens = 2048;
    s.levers.prefix.sharingRequests = 0;
    return s;
}

} // namespace kvl::io
