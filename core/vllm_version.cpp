#include "vllm_version.h"

#include "core/kv_cache.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>

namespace kvl::core {

namespace {

constexpr VllmVersion kOldest{0, 10, 0};
constexpr VllmVersion kNewest{0, 31, 0};

// The table: one row per rule that changed, sorted by release. vllmRules starts from the
// oldest release's behaviour (the VllmRules defaults) and applies every row up to the release
// asked. Where the first release is inferred rather than read in a tagged tree, the source
// says so and names the evidence.
const VllmRuleChange kChanges[] = {
    {VllmRule::ChunkedLocalHybrid,
     {0, 10, 1},
     "chunked local attention (Llama-4) disables the hybrid KV cache manager by default "
     "(VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=0)",
     "Llama-4's chunked layers hold every token, as full attention does: far fewer tokens",
     "vLLM PR #21761 (vllm/envs.py, vllm/config/vllm.py)",
     [](VllmRules& r) { r.chunkedLocalHybridByDefault = false; }},
    {VllmRule::AvailableFormat,
     {0, 12, 0},
     "\"Available KV cache memory\" prints format_gib (\"49.0\"), no longer \"%.2f\" (\"49.00\")",
     "the same memory, printed differently",
     "vllm/utils/mem_utils.py format_gib in vllm/v1/worker/gpu_worker.py; 0.11.x prints %.2f, "
     "0.17 format_gib; the release between is inferred",
     [](VllmRules& r) { r.availableFormatGib = true; }},
    {VllmRule::ChunkedLocalHybrid,
     {0, 13, 0},
     "chunked local attention keeps the hybrid KV cache manager by default again "
     "(VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1)",
     "Llama-4's chunked layers hold their chunk plus the tokens in flight",
     "vLLM PR #29627 (vllm/envs.py); 0.12.0's Llama-4 Scout log still disables it, so 0.13 is "
     "inferred",
     [](VllmRules& r) { r.chunkedLocalHybridByDefault = true; }},
    {VllmRule::MambaSeqsRefused,
     {0, 19, 0},
     "a Mamba / linear-attention hybrid refuses to start when max_num_seqs exceeds the pool's "
     "blocks (each decode sequence needs one Mamba block for full CUDA graphs)",
     "long max_model_len on a hybrid needs --max-num-seqs at most the blocks",
     "vLLM PR #38270 (vllm/config/compilation.py); #49064, #55148",
     [](VllmRules& r) { r.mambaSeqsRefused = true; }},
    {VllmRule::PerTokenHeadDtypes,
     {0, 19, 0},
     "--kv-cache-dtype int8_per_token_head and fp8_per_token_head exist",
     "8-bit KV with a float32 scale per token and head",
     "vLLM PR #38378 (0.19 or 0.20)",
     [](VllmRules& r) { r.perTokenHeadDtypes = true; }},
    {VllmRule::TurboQuantDtypes,
     {0, 20, 0},
     "--kv-cache-dtype turboquant_k8v4, turboquant_4bit_nc, turboquant_k3v4_nc and "
     "turboquant_3bit_nc exist (dense models keep their first and last 2 layers unquantized)",
     "about 2.6x (k8v4) to 4.9x (3bit_nc) FP16's tokens on the quantized layers",
     "vLLM PR #38479 (vllm/model_executor/layers/quantization/turboquant/config.py), in the "
     "v0.20.0 release notes as quoted in defilantech/LLMKube#354",
     [](VllmRules& r) { r.turboQuantDtypes = true; }},
    {VllmRule::NemotronHSsmFp32,
     {0, 20, 0},
     "NemotronH models whose config names no mamba_ssm_cache_dtype keep the SSM state in "
     "float32, no longer float16",
     "the Mamba page doubles, and with it the attention block: Nemotron-H-56B at 40 GiB goes "
     "from 504 blocks of 2,080 tokens to 254 of 4,128",
     "vLLM PR #39032 (vllm/model_executor/models/config.py NemotronHForCausalLMConfig; merged "
     "after 0.19.0 shipped, so 0.20 is inferred)",
     [](VllmRules& r) { r.nemotronHSsmFp32 = true; }},
    {VllmRule::Nvfp4Dtype,
     {0, 21, 0},
     "--kv-cache-dtype nvfp4 exists (compute capability 10.x)",
     "4-bit KV with an fp8 scale per 16 values: about 3.6x FP16's tokens",
     "vLLM PR #40177",
     [](VllmRules& r) { r.nvfp4Dtype = true; }},
    {VllmRule::GpuMemoryUtilization,
     {0, 21, 0},
     "--gpu-memory-utilization defaults to 0.92, not 0.9",
     "2% more of the GPU for weights, reserves and the KV cache",
     "vLLM PR #38284; vllm/config/cache.py",
     [](VllmRules& r) { r.defaultGpuMemoryUtilization = 0.92; }},
    {VllmRule::CudaGraphsInProfile,
     {0, 21, 0},
     "CUDA-graph memory is estimated in the memory profile, before the KV cache is sized",
     "the KV cache shrinks by the graphs' memory (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 "
     "turns it off)",
     "vLLM PR #38284 (estimate: PR #30515); vllm/envs.py",
     [](VllmRules& r) { r.cudaGraphsInProfile = true; }},
    {VllmRule::TokensLine,
     {0, 21, 0},
     "\"GPU KV cache size\" is int(max concurrency x max_model_len), no longer the blocks "
     "shared out over the KV cache groups",
     "a hybrid model's logged tokens grow by up to its group count (Gemma-4-31B: ~9.5x)",
     "vllm/v1/core/kv_cache_utils.py _report_kv_cache_config; vLLM #43308 (same memory, "
     "0.20.0 ~55k tokens, 0.21.0 ~525k), #40691",
     [](VllmRules& r) { r.tokensLine = TokensLineFormula::ConcurrencyTimesMaxModelLen; }},
    {VllmRule::Int4PerTokenHeadDtype,
     {0, 25, 1},
     "--kv-cache-dtype int4_per_token_head exists",
     "4-bit KV with a float32 scale per token and head",
     "vllm/config/cache.py CacheDType",
     [](VllmRules& r) { r.int4PerTokenHeadDtype = true; }},
    {VllmRule::AdmissionInFlight,
     {0, 26, 0},
     "a sliding or chunked layer's request needs its window plus the tokens in flight "
     "(max_concurrent_batches x max_num_batched_tokens), not plus max_num_batched_tokens",
     "sliding and chunked groups take more blocks per request: fewer concurrent requests",
     "vllm/config/vllm.py max_in_flight_tokens, vLLM PR #47728 (in 0.27.1; 0.26 inferred); "
     "0.12's Llama-4 Scout log matches max_num_batched_tokens",
     [](VllmRules& r) { r.admissionInFlightTokens = true; }},
    {VllmRule::CapacityOneLine,
     {0, 28, 0},
     "\"GPU KV cache size\" and \"Maximum concurrency\" print as one line",
     "the same figures on one line",
     "vLLM PR #50462 (update_kv_cache_capacity)",
     [](VllmRules& r) { r.capacityOneLine = true; }},
    {VllmRule::HybridPrefixCaching,
     {0, 28, 0},
     "attention + Mamba hybrids run prefix caching by default, mamba_cache_mode \"align\"",
     "hybrids keep an extra Mamba state per request and align their attention blocks",
     "vLLM PR #50991; vllm/config/cache.py mamba_cache_mode",
     [](VllmRules& r) { r.hybridPrefixCachingAlign = true; }},
};

bool readNumber(std::string_view& s, int& out) {
    const char* end = s.data() + s.size();
    const auto [p, ec] = std::from_chars(s.data(), end, out);
    if (ec != std::errc() || p == s.data() || out < 0 || out > 9999)
        return false;
    s.remove_prefix(static_cast<std::size_t>(p - s.data()));
    return true;
}

VllmVersion clamped(const VllmVersion& v) {
    return std::clamp(v, kOldest, kNewest);
}

} // namespace

std::string VllmVersion::str() const {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string VllmVersion::series() const {
    return std::to_string(major) + "." + std::to_string(minor);
}

VllmVersion oldestKnownVllm() {
    return kOldest;
}

VllmVersion newestKnownVllm() {
    return kNewest;
}

std::vector<VllmVersion> knownVllmSeries() {
    std::vector<VllmVersion> out;
    for (int minor = kOldest.minor; minor <= kNewest.minor; ++minor)
        out.push_back({0, minor, 0});
    return out;
}

Result<VllmVersion> parseVllmVersion(std::string_view text) {
    const std::string shown(text.substr(0, 40));
    auto bad = [&](const std::string& why) {
        return makeError(ErrorCode::BadInput,
                         "expected a vLLM release such as 0.11 or 0.20.1, got '" + shown + "'" +
                             (why.empty() ? "" : ": " + why));
    };
    std::string_view s = text;
    if (!s.empty() && (s.front() == 'v' || s.front() == 'V'))
        s.remove_prefix(1);
    VllmVersion v;
    if (!readNumber(s, v.major) || s.empty() || s.front() != '.')
        return bad("");
    s.remove_prefix(1);
    if (!readNumber(s, v.minor))
        return bad("");
    if (!s.empty() && s.front() == '.' && s.size() > 1 && s[1] >= '0' && s[1] <= '9') {
        s.remove_prefix(1);
        if (!readNumber(s, v.patch))
            return bad("");
    }
    // PEP 440 suffixes vLLM's builds carry: rc1, .post1, .dev3+gabc, +cu128.
    if (!s.empty()) {
        const char c = s.front();
        const bool suffix = c == '+' || c == '.' || c == '-' || c == 'r' || c == 'a' || c == 'b';
        if (!suffix)
            return bad("");
    }
    if (v < kOldest)
        return bad("vLLM before " + kOldest.series() +
                   " (the V0 engine, '# GPU blocks') is not modelled; the oldest is " +
                   kOldest.series());
    return v;
}

std::optional<std::string> vllmVersionWarning(const VllmVersion& v) {
    if (v <= kNewest)
        return std::nullopt;
    return "vLLM " + v.str() + " is newer than the newest release KV Ledger has read (" +
           kNewest.str() + "): its rules are used";
}

VllmRules vllmRules(const VllmVersion& v) {
    VllmRules r;
    r.version = clamped(v);
    for (const auto& c : kChanges)
        if (c.since <= r.version)
            c.apply(r);
    return r;
}

VllmRules vllmRules(const std::optional<VllmVersion>& v) {
    return vllmRules(v.value_or(kNewest));
}

std::span<const VllmRuleChange> vllmRuleChanges() {
    return kChanges;
}

std::vector<std::string> vllmChangesBetween(const VllmVersion& a, const VllmVersion& b) {
    const VllmVersion lo = clamped(std::min(a, b)), hi = clamped(std::max(a, b));
    std::vector<std::string> out;
    for (const auto& c : kChanges) {
        if (!(lo < c.since && c.since <= hi))
            continue;
        out.push_back(std::string(c.since.str()) + ": " + std::string(c.what) + " (" +
                      std::string(c.effect) + "; " + std::string(c.source) + ")");
    }
    return out;
}

std::optional<std::string> vllmCacheDtypeRefusal(const VllmRules& rules, std::string_view dtype,
                                                 int computeCapability) {
    const bool perTokenHead = dtype == "int8_per_token_head" || dtype == "fp8_per_token_head";
    const bool nvfp4 = dtype == "nvfp4";
    // The release a dtype arrived in is its row of the table, not a number restated here.
    auto firstRelease = [](VllmRule rule) -> std::optional<VllmVersion> {
        for (const auto& c : kChanges)
            if (c.rule == rule)
                return c.since;
        return std::nullopt;
    };
    std::optional<VllmVersion> since;
    if (perTokenHead && !rules.perTokenHeadDtypes)
        since = firstRelease(VllmRule::PerTokenHeadDtypes);
    else if (dtype == "int4_per_token_head" && !rules.int4PerTokenHeadDtype)
        since = firstRelease(VllmRule::Int4PerTokenHeadDtype);
    else if (nvfp4 && !rules.nvfp4Dtype)
        since = firstRelease(VllmRule::Nvfp4Dtype);
    else if (dtype.substr(0, 11) == "turboquant_" && !rules.turboQuantDtypes)
        since = firstRelease(VllmRule::TurboQuantDtypes);
    if (since)
        // argparse's own refusal of a value outside CacheDType's choices.
        return "vLLM " + rules.version.str() +
               " refuses to start: argument --kv-cache-dtype: " + "invalid choice: '" +
               std::string(dtype) + "' (it exists from vLLM " + since->str() + ")";
    if (nvfp4 && computeCapability != 0 && computeCapability / 10 != 10)
        return "vLLM refuses --kv-cache-dtype nvfp4 on this GPU: NVFP4 KV needs compute "
               "capability 10.x (B200, B300, GB200), this one is " +
               std::to_string(computeCapability / 10) + "." +
               std::to_string(computeCapability % 10);
    return std::nullopt;
}

std::string formatAvailableKvGib(const VllmRules& rules, std::int64_t bytes) {
    if (rules.availableFormatGib)
        return formatGibLikeVllm(bytes);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f",
                  static_cast<double>(bytes) / static_cast<double>(std::int64_t{1} << 30));
    return buf;
}

std::vector<std::string> vllmKvCacheLines(const VllmRules& rules, std::int64_t availableKvBytes,
                                          std::int64_t tokens, std::int64_t maxModelLen,
                                          double maxConcurrency) {
    std::vector<std::string> out{
        "Available KV cache memory: " + formatAvailableKvGib(rules, availableKvBytes) + " GiB"};
    const std::string one = vllmCapacityLogLine(tokens, maxModelLen, maxConcurrency);
    if (rules.capacityOneLine) {
        out.push_back(one);
    } else {
        // The same two figures, split where the one-line form joins them.
        const auto comma = one.find(", Maximum concurrency");
        out.push_back(one.substr(0, comma));
        out.push_back(one.substr(comma + 2));
    }
    return out;
}

} // namespace kvl::core
