#pragma once
// The model and GPU catalogs (resources/models.json, resources/gpus.json, compiled in) and
// HuggingFace config.json import, mapped as vLLM reads each family (transformers'
// PretrainedConfig and its model classes, vLLM's model config classes and model files).
// Errors name the file and the JSON path (json_fields.h).
//
// models.json entries: id, name, family, hf_repo, source (the config.json read), num_layers;
// the layer kinds as layer_types (one of full / sliding / chunked / mla / state / none per
// layer) or a cyclic layer_pattern, with sliding_window and attention_chunk_size for the
// windowed kinds; num_q_heads, num_kv_heads, head_dim, head_dim_v, full_layer_kv_heads and
// full_layer_head_dim (Gemma-4's global layers); kv_lora_rank, qk_rope_head_dim,
// qk_nope_head_dim, sparse_mla, index_head_dim; state (model_fields.h); hidden_size,
// intermediate_size, moe_intermediate_size, num_experts, experts_per_token, num_shared_experts,
// first_dense_layers, vocab_size, tie_word_embeddings; params (params_source says card,
// name or computed), weight_dtype, kv_dtype, max_context, notes.
// gpus.json entries: id, name, vendor, memory_bytes (as the driver reports it; memory_source
// says which figure), bandwidth_gbs, memory_type, compute_capability (0 = not NVIDIA),
// bf16_tflops and fp8_tflops (dense, 0 = none), source.

#include "core/model.h"
#include "core/result.h"
#include "core/scenario.h"

#include <string>
#include <string_view>
#include <vector>

namespace kvl::io {

// Catalogs compiled into the binary from resources/*.json.
const std::vector<core::ModelSpec>& builtinModels();
const std::vector<core::GpuSpec>& builtinGpus();
const core::ModelSpec* findModel(std::string_view id); // case-insensitive id
const core::GpuSpec* findGpu(std::string_view id);

// Parse catalog documents (used for the built-in ones and by tests).
Result<std::vector<core::ModelSpec>> parseModelCatalog(std::string_view json,
                                                       std::string_view sourceName);
Result<std::vector<core::GpuSpec>> parseGpuCatalog(std::string_view json,
                                                   std::string_view sourceName);

// A HuggingFace config.json: explicit head_dim, missing num_key_value_heads (MHA), Falcon's
// multi_query / new_decoder_architecture / num_kv_heads, text_config / llm_config nesting,
// sliding_window with use_sliding_window, layer_types / sliding_window_pattern /
// hybrid_override_pattern / attn_layer_period / full_attention_interval / no_rope_layers,
// Gemma-4's global heads and KV-shared layers, the Mamba and linear-attention state, MLA (and
// DeepSeek's sparse attention), MoE, rope scaling (max_model_len as vLLM derives it), dtypes
// and quantization_config. NaN / Infinity are accepted where the ledger does not read them.
// `sourceName` (the file name) is used in messages, the id and name default to it, and it is
// the model's source.
Result<core::ModelSpec> parseHfConfig(std::string_view json, std::string_view sourceName);
Result<core::ModelSpec> loadHfConfigFile(const std::string& path);

} // namespace kvl::io
