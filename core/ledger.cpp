#include "ledger.h"

#include "units.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace kvl::core {

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Saturating arithmetic: an absurd scenario reads "more than 8 EiB", never wraps around.
std::int64_t satMul(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? kInt64Max : r;
}
std::int64_t satAdd(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? kInt64Max : r;
}
std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return a / b + (a % b != 0 ? 1 : 0);
}

// Layers grouped by what they hold per token, computed once per scenario so that the sweep's
// points cost a few multiplications each.
struct Group {
    LayerKind kind = LayerKind::Full;
    std::int64_t window = 0;
    int layers = 0;
    std::int64_t bytesPerTokenPerGpu = 0; // one layer
    std::int64_t bytesPerTokenModel = 0;  // one layer, whole model, no replication
};

constexpr std::size_t kMaxGroups = 8;

struct Geometry {
    std::array<Group, kMaxGroups> groups{};
    std::size_t groupCount = 0;
    std::int64_t bytesPerTokenPerGpu = 0;
    std::int64_t bytesPerTokenModel = 0;
    int tp = 1;
    int blockSize = 0; // 0 = unpaged
    std::int64_t maxModelLen = 0;
    std::int64_t maxNumBatchedTokens = 0;
    std::int64_t prefixTokens = 0;    // 0 = no sharing
    std::int64_t sharingRequests = 0; // 0 = all
    std::int64_t availableKvBytes = 0;
};

int effectiveKvHeads(const Scenario& s) {
    const auto& a = s.levers.attention;
    if (!a.enabled)
        return s.model.kvHeads;
    switch (a.mode) {
    case AttentionMode::Native:
        return s.model.kvHeads;
    case AttentionMode::Mha:
        return s.model.qHeads;
    case AttentionMode::Gqa:
        return a.gqaKvHeads;
    case AttentionMode::Mqa:
        return 1;
    }
    return s.model.kvHeads;
}

KvFormat effectiveFormat(const Scenario& s) {
    return s.levers.quant.enabled ? s.levers.quant.format
                                  : KvFormat::defaultFor(s.model.nativeKvDtype);
}

std::int64_t weightsTotal(const Scenario& s, const KvFormat& f, int kvHeads) {
    const WeightDtype wd = s.hardware.weightDtype.value_or(s.model.weightDtype);
    // vLLM keeps k_scale / v_scale beside the weights (REFERENCE.md 2).
    const std::int64_t scales =
        satMul(s.model.numLayers(), outOfPageScaleBytesPerLayer(f, kvHeads));
    return satAdd(weightBytes(s.model.params, wd), scales);
}

std::int64_t weightsPerGpu(const Scenario& s, std::int64_t weights) {
    return ceilDiv(weights, std::max(1, s.hardware.gpuCount));
}

std::int64_t requestedBytes(const Hardware& h) {
    return static_cast<std::int64_t>(static_cast<double>(h.gpu.memoryBytes) * h.memoryUtilization);
}

Geometry buildGeometry(const Scenario& s) {
    Geometry g;
    const int kvHeads = effectiveKvHeads(s);
    const int tp = std::max(1, s.hardware.gpuCount);
    // vLLM: fewer KV heads than GPUs are replicated, not split.
    const int kvPerGpu = std::max(1, kvHeads / tp);
    const KvFormat f = effectiveFormat(s);
    const std::int64_t headBytes =
        s.model.headDim > 0 ? kvBytesPerTokenPerHead(f, s.model.headDim) : 0;
    const std::int64_t latentBytes =
        s.model.isMla() ? latentBytesPerToken(f, s.model.mlaLatentDim()) : 0;
    for (const auto& layer : s.model.layers) {
        const std::int64_t window = layer.kind == LayerKind::Sliding ? layer.window : 0;
        std::size_t i = 0;
        while (i < g.groupCount &&
               !(g.groups[i].kind == layer.kind && g.groups[i].window == window))
            ++i;
        if (i == g.groupCount) {
            if (g.groupCount == kMaxGroups) {
                i = kMaxGroups - 1; // more distinct windows than groups: count with the last
            } else {
                Group& grp = g.groups[g.groupCount++];
                grp.kind = layer.kind;
                grp.window = window;
                if (layer.kind == LayerKind::Mla) {
                    // MLA: one latent per token, replicated on every TP rank.
                    grp.bytesPerTokenPerGpu = latentBytes;
                    grp.bytesPerTokenModel = latentBytes;
                } else {
                    grp.bytesPerTokenPerGpu = satMul(kvPerGpu, headBytes);
                    grp.bytesPerTokenModel = satMul(kvHeads, headBytes);
                }
            }
        }
        ++g.groups[i].layers;
    }
    for (std::size_t i = 0; i < g.groupCount; ++i) {
        g.bytesPerTokenPerGpu = satAdd(g.bytesPerTokenPerGpu,
                                       satMul(g.groups[i].layers, g.groups[i].bytesPerTokenPerGpu));
        g.bytesPerTokenModel = satAdd(g.bytesPerTokenModel,
                                      satMul(g.groups[i].layers, g.groups[i].bytesPerTokenModel));
    }
    g.tp = tp;
    g.blockSize = s.levers.paging.enabled ? std::max(1, s.levers.paging.blockSize) : 0;
    g.maxModelLen = std::max<std::int64_t>(1, s.effectiveMaxModelLen());
    g.maxNumBatchedTokens = std::max<std::int64_t>(1, s.workload.maxNumBatchedTokens);
    if (g.blockSize > 0 && s.levers.prefix.enabled && s.levers.prefix.sharedTokens > 0) {
        g.prefixTokens = s.levers.prefix.sharedTokens;
        g.sharingRequests = std::max<std::int64_t>(0, s.levers.prefix.sharingRequests);
    }
    if (s.hardware.kvMemoryBytes) {
        g.availableKvBytes = std::max<std::int64_t>(0, *s.hardware.kvMemoryBytes);
    } else {
        const std::int64_t weights = weightsTotal(s, f, kvHeads);
        std::int64_t avail = requestedBytes(s.hardware) - weightsPerGpu(s, weights);
        avail -= s.hardware.activationBytes;
        avail -= s.hardware.overheadBytes;
        g.availableKvBytes = std::max<std::int64_t>(0, avail);
    }
    return g;
}

// Per-layer tokens (unpaged) or blocks (paged) one request holds at `context`.
struct Holding {
    std::int64_t blocks = 0; // paged
    std::int64_t tokens = 0; // tokens' worth of storage
    std::int64_t sharedBlocks = 0;
};

Holding holdingFor(const Geometry& g, const Group& grp, std::int64_t context) {
    Holding h;
    if (g.blockSize == 0) {
        // Contiguous engines reserve the maximum length up front (REFERENCE.md 2).
        const std::int64_t reserve = std::max(g.maxModelLen, context);
        h.tokens = grp.kind == LayerKind::Sliding ? std::min(reserve, grp.window) : reserve;
        return h;
    }
    const std::int64_t b = g.blockSize;
    const std::int64_t total = ceilDiv(context, b);
    std::int64_t held = total;
    if (grp.kind == LayerKind::Sliding) // at most the window, plus one block of slack (vLLM)
        held = std::min(total, ceilDiv(std::max<std::int64_t>(grp.window - 1, 0), b) + 1);
    h.blocks = held;
    h.tokens = satMul(held, b);
    if (g.prefixTokens > 0) {
        // vLLM hashes FULL blocks only, and always leaves the last token's block unshared.
        const std::int64_t shareable = std::min(g.prefixTokens, context - 1) / b;
        // Only prefix blocks still held (a sliding layer dropped the oldest ones) are shared.
        h.sharedBlocks = std::max<std::int64_t>(0, shareable - (total - held));
    }
    return h;
}

struct PointBytes {
    std::int64_t perRequestPerGpu = 0;
    std::int64_t sharedPerRequestPerGpu = 0;
};

PointBytes pointBytes(const Geometry& g, std::int64_t context) {
    PointBytes p;
    for (std::size_t i = 0; i < g.groupCount; ++i) {
        const Group& grp = g.groups[i];
        const Holding h = holdingFor(g, grp, context);
        const std::int64_t perLayer = satMul(h.tokens, grp.bytesPerTokenPerGpu);
        p.perRequestPerGpu = satAdd(p.perRequestPerGpu, satMul(grp.layers, perLayer));
        if (h.sharedBlocks > 0) {
            const std::int64_t shared =
                satMul(satMul(h.sharedBlocks, g.blockSize), grp.bytesPerTokenPerGpu);
            p.sharedPerRequestPerGpu = satAdd(p.sharedPerRequestPerGpu, satMul(grp.layers, shared));
        }
    }
    return p;
}

// Whole requests that fit in `pool` when each costs `r` and each request after the first in a
// sharing group of `n` (0 = all) saves `shared`.
std::int64_t requestsThatFit(std::int64_t pool, std::int64_t r, std::int64_t shared,
                             std::int64_t n) {
    if (r <= 0 || pool < r)
        return 0;
    if (shared <= 0)
        return pool / r;
    const std::int64_t marginal = r - shared; // > 0: the last block is never shared
    if (n == 0 || n == 1) {
        if (n == 1)
            return pool / r;
        return 1 + (pool - r) / marginal;
    }
    const std::int64_t groupCost = satAdd(r, satMul(n - 1, marginal));
    const std::int64_t groups = pool / groupCost;
    const std::int64_t rem = pool - groups * groupCost;
    const std::int64_t partial = rem < r ? 0 : 1 + (rem - r) / marginal;
    return satAdd(satMul(groups, n), partial);
}

// Bytes `count` requests take when they share as the geometry says.
std::int64_t bytesForRequests(std::int64_t count, std::int64_t r, std::int64_t shared,
                              std::int64_t n) {
    if (count <= 0)
        return 0;
    const std::int64_t groups = (n <= 0) ? 1 : ceilDiv(count, n);
    const std::int64_t sharers = count - groups;
    return std::max<std::int64_t>(0, satMul(count, r) -
                                         satMul(sharers, std::max<std::int64_t>(0, shared)));
}

std::string attentionLabel(const Scenario& s, int kvHeads) {
    const int mla = s.model.countLayers(LayerKind::Mla);
    if (mla == s.model.numLayers() && mla > 0)
        return "MLA";
    std::string label;
    if (kvHeads == s.model.qHeads)
        label = "MHA-" + std::to_string(kvHeads);
    else if (kvHeads == 1)
        label = "MQA";
    else
        label = "GQA-" + std::to_string(kvHeads);
    return mla > 0 ? label + "+MLA" : label;
}

} // namespace

EffectiveKv effectiveKv(const Scenario& s) {
    EffectiveKv kv;
    kv.kvHeads = effectiveKvHeads(s);
    kv.kvHeadsPerGpu = std::max(1, kv.kvHeads / std::max(1, s.hardware.gpuCount));
    kv.format = effectiveFormat(s);
    kv.attentionLabel = attentionLabel(s, kv.kvHeads);
    return kv;
}

PointResult computePoint(const Scenario& s, std::int64_t context) {
    const Geometry g = buildGeometry(s);
    const PointBytes p = pointBytes(g, context);
    PointResult r;
    r.bytesPerRequestPerGpu = p.perRequestPerGpu;
    r.bytesPerRequest = satMul(p.perRequestPerGpu, g.tp);
    r.maxRequests = requestsThatFit(g.availableKvBytes, p.perRequestPerGpu,
                                    p.sharedPerRequestPerGpu, g.sharingRequests);
    return r;
}

LedgerResult computeLedger(const Scenario& s) {
    LedgerResult r;
    if (auto e = s.validate()) {
        r.error = *e;
        return r;
    }
    const Geometry g = buildGeometry(s);
    r.kv = effectiveKv(s);
    r.contextTokens = s.workload.context;
    r.maxModelLen = g.maxModelLen;
    r.blockSize = g.blockSize;
    r.kvBytesPerToken = g.bytesPerTokenModel;
    r.kvBytesPerTokenPerGpu = g.bytesPerTokenPerGpu;
    r.pageBytesPerGpu = satMul(g.blockSize, g.bytesPerTokenPerGpu);

    for (std::size_t i = 0; i < g.groupCount; ++i) {
        const Holding h = holdingFor(g, g.groups[i], s.workload.context);
        LayerGroupUsage u;
        u.kind = g.groups[i].kind;
        u.window = g.groups[i].window;
        u.layers = g.groups[i].layers;
        u.bytesPerTokenPerLayerPerGpu = g.groups[i].bytesPerTokenPerGpu;
        u.blocksPerRequest = h.blocks;
        u.tokensHeldPerRequest = h.tokens;
        r.groups.push_back(u);
    }
    const PointBytes p = pointBytes(g, s.workload.context);
    r.kvBytesPerRequestPerGpu = p.perRequestPerGpu;
    r.kvBytesPerRequest = satMul(p.perRequestPerGpu, g.tp);
    r.sharedBytesPerRequestPerGpu = p.sharedPerRequestPerGpu;

    r.weightsBytes = weightsTotal(s, r.kv.format, r.kv.kvHeads);
    r.weightsBytesPerGpu = weightsPerGpu(s, r.weightsBytes);
    r.gpuMemoryBytes = s.hardware.gpu.memoryBytes;
    r.requestedBytes = requestedBytes(s.hardware);
    r.activationBytes = s.hardware.activationBytes;
    r.overheadBytes = s.hardware.overheadBytes;
    r.kvMemoryOverridden = s.hardware.kvMemoryBytes.has_value();
    r.availableKvBytes = g.availableKvBytes;

    if (g.blockSize > 0) {
        r.numGpuBlocks = r.pageBytesPerGpu > 0 ? g.availableKvBytes / r.pageBytesPerGpu : 0;
        r.gpuKvCacheTokens = satMul(r.numGpuBlocks, g.blockSize);
        // vLLM's "Maximum concurrency for M tokens per request": pool over one request's
        // worst-case budget; a sliding layer budgets min(W - 1 + max_num_batched_tokens, M)
        // tokens plus one block (REFERENCE.md 2).
        std::int64_t budget = 0;
        for (std::size_t i = 0; i < g.groupCount; ++i) {
            const Group& grp = g.groups[i];
            std::int64_t blocks = ceilDiv(g.maxModelLen, g.blockSize);
            if (grp.kind == LayerKind::Sliding)
                blocks = std::min(
                    blocks, ceilDiv(std::min(grp.window - 1 + g.maxNumBatchedTokens, g.maxModelLen),
                                    g.blockSize) +
                                1);
            budget = satAdd(budget, satMul(grp.layers, satMul(satMul(blocks, g.blockSize),
                                                              grp.bytesPerTokenPerGpu)));
        }
        const double pool =
            static_cast<double>(r.numGpuBlocks) * static_cast<double>(r.pageBytesPerGpu);
        r.maxConcurrency = budget > 0 ? pool / static_cast<double>(budget) : 0.0;
    } else {
        r.gpuKvCacheTokens =
            g.bytesPerTokenPerGpu > 0 ? g.availableKvBytes / g.bytesPerTokenPerGpu : 0;
        const PointBytes atMax = pointBytes(g, g.maxModelLen);
        r.maxConcurrency = atMax.perRequestPerGpu > 0
                               ? static_cast<double>(g.availableKvBytes) /
                                     static_cast<double>(atMax.perRequestPerGpu)
                               : 0.0;
    }
    r.maxRequestsAtContext = requestsThatFit(g.availableKvBytes, p.perRequestPerGpu,
                                             p.sharedPerRequestPerGpu, g.sharingRequests);
    r.kvBytesAtMaxRequests = bytesForRequests(r.maxRequestsAtContext, p.perRequestPerGpu,
                                              p.sharedPerRequestPerGpu, g.sharingRequests);

    // Warnings: what vLLM would refuse or what the numbers assume.
    const std::int64_t ctx = s.workload.context;
    if (ctx > s.model.maxContext)
        r.warnings.push_back("context " + withThousands(ctx) + " exceeds " + s.model.name +
                             "'s max position embeddings (" + withThousands(s.model.maxContext) +
                             ")");
    if (s.workload.maxModelLen > 0 && ctx > s.workload.maxModelLen)
        r.warnings.push_back("context " + withThousands(ctx) + " exceeds the max model length (" +
                             withThousands(s.workload.maxModelLen) + "); vLLM would reject it");
    const int tp = g.tp;
    const int nonMla = s.model.numLayers() - s.model.countLayers(LayerKind::Mla);
    if (nonMla > 0 && tp > 1 && r.kv.kvHeads % tp != 0 && tp % r.kv.kvHeads != 0)
        r.warnings.push_back(std::to_string(r.kv.kvHeads) + " KV heads cannot be split over " +
                             std::to_string(tp) + " GPUs (vLLM needs one to divide the other)");
    if (tp > 1 && s.model.qHeads % tp != 0)
        r.warnings.push_back(std::to_string(s.model.qHeads) + " query heads are not divisible by " +
                             std::to_string(tp) +
                             " GPUs; vLLM would refuse this tensor parallel size");
    if (s.levers.prefix.enabled && g.blockSize == 0)
        r.warnings.push_back(
            "prefix sharing needs paging: with contiguous reservation nothing is shared");
    else if (s.levers.prefix.enabled && g.blockSize > 0 &&
             s.levers.prefix.sharedTokens < g.blockSize)
        r.warnings.push_back("a prefix shorter than one block shares nothing (full blocks only)");
    if (r.kvBytesPerRequest == kInt64Max)
        r.warnings.push_back("bytes per request exceed 8 EiB and are shown saturated");

    if (!s.hardware.kvMemoryBytes && g.availableKvBytes == 0)
        r.error = "weights (" + formatBytes(r.weightsBytesPerGpu) +
                  " per GPU) plus reserves exceed the " + formatBytes(r.requestedBytes) +
                  " requested on " + s.hardware.gpu.name + ": no memory is left for the KV cache";
    else if (r.maxRequestsAtContext == 0)
        r.error = "one request of " + withThousands(ctx) + " tokens needs " +
                  formatBytes(r.kvBytesPerRequestPerGpu) + " per GPU but only " +
                  formatBytes(g.availableKvBytes) + " is available for the KV cache";
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
            st.label = lv.paging.enabled ? "+paging " + std::to_string(lv.paging.blockSize)
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
    const std::int64_t modelMax = std::max(s.model.maxContext, s.effectiveMaxModelLen());
    const std::int64_t upper =
        std::max(std::min<std::int64_t>(modelMax, std::int64_t{1} << 20), s.workload.context);
    out.contexts = sweepContexts(upper, pointsPerOctave);
    const std::array ids{LadderStepId::Baseline, LadderStepId::Attention,
                         LadderStepId::Quantization, LadderStepId::Paging, LadderStepId::Prefix};
    // Labels and 'applied' come from the ladder; the points from the fast path.
    const auto ladder = computeLadder(s);
    for (std::size_t k = 0; k < ids.size(); ++k) {
        Curve c;
        c.step = ids[k];
        c.label = ladder[k].label;
        c.applied = ladder[k].applied;
        c.isCurrent = k + 1 == ids.size();
        const Geometry g = buildGeometry(ladder[k].scenario);
        c.bytesPerRequestPerGpu.reserve(out.contexts.size());
        c.bytesPerRequest.reserve(out.contexts.size());
        c.maxRequests.reserve(out.contexts.size());
        for (const std::int64_t t : out.contexts) {
            const PointBytes p = pointBytes(g, t);
            c.bytesPerRequestPerGpu.push_back(static_cast<double>(p.perRequestPerGpu));
            c.bytesPerRequest.push_back(static_cast<double>(satMul(p.perRequestPerGpu, g.tp)));
            c.maxRequests.push_back(
                static_cast<double>(requestsThatFit(g.availableKvBytes, p.perRequestPerGpu,
                                                    p.sharedPerRequestPerGpu, g.sharingRequests)));
        }
        if (c.isCurrent)
            out.availableKvBytes = g.availableKvBytes;
        out.curves.push_back(std::move(c));
    }
    return out;
}

std::int64_t kvBytesForRequests(const Scenario& s, std::int64_t count) {
    if (count <= 0 || s.validate())
        return 0;
    const Geometry g = buildGeometry(s);
    const PointBytes p = pointBytes(g, s.workload.context);
    return bytesForRequests(count, p.perRequestPerGpu, p.sharedPerRequestPerGpu, g.sharingRequests);
}

GpusNeeded computeGpusNeeded(const Scenario& s, std::int64_t targetRequests) {
    GpusNeeded out;
    if (targetRequests <= 0 || s.validate())
        return out;
    Scenario one = s;
    one.hardware.gpuCount = 1;
    one.hardware.kvMemoryBytes.reset();
    const Geometry g = buildGeometry(one);
    const PointBytes p = pointBytes(g, s.workload.context);
    const EffectiveKv kv = effectiveKv(one);
    out.weightsBytes = weightsTotal(one, kv.format, kv.kvHeads);
    out.kvBytes = bytesForRequests(targetRequests, p.perRequestPerGpu, p.sharedPerRequestPerGpu,
                                   g.sharingRequests);
    out.totalBytes = satAdd(out.weightsBytes, out.kvBytes);
    const std::int64_t perGpuBudget =
        requestedBytes(s.hardware) - s.hardware.activationBytes - s.hardware.overheadBytes;
    if (perGpuBudget <= 0)
        return out;
    // Pooled memory: weights and KV split evenly over n GPUs.
    for (int n = 1; n <= kMaxGpus; ++n) {
        if (ceilDiv(out.weightsBytes, n) + ceilDiv(out.kvBytes, n) <= perGpuBudget) {
            out.gpus = n;
            break;
        }
    }
    // What vLLM accepts: TP dividing the q heads, KV heads split or replicated per rank.
    for (int n = std::max(1, out.gpus); n <= kMaxGpus && out.gpus > 0; ++n) {
        if (s.model.qHeads % n != 0)
            continue;
        Scenario tp = one;
        tp.hardware.gpuCount = n;
        if (computePoint(tp, s.workload.context).maxRequests >= targetRequests) {
            out.tensorParallel = n;
            break;
        }
    }
    return out;
}

} // namespace kvl::core
