// The plan of a scenario (plan_p.h), built once and read by the ledger, the sweep and the
// capacity model: per-layer bytes, vLLM's KV cache groups, the PP stages and their memory, what
// one request holds in them and how many fit. It depends on the scenario and core's rules
// (engine, KV cache, deployment), never on the ledger, the ladder or the capacity model.
#include "plan_p.h"
#include "saturating.h"

#include "engine.h"

#include <algorithm>

namespace kvl::core::detail {

namespace {

bool isAttention(LayerKind k) {
    return k == LayerKind::Full || k == LayerKind::Sliding || k == LayerKind::Chunked;
}

int leverKvHeads(const Scenario& s, const LayerSpec& l) {
    const auto& a = s.levers.attention;
    if (!a.enabled)
        return s.model.layerKvHeads(l);
    switch (a.mode) {
    case AttentionMode::Native:
        return s.model.layerKvHeads(l);
    case AttentionMode::Mha:
        return s.model.qHeads;
    case AttentionMode::Gqa:
        return a.gqaKvHeads;
    case AttentionMode::Mqa:
        return 1;
    }
    return s.model.layerKvHeads(l);
}

int ppOf(const Scenario& s) {
    return std::clamp(s.hardware.pipelineParallel, 1, std::max(1, s.model.numLayers()));
}

LayerBytes layerBytes(const Scenario& s, const LayerSpec& l, const KvFormat& f, int tp) {
    LayerBytes b;
    b.kind = l.kind;
    b.format = f;
    b.window = (l.kind == LayerKind::Sliding || l.kind == LayerKind::Chunked) ? l.window : 0;
    if (isAttention(l.kind)) {
        const int heads = leverKvHeads(s, l);
        // vLLM (ModelConfig.get_num_kv_heads): fewer KV heads than GPUs are replicated.
        b.kvHeadsPerGpu = std::max(1, heads / tp);
        b.headSize = s.model.layerHeadDim(l);
        // ChunkedLocalAttentionSpec takes AttentionSpec's page, which has no head_size_v.
        b.headSizeV = l.kind == LayerKind::Chunked ? b.headSize : s.model.layerHeadDimV(l);
        const std::int64_t perHead =
            keyBytesPerToken(f, b.headSize) + valueBytesPerToken(f, b.headSizeV);
        b.perTokenPerGpu = satMul(b.kvHeadsPerGpu, perHead);
        b.perTokenModel = satMul(heads, perHead);
    } else if (l.kind == LayerKind::Mla) {
        // MLAAttentionSpec: one latent per token, num_kv_heads 1, replicated on every TP rank.
        b.kvHeadsPerGpu = 1;
        b.headSize = s.model.mlaLatentDim();
        b.perTokenPerGpu = latentBytesPerToken(f, s.model.mlaLatentDim());
        // DeepSeek sparse attention: every layer's indexer keeps its own K cache, one more
        // MLAAttentionSpec (DeepseekV32IndexerCache.get_kv_cache_spec in vLLM's
        // model_executor/models/deepseek_v2.py) of one head of index_head_dim fp8 bytes plus an
        // fp32 scale per 128 (Indexer: head_dim + head_dim // quant_block_size * 4, uint8),
        // whatever the KV dtype. Its block size is the cache's, so it joins the layer's group
        // as one more UniformTypeKVCacheSpecs member and adds to every block's bytes: folded
        // into the layer's page, the blocks, tokens and concurrency come out the same.
        if (s.model.sparseMla && s.model.indexHeadDim > 0)
            b.perTokenPerGpu =
                satAdd(b.perTokenPerGpu, sparseIndexerBytesPerToken(s.model.indexHeadDim));
        b.perTokenModel = b.perTokenPerGpu;
    } else if (l.kind == LayerKind::State && s.model.state) {
        b.statePerRequest =
            stateBytesPerLayer(*s.model.state, s.model.nativeKvDtype, effectiveSsmDtype(s), tp);
    }
    return b;
}

std::optional<CacheSpec> cacheSpec(const LayerBytes& b, const KvFormat& f, int blockSize,
                                   int mambaBlockSize, MambaCacheMode mode) {
    CacheSpec spec;
    spec.format = f;
    spec.kvHeads = b.kvHeadsPerGpu;
    spec.headSize = b.headSize;
    spec.headSizeV = b.headSizeV;
    spec.blockSize = blockSize;
    spec.realPageBytes = satMul(blockSize, b.perTokenPerGpu);
    switch (b.kind) {
    case LayerKind::Full:
        spec.type = SpecType::FullAttention;
        return spec;
    case LayerKind::Sliding:
        spec.type = SpecType::SlidingWindow;
        spec.window = b.window;
        return spec;
    case LayerKind::Chunked:
        spec.type = SpecType::ChunkedLocal;
        spec.chunk = b.window;
        return spec;
    case LayerKind::Mla:
        spec.type = SpecType::Mla;
        spec.headSizeV = 0;
        return spec;
    case LayerKind::State:
        spec = CacheSpec{};
        spec.type = SpecType::Mamba;
        spec.blockSize = mambaBlockSize;
        spec.realPageBytes = b.statePerRequest;
        spec.mambaMode = mode;
        return spec;
    case LayerKind::None:
        return std::nullopt;
    }
    return std::nullopt;
}

// The format layer `i` stores. TurboQuant (TurboQuantConfig.get_boundary_skip_layers, vLLM's
// turboquant/config.py) keeps a dense model's first and last n = min(2, layers / 2) layers in
// the model's dtype (kv_cache_dtype_skip_layers): their full-attention specs join the
// quantized ones in one UniformTypeKVCacheSpecs group, each block holding both pages.
KvFormat layerFormat(const Scenario& s, const KvFormat& f, std::size_t i) {
    if (f.granularity != Granularity::TurboQuant)
        return f;
    const std::size_t layers = s.model.layers.size();
    const std::size_t n = std::min<std::size_t>(2, layers / 2);
    if (i < n || i + n >= layers)
        return KvFormat::defaultFor(s.model.nativeKvDtype);
    return f;
}

} // namespace

int effectiveKvHeads(const Scenario& s) {
    return leverKvHeads(s, LayerSpec{});
}

KvFormat effectiveFormat(const Scenario& s) {
    return storedKvFormat(s);
}

std::int64_t weightsTotal(const Scenario& s, const KvFormat& f, int kvHeads) {
    const WeightDtype wd = s.hardware.weightDtype.value_or(s.model.weightDtype);
    // vLLM keeps k_scale / v_scale beside the weights (Attention layers' registered scales).
    const std::int64_t scales =
        satMul(s.model.numLayers(), outOfPageScaleBytesPerLayer(f, kvHeads));
    return satAdd(weightBytes(s.model.params, wd), scales);
}

int tpOf(const Scenario& s) {
    return std::max(1, s.hardware.gpuCount);
}

std::int64_t requestedBytes(const Scenario& s) {
    return static_cast<std::int64_t>(static_cast<double>(s.hardware.gpu.memoryBytes) *
                                     gpuMemoryUtilization(s));
}

// What a layer holds: one that reads another layer's KV (kv_sharing_target_layer_name) gets
// no KV cache spec in every modelled release (get_kv_cache_spec in
// vllm/v1/worker/gpu_model_runner.py skips it, since before 0.10).
LayerSpec heldLayer(const LayerSpec& l) {
    if (l.kvShared)
        return LayerSpec{LayerKind::None};
    return l;
}

// The geometry: per-layer bytes, block sizes and KV cache groups. Depends on the model, the
// levers, the GPU (backend block sizes), TP and DCP; not on PP, DP or EP.
Plan planGeometry(const Scenario& s) {
    Plan p;
    p.format = effectiveFormat(s);
    p.kvHeads = effectiveKvHeads(s);
    p.tp = tpOf(s);
    p.dcp = std::max(1, s.hardware.decodeContextParallel);
    p.layers.reserve(s.model.layers.size());
    for (std::size_t i = 0; i < s.model.layers.size(); ++i) {
        const LayerSpec l = heldLayer(s.model.layers[i]);
        const KvFormat f = layerFormat(s, p.format, i);
        // Layers repeat: reuse the previous one's bytes when its spec is the same.
        if (i > 0 && s.model.layers[i] == s.model.layers[i - 1] && p.layers.back().format == f)
            p.layers.push_back(p.layers.back());
        else
            p.layers.push_back(layerBytes(s, l, f, p.tp));
    }
    p.maxModelLen = std::max<std::int64_t>(1, s.effectiveMaxModelLen());
    p.admission.maxModelLen = p.maxModelLen;
    p.admission.decodeContextParallel = p.dcp;
    p.weightsTotal = weightsTotal(s, p.format, p.kvHeads);

    // The release's rules hold for a contiguous (unpaged) step too: its --kv-cache-dtype is
    // checked against them, and an empty rule set (version 0.0.0) refused every newer dtype.
    p.rules = vllmRules(s.engine.vllmVersion);
    const bool paged = s.levers.paging.enabled;
    if (!paged)
        return p;
    const BlockSizes bs = resolveBlockSizes(s);
    p.blockSize = bs.attention;
    p.blockNotes = bs.notes;
    p.blockError = bs.error;
    if (s.levers.prefix.enabled && s.levers.prefix.sharedTokens > 0) {
        p.prefixTokens = s.levers.prefix.sharedTokens;
        p.sharingRequests = std::max<std::int64_t>(0, s.levers.prefix.sharingRequests);
    }
    std::vector<std::optional<CacheSpec>> specs;
    specs.reserve(p.layers.size());
    for (const auto& b : p.layers)
        specs.push_back(cacheSpec(b, b.format, bs.attention, bs.mamba, bs.mambaMode));
    // Mamba pages padded to the attention page (Platform._align_hybrid_block_size).
    for (auto& sp : specs)
        if (sp && sp->type == SpecType::Mamba && bs.mambaPagePadded > sp->realPageBytes)
            sp->paddedPageBytes = bs.mambaPagePadded;
    // vllm/config/vllm.py: chunked local attention turns the hybrid manager off unless the
    // release keeps it or the user's environment allows it (VllmRule::ChunkedLocalHybrid).
    const VllmRules& rules = p.rules;
    const bool chunkedOff = s.model.countLayers(LayerKind::Chunked) > 0 &&
                            !rules.chunkedLocalHybridByDefault && !s.engine.allowChunkedLocalHybrid;
    if (chunkedOff && !s.engine.disableHybridKvCacheManager)
        p.blockNotes.push_back(
            "vLLM " + rules.version.str() +
            " disables the hybrid KV cache manager for chunked local attention by default "
            "(VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 keeps it): chunked layers "
            "hold every token");
    auto groups = kvCacheGroups(specs, s.engine.disableHybridKvCacheManager || chunkedOff);
    if (groups)
        p.groups = std::move(groups.value());
    else
        p.groupError = groups.error().message;
    return p;
}

// The PP stages: each stage's layers, its projection of the groups and its unpaged sums.
void planStages(Plan& p, const Scenario& s) {
    p.pp = ppOf(s);
    p.admission.inFlightTokens = inFlightTokens(s);
    p.stages.clear();
    const bool paged = p.blockSize > 0;
    for (const auto& [first, last] : pipelineStages(s.model.numLayers(), p.pp)) {
        StagePlan st;
        st.firstLayer = first;
        st.lastLayer = last;
        for (int i = first; i < last; ++i) {
            const LayerBytes& b = p.layers[static_cast<std::size_t>(i)];
            st.unpaged.state = satAdd(st.unpaged.state, b.statePerRequest);
            if (b.kind == LayerKind::Sliding || b.kind == LayerKind::Chunked) {
                auto it = std::find_if(st.unpaged.windowed.begin(), st.unpaged.windowed.end(),
                                       [&](const auto& w) { return w.first == b.window; });
                if (it == st.unpaged.windowed.end())
                    st.unpaged.windowed.emplace_back(b.window, b.perTokenPerGpu);
                else
                    it->second = satAdd(it->second, b.perTokenPerGpu);
            } else {
                st.unpaged.fullPerToken = satAdd(st.unpaged.fullPerToken, b.perTokenPerGpu);
            }
        }
        if (paged && p.groupError.empty()) {
            st.groups = p.pp == 1 ? p.groups : projectToStage(p.groups, first, last);
            st.bytesPerBlock = bytesPerPoolBlock(st.groups);
        }
        p.stages.push_back(std::move(st));
    }
}

// Memory on every stage's GPUs: weights (which DP and EP change), reserves, the KV pool, its
// blocks, and the stage that limits them.
void planMemory(Plan& p, const Scenario& s) {
    const Layout layout = layoutOf(s);
    if (!p.weightModel) {
        p.weightModel = weightModel(s);
        p.reserves = estimateReserves(s, layout); // depends on TP, not on PP, DP or EP
    }
    const Reserves& estimate = *p.reserves;
    p.activationBytes = s.hardware.activationBytes.value_or(estimate.activation);
    p.cudaGraphBytes =
        s.hardware.overheadBytes ? 0 : s.hardware.cudaGraphBytes.value_or(estimate.cudaGraphs);
    p.overheadBytes =
        s.hardware.overheadBytes.value_or(satAdd(estimate.nonTorch, p.cudaGraphBytes));
    p.reservesEstimated = !s.hardware.activationBytes || !s.hardware.overheadBytes;
    const bool paged = p.blockSize > 0;
    for (std::size_t stage = 0; stage < p.stages.size(); ++stage) {
        StagePlan& st = p.stages[stage];
        st.weightsBytes = weightsPerGpu(*p.weightModel, layout, st.firstLayer, st.lastLayer,
                                        static_cast<int>(stage), static_cast<int>(p.stages.size()));
        if (s.hardware.kvMemoryBytes) {
            st.availableKvBytes = std::max<std::int64_t>(0, *s.hardware.kvMemoryBytes);
        } else {
            std::int64_t avail = satSub(requestedBytes(s), st.weightsBytes);
            avail = satSub(avail, p.activationBytes);
            avail = satSub(avail, p.overheadBytes);
            st.availableKvBytes = std::max<std::int64_t>(0, avail);
        }
        st.numBlocks = paged && st.bytesPerBlock > 0 ? st.availableKvBytes / st.bytesPerBlock : -1;
    }
    // The scheduler sees the fewest blocks of any worker.
    p.numBlocks = -1;
    p.limiting = 0;
    for (std::size_t i = 0; i < p.stages.size(); ++i) {
        const auto& st = p.stages[i];
        const bool better =
            paged ? (st.numBlocks >= 0 && (p.numBlocks < 0 || st.numBlocks < p.numBlocks))
                  : st.availableKvBytes <
                        p.stages[static_cast<std::size_t>(p.limiting)].availableKvBytes;
        if (better) {
            p.limiting = static_cast<int>(i);
            if (paged)
                p.numBlocks = st.numBlocks;
        }
    }
    if (p.numBlocks < 0)
        p.numBlocks = paged && p.groups.groups.empty() ? 1 : 0; // attention free: the null block
}

Plan buildPlan(const Scenario& s) {
    Plan p = planGeometry(s);
    planStages(p, s);
    planMemory(p, s);
    return p;
}

const StagePlan& limitingStage(const Plan& p) {
    return p.stages[static_cast<std::size_t>(p.limiting)];
}

Holding groupHolding(const Plan& p, const CacheSpec& spec, std::int64_t context) {
    Holding h;
    const std::int64_t b = std::max(1, spec.blockSize);
    std::int64_t tokens = context;
    if ((spec.type == SpecType::FullAttention || spec.type == SpecType::Mla) && p.dcp > 1)
        tokens = ceilDiv(context, p.dcp); // each DCP rank keeps 1/DCP of the tokens
    const std::int64_t total = ceilDiv(tokens, b);
    std::int64_t held = total;
    switch (spec.type) {
    case SpecType::SlidingWindow:
        held = std::min(total, ceilDiv(std::max<std::int64_t>(spec.window - 1, 0), b) + 1);
        break;
    case SpecType::ChunkedLocal:
        held = std::min(total, ceilDiv(spec.chunk, b) + (spec.chunk % b != 0 ? 1 : 0));
        break;
    case SpecType::Mamba:
        h.blocks = admissionBlocks(spec, AdmissionInputs{context, 0, 1});
        return h;
    case SpecType::FullAttention:
    case SpecType::Mla:
        break;
    }
    h.blocks = held;
    if (p.prefixTokens > 0 && p.dcp == 1) {
        // vLLM hashes FULL blocks only, and always leaves the last token's block unshared.
        const std::int64_t shareable = std::min(p.prefixTokens, context - 1) / b;
        // Only prefix blocks still held (a window dropped the oldest ones) are shared.
        h.sharedBlocks = std::max<std::int64_t>(0, shareable - (total - held));
    }
    return h;
}

Holding requestHolding(const Plan& p, const CacheGroups& groups, std::int64_t context) {
    Holding sum;
    for (const auto& g : groups.groups) {
        Holding h;
        if (g.uniformType()) {
            for (const auto& ls : g.layerSpecs) {
                const Holding one = groupHolding(p, ls, context);
                h.blocks = std::max(h.blocks, one.blocks);
                h.sharedBlocks = std::max(h.sharedBlocks, one.sharedBlocks);
            }
        } else {
            h = groupHolding(p, g.spec, context);
        }
        sum.blocks = satAdd(sum.blocks, h.blocks);
        sum.sharedBlocks = satAdd(sum.sharedBlocks, h.sharedBlocks);
    }
    return sum;
}

UnpagedBytes unpagedBytes(const Plan& p, const StagePlan& st, std::int64_t context) {
    UnpagedBytes u;
    const std::int64_t reserve = std::max(p.maxModelLen, context);
    u.perRequest = satMul(reserve, st.unpaged.fullPerToken);
    for (const auto& [window, perToken] : st.unpaged.windowed)
        u.perRequest = satAdd(u.perRequest, satMul(std::min(reserve, window), perToken));
    u.state = st.unpaged.state;
    u.perRequest = satAdd(u.perRequest, u.state);
    return u;
}

// Whole requests that fit in `pool` when each costs `r` and each request after the first in a
// sharing group of `n` (0 = all) saves `shared`.
std::int64_t requestsThatFit(std::int64_t pool, std::int64_t r, std::int64_t shared,
                             std::int64_t n) {
    if (r <= 0 || pool < r)
        return 0;
    if (shared <= 0 || n == 1)
        return pool / r;
    const std::int64_t marginal = r - shared; // > 0: the last block is never shared
    if (n == 0)
        return satAdd(1, (pool - r) / marginal);
    const std::int64_t groupCost = satAdd(r, satMul(n - 1, marginal));
    const std::int64_t groups = pool / groupCost;
    const std::int64_t rem = pool - satMul(groups, groupCost);
    const std::int64_t partial = rem < r ? 0 : 1 + (rem - r) / marginal;
    return satAdd(satMul(groups, n), partial);
}

// Units `count` requests take when they share as the plan says.
std::int64_t unitsForRequests(std::int64_t count, std::int64_t r, std::int64_t shared,
                              std::int64_t n) {
    if (count <= 0)
        return 0;
    const std::int64_t groups = (n <= 0) ? 1 : ceilDiv(count, n);
    const std::int64_t sharers = count - groups;
    return std::max<std::int64_t>(
        0, satSub(satMul(count, r), satMul(sharers, std::max<std::int64_t>(0, shared))));
}

PointCost pointCost(const Plan& p, std::int64_t context) {
    PointCost c;
    const StagePlan& st = limitingStage(p);
    if (p.blockSize > 0) {
        if (!p.groupError.empty())
            return c;
        const Holding h = requestHolding(p, st.groups, context);
        c.units = h.blocks;
        c.sharedUnits = h.sharedBlocks;
        c.pool = std::max<std::int64_t>(0, p.numBlocks - 1); // BlockPool's null block
        c.bytesPerUnit = st.bytesPerBlock;
    } else {
        c.units = unpagedBytes(p, st, context).perRequest;
        c.pool = st.availableKvBytes;
    }
    return c;
}

std::int64_t replicaRequestBytes(const Plan& p, std::int64_t context, const PointCost& limiting) {
    if (p.blockSize > 0 && !p.groupError.empty())
        return 0; // as pointCost: no request runs
    const StagePlan* const busiest = &limitingStage(p);
    std::int64_t perTpRank = 0;
    for (const StagePlan& st : p.stages) {
        std::int64_t bytes = 0;
        if (&st == busiest) // pointCost's; with PP 1 the only stage
            bytes = satMul(limiting.units, limiting.bytesPerUnit);
        else if (p.blockSize > 0)
            bytes = satMul(requestHolding(p, st.groups, context).blocks, st.bytesPerBlock);
        else
            bytes = unpagedBytes(p, st, context).perRequest;
        perTpRank = satAdd(perTpRank, bytes);
    }
    return satMul(perTpRank, p.tp);
}

Refusal checkEnoughMemory(const Plan& p, bool withEstimate) {
    Refusal r;
    for (const auto& st : p.stages) {
        if (st.groups.groups.empty() || st.bytesPerBlock == 0)
            continue;
        const std::int64_t check = st.availableKvBytes - st.bytesPerBlock;
        if (check <= 0) {
            r.refused = true;
            r.message = "vLLM refuses to start: No available memory for the cache blocks. Try "
                        "increasing `gpu_memory_utilization` when initializing the engine.";
            return r;
        }
        const std::int64_t needed = neededBytes(st.groups, p.admission);
        if (needed <= check)
            continue;
        r.refused = true;
        if (!withEstimate) {
            r.message = "vLLM refuses to start: one request of max_model_len does not fit";
            return r;
        }
        r.estimatedMaxModelLen = estimateMaxModelLen(st.groups, p.admission, check, p.maxModelLen);
        r.message = "vLLM refuses to start: To serve at least one request with the model's max "
                    "seq len (" +
                    std::to_string(p.maxModelLen) + "), (" + formatGibLikeVllm(needed) +
                    " GiB KV cache is needed, which is larger than the available KV cache "
                    "memory (" +
                    formatGibLikeVllm(check) + " GiB). ";
        if (r.estimatedMaxModelLen > 0)
            r.message += "Based on the available memory, the estimated maximum model length is " +
                         std::to_string(r.estimatedMaxModelLen) + ". ";
        r.message += "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
                     "initializing the engine.";
        return r;
    }
    return r;
}

} // namespace kvl::core::detail
