#pragma once
// The host launchers of the probe's two operations, compiled twice from the same kernel source
// (decode_kernels.cuh, store_kernels.cuh): by nvcc for the GPU (namespace cuda) and as host C++
// for the SIMT emulator (namespace emulated, emu/emulated_kernels.cpp). They take a stream and
// return the launch's cudaError_t, as FlashInfer's C++ API does; they never synchronize.
#include "gpu_probe/op_args.h"

#include <driver_types.h> // cudaError_t, cudaStream_t (plain C, host compilers too)

namespace kvl::probe {

namespace cuda {
// Writes every token with slot >= 0; the same bytes as cpuStore (shared kv_quant.h math,
// compiled without FMA contraction). KIVI keys need runs that start on group boundaries
// (validateStore checks that on the host).
cudaError_t launchStore(const StoreArgs& a, cudaStream_t stream);
// head_dim up to 256 (else cudaErrorNotSupported). a.scratch must hold
// attentionScratchFloats(batch, qHeads, maxPartitions, headDim) floats.
cudaError_t launchAttention(const AttentionArgs& a, cudaStream_t stream);
} // namespace cuda

namespace emulated {
cudaError_t launchStore(const StoreArgs& a, cudaStream_t stream);
cudaError_t launchAttention(const AttentionArgs& a, cudaStream_t stream);
} // namespace emulated

} // namespace kvl::probe
