#include "sglang.h"

#include "core/engines.h"
#include "core/enum_names.h"

#include "core/engine.h"
#include "core/ledger.h"
#include "core/saturating.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace kvl::core::sglang {

namespace {

constexpr double kGiB = 1073741824.0;

std::string fixed2(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

// Python's round(x, 3) for the values this takes (positive, far from ties in practice).
double round3(double x) {
    return std::nearbyint(x * 1000.0) / 1000.0;
}

} // namespace

// --kv-cache-dtype names SGLang takes (server_args.py): auto, fp8_e4m3, fp8_e5m2, fp4_e2m1,
// bf16 / bfloat16. It has no integer KV cache.
std::string kvCacheDtypeName(KvDtype d) {
    constexpr EnumRow<KvDtype> kNames[] = {{KvDtype::Fp8E4M3, "fp8_e4m3"},
                                           {KvDtype::Fp8E5M2, "fp8_e5m2"},
                                           {KvDtype::Fp4E2M1, "fp4_e2m1"},
                                           {KvDtype::Bf16, "bf16"},
                                           {KvDtype::Fp16, "float16"}};
    return std::string(lookupOr(kNames, d));
}

std::int64_t defaultChunkedPrefillSize(std::int64_t mib) {
    if (mib < 35 * 1024)
        return 2048;
    if (mib < 60 * 1024)
        return 4096;
    if (mib < 160 * 1024)
        return 8192;
    return 16384;
}

int defaultCudaGraphMaxBs(std::int64_t mib, int tp) {
    if (mib < 20 * 1024)
        return 8;
    if (mib < 35 * 1024)
        return tp < 4 ? 24 : 80;
    if (mib < 60 * 1024)
        return tp < 4 ? 32 : 160;
    if (mib < 160 * 1024)
        return tp < 4 ? 256 : 512;
    return 512;
}

double defaultMemFractionStatic(std::int64_t mib, int tp, int pp, std::int64_t chunked, int graphBs,
                                double* reservedOut) {
    double reserved = 512;
    reserved += double(std::max<std::int64_t>(chunked, 2048)) * 1.5;
    reserved += double(graphBs) * 2;
    reserved += double(tp) * double(pp) / 8 * 1024;
    if (mib > 60 * 1024)
        reserved = std::max(reserved, 10.0 * 1024);
    if (reservedOut)
        *reservedOut = reserved;
    return round3((double(mib) - reserved) / double(mib));
}

namespace {

// Layers on one pipeline stage (the first stages hold the most; PP takes the minimum).
struct StageLayers {
    int full = 0, swa = 0, mla = 0, state = 0;
};

StageLayers layersPerStage(const ModelSpec& m, int pp) {
    StageLayers n;
    for (const auto& l : m.layers) {
        if (l.kind == LayerKind::None || l.kvShared)
            continue;
        switch (l.kind) {
        case LayerKind::Full:
            ++n.full;
            break;
        case LayerKind::Sliding:
        case LayerKind::Chunked:
            ++n.swa;
            break;
        case LayerKind::Mla:
            ++n.mla;
            break;
        case LayerKind::State:
            ++n.state;
            break;
        case LayerKind::None:
            break;
        }
    }
    auto perStage = [pp](int k) { return int(ceilDiv(k, pp)); };
    n.full = perStage(n.full);
    n.swa = perStage(n.swa);
    n.mla = perStage(n.mla);
    n.state = perStage(n.state);
    return n;
}

// A token's bytes per layer kind, and the cell size (a token's bytes over the stage's layers).
struct TokenBytes {
    std::int64_t heads = 0; // get_num_kv_heads(attention TP)
    std::int64_t full = 0, swa = 0;
};

TokenBytes sizeCell(Result& r, const ModelSpec& m, const StageLayers& n, int tp,
                    std::int64_t kvSize, bool fp4) {
    TokenBytes t;
    // get_num_kv_heads(attention TP): heads split over TP, at least one per rank.
    t.heads = std::max(1, m.kvHeads / tp);
    const std::int64_t headSum = std::int64_t(m.headDim) + m.valueHeadDim();
    r.mla = n.mla > 0;
    if (r.mla) {
        const std::int64_t dim = m.mlaLatentDim();
        r.cellSize = dim * n.mla * kvSize;
        if (fp4)
            r.cellSize = r.cellSize / 2 + (dim / 16) * n.mla * kvSize;
        if (m.indexHeadDim > 0) // DeepSeek-V3.2's indexer keys: fp8 + an fp32 scale per 128
            r.cellSize += (std::int64_t(m.indexHeadDim) + m.indexHeadDim / 128 * 4) * n.mla;
    } else {
        t.full = t.heads * headSum * kvSize;
        t.swa = t.heads * headSum * kvSize;
        r.cellSize = t.full * n.full + t.swa * n.swa;
        if (fp4)
            r.cellSize =
                r.cellSize / 2 + (t.heads * m.headDim * (n.full + n.swa) * 2 * kvSize) / 16;
    }
    return t;
}

// Free memory before and after the weights, in GiB as SGLang reads it; what the state pool
// takes of it; the tokens the rest holds.
void profileMemory(Result& r, const Scenario& s, const StageLayers& n, int tp) {
    const auto& o = s.engine.sglang;
    const auto& m = s.model;
    const LedgerResult vllm = computeLedger(s); // the weights per GPU (same split)
    const std::int64_t before = o.freeBeforeLoadBytes
                                    ? *o.freeBeforeLoadBytes
                                    : satSub(s.hardware.gpu.memoryBytes, std::int64_t{512} << 20);
    const std::int64_t after =
        o.freeAfterLoadBytes ? *o.freeAfterLoadBytes : satSub(before, vllm.weightsBytesPerGpu);
    r.freeBeforeGiB = double(before) / kGiB;
    r.freeAfterGiB = double(after) / kGiB;
    r.restGiB = r.freeAfterGiB - r.freeBeforeGiB * (1 - r.memFractionStatic);

    if (n.state > 0 && m.state) {
        // handle_max_mamba_cache: the state pool takes ratio / (1 + ratio) of the rest
        // (mamba_full_memory_ratio 0.9); conv state in the model dtype, SSM state in fp32
        // (SGLANG_MAMBA_SSM_DTYPE's default).
        const std::int64_t perReq =
            satMul(stateBytesPerLayer(*m.state, m.nativeKvDtype, KvDtype::Fp32, tp), n.state);
        if (perReq > 0 && r.restGiB > 0) {
            const double ratio = 0.9;
            r.mambaCacheSize =
                std::int64_t(std::floor(r.restGiB * ratio / (1 + ratio) * kGiB / double(perReq)));
            r.restGiB -= double(r.mambaCacheSize) * double(perReq) / kGiB;
        }
    }
    r.profiledTokens = r.restGiB > 0 ? std::int64_t(std::floor(r.restGiB * kGiB)) / r.cellSize : 0;
}

// max_total_num_tokens (whole pages, split between full and sliding layers) and
// max_running_requests; returns the tokens.
std::int64_t sizeTokenPool(Result& r, const SglangOptions& o, const StageLayers& n,
                           const TokenBytes& t) {
    const std::int64_t page = std::max(1, o.pageSize);
    std::int64_t tokens = r.profiledTokens;
    if (o.maxTotalTokens > 0 && o.maxTotalTokens < tokens)
        tokens = o.maxTotalTokens;
    tokens = tokens / page * page;
    if (n.swa > 0 && n.full > 0) {
        // set_num_tokens_hybrid_swa: full tokens F and sliding tokens r x F share the memory.
        const double ratio = o.swaFullTokensRatio.value_or(0.8);
        const double total = double(tokens) * double(t.full * n.full + t.swa * n.swa);
        const double denom = double(t.full * n.full) + ratio * double(t.swa * n.swa);
        const std::int64_t f = std::int64_t(total / denom);
        r.swaTokens = std::int64_t(double(f) * ratio) / page * page;
        tokens = f / page * page;
    }
    r.maxTotalNumTokens = tokens;
    if (tokens <= 0) {
        r.error = "SGLang: no memory left for the KV cache (rest " + fixed2(r.restGiB) +
                  " GiB after the weights and the reserve of mem_fraction_static " +
                  pythonFloat(r.memFractionStatic) + ")";
    }

    std::int64_t reqs = std::min<std::int64_t>(
        std::max<std::int64_t>(std::int64_t(double(tokens) / double(r.contextLen) * 512), 2048),
        4096);
    if (r.mambaCacheSize > 0)
        reqs = std::min(reqs, r.mambaCacheSize / 3);
    r.maxRunningRequests = reqs;
    return tokens;
}

// The pool's buffers: size + page_size slots per layer; the lines SGLang logs about them.
void allocatePool(Result& r, const ModelSpec& m, const SglangOptions& o, const StageLayers& n,
                  const TokenBytes& t, std::int64_t tokens, std::int64_t kvSize, bool fp4) {
    const std::int64_t page = std::max(1, o.pageSize);
    const std::int64_t slots = tokens + page;
    if (r.mla) {
        r.kBytes = satMul(slots, r.cellSize);
        r.logLines.push_back("KV Cache is allocated. #tokens: " + std::to_string(tokens) +
                             ", KV size: " + fixed2(double(r.kBytes) / kGiB) + " GB");
    } else if (n.swa == 0) {
        r.kBytes = satMul(satMul(slots, t.heads * m.headDim * kvSize), n.full);
        r.vBytes = satMul(satMul(slots, t.heads * m.valueHeadDim() * kvSize), n.full);
        if (fp4) {
            r.kBytes /= 2;
            r.vBytes /= 2;
        }
        r.logLines.push_back("KV Cache is allocated. #tokens: " + std::to_string(tokens) +
                             ", K size: " + fixed2(double(r.kBytes) / kGiB) +
                             " GB, V size: " + fixed2(double(r.vBytes) / kGiB) + " GB");
    } else {
        r.logLines.push_back(
            "Use sliding window memory pool. full_layer_tokens=" + std::to_string(tokens) +
            ", swa_layer_tokens=" + std::to_string(r.swaTokens));
    }
    r.logLines.push_back(
        "max_total_num_tokens=" + std::to_string(tokens) + ", chunked_prefill_size=" +
        std::to_string(r.chunkedPrefillSize) + ", max_prefill_tokens=16384, max_running_requests=" +
        // The scheduler prints the request pool's size, max_num_reqs + 1 (ReqToTokenPool keeps
        // one slot spare): 2049 for the default 2048, as SGLang 0.4.6's logs show.
        std::to_string(r.maxRunningRequests + 1) + ", context_len=" + std::to_string(r.contextLen));
}

// The launch_server command line with the flags the scenario sets.
std::string launchCommand(const Scenario& s, int tp, int pp, const std::string& sgName) {
    const auto& o = s.engine.sglang;
    const auto& m = s.model;
    std::string cmd =
        "python -m sglang.launch_server --model-path " + (m.hfRepo.empty() ? m.id : m.hfRepo);
    if (tp > 1)
        cmd += " --tp " + std::to_string(tp);
    if (pp > 1)
        cmd += " --pp-size " + std::to_string(pp);
    if (s.workload.maxModelLen > 0)
        cmd += " --context-length " + std::to_string(s.workload.maxModelLen);
    if (s.levers.quant.enabled)
        cmd += " --kv-cache-dtype " + sgName;
    if (o.memFractionStatic)
        cmd += " --mem-fraction-static " + pythonFloat(*o.memFractionStatic);
    if (o.maxTotalTokens > 0)
        cmd += " --max-total-tokens " + std::to_string(o.maxTotalTokens);
    if (o.pageSize > 1)
        cmd += " --page-size " + std::to_string(o.pageSize);
    if (o.chunkedPrefillSize > 0)
        cmd += " --chunked-prefill-size " + std::to_string(o.chunkedPrefillSize);
    if (o.cudaGraphMaxBs > 0)
        cmd += " --cuda-graph-max-bs " + std::to_string(o.cudaGraphMaxBs);
    return cmd;
}

} // namespace

Result compute(const Scenario& s) {
    Result r;
    const auto& o = s.engine.sglang;
    const auto& m = s.model;
    const int tp = std::max(1, s.hardware.gpuCount);
    const int pp = std::max(1, s.hardware.pipelineParallel);
    r.gpuMemMiB = s.hardware.gpu.memoryBytes >> 20;
    r.chunkedPrefillSize =
        o.chunkedPrefillSize > 0 ? o.chunkedPrefillSize : defaultChunkedPrefillSize(r.gpuMemMiB);
    r.cudaGraphMaxBs =
        o.cudaGraphMaxBs > 0 ? o.cudaGraphMaxBs : defaultCudaGraphMaxBs(r.gpuMemMiB, tp);
    r.memFractionDefault = !o.memFractionStatic.has_value();
    r.memFractionStatic = o.memFractionStatic
                              ? *o.memFractionStatic
                              : defaultMemFractionStatic(r.gpuMemMiB, tp, pp, r.chunkedPrefillSize,
                                                         r.cudaGraphMaxBs, &r.reservedMiB);
    r.contextLen = s.effectiveMaxModelLen();

    // The KV dtype: the model's own, or the quantization lever's if SGLang has it.
    const KvDtype dtype = s.levers.quant.enabled ? s.levers.quant.format.dtype : m.nativeKvDtype;
    const std::string sgName = kvCacheDtypeName(dtype);
    if (sgName.empty()) {
        r.error = noKvCacheError(Engine::Sglang, dtype);
        return r;
    }
    const bool fp4 = dtype == KvDtype::Fp4E2M1;
    // torch element size of the storage dtype: fp4 is stored two per byte (float4_e2m1fn_x2).
    const std::int64_t kvSize = fp4 ? 1 : bitsPerElement(dtype) / 8;

    const StageLayers n = layersPerStage(m, pp);
    const TokenBytes t = sizeCell(r, m, n, tp, kvSize, fp4);
    if (r.cellSize <= 0) {
        r.error = "SGLang: the model has no attention layer to size a token pool for";
        return r;
    }
    profileMemory(r, s, n, tp);
    const std::int64_t tokens = sizeTokenPool(r, o, n, t);
    allocatePool(r, m, o, n, t, tokens, kvSize, fp4);
    r.command = launchCommand(s, tp, pp, sgName);
    return r;
}

} // namespace kvl::core::sglang
