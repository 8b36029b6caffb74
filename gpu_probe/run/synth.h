#pragma once
// Seeded synthetic K/V/Q with the statistics the KV-quantization papers report (KVQuant, Hooper
// et al. 2024, sec. 3; QServe, Lin et al. 2024; "Efficient Streaming Language Models with
// Attention Sinks", Xiao et al. 2023): keys carry a few fixed outlier channels (~10x, fixed sign,
// in RoPE pairs (i, i + d/2) among the slow-rotating high pairs, so the sign barely changes with
// position); values have no channel outliers, only a log-normal per-token scale; token 0 is an
// attention sink (a key aligned with the queries' common direction, a small value).

#include "core/result.h"

#include <atomic>
#include <cstdint>
#include <vector>

namespace kvl::probe {

struct SynthParams {
    int kvHeads = 8;
    int qHeads = 32;
    int headDim = 128;
    std::uint64_t seed = 1;
    int outlierPairs = 2;       // per KV head: 2 pairs = 4 outlier channels
    float outlierScale = 10.0f; // x the typical magnitude (KVQuant)
    bool sink = true;
    float sinkLogit = 8.0f;        // typical logit of the sink token
    float valueScaleSpread = 0.3f; // sigma of log per-token value scale
};

// K and V rows for positions [0, tokens) of one sequence, [tokens, kv_heads, head_dim], as floats
// rounded to fp16 (so the unquantized reference sees exactly what the store receives) and the
// fp16 bits; `bf16` rounds to bf16 instead.
struct SynthKv {
    std::vector<float> k, v;
    std::vector<std::uint16_t> kBits, vBits;
};
// `cancel`, when set from another thread, stops generation early (Cancelled).
Result<SynthKv> synthKv(const SynthParams& p, std::int64_t tokens, bool bf16 = false,
                        int threads = 0, const std::atomic<bool>* cancel = nullptr);

// Queries [batch, q_heads, head_dim] (fp32), different per request.
std::vector<float> synthQueries(const SynthParams& p, int batch);

// Replaces floats by their fp16 / bf16 rounding and returns the bits.
std::vector<std::uint16_t> toInputBits(std::vector<float>& x, bool bf16);

} // namespace kvl::probe
