#pragma once
// The probe's memory guard: one formula for the peak memory of a whole run, from its shape,
// checked against what the machine can give before anything is allocated. Linux overcommits
// anonymous memory, so an allocation that cannot be backed does not fail: the process is
// killed when it touches the pages. The guard refuses such a run with the figures instead.

#include "core/result.h"

#include <cstdint>
#include <string>

namespace kvl::probe {

// Everything one run's allocations depend on, after planning (contexts clamped, pages counted).
struct RunShape {
    int kvHeads = 0, qHeads = 0, headDim = 0;
    int batch = 0;
    std::int64_t dataRows = 0;     // K/V rows generated or loaded (longest context + padding)
    std::int64_t dataRowsHeld = 0; // float rows kept (a loaded .npy keeps its whole length)
    std::int64_t streamRows = 0;   // rows of the store's input: the slot mapping's length
    std::int64_t pages = 0, pageBytes = 0;
    std::int64_t maxBlocksPerSeq = 0, maxPartitions = 0;
    int qualityRequests = 0;         // requests compared against FP64 (0: quality not measured)
    std::int64_t qualityTokens = 0;  // their tokens, summed
    std::int64_t qualityPages = 0;   // their distinct pages
    bool checkStore = false;         // the store is verified byte for byte (host pool copy)
    bool measureSpeed = false;       // a copy of the pool's size is timed
    bool deviceIsHost = true;        // device buffers are host memory (the CPU backend)
    std::int64_t granularity = 4096; // the device allocator's rounding
};

struct MemoryEstimate {
    std::int64_t hostBytes = 0;   // peak host bytes (device buffers included when deviceIsHost)
    std::int64_t deviceBytes = 0; // peak bytes of device buffers
};

// The one formula: every buffer the run allocates, held at once where the run holds them at
// once (K/V, queries, block tables, the slot mapping, the device buffers) plus the largest of
// the phase-local ones (the store check's copies, the copy yardstick, the quality step's
// dequantized K/V, FP64 outputs and logits). Saturates instead of overflowing.
MemoryEstimate estimateRunMemory(const RunShape& shape);

// MemAvailable from a meminfo file, in bytes; -1 when unknown.
std::int64_t memAvailableBytes(const std::string& meminfoPath = "/proc/meminfo");
// The room left under this process's memory cgroup and every ancestor's limit: cgroup v2
// memory.max minus memory.current, v1 memory.limit_in_bytes minus memory.usage_in_bytes, each
// plus the reclaimable inactive file cache in memory.stat (the working-set rule of the
// Kubernetes kubelet and cAdvisor). -1 when no limit applies or nothing can be read.
std::int64_t cgroupAvailableBytes(const std::string& procCgroupPath = "/proc/self/cgroup",
                                  const std::string& cgroupMount = "/sys/fs/cgroup");
// The smaller of the two known values; -1 when neither is known.
std::int64_t hostAvailableBytes();

// Ok when `needBytes` fit; otherwise OutOfMemory: "needs 24.1 GB of host memory, 22.5 GB
// available (...)". A negative `availableBytes` (unknown) always fits.
Status checkMemoryFits(std::int64_t needBytes, std::int64_t availableBytes,
                       const std::string& what = "host memory");

} // namespace kvl::probe
