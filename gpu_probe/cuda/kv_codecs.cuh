#pragma once
// The KV formats as compile-time kernel parameters, shared by the decode and store kernels.
// A lane always owns kLaneElems = 8 consecutive elements of a token row, one aligned vector of
// codes (16 B for fp16, 8 B for fp8 / int8, 4 B for int4, 2 B for int2, two 16 B for fp32), so
// sub-byte codes never share a byte between lanes and every row is read with whole vectors.
// What the scale / zero of those 8 elements are is the format's Meta:
//   None        fp16 / bf16 / fp32 as is; fp8 with the per-tensor / per-head scale outside the
//               page (folded into the query and the output, as vLLM's k_scale / v_scale);
//   TokenF32    int8: one fp32 scale per token (per-token-head symmetric), one aligned word;
//   TokenF16x2  int4 / int2 groups: one {fp16 scale, fp16 zero} word per token and group of
//               G >= 8 elements (G % 8 == 0, so a lane's 8 elements share it);
//   ChannelF16x2 KIVI keys: {scale, zero} per channel, shared by a group of 32 tokens: a lane
//               reads its 8 channels' pairs (32 B) once per token group.
#include "gpu_probe/cuda/dialect.cuh"
#include "gpu_probe/kv_quant.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace kvl::probe::KVL_KERNEL_NS {

inline constexpr int kLaneElems = 8;
inline constexpr unsigned kFull = 0xffffffffu; // every lane of a warp, for the *_sync intrinsics
inline constexpr int kKiviTokenGroup = 32;

enum class Kv : int { F16, BF16, F32, E4M3, E5M2, Int8, Int4, Kivi4, Kivi2 };
enum class Meta : int { None, TokenF32, TokenF16x2, ChannelF16x2 };

// fp32 rows: 8 elements are 32 bytes, two 16-byte loads.
struct Raw32 {
    uint4 lo, hi;
};

template <int Bytes> struct RawOf;
template <> struct RawOf<32> { using type = Raw32; };
template <> struct RawOf<16> { using type = uint4; };
template <> struct RawOf<8> { using type = uint2; };
template <> struct RawOf<4> { using type = unsigned; };
template <> struct RawOf<2> { using type = unsigned short; };

// One side (K or V) of a format.
template <Kv F, bool Key> struct Side {
    static constexpr int kBits = F == Kv::F16 || F == Kv::BF16                     ? 16
                                 : F == Kv::F32                                    ? 32
                                 : F == Kv::E4M3 || F == Kv::E5M2 || F == Kv::Int8 ? 8
                                 : F == Kv::Kivi2                                  ? 2
                                                                                   : 4;
    static constexpr int kCodec = F == Kv::F16    ? kCodecF16
                                  : F == Kv::BF16 ? kCodecBF16
                                  : F == Kv::F32  ? kCodecF32
                                  : F == Kv::E4M3 ? kCodecE4M3
                                  : F == Kv::E5M2 ? kCodecE5M2
                                  : F == Kv::Int8 ? kCodecIntSym
                                                  : kCodecIntAsym;
    static constexpr Meta kMeta = F == Kv::Int8                                ? Meta::TokenF32
                                  : F == Kv::Int4                              ? Meta::TokenF16x2
                                  : (F == Kv::Kivi4 || F == Kv::Kivi2) && Key  ? Meta::ChannelF16x2
                                  : (F == Kv::Kivi4 || F == Kv::Kivi2) && !Key ? Meta::TokenF16x2
                                                                               : Meta::None;
    static constexpr int kRawBytes = kLaneElems * kBits / 8;
    using Raw = typename RawOf<kRawBytes>::type;
};

template <class Raw> KVL_HD Raw zeroRaw() {
    Raw r;
    std::memset(static_cast<void*>(&r), 0, sizeof r);
    return r;
}

// One lane's vector of codes (the address is aligned to min(size, 16), host-checked).
template <class Raw> __device__ __forceinline__ Raw loadRaw(gptr<const std::uint8_t> p) {
    if constexpr (sizeof(Raw) == 32) {
        Raw32 r;
        r.lo = ldg(gcast<const uint4>(p));
        r.hi = ldg(gcast<const uint4>(p + 16));
        return r;
    } else {
        return ldg(gcast<const Raw>(p));
    }
}
template <class Raw> __device__ __forceinline__ void storeRaw(gptr<std::uint8_t> p, const Raw& r) {
    if constexpr (sizeof(Raw) == 32) {
        gstore(gcast<uint4>(p), r.lo);
        gstore(gcast<uint4>(p + 16), r.hi);
    } else {
        gstore(gcast<Raw>(p), r);
    }
}

// The 32-bit word k of a lane's codes.
template <class Raw> __device__ __forceinline__ unsigned rawWord(const Raw& r, int k) {
    if constexpr (sizeof(Raw) == 32) {
        const uint4& v = k < 4 ? r.lo : r.hi;
        const int j = k & 3;
        return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
    } else if constexpr (sizeof(Raw) == 16) {
        return k == 0 ? r.x : k == 1 ? r.y : k == 2 ? r.z : r.w;
    } else if constexpr (sizeof(Raw) == 8) {
        return k == 0 ? r.x : r.y;
    } else {
        return unsigned(r);
    }
}
template <class Raw> __device__ __forceinline__ void setRawWord(Raw& r, int k, unsigned w) {
    if constexpr (sizeof(Raw) == 32) {
        uint4& v = k < 4 ? r.lo : r.hi;
        const int j = k & 3;
        (j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w) = w;
    } else if constexpr (sizeof(Raw) == 16) {
        (k == 0 ? r.x : k == 1 ? r.y : k == 2 ? r.z : r.w) = w;
    } else if constexpr (sizeof(Raw) == 8) {
        (k == 0 ? r.x : r.y) = w;
    } else {
        r = static_cast<Raw>(w);
    }
}

__device__ __forceinline__ float2 half2BitsToFloat2(unsigned w) {
    __half2_raw raw;
    raw.x = static_cast<unsigned short>(w & 0xffffu);
    raw.y = static_cast<unsigned short>(w >> 16);
    return __half22float2(__half2(raw));
}

// Two fp8 codes (the low byte first) to floats, exactly. sm_89+ has the conversion instruction
// (cvt.rn.f16x2.e4m3x2 / e5m2x2, through cuda_fp8.h); sm_80 and the emulator take the software
// path, which gives the same bits for all 256 codes, NaN included (canonical 0x7fff as a half,
// the sign dropped, as NVIDIA's header models the instruction; tst_emulated_cuda compares them).
//   e4m3 s.eeee.mmm placed at float bit 20 is 2^(e-127) x 1.mmm (or a float subnormal for
//   e = 0), which x 2^120 is exactly 2^(e-7) x 1.mmm, the e4m3 value (denormals on: no FTZ in
//   this project). e5m2 is the top byte of a half.
__device__ __forceinline__ float e4m3ToFloatSw(unsigned b) {
    const unsigned mag = b & 0x7fu;
    if (mag == 0x7fu)
        return __uint_as_float(0x7fffe000u);
    return __uint_as_float(((b & 0x80u) << 24) | (mag << 20)) * 0x1p120f;
}
__device__ __forceinline__ float2 fp8x2ToFloat2(unsigned pair, bool e4m3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(pair),
                                                     e4m3 ? __NV_E4M3 : __NV_E5M2);
    return __half22float2(__half2(h));
#else
    if (e4m3)
        return make_float2(e4m3ToFloatSw(pair & 0xffu), e4m3ToFloatSw((pair >> 8) & 0xffu));
    unsigned lo = (pair & 0xffu) << 8, hi = (pair & 0xff00u);
    lo = (lo & 0x7fffu) > 0x7c00u ? 0x7fffu : lo;
    hi = (hi & 0x7fffu) > 0x7c00u ? 0x7fffu : hi;
    return half2BitsToFloat2(lo | (hi << 16));
#endif
}

// An unsigned b-bit code to float without a conversion instruction: 2^23 + q as float bits,
// minus 2^23 (exact for q < 2^23).
__device__ __forceinline__ float codeToFloat(unsigned q) {
    return __uint_as_float(0x4b000000u | q) - 8388608.0f;
}

// A lane's 8 codes as floats, before any scale or zero.
template <Kv F, bool Key>
__device__ __forceinline__ void decode8(const typename Side<F, Key>::Raw& r, float (&x)[8]) {
    using S = Side<F, Key>;
    if constexpr (F == Kv::F16) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float2 f = half2BitsToFloat2(rawWord(r, k));
            x[2 * k] = f.x;
            x[2 * k + 1] = f.y;
        }
    } else if constexpr (F == Kv::BF16) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const unsigned w = rawWord(r, k);
            x[2 * k] = __uint_as_float(w << 16);
            x[2 * k + 1] = __uint_as_float(w & 0xffff0000u);
        }
    } else if constexpr (F == Kv::F32) {
#pragma unroll
        for (int k = 0; k < 8; ++k)
            x[k] = __uint_as_float(rawWord(r, k));
    } else if constexpr (F == Kv::E4M3 || F == Kv::E5M2) {
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const unsigned w = rawWord(r, k);
            const float2 a = fp8x2ToFloat2(w & 0xffffu, F == Kv::E4M3);
            const float2 b = fp8x2ToFloat2(w >> 16, F == Kv::E4M3);
            x[4 * k] = a.x;
            x[4 * k + 1] = a.y;
            x[4 * k + 2] = b.x;
            x[4 * k + 3] = b.y;
        }
    } else if constexpr (F == Kv::Int8) {
#pragma unroll
        for (int k = 0; k < 2; ++k) {
            const unsigned w = rawWord(r, k);
#pragma unroll
            for (int i = 0; i < 4; ++i)
                x[4 * k + i] = float(static_cast<int>(static_cast<signed char>(w >> (8 * i))));
        }
    } else {
        constexpr unsigned kMask = (1u << S::kBits) - 1u;
        const unsigned w = rawWord(r, 0);
#pragma unroll
        for (int i = 0; i < 8; ++i)
            x[i] = codeToFloat((w >> (S::kBits * i)) & kMask);
    }
}

// Packs 8 codes into a lane's vector (element i at bit i x bits of the row, as putCode).
template <Kv F, bool Key>
__device__ __forceinline__ typename Side<F, Key>::Raw pack8(const std::uint32_t (&q)[8]) {
    using S = Side<F, Key>;
    typename S::Raw r = zeroRaw<typename S::Raw>();
    if constexpr (S::kBits == 32) {
#pragma unroll
        for (int k = 0; k < 8; ++k)
            setRawWord(r, k, q[k]);
    } else if constexpr (S::kBits == 16) {
#pragma unroll
        for (int k = 0; k < 4; ++k)
            setRawWord(r, k, (q[2 * k] & 0xffffu) | (q[2 * k + 1] << 16));
    } else if constexpr (S::kBits == 8) {
#pragma unroll
        for (int k = 0; k < 2; ++k)
            setRawWord(r, k,
                       (q[4 * k] & 0xffu) | ((q[4 * k + 1] & 0xffu) << 8) |
                           ((q[4 * k + 2] & 0xffu) << 16) | (q[4 * k + 3] << 24));
    } else {
        unsigned w = 0;
#pragma unroll
        for (int i = 0; i < 8; ++i)
            w |= q[i] << (S::kBits * i);
        setRawWord(r, 0, w);
    }
    return r;
}

// The 8 fp16 / bf16 inputs of a lane as floats: kv_quant.h's exact software conversion, the
// very function the CPU backend quantizes from.
__device__ __forceinline__ void inputToFloat8(const uint4& in, bool bf16, float (&x)[8]) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const unsigned w = k == 0 ? in.x : k == 1 ? in.y : k == 2 ? in.z : in.w;
        const std::uint16_t lo = static_cast<std::uint16_t>(w & 0xffffu);
        const std::uint16_t hi = static_cast<std::uint16_t>(w >> 16);
        x[2 * k] = bf16 ? bf16ToFloat(lo) : halfToFloat(lo);
        x[2 * k + 1] = bf16 ? bf16ToFloat(hi) : halfToFloat(hi);
    }
}

__device__ __forceinline__ float2 scaleZeroPair(unsigned w) {
    return half2BitsToFloat2(w); // .x = fp16 scale, .y = fp16 zero (storeScalar's order)
}

// ---- host side: which layouts the fast kernels take

// The largest power of two dividing every offset a side's rows start at.
inline std::int64_t alignmentOf(std::int64_t a, std::int64_t b, std::int64_t c) {
    const std::int64_t x = a | b | c;
    return x == 0 ? 256 : (x & -x);
}

// A token row is L = 8 / 16 / 32 lanes of kLaneElems elements, the fewest covering head_dim, so
// the fast kernels take head_dim up to a full warp's 256.
inline constexpr int kRowMaxHeadDim = 32 * kLaneElems;

// The format of a layout as the fast decode and store kernels both read it, or false (the
// generic kernels run it): head_dim a multiple of 8 up to kRowMaxHeadDim, both sides of one Kv
// format, rows and meta words aligned as the lanes load them. Each launcher adds what its own
// kernels need besides (fastFormat, fastStoreFormat).
inline bool fastKvFormat(const PageLayout& L, Kv& kind) {
    const SideLayout &k = L.k, &v = L.v;
    if (L.headDim % 8 != 0 || L.headDim > kRowMaxHeadDim)
        return false;
    auto plain = [](const SideLayout& s, int codec, int bits) {
        return s.codec == codec && s.bits == bits && s.group == 0 && s.tokenGroup == 0;
    };
    // {scale, zero} fp16 groups a lane's 8 elements share.
    auto halfGroups = [&](const SideLayout& s, int bits) {
        return s.codec == kCodecIntAsym && s.bits == bits && s.tokenGroup == 0 && s.group > 0 &&
               s.group % 8 == 0 && s.scaleBytes == 2 && s.hasZero;
    };
    if (plain(k, kCodecF16, 16) && plain(v, kCodecF16, 16))
        kind = Kv::F16;
    else if (plain(k, kCodecBF16, 16) && plain(v, kCodecBF16, 16))
        kind = Kv::BF16;
    else if (plain(k, kCodecF32, 32) && plain(v, kCodecF32, 32))
        kind = Kv::F32;
    else if (plain(k, kCodecE4M3, 8) && plain(v, kCodecE4M3, 8))
        kind = Kv::E4M3;
    else if (plain(k, kCodecE5M2, 8) && plain(v, kCodecE5M2, 8))
        kind = Kv::E5M2;
    else if (k.codec == kCodecIntSym && k.bits == 8 && k.group == L.headDim && k.scaleBytes == 4 &&
             !k.hasZero && v.codec == kCodecIntSym && v.bits == 8 && v.group == L.headDim &&
             v.scaleBytes == 4 && !v.hasZero)
        kind = Kv::Int8;
    else if (halfGroups(k, 4) && halfGroups(v, 4))
        kind = Kv::Int4;
    else if ((k.bits == 4 || k.bits == 2) && k.codec == kCodecIntAsym &&
             k.tokenGroup == kKiviTokenGroup && k.scaleBytes == 2 && k.hasZero &&
             halfGroups(v, k.bits))
        kind = k.bits == 4 ? Kv::Kivi4 : Kv::Kivi2;
    else
        return false;
    // Row vectors: aligned to min(bytes, 16) wherever a page, head and side start.
    const std::int64_t align = alignmentOf(L.pageBytes, L.headStride, vSideOffset(L));
    const int kVec = std::min(k.bits, 16), vVec = std::min(v.bits, 16); // 8 elements' bytes
    if (align < kVec || align < vVec)
        return false;
    // Meta words: 4-byte aligned (KIVI's 32-byte channel runs: 16).
    const int metaAlign = kind == Kv::Kivi4 || kind == Kv::Kivi2 ? 16 : 4;
    if ((k.group > 0 || k.tokenGroup > 0) && (align < metaAlign || k.metaOffset % metaAlign != 0))
        return false;
    if (v.group > 0 && (align < 4 || v.metaOffset % 4 != 0))
        return false;
    return true;
}

// ---- host side: from a layout's runtime format and head_dim to the kernels' template arguments

// Calls launch(std::integral_constant<int, L>{}) with the lanes per token row for head_dim
// (<= 64 / 128 / 256: 8 / 16 / 32), as the decode and store kernels both lay a row out.
template <class Launch> cudaError_t withRowLanes(int headDim, Launch&& launch) {
    if (headDim <= 64)
        return launch(std::integral_constant<int, 8>{});
    if (headDim <= 128)
        return launch(std::integral_constant<int, 16>{});
    return launch(std::integral_constant<int, 32>{});
}

template <Kv... Formats> struct KvList {};
// Every Kv format: the decode and store launchers instantiate their fast kernels for each.
using AllKvFormats = KvList<Kv::F16, Kv::BF16, Kv::F32, Kv::E4M3, Kv::E5M2, Kv::Int8, Kv::Int4,
                            Kv::Kivi4, Kv::Kivi2>;

template <class Launch, Kv... Formats>
cudaError_t withKvFormatIn(Kv kind, Launch& launch, KvList<Formats...>) {
    cudaError_t e = cudaErrorNotSupported;
    // || stops at the one format equal to kind, after its launch.
    (void)((kind == Formats && ((e = launch(std::integral_constant<Kv, Formats>{})), true)) || ...);
    return e;
}

// Calls launch(std::integral_constant<Kv, F>{}) with the F equal to `kind` and returns its
// result (cudaErrorNotSupported for none).
template <class Launch> cudaError_t withKvFormat(Kv kind, Launch&& launch) {
    return withKvFormatIn(kind, launch, AllKvFormats{});
}

} // namespace kvl::probe::KVL_KERNEL_NS
