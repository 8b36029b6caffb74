#include "ledger.h"
#include "saturating.h"

#include "deployment.h"
#include "engine.h"
#include "planner.h"
#include "units.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace kvl::core {

namespace {

constexpr std::int64_t kInt64Max = kSaturated;

// Saturating arithmetic: an absurd scenario reads "more than 8 EiB", never wraps around.

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
int ppOf(const Scenario& s) {
    return std::clamp(s.hardware.pipelineParallel, 1, std::max(1, s.model.numLayers()));
}

std::int64_t requestedBytes(const Scenario& s) {
    return static_cast<std::int64_t>(static_cast<double>(s.hardware.gpu.memoryBytes) *
                                     gpuMemoryUtilization(s));
}

} // namespace

namespace detail {

// What one layer keeps per token (attention, MLA) or per request (state), on one GPU.
struct LayerBytes {
    LayerKind kind = LayerKind::Full;
    std::int64_t window = 0;
    std::int64_t perTokenPerGpu = 0;  // attention / MLA, with KV-head replication
    std::int64_t perTokenModel = 0;   // the same without TP: the formula figure
    std::int64_t statePerRequest = 0; // state layers, one GPU
    int kvHeadsPerGpu = 0, headSize = 0, headSizeV = 0;
    KvFormat format; // the layer's own: TurboQuant leaves a dense model's boundary layers be
};

// A stage's layers summed for contiguous reservation: full-length layers, windowed layers
// per window, and the fixed state.
struct UnpagedSums {
    std::int64_t fullPerToken = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> windowed; // (window, bytes per token)
    std::int64_t state = 0;
};

struct StagePlan {
    int firstLayer = 0, lastLayer = 0;
    UnpagedSums unpaged;
    CacheGroups groups; // projected onto this stage (paged)
    std::int64_t bytesPerBlock = 0;
    std::int64_t weightsBytes = 0; // this GPU
    std::int64_t availableKvBytes = 0;
    std::int64_t numBlocks = 0; // available // bytes per block (paged)
};

// Everything a scenario's points need, computed once (the sweep's points cost a few
// multiplications per group each).
struct Plan {
    KvFormat format;
    int kvHeads = 0, tp = 1, pp = 1, dcp = 1;
    std::vector<LayerBytes> layers;
    int blockSize = 0; // attention block size; 0 = unpaged
    std::int64_t maxModelLen = 0;
    AdmissionInputs admission;
    std::int64_t prefixTokens = 0;    // 0 = no sharing
    std::int64_t sharingRequests = 0; // 0 = all
    std::int64_t weightsTotal = 0;
    std::int64_t activationBytes = 0, overheadBytes = 0; // per GPU, used
    std::int64_t cudaGraphBytes = 0; // per GPU: the CUDA graphs' share of overheadBytes
    bool reservesEstimated = false;
    std::optional<WeightModel> weightModel; // cached: the same for every PP, DP and EP
    std::optional<Reserves> reserves;
    CacheGroups groups; // whole model (paged)
    VllmRules rules;    // the scenario's vLLM release, looked up once per plan
    std::vector<StagePlan> stages;
    int limiting = 0;           // stage index with the fewest blocks (or least memory unpaged)
    std::int64_t numBlocks = 0; // min over stages
    std::string groupError;     // vLLM cannot build the groups
    std::string blockError;     // vLLM accepts no backend for the user's block size
    std::vector<std::string> blockNotes;
};

} // namespace detail

namespace {

using detail::LayerBytes;
using detail::Plan;
using detail::StagePlan;
using detail::UnpagedSums;

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

// What a layer holds: one that reads another layer's KV (kv_sharing_target_layer_name) gets
// no KV cache spec in every modelled release (get_kv_cache_spec in
// vllm/v1/worker/gpu_model_runner.py skips it, since before 0.10).
LayerSpec heldLayer(const LayerSpec& l) {
    if (l.kvShared)
        return LayerSpec{LayerKind::None};
    return l;
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

// Blocks one request of `context` tokens holds in a group during decode, and of those the full
// prefix blocks it shares. Sliding and chunked layers keep only their window: vLLM frees the
// blocks that fall out of it (SlidingWindowManager / ChunkedLocalAttentionManager
// remove_skipped_blocks).
struct Holding {
    std::int64_t blocks = 0;
    std::int64_t sharedBlocks = 0;
};

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

// Contiguous reservation (pre-paging engines): every request reserves the maximum length up
// front in every layer of the stage; sliding and chunked layers their window.
struct UnpagedBytes {
    std::int64_t perRequest = 0;
    std::int64_t state = 0;
};
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

// One request at `context` on the limiting GPU: pool blocks (paged) or bytes (unpaged), what
// the prefix saves, and the pool to fit them in, in the same unit.
struct PointCost {
    std::int64_t units = 0;       // blocks or bytes per request
    std::int64_t sharedUnits = 0; // saved by each sharing request after the first
    std::int64_t pool = 0;        // usable blocks (the null block excluded) or bytes
    std::int64_t bytesPerUnit = 1;
};

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

std::string attentionLabel(const Scenario& s, int kvHeads) {
    const int mla = s.model.countLayers(LayerKind::Mla);
    const int attention = s.model.countLayers(LayerKind::Full) +
                          s.model.countLayers(LayerKind::Sliding) +
                          s.model.countLayers(LayerKind::Chunked);
    if (attention == 0 && mla > 0)
        return "MLA";
    if (attention == 0)
        return "no attention";
    std::string label;
    if (kvHeads == s.model.qHeads)
        label = "MHA-" + std::to_string(kvHeads);
    else if (kvHeads == 1)
        label = "MQA";
    else
        label = "GQA-" + std::to_string(kvHeads);
    return mla > 0 ? label + "+MLA" : label;
}

void fillLayerGroups(const Plan& p, const StagePlan& st, std::int64_t context, LedgerResult& r) {
    for (int i = st.firstLayer; i < st.lastLayer; ++i) {
        const LayerBytes& b = p.layers[static_cast<std::size_t>(i)];
        auto it = std::find_if(r.groups.begin(), r.groups.end(), [&](const LayerGroupUsage& g) {
            return g.kind == b.kind && g.window == b.window &&
                   g.bytesPerTokenPerLayerPerGpu == b.perTokenPerGpu;
        });
        if (it == r.groups.end()) {
            LayerGroupUsage u;
            u.kind = b.kind;
            u.window = b.window;
            u.bytesPerTokenPerLayerPerGpu = b.perTokenPerGpu;
            u.stateBytesPerLayerPerGpu = b.statePerRequest;
            if (p.blockSize > 0) {
                CacheSpec spec;
                spec.type = b.kind == LayerKind::Sliding   ? SpecType::SlidingWindow
                            : b.kind == LayerKind::Chunked ? SpecType::ChunkedLocal
                            : b.kind == LayerKind::State   ? SpecType::Mamba
                                                           : SpecType::FullAttention;
                spec.window = b.kind == LayerKind::Sliding ? b.window : 0;
                spec.chunk = b.kind == LayerKind::Chunked ? b.window : 0;
                spec.blockSize = p.blockSize;
                u.blocksPerRequest = groupHolding(p, spec, context).blocks;
                u.tokensHeldPerRequest =
                    b.kind == LayerKind::State ? 0 : satMul(u.blocksPerRequest, p.blockSize);
            } else {
                const std::int64_t reserve = std::max(p.maxModelLen, context);
                u.tokensHeldPerRequest =
                    b.kind == LayerKind::State || b.kind == LayerKind::None ? 0
                    : (b.kind == LayerKind::Sliding || b.kind == LayerKind::Chunked)
                        ? std::min(reserve, b.window)
                        : reserve;
            }
            r.groups.push_back(u);
            it = r.groups.end() - 1;
        }
        ++it->layers;
    }
}

void fillCacheGroups(const Plan& p, const StagePlan& st, std::int64_t context, LedgerResult& r) {
    int groupSize = 0;
    for (const auto& g : st.groups.groups)
        groupSize = std::max(groupSize, static_cast<int>(g.layers.size()));
    for (const auto& g : st.groups.groups) {
        KvCacheGroupUsage u;
        u.type = g.spec.type;
        u.window = g.spec.type == SpecType::ChunkedLocal ? g.spec.chunk
                                                         : std::max(g.spec.window, g.spec.chunk);
        u.layers = static_cast<int>(g.layers.size());
        u.uniformType = g.uniformType();
        u.paddingSlots = u.uniformType ? 0 : groupSize - u.layers;
        u.blockSize = g.spec.blockSize;
        u.pageBytes =
            g.uniformType() ? bytesPerPoolBlock(CacheGroups{{g}, false, {}}) : g.spec.pageBytes();
        u.realPageBytes = g.spec.realPageBytes;
        CacheGroups one;
        one.groups.push_back(g);
        u.admissionBlocks = admissionBlocksPerRequest(one, p.admission);
        const Holding h = requestHolding(p, one, context);
        u.blocksAtContext = h.blocks;
        u.sharedBlocksAtContext = h.sharedBlocks;
        r.kvCacheGroups.push_back(u);
        // What the request's blocks in this group hold beyond real layer pages.
        const std::int64_t real =
            g.uniformType() ? u.pageBytes
                            : satMul(static_cast<std::int64_t>(u.layers), g.spec.realPageBytes);
        const std::int64_t waste = std::max<std::int64_t>(0, st.bytesPerBlock - real);
        r.paddingBytesPerRequest = satAdd(r.paddingBytesPerRequest, satMul(h.blocks, waste));
        if (g.spec.type == SpecType::Mamba)
            r.stateBytesPerRequest =
                satAdd(r.stateBytesPerRequest, satMul(h.blocks, st.bytesPerBlock));
    }
}

void fillPaged(const Plan& p, const Scenario& s, LedgerResult& r) {
    const StagePlan& st = limitingStage(p);
    r.numGpuBlocks = p.numBlocks;
    r.bytesPerBlock = st.bytesPerBlock;
    r.pageBytesPerGpu = st.bytesPerBlock;
    r.blocksPerRequest = admissionBlocksPerRequest(st.groups, p.admission);
    fillCacheGroups(p, st, s.workload.context, r);
    // get_max_concurrency_for_kv_cache_config and the capacity log (update_kv_cache_capacity):
    // tokens = int(max_concurrency x max_model_len), computed in doubles as Python does.
    if (r.blocksPerRequest > 0) {
        r.maxConcurrency =
            static_cast<double>(r.numGpuBlocks) / static_cast<double>(r.blocksPerRequest);
        r.gpuKvCacheTokens =
            static_cast<std::int64_t>(r.maxConcurrency * static_cast<double>(p.maxModelLen));
    }
    int minBlock = 0;
    for (const auto& g : st.groups.groups)
        minBlock = minBlock == 0 ? g.spec.blockSize : std::min(minBlock, g.spec.blockSize);
    if (!st.groups.groups.empty())
        r.gpuKvCacheTokensLegacy =
            satMul(r.numGpuBlocks / static_cast<std::int64_t>(st.groups.groups.size()), minBlock);
    // The release's "GPU KV cache size" (vllm/v1/core/kv_cache_utils.py): before 0.21 the
    // blocks shared out over the groups, since then what max_model_len requests hold.
    const VllmRules& rules = p.rules;
    if (rules.tokensLine == TokensLineFormula::BlocksPerGroup)
        r.gpuKvCacheTokens = r.gpuKvCacheTokensLegacy;
    r.capacityLogLine = vllmCapacityLogLine(r.gpuKvCacheTokens, p.maxModelLen, r.maxConcurrency);
    r.vllmLogLines = vllmKvCacheLines(rules, r.availableKvBytes, r.gpuKvCacheTokens, p.maxModelLen,
                                      r.maxConcurrency);
    // With --kv-cache-memory-bytes vLLM skips the memory profile and its "Available" line.
    if (s.hardware.kvMemoryBytes && !r.vllmLogLines.empty())
        r.vllmLogLines.erase(r.vllmLogLines.begin());
}

// _check_enough_kv_cache_memory on every worker, with the null block held back.
struct Refusal {
    bool refused = false;
    std::string message;
    std::int64_t estimatedMaxModelLen = 0;
};

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

void addWarnings(const Scenario& s, const Plan& p, LedgerResult& r) {
    const std::int64_t ctx = s.workload.context;
    if (ctx > s.model.maxContext)
        r.warnings.push_back("context " + withThousands(ctx) + " exceeds " + s.model.name +
                             "'s max model length (" + withThousands(s.model.maxContext) + ")");
    if (s.workload.maxModelLen > 0 && ctx > s.workload.maxModelLen)
        r.warnings.push_back("context " + withThousands(ctx) + " exceeds the max model length (" +
                             withThousands(s.workload.maxModelLen) + "); vLLM would reject it");
    const int tp = p.tp;
    const int attention = s.model.countLayers(LayerKind::Full) +
                          s.model.countLayers(LayerKind::Sliding) +
                          s.model.countLayers(LayerKind::Chunked);
    if (attention > 0 && tp > 1 && r.kv.kvHeads % tp != 0 && tp % r.kv.kvHeads != 0)
        r.warnings.push_back(std::to_string(r.kv.kvHeads) + " KV heads cannot be split over " +
                             std::to_string(tp) + " GPUs (vLLM needs one to divide the other)");
    if (tp > 1 && s.model.qHeads % tp != 0)
        r.warnings.push_back(std::to_string(s.model.qHeads) + " query heads are not divisible by " +
                             std::to_string(tp) +
                             " GPUs; vLLM would refuse this tensor parallel size");
    if (s.levers.prefix.enabled && p.blockSize == 0)
        r.warnings.push_back(
            "prefix sharing needs paging: with contiguous reservation nothing is shared");
    else if (s.levers.prefix.enabled && p.blockSize > 0 &&
             s.levers.prefix.sharedTokens < p.blockSize)
        r.warnings.push_back("a prefix shorter than one block shares nothing (full blocks only)");
    if (!p.blockError.empty())
        r.warnings.push_back(p.blockError);
    if (r.kvBytesPerRequest == kInt64Max)
        r.warnings.push_back("bytes per request exceed 8 EiB and are shown saturated");
    // vLLM #54458: an attention block raised to hold a Mamba page is a floor per request in
    // every group, whatever the request's length.
    if (p.blockSize >= 1024 && s.model.countLayers(LayerKind::State) > 0 &&
        !p.groups.groups.empty())
        r.warnings.push_back(
            "vLLM raises the attention block to " + withThousands(p.blockSize) +
            " tokens so that one page holds a Mamba state: every running request holds at least "
            "one block in each of the " +
            std::to_string(p.groups.groups.size()) +
            " KV cache groups, whatever its length, and prefixes are shared in whole blocks "
            "(vLLM #54458)");
    // vLLM #51454: MLA's latent cache has one head, so tensor parallelism copies it to every
    // GPU; data parallelism (or decode context parallelism) splits the requests instead.
    if (s.model.isMla() && tp > 1 && s.hardware.decodeContextParallel <= 1) {
        const std::string n = std::to_string(tp);
        // DP needs the whole model on one GPU; DCP keeps TP's weight split.
        const bool dpFits = r.weightsBytes < r.requestedBytes;
        r.warnings.push_back("MLA under TP " + n +
                             " keeps a whole copy of the KV cache on every GPU: " +
                             (dpFits ? "DP " + n + " or --dcp " + n : "--dcp " + n) +
                             " holds up to " + n + "x the tokens on the same GPUs (vLLM #51454)");
    }
    for (const auto& l : s.model.layers)
        if (l.kind == LayerKind::Sliding && l.window > s.model.maxContext) {
            r.warnings.push_back("the sliding window (" + withThousands(l.window) +
                                 ") is larger than the max model length: it never slides");
            break;
        }
}

} // namespace

EffectiveKv effectiveKv(const Scenario& s) {
    EffectiveKv kv;
    kv.kvHeads = effectiveKvHeads(s);
    kv.kvHeadsPerGpu = std::max(1, kv.kvHeads / tpOf(s));
    kv.format = effectiveFormat(s);
    kv.attentionLabel = attentionLabel(s, kv.kvHeads);
    return kv;
}

PointResult computePoint(const Scenario& s, std::int64_t context) {
    const Plan p = buildPlan(s);
    const PointCost c = pointCost(p, context);
    PointResult r;
    r.bytesPerRequestPerGpu = satMul(c.units, c.bytesPerUnit);
    r.bytesPerRequest = satMul(r.bytesPerRequestPerGpu, satMul(p.tp, p.pp));
    r.maxRequests = requestsThatFit(c.pool, c.units, c.sharedUnits, p.sharingRequests);
    return r;
}

namespace {

// The model's layers by the kind the KV cache holds for them.
void countLayerMix(const Scenario& s, LedgerResult& r) {
    for (const auto& layer : s.model.layers) {
        switch (heldLayer(layer).kind) {
        case LayerKind::Full:
            ++r.layerMix.full;
            break;
        case LayerKind::Sliding:
            ++r.layerMix.sliding;
            break;
        case LayerKind::Chunked:
            ++r.layerMix.chunked;
            break;
        case LayerKind::Mla:
            ++r.layerMix.mla;
            break;
        case LayerKind::State:
            ++r.layerMix.state;
            break;
        case LayerKind::None:
            ++r.layerMix.none;
            break;
        }
    }
}

// Whether vLLM refuses to start with this pool, and why: the KV cache groups, no memory
// left, not enough for one request at max_model_len, the Mamba blocks, the cache dtype.
void checkRefusal(const Scenario& s, const Plan& p, const StagePlan& st, LedgerResult& r) {
    if (!p.groupError.empty()) {
        r.refused = true;
        r.error = p.groupError;
    } else if (!s.hardware.kvMemoryBytes && st.availableKvBytes == 0) {
        r.refused = true;
        r.error = "weights (" + formatBytes(r.weightsBytesPerGpu) + " per GPU) plus reserves " +
                  "exceed the " + formatBytes(r.requestedBytes) + " requested on " +
                  s.hardware.gpu.name + ": no memory is left for the KV cache";
    } else if (p.blockSize > 0) {
        const Refusal refusal = checkEnoughMemory(p, true);
        r.refused = refusal.refused;
        r.estimatedMaxModelLen = refusal.estimatedMaxModelLen;
        r.error = refusal.message;
    }
    // compilation.py's check (vLLM PR #38270): one Mamba block per decode sequence.
    if (!r.refused && p.blockSize > 0 && s.model.countLayers(LayerKind::State) > 0 &&
        p.rules.mambaSeqsRefused) {
        const std::int64_t seqs = effectiveMaxNumSeqs(s);
        if (seqs > r.numGpuBlocks) {
            r.refused = true;
            r.error = "vLLM refuses to start: max_num_seqs (" + std::to_string(seqs) +
                      ") exceeds available Mamba cache blocks (" + std::to_string(r.numGpuBlocks) +
                      "). Each decode sequence requires one Mamba cache block, so CUDA graph "
                      "capture cannot proceed. Please lower max_num_seqs to at most " +
                      std::to_string(r.numGpuBlocks) + " or increase gpu_memory_utilization.";
            r.warnings.push_back("clamp: --max-num-seqs " + std::to_string(r.numGpuBlocks) +
                                 " starts it (the pool's blocks; vLLM #49064)");
        }
    }
    if (!r.refused)
        if (const auto dtype = vllmCacheDtype(s))
            if (auto why =
                    vllmCacheDtypeRefusal(p.rules, *dtype, s.hardware.gpu.computeCapability)) {
                r.refused = true;
                r.error = *why;
            }
}

} // namespace

LedgerResult computeLedger(const Scenario& s) {
    LedgerResult r;
    if (auto e = s.validate()) {
        r.error = *e;
        return r;
    }
    const Plan p = buildPlan(s);
    const StagePlan& st = limitingStage(p);
    r.kv = effectiveKv(s);
    r.contextTokens = s.workload.context;
    r.maxModelLen = p.maxModelLen;
    r.blockSize = p.blockSize;
    r.pipelineStages = p.pp;
    r.limitingStage = p.limiting;
    r.inFlightTokens = p.admission.inFlightTokens;
    r.hybridKvCacheManagerDisabled = p.groups.hybridDisabled;
    r.notes = p.blockNotes;
    for (const auto& n : p.groups.notes)
        r.notes.push_back(n);
    countLayerMix(s, r);
    for (const auto& b : p.layers)
        r.kvBytesPerToken = satAdd(r.kvBytesPerToken, b.perTokenModel);
    for (int i = st.firstLayer; i < st.lastLayer; ++i)
        r.kvBytesPerTokenPerGpu =
            satAdd(r.kvBytesPerTokenPerGpu, p.layers[static_cast<std::size_t>(i)].perTokenPerGpu);
    fillLayerGroups(p, st, s.workload.context, r);

    const PointCost c = pointCost(p, s.workload.context);
    r.kvBytesPerRequestPerGpu = satMul(c.units, c.bytesPerUnit);
    r.kvBytesPerRequest = satMul(r.kvBytesPerRequestPerGpu, satMul(p.tp, p.pp));
    r.sharedBytesPerRequestPerGpu = satMul(c.sharedUnits, c.bytesPerUnit);
    r.blocksPerRequestAtContext = p.blockSize > 0 ? c.units : 0;

    r.weightsBytes = p.weightsTotal;
    r.weightsBytesPerGpu = st.weightsBytes;
    r.gpuMemoryBytes = s.hardware.gpu.memoryBytes;
    r.requestedBytes = requestedBytes(s);
    r.activationBytes = p.activationBytes;
    r.overheadBytes = p.overheadBytes;
    r.cudaGraphBytes = p.cudaGraphBytes;
    r.reservesEstimated = p.reservesEstimated;
    r.kvMemoryOverridden = s.hardware.kvMemoryBytes.has_value();
    r.availableKvBytes = st.availableKvBytes;

    if (p.blockSize > 0 && p.groupError.empty()) {
        fillPaged(p, s, r);
    } else if (p.blockSize == 0) {
        r.gpuKvCacheTokens =
            r.kvBytesPerTokenPerGpu > 0 ? st.availableKvBytes / r.kvBytesPerTokenPerGpu : 0;
        const UnpagedBytes atMax = unpagedBytes(p, st, p.maxModelLen);
        r.stateBytesPerRequest = unpagedBytes(p, st, s.workload.context).state;
        r.maxConcurrency = atMax.perRequest > 0 ? static_cast<double>(st.availableKvBytes) /
                                                      static_cast<double>(atMax.perRequest)
                                                : 0.0;
    }
    r.maxRequestsAtContext = requestsThatFit(c.pool, c.units, c.sharedUnits, p.sharingRequests);
    r.kvBytesAtMaxRequests =
        satMul(unitsForRequests(r.maxRequestsAtContext, c.units, c.sharedUnits, p.sharingRequests),
               c.bytesPerUnit);

    addWarnings(s, p, r);
    r.vllmVersion = p.rules.version.str();
    if (s.engine.vllmVersion)
        if (auto w = vllmVersionWarning(*s.engine.vllmVersion))
            r.warnings.push_back(*w);

    checkRefusal(s, p, st, r);
    if (r.error.empty() && r.maxRequestsAtContext == 0)
        r.error = "one request of " + withThousands(s.workload.context) + " tokens needs " +
                  formatBytes(r.kvBytesPerRequestPerGpu) + " per GPU but only " +
                  formatBytes(st.availableKvBytes) + " is available for the KV cache";
    r.requestsYouCanRun =
        r.error.empty() ? std::min(r.maxRequestsAtContext, effectiveMaxNumSeqs(s)) : 0;
    return r;
}

Scenario ladderScenario(const Scenario& s, LadderStepId id) {
    Scenario out = s;
    const auto step = static_cast<int>(id);
    if (step < static_cast<int>(LadderStepId::Attention)) {
        out.levers.attention.enabled = true;
        out.levers.attention.mode = AttentionMode::Mha;
    }
    if (step < static_cast<int>(LadderStepId::Quantization))
        out.levers.quant.enabled = false;
    if (step < static_cast<int>(LadderStepId::Paging))
        out.levers.paging.enabled = false;
    if (step < static_cast<int>(LadderStepId::Prefix))
        out.levers.prefix.enabled = false;
    return out;
}

std::vector<LadderStep> computeLadder(const Scenario& s) {
    std::vector<LadderStep> steps;
    const std::array ids{LadderStepId::Baseline, LadderStepId::Attention,
                         LadderStepId::Quantization, LadderStepId::Paging, LadderStepId::Prefix};
    for (const auto id : ids) {
        LadderStep st;
        st.id = id;
        st.scenario = ladderScenario(s, id);
        st.result = computeLedger(st.scenario);
        const auto& lv = s.levers;
        switch (id) {
        case LadderStepId::Baseline:
            st.label = "Baseline: " + st.result.kv.attentionLabel + " " +
                       shortLabel(st.result.kv.format) + " contiguous";
            break;
        case LadderStepId::Attention:
            st.applied = st.result.kv.kvHeads != steps.back().result.kv.kvHeads;
            st.label =
                "+" + st.result.kv.attentionLabel + (lv.attention.enabled ? "" : " (native)");
            break;
        case LadderStepId::Quantization:
            st.applied = lv.quant.enabled;
            st.label = lv.quant.enabled ? "+" + shortLabel(lv.quant.format) : "+quantization (off)";
            break;
        case LadderStepId::Paging:
            st.applied = lv.paging.enabled;
            st.label = lv.paging.enabled ? "+paging " + std::to_string(st.result.blockSize)
                                         : "+paging (off)";
            break;
        case LadderStepId::Prefix: {
            const bool useful =
                lv.prefix.enabled && lv.paging.enabled && lv.prefix.sharedTokens > 0;
            st.applied = useful;
            if (!lv.prefix.enabled)
                st.label = "+prefix sharing (off)";
            else if (!lv.paging.enabled)
                st.label = "+prefix sharing (needs paging)";
            else
                st.label =
                    "+prefix " + formatTokens(lv.prefix.sharedTokens) + " x " +
                    (lv.prefix.sharingRequests > 0 ? std::to_string(lv.prefix.sharingRequests)
                                                   : std::string("all"));
            break;
        }
        }
        steps.push_back(std::move(st));
    }
    return steps;
}

std::vector<std::int64_t> sweepContexts(std::int64_t maxContext, int pointsPerOctave) {
    const std::int64_t lo = 256;
    const std::int64_t hi = std::max<std::int64_t>(maxContext, lo * 2);
    const int ppo = std::clamp(pointsPerOctave, 1, 64);
    std::vector<std::int64_t> out;
    for (int i = 0;; ++i) {
        const double v = static_cast<double>(lo) * std::exp2(static_cast<double>(i) / ppo);
        auto t = static_cast<std::int64_t>(std::llround(v));
        if (t >= hi) {
            out.push_back(hi);
            break;
        }
        if (out.empty() || t > out.back())
            out.push_back(t);
    }
    return out;
}

SweepResult computeSweep(const Scenario& s, int pointsPerOctave) {
    SweepResult out;
    if (s.validate())
        return out; // no curves for a scenario the ledger rejects
    // The context axis ends at the max model len (the user's --max-model-len where set, which
    // may be below or above the model's): beyond it vLLM rejects the request. A context typed
    // beyond it still gets its point.
    const std::int64_t upper =
        std::max(std::min<std::int64_t>(s.effectiveMaxModelLen(), std::int64_t{1} << 20),
                 s.workload.context);
    out.contexts = sweepContexts(upper, pointsPerOctave);
    const std::array ids{LadderStepId::Baseline, LadderStepId::Attention,
                         LadderStepId::Quantization, LadderStepId::Paging, LadderStepId::Prefix};
    // Labels and 'applied' come from the ladder; the points from the plan.
    const auto ladder = computeLadder(s);
    for (std::size_t k = 0; k < ids.size(); ++k) {
        Curve c;
        c.step = ids[k];
        c.label = ladder[k].label;
        c.applied = ladder[k].applied;
        c.isCurrent = k + 1 == ids.size();
        const Plan p = buildPlan(ladder[k].scenario);
        c.bytesPerRequestPerGpu.reserve(out.contexts.size());
        c.bytesPerRequest.reserve(out.contexts.size());
        c.maxRequests.reserve(out.contexts.size());
        for (const std::int64_t t : out.contexts) {
            const PointCost pc = pointCost(p, t);
            const std::int64_t perGpu = satMul(pc.units, pc.bytesPerUnit);
            c.bytesPerRequestPerGpu.push_back(static_cast<double>(perGpu));
            c.bytesPerRequest.push_back(static_cast<double>(satMul(perGpu, satMul(p.tp, p.pp))));
            c.maxRequests.push_back(static_cast<double>(
                requestsThatFit(pc.pool, pc.units, pc.sharedUnits, p.sharingRequests)));
        }
        if (c.isCurrent)
            out.availableKvBytes = limitingStage(p).availableKvBytes;
        out.curves.push_back(std::move(c));
    }
    return out;
}

std::int64_t kvBytesForRequests(const Scenario& s, std::int64_t count) {
    if (count <= 0 || s.validate())
        return 0;
    const Plan p = buildPlan(s);
    const PointCost c = pointCost(p, s.workload.context);
    return satMul(unitsForRequests(count, c.units, c.sharedUnits, p.sharingRequests),
                  c.bytesPerUnit);
}

GpusNeeded computeGpusNeeded(const Scenario& s, std::int64_t targetRequests) {
    GpusNeeded out;
    if (targetRequests <= 0 || s.validate())
        return out;
    Scenario one = s;
    applyLayout(one, Layout{});
    one.hardware.kvMemoryBytes.reset();
    const EffectiveKv kv = effectiveKv(one);
    out.weightsBytes = weightsTotal(one, kv.format, kv.kvHeads);
    out.kvBytes = kvBytesForRequests(one, targetRequests);
    out.totalBytes = satAdd(out.weightsBytes, out.kvBytes);
    const LedgerResult single = computeLedger(one);
    const std::int64_t perGpuBudget =
        satSub(satSub(requestedBytes(s), single.activationBytes), single.overheadBytes);
    if (perGpuBudget > 0 && out.totalBytes != kInt64Max)
        for (int n = 1; n <= kMaxGpus; ++n)
            if (satAdd(ceilDiv(out.weightsBytes, n), ceilDiv(out.kvBytes, n)) <= perGpuBudget) {
                out.pooledGpus = n;
                break;
            }
    PlanRequest req;
    req.base = s;
    req.users = targetRequests;
    req.context = s.workload.context;
    req.gpus = {s.hardware.gpu};
    req.maxGpus = kMaxPlanGpus;
    const PlanResult plan = planDeployments(req);
    const GpuPlan& g = plan.gpus.front();
    if (g.fits) {
        // The fewest GPUs that hold them, flagged slow or not: this answers memory, not speed.
        const auto fewest = std::min_element(g.layouts.begin(), g.layouts.end(),
                                             [](const Deployment& a, const Deployment& b) {
                                                 return a.layout.gpus() < b.layout.gpus();
                                             });
        out.layout = fewest->layout;
        out.gpus = out.layout.gpus();
        out.tensorParallel = out.layout.tp;
        if (out.pooledGpus > 0 && out.gpus != out.pooledGpus)
            out.note = "pooled memory suggests " + std::to_string(out.pooledGpus) +
                       " GPUs; vLLM needs whole layouts: " + std::to_string(out.gpus) + " as " +
                       layoutLabel(out.layout);
    } else {
        out.note = g.reason;
    }
    return out;
}

CapacityModel::CapacityModel(const Scenario& s)
    : m_scenario(s), m_geometry(std::make_unique<detail::Plan>(planGeometry(s))) {
    m_invalid = s.validate().value_or("");
}

CapacityModel::~CapacityModel() = default;

ReplicaCapacity CapacityModel::evaluate(int pp, int dp, bool ep) {
    ReplicaCapacity c;
    if (!m_invalid.empty()) {
        c.reason = m_invalid;
        return c;
    }
    Scenario& s = m_scenario;
    s.hardware.pipelineParallel = std::max(1, pp);
    s.hardware.dataParallel = std::max(1, dp);
    s.hardware.expertParallel = ep;
    const std::size_t slot = static_cast<std::size_t>(std::max(1, pp) - 1);
    if (m_stagesByPp.size() <= slot)
        m_stagesByPp.resize(slot + 1);
    if (!m_stagesByPp[slot]) {
        m_stagesByPp[slot] = std::make_unique<detail::Plan>(*m_geometry);
        planStages(*m_stagesByPp[slot], s);
    }
    Plan& p = *m_stagesByPp[slot];
    m_last = &p;
    planMemory(p, s);
    const StagePlan& st = limitingStage(p);
    c.weightsBytesPerGpu = 0;
    for (const auto& stage : p.stages)
        c.weightsBytesPerGpu = std::max(c.weightsBytesPerGpu, stage.weightsBytes);
    c.availableKvBytesPerGpu = st.availableKvBytes;
    if (!p.groupError.empty()) {
        c.reason = p.groupError;
        return c;
    }
    if (!s.hardware.kvMemoryBytes && st.availableKvBytes == 0) {
        c.reason = "the weights (" + formatBytes(c.weightsBytesPerGpu) +
                   " per GPU) and reserves leave no memory for the KV cache";
        return c;
    }
    if (p.blockSize > 0) {
        const Refusal refusal = checkEnoughMemory(p, false);
        if (refusal.refused) {
            c.reason = refusal.message;
            return c;
        }
    }
    const PointCost cost = pointCost(p, s.workload.context);
    c.requests = requestsThatFit(cost.pool, cost.units, cost.sharedUnits, p.sharingRequests);
    c.kvBytesPerRequestPerGpu = satMul(cost.units, cost.bytesPerUnit);
    c.kvPoolBytesPerGpu = p.blockSize > 0
                              ? satMul(std::max<std::int64_t>(0, p.numBlocks - 1), st.bytesPerBlock)
                              : st.availableKvBytes;
    c.ok = c.requests > 0;
    if (!c.ok)
        c.reason = "one request of " + withThousands(s.workload.context) + " tokens needs " +
                   formatBytes(c.kvBytesPerRequestPerGpu) + " per GPU, more than the " +
                   formatBytes(st.availableKvBytes) + " left for the KV cache";
    return c;
}

std::int64_t CapacityModel::kvBytesForRequests(std::int64_t count) const {
    if (!m_last || m_last->stages.empty())
        return 0;
    const Plan& p = *m_last;
    const PointCost cost = pointCost(p, m_scenario.workload.context);
    return satMul(unitsForRequests(count, cost.units, cost.sharedUnits, p.sharingRequests),
                  cost.bytesPerUnit);
}

CapacityModel::KvRead CapacityModel::kvRead(std::int64_t context) const {
    KvRead out;
    if (!m_last || m_last->stages.empty())
        return out;
    const Plan& p = *m_last;
    const StagePlan& st = limitingStage(p);
    out.sharingRequests = p.sharingRequests;
    if (p.blockSize == 0) {
        // A contiguous reservation holds max_model_len, but attention reads only the tokens
        // the request has: `context` of them (the window, for windowed layers).
        out.perRequest = satMul(context, st.unpaged.fullPerToken);
        for (const auto& [window, perToken] : st.unpaged.windowed)
            out.perRequest = satAdd(out.perRequest, satMul(std::min(context, window), perToken));
        out.statePerRequest = st.unpaged.state;
        return out;
    }
    for (const auto& g : st.groups.groups) {
        std::int64_t real = 0;
        if (g.uniformType())
            for (const auto& ls : g.layerSpecs)
                real = satAdd(real, ls.realPageBytes);
        else
            real = satMul(static_cast<std::int64_t>(g.layers.size()), g.spec.realPageBytes);
        CacheGroups one;
        one.groups.push_back(g);
        const Holding h = requestHolding(p, one, context);
        if (g.spec.type == SpecType::Mamba) {
            out.statePerRequest = satAdd(out.statePerRequest, satMul(h.blocks, real));
        } else {
            out.perRequest = satAdd(out.perRequest, satMul(h.blocks, real));
            out.sharedPerRequest = satAdd(out.sharedPerRequest, satMul(h.sharedBlocks, real));
        }
    }
    return out;
}

} // namespace kvl::core
