#include "scenario_args.h"

#include "scenario_file.h"

#include "core/ledger.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

namespace kvl::io {

namespace {

using core::Scenario;

// Options that take a value, and the flags that do not.
const std::set<std::string, std::less<>> kValueOptions{"--model",
                                                       "--config",
                                                       "--layers",
                                                       "--attention",
                                                       "--kv-dtype",
                                                       "--kv-group-size",
                                                       "--kv-granularity",
                                                       "--block-size",
                                                       "--prefix-tokens",
                                                       "--prefix-requests",
                                                       "--context",
                                                       "--max-model-len",
                                                       "--gpu",
                                                       "--tp",
                                                       "--gpu-mem-util",
                                                       "--activation-gib",
                                                       "--overhead-gib",
                                                       "--kv-memory-gib",
                                                       "--kv-memory-bytes",
                                                       "--weight-dtype",
                                                       "--target-requests",
                                                       "--scenario",
                                                       "--max-num-batched-tokens"};
const std::set<std::string, std::less<>> kFlags{"--no-paging"};

Error err(const std::string& option, const std::string& what) {
    return Error{ErrorCode::BadInput, option + ": " + what};
}

std::optional<std::int64_t> parseInt(const std::string& text) {
    std::int64_t v = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if (first != last && *first == '+')
        ++first;
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || ptr != last || first == last)
        return std::nullopt;
    return v;
}

std::optional<double> parseDouble(const std::string& text) {
    if (text.empty())
        return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !std::isfinite(v))
        return std::nullopt;
    return v;
}

// Parses an integer in [lo, hi] or explains what was expected.
Result<std::int64_t> intIn(const std::string& opt, const std::string& text, std::int64_t lo,
                           std::int64_t hi) {
    const auto v = parseInt(text);
    if (!v)
        return err(opt, "expected a whole number, got '" + text + "'");
    if (*v < lo || *v > hi)
        return err(opt, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                            ", got " + text);
    return *v;
}

Result<double> doubleIn(const std::string& opt, const std::string& text, double lo, double hi,
                        bool loOpen) {
    const auto v = parseDouble(text);
    if (!v)
        return err(opt, "expected a number, got '" + text + "'");
    if ((loOpen ? *v <= lo : *v < lo) || *v > hi)
        return err(opt, "must be " + std::string(loOpen ? "above " : "at least ") +
                            std::to_string(lo) + " and at most " + std::to_string(hi) + ", got " +
                            text);
    return *v;
}

constexpr double kMaxGiB = 1024.0 * 1024.0; // 1 PiB

} // namespace

Result<ParsedArgs> parseScenarioArgs(const std::vector<std::string>& args,
                                     const core::Scenario& base) {
    ParsedArgs out;
    out.scenario = base;
    // Collect first, so that --scenario, then the model, then everything else apply in a
    // fixed order whatever order they were typed in.
    std::vector<std::pair<std::string, std::string>> opts;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string a = args[i];
        std::string value;
        bool hasInline = false;
        if (const auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = a.substr(eq + 1);
            a = a.substr(0, eq);
            hasInline = true;
        }
        if (kFlags.count(a)) {
            if (hasInline)
                return err(a, "takes no value");
            opts.emplace_back(a, "");
        } else if (kValueOptions.count(a)) {
            if (!hasInline) {
                if (i + 1 >= args.size())
                    return err(a, "needs a value");
                value = args[++i];
            }
            opts.emplace_back(a, value);
        } else {
            out.rest.push_back(args[i]);
        }
    }
    auto take = [&](std::string_view name) -> std::optional<std::string> {
        std::optional<std::string> v;
        for (const auto& [k, val] : opts)
            if (k == name)
                v = val; // the last one wins, as in most CLIs
        return v;
    };
    Scenario& s = out.scenario;

    if (auto path = take("--scenario")) {
        auto r = loadScenarioFile(*path);
        if (!r)
            return r.error().prefixed("--scenario");
        s = r.value();
    }
    const auto model = take("--model");
    const auto config = take("--config");
    if (model && config)
        return err("--model", "give either --model or --config, not both");
    if (model) {
        const core::ModelSpec* m = findModel(*model);
        if (!m)
            return err("--model", "unknown model '" + *model + "' (kvledger models lists them)");
        s.model = *m;
    }
    if (config) {
        auto r = loadHfConfigFile(*config);
        if (!r)
            return r.error();
        s.model = r.value();
    }

    for (const auto& [opt, v] : opts) {
        if (opt == "--scenario" || opt == "--model" || opt == "--config" || opt == "--layers")
            continue;
        if (opt == "--attention") {
            auto& a = s.levers.attention;
            if (v == "native") {
                a.enabled = false;
                a.mode = core::AttentionMode::Native;
            } else if (v == "mha") {
                a.enabled = true;
                a.mode = core::AttentionMode::Mha;
            } else if (v == "mqa") {
                a.enabled = true;
                a.mode = core::AttentionMode::Mqa;
            } else if (v.rfind("gqa:", 0) == 0) {
                auto g = intIn(opt, v.substr(4), 1, core::kMaxHeads);
                if (!g)
                    return g.error();
                a.enabled = true;
                a.mode = core::AttentionMode::Gqa;
                a.gqaKvHeads = static_cast<int>(g.value());
            } else {
                return err(opt, "expected native, mha, gqa:G or mqa, got '" + v + "'");
            }
        } else if (opt == "--kv-dtype") {
            if (v == "auto") {
                s.levers.quant.enabled = false;
            } else {
                const auto d = core::parseDtype(v);
                if (!d)
                    return err(opt, "expected auto, fp32, fp16, bf16, fp8, fp8_e4m3, fp8_e5m2, "
                                    "int8, int4 or int2, got '" +
                                        v + "'");
                s.levers.quant.enabled = true;
                s.levers.quant.format = core::KvFormat::defaultFor(*d);
            }
        } else if (opt == "--kv-group-size" || opt == "--kv-granularity") {
            // applied after the dtype, below
        } else if (opt == "--block-size") {
            auto b = intIn(opt, v, 1, 1 << 20);
            if (!b)
                return b.error();
            s.levers.paging.enabled = true;
            s.levers.paging.blockSize = static_cast<int>(b.value());
        } else if (opt == "--no-paging") {
            s.levers.paging.enabled = false;
        } else if (opt == "--prefix-tokens") {
            auto p = intIn(opt, v, 0, core::kMaxContext);
            if (!p)
                return p.error();
            s.levers.prefix.sharedTokens = p.value();
            s.levers.prefix.enabled = s.levers.prefix.sharedTokens > 0;
        } else if (opt == "--prefix-requests") {
            auto p = intIn(opt, v, 0, core::kMaxRequests);
            if (!p)
                return p.error();
            s.levers.prefix.sharingRequests = p.value();
        } else if (opt == "--context") {
            auto c = intIn(opt, v, 1, core::kMaxContext);
            if (!c)
                return c.error();
            s.workload.context = c.value();
        } else if (opt == "--max-model-len") {
            auto c = intIn(opt, v, 1, core::kMaxContext);
            if (!c)
                return c.error();
            s.workload.maxModelLen = c.value();
        } else if (opt == "--max-num-batched-tokens") {
            auto c = intIn(opt, v, 1, core::kMaxContext);
            if (!c)
                return c.error();
            s.workload.maxNumBatchedTokens = c.value();
        } else if (opt == "--target-requests") {
            auto c = intIn(opt, v, 0, core::kMaxRequests);
            if (!c)
                return c.error();
            s.workload.targetRequests = c.value();
        } else if (opt == "--gpu") {
            const core::GpuSpec* g = findGpu(v);
            if (!g)
                return err(opt, "unknown GPU '" + v + "' (kvledger gpus lists them)");
            s.hardware.gpu = *g;
        } else if (opt == "--tp") {
            auto c = intIn(opt, v, 1, core::kMaxGpus);
            if (!c)
                return c.error();
            s.hardware.gpuCount = static_cast<int>(c.value());
        } else if (opt == "--gpu-mem-util") {
            auto d = doubleIn(opt, v, 0.0, 1.0, true);
            if (!d)
                return d.error();
            s.hardware.memoryUtilization = d.value();
        } else if (opt == "--activation-gib" || opt == "--overhead-gib" ||
                   opt == "--kv-memory-gib") {
            auto d = doubleIn(opt, v, 0.0, kMaxGiB, false);
            if (!d)
                return d.error();
            const std::int64_t bytes = core::gibToBytes(d.value());
            if (opt == "--activation-gib")
                s.hardware.activationBytes = bytes;
            else if (opt == "--overhead-gib")
                s.hardware.overheadBytes = bytes;
            else
                s.hardware.kvMemoryBytes = bytes;
        } else if (opt == "--kv-memory-bytes") {
            auto c = intIn(opt, v, 0, std::int64_t{1} << 50);
            if (!c)
                return c.error();
            s.hardware.kvMemoryBytes = c.value();
        } else if (opt == "--weight-dtype") {
            const auto w = core::parseWeightDtype(v);
            if (!w)
                return err(opt, "expected fp16, bf16, fp8, int8 or int4, got '" + v + "'");
            s.hardware.weightDtype = *w;
        }
    }
    if (take("--kv-memory-gib") && take("--kv-memory-bytes"))
        return err("--kv-memory-gib", "give either --kv-memory-gib or --kv-memory-bytes, not both");
    if (take("--no-paging") && take("--block-size"))
        return err("--no-paging", "give either --no-paging or --block-size, not both");
    if (auto g = take("--kv-granularity")) {
        const auto gr = core::parseGranularity(*g);
        if (!gr)
            return err(
                "--kv-granularity",
                "expected none, per-tensor, per-head, per-token-head, per-group or kivi, got '" +
                    *g + "'");
        s.levers.quant.format.granularity = *gr;
        if ((*gr == core::Granularity::PerGroup ||
             *gr == core::Granularity::KPerChannelVPerToken)) {
            s.levers.quant.format.hasZeroPoint = true;
            s.levers.quant.format.scaleType = core::ScaleType::Fp16;
            if (s.levers.quant.format.groupSize <= 0)
                s.levers.quant.format.groupSize = 128;
        }
    }
    if (auto g = take("--kv-group-size")) {
        auto c = intIn("--kv-group-size", *g, 1, 4096);
        if (!c)
            return c.error();
        s.levers.quant.format.groupSize = static_cast<int>(c.value());
    }
    if (auto n = take("--layers")) {
        auto c = intIn("--layers", *n, 1, core::kMaxLayers);
        if (!c)
            return c.error();
        s.model = core::withLayerCount(s.model, static_cast<int>(c.value()));
    }
    return out;
}

std::string scenarioOptionsHelp() {
    return R"(Scenario options (defaults: Llama-3-8B on an H100 80GB, vLLM defaults):
  --model ID | --config PATH   a catalog model (kvledger models) or a HuggingFace config.json
  --scenario FILE              start from a saved scenario (.kvl.json)
  --layers N                   override the layer count (e.g. +1 for a draft layer)
  --attention MODE             native | mha | gqa:G (G KV heads) | mqa
  --kv-dtype D                 auto | fp32 | fp16 | bf16 | fp8 | fp8_e4m3 | fp8_e5m2 | int8 | int4 | int2
  --kv-granularity G           per-tensor | per-head | per-token-head | per-group | kivi
  --kv-group-size N            group size for per-group and kivi formats
  --block-size N | --no-paging paged KV with N tokens per block (16), or contiguous reservation
  --prefix-tokens N            shared prompt prefix (full blocks are stored once)
  --prefix-requests N          requests sharing one prefix copy (0 = all)
  --context N                  tokens per request (32768)
  --max-model-len N            vLLM --max-model-len (default: the model's maximum)
  --max-num-batched-tokens N   scheduler budget used by sliding-window slack (8192)
  --gpu ID  --tp N             GPU (kvledger gpus) and tensor-parallel size
  --gpu-mem-util F             fraction of GPU memory vLLM may use (0.9)
  --activation-gib F           peak activation reserve per GPU (4.76)
  --overhead-gib F             non-torch memory per GPU (0.13)
  --kv-memory-gib F | --kv-memory-bytes N   fix the KV pool per GPU (vLLM kv_cache_memory_bytes)
  --weight-dtype D             fp16 | bf16 | fp8 | int8 | int4 (weights lever)
  --target-requests N          also answer: how many GPUs hold N requests at the context
)";
}

} // namespace kvl::io
