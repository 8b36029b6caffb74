#pragma once
// The planner's capacity model: computeLedger's requests, weights and KV pool for one replica,
// cheap enough for the planner's inner loop over PP, DP and EP, and the KV bytes a decode step
// reads per request (the speed model's). It reuses the plan's geometry across layouts.

#include "scenario.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kvl::core {

namespace detail {
struct Plan;
}

// One replica's capacity for the planner's inner loop: computeLedger's numbers for a scenario
// whose PP, DP and EP change while the model, levers, GPU, TP and DCP stay (the geometry and
// the KV cache groups are built once).
struct ReplicaCapacity {
    bool ok = false;           // vLLM starts and at least one request of the context fits
    std::string reason;        // why not: vLLM's refusal, no memory left, an invalid scenario
    std::int64_t requests = 0; // requests of the context that fit, per replica
    std::int64_t weightsBytesPerGpu = 0;      // the largest stage's
    std::int64_t availableKvBytesPerGpu = 0;  // on the limiting stage
    std::int64_t kvPoolBytesPerGpu = 0;       // of it, in usable blocks
    std::int64_t kvBytesPerRequestPerGpu = 0; // one request at the context
};
class CapacityModel {
public:
    explicit CapacityModel(const Scenario& s);
    ~CapacityModel();
    CapacityModel(const CapacityModel&) = delete;
    CapacityModel& operator=(const CapacityModel&) = delete;
    // The scenario with these PP, DP and EP (each PP's stages are built once and kept).
    ReplicaCapacity evaluate(int pp, int dp, bool ep);
    // Bytes per GPU that `count` requests take in the last evaluated layout (prefix shared).
    std::int64_t kvBytesForRequests(std::int64_t count) const;
    // What one request of `context` tokens keeps in its pages on the limiting stage's GPUs,
    // without padding (what a decode step reads): KV, the part a sharing request reuses, and
    // the Mamba state.
    struct KvRead {
        std::int64_t perRequest = 0;
        std::int64_t sharedPerRequest = 0;
        std::int64_t statePerRequest = 0;
        std::int64_t sharingRequests = 0; // 0 = all requests share one copy
    };
    KvRead kvRead(std::int64_t context) const;

private:
    Scenario m_scenario;
    std::unique_ptr<detail::Plan> m_geometry;
    std::vector<std::unique_ptr<detail::Plan>> m_stagesByPp; // index pp - 1
    detail::Plan* m_last = nullptr;
    std::string m_invalid;
};

} // namespace kvl::core
