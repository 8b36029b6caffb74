// Store kernels. One warp per (token, KV head): lanes own contiguous, byte-aligned chunks of
// the head vector, so sub-byte codes never share a byte between lanes; group min/max are exact
// (order-free) warp reductions, and the per-element math is kv_quant.h's, so the bytes equal
// the CPU backend's (this file is compiled with --fmad=false).
#include "gpu_probe/cuda/cuda_check.h"
#include "gpu_probe/cuda/store_kernel.cuh"
#include "gpu_probe/cuda/vec_io.cuh"

namespace kvl::probe {

namespace {

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float warpMin(float v, int width) {
    for (int o = width / 2; o > 0; o /= 2)
        v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warpMax(float v, int width) {
    for (int o = width / 2; o > 0; o /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Lane-cooperative quantization of one head vector into slot `off` of one side. A lane owns
// PER = dim / 32 contiguous elements (byte-aligned codes: PER * bits % 8 == 0, host-checked);
// grouped sides need group % PER == 0 with group / PER a power of two (lanes per group).
// vecIn / vecOut: one aligned vector load of the lane's input / store of its codes.
template <int PER>
__device__ void storeSideWarp(std::uint8_t* side, const SideLayout& s, int off,
                              const std::uint16_t* in, int inputDtype, float outScale, int lane,
                              bool vecIn, bool vecOut) {
    const int c0 = lane * PER;
    float x[PER];
    if (vecIn) {
        alignas(16) std::uint16_t raw[PER];
        loadVec(in + c0, PER * 2, raw);
#pragma unroll
        for (int i = 0; i < PER; ++i)
            x[i] = inputToFloat(raw[i], inputDtype);
    } else {
#pragma unroll
        for (int i = 0; i < PER; ++i)
            x[i] = inputToFloat(in[c0 + i], inputDtype);
    }
    float mn = x[0], mx = x[0];
#pragma unroll
    for (int i = 1; i < PER; ++i) {
        mn = fminf(mn, x[i]);
        mx = fmaxf(mx, x[i]);
    }
    float scale = outScale, zero = 0.0f;
    if (s.group > 0) {
        const int lanesPerGroup = s.group / PER;
        mn = warpMin(mn, lanesPerGroup);
        mx = warpMax(mx, lanesPerGroup);
        const GroupParams p = groupParams(s, mn, mx);
        scale = p.scale;
        zero = p.zero;
        if (c0 % s.group == 0) {
            std::uint8_t* m = side + s.metaOffset +
                              (std::int64_t(off) * s.numGroups + c0 / s.group) * s.metaStride();
            storeScalar(m, scale, s.scaleBytes);
            if (s.hasZero)
                storeScalar(m + s.scaleBytes, zero, s.scaleBytes);
        }
    }
    if (vecOut) {
        alignas(16) std::uint8_t buf[PER * 4] = {};
#pragma unroll
        for (int i = 0; i < PER; ++i)
            storeCode(buf, s, 0, i, quantizeValue(s, x[i], scale, zero));
        storeVec(side + std::int64_t(off) * s.dataBytes + c0 * s.bits / 8, PER * s.bits / 8, buf);
    } else {
#pragma unroll
        for (int i = 0; i < PER; ++i)
            storeCode(side, s, off, c0 + i, quantizeValue(s, x[i], scale, zero));
    }
}

template <int PER>
__global__ void storeWarpKernel(StoreArgs a, bool skipKeys, bool vecIn, bool vecK, bool vecV) {
    const PageLayout& L = a.layout;
    const int lane = threadIdx.x % 32;
    const std::int64_t item = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (item >= a.numTokens * L.kvHeads) // uniform per warp: the shuffles stay full-mask
        return;
    const std::int64_t t = item / L.kvHeads;
    const int h = int(item % L.kvHeads);
    const std::int64_t slot = a.slotMapping[t];
    if (slot < 0) // padding (vLLM: negative slots are skipped)
        return;
    std::uint8_t* ks = kSide(a.pool, L, slot / L.blockSize, h);
    const int off = int(slot % L.blockSize);
    const std::int64_t row = (t * L.kvHeads + h) * L.headDim;
    if (!skipKeys)
        storeSideWarp<PER>(ks, L.k, off, a.k + row, a.inputDtype, a.kScale ? a.kScale[h] : 1.0f,
                           lane, vecIn, vecK);
    storeSideWarp<PER>(ks + vSideOffset(L), L.v, off, a.v + row, a.inputDtype,
                       a.vScale ? a.vScale[h] : 1.0f, lane, vecIn, vecV);
}

// Generic fallback: one thread per (token, head), the CPU's exact routine.
__global__ void storeThreadKernel(StoreArgs a, bool skipKeys) {
    const PageLayout& L = a.layout;
    const std::int64_t item = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (item >= a.numTokens * L.kvHeads)
        return;
    const std::int64_t t = item / L.kvHeads;
    const int h = int(item % L.kvHeads);
    const std::int64_t slot = a.slotMapping[t];
    if (slot < 0)
        return;
    std::uint8_t* ks = kSide(a.pool, L, slot / L.blockSize, h);
    const int off = int(slot % L.blockSize);
    const std::int64_t row = (t * L.kvHeads + h) * L.headDim;
    float x[1024];
    if (!skipKeys) {
        for (int c = 0; c < L.headDim; ++c)
            x[c] = inputToFloat(a.k[row + c], a.inputDtype);
        quantizeTokenVector(ks, L.k, off, x, a.kScale ? a.kScale[h] : 1.0f);
    }
    for (int c = 0; c < L.headDim; ++c)
        x[c] = inputToFloat(a.v[row + c], a.inputDtype);
    quantizeTokenVector(ks + vSideOffset(L), L.v, off, x, a.vScale ? a.vScale[h] : 1.0f);
}

// KIVI keys: one warp per run leader; lanes own whole bytes (8 / bits channels each) and
// quantize each channel over the run's tokens, as quantizeChannelRun does on the CPU.
__global__ void storeKiviKeysKernel(StoreArgs a) {
    const PageLayout& L = a.layout;
    const SideLayout& s = L.k;
    const int G = s.tokenGroup;
    const int lane = threadIdx.x % 32;
    const std::int64_t t0 = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
    if (t0 >= a.numTokens)
        return;
    const std::int64_t s0 = a.slotMapping[t0];
    if (s0 < 0)
        return;
    if (!(t0 == 0 || a.slotMapping[t0 - 1] != s0 - 1 || s0 % G == 0))
        return; // not a run leader
    int n = 1;
    while (t0 + n < a.numTokens && a.slotMapping[t0 + n] == s0 + n && (s0 + n) % G != 0)
        ++n;
    const int off0 = int(s0 % L.blockSize);
    const int perLane = s.bits >= 8 ? 1 : 8 / s.bits; // channels sharing one byte
    for (int h = 0; h < L.kvHeads; ++h) {
        std::uint8_t* ks = kSide(a.pool, L, s0 / L.blockSize, h);
        for (int cb = lane * perLane; cb < L.headDim; cb += 32 * perLane)
            for (int c = cb; c < cb + perLane && c < L.headDim; ++c) {
                float mn = INFINITY, mx = -INFINITY;
                for (int i = 0; i < n; ++i) {
                    const float x =
                        inputToFloat(a.k[((t0 + i) * L.kvHeads + h) * L.headDim + c], a.inputDtype);
                    mn = fminf(mn, x);
                    mx = fmaxf(mx, x);
                }
                const GroupParams p = groupParams(s, mn, mx);
                std::uint8_t* m =
                    ks + s.metaOffset + (std::int64_t(off0 / G) * s.dim + c) * s.metaStride();
                storeScalar(m, p.scale, s.scaleBytes);
                if (s.hasZero)
                    storeScalar(m + s.scaleBytes, p.zero, s.scaleBytes);
                for (int i = 0; i < n; ++i) {
                    const float x =
                        inputToFloat(a.k[((t0 + i) * L.kvHeads + h) * L.headDim + c], a.inputDtype);
                    storeCode(ks, s, off0 + i, c, quantizeValue(s, x, p.scale, p.zero));
                }
            }
    }
}

bool warpPathFits(const SideLayout& s) {
    if (s.tokenGroup > 0)
        return true; // keys handled by the KIVI kernel
    const int per = s.dim / 32;
    if (s.dim % 32 != 0 || (per != 1 && per != 2 && per != 4 && per != 8))
        return false;
    if ((per * s.bits) % 8 != 0)
        return false;
    if (s.group > 0) {
        if (s.group % per != 0)
            return false;
        const int lanes = s.group / per;
        if (lanes > 32 || (lanes & (lanes - 1)) != 0)
            return false;
    }
    return true;
}

// One vector store per lane when every row start and the lane's slice are aligned to it.
bool vectorStore(const PageLayout& L, const SideLayout& s, std::int64_t sideOffset) {
    const int bytes = (L.headDim / 32) * s.bits / 8;
    if ((L.headDim / 32) * s.bits % 8 != 0 ||
        !(bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16))
        return false;
    return L.pageBytes % bytes == 0 && L.headStride % bytes == 0 && sideOffset % bytes == 0 &&
           s.dataBytes % bytes == 0;
}

} // namespace

cudaError_t launchStore(const StoreArgs& a, cudaStream_t stream) {
    const PageLayout& L = a.layout;
    if (a.numTokens <= 0)
        return cudaSuccess;
    if (L.headDim > 1024)
        return cudaErrorInvalidValue;
    const bool kivi = L.k.tokenGroup > 0;
    const std::int64_t items = a.numTokens * L.kvHeads;
    if (warpPathFits(L.k) && warpPathFits(L.v)) {
        const std::int64_t blocks = (items + kWarpsPerBlock - 1) / kWarpsPerBlock;
        const int per = L.headDim / 32;
        const int inBytes = per * 2;
        // Input rows start at multiples of head_dim x 2 bytes (cudaMalloc'd, 256-B aligned).
        const bool vecIn = inBytes <= 16 &&
                           (reinterpret_cast<std::uintptr_t>(a.k) % inBytes == 0) &&
                           (reinterpret_cast<std::uintptr_t>(a.v) % inBytes == 0);
        const bool vecK = !kivi && vectorStore(L, L.k, 0);
        const bool vecV = vectorStore(L, L.v, vSideOffset(L));
        const unsigned grid = unsigned(blocks);
        const unsigned threads = 32 * kWarpsPerBlock;
        switch (per) {
        case 1:
            storeWarpKernel<1><<<grid, threads, 0, stream>>>(a, kivi, vecIn, vecK, vecV);
            break;
        case 2:
            storeWarpKernel<2><<<grid, threads, 0, stream>>>(a, kivi, vecIn, vecK, vecV);
            break;
        case 4:
            storeWarpKernel<4><<<grid, threads, 0, stream>>>(a, kivi, vecIn, vecK, vecV);
            break;
        default:
            storeWarpKernel<8><<<grid, threads, 0, stream>>>(a, kivi, vecIn, vecK, vecV);
            break;
        }
    } else {
        const std::int64_t blocks = (items + 127) / 128;
        storeThreadKernel<<<unsigned(blocks), 128, 0, stream>>>(a, kivi);
    }
    KVL_CUDA_CHECK_LAUNCH();
    if (kivi) {
        const std::int64_t blocks = (a.numTokens + kWarpsPerBlock - 1) / kWarpsPerBlock;
        storeKiviKeysKernel<<<unsigned(blocks), 32 * kWarpsPerBlock, 0, stream>>>(a);
        KVL_CUDA_CHECK_LAUNCH();
    }
    return cudaSuccess;
}

} // namespace kvl::probe
