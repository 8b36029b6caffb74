#pragma once
// The deployment planner: N concurrent users at context T -> for each GPU kind, the fewest
// GPUs and the layouts (TP x PP x DP, expert and decode-context parallel) that vLLM accepts
// and that hold them, best first. Every layout is checked with vLLM's own rules and sized with
// the same ledger as the window: per-stage weights and KV pools, the null block, the refusal
// at max_model_len, and max_num_seqs capping each replica.

#include "core/deployment.h"
#include "core/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvl::core {

enum class PlanRank : std::uint8_t { Gpus, Throughput };

struct PlanRequest {
    Scenario base;               // model, levers, engine flags; GPU and layout are searched
    std::int64_t users = 1;      // concurrent requests to hold
    std::int64_t context = 4096; // tokens each (vLLM starts with --max-model-len at least this)
    std::vector<GpuSpec> gpus;   // the kinds to try
    int maxGpus = 64;
    int gpusPerNode = 8;
    PlanRank rank = PlanRank::Gpus;
};

struct Deployment {
    Layout layout;
    bool fits = false;
    std::int64_t requestsPerReplica = 0; // min(what memory holds, max_num_seqs)
    std::int64_t requestsMemoryHolds = 0;
    std::int64_t maxNumSeqs = 0;
    bool cappedByMaxNumSeqs = false;
    std::int64_t clusterRequests = 0;     // DP x per replica
    std::int64_t kvBytesPerGpu = 0;       // the users' KV on the busiest GPU
    std::int64_t kvPoolBytesPerGpu = 0;   // the KV pool per GPU
    std::int64_t weightsBytesPerGpu = 0;  // the largest stage's
    std::int64_t headroomBytesPerGpu = 0; // pool - the users' KV
    bool withinOneNode = true;            // TP x PP fits in one node
    std::string reason;                   // why it does not hold the users
    Scenario scenario;                    // the base with this GPU, layout and max model len
    // Speed at the users' concurrency (filled by the speed model).
    double decodeStepMs = 0;
    double tokensPerSecondPerUser = 0;
    double clusterTokensPerSecond = 0;
    // With a rate and an SLO (kvledger plan --rate, core/sim rankPlanBySlo): one replica of the
    // layout simulated at rate / DP.
    bool sloChecked = false;
    bool meetsSlo = false;
    double sloAttainment = 0; // fraction of requests within the SLO
    double ttftP99Ms = 0, tpotP99Ms = 0;
    std::string sloNote; // why the simulation did not run, or where it was capped
};

struct GpuPlan {
    GpuSpec gpu;
    bool fits = false;
    std::string reason;              // why no layout holds the users
    std::vector<Deployment> layouts; // the best first; empty when none fits
    // For a kind that holds nothing: the memory one GPU would need for the smallest layout
    // (weights + reserves + one request) at the largest layout tried.
    std::int64_t memoryNeededBytes = 0;
    // For a kind whose layouts hold requests but not all the users within the GPUs allowed:
    // the layout of at most maxGpus GPUs that holds the most (nearestUsers 0: none holds one).
    Layout nearestLayout;
    std::int64_t nearestUsers = 0;
    std::int64_t nearestPerReplica = 0;
};

struct PlanResult {
    std::vector<GpuPlan> gpus;                     // in the request's order; see bestFirst()
    std::vector<const GpuPlan*> bestFirst() const; // fitting kinds by GPUs, then the others
    // Set by rankPlanBySlo: bestFirst puts the kinds whose best layout meets the SLO first.
    bool rankedBySlo = false;
};

PlanResult planDeployments(const PlanRequest& request);

// One layout for one GPU kind (what the planner evaluates; the window's layout controls too).
Deployment evaluateDeployment(const Scenario& base, const GpuSpec& gpu, const Layout& layout,
                              std::int64_t users, std::int64_t context, int gpusPerNode = 8);

} // namespace kvl::core
