#include "gpu_probe/run/memory_guard.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

namespace kvl::probe {

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

// Saturating arithmetic on non-negative byte counts: an absurd shape must read as "too much",
// never wrap around to a small number that passes the guard.
std::int64_t add(std::int64_t a, std::int64_t b) {
    return a > kMax - b ? kMax : a + b;
}
std::int64_t mul(std::int64_t a, std::int64_t b) {
    if (a <= 0 || b <= 0)
        return 0;
    return a > kMax / b ? kMax : a * b;
}
std::int64_t mul(std::int64_t a, std::int64_t b, std::int64_t c) {
    return mul(mul(a, b), c);
}
std::int64_t roundUp(std::int64_t bytes, std::int64_t granularity) {
    if (granularity <= 1)
        return bytes;
    const std::int64_t blocks = bytes / granularity + (bytes % granularity != 0);
    return mul(std::max<std::int64_t>(blocks, 1), granularity);
}

// The device buffers, held from allocation to the end of the run (ProbeRun's DeviceState).
std::int64_t deviceBuffers(const RunShape& shape) {
    const std::int64_t rowElems = mul(shape.kvHeads, shape.headDim);
    const std::int64_t outputFloats = mul(shape.batch, shape.qHeads, shape.headDim);
    const std::int64_t scratchFloats =
        mul(mul(shape.batch, shape.qHeads), shape.maxPartitions, add(shape.headDim, 2));
    const std::int64_t buffers[] = {
        mul(shape.pages, shape.pageBytes),          // the pool
        mul(shape.streamRows, rowElems, 2),         // stream K (fp16 / bf16)
        mul(shape.streamRows, rowElems, 2),         // stream V
        mul(shape.streamRows, 8),                   // slot mapping
        mul(shape.batch, shape.maxBlocksPerSeq, 4), // block tables
        mul(shape.batch, 4),                        // context lengths
        mul(outputFloats, 4),                       // queries
        mul(outputFloats, 4),                       // attention output
        mul(scratchFloats, 4),                      // split-K scratch
        mul(shape.kvHeads, 4),                      // k_scale
        mul(shape.kvHeads, 4),                      // v_scale
    };
    std::int64_t total = 0;
    for (std::int64_t bytes : buffers)
        total = add(total, roundUp(bytes, shape.granularity));
    return total;
}

// Host vectors held for the whole run (ProbeRun's HostKv, TokenStream, block manager, output).
std::int64_t hostArrays(const RunShape& shape) {
    const std::int64_t rowElems = mul(shape.kvHeads, shape.headDim);
    const std::int64_t perRequest = 8 * 3 + 4; // first token, first row, row count; length
    std::int64_t total = 0;
    total = add(total, mul(shape.dataRowsHeld, rowElems, 2 * 4));          // K and V as float
    total = add(total, mul(shape.dataRows, rowElems, 2 * 2));              // K and V input bits
    total = add(total, mul(shape.batch, shape.qHeads, shape.headDim * 4)); // queries
    total = add(total, mul(shape.batch, shape.qHeads, shape.headDim * 4)); // output copy
    total = add(total, mul(shape.pages, 8));                               // free list + ref counts
    total = add(total, mul(shape.batch, shape.maxBlocksPerSeq, 4));        // block tables
    total = add(total, mul(shape.streamRows, 8));                          // slot mapping
    total = add(total, mul(shape.batch, perRequest + 8)); // per-request bookkeeping
    if (shape.checkStore) // the downloaded pool, kept for the quality step (and the snapshot)
        total = add(total, mul(shape.pages, shape.pageBytes));
    return total;
}

// The largest phase-local allocation (each is released before the next phase starts).
std::int64_t largestTransient(const RunShape& shape) {
    const std::int64_t rowElems = mul(shape.kvHeads, shape.headDim);
    const std::int64_t poolBytes = mul(shape.pages, shape.pageBytes);
    std::int64_t storeCheck = 0, copyYardstick = 0, quality = 0;
    if (shape.checkStore) // downloaded stream K/V and the written-bytes mask
        storeCheck = add(mul(shape.streamRows, rowElems, 2 * 2), poolBytes);
    if (shape.measureSpeed && shape.deviceIsHost)
        copyYardstick = roundUp(poolBytes, shape.granularity);
    if (shape.qualityRequests > 0) {
        if (!shape.checkStore) // the compared requests' pages, gathered
            quality = add(quality, mul(shape.qualityPages, shape.pageBytes));
        quality = add(quality, mul(shape.qualityTokens, rowElems, 2 * 4)); // dequantized K/V
        quality = add(quality, mul(shape.qualityRequests, shape.qHeads,
                                   shape.headDim * 2 * 8));                    // two FP64 outputs
        quality = add(quality, mul(shape.qualityTokens, shape.qHeads, 2 * 8)); // two logit sets
        quality = add(quality, mul(shape.qualityRequests, shape.maxBlocksPerSeq, 4));
    }
    return std::max({storeCheck, copyYardstick, quality});
}

std::int64_t readNumber(const std::string& path) {
    std::ifstream in(path);
    std::string word;
    if (!(in >> word))
        return -1;
    if (word == "max")
        return kMax;
    try {
        std::size_t used = 0;
        const long long v = std::stoll(word, &used);
        return used == word.size() && v >= 0 ? std::int64_t(v) : -1;
    } catch (...) {
        return -1;
    }
}

std::int64_t statField(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string name;
    long long value = 0;
    while (in >> name >> value)
        if (name == key)
            return value;
    return 0;
}

// The room under one cgroup directory's own limit; kMax when it sets none.
std::int64_t roomIn(const std::string& dir, bool v2) {
    const std::int64_t limit = readNumber(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    // cgroup v1 writes "no limit" as a page-aligned LONG_MAX (9223372036854771712).
    if (limit < 0 || limit >= (std::int64_t(1) << 60))
        return kMax;
    const std::int64_t usage =
        readNumber(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
    if (usage < 0)
        return kMax;
    const std::int64_t inactiveFile =
        statField(dir + "/memory.stat", v2 ? "inactive_file" : "total_inactive_file");
    const std::int64_t workingSet = std::max<std::int64_t>(0, usage - inactiveFile);
    return std::max<std::int64_t>(0, limit - workingSet);
}

// The smallest room from `dir` up to `root`, each ancestor's limit applying too.
std::int64_t roomUpTo(std::string dir, const std::string& root, bool v2) {
    std::int64_t room = kMax;
    for (;;) {
        room = std::min(room, roomIn(dir, v2));
        if (dir.size() <= root.size())
            return room;
        dir = dir.substr(0, dir.find_last_of('/'));
    }
}

std::string gigabytes(std::int64_t bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GB", double(bytes) / 1e9);
    return text;
}

} // namespace

MemoryEstimate estimateRunMemory(const RunShape& shape) {
    MemoryEstimate estimate;
    const std::int64_t device = deviceBuffers(shape);
    const std::int64_t transient = largestTransient(shape);
    const std::int64_t copyYardstick =
        shape.measureSpeed ? roundUp(mul(shape.pages, shape.pageBytes), shape.granularity) : 0;
    // On the CPU backend the copy yardstick is host memory and among the transients.
    estimate.deviceBytes = shape.deviceIsHost ? device : add(device, copyYardstick);
    estimate.hostBytes = add(hostArrays(shape), transient);
    if (shape.deviceIsHost)
        estimate.hostBytes = add(estimate.hostBytes, device);
    return estimate;
}

std::int64_t memAvailableBytes(const std::string& meminfoPath) {
    std::ifstream in(meminfoPath);
    std::string key, unit;
    long long kib = 0;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:")
            return mul(kib, 1024);
    return -1;
}

std::int64_t cgroupAvailableBytes(const std::string& procCgroupPath,
                                  const std::string& cgroupMount) {
    std::ifstream in(procCgroupPath);
    std::string line;
    std::int64_t room = kMax;
    while (std::getline(in, line)) {
        // "hierarchy-ID:controller-list:path" (cgroups(7)); v2 is "0::path".
        const auto first = line.find(':');
        const auto second = line.find(':', first == std::string::npos ? first : first + 1);
        if (first == std::string::npos || second == std::string::npos)
            continue;
        const std::string controllers = line.substr(first + 1, second - first - 1);
        std::string path = line.substr(second + 1);
        if (path == "/")
            path.clear();
        if (controllers.empty() && line.compare(0, first, "0") == 0) {
            std::ifstream unified(cgroupMount + "/cgroup.controllers");
            if (unified) // a pure v2 mount (on a hybrid one v2 carries no memory controller)
                room = std::min(room, roomUpTo(cgroupMount + path, cgroupMount, true));
            continue;
        }
        std::stringstream list(controllers);
        std::string controller;
        while (std::getline(list, controller, ','))
            if (controller == "memory")
                room = std::min(
                    room, roomUpTo(cgroupMount + "/memory" + path, cgroupMount + "/memory", false));
    }
    return room == kMax ? -1 : room;
}

std::int64_t hostAvailableBytes() {
    const std::int64_t meminfo = memAvailableBytes();
    const std::int64_t cgroup = cgroupAvailableBytes();
    if (meminfo < 0)
        return cgroup;
    return cgroup < 0 ? meminfo : std::min(meminfo, cgroup);
}

Status checkMemoryFits(std::int64_t needBytes, std::int64_t availableBytes,
                       const std::string& what) {
    if (availableBytes < 0 || needBytes <= availableBytes)
        return {};
    return Error{ErrorCode::OutOfMemory,
                 "needs " + gigabytes(needBytes) + " of " + what + ", " +
                     gigabytes(availableBytes) +
                     " available (the smaller of MemAvailable and the cgroup's room): lower "
                     "the batch or the context"};
}

} // namespace kvl::probe
