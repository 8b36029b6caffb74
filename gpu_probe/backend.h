#pragma once
// A backend runs the two operations on its memory: `cpu` (always), `cuda` (when compiled
// with KVL_PROBE_HAVE_CUDA and a device is present) and `emulated-cuda` (the CUDA kernels' own
// source run on the CPU by the SIMT emulator in emu/, built wherever CUDA's headers are found).
// Library code returns kvl::Status / kvl::Result (core/result.h); only the CLI prints and exits, as
// FlashInfer's C++ API returns cudaError_t instead of aborting.

#include "core/result.h"
#include "gpu_probe/op_args.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kvl::probe {

struct BackendInfo {
    std::string name; // "cpu", "cuda", "emulated-cuda"
    bool available = false;
    std::string reason; // why not, when unavailable
    std::string device; // "AMD EPYC ... (2 threads)", "NVIDIA H200"
    std::int64_t memoryBytes = 0;
    std::string details; // compute capability, driver/runtime, threads
};
std::vector<BackendInfo> listBackends();
bool cudaCompiled();

// How many launches of an operation one event pair times, given one launch timed alone: enough
// back to back that the span is at least `spanMs`, so a CUDA event's resolution (about 0.5 us)
// and the gaps between launches are a small part of it; at most `most`. An unknown or zero
// single time gets `most`.
int launchesPerTiming(double singleMs, double spanMs = 1.0, int most = 64);

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
    // Whether device buffers live in host memory (the CPU backend): the memory guard then
    // counts them against the host's memory.
    virtual bool deviceIsHost() const = 0;

    // OutOfMemory when the device cannot hold `bytes` more.
    virtual Result<void*> allocate(std::size_t bytes) = 0;
    virtual void release(void* p) = 0;
    virtual Status upload(void* dst, const void* src, std::size_t n) = 0;
    virtual Status download(void* dst, const void* src, std::size_t n) = 0;
    virtual Status fill(void* dst, std::uint8_t byte, std::size_t n) = 0;
    // Device-to-device copy: the bandwidth yardstick measured in the same run.
    virtual Status copy(void* dst, const void* src, std::size_t n) = 0;
    // One pass that reads n bytes at src and writes nothing back (cpu/read_stream.h): decode
    // attention's yardstick, as decode reads the pool and writes almost nothing. Unsupported
    // where a backend has none (CUDA, the emulator): the run then leaves its read GB/s at 0.
    virtual Status readStream(const void* src, std::size_t n) {
        (void)src;
        (void)n;
        return Error{ErrorCode::Unsupported, name() + ": no read stream"};
    }
    virtual Status store(const StoreArgs& args) = 0;
    virtual Status attention(const AttentionArgs& args) = 0;
    virtual Status synchronize() = 0;
    // Runs fn `warmup` times, then `repeats` timed runs; the median in ms (CUDA events on the
    // GPU, the steady clock on the CPU).
    virtual Result<double> time(const std::function<Status()>& fn, int warmup, int repeats) = 0;
    // The device's last-level cache (a GPU's L2, a CPU's L3); 0 when unknown. A pool under 4x
    // this may be partly cache-resident when timed back to back, and the run says so.
    virtual std::int64_t cacheBytes() const { return 0; }
    // A backend that runs every CUDA thread as a fiber on the CPU: the check sizes its cases down
    // for it.
    virtual bool isEmulator() const { return false; }

    void setCancel(const std::atomic<bool>* c) { m_cancel = c; }
    void setThreads(int n) { m_threads = n; }
    // The run's seed: the emulator derives its schedules from it (other backends ignore it).
    void setSeed(std::uint64_t seed) { m_seed = seed; }

protected:
    const std::atomic<bool>* m_cancel = nullptr;
    int m_threads = 0;
    std::uint64_t m_seed = 1;
};

// BadInput for an unknown name, Unsupported when the backend is not compiled, NoDevice when it
// has no device.
Result<std::unique_ptr<Backend>> makeBackend(const std::string& name);

// RAII device buffer.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { reset(); }
    Status allocate(Backend& backend, std::size_t bytes) {
        reset();
        auto memory = backend.allocate(bytes ? bytes : 1);
        if (!memory)
            return memory.error();
        m_backend = &backend;
        m_ptr = *memory;
        m_bytes = bytes;
        return {};
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
Result<std::unique_ptr<Backend>> makeCudaBackend();
BackendInfo cudaBackendInfo();
#endif
// The SIMT emulator's backend (emu/emulated_backend.cpp); Unsupported, and an unavailable info
// saying why, in a build without it (emu/not_built.cpp).
Result<std::unique_ptr<Backend>> makeEmulatedCudaBackend();
BackendInfo emulatedCudaBackendInfo();

} // namespace kvl::probe
