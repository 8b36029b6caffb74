#pragma once
// A small SIMT execution layer: the project's CUDA kernels, compiled as host C++ through
// cuda_emu.h, run here on the CPU. A grid runs one thread block at a time per OS thread; each
// CUDA thread of the block is a fiber (Boost.Context), so every thread has its own stack and
// registers, exactly as the kernel source describes them:
//  - __syncthreads and __syncwarp are barriers; warp intrinsics (__shfl_*_sync, __ballot_sync,
//    __any_sync, __all_sync) meet in a per-warp exchange that every lane of the mask reaches
//    before any of them reads (an exited lane never arrives; reading it is an error);
//  - static and dynamic shared memory are one per-block arena, poisoned (0xFF: NaN as fp32 and
//    fp16, -1 as an integer) before each block, with a canary past its end;
//  - between two synchronisation points the ready fibers run in a seeded random order, and a
//    fiber may also be preempted at a global-memory access, so a missing __syncthreads (a read of
//    what another warp has not written yet) changes the answer in some seeds;
//  - blocks run in a seeded random order (the hardware promises none);
//  - every global access goes through a bounds-carrying pointer (GlobalPtr in cuda_emu.h) and
//    is checked against the allocation the pointer came from, with its alignment; a bad access
//    is recorded with the thread, block, kernel and source line and the launch returns an error
//    (loads of a bad address read zeros, stores to it are dropped), it never crashes;
//  - launch limits are the hardware's: at most 1024 threads per block, grid y/z <= 65535, more
//    than 48 KiB of dynamic shared memory only after cudaFuncSetAttribute;
//  - deadlocks (threads waiting at barriers that can never complete) and divergent barriers
//    (__syncthreads reached at different source lines) are errors.
// What it cannot show: timing, memory ordering beyond what barriers order (fibers see each
// other's writes at once), and hardware specifics (the sm_89 fp8 conversion instruction, the
// rounding of ex2.approx, bank conflicts, occupancy). HIP-CPU (ROCm) runs HIP kernels on fibers
// the same way; this layer adds the checks above.

#include <driver_types.h> // cudaError_t, cudaStream_t: plain C, usable by a host compiler
#include <vector_types.h> // uint3, dim3

#include <cstddef>
#include <cstdint>
#include <functional>
#include <source_location>
#include <string>

namespace kvl::emu {

// Faults a test plants into the real kernels (KVL_INJECT in cuda/dialect.cuh); None in every
// normal run. Each names the bug class it stands for.
enum class Fault : int {
    None = 0,
    DecodeSkipTableBarrier, // the __syncthreads after the block table is staged in shared memory
    DecodeSkipMergeBarrier, // the __syncthreads before the warps' partial results are merged
    DecodePageOffByOne,     // a token's page taken from the table entry of token t + 1
    StoreSlotOffByOne,      // the store writes token t into slot[t] + 1
};
void injectFault(Fault fault);
Fault injectedFault();
inline bool faultActive(Fault fault) {
    return injectedFault() == fault;
}

// ---- device memory

// The emulated device's allocations: a GlobalPtr made from a raw pointer takes the bounds of
// the allocation that contains it (none: every access through it is an error).
void registerAllocation(const void* begin, std::size_t bytes);
void unregisterAllocation(const void* begin);
struct Span {
    std::uintptr_t begin = 0, end = 0;
};
Span findAllocation(const void* p);

// Records a bad global access of the running thread (never returns an error to the kernel).
void badAccess(std::uintptr_t address, std::size_t bytes, std::size_t align, bool write, Span span,
               const std::source_location& where);
// Called at every checked access: yields to the scheduler now and then (seeded).
void preemptionPoint();
inline thread_local int t_preemptCountdown = 1 << 30;
inline void maybePreempt() {
    if (--t_preemptCountdown <= 0)
        preemptionPoint();
}

// ---- inside a kernel (cuda_emu.h's intrinsics)

enum class Exchange : std::uint8_t { Sync, Idx, Up, Down, Xor, Ballot, Any, All };
void syncThreads(const std::source_location& where);
// Lanes of `mask` meet; returns this lane's result (the value read, or the vote).
std::uint64_t warpExchange(unsigned mask, std::uint64_t value, Exchange kind, int arg, int width,
                           const std::source_location& where);
void* dynamicShared();
// The n-th call of a thread returns the n-th static shared array of the block.
void* staticShared(std::size_t bytes, std::size_t align);
// The non-exited lanes of the calling warp.
unsigned activeMask();

// ---- launching

struct LaunchOptions {
    std::uint64_t seed = 1; // schedule of blocks and fibers (each launch derives its own)
    int threads = 1;        // OS threads running blocks side by side
    int preemptEvery = 16;  // mean global accesses between preemptions (0: only at barriers)
};
// The options of the launches the calling OS thread makes from now on.
void setLaunchOptions(const LaunchOptions& options);
LaunchOptions launchOptions();

// Runs `body` as every thread of every block; cudaSuccess, or the error of the first fault
// (its one-line message in lastLaunchError()). `kernel` is the kernel function (for its
// attributes).
cudaError_t launch(const char* name, const void* kernel, dim3 grid, dim3 block,
                   std::size_t dynamicSharedBytes, const std::function<void()>& body);
const std::string& lastLaunchError();
void setMaxDynamicShared(const void* kernel, int bytes);

} // namespace kvl::emu

// CUDA's built-in variables, per fiber: the scheduler sets them before it resumes a thread.
// uint3 (not dim3, whose constructor would make every access go through a TLS wrapper).
extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local uint3 blockDim;
extern thread_local uint3 gridDim;
