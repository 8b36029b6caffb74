// One sweep over formats x contexts x batch sizes: `kvprobe bench` and the explorer's runs.
#include "gpu_probe/backend.h"
#include "gpu_probe/ops.h"
#include "gpu_probe/run/probe.h"

#include <algorithm>

namespace kvl::probe {

SweepPlan benchSweepPlan(const std::string& backend, bool quick, std::uint64_t seed) {
    SweepPlan plan;
    plan.backend = backend;
    plan.model = defaultModel();
    plan.seed = seed;
    plan.blockSize = 16; // vLLM's default page; KIVI formats get blockSizeFor's multiple of G
    plan.qualityRequests = 1;
    if (backend != "cpu") {
        plan.contexts = quick ? std::vector<std::int64_t>{8192, 32768}
                              : std::vector<std::int64_t>{8192, 16384, 32768};
        plan.batches = quick ? std::vector<int>{32} : std::vector<int>{8, 32};
        plan.formatIds = {"fp16",      "fp8_e4m3", "fp8_e5m2",  "int8",
                          "int4-g128", "int4-g32", "int4-kivi", "int2-kivi"};
        plan.qualityContexts = {1024, 4096, 8192, 16384};
        plan.warmup = 3;
        plan.repeats = 20;
    } else {
        plan.contexts =
            quick ? std::vector<std::int64_t>{2048} : std::vector<std::int64_t>{1024, 4096};
        plan.batches = quick ? std::vector<int>{4} : std::vector<int>{1, 4};
        plan.formatIds = {"fp16", "fp8_e4m3", "int8", "int4-g128", "int4-g32", "int2-kivi"};
        plan.qualityContexts = quick ? std::vector<std::int64_t>{1024, 4096}
                                     : std::vector<std::int64_t>{1024, 4096, 8192, 16384};
        plan.warmup = 1;
        plan.repeats = 3;
    }
    return plan;
}

namespace {

// One row of the sweep.
ProbePlan rowPlan(const SweepPlan& sweep, const ProbeFormat& format, int batch,
                  std::int64_t context, bool firstOfFormat) {
    ProbePlan plan;
    plan.backend = sweep.backend;
    plan.model = sweep.model.layers.empty() ? defaultModel() : sweep.model;
    plan.format = format;
    plan.blockSize = blockSizeFor(format.format, sweep.blockSize);
    plan.batch = batch;
    plan.context = context;
    plan.prefixTokens = std::min(sweep.prefixTokens, context);
    plan.seed = sweep.seed;
    plan.warmup = sweep.warmup;
    plan.repeats = sweep.repeats;
    plan.threads = sweep.threads;
    plan.qualityRequests = sweep.qualityRequests;
    if (firstOfFormat)
        plan.qualityContexts = sweep.qualityContexts;
    return plan;
}

Result<std::vector<ProbeFormat>> sweepFormats(const SweepPlan& plan) {
    std::vector<ProbeFormat> formats;
    for (const auto& id : plan.formatIds) {
        auto format = parseProbeFormat(id);
        if (!format)
            return format.error();
        formats.push_back(*format);
    }
    if (formats.empty() || plan.contexts.empty() || plan.batches.empty())
        return Error{ErrorCode::BadInput,
                     "nothing to measure: choose at least one format, one context and one batch"};
    return formats;
}

double median(std::vector<double> values) {
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

} // namespace

ProbeReport runSweep(const SweepPlan& plan, const ProgressFn& progress,
                     const std::atomic<bool>* cancel, const RowFn& onRow) {
    ProbeReport report;
    report.command = "bench";
    report.backend = plan.backend;
    auto backend = makeBackend(plan.backend);
    if (!backend) {
        report.fail(backend.error());
        return report;
    }
    report.device = (*backend)->deviceName();
    backend.value().reset(); // each row makes its own
    auto formats = sweepFormats(plan);
    if (!formats) {
        report.fail(formats.error());
        return report;
    }
    const std::size_t total = formats->size() * plan.contexts.size() * plan.batches.size();
    std::size_t done = 0;
    std::vector<double> copies, reads;
    for (const ProbeFormat& format : *formats) {
        bool firstOfFormat = true;
        for (std::int64_t context : plan.contexts)
            for (int batch : plan.batches) {
                if (cancelRequested(cancel)) {
                    report.fail(cancelledError());
                    return report;
                }
                const ProbePlan row = rowPlan(plan, format, batch, context, firstOfFormat);
                const double base = 100.0 * double(done) / double(total);
                const std::string tag = format.label + " @ " + std::to_string(context) + " x " +
                                        std::to_string(batch) + ": ";
                ProbeResult result = runProbe(
                    row,
                    [&](double percent, const std::string& stage) {
                        if (progress)
                            progress(base + percent / double(total), tag + stage);
                    },
                    cancel);
                ++done;
                if (result.status == ProbeStatus::Cancelled) {
                    report.fail(result.error);
                    return report;
                }
                if (row.blockSize != plan.blockSize)
                    result.notes.push_back(
                        "block size raised from " + std::to_string(plan.blockSize) + " to " +
                        std::to_string(row.blockSize) +
                        ": KIVI quantizes keys per channel over whole groups of " +
                        std::to_string(format.format.groupSize) + " tokens in one page");
                if (firstOfFormat && result.ok() && !row.qualityContexts.empty())
                    report.qualityVsContext.push_back(
                        {result.formatLabel, result.qualityVsContext});
                firstOfFormat = false;
                if (result.ok() && result.copyGBs > 0)
                    copies.push_back(result.copyGBs);
                if (result.ok() && result.readGBs > 0)
                    reads.push_back(result.readGBs);
                if (onRow)
                    onRow(result, done - 1, total);
                report.rows.push_back(std::move(result));
            }
    }
    report.copyGBs = median(std::move(copies));
    report.readGBs = median(std::move(reads));
    if (progress)
        progress(100, "done");
    return report;
}

} // namespace kvl::probe
