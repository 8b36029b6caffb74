#include "catalog.h"

#include "json_fields.h"
#include "model_fields.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
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

std::vector<core::LayerKind> kindList(const Field& list, std::size_t maxEntries) {
    const std::size_t n = list.size();
    if (n == 0 || n > maxEntries)
        list.fail("must be a non-empty array of layer kinds (full, sliding, chunked, mla, state, "
                  "none), got " +
                  std::to_string(n) + " entries");
    std::vector<core::LayerKind> kinds;
    for (std::size_t i = 0; i < n; ++i) {
        const Field e = list.at(i);
        const auto kind = e.isString() ? core::parseLayerKind(e.string()) : std::nullopt;
        if (!kind)
            e.failOneOf({"full", "sliding", "chunked", "mla", "state", "none"}); // layerKindName
        kinds.push_back(*kind);
    }
    return kinds;
}

// The kind of every layer: "layer_types" lists them all (Nemotron-H's irregular pattern),
// "layer_pattern" is a cyclic pattern (Gemma-3's five sliding and one full); absent both,
// every layer is of the one kind the other fields imply. `from` names the list for messages.
std::vector<core::LayerKind> layerKinds(const Field& e, std::size_t layers, bool window, bool lora,
                                        std::string& from) {
    const Field pattern = e["layer_pattern"];
    const Field types = e["layer_types"];
    if (pattern.present() && types.present())
        types.fail("is given together with layer_pattern; give one of them");
    if (types.present()) {
        from = "layer_types";
        auto kinds = kindList(types, static_cast<std::size_t>(core::kMaxLayers));
        if (kinds.size() != layers)
            types.fail("has " + num(static_cast<std::int64_t>(kinds.size())) +
                       " entries but num_layers is " + num(static_cast<std::int64_t>(layers)));
        return kinds;
    }
    from = "layer_pattern";
    if (!pattern.present()) {
        if (window && lora)
            pattern.fail("missing (required when both sliding_window and kv_lora_rank are given)");
        const core::LayerKind k = window ? core::LayerKind::Sliding
                                  : lora ? core::LayerKind::Mla
                                         : core::LayerKind::Full;
        return std::vector<core::LayerKind>(layers, k);
    }
    const auto cycle = kindList(pattern, static_cast<std::size_t>(core::kMaxLayers));
    std::vector<core::LayerKind> kinds(layers);
    for (std::size_t i = 0; i < layers; ++i)
        kinds[i] = cycle[i % cycle.size()];
    return kinds;
}

// A field that goes with a layer kind: missing when some layer is of the kind, refused when
// none is.
void pairKindAndField(const Field& field, bool given, bool used, const std::string& from,
                      std::string_view kind) {
    if (used && !given)
        field.fail("missing (" + from + " has " + std::string(kind) + " layers)");
    if (!used && given)
        field.fail("is given but no layer in " + from + " is \"" + std::string(kind) + "\"");
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
    (void)e["params_source"].optString();
    m.maxContext = e["max_context"].integer(1, core::kMaxContext);
    m.notes = e["notes"].optString().value_or("");
    m.weightDtype = readWeightDtype(e["weight_dtype"]);
    m.nativeKvDtype = readKvDtype(e["kv_dtype"]);
    readArchitecture(e, m);

    const auto window = e["sliding_window"].optInteger(1, core::kMaxContext);
    const auto chunk = e["attention_chunk_size"].optInteger(1, core::kMaxContext);
    const auto lora = e["kv_lora_rank"].optInteger(1, core::kMaxHeadDim);
    const auto rope = e["qk_rope_head_dim"].optInteger(0, core::kMaxHeadDim);
    if (lora) {
        if (!rope)
            e["qk_rope_head_dim"].fail("missing (required with kv_lora_rank)");
        m.kvLoraRank = static_cast<int>(*lora);
        m.qkRopeHeadDim = static_cast<int>(*rope);
    }

    std::string from;
    const auto kinds =
        layerKinds(e, static_cast<std::size_t>(layers), window.has_value(), lora.has_value(), from);
    const auto has = [&](core::LayerKind k) {
        return std::find(kinds.begin(), kinds.end(), k) != kinds.end();
    };
    pairKindAndField(e["sliding_window"], window.has_value(), has(core::LayerKind::Sliding), from,
                     "sliding");
    pairKindAndField(e["attention_chunk_size"], chunk.has_value(), has(core::LayerKind::Chunked),
                     from, "chunked");
    pairKindAndField(e["kv_lora_rank"], lora.has_value(), has(core::LayerKind::Mla), from, "mla");
    const Field state = e["state"];
    pairKindAndField(state, state.present(), has(core::LayerKind::State), from, "state");
    if (state.present())
        m.state = readStateSpec(state);

    // Gemma-4's full layers: their own KV heads and head size (num_global_key_value_heads,
    // global_head_dim). Stored as per-layer overrides, 0 where equal to the model's.
    const Field fullKv = e["full_layer_kv_heads"];
    const Field fullHead = e["full_layer_head_dim"];
    const int kvOverride = static_cast<int>(fullKv.optInteger(1, core::kMaxHeads).value_or(0));
    const int headOverride =
        static_cast<int>(fullHead.optInteger(1, core::kMaxHeadDim).value_or(0));
    if ((kvOverride > 0 || headOverride > 0) && !has(core::LayerKind::Full))
        (kvOverride > 0 ? fullKv : fullHead)
            .fail("is given but no layer in " + from + " is \"full\"");

    m.layers.resize(static_cast<std::size_t>(layers));
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        auto& l = m.layers[i];
        l.kind = kinds[i];
        if (l.kind == core::LayerKind::Sliding)
            l.window = *window;
        if (l.kind == core::LayerKind::Chunked)
            l.window = *chunk;
        if (l.kind == core::LayerKind::Full) {
            l.kvHeads = kvOverride != m.kvHeads ? kvOverride : 0;
            l.headDim = headOverride != m.headDim ? headOverride : 0;
        }
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
    // 0 where unknown or not NVIDIA; the TFLOP/s are dense (no 2:4 sparsity), 0 = none.
    g.computeCapability = static_cast<int>(e["compute_capability"].optInteger(0, 1000).value_or(0));
    g.bf16Tflops = e["bf16_tflops"].optNumber(0, 1e6).value_or(0);
    g.fp8Tflops = e["fp8_tflops"].optNumber(0, 1e6).value_or(0);
    g.source = e["source"].optString().value_or("");
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

// A catalog document: each entry of its `key` array read by `fromEntry`, which refuses an id
// `seen` already holds.
template <class Spec, class FromEntry>
Result<std::vector<Spec>> parseCatalog(std::string_view json, std::string_view sourceName,
                                       const char* key, FromEntry fromEntry) {
    return readDocument<std::vector<Spec>>(json, sourceName, [&](const Field& top) {
        std::vector<Spec> out;
        std::set<std::string> seen;
        const Field entries = catalogEntries(top, key);
        for (std::size_t k = 0; k < entries.size(); ++k)
            out.push_back(fromEntry(entries.at(k), seen));
        return out;
    });
}

} // namespace

Result<std::vector<core::ModelSpec>> parseModelCatalog(std::string_view json,
                                                       std::string_view sourceName) {
    return parseCatalog<core::ModelSpec>(json, sourceName, "models", modelFromCatalog);
}

Result<std::vector<core::GpuSpec>> parseGpuCatalog(std::string_view json,
                                                   std::string_view sourceName) {
    return parseCatalog<core::GpuSpec>(json, sourceName, "gpus", gpuFromCatalog);
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
    return core::findById(builtinModels(), id);
}

const core::GpuSpec* findGpu(std::string_view id) {
    return core::findById(builtinGpus(), id);
}

} // namespace kvl::io
