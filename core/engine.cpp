#include "engine.h"
#include "enum_names.h"
#include "saturating.h"

#include "kv_cache.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <numeric>
#include <tuple>

namespace kvl::core {

namespace {

std::int64_t elementBytes(KvDtype d) {
    return std::max(1, bitsPerElement(d) / 8);
}

bool hasAttention(const ModelSpec& m) {
    return m.countLayers(LayerKind::Full) + m.countLayers(LayerKind::Sliding) +
               m.countLayers(LayerKind::Chunked) + m.countLayers(LayerKind::Mla) >
           0;
}

int tpOf(const Scenario& s) {
    return std::max(1, s.hardware.gpuCount);
}

KvFormat requestedFormat(const Scenario& s) {
    return s.levers.quant.enabled ? s.levers.quant.format
                                  : KvFormat::defaultFor(s.model.nativeKvDtype);
}

bool isPerTensorFp8(const KvFormat& f) {
    return (f.dtype == KvDtype::Fp8E4M3 || f.dtype == KvDtype::Fp8E5M2) &&
           f.granularity == Granularity::PerTensor;
}

bool isPerTokenHead(const KvFormat& f) {
    return f.granularity == Granularity::PerTokenHead && f.scaleType == ScaleType::Fp32 &&
           !f.hasZeroPoint;
}

// An attention backend as vllm/platforms/cuda.py ranks them: its kernel block sizes (a block
// size is accepted when it is a multiple of one of them) and its preferred size.
struct Backend {
    const char* name;
    std::vector<int> kernelSizes;
    int preferred;
};

bool accepts(const Backend& b, int blockSize) {
    return std::any_of(b.kernelSizes.begin(), b.kernelSizes.end(),
                       [&](int k) { return blockSize % k == 0; });
}

const Backend kFlashAttn{"FLASH_ATTN", {16}, 16};
const Backend kFlashInfer{"FLASHINFER", {16, 32, 64}, 16};
const Backend kTritonAttn{"TRITON_ATTN", {16}, 16};
// The TurboQuant attention backend (vLLM PR #38479): TurboQuant pages are its own layout.
const Backend kTurboQuant{"TURBOQUANT", {16}, 16};
const Backend kFlashAttnMla{"FLASH_ATTN_MLA", {16}, 16};
const Backend kFlashMla{"FLASHMLA", {64}, 64};
const Backend kFlashInferMla{"FLASHINFER_MLA", {32, 64}, 32};
const Backend kCutlassMla{"CUTLASS_MLA", {128}, 128};
const Backend kTritonMla{"TRITON_MLA", {16}, 16};
const Backend kFlashMlaSparse{"FLASHMLA_SPARSE", {64}, 64};
const Backend kFlashInferMlaSparse{"FLASHINFER_MLA_SPARSE", {32, 64}, 32};

// The backends that can run the scenario's attention on its GPU, best first
// (_get_backend_priorities filtered by compute capability and KV dtype support).
struct BackendList {
    std::array<const Backend*, 4> items{};
    int size = 0;
    void add(const Backend& b) { items[static_cast<std::size_t>(size++)] = &b; }
    const Backend& front() const { return *items[0]; }
    const Backend* const* begin() const { return items.data(); }
    const Backend* const* end() const { return items.data() + size; }
};

BackendList backendsFor(const Scenario& s, const KvFormat& f) {
    BackendList out;
    const int major = s.hardware.gpu.computeCapability / 10;
    const ModelSpec& m = s.model;
    if (m.isMla()) {
        const bool fp8 = isPerTensorFp8(f) || f.granularity == Granularity::DsMla;
        if (m.sparseMla) {
            if (major == 10 && (fp8 || m.qHeads <= 16)) {
                out.add(kFlashInferMlaSparse);
                out.add(kFlashMlaSparse);
            } else {
                out.add(kFlashMlaSparse);
                if (major == 10)
                    out.add(kFlashInferMlaSparse);
            }
            return out;
        }
        const bool nopeOk = m.qkNopeHeadDim == 0 || m.qkNopeHeadDim == 64 ||
                            m.qkNopeHeadDim == 128 || m.qkNopeHeadDim == 192;
        if (major == 10) {
            if (nopeOk)
                out.add(kFlashInferMla);
            out.add(kCutlassMla);
        } else if (major == 9) {
            if (!fp8) // FLASH_ATTN_MLA takes auto / fp16 / bf16 only
                out.add(kFlashAttnMla);
            out.add(kFlashMla); // dense FlashMLA: Hopper only
        }
        out.add(kTritonMla);
        return out;
    }
    if (f.granularity == Granularity::TurboQuant) {
        out.add(kTurboQuant);
    } else if (isPerTokenHead(f) && f.dtype != KvDtype::Fp32) {
        out.add(kTritonAttn); // int8/fp8/int4 per token-head: the Triton backend only
    } else if (f.dtype == KvDtype::Fp4E2M1) {
        out.add(kFlashInfer);
    } else if (major == 10) {
        out.add(kFlashInfer);
        out.add(kFlashAttn);
        out.add(kTritonAttn);
    } else {
        out.add(kFlashAttn);
        out.add(kFlashInfer);
        out.add(kTritonAttn);
    }
    return out;
}

// One attention layer's bytes per token (block size 1), as _align_hybrid_block_size takes it:
// the model's head size and per-rank KV heads, or the MLA latent.
std::int64_t attentionBytesPerToken(const Scenario& s, const KvFormat& f) {
    const ModelSpec& m = s.model;
    if (m.isMla())
        return latentBytesPerToken(f, m.mlaLatentDim());
    const int heads = std::max(1, m.kvHeads / tpOf(s));
    return heads * (keyBytesPerToken(f, m.headDim) + valueBytesPerToken(f, m.headDim));
}

bool containsNoCase(std::string_view text, std::string_view word) {
    const auto it =
        std::search(text.begin(), text.end(), word.begin(), word.end(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) ==
                   std::tolower(static_cast<unsigned char>(b));
        });
    return it != text.end();
}

} // namespace

std::int64_t stateBytesPerLayer(const StateSpec& st, KvDtype modelDtype,
                                std::optional<KvDtype> ssmDtype, int tp) {
    tp = std::max(1, tp);
    if (!checkStateTensorParallel(st, tp))
        return 0;
    const std::int64_t conv = elementBytes(modelDtype);
    const std::int64_t ssm = elementBytes(ssmDtype.value_or(modelDtype));
    const std::int64_t k = std::max(0, st.convKernel - 1);
    switch (st.kind) {
    case StateKind::Mamba1:
        // conv (k - 1, d_inner / tp), temporal (d_inner / tp, d_state)
        return k * (st.intermediateSize / tp) * conv +
               (st.intermediateSize / tp) * st.stateSize * ssm;
    case StateKind::Mamba2: {
        // Groups are replicated up to TP when they do not divide it
        // (extra_groups_for_head_shards).
        const std::int64_t groups = st.nGroups + (st.nGroups % tp == 0 ? 0 : tp - st.nGroups);
        const std::int64_t convDim = st.intermediateSize + 2 * groups * st.stateSize;
        return k * (convDim / tp) * conv +
               std::int64_t{st.numHeads / tp} * st.headDim * st.stateSize * ssm;
    }
    case StateKind::GatedDeltaNet: {
        // conv (k - 1, (2 Hk Dk + Hv Dv) / tp), temporal (Hv / tp, Dv, Dk)
        const std::int64_t convDim = std::int64_t{2} * st.numKeyHeads * st.keyHeadDim +
                                     std::int64_t{st.numValueHeads} * st.valueHeadDim;
        return k * (convDim / tp) * conv +
               std::int64_t{st.numValueHeads / tp} * st.valueHeadDim * st.keyHeadDim * ssm;
    }
    case StateKind::ShortConv:
        return k * (st.intermediateSize / tp) * conv;
    }
    return 0;
}

std::optional<KvDtype> effectiveSsmDtype(const Scenario& s) {
    if (s.engine.mambaSsmCacheDtype)
        return s.engine.mambaSsmCacheDtype;
    if (!s.model.state)
        return std::nullopt;
    // NemotronHForCausalLMConfig (vllm/model_executor/models/config.py) resolves "auto" to the
    // config's mamba_ssm_cache_dtype, else to its default: float16, float32 since vLLM #39032.
    if (s.model.state->ssmDtypeNemotronHDefault)
        return vllmRules(s.engine.vllmVersion).nemotronHSsmFp32 ? KvDtype::Fp32 : KvDtype::Fp16;
    return s.model.state->ssmDtype;
}

Status checkStateTensorParallel(const StateSpec& st, int tp) {
    auto need = [&](std::int64_t v, const char* what) -> Status {
        if (v % tp != 0)
            return makeError(ErrorCode::Unsupported,
                             std::string("tensor parallel ") + std::to_string(tp) +
                                 " does not divide the state's " + what + " (" + std::to_string(v) +
                                 "); vLLM cannot shard it");
        return {};
    };
    switch (st.kind) {
    case StateKind::Mamba1:
    case StateKind::ShortConv:
        return need(st.intermediateSize, "intermediate size");
    case StateKind::Mamba2: {
        if (auto r = need(st.numHeads, "heads"); !r)
            return r;
        const std::int64_t groups = st.nGroups + (st.nGroups % tp == 0 ? 0 : tp - st.nGroups);
        return need(st.intermediateSize + 2 * groups * st.stateSize, "conv width");
    }
    case StateKind::GatedDeltaNet: {
        if (auto r = need(st.numValueHeads, "value heads"); !r)
            return r;
        return need(std::int64_t{2} * st.numKeyHeads * st.keyHeadDim +
                        std::int64_t{st.numValueHeads} * st.valueHeadDim,
                    "conv width");
    }
    }
    return {};
}

SchedulerDefaults schedulerDefaults(const GpuSpec& gpu) {
    const bool large = gpu.memoryBytes >= std::int64_t{70} * kGiB;
    // Catalog ids are lower case; the name (any case) only for GPUs without one.
    const bool a100 = gpu.id.empty() ? containsNoCase(gpu.name, "a100")
                                     : gpu.id.find("a100") != std::string::npos;
    if (large && !a100)
        return {8192, 1024};
    return {2048, 256};
}

double gpuMemoryUtilization(const Scenario& s) {
    return s.hardware.memoryUtilization.value_or(
        vllmRules(s.engine.vllmVersion).defaultGpuMemoryUtilization);
}

std::int64_t effectiveMaxNumSeqs(const Scenario& s) {
    if (s.engine.maxNumSeqs > 0)
        return s.engine.maxNumSeqs;
    return std::min(schedulerDefaults(s.hardware.gpu).maxNumSeqs, effectiveMaxNumBatchedTokens(s));
}

std::int64_t effectiveMaxNumBatchedTokens(const Scenario& s) {
    if (s.workload.maxNumBatchedTokens > 0)
        return s.workload.maxNumBatchedTokens;
    const SchedulerDefaults d = schedulerDefaults(s.hardware.gpu);
    const std::int64_t seqs = s.engine.maxNumSeqs > 0 ? s.engine.maxNumSeqs : d.maxNumSeqs;
    const std::int64_t len = std::max<std::int64_t>(1, s.effectiveMaxModelLen());
    // mnbt = min(max_num_seqs * max_model_len, mnbt); the product only matters when small.
    if (seqs >= d.maxNumBatchedTokens || len >= d.maxNumBatchedTokens)
        return d.maxNumBatchedTokens;
    return std::min(seqs * len, d.maxNumBatchedTokens);
}

MambaCacheMode effectiveMambaCacheMode(const Scenario& s) {
    const ModelSpec& m = s.model;
    if (m.countLayers(LayerKind::State) == 0 || !hasAttention(m))
        return MambaCacheMode::None; // attention-free models have no prefix caching
    MambaCacheMode mode = s.engine.mambaCacheMode;
    if (mode == MambaCacheMode::Auto)
        return vllmRules(s.engine.vllmVersion).hybridPrefixCachingAlign ? MambaCacheMode::Align
                                                                        : MambaCacheMode::None;
    // "all" needs a model that supports Mamba prefix caching (Mamba1/2 hybrids such as
    // Nemotron-H, Jamba, Granite-4.0-H); gated delta nets fall back to "align".
    if (mode == MambaCacheMode::All && m.state && m.state->kind == StateKind::GatedDeltaNet)
        return MambaCacheMode::Align;
    return mode;
}

bool usesV2ModelRunner(const ModelSpec& m) {
    return m.countLayers(LayerKind::State) == 0 && !m.isMoe();
}

std::int64_t inFlightTokens(const Scenario& s) {
    const int pp = std::max(1, s.hardware.pipelineParallel);
    const std::int64_t mnbt = effectiveMaxNumBatchedTokens(s);
    if (!vllmRules(s.engine.vllmVersion).admissionInFlightTokens)
        return mnbt; // VllmRule::AdmissionInFlight
    if (s.engine.asyncScheduling && !usesV2ModelRunner(s.model) && pp > 1)
        return mnbt * pp; // the v1 runner does not overlap batches across PP stages
    return maxInFlightTokens(mnbt, s.engine.asyncScheduling, pp);
}

BlockSizes resolveBlockSizes(const Scenario& s) {
    BlockSizes out;
    const KvFormat f = requestedFormat(s);
    const BackendList backends = backendsFor(s, f);
    const int user = s.levers.paging.blockSize;
    if (s.hardware.gpu.vendor == "AMD")
        out.notes.push_back("ROCm attention backends are not modelled: block size 16 assumed");
    const Backend* chosen = &backends.front();
    if (user <= 0) {
        // get_preferred_block_size(16): 16 when the backend takes it, else its smallest size.
        out.attention = accepts(*chosen, 16) ? 16 : chosen->preferred;
        out.forced = out.attention != 16;
    } else {
        auto it = std::find_if(backends.begin(), backends.end(),
                               [&](const Backend* b) { return accepts(*b, user); });
        if (it == backends.end()) {
            std::string sizes;
            for (const Backend* b : backends)
                for (int k : b->kernelSizes)
                    sizes += (sizes.empty() ? "" : ", ") + std::to_string(k);
            out.error = "vLLM has no attention backend for block size " + std::to_string(user) +
                        " with " + s.model.name + " on " + s.hardware.gpu.name +
                        ": use a multiple of one of " + sizes;
            out.attention = user;
        } else {
            if (it != backends.begin())
                out.notes.push_back("--block-size " + std::to_string(user) + " precludes " +
                                    backends.front().name + "; vLLM runs " + (*it)->name);
            chosen = *it;
            out.attention = user;
        }
    }
    out.backend = chosen->name;

    const ModelSpec& m = s.model;
    out.mambaMode = effectiveMambaCacheMode(s);
    out.mamba = std::max<std::int64_t>(1, s.effectiveMaxModelLen());
    if (m.countLayers(LayerKind::State) == 0 || !m.state || !hasAttention(m))
        return out;
    // Platform._align_hybrid_block_size: the attention block grows until one attention page
    // holds a Mamba state, and the Mamba page is padded to the attention page.
    const std::int64_t mambaPage =
        stateBytesPerLayer(*m.state, m.nativeKvDtype, effectiveSsmDtype(s), tpOf(s));
    const std::int64_t perToken = attentionBytesPerToken(s, f);
    if (mambaPage <= 0 || perToken <= 0)
        return out;
    const std::int64_t minKernel =
        *std::min_element(chosen->kernelSizes.begin(), chosen->kernelSizes.end());
    const std::int64_t k = std::max<std::int64_t>(minKernel, out.attention);
    std::int64_t block = 0;
    if (out.mambaMode == MambaCacheMode::All) {
        const std::int64_t base = m.state->chunkSize > 0 ? m.state->chunkSize : 2048;
        const std::int64_t c = std::lcm(base, k);
        block = c * ceilDiv(ceilDiv(mambaPage, perToken), c);
        out.mamba = block;
    } else {
        block = k * ceilDiv(mambaPage, k * perToken);
    }
    if (out.attention < block) {
        out.notes.push_back("vLLM raises the attention block size from " +
                            std::to_string(out.attention) + " to " + std::to_string(block) +
                            " tokens so that one attention page holds a Mamba state");
        out.attention = static_cast<int>(block);
        out.forced = true;
    }
    if (out.mambaMode == MambaCacheMode::Align)
        out.mamba = out.attention;
    const std::int64_t attentionPage = out.attention * perToken;
    if (attentionPage != mambaPage)
        out.mambaPagePadded = attentionPage;
    return out;
}

KvFormat storedKvFormat(const Scenario& s) {
    const KvFormat f = requestedFormat(s);
    // MLAAttention rewrites fp8 to fp8_ds_mla for FlashMLA's sparse kernels (DeepSeek-V3.2).
    if (s.model.sparseMla && s.levers.paging.enabled && f.dtype == KvDtype::Fp8E4M3 &&
        f.granularity == Granularity::PerTensor &&
        backendsFor(s, f).front().name == std::string_view("FLASHMLA_SPARSE")) {
        KvFormat ds = f;
        ds.granularity = Granularity::DsMla;
        return ds;
    }
    return f;
}

namespace {

// vLLM's --kv-cache-dtype names for an unquantized cache, for the per-token-head scaled ones and
// for the TurboQuant presets (name, key bits, value bits: TQ_PRESETS in
// vllm/model_executor/layers/quantization/turboquant/config.py): vllmCacheDtype writes them,
// formatForVllmCacheDtype reads them back, vllmCacheDtypeNames lists them (in these orders).
constexpr EnumRow<KvDtype> kVllmUnscaledNames[] = {{KvDtype::Bf16, "bfloat16"},
                                                   {KvDtype::Fp16, "float16"}};
constexpr EnumRow<KvDtype> kVllmPerTokenHeadNames[] = {{KvDtype::Int8, "int8_per_token_head"},
                                                       {KvDtype::Fp8E4M3, "fp8_per_token_head"},
                                                       {KvDtype::Int4, "int4_per_token_head"}};
constexpr std::array<std::tuple<std::string_view, int, int>, 4> kVllmTurboQuantPresets{{
    {"turboquant_k8v4", 8, 4},
    {"turboquant_4bit_nc", 4, 4},
    {"turboquant_k3v4_nc", 3, 4},
    {"turboquant_3bit_nc", 3, 3},
}};

} // namespace

std::optional<std::string> vllmCacheDtype(const Scenario& s) {
    const KvFormat f = requestedFormat(s);
    if (!s.levers.quant.enabled || f == KvFormat::defaultFor(s.model.nativeKvDtype))
        return std::string("auto");
    const bool mla = s.model.isMla();
    switch (f.granularity) {
    case Granularity::None:
        return std::optional<std::string>(lookup(kVllmUnscaledNames, f.dtype));
    case Granularity::PerTensor:
        if (f.dtype == KvDtype::Fp8E4M3)
            return std::string("fp8");
        if (f.dtype == KvDtype::Fp8E5M2 && !mla) // no MLA backend takes fp8_e5m2
            return std::string("fp8_e5m2");
        return std::nullopt;
    case Granularity::PerTokenHead:
        if (!isPerTokenHead(f) || mla)
            return std::nullopt;
        return std::optional<std::string>(lookup(kVllmPerTokenHeadNames, f.dtype));
    case Granularity::PerGroup:
        if (f.dtype == KvDtype::Fp4E2M1 && f.groupSize == 16 && f.scaleType == ScaleType::Fp8 &&
            !f.hasZeroPoint && !mla)
            return std::string("nvfp4");
        return std::nullopt;
    case Granularity::DsMla:
        return std::string("fp8_ds_mla");
    case Granularity::TurboQuant:
        for (const auto& [preset, keyBits, valueBits] : kVllmTurboQuantPresets)
            if (f.keyBits == keyBits && f.valueBits == valueBits)
                return std::string(preset);
        return std::nullopt;
    case Granularity::PerHead:
    case Granularity::KPerChannelVPerToken:
        return std::nullopt;
    }
    return std::nullopt;
}

std::vector<std::string> vllmCacheDtypeNames() {
    // The tables' names, and between them those formatForVllmCacheDtype reads by a rule of
    // their own.
    std::vector<std::string> names{"auto"};
    for (const auto& row : kVllmUnscaledNames)
        names.emplace_back(row.value);
    names.insert(names.end(), {"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla"});
    for (const auto& row : kVllmPerTokenHeadNames)
        names.emplace_back(row.value);
    names.emplace_back("nvfp4");
    for (const auto& preset : kVllmTurboQuantPresets)
        names.emplace_back(std::get<0>(preset));
    return names;
}

Result<KvFormat> formatForVllmCacheDtype(std::string_view name, const ModelSpec& model) {
    KvFormat f;
    if (name == "auto")
        return KvFormat::defaultFor(model.nativeKvDtype);
    if (const auto unscaled = parseName(kVllmUnscaledNames, name))
        return KvFormat::defaultFor(*unscaled);
    if (name == "fp8" || name == "fp8_e4m3" || name == "fp8_inc")
        return KvFormat::defaultFor(KvDtype::Fp8E4M3);
    if (name == "fp8_e5m2")
        return KvFormat::defaultFor(KvDtype::Fp8E5M2);
    if (name == "nvfp4")
        return KvFormat::defaultFor(KvDtype::Fp4E2M1);
    if (const auto perTokenHead = parseName(kVllmPerTokenHeadNames, name)) {
        f.dtype = *perTokenHead;
        f.granularity = Granularity::PerTokenHead;
        f.scaleType = ScaleType::Fp32;
        return f;
    }
    if (name == "fp8_ds_mla") {
        if (!model.isMla() || model.mlaLatentDim() != 576)
            return makeError(ErrorCode::Unsupported,
                             "--kv-dtype fp8_ds_mla: only DeepSeek's 512 + 64 MLA latent has "
                             "this layout");
        f.dtype = KvDtype::Fp8E4M3;
        f.granularity = Granularity::DsMla;
        return f;
    }
    for (const auto& [preset, keyBits, valueBits] : kVllmTurboQuantPresets) {
        if (name != preset)
            continue;
        if (model.isMla())
            return makeError(ErrorCode::Unsupported,
                             "--kv-dtype " + std::string(name) +
                                 ": TurboQuant packs per-head keys and values, and an MLA model "
                                 "stores one latent");
        // vLLM gives sliding and chunked layers a plain spec sized by the uncompressed
        // formula and builds hybrids' Mamba alignment from another page; KV Ledger models
        // TurboQuant where every attention layer is full attention.
        if (model.countLayers(LayerKind::Sliding) + model.countLayers(LayerKind::Chunked) +
                model.countLayers(LayerKind::State) >
            0)
            return makeError(ErrorCode::Unsupported,
                             "--kv-dtype " + std::string(name) +
                                 ": KV Ledger models TurboQuant for models whose every "
                                 "attention layer is full attention; " +
                                 model.name + " has sliding, chunked or state layers");
        return turboQuantFormat(keyBits, valueBits);
    }
    if (name == "nvfp4_ds_mla" || name == "nvfp4_4over6")
        return makeError(ErrorCode::Unsupported, "--kv-dtype " + std::string(name) +
                                                     ": vLLM accepts it, but KV Ledger does "
                                                     "not model its layout yet");
    return makeError(ErrorCode::BadInput,
                     "--kv-dtype: unknown vLLM cache dtype '" + std::string(name) + "'");
}

} // namespace kvl::core
