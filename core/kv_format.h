#pragma once
// KV cache storage formats: element width, scale granularity and the bytes every scale and
// zero-point takes. The single source of truth for KV byte sizes (the probe uses it too).
// Schemes and their storage follow vLLM (fp8), LMDeploy (int8/int4 per token-head), QServe
// (arXiv:2405.04532) and KIVI (arXiv:2402.02750).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvl::core {

// Fp4E2M1 is NVFP4's element (vLLM kv_cache_dtype "nvfp4": E2M1 data, one E4M3 scale per 16).
enum class KvDtype : std::uint8_t { Fp32, Fp16, Bf16, Fp8E4M3, Fp8E5M2, Int8, Int4, Int2, Fp4E2M1 };

enum class Granularity : std::uint8_t {
    None,                 // fp32 / fp16 / bf16: stored as is
    PerTensor,            // one fp32 scale per layer for K and for V, outside the pages (vLLM fp8)
    PerHead,              // one fp32 scale per KV head per layer for K and V, outside the pages
    PerTokenHead,         // one scale (and zero) per stored vector, inside the page
    PerGroup,             // one scale (and zero) per G consecutive elements of each vector
    KPerChannelVPerToken, // KIVI: K scale+zero per channel per G tokens; V per G elements
    // vLLM's fp8_ds_mla (DeepSeek-V3.2, vllm/v1/attention/backends/mla/flashmla_sparse.py): the
    // latent's no-RoPE part in fp8 with one fp32 scale per 128, its 64 RoPE dims in 16 bits.
    DsMla,
    // vLLM's TurboQuant presets (--kv-cache-dtype turboquant_*, vLLM PR #38479;
    // vllm/model_executor/layers/quantization/turboquant/config.py): keys either fp8 (8 bits)
    // or Hadamard-rotated 3/4-bit codes with an fp16 norm, values 3/4-bit uniform with an fp16
    // scale and zero, one packed slot per token and head. KvFormat::keyBits / valueBits.
    TurboQuant,
};

enum class ScaleType : std::uint8_t { Fp32, Fp16, Fp8 };

struct KvFormat {
    KvDtype dtype = KvDtype::Fp16;
    Granularity granularity = Granularity::None;
    int groupSize = 0; // G, for PerGroup and KPerChannelVPerToken
    ScaleType scaleType = ScaleType::Fp32;
    bool hasZeroPoint = false; // asymmetric schemes store a zero next to each scale
    int keyBits = 0;           // TurboQuant: 8 (fp8 keys), 4 or 3
    int valueBits = 0;         // TurboQuant: 4 or 3

    // The usual scheme for a dtype (as vLLM, LMDeploy and KIVI use them): fp8 per tensor, int8
    // symmetric per token-head with an fp32 scale, int4 asymmetric per group of 128 with fp16 scale
    // + zero, int2 KIVI-style with G = 32, fp4 as NVFP4 (G = 16, E4M3 scales).
    static KvFormat defaultFor(KvDtype dtype);

    friend bool operator==(const KvFormat&, const KvFormat&) = default;
};

// Width of one stored element in bits (32, 16, 16, 8, 8, 8, 4, 2, 4).
int bitsPerElement(KvDtype dtype);
bool isQuantized(KvDtype dtype); // needs scales: fp8, int8, int4, int2
bool isInteger(KvDtype dtype);
int scaleBytes(ScaleType type);

// Canonical lower-case names: fp32 fp16 bf16 fp8_e4m3 fp8_e5m2 int8 int4 int2 fp4_e2m1.
std::string_view dtypeName(KvDtype dtype);
// Accepts the canonical names plus vLLM's alias "fp8" (= fp8_e4m3). Not "auto": the caller
// resolves that to the model's dtype.
std::optional<KvDtype> parseDtype(std::string_view name);
std::vector<KvDtype> allDtypes();

std::string_view granularityName(Granularity g); // none, per-tensor, per-head, ...
std::optional<Granularity> parseGranularity(std::string_view name);

// The format of `format.dtype` at granularity `g`, with the scale storage that granularity
// comes with: the one rule for the scenario panel and the CLI. Per-group and KIVI are
// asymmetric with an fp16 scale + zero (as LMDeploy's and KIVI's INT4/INT2 caches store them,
// see defaultFor) and G = 128 (per group) or 32 (KIVI, the paper's G), at most `dim` (the head
// or latent dim; <= 0 when unknown); the other granularities take defaultFor(dtype)'s scale
// storage. Only the dtype of `format` matters, so the result does not depend on the order
// granularities were tried in; a group size of one's own is set afterwards.
KvFormat withGranularity(KvFormat format, Granularity g, int dim);

// Human label such as "INT4 g128 (fp16 scale+zero)" or "FP8 E4M3 per-tensor".
std::string formatLabel(const KvFormat& format);
// A TurboQuant preset's format (keyBits 8, 4 or 3; valueBits 4 or 3); the dtype is nominally
// INT4, the page bytes come from the bits.
KvFormat turboQuantFormat(int keyBits, int valueBits);
// Short label for tables and status lines: "FP16", "FP8", "INT8", "INT4 g128", "INT2 KIVI".
std::string shortLabel(const KvFormat& format);

// Checks a format for consistency; returns an error naming the field, or nothing.
std::optional<std::string> validate(const KvFormat& format, int headDim);

// Bytes one token takes for ONE KV head (or one MLA latent) of `dim` elements, in the page:
// element data rounded up to whole bytes plus in-page scale/zero storage. Per-channel key
// scales (KIVI) are shared by G tokens; their share per token is rounded up to a whole byte.
std::int64_t keyBytesPerToken(const KvFormat& format, int dim);
std::int64_t valueBytesPerToken(const KvFormat& format, int dim);
// K + V for one head.
inline std::int64_t kvBytesPerTokenPerHead(const KvFormat& f, int dim) {
    return keyBytesPerToken(f, dim) + valueBytesPerToken(f, dim);
}
// MLA stores one latent vector per token (value-like quantization).
inline std::int64_t latentBytesPerToken(const KvFormat& f, int dim) {
    return valueBytesPerToken(f, dim);
}
// DeepSeek sparse attention's indexer K cache, per token and layer: index_head_dim fp8 bytes
// and one fp32 scale per 128 of them (vLLM model_executor/models/deepseek_v2.py, Indexer:
// head_dim + head_dim // quant_block_size * 4, stored as uint8 whatever --kv-cache-dtype says).
inline std::int64_t sparseIndexerBytesPerToken(int indexHeadDim) {
    return std::int64_t(indexHeadDim) + std::int64_t(indexHeadDim / 128) * 4;
}
// Scale storage kept outside the pages, per layer (fp8 per-tensor: 2 x fp32; per-head:
// 2 x kvHeads x fp32). Counted with the weights, where vLLM keeps k_scale / v_scale.
std::int64_t outOfPageScaleBytesPerLayer(const KvFormat& format, int kvHeads);

} // namespace kvl::core
