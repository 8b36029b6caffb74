// kvprobe check: every operation x format x block size with random shapes against the FP64
// references, the device's pages against the CPU's byte for byte, and the pool against core.
#include "gpu_probe/backend.h"
#include "gpu_probe/ops.h"
#include "gpu_probe/run/block_manager.h"
#include "gpu_probe/run/probe.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <random>

namespace kvl::probe {

core::ModelSpec checkModel(int qHeads, int kvHeads, int headDim) {
    core::ModelSpec model;
    model.id = "check";
    model.name = "check layer";
    model.layers.assign(1, core::LayerSpec{});
    model.qHeads = qHeads;
    model.kvHeads = kvHeads;
    model.headDim = headDim;
    model.params = 1'000'000;
    model.maxContext = 1 << 20;
    model.hiddenSize = qHeads * headDim;
    return model;
}

namespace {

struct CheckRun {
    const CheckPlan& plan;
    CheckReport& report;
    const std::atomic<bool>* cancel;
    std::mt19937_64 rng;
    bool emulated = false; // shapes sized for the SIMT emulator (Backend::isEmulator)

    void add(std::string name, bool passed, std::string detail) {
        report.cases.push_back({std::move(name), passed, std::move(detail)});
        (passed ? report.passed : report.failed)++;
    }
    int pick(std::initializer_list<int> choices) {
        return *(choices.begin() + std::ptrdiff_t(rng() % choices.size()));
    }
    bool onDevice() const { return plan.backend != "cpu"; }
};

std::string describeShape(const ProbePlan& plan) {
    const core::ModelSpec& model = plan.model;
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "literal" + string.
    std::string shape = "H";
    shape += std::to_string(model.kvHeads);
    shape += " q";
    shape += std::to_string(model.qHeads);
    shape += " d";
    shape += std::to_string(model.headDim);
    shape += " ctx";
    for (auto context : plan.contexts) {
        shape += ' ';
        shape += std::to_string(context);
    }
    shape += " prefix ";
    shape += std::to_string(plan.prefixTokens);
    shape += plan.bf16Input ? " bf16-in" : " fp16-in";
    return shape;
}

// The head dims of the catalog's models, each where the format accepts it (a group must divide
// head_dim).
int pickHeadDim(CheckRun& check, const core::KvFormat& kv) {
    std::vector<int> dims;
    for (int d : {64, 80, 96, 112, 128, 160, 192, 256})
        if (!core::validate(kv, d))
            dims.push_back(d);
    return dims[std::size_t(check.rng() % dims.size())];
}

// Odd lengths, partial last pages, more than one split-K partition; with `share` a batch that
// shares a prefix of at least one full block. On the emulator (every CUDA thread a fiber) the
// shapes are small: 1-2 KV heads, and the first request always crosses a 512-token partition so
// each case runs the split-K reduce.
ProbePlan randomCase(CheckRun& check, const ProbeFormat& format, int blockSize, bool share) {
    const core::KvFormat& kv = format.format;
    const int headDim = pickHeadDim(check, kv);
    const int kvHeads = check.emulated ? check.pick({1, 2}) : check.pick({1, 2, 4, 8});
    // 12 splits the GQA group over two CTAs (8 + 4 q heads) on the CUDA backends.
    const int groupSize = check.pick({1, 2, 4, 8, 12});
    const std::uint64_t maxExtra = check.plan.quick ? 300 : 1400;
    ProbePlan plan;
    plan.backend = check.plan.backend;
    plan.model = checkModel(kvHeads * groupSize, kvHeads, headDim);
    plan.format = format;
    plan.blockSize = blockSize;
    plan.threads = check.plan.threads;
    const int batch = share ? 2 + int(check.rng() % 3) : 1 + int(check.rng() % 3);
    for (int r = 0; r < batch; ++r)
        plan.contexts.push_back((share ? 2 * blockSize + 1 : 1) +
                                std::int64_t(check.rng() % maxExtra));
    if (check.emulated)
        plan.contexts[0] = kPartitionTokens + 1 + std::int64_t(check.rng() % 300);
    const std::int64_t shortest = *std::min_element(plan.contexts.begin(), plan.contexts.end());
    plan.prefixTokens =
        share ? blockSize + std::int64_t(check.rng() % std::uint64_t(shortest - blockSize)) : 0;
    plan.bf16Input = check.rng() % 3 == 0;
    plan.seed = check.rng();
    plan.measureSpeed = false;
    plan.measureQuality = true;
    plan.qualityRequests = batch;
    plan.checkStore = true;
    plan.keepPool = check.onDevice();
    return plan;
}

// The device's pages must equal the CPU backend's byte for byte (same seed, same shuffled block
// tables, the same kv_quant.h arithmetic).
void compareWithCpu(CheckRun& check, const ProbePlan& plan, const ProbeResult& device,
                    const std::string& tag) {
    ProbePlan cpuPlan = plan;
    cpuPlan.backend = "cpu";
    const ProbeResult cpu = runProbe(cpuPlan, {}, check.cancel);
    std::size_t differing = 0;
    const std::size_t common = std::min(cpu.poolSnapshot.size(), device.poolSnapshot.size());
    for (std::size_t i = 0; i < common; ++i)
        differing += cpu.poolSnapshot[i] != device.poolSnapshot[i];
    check.add("store " + tag + " " + plan.backend + " == cpu bytes",
              cpu.ok() && cpu.poolSnapshot.size() == device.poolSnapshot.size() && differing == 0,
              cpu.ok() ? std::to_string(differing) + " of " +
                             std::to_string(device.poolSnapshot.size()) + " bytes differ"
                       : cpu.error.message);
}

// One random case of one format and block size: store, attention, pages. Returns the run's
// error only when it was cancelled (a failed run is a failed case).
Status checkCase(CheckRun& check, const ProbeFormat& format, int blockSize, bool share) {
    const std::string tag = format.id + " B" + std::to_string(blockSize) + (share ? " shared" : "");
    const ProbePlan plan = randomCase(check, format, blockSize, share);
    const std::string shape = describeShape(plan);
    const ProbeResult result = runProbe(plan, {}, check.cancel);
    if (result.status == ProbeStatus::Cancelled)
        return result.error;
    if (!result.ok()) {
        check.add("store " + tag, false, shape + ": " + result.error.message);
        check.add("attention " + tag, false, shape + ": " + result.error.message);
        return {};
    }
    check.add("store " + tag, result.storeCheck.ok(),
              shape + (result.storeCheck ? "" : ": " + result.storeCheck.error().message));
    if (check.onDevice())
        compareWithCpu(check, plan, result, tag);
    // Kernel vs FP64 on the same dequantized pages: within fp32 accumulation error (1e-3), the
    // bound FlashInfer's tests hold their decode kernels to against a reference.
    char figures[160];
    std::snprintf(figures, sizeof figures, ": kernel vs FP64 rel L2 %.2e, vs unquantized %.2e",
                  result.kernelVsRefRelL2, result.relL2);
    check.add("attention " + tag, result.kernelVsRefRelL2 <= 1e-3, shape + figures);
    const core::KvDtype dtype = format.format.dtype;
    if (dtype == core::KvDtype::Fp16 || dtype == core::KvDtype::Fp32)
        check.add("attention " + tag + " vs unquantized", result.relL2 <= 1e-3, shape + figures);
    check.add("pages " + tag,
              result.pagesUsed ==
                      BlockManager::pagesNeeded(plan.contexts, plan.prefixTokens, blockSize) &&
                  result.poolBytes == result.pagesUsed * result.pageBytes,
              "pages " + std::to_string(result.pagesUsed) + ", saved " +
                  std::to_string(result.pagesSaved));
    return {};
}

// A KIVI block size that would split a key group must be refused by the layout.
void checkKiviRejection(CheckRun& check, const ProbeFormat& format, int blockSize) {
    auto layout = makeLayout(format.format, 128, 8, blockSize);
    const bool refused = !layout && layout.error().code == ErrorCode::BadInput &&
                         blockSizeFor(format.format, blockSize) != blockSize;
    check.add("layout " + format.id + " B" + std::to_string(blockSize) +
                  " rejected (KIVI needs B % G == 0)",
              refused,
              layout ? "accepted a block size that splits KIVI groups" : layout.error().message);
}

// A uniform batch: measured pool bytes equal core's prediction.
void checkMemoryAgainstCore(CheckRun& check) {
    for (const char* id : {"fp16", "int8", "int4-g128", "int2-kivi"}) {
        ProbePlan plan;
        plan.backend = check.plan.backend;
        plan.model = defaultModel();
        plan.format = parseProbeFormat(id).value();
        plan.blockSize = 32;
        plan.batch = 3;
        plan.context = 777;
        plan.prefixTokens = 300;
        plan.measureSpeed = false;
        plan.measureQuality = false;
        plan.threads = check.plan.threads;
        plan.seed = check.rng();
        const ProbeResult result = runProbe(plan, {}, check.cancel);
        const Status matches =
            result.ok() ? checkPoolAgainstPrediction(result) : Status(result.error);
        check.add(std::string("memory vs core ") + id, matches.ok(),
                  matches ? "pool " + std::to_string(result.poolBytes) + " B, core " +
                                std::to_string(result.predictedPoolBytes) + " B"
                          : matches.error().message);
    }
}

} // namespace

CheckReport runCheck(const CheckPlan& plan, const ProgressFn& progress,
                     const std::atomic<bool>* cancel) {
    CheckReport report;
    report.backend = plan.backend;
    bool emulated = false;
    {
        auto backend = makeBackend(plan.backend);
        if (!backend) {
            report.fail(backend.error());
            return report;
        }
        report.device = (*backend)->deviceName();
        emulated = (*backend)->isEmulator();
    }
    CheckRun check{plan, report, cancel, std::mt19937_64(plan.seed), emulated};
    const auto formats = allProbeFormats();
    const std::vector<int> blockSizes = {16, 32, 64};
    const int trials = plan.quick ? 1 : 2;
    const std::size_t total = formats.size() * blockSizes.size() * std::size_t(trials);
    std::size_t done = 0;
    for (const auto& format : formats)
        for (int blockSize : blockSizes)
            for (int trial = 0; trial < trials; ++trial) {
                if (cancelRequested(cancel)) {
                    report.fail(cancelledError());
                    return report;
                }
                if (progress)
                    progress(100.0 * double(done) / double(total),
                             format.id + " B" + std::to_string(blockSize));
                ++done;
                // Quick mode alternates the shared-prefix case over the cases it runs.
                const bool share = plan.quick ? (done % 2 == 0) : trial % 2 == 1;
                if (blockSizeFor(format.format, blockSize) != blockSize) {
                    if (trial == 0)
                        checkKiviRejection(check, format, blockSize);
                    continue;
                }
                if (Status ran = checkCase(check, format, blockSize, share); !ran) {
                    report.fail(ran.error());
                    return report;
                }
            }
    checkMemoryAgainstCore(check);
    if (progress)
        progress(100, "done");
    return report;
}

} // namespace kvl::probe
