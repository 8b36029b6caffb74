#include "gpu_probe/cpu/read_stream.h"

#include "gpu_probe/cpu/cpu_simd.h"
#include "gpu_probe/ops.h"

#include <algorithm>

namespace kvl::probe {

namespace {

constexpr std::size_t kBlock = 64;
constexpr std::size_t kChunk = std::size_t(1) << 20; // as the CPU backend's copy

std::uint64_t sumBytes(const unsigned char* p, std::size_t n) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < n; ++i)
        total += p[i];
    return total;
}

} // namespace

Result<std::uint64_t> readStreamPass(const void* data, std::size_t bytes, int threads,
                                     const std::atomic<bool>* cancel) {
    const auto* start = static_cast<const unsigned char*>(data);
    // The level the decode kernels use (KVL_CPU_SIMD may lower it): any width divides 0.
    const auto sumBlocks = cpuSimd(0).sumBlocks;
    const std::size_t head =
        std::min(bytes, (kBlock - reinterpret_cast<std::uintptr_t>(start) % kBlock) % kBlock);
    const std::size_t blocks = (bytes - head) / kBlock;
    const unsigned char* aligned = start + head;
    std::atomic<std::uint64_t> total{
        sumBytes(start, head) +
        sumBytes(aligned + blocks * kBlock, bytes - head - blocks * kBlock)};
    const std::size_t blocksPerChunk = kChunk / kBlock;
    const std::int64_t chunks = std::int64_t((blocks + blocksPerChunk - 1) / blocksPerChunk);
    Status done = parallelFor(chunks, threads, cancel, [&](std::int64_t i) {
        const std::size_t first = std::size_t(i) * blocksPerChunk;
        const std::size_t count = std::min(blocksPerChunk, blocks - first);
        total.fetch_add(sumBlocks(aligned + first * kBlock, count), std::memory_order_relaxed);
    });
    if (!done)
        return done.error();
    return total.load();
}

Result<double> readStreamGBs(Backend& backend, const void* data, std::size_t bytes, int warmup,
                             int repeats) {
    auto ms = backend.time([&] { return backend.readStream(data, bytes); }, warmup, repeats);
    if (!ms)
        return ms.error();
    return *ms > 0 ? double(bytes) / (*ms * 1e6) : 0.0; // 0: too fast for the clock
}

} // namespace kvl::probe
