#include "scenario.h"

#include <cmath>

namespace kvl::core {

namespace {
std::string num(std::int64_t v) {
    return std::to_string(v);
}
} // namespace

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

std::optional<std::string> Scenario::validate() const {
    if (auto e = model.validate())
        return e;
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
    if (h.gpu.memoryBytes <= 0 || h.gpu.memoryBytes > (std::int64_t{1} << 50))
        return "gpu '" + h.gpu.id + "': memory must be between 1 byte and 1 PiB, got " +
               num(h.gpu.memoryBytes);
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
