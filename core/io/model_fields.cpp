#include "model_fields.h"

namespace kvl::io {

namespace {

template <class Int> void readInt(const Field& f, Int& out, std::int64_t lo, std::int64_t hi) {
    if (const auto v = f.optInteger(lo, hi))
        out = static_cast<Int>(*v);
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
    readInt(f["num_heads"], s.numHeads, 0, core::kMaxHeads);
    readInt(f["head_dim"], s.headDim, 0, core::kMaxHeadDim);
    readInt(f["n_groups"], s.nGroups, 0, core::kMaxHeads);
    readInt(f["state_size"], s.stateSize, 0, core::kMaxHeadDim);
    readInt(f["conv_kernel"], s.convKernel, 0, 1024);
    readInt(f["chunk_size"], s.chunkSize, 0, core::kMaxContext);
    readInt(f["num_key_heads"], s.numKeyHeads, 0, core::kMaxHeads);
    readInt(f["num_value_heads"], s.numValueHeads, 0, core::kMaxHeads);
    readInt(f["key_head_dim"], s.keyHeadDim, 0, core::kMaxHeadDim);
    readInt(f["value_head_dim"], s.valueHeadDim, 0, core::kMaxHeadDim);
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
    j["num_heads"] = s.numHeads;
    j["head_dim"] = s.headDim;
    j["n_groups"] = s.nGroups;
    j["state_size"] = s.stateSize;
    j["conv_kernel"] = s.convKernel;
    j["chunk_size"] = s.chunkSize;
    j["num_key_heads"] = s.numKeyHeads;
    j["num_value_heads"] = s.numValueHeads;
    j["key_head_dim"] = s.keyHeadDim;
    j["value_head_dim"] = s.valueHeadDim;
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
    readInt(e["qk_nope_head_dim"], m.qkNopeHeadDim, 0, core::kMaxHeadDim);
    if (const auto v = e["sparse_mla"].optBoolean())
        m.sparseMla = *v;
    readInt(e["index_head_dim"], m.indexHeadDim, 0, core::kMaxHeadDim);
    readInt(e["head_dim_v"], m.headDimV, 0, core::kMaxHeadDim);
    readInt(e["intermediate_size"], m.intermediateSize, 0, core::kMaxWidth);
    readInt(e["moe_intermediate_size"], m.moeIntermediateSize, 0, core::kMaxWidth);
    readInt(e["num_experts"], m.numExperts, 0, core::kMaxExperts);
    readInt(e["experts_per_token"], m.expertsPerToken, 0, core::kMaxExperts);
    readInt(e["num_shared_experts"], m.numSharedExperts, 0, core::kMaxExperts);
    readInt(e["first_dense_layers"], m.firstDenseLayers, 0, core::kMaxLayers);
    readInt(e["vocab_size"], m.vocabSize, 0, core::kMaxWidth);
    if (const auto v = e["tie_word_embeddings"].optBoolean())
        m.tieWordEmbeddings = *v;
    m.source = e["source"].optString().value_or("");
}

void writeArchitecture(nlohmann::ordered_json& j, const core::ModelSpec& m) {
    j["qk_nope_head_dim"] = m.qkNopeHeadDim;
    j["sparse_mla"] = m.sparseMla;
    j["index_head_dim"] = m.indexHeadDim;
    j["head_dim_v"] = m.headDimV;
    j["intermediate_size"] = m.intermediateSize;
    j["moe_intermediate_size"] = m.moeIntermediateSize;
    j["num_experts"] = m.numExperts;
    j["experts_per_token"] = m.expertsPerToken;
    j["num_shared_experts"] = m.numSharedExperts;
    j["first_dense_layers"] = m.firstDenseLayers;
    j["vocab_size"] = m.vocabSize;
    j["tie_word_embeddings"] = m.tieWordEmbeddings;
    j["source"] = m.source;
}

} // namespace kvl::io
