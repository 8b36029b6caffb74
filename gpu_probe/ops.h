#pragma once
// The probe's two operations (store, paged decode attention) as backend-neutral argument
// structs, the layout builder over core's KV formats, their checks, and the thread pool the CPU
// implementations (cpu/cpu_ops.h) run on. Every failure is a kvl::Error (core/result.h);
// cancellation is ErrorCode::Cancelled.

#include "core/kv_format.h"
#include "core/result.h"
#include "gpu_probe/kv_quant.h"
#include "gpu_probe/op_args.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>

namespace kvl::probe {

// The error every cancelled step returns, and the poll of the flag another thread may set.
Error cancelledError();
bool cancelRequested(const std::atomic<bool>* cancel);

// What a caught exception becomes: OutOfMemory for std::bad_alloc, Internal for anything else.
// The words say where it was caught: `outOfMemory` as is, `failed` followed by a std::exception's
// what(), `unknown` for an exception of any other type.
struct ExceptionWords {
    const char* outOfMemory;
    const char* failed;
    const char* unknown;
};
Error errorFromException(const std::exception_ptr& failure, const ExceptionWords& words);

// The block size `format` needs when `requested` is asked for. KIVI (Liu et al., "KIVI: A
// Tuning-Free Asymmetric 2bit Quantization for KV Cache", 2024) quantizes keys per channel over
// groups of G tokens and keeps the residual tokens of an unfinished group apart, so a group must
// never straddle two pages: the block size is rounded up to a multiple of G. Every other format
// takes the requested size as is. makeLayout refuses what this function would change.
int blockSizeFor(const core::KvFormat& format, int requested);

// Builds the page layout of `format` for one layer. Errors (BadInput) name the field: block size
// not a multiple of KIVI's G, head_dim, or a layout that would not fit core's byte budget.
Result<PageLayout> makeLayout(const core::KvFormat& format, int headDim, int kvHeads,
                              int blockSize);

std::int64_t attentionScratchFloats(int batch, int qHeads, int maxPartitions, int headDim);

// Checks shapes and that every referenced block is inside the pool (BadInput otherwise).
Status validateStore(const StoreArgs& args, const std::int64_t* hostSlots);
Status validateAttention(const AttentionArgs& args, std::int64_t numBlocks,
                         const std::int32_t* hostBlockTables, const std::int32_t* hostLens);

// Runs fn(i) for i in [0, n) on up to `threads` threads (dynamic scheduling); stops early when
// cancel is set (Cancelled). An exception thrown by fn on any thread, or a worker thread that
// cannot be started, stops the others and comes back as an error (OutOfMemory for bad_alloc and
// thread-creation failures, Internal otherwise) instead of terminating the process.
Status parallelFor(std::int64_t n, int threads, const std::atomic<bool>* cancel,
                   const std::function<void(std::int64_t)>& fn);
int defaultThreads();

namespace testing {
// While on, parallelFor cannot start any worker thread (as under a process or memory limit).
void failThreadStarts(bool on);
} // namespace testing

} // namespace kvl::probe
