// Paged decode attention (one query per request), designed after vLLM's paged_attention_v2
// and FlashInfer's decode kernels (REFERENCE.md 5):
//  - one CTA per (partition of 512 tokens, KV head [x q-head chunk], request): each KV head is
//    read once for its whole GQA group (up to 8 q heads per CTA; larger groups are chunked);
//  - the partition's block-table entries are staged in shared memory;
//  - each warp walks tokens; a lane owns head_dim/32 contiguous elements and loads them with
//    one vector load (16 B for fp16 at d=256, 8 B at d=128), dequantizes in registers;
//  - online softmax in fp32 per warp, warps merged through shared memory, then a reduce
//    kernel rescales partitions by exp(m_i - M) (flash-decoding).
// Per-tensor / per-head scales fold into the softmax scale (k) and the output (v).
#include "gpu_probe/cuda/cuda_check.h"
#include "gpu_probe/cuda/decode_kernel.cuh"
#include "gpu_probe/cuda/vec_io.cuh"

namespace kvl::probe {

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kMaxQPerCta = 8; // q heads of one GQA group handled per CTA (at most)

// Dequantizes this lane's PER elements (channels c0 .. c0+PER-1) of token `t` of a side.
// `vec`: one aligned vector load of the lane's codes (host-checked), else element-wise reads.
template <int PER>
__device__ __forceinline__ void loadLane(const std::uint8_t* side, const SideLayout& s, int t,
                                         int c0, bool vec, float (&out)[PER]) {
    if (vec) {
        alignas(16) std::uint8_t raw[PER * 4];
        loadVec(side + std::int64_t(t) * s.dataBytes + c0 * s.bits / 8, PER * s.bits / 8, raw);
        const bool perChannel = s.tokenGroup > 0;
        GroupParams p{1.0f, 0.0f};
        if (s.group > 0)
            p = loadParams(side, s, t, c0); // group % PER == 0 or PER % group == 0
#pragma unroll
        for (int i = 0; i < PER; ++i) {
            std::uint32_t q;
            if (s.bits == 32)
                q = reinterpret_cast<const std::uint32_t*>(raw)[i];
            else if (s.bits == 16)
                q = reinterpret_cast<const std::uint16_t*>(raw)[i];
            else
                q = getCode(raw, i, s.bits);
            if (perChannel)
                p = loadParams(side, s, t, c0 + i);
            else if (s.group > 0 && s.group < PER && (i % s.group) == 0)
                p = loadParams(side, s, t, c0 + i);
            out[i] = decodeValue(s, q, p.scale, p.zero);
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < PER; ++i)
        out[i] = dequantElement(side, s, t, c0 + i);
}

__device__ __forceinline__ float warpSum(float v) {
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// grid: (partitions, kvHeads * qChunks, batch); PER = head_dim / 32 elements per lane; NQ = q
// heads per CTA (registers scale with it: Llama's GQA-4 uses NQ = 4); kUnroll = tokens each
// warp has in flight (8 for 1-byte codes, whose rows are half as many bytes).
template <int PER, int NQ, int kUnroll>
__global__ void __launch_bounds__(kThreads)
    decodePartitionKernel(AttentionArgs a, int qChunks, bool vecK, bool vecV) {
    extern __shared__ float smem[];
    const PageLayout& L = a.layout;
    const int D = L.headDim, B = L.blockSize;
    const int p = blockIdx.x;
    const int h = blockIdx.y / qChunks;
    const int chunk = blockIdx.y % qChunks;
    const int r = blockIdx.z;
    const int gs = a.qHeads / L.kvHeads;
    const int qBegin = h * gs + chunk * NQ;
    const int nq = min(NQ, h * gs + gs - qBegin);
    const std::int64_t len = a.contextLens[r];
    const std::int64_t t0 = std::int64_t(p) * kPartitionTokens;
    if (t0 >= len)
        return;
    const std::int64_t t1 = min(len, t0 + kPartitionTokens);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    // shared: [warps][NQ][D] acc, [warps][NQ] m and l, block indices
    float* sAcc = smem;
    float* sM = sAcc + kWarps * NQ * D;
    float* sL = sM + kWarps * NQ;
    int* sTable = reinterpret_cast<int*>(sL + kWarps * NQ);
    const std::int64_t b0 = t0 / B, b1 = (t1 - 1) / B;
    for (std::int64_t b = b0 + threadIdx.x; b <= b1; b += kThreads)
        sTable[b - b0] = a.blockTables[std::int64_t(r) * a.maxBlocksPerSeq + b];

    // This lane's slice of each query, pre-scaled by softmax scale x k_scale.
    float q[NQ][PER];
    const float qs = a.smScale * a.kScale[h];
#pragma unroll
    for (int g = 0; g < NQ; ++g)
#pragma unroll
        for (int i = 0; i < PER; ++i)
            q[g][i] = g < nq
                          ? a.q[(std::int64_t(r) * a.qHeads + qBegin + g) * D + lane * PER + i] * qs
                          : 0.0f;
    __syncthreads();

    float m[NQ], l[NQ], acc[NQ][PER];
#pragma unroll
    for (int g = 0; g < NQ; ++g) {
        m[g] = -INFINITY;
        l[g] = 0.0f;
#pragma unroll
        for (int i = 0; i < PER; ++i)
            acc[g][i] = 0.0f;
    }
    // Each warp takes kUnroll consecutive tokens per step and issues all their loads before
    // using them: more bytes in flight per warp (the kernel is latency-bound otherwise).
    for (std::int64_t tb = t0 + std::int64_t(warp) * kUnroll; tb < t1; tb += kWarps * kUnroll) {
        float kx[kUnroll][PER], vx[kUnroll][PER];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const std::int64_t t = tb + u;
            if (t < t1) {
                const std::uint8_t* ks = kSide(a.pool, L, sTable[t / B - b0], h);
                const int off = int(t % B);
                loadLane<PER>(ks, L.k, off, lane * PER, vecK, kx[u]);
                loadLane<PER>(ks + vSideOffset(L), L.v, off, lane * PER, vecV, vx[u]);
            }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (tb + u >= t1)
                break;
#pragma unroll
            for (int g = 0; g < NQ; ++g) {
                if (g >= nq)
                    break;
                float d = 0.0f;
#pragma unroll
                for (int i = 0; i < PER; ++i)
                    d += q[g][i] * kx[u][i];
                d = warpSum(d);
                const float mNew = fmaxf(m[g], d);
                const float corr = __expf(m[g] - mNew);
                const float pr = __expf(d - mNew);
                l[g] = l[g] * corr + pr;
#pragma unroll
                for (int i = 0; i < PER; ++i)
                    acc[g][i] = acc[g][i] * corr + pr * vx[u][i];
                m[g] = mNew;
            }
        }
    }
#pragma unroll
    for (int g = 0; g < NQ; ++g) {
        if (g >= nq)
            break;
#pragma unroll
        for (int i = 0; i < PER; ++i)
            sAcc[(warp * NQ + g) * D + lane * PER + i] = acc[g][i];
        if (lane == 0) {
            sM[warp * NQ + g] = m[g];
            sL[warp * NQ + g] = l[g];
        }
    }
    __syncthreads();
    // Merge the warps; write this partition's max logit, exp-sum and unnormalized output.
    const int P = a.maxPartitions;
    float* maxLogit = a.scratch;
    float* expSum = maxLogit + std::int64_t(a.batch) * a.qHeads * P;
    float* partial = expSum + std::int64_t(a.batch) * a.qHeads * P;
    for (int idx = threadIdx.x; idx < nq * D; idx += kThreads) {
        const int g = idx / D, c = idx % D;
        float M = -INFINITY;
        for (int w = 0; w < kWarps; ++w)
            M = fmaxf(M, sM[w * NQ + g]);
        float sum = 0.0f, o = 0.0f;
        for (int w = 0; w < kWarps; ++w) {
            const float mw = sM[w * NQ + g];
            const float f = mw == -INFINITY ? 0.0f : __expf(mw - M);
            sum += sL[w * NQ + g] * f;
            o += sAcc[(w * NQ + g) * D + c] * f;
        }
        const std::int64_t row = (std::int64_t(r) * a.qHeads + qBegin + g) * P + p;
        partial[row * D + c] = o;
        if (c == 0) {
            maxLogit[row] = M;
            expSum[row] = sum;
        }
    }
}

// grid: batch * qHeads; the split-K reduce (vLLM paged_attention_v2_reduce_kernel).
__global__ void decodeReduceKernel(AttentionArgs a) {
    const int rq = blockIdx.x;
    const int r = rq / a.qHeads, qh = rq % a.qHeads;
    const int D = a.layout.headDim;
    const int h = qh / (a.qHeads / a.layout.kvHeads);
    const int P = a.maxPartitions;
    const std::int64_t len = a.contextLens[r];
    const int np = int((len + kPartitionTokens - 1) / kPartitionTokens);
    const float* maxLogit = a.scratch;
    const float* expSum = maxLogit + std::int64_t(a.batch) * a.qHeads * P;
    const float* partial = expSum + std::int64_t(a.batch) * a.qHeads * P;
    float M = -INFINITY;
    for (int p = 0; p < np; ++p)
        M = fmaxf(M, maxLogit[std::int64_t(rq) * P + p]);
    float sum = 0.0f;
    for (int p = 0; p < np; ++p)
        sum += expSum[std::int64_t(rq) * P + p] * __expf(maxLogit[std::int64_t(rq) * P + p] - M);
    const float f = np > 0 ? a.vScale[h] / sum : 0.0f;
    for (int c = threadIdx.x; c < D; c += blockDim.x) {
        float o = 0.0f;
        for (int p = 0; p < np; ++p)
            o += partial[(std::int64_t(rq) * P + p) * D + c] *
                 __expf(maxLogit[std::int64_t(rq) * P + p] - M);
        a.out[std::int64_t(rq) * D + c] = o * f;
    }
}

// Whether a side's rows allow one aligned vector load per lane, with the lane's elements in
// one scale group (or a whole number of groups).
bool vectorFriendly(const PageLayout& L, const SideLayout& s, std::int64_t sideOffset) {
    const int per = L.headDim / 32;
    const int bits = per * s.bits;
    if (per * 4 < bits / 8)
        return false;
    if (bits % 8 != 0)
        return false;
    const int bytes = bits / 8;
    if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8 && bytes != 16)
        return false;
    if (L.pageBytes % bytes || L.headStride % bytes || sideOffset % bytes || s.dataBytes % bytes)
        return false;
    if (s.group > 0 && !(s.group % per == 0 || per % s.group == 0))
        return false;
    return true;
}

template <int PER, int NQ, int U = 4>
cudaError_t launchPartitions(const AttentionArgs& a, int qChunks, bool vecK, bool vecV,
                             cudaStream_t stream) {
    const PageLayout& L = a.layout;
    const int tableEntries = kPartitionTokens / L.blockSize + 2;
    const std::size_t smem =
        sizeof(float) * (kWarps * NQ * L.headDim + 2 * kWarps * NQ) + sizeof(int) * tableEntries;
    if (smem > 48 * 1024)
        KVL_CUDA_CALL(cudaFuncSetAttribute(decodePartitionKernel<PER, NQ, U>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    const dim3 grid(unsigned(a.maxPartitions), unsigned(L.kvHeads * qChunks), unsigned(a.batch));
    decodePartitionKernel<PER, NQ, U><<<grid, kThreads, smem, stream>>>(a, qChunks, vecK, vecV);
    KVL_CUDA_CHECK_LAUNCH();
    return cudaSuccess;
}

} // namespace

cudaError_t launchAttention(const AttentionArgs& a, cudaStream_t stream) {
    const PageLayout& L = a.layout;
    const int per = L.headDim / 32;
    if (L.headDim % 32 != 0 || (per != 1 && per != 2 && per != 4 && per != 8))
        return cudaErrorNotSupported;
    if (a.batch <= 0)
        return cudaSuccess;
    const int gs = a.qHeads / L.kvHeads;
    const bool vecK = vectorFriendly(L, L.k, 0);
    const bool vecV = vectorFriendly(L, L.v, vSideOffset(L));
    // Instantiations: every head_dim with 8 q heads per CTA, plus the common narrow groups
    // (MHA and GQA <= 4 at head_dim 128, GQA <= 4 at 256) with fewer registers.
    if (per == 4 && gs == 1)
        KVL_CUDA_CALL((launchPartitions<4, 1>(a, 1, vecK, vecV, stream)));
    else if (per == 4 && gs <= 4 && L.k.bits <= 8)
        KVL_CUDA_CALL((launchPartitions<4, 4, 8>(a, 1, vecK, vecV, stream)));
    else if (per == 4 && gs <= 4)
        KVL_CUDA_CALL((launchPartitions<4, 4>(a, 1, vecK, vecV, stream)));
    else if (per == 8 && gs <= 4)
        KVL_CUDA_CALL((launchPartitions<8, 4>(a, 1, vecK, vecV, stream)));
    else {
        const int qChunks = (gs + kMaxQPerCta - 1) / kMaxQPerCta;
        switch (per) {
        case 1:
            KVL_CUDA_CALL((launchPartitions<1, kMaxQPerCta>(a, qChunks, vecK, vecV, stream)));
            break;
        case 2:
            KVL_CUDA_CALL((launchPartitions<2, kMaxQPerCta>(a, qChunks, vecK, vecV, stream)));
            break;
        case 4:
            KVL_CUDA_CALL((launchPartitions<4, kMaxQPerCta>(a, qChunks, vecK, vecV, stream)));
            break;
        default:
            KVL_CUDA_CALL((launchPartitions<8, kMaxQPerCta>(a, qChunks, vecK, vecV, stream)));
            break;
        }
    }
    decodeReduceKernel<<<unsigned(a.batch * a.qHeads), 128, 0, stream>>>(a);
    KVL_CUDA_CHECK_LAUNCH();
    return cudaSuccess;
}

} // namespace kvl::probe
