// The ledger (ledger.h): computeLedger turns a scenario's plan (plan_p.h) into its figures,
// vLLM's startup lines, refusals and warnings; computePoint prices one context from the same
// plan. The ladder and the sweep (ladder.cpp) are the ledger again, lever by lever.
#include "ledger.h"
#include "saturating.h"

#include "engine.h"
#include "enum_names.h"
#include "plan_p.h"
#include "units.h"

#include <algorithm>

namespace kvl::core {

namespace {

using detail::buildPlan;
using detail::checkEnoughMemory;
using detail::effectiveFormat;
using detail::effectiveKvHeads;
using detail::groupHolding;
using detail::heldLayer;
using detail::Holding;
using detail::kInt64Max;
using detail::LayerBytes;
using detail::limitingStage;
using detail::Plan;
using detail::PointCost;
using detail::pointCost;
using detail::Refusal;
using detail::requestedBytes;
using detail::requestHolding;
using detail::requestsThatFit;
using detail::StagePlan;
using detail::tpOf;
using detail::unitsForRequests;
using detail::unpagedBytes;
using detail::UnpagedBytes;

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
    r.bytesPerRequest = replicaRequestBytes(p, context, c);
    r.maxRequests = requestsThatFit(c.pool, c.units, c.sharedUnits, p.sharingRequests);
    return r;
}

namespace {

// The model's layers by the kind the KV cache holds for them.
void countLayerMix(const Scenario& s, LedgerResult& r) {
    constexpr EnumRow<LayerKind, int LayerMix::*> kCounters[] = {
        {LayerKind::Full, &LayerMix::full},       {LayerKind::Sliding, &LayerMix::sliding},
        {LayerKind::Chunked, &LayerMix::chunked}, {LayerKind::Mla, &LayerMix::mla},
        {LayerKind::State, &LayerMix::state},     {LayerKind::None, &LayerMix::none}};
    for (const auto& layer : s.model.layers)
        if (const auto counter = lookup(kCounters, heldLayer(layer).kind))
            ++(r.layerMix.**counter);
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
    // Every stage's layers on each of its TP GPUs; decode context parallel keeps each token on
    // one rank of DCP (DCP divides TP), so TP / DCP copies of it.
    for (const auto& b : p.layers)
        r.kvBytesPerTokenPerReplica = satAdd(r.kvBytesPerTokenPerReplica, b.perTokenPerGpu);
    r.kvBytesPerTokenPerReplica = satMul(r.kvBytesPerTokenPerReplica, p.tp / std::max(1, p.dcp));
    fillLayerGroups(p, st, s.workload.context, r);

    const PointCost c = pointCost(p, s.workload.context);
    r.kvBytesPerRequestPerGpu = satMul(c.units, c.bytesPerUnit);
    r.kvBytesPerRequest = replicaRequestBytes(p, s.workload.context, c);
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

} // namespace kvl::core
