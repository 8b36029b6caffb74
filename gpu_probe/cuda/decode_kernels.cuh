#pragma once
// Paged decode attention (one query per request), bandwidth-first, after FlashInfer's batch
// decode (flashinfer/attention/decode.cuh: a thread owns one 16-byte vector of a row, bdx
// threads cover head_dim, several rows per warp) and vLLM's paged_attention_v2
// (csrc/attention/attention_kernels.cuh: 512-token partitions, a reduce kernel):
//  - one CTA per (512-token partition, KV head [x q-head chunk], request); the whole GQA group
//    of up to 8 q heads is computed from one read of the KV head's pages;
//  - a token row is L = 8 / 16 / 32 lanes (head_dim <= 64 / 128 / 256), each lane owns 8
//    consecutive elements and reads them with one aligned vector load (kv_codecs.cuh), so one
//    warp instruction reads 32 / L consecutive tokens of a page: whole 32-byte sectors;
//  - templates per format (kv_codecs.cuh), lane count and q heads per CTA: no runtime
//    per-element switch; fp8 converts in hardware on sm_89+ (a bit-exact software path on
//    sm_80); int codes become floats without a conversion instruction;
//  - two-phase tiles: each warp owns 32-token spans (a KIVI key group), and per tile issues the
//    loads of all its tokens (K codes, V codes and their scale / zero words) before decoding any;
//  - scales fold out of the inner loops: a token's int8 scale multiplies its score (and its
//    softmax weight for V); an int4 group's zero becomes zero x sum(q) per lane; KIVI keys'
//    per-channel scales and zeros are loaded once per token group;
//  - online softmax in base 2 (the query pre-scaled by log2(e)), the running max and the
//    rescale once per tile, not per token;
//  - warps merged through shared memory, partitions by decodeReduceKernel (flash-decoding).
// Layouts the fast kernel does not take (head_dim not a multiple of 8, rows not aligned to the
// vector, scale types other than the probe's) run decodeGenericKernel: correct for any layout
// and head_dim <= 256, a row staged in shared memory and kv_quant.h's element decoder.
#include "gpu_probe/cuda/dialect.cuh"
#include "gpu_probe/cuda/kv_codecs.cuh"
#include "gpu_probe/cuda/launchers.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace kvl::probe::KVL_KERNEL_NS {

namespace {

constexpr int kDecodeWarps = 4;
constexpr int kDecodeThreads = 32 * kDecodeWarps;
constexpr int kMaxQPerCta = 8;
constexpr int kMaxHeadDim = 256;
constexpr int kGenericQPerCta = 4;
constexpr float kLog2e = 1.4426950408889634f;

// Register budget per q-head count: with NQ queries a lane holds NQ x 8 query and NQ x 8
// accumulator floats, so CTAs per SM fall as NQ grows (the minimum-blocks hint to ptxas).
// Formats with a {scale, zero} word per token (int4, KIVI) hold two more floats per token step.
template <Kv F, int NQ> constexpr int decodeMinBlocks() {
    constexpr bool pairs = Side<F, false>::kMeta == Meta::TokenF16x2;
    return NQ <= 2 ? (pairs ? 4 : 5) : NQ == 4 ? 3 : 2; // <= 128 / 102, 170, 255 registers
}

// Token steps per tile and lane: up to 32 bytes of K codes (and as many of V) in flight per
// lane, at most 4 steps (more registers would cost occupancy, which keeps bytes in flight as
// well), capped so the tile's scores (NQ x U) stay in registers, the tile within a 32-token span.
template <Kv F, int L, int NQ> constexpr int decodeSteps() {
    int u = 32 / Side<F, true>::kRawBytes;
    u = u < 1 ? 1 : u > 4 ? 4 : u;
    const int cap = 16 / NQ < 1 ? 1 : 16 / NQ;
    u = u > cap ? cap : u;
    const int tokensPerStep = 32 / L;
    return u * tokensPerStep > kKiviTokenGroup ? kKiviTokenGroup / tokensPerStep : u;
}

struct DecodeParams : PageGeometry {
    gptr<const float> q;
    gptr<const std::int32_t> tables;
    gptr<const std::int32_t> lens;
    gptr<const std::uint8_t> pool;
    gptr<const float> kScale;
    gptr<const float> vScale;
    gptr<float> out;
    gptr<float> scratch;
    int batch, qHeads, maxBlocksPerSeq, maxPartitions, qChunks;
    int kDataBytes, vDataBytes, kMetaOffset, vMetaOffset;
    int kGroup, vGroup, kNumGroups, vNumGroups;
    float smScaleLog2; // softmax scale x log2(e): scores in base 2
    SideLayout k, v;   // the generic kernel's element decoder
};

// The split-K scratch (op_args.h), its max logits in base 2.
__device__ __forceinline__ SplitKScratch<gptr<float>> scratchOf(const DecodeParams& p) {
    return splitKScratch(p.scratch, p.batch, p.qHeads, p.maxPartitions);
}

// Shared memory: [warps][NQ][D] accumulators, [warps][NQ] max and sum, then the partition's
// block-table entries (and, for KIVI and the generic kernel, more after them).
struct DecodeShared {
    float* acc;
    float* m;
    float* l;
    int* table;
    float* extra;
};
__device__ __forceinline__ DecodeShared carveShared(float* smem, int nq, int headDim,
                                                    int tableEntries) {
    DecodeShared s;
    s.acc = smem;
    s.m = s.acc + kDecodeWarps * nq * headDim;
    s.l = s.m + kDecodeWarps * nq;
    s.table = reinterpret_cast<int*>(s.l + kDecodeWarps * nq);
    s.extra = reinterpret_cast<float*>(s.table + ((tableEntries + 3) / 4) * 4);
    return s;
}
KVL_HD int tableEntries(int blockSize) {
    return kPartitionTokens / blockSize + 2;
}

// A CTA's share of the grid (partition x (KV head, q-head chunk) x request): KV head h, request
// r, q heads [qBegin, qBegin + nq) with nq <= NQ, and the partition's tokens [t0, t1), none
// (t1 <= t0) where it starts at or past the request's length.
struct DecodeCta {
    int part, h, r, qBegin, nq;
    std::int64_t t0, t1;
};
template <int NQ> __device__ __forceinline__ DecodeCta decodeCta(const DecodeParams& p) {
    DecodeCta c;
    c.part = int(blockIdx.x);
    c.h = int(blockIdx.y) / p.qChunks;
    const int chunk = int(blockIdx.y) % p.qChunks;
    c.r = int(blockIdx.z);
    const int gs = p.qHeads / p.kvHeads;
    c.qBegin = c.h * gs + chunk * NQ;
    c.nq = std::min(NQ, gs - chunk * NQ);
    const std::int64_t len = ldg(p.lens + c.r);
    c.t0 = std::int64_t(c.part) * kPartitionTokens;
    c.t1 = std::min<std::int64_t>(len, c.t0 + kPartitionTokens);
    return c;
}

// The partition's block-table entries (its blocks b0 .. b1 of request r) into shared memory, by
// the whole CTA (a barrier after publishes them); returns b0.
__device__ __forceinline__ std::int64_t loadBlockTable(const DecodeParams& p, const DecodeShared& s,
                                                       int r, std::int64_t t0, std::int64_t t1) {
    const int B = p.blockSize;
    const std::int64_t b0 = t0 / B, b1 = (t1 - 1) / B;
    for (std::int64_t b = b0 + threadIdx.x; b <= b1; b += kDecodeThreads)
        s.table[b - b0] = ldg(p.tables + std::int64_t(r) * p.maxBlocksPerSeq + b);
    return b0;
}

// After every warp has written its m, l and acc: the CTA's result for its partition.
template <int NQ>
__device__ __forceinline__ void mergeWarps(const DecodeParams& p, const DecodeShared& s, int nq,
                                           int r, int qBegin, int part) {
    const int D = p.headDim;
    const SplitKScratch<gptr<float>> out = scratchOf(p);
    for (int idx = int(threadIdx.x); idx < nq * D; idx += kDecodeThreads) {
        const int g = idx / D, c = idx % D;
        float M = -INFINITY;
        for (int w = 0; w < kDecodeWarps; ++w)
            M = fmaxf(M, s.m[w * NQ + g]);
        float sum = 0.0f, o = 0.0f;
        for (int w = 0; w < kDecodeWarps; ++w) {
            const float mw = s.m[w * NQ + g];
            const float f = mw == -INFINITY ? 0.0f : exp2f(mw - M);
            sum += s.l[w * NQ + g] * f;
            o += s.acc[(w * NQ + g) * D + c] * f;
        }
        const std::int64_t row = (std::int64_t(r) * p.qHeads + qBegin + g) * p.maxPartitions + part;
        gstore(out.partial + row * D + c, o);
        if (c == 0) {
            gstore(out.maxLogit + row, M);
            gstore(out.expSum + row, sum);
        }
    }
}

// One lane's place in a decodeTileKernel CTA, shared by the kernel's phases below.
struct DecodeLane {
    int h;            // the KV head
    int D, B;         // head_dim, tokens per page
    int sub;          // which of the warp instruction's T tokens
    int c0;           // the lane's first element
    bool active;      // lanes past head_dim (80, 96, 112, 160, 192) idle
    std::int64_t b0;  // the partition's first block
    const int* table; // the partition's block-table entries (shared memory)
    int kGroupIdx, vGroupIdx, pageTokenShift;
};

// This lane's slice of each query, pre-scaled by softmax scale x log2(e) x k_scale, and its
// sum: an int4 group's zero contributes zero x sum(q) to the lane's part of a score.
template <int NQ>
__device__ __forceinline__ void loadQuery(const DecodeParams& p, const DecodeLane& ln, int r,
                                          int qBegin, int nq, float (&q)[NQ][8],
                                          float (&qsum)[NQ]) {
    const int D = ln.D, c0 = ln.c0; // values, not loads (so branches merge as in one body)
    const bool active = ln.active;
    const float qs = p.smScaleLog2 * ldg(p.kScale + ln.h);
#pragma unroll
    for (int g = 0; g < NQ; ++g) {
        float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f), b = a;
        if (g < nq && active) {
            const gptr<const float> row = p.q + (std::int64_t(r) * p.qHeads + qBegin + g) * D + c0;
            a = ldg(gcast<const float4>(row));
            b = ldg(gcast<const float4>(row + 4));
        }
        q[g][0] = a.x * qs;
        q[g][1] = a.y * qs;
        q[g][2] = a.z * qs;
        q[g][3] = a.w * qs;
        q[g][4] = b.x * qs;
        q[g][5] = b.y * qs;
        q[g][6] = b.z * qs;
        q[g][7] = b.w * qs;
    }
#pragma unroll
    for (int g = 0; g < NQ; ++g) {
        qsum[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e)
            qsum[g] += q[g][e];
    }
}

// KIVI keys: a token group's per-channel scale and zero, loaded once for its 32 tokens (each
// token's codes are then dequantized in place: x s + z).
__device__ __forceinline__ void loadKiviChannels(const DecodeParams& p, const DecodeLane& ln,
                                                 std::int64_t span, float (&ks)[8],
                                                 float (&kz)[8]) {
#pragma unroll
    for (int e = 0; e < 8; ++e)
        ks[e] = kz[e] = 0.0f;
    const int B = ln.B;
    if (ln.active) {
        const int page = ln.table[span / B - ln.b0];
        const gptr<const std::uint8_t> meta =
            p.pool + std::int64_t(page) * p.pageBytes + std::int64_t(ln.h) * p.headStride +
            p.kMetaOffset + (std::int64_t(span % B) / kKiviTokenGroup) * ln.D * 4 + ln.c0 * 4;
        const uint4 lo = ldg(gcast<const uint4>(meta));
        const uint4 hi = ldg(gcast<const uint4>(meta + 16));
        const unsigned words[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
        for (int e = 0; e < 8; ++e) {
            const float2 sz = scaleZeroPair(words[e]);
            ks[e] = sz.x;
            kz[e] = sz.y;
        }
    }
}

// Phase 1: every load of the tile, codes and their scale / zero words together ({scale, zero}
// of the token, K: int8 scale in .x).
template <Kv F, int L, int U>
__device__ __forceinline__ void
loadTile(const DecodeParams& p, const DecodeLane& ln, std::int64_t tile, std::int64_t spanEnd,
         typename Side<F, true>::Raw (&kr)[U], typename Side<F, false>::Raw (&vr)[U],
         float2 (&km)[U], float2 (&vm)[U], bool (&valid)[U]) {
    using KS = Side<F, true>;
    using VS = Side<F, false>;
    constexpr int T = 32 / L;
    // The lane's constants as values, not loads, so the branches below merge as in one body.
    const int h = ln.h, B = ln.B, sub = ln.sub, c0 = ln.c0, shift = ln.pageTokenShift;
    const bool active = ln.active;
    const std::int64_t b0 = ln.b0;
    const int* const table = ln.table;
    const int kGroupIdx = ln.kGroupIdx, vGroupIdx = ln.vGroupIdx;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const std::int64_t t = tile + u * T + sub;
        valid[u] = t < spanEnd;
        kr[u] = zeroRaw<typename KS::Raw>();
        vr[u] = zeroRaw<typename VS::Raw>();
        km[u] = vm[u] = make_float2(0.0f, 0.0f);
        if (valid[u] && active) {
            const int page = table[(t + shift) / B - b0];
            const int off = int(t % B);
            const gptr<const std::uint8_t> side =
                p.pool + std::int64_t(page) * p.pageBytes + std::int64_t(h) * p.headStride;
            const gptr<const std::uint8_t> vside = side + p.vOffset;
            kr[u] = loadRaw<typename KS::Raw>(side + std::int64_t(off) * p.kDataBytes +
                                              (c0 / 8) * KS::kRawBytes);
            vr[u] = loadRaw<typename VS::Raw>(vside + std::int64_t(off) * p.vDataBytes +
                                              (c0 / 8) * VS::kRawBytes);
            if constexpr (KS::kMeta == Meta::TokenF32)
                km[u].x = ldg(gcast<const float>(side + p.kMetaOffset + off * 4));
            if constexpr (KS::kMeta == Meta::TokenF16x2)
                km[u] = scaleZeroPair(ldg(gcast<const unsigned>(
                    side + p.kMetaOffset + (std::int64_t(off) * p.kNumGroups + kGroupIdx) * 4)));
            if constexpr (VS::kMeta == Meta::TokenF32)
                vm[u].x = ldg(gcast<const float>(vside + p.vMetaOffset + off * 4));
            if constexpr (VS::kMeta == Meta::TokenF16x2)
                vm[u] = scaleZeroPair(ldg(gcast<const unsigned>(
                    vside + p.vMetaOffset + (std::int64_t(off) * p.vNumGroups + vGroupIdx) * 4)));
        }
    }
}

// Phase 2: scores of the tile's tokens (each row's L lanes reduce their parts); -inf past the
// span's end.
template <Kv F, int L, int NQ, int U>
__device__ __forceinline__ void
scoreTile(const float (&q)[NQ][8], const float (&qsum)[NQ], const float (&ks)[8],
          const float (&kz)[8], const typename Side<F, true>::Raw (&kr)[U], const float2 (&km)[U],
          const bool (&valid)[U], float (&sc)[NQ][U]) {
    using KS = Side<F, true>;
    constexpr bool kKivi = KS::kMeta == Meta::ChannelF16x2;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        float x[8];
        decode8<F, true>(kr[u], x);
        if constexpr (kKivi) {
#pragma unroll
            for (int e = 0; e < 8; ++e)
                x[e] = x[e] * ks[e] + kz[e];
        }
#pragma unroll
        for (int g = 0; g < NQ; ++g) {
            float d = 0.0f;
#pragma unroll
            for (int e = 0; e < 8; ++e)
                d += q[g][e] * x[e];
            if constexpr (KS::kMeta == Meta::TokenF32)
                d *= km[u].x;
            if constexpr (KS::kMeta == Meta::TokenF16x2)
                d = d * km[u].x + km[u].y * qsum[g];
            sc[g][u] = d;
        }
    }
#pragma unroll
    for (int g = 0; g < NQ; ++g)
#pragma unroll
        for (int u = 0; u < U; ++u) {
#pragma unroll
            for (int o = 1; o < L; o *= 2)
                sc[g][u] += __shfl_xor_sync(kFull, sc[g][u], o);
            sc[g][u] = valid[u] ? sc[g][u] : -INFINITY;
        }
}

// The online softmax: the running max and the rescale once per tile (the max over the warp's
// tokens), then the tile's weights.
template <int L, int NQ, int U>
__device__ __forceinline__ void softmaxUpdate(const float (&sc)[NQ][U], float (&m)[NQ],
                                              float (&l)[NQ], float (&az)[NQ], float (&acc)[NQ][8],
                                              float (&pr)[NQ][U]) {
#pragma unroll
    for (int g = 0; g < NQ; ++g) {
        float tm = sc[g][0];
#pragma unroll
        for (int u = 1; u < U; ++u)
            tm = fmaxf(tm, sc[g][u]);
#pragma unroll
        for (int o = L; o < 32; o *= 2)
            tm = fmaxf(tm, __shfl_xor_sync(kFull, tm, o));
        const float mNew = fmaxf(m[g], tm); // finite: the tile's first token is valid
        const float corr = exp2f(m[g] - mNew);
        m[g] = mNew;
        l[g] *= corr;
        az[g] *= corr;
#pragma unroll
        for (int e = 0; e < 8; ++e)
            acc[g][e] *= corr;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            pr[g][u] = exp2f(sc[g][u] - mNew);
            l[g] += pr[g][u];
        }
    }
}

// Phase 3: the values, weighted (their scale folded into the weight).
template <Kv F, int NQ, int U>
__device__ __forceinline__ void accumulateValues(const typename Side<F, false>::Raw (&vr)[U],
                                                 const float2 (&vm)[U], const float (&pr)[NQ][U],
                                                 float (&az)[NQ], float (&acc)[NQ][8]) {
    using VS = Side<F, false>;
    constexpr bool kZeroV = VS::kMeta == Meta::TokenF16x2;
#pragma unroll
    for (int u = 0; u < U; ++u) {
        float y[8];
        decode8<F, false>(vr[u], y);
#pragma unroll
        for (int g = 0; g < NQ; ++g) {
            float w = pr[g][u];
            if constexpr (VS::kMeta != Meta::None)
                w *= vm[u].x;
            if constexpr (kZeroV)
                az[g] += pr[g][u] * vm[u].y;
#pragma unroll
            for (int e = 0; e < 8; ++e)
                acc[g][e] += w * y[e];
        }
    }
}

// One tile of a warp's span: its loads, scores, softmax update and values.
template <Kv F, int L, int NQ>
__device__ __forceinline__ void
decodeTile(const DecodeParams& p, const DecodeLane& ln, std::int64_t tile, std::int64_t spanEnd,
           const float (&q)[NQ][8], const float (&qsum)[NQ], const float (&ks)[8],
           const float (&kz)[8], float (&m)[NQ], float (&l)[NQ], float (&az)[NQ],
           float (&acc)[NQ][8]) {
    constexpr int U = decodeSteps<F, L, NQ>();
    typename Side<F, true>::Raw kr[U];
    typename Side<F, false>::Raw vr[U];
    float2 km[U], vm[U];
    bool valid[U];
    loadTile<F, L, U>(p, ln, tile, spanEnd, kr, vr, km, vm, valid);
    float sc[NQ][U];
    scoreTile<F, L, NQ, U>(q, qsum, ks, kz, kr, km, valid, sc);
    float pr[NQ][U];
    softmaxUpdate<L, NQ, U>(sc, m, l, az, acc, pr);
    accumulateValues<F, NQ, U>(vr, vm, pr, az, acc);
}

// The warp's result into shared memory: its T token rows hold the same channels, summed here
// (the max is warp-uniform).
template <Kv F, int L, int NQ>
__device__ __forceinline__ void
writeWarpResult(const DecodeShared& s, const DecodeLane& ln, int warp, int lane, int nq,
                const float (&m)[NQ], float (&l)[NQ], float (&az)[NQ], float (&acc)[NQ][8]) {
    constexpr bool kZeroV = Side<F, false>::kMeta == Meta::TokenF16x2;
#pragma unroll
    for (int g = 0; g < NQ; ++g) {
#pragma unroll
        for (int o = L; o < 32; o *= 2) {
            l[g] += __shfl_xor_sync(kFull, l[g], o);
            if constexpr (kZeroV)
                az[g] += __shfl_xor_sync(kFull, az[g], o);
#pragma unroll
            for (int e = 0; e < 8; ++e)
                acc[g][e] += __shfl_xor_sync(kFull, acc[g][e], o);
        }
    }
    const int D = ln.D, c0 = ln.c0;
    const bool writer = ln.sub == 0 && ln.active;
    if (writer) {
#pragma unroll
        for (int g = 0; g < NQ; ++g) {
            if (g >= nq)
                break;
            float* dst = s.acc + (warp * NQ + g) * D + c0;
#pragma unroll
            for (int e = 0; e < 8; ++e)
                dst[e] = acc[g][e] + az[g];
        }
    }
    if (lane == 0) {
#pragma unroll
        for (int g = 0; g < NQ; ++g) {
            s.m[warp * NQ + g] = m[g];
            s.l[warp * NQ + g] = l[g];
        }
    }
}

template <Kv F, int L, int NQ>
__global__ void __launch_bounds__(kDecodeThreads, decodeMinBlocks<F, NQ>())
    decodeTileKernel(DecodeParams p) {
    constexpr int U = decodeSteps<F, L, NQ>();
    constexpr int kTile = (32 / L) * U; // tokens per warp instruction x steps
    constexpr bool kKivi = Side<F, true>::kMeta == Meta::ChannelF16x2;
    KVL_DYNAMIC_SHARED(float, smem);

    const auto [part, h, r, qBegin, nq, t0, t1] = decodeCta<NQ>(p);
    if (t0 >= t1) // the whole CTA: the barriers below stay uniform
        return;
    const int D = p.headDim, B = p.blockSize;
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    const int sub = lane / L;      // which of the instruction's T tokens
    const int c0 = (lane % L) * 8; // the lane's first element
    const bool active = c0 < D;    // lanes past head_dim (80, 96, 112, 160, 192) idle
    const DecodeShared s = carveShared(smem, NQ, D, tableEntries(B));

    const std::int64_t b0 = loadBlockTable(p, s, r, t0, t1);
    DecodeLane ln;
    ln.h = h;
    ln.D = D;
    ln.B = B;
    ln.sub = sub;
    ln.c0 = c0;
    ln.active = active;
    ln.b0 = b0;
    ln.table = s.table;

    float q[NQ][8], qsum[NQ];
    loadQuery<NQ>(p, ln, r, qBegin, nq, q, qsum);
    if (!KVL_INJECT(DecodeSkipTableBarrier))
        __syncthreads();

    float m[NQ], l[NQ], acc[NQ][8], az[NQ];
#pragma unroll
    for (int g = 0; g < NQ; ++g) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
        az[g] = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; ++e)
            acc[g][e] = 0.0f;
    }
    ln.pageTokenShift = KVL_INJECT(DecodePageOffByOne) ? 1 : 0;
    ln.kGroupIdx = p.kGroup > 0 ? c0 / p.kGroup : 0;
    ln.vGroupIdx = p.vGroup > 0 ? c0 / p.vGroup : 0;

    for (std::int64_t span = t0 + std::int64_t(warp) * kKiviTokenGroup; span < t1;
         span += kDecodeWarps * kKiviTokenGroup) {
        float ks[8], kz[8];
        if constexpr (kKivi)
            loadKiviChannels(p, ln, span, ks, kz);
        const std::int64_t spanEnd = std::min<std::int64_t>(t1, span + kKiviTokenGroup);
        for (std::int64_t tile = span; tile < spanEnd; tile += kTile)
            decodeTile<F, L, NQ>(p, ln, tile, spanEnd, q, qsum, ks, kz, m, l, az, acc);
    }
    writeWarpResult<F, L, NQ>(s, ln, warp, lane, nq, m, l, az, acc);
    if (!KVL_INJECT(DecodeSkipMergeBarrier))
        __syncthreads();
    mergeWarps<NQ>(p, s, nq, r, qBegin, part);
}

// Any layout, head_dim <= 256: a warp takes one token at a time, stages its K and V rows (codes
// and the meta they need) in its own shared memory, and each lane decodes channels lane,
// lane + 32, ... with kv_quant.h's element decoder from there. Correct, not fast.
struct GenericStage {
    int dataBytes, metaBytes;
};
__device__ __forceinline__ GenericStage genericStage(const SideLayout& s) {
    GenericStage g;
    g.dataBytes = s.dataBytes;
    g.metaBytes = s.tokenGroup > 0 ? s.dim * s.metaStride()
                  : s.group > 0    ? s.numGroups * s.metaStride()
                                   : 0;
    return g;
}
KVL_HD int genericStageBytes(const SideLayout& s) {
    const int meta = s.tokenGroup > 0 ? s.dim * s.metaStride()
                     : s.group > 0    ? s.numGroups * s.metaStride()
                                      : 0;
    return (s.dataBytes + meta + 15) / 16 * 16;
}

// Copies one token's row of a side and its meta into `dst` (a per-warp area), laid out as a
// one-token side: codes first, meta right after (metaOffset = dataBytes, token 0).
__device__ __forceinline__ void stageRow(gptr<const std::uint8_t> side, const SideLayout& s,
                                         int off, std::uint8_t* dst, int lane) {
    const GenericStage g = genericStage(s);
    const gptr<const std::uint8_t> row = side + std::int64_t(off) * s.dataBytes;
    for (int i = lane; i < g.dataBytes; i += 32)
        dst[i] = ldg(row + i);
    std::int64_t metaIndex = 0;
    if (s.tokenGroup > 0)
        metaIndex = std::int64_t(off / s.tokenGroup) * s.dim;
    else if (s.group > 0)
        metaIndex = std::int64_t(off) * s.numGroups;
    const gptr<const std::uint8_t> meta = side + s.metaOffset + metaIndex * s.metaStride();
    for (int i = lane; i < g.metaBytes; i += 32)
        dst[g.dataBytes + i] = ldg(meta + i);
}

__device__ __forceinline__ SideLayout stagedLayout(SideLayout s) {
    s.metaOffset = s.dataBytes;
    return s;
}

__global__ void __launch_bounds__(kDecodeThreads) decodeGenericKernel(DecodeParams p) {
    constexpr int NQ = kGenericQPerCta;
    constexpr int kPer = kMaxHeadDim / 32;
    KVL_DYNAMIC_SHARED(float, smem);
    const auto [part, h, r, qBegin, nq, t0, t1] = decodeCta<NQ>(p);
    if (t0 >= t1)
        return;
    const int D = p.headDim, B = p.blockSize;
    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    const DecodeShared s = carveShared(smem, NQ, D, tableEntries(B));
    const int kBytes = genericStageBytes(p.k), vBytes = genericStageBytes(p.v);
    std::uint8_t* stage =
        reinterpret_cast<std::uint8_t*>(s.extra) + std::size_t(warp) * std::size_t(kBytes + vBytes);
    const SideLayout kLay = stagedLayout(p.k), vLay = stagedLayout(p.v);

    const std::int64_t b0 = loadBlockTable(p, s, r, t0, t1);
    const float qs = p.smScaleLog2 * ldg(p.kScale + h);
    float q[NQ][kPer];
#pragma unroll
    for (int g = 0; g < NQ; ++g)
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
            const int c = lane + 32 * i;
            q[g][i] = g < nq && c < D
                          ? ldg(p.q + (std::int64_t(r) * p.qHeads + qBegin + g) * D + c) * qs
                          : 0.0f;
        }
    __syncthreads();
    float m[NQ], l[NQ], acc[NQ][kPer];
#pragma unroll
    for (int g = 0; g < NQ; ++g) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int i = 0; i < kPer; ++i)
            acc[g][i] = 0.0f;
    }
    for (std::int64_t t = t0 + warp; t < t1; t += kDecodeWarps) {
        const int page = s.table[t / B - b0];
        const int off = int(t % B);
        const gptr<const std::uint8_t> side =
            p.pool + std::int64_t(page) * p.pageBytes + std::int64_t(h) * p.headStride;
        stageRow(side, p.k, off, stage, lane);
        stageRow(side + p.vOffset, p.v, off, stage + kBytes, lane);
        __syncwarp();
        float kx[kPer], vx[kPer];
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
            const int c = lane + 32 * i;
            kx[i] = c < D ? dequantElement(stage, kLay, 0, c) : 0.0f;
            vx[i] = c < D ? dequantElement(stage + kBytes, vLay, 0, c) : 0.0f;
        }
        __syncwarp(); // the next token's staging overwrites this one
#pragma unroll
        for (int g = 0; g < NQ; ++g) {
            float d = 0.0f;
#pragma unroll
            for (int i = 0; i < kPer; ++i)
                d += q[g][i] * kx[i];
#pragma unroll
            for (int o = 16; o > 0; o /= 2)
                d += __shfl_xor_sync(kFull, d, o);
            const float mNew = fmaxf(m[g], d);
            const float corr = exp2f(m[g] - mNew);
            const float pr = exp2f(d - mNew);
            m[g] = mNew;
            l[g] = l[g] * corr + pr;
#pragma unroll
            for (int i = 0; i < kPer; ++i)
                acc[g][i] = acc[g][i] * corr + pr * vx[i];
        }
    }
    __syncthreads(); // the staging areas are done with
#pragma unroll
    for (int g = 0; g < NQ; ++g) {
        if (g >= nq)
            break;
#pragma unroll
        for (int i = 0; i < kPer; ++i) {
            const int c = lane + 32 * i;
            if (c < D)
                s.acc[(warp * NQ + g) * D + c] = acc[g][i];
        }
        if (lane == 0) {
            s.m[warp * NQ + g] = m[g];
            s.l[warp * NQ + g] = l[g];
        }
    }
    __syncthreads();
    mergeWarps<NQ>(p, s, nq, r, qBegin, part);
}

// grid: batch x qHeads; the split-K reduce (vLLM paged_attention_v2_reduce_kernel): partitions
// rescaled by 2^(m_i - M), divided by the global sum, v_scale applied once.
__global__ void __launch_bounds__(128) decodeReduceKernel(DecodeParams p) {
    const int rq = int(blockIdx.x);
    const int r = rq / p.qHeads, qh = rq % p.qHeads;
    const int D = p.headDim;
    const int h = qh / (p.qHeads / p.kvHeads);
    const int P = p.maxPartitions;
    const std::int64_t len = ldg(p.lens + r);
    const int np = int((len + kPartitionTokens - 1) / kPartitionTokens);
    const SplitKScratch<gptr<float>> in = scratchOf(p);
    const std::int64_t base = std::int64_t(rq) * P;
    float M = -INFINITY;
    for (int i = 0; i < np; ++i)
        M = fmaxf(M, ldg(in.maxLogit + base + i));
    float sum = 0.0f;
    for (int i = 0; i < np; ++i)
        sum += ldg(in.expSum + base + i) * exp2f(ldg(in.maxLogit + base + i) - M);
    const float f = np > 0 ? ldg(p.vScale + h) / sum : 0.0f;
    for (int c = int(threadIdx.x); c < D; c += int(blockDim.x)) {
        float o = 0.0f;
        for (int i = 0; i < np; ++i)
            o += ldg(in.partial + (base + i) * D + c) * exp2f(ldg(in.maxLogit + base + i) - M);
        gstore(p.out + std::int64_t(rq) * D + c, o * f);
    }
}

// ---- host side

// The fast kernel's format for a layout, or false (the generic kernel runs it).
bool fastFormat(const PageLayout& L, const void* pool, Kv& kind) {
    if (reinterpret_cast<std::uintptr_t>(pool) % 16 != 0 || !fastKvFormat(L, kind))
        return false;
    // KIVI keys: a page holds whole token groups.
    return (kind != Kv::Kivi4 && kind != Kv::Kivi2) || L.blockSize % kKiviTokenGroup == 0;
}

DecodeParams decodeParams(const AttentionArgs& a, int qChunks) {
    const PageLayout& L = a.layout;
    DecodeParams p;
    static_cast<PageGeometry&>(p) = pageGeometry(L);
    p.q = a.q;
    p.tables = a.blockTables;
    p.lens = a.contextLens;
    p.pool = a.pool;
    p.kScale = a.kScale;
    p.vScale = a.vScale;
    p.out = a.out;
    p.scratch = a.scratch;
    p.batch = a.batch;
    p.qHeads = a.qHeads;
    p.maxBlocksPerSeq = a.maxBlocksPerSeq;
    p.maxPartitions = a.maxPartitions;
    p.qChunks = qChunks;
    p.kDataBytes = L.k.dataBytes;
    p.vDataBytes = L.v.dataBytes;
    p.kMetaOffset = L.k.metaOffset;
    p.vMetaOffset = L.v.metaOffset;
    p.kGroup = L.k.group;
    p.vGroup = L.v.group;
    p.kNumGroups = L.k.numGroups;
    p.vNumGroups = L.v.numGroups;
    p.smScaleLog2 = a.smScale * kLog2e;
    p.k = L.k;
    p.v = L.v;
    return p;
}

template <class Kernel>
cudaError_t launchPartitions(const char* name, Kernel* kernel, const DecodeParams& p,
                             std::size_t smem, cudaStream_t stream) {
    if (smem > 48 * 1024)
        KVL_CUDA_CALL(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    const dim3 grid(unsigned(p.maxPartitions), unsigned(p.kvHeads * p.qChunks), unsigned(p.batch));
    return launchKernel(name, kernel, grid, dim3(kDecodeThreads), smem, stream, p);
}

std::size_t decodeSharedBytes(int nq, int headDim, int blockSize, std::size_t extraBytes) {
    const int entries = (tableEntries(blockSize) + 3) / 4 * 4;
    return sizeof(float) * (std::size_t(kDecodeWarps) * nq * headDim + 2 * kDecodeWarps * nq) +
           sizeof(int) * std::size_t(entries) + extraBytes;
}

template <Kv F, int L, int NQ> cudaError_t launchTile(const DecodeParams& p, cudaStream_t stream) {
    return launchPartitions("decodeTileKernel", &decodeTileKernel<F, L, NQ>, p,
                            decodeSharedBytes(NQ, p.headDim, p.blockSize, 0), stream);
}

template <Kv F, int L> cudaError_t byQHeads(const DecodeParams& p, int nq, cudaStream_t s) {
    switch (nq) {
    case 1:
        return launchTile<F, L, 1>(p, s);
    case 2:
        return launchTile<F, L, 2>(p, s);
    case 4:
        return launchTile<F, L, 4>(p, s);
    default:
        return launchTile<F, L, 8>(p, s);
    }
}

cudaError_t byFormat(Kv kind, const DecodeParams& p, int nq, cudaStream_t s) {
    return withKvFormat(kind, [&](auto format) {
        return withRowLanes(p.headDim, [&](auto lanes) {
            return byQHeads<decltype(format)::value, decltype(lanes)::value>(p, nq, s);
        });
    });
}

} // namespace

cudaError_t launchAttention(const AttentionArgs& a, cudaStream_t stream) {
    const PageLayout& L = a.layout;
    if (L.headDim < 1 || L.headDim > kMaxHeadDim)
        return cudaErrorNotSupported;
    if (a.batch <= 0)
        return cudaSuccess;
    const int gs = a.qHeads / L.kvHeads;
    Kv kind = Kv::F16;
    if (fastFormat(L, a.pool, kind)) {
        const int nq = gs == 1 ? 1 : gs == 2 ? 2 : gs <= 4 ? 4 : kMaxQPerCta;
        const DecodeParams p = decodeParams(a, (gs + nq - 1) / nq);
        KVL_CUDA_CALL(byFormat(kind, p, nq, stream));
    } else {
        const DecodeParams p = decodeParams(a, (gs + kGenericQPerCta - 1) / kGenericQPerCta);
        const std::size_t stage = std::size_t(kDecodeWarps) *
                                  std::size_t(genericStageBytes(L.k) + genericStageBytes(L.v));
        KVL_CUDA_CALL(launchPartitions(
            "decodeGenericKernel", &decodeGenericKernel, p,
            decodeSharedBytes(kGenericQPerCta, L.headDim, L.blockSize, stage), stream));
    }
    const DecodeParams p = decodeParams(a, 1);
    return launchKernel("decodeReduceKernel", &decodeReduceKernel,
                        dim3(unsigned(a.batch * a.qHeads)), dim3(128), 0, stream, p);
}

} // namespace kvl::probe::KVL_KERNEL_NS
