#pragma once
// A model as the ledger sees it: per-layer attention kinds and the head geometry that sets
// the KV bytes per token (REFERENCE.md sections 1 and 3).

#include "kv_format.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvl::core {

enum class LayerKind : std::uint8_t { Full, Sliding, Mla };

struct LayerSpec {
    LayerKind kind = LayerKind::Full;
    std::int64_t window = 0; // tokens kept by a sliding-window layer (Sliding only)
    friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

enum class WeightDtype : std::uint8_t { Fp32, Fp16, Bf16, Fp8, Int8, Int4 };

std::string_view layerKindName(LayerKind kind);      // full, sliding, mla
std::string_view weightDtypeName(WeightDtype dtype); // fp32 fp16 bf16 fp8 int8 int4
std::optional<WeightDtype> parseWeightDtype(std::string_view name);
std::optional<LayerKind> parseLayerKind(std::string_view name); // nullopt if unknown
// Exact weight bytes for `params` parameters. INT4 counts an fp16 scale + fp16 zero per group
// of 128 weights (GPTQ/AWQ style, 4.25 bits); FP8/INT8 per-channel scales are negligible and
// not counted.
std::int64_t weightBytes(std::int64_t params, WeightDtype dtype);

struct ModelSpec {
    std::string id;     // catalog id, lower case: "llama-3-8b"
    std::string name;   // display name: "Llama-3-8B"
    std::string family; // picker group: "Llama 3"
    std::string hfRepo; // HuggingFace repository ("meta-llama/Meta-Llama-3-8B"), for vllm serve
    std::vector<LayerSpec> layers;
    int qHeads = 0;
    int kvHeads = 0;
    int headDim = 0;
    int kvLoraRank = 0;    // MLA latent rank (DeepSeek-V2/V3)
    int qkRopeHeadDim = 0; // MLA decoupled RoPE key dim, stored beside the latent
    std::int64_t params = 0;
    WeightDtype weightDtype = WeightDtype::Bf16;
    KvDtype nativeKvDtype = KvDtype::Bf16; // what vLLM's kv-cache-dtype "auto" stores
    std::int64_t maxContext = 0;           // max_position_embeddings
    std::int64_t hiddenSize = 0;           // informational
    std::string notes;

    int numLayers() const { return static_cast<int>(layers.size()); }
    int countLayers(LayerKind kind) const;
    bool isMla() const { return countLayers(LayerKind::Mla) > 0; }
    int mlaLatentDim() const { return kvLoraRank + qkRopeHeadDim; }
    // The window of the sliding layers, 0 if none (all sliding layers of a model share one).
    std::int64_t slidingWindow() const;
    // "32 layers, 32 q / 8 KV heads, head_dim 128", "61 layers MLA latent 512+64", ...
    std::string geometrySummary() const;

    // A one-line error naming the first bad field (layers, q heads, KV heads, head_dim,
    // divisibility, MLA ranks, window, params, max context), or nothing when usable.
    std::optional<std::string> validate() const;
};

// The same model with n layers: the layer pattern repeats cyclically (to count a
// speculative-decoding draft layer, or to try a deeper variant).
ModelSpec withLayerCount(const ModelSpec& model, int n);

// Upper bounds that keep all arithmetic exact in 64 bits (tests prove no overflow at them).
inline constexpr int kMaxLayers = 4096;
inline constexpr int kMaxHeads = 4096;
inline constexpr int kMaxHeadDim = 16384;
inline constexpr std::int64_t kMaxContext = 1'000'000'000;      // 1G tokens
inline constexpr std::int64_t kMaxParams = 100'000'000'000'000; // 100T
inline constexpr std::int64_t kMaxRequests = 100'000'000;

} // namespace kvl::core
