// The CPU backend: host memory, threads over work items (ops.cpp), the steady clock.
#include "gpu_probe/backend.h"
#include "gpu_probe/ops.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace kvl::probe {

namespace {

constexpr std::size_t kPage = 4096;

std::string cpuModelName() {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("model name", 0) == 0) {
            const auto p = line.find(':');
            if (p != std::string::npos)
                return line.substr(std::min(line.size(), p + 2));
        }
    return "CPU";
}

// MemAvailable from /proc/meminfo (what can be touched without swapping or the OOM killer).
std::int64_t availableBytes() {
    std::ifstream f("/proc/meminfo");
    std::string key;
    std::int64_t kb = 0;
    std::string unit;
    while (f >> key >> kb >> unit)
        if (key == "MemAvailable:")
            return kb * 1024;
    return std::int64_t(sysconf(_SC_AVPHYS_PAGES)) * std::int64_t(sysconf(_SC_PAGESIZE));
}

std::int64_t residentBytes() {
    std::ifstream f("/proc/self/statm");
    std::int64_t size = 0, rss = 0;
    if (f >> size >> rss)
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

    // Fresh anonymous mappings (not malloc, which recycles resident heap memory): the RSS
    // delta then is an honest second account of what the pool occupies.
    std::string alloc(void** p, std::size_t bytes) override {
        const std::size_t rounded = (bytes + kPage - 1) / kPage * kPage;
        // Linux overcommits: an mmap that cannot be backed only fails when touched, by the
        // OOM killer. Refuse up front what would not fit in the memory available now.
        if (std::int64_t(rounded) > availableBytes() * 9 / 10) {
            *p = nullptr;
            return "cpu: out of memory: " + std::to_string(bytes) + " bytes requested, " +
                   std::to_string(availableBytes()) + " available";
        }
        void* m =
            mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            *p = nullptr;
            return "cpu: out of memory allocating " + std::to_string(bytes) + " bytes";
        }
        std::lock_guard<std::mutex> lock(m_mutex);
        m_sizes[m] = rounded;
        *p = m;
        return {};
    }
    void release(void* p) override {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_sizes.find(p);
        if (it == m_sizes.end())
            return;
        munmap(p, it->second);
        m_sizes.erase(it);
    }
    ~CpuBackend() override {
        for (auto& [p, n] : m_sizes)
            munmap(p, n);
    }
    std::string upload(void* d, const void* s, std::size_t n) override {
        std::memcpy(d, s, n);
        return {};
    }
    std::string download(void* d, const void* s, std::size_t n) override {
        std::memcpy(d, s, n);
        return {};
    }
    std::string fill(void* d, std::uint8_t b, std::size_t n) override {
        std::memset(d, b, n);
        return {};
    }
    std::string copy(void* d, const void* s, std::size_t n) override {
        // Chunked over the same threads the kernels use, so both see the same memory system.
        const std::size_t chunk = std::size_t(1) << 20;
        const std::int64_t chunks = std::int64_t((n + chunk - 1) / chunk);
        parallelFor(chunks, m_threads, nullptr, [&](std::int64_t i) {
            const std::size_t off = std::size_t(i) * chunk;
            std::memcpy(static_cast<char*>(d) + off, static_cast<const char*>(s) + off,
                        std::min(chunk, n - off));
        });
        return {};
    }
    std::string store(const StoreArgs& a) override { return cpuStore(a, m_threads, m_cancel); }
    std::string attention(const AttentionArgs& a) override {
        return cpuAttention(a, m_threads, m_cancel);
    }
    std::string synchronize() override { return {}; }
    std::string time(const std::function<std::string()>& fn, int warmup, int repeats,
                     double* ms) override {
        for (int i = 0; i < warmup; ++i)
            if (auto e = fn(); !e.empty())
                return e;
        std::vector<double> t;
        for (int i = 0; i < std::max(1, repeats); ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            if (auto e = fn(); !e.empty())
                return e;
            t.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count());
        }
        std::sort(t.begin(), t.end());
        *ms = t[t.size() / 2];
        return {};
    }

private:
    std::mutex m_mutex;
    std::map<void*, std::size_t> m_sizes;
};

} // namespace

std::int64_t hostAvailableBytes() {
    return availableBytes();
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
    cpu.details = std::to_string(defaultThreads()) + " threads";
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
    return out;
}

std::variant<std::unique_ptr<Backend>, std::string> makeBackend(const std::string& name) {
    if (name == "cpu")
        return std::unique_ptr<Backend>(new CpuBackend);
    if (name == "cuda") {
#if KVL_PROBE_HAVE_CUDA
        return makeCudaBackend();
#else
        return std::string(
            "cuda backend unavailable: not compiled (no CUDA compiler at configure time)");
#endif
    }
    return "unknown backend '" + name + "' (use cpu or cuda)";
}

} // namespace kvl::probe
