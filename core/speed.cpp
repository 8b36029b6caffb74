#include "speed.h"

#include "capacity.h"
#include "deployment.h"
#include "engine.h"
#include "ledger.h"

#include <algorithm>
#include <cmath>

namespace kvl::core {

namespace {

bool isAttention(LayerKind k) {
    return k == LayerKind::Full || k == LayerKind::Sliding || k == LayerKind::Chunked;
}

// The KV term in seconds: bytes / (bytes per second x eta). decodeStep and kvReadEstimate
// both evaluate this one expression (the same rounding as before it was shared: the golden
// CLI outputs compare doubles to the last digit).
double kvReadSeconds(double kvBytes, double bandwidthBytesPerSecond, double eta) {
    return kvBytes / (bandwidthBytesPerSecond * eta);
}

// What the speed model needs of a replica, computed once per scenario.
struct Replica {
    Layout layout;
    std::vector<std::pair<int, int>> stages;
    WeightModel weights;
    double bandwidth = 0; // bytes/s, datasheet
    double peak = 0;      // FLOP/s
    double etaMem = 0, etaFlops = 0, etaKv = 0;
    bool calibrated = false;
};

Replica replicaOf(const Scenario& s, const SpeedAssumptions& a) {
    Replica r;
    r.layout = layoutOf(s);
    r.stages = pipelineStages(std::max(1, s.model.numLayers()), r.layout.pp);
    r.weights = weightModel(s);
    r.bandwidth = s.hardware.gpu.bandwidthGBs * 1e9;
    r.peak = peakTflops(s) * 1e12;
    r.etaMem = std::clamp(a.memoryEfficiency, 1e-3, 1.0);
    r.etaFlops = std::clamp(a.flopsEfficiency, 1e-3, 1.0);
    r.etaKv = kvEfficiency(a, s.hardware.gpu.id, storedKvFormat(s), &r.calibrated);
    return r;
}

// Attention FLOPs of one decode token over `context` tokens in the stage's layers on one GPU:
// 4 x T x heads x head_dim per layer (scores and the weighted sum), the window for sliding
// and chunked layers, the absorbed latent (576 + 512) for MLA.
double attentionFlops(const Scenario& s, const Layout& l, int first, int last,
                      std::int64_t context) {
    const ModelSpec& m = s.model;
    const double heads = static_cast<double>(m.qHeads) / std::max(1, l.tp);
    const double tokens = static_cast<double>(context) / std::max(1, l.dcp);
    double flops = 0;
    for (int i = first; i < last; ++i) {
        const LayerSpec& layer = m.layers[static_cast<std::size_t>(i)];
        if (isAttention(layer.kind)) {
            const double t = layer.kind == LayerKind::Full
                                 ? tokens
                                 : std::min(tokens, static_cast<double>(layer.window));
            flops += 2.0 * t * heads * (m.layerHeadDim(layer) + m.layerHeadDimV(layer));
        } else if (layer.kind == LayerKind::Mla) {
            flops += 2.0 * tokens * heads * (m.mlaLatentDim() + m.kvLoraRank);
        }
    }
    return flops;
}

} // namespace

double kvEfficiency(const SpeedAssumptions& a, std::string_view gpuId, const KvFormat& stored,
                    bool* calibrated) {
    if (calibrated)
        *calibrated = false;
    const double etaMem = std::clamp(a.memoryEfficiency, 1e-3, 1.0);
    if (a.attentionEfficiency.empty() || (!a.calibratedGpuId.empty() && a.calibratedGpuId != gpuId))
        return etaMem;
    std::string key = shortLabel(stored);
    if (key == "BF16")
        key = "FP16"; // the same bytes and the same kernel path
    const auto it = a.attentionEfficiency.find(key);
    if (it == a.attentionEfficiency.end())
        return etaMem;
    if (calibrated)
        *calibrated = true;
    return std::clamp(it->second, 1e-3, 1.0);
}

KvReadEstimate kvReadEstimate(double kvBytes, double bandwidthGBs, double efficiency) {
    KvReadEstimate e;
    const double eta = std::clamp(efficiency, 1e-3, 1.0);
    e.effectiveGBs = bandwidthGBs * eta;
    if (!(kvBytes > 0) || !(e.effectiveGBs > 0))
        return e;
    e.ms = 1e3 * kvReadSeconds(kvBytes, bandwidthGBs * 1e9, eta);
    return e;
}

std::string_view regimeName(Regime r) {
    return r == Regime::MemoryBound ? "memory-bound" : "compute-bound";
}

double expectedExpertsTouched(int experts, int topK, double tokens) {
    if (experts <= 0 || topK <= 0 || tokens <= 0)
        return 0;
    const double e = experts;
    const double k = std::min(topK, experts);
    return e * (1.0 - std::pow(1.0 - k / e, tokens));
}

double peakTflops(const Scenario& s) {
    const GpuSpec& g = s.hardware.gpu;
    const WeightDtype wd = s.hardware.weightDtype.value_or(s.model.weightDtype);
    const bool fp8 = wd == WeightDtype::Fp8 || wd == WeightDtype::Fp4;
    if (fp8 && g.fp8Tflops > 0)
        return g.fp8Tflops;
    return g.bf16Tflops;
}

DecodeStep decodeStep(const Scenario& s, std::int64_t batch, std::int64_t context,
                      const SpeedAssumptions& a) {
    DecodeStep out;
    out.batch = std::max<std::int64_t>(1, batch);
    out.context = std::max<std::int64_t>(1, context);
    const Replica r = replicaOf(s, a);
    if (r.bandwidth <= 0)
        return out;
    const ModelSpec& m = s.model;
    const double b = static_cast<double>(out.batch);

    // KV read per step on one TP rank of the whole model, from the ledger's own pages (no
    // padding): every request's blocks, a shared prefix's blocks once per sharing group.
    Scenario whole = s;
    whole.hardware.pipelineParallel = 1;
    whole.workload.context = out.context;
    CapacityModel kvModel(whole);
    kvModel.evaluate(1, r.layout.dp, r.layout.ep);
    const CapacityModel::KvRead kv = kvModel.kvRead(out.context);
    const double sharingGroups =
        kv.sharingRequests > 0 ? std::ceil(b / static_cast<double>(kv.sharingRequests)) : 1.0;
    const double kvAll =
        b * static_cast<double>(kv.perRequest) -
        (b - std::min(b, sharingGroups)) * static_cast<double>(kv.sharedPerRequest);
    const double stateAll = b * static_cast<double>(kv.statePerRequest);

    // Expected fraction of a GPU's experts the step touches: its own replica's tokens, or
    // every DP replica's with expert parallel (the experts serve them all).
    const double routed = b * (r.layout.ep ? std::max(1, r.layout.dp) : 1);
    const double touched = m.isMoe()
                               ? expectedExpertsTouched(m.numExperts, m.expertsPerToken, routed) /
                                     static_cast<double>(m.numExperts)
                               : 1.0;
    const ParamSplit split = splitParams(m);
    const double layers = std::max(1, m.numLayers());
    const int stages = static_cast<int>(r.stages.size());
    double busiest = -1;
    for (int st = 0; st < stages; ++st) {
        const auto [first, last] = r.stages[static_cast<std::size_t>(st)];
        const StageWeights w = stageWeights(r.weights, r.layout, first, last, st, stages);
        const double share = (last - first) / layers;
        const double weightBytes =
            static_cast<double>(w.dense) + static_cast<double>(w.experts) * std::min(1.0, touched);
        const double kvBytes = kvAll * share;
        const double stateBytes = stateAll * share;
        // 2 FLOPs per active parameter per token, over TP; attention on top.
        const double activeDense =
            static_cast<double>(split.denseLayers) * share +
            (st == stages - 1
                 ? static_cast<double>(split.lmHead + (m.tieWordEmbeddings ? split.embedding : 0))
                 : 0.0);
        const double activeExperts = m.isMoe() ? static_cast<double>(split.experts) * share *
                                                     std::min(m.expertsPerToken, m.numExperts) /
                                                     m.numExperts
                                               : 0.0;
        const double flops = b * (2.0 * (activeDense + activeExperts) / std::max(1, r.layout.tp) +
                                  attentionFlops(s, r.layout, first, last, out.context));
        const double memoryS = (weightBytes + stateBytes) / (r.bandwidth * r.etaMem) +
                               kvReadSeconds(kvBytes, r.bandwidth, r.etaKv);
        const double computeS = r.peak > 0 ? flops / (r.peak * r.etaFlops) : 0.0;
        out.stepMs += 1e3 * std::max(memoryS, computeS);
        if (memoryS + computeS > busiest) {
            busiest = memoryS + computeS;
            out.weightBytes = weightBytes;
            out.kvBytes = kvBytes;
            out.stateBytes = stateBytes;
            out.flops = flops;
            out.memoryMs = 1e3 * memoryS;
            out.computeMs = 1e3 * computeS;
            out.regime = computeS > memoryS ? Regime::ComputeBound : Regime::MemoryBound;
        }
    }
    out.stepMs += std::max(0.0, a.fixedStepMs);
    out.calibrated = r.calibrated;
    if (out.stepMs > 0) {
        out.tokensPerSecondPerUser = 1e3 / out.stepMs;
        out.replicaTokensPerSecond = b * out.tokensPerSecondPerUser;
        out.clusterTokensPerSecond = out.replicaTokensPerSecond * std::max(1, r.layout.dp);
    }
    return out;
}

double prefillMsEstimate(const Scenario& s, std::int64_t promptTokens, const SpeedAssumptions& a) {
    const Replica r = replicaOf(s, a);
    if (r.bandwidth <= 0 || r.peak <= 0 || promptTokens <= 0)
        return 0;
    const std::int64_t chunk = std::max<std::int64_t>(1, effectiveMaxNumBatchedTokens(s));
    const ParamSplit split = splitParams(s.model);
    const int stages = static_cast<int>(r.stages.size());
    const double layers = std::max(1, s.model.numLayers());
    double ms = 0;
    for (std::int64_t done = 0; done < promptTokens; done += chunk) {
        const double tokens = static_cast<double>(std::min(chunk, promptTokens - done));
        for (int st = 0; st < stages; ++st) {
            const auto [first, last] = r.stages[static_cast<std::size_t>(st)];
            const StageWeights w = stageWeights(r.weights, r.layout, first, last, st, stages);
            const double active = static_cast<double>(split.activePerToken) * (last - first) /
                                  layers / std::max(1, r.layout.tp);
            const double compute = 2.0 * active * tokens / (r.peak * r.etaFlops);
            const double read = static_cast<double>(w.total()) / (r.bandwidth * r.etaMem);
            ms += 1e3 * std::max(compute, read);
        }
    }
    return ms;
}

StepCost::StepCost(const Scenario& s, const SpeedAssumptions& a) {
    const Replica r = replicaOf(s, a);
    if (r.bandwidth <= 0)
        return;
    const ModelSpec& m = s.model;
    const ParamSplit split = splitParams(m);
    const double layers = std::max(1, m.numLayers());
    const int stages = static_cast<int>(r.stages.size());
    const double tp = std::max(1, r.layout.tp);
    for (int st = 0; st < stages; ++st) {
        const auto [first, last] = r.stages[static_cast<std::size_t>(st)];
        const StageWeights w = stageWeights(r.weights, r.layout, first, last, st, stages);
        Stage g;
        g.share = (last - first) / layers;
        g.dense = static_cast<double>(w.dense);
        g.experts = static_cast<double>(w.experts);
        // decodeStep's FLOPs per token, less attention.
        const double activeDense =
            static_cast<double>(split.denseLayers) * g.share +
            (st == stages - 1
                 ? static_cast<double>(split.lmHead + (m.tieWordEmbeddings ? split.embedding : 0))
                 : 0.0);
        const double activeExperts = m.isMoe() ? static_cast<double>(split.experts) * g.share *
                                                     std::min(m.expertsPerToken, m.numExperts) /
                                                     m.numExperts
                                               : 0.0;
        g.decodeFlops = 2.0 * (activeDense + activeExperts) / tp;
        // prefillMsEstimate's.
        g.prefillFlops = 2.0 * static_cast<double>(split.activePerToken) * g.share / tp;
        m_stages.push_back(g);
    }
    m_memBw = r.bandwidth * r.etaMem;
    m_kvBw = r.bandwidth * r.etaKv;
    m_flops = r.peak * r.etaFlops;
    if (m.isMoe()) {
        m_experts = m.numExperts;
        m_topK = m.expertsPerToken;
        m_routedScale = r.layout.ep ? std::max(1, r.layout.dp) : 1;
    }
    m_fixedMs = std::max(0.0, a.fixedStepMs);
    m_valid = !m_stages.empty();
}

double StepCost::stepMs(std::int64_t decodeTokens, std::int64_t prefillTokens, double kvBytes,
                        double stateBytes) const {
    if (!m_valid)
        return 0;
    const double tokens = static_cast<double>(std::max<std::int64_t>(0, decodeTokens) +
                                              std::max<std::int64_t>(0, prefillTokens));
    // The fraction of the experts the step's tokens touch (every DP replica's with EP).
    auto fraction = [&] {
        return std::min(1.0, expectedExpertsTouched(m_experts, m_topK, tokens * m_routedScale) /
                                 static_cast<double>(m_experts));
    };
    double touched = 1.0;
    if (m_experts > 0) {
        constexpr std::int64_t kRemembered = std::int64_t{1} << 16;
        const auto n = static_cast<std::int64_t>(tokens);
        if (n < kRemembered) {
            if (static_cast<std::int64_t>(m_touched.size()) <= n)
                m_touched.resize(static_cast<std::size_t>(n) + 1, -1.0);
            double& t = m_touched[static_cast<std::size_t>(n)];
            if (t < 0)
                t = fraction();
            touched = t;
        } else {
            touched = fraction();
        }
    }
    double ms = 0;
    for (const Stage& g : m_stages) {
        const double memoryS = (g.dense + g.experts * touched + stateBytes * g.share) / m_memBw +
                               kvBytes * g.share / m_kvBw;
        const double flops = static_cast<double>(decodeTokens) * g.decodeFlops +
                             static_cast<double>(prefillTokens) * g.prefillFlops;
        const double computeS = m_flops > 0 ? flops / m_flops : 0.0;
        ms += 1e3 * std::max(memoryS, computeS);
    }
    return ms + m_fixedMs;
}

SpeedCurve speedVsConcurrency(const Scenario& s, const SpeedAssumptions& a, int points) {
    SpeedCurve c;
    const LedgerResult r = computeLedger(s);
    c.memoryLimit = r.maxRequestsAtContext;
    c.maxNumSeqs = effectiveMaxNumSeqs(s);
    const std::int64_t upper =
        std::max<std::int64_t>(1, std::min(std::max<std::int64_t>(1, c.memoryLimit), c.maxNumSeqs));
    points = std::clamp(points, 2, 512);
    for (int i = 0; i < points; ++i) {
        // Log-spaced from 1 to the upper limit, whole and rising.
        const double f = static_cast<double>(i) / (points - 1);
        const auto batch = static_cast<std::int64_t>(
            std::llround(std::exp(f * std::log(static_cast<double>(upper)))));
        if (!c.x.empty() && batch <= c.x.back())
            continue;
        const DecodeStep d = decodeStep(s, batch, s.workload.context, a);
        c.x.push_back(batch);
        c.clusterTokensPerSecond.push_back(d.clusterTokensPerSecond);
        c.tokensPerSecondPerUser.push_back(d.tokensPerSecondPerUser);
        c.stepMs.push_back(d.stepMs);
    }
    return c;
}

SpeedCurve speedVsContext(const Scenario& s, std::int64_t batch, const SpeedAssumptions& a,
                          int pointsPerOctave) {
    SpeedCurve c;
    c.maxNumSeqs = effectiveMaxNumSeqs(s);
    c.memoryLimit = computeLedger(s).maxRequestsAtContext;
    for (const std::int64_t t :
         sweepContexts(std::max(s.model.maxContext, s.workload.context), pointsPerOctave)) {
        const DecodeStep d = decodeStep(s, batch, t, a);
        c.x.push_back(t);
        c.clusterTokensPerSecond.push_back(d.clusterTokensPerSecond);
        c.tokensPerSecondPerUser.push_back(d.tokensPerSecondPerUser);
        c.stepMs.push_back(d.stepMs);
    }
    return c;
}

} // namespace kvl::core
