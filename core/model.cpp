#include "model.h"

#include <array>

namespace kvl::core {

namespace {
constexpr std::array<std::string_view, 6> kWeightNames{"fp32", "fp16", "bf16",
                                                       "fp8",  "int8", "int4"};

std::string num(std::int64_t v) {
    return std::to_string(v);
}
} // namespace

std::string_view layerKindName(LayerKind kind) {
    switch (kind) {
    case LayerKind::Full:
        return "full";
    case LayerKind::Sliding:
        return "sliding";
    case LayerKind::Mla:
        return "mla";
    }
    return "full";
}

std::optional<LayerKind> parseLayerKind(std::string_view name) {
    for (const LayerKind k : {LayerKind::Full, LayerKind::Sliding, LayerKind::Mla})
        if (layerKindName(k) == name)
            return k;
    return std::nullopt;
}

std::string_view weightDtypeName(WeightDtype dtype) {
    return kWeightNames[static_cast<std::size_t>(dtype)];
}

std::optional<WeightDtype> parseWeightDtype(std::string_view name) {
    for (std::size_t i = 0; i < kWeightNames.size(); ++i)
        if (kWeightNames[i] == name)
            return static_cast<WeightDtype>(i);
    if (name == "float16")
        return WeightDtype::Fp16;
    if (name == "bfloat16")
        return WeightDtype::Bf16;
    if (name == "float32")
        return WeightDtype::Fp32;
    if (name == "fp8_e4m3")
        return WeightDtype::Fp8;
    return std::nullopt;
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
    const int sliding = countLayers(LayerKind::Sliding);
    const int mla = countLayers(LayerKind::Mla);
    if (mla > 0)
        s += ", MLA latent " + num(kvLoraRank) + "+" + num(qkRopeHeadDim);
    if (mla < numLayers())
        s += ", " + num(qHeads) + " q / " + num(kvHeads) + " KV heads, head_dim " + num(headDim);
    if (sliding > 0)
        s += ", " + num(sliding) + " sliding (" + num(slidingWindow()) + ")";
    return s;
}

std::optional<std::string> ModelSpec::validate() const {
    const std::string who = id.empty() ? std::string("model") : "model '" + id + "'";
    if (layers.empty())
        return who + ": num_layers must be at least 1";
    if (numLayers() > kMaxLayers)
        return who + ": num_layers " + num(numLayers()) + " exceeds " + num(kMaxLayers);
    const bool needsHeads = countLayers(LayerKind::Mla) < numLayers();
    if (qHeads < 1 || qHeads > kMaxHeads)
        return who + ": num_q_heads must be between 1 and " + num(kMaxHeads) + ", got " +
               num(qHeads);
    if (needsHeads) {
        if (kvHeads < 1 || kvHeads > kMaxHeads)
            return who + ": num_kv_heads must be between 1 and " + num(kMaxHeads) + ", got " +
                   num(kvHeads);
        if (kvHeads > qHeads)
            return who + ": num_kv_heads (" + num(kvHeads) + ") exceeds num_q_heads (" +
                   num(qHeads) + ")";
        if (qHeads % kvHeads != 0)
            return who + ": num_q_heads (" + num(qHeads) + ") is not divisible by num_kv_heads (" +
                   num(kvHeads) + ")";
        if (headDim < 1 || headDim > kMaxHeadDim)
            return who + ": head_dim must be between 1 and " + num(kMaxHeadDim) + ", got " +
                   num(headDim);
    }
    if (isMla()) {
        if (kvLoraRank < 1 || kvLoraRank > kMaxHeadDim)
            return who + ": kv_lora_rank must be between 1 and " + num(kMaxHeadDim) + ", got " +
                   num(kvLoraRank);
        if (qkRopeHeadDim < 0 || qkRopeHeadDim > kMaxHeadDim)
            return who + ": qk_rope_head_dim must be between 0 and " + num(kMaxHeadDim) + ", got " +
                   num(qkRopeHeadDim);
    }
    for (const auto& l : layers)
        if (l.kind == LayerKind::Sliding && (l.window < 1 || l.window > kMaxContext))
            return who + ": sliding_window must be between 1 and " + num(kMaxContext) + ", got " +
                   num(l.window);
    if (params < 0 || params > kMaxParams)
        return who + ": params must be between 0 and " + num(kMaxParams) + ", got " + num(params);
    if (maxContext < 1 || maxContext > kMaxContext)
        return who + ": max_context must be between 1 and " + num(kMaxContext) + ", got " +
               num(maxContext);
    return std::nullopt;
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
