#pragma once
// Store: quantize new K/V rows into pages through the slot mapping (vLLM's reshape_and_cache,
// csrc/cache_kernels.cu). The codes must equal the CPU backend's byte for byte: the arithmetic
// is kv_quant.h's (quantizeCode, groupParams, the software fp16/bf16 decoders), group min / max
// are exact (order-free) shuffle reductions, and the .cu is compiled with --fmad=false.
//  - storeRowsKernel<format, L>: a (token, KV head) row is L = 8 / 16 / 32 lanes of 8 elements
//    (as the decode kernel reads them), 32 / L rows per warp; the slot, the K row and the V row
//    are loaded before anything depends on them, and each lane writes one vector of codes (a
//    group's first lane also its scale / zero word);
//  - storeKiviKeysKernel: KIVI keys, quantized per channel over a run of up to 32 consecutive
//    slots of one token group: a warp per (run, KV head), a lane per 8 channels;
//  - storeGenericKernel (and storeGenericKiviKeysKernel): any other layout, one thread per
//    (token, head) through kv_quant.h's row quantizer, staged in registers / local memory.
#include "gpu_probe/cuda/dialect.cuh"
#include "gpu_probe/cuda/kv_codecs.cuh"
#include "gpu_probe/cuda/launchers.h"

#include <cmath>
#include <cstdint>

namespace kvl::probe::KVL_KERNEL_NS {

namespace {

constexpr int kStoreWarps = 8;
constexpr int kStoreThreads = 32 * kStoreWarps;
constexpr int kGenericMaxHeadDim = 1024;

struct StoreParams : PageGeometry {
    gptr<const std::uint16_t> k, v;
    gptr<const std::int64_t> slots;
    gptr<std::uint8_t> pool;
    gptr<const float> kScale, vScale; // null: 1
    int bf16;
    std::int64_t numTokens;
    SideLayout ks, vs;
    int skipKeys; // KIVI: keys by their own kernel
};

__device__ __forceinline__ gptr<std::uint8_t> sideOf(const StoreParams& p, std::int64_t slot,
                                                     int h) {
    return p.pool + (slot / p.blockSize) * p.pageBytes + std::int64_t(h) * p.headStride;
}

// One lane's 8 elements of one side: group scale / zero (exact reductions across the group's
// lanes), codes, one vector store; the group's first lane stores its meta word. Every lane of
// the warp calls this (the shuffles are full-warp); `write` says whether this lane's row
// exists, `active` whether its elements do.
template <Kv F, bool Key, int L>
__device__ __forceinline__ void storeSide(const SideLayout& s, gptr<std::uint8_t> side, int off,
                                          int c0, const float (&x)[8], float outScale, bool active,
                                          bool write) {
    using S = Side<F, Key>;
    GroupParams gp{outScale, 0.0f};
    if constexpr (S::kMeta == Meta::TokenF32 || S::kMeta == Meta::TokenF16x2) {
        float mn = INFINITY, mx = -INFINITY;
        if (active) {
#pragma unroll
            for (int e = 0; e < 8; ++e) {
                mn = fminf(mn, x[e]);
                mx = fmaxf(mx, x[e]);
            }
        }
        // Lanes per group: the whole row for a per-token-head scale, else G / 8 (a power of
        // two, host-checked).
        const int lanes = s.group >= s.dim ? L : s.group / 8;
        for (int o = 1; o < lanes; o *= 2) {
            mn = fminf(mn, __shfl_xor_sync(kFull, mn, o));
            mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, o));
        }
        gp = groupParams(s, mn, mx);
    }
    if (!write || !active)
        return;
    std::uint32_t q[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
        q[e] = quantizeCode<S::kCodec>(x[e], gp.scale, gp.zero, S::kBits);
    storeRaw(side + std::int64_t(off) * s.dataBytes + (c0 / 8) * S::kRawBytes, pack8<F, Key>(q));
    if constexpr (S::kMeta == Meta::TokenF32) {
        if (c0 == 0)
            gstore(gcast<float>(side + s.metaOffset + std::int64_t(off) * 4), gp.scale);
    } else if constexpr (S::kMeta == Meta::TokenF16x2) {
        if (c0 % s.group == 0) {
            const unsigned word =
                unsigned(floatToHalf(gp.scale)) | (unsigned(floatToHalf(gp.zero)) << 16);
            gstore(gcast<unsigned>(side + s.metaOffset +
                                   (std::int64_t(off) * s.numGroups + c0 / s.group) * 4),
                   word);
        }
    }
}

template <Kv F, int L>
__global__ void __launch_bounds__(kStoreThreads) storeRowsKernel(StoreParams p) {
    constexpr int T = 32 / L;
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    const int c0 = (lane % L) * 8;
    const bool active = c0 < p.headDim;
    const std::int64_t item = (std::int64_t(blockIdx.x) * kStoreWarps + warp) * T + lane / L;
    const bool exists = item < p.numTokens * p.kvHeads;
    const std::int64_t t = exists ? item / p.kvHeads : 0;
    const int h = exists ? int(item % p.kvHeads) : 0;
    // The slot, the K row and the V row, issued together.
    const std::int64_t slot = exists ? ldg(p.slots + t) : -1;
    const std::int64_t row = (t * p.kvHeads + h) * p.headDim + c0;
    uint4 kin = make_uint4(0, 0, 0, 0), vin = kin;
    if (exists && active) {
        if (!p.skipKeys)
            kin = ldg(gcast<const uint4>(p.k + row));
        vin = ldg(gcast<const uint4>(p.v + row));
    }
    const bool write = slot >= 0; // negative slots are padding (vLLM)
    const std::int64_t target = slot + (KVL_INJECT(StoreSlotOffByOne) ? 1 : 0);
    const gptr<std::uint8_t> side = sideOf(p, write ? target : 0, h);
    const int off = write ? int(target % p.blockSize) : 0;
    float x[8];
    if (!p.skipKeys) {
        inputToFloat8(kin, p.bf16 != 0, x);
        const float ks = p.kScale ? ldg(p.kScale + h) : 1.0f;
        storeSide<F, true, L>(p.ks, side, off, c0, x, ks, active, write);
    }
    inputToFloat8(vin, p.bf16 != 0, x);
    const float vs = p.vScale ? ldg(p.vScale + h) : 1.0f;
    storeSide<F, false, L>(p.vs, side + p.vOffset, off, c0, x, vs, active, write);
}

// The KIVI key run a (token, KV head) item leads, if it leads one: its first token t0 and slot
// s0, KV head h and n tokens. A leader is the first token, or one whose slot does not continue
// the previous token's, or one that starts a token group (quantizeChannelRun's runs on the CPU);
// items past the end and padding slots lead none. A bool and an out-parameter rather than a run
// with n = 0: storeKiviKeysKernel then keeps its 48 registers (ptxas, sm_80 / sm_90), not 51.
struct KiviRun {
    std::int64_t t0, s0;
    int h, n;
};
__device__ __forceinline__ bool leadsKiviRun(const StoreParams& p, std::int64_t item,
                                             KiviRun& run) {
    if (item >= p.numTokens * p.kvHeads)
        return false;
    const std::int64_t t0 = item / p.kvHeads;
    const int h = int(item % p.kvHeads);
    const std::int64_t s0 = ldg(p.slots + t0);
    if (s0 < 0)
        return false;
    const int G = p.ks.tokenGroup;
    if (!(t0 == 0 || ldg(p.slots + (t0 - 1)) != s0 - 1 || s0 % G == 0))
        return false;
    int n = 1;
    while (t0 + n < p.numTokens && ldg(p.slots + (t0 + n)) == s0 + n && (s0 + n) % G != 0)
        ++n;
    run = {t0, s0, h, n};
    return true;
}

// KIVI keys, a warp per (token, KV head) of which only run leaders work: lane c0 / 8 owns 8
// channels; pass 1 takes each channel's min / max over the run, pass 2 its codes.
template <Kv F>
__global__ void __launch_bounds__(kStoreThreads) storeKiviKeysKernel(StoreParams p) {
    using S = Side<F, true>;
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    // One item per warp, so a warp returns as a whole. Its fields not as a structured binding:
    // `input` below captures them (C++17, as nvcc compiles this, cannot capture a binding).
    KiviRun run;
    if (!leadsKiviRun(p, std::int64_t(blockIdx.x) * kStoreWarps + warp, run))
        return;
    const int c0 = lane * 8;
    if (c0 >= p.headDim)
        return;
    const SideLayout& s = p.ks;
    const gptr<std::uint8_t> side = sideOf(p, run.s0, run.h);
    const int off0 = int(run.s0 % p.blockSize);
    auto input = [&](int i, float(&x)[8]) {
        const uint4 in =
            ldg(gcast<const uint4>(p.k + ((run.t0 + i) * p.kvHeads + run.h) * p.headDim + c0));
        inputToFloat8(in, p.bf16 != 0, x);
    };
    float mn[8], mx[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        mn[e] = INFINITY;
        mx[e] = -INFINITY;
    }
    for (int i = 0; i < run.n; ++i) {
        float x[8];
        input(i, x);
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            mn[e] = fminf(mn[e], x[e]);
            mx[e] = fmaxf(mx[e], x[e]);
        }
    }
    GroupParams gp[8];
    unsigned words[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
        gp[e] = groupParams(s, mn[e], mx[e]);
        words[e] = unsigned(floatToHalf(gp[e].scale)) | (unsigned(floatToHalf(gp[e].zero)) << 16);
    }
    const gptr<std::uint8_t> meta =
        side + s.metaOffset + (std::int64_t(off0 / s.tokenGroup) * s.dim + c0) * 4;
    gstore(gcast<uint4>(meta), make_uint4(words[0], words[1], words[2], words[3]));
    gstore(gcast<uint4>(meta + 16), make_uint4(words[4], words[5], words[6], words[7]));
    for (int i = 0; i < run.n; ++i) {
        float x[8];
        input(i, x);
        std::uint32_t q[8];
#pragma unroll
        for (int e = 0; e < 8; ++e)
            q[e] = quantizeCode<S::kCodec>(x[e], gp[e].scale, gp[e].zero, S::kBits);
        storeRaw(side + std::int64_t(off0 + i) * s.dataBytes + (c0 / 8) * S::kRawBytes,
                 pack8<F, true>(q));
    }
}

// Any layout: one thread per (token, head); the row is quantized into a one-token staging side
// (codes, then meta) in local memory by kv_quant.h's quantizeTokenVector, then copied out.
constexpr int kStageBytes = kGenericMaxHeadDim * 4 + kGenericMaxHeadDim * 8;

__device__ void storeGenericSide(const StoreParams& p, SideLayout s, gptr<std::uint8_t> side,
                                 int off, gptr<const std::uint16_t> in, float outScale) {
    float x[kGenericMaxHeadDim];
    for (int c = 0; c < s.dim; ++c)
        x[c] = inputToFloat(ldg(in + c), p.bf16 ? kInputBF16 : kInputF16);
    std::uint8_t stage[kStageBytes];
    const int metaOffset = s.metaOffset;
    s.metaOffset = s.dataBytes;
    for (int i = 0; i < s.dataBytes; ++i) // sub-byte codes are read-modify-written
        stage[i] = 0;
    quantizeTokenVector(stage, s, 0, x, outScale);
    const gptr<std::uint8_t> row = side + std::int64_t(off) * s.dataBytes;
    for (int i = 0; i < s.dataBytes; ++i)
        gstore(row + i, stage[i]);
    if (s.group > 0) {
        const int metaBytes = s.numGroups * s.metaStride();
        const gptr<std::uint8_t> meta =
            side + metaOffset + std::int64_t(off) * s.numGroups * s.metaStride();
        for (int i = 0; i < metaBytes; ++i)
            gstore(meta + i, stage[s.dataBytes + i]);
    }
}

__global__ void __launch_bounds__(128) storeGenericKernel(StoreParams p) {
    const std::int64_t item = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (item >= p.numTokens * p.kvHeads)
        return;
    const std::int64_t t = item / p.kvHeads;
    const int h = int(item % p.kvHeads);
    const std::int64_t slot = ldg(p.slots + t);
    if (slot < 0)
        return;
    const gptr<std::uint8_t> side = sideOf(p, slot, h);
    const int off = int(slot % p.blockSize);
    const std::int64_t row = (t * p.kvHeads + h) * p.headDim;
    if (!p.skipKeys)
        storeGenericSide(p, p.ks, side, off, p.k + row, p.kScale ? ldg(p.kScale + h) : 1.0f);
    storeGenericSide(p, p.vs, side + p.vOffset, off, p.v + row,
                     p.vScale ? ldg(p.vScale + h) : 1.0f);
}

// KIVI keys, any layout: one thread per (run leader, head), channel by channel; a token's
// codes are gathered in a local row (channels share bytes) and copied out.
__global__ void __launch_bounds__(128) storeGenericKiviKeysKernel(StoreParams p) {
    KiviRun run;
    if (!leadsKiviRun(p, std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x, run))
        return;
    const auto [t0, s0, h, n] = run;
    const SideLayout& s = p.ks;
    const gptr<std::uint8_t> side = sideOf(p, s0, h);
    const int off0 = int(s0 % p.blockSize);
    const int in = p.bf16 ? kInputBF16 : kInputF16;
    GroupParams gp[kGenericMaxHeadDim];
    for (int c = 0; c < s.dim; ++c) {
        float mn = INFINITY, mx = -INFINITY;
        for (int i = 0; i < n; ++i) {
            const float x = inputToFloat(ldg(p.k + ((t0 + i) * p.kvHeads + h) * s.dim + c), in);
            mn = fminf(mn, x);
            mx = fmaxf(mx, x);
        }
        gp[c] = groupParams(s, mn, mx);
        std::uint8_t m[8];
        storeScalar(m, gp[c].scale, s.scaleBytes);
        if (s.hasZero)
            storeScalar(m + s.scaleBytes, gp[c].zero, s.scaleBytes);
        const gptr<std::uint8_t> meta =
            side + s.metaOffset + (std::int64_t(off0 / s.tokenGroup) * s.dim + c) * s.metaStride();
        for (int i = 0; i < s.metaStride(); ++i)
            gstore(meta + i, m[i]);
    }
    for (int i = 0; i < n; ++i) {
        std::uint8_t rowBytes[kGenericMaxHeadDim * 4];
        for (int b = 0; b < s.dataBytes; ++b)
            rowBytes[b] = 0;
        for (int c = 0; c < s.dim; ++c) {
            const float x = inputToFloat(ldg(p.k + ((t0 + i) * p.kvHeads + h) * s.dim + c), in);
            storeCode(rowBytes, s, 0, c, quantizeValue(s, x, gp[c].scale, gp[c].zero));
        }
        const gptr<std::uint8_t> row = side + std::int64_t(off0 + i) * s.dataBytes;
        for (int b = 0; b < s.dataBytes; ++b)
            gstore(row + b, rowBytes[b]);
    }
}

// ---- host side

// The fast kernels' format for a layout, or false.
bool fastStoreFormat(const StoreArgs& a, Kv& kind) {
    const PageLayout& L = a.layout;
    if (reinterpret_cast<std::uintptr_t>(a.pool) % 16 != 0 ||
        reinterpret_cast<std::uintptr_t>(a.k) % 16 != 0 ||
        reinterpret_cast<std::uintptr_t>(a.v) % 16 != 0 || !fastKvFormat(L, kind))
        return false;
    // fp16 {scale, zero} groups of G elements: G / 8 lanes, a power of two (or the whole row),
    // as storeSide's shuffle reductions over a group's lanes need.
    auto powerOfTwoLanes = [](const SideLayout& s) {
        const int lanes = s.group / 8;
        return s.group >= s.dim || (lanes & (lanes - 1)) == 0;
    };
    if (kind == Kv::Int4 && !powerOfTwoLanes(L.k))
        return false;
    return (kind != Kv::Int4 && kind != Kv::Kivi4 && kind != Kv::Kivi2) || powerOfTwoLanes(L.v);
}

StoreParams storeParams(const StoreArgs& a) {
    const PageLayout& L = a.layout;
    StoreParams p;
    static_cast<PageGeometry&>(p) = pageGeometry(L);
    p.k = a.k;
    p.v = a.v;
    p.slots = a.slotMapping;
    p.pool = a.pool;
    p.kScale = a.kScale;
    p.vScale = a.vScale;
    p.bf16 = a.inputDtype == kInputBF16 ? 1 : 0;
    p.numTokens = a.numTokens;
    p.ks = L.k;
    p.vs = L.v;
    p.skipKeys = L.k.tokenGroup > 0 ? 1 : 0;
    return p;
}

template <Kv F> cudaError_t launchRows(const StoreParams& p, cudaStream_t stream) {
    const std::int64_t items = p.numTokens * p.kvHeads;
    KVL_CUDA_CALL(withRowLanes(p.headDim, [&](auto lanes) {
        constexpr int L = decltype(lanes)::value;
        const std::int64_t perBlock = std::int64_t(kStoreWarps) * (32 / L);
        return launchKernel("storeRowsKernel", &storeRowsKernel<F, L>,
                            dim3(unsigned((items + perBlock - 1) / perBlock)), dim3(kStoreThreads),
                            0, stream, p);
    }));
    if constexpr (F == Kv::Kivi4 || F == Kv::Kivi2)
        KVL_CUDA_CALL(launchKernel("storeKiviKeysKernel", &storeKiviKeysKernel<F>,
                                   dim3(unsigned((items + kStoreWarps - 1) / kStoreWarps)),
                                   dim3(kStoreThreads), 0, stream, p));
    return cudaSuccess;
}

} // namespace

cudaError_t launchStore(const StoreArgs& a, cudaStream_t stream) {
    const PageLayout& L = a.layout;
    if (a.numTokens <= 0)
        return cudaSuccess;
    if (L.headDim > kGenericMaxHeadDim)
        return cudaErrorInvalidValue;
    const StoreParams p = storeParams(a);
    Kv kind = Kv::F16;
    if (fastStoreFormat(a, kind))
        return withKvFormat(
            kind, [&](auto format) { return launchRows<decltype(format)::value>(p, stream); });
    const std::int64_t items = a.numTokens * L.kvHeads;
    const dim3 grid(unsigned((items + 127) / 128));
    KVL_CUDA_CALL(
        launchKernel("storeGenericKernel", &storeGenericKernel, grid, dim3(128), 0, stream, p));
    if (p.skipKeys)
        KVL_CUDA_CALL(launchKernel("storeGenericKiviKeysKernel", &storeGenericKiviKeysKernel, grid,
                                   dim3(128), 0, stream, p));
    return cudaSuccess;
}

} // namespace kvl::probe::KVL_KERNEL_NS
