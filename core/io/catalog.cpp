#include "catalog.h"

#include "json.h"
#include "json_fields.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <set>

namespace kvl::io {

namespace detail {
extern const std::string_view kModelsJson;
extern const std::string_view kGpusJson;
} // namespace detail

using namespace fields;

namespace {

// {"version": 1, "<listKey>": [...]}: the catalog envelope.
const Json::Array& catalogEntries(const Json& doc, std::string_view source,
                                  std::string_view listKey) {
    const std::string src(source);
    FieldReader top(doc, src + ": ");
    const std::int64_t version = top.integer("version", 1, 1'000'000);
    if (version > 1)
        fail(src + ": catalog version " + num(version) +
             " was written for a newer KV Ledger; this version reads 1");
    const Json* list = doc.find(listKey);
    if (!list)
        fail(src + ": " + std::string(listKey) + " is missing");
    if (!list->isArray())
        fail(src + ": " + std::string(listKey) + " must be an array, got " + typeName(*list));
    if (list->asArray().empty())
        fail(src + ": " + std::string(listKey) + " is empty");
    return list->asArray();
}

std::string checkedId(const FieldReader& r, std::set<std::string>& seen) {
    const std::string id = r.string("id");
    if (id != lower(id) || id.find_first_of(" \t\r\n") != std::string::npos)
        r.error("id", "must be lower case without spaces, got \"" + id + "\"");
    if (!seen.insert(id).second)
        r.error("id", "\"" + id + "\" is used twice");
    return id;
}

core::ModelSpec modelFromCatalog(const Json& entry, std::size_t index, std::string_view source,
                                 std::set<std::string>& seen) {
    const std::string src(source);
    const std::string where = src + ": model #" + num(static_cast<std::int64_t>(index + 1));
    if (!entry.isObject())
        fail(where + ": must be an object, got " + typeName(entry));
    const std::string id = checkedId(FieldReader(entry, where + ": "), seen);
    const FieldReader r(entry, src + ": model '" + id + "' (#" +
                                   num(static_cast<std::int64_t>(index + 1)) + "): ");

    core::ModelSpec m;
    m.id = id;
    m.name = r.string("name");
    m.family = r.string("family");
    m.hfRepo = r.optString("hf_repo");
    const auto layers = r.integer("num_layers", 1, core::kMaxLayers);
    m.qHeads = static_cast<int>(r.integer("num_q_heads", 1, core::kMaxHeads));
    m.kvHeads = static_cast<int>(r.integer("num_kv_heads", 1, core::kMaxHeads));
    m.headDim = static_cast<int>(r.integer("head_dim", 1, core::kMaxHeadDim));
    m.hiddenSize = r.integer("hidden_size", 1, kMaxWidth);
    m.params = r.integer("params", 1, core::kMaxParams);
    m.maxContext = r.integer("max_context", 1, core::kMaxContext);
    m.notes = r.optString("notes");

    const std::string weight = r.string("weight_dtype");
    const auto wd = core::parseWeightDtype(weight);
    if (!wd)
        r.error("weight_dtype",
                "must be one of fp32, fp16, bf16, fp8, int8, int4, got \"" + weight + "\"");
    m.weightDtype = *wd;
    const std::string kv = r.string("kv_dtype");
    const auto kd = core::parseDtype(kv);
    if (!kd)
        r.error("kv_dtype", "must be a KV dtype such as fp16 or bf16, got \"" + kv + "\"");
    m.nativeKvDtype = *kd;

    const auto window = r.optInteger("sliding_window", 1, core::kMaxContext);
    const auto lora = r.optInteger("kv_lora_rank", 1, core::kMaxHeadDim);
    const auto rope = r.optInteger("qk_rope_head_dim", 0, core::kMaxHeadDim);
    if (lora) {
        if (!rope)
            r.error("qk_rope_head_dim", "is missing (required with kv_lora_rank)");
        m.kvLoraRank = static_cast<int>(*lora);
        m.qkRopeHeadDim = static_cast<int>(*rope);
    }

    // The pattern repeats cyclically over the layers; absent, every layer is of the one kind
    // the other fields imply.
    std::vector<core::LayerKind> pattern;
    if (const Json* p = r.get("layer_pattern")) {
        if (!p->isArray() || p->asArray().empty() ||
            p->asArray().size() > static_cast<std::size_t>(core::kMaxLayers))
            r.error("layer_pattern", "must be a non-empty array of \"full\", \"sliding\" or "
                                     "\"mla\", got " +
                                         describe(*p));
        for (const Json& k : p->asArray()) {
            const std::string s = k.isString() ? k.asString() : std::string();
            if (s == "full")
                pattern.push_back(core::LayerKind::Full);
            else if (s == "sliding")
                pattern.push_back(core::LayerKind::Sliding);
            else if (s == "mla")
                pattern.push_back(core::LayerKind::Mla);
            else
                r.error("layer_pattern",
                        "entries must be \"full\", \"sliding\" or \"mla\", got " + describe(k));
        }
    } else if (window && lora) {
        r.error("layer_pattern", "is required when both sliding_window and kv_lora_rank are given");
    } else {
        pattern.push_back(window ? core::LayerKind::Sliding
                          : lora ? core::LayerKind::Mla
                                 : core::LayerKind::Full);
    }
    const bool anySliding =
        std::find(pattern.begin(), pattern.end(), core::LayerKind::Sliding) != pattern.end();
    const bool anyMla =
        std::find(pattern.begin(), pattern.end(), core::LayerKind::Mla) != pattern.end();
    if (anySliding && !window)
        r.error("sliding_window", "is missing (layer_pattern has sliding layers)");
    if (!anySliding && window)
        r.error("sliding_window", "is given but no layer in layer_pattern is \"sliding\"");
    if (anyMla && !lora)
        r.error("kv_lora_rank", "is missing (layer_pattern has mla layers)");
    if (!anyMla && lora)
        r.error("kv_lora_rank", "is given but no layer in layer_pattern is \"mla\"");

    m.layers.resize(static_cast<std::size_t>(layers));
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        m.layers[i].kind = pattern[i % pattern.size()];
        if (m.layers[i].kind == core::LayerKind::Sliding)
            m.layers[i].window = *window;
    }
    if (auto e = m.validate())
        fail(src + ": " + *e);
    return m;
}

core::GpuSpec gpuFromCatalog(const Json& entry, std::size_t index, std::string_view source,
                             std::set<std::string>& seen) {
    const std::string src(source);
    const std::string where = src + ": gpu #" + num(static_cast<std::int64_t>(index + 1));
    if (!entry.isObject())
        fail(where + ": must be an object, got " + typeName(entry));
    const std::string id = checkedId(FieldReader(entry, where + ": "), seen);
    const FieldReader r(entry, src + ": gpu '" + id + "' (#" +
                                   num(static_cast<std::int64_t>(index + 1)) + "): ");
    core::GpuSpec g;
    g.id = id;
    g.name = r.string("name");
    g.vendor = r.string("vendor");
    g.memoryBytes = r.integer("memory_bytes", 1, kMaxGpuMemory);
    r.optString("memory_source");
    g.bandwidthGBs = r.positiveNumber("bandwidth_gbs", 1e7);
    g.memoryType = r.string("memory_type");
    return g;
}

} // namespace

Result<std::vector<core::ModelSpec>> parseModelCatalog(std::string_view json,
                                                       std::string_view sourceName) {
    return guarded<std::vector<core::ModelSpec>>(sourceName, [&] {
        const Json doc = parseDocument(json, sourceName);
        std::vector<core::ModelSpec> out;
        std::set<std::string> seen;
        const auto& entries = catalogEntries(doc, sourceName, "models");
        for (std::size_t k = 0; k < entries.size(); ++k)
            out.push_back(modelFromCatalog(entries[k], k, sourceName, seen));
        return out;
    });
}

Result<std::vector<core::GpuSpec>> parseGpuCatalog(std::string_view json,
                                                   std::string_view sourceName) {
    return guarded<std::vector<core::GpuSpec>>(sourceName, [&] {
        const Json doc = parseDocument(json, sourceName);
        std::vector<core::GpuSpec> out;
        std::set<std::string> seen;
        const auto& entries = catalogEntries(doc, sourceName, "gpus");
        for (std::size_t k = 0; k < entries.size(); ++k)
            out.push_back(gpuFromCatalog(entries[k], k, sourceName, seen));
        return out;
    });
}

namespace {

template <class T> const T& builtinOrDie(const Result<T>& r) {
    if (const auto* e = std::get_if<LoadError>(&r)) {
        // The catalogs are compiled in and tested; a broken one is a build defect.
        std::fprintf(stderr, "KV Ledger: the built-in catalog is broken: %s\n", e->message.c_str());
        std::abort();
    }
    return std::get<T>(r);
}

} // namespace

const std::vector<core::ModelSpec>& builtinModels() {
    static const auto models = parseModelCatalog(detail::kModelsJson, "models.json");
    return builtinOrDie(models);
}

const std::vector<core::GpuSpec>& builtinGpus() {
    static const auto gpus = parseGpuCatalog(detail::kGpusJson, "gpus.json");
    return builtinOrDie(gpus);
}

const core::ModelSpec* findModel(std::string_view id) {
    for (const auto& m : builtinModels())
        if (equalsIgnoreCase(m.id, id))
            return &m;
    return nullptr;
}

const core::GpuSpec* findGpu(std::string_view id) {
    for (const auto& g : builtinGpus())
        if (equalsIgnoreCase(g.id, id))
            return &g;
    return nullptr;
}

// ---------------------------------------------------------------------------------------------
// HuggingFace config.json (REFERENCE.md section 1)

namespace {

class HfConfig {
public:
    HfConfig(const Json& top, std::string source) : m_top(top), m_source(std::move(source)) {
        // Multimodal configs nest the language model (REFERENCE.md 1): read it from there and
        // fall back to the top level for fields the nested object leaves out.
        for (const char* key : {"text_config", "llm_config"}) {
            const Json* nested = top.find(key);
            if (!nested || nested->isNull())
                continue;
            if (!nested->isObject())
                error(key, "must be an object, got " + describe(*nested));
            m_text = nested;
            m_textKey = key;
            break;
        }
    }

    struct Field {
        const Json* value = nullptr; // nullptr when absent or null
        std::string path;            // "text_config.num_attention_heads"
        explicit operator bool() const { return value != nullptr; }
    };

    // The first of `keys` present (non-null) in the language-model object, else at the top.
    Field find(std::initializer_list<std::string_view> keys) const {
        for (std::string_view key : keys) {
            if (m_text) {
                if (const Json* v = m_text->find(key)) {
                    if (v->isNull())
                        return {nullptr, m_textKey + "." + std::string(key)};
                    return {v, m_textKey + "." + std::string(key)};
                }
            }
            if (const Json* v = m_top.find(key)) {
                if (v->isNull())
                    return {nullptr, std::string(key)};
                return {v, std::string(key)};
            }
        }
        for (std::string_view key : keys) {
            for (const auto& [k, v] : m_defaults) {
                if (k == key) {
                    m_defaultsUsed.insert(k);
                    return {&v, k};
                }
            }
        }
        return {nullptr, std::string(*keys.begin())};
    }

    // Values the model's HF config class supplies when config.json leaves them out (the
    // published Gemma-3 config.json relies on Gemma3TextConfig's defaults).
    void setDefault(std::string key, Json value) {
        m_defaults.emplace_back(std::move(key), std::move(value));
    }
    const std::set<std::string>& defaultsUsed() const { return m_defaultsUsed; }

    [[noreturn]] void error(std::string_view field, const std::string& problem) const {
        fail(m_source + ": " + std::string(field) + ": " + problem);
    }

    std::int64_t integer(const Field& f, std::int64_t lo, std::int64_t hi) const {
        const Json& v = *f.value;
        if (!v.isNumber())
            error(f.path, "must be an integer, got " + typeName(v));
        const auto i = v.asInt64();
        if (!i)
            error(f.path, "must be an integer, got " + describe(v));
        if (*i < lo)
            error(f.path, "must be " + std::string(lo >= 1 ? "positive" : "non-negative") +
                              ", got " + num(*i));
        if (*i > hi)
            error(f.path, "must be at most " + num(hi) + ", got " + num(*i));
        return *i;
    }

    std::int64_t required(std::initializer_list<std::string_view> keys, std::int64_t lo,
                          std::int64_t hi) const {
        const Field f = find(keys);
        if (!f) {
            std::string also;
            for (auto it = keys.begin() + 1; it != keys.end(); ++it)
                also += (also.empty() ? "" : ", ") + std::string(*it);
            error(*keys.begin(),
                  also.empty() ? "missing" : "missing (also looked for " + also + ")");
        }
        return integer(f, lo, hi);
    }

    std::optional<std::int64_t> optional(std::initializer_list<std::string_view> keys,
                                         std::int64_t lo, std::int64_t hi) const {
        const Field f = find(keys);
        if (!f)
            return std::nullopt;
        return integer(f, lo, hi);
    }

    std::optional<bool> boolean(std::string_view key) const {
        const Field f = find({key});
        if (!f)
            return std::nullopt;
        if (!f.value->isBool())
            error(f.path, "must be true or false, got " + describe(*f.value));
        return f.value->asBool();
    }

    std::string string(std::string_view key) const {
        const Field f = find({key});
        if (!f)
            return {};
        if (!f.value->isString())
            error(f.path, "must be a string, got " + describe(*f.value));
        return f.value->asString();
    }

    const Json& top() const { return m_top; }
    const std::string& source() const { return m_source; }

private:
    const Json& m_top;
    const Json* m_text = nullptr;
    std::string m_textKey;
    std::string m_source;
    Json::Object m_defaults;
    mutable std::set<std::string> m_defaultsUsed;
};

std::string baseName(std::string_view path) {
    const auto slash = path.find_last_of("/\\");
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "meta-llama/Meta-Llama-3-8B" -> "Meta-Llama-3-8B"; ".../Llama-3-8B/config.json" ->
// "Llama-3-8B"; "llama3.json" -> "llama3".
std::string modelNameFrom(const HfConfig& c) {
    std::string name;
    // Top level only: a nested text_config names the base LLM, not this model.
    const Json* f = c.top().find("_name_or_path");
    if (f && f->isString()) {
        std::string path = f->asString();
        while (!path.empty() && (path.back() == '/' || path.back() == '\\'))
            path.pop_back();
        name = baseName(path);
    }
    if (name.empty()) {
        std::string path = c.source();
        name = baseName(path);
        if (name.size() > 5 && lower(name.substr(name.size() - 5)) == ".json")
            name.resize(name.size() - 5);
        if (lower(name) == "config") {
            // config.json says nothing; its folder is usually the model's name.
            const auto slash = path.find_last_of("/\\");
            if (slash != std::string::npos && slash > 0) {
                const std::string dir = baseName(std::string_view(path).substr(0, slash));
                if (!dir.empty() && dir != "." && dir != "..")
                    name = dir;
            }
        }
    }
    return name.empty() ? std::string("imported") : name;
}

std::string idFrom(const std::string& name) {
    std::string id = lower(name);
    for (char& c : id)
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            c = '-';
    return id;
}

struct Dtypes {
    core::WeightDtype weight = core::WeightDtype::Bf16;
    core::KvDtype kv = core::KvDtype::Bf16;
    std::string note;
};

Dtypes dtypesFrom(const HfConfig& c, std::string_view modelType) {
    Dtypes d;
    HfConfig::Field f = c.find({"torch_dtype", "dtype"});
    if (!f) {
        d.note = "no torch_dtype in config: bf16 assumed. ";
    } else {
        if (!f.value->isString())
            c.error(f.path, "must be a string such as \"bfloat16\", got " + describe(*f.value));
        const std::string s = lower(f.value->asString());
        if (s == "float16" || s == "fp16" || s == "half") {
            d.weight = core::WeightDtype::Fp16;
            d.kv = core::KvDtype::Fp16;
        } else if (s == "bfloat16" || s == "bf16") {
            d.weight = core::WeightDtype::Bf16;
            d.kv = core::KvDtype::Bf16;
        } else if (s == "float32" || s == "fp32" || s == "float") {
            // vLLM's dtype "auto" does not serve float32 checkpoints in float32: it downcasts
            // to float16, Gemma 2/3 to bfloat16 (vllm/config.py, _get_and_verify_dtype).
            const bool gemma =
                modelType.substr(0, 6) == "gemma2" || modelType.substr(0, 6) == "gemma3";
            d.weight = gemma ? core::WeightDtype::Bf16 : core::WeightDtype::Fp16;
            d.kv = gemma ? core::KvDtype::Bf16 : core::KvDtype::Fp16;
            d.note = std::string("torch_dtype float32: served as ") + (gemma ? "bf16" : "fp16") +
                     " by vLLM's dtype auto. ";
        } else {
            c.error(f.path, "unsupported dtype \"" + f.value->asString() +
                                "\" (expected float16, bfloat16 or float32)");
        }
    }
    // Pre-quantized checkpoints: the weights are stored narrower than torch_dtype.
    const Json* q = c.top().find("quantization_config");
    if (q && q->isObject()) {
        const Json* method = q->find("quant_method");
        const std::string m = method && method->isString() ? lower(method->asString()) : "";
        const Json* bitsJson = q->find("bits");
        const std::int64_t bits = bitsJson ? bitsJson->asInt64().value_or(0) : 0;
        if (m == "fp8" || m == "fbgemm_fp8") {
            d.weight = core::WeightDtype::Fp8;
            d.note += "weights pre-quantized (fp8). ";
        } else if (m == "mxfp4") {
            d.weight = core::WeightDtype::Int4;
            d.note += "MXFP4 weights counted as int4 (4.25 bits). ";
        } else if (bits == 4) {
            d.weight = core::WeightDtype::Int4;
            d.note += "weights pre-quantized (" + m + ", 4 bits). ";
        } else if (bits == 8) {
            d.weight = core::WeightDtype::Int8;
            d.note += "weights pre-quantized (" + m + ", 8 bits). ";
        }
    }
    return d;
}

core::ModelSpec modelFromHf(const Json& doc, const std::string& src) {
    HfConfig c(doc, src);
    core::ModelSpec m;
    const std::string modelType = c.string("model_type");
    const bool falcon =
        modelType == "falcon" || modelType == "RefinedWeb" || modelType == "RefinedWebModel";
    if (modelType == "gemma3_text" || modelType == "gemma3") {
        c.setDefault("max_position_embeddings", Json(std::int64_t{131072}));
        c.setDefault("sliding_window_pattern", Json(6));
        c.setDefault("vocab_size", Json(std::int64_t{262208}));
    }

    const auto layers =
        c.required({"num_hidden_layers", "n_layer", "num_layers"}, 1, core::kMaxLayers);
    m.qHeads = static_cast<int>(
        c.required({"num_attention_heads", "n_head", "num_heads"}, 1, core::kMaxHeads));
    const HfConfig::Field hiddenField = c.find({"hidden_size", "n_embd", "d_model"});
    const std::int64_t hidden = hiddenField ? c.integer(hiddenField, 1, kMaxWidth) : 0;
    m.hiddenSize = hidden;

    // MLA (DeepSeek-V2/V3): one latent of kv_lora_rank + qk_rope_head_dim per token and layer.
    const auto lora = c.optional({"kv_lora_rank"}, 1, core::kMaxHeadDim);
    std::int64_t rope = 0;
    std::int64_t nope = 0;
    std::int64_t vHead = 0;
    if (lora) {
        rope = c.required({"qk_rope_head_dim"}, 0, core::kMaxHeadDim);
        nope = c.optional({"qk_nope_head_dim"}, 0, core::kMaxHeadDim).value_or(0);
        vHead = c.optional({"v_head_dim"}, 1, core::kMaxHeadDim).value_or(nope);
        m.kvLoraRank = static_cast<int>(*lora);
        m.qkRopeHeadDim = static_cast<int>(rope);
    }

    // head_dim: explicit first (Gemma-2-9B: 256, not hidden/heads = 224), REFERENCE.md 1.
    if (const auto hd = c.optional({"head_dim"}, 1, core::kMaxHeadDim)) {
        m.headDim = static_cast<int>(*hd);
    } else if (lora && nope + rope > 0) {
        m.headDim = static_cast<int>(nope + rope);
    } else {
        if (!hiddenField)
            c.error("hidden_size", "missing (needed to derive head_dim, which is absent too)");
        if (hidden % m.qHeads != 0)
            c.error(hiddenField.path, num(hidden) + " is not divisible by num_attention_heads " +
                                          num(m.qHeads) + " (and no head_dim is given)");
        const std::int64_t hd = hidden / m.qHeads;
        if (hd > core::kMaxHeadDim)
            c.error(hiddenField.path,
                    "gives head_dim " + num(hd) + ", more than " + num(core::kMaxHeadDim));
        m.headDim = static_cast<int>(hd);
    }

    // KV heads (REFERENCE.md 1): Falcon's new_decoder_architecture uses num_kv_heads;
    // multi_query means one KV head (HF's FalconConfig defaults multi_query to true);
    // otherwise num_key_value_heads, absent meaning MHA.
    // The legacy "RefinedWeb" type (the first Falcon-40B upload) is the new architecture.
    const bool newDecoder =
        c.boolean("new_decoder_architecture").value_or(modelType == "RefinedWeb");
    const bool multiQuery = c.boolean("multi_query").value_or(falcon);
    std::string kvField = "num_key_value_heads";
    std::int64_t kv = m.qHeads;
    if (newDecoder) {
        const HfConfig::Field f = c.find({"num_kv_heads", "n_head_kv", "num_key_value_heads"});
        kvField = f.path;
        if (f)
            kv = c.integer(f, 1, core::kMaxHeads);
    } else if (multiQuery && !lora) {
        kv = 1;
        kvField = "multi_query";
    } else {
        const HfConfig::Field f =
            c.find({"num_key_value_heads", "num_kv_heads", "multi_query_group_num"});
        kvField = f.path;
        if (f)
            kv = c.integer(f, 1, core::kMaxHeads);
    }
    if (kv > m.qHeads)
        c.error(kvField, num(kv) + " KV heads exceed num_attention_heads " + num(m.qHeads));
    if (m.qHeads % kv != 0)
        c.error(kvField, "num_attention_heads " + num(m.qHeads) + " is not divisible by " +
                             num(kv) + " KV heads");
    m.kvHeads = static_cast<int>(kv);

    // Layer kinds.
    m.layers.resize(static_cast<std::size_t>(layers));
    if (lora) {
        // DeepSeek: every layer, the first dense ones included, attends with MLA.
        for (auto& l : m.layers)
            l.kind = core::LayerKind::Mla;
    } else {
        const HfConfig::Field windowField = c.find({"sliding_window"});
        std::optional<std::int64_t> window;
        if (windowField)
            window = c.integer(windowField, 1, core::kMaxContext);
        const HfConfig::Field maxWindowLayers = c.find({"max_window_layers"});
        const bool qwen = modelType.substr(0, 4) == "qwen";
        // Qwen2 ships sliding_window with use_sliding_window false (HF Qwen2Config default):
        // then no layer slides.
        const bool useSliding =
            c.boolean("use_sliding_window").value_or(!(qwen || maxWindowLayers));
        const auto slide = [&](std::size_t i) {
            m.layers[i].kind = core::LayerKind::Sliding;
            m.layers[i].window = *window;
        };
        const HfConfig::Field types = c.find({"layer_types"});
        if (types) {
            if (!types.value->isArray())
                c.error(types.path, "must be an array, got " + describe(*types.value));
            const auto& arr = types.value->asArray();
            if (arr.size() != m.layers.size())
                c.error(types.path, "has " + num(static_cast<std::int64_t>(arr.size())) +
                                        " entries but there are " + num(layers) + " layers");
            for (std::size_t i = 0; i < arr.size(); ++i) {
                const std::string t = arr[i].isString() ? arr[i].asString() : std::string();
                if (t == "sliding_attention") {
                    if (!window)
                        c.error("sliding_window", "missing, but layer_types has sliding layers");
                    slide(i);
                } else if (t != "full_attention") {
                    c.error(types.path + "[" + num(static_cast<std::int64_t>(i)) + "]",
                            "unsupported layer type " + describe(arr[i]));
                }
            }
        } else if (window && useSliding) {
            const auto pattern = c.optional({"sliding_window_pattern"}, 1, core::kMaxLayers);
            const auto firstSliding =
                maxWindowLayers ? c.integer(maxWindowLayers, 0, core::kMaxLayers) : 0;
            for (std::size_t i = 0; i < m.layers.size(); ++i) {
                if (pattern) {
                    // Gemma-3: every Nth layer is global, the others slide.
                    if ((i + 1) % static_cast<std::size_t>(*pattern) != 0)
                        slide(i);
                } else if (modelType == "gemma2") {
                    // Gemma-2 alternates, layer 0 sliding (HF Gemma2: not layer_idx % 2).
                    if (i % 2 == 0)
                        slide(i);
                } else if (static_cast<std::int64_t>(i) >= firstSliding) {
                    // Qwen2: layers from max_window_layers on slide; Mistral: all layers.
                    slide(i);
                }
            }
        }
    }

    // Context.
    if (const auto ctx = c.optional(
            {"max_position_embeddings", "n_positions", "seq_length", "max_sequence_length"}, 1,
            core::kMaxContext)) {
        m.maxContext = *ctx;
    } else if (falcon) {
        m.maxContext = 2048; // HF FalconConfig's default; Falcon's configs omit it
        m.notes += "max context 2048 (FalconConfig default; not in config). ";
    } else {
        c.error("max_position_embeddings", "missing (also looked for n_positions, seq_length, "
                                           "max_sequence_length)");
    }

    const Dtypes d = dtypesFrom(c, modelType);
    m.weightDtype = d.weight;
    m.nativeKvDtype = d.kv;
    m.notes += d.note;

    // Parameters: config.json does not carry them, so estimate from the geometry (the ledger
    // needs them for the weights). Doubles stay exact below 2^53, far above kMaxParams.
    {
        const double h =
            static_cast<double>(hidden > 0 ? hidden : std::int64_t{m.qHeads} * m.headDim);
        const double q = m.qHeads;
        const double hd = m.headDim;
        const auto vocab = c.optional({"vocab_size", "padded_vocab_size"}, 0, kMaxWidth);
        const bool tied = c.boolean("tie_word_embeddings").value_or(true); // HF default
        const bool gatedMlp = !falcon && !c.find({"n_embd"});
        auto inter = c.optional({"intermediate_size", "ffn_hidden_size", "n_inner"}, 0, kMaxWidth);
        if (!inter && !gatedMlp)
            inter = static_cast<std::int64_t>(4 * h); // Falcon / GPT-2 default: 4 x hidden
        const auto experts =
            c.optional({"num_local_experts", "num_experts", "n_routed_experts"}, 0, 1 << 20);
        const auto expertInter = c.optional({"moe_intermediate_size"}, 0, kMaxWidth);
        const auto shared = c.optional({"n_shared_experts"}, 0, 1 << 20);
        const auto sharedInter = c.optional({"shared_expert_intermediate_size"}, 0, kMaxWidth);
        const auto denseFirst = c.optional({"first_k_dense_replace"}, 0, core::kMaxLayers);

        double attention = 0;
        if (lora) {
            const auto qLora = c.optional({"q_lora_rank"}, 1, kMaxWidth);
            const double qk = static_cast<double>(nope + rope);
            attention +=
                qLora ? h * static_cast<double>(*qLora) + static_cast<double>(*qLora) * q * qk
                      : h * q * qk;
            attention += h * static_cast<double>(*lora + rope) +
                         static_cast<double>(*lora) * q * static_cast<double>(nope + vHead);
            attention += q * static_cast<double>(vHead) * h;
        } else {
            attention = 2 * h * q * hd + 2 * h * static_cast<double>(kv) * hd;
        }
        const double mlpFactor = gatedMlp ? 3 : 2;
        const double dense = inter ? mlpFactor * h * static_cast<double>(*inter) : 0;
        double moe = dense;
        if (experts && *experts > 0) {
            const double width = static_cast<double>(expertInter.value_or(inter.value_or(0)));
            moe = static_cast<double>(*experts) * mlpFactor * h * width +
                  h * static_cast<double>(*experts); // experts + router
            moe += static_cast<double>(shared.value_or(0)) * mlpFactor * h * width;
            if (sharedInter)
                moe += mlpFactor * h * static_cast<double>(*sharedInter);
        }
        const double denseLayers =
            experts && *experts > 0 ? static_cast<double>(std::min(denseFirst.value_or(0), layers))
                                    : static_cast<double>(layers);
        const double embeddings = static_cast<double>(vocab.value_or(0)) * h * (tied ? 1 : 2);
        const double total = embeddings + static_cast<double>(layers) * attention +
                             denseLayers * dense +
                             (static_cast<double>(layers) - denseLayers) * moe;
        if (!(total <= static_cast<double>(core::kMaxParams)))
            c.error("num_hidden_layers", "the model would have more than 100T parameters");
        m.params = static_cast<std::int64_t>(std::llround(total));
        m.notes += "params estimated from the config geometry (embeddings, attention, MLP";
        m.notes += experts ? "/experts" : "";
        m.notes += "; norms and biases not counted)";
        if (!vocab)
            m.notes += "; vocab_size missing, embeddings not counted";
        if (!inter)
            m.notes += "; intermediate_size missing, MLP not counted";
        m.notes += ". ";
    }

    if (!c.defaultsUsed().empty()) {
        std::string used;
        for (const auto& k : c.defaultsUsed())
            used += (used.empty() ? "" : ", ") + k;
        m.notes += "HF config-class defaults used for " + used + ". ";
    }
    const std::string name = modelNameFrom(c);
    m.name = name;
    m.id = idFrom(name);
    // A hub path ("org/model") is what `vllm serve` takes; a local folder is not.
    if (const Json* f = c.top().find("_name_or_path"); f && f->isString()) {
        const std::string& path = f->asString();
        const auto slash = path.find('/');
        if (slash != std::string::npos && slash > 0 &&
            path.find('/', slash + 1) == std::string::npos && path[0] != '.')
            m.hfRepo = path;
    }
    m.family = "Imported";
    m.notes = "Imported from " + baseName(src) +
              (modelType.empty() ? std::string() : " (" + modelType + ")") + ". " + m.notes;
    while (!m.notes.empty() && m.notes.back() == ' ')
        m.notes.pop_back();

    if (auto e = m.validate())
        fail(src + ": " + *e);
    return m;
}

} // namespace

Result<core::ModelSpec> parseHfConfig(std::string_view json, std::string_view sourceName) {
    return guarded<core::ModelSpec>(sourceName, [&] {
        const std::string src(sourceName);
        const Json doc = parseDocument(json, src);
        return modelFromHf(doc, src);
    });
}

Result<core::ModelSpec> loadHfConfigFile(const std::string& path) {
    return guarded<core::ModelSpec>(path, [&]() -> Result<core::ModelSpec> {
        std::string text;
        if (auto why = readFile(path, text))
            return LoadError{path + ": " + *why};
        return parseHfConfig(text, path);
    });
}

} // namespace kvl::io
