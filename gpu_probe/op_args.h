#pragma once
// Arguments of the probe's two operations, shared by the CPU backend and the CUDA launchers
// (plain structs: nvcc compiles this header, so no STL beyond <cstdint>).

#include "gpu_probe/kernel_layout.h"
#include "gpu_probe/kv_quant.h"

#include <cstdint>

namespace kvl::probe {

// Split-K partition, as vLLM's paged_attention_v2 (PARTITION_SIZE 512) and flash-decoding.
inline constexpr int kPartitionTokens = 512;

// Store: K/V [tokens, kv_heads, head_dim] (fp16 or bf16 bits) into the pool through
// slots[t] = block * B + offset (negative = padding, skipped), as vLLM's reshape_and_cache.
struct StoreArgs {
    const std::uint16_t* k = nullptr;
    const std::uint16_t* v = nullptr;
    int inputDtype = kInputF16;
    std::int64_t numTokens = 0;
    const std::int64_t* slotMapping = nullptr; // not "slots": a Qt keyword
    std::uint8_t* pool = nullptr;
    std::int64_t numBlocks = 0;
    PageLayout layout;
    const float* kScale = nullptr; // [kv_heads] fp8 out-of-page scales (per tensor: all equal)
    const float* vScale = nullptr;
};

// Paged decode: one query per request, GQA group per KV head, block table int32
// [batch, maxBlocksPerSeq], outputs fp32 [batch, q_heads, head_dim].
struct AttentionArgs {
    const float* q = nullptr; // [batch, q_heads, head_dim]
    int batch = 0;
    int qHeads = 0;
    const std::int32_t* blockTables = nullptr;
    int maxBlocksPerSeq = 0;
    const std::int32_t* contextLens = nullptr; // [batch]
    const std::uint8_t* pool = nullptr;
    PageLayout layout;
    const float* kScale = nullptr; // [kv_heads], 1 when the format has no out-of-page scale
    const float* vScale = nullptr;
    float smScale = 0;    // usually 1/sqrt(head_dim)
    float* out = nullptr; // [batch, q_heads, head_dim]
    // split-K scratch, laid out as splitKScratch says; sized by attentionScratchFloats.
    float* scratch = nullptr;
    int maxPartitions = 0;
};

KVL_HD PageGeometry pageGeometry(const PageLayout& L) {
    return {L.kvHeads, L.headDim, L.blockSize, L.pageBytes, L.headStride, vSideOffset(L)};
}

// The split-K scratch's three arrays in `scratch` (a pointer into global memory on the GPU):
// rows = batch x qHeads x maxPartitions max logits, as many exp sums, then rows x head_dim
// partial outputs.
template <class Ptr>
KVL_HD SplitKScratch<Ptr> splitKScratch(Ptr scratch, int batch, int qHeads, int maxPartitions) {
    const std::int64_t rows = std::int64_t(batch) * qHeads * maxPartitions;
    return {scratch, scratch + rows, scratch + 2 * rows};
}

} // namespace kvl::probe
