#pragma once
// SGLang's token pool (sgl-project/sglang main, 2026):
//
// - python/sglang/srt/server_args.py, _handle_gpu_memory_settings: the default
//   --chunked-prefill-size and --cuda-graph-max-bs by GPU memory (MiB) and TP, and the default
//   --mem-fraction-static = round((gpu_mem - reserved) / gpu_mem, 3) with reserved (MiB) =
//   512 + 1.5 x max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + TP x PP / 8 x 1024,
//   at least 10,240 on GPUs over 60 GiB.
// - python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py, profile_max_num_token:
//   rest = free after load - free before load x (1 - mem_fraction_static), in GiB;
//   max_total_num_tokens = int(rest x 2^30) // cell_size, cell_size = KV heads per attention-TP
//   rank x (head_dim + v_head_dim) x layers x dtype bytes (MLA: (kv_lora_rank + rope) x layers x
//   bytes, plus DeepSeek-V3.2's indexer; fp4: half the bytes plus one scale per 16); Mamba
//   state is taken first by mamba_full_memory_ratio; sliding layers split the tokens by
//   --swa-full-tokens-ratio (set_num_tokens_hybrid_swa); init_memory rounds down to the page
//   size and caps at --max-total-tokens; max_running_requests defaults to
//   min(max(tokens / context_len x 512, 2048), 4096).
// - python/sglang/srt/mem_cache/memory_pool.py: the pool allocates size + page_size slots and
//   logs "KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB" (GB = 2^30).

#include "core/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvl::core::sglang {

struct Result {
    double memFractionStatic = 0;
    bool memFractionDefault = false;
    std::int64_t chunkedPrefillSize = 0;
    int cudaGraphMaxBs = 0;
    double reservedMiB = 0; // the default's reserve
    std::int64_t gpuMemMiB = 0;
    double freeBeforeGiB = 0, freeAfterGiB = 0, restGiB = 0;
    std::int64_t cellSize = 0;       // bytes per token on one GPU (the pool's layers)
    std::int64_t profiledTokens = 0; // before page rounding and --max-total-tokens
    std::int64_t maxTotalNumTokens = 0;
    std::int64_t swaTokens = 0;      // hybrid SWA: tokens of the sliding layers' pool
    std::int64_t mambaCacheSize = 0; // hybrid Mamba: states kept
    std::int64_t maxRunningRequests = 0;
    std::int64_t contextLen = 0;
    std::int64_t kBytes = 0, vBytes = 0; // the pool's buffers (MLA: kBytes is the latent)
    bool mla = false;
    std::vector<std::string> logLines;
    std::string command;
    std::string error;
};

Result compute(const Scenario& s);

// SGLang's own default --mem-fraction-static for a GPU of `gpuMemMiB` (server_args.py).
double defaultMemFractionStatic(std::int64_t gpuMemMiB, int tp, int pp,
                                std::int64_t chunkedPrefillSize, int cudaGraphMaxBs,
                                double* reservedMiB = nullptr);
// SGLang's --kv-cache-dtype name for a KV dtype (server_args.py: auto, fp8_e4m3, fp8_e5m2,
// fp4_e2m1, bf16 / bfloat16, float16); empty for a dtype SGLang has no KV cache of (no integer
// caches).
std::string kvCacheDtypeName(KvDtype d);
// The GPU-memory defaults of --chunked-prefill-size and --cuda-graph-max-bs.
std::int64_t defaultChunkedPrefillSize(std::int64_t gpuMemMiB);
int defaultCudaGraphMaxBs(std::int64_t gpuMemMiB, int tp);

} // namespace kvl::core::sglang
