#include "gpu_probe/run/probe.h"

#include "core/enum_names.h"
#include "core/io/model_table.h"
#include "core/ledger.h"
#include "gpu_probe/ops.h"
#include "gpu_probe/run/probe_run.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <memory>

namespace kvl::probe {

using core::Granularity;
using core::KvDtype;
using core::KvFormat;

namespace {

ProbeFormat make(std::string id, KvFormat format) {
    std::string label = core::shortLabel(format);
    if (format.granularity == Granularity::PerHead)
        label += " per-head";
    return ProbeFormat{std::move(id), std::move(label), format};
}

KvFormat withGranularity(KvDtype dtype, Granularity granularity, int group = 0) {
    KvFormat format = KvFormat::defaultFor(dtype);
    format.granularity = granularity;
    if (group)
        format.groupSize = group;
    return format;
}

KvFormat kivi(KvDtype dtype) {
    KvFormat format = KvFormat::defaultFor(KvDtype::Int2); // KIVI: fp16 scale + zero, G = 32
    format.dtype = dtype;
    return format;
}

} // namespace

std::vector<ProbeFormat> allProbeFormats() {
    return {
        make("fp16", KvFormat::defaultFor(KvDtype::Fp16)),
        make("bf16", KvFormat::defaultFor(KvDtype::Bf16)),
        make("fp32", KvFormat::defaultFor(KvDtype::Fp32)),
        make("fp8_e4m3", KvFormat::defaultFor(KvDtype::Fp8E4M3)),
        make("fp8_e4m3-per-head", withGranularity(KvDtype::Fp8E4M3, Granularity::PerHead)),
        make("fp8_e5m2", KvFormat::defaultFor(KvDtype::Fp8E5M2)),
        make("fp8_e5m2-per-head", withGranularity(KvDtype::Fp8E5M2, Granularity::PerHead)),
        make("int8", KvFormat::defaultFor(KvDtype::Int8)),
        make("int4-g32", withGranularity(KvDtype::Int4, Granularity::PerGroup, 32)),
        make("int4-g64", withGranularity(KvDtype::Int4, Granularity::PerGroup, 64)),
        make("int4-g128", KvFormat::defaultFor(KvDtype::Int4)),
        make("int4-kivi", kivi(KvDtype::Int4)),
        make("int2-kivi", kivi(KvDtype::Int2)),
    };
}

Result<ProbeFormat> parseProbeFormat(const std::string& spec) {
    std::string name;
    for (char letter : spec)
        name += char(std::tolower(static_cast<unsigned char>(letter)));
    if (name == "fp8")
        name = "fp8_e4m3";
    else if (name == "fp8-per-head")
        name = "fp8_e4m3-per-head";
    else if (name == "int4")
        name = "int4-g128";
    else if (name == "int2")
        name = "int2-kivi";
    else if (name == "float16" || name == "half")
        name = "fp16";
    else if (name == "bfloat16")
        name = "bf16";
    std::string known;
    for (auto& format : allProbeFormats()) {
        if (format.id == name)
            return format;
        known += (known.empty() ? "" : ", ") + format.id;
    }
    return Error{ErrorCode::BadInput, "unknown KV format '" + spec + "' (known: " + known +
                                          "; aliases fp8, int4, int2)"};
}

core::ModelSpec defaultModel() {
    if (const core::ModelSpec* model = io::findTableModel("llama-3-8b"))
        return *model;
    core::ModelSpec model; // Llama-3-8B's config.json (meta-llama/Meta-Llama-3-8B on Hugging Face)
    model.id = "llama-3-8b";
    model.name = "Llama-3-8B";
    model.family = "Llama 3";
    model.layers.assign(32, core::LayerSpec{});
    model.qHeads = 32;
    model.kvHeads = 8;
    model.headDim = 128;
    model.params = 8'030'261'248;
    model.maxContext = 8192;
    model.hiddenSize = 4096;
    return model;
}

Result<std::int64_t> predictedPoolBytes(const core::ModelSpec& model, const KvFormat& format,
                                        int blockSize, int batch, std::int64_t context,
                                        std::int64_t prefixTokens) {
    core::Scenario scenario;
    scenario.model = core::withLayerCount(model, 1);
    scenario.model.layers[0] = core::LayerSpec{}; // the probe runs one full-attention layer
    scenario.levers.quant.enabled = true;
    scenario.levers.quant.format = format;
    scenario.levers.paging.enabled = true;
    scenario.levers.paging.blockSize = blockSize;
    if (prefixTokens > 0) {
        scenario.levers.prefix.enabled = true;
        scenario.levers.prefix.sharedTokens = prefixTokens;
        scenario.levers.prefix.sharingRequests = 0; // all requests share it
    }
    scenario.hardware.gpu.id = "probe";
    scenario.hardware.gpu.name = "probe";
    scenario.hardware.gpu.memoryBytes = std::int64_t(1) << 46;
    scenario.hardware.kvMemoryBytes = std::int64_t(1) << 45;
    scenario.workload.context = context;
    scenario.workload.maxModelLen = context;
    if (auto invalid = scenario.validate())
        return Error{ErrorCode::BadInput, "core scenario: " + *invalid};
    const core::LedgerResult ledger = core::computeLedger(scenario);
    if (ledger.kvBytesPerRequestPerGpu <= 0)
        return Error{ErrorCode::Internal, std::string("core predicted no KV bytes") +
                                              (ledger.error.empty() ? "" : ": " + ledger.error)};
    // vLLM / core: every request after the first saves the shared full blocks.
    return std::int64_t(batch) * ledger.kvBytesPerRequestPerGpu -
           std::int64_t(batch - 1) * ledger.sharedBytesPerRequestPerGpu;
}

std::string_view probeStatusName(ProbeStatus status) {
    constexpr core::EnumRow<ProbeStatus> kNames[] = {{ProbeStatus::Ok, "ok"},
                                                     {ProbeStatus::Failed, "failed"},
                                                     {ProbeStatus::Cancelled, "cancelled"}};
    return core::lookupOr(kNames, status, "failed");
}

ProbeStatus statusFor(const Error& error) {
    return error.cancelled() ? ProbeStatus::Cancelled : ProbeStatus::Failed;
}

int ProbeReport::okRows() const {
    return int(
        std::count_if(rows.begin(), rows.end(), [](const ProbeResult& r) { return r.ok(); }));
}

std::string ProbeReport::label() const {
    std::string text = device.empty() ? backend : device;
    if (!date.empty())
        text += " \xC2\xB7 " + date.substr(0, std::min<std::size_t>(10, date.size()));
    return text;
}

Status checkPoolAgainstPrediction(const ProbeResult& result) {
    if (result.poolBytes == result.predictedPoolBytes)
        return {};
    return Error{ErrorCode::Internal, "pool of " + std::to_string(result.poolBytes) + " B (" +
                                          std::to_string(result.pagesUsed) + " pages x " +
                                          std::to_string(result.pageBytes) +
                                          " B) differs from core's prediction of " +
                                          std::to_string(result.predictedPoolBytes) + " B"};
}

namespace {

using Phase = Status (*)(ProbeRun&);
constexpr Phase kPhases[] = {planRun,          allocateRun,       fillRun,
                             storeRun,         timeStoreRun,      attendRun,
                             timeAttentionRun, measureQualityRun, accountRun};

// Quality vs context: batch-1 runs of the same format at each length (KIVI, QServe and KVQuant
// all report quantization error growing with the sequence). Each runs after the main run has
// released its buffers.
Status measureQualityVsContext(const ProbePlan& plan, ProbeResult& result,
                               const ProgressFn& progress, const std::atomic<bool>* cancel) {
    const std::size_t count = plan.qualityContexts.size();
    for (std::size_t i = 0; i < count; ++i) {
        ProbePlan sub = plan;
        sub.contexts = {plan.qualityContexts[i]};
        sub.prefixTokens = 0;
        sub.measureSpeed = false;
        sub.measureQuality = true;
        sub.qualityRequests = 1;
        sub.qualityContexts.clear();
        sub.checkStore = false;
        sub.keepPool = false;
        const double base = 90.0 + 10.0 * double(i) / double(count);
        const ProbeResult point = runProbe(
            sub,
            [&](double percent, const std::string& stage) {
                if (progress)
                    progress(base + percent * 0.1 / double(count), "quality vs context: " + stage);
            },
            cancel);
        if (!point.ok())
            return point.error;
        result.qualityVsContext.push_back(QualityPoint{point.context, point.relL2, point.maxAbs,
                                                       point.top8, point.kernelVsRefRelL2});
    }
    return {};
}

ProbeResult runPhases(const ProbePlan& plan, const ProgressFn& progress,
                      const std::atomic<bool>* cancel) {
    ProbeResult result;
    {
        ProbeRun run(plan, result, progress, cancel);
        for (Phase phase : kPhases) {
            if (Status done = phase(run); !done) {
                result.fail(done.error());
                return result;
            }
            if (run.cancelled()) {
                result.fail(cancelledError());
                return result;
            }
        }
    } // the run's buffers are released before the quality-vs-context runs start
    if (Status points = measureQualityVsContext(plan, result, progress, cancel); !points) {
        result.fail(points.error());
        return result;
    }
    result.status = ProbeStatus::Ok;
    if (progress)
        progress(100, "done");
    return result;
}

// What an exception that escapes a probe's steps becomes.
Error errorFrom(const std::exception_ptr& failure) {
    return errorFromException(failure,
                              {"out of host memory", "internal error: ", "internal error"});
}

} // namespace

ProbeResult runProbe(const ProbePlan& plan, const ProgressFn& progress,
                     const std::atomic<bool>* cancel) {
    try {
        return runPhases(plan, progress, cancel);
    } catch (...) {
        ProbeResult result;
        result.fail(errorFrom(std::current_exception()));
        return result;
    }
}

Result<std::vector<std::vector<double>>>
timeDecodeInTurn(const std::vector<ProbePlan>& plans, int rounds, const std::atomic<bool>* cancel,
                 const std::function<Result<double>()>& alongside) {
    try {
        std::vector<ProbeResult> results(plans.size());
        std::vector<std::unique_ptr<ProbeRun>> runs;
        for (std::size_t i = 0; i < plans.size(); ++i) {
            runs.push_back(std::make_unique<ProbeRun>(plans[i], results[i], ProgressFn{}, cancel));
            for (Phase phase : {planRun, allocateRun, fillRun, storeRun, attendRun})
                if (Status done = phase(*runs.back()); !done)
                    return done.error();
        }
        std::vector<std::vector<double>> times(plans.size() + (alongside ? 1 : 0));
        for (int round = 0; round < rounds; ++round) {
            if (alongside) {
                auto ms = alongside();
                if (!ms)
                    return ms.error();
                times.back().push_back(*ms);
            }
            for (std::size_t i = 0; i < runs.size(); ++i) {
                ProbeRun& run = *runs[i];
                if (run.cancelled())
                    return cancelledError();
                auto ms = run.backend->time(
                    [&] { return run.backend->attention(run.attentionArgs); }, 0, 1);
                if (!ms)
                    return ms.error();
                times[i].push_back(*ms);
            }
        }
        return times;
    } catch (...) {
        return errorFrom(std::current_exception());
    }
}

Result<std::int64_t> estimatePeakHostBytes(const ProbePlan& plan) {
    try {
        ProbeResult result;
        ProbeRun run(plan, result, {}, nullptr);
        if (Status prepared = prepareRun(run); !prepared)
            return prepared.error();
        return result.estimatedPeakHostBytes;
    } catch (...) {
        return errorFrom(std::current_exception());
    }
}

} // namespace kvl::probe
