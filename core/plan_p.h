#pragma once
// The plan of a scenario, private to core (only core's .cpp files include it): what every layer
// keeps per token, vLLM's KV cache groups, the PP stages and the memory left on each, and what
// one request costs in them. The ledger, the ladder's sweep and the capacity model all price
// requests from one plan, so their figures cannot disagree; nothing here calls back into them.

#include "deployment.h"
#include "kv_cache.h"
#include "kv_format.h"
#include "saturating.h"
#include "scenario.h"
#include "vllm_version.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kvl::core::detail {

// Saturating arithmetic: an absurd scenario reads "more than 8 EiB", never wraps around.
inline constexpr std::int64_t kInt64Max = kSaturated;

// What one layer keeps per token (attention, MLA) or per request (state), on one GPU.
struct LayerBytes {
    LayerKind kind = LayerKind::Full;
    std::int64_t window = 0;
    std::int64_t perTokenPerGpu = 0;  // attention / MLA, with KV-head replication
    std::int64_t perTokenModel = 0;   // the same without TP: the formula figure
    std::int64_t statePerRequest = 0; // state layers, one GPU
    int kvHeadsPerGpu = 0, headSize = 0, headSizeV = 0;
    KvFormat format; // the layer's own: TurboQuant leaves a dense model's boundary layers be
};

// A stage's layers summed for contiguous reservation: full-length layers, windowed layers
// per window, and the fixed state.
struct UnpagedSums {
    std::int64_t fullPerToken = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> windowed; // (window, bytes per token)
    std::int64_t state = 0;
};

struct StagePlan {
    int firstLayer = 0, lastLayer = 0;
    UnpagedSums unpaged;
    CacheGroups groups; // projected onto this stage (paged)
    std::int64_t bytesPerBlock = 0;
    std::int64_t weightsBytes = 0; // this GPU
    std::int64_t availableKvBytes = 0;
    std::int64_t numBlocks = 0; // available // bytes per block (paged)
};

// Everything a scenario's points need, computed once (the sweep's points cost a few
// multiplications per group each).
struct Plan {
    KvFormat format;
    int kvHeads = 0, tp = 1, pp = 1, dcp = 1;
    std::vector<LayerBytes> layers;
    int blockSize = 0; // attention block size; 0 = unpaged
    std::int64_t maxModelLen = 0;
    AdmissionInputs admission;
    std::int64_t prefixTokens = 0;    // 0 = no sharing
    std::int64_t sharingRequests = 0; // 0 = all
    std::int64_t weightsTotal = 0;
    std::int64_t activationBytes = 0, overheadBytes = 0; // per GPU, used
    std::int64_t cudaGraphBytes = 0; // per GPU: the CUDA graphs' share of overheadBytes
    bool reservesEstimated = false;
    std::optional<WeightModel> weightModel; // cached: the same for every PP, DP and EP
    std::optional<Reserves> reserves;
    CacheGroups groups; // whole model (paged)
    VllmRules rules;    // the scenario's vLLM release, looked up once per plan
    std::vector<StagePlan> stages;
    int limiting = 0;           // stage index with the fewest blocks (or least memory unpaged)
    std::int64_t numBlocks = 0; // min over stages
    std::string groupError;     // vLLM cannot build the groups
    std::string blockError;     // vLLM accepts no backend for the user's block size
    std::vector<std::string> blockNotes;
};

// The scenario as the plan reads it: KV heads and format after the levers, TP, the weights
// (with the KV scales beside them) and the memory asked of each GPU.
int effectiveKvHeads(const Scenario& s);
KvFormat effectiveFormat(const Scenario& s);
std::int64_t weightsTotal(const Scenario& s, const KvFormat& f, int kvHeads);
int tpOf(const Scenario& s);
std::int64_t requestedBytes(const Scenario& s);
LayerSpec heldLayer(const LayerSpec& l);

// The plan in three steps, so that the capacity model redoes only what a layout changes: the
// geometry (model, levers, GPU, TP, DCP), the PP stages, then the memory (DP and EP too).
// buildPlan does all three.
Plan planGeometry(const Scenario& s);
void planStages(Plan& p, const Scenario& s);
void planMemory(Plan& p, const Scenario& s);
Plan buildPlan(const Scenario& s);
const StagePlan& limitingStage(const Plan& p);

// Blocks one request of `context` tokens holds in a group during decode, and of those the full
// prefix blocks it shares. Sliding and chunked layers keep only their window: vLLM frees the
// blocks that fall out of it (SlidingWindowManager / ChunkedLocalAttentionManager
// remove_skipped_blocks).
struct Holding {
    std::int64_t blocks = 0;
    std::int64_t sharedBlocks = 0;
};
Holding groupHolding(const Plan& p, const CacheSpec& spec, std::int64_t context);
Holding requestHolding(const Plan& p, const CacheGroups& groups, std::int64_t context);

// Contiguous reservation (pre-paging engines): every request reserves the maximum length up
// front in every layer of the stage; sliding and chunked layers their window.
struct UnpagedBytes {
    std::int64_t perRequest = 0;
    std::int64_t state = 0;
};
UnpagedBytes unpagedBytes(const Plan& p, const StagePlan& st, std::int64_t context);

std::int64_t requestsThatFit(std::int64_t pool, std::int64_t r, std::int64_t shared,
                             std::int64_t n);
std::int64_t unitsForRequests(std::int64_t count, std::int64_t r, std::int64_t shared,
                              std::int64_t n);

// One request at `context` on the limiting GPU: pool blocks (paged) or bytes (unpaged), what
// the prefix saves, and the pool to fit them in, in the same unit.
struct PointCost {
    std::int64_t units = 0;       // blocks or bytes per request
    std::int64_t sharedUnits = 0; // saved by each sharing request after the first
    std::int64_t pool = 0;        // usable blocks (the null block excluded) or bytes
    std::int64_t bytesPerUnit = 1;
};
PointCost pointCost(const Plan& p, std::int64_t context);

// The bytes one request of `context` holds on a whole replica: each PP stage's request (its
// own layers, blocks of its own size) on each of its TP GPUs. pointCost is the limiting
// stage's alone; with PP stages of unequal layers (80 layers in 3: 27, 27, 26) its value times
// TP x PP would count the limiting stage's layers three times. `limiting` is
// pointCost(p, context), which the callers have: the limiting stage is not worked out again.
std::int64_t replicaRequestBytes(const Plan& p, std::int64_t context, const PointCost& limiting);

// _check_enough_kv_cache_memory on every worker, with the null block held back.
struct Refusal {
    bool refused = false;
    std::string message;
    std::int64_t estimatedMaxModelLen = 0;
};
Refusal checkEnoughMemory(const Plan& p, bool withEstimate);

} // namespace kvl::core::detail
