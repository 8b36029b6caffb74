#include "model_fields.h"

#include <type_traits>

namespace kvl::io {

namespace {

template <class Int> void readInt(const Field& f, Int& out, std::int64_t lo, std::int64_t hi) {
    if (const auto v = f.optInteger(lo, hi))
        out = static_cast<Int>(*v);
}

// The reader for the fields architectureFields names: a whole number in [0, hi], or a boolean (no
// bound). A field that is absent leaves the default.
template <class T> void readField(const Field& f, T& out, std::int64_t hi) {
    if constexpr (std::is_same_v<T, bool>) {
        if (const auto v = f.optBoolean())
            out = *v;
    } else {
        readInt(f, out, 0, hi);
    }
}

// The state spec's int fields after intermediate_size (an int64), in file order, each with its
// largest value: read and written from this one table so that the two cannot drift apart.
struct StateInt {
    const char* name;
    int core::StateSpec::*field;
    std::int64_t hi;
};

constexpr StateInt kStateInts[] = {
    {"num_heads", &core::StateSpec::numHeads, core::kMaxHeads},
    {"head_dim", &core::StateSpec::headDim, core::kMaxHeadDim},
    {"n_groups", &core::StateSpec::nGroups, core::kMaxHeads},
    {"state_size", &core::StateSpec::stateSize, core::kMaxHeadDim},
    {"conv_kernel", &core::StateSpec::convKernel, 1024},
    {"chunk_size", &core::StateSpec::chunkSize, core::kMaxContext},
    {"num_key_heads", &core::StateSpec::numKeyHeads, core::kMaxHeads},
    {"num_value_heads", &core::StateSpec::numValueHeads, core::kMaxHeads},
    {"key_head_dim", &core::StateSpec::keyHeadDim, core::kMaxHeadDim},
    {"value_head_dim", &core::StateSpec::valueHeadDim, core::kMaxHeadDim},
};

// The architecture fields but `source`, in file order: one list for reading and writing (the
// bound is unused for the booleans).
template <class Model, class Visit> void architectureFields(Model& m, Visit&& visit) {
    visit("qk_nope_head_dim", m.qkNopeHeadDim, core::kMaxHeadDim);
    visit("sparse_mla", m.sparseMla, 0);
    visit("index_head_dim", m.indexHeadDim, core::kMaxHeadDim);
    visit("head_dim_v", m.headDimV, core::kMaxHeadDim);
    visit("intermediate_size", m.intermediateSize, core::kMaxWidth);
    visit("moe_intermediate_size", m.moeIntermediateSize, core::kMaxWidth);
    visit("num_experts", m.numExperts, core::kMaxExperts);
    visit("experts_per_token", m.expertsPerToken, core::kMaxExperts);
    visit("num_shared_experts", m.numSharedExperts, core::kMaxExperts);
    visit("first_dense_layers", m.firstDenseLayers, core::kMaxLayers);
    visit("vocab_size", m.vocabSize, core::kMaxWidth);
    visit("tie_word_embeddings", m.tieWordEmbeddings, 0);
}

// Visitors for architectureFields: one reads each field from `from`, one writes it into `to`.
auto readerFrom(const Field& from) {
    return [&from](const char* name, auto& field, std::int64_t hi) {
        readField(from[name], field, hi);
    };
}

auto writerTo(nlohmann::ordered_json& to) {
    return [&to](const char* name, const auto& field, std::int64_t) { to[name] = field; };
}

std::optional<core::KvDtype> readStateDtype(const Field& f) {
    if (!f)
        return std::nullopt;
    return readKvDtype(f);
}

} // namespace

core::WeightDtype readWeightDtype(const Field& f) {
    const auto wd = core::parseWeightDtype(f.string());
    if (!wd)
        f.failOneOf({"fp32", "fp16", "bf16", "fp8", "int8", "int4", "fp4"});
    return *wd;
}

core::KvDtype readKvDtype(const Field& f) {
    const auto kd = core::parseDtype(f.string());
    if (!kd)
        f.fail("must be a KV dtype such as fp16 or bf16, got " + f.describe());
    return *kd;
}

core::StateSpec readStateSpec(const Field& f) {
    f.object();
    core::StateSpec s;
    const Field kind = f["kind"];
    const auto k = kind.isString() ? core::parseStateKind(kind.string()) : std::nullopt;
    if (!k)
        kind.failOneOf({"mamba1", "mamba2", "gated_delta_net", "short_conv"});
    s.kind = *k;
    readInt(f["intermediate_size"], s.intermediateSize, 0, core::kMaxWidth);
    for (const StateInt& n : kStateInts)
        readInt(f[n.name], s.*n.field, 0, n.hi);
    s.convDtype = readStateDtype(f["conv_dtype"]);
    const Field ssm = f["ssm_dtype"];
    if (ssm && ssm.isString() && ssm.string() == core::kNemotronHSsmDefaultName)
        s.ssmDtypeNemotronHDefault = true;
    else
        s.ssmDtype = readStateDtype(ssm);
    return s;
}

nlohmann::ordered_json writeStateSpec(const core::StateSpec& s) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j["kind"] = std::string(core::stateKindName(s.kind));
    j["intermediate_size"] = s.intermediateSize;
    for (const StateInt& n : kStateInts)
        j[n.name] = s.*n.field;
    const auto dtype = [](const std::optional<core::KvDtype>& d) {
        return d ? nlohmann::ordered_json(std::string(core::dtypeName(*d)))
                 : nlohmann::ordered_json(nullptr);
    };
    j["conv_dtype"] = dtype(s.convDtype);
    j["ssm_dtype"] = s.ssmDtypeNemotronHDefault
                         ? nlohmann::ordered_json(std::string(core::kNemotronHSsmDefaultName))
                         : dtype(s.ssmDtype);
    return j;
}

void readArchitecture(const Field& e, core::ModelSpec& m) {
    architectureFields(m, readerFrom(e));
    m.source = e["source"].optString().value_or("");
}

void writeArchitecture(nlohmann::ordered_json& j, const core::ModelSpec& m) {
    architectureFields(m, writerTo(j));
    j["source"] = m.source;
}

} // namespace kvl::io
