// The capacity model (capacity.h): one replica's ledger figures for each PP, DP and EP the
// planner tries, rebuilding only the parts of the plan (plan_p.h) a layout changes. It reads
// the plan, never the ledger, so the planner and the speed model depend on it, not it on them.
#include "capacity.h"
#include "saturating.h"

#include "plan_p.h"
#include "units.h"

#include <algorithm>

namespace kvl::core {

namespace {

using detail::checkEnoughMemory;
using detail::Holding;
using detail::limitingStage;
using detail::Plan;
using detail::planGeometry;
using detail::planMemory;
using detail::planStages;
using detail::PointCost;
using detail::pointCost;
using detail::Refusal;
using detail::requestHolding;
using detail::requestsThatFit;
using detail::StagePlan;
using detail::unitsForRequests;

} // namespace

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
