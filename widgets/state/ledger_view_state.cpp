#include "widgets/state/ledger_view_state.h"

#include "core/engines.h"
#include "core/kv_format.h"
#include "core/saturating.h"

#include <QStringList>

#include <algorithm>

namespace kvl::widgets {

QString formatBytesQ(std::int64_t bytes, core::UnitSystem units, int decimals) {
    return qs(core::formatBytes(bytes, units, decimals));
}
QString formatBytesQ(double bytes, core::UnitSystem units, int decimals) {
    return qs(core::formatBytes(bytes, units, decimals));
}
QString formatTokensQ(std::int64_t tokens) {
    return qs(core::formatTokens(tokens));
}
QString thousandsQ(std::int64_t value) {
    return qs(core::withThousands(value));
}

core::Scenario withLeverKvTypes(const core::Scenario& s) {
    core::Scenario out = s;
    if (s.engine.kind == core::Engine::Llamacpp)
        out.engine.llamacpp = core::scenarioForEngine(s, core::Engine::Llamacpp).engine.llamacpp;
    return out;
}

LedgerSnapshot computeSnapshot(const core::Scenario& s) {
    LedgerSnapshot snap;
    snap.scenario = s;
    snap.ledger = core::computeLedger(s);
    snap.ladder = core::computeLadder(s);
    snap.sweep = core::computeSweep(s);
    if (s.engine.kind != core::Engine::Vllm)
        snap.engine = core::computeEngineAs(s, s.engine.kind);
    if (s.workload.targetRequests > 0) {
        snap.requests = s.workload.targetRequests;
        snap.requestsAreTarget = true;
        if (snap.requests > snap.ledger.maxRequestsAtContext)
            snap.gpusNeeded = core::computeGpusNeeded(s, snap.requests);
    } else {
        snap.requests = snap.ledger.maxRequestsAtContext;
    }
    return snap;
}

LedgerView makeLedgerView(const core::Scenario& s, core::UnitSystem units,
                          const core::Scenario* reference) {
    LedgerView v;
    v.snapshot = std::make_shared<const LedgerSnapshot>(computeSnapshot(s));
    if (reference)
        v.reference = std::make_shared<const LedgerSnapshot>(computeSnapshot(*reference));
    v.units = units;
    return v;
}

std::int64_t gpusPerReplica(const core::Scenario& s) {
    const std::int64_t tp = std::max(1, s.hardware.gpuCount);
    const std::int64_t pp = std::max(1, s.hardware.pipelineParallel);
    return tp * pp;
}

std::int64_t replicaCount(const core::Scenario& s) {
    return std::max(1, s.hardware.dataParallel);
}

QString scopeLabel(FigureScope scope) {
    switch (scope) {
    case FigureScope::PerGpu:
        return QStringLiteral("per GPU");
    case FigureScope::PerReplica:
        return QStringLiteral("per replica");
    case FigureScope::Cluster:
        return QStringLiteral("cluster");
    }
    return {};
}

std::int64_t scopeBytes(std::int64_t perGpuBytes, const core::Scenario& s, FigureScope scope) {
    switch (scope) {
    case FigureScope::PerGpu:
        return perGpuBytes;
    case FigureScope::PerReplica:
        return core::satMulCounts(perGpuBytes, gpusPerReplica(s));
    case FigureScope::Cluster:
        return core::satMulCounts(core::satMulCounts(perGpuBytes, gpusPerReplica(s)),
                                  replicaCount(s));
    }
    return perGpuBytes;
}

std::int64_t scopeBytes(std::int64_t perGpuBytes, std::int64_t perReplicaBytes,
                        const core::Scenario& s, FigureScope scope) {
    switch (scope) {
    case FigureScope::PerGpu:
        return perGpuBytes;
    case FigureScope::PerReplica:
        return perReplicaBytes;
    case FigureScope::Cluster:
        return core::satMulCounts(perReplicaBytes, replicaCount(s));
    }
    return perGpuBytes;
}

std::int64_t scopeRequests(std::int64_t perReplica, const core::Scenario& s, FigureScope scope) {
    return scope == FigureScope::Cluster ? core::satMulCounts(perReplica, replicaCount(s))
                                         : perReplica;
}

} // namespace kvl::widgets
