#pragma once
// The ModelSpec fields that the model catalog (resources/models.json) and scenario files
// (.kvl.json) spell the same way, read and written in one place: the dtypes, the Mamba /
// linear-attention "state" object, and the architecture numbers (MLA, MoE, widths, vocab).
//
//   "state": {"kind": "mamba2", "intermediate_size": 16384, "num_heads": 256, "head_dim": 64,
//             "n_groups": 8, "state_size": 256, "conv_kernel": 4, "chunk_size": 128,
//             "ssm_dtype": "fp32"}
//   "state": {"kind": "gated_delta_net", "num_key_heads": 16, "num_value_heads": 32,
//             "key_head_dim": 128, "value_head_dim": 128, "conv_kernel": 4}
//
// Absent numbers are 0 (n_groups 1); absent dtypes are vLLM's "auto" (the model dtype).
// core::ModelSpec::validate decides which ones a kind needs.

#include "core/io/json_fields.h"
#include "core/model.h"

#include <nlohmann/json.hpp>

namespace kvl::io {

core::WeightDtype readWeightDtype(const Field& f); // "bf16", "fp8", "int4", "fp4", ...
core::KvDtype readKvDtype(const Field& f);         // "bf16", "fp16", "fp8_e4m3", ...

core::StateSpec readStateSpec(const Field& f); // precondition: f is present
nlohmann::ordered_json writeStateSpec(const core::StateSpec& s);

// Optional members, each left at ModelSpec's default when absent: qk_nope_head_dim,
// sparse_mla, head_dim_v, intermediate_size, moe_intermediate_size, num_experts,
// experts_per_token, num_shared_experts, first_dense_layers, vocab_size, tie_word_embeddings,
// source.
void readArchitecture(const Field& e, core::ModelSpec& m);
// The same members (all of them, so that a file states what it assumed).
void writeArchitecture(nlohmann::ordered_json& j, const core::ModelSpec& m);

} // namespace kvl::io
