#pragma once
// Store / quantize new K/V into pages through the slot mapping (vLLM reshape_and_cache).
#include "gpu_probe/op_args.h"

#include <cuda_runtime.h>

namespace kvl::probe {

// Writes every token with slot >= 0; the same bytes as cpuStore (shared kv_quant.h math,
// compiled without FMA contraction). KIVI keys need runs that start on group boundaries
// (validateStore checks that on the host).
cudaError_t launchStore(const StoreArgs& a, cudaStream_t stream);

} // namespace kvl::probe
