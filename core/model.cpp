#include "model.h"

#include "core/enum_names.h"

#include <algorithm>
#include <initializer_list>

namespace kvl::core {

namespace {
constexpr EnumRow<LayerKind> kLayerKindNames[] = {
    {LayerKind::Full, "full"}, {LayerKind::Sliding, "sliding"}, {LayerKind::Chunked, "chunked"},
    {LayerKind::Mla, "mla"},   {LayerKind::State, "state"},     {LayerKind::None, "none"}};

constexpr EnumRow<StateKind> kStateKindNames[] = {{StateKind::Mamba1, "mamba1"},
                                                  {StateKind::Mamba2, "mamba2"},
                                                  {StateKind::GatedDeltaNet, "gated_delta_net"},
                                                  {StateKind::ShortConv, "short_conv"}};

// The names (fp32 ... fp4), then aliases that parseWeightDtype also reads: config.json's
// torch_dtype spellings and the FP8 / FP4 formats' own names.
constexpr EnumRow<WeightDtype> kWeightNames[] = {
    {WeightDtype::Fp32, "fp32"},    {WeightDtype::Fp16, "fp16"},    {WeightDtype::Bf16, "bf16"},
    {WeightDtype::Fp8, "fp8"},      {WeightDtype::Int8, "int8"},    {WeightDtype::Int4, "int4"},
    {WeightDtype::Fp4, "fp4"},      {WeightDtype::Fp16, "float16"}, {WeightDtype::Bf16, "bfloat16"},
    {WeightDtype::Fp32, "float32"}, {WeightDtype::Fp8, "fp8_e4m3"}, {WeightDtype::Fp4, "mxfp4"},
    {WeightDtype::Fp4, "nvfp4"}};

std::string num(std::int64_t v) {
    return std::to_string(v);
}
} // namespace

std::string_view layerKindName(LayerKind kind) {
    return lookupOr(kLayerKindNames, kind, "full");
}

std::optional<LayerKind> parseLayerKind(std::string_view name) {
    return parseName(kLayerKindNames, name);
}

std::string_view stateKindName(StateKind kind) {
    return lookupOr(kStateKindNames, kind, "mamba2");
}

std::optional<StateKind> parseStateKind(std::string_view name) {
    return parseName(kStateKindNames, name);
}

std::string_view weightDtypeName(WeightDtype dtype) {
    return lookupOr(kWeightNames, dtype);
}

std::optional<WeightDtype> parseWeightDtype(std::string_view name) {
    return parseName(kWeightNames, name);
}

std::int64_t weightBytes(std::int64_t params, WeightDtype dtype) {
    switch (dtype) {
    case WeightDtype::Fp32:
        return params * 4;
    case WeightDtype::Fp16:
    case WeightDtype::Bf16:
        return params * 2;
    case WeightDtype::Fp8:
    case WeightDtype::Int8:
        return params;
    case WeightDtype::Int4:
        // Two weights per byte, plus fp16 scale + fp16 zero per group of 128 (4.25 bits).
        return (params + 1) / 2 + (params + 127) / 128 * 4;
    case WeightDtype::Fp4:
        // OCP MX FP4: two weights per byte, one E8M0 scale per block of 32.
        return (params + 1) / 2 + (params + 31) / 32;
    }
    return params * 2;
}

int ModelSpec::countLayers(LayerKind kind) const {
    int n = 0;
    for (const auto& l : layers)
        n += l.kind == kind ? 1 : 0;
    return n;
}

std::int64_t ModelSpec::slidingWindow() const {
    for (const auto& l : layers)
        if (l.kind == LayerKind::Sliding)
            return l.window;
    return 0;
}

std::string ModelSpec::geometrySummary() const {
    std::string s = num(numLayers()) + " layers";
    const int mla = countLayers(LayerKind::Mla);
    const int attention = countLayers(LayerKind::Full) + countLayers(LayerKind::Sliding) +
                          countLayers(LayerKind::Chunked);
    if (mla > 0)
        s += ", MLA latent " + num(kvLoraRank) + "+" + num(qkRopeHeadDim);
    if (attention > 0) {
        s += ", " + num(qHeads) + " q / " + num(kvHeads) + " KV heads, head_dim " + num(headDim);
        if (headDimV > 0 && headDimV != headDim)
            s += " (v " + num(headDimV) + ")";
    }
    if (numLayers() != attention + mla || countLayers(LayerKind::Sliding) > 0 ||
        countLayers(LayerKind::Chunked) > 0)
        s += "; " + layerMixSummary();
    return s;
}

std::string ModelSpec::layerMixSummary() const {
    // Counted per kind and, for windows, per size: "10 full + 50 sliding (1024)".
    struct Entry {
        LayerKind kind;
        std::int64_t window;
        int count;
    };
    std::vector<Entry> entries;
    for (const auto& l : layers) {
        const std::int64_t w =
            (l.kind == LayerKind::Sliding || l.kind == LayerKind::Chunked) ? l.window : 0;
        auto it = std::find_if(entries.begin(), entries.end(),
                               [&](const Entry& e) { return e.kind == l.kind && e.window == w; });
        if (it == entries.end())
            entries.push_back({l.kind, w, 1});
        else
            ++it->count;
    }
    std::string s;
    for (const auto& e : entries) {
        if (!s.empty())
            s += " + ";
        s += num(e.count) + " " + std::string(layerKindName(e.kind));
        if (e.window > 0)
            s += " (" + num(e.window) + ")";
        if (e.kind == LayerKind::State && state)
            s += " (" + std::string(stateKindName(state->kind)) + ")";
    }
    return s;
}

namespace {

std::optional<std::string> checkRange(const std::string& who, const char* field, std::int64_t v,
                                      std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
        return who + ": " + field + " must be between " + num(lo) + " and " + num(hi) + ", got " +
               num(v);
    return std::nullopt;
}

// One field to check with checkRange: its name, its value and the bounds it must lie within.
struct Bounded {
    const char* name;
    std::int64_t value;
    std::int64_t lo;
    std::int64_t hi;
};

// The first field out of range, in the order given (the order the errors have always named).
std::optional<std::string> firstOutOfRange(const std::string& who,
                                           std::initializer_list<Bounded> fields) {
    for (const Bounded& f : fields)
        if (auto e = checkRange(who, f.name, f.value, f.lo, f.hi))
            return e;
    return std::nullopt;
}

std::optional<std::string> validateState(const std::string& who, const StateSpec& st) {
    const std::string w = who + ": state";
    const Bounded conv{"conv_kernel", st.convKernel, 1, 1024};
    const Bounded inner{"intermediate_size", st.intermediateSize, 1, kMaxWidth};
    const Bounded stateSize{"state_size", st.stateSize, 1, kMaxHeadDim};
    switch (st.kind) {
    case StateKind::Mamba1:
        return firstOutOfRange(w, {inner, stateSize, conv});
    case StateKind::Mamba2:
        return firstOutOfRange(w, {inner,
                                   {"num_heads", st.numHeads, 1, kMaxHeads},
                                   {"head_dim", st.headDim, 1, kMaxHeadDim},
                                   {"n_groups", st.nGroups, 1, kMaxHeads},
                                   stateSize,
                                   conv});
    case StateKind::GatedDeltaNet:
        return firstOutOfRange(w, {{"num_key_heads", st.numKeyHeads, 1, kMaxHeads},
                                   {"num_value_heads", st.numValueHeads, 1, kMaxHeads},
                                   {"key_head_dim", st.keyHeadDim, 1, kMaxHeadDim},
                                   {"value_head_dim", st.valueHeadDim, 1, kMaxHeadDim},
                                   conv});
    case StateKind::ShortConv:
        return firstOutOfRange(w, {inner, conv});
    }
    return std::nullopt;
}

std::optional<std::string> validateHeads(const std::string& who, int qHeads, int kvHeads,
                                         const char* what) {
    if (kvHeads < 1 || kvHeads > kMaxHeads)
        return who + ": " + what + " must be between 1 and " + num(kMaxHeads) + ", got " +
               num(kvHeads);
    if (kvHeads > qHeads)
        return who + ": " + what + " (" + num(kvHeads) + ") exceeds num_q_heads (" + num(qHeads) +
               ")";
    if (qHeads % kvHeads != 0)
        return who + ": num_q_heads (" + num(qHeads) + ") is not divisible by " + what + " (" +
               num(kvHeads) + ")";
    return std::nullopt;
}

} // namespace

std::optional<std::string> ModelSpec::validate() const {
    const std::string who = id.empty() ? std::string("model") : "model '" + id + "'";
    if (layers.empty())
        return who + ": num_layers must be at least 1";
    if (numLayers() > kMaxLayers)
        return who + ": num_layers " + num(numLayers()) + " exceeds " + num(kMaxLayers);
    if (qHeads < 1 || qHeads > kMaxHeads)
        return who + ": num_q_heads must be between 1 and " + num(kMaxHeads) + ", got " +
               num(qHeads);
    const int attention = countLayers(LayerKind::Full) + countLayers(LayerKind::Sliding) +
                          countLayers(LayerKind::Chunked);
    if (attention > 0) {
        if (auto e = validateHeads(who, qHeads, kvHeads, "num_kv_heads"))
            return e;
        if (auto e = checkRange(who, "head_dim", headDim, 1, kMaxHeadDim))
            return e;
        if (auto e = checkRange(who, "head_dim_v", headDimV, 0, kMaxHeadDim))
            return e;
    }
    if (isMla()) {
        if (auto e = checkRange(who, "kv_lora_rank", kvLoraRank, 1, kMaxHeadDim))
            return e;
        if (auto e = checkRange(who, "qk_rope_head_dim", qkRopeHeadDim, 0, kMaxHeadDim))
            return e;
    }
    for (const auto& l : layers) {
        if (l.kind == LayerKind::Sliding || l.kind == LayerKind::Chunked) {
            const char* field =
                l.kind == LayerKind::Sliding ? "sliding_window" : "attention_chunk_size";
            if (auto e = checkRange(who, field, l.window, 1, kMaxContext))
                return e;
        }
        if (l.kind == LayerKind::Full || l.kind == LayerKind::Sliding ||
            l.kind == LayerKind::Chunked) {
            if (l.kvHeads != 0)
                if (auto e = validateHeads(who, qHeads, l.kvHeads, "a layer's num_kv_heads"))
                    return e;
            if (auto e = checkRange(who, "a layer's head_dim", l.headDim, 0, kMaxHeadDim))
                return e;
            if (auto e = checkRange(who, "a layer's head_dim_v", l.headDimV, 0, kMaxHeadDim))
                return e;
        }
    }
    if (countLayers(LayerKind::State) > 0) {
        if (!state)
            return who + ": state layers need the state geometry (mamba or linear attention "
                         "fields)";
        if (auto e = validateState(who, *state))
            return e;
    }
    return firstOutOfRange(who, {{"params", params, 0, kMaxParams},
                                 {"max_context", maxContext, 1, kMaxContext},
                                 {"hidden_size", hiddenSize, 0, kMaxWidth},
                                 {"intermediate_size", intermediateSize, 0, kMaxWidth},
                                 {"moe_intermediate_size", moeIntermediateSize, 0, kMaxWidth},
                                 {"vocab_size", vocabSize, 0, kMaxWidth},
                                 {"num_experts", numExperts, 0, kMaxExperts},
                                 {"experts_per_token", expertsPerToken, 0, numExperts},
                                 {"num_shared_experts", numSharedExperts, 0, kMaxExperts},
                                 {"first_dense_layers", firstDenseLayers, 0, numLayers()}});
}

ModelSpec withLayerCount(const ModelSpec& model, int n) {
    ModelSpec out = model;
    if (n < 1 || model.layers.empty())
        return out;
    out.layers.clear();
    out.layers.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        out.layers.push_back(model.layers[static_cast<std::size_t>(i) % model.layers.size()]);
    return out;
}

} // namespace kvl::core
