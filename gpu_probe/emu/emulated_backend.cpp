// The `emulated-cuda` backend: the CUDA backend's launchers and kernels, compiled from the same
// source as host C++ (emulated_decode.cpp, emulated_store.cpp), run by the SIMT emulator
// (simt.h) on host memory whose every allocation is registered, so each global access of a
// kernel is checked against it. What it proves and what it cannot is in kWhat (kvprobe info).
#include "gpu_probe/backend.h"
#include "gpu_probe/cuda/launchers.h"
#include "gpu_probe/emu/simt.h"
#include "gpu_probe/host_allocations.h"
#include "gpu_probe/ops.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>

namespace kvl::probe {

namespace {

// The CUDA backend's account (cudaMalloc's 2 MiB pages), so both report the same memory.
constexpr std::int64_t kGranularity = std::int64_t(2) << 20;
constexpr std::size_t kAlignment = 256; // cudaMalloc's alignment

const char* const kWhat =
    "SIMT emulator: the CUDA kernels' own source run on the CPU, each thread a fiber, blocks "
    "and threads in a seeded random order; it proves indexing, bounds and alignment of every "
    "global access, barriers and warp shuffles, partial pages and the numerics (bytes equal to "
    "the CPU's); it cannot show timing, memory ordering beyond barriers or hardware-specific "
    "behaviour (its timings are the emulator's own)";

std::uint64_t mixSeed(std::uint64_t a, std::uint64_t b) {
    std::uint64_t x = a * 0x9e3779b97f4a7c15ull + b;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

class EmulatedCudaBackend final : public Backend {
public:
    ~EmulatedCudaBackend() override {
        m_allocations.releaseAll([](void* memory, std::size_t) {
            emu::unregisterAllocation(memory);
            std::free(memory);
        });
    }
    std::string name() const override { return "emulated-cuda"; }
    std::string deviceName() const override { return "SIMT emulator (CUDA kernels on the CPU)"; }
    std::int64_t granularity() const override { return kGranularity; }
    std::int64_t deviceUsedBytes() override { return m_allocations.roundedBytes(kGranularity); }
    std::string deviceAccountKind() const override {
        return "emulated allocations, 2 MiB pages as cudaMalloc";
    }
    bool deviceIsHost() const override { return true; }
    bool isEmulator() const override { return true; }

    Result<void*> allocate(std::size_t bytes) override {
        const std::size_t rounded =
            (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
        void* memory = std::aligned_alloc(kAlignment, rounded);
        if (!memory)
            return Error{ErrorCode::OutOfMemory, "emulated-cuda: out of host memory allocating " +
                                                     std::to_string(bytes) + " bytes"};
        // The exact size is registered: the bytes up to the alignment are out of bounds.
        emu::registerAllocation(memory, bytes);
        m_allocations.add(memory, bytes);
        return memory;
    }
    void release(void* memory) override {
        if (!m_allocations.take(memory))
            return;
        emu::unregisterAllocation(memory);
        std::free(memory);
    }
    Status upload(void* dst, const void* src, std::size_t n) override {
        return copyBytes(dst, src, n, "upload", {dst});
    }
    Status download(void* dst, const void* src, std::size_t n) override {
        return copyBytes(dst, src, n, "download", {src});
    }
    Status fill(void* dst, std::uint8_t byte, std::size_t n) override {
        if (Status inside = within(dst, n, "fill"); !inside)
            return inside;
        std::memset(dst, byte, n);
        return {};
    }
    Status copy(void* dst, const void* src, std::size_t n) override {
        return copyBytes(dst, src, n, "copy", {dst, src});
    }
    Status store(const StoreArgs& args) override {
        begin();
        return outcome(emulated::launchStore(args, nullptr), args.layout.headDim);
    }
    Status attention(const AttentionArgs& args) override {
        begin();
        return outcome(emulated::launchAttention(args, nullptr), args.layout.headDim);
    }
    Status synchronize() override { return {}; }
    // One run on the steady clock: what it measures is the emulator, never a GPU.
    Result<double> time(const std::function<Status()>& fn, int, int) override {
        if (cancelRequested(m_cancel))
            return cancelledError();
        const auto start = std::chrono::steady_clock::now();
        if (Status done = fn(); !done)
            return done.error();
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    }

private:
    // Each operation gets its own schedule, derived from the run's seed.
    void begin() {
        emu::LaunchOptions options;
        options.seed = mixSeed(m_seed, m_operations++);
        options.threads = m_threads > 0 ? m_threads : defaultThreads();
        emu::setLaunchOptions(options);
    }
    static Status outcome(cudaError_t e, int headDim) {
        if (e == cudaSuccess)
            return {};
        if (e == cudaErrorNotSupported)
            return Error{ErrorCode::Unsupported,
                         "emulated-cuda: decode supports head_dim up to 256, got " +
                             std::to_string(headDim)};
        const std::string& why = emu::lastLaunchError();
        return Error{ErrorCode::Internal,
                     "emulated-cuda: " + (why.empty() ? std::string("launch failed") : why)};
    }
    // A memcpy whose device ends (cudaMemcpy's kind says which they are) must each lie inside
    // one allocation; it copies nothing when one does not.
    Status copyBytes(void* dst, const void* src, std::size_t n, const char* what,
                     std::initializer_list<const void*> deviceEnds) const {
        for (const void* end : deviceEnds)
            if (Status inside = within(end, n, what); !inside)
                return inside;
        std::memcpy(dst, src, n);
        return {};
    }
    Status within(const void* p, std::size_t n, const char* what) const {
        const emu::Span span = emu::findAllocation(p);
        const auto a = reinterpret_cast<std::uintptr_t>(p);
        if (n == 0 || (span.end > span.begin && a + n <= span.end))
            return {};
        return Error{ErrorCode::Internal, std::string("emulated-cuda: ") + what + " of " +
                                              std::to_string(n) +
                                              " bytes outside a device allocation"};
    }

    HostAllocations m_allocations;
    std::uint64_t m_operations = 0;
};

} // namespace

BackendInfo emulatedCudaBackendInfo() {
    BackendInfo info;
    info.name = "emulated-cuda";
    info.available = true;
    info.device = "SIMT emulator on " + std::to_string(defaultThreads()) + " CPU threads";
    info.details = kWhat;
    return info;
}

Result<std::unique_ptr<Backend>> makeEmulatedCudaBackend() {
    return std::unique_ptr<Backend>(new EmulatedCudaBackend);
}

} // namespace kvl::probe
