#pragma once
// A scenario: the model, the four KV levers (each independently on/off), the weights lever,
// the hardware and the workload. Everything the ledger computes is a pure function of it.

#include "kv_format.h"
#include "model.h"

#include <cstdint>
#include <optional>
#include <string>

namespace kvl::core {

enum class AttentionMode : std::uint8_t { Native, Mha, Gqa, Mqa };

struct AttentionLever {
    bool enabled = false;
    AttentionMode mode = AttentionMode::Native;
    int gqaKvHeads = 8; // number of KV heads (groups) for Gqa; q heads must divide by it
    friend bool operator==(const AttentionLever&, const AttentionLever&) = default;
};

struct QuantLever {
    bool enabled = false; // off: the model's native dtype (vLLM "auto")
    KvFormat format = KvFormat::defaultFor(KvDtype::Int8);
    friend bool operator==(const QuantLever&, const QuantLever&) = default;
};

struct PagingLever {
    bool enabled = true; // off: every request reserves max_model_len contiguously
    int blockSize = 16;  // vLLM's default
    friend bool operator==(const PagingLever&, const PagingLever&) = default;
};

struct PrefixLever {
    bool enabled = false;
    std::int64_t sharedTokens = 0;    // P: the common prompt prefix
    std::int64_t sharingRequests = 0; // N requests share one copy; 0 = all requests
    friend bool operator==(const PrefixLever&, const PrefixLever&) = default;
};

struct Levers {
    AttentionLever attention;
    QuantLever quant;
    PagingLever paging;
    PrefixLever prefix;
    friend bool operator==(const Levers&, const Levers&) = default;
};

struct GpuSpec {
    std::string id;   // "h100-80gb"
    std::string name; // "H100 SXM 80GB"
    std::string vendor;
    std::int64_t memoryBytes = 0; // as the driver reports it (torch total_memory)
    double bandwidthGBs = 0;      // HBM bandwidth, decimal GB/s, datasheet
    std::string memoryType;
    friend bool operator==(const GpuSpec&, const GpuSpec&) = default;
};

struct Hardware {
    GpuSpec gpu;
    int gpuCount = 1; // tensor parallel size
    double memoryUtilization = 0.9;
    // vLLM's profiled peak for Llama-3.1-8B on an H100 (REFERENCE.md 2): 4.76 GiB activation,
    // 0.13 GiB non-torch memory. Per GPU; edit for other models.
    std::int64_t activationBytes = 5'110'975'201; // 4.76 GiB
    std::int64_t overheadBytes = 139'586'437;     // 0.13 GiB
    std::optional<std::int64_t> kvMemoryBytes;    // vLLM kv_cache_memory_bytes: overrides all
    std::optional<WeightDtype> weightDtype;       // weights lever; empty = the model's
    friend bool operator==(const Hardware&, const Hardware&) = default;
};

struct Workload {
    std::int64_t context = 4096;             // tokens per request
    std::int64_t maxModelLen = 0;            // 0 = the model's max context
    std::int64_t maxNumBatchedTokens = 8192; // vLLM scheduler budget (sliding-window slack)
    std::int64_t targetRequests = 0;         // for gpus_needed; 0 = not asked
    friend bool operator==(const Workload&, const Workload&) = default;
};

struct Scenario {
    ModelSpec model;
    Levers levers;
    Hardware hardware;
    Workload workload;

    std::int64_t effectiveMaxModelLen() const {
        return workload.maxModelLen > 0 ? workload.maxModelLen : model.maxContext;
    }
    // A one-line error naming the first bad field, or nothing.
    std::optional<std::string> validate() const;
};

// Bytes <-> GiB helpers (GiB = 2^30; GB = 10^9; never mixed).
inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;
inline constexpr std::int64_t kGB = 1'000'000'000;
std::int64_t gibToBytes(double gib); // rounded to the nearest byte
double bytesToGiB(std::int64_t bytes);

} // namespace kvl::core
