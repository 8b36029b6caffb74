#pragma once
// Page layout and the element codecs shared by the CPU backend, the CUDA kernels and the
// FP64 reference. Everything here is __host__ __device__ inline so both backends compute the
// same function, bit for bit (the conversions are written out, not taken from intrinsics
// whose rounding could differ). No Qt, no STL containers: this header is compiled by nvcc.
//
// Layout of one page (one block of B tokens, one layer):
//
//   page  = [kv_head 0][kv_head 1] ... [kv_head H-1]          (HND order, FlashInfer's term)
//   head  = [K side: B x keyBytesPerToken][V side: B x valueBytesPerToken]
//   side  = [data: B x dataBytes (token-major, 16-byte aligned rows when dim allows)]
//           [meta: scales / zeros][padding up to the side's budget]
//
// The budgets per token are core::keyBytesPerToken / valueBytesPerToken, so the pool's bytes
// per layer are exactly B x kv_heads x kvBytesPerTokenPerHead x pages, what core predicts.
// Meta placement:
//   element groups (per-token-head = one group of head_dim, per-group = G elements):
//       meta[token][group] = {scale, zero?}
//   KIVI keys (per channel over G tokens; KIVI, arXiv 2402.02750): meta[token_group][channel]
//       = {scale, zero}; the block size must be a multiple of G so groups never straddle pages.
// fp8 per-tensor / per-head scales live outside the pages, as vLLM keeps k_scale / v_scale.

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define KVL_HD __host__ __device__ __forceinline__
#else
#define KVL_HD inline
#endif

namespace kvl::probe {

// ---------------------------------------------------------------------------------------
// Bit casts and portable conversions (round to nearest even, saturating where stated).

KVL_HD float bitsToFloat(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
}

KVL_HD std::uint32_t floatToBits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
#endif
}

// Round to nearest, ties to even (rintf under the default rounding mode). On the host rintf is
// a libm call without SSE4.1, so it is spelled out: adding and subtracting 2^23 rounds |v| <
// 2^23 to an integer in IEEE arithmetic (no fast-math anywhere in this project).
KVL_HD float roundEven(float v) {
#if defined(__CUDA_ARCH__)
    return rintf(v);
#else
    const float a = fabsf(v);
    if (!(a < 8388608.0f)) // >= 2^23 is already integral (or inf / NaN)
        return v;
    const float r = (a + 8388608.0f) - 8388608.0f;
    return copysignf(r, v);
#endif
}

KVL_HD float halfToFloat(std::uint16_t h) {
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
    const std::uint32_t e = (h >> 10) & 0x1fu;
    const std::uint32_t m = h & 0x3ffu;
    if (e == 0) { // zero / subnormal: m x 2^-24 (exact in float)
        const float f = float(m) * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    if (e == 31)
        return bitsToFloat(sign | 0x7f800000u | (m << 13));
    return bitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}

KVL_HD std::uint16_t floatToHalf(float f) {
    const std::uint32_t x = floatToBits(f);
    const std::uint16_t sign = std::uint16_t((x >> 16) & 0x8000u);
    const std::uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u)
        return std::uint16_t(sign | 0x7e00u); // NaN
    if (a >= 0x477ff000u)                     // >= 65520 rounds to infinity (IEEE)
        return std::uint16_t(sign | 0x7c00u);
    if (a < 0x38800000u) { // below 2^-14: subnormal, step 2^-24; the scaling is exact
        const float r = roundEven(bitsToFloat(a) * 16777216.0f);
        return std::uint16_t(sign | std::uint16_t(r));
    }
    const std::uint32_t u = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23);
    return std::uint16_t(sign | (u >> 13));
}

KVL_HD float bf16ToFloat(std::uint16_t b) {
    return bitsToFloat(std::uint32_t(b) << 16);
}

KVL_HD std::uint16_t floatToBf16(float f) {
    const std::uint32_t x = floatToBits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return std::uint16_t((x >> 16) | 0x40u); // quiet NaN
    return std::uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// OCP FP8 E4M3 ("FN": no infinities, max 448, NaN = S.1111.111). Saturating as vLLM's
// scaled_fp8_conversion does (vLLM csrc/quantization/fp8/common.cuh: x / scale clamped to the
// format's max, then converted).
inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kE5m2Max = 57344.0f;

// Both FP8 formats round alike: `mantBits` mantissa bits, exponent bias `bias`, saturating at
// `maxCode` (the code of `maxValue`); below `minNormal` (2^(1-bias)) subnormal steps of
// 1 / subnormalScale. NaN keeps its sign and becomes 0x7f.
KVL_HD std::uint8_t floatToFp8(float f, unsigned mantBits, unsigned bias, std::uint32_t maxCode,
                               float maxValue, float minNormal, float subnormalScale) {
    const unsigned shift = 23u - mantBits;
    const std::uint32_t x = floatToBits(f);
    const std::uint8_t sign = std::uint8_t((x >> 24) & 0x80u);
    const std::uint32_t a = x & 0x7fffffffu;
    if (a > 0x7f800000u)
        return std::uint8_t(sign | 0x7fu);
    const float v = bitsToFloat(a);
    if (v >= maxValue)
        return std::uint8_t(sign | maxCode);
    if (v < minNormal)
        return std::uint8_t(sign | std::uint8_t(roundEven(v * subnormalScale)));
    // Round to nearest even at the dropped bits, then rebias the exponent.
    std::uint32_t r =
        (a + ((1u << (shift - 1u)) - 1u) + ((a >> shift) & 1u) - ((127u - bias) << 23)) >> shift;
    if (r > maxCode)
        r = maxCode;
    return std::uint8_t(sign | r);
}

KVL_HD std::uint8_t floatToE4m3(float f) {
    // 2^-6 is the least normal; subnormals step by 2^-9.
    return floatToFp8(f, 3u, 7u, 0x7eu, kE4m3Max, 0.015625f, 512.0f);
}

KVL_HD float e4m3ToFloat(std::uint8_t b) {
    const std::uint32_t sign = std::uint32_t(b & 0x80u) << 24;
    const std::uint32_t e = (b >> 3) & 0xfu;
    const std::uint32_t m = b & 7u;
    if (e == 15 && m == 7)
        return bitsToFloat(sign | 0x7fc00000u);
    if (e == 0) {
        const float f = float(m) * 0.001953125f;
        return sign ? -f : f;
    }
    return bitsToFloat(sign | ((e + 120u) << 23) | (m << 20));
}

// OCP FP8 E5M2 (IEEE-like, max finite 57344); saturating to the max finite value.
KVL_HD std::uint8_t floatToE5m2(float f) {
    // 2^-14 is the least normal; subnormals step by 2^-16.
    return floatToFp8(f, 2u, 15u, 0x7bu, kE5m2Max, 6.103515625e-05f, 65536.0f);
}

KVL_HD float e5m2ToFloat(std::uint8_t b) {
    return halfToFloat(std::uint16_t(b) << 8);
}

// ---------------------------------------------------------------------------------------
// Layout description (plain data: copied to kernels by value).

enum Codec : int {
    kCodecF32 = 0,
    kCodecF16 = 1,
    kCodecBF16 = 2,
    kCodecE4M3 = 3,
    kCodecE5M2 = 4,
    kCodecIntSym = 5,  // two's complement, q in [-(2^(b-1)-1), 2^(b-1)-1]
    kCodecIntAsym = 6, // unsigned, q in [0, 2^b - 1], x ~ q * scale + zero
};

enum InputDtype : int { kInputF16 = 0, kInputBF16 = 1 };

// One side (K or V) of one KV head within a page.
struct SideLayout {
    int codec = kCodecF16;
    int bits = 16;
    int dim = 0;
    int dataBytes = 0;  // per token
    int group = 0;      // elements per scale group (per-token-head: dim); 0 = no in-page scale
    int numGroups = 0;  // groups per token (ceil(dim / group))
    int tokenGroup = 0; // KIVI keys: tokens sharing a per-channel scale; 0 otherwise
    int scaleBytes = 4; // 4 = fp32, 2 = fp16 (scales and zeros use the same type)
    int hasZero = 0;
    int metaOffset = 0; // bytes from the side's start to its meta area
    int sideBytes = 0;  // B x bytes-per-token budget from core
    KVL_HD int metaStride() const { return scaleBytes * (hasZero ? 2 : 1); }
    // fp8 (or int8) per tensor / per head: the scale is outside the page.
    KVL_HD bool outOfPageScale() const {
        return codec >= kCodecE4M3 && group == 0 && tokenGroup == 0;
    }
};

struct PageLayout {
    int headDim = 0;
    int kvHeads = 0;
    int blockSize = 0;
    std::int64_t keyBytesPerToken = 0;   // core::keyBytesPerToken
    std::int64_t valueBytesPerToken = 0; // core::valueBytesPerToken
    std::int64_t headStride = 0;         // B x (key + value bytes per token)
    std::int64_t pageBytes = 0;          // kvHeads x headStride: one block, one layer
    SideLayout k;
    SideLayout v;
};

KVL_HD std::uint8_t* kSide(std::uint8_t* pool, const PageLayout& L, std::int64_t block, int head) {
    return pool + block * L.pageBytes + std::int64_t(head) * L.headStride;
}
KVL_HD const std::uint8_t* kSide(const std::uint8_t* pool, const PageLayout& L, std::int64_t block,
                                 int head) {
    return pool + block * L.pageBytes + std::int64_t(head) * L.headStride;
}
KVL_HD std::int64_t vSideOffset(const PageLayout& L) {
    return std::int64_t(L.blockSize) * L.keyBytesPerToken;
}

KVL_HD float loadScalar(const std::uint8_t* p, int bytes) {
    if (bytes == 2) {
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        return halfToFloat(h);
    }
    float f;
    std::memcpy(&f, p, 4);
    return f;
}

// Rounds a scale / zero to its storage type, so quantization uses exactly the stored value.
KVL_HD float roundScalar(float f, int bytes) {
    return bytes == 2 ? halfToFloat(floatToHalf(f)) : f;
}

KVL_HD void storeScalar(std::uint8_t* p, float f, int bytes) {
    if (bytes == 2) {
        const std::uint16_t h = floatToHalf(f);
        std::memcpy(p, &h, 2);
    } else {
        std::memcpy(p, &f, 4);
    }
}

KVL_HD float inputToFloat(std::uint16_t bits, int inputDtype) {
    return inputDtype == kInputBF16 ? bf16ToFloat(bits) : halfToFloat(bits);
}

KVL_HD int intQmax(int bits, int codec) {
    return codec == kCodecIntSym ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
}

// Writes code `q` (already in range) of element `c` into a packed data row.
KVL_HD void putCode(std::uint8_t* row, int c, int bits, std::uint32_t q) {
    if (bits == 8) {
        row[c] = std::uint8_t(q);
        return;
    }
    const int bit = c * bits;
    const std::uint32_t mask = (1u << bits) - 1u;
    std::uint8_t& b = row[bit >> 3];
    b = std::uint8_t((b & ~(mask << (bit & 7))) | ((q & mask) << (bit & 7)));
}

KVL_HD std::uint32_t getCode(const std::uint8_t* row, int c, int bits) {
    if (bits == 8)
        return row[c];
    const int bit = c * bits;
    return (std::uint32_t(row[bit >> 3]) >> (bit & 7)) & ((1u << bits) - 1u);
}

// Scale of a group from its range: symmetric (amax / qmax) or asymmetric ((max - min) / qmax),
// rounded to the storage type. fp8 with an in-page scale maps amax to the format's max.
struct GroupParams {
    float scale;
    float zero;
};

KVL_HD GroupParams groupParams(const SideLayout& s, float mn, float mx) {
    GroupParams p{0.0f, 0.0f};
    if (s.codec == kCodecIntAsym) {
        p.scale = roundScalar((mx - mn) / float(intQmax(s.bits, s.codec)), s.scaleBytes);
        p.zero = roundScalar(mn, s.scaleBytes);
    } else {
        const float amax = fmaxf(fabsf(mn), fabsf(mx));
        const float qmax = s.codec == kCodecE4M3   ? kE4m3Max
                           : s.codec == kCodecE5M2 ? kE5m2Max
                                                   : float(intQmax(s.bits, s.codec));
        p.scale = roundScalar(amax / qmax, s.scaleBytes);
    }
    return p;
}

// Quantizes one value with explicit scale (and zero); returns the code. fp8 codecs with an
// out-of-page scale take scale = the tensor/head scale. A zero scale stores zeros. The codec is
// a template parameter so a kernel per format has no per-element switch; quantizeValue below is
// the runtime-dispatched form over the same arithmetic (one definition, identical codes).
template <int Codec> KVL_HD std::uint32_t quantizeCode(float x, float scale, float zero, int bits) {
    if constexpr (Codec == kCodecF32) {
        return floatToBits(x);
    } else if constexpr (Codec == kCodecF16) {
        return floatToHalf(x);
    } else if constexpr (Codec == kCodecBF16) {
        return floatToBf16(x);
    } else if constexpr (Codec == kCodecE4M3) {
        return floatToE4m3(scale > 0.0f ? x / scale : 0.0f);
    } else if constexpr (Codec == kCodecE5M2) {
        return floatToE5m2(scale > 0.0f ? x / scale : 0.0f);
    } else if constexpr (Codec == kCodecIntSym) {
        const int qmax = intQmax(bits, Codec);
        float q = scale > 0.0f ? roundEven(x / scale) : 0.0f;
        q = fminf(fmaxf(q, -float(qmax)), float(qmax));
        return std::uint32_t(int(q)) & ((bits == 32) ? 0xffffffffu : ((1u << bits) - 1u));
    } else {
        static_assert(Codec == kCodecIntAsym, "unknown codec");
        const int qmax = intQmax(bits, Codec);
        float q = scale > 0.0f ? roundEven((x - zero) / scale) : 0.0f;
        q = fminf(fmaxf(q, 0.0f), float(qmax));
        return std::uint32_t(int(q));
    }
}

KVL_HD std::uint32_t quantizeValue(const SideLayout& s, float x, float scale, float zero) {
    switch (s.codec) {
    case kCodecF32:
        return quantizeCode<kCodecF32>(x, scale, zero, s.bits);
    case kCodecF16:
        return quantizeCode<kCodecF16>(x, scale, zero, s.bits);
    case kCodecBF16:
        return quantizeCode<kCodecBF16>(x, scale, zero, s.bits);
    case kCodecE4M3:
        return quantizeCode<kCodecE4M3>(x, scale, zero, s.bits);
    case kCodecE5M2:
        return quantizeCode<kCodecE5M2>(x, scale, zero, s.bits);
    case kCodecIntSym:
        return quantizeCode<kCodecIntSym>(x, scale, zero, s.bits);
    case kCodecIntAsym:
        return quantizeCode<kCodecIntAsym>(x, scale, zero, s.bits);
    }
    return 0;
}

// The stored value of a code, before any out-of-page (fp8 per-tensor / per-head) scale.
KVL_HD float decodeValue(const SideLayout& s, std::uint32_t q, float scale, float zero) {
    switch (s.codec) {
    case kCodecF32:
        return bitsToFloat(q);
    case kCodecF16:
        return halfToFloat(std::uint16_t(q));
    case kCodecBF16:
        return bf16ToFloat(std::uint16_t(q));
    case kCodecE4M3:
        return e4m3ToFloat(std::uint8_t(q)) * scale;
    case kCodecE5M2:
        return e5m2ToFloat(std::uint8_t(q)) * scale;
    case kCodecIntSym: {
        // sign-extend the b-bit field
        const int shift = 32 - s.bits;
        const int v = int(q << shift) >> shift;
        return float(v) * scale;
    }
    case kCodecIntAsym:
        return float(q) * scale + zero;
    }
    return 0.0f;
}

// Raw element code of element c of token t on one side (unpacked).
KVL_HD std::uint32_t loadCode(const std::uint8_t* side, const SideLayout& s, int t, int c) {
    const std::uint8_t* row = side + std::int64_t(t) * s.dataBytes;
    switch (s.codec) {
    case kCodecF32: {
        std::uint32_t u;
        std::memcpy(&u, row + 4 * c, 4);
        return u;
    }
    case kCodecF16:
    case kCodecBF16: {
        std::uint16_t u;
        std::memcpy(&u, row + 2 * c, 2);
        return u;
    }
    case kCodecE4M3:
    case kCodecE5M2:
        return row[c];
    default:
        return getCode(row, c, s.bits);
    }
}

KVL_HD void storeCode(std::uint8_t* side, const SideLayout& s, int t, int c, std::uint32_t q) {
    std::uint8_t* row = side + std::int64_t(t) * s.dataBytes;
    switch (s.codec) {
    case kCodecF32:
        std::memcpy(row + 4 * c, &q, 4);
        return;
    case kCodecF16:
    case kCodecBF16: {
        const std::uint16_t u = std::uint16_t(q);
        std::memcpy(row + 2 * c, &u, 2);
        return;
    }
    case kCodecE4M3:
    case kCodecE5M2:
        row[c] = std::uint8_t(q);
        return;
    default:
        putCode(row, c, s.bits, q);
    }
}

// Meta of token t / element c (element groups) or of token group t/G, channel c (KIVI keys).
KVL_HD const std::uint8_t* metaPtr(const std::uint8_t* side, const SideLayout& s, int t, int c) {
    std::int64_t idx;
    if (s.tokenGroup > 0)
        idx = std::int64_t(t / s.tokenGroup) * s.dim + c;
    else
        idx = std::int64_t(t) * s.numGroups + c / s.group;
    return side + s.metaOffset + idx * s.metaStride();
}

KVL_HD GroupParams loadParams(const std::uint8_t* side, const SideLayout& s, int t, int c) {
    GroupParams p{1.0f, 0.0f};
    if (s.group == 0 && s.tokenGroup == 0)
        return p;
    const std::uint8_t* m = metaPtr(side, s, t, c);
    p.scale = loadScalar(m, s.scaleBytes);
    if (s.hasZero)
        p.zero = loadScalar(m + s.scaleBytes, s.scaleBytes);
    return p;
}

// Dequantized element (out-of-page fp8 scale NOT applied: the attention folds it in).
KVL_HD float dequantElement(const std::uint8_t* side, const SideLayout& s, int t, int c) {
    const GroupParams p = loadParams(side, s, t, c);
    return decodeValue(s, loadCode(side, s, t, c), p.scale, p.zero);
}

// Quantizes one token's vector x[dim] (element-grouped schemes and plain formats) into slot t
// of a side. `outScale` is the out-of-page fp8 scale (ignored otherwise).
KVL_HD void quantizeTokenVector(std::uint8_t* side, const SideLayout& s, int t, const float* x,
                                float outScale) {
    if (s.group == 0) {
        for (int c = 0; c < s.dim; ++c)
            storeCode(side, s, t, c, quantizeValue(s, x[c], outScale, 0.0f));
        return;
    }
    for (int g = 0; g < s.numGroups; ++g) {
        const int c0 = g * s.group;
        const int c1 = c0 + s.group < s.dim ? c0 + s.group : s.dim;
        float mn = x[c0], mx = x[c0];
        for (int c = c0 + 1; c < c1; ++c) {
            mn = fminf(mn, x[c]);
            mx = fmaxf(mx, x[c]);
        }
        const GroupParams p = groupParams(s, mn, mx);
        std::uint8_t* m =
            side + s.metaOffset + (std::int64_t(t) * s.numGroups + g) * s.metaStride();
        storeScalar(m, p.scale, s.scaleBytes);
        if (s.hasZero)
            storeScalar(m + s.scaleBytes, p.zero, s.scaleBytes);
        for (int c = c0; c < c1; ++c)
            storeCode(side, s, t, c, quantizeValue(s, x[c], p.scale, p.zero));
    }
}

// Dequantizes token t's whole row (out-of-page scale not applied); params loaded once per group.
KVL_HD void dequantRow(const std::uint8_t* side, const SideLayout& s, int t, float* out) {
    if (s.codec == kCodecF16) {
        const std::uint8_t* row = side + std::int64_t(t) * s.dataBytes;
        for (int c = 0; c < s.dim; ++c) {
            std::uint16_t h;
            std::memcpy(&h, row + 2 * c, 2);
            out[c] = halfToFloat(h);
        }
        return;
    }
    if (s.group == 0 && s.tokenGroup == 0) {
        for (int c = 0; c < s.dim; ++c)
            out[c] = decodeValue(s, loadCode(side, s, t, c), 1.0f, 0.0f);
        return;
    }
    if (s.tokenGroup > 0) { // KIVI keys: a scale per channel
        for (int c = 0; c < s.dim; ++c)
            out[c] = dequantElement(side, s, t, c);
        return;
    }
    for (int g = 0; g < s.numGroups; ++g) {
        const int c0 = g * s.group;
        const int c1 = c0 + s.group < s.dim ? c0 + s.group : s.dim;
        const GroupParams p = loadParams(side, s, t, c0);
        for (int c = c0; c < c1; ++c)
            out[c] = decodeValue(s, loadCode(side, s, t, c), p.scale, p.zero);
    }
}

// KIVI keys: quantizes channel c of a run of n tokens (slots t0 .. t0+n-1 of one token group)
// with one scale + zero over the run; x[i * xStride] is token i's value of that channel.
KVL_HD void quantizeChannelRun(std::uint8_t* side, const SideLayout& s, int t0, int n, int c,
                               const float* x, std::int64_t xStride) {
    float mn = x[0], mx = x[0];
    for (int i = 1; i < n; ++i) {
        mn = fminf(mn, x[i * xStride]);
        mx = fmaxf(mx, x[i * xStride]);
    }
    const GroupParams p = groupParams(s, mn, mx);
    std::uint8_t* m =
        side + s.metaOffset + (std::int64_t(t0 / s.tokenGroup) * s.dim + c) * s.metaStride();
    storeScalar(m, p.scale, s.scaleBytes);
    if (s.hasZero)
        storeScalar(m + s.scaleBytes, p.zero, s.scaleBytes);
    for (int i = 0; i < n; ++i)
        storeCode(side, s, t0 + i, c, quantizeValue(s, x[i * xStride], p.scale, p.zero));
}

} // namespace kvl::probe
