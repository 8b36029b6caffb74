// The CPU kernels in plain C++ for every CPU (the scalar fallback, and what non-x86 builds run):
// the same tiled kernel as the AVX2 / AVX-512 units over a vector of W floats held in an array,
// which the compiler vectorizes for the target's baseline (SSE2, NEON). W = 8, and W = 1 for a
// head_dim that no wider vector divides. The store's rows go through kv_quant.h's scalar code.
#include "gpu_probe/cpu/cpu_simd.h"
#include "gpu_probe/kv_quant.h"

#include <cmath>
#include <cstring>

namespace kvl::probe {

namespace {

template <int Width> struct PortableVec {
    static constexpr int W = Width;
    static constexpr int kAccumulators = 8;
    float v[Width];
    static PortableVec zero() { return set1(0.0f); }
    static PortableVec set1(float f) {
        PortableVec r;
        for (int i = 0; i < W; ++i)
            r.v[i] = f;
        return r;
    }
    static PortableVec load(const float* p) {
        PortableVec r;
        std::memcpy(r.v, p, sizeof r.v);
        return r;
    }
    void store(float* p) const { std::memcpy(p, v, sizeof v); }
    static PortableVec fma(PortableVec a, PortableVec b, PortableVec c) {
        for (int i = 0; i < W; ++i)
            c.v[i] += a.v[i] * b.v[i];
        return c;
    }
    static PortableVec max(PortableVec a, PortableVec b) {
        for (int i = 0; i < W; ++i)
            a.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i];
        return a;
    }
    friend PortableVec operator+(PortableVec a, PortableVec b) {
        for (int i = 0; i < W; ++i)
            a.v[i] += b.v[i];
        return a;
    }
    friend PortableVec operator-(PortableVec a, PortableVec b) {
        for (int i = 0; i < W; ++i)
            a.v[i] -= b.v[i];
        return a;
    }
    friend PortableVec operator*(PortableVec a, PortableVec b) {
        for (int i = 0; i < W; ++i)
            a.v[i] *= b.v[i];
        return a;
    }
    float hsum() const {
        float s = 0.0f;
        for (int i = 0; i < W; ++i)
            s += v[i];
        return s;
    }
    float hmax() const {
        float m = v[0];
        for (int i = 1; i < W; ++i)
            m = v[i] > m ? v[i] : m;
        return m;
    }
    float first() const { return v[0]; }
};

template <class V> V portableExp(V x) {
    for (int i = 0; i < V::W; ++i)
        x.v[i] = std::exp(x.v[i]);
    return x;
}

// Branch-free fp16 -> fp32 (exact for normals and subnormals, which the 2^112 rebias keeps;
// infinity and NaN patched), so the loop vectorizes.
inline float halfBits(std::uint16_t half) {
    const std::uint32_t magnitude = half & 0x7fffu;
    const std::uint32_t sign = std::uint32_t(half & 0x8000u) << 16;
    std::uint32_t bits = floatToBits(bitsToFloat(magnitude << 13) * 0x1.0p112f) | sign;
    if (magnitude >= 0x7c00u)
        bits = sign | 0x7f800000u | ((magnitude & 0x3ffu) << 13);
    return bitsToFloat(bits);
}

template <class V> struct PortableF32 {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static V load(const std::uint8_t* row, int c) {
        V r;
        std::memcpy(r.v, row + 4 * std::size_t(c), sizeof r.v);
        return r;
    }
};

float fromF16(const std::uint8_t* p) {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return halfBits(h);
}
float fromBF16(const std::uint8_t* p) {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return bf16ToFloat(h);
}
float fromI8(const std::uint8_t* p) {
    return float(std::int8_t(*p));
}
float fromE4M3(const std::uint8_t* p) {
    return e4m3ToFloat(*p);
}
float fromE5M2(const std::uint8_t* p) {
    return e5m2ToFloat(*p);
}

template <class V, int Bytes, float (*Convert)(const std::uint8_t*)> struct Dec {
    static constexpr bool kIntegerDot = false;
    static constexpr bool kIntegerAccumulate = false;
    static V load(const std::uint8_t* row, int c) {
        V r;
        for (int i = 0; i < V::W; ++i)
            r.v[i] = Convert(row + std::size_t(c + i) * Bytes);
        return r;
    }
};

} // namespace

// One instance of the kernel per width, each in its own namespace.
#define KVL_PORTABLE_KERNELS(WIDTH)                                                                \
    namespace {                                                                                    \
    using Vec = PortableVec<WIDTH>;                                                                \
    inline Vec expv(Vec x) {                                                                       \
        return portableExp(x);                                                                     \
    }                                                                                              \
    template <int N> void reduceN(const Vec (&s)[N], float* out) {                                 \
        for (int i = 0; i < N; ++i)                                                                \
            out[i] = s[i].hsum();                                                                  \
    }                                                                                              \
    inline void prefetchL2(const void* p) {                                                        \
        __builtin_prefetch(p, 0, 2);                                                               \
    }                                                                                              \
    inline void prefetch(const void* p) {                                                          \
        __builtin_prefetch(p);                                                                     \
    }                                                                                              \
    using DecF32 = PortableF32<Vec>;                                                               \
    using DecF16 = Dec<Vec, 2, fromF16>;                                                           \
    using DecBF16 = Dec<Vec, 2, fromBF16>;                                                         \
    using DecI8 = Dec<Vec, 1, fromI8>;                                                             \
    using DecE4M3 = Dec<Vec, 1, fromE4M3>;                                                         \
    using DecE5M2 = Dec<Vec, 1, fromE5M2>;                                                         \
    }

namespace portable8 {
KVL_PORTABLE_KERNELS(8)
namespace {
#include "gpu_probe/cpu/cpu_simd_kernels.h"
}
} // namespace portable8

namespace portable1 {
KVL_PORTABLE_KERNELS(1)
namespace {
#include "gpu_probe/cpu/cpu_simd_kernels.h"
}
} // namespace portable1

#undef KVL_PORTABLE_KERNELS

// No vector stores here: every store goes through kv_quant.h.
extern const SimdKernels kSimdPortable = {.name = "portable",
                                          .width = 8,
                                          .workspaceFloats = portable8::workspaceFloats,
                                          .attendItem = portable8::attendItem,
                                          .sumBlocks = portable8::sumReadBlocks};
extern const SimdKernels kSimdPortable1 = {.name = "portable",
                                           .width = 1,
                                           .workspaceFloats = portable1::workspaceFloats,
                                           .attendItem = portable1::attendItem,
                                           .sumBlocks = portable1::sumReadBlocks};

} // namespace kvl::probe
