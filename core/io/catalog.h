#pragma once
// The model and GPU catalogs (resources/models.json, resources/gpus.json, compiled in) and
// HuggingFace config.json import (the conventions of transformers' PretrainedConfig and its
// model classes: LlamaConfig, MistralConfig, Qwen2Config, Gemma2/3Config, FalconConfig,
// DeepseekV3Config, GptOssConfig). Errors name the file and the JSON path (json_fields.h).

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
// sliding_window with use_sliding_window, layer_types / sliding_window_pattern, MLA fields.
// `sourceName` (the file name) is used in messages; the id and name default to it.
Result<core::ModelSpec> parseHfConfig(std::string_view json, std::string_view sourceName);
Result<core::ModelSpec> loadHfConfigFile(const std::string& path);

} // namespace kvl::io
