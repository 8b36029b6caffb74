#include "tables.h"

#include "text.h"

#include "app/cli.h"

#include "core/deployment.h"
#include "core/engine.h"
#include "core/hybrid_note.h"
#include "core/io/ledger_json.h"
#include "core/io/scenario_file.h"
#include "core/saturating.h"
#include "core/speed.h"
#include "core/vllm_command.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

namespace kvl::app::cli {

namespace {

using core::formatBytes;
using core::withThousands;

std::string fixed2(double v) {
    return fixed(v, 2);
}

// "1.25 GiB (1,342,177,280 B)"
std::string bytesText(std::int64_t b, core::UnitSystem u) {
    if (b == core::kSaturated) // a bound, not a figure
        return formatBytes(b, u);
    return formatBytes(b, u) + " (" + withThousands(b) + " B)";
}

// "  KV per token                      per GPU      41.25 KiB (42,240 B)": a figure, its scope
// and its value, in the columns every ledger table (vLLM's and the other engines') shares.
void printScopedRow(std::ostream& out, const std::string& figure, const char* scope,
                    const std::string& value) {
    out << "  " << std::left << std::setw(34) << figure << std::setw(13) << scope << value
        << std::right << "\n";
}

// The scenario: model, GPUs, geometry, attention, KV format, paging and prefix.
void printLedgerHead(std::ostream& out, const core::Scenario& s, const core::LedgerResult& r) {
    const core::Layout layout = core::layoutOf(s);
    out << printable(s.model.name) << " on " << layout.gpus() << " x "
        << printable(s.hardware.gpu.name) << " (" << core::layoutLabel(layout) << ")\n";
    out << "  " << s.model.geometrySummary() << "\n";
    out << "  attention " << r.kv.attentionLabel << ", KV " << core::formatLabel(r.kv.format)
        << ", "
        << (r.blockSize > 0 ? "paged " + std::to_string(r.blockSize) : std::string("contiguous"));
    // Capacity depends on the shared prefix: the headline says which, or that there is none.
    if (s.levers.prefix.enabled && s.levers.prefix.sharedTokens > 0)
        out << ", prefix " << withThousands(s.levers.prefix.sharedTokens) << " tokens x "
            << (s.levers.prefix.sharingRequests > 0
                    ? std::to_string(s.levers.prefix.sharingRequests)
                    : std::string("all"));
    else
        out << ", no shared prefix";
    out << "\n\n";
}

// One row per ledger figure, the bytes in `u` and exact, each with its scope as the window
// says it: per GPU (one GPU of a replica), per replica (its TP x PP GPUs serve every request),
// cluster (x DP), or model (the model's KV counted once, before TP splits or replicates it).
void printLedgerRows(std::ostream& out, const core::Scenario& s, const core::LedgerResult& r,
                     core::UnitSystem u) {
    auto bytes = [u](std::int64_t b) { return bytesText(b, u); };
    auto row = [&](const std::string& k, const char* scope, const std::string& v) {
        printScopedRow(out, k, scope, v);
    };
    constexpr const char* gpu = "per GPU";
    row("KV per token", "model", bytes(r.kvBytesPerToken));
    row("KV per token", gpu, bytes(r.kvBytesPerTokenPerGpu));
    if (r.blockSize > 0)
        row("Block (all layers)", gpu, bytes(r.pageBytesPerGpu));
    // Per request, a replica's TP x PP GPUs together (the window's "per replica"), copies
    // included: MLA under TP 8 keeps its latent on all eight, eight times the model's once.
    row("KV per request @" + withThousands(r.contextTokens), "per replica",
        bytes(r.kvBytesPerRequest));
    if (s.hardware.gpuCount > 1 || s.hardware.pipelineParallel > 1)
        row("KV per request @" + withThousands(r.contextTokens), gpu,
            bytes(r.kvBytesPerRequestPerGpu));
    if (r.sharedBytesPerRequestPerGpu > 0)
        row("Shared prefix saved per request", gpu, bytes(r.sharedBytesPerRequestPerGpu));
    row("Weights", gpu, bytes(r.weightsBytesPerGpu));
    if (r.kvMemoryOverridden) {
        row("KV memory (fixed)", gpu, bytes(r.availableKvBytes));
    } else {
        row("GPU memory", gpu, bytes(r.gpuMemoryBytes));
        row("Requested (x " + fixed2(core::gpuMemoryUtilization(s)) + ")", gpu,
            bytes(r.requestedBytes));
        row("Activation + non-torch reserve", gpu,
            bytes(r.activationBytes + r.overheadBytes - r.cudaGraphBytes));
        if (r.cudaGraphBytes > 0)
            row("CUDA graphs (in profile)", gpu, bytes(r.cudaGraphBytes));
        row("Available for KV cache", gpu, bytes(r.availableKvBytes));
    }
    if (r.blockSize > 0)
        row("GPU blocks", gpu, withThousands(r.numGpuBlocks));
    // One number to trust: what vLLM runs, with why it is not what the KV cache holds.
    std::string run = withThousands(r.requestsYouCanRun);
    if (r.refused)
        run += " (vLLM refuses to start; see below)";
    else if (!r.error.empty())
        run += " (one request does not fit)";
    else if (r.requestsYouCanRun < r.maxRequestsAtContext)
        run += " (max_num_seqs; the KV cache holds " + withThousands(r.maxRequestsAtContext) + ")";
    // Every GPU of a replica serves every request: requests are per replica, or x DP.
    row("Requests of " + withThousands(r.contextTokens) + " you can run", "per replica", run);
    if (s.hardware.dataParallel > 1)
        row("Requests of " + withThousands(r.contextTokens) + " you can run", "cluster",
            withThousands(core::satMul(r.requestsYouCanRun, s.hardware.dataParallel)) + " (DP " +
                std::to_string(s.hardware.dataParallel) + ")");
}

// "sliding_window 1,024": a KV cache group's spec type and, for a windowed one, its window.
// (Appended rather than "a" + b: GCC 12 warns a false -Wrestrict on the inlined insert.)
std::string groupLabel(const core::KvCacheGroupUsage& g) {
    std::string label(core::specTypeName(g.type));
    if (g.window > 0) {
        label += ' ';
        label += withThousands(g.window);
    }
    return label;
}

// vLLM v1's KV cache groups over one pool and the capacity line vLLM logs (or the contiguous
// reservation when paging is off).
void printVllmPool(std::ostream& out, const core::LedgerResult& r, core::UnitSystem u) {
    auto bytes = [u](std::int64_t b) { return bytesText(b, u); };
    if (!r.kvCacheGroups.empty()) {
        out << "\n  KV cache groups (vLLM v1, one pool per GPU of " << withThousands(r.numGpuBlocks)
            << " blocks of " << bytes(r.bytesPerBlock) << "):\n";
        for (const auto& g : r.kvCacheGroups)
            out << "    " << std::left << std::setw(24) << groupLabel(g) << std::right
                << std::setw(4) << g.layers << " layers"
                << (g.paddingSlots > 0 ? " + " + std::to_string(g.paddingSlots) + " padding"
                                       : std::string())
                << ", block " << g.blockSize << ", " << withThousands(g.admissionBlocks)
                << " blocks per max-length request\n";
    }
    if (r.blockSize > 0 && !r.vllmLogLines.empty()) {
        out << "\n  vLLM " << r.vllmVersion << " would log (per GPU):\n";
        for (const auto& line : r.vllmLogLines)
            out << "    " << line << "\n";
    } else {
        out << "\n  Contiguous reservation (not vLLM, per GPU): "
            << withThousands(r.gpuKvCacheTokens) << " tokens, " << fixed2(r.maxConcurrency)
            << "x at max model length\n";
    }
}

// The decode-speed estimate and, with --target-requests, the GPUs that many requests need.
void printEstimates(std::ostream& out, const core::Scenario& s, const core::LedgerResult& r) {
    const std::optional<std::int64_t> batch = io::speedBatch(s, r);
    if (!batch) {
        out << "\n  Decode (estimate): none, no request runs (see below)\n";
    } else {
        const core::DecodeStep d = core::decodeStep(s, *batch, s.workload.context);
        if (d.stepMs > 0)
            out << "\n  Decode (estimate, eta_mem " << fixed2(core::kDefaultMemoryEfficiency)
                << "): " << withThousands(*batch)
                << (*batch == 1 ? " request per replica x " : " requests per replica x ")
                << withThousands(s.workload.context) << " tokens -> " << fixed2(d.stepMs)
                << " ms/step, " << fixed(d.tokensPerSecondPerUser, 1) << " tokens/s per user, "
                << withThousands(std::llround(d.clusterTokensPerSecond))
                << " tokens/s in the cluster (DP " << s.hardware.dataParallel << ", "
                << core::regimeName(d.regime) << ")\n";
    }
    if (s.workload.targetRequests > 0) {
        const auto need = core::computeGpusNeeded(s, s.workload.targetRequests);
        out << "\n  " << withThousands(s.workload.targetRequests) << " requests x "
            << withThousands(s.workload.context) << " tokens (cluster): weights "
            << formatBytes(need.weightsBytes, core::UnitSystem::Decimal) << " + KV "
            << formatBytes(need.kvBytes, core::UnitSystem::Decimal) << " = "
            << formatBytes(need.totalBytes, core::UnitSystem::Decimal) << " -> ";
        if (need.gpus > 0)
            out << need.gpus << " x " << printable(s.hardware.gpu.name) << " as "
                << core::layoutLabel(need.layout) << " (vLLM)"
                << (need.pooledGpus > 0 && need.pooledGpus != need.gpus
                        ? "; pooled memory alone would say " + std::to_string(need.pooledGpus)
                        : std::string())
                << (need.flag.empty() ? std::string() : "; " + need.flag)
                << (need.recommended
                        ? "; the planner's best: " + std::to_string(need.recommended->gpus()) +
                              " as " + core::layoutLabel(*need.recommended)
                        : std::string())
                << "\n";
        else
            out << "no layout of " << core::kMaxPlanGpus
                << " GPUs or fewer: " << printable(need.note) << "\n";
    }
}

// The lever ladder, then the warnings and the error. Bytes per GPU and requests per replica,
// as the window's ladder shows them by default (widgets/charts/ladder_model.cpp).
void printLadder(std::ostream& out, const core::Scenario& s, const core::LedgerResult& r,
                 const std::vector<core::LadderStep>& ladder, core::UnitSystem u) {
    out << "\n  Lever ladder @" << withThousands(r.contextTokens) << " tokens (KV per GPU of "
        << core::layoutLabel(core::layoutOf(s)) << "; requests per replica)\n";
    // Requests you can run, as the headline counts them (0 where vLLM refuses to start).
    out << "  " << std::left << std::setw(36) << "step" << std::right << std::setw(20)
        << "KV/token per GPU" << std::setw(22) << "per request per GPU" << std::setw(26)
        << "you can run per replica"
        << "\n";
    for (const auto& st : ladder) {
        out << "  " << std::left << std::setw(36) << printable(st.label) << std::right
            << std::setw(20) << formatBytes(st.result.kvBytesPerTokenPerGpu, u) << std::setw(22)
            << formatBytes(st.result.kvBytesPerRequestPerGpu, u) << std::setw(26)
            << withThousands(st.result.requestsYouCanRun) << "\n";
    }
    // A hybrid model's figures do not read as a dense one's: say why, under the ladder.
    for (const auto& note : core::hybridLadderNotes(s, r, ladder, u)) {
        out << "\n  ";
        wrapped(out, printable(note), 2, 2);
    }
    for (const auto& wmsg : r.warnings)
        out << "\n  warning: " << printable(wmsg);
    if (!r.warnings.empty())
        out << "\n";
    if (!r.error.empty())
        out << "\n  " << printable(r.error) << "\n";
}

} // namespace

void printLedgerTable(std::ostream& out, const core::Scenario& s, const core::LedgerResult& r,
                      const std::vector<core::LadderStep>& ladder, core::UnitSystem u) {
    printLedgerHead(out, s, r);
    printLedgerRows(out, s, r, u);
    printVllmPool(out, r, u);
    printEstimates(out, s, r);
    printLadder(out, s, r, ladder, u);
}

void printPlanTable(std::ostream& out, const core::PlanRequest& req, const core::PlanResult& plan,
                    core::UnitSystem u) {
    const auto order = plan.bestFirst();
    out << withThousands(req.users) << " users x " << withThousands(req.context) << " tokens of "
        << printable(req.base.model.name) << ", KV "
        << core::shortLabel(core::storedKvFormat(req.base)) << " (per GPU figures)\n\n";
    out << "  " << std::left << std::setw(20) << "GPU" << std::right << std::setw(6) << "GPUs"
        << "  " << std::left << std::setw(22) << "layout" << std::right << std::setw(10)
        << "per repl." << std::setw(9) << "cluster" << std::setw(12) << "KV/GPU" << std::setw(12)
        << "weights/GPU" << std::setw(12) << "headroom" << std::setw(12) << "tok/s/user"
        << "\n";
    for (const core::GpuPlan* g : order) {
        out << "  " << std::left << std::setw(20) << printable(g->gpu.id);
        if (!g->fits) {
            out << "     -  " << printable(g->reason) << "\n";
            continue;
        }
        const core::Deployment& d = g->layouts.front();
        out << std::right << std::setw(6) << d.layout.gpus() << "  " << std::left << std::setw(22)
            << core::layoutLabel(d.layout) << std::right << std::setw(10)
            << withThousands(d.requestsPerReplica) << std::setw(9)
            << withThousands(d.clusterRequests) << std::setw(12) << formatBytes(d.kvBytesPerGpu, u)
            << std::setw(12) << formatBytes(d.weightsBytesPerGpu, u) << std::setw(12)
            << formatBytes(d.headroomBytesPerGpu, u) << std::setw(12)
            << fixed(d.tokensPerSecondPerUser, 1) << "\n";
        auto sloText = [](const core::Deployment& x) {
            std::string t = x.meetsSlo ? "meets the SLO" : "misses the SLO";
            t += " (" + fixed(100 * x.sloAttainment, 1) + "% within; p99 TTFT " +
                 fixed(x.ttftP99Ms, 1) + " ms, TPOT " + fixed(x.tpotP99Ms, 2) + " ms)";
            if (!x.sloNote.empty())
                t += ": " + x.sloNote;
            return t;
        };
        if (d.sloChecked)
            out << "  " << std::setw(28) << "" << sloText(d) << "\n";
        // Three others at most, and always the flagged ones of fewer GPUs (why not those).
        for (std::size_t i = 1; i < g->layouts.size(); ++i)
            if (i < 4 || !g->layouts[i].flag.empty()) {
                out << "  " << std::setw(28) << ""
                    << "or " << core::layoutLabel(g->layouts[i].layout)
                    << (g->layouts[i].flag.empty()
                            ? std::string()
                            : " (flagged: " + printable(g->layouts[i].flag) + ")");
                if (g->layouts[i].sloChecked)
                    out << ": " << sloText(g->layouts[i]);
                out << "\n";
            }
        if (!d.flag.empty())
            out << "  " << std::setw(28) << ""
                << "flagged: " << printable(d.flag) << "\n";
    }
    const core::GpuPlan* best = plan.recommended();
    if (!best)
        return;
    const core::Deployment& d = best->layouts.front();
    out << "\n  The best plan: " << d.layout.gpus() << " x " << printable(best->gpu.name) << " ("
        << printable(best->gpu.id) << ") as " << core::layoutLabel(d.layout);
    if (best->gpu.id == req.preferredGpu)
        out << ", the scenario's GPU";
    out << "\n";
    // Why not the fewest GPUs, or why it is flagged itself.
    if (!d.flag.empty())
        out << "  (flagged: " << printable(d.flag) << "; no plan tried avoids that)\n";
    else
        for (const core::GpuPlan* g : order)
            if (g != best && g->fits && !g->layouts.front().flag.empty() &&
                (g->layouts.front().layout.gpus() <= d.layout.gpus() ||
                 g->gpu.id == req.preferredGpu))
                out << "  (not " << g->layouts.front().layout.gpus() << " x "
                    << printable(g->gpu.id)
                    << (g->gpu.id == req.preferredGpu ? ", the scenario's GPU" : "") << ": "
                    << printable(g->layouts.front().flag) << ")\n";
    out << "  For vLLM:\n";
    std::istringstream lines(core::vllmServeCommand(d.scenario).text());
    for (std::string line; std::getline(lines, line);)
        out << "    " << line << "\n";
}

// KV bytes per token in the model's own dtype (vLLM "auto"), whole model.
std::int64_t nativeBytesPerToken(const core::ModelSpec& m) {
    core::Scenario s = io::defaultScenario();
    s.model = m;
    s.levers = {};
    return core::computeLedger(s).kvBytesPerToken;
}

namespace {

// Columns as wide as their widest cell, two spaces apart: a long name (or a long id, such as
// llama-4-maverick-17b-128e) widens its column instead of running into the next one.
struct Column {
    std::string title;
    bool right = false; // numbers right-aligned
};

void printColumns(std::ostream& out, const std::vector<Column>& cols,
                  const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width(cols.size());
    for (std::size_t c = 0; c < cols.size(); ++c) {
        width[c] = cols[c].title.size();
        for (const auto& r : rows)
            width[c] = std::max(width[c], r[c].size());
    }
    const auto line = [&](const std::vector<std::string>& cells) {
        std::string text;
        for (std::size_t c = 0; c < cols.size(); ++c) {
            const std::string pad(width[c] - cells[c].size(), ' ');
            if (c > 0)
                text += "  ";
            // The last column (free text) is not padded: no trailing blanks.
            text +=
                cols[c].right ? pad + cells[c] : (c + 1 == cols.size() ? cells[c] : cells[c] + pad);
        }
        while (!text.empty() && text.back() == ' ')
            text.pop_back();
        out << text << "\n";
    };
    std::vector<std::string> titles;
    for (const auto& c : cols)
        titles.push_back(c.title);
    line(titles);
    for (const auto& r : rows)
        line(r);
}

} // namespace

void printModelsTable(std::ostream& out, const std::vector<core::ModelSpec>& models) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& m : models)
        rows.push_back({printable(m.id), printable(m.family), std::to_string(m.numLayers()),
                        std::to_string(m.qHeads), std::to_string(m.kvHeads),
                        std::to_string(m.headDim), withThousands(m.maxContext),
                        withThousands(nativeBytesPerToken(m)), printable(m.notes)});
    printColumns(out,
                 {{"id"},
                  {"family"},
                  {"layers", true},
                  {"q", true},
                  {"kv", true},
                  {"hd", true},
                  {"max ctx", true},
                  {"KV B/token", true},
                  {"notes"}},
                 rows);
}

void printGpusTable(std::ostream& out, const std::vector<core::GpuSpec>& gpus) {
    std::vector<std::vector<std::string>> rows;
    for (const auto& g : gpus)
        rows.push_back({printable(g.id), printable(g.name), formatBytes(g.memoryBytes),
                        withThousands(g.memoryBytes), withThousands(std::llround(g.bandwidthGBs))});
    printColumns(out, {{"id"}, {"name"}, {"memory", true}, {"bytes", true}, {"GB/s", true}}, rows);
}

void printEngineTable(std::ostream& out, const core::Scenario& s, const core::EngineResult& r,
                      core::UnitSystem u) {
    out << printable(s.model.name) << " on " << s.hardware.gpuCount << " x "
        << printable(s.hardware.gpu.name) << " with " << core::engineDisplayName(r.engine)
        << " (rules of " << r.version << ")\n";
    if (!r.error.empty())
        out << "  does not run: " << printable(r.error) << "\n";
    // Each GPU of a replica holds its share of every token of the pool (TP splits the heads,
    // llama.cpp's -sm layer the layers): tokens and requests are the replica's.
    printScopedRow(out, "KV pool", "per GPU", bytesText(r.kvPoolBytesPerGpu, u));
    printScopedRow(out, "Tokens in the pool", "per replica", withThousands(r.poolTokens));
    printScopedRow(out, "KV per token", "per GPU", bytesText(r.kvBytesPerTokenPerGpu, u));
    printScopedRow(out, "Requests of " + withThousands(s.workload.context) + " you can run",
                   "per replica", withThousands(r.requestsAtContext));
    out << "\n"; // the figures, then what the engine prints and how to launch it
    if (!r.logLines.empty()) {
        out << "  " << core::engineDisplayName(r.engine) << " prints:\n";
        for (const auto& l : r.logLines)
            out << "    " << l << "\n";
    }
    out << "  launch: " << printable(r.command) << "\n";
    for (const auto& n : r.notes)
        out << "  note: " << printable(n) << "\n";
}

void printEnginePlanTable(std::ostream& out, const core::Scenario& base, std::int64_t users,
                          const std::vector<core::EnginePlanRow>& rows) {
    out << withThousands(users) << " requests of " << withThousands(base.workload.context)
        << " tokens, " << printable(base.model.name) << " with "
        << core::engineDisplayName(base.engine.kind) << "\n";
    for (const auto& r : rows) {
        out << "  " << std::left << std::setw(14) << printable(r.gpu.id) << std::right;
        if (r.gpus == 0) {
            out << "does not fit: " << printable(r.why) << "\n";
            continue;
        }
        out << r.gpus << " GPUs: " << r.replicas << " x " << r.gpusPerReplica << " GPU(s), "
            << withThousands(r.requestsPerReplica) << " requests per replica\n";
    }
}

} // namespace kvl::app::cli
