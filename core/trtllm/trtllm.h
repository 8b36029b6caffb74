#pragma once
// TensorRT-LLM's KV cache with the PyTorch backend (NVIDIA/TensorRT-LLM main, 2026):
//
// - tensorrt_llm/_torch/pyexecutor/_util.py, KvCacheCreator: after a profiling run,
//   available KV memory = (device total - peak + the KV the run allocated) x
//   free_gpu_memory_fraction (default 0.9), and max_tokens = available // kv size per token,
//   capped by kv_cache_config.max_tokens when set ("Both free_gpu_memory_fraction and max_tokens
//   are set ... The smaller value will be used").
// - tensorrt_llm/_torch/pyexecutor/resource_manager.py, get_cache_size_per_token: dtype bytes
//   x layers of this PP stage x head_dim x KV heads / TP x 2 (K and V); MLA stores
//   kv_lora_rank + qk_rope_head_dim once (factor 1, not divided by TP); attention DP counts TP
//   as 1; NVFP4 takes half a byte per value plus one fp8 scale per 16.
// - cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp: blocks = ceil(max_tokens /
//   tokens_per_block) (32 by default); it logs "Number of tokens per block: 32." and
//   "[MemUsageChange] Allocated X GiB for max tokens in paged KV cache (blocks x 32)."

#include "core/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvl::core::trtllm {

struct Result {
    std::int64_t kvSizePerToken = 0; // bytes, one GPU
    std::int64_t totalBytes = 0;     // device total (torch)
    std::int64_t peakBytes = 0;      // the profiling peak without its own KV
    bool peakEstimated = false;
    double fraction = 0.9;
    std::int64_t availableBytes = 0; // (total - peak) x fraction
    std::int64_t maxTokens = 0;      // before block rounding
    std::int64_t blocks = 0;
    std::int64_t poolTokens = 0; // blocks x tokens_per_block
    std::int64_t poolBytes = 0;
    std::string kvDtype; // kv_cache_config.dtype: auto, fp8, int8, nvfp4
    std::vector<std::string> logLines;
    std::string command;
    std::string error;
};

Result compute(const Scenario& s);

// kv_cache_config.dtype for a KV dtype with the lever on (llm_args.py KvCacheConfig.dtype: auto,
// fp8, int8, nvfp4; 16-bit dtypes are "auto"); empty for a dtype TensorRT-LLM has no KV cache of.
std::string kvCacheDtypeName(KvDtype d);
// get_cache_size_per_token for the scenario (0 when the KV dtype is one TensorRT-LLM lacks).
std::int64_t cacheSizePerToken(const Scenario& s);

} // namespace kvl::core::trtllm
