#include "catalog.h"

#include "json_fields.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace kvl::io {

namespace detail {
extern const std::string_view kModelsJson;
extern const std::string_view kGpusJson;
} // namespace detail

namespace {

// Hidden sizes beyond any real model, small enough that every figure stays exact.
constexpr std::int64_t kMaxWidth = std::int64_t{1} << 30;
constexpr std::int64_t kMaxGpuMemory = std::int64_t{1} << 50; // 1 PiB, as core's validate

std::string num(std::int64_t v) {
    return std::to_string(v);
}

// {"version": 1, "<listKey>": [...]}: the catalog envelope.
Field catalogEntries(const Field& top, std::string_view listKey) {
    const Field version = top["version"];
    const std::int64_t v = version.integer(1, 1'000'000);
    if (v > 1)
        version.fail("catalog version " + num(v) +
                     " was written for a newer KV Ledger; this version reads 1");
    const Field list = top[listKey];
    if (list.size() == 0)
        list.fail("must not be empty");
    return list;
}

std::string checkedId(const Field& entry, std::set<std::string>& seen) {
    const Field f = entry.object()["id"];
    const std::string id = f.nonEmptyString();
    if (id != lowerAscii(id) || id.find_first_of(" \t\r\n") != std::string::npos)
        f.fail("must be lower case without spaces, got " + f.describe());
    if (!seen.insert(id).second)
        f.fail(quoteText(id) + " is used twice");
    return id;
}

// The cyclic layer pattern; absent, every layer is of the one kind the other fields imply.
std::vector<core::LayerKind> layerPattern(const Field& entry, bool window, bool lora) {
    const Field p = entry["layer_pattern"];
    if (!p.present()) {
        if (window && lora)
            p.fail("missing (required when both sliding_window and kv_lora_rank are given)");
        return {window ? core::LayerKind::Sliding
                : lora ? core::LayerKind::Mla
                       : core::LayerKind::Full};
    }
    const std::size_t n = p.size();
    if (n == 0 || n > static_cast<std::size_t>(core::kMaxLayers))
        p.fail("must be a non-empty array of \"full\", \"sliding\" or \"mla\", got " +
               std::to_string(n) + " entries");
    std::vector<core::LayerKind> pattern;
    for (std::size_t i = 0; i < n; ++i) {
        const Field e = p.at(i);
        const auto kind = e.isString() ? core::parseLayerKind(e.string()) : std::nullopt;
        if (!kind)
            e.failOneOf({"full", "sliding", "mla"});
        pattern.push_back(*kind);
    }
    return pattern;
}

core::ModelSpec modelFromCatalog(const Field& e, std::set<std::string>& seen) {
    core::ModelSpec m;
    m.id = checkedId(e, seen);
    m.name = e["name"].nonEmptyString();
    m.family = e["family"].nonEmptyString();
    m.hfRepo = e["hf_repo"].optString().value_or("");
    const auto layers = e["num_layers"].integer(1, core::kMaxLayers);
    m.qHeads = static_cast<int>(e["num_q_heads"].integer(1, core::kMaxHeads));
    m.kvHeads = static_cast<int>(e["num_kv_heads"].integer(1, core::kMaxHeads));
    m.headDim = static_cast<int>(e["head_dim"].integer(1, core::kMaxHeadDim));
    m.hiddenSize = e["hidden_size"].integer(1, kMaxWidth);
    m.params = e["params"].integer(1, core::kMaxParams);
    m.maxContext = e["max_context"].integer(1, core::kMaxContext);
    m.notes = e["notes"].optString().value_or("");

    const Field weight = e["weight_dtype"];
    const auto wd = core::parseWeightDtype(weight.string());
    if (!wd)
        weight.failOneOf({"fp32", "fp16", "bf16", "fp8", "int8", "int4"});
    m.weightDtype = *wd;
    const Field kv = e["kv_dtype"];
    const auto kd = core::parseDtype(kv.string());
    if (!kd)
        kv.fail("must be a KV dtype such as fp16 or bf16, got " + kv.describe());
    m.nativeKvDtype = *kd;

    const auto window = e["sliding_window"].optInteger(1, core::kMaxContext);
    const auto lora = e["kv_lora_rank"].optInteger(1, core::kMaxHeadDim);
    const auto rope = e["qk_rope_head_dim"].optInteger(0, core::kMaxHeadDim);
    if (lora) {
        if (!rope)
            e["qk_rope_head_dim"].fail("missing (required with kv_lora_rank)");
        m.kvLoraRank = static_cast<int>(*lora);
        m.qkRopeHeadDim = static_cast<int>(*rope);
    }

    const auto pattern = layerPattern(e, window.has_value(), lora.has_value());
    const auto has = [&](core::LayerKind k) {
        return std::find(pattern.begin(), pattern.end(), k) != pattern.end();
    };
    if (has(core::LayerKind::Sliding) && !window)
        e["sliding_window"].fail("missing (layer_pattern has sliding layers)");
    if (!has(core::LayerKind::Sliding) && window)
        e["sliding_window"].fail("is given but no layer in layer_pattern is \"sliding\"");
    if (has(core::LayerKind::Mla) && !lora)
        e["kv_lora_rank"].fail("missing (layer_pattern has mla layers)");
    if (!has(core::LayerKind::Mla) && lora)
        e["kv_lora_rank"].fail("is given but no layer in layer_pattern is \"mla\"");

    m.layers.resize(static_cast<std::size_t>(layers));
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        m.layers[i].kind = pattern[i % pattern.size()];
        if (m.layers[i].kind == core::LayerKind::Sliding)
            m.layers[i].window = *window;
    }
    if (auto problem = m.validate())
        e.fail(*problem);
    return m;
}

core::GpuSpec gpuFromCatalog(const Field& e, std::set<std::string>& seen) {
    core::GpuSpec g;
    g.id = checkedId(e, seen);
    g.name = e["name"].nonEmptyString();
    g.vendor = e["vendor"].nonEmptyString();
    g.memoryBytes = e["memory_bytes"].integer(1, kMaxGpuMemory);
    (void)e["memory_source"].optString();
    g.bandwidthGBs = e["bandwidth_gbs"].numberAbove(0, 1e7);
    g.memoryType = e["memory_type"].nonEmptyString();
    return g;
}

template <class T> const T& builtinOrDie(const Result<T>& r) {
    if (!r) {
        // The catalogs are compiled in and tested; a broken one is a build defect.
        std::fprintf(stderr, "KV Ledger: the built-in catalog is broken: %s\n",
                     r.error().message.c_str());
        std::abort();
    }
    return r.value();
}

} // namespace

Result<std::vector<core::ModelSpec>> parseModelCatalog(std::string_view json,
                                                       std::string_view sourceName) {
    return readDocument<std::vector<core::ModelSpec>>(json, sourceName, [](const Field& top) {
        std::vector<core::ModelSpec> out;
        std::set<std::string> seen;
        const Field entries = catalogEntries(top, "models");
        for (std::size_t k = 0; k < entries.size(); ++k)
            out.push_back(modelFromCatalog(entries.at(k), seen));
        return out;
    });
}

Result<std::vector<core::GpuSpec>> parseGpuCatalog(std::string_view json,
                                                   std::string_view sourceName) {
    return readDocument<std::vector<core::GpuSpec>>(json, sourceName, [](const Field& top) {
        std::vector<core::GpuSpec> out;
        std::set<std::string> seen;
        const Field entries = catalogEntries(top, "gpus");
        for (std::size_t k = 0; k < entries.size(); ++k)
            out.push_back(gpuFromCatalog(entries.at(k), seen));
        return out;
    });
}

const std::vector<core::ModelSpec>& builtinModels() {
    static const auto models = parseModelCatalog(detail::kModelsJson, "models.json");
    return builtinOrDie(models);
}

const std::vector<core::GpuSpec>& builtinGpus() {
    static const auto gpus = parseGpuCatalog(detail::kGpusJson, "gpus.json");
    return builtinOrDie(gpus);
}

const core::ModelSpec* findModel(std::string_view id) {
    const std::string key = lowerAscii(id);
    for (const auto& m : builtinModels())
        if (lowerAscii(m.id) == key)
            return &m;
    return nullptr;
}

const core::GpuSpec* findGpu(std::string_view id) {
    const std::string key = lowerAscii(id);
    for (const auto& g : builtinGpus())
        if (lowerAscii(g.id) == key)
            return &g;
    return nullptr;
}

} // namespace kvl::io
