#include "scenario_file.h"

#include "json.h"
#include "json_fields.h"

#include <array>
#include <limits>

namespace kvl::io {

using namespace fields;

namespace {

constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50; // 1 PiB, as core's validate

constexpr std::array<std::string_view, 4> kModeNames{"native", "mha", "gqa", "mqa"};
constexpr std::array<std::string_view, 2> kScaleNames{"fp32", "fp16"};

// `sharedWindow` receives the one window of all sliding layers (0: none, or they differ and
// each entry carries its own).
Json layerPatternToJson(const core::ModelSpec& m, std::int64_t& sharedWindow) {
    // Smallest period p with layers[i] == layers[i % p]: Gemma-3's 62 layers are 6 entries.
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
    // Plain names plus one sliding_window when every sliding layer shares it (the catalog's
    // form); otherwise one object per entry so any per-layer window survives.
    bool plain = true;
    for (std::size_t i = 0; i < period; ++i) {
        const auto& l = layers[i];
        if (l.kind == core::LayerKind::Sliding) {
            if (sharedWindow != 0 && sharedWindow != l.window)
                plain = false;
            sharedWindow = l.window;
        } else if (l.window != 0) {
            plain = false;
        }
    }
    Json::Array out;
    for (std::size_t i = 0; i < period; ++i) {
        const auto& l = layers[i];
        if (plain) {
            out.emplace_back(std::string(core::layerKindName(l.kind)));
        } else {
            Json entry = Json::Object{};
            entry.set("kind", std::string(core::layerKindName(l.kind)));
            entry.set("window", Json(static_cast<std::int64_t>(l.window)));
            out.push_back(std::move(entry));
        }
    }
    if (!plain)
        sharedWindow = 0;
    return Json(std::move(out));
}

Json modelToJson(const core::ModelSpec& m) {
    Json j = Json::Object{};
    j.set("id", m.id);
    j.set("name", m.name);
    j.set("family", m.family);
    j.set("num_layers", m.numLayers());
    std::int64_t window = 0;
    Json pattern = layerPatternToJson(m, window);
    j.set("layer_pattern", std::move(pattern));
    if (window > 0)
        j.set("sliding_window", Json(window));
    j.set("num_q_heads", m.qHeads);
    j.set("num_kv_heads", m.kvHeads);
    j.set("head_dim", m.headDim);
    j.set("kv_lora_rank", m.kvLoraRank);
    j.set("qk_rope_head_dim", m.qkRopeHeadDim);
    j.set("hidden_size", Json(m.hiddenSize));
    j.set("params", Json(m.params));
    j.set("weight_dtype", std::string(core::weightDtypeName(m.weightDtype)));
    j.set("kv_dtype", std::string(core::dtypeName(m.nativeKvDtype)));
    j.set("max_context", Json(m.maxContext));
    j.set("notes", m.notes);
    if (!m.hfRepo.empty())
        j.set("hf_repo", m.hfRepo);
    return j;
}

Json gpuToJson(const core::GpuSpec& g) {
    Json j = Json::Object{};
    j.set("id", g.id);
    j.set("name", g.name);
    j.set("vendor", g.vendor);
    j.set("memory_bytes", Json(g.memoryBytes));
    j.set("bandwidth_gbs", g.bandwidthGBs);
    j.set("memory_type", g.memoryType);
    return j;
}

Json formatToJson(const core::KvFormat& f) {
    Json j = Json::Object{};
    j.set("dtype", std::string(core::dtypeName(f.dtype)));
    j.set("granularity", std::string(core::granularityName(f.granularity)));
    j.set("group_size", f.groupSize);
    j.set("scale_type", std::string(kScaleNames[static_cast<std::size_t>(f.scaleType)]));
    j.set("zero_point", f.hasZeroPoint);
    return j;
}

Json leversToJson(const core::Levers& l) {
    Json attention = Json::Object{};
    attention.set("enabled", l.attention.enabled);
    attention.set("mode", std::string(kModeNames[static_cast<std::size_t>(l.attention.mode)]));
    attention.set("gqa_kv_heads", l.attention.gqaKvHeads);
    Json quant = Json::Object{};
    quant.set("enabled", l.quant.enabled);
    quant.set("format", formatToJson(l.quant.format));
    Json paging = Json::Object{};
    paging.set("enabled", l.paging.enabled);
    paging.set("block_size", l.paging.blockSize);
    Json prefix = Json::Object{};
    prefix.set("enabled", l.prefix.enabled);
    prefix.set("shared_tokens", Json(l.prefix.sharedTokens));
    prefix.set("sharing_requests", Json(l.prefix.sharingRequests));
    Json j = Json::Object{};
    j.set("attention", std::move(attention));
    j.set("quant", std::move(quant));
    j.set("paging", std::move(paging));
    j.set("prefix", std::move(prefix));
    return j;
}

Json hardwareToJson(const core::Hardware& h) {
    Json j = Json::Object{};
    j.set("gpu_count", h.gpuCount);
    j.set("memory_utilization", h.memoryUtilization);
    j.set("activation_bytes", h.activationBytes ? Json(*h.activationBytes) : Json(nullptr));
    j.set("overhead_bytes", h.overheadBytes ? Json(*h.overheadBytes) : Json(nullptr));
    j.set("kv_memory_bytes", h.kvMemoryBytes ? Json(*h.kvMemoryBytes) : Json(nullptr));
    j.set("weight_dtype",
          h.weightDtype ? Json(std::string(core::weightDtypeName(*h.weightDtype))) : Json(nullptr));
    return j;
}

Json workloadToJson(const core::Workload& w) {
    Json j = Json::Object{};
    j.set("context", Json(w.context));
    j.set("max_model_len", Json(w.maxModelLen));
    j.set("max_num_batched_tokens", Json(w.maxNumBatchedTokens));
    j.set("target_requests", Json(w.targetRequests));
    return j;
}

// --- reading --------------------------------------------------------------------------------

// A sub-object: absent means "all defaults"; present but not an object is an error.
const Json* section(const Json& parent, std::string_view key, const std::string& prefix,
                    bool required) {
    const Json* v = parent.find(key);
    if (!v || v->isNull()) {
        if (required)
            fail(prefix + std::string(key) + " is missing");
        return nullptr;
    }
    if (!v->isObject())
        fail(prefix + std::string(key) + " must be an object, got " + describe(*v));
    return v;
}

template <class Int>
void readInt(const FieldReader& r, std::string_view key, Int& out, std::int64_t lo,
             std::int64_t hi) {
    if (const auto v = r.optInteger(key, lo, hi))
        out = static_cast<Int>(*v);
}

void readBool(const FieldReader& r, std::string_view key, bool& out) {
    if (const auto v = r.optBool(key))
        out = *v;
}

template <std::size_t N>
std::size_t readName(const FieldReader& r, std::string_view key,
                     const std::array<std::string_view, N>& names, std::size_t current) {
    const Json* v = r.get(key);
    if (!v)
        return current;
    for (std::size_t k = 0; k < N; ++k)
        if (v->isString() && v->asString() == names[k])
            return k;
    std::string list;
    for (const auto& n : names)
        list += (list.empty() ? "" : ", ") + std::string(n);
    r.error(key, "must be one of " + list + ", got " + describe(*v));
}

core::ModelSpec modelFromJson(const Json& j, const std::string& prefix) {
    const FieldReader r(j, prefix);
    core::ModelSpec m;
    m.id = r.string("id", true);
    m.name = r.string("name", true);
    m.family = r.optString("family");
    m.notes = r.optString("notes");
    m.hfRepo = r.optString("hf_repo");
    const auto layers = r.integer("num_layers", 1, core::kMaxLayers);
    m.qHeads = static_cast<int>(r.integer("num_q_heads", 1, core::kMaxHeads));
    // All-MLA models may carry 0 KV heads / head_dim; validate() decides below.
    m.kvHeads = static_cast<int>(r.integer("num_kv_heads", 0, core::kMaxHeads));
    m.headDim = static_cast<int>(r.integer("head_dim", 0, core::kMaxHeadDim));
    m.kvLoraRank = static_cast<int>(r.optInteger("kv_lora_rank", 0, core::kMaxHeadDim).value_or(0));
    m.qkRopeHeadDim =
        static_cast<int>(r.optInteger("qk_rope_head_dim", 0, core::kMaxHeadDim).value_or(0));
    m.hiddenSize = r.optInteger("hidden_size", 0, std::int64_t{1} << 30).value_or(0);
    m.params = r.integer("params", 0, core::kMaxParams);
    m.maxContext = r.integer("max_context", 1, core::kMaxContext);
    const std::string wd = r.string("weight_dtype");
    const auto weight = core::parseWeightDtype(wd);
    if (!weight)
        r.error("weight_dtype",
                "must be one of fp32, fp16, bf16, fp8, int8, int4, got \"" + wd + "\"");
    m.weightDtype = *weight;
    const std::string kd = r.string("kv_dtype");
    const auto kv = core::parseDtype(kd);
    if (!kv)
        r.error("kv_dtype", "must be a KV dtype such as fp16 or bf16, got \"" + kd + "\"");
    m.nativeKvDtype = *kv;

    const auto window = r.optInteger("sliding_window", 1, core::kMaxContext);
    const Json* p = r.get("layer_pattern");
    if (!p || !p->isArray() || p->asArray().empty() ||
        p->asArray().size() > static_cast<std::size_t>(core::kMaxLayers))
        r.error("layer_pattern",
                "must be a non-empty array, got " + (p ? describe(*p) : std::string("nothing")));
    std::vector<core::LayerSpec> pattern;
    for (const Json& e : p->asArray()) {
        core::LayerSpec l;
        std::string kind;
        if (e.isString()) {
            kind = e.asString();
        } else if (e.isObject()) {
            const FieldReader er(e, prefix + "layer_pattern entry ");
            kind = er.string("kind");
            l.window = er.optInteger("window", 0, core::kMaxContext).value_or(0);
        } else {
            r.error("layer_pattern", "entries must be strings or objects, got " + describe(e));
        }
        if (kind == "full") {
            l.kind = core::LayerKind::Full;
        } else if (kind == "mla") {
            l.kind = core::LayerKind::Mla;
        } else if (kind == "sliding") {
            l.kind = core::LayerKind::Sliding;
            if (e.isString()) {
                if (!window)
                    r.error("sliding_window", "is missing (layer_pattern has sliding layers)");
                l.window = *window;
            }
        } else {
            r.error("layer_pattern",
                    "entries must be \"full\", \"sliding\" or \"mla\", got " + describe(e));
        }
        pattern.push_back(l);
    }
    m.layers.resize(static_cast<std::size_t>(layers));
    for (std::size_t i = 0; i < m.layers.size(); ++i)
        m.layers[i] = pattern[i % pattern.size()];
    return m;
}

core::GpuSpec gpuFromJson(const Json& j, const std::string& prefix) {
    const FieldReader r(j, prefix);
    core::GpuSpec g;
    g.id = r.string("id", true);
    g.name = r.string("name", true);
    g.vendor = r.optString("vendor");
    g.memoryBytes = r.integer("memory_bytes", 1, kMaxBytes);
    g.bandwidthGBs = r.number("bandwidth_gbs", 0, 1e7, false);
    g.memoryType = r.optString("memory_type");
    return g;
}

core::KvFormat formatFromJson(const Json& j, const std::string& prefix, core::KvFormat f) {
    const FieldReader r(j, prefix);
    if (const Json* v = r.get("dtype")) {
        const auto d = v->isString() ? core::parseDtype(v->asString()) : std::nullopt;
        if (!d)
            r.error("dtype", "must be a KV dtype such as int8 or fp8_e4m3, got " + describe(*v));
        f.dtype = *d;
    }
    if (const Json* v = r.get("granularity")) {
        const auto g = v->isString() ? core::parseGranularity(v->asString()) : std::nullopt;
        if (!g)
            r.error("granularity", "must be none, per-tensor, per-head, per-token-head, per-group "
                                   "or k-per-channel-v-per-token, got " +
                                       describe(*v));
        f.granularity = *g;
    }
    readInt(r, "group_size", f.groupSize, 0, core::kMaxHeadDim);
    f.scaleType = static_cast<core::ScaleType>(
        readName(r, "scale_type", kScaleNames, static_cast<std::size_t>(f.scaleType)));
    readBool(r, "zero_point", f.hasZeroPoint);
    return f;
}

core::Levers leversFromJson(const Json* j, const std::string& prefix) {
    core::Levers l;
    if (!j)
        return l;
    if (const Json* a = section(*j, "attention", prefix, false)) {
        const FieldReader r(*a, prefix + "attention.");
        readBool(r, "enabled", l.attention.enabled);
        l.attention.mode = static_cast<core::AttentionMode>(
            readName(r, "mode", kModeNames, static_cast<std::size_t>(l.attention.mode)));
        readInt(r, "gqa_kv_heads", l.attention.gqaKvHeads, 1, core::kMaxHeads);
    }
    if (const Json* q = section(*j, "quant", prefix, false)) {
        const FieldReader r(*q, prefix + "quant.");
        readBool(r, "enabled", l.quant.enabled);
        if (const Json* f = section(*q, "format", prefix + "quant.", false))
            l.quant.format = formatFromJson(*f, prefix + "quant.format.", l.quant.format);
    }
    if (const Json* p = section(*j, "paging", prefix, false)) {
        const FieldReader r(*p, prefix + "paging.");
        readBool(r, "enabled", l.paging.enabled);
        readInt(r, "block_size", l.paging.blockSize, 1, 1 << 20);
    }
    if (const Json* p = section(*j, "prefix", prefix, false)) {
        const FieldReader r(*p, prefix + "prefix.");
        readBool(r, "enabled", l.prefix.enabled);
        readInt(r, "shared_tokens", l.prefix.sharedTokens, 0, core::kMaxContext);
        readInt(r, "sharing_requests", l.prefix.sharingRequests, 0, core::kMaxRequests);
    }
    return l;
}

void hardwareFromJson(const Json* j, const std::string& prefix, core::Hardware& h) {
    if (!j)
        return;
    const FieldReader r(*j, prefix);
    readInt(r, "gpu_count", h.gpuCount, 1, 4096);
    if (r.get("memory_utilization"))
        h.memoryUtilization = r.number("memory_utilization", 0, 1, true);
    h.activationBytes = r.optInteger("activation_bytes", 0, kMaxBytes);
    h.overheadBytes = r.optInteger("overhead_bytes", 0, kMaxBytes);
    h.kvMemoryBytes = r.optInteger("kv_memory_bytes", 0, kMaxBytes);
    h.weightDtype.reset();
    if (const Json* v = r.get("weight_dtype"); v && !v->isNull()) {
        const auto d = v->isString() ? core::parseWeightDtype(v->asString()) : std::nullopt;
        if (!d)
            r.error("weight_dtype",
                    "must be null or one of fp32, fp16, bf16, fp8, int8, int4, got " +
                        describe(*v));
        h.weightDtype = *d;
    }
}

core::Workload workloadFromJson(const Json* j, const std::string& prefix) {
    core::Workload w;
    if (!j)
        return w;
    const FieldReader r(*j, prefix);
    readInt(r, "context", w.context, 1, core::kMaxContext);
    readInt(r, "max_model_len", w.maxModelLen, 0, core::kMaxContext);
    readInt(r, "max_num_batched_tokens", w.maxNumBatchedTokens, 1, core::kMaxContext);
    readInt(r, "target_requests", w.targetRequests, 0, core::kMaxRequests);
    return w;
}

} // namespace

std::string scenarioToJson(const core::Scenario& s) {
    Json doc = Json::Object{};
    doc.set("kvledger_scenario", kScenarioFileVersion);
    doc.set("model", modelToJson(s.model));
    doc.set("gpu", gpuToJson(s.hardware.gpu));
    doc.set("levers", leversToJson(s.levers));
    doc.set("hardware", hardwareToJson(s.hardware));
    doc.set("workload", workloadToJson(s.workload));
    return doc.dump(2) + "\n";
}

Result<core::Scenario> scenarioFromJson(std::string_view json, std::string_view sourceName) {
    return guarded<core::Scenario>(sourceName, [&] {
        const std::string src(sourceName);
        const Json doc = parseDocument(json, src);
        const Json* version = doc.find("kvledger_scenario");
        if (!version)
            fail(src + ": not a KV Ledger scenario (kvledger_scenario version is missing)");
        const FieldReader top(doc, src + ": ");
        const std::int64_t v = top.checkInteger("kvledger_scenario", *version, 1,
                                                std::numeric_limits<std::int64_t>::max());
        if (v > kScenarioFileVersion)
            fail(src + ": written by a newer KV Ledger (scenario version " + num(v) +
                 "); this version reads " + num(kScenarioFileVersion));

        core::Scenario s;
        s.model = modelFromJson(*section(doc, "model", src + ": ", true), src + ": model.");
        s.hardware.gpu = gpuFromJson(*section(doc, "gpu", src + ": ", true), src + ": gpu.");
        s.levers = leversFromJson(section(doc, "levers", src + ": ", false), src + ": levers.");
        hardwareFromJson(section(doc, "hardware", src + ": ", false), src + ": hardware.",
                         s.hardware);
        s.workload =
            workloadFromJson(section(doc, "workload", src + ": ", false), src + ": workload.");
        if (auto e = s.validate())
            fail(src + ": " + *e);
        return s;
    });
}

core::Scenario defaultScenario() {
    core::Scenario s;
    if (const auto* m = findModel("llama-3-8b"))
        s.model = *m;
    if (const auto* g = findGpu("h100-80gb"))
        s.hardware.gpu = *g;
    // Everything else is the structs' defaults: vLLM's (auto KV dtype, paging with block 16,
    // utilization 0.9, TP 1); a 4K context under max_model_len 0 = the model's maximum (8192
    // for Llama-3-8B), where paging visibly pays against contiguous reservation.
    return s;
}

} // namespace kvl::io
