#pragma once
// A backend runs the two operations on its memory: `cpu` (always) and `cuda` (when compiled
// with KVL_PROBE_HAVE_CUDA and a device is present). Library code returns errors as strings
// ("" = success); only the CLI prints and exits (STYLE.md, CUDA).

#include "gpu_probe/op_args.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace kvl::probe {

struct BackendInfo {
    std::string name; // "cpu", "cuda"
    bool available = false;
    std::string reason; // why not, when unavailable
    std::string device; // "AMD EPYC ... (2 threads)", "NVIDIA H200"
    std::int64_t memoryBytes = 0;
    std::string details; // compute capability, driver/runtime, threads
};
std::vector<BackendInfo> listBackends();
bool cudaCompiled();
// Host memory available now (Linux MemAvailable), for clean refusals before allocating.
std::int64_t hostAvailableBytes();

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    virtual std::string deviceName() const = 0;
    // Allocation granularity of the pool allocator (CPU: 4 KiB pages; CUDA: 2 MiB).
    virtual std::int64_t granularity() const = 0;
    // What the device itself says is in use (cudaMemGetInfo used bytes; CPU: resident set).
    virtual std::int64_t deviceUsedBytes() = 0;
    virtual std::string deviceAccountKind() const = 0;

    virtual std::string alloc(void** p, std::size_t bytes) = 0;
    virtual void release(void* p) = 0;
    virtual std::string upload(void* dst, const void* src, std::size_t n) = 0;
    virtual std::string download(void* dst, const void* src, std::size_t n) = 0;
    virtual std::string fill(void* dst, std::uint8_t byte, std::size_t n) = 0;
    // Device-to-device copy: the bandwidth yardstick measured in the same run.
    virtual std::string copy(void* dst, const void* src, std::size_t n) = 0;
    virtual std::string store(const StoreArgs& a) = 0;
    virtual std::string attention(const AttentionArgs& a) = 0;
    virtual std::string synchronize() = 0;
    // Runs fn `warmup` times, then `repeats` timed runs; the median in ms (CUDA events on the
    // GPU, the steady clock on the CPU).
    virtual std::string time(const std::function<std::string()>& fn, int warmup, int repeats,
                             double* medianMs) = 0;

    void setCancel(const std::atomic<bool>* c) { m_cancel = c; }
    void setThreads(int n) { m_threads = n; }

protected:
    const std::atomic<bool>* m_cancel = nullptr;
    int m_threads = 0;
};

std::variant<std::unique_ptr<Backend>, std::string> makeBackend(const std::string& name);

// RAII device buffer.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { reset(); }
    std::string allocate(Backend& b, std::size_t bytes) {
        reset();
        m_backend = &b;
        m_bytes = bytes;
        return b.alloc(&m_ptr, bytes ? bytes : 1);
    }
    void reset() {
        if (m_backend && m_ptr)
            m_backend->release(m_ptr);
        m_ptr = nullptr;
        m_bytes = 0;
    }
    template <class T> T* as() const { return static_cast<T*>(m_ptr); }
    void* get() const { return m_ptr; }
    std::size_t bytes() const { return m_bytes; }

private:
    Backend* m_backend = nullptr;
    void* m_ptr = nullptr;
    std::size_t m_bytes = 0;
};

#if KVL_PROBE_HAVE_CUDA
std::variant<std::unique_ptr<Backend>, std::string> makeCudaBackend();
BackendInfo cudaBackendInfo();
#endif

} // namespace kvl::probe
