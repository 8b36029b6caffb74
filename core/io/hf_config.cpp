// HuggingFace config.json import. The field names, aliases and defaults follow transformers'
// configuration classes (PretrainedConfig and LlamaConfig, MistralConfig, Qwen2Config,
// Gemma2Config / Gemma3TextConfig, FalconConfig, DeepseekV3Config, GptOssConfig), and vLLM's
// reading of them (vllm/config.py, vllm/transformers_utils/config.py). One small function per
// concern (layers, heads, head_dim, KV heads, layer kinds, context, dtypes, parameters, name),
// so a new field family is one more function.
#include "catalog.h"

#include "files.h"
#include "json_fields.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <set>

namespace kvl::io {

namespace {

constexpr std::int64_t kMaxWidth = std::int64_t{1} << 30; // hidden / intermediate / vocab

std::string num(std::int64_t v) {
    return std::to_string(v);
}

// The fields of one config.json. Multimodal configs nest the language model in text_config
// (Gemma-3, LLaVA) or llm_config (InternVL): fields are read from there first, then from the
// top level, then from the defaults of the model's HF config class.
class HfConfig {
public:
    HfConfig(const Field& top) : m_top(top) {
        for (const char* key : {"text_config", "llm_config"}) {
            const Field nested = top[key];
            if (!nested.present())
                continue;
            m_text = nested.object();
            break;
        }
    }

    // The first of `keys` that is in the language-model object or at the top (null counts as
    // there, and as not given), else a class default, else an absent field named keys[0].
    Field find(std::initializer_list<std::string_view> keys) const {
        for (std::string_view key : keys) {
            if (m_text) {
                if (Field f = (*m_text)[key]; f.exists())
                    return f;
            }
            if (Field f = m_top[key]; f.exists())
                return f;
        }
        for (std::string_view key : keys) {
            if (const auto it = m_defaults.find(std::string(key)); it != m_defaults.end()) {
                m_defaultsUsed.insert(it.key());
                return Field::synthetic(it.value(), m_top.file(), it.key());
            }
        }
        return m_top[*keys.begin()];
    }

    // Values the model's HF config class supplies when config.json leaves them out (the
    // published Gemma-3 config.json relies on Gemma3TextConfig's defaults).
    void setDefault(const std::string& key, nlohmann::json value) {
        m_defaults[key] = std::move(value);
    }
    const std::set<std::string>& defaultsUsed() const { return m_defaultsUsed; }

    // A required integer under any of `keys`: "num_hidden_layers: missing (also looked for
    // n_layer, num_layers)".
    std::int64_t required(std::initializer_list<std::string_view> keys, std::int64_t lo,
                          std::int64_t hi) const {
        const Field f = find(keys);
        if (!f) {
            std::string also;
            for (auto it = keys.begin() + 1; it != keys.end(); ++it)
                also += (also.empty() ? "" : ", ") + std::string(*it);
            f.fail(also.empty() ? "missing" : "missing (also looked for " + also + ")");
        }
        return f.integer(lo, hi);
    }

    std::optional<std::int64_t> optional(std::initializer_list<std::string_view> keys,
                                         std::int64_t lo, std::int64_t hi) const {
        return find(keys).optInteger(lo, hi);
    }

    std::optional<bool> boolean(std::string_view key) const { return find({key}).optBoolean(); }
    std::string string(std::string_view key) const { return find({key}).optString().value_or(""); }

    const Field& top() const { return m_top; }

private:
    Field m_top;
    std::optional<Field> m_text;
    nlohmann::json m_defaults = nlohmann::json::object();
    mutable std::set<std::string> m_defaultsUsed;
};

// What the KV-relevant geometry comes out as; the rest of ModelSpec is filled around it.
struct Geometry {
    std::int64_t layers = 0;
    std::int64_t hidden = 0;          // hidden_size, 0 when absent
    std::optional<std::int64_t> lora; // MLA kv_lora_rank
    std::int64_t rope = 0, nope = 0, vHead = 0;
    std::int64_t kvHeads = 0;
};

// MLA (DeepSeek-V2/V3, HF DeepseekV3Config): one latent of kv_lora_rank + qk_rope_head_dim per
// token and layer.
void readMla(const HfConfig& c, core::ModelSpec& m, Geometry& g) {
    g.lora = c.optional({"kv_lora_rank"}, 1, core::kMaxHeadDim);
    if (!g.lora)
        return;
    g.rope = c.required({"qk_rope_head_dim"}, 0, core::kMaxHeadDim);
    g.nope = c.optional({"qk_nope_head_dim"}, 0, core::kMaxHeadDim).value_or(0);
    g.vHead = c.optional({"v_head_dim"}, 1, core::kMaxHeadDim).value_or(g.nope);
    m.kvLoraRank = static_cast<int>(*g.lora);
    m.qkRopeHeadDim = static_cast<int>(g.rope);
}

// head_dim: explicit first (Gemma-2-9B: 256, not hidden / heads = 224), then MLA's
// qk_nope + qk_rope, then hidden_size / num_attention_heads (PretrainedConfig's convention).
void readHeadDim(const HfConfig& c, core::ModelSpec& m, const Geometry& g,
                 const Field& hiddenField) {
    if (const auto hd = c.optional({"head_dim"}, 1, core::kMaxHeadDim)) {
        m.headDim = static_cast<int>(*hd);
        return;
    }
    if (g.lora && g.nope + g.rope > 0) {
        m.headDim = static_cast<int>(g.nope + g.rope);
        return;
    }
    if (!hiddenField)
        hiddenField.fail("missing (needed to derive head_dim, which is absent too)");
    if (g.hidden % m.qHeads != 0)
        hiddenField.fail(num(g.hidden) + " is not divisible by num_attention_heads " +
                         num(m.qHeads) + " (and no head_dim is given)");
    const std::int64_t hd = g.hidden / m.qHeads;
    if (hd > core::kMaxHeadDim)
        hiddenField.fail("gives head_dim " + num(hd) + ", more than " + num(core::kMaxHeadDim));
    m.headDim = static_cast<int>(hd);
}

// KV heads: Falcon's new_decoder_architecture uses num_kv_heads; multi_query means one KV head
// (FalconConfig defaults multi_query to true); otherwise num_key_value_heads, absent meaning
// MHA (LlamaConfig: num_key_value_heads defaults to num_attention_heads). The legacy
// "RefinedWeb" type (the first Falcon-40B upload) is the new architecture.
void readKvHeads(const HfConfig& c, core::ModelSpec& m, Geometry& g, std::string_view modelType,
                 bool falcon) {
    const bool newDecoder =
        c.boolean("new_decoder_architecture").value_or(modelType == "RefinedWeb");
    const bool multiQuery = c.boolean("multi_query").value_or(falcon);
    Field where = c.find({"num_key_value_heads"});
    std::int64_t kv = m.qHeads;
    if (newDecoder) {
        where = c.find({"num_kv_heads", "n_head_kv", "num_key_value_heads"});
        if (where)
            kv = where.integer(1, core::kMaxHeads);
    } else if (multiQuery && !g.lora) {
        kv = 1;
        where = c.find({"multi_query"});
    } else {
        where = c.find({"num_key_value_heads", "num_kv_heads", "multi_query_group_num"});
        if (where)
            kv = where.integer(1, core::kMaxHeads);
    }
    if (kv > m.qHeads)
        where.fail(num(kv) + " KV heads exceed num_attention_heads " + num(m.qHeads));
    if (m.qHeads % kv != 0)
        where.fail("num_attention_heads " + num(m.qHeads) + " is not divisible by " + num(kv) +
                   " KV heads");
    m.kvHeads = static_cast<int>(kv);
    g.kvHeads = kv;
}

// layer_types (transformers >= 4.53: "full_attention" / "sliding_attention" per layer).
void readLayerTypes(const Field& types, const std::optional<std::int64_t>& window,
                    const HfConfig& c, core::ModelSpec& m) {
    const std::size_t n = types.size();
    if (n != m.layers.size())
        types.fail("has " + num(static_cast<std::int64_t>(n)) + " entries but there are " +
                   num(static_cast<std::int64_t>(m.layers.size())) + " layers");
    for (std::size_t i = 0; i < n; ++i) {
        const Field t = types.at(i);
        const std::string s = t.isString() ? t.string() : std::string();
        if (s == "sliding_attention") {
            if (!window)
                c.find({"sliding_window"}).fail("missing, but layer_types has sliding layers");
            m.layers[i].kind = core::LayerKind::Sliding;
            m.layers[i].window = *window;
        } else if (s != "full_attention") {
            t.fail("unsupported layer type " + t.describe());
        }
    }
}

// Which layers slide: layer_types when given; otherwise sliding_window with the model's rule
// (Gemma-3: every sliding_window_pattern-th layer is global; Gemma-2: even layers slide;
// Qwen2: layers from max_window_layers on, only with use_sliding_window; Mistral: all).
void readLayerKinds(const HfConfig& c, core::ModelSpec& m, const Geometry& g,
                    std::string_view modelType) {
    m.layers.resize(static_cast<std::size_t>(g.layers));
    if (g.lora) {
        // DeepSeek: every layer, the first dense ones included, attends with MLA.
        for (auto& l : m.layers)
            l.kind = core::LayerKind::Mla;
        return;
    }
    const auto window = c.optional({"sliding_window"}, 1, core::kMaxContext);
    const Field maxWindowLayers = c.find({"max_window_layers"});
    const bool qwen = modelType.substr(0, 4) == "qwen";
    // Qwen2 ships sliding_window with use_sliding_window false (Qwen2Config's default): then
    // no layer slides.
    const bool useSliding = c.boolean("use_sliding_window").value_or(!(qwen || maxWindowLayers));
    if (const Field types = c.find({"layer_types"})) {
        readLayerTypes(types, window, c, m);
        return;
    }
    if (!window || !useSliding)
        return;
    const auto pattern = c.optional({"sliding_window_pattern"}, 1, core::kMaxLayers);
    const auto firstSliding = maxWindowLayers.optInteger(0, core::kMaxLayers).value_or(0);
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        bool slides = false;
        if (pattern)
            slides = (i + 1) % static_cast<std::size_t>(*pattern) != 0;
        else if (modelType == "gemma2")
            slides = i % 2 == 0; // HF Gemma2: layer 0 slides
        else
            slides = static_cast<std::int64_t>(i) >= firstSliding;
        if (slides) {
            m.layers[i].kind = core::LayerKind::Sliding;
            m.layers[i].window = *window;
        }
    }
}

void readContext(const HfConfig& c, core::ModelSpec& m, bool falcon) {
    if (const auto ctx = c.optional(
            {"max_position_embeddings", "n_positions", "seq_length", "max_sequence_length"}, 1,
            core::kMaxContext)) {
        m.maxContext = *ctx;
    } else if (falcon) {
        m.maxContext = 2048; // FalconConfig's default; Falcon's configs omit it
        m.notes += "max context 2048 (FalconConfig default; not in config). ";
    } else {
        c.find({"max_position_embeddings"})
            .fail("missing (also looked for n_positions, seq_length, max_sequence_length)");
    }
}

struct Dtypes {
    core::WeightDtype weight = core::WeightDtype::Bf16;
    core::KvDtype kv = core::KvDtype::Bf16;
    std::string note;
};

// Pre-quantized checkpoints (quantization_config): the weights are stored narrower than
// torch_dtype.
void readQuantization(const HfConfig& c, Dtypes& d) {
    const Field q = c.top()["quantization_config"];
    if (!q.isObject())
        return;
    const std::string method = lowerAscii(q["quant_method"].optString().value_or(""));
    const std::int64_t bits = q["bits"].optInteger(0, 64).value_or(0);
    if (method == "fp8" || method == "fbgemm_fp8") {
        d.weight = core::WeightDtype::Fp8;
        d.note += "weights pre-quantized (fp8). ";
    } else if (method == "mxfp4") {
        d.weight = core::WeightDtype::Int4;
        d.note += "MXFP4 weights counted as int4 (4.25 bits). ";
    } else if (bits == 4) {
        d.weight = core::WeightDtype::Int4;
        d.note += "weights pre-quantized (" + method + ", 4 bits). ";
    } else if (bits == 8) {
        d.weight = core::WeightDtype::Int8;
        d.note += "weights pre-quantized (" + method + ", 8 bits). ";
    }
}

Dtypes readDtypes(const HfConfig& c, std::string_view modelType) {
    Dtypes d;
    const Field f = c.find({"torch_dtype", "dtype"});
    if (!f) {
        d.note = "no torch_dtype in config: bf16 assumed. ";
    } else {
        if (!f.isString())
            f.failExpected("a string such as \"bfloat16\"");
        const std::string s = lowerAscii(f.string());
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
            f.fail("unsupported dtype " + quoteText(f.string()) +
                   " (expected float16, bfloat16 or float32)");
        }
    }
    readQuantization(c, d);
    return d;
}

// config.json does not carry the parameter count: estimate it from the geometry (the ledger
// needs it for the weights). Doubles stay exact below 2^53, far above kMaxParams.
void estimateParams(const HfConfig& c, core::ModelSpec& m, const Geometry& g, bool falcon) {
    const double h =
        static_cast<double>(g.hidden > 0 ? g.hidden : std::int64_t{m.qHeads} * m.headDim);
    const double q = m.qHeads;
    const double hd = m.headDim;
    const auto vocab = c.optional({"vocab_size", "padded_vocab_size"}, 0, kMaxWidth);
    const bool tied = c.boolean("tie_word_embeddings").value_or(true); // PretrainedConfig
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
    if (g.lora) {
        const auto qLora = c.optional({"q_lora_rank"}, 1, kMaxWidth);
        const double qk = static_cast<double>(g.nope + g.rope);
        attention += qLora ? h * static_cast<double>(*qLora) + static_cast<double>(*qLora) * q * qk
                           : h * q * qk;
        attention += h * static_cast<double>(*g.lora + g.rope) +
                     static_cast<double>(*g.lora) * q * static_cast<double>(g.nope + g.vHead);
        attention += q * static_cast<double>(g.vHead) * h;
    } else {
        attention = 2 * h * q * hd + 2 * h * static_cast<double>(g.kvHeads) * hd;
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
    const double layers = static_cast<double>(g.layers);
    const double denseLayers = experts && *experts > 0
                                   ? static_cast<double>(std::min(denseFirst.value_or(0), g.layers))
                                   : layers;
    const double embeddings = static_cast<double>(vocab.value_or(0)) * h * (tied ? 1 : 2);
    const double total =
        embeddings + layers * attention + denseLayers * dense + (layers - denseLayers) * moe;
    if (!(total <= static_cast<double>(core::kMaxParams)))
        c.find({"num_hidden_layers"}).fail("the model would have more than 100T parameters");
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

std::string baseName(std::string_view path) {
    const auto slash = path.find_last_of("/\\");
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// "meta-llama/Meta-Llama-3-8B" -> "Meta-Llama-3-8B"; ".../Llama-3-8B/config.json" ->
// "Llama-3-8B"; "llama3.json" -> "llama3".
std::string modelNameFrom(const HfConfig& c) {
    std::string name;
    // Top level only: a nested text_config names the base LLM, not this model.
    const Field f = c.top()["_name_or_path"];
    if (f.isString()) {
        std::string path = f.string();
        while (!path.empty() && (path.back() == '/' || path.back() == '\\'))
            path.pop_back();
        name = baseName(path);
    }
    if (name.empty()) {
        const std::string path(c.top().file());
        name = baseName(path);
        if (name.size() > 5 && lowerAscii(name.substr(name.size() - 5)) == ".json")
            name.resize(name.size() - 5);
        if (lowerAscii(name) == "config") {
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
    std::string id = lowerAscii(name);
    for (char& ch : id)
        if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
            ch = '-';
    return id;
}

// A hub path ("org/model") is what `vllm serve` takes; a local folder is not.
std::string hfRepoFrom(const HfConfig& c) {
    const Field f = c.top()["_name_or_path"];
    if (!f.isString())
        return {};
    const std::string path = f.string();
    const auto slash = path.find('/');
    if (slash != std::string::npos && slash > 0 && path.find('/', slash + 1) == std::string::npos &&
        path[0] != '.')
        return path;
    return {};
}

core::ModelSpec modelFromHf(const Field& top) {
    HfConfig c(top);
    core::ModelSpec m;
    const std::string modelType = c.string("model_type");
    const bool falcon =
        modelType == "falcon" || modelType == "RefinedWeb" || modelType == "RefinedWebModel";
    if (modelType == "gemma3_text" || modelType == "gemma3") {
        c.setDefault("max_position_embeddings", std::int64_t{131072});
        c.setDefault("sliding_window_pattern", 6);
        c.setDefault("vocab_size", std::int64_t{262208});
    }

    Geometry g;
    g.layers = c.required({"num_hidden_layers", "n_layer", "num_layers"}, 1, core::kMaxLayers);
    m.qHeads = static_cast<int>(
        c.required({"num_attention_heads", "n_head", "num_heads"}, 1, core::kMaxHeads));
    const Field hiddenField = c.find({"hidden_size", "n_embd", "d_model"});
    g.hidden = hiddenField.optInteger(1, kMaxWidth).value_or(0);
    m.hiddenSize = g.hidden;

    readMla(c, m, g);
    readHeadDim(c, m, g, hiddenField);
    readKvHeads(c, m, g, modelType, falcon);
    readLayerKinds(c, m, g, modelType);
    readContext(c, m, falcon);
    const Dtypes d = readDtypes(c, modelType);
    m.weightDtype = d.weight;
    m.nativeKvDtype = d.kv;
    m.notes += d.note;
    estimateParams(c, m, g, falcon);

    if (!c.defaultsUsed().empty()) {
        std::string used;
        for (const auto& k : c.defaultsUsed())
            used += (used.empty() ? "" : ", ") + k;
        m.notes += "HF config-class defaults used for " + used + ". ";
    }
    m.name = modelNameFrom(c);
    m.id = idFrom(m.name);
    m.hfRepo = hfRepoFrom(c);
    m.family = "Imported";
    m.notes = "Imported from " + baseName(top.file()) +
              (modelType.empty() ? std::string() : " (" + modelType + ")") + ". " + m.notes;
    while (!m.notes.empty() && m.notes.back() == ' ')
        m.notes.pop_back();

    if (auto problem = m.validate())
        top.fail(*problem);
    return m;
}

} // namespace

Result<core::ModelSpec> parseHfConfig(std::string_view json, std::string_view sourceName) {
    return readDocument<core::ModelSpec>(json, sourceName, modelFromHf);
}

Result<core::ModelSpec> loadHfConfigFile(const std::string& path) {
    auto text = readFile(path);
    if (!text)
        return text.error();
    return parseHfConfig(text.value(), path);
}

} // namespace kvl::io
