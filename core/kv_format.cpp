#include "kv_format.h"
#include "enum_names.h"
#include "saturating.h"

#include <algorithm>
#include <array>

namespace kvl::core {

namespace {

struct DtypeInfo {
    KvDtype dtype;
    std::string_view name;
    std::string_view label;
    int bits;
};

constexpr std::array<DtypeInfo, 9> kDtypes{{
    {KvDtype::Fp32, "fp32", "FP32", 32},
    {KvDtype::Fp16, "fp16", "FP16", 16},
    {KvDtype::Bf16, "bf16", "BF16", 16},
    {KvDtype::Fp8E4M3, "fp8_e4m3", "FP8 E4M3", 8},
    {KvDtype::Fp8E5M2, "fp8_e5m2", "FP8 E5M2", 8},
    {KvDtype::Int8, "int8", "INT8", 8},
    {KvDtype::Int4, "int4", "INT4", 4},
    {KvDtype::Int2, "int2", "INT2", 2},
    {KvDtype::Fp4E2M1, "fp4_e2m1", "NVFP4", 4},
}};

const DtypeInfo& info(KvDtype d) {
    return kDtypes[static_cast<std::size_t>(d)];
}

// The names, then two aliases that parseGranularity also reads.
constexpr EnumRow<Granularity> kGranularityNames[] = {
    {Granularity::None, "none"},
    {Granularity::PerTensor, "per-tensor"},
    {Granularity::PerHead, "per-head"},
    {Granularity::PerTokenHead, "per-token-head"},
    {Granularity::PerGroup, "per-group"},
    {Granularity::KPerChannelVPerToken, "kivi"},
    {Granularity::DsMla, "ds-mla"},
    {Granularity::TurboQuant, "turboquant"},
    {Granularity::PerTokenHead, "per-token"},
    {Granularity::KPerChannelVPerToken, "k-per-channel"}};

std::int64_t dataBytes(KvDtype d, int dim) {
    return ceilDiv(std::int64_t{dim} * info(d).bits, 8);
}

// Bytes of one scale (plus one zero-point for asymmetric schemes).
std::int64_t scaleAndZeroBytes(const KvFormat& f) {
    return scaleBytes(f.scaleType) * (f.hasZeroPoint ? 2 : 1);
}

// `f` as an asymmetric integer format in groups (PerGroup or KPerChannelVPerToken): an fp16
// scale and an fp16 zero point per group of 128 elements (QServe / LMDeploy int4: 4.25 bits), or
// of 32 for KIVI.
KvFormat groupedWithZeroPoint(KvFormat f, Granularity g) {
    f.granularity = g;
    f.groupSize = g == Granularity::PerGroup ? 128 : 32;
    f.scaleType = ScaleType::Fp16;
    f.hasZeroPoint = true;
    return f;
}

} // namespace

KvFormat KvFormat::defaultFor(KvDtype dtype) {
    KvFormat f;
    f.dtype = dtype;
    switch (dtype) {
    case KvDtype::Fp32:
    case KvDtype::Fp16:
    case KvDtype::Bf16:
        f.granularity = Granularity::None;
        break;
    case KvDtype::Fp8E4M3:
    case KvDtype::Fp8E5M2:
        // vLLM: per-tensor k_scale / v_scale kept outside the cache.
        f.granularity = Granularity::PerTensor;
        f.scaleType = ScaleType::Fp32;
        break;
    case KvDtype::Int8:
        // One fp32 scale per K and per V vector (+2*kv_heads*4 B/token/layer, as LMDeploy's online
        // int8 KV).
        f.granularity = Granularity::PerTokenHead;
        f.scaleType = ScaleType::Fp32;
        break;
    case KvDtype::Int4:
        // QServe / LMDeploy: G = 128 with fp16 scale + zero = 4.25 bits.
        return groupedWithZeroPoint(f, Granularity::PerGroup);
    case KvDtype::Int2:
        // KIVI: keys per channel, values per token, groups of 32.
        return groupedWithZeroPoint(f, Granularity::KPerChannelVPerToken);
    case KvDtype::Fp4E2M1:
        // NVFP4 (vllm/v1/kv_cache_interface.py, FullAttentionSpec.real_page_size_bytes): packed
        // E2M1 data plus one E4M3 block scale per 16 elements.
        f.granularity = Granularity::PerGroup;
        f.groupSize = 16;
        f.scaleType = ScaleType::Fp8;
        break;
    }
    return f;
}

int bitsPerElement(KvDtype dtype) {
    return info(dtype).bits;
}

bool isQuantized(KvDtype dtype) {
    return info(dtype).bits <= 8;
}

bool isInteger(KvDtype dtype) {
    // (Fp4E2M1 is a float format.)
    return dtype == KvDtype::Int8 || dtype == KvDtype::Int4 || dtype == KvDtype::Int2;
}

int scaleBytes(ScaleType type) {
    switch (type) {
    case ScaleType::Fp32:
        return 4;
    case ScaleType::Fp16:
        return 2;
    case ScaleType::Fp8:
        return 1;
    }
    return 4;
}

std::string_view dtypeName(KvDtype dtype) {
    return info(dtype).name;
}

std::optional<KvDtype> parseDtype(std::string_view name) {
    if (name == "fp8") // vLLM: "fp8" means fp8_e4m3
        return KvDtype::Fp8E4M3;
    if (name == "float16" || name == "half")
        return KvDtype::Fp16;
    if (name == "bfloat16")
        return KvDtype::Bf16;
    if (name == "float32" || name == "float")
        return KvDtype::Fp32;
    if (name == "nvfp4" || name == "fp4")
        return KvDtype::Fp4E2M1;
    for (const auto& d : kDtypes)
        if (d.name == name)
            return d.dtype;
    return std::nullopt;
}

std::vector<KvDtype> allDtypes() {
    std::vector<KvDtype> out;
    for (const auto& d : kDtypes)
        out.push_back(d.dtype);
    return out;
}

std::string_view granularityName(Granularity g) {
    return lookupOr(kGranularityNames, g);
}

std::optional<Granularity> parseGranularity(std::string_view name) {
    return parseName(kGranularityNames, name);
}

KvFormat withGranularity(KvFormat f, Granularity g, int dim) {
    const KvFormat usual = KvFormat::defaultFor(f.dtype);
    if (g != Granularity::PerGroup && g != Granularity::KPerChannelVPerToken) {
        f.granularity = g;
        f.scaleType = usual.scaleType;
        f.hasZeroPoint = usual.hasZeroPoint;
        f.groupSize = 0;
        return f;
    }
    f = groupedWithZeroPoint(f, g);
    if (dim > 0 && dim < f.groupSize)
        f.groupSize = dim;
    return f;
}

std::string shortLabel(const KvFormat& f) {
    std::string s(info(f.dtype).label);
    if (f.granularity == Granularity::PerGroup)
        s += " g" + std::to_string(f.groupSize);
    else if (f.granularity == Granularity::KPerChannelVPerToken)
        s += " KIVI g" + std::to_string(f.groupSize);
    else if (f.granularity == Granularity::DsMla)
        s += " DS-MLA";
    else if (f.granularity == Granularity::TurboQuant)
        s = "TQ k" + std::to_string(f.keyBits) + "v" + std::to_string(f.valueBits);
    return s;
}

KvFormat turboQuantFormat(int keyBits, int valueBits) {
    KvFormat f;
    f.dtype = KvDtype::Int4;
    f.granularity = Granularity::TurboQuant;
    f.scaleType = ScaleType::Fp16;
    f.hasZeroPoint = true;
    f.keyBits = keyBits;
    f.valueBits = valueBits;
    return f;
}

std::string formatLabel(const KvFormat& f) {
    std::string s(info(f.dtype).label);
    const std::string scale = f.scaleType == ScaleType::Fp32   ? "fp32"
                              : f.scaleType == ScaleType::Fp16 ? "fp16"
                                                               : "fp8";
    const std::string sz = f.hasZeroPoint ? " scale+zero" : " scale";
    switch (f.granularity) {
    case Granularity::None:
        break;
    case Granularity::PerTensor:
        s += " per-tensor (" + scale + sz + ")";
        break;
    case Granularity::PerHead:
        s += " per-KV-head (" + scale + sz + ")";
        break;
    case Granularity::PerTokenHead:
        s += " per-token-head (" + scale + sz + ")";
        break;
    case Granularity::PerGroup:
        s += " g" + std::to_string(f.groupSize) + " (" + scale + sz + ")";
        break;
    case Granularity::KPerChannelVPerToken:
        s += " KIVI K per-channel / V per-token g" + std::to_string(f.groupSize) + " (" + scale +
             sz + ")";
        break;
    case Granularity::DsMla:
        s += " DeepSeek sparse-MLA layout (fp32 scale per 128, 16-bit RoPE part)";
        break;
    case Granularity::TurboQuant:
        s = "TurboQuant " +
            (f.keyBits == 8 ? std::string("FP8") : std::to_string(f.keyBits) + "-bit") + " keys, " +
            std::to_string(f.valueBits) + "-bit values (fp16 norm, scale+zero)";
        break;
    }
    return s;
}

std::optional<std::string> validate(const KvFormat& f, int headDim) {
    const bool quantized = isQuantized(f.dtype);
    if (!quantized && f.granularity != Granularity::None)
        return std::string(dtypeName(f.dtype)) + " is stored as is: granularity must be none";
    if (quantized && f.granularity == Granularity::None)
        return std::string(dtypeName(f.dtype)) + " needs scales: granularity must not be none";
    const bool isFp8 = f.dtype == KvDtype::Fp8E4M3 || f.dtype == KvDtype::Fp8E5M2;
    if (f.granularity == Granularity::TurboQuant) {
        if (f.keyBits != 8 && f.keyBits != 4 && f.keyBits != 3)
            return "TurboQuant keys are 8 (fp8), 4 or 3 bits, got " + std::to_string(f.keyBits);
        if (f.valueBits != 4 && f.valueBits != 3)
            return "TurboQuant values are 4 or 3 bits, got " + std::to_string(f.valueBits);
        return std::nullopt;
    }
    if (f.granularity == Granularity::DsMla) {
        if (f.dtype != KvDtype::Fp8E4M3)
            return "the ds-mla layout stores fp8_e4m3";
        if (headDim > 0 && headDim != 576)
            return "the ds-mla layout is for a 512 + 64 MLA latent, not " +
                   std::to_string(headDim) + " dims";
        return std::nullopt;
    }
    if (isFp8 && f.granularity != Granularity::PerTensor && f.granularity != Granularity::PerHead &&
        f.granularity != Granularity::PerTokenHead)
        return "fp8 KV scales are per tensor, per head or per token-head";
    if (f.dtype == KvDtype::Fp4E2M1 && f.granularity != Granularity::PerGroup)
        return "fp4 KV needs per-group scales (NVFP4: 16 elements per fp8 scale)";
    if (f.scaleType == ScaleType::Fp8 && f.dtype != KvDtype::Fp4E2M1)
        return "fp8 scales are for fp4 (NVFP4) only";
    if ((f.dtype == KvDtype::Int4 || f.dtype == KvDtype::Int2) &&
        (f.granularity == Granularity::PerTensor || f.granularity == Granularity::PerHead))
        return std::string(dtypeName(f.dtype)) +
               " with a per-tensor scale loses too much: use per-token-head, per-group or kivi";
    const bool grouped = f.granularity == Granularity::PerGroup ||
                         f.granularity == Granularity::KPerChannelVPerToken;
    if (grouped) {
        if (f.groupSize < 1 || f.groupSize > 4096)
            return "group size must be between 1 and 4096, got " + std::to_string(f.groupSize);
        if (f.granularity == Granularity::PerGroup && headDim > 0 && headDim % f.groupSize != 0)
            return "group size " + std::to_string(f.groupSize) + " must divide head_dim " +
                   std::to_string(headDim);
    }
    return std::nullopt;
}

std::int64_t valueBytesPerToken(const KvFormat& f, int dim) {
    const std::int64_t data = dataBytes(f.dtype, dim);
    switch (f.granularity) {
    case Granularity::None:
    case Granularity::PerTensor:
    case Granularity::PerHead:
        return data;
    case Granularity::PerTokenHead:
        return data + scaleAndZeroBytes(f);
    case Granularity::PerGroup:
    case Granularity::KPerChannelVPerToken: // KIVI values: per token, G elements per group
        return data + ceilDiv(dim, f.groupSize) * scaleAndZeroBytes(f);
    case Granularity::DsMla: {
        // fp8 no-RoPE part + one fp32 scale per 128 of it + 64 RoPE dims in 16 bits: 656 B for
        // DeepSeek-V3.2's 512 + 64 (MLAAttentionSpec.real_page_size_bytes, "fp8_ds_mla").
        constexpr int kRope = 64;
        const std::int64_t nope = std::max(0, dim - kRope);
        return nope + ceilDiv(nope, 128) * 4 + std::int64_t{std::min(dim, kRope)} * 2;
    }
    case Granularity::TurboQuant: {
        // TurboQuantConfig.value_packed_size: ceil(dim x bits / 8) + an fp16 scale and zero.
        // The slot (key + value) is rounded up to an even size (slot_size_aligned); the odd
        // byte, where there is one, is counted here.
        const std::int64_t value = ceilDiv(std::int64_t{dim} * f.valueBits, 8) + 4;
        return value + (value + keyBytesPerToken(f, dim)) % 2;
    }
    }
    return data;
}

std::int64_t keyBytesPerToken(const KvFormat& f, int dim) {
    if (f.granularity == Granularity::TurboQuant)
        // TurboQuantConfig.key_packed_size: fp8 keys take one byte per element; 3/4-bit keys
        // their packed codes and an fp16 vector norm.
        return f.keyBits == 8 ? std::int64_t{dim} : ceilDiv(std::int64_t{dim} * f.keyBits, 8) + 2;
    if (f.granularity == Granularity::KPerChannelVPerToken)
        // KIVI keys: one scale (+zero) per channel for every G tokens.
        return dataBytes(f.dtype, dim) +
               ceilDiv(std::int64_t{dim} * scaleAndZeroBytes(f), f.groupSize);
    return valueBytesPerToken(f, dim); // every other scheme treats K and V alike
}

std::int64_t outOfPageScaleBytesPerLayer(const KvFormat& f, int kvHeads) {
    switch (f.granularity) {
    case Granularity::PerTensor:
        return 2 * std::int64_t{scaleBytes(f.scaleType)};
    case Granularity::PerHead:
        return 2 * std::int64_t{kvHeads} * scaleBytes(f.scaleType);
    default:
        return 0;
    }
}

} // namespace kvl::core
