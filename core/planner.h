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

// A plan that holds the users is not yet one to recommend: under this decode speed per user
// (tokens/s; 10 is about reading speed) or over this many pipeline stages (each adds a
// bubble and a hop per token) it is flagged, and a plan without a flag is recommended first.
inline constexpr double kDefaultMinTokensPerSecondPerUser = 10.0;
inline constexpr int kMaxRecommendedPipelineStages = 4;

struct PlanRequest {
    Scenario base;               // model, levers, engine flags; GPU and layout are searched
    std::int64_t users = 1;      // concurrent requests to hold
    std::int64_t context = 4096; // tokens each (vLLM starts with --max-model-len at least this)
    std::vector<GpuSpec> gpus;   // the kinds to try
    int maxGpus = 64;
    int gpusPerNode = 8;
    PlanRank rank = PlanRank::Gpus;
    double minTokensPerSecondPerUser = kDefaultMinTokensPerSecondPerUser; // the speed floor
    std::string preferredGpu; // the scenario's GPU id: listed first and recommended if it can be
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
    std::string flag;  // why a plan that holds the users is not recommended; empty when it is
    Scenario scenario; // the base with this GPU, layout and max model len
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
    std::string reason; // why no layout holds the users
    // The best first: the layouts of the fewest GPUs without a flag, then the flagged ones of
    // fewer GPUs still (said, not recommended); empty when none fits.
    std::vector<Deployment> layouts;
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
    std::vector<GpuPlan> gpus; // in the request's order; see bestFirst()
    std::string preferredGpu;  // the request's
    // Set by rankPlanBySlo: among the kinds that hold the users, those whose best layout meets
    // the SLO come first.
    bool rankedBySlo = false;
    // With an SLO, the kinds whose best layout meets it first; then the preferred kind, then
    // the kinds that hold the users (unflagged first, by GPUs), then those that hold nothing.
    std::vector<const GpuPlan*> bestFirst() const;
    // The plan to recommend: with an SLO, the first unflagged plan that meets it; else the
    // preferred kind's when it holds the users unflagged, else the first unflagged kind, else
    // the first that holds them (flagged); nullptr when none does.
    const GpuPlan* recommended() const;
};

// Why `d` (holding the users) is not one to recommend under `req`: "3.5 tokens/s per user,
// under the floor of 10", "PP 7, over 4 pipeline stages"; empty when neither.
std::string planFlag(const Deployment& d, const PlanRequest& req);

PlanResult planDeployments(const PlanRequest& request);

// One layout for one GPU kind (what the planner evaluates; the window's layout controls too).
Deployment evaluateDeployment(const Scenario& base, const GpuSpec& gpu, const Layout& layout,
                              std::int64_t users, std::int64_t context, int gpusPerNode = 8);

} // namespace kvl::core
