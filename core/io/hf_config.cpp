// HuggingFace config.json import, mapped to core::ModelSpec the way vLLM reads each family.
// The field names, aliases and defaults follow transformers' configuration classes
// (PretrainedConfig and LlamaConfig, MistralConfig, Qwen2Config, Gemma2/3/4Config,
// FalconConfig, DeepseekV3Config, GptOssConfig, Llama4TextConfig, Qwen3NextConfig,
// NemotronHConfig, JambaConfig, GraniteMoeHybridConfig), and vLLM's reading of them
// (vllm/config/model.py, vllm/transformers_utils/model_arch_config_convertor.py, the model
// files under vllm/model_executor/models/). One small function per concern (layers, heads,
// head_dim, KV heads, layer kinds, per-layer overrides, state, MoE, context, dtypes,
// parameters, name), so a new field family is one more function.
#include "catalog.h"

#include "files.h"
#include "json_fields.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <initializer_list>
#include <set>

namespace kvl::io {

namespace {

using core::kMaxWidth;

std::string num(std::int64_t v) {
    return std::to_string(v);
}

bool startsWith(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// The fields of one config.json. Multimodal configs nest the language model in text_config
// (Gemma-3/4, Llama-4, Qwen3.5, LLaVA) or llm_config (InternVL): fields are read from there
// first, then from the top level, then from the defaults of the model's HF config class.
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
    // n_layer, num_layers)"; `why` is added to a "missing" message.
    std::int64_t required(std::initializer_list<std::string_view> keys, std::int64_t lo,
                          std::int64_t hi, std::string_view why = {}) const {
        const Field f = find(keys);
        if (!f) {
            std::string also;
            for (auto it = keys.begin() + 1; it != keys.end(); ++it)
                also += (also.empty() ? "" : ", ") + std::string(*it);
            std::string message = "missing";
            if (!why.empty())
                message += ", " + std::string(why);
            if (!also.empty())
                message += " (also looked for " + also + ")";
            f.fail(message);
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

// Which reading of the state layers applies (vLLM: each model file's
// get_mamba_state_shape_from_config).
enum class StateSource : std::uint8_t { None, GatedDeltaNet, NemotronH, Granite, Jamba };

// What the KV-relevant geometry comes out as; the rest of ModelSpec is filled around it.
struct Geometry {
    std::int64_t layers = 0;
    std::int64_t hidden = 0;          // hidden_size, 0 when absent
    std::optional<std::int64_t> lora; // MLA kv_lora_rank
    std::int64_t rope = 0, nope = 0, vHead = 0;
    std::int64_t kvHeads = 0;
    StateSource state = StateSource::None;
    std::string hybridPattern; // Nemotron-H's hybrid_override_pattern, "" when absent
};

// A per-layer field's value by what it is for in a message.
std::string layerWord(std::int64_t n) {
    return num(n) + (n == 1 ? " layer" : " layers");
}

// MLA (DeepSeek-V2/V3, HF DeepseekV3Config): one latent of kv_lora_rank + qk_rope_head_dim per
// token and layer. DeepSeek-V3.2's sparse attention (DSA) is announced by its indexer's
// index_topk (HF DeepseekV32Config; vLLM's deepseek_v32 model picks the sparse MLA backends).
void readMla(const HfConfig& c, core::ModelSpec& m, Geometry& g) {
    g.lora = c.optional({"kv_lora_rank"}, 1, core::kMaxHeadDim);
    if (!g.lora)
        return;
    g.rope = c.required({"qk_rope_head_dim"}, 0, core::kMaxHeadDim);
    g.nope = c.optional({"qk_nope_head_dim"}, 0, core::kMaxHeadDim).value_or(0);
    g.vHead = c.optional({"v_head_dim"}, 1, core::kMaxHeadDim).value_or(g.nope);
    m.kvLoraRank = static_cast<int>(*g.lora);
    m.qkRopeHeadDim = static_cast<int>(g.rope);
    m.qkNopeHeadDim = static_cast<int>(g.nope);
    if (c.optional({"index_topk"}, 1, core::kMaxContext)) {
        m.sparseMla = true;
        // The indexer keeps its own K cache of index_head_dim per token and layer (vLLM's
        // deepseek_v2.py Indexer); V3.2 ships 128.
        m.indexHeadDim =
            static_cast<int>(c.optional({"index_head_dim"}, 1, core::kMaxHeadDim).value_or(0));
    }
}

// head_dim, as vLLM's ModelConfig.get_head_size: explicit head_dim first (Gemma-2-9B: 256, not
// hidden / heads = 224; Nemotron-H and Zamba2 name it attention_head_dim, PLaMo
// hidden_size_per_head), then MLA's qk_nope + qk_rope, then hidden_size / num_attention_heads
// (PretrainedConfig's convention).
void readHeadDim(const HfConfig& c, core::ModelSpec& m, const Geometry& g,
                 const Field& hiddenField) {
    if (const auto hd = c.optional({"head_dim", "attention_head_dim", "hidden_size_per_head"}, 1,
                                   core::kMaxHeadDim)) {
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

// The window / chunk fields the layer kinds need.
struct Windows {
    std::optional<std::int64_t> sliding; // sliding_window
    std::optional<std::int64_t> chunk;   // attention_chunk_size (Llama-4)
};

void setSliding(core::LayerSpec& l, const HfConfig& c, const Windows& w, const char* who) {
    if (!w.sliding)
        c.find({"sliding_window"}).fail(std::string("missing, but ") + who + " has sliding layers");
    l.kind = core::LayerKind::Sliding;
    l.window = *w.sliding;
}

void setChunked(core::LayerSpec& l, const HfConfig& c, const Windows& w, const char* who) {
    if (!w.chunk)
        c.find({"attention_chunk_size"})
            .fail(std::string("missing, but ") + who + " has chunked layers");
    l.kind = core::LayerKind::Chunked;
    l.window = *w.chunk;
}

// layer_types (transformers >= 4.53), one entry per layer: full_attention / attention (Granite)
// -> full, sliding_attention -> sliding (window sliding_window), chunked_attention -> chunked
// (attention_chunk_size), linear_attention -> gated delta net state (Qwen3-Next, Qwen3.5:
// vllm/model_executor/models/qwen3_next.py), mamba -> Mamba2 state (Granite-4.0-H:
// granitemoehybrid.py).
void readLayerTypes(const Field& types, const Windows& w, const HfConfig& c, core::ModelSpec& m,
                    Geometry& g, std::string_view modelType) {
    const std::size_t n = types.size();
    if (n != m.layers.size())
        types.fail("has " + num(static_cast<std::int64_t>(n)) + " entries but there are " +
                   num(static_cast<std::int64_t>(m.layers.size())) + " layers");
    for (std::size_t i = 0; i < n; ++i) {
        const Field t = types.at(i);
        const std::string s = t.isString() ? t.string() : std::string();
        auto& l = m.layers[i];
        if (s == "full_attention" || s == "attention") {
            l.kind = core::LayerKind::Full;
        } else if (s == "sliding_attention") {
            setSliding(l, c, w, "layer_types");
        } else if (s == "chunked_attention") {
            setChunked(l, c, w, "layer_types");
        } else if (s == "linear_attention") {
            l.kind = core::LayerKind::State;
            g.state = StateSource::GatedDeltaNet;
        } else if (s == "mamba") {
            l.kind = core::LayerKind::State;
            g.state = modelType == "jamba" ? StateSource::Jamba : StateSource::Granite;
        } else {
            t.fail("unsupported layer type " + t.describe() +
                   " (expected full_attention, sliding_attention, chunked_attention, "
                   "linear_attention, mamba or attention)");
        }
    }
}

// Nemotron-H (vllm/model_executor/models/nemotron_h.py): one character per layer of
// hybrid_override_pattern: M a Mamba2 mixer, * attention, - an MLP and E a MoE block, the last
// two without any cache.
void readHybridPattern(const Field& f, core::ModelSpec& m, Geometry& g) {
    if (!f.isString())
        f.failExpected("a string such as \"M-M*-\"");
    const std::string p = f.string();
    if (p.size() != m.layers.size())
        f.fail("has " + num(static_cast<std::int64_t>(p.size())) + " characters but there are " +
               layerWord(static_cast<std::int64_t>(m.layers.size())));
    for (std::size_t i = 0; i < p.size(); ++i) {
        switch (p[i]) {
        case 'M':
            m.layers[i].kind = core::LayerKind::State;
            break;
        case '*':
            m.layers[i].kind = core::LayerKind::Full;
            break;
        case '-':
        case 'E':
            m.layers[i].kind = core::LayerKind::None;
            break;
        default:
            f.fail("unsupported layer character " + quoteText(p.substr(i, 1)) + " at " +
                   num(static_cast<std::int64_t>(i)) + " (expected M, *, - or E)");
        }
    }
    g.state = StateSource::NemotronH;
    g.hybridPattern = p;
}

// Which layers are what: Nemotron-H's hybrid_override_pattern, then layer_types, then each
// family's rule for configs without a per-layer list.
void readLayerKinds(const HfConfig& c, core::ModelSpec& m, Geometry& g,
                    std::string_view modelType) {
    m.layers.assign(static_cast<std::size_t>(g.layers), core::LayerSpec{});
    if (g.lora) {
        // DeepSeek: every layer, the first dense ones included, attends with MLA.
        for (auto& l : m.layers)
            l.kind = core::LayerKind::Mla;
        return;
    }
    Windows w;
    w.sliding = c.optional({"sliding_window"}, 1, core::kMaxContext);
    w.chunk = c.optional({"attention_chunk_size"}, 1, core::kMaxContext);
    if (const Field p = c.find({"hybrid_override_pattern"})) {
        readHybridPattern(p, m, g);
        return;
    }
    const Field maxWindowLayers = c.find({"max_window_layers"});
    const bool qwen = startsWith(modelType, "qwen");
    // Qwen2 ships sliding_window with use_sliding_window false (Qwen2Config's default): then
    // no layer slides.
    const bool useSliding = c.boolean("use_sliding_window").value_or(!(qwen || maxWindowLayers));
    if (const Field types = c.find({"layer_types"})) {
        readLayerTypes(types, w, c, m, g, modelType);
        return;
    }
    const std::size_t n = m.layers.size();
    // Jamba (HF JambaConfig.layers_block_type): attention where i % attn_layer_period ==
    // attn_layer_offset, Mamba (v1) elsewhere.
    if (const Field period = c.find({"attn_layer_period"}); period || modelType == "jamba") {
        const std::int64_t p = c.required({"attn_layer_period"}, 1, core::kMaxLayers);
        const Field offsetField = c.find({"attn_layer_offset"});
        const std::int64_t offset = c.required({"attn_layer_offset"}, 0, core::kMaxLayers);
        if (offset >= p)
            offsetField.fail(num(offset) + " is not below attn_layer_period " + num(p));
        for (std::size_t i = 0; i < n; ++i)
            m.layers[i].kind = static_cast<std::int64_t>(i) % p == offset ? core::LayerKind::Full
                                                                          : core::LayerKind::State;
        g.state = StateSource::Jamba;
        return;
    }
    // Gated delta net hybrids without layer_types. vLLM's Qwen3NextConfig
    // (vllm/transformers_utils/configs/qwen3_next.py) hard-codes every 4th layer full,
    // (i + 1) % 4 == 0, whatever full_attention_interval says; Qwen3.5
    // (transformers_utils/configs/qwen3_5.py) and others use full_attention_interval,
    // default 4.
    if (c.find({"linear_num_value_heads"}) || modelType == "qwen3_next") {
        std::int64_t interval = 4;
        if (modelType != "qwen3_next")
            interval = c.optional({"full_attention_interval"}, 1, core::kMaxLayers).value_or(4);
        else
            (void)c.optional({"full_attention_interval"}, 1, core::kMaxLayers); // checked only
        for (std::size_t i = 0; i < n; ++i)
            m.layers[i].kind = (static_cast<std::int64_t>(i) + 1) % interval == 0
                                   ? core::LayerKind::Full
                                   : core::LayerKind::State;
        g.state = StateSource::GatedDeltaNet;
        return;
    }
    // Llama-4 (vllm/model_executor/models/llama4.py): a layer with no_rope_layers[i] == 0 is a
    // NoPE layer with full attention; the others use chunked local attention of
    // attention_chunk_size. An absent or empty no_rope_layers is derived as transformers'
    // Llama4TextConfig does: int((i + 1) % no_rope_layer_interval != 0), interval 4.
    if (const Field noRope = c.find({"no_rope_layers"}); w.chunk || noRope) {
        std::vector<bool> nope(n, false);
        const std::size_t listed = noRope ? noRope.size() : 0;
        if (listed == 0) {
            const std::int64_t interval =
                c.optional({"no_rope_layer_interval"}, 1, core::kMaxLayers).value_or(4);
            for (std::size_t i = 0; i < n; ++i)
                nope[i] = (static_cast<std::int64_t>(i) + 1) % interval == 0;
        } else {
            if (listed != n)
                noRope.fail("has " + num(static_cast<std::int64_t>(listed)) +
                            " entries but there are " + layerWord(static_cast<std::int64_t>(n)));
            for (std::size_t i = 0; i < n; ++i)
                nope[i] = noRope.at(i).integer(0, 1) == 0;
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (nope[i])
                m.layers[i].kind = core::LayerKind::Full;
            else if (w.chunk)
                setChunked(m.layers[i], c, w, "no_rope_layers");
        }
        return;
    }
    if (!w.sliding || !useSliding)
        return;
    // gpt-oss (vllm/model_executor/models/gpt_oss.py): sliding_window on even layers.
    const auto pattern = c.optional({"sliding_window_pattern"}, 1, core::kMaxLayers);
    const auto firstSliding = maxWindowLayers.optInteger(0, core::kMaxLayers).value_or(0);
    for (std::size_t i = 0; i < n; ++i) {
        bool slides = false;
        if (pattern)
            slides = (i + 1) % static_cast<std::size_t>(*pattern) != 0; // Gemma-3, older saves
        else if (modelType == "gemma2" || modelType == "gpt_oss")
            slides = i % 2 == 0; // HF Gemma2 / vLLM gpt-oss: layer 0 slides
        else
            slides = static_cast<std::int64_t>(i) >= firstSliding;
        if (slides) {
            m.layers[i].kind = core::LayerKind::Sliding;
            m.layers[i].window = *w.sliding;
        }
    }
}

// Gemma-4 (vllm/model_executor/models/gemma4.py): full layers attend with global_head_dim and,
// with attention_k_eq_v, num_global_key_value_heads; the cache still stores K and V for them
// (head_size_v = head_size). The last num_kv_shared_layers layers read an earlier layer's KV
// (kv_sharing_target_layer_name); they keep their kind, marked kvShared, since whether they
// hold a cache depends on the vLLM release (core/vllm_version.h).
void readLayerOverrides(const HfConfig& c, core::ModelSpec& m) {
    const auto globalHead = c.optional({"global_head_dim"}, 1, core::kMaxHeadDim);
    const Field globalKvField = c.find({"num_global_key_value_heads"});
    const auto globalKv = globalKvField.optInteger(1, core::kMaxHeads);
    const bool kEqV = c.boolean("attention_k_eq_v").value_or(false);
    if (globalKv && kEqV) {
        if (*globalKv > m.qHeads || m.qHeads % *globalKv != 0)
            globalKvField.fail("num_attention_heads " + num(m.qHeads) + " is not divisible by " +
                               num(*globalKv) + " KV heads");
    }
    for (auto& l : m.layers) {
        if (l.kind != core::LayerKind::Full)
            continue;
        if (globalHead && *globalHead != m.headDim)
            l.headDim = static_cast<int>(*globalHead);
        if (globalKv && kEqV && *globalKv != m.kvHeads)
            l.kvHeads = static_cast<int>(*globalKv);
    }
    if (const auto shared = c.optional({"num_kv_shared_layers"}, 0, core::kMaxLayers)) {
        if (*shared >= m.numLayers())
            c.find({"num_kv_shared_layers"})
                .fail(num(*shared) + " leaves no layer of the " + layerWord(m.numLayers()) +
                      " to hold a cache");
        for (std::size_t i = m.layers.size() - static_cast<std::size_t>(*shared);
             i < m.layers.size(); ++i)
            m.layers[i].kvShared = true;
    }
}

// A Mamba state dtype as vLLM's MambaDType takes it (vllm/config/cache.py): auto (the model
// dtype; nullopt), float32, float16, bfloat16.
std::optional<core::KvDtype> stateDtype(const Field& f) {
    if (!f)
        return std::nullopt;
    const std::string s = f.isString() ? lowerAscii(f.string()) : std::string();
    if (s == "auto")
        return std::nullopt;
    if (s == "float32")
        return core::KvDtype::Fp32;
    if (s == "float16")
        return core::KvDtype::Fp16;
    if (s == "bfloat16")
        return core::KvDtype::Bf16;
    f.failOneOf({"auto", "float32", "float16", "bfloat16"});
}

int stateInt(const HfConfig& c, std::initializer_list<std::string_view> keys, std::int64_t lo,
             std::int64_t hi, std::string_view why) {
    return static_cast<int>(c.required(keys, lo, hi, why));
}

// The recurrent layers' state geometry, each family as its vLLM model file passes it to
// MambaStateShapeCalculator (vllm/model_executor/layers/mamba/mamba_utils.py), and the SSM
// state dtype vLLM's model config classes set (vllm/model_executor/models/config.py).
void readState(const HfConfig& c, core::ModelSpec& m, const Geometry& g,
               std::string_view modelType) {
    if (g.state == StateSource::None || m.countLayers(core::LayerKind::State) == 0)
        return;
    core::StateSpec st;
    constexpr std::string_view kWhy = "but the model has state layers";
    switch (g.state) {
    case StateSource::GatedDeltaNet: {
        // qwen3_next.py / qwen3_5.py: gated_delta_net_state_shape(linear_num_key_heads,
        // linear_num_value_heads, linear_key_head_dim, linear_value_head_dim,
        // linear_conv_kernel_dim).
        constexpr std::string_view why = "but the model has linear-attention layers";
        st.kind = core::StateKind::GatedDeltaNet;
        st.numKeyHeads = stateInt(c, {"linear_num_key_heads"}, 1, core::kMaxHeads, why);
        st.numValueHeads = stateInt(c, {"linear_num_value_heads"}, 1, core::kMaxHeads, why);
        st.keyHeadDim = stateInt(c, {"linear_key_head_dim"}, 1, core::kMaxHeadDim, why);
        st.valueHeadDim = stateInt(c, {"linear_value_head_dim"}, 1, core::kMaxHeadDim, why);
        st.convKernel = stateInt(c, {"linear_conv_kernel_dim"}, 1, 1024, why);
        // vLLM's GatedDeltaNet (vllm/model_executor/models/qwen3_next.py,
        // fix_query_key_value_ordering) splits the projection per key head and repeats each
        // key head over num_v_heads // num_k_heads value heads: the value heads must be a
        // multiple of the key heads.
        if (st.numValueHeads % st.numKeyHeads != 0)
            c.find({"linear_num_value_heads"})
                .fail("must be a multiple of linear_num_key_heads (" + num(st.numKeyHeads) +
                      "), got " + num(st.numValueHeads));
        // Qwen3_5ForConditionalGenerationConfig: mamba_ssm_dtype sets the SSM state's dtype
        // (the released configs say float32); Qwen3-Next has no such override.
        if (startsWith(modelType, "qwen3_5"))
            st.ssmDtype = stateDtype(c.find({"mamba_ssm_dtype"}));
        break;
    }
    case StateSource::NemotronH: {
        // nemotron_h.py: mamba2_state_shape with intermediate = mamba_num_heads x
        // mamba_head_dim (not expand x hidden).
        st.kind = core::StateKind::Mamba2;
        st.numHeads = stateInt(c, {"mamba_num_heads", "mamba_n_heads"}, 1, core::kMaxHeads, kWhy);
        st.headDim = stateInt(c, {"mamba_head_dim", "mamba_d_head"}, 1, core::kMaxHeadDim, kWhy);
        st.intermediateSize = std::int64_t{st.numHeads} * st.headDim;
        st.nGroups = stateInt(c, {"n_groups", "mamba_n_groups"}, 1, core::kMaxHeads, kWhy);
        st.stateSize = stateInt(c, {"ssm_state_size", "mamba_d_state"}, 1, core::kMaxHeadDim, kWhy);
        st.convKernel = stateInt(c, {"conv_kernel", "mamba_d_conv"}, 1, 1024, kWhy);
        st.chunkSize = static_cast<int>(
            c.optional({"chunk_size", "mamba_chunk_size"}, 1, core::kMaxContext).value_or(0));
        // NemotronHForCausalLMConfig: the config's mamba_ssm_cache_dtype, else vLLM's default
        // for the release (core::effectiveSsmDtype).
        const Field dt = c.find({"mamba_ssm_cache_dtype"});
        if (dt)
            st.ssmDtype = stateDtype(dt);
        else
            st.ssmDtypeNemotronHDefault = true;
        break;
    }
    case StateSource::Granite: {
        // granitemoehybrid.py: mamba2_state_shape with intermediate = mamba_expand x hidden;
        // mamba_d_head "auto" is intermediate / mamba_n_heads (GraniteMoeHybridConfig).
        st.kind = core::StateKind::Mamba2;
        const std::int64_t expand = c.optional({"mamba_expand"}, 1, 64).value_or(2);
        if (g.hidden <= 0)
            c.find({"hidden_size"}).fail("missing (needed for the Mamba intermediate size)");
        st.intermediateSize = expand * g.hidden;
        st.numHeads = stateInt(c, {"mamba_n_heads", "mamba_num_heads"}, 1, core::kMaxHeads, kWhy);
        const Field dHead = c.find({"mamba_d_head", "mamba_head_dim"});
        if (dHead.isString() && dHead.string() == "auto") {
            if (st.intermediateSize % st.numHeads != 0)
                dHead.fail("auto, but the intermediate size " + num(st.intermediateSize) +
                           " is not divisible by mamba_n_heads " + num(st.numHeads));
            st.headDim = static_cast<int>(st.intermediateSize / st.numHeads);
        } else {
            st.headDim =
                stateInt(c, {"mamba_d_head", "mamba_head_dim"}, 1, core::kMaxHeadDim, kWhy);
        }
        st.nGroups = stateInt(c, {"mamba_n_groups", "n_groups"}, 1, core::kMaxHeads, kWhy);
        st.stateSize = stateInt(c, {"mamba_d_state", "ssm_state_size"}, 1, core::kMaxHeadDim, kWhy);
        st.convKernel = stateInt(c, {"mamba_d_conv", "conv_kernel"}, 1, 1024, kWhy);
        st.chunkSize = static_cast<int>(
            c.optional({"mamba_chunk_size", "chunk_size"}, 1, core::kMaxContext).value_or(0));
        break;
    }
    case StateSource::Jamba: {
        // jamba.py: mamba1_state_shape(intermediate = mamba_expand x hidden, mamba_d_state,
        // mamba_d_conv).
        st.kind = core::StateKind::Mamba1;
        const std::int64_t expand = c.required({"mamba_expand"}, 1, 64, kWhy);
        if (g.hidden <= 0)
            c.find({"hidden_size"}).fail("missing (needed for the Mamba intermediate size)");
        st.intermediateSize = expand * g.hidden;
        st.stateSize = stateInt(c, {"mamba_d_state"}, 1, core::kMaxHeadDim, kWhy);
        st.convKernel = stateInt(c, {"mamba_d_conv"}, 1, 1024, kWhy);
        break;
    }
    case StateSource::None:
        break;
    }
    if (g.state != StateSource::NemotronH && c.find({"mamba_ssm_cache_dtype"}))
        m.notes += "mamba_ssm_cache_dtype in the config is not read (vLLM reads it for "
                   "Nemotron-H only). ";
    m.state = st;
}

// MoE and MLP widths. Where the config has no moe_intermediate_size, intermediate_size is the
// experts' width (Mixtral, gpt-oss, Llama-4, whose dense layers use intermediate_size_mlp).
// Shared experts: n_shared_experts (DeepSeek, Nemotron-H), one where a
// shared_expert_intermediate_size is given (Qwen2-MoE, Qwen3-Next, Qwen3.5), and Llama-4's one
// shared expert in every MoE layer (HF Llama4TextMoe.shared_expert).
void readMoe(const HfConfig& c, core::ModelSpec& m, std::string_view modelType) {
    const auto experts =
        c.optional({"num_local_experts", "num_experts", "n_routed_experts"}, 0, core::kMaxExperts)
            .value_or(0);
    const auto inter =
        c.optional({"intermediate_size", "ffn_hidden_size", "n_inner"}, 0, kMaxWidth).value_or(0);
    const auto moeInter =
        c.optional({"moe_intermediate_size", "expert_intermediate_size"}, 0, kMaxWidth);
    m.intermediateSize = inter;
    // Experts per token with no routed experts is not a MoE vLLM can build (FusedMoE routes
    // top_k of num_experts): refuse it rather than read a dense model.
    if (experts == 0) {
        const Field topK = c.find({"num_experts_per_tok", "top_k_experts", "experts_per_token"});
        if (topK.exists() && !topK.isNull() &&
            topK.optInteger(0, core::kMaxExperts).value_or(0) > 0)
            topK.fail("routes " + num(*topK.optInteger(0, core::kMaxExperts)) +
                      " experts per token, but the model has no routed experts (" +
                      std::string(
                          c.find({"num_local_experts", "num_experts", "n_routed_experts"}).exists()
                              ? "an expert count of 0"
                              : "no expert count") +
                      ")");
    }
    if (experts > 0) {
        m.numExperts = static_cast<int>(experts);
        const Field topK = c.find({"num_experts_per_tok", "top_k_experts", "experts_per_token"});
        m.expertsPerToken = static_cast<int>(topK.optInteger(0, experts).value_or(0));
        if (moeInter) {
            m.moeIntermediateSize = *moeInter;
        } else {
            m.moeIntermediateSize = inter;
            m.intermediateSize = c.optional({"intermediate_size_mlp"}, 0, kMaxWidth).value_or(0);
        }
        const auto shared =
            c.optional({"n_shared_experts", "num_shared_experts"}, 0, core::kMaxExperts);
        const auto sharedInter =
            c.optional({"shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"},
                       0, kMaxWidth);
        if (shared)
            m.numSharedExperts = static_cast<int>(*shared);
        else if (sharedInter && *sharedInter > 0)
            m.numSharedExperts = 1;
        else if (startsWith(modelType, "llama4"))
            m.numSharedExperts = 1;
        if (sharedInter && *sharedInter > 0 && *sharedInter != m.moeIntermediateSize)
            m.notes += "shared expert width " + num(*sharedInter) + " (routed experts " +
                       num(m.moeIntermediateSize) + "). ";
        m.firstDenseLayers = static_cast<int>(
            c.optional({"first_k_dense_replace"}, 0, core::kMaxLayers).value_or(0));
        if (m.firstDenseLayers > m.numLayers())
            c.find({"first_k_dense_replace"})
                .fail(num(m.firstDenseLayers) + " exceeds the " + layerWord(m.numLayers()));
    }
    m.vocabSize = c.optional({"vocab_size", "padded_vocab_size"}, 0, kMaxWidth).value_or(0);
    m.tieWordEmbeddings = c.boolean("tie_word_embeddings").value_or(true); // PretrainedConfig
}

// rope_scaling / rope_parameters as vLLM's _get_and_verify_max_len applies them
// (vllm/config/model.py): skipped for Gemma-3, whose max_position_embeddings is already the
// scaled length; for every entry (a flat dict, or one per layer type as Gemma-4 has) whose
// rope_type (legacy "type"; "su" is longrope, "mrope" default) is not longrope or llama3, the
// entry's factor replaces the running one, and YaRN restarts from its
// original_max_position_embeddings; the length is then int(derived x factor). With longrope,
// vLLM's default max_model_len is original_max_position_embeddings instead.
void applyRopeScaling(const HfConfig& c, core::ModelSpec& m, std::string_view modelType,
                      std::string_view topType) {
    Field rope = c.find({"rope_parameters"});
    if (!rope)
        rope = c.find({"rope_scaling"});
    if (!rope)
        return;
    rope.object();
    if (modelType.find("gemma3") != std::string_view::npos ||
        topType.find("gemma3") != std::string_view::npos)
        return;
    std::vector<Field> entries;
    const auto& members = rope.json().get_ref<const nlohmann::json::object_t&>();
    bool nested = !members.empty() && !rope["rope_type"].exists() && !rope["type"].exists();
    for (const auto& [key, value] : members)
        nested = nested && value.is_object();
    if (nested) {
        for (const auto& [key, value] : members)
            entries.push_back(rope[key]);
    } else {
        entries.push_back(rope);
    }
    std::int64_t derived = m.maxContext;
    std::optional<double> factor = 1.0;
    bool longrope = false;
    for (const Field& rp : entries) {
        const Field typeField = rp["rope_type"].exists() ? rp["rope_type"] : rp["type"];
        std::string type = typeField ? lowerAscii(typeField.string()) : std::string("default");
        if (type == "su")
            type = "longrope";
        if (type == "mrope")
            type = "default";
        if (type == "longrope") {
            longrope = true;
            continue;
        }
        if (type == "llama3")
            continue;
        // vLLM's get_rope (vllm/model_executor/layers/rotary_embedding/__init__.py) builds one
        // rotary embedding per scaling type and raises "Unknown RoPE scaling type" for any
        // other: an unknown type is refused, never read as a plain factor.
        static constexpr std::array<std::string_view, 11> kKnown{
            "default", "linear",  "dynamic",    "ntk",          "yarn",  "deepseek_yarn",
            "llama4",  "mllama4", "dual_chunk", "proportional", "xdrope"};
        if (std::find(kKnown.begin(), kKnown.end(), type) == kKnown.end()) {
            std::string known = "longrope, llama3, mrope";
            for (const auto k : kKnown)
                known += ", " + std::string(k);
            typeField.fail("unknown RoPE scaling type '" + type + "' (vLLM's get_rope knows " +
                           known + ")");
        }
        if (const Field f = rp["factor"]; f.exists())
            factor = f.isNull() ? std::nullopt : std::optional<double>(f.numberAbove(0, 1e6));
        if (type == "yarn")
            derived = rp["original_max_position_embeddings"].integer(1, core::kMaxContext);
    }
    const double scaled = static_cast<double>(derived) * factor.value_or(1.0);
    if (!(scaled < static_cast<double>(core::kMaxContext) + 1))
        rope.fail("gives max_model_len " +
                  (scaled < 9e18 ? num(static_cast<std::int64_t>(scaled)) : formatNumber(scaled)) +
                  ", more than " + num(core::kMaxContext));
    std::int64_t length = static_cast<std::int64_t>(scaled); // Python's int(): truncation
    if (longrope)
        length =
            c.optional({"original_max_position_embeddings"}, 1, core::kMaxContext).value_or(length);
    if (length < 1)
        rope.fail("gives max_model_len " + num(length));
    if (length != m.maxContext)
        m.notes += "max context " + num(length) + " (max_position_embeddings " + num(m.maxContext) +
                   " with rope scaling, as vLLM derives it). ";
    m.maxContext = length;
}

// max_model_len as vLLM derives it (derive_max_model_len_and_key,
// vllm/transformers_utils/model_arch_config_convertor.py): the smallest of the length keys the
// config has, model_max_length overriding them; then rope scaling.
void readContext(const HfConfig& c, core::ModelSpec& m, bool falcon, std::string_view modelType,
                 std::string_view topType) {
    std::optional<std::int64_t> derived;
    for (std::string_view key :
         {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
          "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len"}) {
        if (const auto v = c.optional({key}, 1, core::kMaxContext))
            derived = derived ? std::min(*derived, *v) : *v;
    }
    if (const auto v = c.optional({"model_max_length"}, 1, core::kMaxContext))
        derived = *v;
    if (derived) {
        m.maxContext = *derived;
    } else if (falcon) {
        m.maxContext = 2048; // FalconConfig's default; Falcon's configs omit it
        m.notes += "max context 2048 (FalconConfig default; not in config). ";
    } else {
        c.find({"max_position_embeddings"})
            .fail("missing (also looked for n_positions, max_seq_len, seq_length, "
                  "max_sequence_length)");
    }
    applyRopeScaling(c, m, modelType, topType);
}

struct Dtypes {
    core::WeightDtype weight = core::WeightDtype::Bf16;
    core::KvDtype kv = core::KvDtype::Bf16;
    std::string note;
};

// A quantization scheme's weights: {"num_bits": 4, "type": "float"} (compressed-tensors
// config_groups, ModelOpt's hf_quant_config) -> fp4 (NVFP4), fp8, int4, int8.
std::optional<core::WeightDtype> schemeWeights(const Field& w) {
    if (!w.isObject())
        return std::nullopt;
    const auto bits = w["num_bits"].optInteger(1, 64);
    const std::string type = lowerAscii(w["type"].optString().value_or("int"));
    if (!bits)
        return std::nullopt;
    if (type == "float")
        return *bits == 8   ? std::optional(core::WeightDtype::Fp8)
               : *bits == 4 ? std::optional(core::WeightDtype::Fp4)
                            : std::nullopt;
    return *bits == 8   ? std::optional(core::WeightDtype::Int8)
           : *bits == 4 ? std::optional(core::WeightDtype::Int4)
                        : std::nullopt;
}

// config_groups: the narrowest weights of any group (a mixed checkpoint is counted at its
// smallest format, with a note).
std::optional<core::WeightDtype> configGroupsWeights(const Field& q, Dtypes& d) {
    const Field groups = q["config_groups"];
    if (!groups.isObject())
        return std::nullopt;
    std::optional<core::WeightDtype> best;
    bool mixed = false;
    const auto bitsOf = [](core::WeightDtype w) { return core::weightBytes(1000, w); };
    for (const auto& [key, value] : groups.json().get_ref<const nlohmann::json::object_t&>()) {
        const auto w = schemeWeights(groups[key]["weights"]);
        if (!w)
            continue;
        if (best && *best != *w)
            mixed = true;
        if (!best || bitsOf(*w) < bitsOf(*best))
            best = w;
    }
    if (mixed)
        d.note += "config_groups mix weight formats: the narrowest is counted. ";
    return best;
}

// A KV cache scheme in the checkpoint ({"num_bits": 8, "type": "float"}, or ModelOpt's
// kv_cache_quant_algo "FP8"): vLLM's kv-cache-dtype "auto" then stores fp8 (e4m3)
// (resolve_kv_cache_dtype_string in vllm/engine/arg_utils.py; Attention.__init__ for
// llm-compressor's kv_cache_scheme).
bool fp8KvScheme(const Field& q) {
    const Field scheme = q["kv_cache_scheme"];
    if (scheme.isObject() && scheme["num_bits"].optInteger(1, 64) == 8 &&
        lowerAscii(scheme["type"].optString().value_or("")) == "float")
        return true;
    const Field algo = q["kv_cache_quant_algo"];
    return algo.isString() && lowerAscii(algo.string()) == "fp8";
}

// Pre-quantized checkpoints (quantization_config): the weights are stored narrower than
// torch_dtype. vLLM's layouts per method are in vllm/model_executor/layers/quantization/.
void readQuantization(const HfConfig& c, Dtypes& d) {
    const Field q = c.find({"quantization_config"});
    if (!q)
        return;
    q.object();
    const std::string method = lowerAscii(q["quant_method"].optString().value_or(""));
    const std::int64_t bits = q["bits"].optInteger(0, 64).value_or(0);
    std::optional<core::WeightDtype> w;
    std::string what = method;
    if (method == "fp8" || method == "fbgemm_fp8") {
        w = core::WeightDtype::Fp8;
    } else if (method == "mxfp4" || method == "gpt_oss_mxfp4") {
        // gpt-oss: only the MoE experts are MXFP4 (modules_to_not_convert keeps attention,
        // router, embeddings and lm_head in bf16); the whole model is counted at 4.25 bits.
        w = core::WeightDtype::Fp4;
        d.note += "MXFP4 weights (gpt-oss: the experts only; attention, router and embeddings "
                  "stay bf16, counted as fp4 here). ";
    } else if (method == "compressed-tensors") {
        w = configGroupsWeights(q, d);
        if (const auto format = q["format"].optString())
            what += " " + *format;
        if (fp8KvScheme(q))
            d.kv = core::KvDtype::Fp8E4M3;
    } else if (startsWith(method, "modelopt")) {
        const std::string algo = lowerAscii(q["quant_algo"].optString().value_or(""));
        if (algo == "fp8")
            w = core::WeightDtype::Fp8;
        else if (algo == "nvfp4")
            w = core::WeightDtype::Fp4;
        else if (algo.find("int4") != std::string::npos || algo.find("w4a") != std::string::npos)
            w = core::WeightDtype::Int4;
        else
            w = configGroupsWeights(q, d);
        if (!algo.empty())
            what += " " + algo;
        if (fp8KvScheme(q))
            d.kv = core::KvDtype::Fp8E4M3;
    } else if (method == "bitsandbytes") {
        if (q["load_in_4bit"].optBoolean().value_or(false))
            w = core::WeightDtype::Int4;
        else if (q["load_in_8bit"].optBoolean().value_or(false))
            w = core::WeightDtype::Int8;
    } else if (bits == 4) { // awq, gptq and their marlin variants
        w = core::WeightDtype::Int4;
        what += ", 4 bits";
    } else if (bits == 8) {
        w = core::WeightDtype::Int8;
        what += ", 8 bits";
    }
    if (!w) {
        d.note += "quantization_config " +
                  (method.empty() ? std::string("without a method") : quoteText(method)) +
                  " not modelled: weights counted at the model dtype. ";
    } else {
        d.weight = *w;
        if (method != "mxfp4" && method != "gpt_oss_mxfp4")
            d.note += "weights pre-quantized (" + what + "), counted as " +
                      std::string(core::weightDtypeName(*w)) + ". ";
    }
    if (d.kv == core::KvDtype::Fp8E4M3)
        d.note += "the checkpoint's KV cache scheme is fp8: vLLM's auto stores fp8_e4m3. ";
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

// Parameters of one recurrent layer (projections and conv; norms and biases not counted).
double stateParams(const core::StateSpec& st, double h) {
    switch (st.kind) {
    case core::StateKind::GatedDeltaNet: {
        const double k = double(st.numKeyHeads) * st.keyHeadDim;
        const double v = double(st.numValueHeads) * st.valueHeadDim;
        // q, k, v, z, b, a in; out; the conv over q, k, v
        return h * (2 * k + 2 * v + 2.0 * st.numValueHeads) + v * h + (2 * k + v) * st.convKernel;
    }
    case core::StateKind::Mamba2: {
        const double in = double(st.intermediateSize);
        const double bc = 2.0 * st.nGroups * st.stateSize;
        return h * (2 * in + bc + st.numHeads) + in * h + (in + bc) * st.convKernel;
    }
    case core::StateKind::Mamba1:
    case core::StateKind::ShortConv: {
        const double in = double(st.intermediateSize);
        return h * 2 * in + in * h + in * st.convKernel;
    }
    }
    return 0;
}

// config.json does not carry the parameter count: estimate it from the geometry (the ledger
// needs it for the weights). Doubles stay exact below 2^53, far above kMaxParams.
void estimateParams(const HfConfig& c, core::ModelSpec& m, const Geometry& g, bool falcon) {
    const double h =
        static_cast<double>(g.hidden > 0 ? g.hidden : std::int64_t{m.qHeads} * m.headDim);
    const double q = m.qHeads;
    const auto vocab = c.optional({"vocab_size", "padded_vocab_size"}, 0, kMaxWidth);
    const bool tied = c.boolean("tie_word_embeddings").value_or(true); // PretrainedConfig
    // Nemotron-H's MLPs are relu2 (up and down only), as GPT-2's and Falcon's.
    const bool gatedMlp = !falcon && !c.find({"n_embd"}) && g.hybridPattern.empty();
    auto inter = c.optional({"intermediate_size", "ffn_hidden_size", "n_inner"}, 0, kMaxWidth);
    if (!inter && !gatedMlp)
        inter = static_cast<std::int64_t>(4 * h); // Falcon / GPT-2 default: 4 x hidden
    const auto experts =
        c.optional({"num_local_experts", "num_experts", "n_routed_experts"}, 0, 1 << 20);
    const auto expertInter = c.optional({"moe_intermediate_size"}, 0, kMaxWidth);
    const auto shared = c.optional({"n_shared_experts"}, 0, 1 << 20);
    const auto sharedInter = c.optional(
        {"shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"}, 0, kMaxWidth);
    const auto denseFirst = c.optional({"first_k_dense_replace"}, 0, core::kMaxLayers);
    const auto denseMlpWidth = c.optional({"intermediate_size_mlp"}, 0, kMaxWidth);
    const auto moeStep = c.optional({"interleave_moe_layer_step"}, 1, core::kMaxLayers);

    // Attention (or the recurrent mixer) per layer, with the layer's own heads.
    double mixers = 0;
    for (const auto& l : m.layers) {
        switch (l.kind) {
        case core::LayerKind::Mla: {
            const auto qLora = c.optional({"q_lora_rank"}, 1, kMaxWidth);
            const double qk = static_cast<double>(g.nope + g.rope);
            double a = qLora
                           ? h * static_cast<double>(*qLora) + static_cast<double>(*qLora) * q * qk
                           : h * q * qk;
            a += h * static_cast<double>(*g.lora + g.rope) +
                 static_cast<double>(*g.lora) * q * static_cast<double>(g.nope + g.vHead);
            a += q * static_cast<double>(g.vHead) * h;
            mixers += a;
            break;
        }
        case core::LayerKind::Full:
        case core::LayerKind::Sliding:
        case core::LayerKind::Chunked: {
            const double hd = m.layerHeadDim(l);
            mixers += 2 * h * q * hd + 2 * h * static_cast<double>(m.layerKvHeads(l)) * hd;
            break;
        }
        case core::LayerKind::State:
            mixers += m.state ? stateParams(*m.state, h) : 0;
            break;
        case core::LayerKind::None:
            break;
        }
    }

    const double mlpFactor = gatedMlp ? 3 : 2;
    const double dense = inter ? mlpFactor * h * static_cast<double>(*inter) : 0;
    double moe = dense;
    const bool isMoe = experts && *experts > 0;
    if (isMoe) {
        const double width = static_cast<double>(expertInter.value_or(inter.value_or(0)));
        moe = static_cast<double>(*experts) * mlpFactor * h * width +
              h * static_cast<double>(*experts); // experts + router
        if (shared && sharedInter)
            moe += static_cast<double>(*shared) * mlpFactor * h * static_cast<double>(*sharedInter);
        else if (shared)
            moe += static_cast<double>(*shared) * mlpFactor * h * width;
        else if (sharedInter)
            moe += mlpFactor * h * static_cast<double>(*sharedInter);
        else if (m.numSharedExperts > 0) // Llama-4's shared expert
            moe += mlpFactor * h * width;
        if (c.boolean("enable_moe_block").value_or(false)) // Gemma-4: a dense MLP beside it
            moe += dense;
    }
    const double layers = static_cast<double>(g.layers);
    double denseLayers =
        isMoe ? static_cast<double>(std::min(denseFirst.value_or(0), g.layers)) : layers;
    double moeLayers = layers - denseLayers;
    double denseCost = dense;
    if (!g.hybridPattern.empty()) {
        // Nemotron-H: an MLP only on "-" layers, a MoE block only on "E" layers.
        denseLayers =
            static_cast<double>(std::count(g.hybridPattern.begin(), g.hybridPattern.end(), '-'));
        moeLayers = isMoe ? static_cast<double>(
                                std::count(g.hybridPattern.begin(), g.hybridPattern.end(), 'E'))
                          : 0;
    } else if (isMoe && moeStep && *moeStep > 1) {
        // Llama-4 Maverick: MoE on every interleave_moe_layer_step-th layer, a dense MLP of
        // intermediate_size_mlp on the others.
        moeLayers = static_cast<double>(g.layers / *moeStep);
        denseLayers = layers - moeLayers;
        denseCost = mlpFactor * h * static_cast<double>(denseMlpWidth.value_or(inter.value_or(0)));
    }
    const double embeddings = static_cast<double>(vocab.value_or(0)) * h * (tied ? 1 : 2);
    const double total = embeddings + mixers + denseLayers * denseCost + moeLayers * moe;
    if (!(total <= static_cast<double>(core::kMaxParams)))
        c.find({"num_hidden_layers"}).fail("the model would have more than 100T parameters");
    m.params = static_cast<std::int64_t>(std::llround(total));
    m.notes += "params estimated from the config geometry (embeddings, attention, MLP";
    m.notes += experts ? "/experts" : "";
    m.notes += m.state ? ", state mixers" : "";
    m.notes += "; norms and biases not counted)";
    if (!vocab)
        m.notes += "; vocab_size missing, embeddings not counted";
    if (!inter && !isMoe)
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
    const std::string topType = top["model_type"].optString().value_or("");
    const bool falcon =
        modelType == "falcon" || modelType == "RefinedWeb" || modelType == "RefinedWebModel";
    if (modelType == "gemma3_text" || modelType == "gemma3") {
        c.setDefault("max_position_embeddings", std::int64_t{131072});
        c.setDefault("sliding_window_pattern", 6);
        c.setDefault("vocab_size", std::int64_t{262208});
    }
    if (startsWith(modelType, "llama4")) // Llama4TextConfig / Llama4Config: untied
        c.setDefault("tie_word_embeddings", false);
    if (modelType == "jamba") { // HF JambaConfig's defaults
        c.setDefault("attn_layer_period", 8);
        c.setDefault("attn_layer_offset", 4);
        c.setDefault("mamba_d_state", 16);
        c.setDefault("mamba_d_conv", 4);
        c.setDefault("mamba_expand", 2);
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
    readLayerOverrides(c, m);
    readState(c, m, g, modelType);
    readMoe(c, m, modelType);
    readContext(c, m, falcon, modelType, topType);
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
    m.source = std::string(top.file());
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
    // Lenient about NaN / Infinity: HF ships configs that have them in fields the ledger does
    // not read (Nemotron-H's time_step_limit); a read of one fails naming the field.
    return readDocument<core::ModelSpec>(json, sourceName, modelFromHf, JsonSyntax::NonFinite);
}

Result<core::ModelSpec> loadHfConfigFile(const std::string& path) {
    auto text = readFile(path);
    if (!text)
        return text.error();
    return parseHfConfig(text.value(), path);
}

} // namespace kvl::io
