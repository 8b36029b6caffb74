#pragma once
// A scenario: the model, the four KV levers (each independently on/off), the weights lever,
// the hardware and the workload. Everything the ledger computes is a pure function of it.

#include "kv_format.h"
#include "model.h"
#include "vllm_version.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvl::core {

enum class AttentionMode : std::uint8_t { Native, Mha, Gqa, Mqa };

struct AttentionLever {
    bool enabled = false;
    AttentionMode mode = AttentionMode::Native;
    int gqaKvHeads = 8; // number of KV heads (groups) for Gqa; q heads must divide by it
    friend bool operator==(const AttentionLever&, const AttentionLever&) = default;
};

struct QuantLever {
    bool enabled = false; // off: the model's native dtype (vLLM "auto")
    // What turning the lever on gives: FP8 per tensor, the quantized KV vLLM runs everywhere
    // (--kv-cache-dtype fp8).
    KvFormat format = KvFormat::defaultFor(KvDtype::Fp8E4M3);
    friend bool operator==(const QuantLever&, const QuantLever&) = default;
};

struct PagingLever {
    bool enabled = true; // off: every request reserves max_model_len contiguously
    // Tokens per block. 0 = vLLM's choice: 16, or what the attention backend forces (FlashMLA
    // 64, CUTLASS MLA 128), or the block aligned to the Mamba state for hybrids.
    int blockSize = 0;
    friend bool operator==(const PagingLever&, const PagingLever&) = default;
};

struct PrefixLever {
    bool enabled = false;
    std::int64_t sharedTokens = 0;    // P: the common prompt prefix
    std::int64_t sharingRequests = 0; // N requests share one copy; 0 = all requests
    friend bool operator==(const PrefixLever&, const PrefixLever&) = default;
};

struct Levers {
    AttentionLever attention;
    QuantLever quant;
    PagingLever paging;
    PrefixLever prefix;
    friend bool operator==(const Levers&, const Levers&) = default;
};

struct GpuSpec {
    std::string id;   // "h100-80gb"
    std::string name; // "H100 SXM 80GB"
    std::string vendor;
    std::int64_t memoryBytes = 0; // as the driver reports it (torch total_memory)
    double bandwidthGBs = 0;      // HBM bandwidth, decimal GB/s, datasheet
    std::string memoryType;
    int computeCapability = 0; // 80, 90, 100, ... (NVIDIA); 0 = not NVIDIA or unknown
    double bf16Tflops = 0;     // dense tensor-core BF16 TFLOP/s, datasheet
    double fp8Tflops = 0;      // dense FP8 TFLOP/s, datasheet; 0 = no FP8 tensor cores
    std::string source;        // where the figures come from
    friend bool operator==(const GpuSpec&, const GpuSpec&) = default;
};

// A value out of range, with the scenario file's path of the field that holds it
// ("gpu.bandwidth_gbs", "hardware.kv_memory_bytes"); the CLI names its option instead.
struct FieldProblem {
    std::string field;
    std::string message; // without the field: "must be ..., got ..."
};

// The GPU's datasheet figures within sane bounds: memory 1 byte to 1 PiB, bandwidth 1 GB/s to
// 100,000 GB/s, TFLOP/s 0 (not known) or 1 to 1,000,000, all finite. A bandwidth of 4.9e-324
// would give an infinite decode step. A bandwidth of 0 is "not known" (the speed model gives
// no figures) for a GpuSpec built in code; a scenario file always carries the figure, so its
// reader passes bandwidthKnown and 0 is refused there (it read as a 0 ms step).
std::optional<FieldProblem> gpuProblem(const GpuSpec& g, bool bandwidthKnown = false);

struct Hardware {
    GpuSpec gpu;
    int gpuCount = 1;              // tensor parallel size (--tensor-parallel-size)
    int pipelineParallel = 1;      // --pipeline-parallel-size: layers split over stages
    int dataParallel = 1;          // --data-parallel-size: independent replicas
    bool expertParallel = false;   // --enable-expert-parallel: experts split over TP x DP
    int decodeContextParallel = 1; // --decode-context-parallel-size: KV split along tokens
    // --gpu-memory-utilization; empty = the vLLM release's default (gpuMemoryUtilization()).
    std::optional<double> memoryUtilization;
    // Memory vLLM's profiler keeps out of the KV pool on every GPU; empty = KV Ledger's
    // model-aware estimate (core/deployment.h estimateReserves).
    std::optional<std::int64_t> activationBytes; // activation peak
    std::optional<std::int64_t> overheadBytes;   // non-torch memory + CUDA graphs
    // CUDA graphs' share of the overhead (empty = the release's estimate; 0 = not in the
    // profile, as VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). overheadBytes overrides it.
    std::optional<std::int64_t> cudaGraphBytes;
    std::optional<std::int64_t> kvMemoryBytes; // vLLM kv_cache_memory_bytes: overrides all
    std::optional<WeightDtype> weightDtype;    // weights lever; empty = the model's
    friend bool operator==(const Hardware&, const Hardware&) = default;
};

struct Workload {
    std::int64_t context = 4096;  // tokens per request
    std::int64_t maxModelLen = 0; // 0 = the model's max context
    // vLLM's scheduler budget per step (--max-num-batched-tokens); 0 = vLLM's default for the
    // GPU. It sets the in-flight tokens of sliding and chunked layers.
    std::int64_t maxNumBatchedTokens = 0;
    std::int64_t targetRequests = 0; // for gpus_needed; 0 = not asked
    std::int64_t concurrency = 0;    // running requests for the speed estimate; 0 = as many as fit
    friend bool operator==(const Workload&, const Workload&) = default;
};

// The inference engine whose rules size the KV pool. vLLM is KV Ledger's reference (computeLedger);
// the others have their own units (core/sglang/, core/trtllm/, core/llamacpp/) and answer through
// core/engines.h computeEngine.
enum class Engine : std::uint8_t { Vllm, Sglang, Trtllm, Llamacpp };
std::string_view engineName(Engine e); // vllm sglang trtllm llamacpp
std::optional<Engine> parseEngine(std::string_view name);
// "vLLM", "SGLang", "TensorRT-LLM", "llama.cpp"
std::string_view engineDisplayName(Engine e);

// ggml's tensor types that llama.cpp's -ctk / -ctv accept for the KV cache (common/arg.cpp
// kv_cache_types). The byte sizes live in core/llamacpp/ggml_types.h.
enum class GgmlKvType : std::uint8_t { F32, F16, Bf16, Q8_0, Q4_0, Q4_1, Iq4Nl, Q5_0, Q5_1 };

// llama.cpp's flags that size its KV cache (llama-server / llama-cli, common/arg.cpp).
struct LlamaCppOptions {
    std::int64_t nCtx = 0;              // -c; 0 = the model's training context (n_ctx_train)
    int nParallel = 1;                  // -np: sequences (slots) the cache holds
    bool kvUnified = false;             // --kv-unified: one stream shared by every sequence
    GgmlKvType typeK = GgmlKvType::F16; // -ctk
    GgmlKvType typeV = GgmlKvType::F16; // -ctv
    bool swaFull = false;               // --swa-full: sliding layers keep the whole context
    int nUbatch = 512; // -ub: the SWA cache keeps one micro-batch beyond the window
    friend bool operator==(const LlamaCppOptions&, const LlamaCppOptions&) = default;
};

// SGLang's flags that size its token pool (python/sglang/srt/server_args.py).
struct SglangOptions {
    std::optional<double> memFractionStatic;  // --mem-fraction-static; empty = SGLang's default
    std::int64_t maxTotalTokens = 0;          // --max-total-tokens; 0 = as many as fit
    int pageSize = 1;                         // --page-size
    std::int64_t chunkedPrefillSize = 0;      // --chunked-prefill-size; 0 = SGLang's default
    int cudaGraphMaxBs = 0;                   // --cuda-graph-max-bs; 0 = SGLang's default
    std::optional<double> swaFullTokensRatio; // --swa-full-tokens-ratio; empty = 0.8
    // Free GPU memory as SGLang measures it (get_available_gpu_memory) before and after loading
    // the weights ("Load weight begin/end. avail mem=... GB"); empty = KV Ledger's estimate
    // (the GPU's memory less a 512 MiB CUDA context, then less the weights).
    std::optional<std::int64_t> freeBeforeLoadBytes;
    std::optional<std::int64_t> freeAfterLoadBytes;
    friend bool operator==(const SglangOptions&, const SglangOptions&) = default;
};

// TensorRT-LLM's KvCacheConfig (tensorrt_llm/llmapi/llm_args.py).
struct TrtllmOptions {
    double freeGpuMemoryFraction = 0.9; // kv_cache_config.free_gpu_memory_fraction
    std::int64_t maxTokens = 0;         // kv_cache_config.max_tokens; 0 = no cap
    int tokensPerBlock = 32;            // kv_cache_config.tokens_per_block
    // The profiling run's peak less the KV it allocated for itself ("Peak memory during memory
    // usage profiling" minus "tmp kv_mem"); empty = KV Ledger's estimate (weights + reserves).
    std::optional<std::int64_t> peakMemoryBytes;
    friend bool operator==(const TrtllmOptions&, const TrtllmOptions&) = default;
};

// How vLLM keeps Mamba state for prefix caching (vllm/config/cache.py, mamba_cache_mode):
// none keeps one state per request, align one more at block boundaries, all one per block.
enum class MambaCacheMode : std::uint8_t { Auto, None, Align, All };

// vLLM engine flags that change the accounting.
struct EngineOptions {
    bool disableHybridKvCacheManager = false; // --disable-hybrid-kv-cache-manager
    // VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1: keeps the hybrid manager for
    // chunked local attention in the releases that disable it by default (0.10.1-0.12).
    bool allowChunkedLocalHybrid = false;
    bool asyncScheduling = true;                          // --async-scheduling (vLLM's default: on)
    std::int64_t maxNumSeqs = 0;                          // --max-num-seqs; 0 = vLLM's default
    MambaCacheMode mambaCacheMode = MambaCacheMode::Auto; // --mamba-cache-mode
    std::optional<KvDtype> mambaSsmCacheDtype;            // --mamba-ssm-cache-dtype
    // The vLLM release whose rules apply (core/vllm_version.h); empty = the newest known.
    std::optional<VllmVersion> vllmVersion;
    // The engine whose rules apply; the fields above are vLLM's, the structs below each
    // other engine's.
    Engine kind = Engine::Vllm;
    LlamaCppOptions llamacpp;
    SglangOptions sglang;
    TrtllmOptions trtllm;
    friend bool operator==(const EngineOptions&, const EngineOptions&) = default;
};

struct Scenario {
    ModelSpec model;
    Levers levers;
    Hardware hardware;
    Workload workload;
    EngineOptions engine;

    std::int64_t effectiveMaxModelLen() const {
        return workload.maxModelLen > 0 ? workload.maxModelLen : model.maxContext;
    }
    // A one-line error naming the first bad field, or nothing.
    std::optional<std::string> validate() const;
    // The checks whose value a user types as a field of the scenario file or as a command-line
    // option, with the file's field path, so that each reader names the field or the option
    // that holds the value with the same message. validate() runs these first.
    std::optional<FieldProblem> fieldProblem() const;
};

// A block size vLLM would refuse (its attention backends' supported sizes for the model and
// GPU, core::resolveBlockSizes), named as the file's field levers.paging.block_size. Not part
// of validate(): the window shows such a block size as a what-if; the scenario file, the
// --reference file and the command line refuse it.
std::optional<FieldProblem> blockSizeProblem(const Scenario& s);

// The dimension a KV format's group size and per-channel scales are checked against: the MLA
// latent for an all-MLA model (what it stores per token), else the head dimension.
int kvFormatCheckDim(const ModelSpec& m);

// Bytes <-> GiB helpers (GiB = 2^30; GB = 10^9; never mixed).
inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;
inline constexpr std::int64_t kGB = 1'000'000'000;
std::int64_t gibToBytes(double gib); // rounded to the nearest byte
double bytesToGiB(std::int64_t bytes);

} // namespace kvl::core
