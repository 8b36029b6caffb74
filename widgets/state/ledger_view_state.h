#pragma once
// Everything the window shows for one scenario, computed in one go (sub-millisecond), and the
// one value every view takes: the snapshot, the pinned reference and the units (LedgerView).

#include "core/engines.h"
#include "core/ledger.h"
#include "core/units.h"

#include <QMetaType>
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace kvl::widgets {

inline QString qs(const std::string& s) {
    return QString::fromStdString(s);
}
inline QString qs(std::string_view s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

struct LedgerSnapshot {
    core::Scenario scenario;
    core::LedgerResult ledger;
    std::vector<core::LadderStep> ladder;
    core::SweepResult sweep;
    // The concurrency the breakdown shows: the scenario's target requests when set, else as
    // many whole requests of the context as fit.
    std::int64_t requests = 0;
    bool requestsAreTarget = false;
    std::optional<core::GpusNeeded> gpusNeeded; // when the target does not fit
    // The scenario's engine when it is not vLLM (SGLang, TensorRT-LLM, llama.cpp): its own pool,
    // requests, startup lines and launch command (core::computeEngineAs). The ledger, ladder and
    // sweep above stay vLLM's; the views that show them say so.
    std::optional<core::EngineResult> engine;
    // The scenario is not valid input (or a layout vLLM refuses): ledger.error says why and
    // nothing else is computed, so every view shows that error instead of the last numbers.
    bool invalid = false;
};

LedgerSnapshot computeSnapshot(const core::Scenario& s);

// `s` with llama.cpp's -ctk / -ctv following the KV format lever when it is on (one rule, in
// core::scenarioForEngine): what the scenario panel commits and the document computes, so a
// scenario given to the document directly (kvledger export) is the one the window shows.
core::Scenario withLeverKvTypes(const core::Scenario& s);

// What the window shows, handed to every view in one signal (MainWindow::snapshotChanged).
// The snapshots are shared and immutable: a view compares pointers to see what changed.
// Which part of a deployment a figure covers. Memory is computed per GPU (what one vLLM worker
// logs); a replica is TP x PP GPUs serving one copy of the model; the cluster is DP replicas.
// Every axis, header and line names its scope with scopeLabel().
enum class FigureScope : std::uint8_t { PerGpu, PerReplica, Cluster };

struct LedgerView {
    std::shared_ptr<const LedgerSnapshot> snapshot;  // the current scenario; null before the first
    std::shared_ptr<const LedgerSnapshot> reference; // the pinned scenario; null when none
    core::UnitSystem units = core::UnitSystem::Binary;
    FigureScope scope = FigureScope::PerGpu; // the scope of byte figures
};

// GPUs in one replica (TP x PP) and replicas in the cluster (DP), never below 1.
std::int64_t gpusPerReplica(const core::Scenario& s);
std::int64_t replicaCount(const core::Scenario& s);
// "per GPU", "per replica", "cluster" (for axis titles and headers).
QString scopeLabel(FigureScope scope);
// Bytes held on every GPU alike (the KV pool, one request's share) scaled to the scope: one
// GPU, the TP x PP GPUs of a replica, or every GPU of the cluster. Saturating.
std::int64_t scopeBytes(std::int64_t perGpuBytes, const core::Scenario& s, FigureScope scope);
// A request's KV, which PP stages of unequal layers hold unequally: the busiest GPU's bytes per
// GPU, the ledger's exact replica total per replica, and that times DP for the cluster.
std::int64_t scopeBytes(std::int64_t perGpuBytes, std::int64_t perReplicaBytes,
                        const core::Scenario& s, FigureScope scope);
// Requests (or tokens) held per replica, scaled to the cluster when asked; per GPU and per
// replica read the same, since every GPU of a replica serves every request. Saturating.
std::int64_t scopeRequests(std::int64_t perReplica, const core::Scenario& s, FigureScope scope);

// A view of one scenario (and, optionally, a reference), for views used on their own.
LedgerView makeLedgerView(const core::Scenario& s, core::UnitSystem units = {},
                          const core::Scenario* reference = nullptr);

// What a curve plots against context: KV memory per request or the requests that fit. The
// curve charts and the measured overlays on them use this one enum.
enum class CurveKind : std::uint8_t { Memory, Concurrency };

QString formatBytesQ(std::int64_t bytes, core::UnitSystem units, int decimals = 2);
QString formatBytesQ(double bytes, core::UnitSystem units, int decimals = 2);
QString formatTokensQ(std::int64_t tokens);
QString thousandsQ(std::int64_t value);

} // namespace kvl::widgets

Q_DECLARE_METATYPE(kvl::widgets::LedgerSnapshot)
Q_DECLARE_METATYPE(kvl::widgets::LedgerView)
