#pragma once
// The KV ledger: bytes per token, per request, the pool, vLLM's block and concurrency
// figures, the lever ladder and the context sweeps. Pure functions of a Scenario.

#include "deployment.h"
#include "kv_cache.h"
#include "scenario.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvl::core {

// The KV geometry a scenario stores after the attention and quantization levers.
struct EffectiveKv {
    int kvHeads = 0;            // after the attention lever (whole model)
    int kvHeadsPerGpu = 0;      // vLLM: max(1, kvHeads / tp); heads are replicated, not split
    KvFormat format;            // after the quantization lever (native dtype when off)
    std::string attentionLabel; // "MHA-32", "GQA-8", "MQA", "MLA"
};
EffectiveKv effectiveKv(const Scenario& s);

// Layers of one kind and window, as the model has them (the JSON's layer_groups).
struct LayerGroupUsage {
    LayerKind kind = LayerKind::Full;
    std::int64_t window = 0; // sliding W or chunked C
    int layers = 0;
    std::int64_t bytesPerTokenPerLayerPerGpu = 0; // 0 for state layers
    std::int64_t stateBytesPerLayerPerGpu = 0;    // state layers: conv + SSM state, one request
    std::int64_t blocksPerRequest = 0;            // per layer, paged; 0 when unpaged
    std::int64_t tokensHeldPerRequest = 0;        // per layer
};

// One of vLLM's KV cache groups on the limiting worker (the JSON's kv_cache_groups).
struct KvCacheGroupUsage {
    SpecType type = SpecType::FullAttention;
    std::int64_t window = 0; // sliding W, chunked C, or the remembered window of a promoted layer
    int layers = 0;          // real layers on this worker
    int paddingSlots = 0;    // empty slots up to the pool's group size
    bool uniformType = false;
    int blockSize = 0;
    std::int64_t pageBytes = 0;       // one layer's page (uniform type: the sum over its layers)
    std::int64_t realPageBytes = 0;   // before padding
    std::int64_t admissionBlocks = 0; // blocks one max_model_len request is admitted with
    std::int64_t blocksAtContext = 0; // blocks a request of the scenario's context holds
    std::int64_t sharedBlocksAtContext = 0; // of those, full prefix blocks shared
};

// Count per layer kind (the JSON's layer_mix).
struct LayerMix {
    int full = 0, sliding = 0, chunked = 0, mla = 0, state = 0, none = 0;
};

struct LedgerResult {
    EffectiveKv kv;
    std::int64_t contextTokens = 0;
    std::int64_t maxModelLen = 0;
    int blockSize = 0; // 0 when paging is off

    std::int64_t kvBytesPerToken = 0;       // whole model, formula (no replication)
    std::int64_t kvBytesPerTokenPerGpu = 0; // one GPU's share, with vLLM's KV-head replication
    // A replica's TP x PP GPUs together, each stage's own layers: copies of replicated KV heads
    // and MLA latents included, so MLA under TP 8 is 8 x the model's.
    std::int64_t kvBytesPerTokenPerReplica = 0;
    std::int64_t pageBytesPerGpu = 0;   // one block of B tokens across every layer, one GPU
    std::int64_t kvBytesPerRequest = 0; // at the context, a replica's GPUs together (as above)
    std::int64_t kvBytesPerRequestPerGpu = 0;
    std::int64_t sharedBytesPerRequestPerGpu = 0; // saved by each request after the first
    std::vector<LayerGroupUsage> groups;

    std::int64_t weightsBytes = 0; // whole model, including out-of-page KV scales
    std::int64_t weightsBytesPerGpu = 0;
    std::int64_t gpuMemoryBytes = 0;   // per GPU, as the driver reports it
    std::int64_t requestedBytes = 0;   // per GPU: memory x utilization
    std::int64_t activationBytes = 0;  // per GPU
    std::int64_t overheadBytes = 0;    // per GPU: non-torch memory + CUDA graphs
    std::int64_t cudaGraphBytes = 0;   // per GPU: of the overhead, the CUDA graphs (0 = none)
    bool reservesEstimated = false;    // KV Ledger's estimate, not the user's figures
    std::int64_t availableKvBytes = 0; // per GPU, never negative
    bool kvMemoryOverridden = false;

    std::int64_t numGpuBlocks = 0;     // vLLM: floor(available / page bytes), 0 unpaged
    std::int64_t gpuKvCacheTokens = 0; // vLLM's "GPU KV cache size: N tokens"
    double maxConcurrency = 0; // vLLM's "Maximum concurrency for M tokens" (M = max_model_len)
    std::int64_t maxRequestsAtContext = 0; // whole requests of this context that fit
    // What vLLM runs at once: 0 when it refuses to start (or one request does not fit), else
    // the requests that fit capped by max_num_seqs. The one number to quote per replica.
    std::int64_t requestsYouCanRun = 0;
    std::int64_t kvBytesAtMaxRequests = 0; // per GPU, what those requests take

    // vLLM v1: KV cache groups over one block pool (paged only).
    LayerMix layerMix;
    std::vector<KvCacheGroupUsage> kvCacheGroups;
    std::int64_t bytesPerBlock = 0;    // per GPU, one pool block across a group's layers
    std::int64_t blocksPerRequest = 0; // pool blocks one max_model_len request is admitted with
    std::int64_t blocksPerRequestAtContext = 0; // pool blocks a request of `context` holds
    std::int64_t gpuKvCacheTokensLegacy = 0;    // older vLLM: num_blocks // groups x min block size
    std::int64_t stateBytesPerRequest = 0; // per GPU: Mamba / linear-attention state (with padding)
    std::int64_t paddingBytesPerRequest = 0; // per GPU: padding slots and padded pages
    std::int64_t inFlightTokens = 0;         // max_in_flight_tokens in the sliding/chunked budgets
    std::int64_t estimatedMaxModelLen = 0;   // with a refusal: vLLM's binary-search estimate
    bool hybridKvCacheManagerDisabled = false; // sliding / chunked layers counted as full
    int pipelineStages = 1;
    int limitingStage = 0; // the PP stage with the fewest blocks (the per-GPU figures are its)
    std::string capacityLogLine; // "GPU KV cache size: N tokens, Maximum concurrency for ..."
    // The vLLM release whose rules these figures follow ("0.20.1"), and the lines it prints at
    // startup for them: "Available KV cache memory: ...", "GPU KV cache size: ...",
    // "Maximum concurrency for ...", in that order (paged only; empty when vLLM refuses).
    std::string vllmVersion;
    std::vector<std::string> vllmLogLines;
    std::vector<std::string> notes; // vLLM's own notes: padding layers, forced block size

    std::vector<std::string> warnings; // e.g. context beyond max position embeddings
    std::string error;                 // non-empty when the scenario cannot run (does not fit)
    bool refused = false; // `error` is vLLM's own refusal to start (a result, not bad input)
};

LedgerResult computeLedger(const Scenario& s);

// The seed's lever ladder: baseline (MHA, 16-bit, contiguous, no sharing) -> +attention
// -> +quantization -> +paging -> +prefix sharing, each step adding the scenario's lever.
// A lever that is off in the scenario repeats the previous step (applied = false).
enum class LadderStepId : std::uint8_t { Baseline, Attention, Quantization, Paging, Prefix };
struct LadderStep {
    LadderStepId id = LadderStepId::Baseline;
    std::string label; // "Baseline MHA FP16", "+GQA-8", "+INT8", "+Paging 16", "+Prefix 2K x all"
    bool applied = true;
    Scenario scenario;
    LedgerResult result;
};
std::vector<LadderStep> computeLadder(const Scenario& s);
// The scenario of ladder step `id` (the levers up to and including it).
Scenario ladderScenario(const Scenario& s, LadderStepId id);

// Contexts for the curves: log-spaced from 256 up to max(the model's max, context) capped at
// 1M (or maxContext if given), `pointsPerOctave` per doubling, ends included, strictly rising.
std::vector<std::int64_t> sweepContexts(std::int64_t maxContext, int pointsPerOctave = 8);

struct Curve {
    std::string label;
    LadderStepId step = LadderStepId::Baseline;
    bool applied = true;    // false: the lever is off, the curve repeats the previous step
    bool isCurrent = false; // the last step: the scenario itself (emphasized)
    std::vector<double> bytesPerRequestPerGpu; // y of the memory chart, per context
    std::vector<double> bytesPerRequest;       // a replica's GPUs together
    std::vector<double> maxRequests;           // y of the concurrency chart
};
struct SweepResult {
    std::vector<std::int64_t> contexts;
    std::vector<Curve> curves;         // one per ladder step; the last is the scenario itself
    std::int64_t availableKvBytes = 0; // per GPU (the horizontal line)
};
SweepResult computeSweep(const Scenario& s, int pointsPerOctave = 8);

// Fast path used by the sweep: bytes per request per GPU and whole requests that fit, at one
// context, with no strings or allocation. Same numbers as computeLedger.
struct PointResult {
    std::int64_t bytesPerRequestPerGpu = 0;
    std::int64_t bytesPerRequest = 0;
    std::int64_t maxRequests = 0;
};
PointResult computePoint(const Scenario& s, std::int64_t context);

// KV bytes per GPU that `count` requests of the scenario's context take, each sharing group
// (the prefix lever) storing its full shared blocks once. 0 for an invalid scenario.
std::int64_t kvBytesForRequests(const Scenario& s, std::int64_t count);

// The inverse question: how many GPUs of the scenario's kind hold targetRequests requests at
// the context? Two answers: the pooled arithmetic of a back-of-the-envelope sizing (weights and
// KV split evenly over n GPUs, each keeping its reserves), and what vLLM can run: the
// planner's best layout (TP x PP x DP) on this GPU kind, up to kMaxGpus GPUs.
inline constexpr int kMaxGpus = 4096;
inline constexpr int kMaxPlanGpus = 64;
struct GpusNeeded {
    int gpus = 0;       // the planner's: GPUs of the best layout vLLM accepts; 0 = none holds it
    Layout layout;      // that layout
    int pooledGpus = 0; // smallest count whose pooled memory holds the target
    int tensorParallel = 0; // the layout's TP (kept for the old JSON field)
    std::string note;       // where the pooled count and vLLM's layouts differ, or why none
    // The planner's flag on that layout (under its speed floor, over 4 pipeline stages; empty
    // when none), and then the planner's own answer on this GPU, the Deployment tab's: the
    // fewest GPUs of a layout without a flag (none when every layout that holds them has one).
    std::string flag;
    std::optional<Layout> recommended;
    std::int64_t weightsBytes = 0;
    std::int64_t kvBytes = 0; // target requests x bytes per request (one GPU's geometry)
    std::int64_t totalBytes = 0;
};
GpusNeeded computeGpusNeeded(const Scenario& s, std::int64_t targetRequests);

} // namespace kvl::core
