#pragma once
// llama.cpp's KV cache, as llama_context and llama_model::create_memory size it for a context
// of -c tokens and -np sequences (ggml-org/llama.cpp, 2026):
//
// - src/llama-context.cpp: n_ctx is padded to 256; without --kv-unified every sequence gets its
//   own stream of n_ctx_seq = PAD(n_ctx / n_seq_max, 256) cells (and n_ctx becomes
//   n_ctx_seq x n_seq_max); with it one stream of n_ctx cells is shared.
// - src/llama-kv-cache.cpp: each layer that keeps KV stores K as ggml rows of
//   n_embd_head_k x n_head_kv values of type -ctk per cell and stream, V likewise with -ctv
//   (ggml_row_size: q8_0 is 34 bytes per 32 values). An MLA layer (DeepSeek-V2/V3) keeps one
//   row of kv_lora_rank + rope values and no V.
// - src/llama-kv-cache-iswa.cpp: a model with sliding-window layers gets two caches, the
//   non-SWA one of n_ctx_seq cells and the SWA one of PAD(min(n_ctx_seq, n_swa x (unified ?
//   n_seq_max : 1) + n_ubatch), 256) cells, or n_ctx_seq with --swa-full.
// - src/llama-memory-recurrent.cpp: Mamba / linear-attention layers keep one conv row (R) and
//   one state row (S) of f32 per sequence (max(1, n_seq_max) cells).
//
// The lines it prints are those of llama_kv_cache's and llama_memory_recurrent's constructors,
// MiB computed in float as they are.

#include "core/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvl::core::llamacpp {

// One llama_kv_cache (or the recurrent memory).
struct Cache {
    enum class Kind : std::uint8_t { Kv, Swa, Recurrent } kind = Kind::Kv;
    std::int64_t cells = 0;   // kv_size: cells per stream (recurrent: mem_size)
    int layers = 0;           // layers the cache holds (the recurrent line prints the model's)
    int seqs = 1;             // n_seq_max
    int streams = 1;          // 1 unified, else n_seq_max
    std::string typeK, typeV; // ggml type names ("f16", "q8_0"); R and S for recurrent
    std::int64_t kBytes = 0;  // K (or R) over every layer and stream
    std::int64_t vBytes = 0;  // V (or S)
};

struct Result {
    std::int64_t nCtx = 0;    // after padding
    std::int64_t nCtxSeq = 0; // cells one sequence can use
    int nSeqMax = 1;
    bool unified = false;
    std::vector<Cache> caches;
    std::int64_t totalBytes = 0;
    std::int64_t bytesPerToken = 0; // one token in the non-SWA cache, all its layers
    std::vector<std::string> logLines;
    std::string command;
    std::string error;
};

Result compute(const Scenario& s);

// "llama_kv_cache: size = ..." for one cache, exactly as llama.cpp prints it.
std::string formatCacheLine(const Cache& c, int modelLayers);
// MiB as llama.cpp computes it for its logs: (float)bytes / (1024.0f * 1024.0f), "%7.2f".
std::string formatMiB(std::int64_t bytes, int width = 7);

} // namespace kvl::core::llamacpp
