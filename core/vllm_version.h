#pragma once
// Which vLLM: the release the user runs, and the accounting rules in force in it. The capacity
// of one model on one GPU moves between releases (the "GPU KV cache size" formula, the default
// memory utilization, CUDA graphs in the memory profile, KV-sharing layers, Mamba's cache mode,
// the KV cache dtypes that exist), so every rule that changed is one row of one table here,
// keyed by the first release that has the new behaviour and citing the vLLM change. The
// ledger asks vllmRules(version) and never compares versions itself.

#include "core/result.h"

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kvl::core {

struct VllmVersion {
    int major = 0;
    int minor = 0;
    int patch = 0;
    friend auto operator<=>(const VllmVersion&, const VllmVersion&) = default;
    friend bool operator==(const VllmVersion&, const VllmVersion&) = default;
    std::string str() const;    // "0.20.1"
    std::string series() const; // "0.20"
};

// The oldest release modelled (the V1 engine's KV cache groups and its three log lines) and
// the newest whose code the table was read from.
VllmVersion oldestKnownVllm();
VllmVersion newestKnownVllm();
// One entry per minor series from the oldest to the newest, for the window's selector.
std::vector<VllmVersion> knownVllmSeries();

// "0.11", "0.11.2", "v0.11.2", "0.11.2rc1", "0.11.2.post1", "0.11.1.dev3+gabc": major, minor
// and patch are read, a pre-release or local suffix is ignored. A malformed text, or a release
// before the oldest modelled, is BadInput with a one-line reason (the caller adds the option
// or field name). A release newer than the newest known parses; vllmRules then applies the
// newest known rules and vllmVersionWarning says so.
Result<VllmVersion> parseVllmVersion(std::string_view text);
// The one-line warning for a release newer than the table, else nothing.
std::optional<std::string> vllmVersionWarning(const VllmVersion& v);

// How "GPU KV cache size: N tokens" is computed (vllm/v1/core/kv_cache_utils.py).
enum class TokensLineFormula : std::uint8_t {
    // num_blocks // len(kv_cache_groups) x the smallest block size: a hybrid model's groups
    // share the blocks, so a model with several groups reports fewer tokens than it holds.
    BlocksPerGroup,
    // int(max_concurrency x max_model_len): what max_model_len-long requests can hold.
    ConcurrencyTimesMaxModelLen,
};

// Every rule the ledger keys by release, as one release applies them.
struct VllmRules {
    VllmVersion version; // clamped to the known range
    TokensLineFormula tokensLine = TokensLineFormula::BlocksPerGroup;
    double defaultGpuMemoryUtilization = 0.9;
    // CUDA-graph memory is estimated in the memory profile, before the KV cache is sized
    // (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 by default); before, graphs were captured
    // after the KV cache and came out of the headroom that gpu_memory_utilization leaves.
    bool cudaGraphsInProfile = false;
    // "GPU KV cache size" and "Maximum concurrency" are one line (update_kv_cache_capacity).
    bool capacityOneLine = false;
    // "Available KV cache memory" prints format_gib (rounded to 2 places, trailing zeros
    // dropped: "49.0", "4.1"); before, "%.2f".
    bool availableFormatGib = false;
    // Hybrid (attention + Mamba) models run prefix caching with mamba_cache_mode "align" by
    // default; before, Mamba layers kept one state per request (mode "none").
    bool hybridPrefixCachingAlign = false;
    // Chunked local attention (Llama-4) keeps the hybrid KV cache manager by default; where
    // false vLLM disables it unless VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1, and
    // chunked layers then hold every token as full attention does.
    bool chunkedLocalHybridByDefault = true;
    // A sliding or chunked group admits a request by its window plus the tokens in flight,
    // max_concurrent_batches x max_num_batched_tokens (async scheduling: 2); before, plus
    // max_num_batched_tokens alone.
    bool admissionInFlightTokens = false;
    // A hybrid with Mamba / linear-attention layers refuses to start when max_num_seqs exceeds
    // the pool's blocks (one Mamba block per decode sequence, for full CUDA graphs); before,
    // the CUDA-graph sizes were capped silently.
    bool mambaSeqsRefused = false;
    // --kv-cache-dtype values that exist.
    bool perTokenHeadDtypes = false; // int8_per_token_head, fp8_per_token_head
    bool int4PerTokenHeadDtype = false;
    bool nvfp4Dtype = false;       // nvfp4 (compute capability 10.x)
    bool turboQuantDtypes = false; // turboquant_k8v4, _4bit_nc, _k3v4_nc, _3bit_nc
    // NemotronH keeps its SSM state in float32 when its config names no
    // mamba_ssm_cache_dtype; before, in float16 (half the Mamba page, half the attention block).
    bool nemotronHSsmFp32 = false;
};

VllmRules vllmRules(const VllmVersion& v);
// The rules of the scenario's release: the user's, or the newest known when none is given.
VllmRules vllmRules(const std::optional<VllmVersion>& v);

// One row of the table: the first release with the new behaviour, what changed and where
// vLLM changed it.
enum class VllmRule : std::uint8_t {
    ChunkedLocalHybrid,
    AvailableFormat,
    MambaSeqsRefused,
    PerTokenHeadDtypes,
    TurboQuantDtypes,
    NemotronHSsmFp32,
    Nvfp4Dtype,
    GpuMemoryUtilization,
    CudaGraphsInProfile,
    TokensLine,
    Int4PerTokenHeadDtype,
    AdmissionInFlight,
    CapacityOneLine,
    HybridPrefixCaching,
};
struct VllmRuleChange {
    VllmRule rule;
    VllmVersion since;
    std::string_view what;   // "GPU KV cache size is int(max concurrency x max_model_len)"
    std::string_view effect; // the capacity it moves, for "what moved and why"
    std::string_view source; // the vLLM PR or file
    void (*apply)(VllmRules&);
};
std::span<const VllmRuleChange> vllmRuleChanges();

// The rows that apply between two releases (either order), oldest first, as one line each:
// "0.20 -> 0.21: layers that share another layer's KV hold no cache (vLLM #...)".
std::vector<std::string> vllmChangesBetween(const VllmVersion& a, const VllmVersion& b);

// vLLM's refusal of a --kv-cache-dtype at the release and GPU, or nothing when it starts:
// a dtype from a later release is not among argparse's choices; nvfp4 needs an SM100-class
// GPU (compute capability 10.x; 0 = unknown, not refused).
std::optional<std::string> vllmCacheDtypeRefusal(const VllmRules& rules, std::string_view dtype,
                                                 int computeCapability);

// "Available KV cache memory: X GiB" as the release prints X.
std::string formatAvailableKvGib(const VllmRules& rules, std::int64_t bytes);
// The startup lines the release prints for the KV cache, in order: the available memory
// (where the release's ledger knows it, i.e. always here), then the capacity as one line
// (since 0.28) or two.
std::vector<std::string> vllmKvCacheLines(const VllmRules& rules, std::int64_t availableKvBytes,
                                          std::int64_t tokens, std::int64_t maxModelLen,
                                          double maxConcurrency);

} // namespace kvl::core
