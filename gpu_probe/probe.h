#pragma once
// The probe's public API: a plan (model layer, KV format, paging, workload, backend), a run
// with progress and cancellation, and the ProbeResult value type the CLI prints and the GUI
// shows beside core's prediction. No Qt: this builds on the GPU machine on its own.

#include "core/kv_format.h"
#include "core/model.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kvl::probe {

struct ProbeFormat {
    std::string id;        // CLI spelling: "fp16", "fp8_e4m3-per-head", "int4-g32", "int2-kivi"
    std::string label;     // short label for tables: "FP8 E4M3 per-head", "INT4 g32"
    core::KvFormat format; // byte sizes come from core
};
// Every format the probe implements (the check and bench axes).
std::vector<ProbeFormat> allProbeFormats();
// "fp16", "bf16", "fp32", "fp8"/"fp8_e4m3", "fp8_e5m2" (+ "-per-head"), "int8", "int4"
// (= "int4-g128"), "int4-g32", "int4-g64", "int4-kivi", "int2" (= "int2-kivi"). Errors list them.
std::variant<ProbeFormat, std::string> parseProbeFormat(const std::string& spec);

struct ProbePlan {
    std::string backend = "cpu";
    core::ModelSpec model; // one layer of it is probed (full attention)
    ProbeFormat format;
    int blockSize = 16;
    int batch = 1;
    std::int64_t context = 4096;
    std::int64_t prefixTokens = 0;      // shared prompt prefix (full blocks are shared)
    std::vector<std::int64_t> contexts; // per-request contexts; overrides batch x context
    bool bf16Input = false;
    std::uint64_t seed = 1;
    int threads = 0; // CPU threads, 0 = all

    bool measureSpeed = true;
    int warmup = 1;
    int repeats = 5;
    bool measureQuality = true;
    int qualityRequests = 2;                   // requests compared against FP64 (the first ones)
    std::vector<std::int64_t> qualityContexts; // quality-vs-context sweep (batch 1 each)
    bool checkStore = false; // poison the pool and verify every stored byte (check)
    bool keepPool = false;   // with checkStore: return the stored pages (cross-backend check)

    std::string kNpy, vNpy; // real K/V samples [tokens, kv_heads, head_dim]
};

struct QualityPoint {
    std::int64_t context = 0;
    double relL2 = 0;
    double maxAbs = 0;
    double top8 = 0;
    double kernelVsRefRelL2 = 0;
};

struct ProbeResult {
    bool ok = false;
    bool cancelled = false;
    std::string error; // one line when !ok

    std::string backend, device, formatId, formatLabel, dtype;
    std::string modelId;
    int kvHeads = 0, qHeads = 0, headDim = 0;
    int blockSize = 0, batch = 0;
    std::int64_t context = 0, prefixTokens = 0;

    // Memory (one layer).
    std::int64_t pageBytes = 0;
    std::int64_t predictedPoolBytes = 0; // core::computeLedger for the 1-layer scenario
    std::int64_t poolBytes = 0;          // pages x page bytes (what the pool holds)
    std::int64_t allocatedPoolBytes = 0; // rounded to the allocator granularity
    std::int64_t devicePoolBytes = 0;    // the device's own account (cudaMemGetInfo / RSS delta)
    std::string deviceAccountKind;
    std::int64_t allocatorGranularity = 0;
    std::int64_t pagesUsed = 0, pagesSaved = 0;
    double memoryErrorPct = 0; // (allocated - predicted) / predicted x 100

    // Speed.
    bool speedMeasured = false;
    double copyGBs = 0; // device copy, read + write bytes, same run
    double storeMs = 0, storeGBs = 0, storePctOfCopy = 0;
    std::int64_t storeBytes = 0;
    double attentionMs = 0, tokensPerS = 0, attentionGBs = 0, attentionPctOfCopy = 0;
    std::int64_t attentionBytes = 0; // unique pool bytes read (shared pages once)

    // Quality (vs FP64 on the unquantized data).
    bool qualityMeasured = false;
    double relL2 = 0, maxAbs = 0, top8 = 0;
    double kernelVsRefRelL2 = 0; // kernel vs FP64 on the same dequantized pages
    double kRelL2 = 0, vRelL2 = 0, kMaxAbs = 0, vMaxAbs = 0; // per-element storage error
    std::vector<QualityPoint> qualityVsContext;
    std::string storeCheck;                 // "" or the first store violation (checkStore)
    std::vector<std::uint8_t> poolSnapshot; // the pages after the store (keepPool)
    std::string dataSource = "synthetic";
    std::vector<std::string> notes;
};

using ProgressFn = std::function<void(double percent, const std::string& stage)>;

// Runs a plan. Never throws or exits: bad arguments, no device, out of memory and cancellation
// all end in ok = false with `error` set. `cancel` may be set from another thread; it is
// polled between chunks of work.
ProbeResult runProbe(const ProbePlan& plan, const ProgressFn& progress = {},
                     const std::atomic<bool>* cancel = nullptr);

// core's prediction of the pool bytes for one layer of `model` holding `batch` requests of
// `context` tokens with a shared prefix (vLLM's rule), through core::computeLedger.
std::variant<std::int64_t, std::string>
predictedPoolBytes(const core::ModelSpec& model, const core::KvFormat& format, int blockSize,
                   int batch, std::int64_t context, std::int64_t prefixTokens);

// kvprobe check: every operation x format x layout against the FP64 references.
struct CheckCase {
    std::string name;
    bool passed = false;
    std::string detail;
};
struct CheckReport {
    std::string backend, device;
    std::vector<CheckCase> cases;
    int passed = 0, failed = 0;
    std::string error; // the run itself failed (no device, cancelled)
};
CheckReport runCheck(const std::string& backend, std::uint64_t seed,
                     const ProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr,
                     int threads = 0);

// kvprobe bench: formats x contexts x batch sizes.
struct BenchReport {
    std::string backend, device;
    double copyGBs = 0; // median of the rows' copy measurements
    std::vector<ProbeResult> rows;
    std::vector<std::pair<std::string, std::vector<QualityPoint>>> qualityVsContext; // per format
    std::string error;
};
BenchReport runBench(const std::string& backend, bool quick, std::uint64_t seed,
                     const ProgressFn& progress = {}, const std::atomic<bool>* cancel = nullptr);

// The default layer: Llama-3-8B from the catalog (32 q heads, 8 KV heads, head_dim 128), or an
// equivalent spec when the catalog is unavailable.
core::ModelSpec defaultModel();

} // namespace kvl::probe
