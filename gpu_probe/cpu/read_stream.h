#pragma once
// The read stream: decode attention's bandwidth yardstick on the CPU. Decode reads K and V and
// writes almost nothing, so a copy (read + write, each written line first read for ownership)
// measures another mix of traffic than the kernel's; a pass that only reads, at the widest
// vector loads the kernels have, over the same threads, is the rate decode could reach. The
// CPU backend's readStream (backend.h) is one pass; kvprobe times it beside the copy over the
// pool itself, and tests/bench/bench_probe over a buffer of its own.

#include "core/result.h"
#include "gpu_probe/backend.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kvl::probe {

// One pass over `bytes` at `data` on `threads` threads (0: all), in 1 MiB chunks over the thread
// pool the kernels and the copy use (ops.h parallelFor): the sum of its 64-bit words (any
// alignment; the bytes before the first 64-byte boundary and after the last one are summed
// byte by byte), returned so the compiler keeps every load.
Result<std::uint64_t> readStreamPass(const void* data, std::size_t bytes, int threads,
                                     const std::atomic<bool>* cancel = nullptr);

// The median GB/s (1e9 bytes per second) of `repeats` passes of backend.readStream over `bytes`
// at `data`, after `warmup` passes, timed by backend.time; Unsupported where the backend has no
// read stream.
Result<double> readStreamGBs(Backend& backend, const void* data, std::size_t bytes, int warmup,
                             int repeats);

} // namespace kvl::probe
