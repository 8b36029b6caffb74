#include "scenario_args.h"

#include "catalog.h"
#include "json.h"
#include "scenario_file.h"

#include "core/engine.h"
#include "core/ledger.h"
#include "core/llamacpp/ggml_types.h"
#include "core/names.h"
#include "core/units.h"
#include "core/vllm_command.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <type_traits>

namespace kvl::io {

namespace {

using core::Scenario;

Error bad(std::string message) {
    return makeError(ErrorCode::BadInput, std::move(message));
}

// The catalogs' ids, for "did you mean".
std::vector<std::string> modelIds() {
    std::vector<std::string> ids;
    for (const auto& m : builtinModels())
        ids.push_back(m.id);
    return ids;
}

std::vector<std::string> gpuIds() {
    std::vector<std::string> ids;
    for (const auto& g : builtinGpus())
        ids.push_back(g.id);
    return ids;
}

kvl::Result<std::int64_t> intIn(const std::string& text, std::int64_t lo, std::int64_t hi) {
    std::int64_t v = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    if (first != last && *first == '+')
        ++first;
    const auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::result_out_of_range)
        return bad("must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                   ", got " + text);
    if (ec != std::errc() || ptr != last || first == last)
        return bad("expected a whole number, got '" + text + "'");
    if (v < lo || v > hi)
        return bad("must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                   ", got " + text);
    return v;
}

// At most two decimals, no trailing zeros: 0.9, 4.76, 1048576.
std::string shortNumber(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    std::string s = buf;
    while (s.back() == '0')
        s.pop_back();
    if (s.back() == '.')
        s.pop_back();
    return s;
}

// A finite number in (lo, hi] (loOpen) or [lo, hi].
kvl::Result<double> numberIn(const std::string& text, double lo, double hi, bool loOpen) {
    char* end = nullptr;
    const double v = text.empty() ? 0.0 : std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
        return bad("expected a number, got '" + text + "'");
    if ((loOpen ? v <= lo : v < lo) || v > hi)
        return bad("must be " + std::string(loOpen ? "above " : "at least ") + shortNumber(lo) +
                   " and at most " + shortNumber(hi) + ", got " + text);
    return v;
}

template <class Field>
Status setInt(const std::string& text, std::int64_t lo, std::int64_t hi, Field& field) {
    auto v = intIn(text, lo, hi);
    if (!v)
        return v.error();
    field = static_cast<Field>(*v);
    return {};
}

// A token count as the window's token boxes read it: 8192, 32K, 1.5K, 1M (core::parseTokenCount).
Status setTokens(const std::string& text, std::int64_t lo, std::int64_t hi, std::int64_t& field) {
    const auto v = core::parseTokenCount(text);
    if (!v) {
        // "-5" and "lots" read as what they are, not as a range
        if (auto n = intIn(text, lo, hi); !n)
            return n.error().message.starts_with("must")
                       ? n.error()
                       : bad("expected a token count such as 8192, 32K or 1M, got '" + text + "'");
        return bad("expected a token count such as 8192, 32K or 1M, got '" + text + "'");
    }
    if (*v < lo || *v > hi)
        return bad("must be between " + core::withThousands(lo) + " and " +
                   core::withThousands(hi) + ", got " + text);
    field = *v;
    return {};
}

// A size in GiB into bytes; `field` is a plain or an optional count of bytes.
template <class Field> Status setGiB(const std::string& text, Field& field) {
    constexpr double kMaxGiB = 1024.0 * 1024.0; // 1 PiB
    auto v = numberIn(text, 0.0, kMaxGiB, false);
    if (!v)
        return v.error();
    field = core::gibToBytes(*v);
    return {};
}

// A fraction above 0 and at most 1 (the memory fractions); `field` is plain or optional.
template <class Field> Status setFraction(const std::string& text, Field& field) {
    auto f = numberIn(text, 0.0, 1.0, true);
    if (!f)
        return f.error();
    field = *f;
    return {};
}

int formatDim(const core::ModelSpec& m) {
    return m.isMla() ? m.mlaLatentDim() : m.headDim;
}

std::string attentionName(const core::AttentionLever& a) {
    if (!a.enabled)
        return "native";
    switch (a.mode) {
    case core::AttentionMode::Native:
        return "native";
    case core::AttentionMode::Mha:
        return "mha";
    case core::AttentionMode::Gqa:
        return "gqa:" + std::to_string(a.gqaKvHeads);
    case core::AttentionMode::Mqa:
        return "mqa";
    }
    return "native";
}

std::string dtypeChoices() {
    std::string out = "auto";
    for (const auto d : core::allDtypes())
        out += ", " + std::string(core::dtypeName(d));
    for (const auto& name : core::vllmCacheDtypeNames())
        if (name != "auto")
            out += ", " + name;
    return out;
}

// "auto" or a whole number in [lo, hi]; auto is 0, vLLM's own choice.
Status setIntOrAuto(const std::string& text, std::int64_t lo, std::int64_t hi,
                    std::int64_t& field) {
    if (text == "auto") {
        field = 0;
        return {};
    }
    return setInt(text, lo, hi, field);
}

std::string reserveDefault(const Scenario& b, bool activation) {
    const auto r = core::computeLedger(b);
    const std::int64_t used = activation ? r.activationBytes : r.overheadBytes;
    const auto& given = activation ? b.hardware.activationBytes : b.hardware.overheadBytes;
    return given ? shortNumber(core::bytesToGiB(used))
                 : "estimated from the model, " + shortNumber(core::bytesToGiB(used)) + " here";
}

// llama.cpp's -ctk / -ctv: one cache type, read into and shown from `Field` (typeK or typeV).
template <core::GgmlKvType core::LlamaCppOptions::*Field>
std::string ggmlTypeDefault(const Scenario& b) {
    return std::string(core::llamacpp::ggmlKvTypeName(b.engine.llamacpp.*Field));
}

template <core::GgmlKvType core::LlamaCppOptions::*Field>
Status setGgmlType(Scenario& s, const std::string& v) {
    const auto t = core::llamacpp::parseGgmlKvType(v);
    if (!t)
        return bad("expected f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0 or q5_1, got '" + v +
                   "'");
    s.engine.llamacpp.*Field = *t;
    return {};
}

// Most rows read or set one scenario field. A row names that field once, as an accessor such
// as [](auto& s) -> auto& { return s.workload.context; } (one lambda serves the const base and
// the scenario being built), and these make the row's defaultOf and apply from it, the range
// as template arguments. A captureless lambda's type is default-constructible (C++20), so
// Field{} is the accessor again and what these return converts to the rows' plain function
// pointers. Rows that do more than read or set their field keep their own lambdas.
template <class Field> constexpr auto defaultInt(Field) {
    return [](const Scenario& b) { return std::to_string(Field{}(b)); };
}

// 0 is "auto": the engine's own choice, shown as what it comes to for the base scenario where
// `effective` (a function of the scenario) says.
template <auto effective = nullptr, class Field> constexpr auto defaultIntOrAuto(Field) {
    return [](const Scenario& b) {
        if (Field{}(b) > 0)
            return std::to_string(Field{}(b));
        if constexpr (std::is_null_pointer_v<decltype(effective)>)
            return std::string("auto");
        else
            return "auto, " + std::to_string(effective(b)) + " here";
    };
}

template <std::int64_t lo, std::int64_t hi, class Field> constexpr auto applyInt(Field) {
    return [](Scenario& s, const std::string& v) { return setInt(v, lo, hi, Field{}(s)); };
}

template <std::int64_t lo, std::int64_t hi, class Field> constexpr auto applyIntOrAuto(Field) {
    return [](Scenario& s, const std::string& v) { return setIntOrAuto(v, lo, hi, Field{}(s)); };
}

template <std::int64_t lo, std::int64_t hi, class Field> constexpr auto applyTokens(Field) {
    return [](Scenario& s, const std::string& v) { return setTokens(v, lo, hi, Field{}(s)); };
}

template <class Field> constexpr auto applyGiB(Field) {
    return [](Scenario& s, const std::string& v) { return setGiB(v, Field{}(s)); };
}

template <class Field> constexpr auto applyFraction(Field) {
    return [](Scenario& s, const std::string& v) { return setFraction(v, Field{}(s)); };
}

// A flag: giving it sets the field to `value`.
template <bool value = true, class Field> constexpr auto applyFlag(Field) {
    return [](Scenario& s, const std::string&) -> Status {
        Field{}(s) = value;
        return {};
    };
}

// A whole number in [lo, hi] whose default is the base scenario's value.
template <std::int64_t lo, std::int64_t hi, class Field>
constexpr ScenarioOption intOption(std::string_view name, std::string_view help, Field field) {
    return {.name = name,
            .valueName = "N",
            .help = help,
            .defaultOf = defaultInt(field),
            .apply = applyInt<lo, hi>(field)};
}

// "auto" or a whole number in [lo, hi], as defaultIntOrAuto shows it.
template <std::int64_t lo, std::int64_t hi, auto effective = nullptr, class Field>
constexpr ScenarioOption intOrAutoOption(std::string_view name, std::string_view help,
                                         Field field) {
    return {.name = name,
            .valueName = "N",
            .help = help,
            .defaultOf = defaultIntOrAuto<effective>(field),
            .apply = applyIntOrAuto<lo, hi>(field)};
}

template <bool value = true, class Field>
constexpr ScenarioOption flagOption(std::string_view name, std::string_view help, Field field) {
    return {.name = name, .help = help, .apply = applyFlag<value>(field)};
}

// One row per option. A row says what the option sets, its range and its default; the
// parser, the help and the README's option list all come from here.
const std::array kOptions{
    ScenarioOption{.name = "scenario",
                   .valueName = "FILE",
                   .help = "start from a saved scenario (.kvl.json); the other options change it",
                   .apply = [](Scenario& s, const std::string& path) -> Status {
                       auto r = loadScenarioFile(path);
                       if (!r)
                           return r.error();
                       s = *r;
                       return {};
                   },
                   .phase = OptionPhase::Start},
    ScenarioOption{.name = "model",
                   .valueName = "ID",
                   .help = "a catalog model (kvledger models lists them)",
                   .defaultOf = [](const Scenario& b) { return b.model.id; },
                   .apply = [](Scenario& s, const std::string& id) -> Status {
                       const core::ModelSpec* m = findModel(id);
                       if (!m)
                           return makeError(ErrorCode::NotFound,
                                            "unknown model '" + id + "'" +
                                                core::didYouMean(id, modelIds()) +
                                                " (kvledger models lists them)");
                       s.model = *m;
                       return {};
                   },
                   .phase = OptionPhase::Model},
    ScenarioOption{.name = "config",
                   .valueName = "PATH",
                   .help = "a HuggingFace config.json instead of a catalog model",
                   .apply = [](Scenario& s, const std::string& path) -> Status {
                       auto r = loadHfConfigFile(path);
                       if (!r)
                           return r.error();
                       s.model = *r;
                       return {};
                   },
                   .phase = OptionPhase::Model,
                   .excludes = "model"},
    ScenarioOption{.name = "attention",
                   .valueName = "MODE",
                   .help = "KV heads what-if: native, mha, gqa:G (G KV heads) or mqa",
                   .defaultOf = [](const Scenario& b) { return attentionName(b.levers.attention); },
                   .apply = [](Scenario& s, const std::string& v) -> Status {
                       auto& a = s.levers.attention;
                       if (v == "native") {
                           a.enabled = false;
                           a.mode = core::AttentionMode::Native;
                       } else if (v == "mha" || v == "mqa") {
                           a.enabled = true;
                           a.mode =
                               v == "mha" ? core::AttentionMode::Mha : core::AttentionMode::Mqa;
                       } else if (v.rfind("gqa:", 0) == 0) {
                           auto g = intIn(v.substr(4), 1, core::kMaxHeads);
                           if (!g)
                               return g.error();
                           a.enabled = true;
                           a.mode = core::AttentionMode::Gqa;
                           a.gqaKvHeads = static_cast<int>(*g);
                       } else {
                           return bad("expected native, mha, gqa:G or mqa, got '" + v + "'");
                       }
                       return {};
                   }},
    ScenarioOption{
        .name = "kv-dtype",
        .valueName = "D",
        .help = "KV cache format: auto (the model's), vLLM's --kv-cache-dtype names (fp8, "
                "fp8_e5m2, int8_per_token_head, fp8_per_token_head, int4_per_token_head, nvfp4, "
                "fp8_ds_mla, bfloat16, float16) or KV Ledger's what-ifs (fp32, fp16, bf16, int8, "
                "int4, int2)",
        .defaultOf =
            [](const Scenario& b) {
                return b.levers.quant.enabled
                           ? std::string(core::dtypeName(b.levers.quant.format.dtype))
                           : std::string("auto");
            },
        .apply = [](Scenario& s, const std::string& v) -> Status {
            if (v == "auto") {
                s.levers.quant.enabled = false;
                return {};
            }
            // KV Ledger's own names first (int8 is vLLM's int8_per_token_head byte for byte),
            // then vLLM's.
            if (const auto d = core::parseDtype(v)) {
                s.levers.quant.enabled = true;
                s.levers.quant.format = core::KvFormat::defaultFor(*d);
                return {};
            }
            auto f = core::formatForVllmCacheDtype(v, s.model);
            if (!f) {
                if (f.error().code == ErrorCode::BadInput)
                    return bad("expected " + dtypeChoices() + ", got '" + v + "'");
                return makeError(f.error().code,
                                 f.error().message.substr(f.error().message.find(": ") + 2));
            }
            s.levers.quant.enabled = true;
            s.levers.quant.format = *f;
            return {};
        },
        .phase = OptionPhase::Scenario},
    ScenarioOption{
        .name = "block-size",
        .valueName = "N",
        .help = "paged KV with N tokens per block (vLLM --block-size); auto = the block size "
                "vLLM picks for the model and GPU",
        .defaultOf = defaultIntOrAuto([](auto& s) -> auto& { return s.levers.paging.blockSize; }),
        .apply = [](Scenario& s, const std::string& v) -> Status {
            s.levers.paging.enabled = true;
            std::int64_t n = 0;
            if (auto st = setIntOrAuto(v, 1, 1 << 20, n); !st)
                return st;
            s.levers.paging.blockSize = static_cast<int>(n);
            return {};
        }},
    ScenarioOption{.name = "no-paging",
                   .help = "contiguous KV: every request reserves max-model-len up front",
                   .apply =
                       applyFlag<false>([](auto& s) -> auto& { return s.levers.paging.enabled; }),
                   .excludes = "block-size"},
    ScenarioOption{.name = "prefix-tokens",
                   .valueName = "N",
                   .help = "a shared prompt prefix (2048 or 2K); its full blocks are stored once",
                   .defaultOf =
                       [](const Scenario& b) {
                           return std::to_string(
                               b.levers.prefix.enabled ? b.levers.prefix.sharedTokens : 0);
                       },
                   .apply = [](Scenario& s, const std::string& v) -> Status {
                       auto st = setTokens(v, 0, core::kMaxContext, s.levers.prefix.sharedTokens);
                       s.levers.prefix.enabled = s.levers.prefix.sharedTokens > 0;
                       return st;
                   }},
    intOption<0, core::kMaxRequests>(
        "prefix-requests", "requests sharing one prefix copy, 0 = all",
        [](auto& s) -> auto& { return s.levers.prefix.sharingRequests; }),
    ScenarioOption{.name = "context",
                   .valueName = "N",
                   .help = "tokens per request (8192, 32K or 1M); at most the max model len",
                   .defaultOf = defaultInt([](auto& s) -> auto& { return s.workload.context; }),
                   .apply = applyTokens<1, core::kMaxContext>(
                       [](auto& s) -> auto& { return s.workload.context; })},
    ScenarioOption{.name = "max-model-len",
                   .valueName = "N",
                   .help = "vLLM --max-model-len (8192, 128K or 1M)",
                   .defaultOf =
                       [](const Scenario& b) {
                           return b.workload.maxModelLen > 0
                                      ? std::to_string(b.workload.maxModelLen)
                                      : std::string("the model's maximum");
                       },
                   .apply = applyTokens<1, core::kMaxContext>(
                       [](auto& s) -> auto& { return s.workload.maxModelLen; })},
    intOrAutoOption<1, core::kMaxContext, core::effectiveMaxNumBatchedTokens>(
        "max-num-batched-tokens",
        "vLLM --max-num-batched-tokens: tokens per scheduler step, which sizes what "
        "sliding and chunked layers keep in flight; auto = vLLM's default for the GPU",
        [](auto& s) -> auto& { return s.workload.maxNumBatchedTokens; }),
    intOrAutoOption<1, core::kMaxRequests, core::effectiveMaxNumSeqs>(
        "max-num-seqs",
        "vLLM --max-num-seqs: running requests per replica; auto = vLLM's default for "
        "the GPU",
        [](auto& s) -> auto& { return s.engine.maxNumSeqs; }),
    flagOption(
        "disable-hybrid-kv-cache-manager",
        "vLLM --disable-hybrid-kv-cache-manager: sliding and chunked layers "
        "keep every token, as full attention does",
        [](auto& s) -> auto& { return s.engine.disableHybridKvCacheManager; }),
    flagOption(
        "allow-chunked-local-hybrid",
        "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1: keep the hybrid "
        "KV cache manager for chunked local attention (Llama-4) in vLLM "
        "0.10.1-0.12, which disable it by default",
        [](auto& s) -> auto& { return s.engine.allowChunkedLocalHybrid; }),
    flagOption<false>(
        "no-async-scheduling", "vLLM --no-async-scheduling: one batch in flight instead of two",
        [](auto& s) -> auto& { return s.engine.asyncScheduling; }),
    ScenarioOption{.name = "vllm-version",
                   .valueName = "X.Y[.Z]",
                   .help = "the vLLM release to follow (0.10 and later): its log lines, defaults "
                           "and KV cache rules",
                   .defaultOf =
                       [](const Scenario& b) {
                           return core::vllmRules(b.engine.vllmVersion).version.series();
                       },
                   .apply = [](Scenario& s, const std::string& v) -> Status {
                       auto parsed = core::parseVllmVersion(v);
                       if (!parsed)
                           return parsed.error();
                       s.engine.vllmVersion = *parsed;
                       return {};
                   }},
    ScenarioOption{.name = "mamba-cache-mode",
                   .valueName = "M",
                   .help = "vLLM --mamba-cache-mode for hybrids: none, align or all (auto = "
                           "align, with prefix caching on)",
                   .defaultOf = [](const Scenario&) { return std::string("auto"); },
                   .apply = [](Scenario& s, const std::string& v) -> Status {
                       const auto& names = core::kMambaCacheModeNames;
                       const auto it = std::find(names.begin(), names.end(), v);
                       if (it == names.end())
                           return bad("expected auto, none, align or all, got '" + v + "'");
                       s.engine.mambaCacheMode =
                           static_cast<core::MambaCacheMode>(it - names.begin());
                       return {};
                   }},
    ScenarioOption{.name = "mamba-ssm-cache-dtype",
                   .valueName = "D",
                   .help = "vLLM --mamba-ssm-cache-dtype: auto, float32, bfloat16 or float16",
                   .defaultOf = [](const Scenario&) { return std::string("auto"); },
                   .apply = [](Scenario& s, const std::string& v) -> Status {
                       if (v == "auto") {
                           s.engine.mambaSsmCacheDtype.reset();
                           return {};
                       }
                       const auto d = core::parseDtype(v);
                       if (!d || core::isQuantized(*d))
                           return bad("expected auto, float32, bfloat16 or float16, got '" + v +
                                      "'");
                       s.engine.mambaSsmCacheDtype = *d;
                       return {};
                   }},
    intOrAutoOption<1, core::kMaxRequests>(
        "concurrency",
        "running requests for the speed estimate; auto = as many as fit (at most "
        "max-num-seqs)",
        [](auto& s) -> auto& { return s.workload.concurrency; }),
    ScenarioOption{.name = "gpu",
                   .valueName = "ID",
                   .help = "a catalog GPU (kvledger gpus lists them)",
                   .defaultOf = [](const Scenario& b) { return b.hardware.gpu.id; },
                   .apply = [](Scenario& s, const std::string& id) -> Status {
                       const core::GpuSpec* g = findGpu(id);
                       if (!g)
                           return makeError(ErrorCode::NotFound,
                                            "unknown GPU '" + id + "'" +
                                                core::didYouMean(id, gpuIds()) +
                                                " (kvledger gpus lists them)");
                       s.hardware.gpu = *g;
                       return {};
                   }},
    intOption<1, core::kMaxGpus>(
        "tp", "tensor-parallel size (vLLM --tensor-parallel-size)",
        [](auto& s) -> auto& { return s.hardware.gpuCount; }),
    intOption<1, core::kMaxGpus>(
        "pp", "pipeline-parallel size (vLLM --pipeline-parallel-size)",
        [](auto& s) -> auto& { return s.hardware.pipelineParallel; }),
    intOption<1, core::kMaxGpus>(
        "dp", "data-parallel replicas (vLLM --data-parallel-size)",
        [](auto& s) -> auto& { return s.hardware.dataParallel; }),
    flagOption(
        "enable-expert-parallel", "vLLM --enable-expert-parallel: experts spread over TP x DP GPUs",
        [](auto& s) -> auto& { return s.hardware.expertParallel; }),
    intOption<1, core::kMaxGpus>(
        "dcp", "decode-context-parallel size (vLLM --decode-context-parallel-size)",
        [](auto& s) -> auto& { return s.hardware.decodeContextParallel; }),
    ScenarioOption{
        .name = "gpu-mem-util",
        .valueName = "F",
        .help = "fraction of GPU memory vLLM may use (--gpu-memory-utilization)",
        .defaultOf = [](const Scenario& b) { return shortNumber(core::gpuMemoryUtilization(b)); },
        .apply = applyFraction([](auto& s) -> auto& { return s.hardware.memoryUtilization; })},
    ScenarioOption{.name = "activation-gib",
                   .valueName = "F",
                   .help = "peak activation memory per GPU, GiB",
                   .defaultOf = [](const Scenario& b) { return reserveDefault(b, true); },
                   .apply = applyGiB([](auto& s) -> auto& { return s.hardware.activationBytes; })},
    ScenarioOption{.name = "overhead-gib",
                   .valueName = "F",
                   .help = "non-torch memory and CUDA graphs per GPU, GiB",
                   .defaultOf = [](const Scenario& b) { return reserveDefault(b, false); },
                   .apply = applyGiB([](auto& s) -> auto& { return s.hardware.overheadBytes; })},
    ScenarioOption{.name = "cuda-graph-gib",
                   .valueName = "F",
                   .help = "CUDA graphs' memory in vLLM's profile per GPU, GiB; 0 = off "
                           "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)",
                   .defaultOf =
                       [](const Scenario& b) {
                           const auto r = core::computeLedger(b);
                           return b.hardware.cudaGraphBytes
                                      ? shortNumber(core::bytesToGiB(r.cudaGraphBytes))
                                      : "the release's estimate, " +
                                            shortNumber(core::bytesToGiB(r.cudaGraphBytes)) +
                                            " here";
                       },
                   .apply = applyGiB([](auto& s) -> auto& { return s.hardware.cudaGraphBytes; })},
    ScenarioOption{.name = "kv-memory-gib",
                   .valueName = "F",
                   .help = "fix the KV pool per GPU, GiB (vLLM kv_cache_memory_bytes)",
                   .apply = applyGiB([](auto& s) -> auto& { return s.hardware.kvMemoryBytes; })},
    ScenarioOption{.name = "kv-memory-bytes",
                   .valueName = "N",
                   .help = "fix the KV pool per GPU, bytes",
                   .apply = applyInt<0, std::int64_t{1} << 50>(
                       [](auto& s) -> auto& { return s.hardware.kvMemoryBytes; }),
                   .excludes = "kv-memory-gib"},
    ScenarioOption{.name = "weight-dtype",
                   .valueName = "D",
                   .help = "weights lever: fp32, fp16, bf16, fp8, int8, int4 or fp4",
                   .defaultOf =
                       [](const Scenario& b) {
                           return b.hardware.weightDtype
                                      ? std::string(core::weightDtypeName(*b.hardware.weightDtype))
                                      : std::string("the model's");
                       },
                   .apply = [](Scenario& s, const std::string& v) -> Status {
                       const auto w = core::parseWeightDtype(v);
                       if (!w)
                           return bad("expected fp32, fp16, bf16, fp8, int8, int4 or fp4, got '" +
                                      v + "'");
                       s.hardware.weightDtype = *w;
                       return {};
                   }},
    ScenarioOption{.name = "target-requests",
                   .valueName = "N",
                   .help = "also answer how many GPUs hold N requests at the context",
                   .apply = applyInt<0, core::kMaxRequests>(
                       [](auto& s) -> auto& { return s.workload.targetRequests; })},
    ScenarioOption{
        .name = "kv-granularity",
        .valueName = "G",
        .help = "KV scale granularity: per-tensor, per-head, per-token-head, per-group or kivi",
        .apply = [](Scenario& s, const std::string& v) -> Status {
            const auto g = core::parseGranularity(v);
            if (!g)
                return bad("expected none, per-tensor, per-head, per-token-head, per-group or "
                           "kivi, got '" +
                           v + "'");
            s.levers.quant.format =
                core::withGranularity(s.levers.quant.format, *g, formatDim(s.model));
            return {};
        },
        .phase = OptionPhase::Refine},
    ScenarioOption{.name = "kv-group-size",
                   .valueName = "N",
                   .help = "elements per scale group (per-group and kivi)",
                   .defaultOf =
                       [](const Scenario&) {
                           const auto g = [](core::Granularity gr) {
                               return std::to_string(core::withGranularity({}, gr, 0).groupSize);
                           };
                           return g(core::Granularity::PerGroup) + " per-group, " +
                                  g(core::Granularity::KPerChannelVPerToken) +
                                  " kivi, at most head_dim";
                       },
                   .apply = applyInt<1, 4096>(
                       [](auto& s) -> auto& { return s.levers.quant.format.groupSize; }),
                   .phase = OptionPhase::Refine},
    ScenarioOption{.name = "layers",
                   .valueName = "N",
                   .help = "override the model's layer count (its layer pattern repeats)",
                   .apply = [](Scenario& s, const std::string& v) -> Status {
                       int n = 0;
                       if (auto st = setInt(v, 1, core::kMaxLayers, n); !st)
                           return st;
                       s.model = core::withLayerCount(s.model, n);
                       return {};
                   },
                   .phase = OptionPhase::Refine},
    ScenarioOption{
        .name = "engine",
        .valueName = "E",
        .help = "the engine whose rules size the KV pool: vllm, sglang, trtllm or llamacpp",
        .defaultOf = [](const Scenario& b) { return std::string(core::engineName(b.engine.kind)); },
        .apply = [](Scenario& s, const std::string& v) -> Status {
            const auto e = core::parseEngine(v);
            if (!e)
                return bad("expected vllm, sglang, trtllm or llamacpp, got '" + v + "'");
            s.engine.kind = *e;
            return {};
        }},
    intOption<0, core::kMaxContext>(
        "ctx-size", "llama.cpp -c: context cells; 0 = the model's training context",
        [](auto& s) -> auto& { return s.engine.llamacpp.nCtx; }),
    intOption<1, 4096>(
        "parallel", "llama.cpp -np: sequences (slots) the cache holds",
        [](auto& s) -> auto& { return s.engine.llamacpp.nParallel; }),
    flagOption(
        "kv-unified", "llama.cpp --kv-unified: one KV stream shared by every sequence",
        [](auto& s) -> auto& { return s.engine.llamacpp.kvUnified; }),
    ScenarioOption{.name = "cache-type-k",
                   .valueName = "T",
                   .help = "llama.cpp -ctk: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1",
                   .defaultOf = ggmlTypeDefault<&core::LlamaCppOptions::typeK>,
                   .apply = setGgmlType<&core::LlamaCppOptions::typeK>},
    ScenarioOption{.name = "cache-type-v",
                   .valueName = "T",
                   .help = "llama.cpp -ctv: the same types as -ctk",
                   .defaultOf = ggmlTypeDefault<&core::LlamaCppOptions::typeV>,
                   .apply = setGgmlType<&core::LlamaCppOptions::typeV>},
    flagOption(
        "swa-full", "llama.cpp --swa-full: sliding layers keep the whole context",
        [](auto& s) -> auto& { return s.engine.llamacpp.swaFull; }),
    intOption<1, 1 << 20>(
        "ubatch-size", "llama.cpp -ub: the micro-batch the SWA cache keeps beyond the window",
        [](auto& s) -> auto& { return s.engine.llamacpp.nUbatch; }),
    ScenarioOption{.name = "mem-fraction-static",
                   .valueName = "F",
                   .help = "SGLang --mem-fraction-static; auto = SGLang's default for the GPU",
                   .defaultOf = [](const Scenario&) { return std::string("auto"); },
                   .apply = [](Scenario& s, const std::string& v) -> Status {
                       if (v == "auto") {
                           s.engine.sglang.memFractionStatic.reset();
                           return {};
                       }
                       return setFraction(v, s.engine.sglang.memFractionStatic);
                   }},
    intOption<0, core::kMaxContext>(
        "max-total-tokens", "SGLang --max-total-tokens: a cap on the token pool; 0 = none",
        [](auto& s) -> auto& { return s.engine.sglang.maxTotalTokens; }),
    intOption<1, 1 << 20>(
        "page-size", "SGLang --page-size: the pool is rounded down to whole pages",
        [](auto& s) -> auto& { return s.engine.sglang.pageSize; }),
    intOption<0, core::kMaxContext>(
        "chunked-prefill-size", "SGLang --chunked-prefill-size; 0 = SGLang's default for the GPU",
        [](auto& s) -> auto& { return s.engine.sglang.chunkedPrefillSize; }),
    intOption<0, 1 << 20>(
        "cuda-graph-max-bs", "SGLang --cuda-graph-max-bs; 0 = SGLang's default for the GPU",
        [](auto& s) -> auto& { return s.engine.sglang.cudaGraphMaxBs; }),
    ScenarioOption{.name = "swa-full-tokens-ratio",
                   .valueName = "F",
                   .help = "SGLang --swa-full-tokens-ratio: sliding-layer tokens per full-layer "
                           "token (default 0.8)",
                   .apply = applyFraction(
                       [](auto& s) -> auto& { return s.engine.sglang.swaFullTokensRatio; })},
    ScenarioOption{
        .name = "free-before-load-gib",
        .valueName = "X",
        .help = "SGLang: free GPU memory before the weights load (its 'Load weight "
                "begin. avail mem'); default the GPU's memory less 0.5 GiB",
        .apply = applyGiB([](auto& s) -> auto& { return s.engine.sglang.freeBeforeLoadBytes; })},
    ScenarioOption{
        .name = "free-after-load-gib",
        .valueName = "X",
        .help = "SGLang: free GPU memory after the weights load (its 'Load weight "
                "end. avail mem'); default the memory before less the weights",
        .apply = applyGiB([](auto& s) -> auto& { return s.engine.sglang.freeAfterLoadBytes; })},
    ScenarioOption{
        .name = "free-gpu-memory-fraction",
        .valueName = "F",
        .help = "TensorRT-LLM kv_cache_config.free_gpu_memory_fraction",
        .defaultOf =
            [](const Scenario& b) { return shortNumber(b.engine.trtllm.freeGpuMemoryFraction); },
        .apply =
            applyFraction([](auto& s) -> auto& { return s.engine.trtllm.freeGpuMemoryFraction; })},
    intOption<0, core::kMaxContext>(
        "max-tokens", "TensorRT-LLM kv_cache_config.max_tokens: a cap on the pool; 0 = none",
        [](auto& s) -> auto& { return s.engine.trtllm.maxTokens; }),
    intOption<1, 1 << 20>(
        "tokens-per-block", "TensorRT-LLM kv_cache_config.tokens_per_block",
        [](auto& s) -> auto& { return s.engine.trtllm.tokensPerBlock; }),
    ScenarioOption{.name = "peak-memory-gib",
                   .valueName = "X",
                   .help = "TensorRT-LLM: the profiling run's peak less its own KV; default "
                           "KV Ledger's estimate (weights + reserves)",
                   .apply =
                       applyGiB([](auto& s) -> auto& { return s.engine.trtllm.peakMemoryBytes; })},
};

} // namespace

std::span<const ScenarioOption> scenarioOptions() {
    return kOptions;
}

const ScenarioOption* findScenarioOption(std::string_view name) {
    for (const auto& o : kOptions)
        if (o.name == name)
            return &o;
    return nullptr;
}

std::string scenarioOptionDescription(const ScenarioOption& option, const core::Scenario& base) {
    std::string d(option.help);
    if (option.defaultOf)
        d += " (default " + option.defaultOf(base) + ")";
    return d;
}

kvl::Result<core::Scenario> applyScenarioOptions(const std::vector<GivenOption>& given,
                                                 const core::Scenario& base) {
    std::map<std::string_view, const std::string*> last;
    for (const auto& g : given) {
        const ScenarioOption* o = findScenarioOption(g.name);
        if (!o)
            return bad("--" + g.name + ": not a scenario option");
        last[o->name] = &g.value;
    }
    for (const auto& o : kOptions)
        if (!o.excludes.empty() && last.count(o.name) && last.count(o.excludes))
            return bad("--" + std::string(o.name) + ": give either --" + std::string(o.excludes) +
                       " or --" + std::string(o.name) + ", not both");
    core::Scenario s = base;
    for (const auto phase :
         {OptionPhase::Start, OptionPhase::Model, OptionPhase::Scenario, OptionPhase::Refine})
        for (const auto& o : kOptions) {
            const auto it = last.find(o.name);
            if (o.phase != phase || it == last.end())
                continue;
            if (auto st = o.apply(s, *it->second); !st)
                return st.error().prefixed("--" + std::string(o.name));
        }
    return s;
}

} // namespace kvl::io
