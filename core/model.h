#pragma once
// A model as the ledger sees it: per-layer kinds (full, sliding, chunked local, MLA latent,
// Mamba / linear-attention state, or nothing), the head geometry that sets the KV bytes per
// token, the state geometry of recurrent layers, and the few architecture numbers the weights
// and speed estimates need. Parsed from the catalog or a HuggingFace config.json.

#include "kv_format.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvl::core {

// What one decoder layer keeps per request (vllm/v1/kv_cache_interface.py has one spec class
// for each): Full (FullAttentionSpec), Sliding (SlidingWindowSpec, window W), Chunked
// (ChunkedLocalAttentionSpec, Llama-4's local attention with chunk C), Mla (MLAAttentionSpec,
// one latent per token), State (MambaSpec: conv + SSM state of a Mamba or linear-attention
// layer, a fixed size per request), None (no cache: an encoder-only layer, or a layer that
// reads another layer's KV).
enum class LayerKind : std::uint8_t { Full, Sliding, Chunked, Mla, State, None };

struct LayerSpec {
    LayerKind kind = LayerKind::Full;
    std::int64_t window = 0; // Sliding: the window W; Chunked: the chunk C; else 0
    // Attention geometry of this layer when it differs from the model's (Gemma-4's global
    // layers: num_global_key_value_heads, global_head_dim). 0 = the model's value.
    int kvHeads = 0;
    int headDim = 0;
    int headDimV = 0;
    // The layer reads an earlier layer's KV (kv_sharing_target_layer_name: Gemma-3n, Gemma-4's
    // num_kv_shared_layers). vLLM from 0.21 gives it no cache; earlier releases gave it its own
    // (core/vllm_version.h, VllmRule::KvSharing).
    bool kvShared = false;
    friend bool operator==(const LayerSpec&, const LayerSpec&) = default;
};

// The recurrent layers' state (vllm/model_executor/layers/mamba/mamba_utils.py,
// MambaStateShapeCalculator): Mamba1, Mamba2 (SSD), gated delta net (Qwen3-Next, Qwen3.5),
// short convolution (LFM2).
enum class StateKind : std::uint8_t { Mamba1, Mamba2, GatedDeltaNet, ShortConv };

struct StateSpec {
    StateKind kind = StateKind::Mamba2;
    std::int64_t intermediateSize = 0; // Mamba: d_inner = expand x hidden (mamba_expand)
    int numHeads = 0;                  // Mamba2: mamba_n_heads / mamba_num_heads
    int headDim = 0;                   // Mamba2: mamba_head_dim
    int nGroups = 1;                   // Mamba2: n_groups
    int stateSize = 0;                 // d_state / ssm_state_size
    int convKernel = 0;                // d_conv / conv_kernel / linear_conv_kernel_dim
    int chunkSize = 0;                 // Mamba2 SSD chunk (mamba_chunk_size / chunk_size)
    int numKeyHeads = 0;               // gated delta net: linear_num_key_heads
    int numValueHeads = 0;             // linear_num_value_heads
    int keyHeadDim = 0;                // linear_key_head_dim
    int valueHeadDim = 0;              // linear_value_head_dim
    // State dtypes; empty = vLLM's "auto" (the model dtype). mamba_ssm_cache_dtype sets
    // the SSM (temporal) state's dtype on its own.
    std::optional<KvDtype> convDtype;
    std::optional<KvDtype> ssmDtype;
    // NemotronH with no mamba_ssm_cache_dtype in its config: vLLM's NemotronHForCausalLMConfig
    // picks the SSM state's dtype, and the pick changed between releases (float16, then
    // float32; VllmRules::nemotronHSsmFp32). ssmDtype is then empty.
    bool ssmDtypeNemotronHDefault = false;
    friend bool operator==(const StateSpec&, const StateSpec&) = default;
};

enum class WeightDtype : std::uint8_t { Fp32, Fp16, Bf16, Fp8, Int8, Int4, Fp4 };

std::string_view layerKindName(LayerKind kind); // full sliding chunked mla state none
std::optional<LayerKind> parseLayerKind(std::string_view name); // the inverse of layerKindName
std::string_view stateKindName(StateKind kind); // mamba1 mamba2 gated_delta_net short_conv
std::optional<StateKind> parseStateKind(std::string_view name);
// The catalog's and the scenario file's "ssm_dtype" for StateSpec::ssmDtypeNemotronHDefault.
inline constexpr std::string_view kNemotronHSsmDefaultName = "nemotron_h_default";
std::string_view weightDtypeName(WeightDtype dtype); // fp32 fp16 bf16 fp8 int8 int4 fp4
std::optional<WeightDtype> parseWeightDtype(std::string_view name);
std::optional<LayerKind> parseLayerKind(std::string_view name); // nullopt if unknown
// Exact weight bytes for `params` parameters. INT4 counts an fp16 scale + fp16 zero per group
// of 128 weights (GPTQ/AWQ style, 4.25 bits); FP4 (MXFP4, as gpt-oss ships its experts) one
// 8-bit scale per 32 weights (4.25 bits); FP8/INT8 per-channel scales are negligible.
std::int64_t weightBytes(std::int64_t params, WeightDtype dtype);

struct ModelSpec {
    std::string id;     // catalog id, lower case: "llama-3-8b"
    std::string name;   // display name: "Llama-3-8B"
    std::string family; // picker group: "Llama 3"
    std::string hfRepo; // HuggingFace repository ("meta-llama/Meta-Llama-3-8B"), for vllm serve
    std::string source; // where the numbers come from (a config.json URL)
    std::vector<LayerSpec> layers;
    int qHeads = 0;
    int kvHeads = 0;
    int headDim = 0;        // the key head size
    int headDimV = 0;       // the value head size when it differs (head_size_v); 0 = headDim
    int kvLoraRank = 0;     // MLA latent rank (DeepSeek-V2/V3)
    int qkRopeHeadDim = 0;  // MLA decoupled RoPE key dim, stored beside the latent
    int qkNopeHeadDim = 0;  // MLA no-RoPE query/key dim (decides FlashInfer-MLA support)
    bool sparseMla = false; // DeepSeek sparse attention (V3.2's indexer: index_topk)
    int indexHeadDim = 0;   // the sparse indexer's key width (index_head_dim); 0 = no indexer
    std::optional<StateSpec> state; // the Mamba / linear-attention layers' state
    std::int64_t params = 0;
    WeightDtype weightDtype = WeightDtype::Bf16;
    KvDtype nativeKvDtype = KvDtype::Bf16; // what vLLM's kv-cache-dtype "auto" stores
    std::int64_t maxContext = 0;           // vLLM's derived max_model_len (rope scaling applied)
    std::int64_t hiddenSize = 0;
    std::int64_t intermediateSize = 0;    // dense MLP width
    std::int64_t moeIntermediateSize = 0; // one expert's MLP width
    int numExperts = 0;                   // routed experts per MoE layer; 0 = dense
    int expertsPerToken = 0;              // top-k
    int numSharedExperts = 0;
    int firstDenseLayers = 0; // MoE models whose first layers are dense (first_k_dense_replace)
    std::int64_t vocabSize = 0;
    bool tieWordEmbeddings = false;
    std::string notes;

    int numLayers() const { return static_cast<int>(layers.size()); }
    int countLayers(LayerKind kind) const;
    bool isMla() const { return countLayers(LayerKind::Mla) > 0; }
    bool isMoe() const { return numExperts > 0; }
    int mlaLatentDim() const { return kvLoraRank + qkRopeHeadDim; }
    int valueHeadDim() const { return headDimV > 0 ? headDimV : headDim; }
    // A layer's attention geometry with the model's values filled in.
    int layerKvHeads(const LayerSpec& l) const { return l.kvHeads > 0 ? l.kvHeads : kvHeads; }
    int layerHeadDim(const LayerSpec& l) const { return l.headDim > 0 ? l.headDim : headDim; }
    int layerHeadDimV(const LayerSpec& l) const {
        return l.headDimV > 0 ? l.headDimV : (l.headDim > 0 ? l.headDim : valueHeadDim());
    }
    // The window of the sliding layers, 0 if none (the first sliding layer's window).
    std::int64_t slidingWindow() const;
    // "32 layers, 32 q / 8 KV heads, head_dim 128", "61 layers MLA latent 512+64", ...
    std::string geometrySummary() const;
    // "40 full", "10 full + 50 sliding (1024)", "12 full + 36 state (gated delta net)"
    std::string layerMixSummary() const;

    // A one-line error naming the first bad field (layers, q heads, KV heads, head_dim,
    // divisibility, MLA ranks, window, state, params, max context), or nothing when usable.
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
inline constexpr std::int64_t kMaxWidth = std::int64_t{1} << 30; // hidden, vocab, d_inner
inline constexpr int kMaxExperts = 65536;

} // namespace kvl::core
