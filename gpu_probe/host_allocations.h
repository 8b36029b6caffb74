#pragma once
// The live allocations of a backend whose device memory is host memory (cpu, emulated-cuda):
// each pointer with its size, under a lock, so that release frees only a pointer of its own,
// once, with the size it was mapped with (munmap needs it), and the destructor frees what is left.

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace kvl::probe {

class HostAllocations {
public:
    void add(void* memory, std::size_t bytes) {
        const std::lock_guard<std::mutex> lock(m_mutex);
        m_sizes[memory] = bytes;
    }
    // Forgets `memory` and returns its size; nullopt for a pointer that is not one of these (a
    // foreign one, or one released already): the caller then frees nothing.
    std::optional<std::size_t> take(void* memory) {
        const std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_sizes.find(memory);
        if (it == m_sizes.end())
            return std::nullopt;
        const std::size_t bytes = it->second;
        m_sizes.erase(it);
        return bytes;
    }
    // The sum of the sizes, each rounded up to `granularity` bytes (an allocator's pages).
    std::int64_t roundedBytes(std::int64_t granularity) const {
        const std::lock_guard<std::mutex> lock(m_mutex);
        std::int64_t used = 0;
        for (const auto& [memory, bytes] : m_sizes)
            used += (std::int64_t(bytes) + granularity - 1) / granularity * granularity;
        return used;
    }
    // Hands every allocation left to free(memory, bytes) and forgets them (a backend's end).
    template <class Free> void releaseAll(Free&& free) {
        const std::lock_guard<std::mutex> lock(m_mutex);
        for (const auto& [memory, bytes] : m_sizes)
            free(memory, bytes);
        m_sizes.clear();
    }

private:
    mutable std::mutex m_mutex;
    std::map<void*, std::size_t> m_sizes;
};

} // namespace kvl::probe
