// The CPU kernels for AVX-512 (F, BW, VL, DQ, VNNI) with F16C and FMA: 16 floats per vector.
// Compiled with those -m flags alone (gpu_probe/CMakeLists.txt), so everything here stays in an
// anonymous namespace and uses nothing inline from a shared header (see cpu_simd.h).
#include "gpu_probe/cpu/cpu_simd.h"

#include <immintrin.h>

namespace kvl::probe {

namespace {

struct Vec {
    static constexpr int W = 16;
    static constexpr int kAccumulators = 16;
    __m512 v;
    static Vec zero() { return {_mm512_setzero_ps()}; }
    static Vec set1(float f) { return {_mm512_set1_ps(f)}; }
    static Vec load(const float* p) { return {_mm512_loadu_ps(p)}; }
    void store(float* p) const { _mm512_storeu_ps(p, v); }
    static Vec fma(Vec a, Vec b, Vec c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
    static Vec max(Vec a, Vec b) { return {_mm512_max_ps(a.v, b.v)}; }
    friend Vec operator+(Vec a, Vec b) { return {_mm512_add_ps(a.v, b.v)}; }
    friend Vec operator-(Vec a, Vec b) { return {_mm512_sub_ps(a.v, b.v)}; }
    friend Vec operator*(Vec a, Vec b) { return {_mm512_mul_ps(a.v, b.v)}; }
    float hsum() const { return _mm512_reduce_add_ps(v); }
    float hmax() const { return _mm512_reduce_max_ps(v); }
    float first() const { return _mm512_cvtss_f32(v); }
};

// e^x: x = n ln2 + r with |r| <= ln2 / 2, e^r by Cephes' degree-6 polynomial for expf
// (S. L. Moshier, Cephes Math Library, expf.c), 2^n put into the exponent; about 2 ulp, far
// inside the kernel's 1e-3 budget. Hand-written because glibc's vector expf (libmvec) is only
// reachable through -ffast-math, which this project never uses (the store's bytes must match
// the GPU's exactly).
Vec expv(Vec x) {
    const __m512 input = x.v;
    __m512 t =
        _mm512_min_ps(_mm512_max_ps(input, _mm512_set1_ps(-87.33654f)), _mm512_set1_ps(88.37626f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    t = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), t);
    t = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), t);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(t, t), _mm512_add_ps(t, _mm512_set1_ps(1.0f)));
    const __m512i exponent =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    const __m512 result = _mm512_mul_ps(p, _mm512_castsi512_ps(exponent));
    const __mmask16 underflow = _mm512_cmp_ps_mask(input, _mm512_set1_ps(-87.33654f), _CMP_LT_OQ);
    return {_mm512_mask_blend_ps(underflow, result, _mm512_setzero_ps())};
}

// Sums of 16 vectors in one vector, in order: pairs, then quadruples, folded together while
// the lanes are transposed (45 instructions for 16 sums, no scalar extraction).
[[gnu::always_inline]] inline __m512 reduce16(const Vec* s) {
    __m512 pairs[8], quads[4], halves[2];
    for (int k = 0; k < 8; ++k) // per 128-bit lane: (a0+a2, b0+b2, a1+a3, b1+b3)
        pairs[k] = _mm512_add_ps(_mm512_unpacklo_ps(s[2 * k].v, s[2 * k + 1].v),
                                 _mm512_unpackhi_ps(s[2 * k].v, s[2 * k + 1].v));
    for (int k = 0; k < 4; ++k) // per lane: (a, b, c, d) over that lane
        quads[k] = _mm512_add_ps(_mm512_shuffle_ps(pairs[2 * k], pairs[2 * k + 1], 0x44),
                                 _mm512_shuffle_ps(pairs[2 * k], pairs[2 * k + 1], 0xEE));
    for (int k = 0; k < 2; ++k) // lanes: (abcd of lanes 0+1, of 2+3, efgh of 0+1, of 2+3)
        halves[k] = _mm512_add_ps(_mm512_shuffle_f32x4(quads[2 * k], quads[2 * k + 1], 0x88),
                                  _mm512_shuffle_f32x4(quads[2 * k], quads[2 * k + 1], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(halves[0], halves[1], 0x88),
                         _mm512_shuffle_f32x4(halves[0], halves[1], 0xDD));
}

// reduce16 in int32 (the same lane moves: unpacklo/hi_epi64 are shuffle_ps 0x44 / 0xEE), so
// the integer dots convert to float once per sixteen sums rather than once per sum.
[[gnu::always_inline]] inline __m512i reduce16i(const __m512i* s) {
    __m512i pairs[8], quads[4], halves[2];
    for (int k = 0; k < 8; ++k)
        pairs[k] = _mm512_add_epi32(_mm512_unpacklo_epi32(s[2 * k], s[2 * k + 1]),
                                    _mm512_unpackhi_epi32(s[2 * k], s[2 * k + 1]));
    for (int k = 0; k < 4; ++k)
        quads[k] = _mm512_add_epi32(_mm512_unpacklo_epi64(pairs[2 * k], pairs[2 * k + 1]),
                                    _mm512_unpackhi_epi64(pairs[2 * k], pairs[2 * k + 1]));
    for (int k = 0; k < 2; ++k)
        halves[k] = _mm512_add_epi32(_mm512_shuffle_i32x4(quads[2 * k], quads[2 * k + 1], 0x88),
                                     _mm512_shuffle_i32x4(quads[2 * k], quads[2 * k + 1], 0xDD));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(halves[0], halves[1], 0x88),
                            _mm512_shuffle_i32x4(halves[0], halves[1], 0xDD));
}

// Sums of N vectors: sixteen at a time, then four at a time (128-bit lanes folded across the
// vectors, then within), then one by one.
template <int N> [[gnu::always_inline]] inline void reduceN(const Vec (&s)[N], float* out) {
    int i = 0;
    for (; i + 16 <= N; i += 16)
        _mm512_storeu_ps(out + i, reduce16(s + i));
    for (; i + 4 <= N; i += 4) {
        const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(s[i].v, s[i + 1].v, 0x44),
                                        _mm512_shuffle_f32x4(s[i].v, s[i + 1].v, 0xEE));
        const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(s[i + 2].v, s[i + 3].v, 0x44),
                                        _mm512_shuffle_f32x4(s[i + 2].v, s[i + 3].v, 0xEE));
        // 128-bit lane j now holds 4 partial sums of vector j
        __m512 abcd =
            _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
        abcd = _mm512_add_ps(abcd, _mm512_permute_ps(abcd, 0x4E));
        abcd = _mm512_add_ps(abcd, _mm512_permute_ps(abcd, 0xB1));
        const __m128 sums = _mm512_castps512_ps128(_mm512_permutexvar_ps(
            _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), abcd));
        _mm_storeu_ps(out + i, sums);
    }
    for (; i < N; ++i)
        out[i] = s[i].hsum();
}

// acc + the pairwise int16 products of a and b summed per int32 lane (VNNI's vpdpwssd), in
// inline assembly with the accumulator as one read-write register: GCC 12 compiles
// _mm512_dpwssd_epi32 with a separate output register and copies every accumulator in and out
// of each loop iteration (two moves per multiply-add, measured in the value loop's disassembly).
[[gnu::always_inline]] inline __m512i dpwssd(__m512i acc, __m512i a, __m512i b) {
    __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "vm"(b));
    return acc;
}

// The prefetches in inline assembly: GCC 12 at -O3 compiled none of the kernels' _mm_prefetch
// (_MM_HINT_T1) calls of the next unit's rows into the float decoders' attendItemT (objdump: not
// one prefetcht1 there, only in the out-of-line integer logits), and those prefetches are what
// keep the decode fed. Measured on the Zen 4 VM, decode steps in turn: FP16 paged 16.0 -> 11.6-12.6
// ms, INT8 paged 8.9-9.2 -> 6.9-7.9 ms.
void prefetch(const void* p) {
    __asm__ volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
}
void prefetchL2(const void* p) {
    __asm__ volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p)));
}

struct DecF32 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static Vec load(const std::uint8_t* row, int c) {
        return {_mm512_loadu_ps(reinterpret_cast<const float*>(row) + c)};
    }
};
struct DecF16 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static Vec load(const std::uint8_t* row, int c) {
        return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * c)))};
    }
};
struct DecBF16 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static Vec load(const std::uint8_t* row, int c) {
        const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * c));
        return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16))};
    }
};
constexpr int kTileTokens = 64; // the kernel's kTile (cpu_simd_kernels.h checks they agree)
struct DecI8 {
    static Vec load(const std::uint8_t* row, int c) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c));
        return {_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes))};
    }
    // Keys against int16 queries, 32 elements per step: the int8 codes widened to int16, then
    // VNNI's vpdpwssd (pairs of int16 products summed into int32, exactly).
    static constexpr bool kIntegerDot = true;
    static constexpr int kIntegerChunk = 32;
    template <int NG, int NT, class TileT>
    static void integerLogits(const std::int16_t* q16, int dim, const TileT& tile, int i0, int g0,
                              float* logits);
    // Values times 15-bit weights, two tokens at a time: their rows widened to int16 and
    // interleaved (vpunpck{l,h}wd, within 128-bit lanes), so each int32 lane of vpdpwssd sums
    // w[2j] v[2j][c] + w[2j+1] v[2j+1][c] for one channel c. The accumulators keep the lanes'
    // channel order; channelOf undoes it at the end.
    static constexpr bool kIntegerAccumulate = true;
    template <int NG, class TileT>
    static void integerAccumulate(float* acc, int dim, const TileT& tile, int g0,
                                  const std::int32_t* weightPairs, const float* weightScale,
                                  const TileT* next);
    // A 32-channel chunk's low half (16 lanes) holds channels 0-3, 8-11, 16-19, 24-27, its high
    // half 4-7, 12-15, 20-23, 28-31: back into channel order.
    static void quantizeWeights(const float* weights, std::int32_t* pairs, float* scale) {
        static_assert(kTileTokens % 16 == 0, "whole vectors of weights per head");
        constexpr int kVectors = kTileTokens / 16;
        __m512 w[kVectors];
        __m512 high = _mm512_setzero_ps();
        for (int k = 0; k < kVectors; ++k) {
            w[k] = _mm512_loadu_ps(weights + 16 * k);
            high = _mm512_max_ps(high, w[k]);
        }
        const float largest = _mm512_reduce_max_ps(high);
        *scale = largest / 32767.0f;
        const __m512 toInt = _mm512_set1_ps(largest > 0.0f ? 32767.0f / largest : 0.0f);
        std::int16_t* out = reinterpret_cast<std::int16_t*>(pairs);
        for (int k = 0; k < kVectors; ++k)
            _mm256_storeu_si256(
                reinterpret_cast<__m256i*>(out + 16 * k),
                _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(_mm512_mul_ps(w[k], toInt))));
    }
    static void unpermute(const float* acc, int dim, float* out) {
        const __m512i first =
            _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
        const __m512i second =
            _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
        for (int c = 0; c < dim; c += 32) {
            const __m512 low = _mm512_loadu_ps(acc + c), high = _mm512_loadu_ps(acc + c + 16);
            _mm512_storeu_ps(out + c, _mm512_permutex2var_ps(low, first, high));
            _mm512_storeu_ps(out + c + 16, _mm512_permutex2var_ps(low, second, high));
        }
    }
};
// OCP E5M2 is the top byte of an IEEE half: exact through F16C.
struct DecE5M2 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static Vec load(const std::uint8_t* row, int c) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c));
        return {_mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(bytes), 8))};
    }
};
// OCP E4M3 (bias 7) placed in a half (bias 15): S.EEEE.MMM -> S.0EEEE.MMM0000000, times 2^8,
// exact for normals and subnormals alike; the one NaN code (S.1111.111) is patched.
struct DecE4M3 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static Vec load(const std::uint8_t* row, int c) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + c));
        const __m256i wide = _mm256_cvtepu8_epi16(bytes);
        const __m256i magnitude = _mm256_and_si256(wide, _mm256_set1_epi16(0x7f));
        const __m256i sign = _mm256_slli_epi16(_mm256_and_si256(wide, _mm256_set1_epi16(0x80)), 8);
        const __m256i half = _mm256_or_si256(sign, _mm256_slli_epi16(magnitude, 7));
        const __m512 value = _mm512_mul_ps(_mm512_cvtph_ps(half), _mm512_set1_ps(256.0f));
        const __mmask16 nan = _mm256_cmpeq_epi16_mask(magnitude, _mm256_set1_epi16(0x7f));
        return {_mm512_mask_blend_ps(nan, value, _mm512_set1_ps(__builtin_nanf("")))};
    }
};

#include "gpu_probe/cpu/cpu_simd_kernels.h"
static_assert(kTile == kTileTokens);

template <int NG, int NT, class TileT>
[[gnu::always_inline]] inline void DecI8::integerLogits(const std::int16_t* q16, int dim,
                                                        const TileT& tile, int i0, int g0,
                                                        float* logits) {
    __m512i sum[NG * NT];
    for (int j = 0; j < NG * NT; ++j)
        sum[j] = _mm512_setzero_si512();
    for (int c = 0; c < dim; c += 32) {
        __m512i query[NG];
        for (int g = 0; g < NG; ++g)
            query[g] = _mm512_loadu_si512(q16 + std::int64_t(g0 + g) * dim + c);
        for (int t = 0; t < NT; ++t) {
            const __m512i key = _mm512_cvtepi8_epi16(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tile.k[i0 + t] + c)));
            for (int g = 0; g < NG; ++g)
                sum[g * NT + t] = dpwssd(sum[g * NT + t], key, query[g]);
        }
    }
    alignas(64) float dots[NG * NT];
    if constexpr (NG * NT == 16) { // one vector of sums
        _mm512_store_ps(dots, _mm512_cvtepi32_ps(reduce16i(sum)));
    } else {
        Vec sums[NG * NT];
        for (int j = 0; j < NG * NT; ++j)
            sums[j] = {_mm512_cvtepi32_ps(sum[j])};
        reduceN<NG * NT>(sums, dots);
    }
    for (int g = 0; g < NG; ++g)
        __builtin_memcpy(logits + (g0 + g) * kTile + i0, dots + g * NT, sizeof(float) * NT);
}

// CC 32-channel chunks of every V row per pass (one 64-byte line of a row when CC = 2), for NG
// heads: 2 x NG x CC accumulators, each pair's weights broadcast once per pass.
template <int NG, int CC, class TileT>
[[gnu::always_inline]] inline void accumulateChunks(float* acc, int dim, const TileT& tile, int c,
                                                    int g0, const std::int32_t* weightPairs,
                                                    const float* weightScale, const TileT* next) {
    const int pairs = (tile.n + 1) / 2;
    __m512i low[NG * CC], high[NG * CC];
    for (int j = 0; j < NG * CC; ++j)
        low[j] = high[j] = _mm512_setzero_si512();
    for (int j = 0; j < pairs; ++j) {
        // an odd last token pairs with itself at weight 0
        const std::uint8_t* first = tile.v[2 * j] + c;
        const std::uint8_t* second = (2 * j + 1 < tile.n ? tile.v[2 * j + 1] : tile.v[2 * j]) + c;
        prefetchTokens(next, 2 * j, 2 * j + 2, kPrefetchV);
        if (c == 0 && g0 == 0) // the first pass brings the rows into L1
            prefetchTokensL1(tile, 2 * j + kL1Ahead, 2 * j + kL1Ahead + 2, kPrefetchV);
        __m512i weight[NG];
        for (int g = 0; g < NG; ++g)
            weight[g] = _mm512_set1_epi32(weightPairs[(g0 + g) * (kTile / 2) + j]);
        for (int k = 0; k < CC; ++k) {
            const __m512i a = _mm512_cvtepi8_epi16(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(first + 32 * k)));
            const __m512i b = _mm512_cvtepi8_epi16(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(second + 32 * k)));
            const __m512i lo = _mm512_unpacklo_epi16(a, b), hi = _mm512_unpackhi_epi16(a, b);
            for (int g = 0; g < NG; ++g) {
                low[g * CC + k] = dpwssd(low[g * CC + k], lo, weight[g]);
                high[g * CC + k] = dpwssd(high[g * CC + k], hi, weight[g]);
            }
        }
    }
    prefetchTokens(next, 2 * pairs, kTile, kPrefetchV);
    for (int g = 0; g < NG; ++g) {
        const __m512 scale = _mm512_set1_ps(weightScale[g0 + g]);
        for (int k = 0; k < CC; ++k) {
            float* out = acc + std::int64_t(g0 + g) * dim + c + 32 * k;
            _mm512_storeu_ps(out, _mm512_fmadd_ps(_mm512_cvtepi32_ps(low[g * CC + k]), scale,
                                                  _mm512_loadu_ps(out)));
            _mm512_storeu_ps(out + 16, _mm512_fmadd_ps(_mm512_cvtepi32_ps(high[g * CC + k]), scale,
                                                       _mm512_loadu_ps(out + 16)));
        }
    }
}

template <int NG, class TileT>
[[gnu::always_inline]] inline void DecI8::integerAccumulate(float* acc, int dim, const TileT& tile,
                                                            int g0, const std::int32_t* weightPairs,
                                                            const float* weightScale,
                                                            const TileT* next) {
    constexpr int CC = NG >= 8 ? 1 : NG >= 4 ? 2 : 4; // 2 x NG x CC <= 16 accumulators
    int c = 0;
    for (; c + 32 * CC <= dim; c += 32 * CC, next = nullptr) // prefetch in the first pass
        accumulateChunks<NG, CC>(acc, dim, tile, c, g0, weightPairs, weightScale, next);
    for (; c < dim; c += 32, next = nullptr)
        accumulateChunks<NG, 1>(acc, dim, tile, c, g0, weightPairs, weightScale, next);
}

// Whether a row of fp16 / bf16 input bits holds a NaN (whose quieting stays with kv_quant.h).
bool hasNan(const std::uint16_t* in, bool bf16Input, int dim) {
    const __m512i magnitudeMask = _mm512_set1_epi16(0x7fff);
    const __m512i nanBelow = _mm512_set1_epi16(bf16Input ? 0x7f80 : 0x7c00);
    for (int c = 0; c < dim; c += 32) { // dim is a multiple of 16: check the last 16 alone
        const int count = dim - c >= 32 ? 32 : 16;
        const __mmask32 lanes = count == 32 ? 0xffffffffu : 0xffffu;
        const __m512i bits = _mm512_maskz_loadu_epi16(lanes, in + c);
        if (_mm512_mask_cmpgt_epi16_mask(lanes, _mm512_and_si512(bits, magnitudeMask), nanBelow))
            return true;
    }
    return false;
}

void copyRow(const std::uint16_t* in, std::uint8_t* row, int dim) {
    for (int c = 0; c < dim; c += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + 2 * c),
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + c)));
}

// fp16 or bf16 codes (Bf16Codes) from fp16 or bf16 input bits. When the two types match, the
// identity for every code but NaN (kv_quant.h makes NaN canonical). Otherwise the value is exact in
// float and rounded to the codes' type to nearest even: F16C for fp16 codes (as kv_quant.h's
// floatToHalf, overflow to infinity included), floatToBf16's integer rounding for bf16 codes
// (infinities stay).
template <bool Bf16Codes>
bool storeHalfCodes(const std::uint16_t* in, bool bf16Input, std::uint8_t* side, int dim,
                    int dataBytes, int, int slot, float) {
    std::uint8_t* row = side + std::int64_t(slot) * dataBytes;
    if (hasNan(in, bf16Input, dim))
        return false;
    if (bf16Input == Bf16Codes) {
        copyRow(in, row, dim);
        return true;
    }
    for (int c = 0; c < dim; c += 16) {
        const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + c));
        __m256i codes;
        if constexpr (Bf16Codes) {
            const __m512i x = _mm512_castps_si512(_mm512_cvtph_ps(bits));
            const __m512i tie = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
            const __m512i rounded =
                _mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), tie));
            codes = _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16));
        } else {
            const __m512 x =
                _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
            codes = _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + 2 * c), codes);
    }
    return true;
}

Vec inputRow(const std::uint16_t* in, bool bf16Input, int c) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + c));
    if (bf16Input)
        return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16))};
    return {_mm512_cvtph_ps(bits)};
}

// kv_quant.h's quantizeTokenVector for symmetric INT8 with one fp32 scale per token-head, on
// finite rows: scale = max|x| / 127 (what max(|min|, |max|) is), q = rint(x / scale) clamped to
// +-127, with the same IEEE division and round-to-nearest-even, so every byte is the same.
bool storeI8(const std::uint16_t* in, bool bf16Input, std::uint8_t* side, int dim, int dataBytes,
             int metaOffset, int slot, float) {
    __m512i largest = _mm512_setzero_si512();
    for (int c = 0; c < dim; c += 16) {
        const __m512i magnitude = _mm512_and_si512(
            _mm512_castps_si512(inputRow(in, bf16Input, c).v), _mm512_set1_epi32(0x7fffffff));
        largest = _mm512_max_epi32(largest, magnitude);
    }
    const int amaxBits = _mm512_reduce_max_epi32(largest);
    if (amaxBits >= 0x7f800000) // infinity or NaN
        return false;
    float amax;
    __builtin_memcpy(&amax, &amaxBits, 4);
    const float scale = amax / 127.0f;
    std::uint8_t* row = side + std::int64_t(slot) * dataBytes;
    __builtin_memcpy(side + metaOffset + std::int64_t(slot) * 4, &scale, 4);
    if (!(scale > 0.0f)) {
        for (int c = 0; c < dim; c += 16)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(row + c), _mm_setzero_si128());
        return true;
    }
    const __m512 divisor = _mm512_set1_ps(scale);
    const __m512 low = _mm512_set1_ps(-127.0f), high = _mm512_set1_ps(127.0f);
    for (int c = 0; c < dim; c += 16) {
        __m512 q = _mm512_roundscale_ps(_mm512_div_ps(inputRow(in, bf16Input, c).v, divisor),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q = _mm512_min_ps(_mm512_max_ps(q, low), high);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row + c),
                         _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(q)));
    }
    return true;
}

// kv_quant.h's floatToE4m3 / floatToE5m2 of x / outScale (vLLM's scaled_fp8_conversion: the
// IEEE quotient saturated to the format's largest finite value), 16 lanes at a time with the
// same rounding: below the smallest normal, the quotient over the subnormal step rounded to
// nearest even; above it, the float's bits rounded to the code's mantissa width (ties to even)
// and rebiased. A row with a NaN or infinity goes to the scalar path (the quotient of a finite
// input by a positive scale is never NaN).
template <const Fp8Code& Code>
bool storeFp8(const std::uint16_t* in, bool bf16Input, std::uint8_t* side, int dim, int dataBytes,
              int, int slot, float outScale) {
    const __m512i magnitudeMask = _mm512_set1_epi32(0x7fffffff);
    for (int c = 0; c < dim; c += 16) { // NaN or infinity inputs: the scalar path
        const __m512i magnitude =
            _mm512_and_si512(_mm512_castps_si512(inputRow(in, bf16Input, c).v), magnitudeMask);
        if (_mm512_cmpge_epu32_mask(magnitude, _mm512_set1_epi32(0x7f800000)))
            return false;
    }
    std::uint8_t* row = side + std::int64_t(slot) * dataBytes;
    if (!(outScale > 0.0f)) { // a zero scale stores zeros
        for (int c = 0; c < dim; c += 16)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(row + c), _mm_setzero_si128());
        return true;
    }
    const __m512 divisor = _mm512_set1_ps(outScale);
    const __m512i one = _mm512_set1_epi32(1);
    for (int c = 0; c < dim; c += 16) {
        const __m512i bits =
            _mm512_castps_si512(_mm512_div_ps(inputRow(in, bf16Input, c).v, divisor));
        const __m512i a = _mm512_and_si512(bits, magnitudeMask);
        const __m512i sign = _mm512_and_si512(_mm512_srli_epi32(bits, 24), _mm512_set1_epi32(0x80));
        const __m512i subnormal = _mm512_cvt_roundps_epi32(
            _mm512_mul_ps(_mm512_castsi512_ps(a), _mm512_set1_ps(Code.subnormalScale)),
            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m512i tie = _mm512_and_si512(_mm512_srli_epi32(a, Code.shift), one);
        __m512i normal = _mm512_add_epi32(
            a, _mm512_add_epi32(
                   _mm512_set1_epi32((1 << (Code.shift - 1)) - 1 - (Code.rebias << 23)), tie));
        normal = _mm512_min_epu32(_mm512_srli_epi32(normal, Code.shift),
                                  _mm512_set1_epi32(Code.maxCode));
        __m512i code = _mm512_mask_blend_epi32(
            _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32(Code.minNormal)), normal, subnormal);
        code = _mm512_mask_blend_epi32(_mm512_cmpge_epu32_mask(a, _mm512_set1_epi32(Code.maxBits)),
                                       code, _mm512_set1_epi32(Code.maxCode));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row + c),
                         _mm512_cvtepi32_epi8(_mm512_or_si512(code, sign)));
    }
    return true;
}

// A group's scale or zero as kv_quant.h stores it: fp16 through F16C (round to nearest even,
// overflow to infinity: floatToHalf's rounding, as in storeHalfCodes) or fp32.
std::uint16_t toHalf(float f) {
    return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
float roundToStored(float f, int bytes) {
    return bytes == 2 ? _cvtsh_ss(toHalf(f)) : f;
}
float loadStored(const std::uint8_t* p, int bytes) {
    if (bytes == 2) {
        std::uint16_t h;
        __builtin_memcpy(&h, p, 2);
        return _cvtsh_ss(h);
    }
    float f;
    __builtin_memcpy(&f, p, 4);
    return f;
}

// 16 codes (one per byte, each below 2^bits) packed low bits first, as putCode packs them.
void packCodes(__m128i codes, int bits, std::uint8_t* out) {
    if (bits == 4) { // byte i = code 2i | code 2i+1 << 4
        const __m128i pairs = _mm_or_si128(codes, _mm_srli_epi16(codes, 4));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out), _mm_cvtepi16_epi8(pairs));
    } else { // byte i = codes 4i .. 4i+3, two bits each
        __m128i quads = _mm_or_si128(codes, _mm_srli_epi32(codes, 6));
        quads = _mm_or_si128(quads, _mm_srli_epi32(quads, 12));
        const int packed = _mm_cvtsi128_si32(_mm_cvtepi32_epi8(quads));
        __builtin_memcpy(out, &packed, 4);
    }
}

// kv_quant.h's quantizeTokenVector for asymmetric INT4 / INT2 groups, on rows it can match byte
// for byte: every group's parameters first (so a row left to the scalar code has nothing
// written), as groupParams computes them, then the codes as quantizeCode<kCodecIntAsym>
// (the same IEEE subtraction and division, round to nearest even, clamp to [0, qmax]; a NaN
// quotient clamps to 0 in both), packed low bits first as putCode does.
bool storeIntGroups(const std::uint16_t* in, bool bf16Input, std::uint8_t* side,
                    const SimdGroupSide& s, int slot) {
    constexpr int kMaxGroups = 64;
    const int groups = s.dim / s.group;
    if (groups > kMaxGroups)
        return false;
    float scale[kMaxGroups], zero[kMaxGroups];
    const float qmax = float((1 << s.bits) - 1);
    const __m512i magnitudeMask = _mm512_set1_epi32(0x7fffffff);
    for (int g = 0; g < groups; ++g) {
        __m512 low = _mm512_set1_ps(__builtin_inff()), high = _mm512_set1_ps(-__builtin_inff());
        for (int c = g * s.group; c < (g + 1) * s.group; c += 16) {
            const __m512 x = inputRow(in, bf16Input, c).v;
            if (_mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_castps_si512(x), magnitudeMask),
                                        _mm512_set1_epi32(0x7f800000)))
                return false; // NaN or infinity
            low = _mm512_min_ps(low, x);
            high = _mm512_max_ps(high, x);
        }
        const float mn = _mm512_reduce_min_ps(low), mx = _mm512_reduce_max_ps(high);
        if (mn == 0.0f || mx == 0.0f) // which zero fminf / fmaxf keep is the scalar code's
            return false;
        scale[g] = roundToStored((mx - mn) / qmax, s.scaleBytes);
        zero[g] = roundToStored(mn, s.scaleBytes);
    }
    std::uint8_t* row = side + std::int64_t(slot) * s.dataBytes;
    std::uint8_t* meta = side + s.metaOffset + std::int64_t(slot) * groups * 2 * s.scaleBytes;
    for (int g = 0; g < groups; ++g) {
        std::uint8_t* m = meta + g * 2 * s.scaleBytes;
        if (s.scaleBytes == 2) {
            const std::uint16_t pair[2] = {toHalf(scale[g]), toHalf(zero[g])};
            __builtin_memcpy(m, pair, 4);
        } else {
            const float pair[2] = {scale[g], zero[g]};
            __builtin_memcpy(m, pair, 8);
        }
        const bool positive = scale[g] > 0.0f; // a zero scale stores zero codes
        const __m512 divisor = _mm512_set1_ps(scale[g]), offset = _mm512_set1_ps(zero[g]);
        for (int c = g * s.group; c < (g + 1) * s.group; c += 16) {
            __m512 q = _mm512_setzero_ps();
            if (positive) {
                q = _mm512_roundscale_ps(
                    _mm512_div_ps(_mm512_sub_ps(inputRow(in, bf16Input, c).v, offset), divisor),
                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                q = _mm512_min_ps(_mm512_max_ps(q, _mm512_setzero_ps()), _mm512_set1_ps(qmax));
            }
            packCodes(_mm512_cvtepi32_epi8(_mm512_cvtps_epi32(q)), s.bits, row + c * s.bits / 8);
        }
    }
    return true;
}

// kv_quant.h's quantizeChannelRun over every channel of a KIVI key run, W channels at a time: each
// channel's least and largest value over the run, its scale and zero as groupParams rounds them
// to fp16 (stored as the (scale, zero) pairs the layout keeps per channel), then every token's
// codes as in storeIntGroups. A run with a NaN, an infinity or a zero at a channel's end is left
// to the scalar code before anything is written.
bool storeKiviKeys(const std::uint16_t* in, std::int64_t tokenStride, bool bf16Input,
                   std::uint8_t* side, const SimdGroupSide& s, int firstSlot, int tokens) {
    const __m512i magnitudeMask = _mm512_set1_epi32(0x7fffffff);
    auto range = [&](int c, __m512& low, __m512& high) { // false: a NaN or infinity
        low = _mm512_set1_ps(__builtin_inff());
        high = _mm512_set1_ps(-__builtin_inff());
        for (int i = 0; i < tokens; ++i) {
            const __m512 x = inputRow(in + i * tokenStride, bf16Input, c).v;
            if (_mm512_cmpge_epu32_mask(_mm512_and_si512(_mm512_castps_si512(x), magnitudeMask),
                                        _mm512_set1_epi32(0x7f800000)))
                return false;
            low = _mm512_min_ps(low, x);
            high = _mm512_max_ps(high, x);
        }
        return true;
    };
    constexpr int kMaxDim = 1024;
    if (s.dim > kMaxDim)
        return false;
    float lows[kMaxDim], highs[kMaxDim]; // every channel's range first: nothing written yet
    for (int c = 0; c < s.dim; c += 16) {
        __m512 low, high;
        if (!range(c, low, high) || _mm512_cmpeq_ps_mask(low, _mm512_setzero_ps()) ||
            _mm512_cmpeq_ps_mask(high, _mm512_setzero_ps()))
            return false;
        _mm512_storeu_ps(lows + c, low);
        _mm512_storeu_ps(highs + c, high);
    }
    const float qmax = float((1 << s.bits) - 1);
    std::uint8_t* pairs = side + s.metaOffset + std::int64_t(firstSlot / s.tokenGroup) * s.dim * 4;
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    for (int c = 0; c < s.dim; c += 16) {
        const __m512 low = _mm512_loadu_ps(lows + c), high = _mm512_loadu_ps(highs + c);
        const __m256i scaleBits =
            _mm512_cvtps_ph(_mm512_div_ps(_mm512_sub_ps(high, low), _mm512_set1_ps(qmax)), kRound);
        const __m256i zeroBits = _mm512_cvtps_ph(low, kRound);
        _mm512_storeu_si512(
            pairs + 4 * c, _mm512_or_si512(_mm512_cvtepu16_epi32(scaleBits),
                                           _mm512_slli_epi32(_mm512_cvtepu16_epi32(zeroBits), 16)));
        const __m512 scale = _mm512_cvtph_ps(scaleBits), zero = _mm512_cvtph_ps(zeroBits);
        const __mmask16 positive = _mm512_cmp_ps_mask(scale, _mm512_setzero_ps(), _CMP_GT_OQ);
        for (int i = 0; i < tokens; ++i) {
            const __m512 x = inputRow(in + i * tokenStride, bf16Input, c).v;
            __m512 q = _mm512_roundscale_ps(_mm512_div_ps(_mm512_sub_ps(x, zero), scale), kRound);
            q = _mm512_min_ps(_mm512_max_ps(q, _mm512_setzero_ps()), _mm512_set1_ps(qmax));
            q = _mm512_maskz_mov_ps(positive, q); // a zero scale stores zero codes
            packCodes(_mm512_cvtepi32_epi8(_mm512_cvtps_epi32(q)), s.bits,
                      side + std::int64_t(firstSlot + i) * s.dataBytes + c * s.bits / 8);
        }
    }
    return true;
}

// Rows of asymmetric INT4 / INT2 groups into floats, 16 codes at a time: each code's byte
// repeated, shifted to its bits, masked, then code x scale + zero in one rounding (kv_quant.h's
// dequantization rounds the product and the sum apart: at most an ulp apart).
void decodeIntGroups(const SimdSide& self, const std::uint8_t* side, int token, float* out) {
    const SimdGroupSide& s = self.groups;
    const int groups = s.dim / s.group;
    const std::uint8_t* row = side + std::int64_t(token) * s.dataBytes;
    const std::uint8_t* meta =
        side + s.metaOffset + std::int64_t(token) * groups * 2 * s.scaleBytes;
    const bool four = s.bits == 4;
    const __m128i spread = four ? _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7)
                                : _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    const __m512i shifts = four ? _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4)
                                : _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6);
    const __m512i mask = _mm512_set1_epi32((1 << s.bits) - 1);
    auto codesAt = [&](int c) {
        __m128i bytes;
        if (four) {
            bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + c / 2));
        } else {
            int packed;
            __builtin_memcpy(&packed, row + c / 4, 4);
            bytes = _mm_cvtsi32_si128(packed);
        }
        return _mm512_cvtepi32_ps(_mm512_and_si512(
            _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_shuffle_epi8(bytes, spread)), shifts),
            mask));
    };
    if (s.tokenGroup > 0) { // KIVI keys: 16 channels' (scale, zero) fp16 pairs at a time
        const std::uint8_t* pairs =
            side + s.metaOffset + std::int64_t(token / s.tokenGroup) * s.dim * 4;
        for (int c = 0; c < s.dim; c += 16) {
            const __m512i both = _mm512_loadu_si512(pairs + 4 * c);
            const __m512 scale = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(both));
            const __m512 zero = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(both, 16)));
            _mm512_storeu_ps(out + c, _mm512_fmadd_ps(codesAt(c), scale, zero));
        }
        return;
    }
    for (int g = 0; g < groups; ++g) {
        const std::uint8_t* m = meta + g * 2 * s.scaleBytes;
        const __m512 scale = _mm512_set1_ps(loadStored(m, s.scaleBytes));
        const __m512 zero = _mm512_set1_ps(loadStored(m + s.scaleBytes, s.scaleBytes));
        for (int c = g * s.group; c < (g + 1) * s.group; c += 16)
            _mm512_storeu_ps(out + c, _mm512_fmadd_ps(codesAt(c), scale, zero));
    }
}

} // namespace

extern const SimdKernels kSimdAvx512 = {"avx512",
                                        Vec::W,
                                        workspaceFloats,
                                        attendItem,
                                        storeHalfCodes<false>,
                                        storeHalfCodes<true>,
                                        storeI8,
                                        storeFp8<kE4M3Code>,
                                        storeFp8<kE5M2Code>,
                                        storeIntGroups,
                                        decodeIntGroups,
                                        storeKiviKeys,
                                        sumReadBlocks};

} // namespace kvl::probe
