#pragma once
// What every backend's kernel arguments (cuda/: StoreParams, DecodeParams; cpu/: SimdAttention)
// share of a page layout and of the split-K scratch, each defined once. Plain data only, no
// functions: the per-ISA CPU units include it through cpu_simd.h, and a shared inline function
// could be emitted there with their -m flags (cpu_simd.h says why). op_args.h fills them.

#include <cstdint>

namespace kvl::probe {

// The addressing of a page: KV head h of block b starts at pool + b x pageBytes + h x
// headStride, its V side vOffset bytes after its K side. A base of the kernels' argument
// structs, so kernels read p.pageBytes alike on every backend.
struct PageGeometry {
    int kvHeads, headDim, blockSize;
    std::int64_t pageBytes, headStride, vOffset;
};

// The split-K scratch: [batch, qHeads, maxPartitions] max logit and exp sum, then the partial
// outputs [batch, qHeads, maxPartitions, headDim] (attentionScratchFloats floats in all).
template <class Ptr> struct SplitKScratch { Ptr maxLogit, expSum, partial; };

} // namespace kvl::probe
