#pragma once
// Paged decode attention with GQA, on-the-fly dequantization and split-K (flash-decoding).
#include "gpu_probe/op_args.h"

#include <cuda_runtime.h>

namespace kvl::probe {

// Supports head_dim a multiple of 32 up to 256 (else cudaErrorNotSupported). a.scratch must
// hold attentionScratchFloats(batch, qHeads, maxPartitions, headDim) floats.
cudaError_t launchAttention(const AttentionArgs& a, cudaStream_t stream);

} // namespace kvl::probe
