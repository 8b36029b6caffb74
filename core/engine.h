#pragma once
// What vLLM derives from the model, the GPU and its flags before it sizes the KV cache: the
// Mamba / linear-attention state per layer, the block sizes the attention backend and the
// hybrid alignment choose, the scheduler defaults, and vLLM's name for a KV format.
//
// Sources (vllm-project/vllm main, 2026): vllm/model_executor/layers/mamba/mamba_utils.py
// (MambaStateShapeCalculator, MambaStateDtypeCalculator), vllm/platforms/interface.py
// (update_block_size_for_backend, _align_hybrid_block_size), vllm/platforms/cuda.py
// (_get_backend_priorities) and the backends' get_supported_kernel_block_sizes,
// vllm/model_executor/models/config.py (MambaModelConfig), vllm/engine/arg_utils.py
// (get_batch_defaults), vllm/config/cache.py (CacheDType), vllm/config/vllm.py.

#include "core/result.h"
#include "core/scenario.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvl::core {

// Conv + SSM (temporal) state of one recurrent layer for one request on one TP rank, in bytes
// (MambaSpec.page_size_bytes before padding). The conv state takes the model dtype (vLLM's
// mamba_cache_dtype "auto"); the SSM state `ssmDtype` when given (--mamba-ssm-cache-dtype, or
// the model's own default), else the model dtype. 0 when TP does not divide the state.
std::int64_t stateBytesPerLayer(const StateSpec& state, KvDtype modelDtype,
                                std::optional<KvDtype> ssmDtype, int tp);
// The SSM (temporal) state's dtype vLLM runs for the scenario: --mamba-ssm-cache-dtype, else
// the model's (NemotronH's default as the scenario's release picks it); empty = the model dtype.
std::optional<KvDtype> effectiveSsmDtype(const Scenario& s);
// Why vLLM cannot shard the state over `tp` ranks (MambaStateShapeCalculator divide()).
Status checkStateTensorParallel(const StateSpec& state, int tp);

// vllm serve's scheduler defaults for a GPU (EngineArgs.get_batch_defaults, usage context
// OPENAI_API_SERVER): at least 70 GiB and not an A100: 8192 batched tokens and 1024 sequences;
// otherwise 2048 and 256.
struct SchedulerDefaults {
    std::int64_t maxNumBatchedTokens = 8192;
    std::int64_t maxNumSeqs = 1024;
};
SchedulerDefaults schedulerDefaults(const GpuSpec& gpu);
std::int64_t effectiveMaxNumBatchedTokens(const Scenario& s);
std::int64_t effectiveMaxNumSeqs(const Scenario& s);
// The scenario's --gpu-memory-utilization, or its vLLM release's default (vllm/config/cache.py).
double gpuMemoryUtilization(const Scenario& s);

// The Mamba cache mode vLLM runs: prefix caching is on by default, hybrids then use "align"
// (vLLM PR 50991); pure Mamba models (no attention, no prefix caching) "none".
MambaCacheMode effectiveMambaCacheMode(const Scenario& s);
// Whether vLLM's v2 model runner is the default (VllmConfig.use_v2_model_runner: generate
// models that are neither hybrid nor MoE); it keeps PP + 1 batches in flight with async
// scheduling where the v1 runner keeps PP.
bool usesV2ModelRunner(const ModelSpec& m);
// VllmConfig.max_in_flight_tokens for the scenario.
std::int64_t inFlightTokens(const Scenario& s);

// The block sizes vLLM runs with.
struct BlockSizes {
    int attention = 16;               // tokens per block of the attention (and MLA) layers
    std::int64_t mamba = 0;           // MambaSpec.block_size (max_model_len in mode "none")
    std::int64_t mambaPagePadded = 0; // mamba_page_size_padded (= attention page); 0 = none
    MambaCacheMode mambaMode = MambaCacheMode::None;
    std::string backend; // the attention backend vLLM picks, e.g. "FLASH_ATTN_MLA"
    bool forced = false; // the backend or the hybrid alignment chose the block size
    std::vector<std::string> notes;
    std::string error; // the user's --block-size is one no backend accepts
};
// The user's block size (the paging lever, 0 = vLLM's choice) through vLLM's backend choice
// for the model and GPU and, for hybrids, the alignment of attention pages to the Mamba page.
BlockSizes resolveBlockSizes(const Scenario& s);

// The KV format vLLM stores for the scenario: the quantization lever's (or the model's native
// dtype), except that FlashMLA's sparse backend stores fp8 as fp8_ds_mla.
KvFormat storedKvFormat(const Scenario& s);
// vLLM's --kv-cache-dtype for the scenario's KV format, or nothing when vLLM has no such
// format ("not in vLLM": INT4 per group, INT2 KIVI, ...).
std::optional<std::string> vllmCacheDtype(const Scenario& s);
// The KV format a vLLM --kv-cache-dtype name stores for the model ("auto", "fp8", "fp8_e5m2",
// "int8_per_token_head", "fp8_per_token_head", "int4_per_token_head", "nvfp4", "fp8_ds_mla",
// "bfloat16", "float16"); an unknown or unsupported name is BadInput naming it.
Result<KvFormat> formatForVllmCacheDtype(std::string_view name, const ModelSpec& model);
// Every --kv-cache-dtype name the ledger models (the CLI's help lists them).
std::vector<std::string> vllmCacheDtypeNames();

} // namespace kvl::core
