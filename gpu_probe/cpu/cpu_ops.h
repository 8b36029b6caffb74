#pragma once
// The CPU implementations of the probe's two operations (op_args.h), run by the CPU backend
// (cpu_backend.cpp) on ops.h's thread pool. Every failure is a kvl::Error (core/result.h);
// cancellation is ErrorCode::Cancelled.

#include "core/result.h"
#include "gpu_probe/kv_quant.h"
#include "gpu_probe/op_args.h"

#include <atomic>

namespace kvl::probe {

// `threads` <= 0 uses the hardware concurrency. `cancel` is polled between work items.
Status cpuStore(const StoreArgs& args, int threads, const std::atomic<bool>* cancel = nullptr);
Status cpuAttention(const AttentionArgs& args, int threads,
                    const std::atomic<bool>* cancel = nullptr);

namespace testing {
// Whether cpuStore writes this side's rows through the current SIMD level's vector store (else
// through kv_quant.h's scalar code), for a side of `headDim` channels.
bool storesThroughVector(const SideLayout& side, int headDim);
// Whether the attention decodes this side's rows through the current SIMD level's INT4 / INT2
// group decoder (else through kv_quant.h's values in cpu_ops.cpp).
bool decodesThroughVector(const SideLayout& side, int headDim);
} // namespace testing

} // namespace kvl::probe
