#include "app/cli.h"

#include "options.h"
#include "tables.h"

#include "core/engine.h"
#include "core/io/catalog.h"
#include "core/io/json.h"
#include "core/io/ledger_json.h"
#include "core/ledger.h"
#include "core/names.h"
#include "core/planner.h"

#include <algorithm>
#include <string>

namespace kvl::app {

namespace {

using Json = nlohmann::ordered_json; // keeps the keys in the order written

std::vector<std::string> gpuIds() {
    std::vector<std::string> ids;
    for (const auto& g : io::builtinGpus())
        ids.push_back(g.id);
    return ids;
}

int runModels(const Invocation& inv, std::ostream& out) {
    const bool json = inv.has("json");
    const auto& models = io::builtinModels();
    if (json) {
        Json a = Json::array();
        for (const auto& m : models)
            a.push_back({{"id", m.id},
                         {"name", m.name},
                         {"family", m.family},
                         {"layers", m.numLayers()},
                         {"q_heads", m.qHeads},
                         {"kv_heads", m.kvHeads},
                         {"head_dim", m.headDim},
                         {"params", m.params},
                         {"max_context", m.maxContext},
                         {"kv_bytes_per_token", cli::nativeBytesPerToken(m)}});
        out << io::dumpJson(a) << "\n";
        return 0;
    }
    cli::printModelsTable(out, models);
    return 0;
}

int runGpus(const Invocation& inv, std::ostream& out) {
    const bool json = inv.has("json");
    const auto& gpus = io::builtinGpus();
    if (json) {
        Json a = Json::array();
        for (const auto& g : gpus)
            a.push_back({{"id", g.id},
                         {"name", g.name},
                         {"vendor", g.vendor},
                         {"memory_bytes", g.memoryBytes},
                         {"bandwidth_gbs", g.bandwidthGBs},
                         {"memory_type", g.memoryType}});
        out << io::dumpJson(a) << "\n";
        return 0;
    }
    cli::printGpusTable(out, gpus);
    return 0;
}

int runLedger(const Invocation& inv, std::ostream& out, std::ostream& err) {
    // A block size the user asked for must be one vLLM takes (the window shows it as a
    // what-if; the command line refuses it).
    if (inv.scenario.levers.paging.enabled && inv.scenario.levers.paging.blockSize > 0)
        if (const auto bs = core::resolveBlockSizes(inv.scenario); !bs.error.empty()) {
            err << "kvledger ledger: --block-size: " << printable(bs.error) << "\n";
            return 2;
        }
    const auto r = core::computeLedger(inv.scenario);
    const auto ladder = core::computeLadder(inv.scenario);
    if (inv.has("json"))
        out << io::dumpJson(io::ledgerJson(inv.scenario, r, ladder)) << "\n";
    else
        cli::printLedgerTable(out, inv.scenario, r, ladder, inv.units);
    return 0;
}

int runPlan(const Invocation& inv, std::ostream& out, std::ostream& err) {
    if (!inv.has("users")) {
        err << "kvledger plan: --users: missing (the concurrent requests to hold)\n";
        return 2;
    }
    core::PlanRequest req;
    req.base = inv.scenario;
    req.users = std::stoll(inv.value("users"));
    req.context = inv.scenario.workload.context;
    req.maxGpus = inv.has("max-gpus") ? std::stoi(inv.value("max-gpus")) : 64;
    req.gpusPerNode = inv.has("gpus-per-node") ? std::stoi(inv.value("gpus-per-node")) : 8;
    req.rank =
        inv.value("rank") == "throughput" ? core::PlanRank::Throughput : core::PlanRank::Gpus;
    if (inv.has("min-tokens-per-s-per-user"))
        req.minTokensPerSecondPerUser = std::stod(inv.value("min-tokens-per-s-per-user"));
    // The scenario's GPU is listed first and recommended when it holds the users unflagged.
    req.preferredGpu = inv.scenario.hardware.gpu.id;
    if (inv.has("all-gpus")) {
        req.gpus = io::builtinGpus();
    } else if (!inv.gpus.empty()) {
        for (const auto& id : inv.gpus) {
            const core::GpuSpec* g = io::findGpu(id);
            if (!g) {
                err << "kvledger plan: --gpu: unknown GPU '" << printable(id) << "'"
                    << printable(core::didYouMean(id, gpuIds())) << " (kvledger gpus lists them)\n";
                return 2;
            }
            // `--gpu b200 --gpu b200` asks for one kind: one plan each.
            const bool seen = std::any_of(req.gpus.begin(), req.gpus.end(),
                                          [&](const core::GpuSpec& k) { return k.id == g->id; });
            if (!seen)
                req.gpus.push_back(*g);
        }
    } else {
        req.gpus = {inv.scenario.hardware.gpu};
    }
    const core::PlanResult plan = core::planDeployments(req);
    if (inv.has("json"))
        out << io::dumpJson(io::planJson(req, plan)) << "\n";
    else
        cli::printPlanTable(out, req, plan, inv.units);
    return 0;
}

} // namespace

int runLedgerCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 bool& handled) {
    handled = true;
    if (args.empty()) {
        handled = false;
        return 0;
    }
    const std::string& first = args[0];
    if (first == "--help" || first == "-h" || first == "help") {
        // `kvledger help export` is `kvledger export --help`.
        const std::string topic = first == "help" && args.size() > 1 ? args[1] : std::string();
        if (!topic.empty() && !cli::findCommand(topic)) {
            err << "kvledger help: unknown command '" << printable(topic)
                << "' (see kvledger --help)\n";
            return 2;
        }
        out << helpText(topic);
        return 0;
    }
    if (first == "--version") {
#ifdef KVL_VERSION
        out << "kvledger " << KVL_VERSION << "\n";
#endif
        return 0;
    }
    if (first != "ledger" && first != "plan" && first != "models" && first != "gpus") {
        handled = false;
        return 0;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    auto inv = parseCommand(first, rest);
    if (!inv) {
        err << "kvledger " << first << ": " << printable(inv.error().message) << "\n";
        return 2;
    }
    if (inv->help) {
        out << helpText(first);
        return 0;
    }
    if (first == "ledger")
        return runLedger(*inv, out, err);
    if (first == "plan")
        return runPlan(*inv, out, err);
    if (first == "models")
        return runModels(*inv, out);
    return runGpus(*inv, out);
}

} // namespace kvl::app
