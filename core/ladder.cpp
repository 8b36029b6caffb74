// The lever ladder and the context sweep (ledger.h): the ledger again with the scenario's levers
// added one by one, each step's curve priced context by context from its plan (plan_p.h); and
// the sizing questions put to the ledger and the planner (bytes for N requests, GPUs needed).
// It sits on top: the ledger, the capacity model and the planner never call back into it.
#include "ledger.h"
#include "saturating.h"

#include "deployment.h"
#include "plan_p.h"
#include "planner.h"
#include "units.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace kvl::core {

namespace {

using detail::buildPlan;
using detail::kInt64Max;
using detail::limitingStage;
using detail::Plan;
using detail::PointCost;
using detail::pointCost;
using detail::requestedBytes;
using detail::requestsThatFit;
using detail::unitsForRequests;
using detail::weightsTotal;

} // namespace

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
            c.bytesPerRequest.push_back(static_cast<double>(replicaRequestBytes(p, t, pc)));
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
        out.flag = fewest->flag;
        // The planner keeps the unflagged layouts of the fewest GPUs, best first.
        const auto unflagged = std::find_if(g.layouts.begin(), g.layouts.end(),
                                            [](const Deployment& d) { return d.flag.empty(); });
        if (!out.flag.empty() && unflagged != g.layouts.end())
            out.recommended = unflagged->layout;
        if (out.pooledGpus > 0 && out.gpus != out.pooledGpus)
            out.note = "pooled memory suggests " + std::to_string(out.pooledGpus) +
                       " GPUs; vLLM needs whole layouts: " + std::to_string(out.gpus) + " as " +
                       layoutLabel(out.layout);
    } else {
        out.note = g.reason;
    }
    return out;
}

} // namespace kvl::core
