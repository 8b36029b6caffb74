#pragma once
// FP64 references for both operations (FlashInfer's cpu_reference.h idea: a naive version the
// tuned kernels are compared with).

#include "core/result.h"
#include "gpu_probe/kv_quant.h"
#include "gpu_probe/run/block_manager.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace kvl::probe {

// One request's K or V, [tokens, kv_heads, head_dim], as float (exact for fp16/bf16 inputs).
struct RequestKv {
    const float* k = nullptr;
    const float* v = nullptr;
    std::int64_t tokens = 0;
};

// Largest magnitude a side's codes represent before their scale: the fp8 formats' finite
// maximum (OCP FP8: 448 for E4M3, 57344 for E5M2), an integer codec's qmax; infinity for the
// float codecs, which carry no scale. The out-of-page scales (vLLM's k_scale = amax / max) and
// the store check's rounding bounds both divide by it.
double codecMax(const SideLayout& side);

// Exact softmax attention in double for one query per request. Returns [batch, q_heads, dim].
// When `logits` is given it receives [batch][q_heads][tokens] scaled logits (for top-k).
Result<std::vector<double>> referenceAttention(const float* q, int batch, int qHeads, int kvHeads,
                                               int headDim, const std::vector<RequestKv>& kv,
                                               double smScale,
                                               std::vector<std::vector<double>>* logits = nullptr,
                                               const std::atomic<bool>* cancel = nullptr);

// Reads a request's tokens back out of the pool, dequantized (out-of-page scales applied), as
// float [tokens, kv_heads, head_dim]: what the attention kernel is supposed to attend over.
Status dequantizeRequest(const std::uint8_t* pool, const PageLayout& layout,
                         const BatchAllocation& allocation, int request, const float* kScale,
                         const float* vScale, std::vector<float>& keys, std::vector<float>& values,
                         const std::atomic<bool>* cancel = nullptr);

// The store reference: every stored element must reconstruct within its format's rounding
// bound of the input, scales must match the FP64 ideal for their group, and nothing outside the
// written slots may change (the pool was poisoned with `poison`). Returns Ok or the first
// violation (Internal), naming token, head, side and channel.
struct StoreCheckStats {
    double kMaxAbsErr = 0, vMaxAbsErr = 0;
    double kRelL2 = 0, vRelL2 = 0; // per-element error, relative L2 over all stored elements
};
Status checkStore(const std::uint8_t* pool, std::int64_t poolBytes, std::uint8_t poison,
                  const PageLayout& layout, const std::int64_t* slots, std::int64_t numTokens,
                  const std::uint16_t* keysIn, const std::uint16_t* valuesIn, int inputDtype,
                  const float* kScale, const float* vScale, StoreCheckStats* stats = nullptr);

// Relative L2 and max-abs error of `got` against `ref`.
struct ErrorStats {
    double relL2 = 0;
    double maxAbs = 0;
    bool finite = true;
};
ErrorStats compareOutputs(const float* got, const double* ref, std::size_t n);
ErrorStats compareOutputs(const double* got, const double* ref, std::size_t n);

// Share of the reference's top-k tokens (per request and q head) that `test` also ranks in its
// top k, averaged.
double topKAgreement(const std::vector<std::vector<double>>& refLogits,
                     const std::vector<std::vector<double>>& testLogits, int k);

} // namespace kvl::probe
