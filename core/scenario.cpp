#include "scenario.h"

#include "engine.h"
#include "units.h"

#include <cmath>
#include <cstdio>
#include <utility>

namespace kvl::core {

namespace {
std::string num(std::int64_t v) {
    return std::to_string(v);
}
} // namespace

namespace {
constexpr std::string_view kEngineNames[] = {"vllm", "sglang", "trtllm", "llamacpp"};
constexpr std::string_view kEngineDisplayNames[] = {"vLLM", "SGLang", "TensorRT-LLM", "llama.cpp"};
} // namespace

std::string_view engineName(Engine e) {
    return kEngineNames[static_cast<std::size_t>(e)];
}

std::string_view engineDisplayName(Engine e) {
    return kEngineDisplayNames[static_cast<std::size_t>(e)];
}

std::optional<Engine> parseEngine(std::string_view name) {
    for (std::size_t i = 0; i < std::size(kEngineNames); ++i)
        if (kEngineNames[i] == name)
            return static_cast<Engine>(i);
    return std::nullopt;
}

std::int64_t gibToBytes(double gib) {
    return std::llround(gib * static_cast<double>(kGiB));
}

double bytesToGiB(std::int64_t bytes) {
    return static_cast<double>(bytes) / static_cast<double>(kGiB);
}

int kvFormatCheckDim(const ModelSpec& m) {
    return m.isMla() && m.countLayers(LayerKind::Mla) == m.numLayers() ? m.mlaLatentDim()
                                                                       : m.headDim;
}

namespace {
std::string numText(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}
} // namespace

std::optional<FieldProblem> gpuProblem(const GpuSpec& g, bool bandwidthKnown) {
    constexpr std::int64_t kMaxMemory = std::int64_t{1} << 50; // 1 PiB
    if (g.memoryBytes <= 0 || g.memoryBytes > kMaxMemory)
        return FieldProblem{"gpu.memory_bytes",
                            "must be between 1 and 1125899906842624 bytes (1 PiB), got " +
                                num(g.memoryBytes)};
    const double bw = g.bandwidthGBs;
    if (!std::isfinite(bw) || ((bw != 0.0 || bandwidthKnown) && (bw < 1.0 || bw > 1e5)))
        return FieldProblem{"gpu.bandwidth_gbs",
                            "must be between 1 and 100000 GB/s, got " + numText(bw)};
    for (const auto& [field, v] :
         {std::pair{"gpu.bf16_tflops", g.bf16Tflops}, std::pair{"gpu.fp8_tflops", g.fp8Tflops}})
        if (!std::isfinite(v) || (v != 0.0 && (v < 1.0 || v > 1e6)))
            return FieldProblem{field, "must be 0 (not known) or between 1 and 1000000 TFLOP/s, "
                                       "got " +
                                           numText(v)};
    return std::nullopt;
}

std::optional<FieldProblem> Scenario::fieldProblem() const {
    if (auto p = gpuProblem(hardware.gpu))
        return p;
    // vLLM's kv_cache_memory_bytes is carved out of the GPU's memory: a pool larger than the
    // device is not one vLLM can allocate.
    const auto& h = hardware;
    if (h.kvMemoryBytes && (*h.kvMemoryBytes < 0 || *h.kvMemoryBytes > h.gpu.memoryBytes))
        return FieldProblem{"hardware.kv_memory_bytes",
                            "must be at most the GPU's memory (" + formatBytes(h.gpu.memoryBytes) +
                                " on " + h.gpu.name + "), got " + formatBytes(*h.kvMemoryBytes)};
    // KIVI's scale groups run along the head's channels: a group larger than head_dim is not a
    // group (per-group must also divide head_dim: kv_format.cpp's validate says so).
    const auto& f = levers.quant.format;
    const int dim = kvFormatCheckDim(model);
    if (levers.quant.enabled && f.granularity == Granularity::KPerChannelVPerToken && dim > 0 &&
        f.groupSize > dim)
        return FieldProblem{"levers.quant.format.group_size", "must be at most head_dim " +
                                                                  num(dim) + " for KIVI, got " +
                                                                  num(f.groupSize)};
    return std::nullopt;
}

std::optional<FieldProblem> blockSizeProblem(const Scenario& s) {
    if (!s.levers.paging.enabled || s.levers.paging.blockSize <= 0)
        return std::nullopt;
    const BlockSizes b = resolveBlockSizes(s);
    if (b.error.empty())
        return std::nullopt;
    return FieldProblem{"levers.paging.block_size", b.error};
}

std::optional<std::string> Scenario::validate() const {
    if (auto e = model.validate())
        return e;
    if (auto p = fieldProblem())
        return p->field + ": " + p->message;
    const auto& a = levers.attention;
    if (a.enabled && a.mode == AttentionMode::Gqa) {
        if (a.gqaKvHeads < 1 || a.gqaKvHeads > model.qHeads)
            return "attention: GQA groups must be between 1 and the q heads (" + num(model.qHeads) +
                   "), got " + num(a.gqaKvHeads);
        if (model.qHeads % a.gqaKvHeads != 0)
            return "attention: q heads (" + num(model.qHeads) + ") are not divisible by " +
                   num(a.gqaKvHeads) + " KV heads";
    }
    if (levers.quant.enabled) {
        if (auto e = core::validate(levers.quant.format, kvFormatCheckDim(model)))
            return "kv format: " + *e;
    }
    if (levers.paging.enabled && (levers.paging.blockSize < 0 || levers.paging.blockSize > 1 << 20))
        return "block size must be between 1 and 1048576 (0 = vLLM's choice), got " +
               num(levers.paging.blockSize);
    if (levers.prefix.enabled) {
        if (levers.prefix.sharedTokens < 0 || levers.prefix.sharedTokens > kMaxContext)
            return "prefix tokens must be between 0 and " + num(kMaxContext) + ", got " +
                   num(levers.prefix.sharedTokens);
        if (levers.prefix.sharingRequests < 0 || levers.prefix.sharingRequests > kMaxRequests)
            return "prefix requests must be between 0 (all) and " + num(kMaxRequests) + ", got " +
                   num(levers.prefix.sharingRequests);
    }
    const auto& h = hardware;
    if (h.gpuCount < 1 || h.gpuCount > 4096)
        return "tp (GPU count) must be between 1 and 4096, got " + num(h.gpuCount);
    if (h.pipelineParallel < 1 || h.pipelineParallel > 4096)
        return "pipeline parallel size must be between 1 and 4096, got " + num(h.pipelineParallel);
    if (h.pipelineParallel > model.numLayers())
        return "pipeline parallel size " + num(h.pipelineParallel) + " exceeds the model's " +
               num(model.numLayers()) + " layers";
    if (h.dataParallel < 1 || h.dataParallel > 4096)
        return "data parallel size must be between 1 and 4096, got " + num(h.dataParallel);
    if (h.decodeContextParallel < 1 || h.decodeContextParallel > h.gpuCount ||
        h.gpuCount % h.decodeContextParallel != 0)
        return "decode context parallel size must divide the tensor parallel size " +
               num(h.gpuCount) + ", got " + num(h.decodeContextParallel);
    if (h.memoryUtilization && !(*h.memoryUtilization > 0.0 && *h.memoryUtilization <= 1.0))
        return "gpu memory utilization must be in (0, 1], got " +
               std::to_string(*h.memoryUtilization);
    if (h.activationBytes &&
        (*h.activationBytes < 0 || *h.activationBytes > (std::int64_t{1} << 50)))
        return "activation reserve must be between 0 and 1 PiB, got " + num(*h.activationBytes);
    if (h.overheadBytes && (*h.overheadBytes < 0 || *h.overheadBytes > (std::int64_t{1} << 50)))
        return "overhead reserve must be between 0 and 1 PiB, got " + num(*h.overheadBytes);
    if (h.kvMemoryBytes && (*h.kvMemoryBytes < 0 || *h.kvMemoryBytes > (std::int64_t{1} << 50)))
        return "kv memory must be between 0 and 1 PiB, got " + num(*h.kvMemoryBytes);
    const auto& w = workload;
    if (w.context < 1 || w.context > kMaxContext)
        return "context must be between 1 and " + num(kMaxContext) + " tokens, got " +
               num(w.context);
    if (w.maxModelLen < 0 || w.maxModelLen > kMaxContext)
        return "max model length must be between 1 and " + num(kMaxContext) + ", got " +
               num(w.maxModelLen);
    if (w.maxNumBatchedTokens < 0 || w.maxNumBatchedTokens > kMaxContext)
        return "max batched tokens must be between 1 and " + num(kMaxContext) +
               " (0 = vLLM's default), got " + num(w.maxNumBatchedTokens);
    if (engine.maxNumSeqs < 0 || engine.maxNumSeqs > kMaxRequests)
        return "max num seqs must be between 1 and " + num(kMaxRequests) +
               " (0 = vLLM's default), got " + num(engine.maxNumSeqs);
    if (w.concurrency < 0 || w.concurrency > kMaxRequests)
        return "concurrency must be between 1 and " + num(kMaxRequests) +
               " (0 = as many as fit), got " + num(w.concurrency);
    if (w.targetRequests < 0 || w.targetRequests > kMaxRequests)
        return "target requests must be between 0 and " + num(kMaxRequests) + ", got " +
               num(w.targetRequests);
    return std::nullopt;
}

} // namespace kvl::core
