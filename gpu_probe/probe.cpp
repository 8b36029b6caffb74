#include "gpu_probe/probe.h"

#include "core/io/catalog.h"
#include "core/ledger.h"
#include "gpu_probe/ops.h"
#include "gpu_probe/probe_run.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <new>

namespace kvl::probe {

using core::Granularity;
using core::KvDtype;
using core::KvFormat;

namespace {

ProbeFormat make(std::string id, KvFormat f) {
    std::string label = core::shortLabel(f);
    if (f.granularity == Granularity::PerHead)
        label += " per-head";
    return ProbeFormat{std::move(id), std::move(label), f};
}

KvFormat withGranularity(KvDtype d, Granularity g, int group = 0) {
    KvFormat f = KvFormat::defaultFor(d);
    f.granularity = g;
    if (group)
        f.groupSize = group;
    return f;
}

KvFormat kivi(KvDtype d) {
    KvFormat f = KvFormat::defaultFor(KvDtype::Int2); // KIVI: fp16 scale + zero, G = 32
    f.dtype = d;
    return f;
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
    std::string s;
    for (char c : spec)
        s += char(std::tolower(static_cast<unsigned char>(c)));
    if (s == "fp8")
        s = "fp8_e4m3";
    else if (s == "fp8-per-head")
        s = "fp8_e4m3-per-head";
    else if (s == "int4")
        s = "int4-g128";
    else if (s == "int2")
        s = "int2-kivi";
    else if (s == "float16" || s == "half")
        s = "fp16";
    else if (s == "bfloat16")
        s = "bf16";
    std::string known;
    for (auto& f : allProbeFormats()) {
        if (f.id == s)
            return f;
        known += (known.empty() ? "" : ", ") + f.id;
    }
    return Error{ErrorCode::BadInput, "unknown KV format '" + spec + "' (known: " + known +
                                          "; aliases fp8, int4, int2)"};
}

core::ModelSpec defaultModel() {
    if (const core::ModelSpec* m = io::findModel("llama-3-8b"))
        return *m;
    core::ModelSpec m; // Llama-3-8B's config.json (meta-llama/Meta-Llama-3-8B on Hugging Face)
    m.id = "llama-3-8b";
    m.name = "Llama-3-8B";
    m.family = "Llama 3";
    m.layers.assign(32, core::LayerSpec{});
    m.qHeads = 32;
    m.kvHeads = 8;
    m.headDim = 128;
    m.params = 8'030'261'248;
    m.maxContext = 8192;
    m.hiddenSize = 4096;
    return m;
}

Result<std::int64_t> predictedPoolBytes(const core::ModelSpec& model, const KvFormat& format,
                                        int blockSize, int batch, std::int64_t context,
                                        std::int64_t prefixTokens) {
    core::Scenario s;
    s.model = core::withLayerCount(model, 1);
    s.model.layers[0] = core::LayerSpec{}; // the probe runs one full-attention layer
    s.levers.quant.enabled = true;
    s.levers.quant.format = format;
    s.levers.paging.enabled = true;
    s.levers.paging.blockSize = blockSize;
    if (prefixTokens > 0) {
        s.levers.prefix.enabled = true;
        s.levers.prefix.sharedTokens = prefixTokens;
        s.levers.prefix.sharingRequests = 0; // all requests share it
    }
    s.hardware.gpu.id = "probe";
    s.hardware.gpu.name = "probe";
    s.hardware.gpu.memoryBytes = std::int64_t(1) << 46;
    s.hardware.kvMemoryBytes = std::int64_t(1) << 45;
    s.workload.context = context;
    s.workload.maxModelLen = context;
    if (auto e = s.validate())
        return Error{ErrorCode::BadInput, "core scenario: " + *e};
    const core::LedgerResult r = core::computeLedger(s);
    if (r.kvBytesPerRequestPerGpu <= 0)
        return Error{ErrorCode::Internal, std::string("core predicted no KV bytes") +
                                              (r.error.empty() ? "" : ": " + r.error)};
    // vLLM / core: every request after the first saves the shared full blocks.
    return std::int64_t(batch) * r.kvBytesPerRequestPerGpu -
           std::int64_t(batch - 1) * r.sharedBytesPerRequestPerGpu;
}

std::string_view probeStatusName(ProbeStatus status) {
    switch (status) {
    case ProbeStatus::Ok:
        return "ok";
    case ProbeStatus::Failed:
        return "failed";
    case ProbeStatus::Cancelled:
        return "cancelled";
    }
    return "failed";
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

Error errorFrom(const std::exception_ptr& failure) {
    try {
        std::rethrow_exception(failure);
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::OutOfMemory, "out of host memory"};
    } catch (const std::exception& e) {
        return Error{ErrorCode::Internal, std::string("internal error: ") + e.what()};
    } catch (...) {
        return Error{ErrorCode::Internal, "internal error"};
    }
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
