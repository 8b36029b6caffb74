#pragma once
// The probe's two operations (store, paged decode attention) as backend-neutral argument
// structs, the layout builder over core's KV formats, and the CPU implementations.

#include "core/kv_format.h"
#include "gpu_probe/kv_quant.h"
#include "gpu_probe/op_args.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace kvl::probe {

// Builds the page layout of `format` for one layer. Errors name the field (block size not a
// multiple of KIVI's G, head_dim, or a layout that would not fit core's byte budget).
std::variant<PageLayout, std::string> makeLayout(const core::KvFormat& format, int headDim,
                                                 int kvHeads, int blockSize);

std::int64_t attentionScratchFloats(int batch, int qHeads, int maxPartitions, int headDim);

// Checks shapes and that every referenced block is inside the pool; "" when fine.
std::string validateStore(const StoreArgs& a, const std::int64_t* hostSlots);
std::string validateAttention(const AttentionArgs& a, std::int64_t numBlocks,
                              const std::int32_t* hostBlockTables, const std::int32_t* hostLens);

// CPU implementations. `threads` <= 0 uses the hardware concurrency. `cancel` is polled
// between work items; returns "" or an error ("cancelled").
std::string cpuStore(const StoreArgs& a, int threads, const std::atomic<bool>* cancel = nullptr);
std::string cpuAttention(const AttentionArgs& a, int threads,
                         const std::atomic<bool>* cancel = nullptr);

// Runs fn(i) for i in [0, n) on up to `threads` threads (dynamic scheduling); stops early
// when cancel is set. Returns false when cancelled.
bool parallelFor(std::int64_t n, int threads, const std::atomic<bool>* cancel,
                 const std::function<void(std::int64_t)>& fn);
int defaultThreads();

} // namespace kvl::probe
