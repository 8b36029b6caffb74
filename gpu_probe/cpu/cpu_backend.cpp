// The CPU backend: host memory, threads over work items (ops.cpp) running the vector kernels
// this CPU supports (cpu_ops.cpp, cpu_simd.h), the steady clock.
#include "gpu_probe/backend.h"
#include "gpu_probe/cpu/cpu_ops.h"
#include "gpu_probe/cpu/cpu_simd.h"
#include "gpu_probe/cpu/read_stream.h"
#include "gpu_probe/host_allocations.h"
#include "gpu_probe/ops.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace kvl::probe {

namespace {

constexpr std::size_t kPage = 4096;

std::string cpuModelName() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line))
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos)
                return line.substr(std::min(line.size(), colon + 2));
        }
    return "CPU";
}

// The largest data cache the CPU reports: glibc's sysconf (from cpuid) for the L3 where there is
// one, else the L2, else the largest data or unified cache Linux lists for CPU 0 in sysfs; 0 when
// none is reported. In a VM this is the host socket's cache, shared with other guests, so a pool
// under a few times it may or may not be served partly from it.
std::int64_t lastLevelCacheBytes() {
    long bytes = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
    if (bytes <= 0)
        bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (bytes > 0)
        return std::int64_t(bytes);
    std::int64_t largest = 0;
    for (int index = 0; index < 8; ++index) {
        const std::string dir =
            "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
        std::ifstream typeFile(dir + "type"), sizeFile(dir + "size");
        std::string type;
        std::int64_t kib = 0;
        char unit = 0;
        if (typeFile >> type && type != "Instruction" && sizeFile >> kib >> unit && unit == 'K')
            largest = std::max(largest, kib * 1024);
    }
    return largest;
}

std::int64_t residentBytes() {
    std::ifstream statm("/proc/self/statm");
    std::int64_t size = 0, rss = 0;
    if (statm >> size >> rss)
        return rss * std::int64_t(sysconf(_SC_PAGESIZE));
    return 0;
}

class CpuBackend final : public Backend {
public:
    std::string name() const override { return "cpu"; }
    std::string deviceName() const override {
        return cpuModelName() + " (" + std::to_string(defaultThreads()) + " threads)";
    }
    std::int64_t granularity() const override { return kPage; }
    std::int64_t deviceUsedBytes() override { return residentBytes(); }
    std::string deviceAccountKind() const override { return "resident set (RSS) delta"; }
    bool deviceIsHost() const override { return true; }
    std::int64_t cacheBytes() const override { return lastLevelCacheBytes(); }

    // Fresh anonymous mappings (not malloc, which recycles resident heap memory): the RSS
    // delta then is an honest second account of what the pool occupies. Linux overcommits, so
    // an mmap that cannot be backed would only fail when touched, by the OOM killer: the run's
    // memory guard (run/memory_guard.h) refuses such a run before anything is allocated.
    Result<void*> allocate(std::size_t bytes) override {
        const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
        void* memory =
            mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED)
            return Error{ErrorCode::OutOfMemory,
                         "cpu: out of memory allocating " + std::to_string(bytes) + " bytes"};
        // Transparent huge pages where the system allows them (advice only; ignored where THP
        // is off or the process opted out, as tst_probe_memory's child does): a shuffled block
        // table then costs one TLB entry per 2 MiB instead of a page walk per block, as a GPU's
        // large pages do for its KV pool.
        madvise(memory, rounded, MADV_HUGEPAGE);
        m_allocations.add(memory, rounded);
        return memory;
    }
    void release(void* memory) override {
        if (const auto bytes = m_allocations.take(memory))
            munmap(memory, *bytes);
    }
    ~CpuBackend() override {
        m_allocations.releaseAll([](void* memory, std::size_t bytes) { munmap(memory, bytes); });
    }
    Status upload(void* dst, const void* src, std::size_t n) override {
        std::memcpy(dst, src, n);
        return {};
    }
    Status download(void* dst, const void* src, std::size_t n) override {
        std::memcpy(dst, src, n);
        return {};
    }
    Status fill(void* dst, std::uint8_t byte, std::size_t n) override {
        std::memset(dst, byte, n);
        return {};
    }
    Status copy(void* dst, const void* src, std::size_t n) override {
        // Chunked over the same threads the kernels use, so both see the same memory system.
        const std::size_t chunk = std::size_t(1) << 20;
        const std::int64_t chunks = std::int64_t((n + chunk - 1) / chunk);
        return parallelFor(chunks, m_threads, m_cancel, [&](std::int64_t i) {
            const std::size_t offset = std::size_t(i) * chunk;
            std::memcpy(static_cast<char*>(dst) + offset, static_cast<const char*>(src) + offset,
                        std::min(chunk, n - offset));
        });
    }
    Status readStream(const void* src, std::size_t n) override {
        auto sum = readStreamPass(src, n, m_threads, m_cancel);
        if (!sum)
            return sum.error();
        m_readSink.store(*sum, std::memory_order_relaxed); // kept: the loads cannot be dropped
        return {};
    }
    Status store(const StoreArgs& args) override { return cpuStore(args, m_threads, m_cancel); }
    Status attention(const AttentionArgs& args) override {
        return cpuAttention(args, m_threads, m_cancel);
    }
    Status synchronize() override { return {}; }
    Result<double> time(const std::function<Status()>& fn, int warmup, int repeats) override {
        for (int i = 0; i < warmup; ++i)
            if (Status done = fn(); !done)
                return done.error();
        std::vector<double> times;
        for (int i = 0; i < std::max(1, repeats); ++i) {
            const auto start = std::chrono::steady_clock::now();
            if (Status done = fn(); !done)
                return done.error();
            times.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count());
        }
        std::sort(times.begin(), times.end());
        return times[times.size() / 2];
    }

private:
    HostAllocations m_allocations;
    std::atomic<std::uint64_t> m_readSink{0};
};

} // namespace

int launchesPerTiming(double singleMs, double spanMs, int most) {
    most = std::max(1, most);
    if (!(singleMs > 0.0)) // zero, negative or NaN
        return most;
    const double wanted = std::ceil(spanMs / singleMs);
    return wanted >= double(most) ? most : std::max(1, int(wanted));
}

bool cudaCompiled() {
#if KVL_PROBE_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

std::vector<BackendInfo> listBackends() {
    std::vector<BackendInfo> out;
    BackendInfo cpu;
    cpu.name = "cpu";
    cpu.available = true;
    cpu.device = cpuModelName();
    cpu.details = std::to_string(defaultThreads()) + " threads, " + cpuSimdName() +
                  " kernels (KVL_CPU_SIMD=avx2|portable for a lower level)";
    if (const std::int64_t cache = lastLevelCacheBytes(); cache > 0)
        cpu.details += ", last-level cache " + std::to_string(cache >> 20) + " MiB";
    cpu.memoryBytes = std::int64_t(sysconf(_SC_PHYS_PAGES)) * std::int64_t(sysconf(_SC_PAGESIZE));
    out.push_back(cpu);
#if KVL_PROBE_HAVE_CUDA
    out.push_back(cudaBackendInfo());
#else
    BackendInfo cuda;
    cuda.name = "cuda";
    cuda.reason = "not compiled: no CUDA compiler was found when this build was configured";
    out.push_back(cuda);
#endif
    out.push_back(emulatedCudaBackendInfo());
    return out;
}

Result<std::unique_ptr<Backend>> makeBackend(const std::string& name) {
    if (name == "cpu")
        return std::unique_ptr<Backend>(new CpuBackend);
    if (name == "cuda") {
#if KVL_PROBE_HAVE_CUDA
        return makeCudaBackend();
#else
        return Error{ErrorCode::Unsupported,
                     "cuda backend unavailable: not compiled (no CUDA compiler at configure time)"};
#endif
    }
    if (name == "emulated-cuda")
        return makeEmulatedCudaBackend();
    return Error{ErrorCode::BadInput,
                 "unknown backend '" + name + "' (use cpu, cuda or emulated-cuda)"};
}

} // namespace kvl::probe
