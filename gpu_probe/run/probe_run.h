#pragma once
// One probe run as a value and its phases, in order (internal to gpu_probe; runProbe in
// probe.cpp drives them):
//
//   planRun        checks the plan and the real K/V files' headers, counts pages and stream
//                  rows, estimates the whole run's peak memory and refuses what would not fit,
//                  then loads the real K/V (nothing of them is read before the refusal)
//   allocateRun    the block manager's pages and slot mapping, the pool (poisoned, its device
//                  account measured alone) and every other device buffer
//   fillRun        synthetic K/V (or the loaded samples' bits), queries, fp8 scales, uploads
//   storeRun       the store into the pool, then (check) every stored byte against FP64
//   timeStoreRun   the copy yardstick and the store, median of repeats
//   attendRun      one decode step of paged attention, the output downloaded
//   timeAttentionRun  the decode step, median of repeats
//   measureQualityRun the output against FP64 on the unquantized and the dequantized K/V
//   accountRun     memory, bandwidth and notes from what the phases measured
//
// Each phase returns Status; the first failure (or Cancelled) ends the run.

#include "gpu_probe/backend.h"
#include "gpu_probe/run/block_manager.h"
#include "gpu_probe/run/memory_guard.h"
#include "gpu_probe/run/probe.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kvl::probe {

// The K/V the store receives, as the FP64 references see it.
struct HostKv {
    std::vector<float> keys, values;               // [rows, kv_heads, head_dim], fp16/bf16-exact
    std::vector<std::uint16_t> keyBits, valueBits; // the same values as the store's input bits
    std::vector<float> queries;                    // [batch, q_heads, head_dim]
    std::vector<float> keyScale, valueScale;       // [kv_heads] out-of-page scales (1 if none)
};

// The store's input in stream order, beside its slot mapping (vLLM reshape_and_cache's key /
// value [num_tokens, heads, dim] and slot_mapping): the shared prefix once (request 0), then
// each request's own tokens, then its padding rows (slot -1, which the store must skip).
struct TokenStream {
    std::vector<std::int64_t> slots;
    std::vector<std::int64_t> firstToken; // per request: first token it stores
    std::vector<std::int64_t> firstRow;   // per request: its first stream row
    std::vector<std::int64_t> rowCount;   // per request: its rows, padding included
    std::int64_t uniqueTokens = 0;        // tokens stored once (the shared prefix counted once)
};

struct DeviceState {
    DeviceBuffer pool, keys, values, slots, blockTables, contextLens, queries, output, scratch,
        keyScale, valueScale;
};

struct ProbeRun {
    ProbeRun(const ProbePlan& runPlan, ProbeResult& runResult, ProgressFn onProgress,
             const std::atomic<bool>* cancelFlag)
        : plan(runPlan), result(runResult), progress(std::move(onProgress)), cancel(cancelFlag) {}

    const ProbePlan& plan;
    ProbeResult& result;
    ProgressFn progress;
    const std::atomic<bool>* cancel;

    // plan
    PageLayout layout;
    std::vector<std::int64_t> contexts; // per request, clamped to the .npy length
    std::int64_t longestContext = 0;
    int paddingRows = 0; // padding slots per request (check mode)
    RunShape shape;
    std::unique_ptr<Backend> backend;
    std::int64_t npyTokens = 0; // tokens of the real K/V files, from their headers (0: synthetic)
    HostKv host;                // a loaded .npy arrives here already

    // allocate
    std::optional<BlockManager> blocks;
    BatchAllocation allocation;
    TokenStream stream;
    std::vector<std::int32_t> contextLens;
    DeviceState device;
    std::int64_t poolDeviceBytes = 0; // the device's account of the pool alone

    // store / attend
    StoreArgs storeArgs;
    AttentionArgs attentionArgs;
    std::vector<std::uint8_t> hostPool; // check mode: the pool after the store
    std::vector<float> attentionOutput; // [batch, q_heads, head_dim]
    double copyMs = 0, storeMs = 0, attentionMs = 0;
    double readGBs = 0; // the read stream over the pool; 0 where the backend has none

    void report(double percent, const std::string& stage) const;
    bool cancelled() const;
    int batch() const { return int(contexts.size()); }
    std::int64_t poolBytes() const { return shape.pages * shape.pageBytes; }
};

Status planRun(ProbeRun& run);
Status allocateRun(ProbeRun& run);
Status fillRun(ProbeRun& run);
Status storeRun(ProbeRun& run);
Status timeStoreRun(ProbeRun& run);
Status attendRun(ProbeRun& run);
Status timeAttentionRun(ProbeRun& run);
Status measureQualityRun(ProbeRun& run);
Status accountRun(ProbeRun& run);

// The plan phase up to its estimate, without the refusal and without loading the real K/V
// (estimatePeakHostBytes): a .npy plan reads the files' headers only.
Status prepareRun(ProbeRun& run);

} // namespace kvl::probe
