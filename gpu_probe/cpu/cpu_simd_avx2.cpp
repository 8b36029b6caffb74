// The CPU kernels for AVX2 with F16C and FMA (x86-64 since Haswell / Zen): 8 floats per vector.
// Compiled with those -m flags alone (gpu_probe/CMakeLists.txt), so everything here stays in an
// anonymous namespace and uses nothing inline from a shared header (see cpu_simd.h).
#include "gpu_probe/cpu/cpu_simd.h"

#include <immintrin.h>

namespace kvl::probe {

namespace {

struct Vec {
    static constexpr int W = 8;
    static constexpr int kAccumulators = 8;
    __m256 v;
    static Vec zero() { return {_mm256_setzero_ps()}; }
    static Vec set1(float f) { return {_mm256_set1_ps(f)}; }
    static Vec load(const float* p) { return {_mm256_loadu_ps(p)}; }
    void store(float* p) const { _mm256_storeu_ps(p, v); }
    static Vec fma(Vec a, Vec b, Vec c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
    static Vec max(Vec a, Vec b) { return {_mm256_max_ps(a.v, b.v)}; }
    friend Vec operator+(Vec a, Vec b) { return {_mm256_add_ps(a.v, b.v)}; }
    friend Vec operator-(Vec a, Vec b) { return {_mm256_sub_ps(a.v, b.v)}; }
    friend Vec operator*(Vec a, Vec b) { return {_mm256_mul_ps(a.v, b.v)}; }
    float hsum() const {
        __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        x = _mm_add_ps(x, _mm_movehl_ps(x, x));
        x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 0x55));
        return _mm_cvtss_f32(x);
    }
    float hmax() const {
        __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        x = _mm_max_ps(x, _mm_movehl_ps(x, x));
        x = _mm_max_ss(x, _mm_shuffle_ps(x, x, 0x55));
        return _mm_cvtss_f32(x);
    }
    float first() const { return _mm256_cvtss_f32(v); }
};

// e^x as in cpu_simd_avx512.cpp (Cephes' expf polynomial; why hand-written is said there).
Vec expv(Vec x) {
    const __m256 input = x.v;
    __m256 t =
        _mm256_min_ps(_mm256_max_ps(input, _mm256_set1_ps(-87.33654f)), _mm256_set1_ps(88.37626f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(t, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    t = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), t);
    t = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), t);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(t, t), _mm256_add_ps(t, _mm256_set1_ps(1.0f)));
    const __m256i exponent =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 result = _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
    const __m256 underflow = _mm256_cmp_ps(input, _mm256_set1_ps(-87.33654f), _CMP_LT_OQ);
    return {_mm256_blendv_ps(result, _mm256_setzero_ps(), underflow)};
}

template <int N> void reduceN(const Vec (&s)[N], float* out) {
    int i = 0;
    for (; i + 4 <= N; i += 4) {
        const __m256 ab = _mm256_hadd_ps(s[i].v, s[i + 1].v);
        const __m256 cd = _mm256_hadd_ps(s[i + 2].v, s[i + 3].v);
        const __m256 abcd = _mm256_hadd_ps(ab, cd); // [a b c d | a b c d] partial sums
        _mm_storeu_ps(out + i,
                      _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
    }
    for (; i < N; ++i)
        out[i] = s[i].hsum();
}

// The prefetches in inline assembly, as in cpu_simd_avx512.cpp (GCC 12 dropped the kernels'
// _MM_HINT_T1 prefetches of the next unit's rows). AVX2 on the Zen 4 VM, decode steps in turn:
// FP16 paged about 22 -> 17 ms, INT8 about 18 -> 15 ms.
void prefetch(const void* p) {
    __asm__ volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
}
void prefetchL2(const void* p) {
    __asm__ volatile("prefetcht1 %0" : : "m"(*static_cast<const char*>(p)));
}

__m128i load8Bytes(const std::uint8_t* p) {
    return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
}

struct DecF32 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static Vec load(const std::uint8_t* row, int c) {
        return {_mm256_loadu_ps(reinterpret_cast<const float*>(row) + c)};
    }
};
struct DecF16 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static Vec load(const std::uint8_t* row, int c) {
        return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * c)))};
    }
};
struct DecBF16 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static Vec load(const std::uint8_t* row, int c) {
        const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * c));
        return {_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16))};
    }
};
struct DecI8 {
    static Vec load(const std::uint8_t* row, int c) {
        return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(load8Bytes(row + c)))};
    }
    // Keys against int16 queries, 16 elements per step: the int8 codes widened to int16, then
    // vpmaddwd (pairs of int16 products summed into int32, exactly) and an int32 add.
    static constexpr bool kIntegerDot = true;
    static constexpr bool kIntegerAccumulate = false;
    static constexpr int kIntegerChunk = 16;
    template <int NG, int NT, class TileT>
    static void integerLogits(const std::int16_t* q16, int dim, const TileT& tile, int i0, int g0,
                              float* logits);
};
struct DecE5M2 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static Vec load(const std::uint8_t* row, int c) {
        return {_mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(load8Bytes(row + c)), 8))};
    }
};
// E4M3 through a half, as in cpu_simd_avx512.cpp.
struct DecE4M3 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static Vec load(const std::uint8_t* row, int c) {
        const __m128i wide = _mm_cvtepu8_epi16(load8Bytes(row + c));
        const __m128i magnitude = _mm_and_si128(wide, _mm_set1_epi16(0x7f));
        const __m128i sign = _mm_slli_epi16(_mm_and_si128(wide, _mm_set1_epi16(0x80)), 8);
        const __m128i half = _mm_or_si128(sign, _mm_slli_epi16(magnitude, 7));
        const __m256 value = _mm256_mul_ps(_mm256_cvtph_ps(half), _mm256_set1_ps(256.0f));
        const __m256 nan = _mm256_castsi256_ps(
            _mm256_cvtepi16_epi32(_mm_cmpeq_epi16(magnitude, _mm_set1_epi16(0x7f))));
        return {_mm256_blendv_ps(value, _mm256_set1_ps(__builtin_nanf("")), nan)};
    }
};

#include "gpu_probe/cpu/cpu_simd_kernels.h"

template <int NG, int NT, class TileT>
void DecI8::integerLogits(const std::int16_t* q16, int dim, const TileT& tile, int i0, int g0,
                          float* logits) {
    __m256i sum[NG * NT];
    for (int j = 0; j < NG * NT; ++j)
        sum[j] = _mm256_setzero_si256();
    for (int c = 0; c < dim; c += 16) {
        __m256i query[NG];
        for (int g = 0; g < NG; ++g)
            query[g] = _mm256_loadu_si256(
                reinterpret_cast<const __m256i*>(q16 + std::int64_t(g0 + g) * dim + c));
        for (int t = 0; t < NT; ++t) {
            const __m256i key = _mm256_cvtepi8_epi16(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(tile.k[i0 + t] + c)));
            for (int g = 0; g < NG; ++g)
                sum[g * NT + t] =
                    _mm256_add_epi32(sum[g * NT + t], _mm256_madd_epi16(key, query[g]));
        }
    }
    Vec sums[NG * NT];
    for (int j = 0; j < NG * NT; ++j)
        sums[j] = {_mm256_cvtepi32_ps(sum[j])};
    float dots[NG * NT];
    reduceN<NG * NT>(sums, dots);
    for (int g = 0; g < NG; ++g)
        for (int t = 0; t < NT; ++t)
            logits[(g0 + g) * kTile + i0 + t] = dots[g * NT + t];
}

// As hasNan, copyRow and storeHalfCodes in cpu_simd_avx512.cpp, 8 lanes at a time.
bool hasNan(const std::uint16_t* in, bool bf16Input, int dim) {
    const __m128i magnitudeMask = _mm_set1_epi16(0x7fff);
    const __m128i nanBelow = _mm_set1_epi16(bf16Input ? 0x7f80 : 0x7c00);
    __m128i anyNan = _mm_setzero_si128();
    for (int c = 0; c < dim; c += 8) {
        const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + c));
        anyNan =
            _mm_or_si128(anyNan, _mm_cmpgt_epi16(_mm_and_si128(bits, magnitudeMask), nanBelow));
    }
    return _mm_movemask_epi8(anyNan) != 0;
}

void copyRow(const std::uint16_t* in, std::uint8_t* row, int dim) {
    for (int c = 0; c < dim; c += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row + 2 * c),
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + c)));
}

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
    for (int c = 0; c < dim; c += 8) {
        const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + c));
        __m128i codes;
        if constexpr (Bf16Codes) {
            const __m256i x = _mm256_castps_si256(_mm256_cvtph_ps(bits));
            const __m256i tie = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
            const __m256i rounded = _mm256_srli_epi32(
                _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), tie)), 16);
            codes = _mm_packus_epi32(_mm256_castsi256_si128(rounded),
                                     _mm256_extracti128_si256(rounded, 1));
        } else {
            codes = _mm256_cvtps_ph(
                _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16)),
                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row + 2 * c), codes);
    }
    return true;
}

__m256 inputRow(const std::uint16_t* in, bool bf16Input, int c) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + c));
    if (bf16Input)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
    return _mm256_cvtph_ps(bits);
}

// As storeI8 in cpu_simd_avx512.cpp (the same bytes as kv_quant.h's quantizeTokenVector).
bool storeI8(const std::uint16_t* in, bool bf16Input, std::uint8_t* side, int dim, int dataBytes,
             int metaOffset, int slot, float) {
    __m256i largest = _mm256_setzero_si256();
    for (int c = 0; c < dim; c += 8)
        largest = _mm256_max_epi32(largest,
                                   _mm256_and_si256(_mm256_castps_si256(inputRow(in, bf16Input, c)),
                                                    _mm256_set1_epi32(0x7fffffff)));
    __m128i folded =
        _mm_max_epi32(_mm256_castsi256_si128(largest), _mm256_extracti128_si256(largest, 1));
    folded = _mm_max_epi32(folded, _mm_shuffle_epi32(folded, 0x4E));
    folded = _mm_max_epi32(folded, _mm_shuffle_epi32(folded, 0xB1));
    const int amaxBits = _mm_cvtsi128_si32(folded);
    if (amaxBits >= 0x7f800000) // infinity or NaN
        return false;
    float amax;
    __builtin_memcpy(&amax, &amaxBits, 4);
    const float scale = amax / 127.0f;
    std::uint8_t* row = side + std::int64_t(slot) * dataBytes;
    __builtin_memcpy(side + metaOffset + std::int64_t(slot) * 4, &scale, 4);
    if (!(scale > 0.0f)) {
        for (int c = 0; c < dim; c += 8)
            _mm_storel_epi64(reinterpret_cast<__m128i*>(row + c), _mm_setzero_si128());
        return true;
    }
    const __m256 divisor = _mm256_set1_ps(scale);
    const __m256 low = _mm256_set1_ps(-127.0f), high = _mm256_set1_ps(127.0f);
    for (int c = 0; c < dim; c += 8) {
        __m256 q = _mm256_round_ps(_mm256_div_ps(inputRow(in, bf16Input, c), divisor),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q = _mm256_min_ps(_mm256_max_ps(q, low), high);
        const __m256i codes = _mm256_cvtps_epi32(q);
        const __m128i words =
            _mm_packs_epi32(_mm256_castsi256_si128(codes), _mm256_extracti128_si256(codes, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(row + c), _mm_packs_epi16(words, words));
    }
    return true;
}

// As storeFp8 in cpu_simd_avx512.cpp, 8 lanes at a time (the magnitudes are below 2^31, so
// AVX2's signed compares order them as unsigned ones would).
template <const Fp8Code& Code>
bool storeFp8(const std::uint16_t* in, bool bf16Input, std::uint8_t* side, int dim, int dataBytes,
              int, int slot, float outScale) {
    const __m256i magnitudeMask = _mm256_set1_epi32(0x7fffffff);
    __m256i special = _mm256_setzero_si256();
    for (int c = 0; c < dim; c += 8) // NaN or infinity inputs: the scalar path
        special = _mm256_or_si256(
            special,
            _mm256_cmpgt_epi32(
                _mm256_and_si256(_mm256_castps_si256(inputRow(in, bf16Input, c)), magnitudeMask),
                _mm256_set1_epi32(0x7f7fffff)));
    if (_mm256_movemask_epi8(special))
        return false;
    std::uint8_t* row = side + std::int64_t(slot) * dataBytes;
    if (!(outScale > 0.0f)) {
        for (int c = 0; c < dim; c += 8)
            _mm_storel_epi64(reinterpret_cast<__m128i*>(row + c), _mm_setzero_si128());
        return true;
    }
    const __m256 divisor = _mm256_set1_ps(outScale);
    for (int c = 0; c < dim; c += 8) {
        const __m256i bits =
            _mm256_castps_si256(_mm256_div_ps(inputRow(in, bf16Input, c), divisor));
        const __m256i a = _mm256_and_si256(bits, magnitudeMask);
        const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(bits, 24), _mm256_set1_epi32(0x80));
        const __m256i subnormal = _mm256_cvtps_epi32(
            _mm256_mul_ps(_mm256_castsi256_ps(a), _mm256_set1_ps(Code.subnormalScale)));
        const __m256i tie =
            _mm256_and_si256(_mm256_srli_epi32(a, Code.shift), _mm256_set1_epi32(1));
        __m256i normal = _mm256_add_epi32(
            a, _mm256_add_epi32(
                   _mm256_set1_epi32((1 << (Code.shift - 1)) - 1 - (Code.rebias << 23)), tie));
        normal = _mm256_min_epu32(_mm256_srli_epi32(normal, Code.shift),
                                  _mm256_set1_epi32(Code.maxCode));
        __m256i code = _mm256_blendv_epi8(normal, subnormal,
                                          _mm256_cmpgt_epi32(_mm256_set1_epi32(Code.minNormal), a));
        code = _mm256_blendv_epi8(code, _mm256_set1_epi32(Code.maxCode),
                                  _mm256_cmpgt_epi32(a, _mm256_set1_epi32(Code.maxBits - 1)));
        code = _mm256_or_si256(code, sign);
        const __m128i words =
            _mm_packs_epi32(_mm256_castsi256_si128(code), _mm256_extracti128_si256(code, 1));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(row + c), _mm_packus_epi16(words, words));
    }
    return true;
}

// As toHalf, roundToStored and loadStored in cpu_simd_avx512.cpp.
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

float lowest(__m256 v) {
    __m128 x = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_min_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_min_ss(x, _mm_shuffle_ps(x, x, 0x55)));
}

// 8 codes (floats holding integers below 2^bits) packed low bits first, as putCode packs them:
// bytes 0-7 packed within each 128-bit lane, the lanes joined, then two or four to a byte.
void packCodes(__m256 q, int bits, std::uint8_t* out) {
    const __m256i words = _mm256_packus_epi32(_mm256_cvtps_epi32(q), _mm256_setzero_si256());
    const __m256i bytes = _mm256_packus_epi16(words, _mm256_setzero_si256());
    const __m128i codes =
        _mm_unpacklo_epi32(_mm256_castsi256_si128(bytes), _mm256_extracti128_si256(bytes, 1));
    if (bits == 4) {
        __m128i pairs = _mm_or_si128(codes, _mm_srli_epi16(codes, 4));
        pairs = _mm_and_si128(pairs, _mm_set1_epi16(0xff));
        const int packed = _mm_cvtsi128_si32(_mm_packus_epi16(pairs, pairs));
        __builtin_memcpy(out, &packed, 4);
    } else {
        __m128i quads = _mm_or_si128(codes, _mm_srli_epi32(codes, 6));
        quads = _mm_or_si128(quads, _mm_srli_epi32(quads, 12));
        quads = _mm_and_si128(quads, _mm_set1_epi32(0xff));
        quads = _mm_packus_epi16(_mm_packus_epi32(quads, quads), quads);
        const std::uint16_t packed = std::uint16_t(_mm_cvtsi128_si32(quads));
        __builtin_memcpy(out, &packed, 2);
    }
}

// As storeIntGroups in cpu_simd_avx512.cpp, 8 codes at a time: the same bytes as kv_quant.h's
// quantizeTokenVector, on the rows that code would not treat differently.
bool storeIntGroups(const std::uint16_t* in, bool bf16Input, std::uint8_t* side,
                    const SimdGroupSide& s, int slot) {
    constexpr int kMaxGroups = 64;
    const int groups = s.dim / s.group;
    if (groups > kMaxGroups)
        return false;
    float scale[kMaxGroups], zero[kMaxGroups];
    const float qmax = float((1 << s.bits) - 1);
    const __m256i magnitudeMask = _mm256_set1_epi32(0x7fffffff);
    for (int g = 0; g < groups; ++g) {
        __m256 low = _mm256_set1_ps(__builtin_inff()), high = _mm256_set1_ps(-__builtin_inff());
        for (int c = g * s.group; c < (g + 1) * s.group; c += 8) {
            const __m256 x = inputRow(in, bf16Input, c);
            const __m256i magnitude = _mm256_and_si256(_mm256_castps_si256(x), magnitudeMask);
            if (_mm256_movemask_epi8(_mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f7fffff))))
                return false; // NaN or infinity
            low = _mm256_min_ps(low, x);
            high = _mm256_max_ps(high, x);
        }
        const float mn = lowest(low), mx = Vec{high}.hmax();
        if (mn == 0.0f || mx == 0.0f)
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
        const bool positive = scale[g] > 0.0f;
        const __m256 divisor = _mm256_set1_ps(scale[g]), offset = _mm256_set1_ps(zero[g]);
        for (int c = g * s.group; c < (g + 1) * s.group; c += 8) {
            __m256 q = _mm256_setzero_ps();
            if (positive) {
                q = _mm256_round_ps(
                    _mm256_div_ps(_mm256_sub_ps(inputRow(in, bf16Input, c), offset), divisor),
                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                q = _mm256_min_ps(_mm256_max_ps(q, _mm256_setzero_ps()), _mm256_set1_ps(qmax));
            }
            packCodes(q, s.bits, row + c * s.bits / 8);
        }
    }
    return true;
}

// As storeKiviKeys in cpu_simd_avx512.cpp, 8 channels at a time.
bool storeKiviKeys(const std::uint16_t* in, std::int64_t tokenStride, bool bf16Input,
                   std::uint8_t* side, const SimdGroupSide& s, int firstSlot, int tokens) {
    const __m256i magnitudeMask = _mm256_set1_epi32(0x7fffffff);
    auto range = [&](int c, __m256& low, __m256& high) { // false: a NaN or infinity
        low = _mm256_set1_ps(__builtin_inff());
        high = _mm256_set1_ps(-__builtin_inff());
        for (int i = 0; i < tokens; ++i) {
            const __m256 x = inputRow(in + i * tokenStride, bf16Input, c);
            const __m256i magnitude = _mm256_and_si256(_mm256_castps_si256(x), magnitudeMask);
            if (_mm256_movemask_epi8(_mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f7fffff))))
                return false;
            low = _mm256_min_ps(low, x);
            high = _mm256_max_ps(high, x);
        }
        return true;
    };
    constexpr int kMaxDim = 1024;
    if (s.dim > kMaxDim)
        return false;
    float lows[kMaxDim], highs[kMaxDim]; // every channel's range first: nothing written yet
    for (int c = 0; c < s.dim; c += 8) {
        __m256 low, high;
        if (!range(c, low, high) ||
            _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(low, _mm256_setzero_ps(), _CMP_EQ_OQ),
                                            _mm256_cmp_ps(high, _mm256_setzero_ps(), _CMP_EQ_OQ))))
            return false;
        _mm256_storeu_ps(lows + c, low);
        _mm256_storeu_ps(highs + c, high);
    }
    const float qmax = float((1 << s.bits) - 1);
    std::uint8_t* pairs = side + s.metaOffset + std::int64_t(firstSlot / s.tokenGroup) * s.dim * 4;
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    for (int c = 0; c < s.dim; c += 8) {
        const __m256 low = _mm256_loadu_ps(lows + c), high = _mm256_loadu_ps(highs + c);
        const __m128i scaleBits =
            _mm256_cvtps_ph(_mm256_div_ps(_mm256_sub_ps(high, low), _mm256_set1_ps(qmax)), kRound);
        const __m128i zeroBits = _mm256_cvtps_ph(low, kRound);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(pairs + 4 * c),
                         _mm_unpacklo_epi16(scaleBits, zeroBits));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(pairs + 4 * c + 16),
                         _mm_unpackhi_epi16(scaleBits, zeroBits));
        const __m256 scale = _mm256_cvtph_ps(scaleBits), zero = _mm256_cvtph_ps(zeroBits);
        const __m256 positive = _mm256_cmp_ps(scale, _mm256_setzero_ps(), _CMP_GT_OQ);
        for (int i = 0; i < tokens; ++i) {
            const __m256 x = inputRow(in + i * tokenStride, bf16Input, c);
            __m256 q = _mm256_round_ps(_mm256_div_ps(_mm256_sub_ps(x, zero), scale), kRound);
            q = _mm256_min_ps(_mm256_max_ps(q, _mm256_setzero_ps()), _mm256_set1_ps(qmax));
            q = _mm256_and_ps(q, positive); // a zero scale stores zero codes
            packCodes(q, s.bits, side + std::int64_t(firstSlot + i) * s.dataBytes + c * s.bits / 8);
        }
    }
    return true;
}

// As decodeIntGroups in cpu_simd_avx512.cpp, 8 codes at a time.
void decodeIntGroups(const SimdSide& self, const std::uint8_t* side, int token, float* out) {
    const SimdGroupSide& s = self.groups;
    const int groups = s.dim / s.group;
    const std::uint8_t* row = side + std::int64_t(token) * s.dataBytes;
    const std::uint8_t* meta =
        side + s.metaOffset + std::int64_t(token) * groups * 2 * s.scaleBytes;
    const bool four = s.bits == 4;
    const __m128i spread = four ? _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0)
                                : _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i shifts = four ? _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4)
                                : _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    const __m256i mask = _mm256_set1_epi32((1 << s.bits) - 1);
    auto codesAt = [&](int c) {
        int packed = 0;
        __builtin_memcpy(&packed, row + c * s.bits / 8, std::size_t(s.bits)); // 4 or 2 bytes
        return _mm256_cvtepi32_ps(_mm256_and_si256(
            _mm256_srlv_epi32(
                _mm256_cvtepu8_epi32(_mm_shuffle_epi8(_mm_cvtsi32_si128(packed), spread)), shifts),
            mask));
    };
    // 8 fp16 codes held in the low halves of 32-bit lanes, as floats
    auto halves = [](__m256i lanes) {
        const __m256i words = _mm256_packus_epi32(
            _mm256_and_si256(lanes, _mm256_set1_epi32(0xffff)), _mm256_setzero_si256());
        return _mm256_cvtph_ps(_mm256_castsi256_si128(_mm256_permute4x64_epi64(words, 0x08)));
    };
    if (s.tokenGroup > 0) { // KIVI keys: 8 channels' (scale, zero) fp16 pairs at a time
        const std::uint8_t* pairs =
            side + s.metaOffset + std::int64_t(token / s.tokenGroup) * s.dim * 4;
        for (int c = 0; c < s.dim; c += 8) {
            const __m256i both =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pairs + 4 * c));
            _mm256_storeu_ps(out + c, _mm256_fmadd_ps(codesAt(c), halves(both),
                                                      halves(_mm256_srli_epi32(both, 16))));
        }
        return;
    }
    for (int g = 0; g < groups; ++g) {
        const std::uint8_t* m = meta + g * 2 * s.scaleBytes;
        const __m256 scale = _mm256_set1_ps(loadStored(m, s.scaleBytes));
        const __m256 zero = _mm256_set1_ps(loadStored(m + s.scaleBytes, s.scaleBytes));
        for (int c = g * s.group; c < (g + 1) * s.group; c += 8)
            _mm256_storeu_ps(out + c, _mm256_fmadd_ps(codesAt(c), scale, zero));
    }
}

} // namespace

extern const SimdKernels kSimdAvx2 = {"avx2",
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
