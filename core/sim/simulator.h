#pragma once
// A discrete-event simulation of vLLM v1's scheduler serving a workload on one replica of a
// scenario: what latency users get, and how many requests per second the replica serves at an
// SLO. Pure C++20, single-threaded, deterministic for a seed.
//
// The engine loop advances from one step to the next; each step follows
// vllm/v1/core/sched/scheduler.py (Scheduler.schedule):
//   - running requests first, in order, each taking min(its remaining tokens, the budget left)
//     of max_num_batched_tokens (chunked prefill); when its blocks cannot be allocated, the
//     last running request is preempted (FCFS: running.pop()) and goes to the front of the
//     waiting queue with its KV freed (recompute), until it fits or preempts itself;
//   - then, only if nothing was preempted, waiting requests in order while the budget lasts and
//     fewer than max_num_seqs run: a prefix-cache lookup (get_computed_blocks, never the last
//     token), and admission only when the whole sequence fits (scheduler_reserve_full_isl,
//     allocate_slots(full_sequence_must_fit=True)); the first that does not fit stops the loop.
// Blocks come from one pool of the ledger's own size (LedgerResult::numGpuBlocks less vLLM's
// null block) shared by the ledger's KV cache groups, as vllm/v1/core/block_pool.py does:
// reference counts, a free queue evicted from its head (least recently freed first, a
// request's blocks freed tail first), and a hash table of full blocks
// (vllm/v1/core/kv_cache_manager.py, single_type_kv_cache_manager.py):
//   - full attention (and MLA): ceil(tokens / block) blocks;
//   - sliding window W: blocks wholly before token (computed - W + 1) are freed
//     (SlidingWindowManager.remove_skipped_blocks); chunked local C: blocks before the current
//     chunk's start;
//   - Mamba / linear attention: the ledger's fixed blocks per request.
// A request's full blocks are cached under a key of its prefix group (blocks wholly inside the
// shared prefix) or of itself (the rest, which a preempted request finds again when it is
// recomputed).
// Without paging (the ledger's "contiguous" ladder steps, before vLLM) every request reserves
// max_model_len up front: as many run at once as the ledger's contiguous reservations fit, a
// running request never runs out of room (no preemption) and nothing is shared (no prefix
// cache); the step still reads only the tokens each request holds, as core::speed does.
// The step time is core::StepCost (core/speed.h) of the step's decode tokens, prefill tokens and
// the blocks in use.
//
// Async scheduling (on by default, as in vLLM; EngineOptions::asyncScheduling or
// SimOptions::asyncScheduling) follows vllm/v1/core/sched/async_scheduler.py and
// vllm/v1/engine/core.py (step_with_batch_queue, two batches): step k+1 is scheduled at step
// k's start, its running requests' tokens in flight as placeholders (num_output_placeholders),
// a request whose last token is in flight not scheduled again; step k's tokens come back, and
// its finished requests free their blocks and slots, after that. Its time saving (the host's
// scheduling hidden behind the GPU) is not modelled: the step cost has no host time
// (SpeedAssumptions::fixedStepMs 0 by default).
//
// What it leaves out, said plainly: speculative decoding, the KV connector, priorities, the
// watermark (0 by default), encoder inputs; prefix hits are
// found group by group as one consecutive run of cached blocks, and Mamba groups never shorten
// a hit (their state is assumed cached at the boundary, as mamba_cache_mode "align" aims to).

#include "core/planner.h"
#include "core/result.h"
#include "core/scenario.h"
#include "core/sim/workload.h"
#include "core/speed.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kvl::core::sim {

// The bounds that keep one simulation finite; past them it stops and says so.
inline constexpr std::int64_t kDefaultMaxWaiting = 200'000;
inline constexpr std::int64_t kDefaultMaxSteps = 20'000'000;
inline constexpr std::int64_t kMaxPoolBlocks = std::int64_t{1} << 23; // 8M blocks
inline constexpr int kDefaultSeriesPoints = 1000;
inline constexpr std::size_t kDefaultMaxSamples = std::size_t{1} << 21; // latencies kept

struct SimOptions {
    SpeedAssumptions speed;
    double sloTtftMs = 0; // 0 = no TTFT objective
    double sloTpotMs = 0; // 0 = no TPOT objective
    std::int64_t maxWaiting = kDefaultMaxWaiting;
    std::int64_t maxSteps = kDefaultMaxSteps;
    int seriesPoints = kDefaultSeriesPoints;
    std::size_t maxSamples = kDefaultMaxSamples;
    bool prefixCaching = true; // vLLM's --enable-prefix-caching (on by default)
    // vLLM's async scheduling (vllm/v1/core/sched/async_scheduler.py): the next step is
    // scheduled while one runs, with the running requests' tokens in flight as placeholders.
    // Empty: the scenario's (EngineOptions::asyncScheduling, --no-async-scheduling).
    std::optional<bool> asyncScheduling;
    // Inter-token latencies are one sample per generated token (SimResult::itlMs); a caller
    // that shows none of them (the Traffic tab) turns them off.
    bool interTokenLatency = true;
    // Above 0: the run stops as soon as its SLO attainment can no longer reach this share
    // (more requests have missed the SLO than the rest could make up, were every one of them
    // to meet it), with `sloOutOfReach` set and `capped` saying so. A rate search asks only
    // whether a rate meets the SLO, and a rate past the knee is settled by its first few
    // misses rather than by serving its whole queue.
    double stopBelowAttainment = 0;
    int traceSteps = 0; // record what the first N steps schedule (tests)
    // A caller on another thread (the window's Traffic tab) stops a run by setting this; the
    // simulation looks at it every kCancelCheckSteps engine steps and between the runs of a rate
    // search, and returns with `cancelled` set and an error saying so.
    const std::atomic<bool>* cancel = nullptr;
    // Told how far the work is, from 0 to 1, never decreasing, and 1 once at the end of a run
    // that was not cancelled: a run reports its served requests over those it was asked for
    // (nothing in between for a trace, whose length is not known), a rate search its runs.
    // Called on the simulating thread.
    std::function<void(double fraction)> progress;
};
inline constexpr std::int64_t kCancelCheckSteps = 64;
inline constexpr std::int64_t kProgressEverySteps = 256;

struct Percentiles {
    double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
    std::int64_t count = 0;
};

// Sampled state over time, at most SimOptions::seriesPoints points (the interval doubles when
// it would hold more).
struct TimeSeries {
    std::vector<double> t; // seconds
    std::vector<std::int64_t> running, waiting;
    std::vector<std::int64_t> preempted;                // preemptions so far
    std::vector<std::vector<std::int64_t>> blocksInUse; // [group][point]
};

struct SimResult {
    std::string error;  // the simulation could not run (no paging, nothing fits, a bad trace line)
    std::string capped; // non-empty when it stopped at a bound: which one, and when
    bool cancelled = false;     // SimOptions::cancel stopped it (error says so too)
    bool sloOutOfReach = false; // SimOptions::stopBelowAttainment stopped it (capped says so)
    std::vector<std::string> notes;

    // The pool and its groups, from the ledger.
    std::int64_t numBlocks = 0;           // usable: the ledger's num_gpu_blocks less the null block
    std::vector<std::string> groupLabels; // "full_attention", "sliding_window 4096", ...
    std::int64_t maxNumSeqs = 0, maxNumBatchedTokens = 0;

    std::int64_t arrived = 0, completed = 0, rejected = 0; // rejected: longer than max_model_len
    std::int64_t preemptions = 0, steps = 0;
    std::int64_t promptTokens = 0, outputTokens = 0; // of completed requests
    std::int64_t prefixHitTokens = 0;                // found in the prefix cache at admission
    double endS = 0;                                 // the last completion
    double lastArrivalS = 0;

    Percentiles ttftMs, tpotMs, e2eMs;
    Percentiles itlMs;        // inter-token latency: every gap between two tokens of a request
    double meanLatencyS = 0;  // end to end, over completed requests
    double meanServiceS = 0;  // first scheduled to done (time running, queueing excluded)
    double meanInSystem = 0;  // time-average of running + waiting over [0, last arrival]
    double meanRunning = 0;   // time-average of running over [0, last arrival]
    double throughputRps = 0; // completed / endS
    double outputTokensPerS = 0;
    double goodputRps = 0;    // completed within the SLO / endS
    double sloAttainment = 0; // fraction of completed within the SLO (1 without one)
    std::int64_t peakRunning = 0, peakWaiting = 0;
    std::vector<std::int64_t> peakBlocksInUse; // per group
    std::int64_t peakBlocksTotal = 0;
    TimeSeries series;
    // The first SimOptions::traceSteps steps: (request number from 1, tokens scheduled), in
    // the order the scheduler took them.
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> stepTrace;
};

// Simulates the scenario's replica serving `source` until it ends and every request is served,
// or a bound is hit.
SimResult simulate(const Scenario& s, RequestSource& source, const SimOptions& o = {});
SimResult simulate(const Scenario& s, const WorkloadSpec& w, const SimOptions& o = {});

// The largest arrival rate whose run keeps `attainment` of its requests within the SLO (and
// is not capped), found by bisection between 0 and a rate that fails, to `relTolerance`.
struct RateSearch {
    bool found = false;   // some rate above the lowest tried meets the SLO
    double rate = 0;      // requests per second
    double upperRate = 0; // the lowest rate seen to fail
    int runs = 0;
    SimResult atRate; // the run at `rate`
    std::string note;
    bool cancelled = false; // SimOptions::cancel stopped the search (note says so)
};
RateSearch sustainableRate(const Scenario& s, WorkloadSpec w, const SimOptions& o,
                           double attainment = 0.99, double relTolerance = 0.01);

// A first guess of the saturation rate from the static figures: the requests that run at once
// (the ledger's at prompt + output tokens, capped by max_num_seqs) and the GPU time one costs
// (its prefill at core::prefillMsEstimate, plus its share of the decode steps at that batch at
// core::decodeStep).
double staticRateBound(const Scenario& s, const WorkloadSpec& w, const SpeedAssumptions& a = {});

// kvledger plan --rate: simulates one replica of each of a GPU kind's first `layoutsPerGpu`
// layouts at rate / DP and ranks them by whether `attainment` of their requests meet the SLO,
// then by GPUs (the planner's order among equals); sets plan.rankedBySlo.
void rankPlanBySlo(PlanResult& plan, double rate, WorkloadSpec w, const SimOptions& o,
                   double attainment = 0.99, int layoutsPerGpu = 8);

// Why a scenario for another engine than vLLM is not simulated: the scheduler and the block
// pool simulated are vLLM v1's, and SGLang's, TensorRT-LLM's or llama.cpp's would give other
// numbers (one line, no final period; the window and the command line both show it).
std::string engineNotSimulated(core::Engine engine);

} // namespace kvl::core::sim
