#pragma once
// The probe's public API: a plan (model layer, KV format, paging, workload, backend), a run
// with progress and cancellation, the sweep over formats x contexts x batch sizes that both
// `kvprobe bench` and the explorer run, the check, and the result types the CLI prints and the
// GUI shows beside core's prediction. No Qt: this builds on the GPU machine on its own.

#include "core/kv_format.h"
#include "core/model.h"
#include "core/result.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
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
// (= "int4-g128"), "int4-g32", "int4-g64", "int4-kivi", "int2" (= "int2-kivi"). BadInput lists
// them.
Result<ProbeFormat> parseProbeFormat(const std::string& spec);

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

    // Host memory the run may use; 0 = the smaller of MemAvailable and the cgroup's room
    // (memory_guard.h). Tests set it to check the refusal without a machine of that size.
    std::int64_t hostMemoryLimitBytes = 0;
};

struct QualityPoint {
    std::int64_t context = 0;
    double relL2 = 0;
    double maxAbs = 0;
    double top8 = 0;
    double kernelVsRefRelL2 = 0;
};

// How a run, a sweep or a check ended. Cancelled is not a failure to report as one.
enum class ProbeStatus : std::uint8_t { Ok, Failed, Cancelled };
std::string_view probeStatusName(ProbeStatus status); // "ok", "failed", "cancelled"
// Failed, or Cancelled for ErrorCode::Cancelled.
ProbeStatus statusFor(const Error& error);

struct ProbeResult {
    ProbeStatus status = ProbeStatus::Failed;
    Error error; // why, when status != Ok (code Cancelled exactly when status is Cancelled)
    bool ok() const { return status == ProbeStatus::Ok; }
    void fail(Error why) {
        status = statusFor(why);
        error = std::move(why);
    }

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
    double memoryErrorPct = 0; // (allocated - predicted) / predicted x 100: allocator rounding
    std::int64_t estimatedPeakHostBytes = 0; // the memory guard's estimate for this run

    // Speed.
    bool speedMeasured = false;
    double copyGBs = 0; // device copy, read + write bytes, same run
    // A read stream over the pool, same run (cpu/read_stream.h): decode's yardstick. 0 when not
    // measured: a backend without one (CUDA, the emulator), a file from an older kvprobe.
    double readGBs = 0;
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
    Status storeCheck;                      // checkStore: Ok or the first store violation
    std::vector<std::uint8_t> poolSnapshot; // the pages after the store (keepPool)
    std::string dataSource = "synthetic";
    std::vector<std::string> notes;
};

// The one result type of a sweep (kvprobe bench, the explorer's runs) and of a results file
// (results_io.h reads and writes it).
struct ProbeReport {
    std::string source; // the file name it came from ("" for a run in this process)
    std::string tool = "kvprobe";
    int schemaVersion = 0;
    std::string command; // "run" | "bench" (or "gui" for the explorer's own runs)
    std::string backend, device;
    std::string date; // ISO 8601 UTC, "2026-11-29T10:21:22Z"
    std::string host;
    double copyGBs = 0;
    double readGBs = 0; // the median of the rows' read streams; 0 when none was measured
    // The sweep as a whole (rows carry their own status): Failed when it could not run at all
    // (unknown backend, no device), Cancelled when it stopped early (rows may still hold data).
    ProbeStatus status = ProbeStatus::Ok;
    Error error;
    std::vector<ProbeResult> rows;
    std::vector<std::pair<std::string, std::vector<QualityPoint>>> qualityVsContext; // per format

    bool ok() const { return status == ProbeStatus::Ok; }
    void fail(Error why) {
        status = statusFor(why);
        error = std::move(why);
    }
    int okRows() const;
    // "NVIDIA H200 · 2026-11-29": device and the date part of `date`.
    std::string label() const;
};

using ProgressFn = std::function<void(double percent, const std::string& stage)>;

// Runs a plan. Never throws or exits: bad arguments (BadInput / BadFile for a bad .npy), no
// device, out of memory (the memory guard refuses a run whose peak would not fit before it
// allocates anything) and cancellation all end in a status with `error` set. `cancel` may be
// set from another thread; every long step polls it.
ProbeResult runProbe(const ProbePlan& plan, const ProgressFn& progress = {},
                     const std::atomic<bool>* cancel = nullptr);

// Decode steps of several plans timed in turn: each plan is prepared as runProbe prepares it
// (pool allocated, filled and stored, one step checked), all stay allocated together, then each
// round times one step of every plan, one after another. Drift of a shared, noisy machine then
// falls on all plans of a round alike, and ratios taken within a round are far steadier than
// ratios of runs made one after the other (tests/bench/bench_probe reports both). The memory
// guard weighs each plan alone. Returns, per plan, its step time in ms in each round.
// `alongside`, when given, is a step of the caller's (a yardstick such as a read stream) that
// returns its own time in ms; it runs first in every round, and its times come last.
Result<std::vector<std::vector<double>>>
timeDecodeInTurn(const std::vector<ProbePlan>& plans, int rounds,
                 const std::atomic<bool>* cancel = nullptr,
                 const std::function<Result<double>()>& alongside = {});

// The memory guard's estimate of the plan's peak host bytes (the main run or its largest
// quality-vs-context sub-run), without running it. A .npy plan reads the files' headers.
Result<std::int64_t> estimatePeakHostBytes(const ProbePlan& plan);

// core's prediction of the pool bytes for one layer of `model` holding `batch` requests of
// `context` tokens with a shared prefix (vLLM's rule), through core::computeLedger.
Result<std::int64_t> predictedPoolBytes(const core::ModelSpec& model, const core::KvFormat& format,
                                        int blockSize, int batch, std::int64_t context,
                                        std::int64_t prefixTokens);

// The acceptance rule of `kvprobe run`: the pool's bytes (pages x page bytes) equal core's
// prediction exactly. The allocator's rounding (allocatedPoolBytes, memoryErrorPct) is reported
// beside it, not compared: it is the allocator's, not the KV cache's.
Status checkPoolAgainstPrediction(const ProbeResult& result);

// One sweep: formats x contexts x batch sizes on one backend, each row a runProbe. The rows'
// block size is blockSizeFor(format, blockSize) (ops.h), with a note when it differs.
struct SweepPlan {
    std::string backend = "cpu";
    core::ModelSpec model;              // defaultModel() when it has no layers
    std::vector<std::string> formatIds; // allProbeFormats() ids
    std::vector<int> batches{1};
    std::vector<std::int64_t> contexts{512};
    int blockSize = 16;
    std::int64_t prefixTokens = 0; // clamped to each context
    int warmup = 1;
    int repeats = 3;
    int threads = 0; // 0 = all
    std::uint64_t seed = 1;
    int qualityRequests = 1;
    std::vector<std::int64_t> qualityContexts; // quality vs context, on each format's first row
};
// kvprobe bench's axes. GPU: the target sizes (batch 8 and 32, 8K-32K, 8 formats); CPU: sizes
// that finish in about a minute on two cores while the pools still exceed a last-level cache.
SweepPlan benchSweepPlan(const std::string& backend, bool quick, std::uint64_t seed);
// The report's command is "bench"; copyGBs and readGBs are the medians of the rows' copy and
// read stream measurements.
// `onRow` sees each row as soon as it is measured (kvprobe bench --jsonl writes it out, so a
// run cut short by a timeout keeps the rows it finished).
using RowFn = std::function<void(const ProbeResult& row, std::size_t index, std::size_t total)>;
ProbeReport runSweep(const SweepPlan& plan, const ProgressFn& progress = {},
                     const std::atomic<bool>* cancel = nullptr, const RowFn& onRow = {});

// kvprobe check: every operation x format x layout against the FP64 references (check.cpp).
struct CheckPlan {
    std::string backend = "cpu";
    std::uint64_t seed = 1;
    bool quick = false; // one trial per format and block size, shorter contexts (the ctest)
    int threads = 0;
};
struct CheckCase {
    std::string name;
    bool passed = false;
    std::string detail;
};
struct CheckReport {
    std::string backend, device;
    std::vector<CheckCase> cases;
    int passed = 0, failed = 0;
    ProbeStatus status = ProbeStatus::Ok; // of the check itself (no device, cancelled)
    Error error;
    bool ok() const { return status == ProbeStatus::Ok; }
    void fail(Error why) {
        status = statusFor(why);
        error = std::move(why);
    }
};
// The one-layer model the check (and the emulator's tests) run: qHeads / kvHeads / headDim.
core::ModelSpec checkModel(int qHeads, int kvHeads, int headDim);
CheckReport runCheck(const CheckPlan& plan, const ProgressFn& progress = {},
                     const std::atomic<bool>* cancel = nullptr);

// The default layer: Llama-3-8B from the catalog (32 q heads, 8 KV heads, head_dim 128), or an
// equivalent spec when the catalog is unavailable.
core::ModelSpec defaultModel();

} // namespace kvl::probe
