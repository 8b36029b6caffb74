#include "cli.h"

#include "core/io/catalog.h"
#include "core/io/json.h"
#include "core/io/scenario_args.h"
#include "core/io/scenario_file.h"
#include "core/ledger.h"
#include "core/units.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace kvl::app {

namespace {

using core::formatBytes;
using core::withThousands;
using Json = nlohmann::ordered_json; // keeps the keys in the order written

// vLLM prints the concurrency with two decimals; JSON carries the same rounding.
double round2(double v) {
    return std::round(v * 100.0) / 100.0;
}

Json ledgerJson(const core::Scenario& s, const core::LedgerResult& r,
                const std::vector<core::LadderStep>& ladder) {
    Json o = Json::object();
    auto put = [&o](const std::string& k, Json v) { o[k] = std::move(v); };
    put("model", s.model.id);
    put("model_name", s.model.name);
    put("gpu", s.hardware.gpu.id);
    put("gpu_name", s.hardware.gpu.name);
    put("tp", s.hardware.gpuCount);
    put("attention", r.kv.attentionLabel);
    put("kv_heads", r.kv.kvHeads);
    put("kv_heads_per_gpu", r.kv.kvHeadsPerGpu);
    put("kv_dtype", std::string(core::dtypeName(r.kv.format.dtype)));
    put("kv_format", core::formatLabel(r.kv.format));
    put("block_size", r.blockSize);
    put("paging", r.blockSize > 0);
    put("prefix_tokens", s.levers.prefix.enabled ? s.levers.prefix.sharedTokens : std::int64_t{0});
    put("prefix_requests", s.levers.prefix.sharingRequests);
    put("context", r.contextTokens);
    put("max_model_len", r.maxModelLen);
    put("kv_bytes_per_token", r.kvBytesPerToken);
    put("kv_bytes_per_token_per_gpu", r.kvBytesPerTokenPerGpu);
    put("page_bytes_per_gpu", r.pageBytesPerGpu);
    put("kv_bytes_per_request", r.kvBytesPerRequest);
    put("kv_bytes_per_request_per_gpu", r.kvBytesPerRequestPerGpu);
    put("shared_bytes_per_request_per_gpu", r.sharedBytesPerRequestPerGpu);
    put("weights_bytes", r.weightsBytes);
    put("weights_bytes_per_gpu", r.weightsBytesPerGpu);
    put("gpu_memory_bytes", r.gpuMemoryBytes);
    put("requested_bytes", r.requestedBytes);
    put("activation_bytes", r.activationBytes);
    put("overhead_bytes", r.overheadBytes);
    put("available_kv_bytes", r.availableKvBytes);
    put("kv_memory_overridden", r.kvMemoryOverridden);
    put("num_gpu_blocks", r.numGpuBlocks);
    put("gpu_kv_cache_tokens", r.gpuKvCacheTokens);
    put("max_concurrency", round2(r.maxConcurrency));
    put("max_requests_at_context", r.maxRequestsAtContext);
    Json groups = Json::array();
    for (const auto& g : r.groups) {
        Json go = Json::object();
        go["kind"] = std::string(core::layerKindName(g.kind));
        if (g.kind == core::LayerKind::Sliding)
            go["window"] = g.window;
        go["layers"] = g.layers;
        go["bytes_per_token_per_layer_per_gpu"] = g.bytesPerTokenPerLayerPerGpu;
        go["blocks_per_request"] = g.blocksPerRequest;
        go["tokens_held_per_request"] = g.tokensHeldPerRequest;
        groups.emplace_back(std::move(go));
    }
    put("layer_groups", std::move(groups));
    if (s.workload.targetRequests > 0) {
        const auto need = core::computeGpusNeeded(s, s.workload.targetRequests);
        put("target_requests", s.workload.targetRequests);
        put("gpus_needed", need.gpus);
        put("gpus_needed_tensor_parallel", need.tensorParallel);
        put("target_weights_bytes", need.weightsBytes);
        put("target_kv_bytes", need.kvBytes);
        put("target_total_bytes", need.totalBytes);
    }
    Json steps = Json::array();
    for (const auto& st : ladder) {
        Json so = Json::object();
        so["label"] = st.label;
        so["applied"] = st.applied;
        so["kv_bytes_per_token"] = st.result.kvBytesPerToken;
        so["kv_bytes_per_request"] = st.result.kvBytesPerRequest;
        so["kv_bytes_per_request_per_gpu"] = st.result.kvBytesPerRequestPerGpu;
        so["max_requests_at_context"] = st.result.maxRequestsAtContext;
        so["max_concurrency"] = round2(st.result.maxConcurrency);
        steps.emplace_back(std::move(so));
    }
    put("ladder", std::move(steps));
    Json warnings = Json::array();
    for (const auto& w : r.warnings)
        warnings.emplace_back(w);
    put("warnings", std::move(warnings));
    put("error", r.error.empty() ? Json() : Json(r.error));
    return o;
}

std::string fixed2(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
}

void printTable(std::ostream& out, const core::Scenario& s, const core::LedgerResult& r,
                const std::vector<core::LadderStep>& ladder, core::UnitSystem u) {
    auto bytes = [u](std::int64_t b) {
        return formatBytes(b, u) + " (" + withThousands(b) + " B)";
    };
    out << s.model.name << " on " << s.hardware.gpuCount << " x " << s.hardware.gpu.name << "\n";
    out << "  " << s.model.geometrySummary() << "\n";
    out << "  attention " << r.kv.attentionLabel << ", KV " << core::formatLabel(r.kv.format)
        << ", "
        << (r.blockSize > 0 ? "paged " + std::to_string(r.blockSize) : std::string("contiguous"));
    if (s.levers.prefix.enabled)
        out << ", prefix " << withThousands(s.levers.prefix.sharedTokens) << " tokens x "
            << (s.levers.prefix.sharingRequests > 0
                    ? std::to_string(s.levers.prefix.sharingRequests)
                    : std::string("all"));
    out << "\n\n";
    const int w = 34;
    auto row = [&](const std::string& k, const std::string& v) {
        out << "  " << std::left << std::setw(w) << k << v << "\n";
    };
    row("KV per token (model)", bytes(r.kvBytesPerToken));
    row("KV per token (per GPU)", bytes(r.kvBytesPerTokenPerGpu));
    if (r.blockSize > 0)
        row("Block (all layers, per GPU)", bytes(r.pageBytesPerGpu));
    row("KV per request @" + withThousands(r.contextTokens), bytes(r.kvBytesPerRequest));
    if (s.hardware.gpuCount > 1)
        row("KV per request per GPU", bytes(r.kvBytesPerRequestPerGpu));
    if (r.sharedBytesPerRequestPerGpu > 0)
        row("Shared prefix saved per request", bytes(r.sharedBytesPerRequestPerGpu));
    row("Weights per GPU", bytes(r.weightsBytesPerGpu));
    if (r.kvMemoryOverridden) {
        row("KV memory (fixed)", bytes(r.availableKvBytes));
    } else {
        row("GPU memory", bytes(r.gpuMemoryBytes));
        row("Requested (x " + fixed2(s.hardware.memoryUtilization) + ")", bytes(r.requestedBytes));
        row("Activation + non-torch reserve", bytes(r.activationBytes + r.overheadBytes));
        row("Available for KV cache", bytes(r.availableKvBytes));
    }
    if (r.blockSize > 0)
        row("GPU blocks", withThousands(r.numGpuBlocks));
    row("Requests of " + withThousands(r.contextTokens) + " that fit",
        withThousands(r.maxRequestsAtContext));
    out << "\n  vLLM would log:\n";
    out << "    GPU KV cache size: " << withThousands(r.gpuKvCacheTokens) << " tokens\n";
    out << "    Maximum concurrency for " << withThousands(r.maxModelLen)
        << " tokens per request: " << fixed2(r.maxConcurrency) << "x\n";
    if (s.workload.targetRequests > 0) {
        const auto need = core::computeGpusNeeded(s, s.workload.targetRequests);
        out << "\n  " << withThousands(s.workload.targetRequests) << " requests x "
            << withThousands(s.workload.context) << " tokens: weights "
            << formatBytes(need.weightsBytes, core::UnitSystem::Decimal) << " + KV "
            << formatBytes(need.kvBytes, core::UnitSystem::Decimal) << " = "
            << formatBytes(need.totalBytes, core::UnitSystem::Decimal) << " -> ";
        if (need.gpus > 0)
            out << need.gpus << " x " << s.hardware.gpu.name << " (pooled memory)"
                << (need.tensorParallel > 0
                        ? "; vLLM tensor parallel " + std::to_string(need.tensorParallel)
                        : std::string())
                << "\n";
        else
            out << "does not fit in " << core::kMaxGpus << " GPUs\n";
    }
    out << "\n  Lever ladder @" << withThousands(r.contextTokens) << " tokens\n";
    out << "  " << std::left << std::setw(36) << "step" << std::right << std::setw(14) << "KV/token"
        << std::setw(16) << "per request" << std::setw(12) << "requests"
        << "\n";
    for (const auto& st : ladder) {
        out << "  " << std::left << std::setw(36) << st.label << std::right << std::setw(14)
            << formatBytes(st.result.kvBytesPerToken, u) << std::setw(16)
            << formatBytes(st.result.kvBytesPerRequest, u) << std::setw(12)
            << withThousands(st.result.maxRequestsAtContext) << "\n";
    }
    for (const auto& wmsg : r.warnings)
        out << "\n  warning: " << wmsg;
    if (!r.warnings.empty())
        out << "\n";
    if (!r.error.empty())
        out << "\n  " << r.error << "\n";
}

const char* kUsage = R"(usage: kvledger [COMMAND] [OPTIONS]

With no command, opens the explorer window.

Commands:
  ledger [scenario options] [--json] [--units gib|gb]   the KV ledger for one scenario
  models [--json]                                       the model catalog
  gpus [--json]                                         the GPU catalog
  export --chart memory|concurrency|breakdown|ladder --out FILE [scenario options]
  export --report FILE.pdf [scenario options]
  --screenshot FILE.png [scenario options]

)";

int runLedger(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    auto parsed = io::parseScenarioArgs(args, io::defaultScenario());
    if (!parsed) {
        err << "kvledger ledger: " << parsed.error().message << "\n";
        return 2;
    }
    auto& p = parsed.value();
    bool json = false;
    core::UnitSystem units = core::UnitSystem::Binary;
    for (std::size_t i = 0; i < p.rest.size(); ++i) {
        const auto& a = p.rest[i];
        if (a == "--json") {
            json = true;
        } else if (a == "--units" && i + 1 < p.rest.size()) {
            const auto& u = p.rest[++i];
            if (u == "gib")
                units = core::UnitSystem::Binary;
            else if (u == "gb")
                units = core::UnitSystem::Decimal;
            else {
                err << "kvledger ledger: --units: expected gib or gb, got '" << u << "'\n";
                return 2;
            }
        } else if (a == "--help" || a == "-h") {
            out << "usage: kvledger ledger [options] [--json] [--units gib|gb]\n\n"
                << io::scenarioOptionsHelp();
            return 0;
        } else {
            err << "kvledger ledger: unknown option '" << a << "' (see kvledger ledger --help)\n";
            return 2;
        }
    }
    if (auto e = p.scenario.validate()) {
        err << "kvledger ledger: " << *e << "\n";
        return 2;
    }
    const auto r = core::computeLedger(p.scenario);
    const auto ladder = core::computeLadder(p.scenario);
    if (json)
        out << io::dumpJson(ledgerJson(p.scenario, r, ladder)) << "\n";
    else
        printTable(out, p.scenario, r, ladder, units);
    return 0;
}

// KV bytes per token in the model's own dtype (vLLM "auto"), whole model.
std::int64_t nativeBytesPerToken(const core::ModelSpec& m) {
    core::Scenario s = io::defaultScenario();
    s.model = m;
    s.levers = {};
    return core::computeLedger(s).kvBytesPerToken;
}

int runModels(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    const bool json = args.size() == 1 && args[0] == "--json";
    if (!args.empty() && !json) {
        err << "kvledger models: unknown option '" << args[0] << "'\n";
        return 2;
    }
    const auto& models = io::builtinModels();
    if (json) {
        Json a = Json::array();
        for (const auto& m : models) {
            Json o = Json::object();
            o["id"] = m.id;
            o["name"] = m.name;
            o["family"] = m.family;
            o["layers"] = m.numLayers();
            o["q_heads"] = m.qHeads;
            o["kv_heads"] = m.kvHeads;
            o["head_dim"] = m.headDim;
            o["params"] = m.params;
            o["max_context"] = m.maxContext;
            o["kv_bytes_per_token"] = nativeBytesPerToken(m);
            a.emplace_back(std::move(o));
        }
        out << io::dumpJson(a) << "\n";
        return 0;
    }
    out << std::left << std::setw(24) << "id" << std::setw(16) << "family" << std::right
        << std::setw(7) << "layers" << std::setw(8) << "q" << std::setw(5) << "kv" << std::setw(6)
        << "hd" << std::setw(10) << "max ctx" << std::setw(14) << "KV/token"
        << "  notes\n";
    for (const auto& m : models) {
        out << std::left << std::setw(24) << m.id << std::setw(16) << m.family << std::right
            << std::setw(7) << m.numLayers() << std::setw(8) << m.qHeads << std::setw(5)
            << m.kvHeads << std::setw(6) << m.headDim << std::setw(10)
            << withThousands(m.maxContext) << std::setw(14) << withThousands(nativeBytesPerToken(m))
            << "  " << m.notes << "\n";
    }
    return 0;
}

int runGpus(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    const bool json = args.size() == 1 && args[0] == "--json";
    if (!args.empty() && !json) {
        err << "kvledger gpus: unknown option '" << args[0] << "'\n";
        return 2;
    }
    const auto& gpus = io::builtinGpus();
    if (json) {
        Json a = Json::array();
        for (const auto& g : gpus) {
            Json o = Json::object();
            o["id"] = g.id;
            o["name"] = g.name;
            o["vendor"] = g.vendor;
            o["memory_bytes"] = g.memoryBytes;
            o["bandwidth_gbs"] = g.bandwidthGBs;
            o["memory_type"] = g.memoryType;
            a.emplace_back(std::move(o));
        }
        out << io::dumpJson(a) << "\n";
        return 0;
    }
    out << std::left << std::setw(18) << "id" << std::setw(26) << "name" << std::right
        << std::setw(14) << "memory" << std::setw(18) << "bytes" << std::setw(12) << "GB/s"
        << "\n";
    for (const auto& g : gpus)
        out << std::left << std::setw(18) << g.id << std::setw(26) << g.name << std::right
            << std::setw(14) << formatBytes(g.memoryBytes) << std::setw(18)
            << withThousands(g.memoryBytes) << std::setw(12) << g.bandwidthGBs << "\n";
    return 0;
}

} // namespace

int runLedgerCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 bool& handled) {
    handled = true;
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
        out << kUsage << io::scenarioOptionsHelp();
        return 0;
    }
    if (args.empty()) {
        handled = false;
        return 0;
    }
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "ledger")
        return runLedger(rest, out, err);
    if (args[0] == "models")
        return runModels(rest, out, err);
    if (args[0] == "gpus")
        return runGpus(rest, out, err);
    handled = false;
    return 0;
}

} // namespace kvl::app
