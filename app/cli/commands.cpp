#include "app/cli.h"

#include "options.h"
#include "simulate.h"
#include "tables.h"
#include "text.h"

#include "core/engine.h"
#include "core/engines.h"
#include "core/io/catalog.h"
#include "core/io/gguf.h"
#include "core/io/json.h"
#include "core/io/ledger_json.h"
#include "core/ledger.h"
#include "core/names.h"
#include "core/planner.h"
#include "core/sim/simulator.h"
#include "core/units.h"

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

// `items` as kvledger models and gpus print them: a table, or with --json an array of
// `toJson(item)`.
template <class T, class ToJson>
int printCatalog(const Invocation& inv, std::ostream& out, const std::vector<T>& items,
                 ToJson toJson, void (*printTable)(std::ostream&, const std::vector<T>&)) {
    if (!inv.has("json")) {
        printTable(out, items);
        return 0;
    }
    Json a = Json::array();
    for (const auto& item : items)
        a.push_back(toJson(item));
    out << io::dumpJson(a) << "\n";
    return 0;
}

int runModels(const Invocation& inv, std::ostream& out) {
    return printCatalog(
        inv, out, io::builtinModels(),
        [](const core::ModelSpec& m) -> Json {
            return {{"id", m.id},
                    {"name", m.name},
                    {"family", m.family},
                    {"layers", m.numLayers()},
                    {"q_heads", m.qHeads},
                    {"kv_heads", m.kvHeads},
                    {"head_dim", m.headDim},
                    {"params", m.params},
                    {"max_context", m.maxContext},
                    {"kv_bytes_per_token", cli::nativeBytesPerToken(m)}};
        },
        cli::printModelsTable);
}

int runGpus(const Invocation& inv, std::ostream& out) {
    return printCatalog(inv, out, io::builtinGpus(),
                        // The catalog's GPU as a scenario file keeps it.
                        io::gpuJson, cli::printGpusTable);
}

int runLedger(const Invocation& inv, std::ostream& out, std::ostream& err) {
    // A block size the user asked for must be one vLLM takes (the window shows it as a
    // what-if; the command line refuses it).
    if (inv.scenario.levers.paging.enabled && inv.scenario.levers.paging.blockSize > 0)
        if (const auto bs = core::resolveBlockSizes(inv.scenario); !bs.error.empty()) {
            err << "kvledger ledger: --block-size: " << printable(bs.error) << "\n";
            return 2;
        }
    if (inv.scenario.engine.kind != core::Engine::Vllm) {
        // SGLang, TensorRT-LLM and llama.cpp: the engine's own pool and lines.
        const core::EngineResult e = core::computeEngine(inv.scenario);
        if (inv.has("json"))
            out << io::dumpJson(io::engineJson(inv.scenario, e)) << "\n";
        else
            cli::printEngineTable(out, inv.scenario, e, inv.units);
        return 0;
    }
    const auto r = core::computeLedger(inv.scenario);
    const auto ladder = core::computeLadder(inv.scenario);
    if (inv.has("json")) {
        Json j = io::ledgerJson(inv.scenario, r, ladder);
        j["valid"] = true; // the layout is one vLLM takes; see runLedgerCli for one it refuses
        out << io::dumpJson(j) << "\n";
    } else {
        cli::printLedgerTable(out, inv.scenario, r, ladder, inv.units);
    }
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
    // Two kinds or more named with --gpu are candidates side by side: the last of them is the
    // scenario's GPU only because the options say one GPU, so none is preferred.
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
        if (req.gpus.size() > 1)
            req.preferredGpu.clear();
    } else {
        req.gpus = {inv.scenario.hardware.gpu};
    }
    if (inv.scenario.engine.kind != core::Engine::Vllm) {
        if (inv.has("rate")) {
            err << "kvledger plan: --rate: the traffic simulation follows vLLM's scheduler; drop "
                   "--engine or --rate\n";
            return 2;
        }
        const auto rows = core::planEngine(req.base, req.gpus, req.users, req.maxGpus);
        if (inv.has("json"))
            out << io::dumpJson(io::enginePlanJson(req.base, req.users, rows)) << "\n";
        else
            cli::printEnginePlanTable(out, req.base, req.users, rows);
        return 0;
    }
    core::PlanResult plan = core::planDeployments(req);
    // --rate with an SLO: simulate each layout's replica at its share of the rate.
    const bool slo = inv.has("slo-ttft-ms") || inv.has("slo-tpot-ms");
    if (inv.has("rate") != slo)
        for (const char* o : {"rate", "slo-ttft-ms", "slo-tpot-ms"})
            if (inv.has(o)) {
                err << "kvledger plan: --" << o << ": needs "
                    << (inv.has("rate") ? "--slo-ttft-ms or --slo-tpot-ms" : "--rate") << "\n";
                return 2;
            }
    for (const char* o : {"slo-attainment", "prompt-tokens", "output-tokens", "requests", "seed"})
        if (inv.has(o) && !inv.has("rate")) {
            err << "kvledger plan: --" << o << ": needs --rate and an SLO\n";
            return 2;
        }
    if (inv.has("rate")) {
        namespace sim = core::sim;
        sim::WorkloadSpec w;
        w.output = inv.has("output-tokens") ? *sim::parseLengthDist(inv.value("output-tokens"))
                                            : sim::LengthDist::fixed(256);
        const auto rest = std::max<std::int64_t>(
            1, req.context - static_cast<std::int64_t>(std::llround(w.output.expected())));
        w.prompt = inv.has("prompt-tokens") ? *sim::parseLengthDist(inv.value("prompt-tokens"))
                                            : sim::LengthDist::fixed(rest);
        if (w.prompt.largest() >= std::max(req.context, req.base.effectiveMaxModelLen())) {
            err << "kvledger plan: --prompt-tokens: prompts up to "
                << core::withThousands(w.prompt.largest())
                << " tokens reach the max model length; raise --context or --max-model-len\n";
            return 2;
        }
        w.requests = inv.has("requests") ? std::stoll(inv.value("requests")) : 1000;
        if (inv.has("seed"))
            w.seed = std::stoull(inv.value("seed"));
        sim::SimOptions o;
        o.sloTtftMs = inv.has("slo-ttft-ms") ? std::stod(inv.value("slo-ttft-ms")) : 0;
        o.sloTpotMs = inv.has("slo-tpot-ms") ? std::stod(inv.value("slo-tpot-ms")) : 0;
        const double rate = std::stod(inv.value("rate"));
        const double attainment =
            inv.has("slo-attainment") ? std::stod(inv.value("slo-attainment")) : 0.99;
        sim::rankPlanBySlo(plan, rate, w, o, attainment);
        if (!inv.has("json")) {
            out << "At " << inv.value("rate") << " req/s";
            if (o.sloTtftMs > 0)
                out << ", TTFT <= " << inv.value("slo-ttft-ms") << " ms";
            if (o.sloTpotMs > 0)
                out << ", TPOT <= " << inv.value("slo-tpot-ms") << " ms";
            out << " for " << attainment * 100 << "% of requests (prompt " << w.prompt.text()
                << ", output " << w.output.text() << " tokens; simulated, " << w.requests
                << " requests per layout):\n";
        }
    }
    if (inv.has("json"))
        out << io::dumpJson(io::planJson(req, plan)) << "\n";
    else
        cli::printPlanTable(out, req, plan, inv.units);
    return 0;
}

// kvledger gguf FILE: the header of a local .gguf (core/io/gguf.h); a file that is not a GGUF,
// is truncated or lies about its sizes is one line naming it, exit 2.
int runGguf(const Invocation& inv, std::ostream& out, std::ostream& err) {
    if (inv.positional.empty()) {
        err << "kvledger gguf: FILE: missing (the .gguf file to read)\n";
        return 2;
    }
    const auto r = io::readGgufHeader(inv.positional.front());
    if (!r) {
        err << "kvledger gguf: " << printable(r.error().message) << "\n";
        return r.error().code == ErrorCode::NotFound ? 1 : 2;
    }
    const io::GgufInfo& g = r.value();
    if (inv.has("json")) {
        Json types = Json::array();
        for (const auto& t : g.types)
            types.push_back({{"type", t.type},
                             {"tensors", t.tensors},
                             {"elements", t.elements},
                             {"bytes", t.bytes}});
        const Json o = {{"file", g.path},
                        {"version", g.version},
                        {"architecture", g.architecture},
                        {"name", g.name},
                        {"file_type", g.fileType},
                        {"block_count", g.blockCount},
                        {"context_length", g.contextLength},
                        {"embedding_length", g.embeddingLength},
                        {"head_count", g.headCount},
                        {"head_count_kv", g.headCountKv},
                        {"key_length", g.keyLength},
                        {"value_length", g.valueLength},
                        {"sliding_window", g.slidingWindow},
                        {"expert_count", g.expertCount},
                        {"tensor_count", g.tensorCount},
                        {"weight_bytes", g.weightBytes},
                        {"weight_elements", g.weightElements},
                        {"bits_per_weight", g.bitsPerWeight()},
                        {"tensor_types", types}};
        out << io::dumpJson(o) << "\n";
        return 0;
    }
    out << printable(g.path) << ": GGUF v" << g.version << ", " << printable(g.architecture);
    if (!g.name.empty())
        out << " (" << printable(g.name) << ")";
    if (!g.fileType.empty())
        out << ", " << g.fileType;
    out << "\n  " << g.blockCount << " blocks, " << g.headCount << " heads, KV heads ";
    for (std::size_t i = 0; i < g.headCountKv.size() && i < 8; ++i)
        out << (i ? "," : "") << g.headCountKv[i];
    if (g.headCountKv.size() > 8)
        out << ",...";
    out << ", key/value length " << g.keyLength << "/" << g.valueLength << ", context "
        << g.contextLength;
    if (g.slidingWindow > 0)
        out << ", sliding window " << g.slidingWindow;
    out << "\n  " << g.tensorCount << " tensors, " << core::formatBytes(g.weightBytes) << " ("
        << cli::fixed(g.bitsPerWeight(), 2) << " bits per weight)\n";
    for (const auto& t : g.types)
        out << "    " << t.type << ": " << t.tensors << " tensors, " << core::formatBytes(t.bytes)
            << "\n";
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
    if (first != "ledger" && first != "plan" && first != "models" && first != "gpus" &&
        first != "simulate" && first != "gguf") {
        handled = false;
        return 0;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    auto inv = parseCommand(first, rest);
    if (!inv) {
        err << "kvledger " << first << ": " << printable(inv.error().message) << "\n";
        // A layout vLLM refuses (parse.cpp) is still an answer a script can read: with --json
        // it is {"valid": false, "error": ...} on stdout, and exit 2 as on the terminal.
        if (first == "ledger" && inv.error().code == ErrorCode::Unsupported &&
            std::find(rest.begin(), rest.end(), "--json") != rest.end())
            out << io::dumpJson(Json{{"valid", false}, {"error", inv.error().message}}) << "\n";
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
    if (first == "simulate")
        return cli::runSimulate(*inv, out, err);
    if (first == "models")
        return runModels(*inv, out);
    if (first == "gguf")
        return runGguf(*inv, out, err);
    return runGpus(*inv, out);
}

} // namespace kvl::app
