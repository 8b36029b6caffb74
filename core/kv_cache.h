#pragma once
// vLLM v1's KV cache accounting (the hybrid KV cache manager): one spec per layer, the layers
// bucketed into KV cache groups over one shared block pool, the number of blocks, the blocks
// one request is admitted with, the maximum concurrency and the refusal vLLM prints when one
// request of max_model_len does not fit. Pure functions; every byte count is an exact integer.
//
// Sources (vllm-project/vllm, main, 2026): vllm/v1/kv_cache_interface.py (specs, page sizes,
// max_memory_usage_bytes), vllm/v1/core/kv_cache_utils.py (get_kv_cache_groups,
// unify_kv_cache_spec_page_size, _get_kv_cache_groups_uniform_page_size,
// get_kv_cache_config_from_groups, get_max_concurrency_for_kv_cache_config,
// _check_enough_kv_cache_memory, _estimate_max_model_len_from_groups), vllm/config/vllm.py
// (max_in_flight_tokens), and their tests in tests/v1/core/test_kv_cache_utils.py.

#include "core/kv_format.h"
#include "core/model.h"
#include "core/result.h"
#include "core/scenario.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kvl::core {

// The spec classes of vllm/v1/kv_cache_interface.py that the ledger models.
enum class SpecType : std::uint8_t { FullAttention, SlidingWindow, ChunkedLocal, Mla, Mamba };
std::string_view specTypeName(SpecType type); // full_attention sliding_window ...

// One layer's spec on one worker (a TP rank of a PP stage).
struct CacheSpec {
    SpecType type = SpecType::FullAttention;
    int blockSize = 16;
    std::int64_t realPageBytes = 0;   // page_size_bytes before padding
    std::int64_t paddedPageBytes = 0; // page_size_padded; 0 = none
    // SlidingWindow: the window; ChunkedLocal: the chunk. A FullAttention spec promoted from a
    // sliding or chunked layer (--disable-hybrid-kv-cache-manager) remembers it here, as
    // FullAttentionSpec.sliding_window / attention_chunk_size do.
    std::int64_t window = 0;
    std::int64_t chunk = 0;
    // Identity of an attention spec (dataclass equality decides the buckets).
    int kvHeads = 0;
    int headSize = 0;
    int headSizeV = 0;
    KvFormat format;
    int numSpeculativeBlocks = 0;                    // Mamba
    MambaCacheMode mambaMode = MambaCacheMode::None; // Mamba (Auto is resolved before)

    std::int64_t pageBytes() const { return paddedPageBytes > 0 ? paddedPageBytes : realPageBytes; }
    friend bool operator==(const CacheSpec&, const CacheSpec&) = default;
};

// Inputs of the per-request admission rule (vllm/config/vllm.py, VllmConfig).
struct AdmissionInputs {
    std::int64_t maxModelLen = 0;
    std::int64_t inFlightTokens = 0; // max_in_flight_tokens
    int decodeContextParallel = 1;
};

// max_concurrent_batches x max_num_batched_tokens (VllmConfig.max_in_flight_tokens): async
// scheduling keeps PP + 1 batches in flight with the v2 model runner, plain scheduling PP.
std::int64_t maxInFlightTokens(std::int64_t maxNumBatchedTokens, bool asyncScheduling, int pp);

// Blocks one request of max_model_len is admitted with (max_admission_blocks_per_request, or
// max_memory_usage_bytes / page_size_bytes): full cdiv(M, B) (M / DCP with decode context
// parallel); sliding cdiv(min(W - 1 + F, M), B) + 1; chunked cdiv(min(C + F, M), B); Mamba a
// fixed count.
std::int64_t admissionBlocks(const CacheSpec& spec, const AdmissionInputs& in);

// A KV cache group: layers sharing one block table. `layers` are model layer indices; a group
// shorter than the pool's group size has padding slots.
struct CacheGroup {
    CacheSpec spec; // the merged spec
    std::vector<int> layers;
    // Per layer pages when the group is a UniformTypeKVCacheSpecs (one group whose layers differ
    // in shape); empty otherwise (every layer has spec.pageBytes()).
    std::vector<CacheSpec> layerSpecs;
    bool uniformType() const { return !layerSpecs.empty(); }
};

struct CacheGroups {
    std::vector<CacheGroup> groups; // empty: an attention-free model
    bool hybridDisabled = false;    // specs were promoted to full attention
    std::vector<std::string> notes; // "Add 1 padding layers, may waste at most 12.50% ..."
};

// get_kv_cache_groups over the whole model's per-layer specs (index = model layer; an empty
// optional = a layer that holds nothing). Fails as vLLM does when page sizes cannot be unified
// or a hybrid model cannot be promoted to one type.
Result<CacheGroups> kvCacheGroups(const std::vector<std::optional<CacheSpec>>& specs,
                                  bool disableHybridKvCacheManager);

// The groups seen by one worker that holds the layers [first, last): same groups, fewer layers
// (vllm _project_kv_cache_groups_to_worker keeps empty groups).
CacheGroups projectToStage(const CacheGroups& all, int firstLayer, int lastLayer);

// Bytes one pool block takes on a worker: the largest group's sum of layer pages
// (_get_kv_cache_bytes_per_block).
std::int64_t bytesPerPoolBlock(const CacheGroups& g);
// Blocks one request of max_model_len is admitted with, over all groups.
std::int64_t admissionBlocksPerRequest(const CacheGroups& g, const AdmissionInputs& in);
// The bytes that request needs on a worker (_max_memory_usage_bytes_from_groups).
std::int64_t neededBytes(const CacheGroups& g, const AdmissionInputs& in);
// _estimate_max_model_len_from_groups: the largest max_model_len in [1, upTo] whose request
// fits in `available`, 0 when one token does not.
std::int64_t estimateMaxModelLen(const CacheGroups& g, AdmissionInputs in, std::int64_t available,
                                 std::int64_t upTo);

// Python's f"{round(bytes / 2**30, 2)}" as vllm.utils.mem_utils.format_gib prints it: "6.5",
// "38.87", "12.0".
std::string formatGibLikeVllm(std::int64_t bytes);
// "%.2f" of max concurrency, "1,553,140" of tokens: the log line exactly.
std::string vllmCapacityLogLine(std::int64_t tokens, std::int64_t maxModelLen,
                                double maxConcurrency);

} // namespace kvl::core
