#include "trtllm.h"

#include "core/engines.h"
#include "core/enum_names.h"

#include "core/ledger.h"
#include "core/saturating.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kvl::core::trtllm {

namespace {

std::string gib2(std::int64_t bytes) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", double(bytes) / double(std::int64_t{1} << 30));
    return buf;
}

// kv_cache_config.dtype for the scenario: auto (the model's 16-bit dtype), fp8, int8, nvfp4.
std::string trtDtype(const Scenario& s) {
    if (!s.levers.quant.enabled)
        return "auto";
    return kvCacheDtypeName(s.levers.quant.format.dtype);
}

} // namespace

std::string kvCacheDtypeName(KvDtype d) {
    constexpr EnumRow<KvDtype> kNames[] = {{KvDtype::Fp8E4M3, "fp8"},
                                           {KvDtype::Int8, "int8"},
                                           {KvDtype::Fp4E2M1, "nvfp4"},
                                           {KvDtype::Fp16, "auto"},
                                           {KvDtype::Bf16, "auto"}};
    return std::string(lookupOr(kNames, d));
}

std::int64_t cacheSizePerToken(const Scenario& s) {
    const auto& m = s.model;
    const std::string dt = trtDtype(s);
    if (dt.empty())
        return 0;
    const int tp = std::max(1, s.hardware.gpuCount);
    const int pp = std::max(1, s.hardware.pipelineParallel);
    int attn = 0;
    bool mla = false;
    for (const auto& l : m.layers) {
        if (l.kind == LayerKind::None || l.kvShared || l.kind == LayerKind::State)
            continue;
        mla = mla || l.kind == LayerKind::Mla;
        ++attn;
    }
    // mapping.pp_layers: the first stage holds the most layers.
    const std::int64_t layers = ceilDiv(attn, pp);
    std::int64_t values = 0;
    if (mla)
        values = layers * m.mlaLatentDim(); // kv_factor 1, not split over TP
    else
        values = 2 * layers * std::int64_t(m.headDim) * std::max(1, m.kvHeads / tp);
    if (dt == "nvfp4")
        return ceilDiv(values, 2) + ceilDiv(values, 16);
    if (dt == "fp8" || dt == "int8")
        return values;
    return values * (bitsPerElement(m.nativeKvDtype) / 8);
}

Result compute(const Scenario& s) {
    Result r;
    const auto& o = s.engine.trtllm;
    const auto& m = s.model;
    r.kvDtype = trtDtype(s);
    if (r.kvDtype.empty()) {
        r.error = noKvCacheError(Engine::Trtllm, s.levers.quant.format.dtype);
        return r;
    }
    r.kvSizePerToken = cacheSizePerToken(s);
    if (r.kvSizePerToken <= 0) {
        r.error = "TensorRT-LLM: the model has no attention layer to size a KV cache for";
        return r;
    }
    r.totalBytes = s.hardware.gpu.memoryBytes;
    r.fraction = o.freeGpuMemoryFraction;
    if (o.peakMemoryBytes) {
        r.peakBytes = *o.peakMemoryBytes;
    } else {
        // KV Ledger's estimate of the profiling peak: the weights and vLLM-style reserves.
        const LedgerResult v = computeLedger(s);
        r.peakBytes = satAdd(satAdd(v.weightsBytesPerGpu, v.activationBytes), v.overheadBytes);
        r.peakEstimated = true;
    }
    // The fraction goes through the C++ KvCacheConfig, which holds it as a float
    // (cpp/include/tensorrt_llm/executor/executor.h: std::optional<FloatType>
    // mFreeGpuMemoryFraction), and comes back to _util.py as that float32's double: 0.9 is
    // 0.8999999761581421 in the profiling line and 0.8 is 0.800000011920929 in the max_tokens
    // warning (NVIDIA/TensorRT-LLM issue #6294). It is what multiplies the free memory.
    const double fraction32 = double(float(r.fraction));
    const std::int64_t free = std::max<std::int64_t>(0, satSub(r.totalBytes, r.peakBytes));
    r.availableBytes = std::int64_t(std::floor(double(free) * fraction32));
    r.maxTokens = r.availableBytes / r.kvSizePerToken;
    if (o.maxTokens > 0)
        r.maxTokens = std::min(r.maxTokens, o.maxTokens);
    const int tpb = std::max(1, o.tokensPerBlock);
    r.blocks = ceilDiv(r.maxTokens, tpb);
    r.poolTokens = r.blocks * tpb;
    r.poolBytes = satMul(r.poolTokens, r.kvSizePerToken);
    if (r.poolTokens <= 0)
        r.error = "TensorRT-LLM: no memory left for the KV cache after the profiling peak (" +
                  gib2(r.peakBytes) + " GiB of " + gib2(r.totalBytes) + " GiB)";

    r.logLines.push_back(
        "Peak memory during memory usage profiling (torch + non-torch): " + gib2(r.peakBytes) +
        " GiB, available KV cache memory when calculating max tokens: " + gib2(r.availableBytes) +
        " GiB, fraction is set " + pythonFloat(fraction32) + ", kv size is " +
        std::to_string(r.kvSizePerToken) + ". device total memory " + gib2(r.totalBytes) + " GiB");
    r.logLines.push_back("Number of tokens per block: " + std::to_string(tpb) + ".");
    r.logLines.push_back("[MemUsageChange] Allocated " + gib2(r.poolBytes) +
                         " GiB for max tokens in paged KV cache (" + std::to_string(r.poolTokens) +
                         ").");

    std::string cmd = "trtllm-serve " + (m.hfRepo.empty() ? m.id : m.hfRepo) + " --backend pytorch";
    const int tp = std::max(1, s.hardware.gpuCount);
    if (tp > 1)
        cmd += " --tp_size " + std::to_string(tp);
    if (s.hardware.pipelineParallel > 1)
        cmd += " --pp_size " + std::to_string(s.hardware.pipelineParallel);
    if (s.workload.maxModelLen > 0)
        cmd += " --max_seq_len " + std::to_string(s.workload.maxModelLen);
    cmd += " --kv_cache_free_gpu_memory_fraction " + pythonFloat(r.fraction);
    // The rest of KvCacheConfig is set through --extra_llm_api_options (a YAML file).
    std::string extra;
    if (r.kvDtype != "auto")
        extra += " dtype: " + r.kvDtype + ";";
    if (o.maxTokens > 0)
        extra += " max_tokens: " + std::to_string(o.maxTokens) + ";";
    if (o.tokensPerBlock != 32)
        extra += " tokens_per_block: " + std::to_string(o.tokensPerBlock) + ";";
    if (!extra.empty())
        cmd += " --extra_llm_api_options kv.yaml  # kv_cache_config:" + extra;
    r.command = cmd;
    return r;
}

} // namespace kvl::core::trtllm
