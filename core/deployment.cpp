#include "deployment.h"
#include "saturating.h"

#include "engine.h"

#include <algorithm>
#include <limits>

namespace kvl::core {

namespace {

constexpr std::int64_t kInt64Max = kSaturated;

// a x num / den without overflow (num <= den here).
std::int64_t scaled(std::int64_t a, std::int64_t num, std::int64_t den) {
    if (den <= 0)
        return 0;
    // GCC's 128-bit integer (an extension, hence -Wpedantic's note) keeps a x num exact.
    __extension__ using Wide = __int128;
    return static_cast<std::int64_t>(static_cast<Wide>(a) * num / den);
}

std::string num(std::int64_t v) {
    return std::to_string(v);
}

bool isAttention(LayerKind k) {
    return k == LayerKind::Full || k == LayerKind::Sliding || k == LayerKind::Chunked;
}

} // namespace

Layout layoutOf(const Scenario& s) {
    const Hardware& h = s.hardware;
    return {std::max(1, h.gpuCount), std::max(1, h.pipelineParallel), std::max(1, h.dataParallel),
            h.expertParallel, std::max(1, h.decodeContextParallel)};
}

void applyLayout(Scenario& s, const Layout& l) {
    s.hardware.gpuCount = l.tp;
    s.hardware.pipelineParallel = l.pp;
    s.hardware.dataParallel = l.dp;
    s.hardware.expertParallel = l.ep;
    s.hardware.decodeContextParallel = l.dcp;
}

std::string layoutLabel(const Layout& l) {
    std::string s = "TP " + num(l.tp);
    if (l.pp > 1)
        s += " x PP " + num(l.pp);
    if (l.dp > 1)
        s += " x DP " + num(l.dp);
    if (l.ep)
        s += " + EP";
    if (l.dcp > 1)
        s += " (DCP " + num(l.dcp) + ")";
    return s;
}

std::vector<std::pair<int, int>> pipelineStages(int layers, int pp) {
    pp = std::clamp(pp, 1, std::max(1, layers));
    std::vector<std::pair<int, int>> out;
    const int base = layers / pp, remaining = layers % pp;
    int start = 0;
    for (int i = 0; i < pp; ++i) {
        const int count = base + (i >= pp - 1 - remaining && i < pp - 1 ? 1 : 0);
        out.emplace_back(start, start + count);
        start += count;
    }
    return out;
}

int kvCopiesUnderTp(const ModelSpec& m, int tp) {
    return m.isMla() ? tp : std::max(1, tp / std::max(1, m.kvHeads));
}

Status checkScenario(const Scenario& s) {
    if (auto problem = s.validate())
        return makeError(ErrorCode::BadInput, *problem);
    if (auto st = checkLayout(s.model, layoutOf(s)); !st)
        return makeError(ErrorCode::BadInput,
                         "layout " + layoutLabel(layoutOf(s)) + ": " + st.error().message);
    return {};
}

Status checkLayout(const ModelSpec& m, const Layout& l) {
    auto bad = [](std::string msg) { return makeError(ErrorCode::Unsupported, std::move(msg)); };
    if (l.tp < 1 || l.pp < 1 || l.dp < 1 || l.dcp < 1)
        return bad("every parallel size must be at least 1");
    // vllm/model_executor/layers/linear.py (QKVParallelLinear): heads are split evenly over TP;
    // KV heads are split when TP divides them and replicated when they divide TP.
    if (m.qHeads % l.tp != 0)
        return bad("tensor parallel " + num(l.tp) + " does not divide the " + num(m.qHeads) +
                   " attention heads");
    for (const auto& layer : m.layers) {
        if (!isAttention(layer.kind))
            continue;
        const int kv = m.layerKvHeads(layer);
        if (kv % l.tp != 0 && l.tp % kv != 0)
            return bad("tensor parallel " + num(l.tp) + " cannot split or replicate " + num(kv) +
                       " KV heads evenly");
    }
    if (m.state && m.countLayers(LayerKind::State) > 0)
        if (auto st = checkStateTensorParallel(*m.state, l.tp); !st)
            return st;
    if (l.pp > m.numLayers())
        return bad("pipeline parallel " + num(l.pp) + " exceeds the " + num(m.numLayers()) +
                   " layers");
    if (l.ep && !m.isMoe())
        return bad("expert parallel needs a mixture-of-experts model");
    if (l.dcp > 1) {
        if (l.tp % l.dcp != 0)
            return bad("decode context parallel " + num(l.dcp) + " must divide tensor parallel " +
                       num(l.tp));
        if (m.countLayers(LayerKind::Sliding) > 0 || m.countLayers(LayerKind::Chunked) > 0 ||
            m.countLayers(LayerKind::State) > 0)
            return bad("vLLM's decode context parallel supports neither sliding, chunked nor "
                       "Mamba layers");
        // DCP shards the copies TP would otherwise keep: the latent on every rank (MLA), or KV
        // heads replicated TP / KV heads times.
        const int copies = kvCopiesUnderTp(m, l.tp);
        if (l.dcp > copies)
            return bad("decode context parallel " + num(l.dcp) + " exceeds the " + num(copies) +
                       " copies of the KV cache that tensor parallel " + num(l.tp) + " keeps");
    }
    return {};
}

ParamSplit splitParams(const ModelSpec& m) {
    ParamSplit p;
    const std::int64_t table = satMul(m.vocabSize, m.hiddenSize);
    p.embedding = std::min(table, m.params);
    p.lmHead = m.tieWordEmbeddings ? 0 : std::min(table, m.params - p.embedding);
    if (m.isMoe() && m.moeIntermediateSize > 0 && m.hiddenSize > 0) {
        // gate, up and down projections of every routed expert of every MoE layer.
        const std::int64_t moeLayers = std::max(0, m.numLayers() - m.firstDenseLayers);
        const std::int64_t perExpert = satMul(3 * m.hiddenSize, m.moeIntermediateSize);
        p.experts = std::min(satMul(satMul(moeLayers, m.numExperts), perExpert),
                             m.params - p.embedding - p.lmHead);
    }
    p.denseLayers = std::max<std::int64_t>(0, m.params - p.embedding - p.lmHead - p.experts);
    const std::int64_t activeExperts =
        m.numExperts > 0
            ? scaled(p.experts, std::min(m.expertsPerToken, m.numExperts), m.numExperts)
            : 0;
    p.activePerToken = m.params - p.experts + activeExperts;
    return p;
}

WeightModel weightModel(const Scenario& s) {
    WeightModel w;
    w.split = splitParams(s.model);
    w.dtype = s.hardware.weightDtype.value_or(s.model.weightDtype);
    w.scaleBytesPerLayer = outOfPageScaleBytesPerLayer(storedKvFormat(s), s.model.kvHeads);
    w.layers = std::max(1, s.model.numLayers());
    w.firstDenseLayers = s.model.firstDenseLayers;
    w.tied = s.model.tieWordEmbeddings;
    return w;
}

std::int64_t weightsPerGpu(const WeightModel& w, const Layout& l, int first, int last, int stage,
                           int stages) {
    return stageWeights(w, l, first, last, stage, stages).total();
}

StageWeights stageWeights(const WeightModel& w, const Layout& l, int first, int last, int stage,
                          int stages) {
    const int count = last - first;
    std::int64_t dense = scaled(w.split.denseLayers, count, w.layers);
    if (stage == 0)
        dense = satAdd(dense, w.split.embedding);
    if (stage == stages - 1)
        // A tied LM head is the embedding itself on one stage, a copy on the last of several.
        dense = satAdd(dense, w.tied ? (stages > 1 ? w.split.embedding : 0) : w.split.lmHead);
    const int moeLayers = std::max(0, w.layers - w.firstDenseLayers);
    const int moeInStage = std::max(0, last - std::max(first, w.firstDenseLayers));
    const std::int64_t experts = scaled(w.split.experts, moeInStage, std::max(1, moeLayers));
    const std::int64_t tp = std::max(1, l.tp);
    // With expert parallel the experts are spread over every rank of TP x DP (FusedMoE's EP
    // group); without it every replica keeps all experts, split by TP.
    const std::int64_t expertShards = l.ep ? satMul(tp, std::max(1, l.dp)) : tp;
    StageWeights out;
    out.dense =
        satAdd(ceilDiv(weightBytes(dense, w.dtype), tp), satMul(count, w.scaleBytesPerLayer));
    out.experts = ceilDiv(weightBytes(experts, w.dtype), expertShards);
    return out;
}

std::int64_t weightsPerGpu(const Scenario& s, const Layout& l, int stage) {
    const auto stages = pipelineStages(std::max(1, s.model.numLayers()), l.pp);
    stage = std::clamp(stage, 0, static_cast<int>(stages.size()) - 1);
    const auto [first, last] = stages[static_cast<std::size_t>(stage)];
    return weightsPerGpu(weightModel(s), l, first, last, stage, static_cast<int>(stages.size()));
}

std::int64_t maxWeightsPerGpu(const Scenario& s, const Layout& l) {
    std::int64_t most = 0;
    const int pp = std::clamp(l.pp, 1, std::max(1, s.model.numLayers()));
    for (int stage = 0; stage < pp; ++stage)
        most = std::max(most, weightsPerGpu(s, l, stage));
    return most;
}

Reserves estimateReserves(const Scenario& s, const Layout& l) {
    const ModelSpec& m = s.model;
    Reserves r;
    const std::int64_t tokens = effectiveMaxNumBatchedTokens(s);
    const std::int64_t seqs = effectiveMaxNumSeqs(s);
    std::int64_t inter = m.intermediateSize;
    if (inter <= 0 && m.moeIntermediateSize > 0)
        inter = satMul(m.moeIntermediateSize, std::max(1, m.expertsPerToken));
    if (inter <= 0)
        inter = 4 * m.hiddenSize;
    const std::int64_t forward =
        satMul(satMul(tokens, satAdd(3 * inter / std::max(1, l.tp), 4 * m.hiddenSize)), 2);
    const std::int64_t sampler = satMul(satMul(40, seqs), m.vocabSize);
    r.activation = std::max(forward, sampler);
    if (m.hiddenSize <= 0 && m.vocabSize <= 0)
        r.activation = 5'110'975'201; // 4.76 GiB: Llama-3.1-8B on an H100, when nothing is known
    // Non-torch memory (NCCL and CUDA context) from the same logs: about 0.13 GiB alone,
    // 0.35 at TP 2, 0.5 at TP 4, 2 GiB from TP 8.
    const int tp = std::max(1, l.tp);
    r.nonTorch = tp == 1   ? 139'586'437
                 : tp == 2 ? 375'809'638
                 : tp <= 4 ? 536'870'912
                           : 2'147'483'648;
    // CUDA graphs (full and piecewise): about 0.5 GiB for dense models, 1.5 GiB for MoE, in
    // the memory profile from vLLM 0.21 (VllmRule::CudaGraphsInProfile). Before, the graphs
    // were captured after the KV cache was sized, out of the headroom utilization leaves.
    if (vllmRules(s.engine.vllmVersion).cudaGraphsInProfile)
        r.cudaGraphs = m.isMoe() ? 1'610'612'736 : 536'870'912;
    return r;
}

} // namespace kvl::core
