#include "gpu_probe/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

namespace kvl::probe {

namespace {

int codecOf(const core::KvFormat& f) {
    switch (f.dtype) {
    case core::KvDtype::Fp32:
        return kCodecF32;
    case core::KvDtype::Fp16:
        return kCodecF16;
    case core::KvDtype::Bf16:
        return kCodecBF16;
    case core::KvDtype::Fp8E4M3:
        return kCodecE4M3;
    case core::KvDtype::Fp8E5M2:
        return kCodecE5M2;
    default:
        return f.hasZeroPoint ? kCodecIntAsym : kCodecIntSym;
    }
}

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}

// fp8 codes to float, built once from kv_quant.h's decoders.
struct Fp8Tables {
    float e4m3[256], e5m2[256];
    Fp8Tables() {
        for (int i = 0; i < 256; ++i) {
            e4m3[i] = e4m3ToFloat(std::uint8_t(i));
            e5m2[i] = e5m2ToFloat(std::uint8_t(i));
        }
    }
};
const Fp8Tables& fp8Tables() {
    static const Fp8Tables t;
    return t;
}

// The CPU hot loop's row decoder: the same values as dequantRow for the common layouts,
// written as flat loops GCC vectorizes; everything else falls back to dequantRow.
void cpuDequantRow(const std::uint8_t* side, const SideLayout& s, int t, float* __restrict out) {
    const std::uint8_t* row = side + std::int64_t(t) * s.dataBytes;
    const int D = s.dim;
    if (s.codec == kCodecF16) {
        // Branch-free fp16 -> fp32: exponent/mantissa shifted into place, rebiased by 2^112
        // (exact for normals and subnormals); inf/NaN patched afterwards.
        for (int c = 0; c < D; ++c) {
            std::uint16_t h;
            std::memcpy(&h, row + 2 * c, 2);
            const std::uint32_t em = h & 0x7fffu;
            float f = bitsToFloat(em << 13) * 0x1.0p112f;
            std::uint32_t u = floatToBits(f) | (std::uint32_t(h & 0x8000u) << 16);
            if (em >= 0x7c00u)
                u = (std::uint32_t(h & 0x8000u) << 16) | 0x7f800000u | ((em & 0x3ffu) << 13);
            out[c] = bitsToFloat(u);
        }
        return;
    }
    if ((s.codec == kCodecE4M3 || s.codec == kCodecE5M2) && s.group == 0) {
        const float* lut = s.codec == kCodecE4M3 ? fp8Tables().e4m3 : fp8Tables().e5m2;
        for (int c = 0; c < D; ++c)
            out[c] = lut[row[c]];
        return;
    }
    if (s.codec == kCodecIntSym && s.bits == 8 && s.group == D) {
        const float scale =
            loadScalar(side + s.metaOffset + std::int64_t(t) * s.metaStride(), s.scaleBytes);
        for (int c = 0; c < D; ++c)
            out[c] = float(std::int8_t(row[c])) * scale;
        return;
    }
    if (s.codec == kCodecIntAsym && (s.bits == 4 || s.bits == 2) && s.group > 0 &&
        (s.group * s.bits) % 8 == 0 && D % s.group == 0) {
        const int perByte = 8 / s.bits;
        const std::uint32_t mask = (1u << s.bits) - 1u;
        for (int g = 0; g < s.numGroups; ++g) {
            const GroupParams p = loadParams(side, s, t, g * s.group);
            const std::uint8_t* b = row + g * s.group / perByte;
            float* o = out + g * s.group;
            for (int i = 0; i < s.group; ++i)
                o[i] = float((std::uint32_t(b[i / perByte]) >> ((i % perByte) * s.bits)) & mask) *
                           p.scale +
                       p.zero;
        }
        return;
    }
    if (s.tokenGroup > 0 && s.codec == kCodecIntAsym && s.scaleBytes == 2 && s.hasZero &&
        (s.bits == 4 || s.bits == 2)) {
        // KIVI keys: (scale, zero) fp16 pairs per channel for this token's group, contiguous.
        const std::uint8_t* meta = side + s.metaOffset + std::int64_t(t / s.tokenGroup) * D * 4;
        const int perByte = 8 / s.bits;
        const std::uint32_t mask = (1u << s.bits) - 1u;
        for (int c = 0; c < D; ++c) {
            std::uint16_t sz[2];
            std::memcpy(sz, meta + 4 * c, 4);
            const std::uint32_t q =
                (std::uint32_t(row[c / perByte]) >> ((c % perByte) * s.bits)) & mask;
            out[c] = float(q) * halfToFloat(sz[0]) + halfToFloat(sz[1]);
        }
        return;
    }
    dequantRow(side, s, t, out);
}

// quantizeTokenVector with the codec and width as compile-time constants, so the per-element
// switches fold away; the arithmetic (and so every byte) is unchanged.
template <int Codec, int Bits>
void quantizeRowT(std::uint8_t* side, SideLayout s, int t, const float* x, float outScale) {
    s.codec = Codec;
    s.bits = Bits;
    quantizeTokenVector(side, s, t, x, outScale);
}

void quantizeRow(std::uint8_t* side, const SideLayout& s, int t, const float* x, float outScale) {
    switch (s.codec) {
    case kCodecF16:
        return quantizeRowT<kCodecF16, 16>(side, s, t, x, outScale);
    case kCodecBF16:
        return quantizeRowT<kCodecBF16, 16>(side, s, t, x, outScale);
    case kCodecE4M3:
        return quantizeRowT<kCodecE4M3, 8>(side, s, t, x, outScale);
    case kCodecE5M2:
        return quantizeRowT<kCodecE5M2, 8>(side, s, t, x, outScale);
    case kCodecIntSym:
        if (s.bits == 8)
            return quantizeRowT<kCodecIntSym, 8>(side, s, t, x, outScale);
        break;
    case kCodecIntAsym:
        if (s.bits == 4)
            return quantizeRowT<kCodecIntAsym, 4>(side, s, t, x, outScale);
        if (s.bits == 2)
            return quantizeRowT<kCodecIntAsym, 2>(side, s, t, x, outScale);
        break;
    default:
        break;
    }
    quantizeTokenVector(side, s, t, x, outScale);
}

// Dot product with a reduction the compiler may reorder (vectorized via -fopenmp-simd).
inline float dot(const float* __restrict a, const float* __restrict b, int n) {
    float d = 0.0f;
#pragma omp simd reduction(+ : d)
    for (int c = 0; c < n; ++c)
        d += a[c] * b[c];
    return d;
}

} // namespace

std::variant<PageLayout, std::string> makeLayout(const core::KvFormat& f, int headDim, int kvHeads,
                                                 int blockSize) {
    if (headDim < 1 || headDim > 1024)
        return std::string("head_dim must be between 1 and 1024, got ") + std::to_string(headDim);
    if (kvHeads < 1 || kvHeads > 1024)
        return "kv_heads must be between 1 and 1024, got " + std::to_string(kvHeads);
    if (blockSize < 1 || blockSize > 4096)
        return "block size must be between 1 and 4096, got " + std::to_string(blockSize);
    if (auto err = core::validate(f, headDim))
        return "KV format: " + *err;
    const int codec = codecOf(f);
    if (codec == kCodecIntAsym && (f.granularity == core::Granularity::PerTensor ||
                                   f.granularity == core::Granularity::PerHead))
        return std::string("asymmetric ") + std::string(core::dtypeName(f.dtype)) +
               " needs an in-page zero: use per-token-head, per-group or kivi";
    const bool kivi = f.granularity == core::Granularity::KPerChannelVPerToken;
    if (kivi && blockSize % f.groupSize != 0)
        return "block size " + std::to_string(blockSize) +
               " must be a multiple of the KIVI group size " + std::to_string(f.groupSize) +
               " (keys are quantized per channel over G tokens, which must share a page)";

    PageLayout L;
    L.headDim = headDim;
    L.kvHeads = kvHeads;
    L.blockSize = blockSize;
    L.keyBytesPerToken = core::keyBytesPerToken(f, headDim);
    L.valueBytesPerToken = core::valueBytesPerToken(f, headDim);
    L.headStride = std::int64_t(blockSize) * (L.keyBytesPerToken + L.valueBytesPerToken);
    L.pageBytes = std::int64_t(kvHeads) * L.headStride;

    auto side = [&](bool isKey) -> std::variant<SideLayout, std::string> {
        SideLayout s;
        s.codec = codec;
        s.bits = core::bitsPerElement(f.dtype);
        s.dim = headDim;
        s.dataBytes = int(ceilDiv(std::int64_t(headDim) * s.bits, 8));
        s.scaleBytes = core::scaleBytes(f.scaleType);
        s.hasZero = f.hasZeroPoint ? 1 : 0;
        switch (f.granularity) {
        case core::Granularity::None:
        case core::Granularity::PerTensor:
        case core::Granularity::PerHead:
            s.hasZero = 0;
            break;
        case core::Granularity::PerTokenHead:
            s.group = headDim;
            break;
        case core::Granularity::PerGroup:
            s.group = f.groupSize;
            break;
        case core::Granularity::KPerChannelVPerToken:
            if (isKey)
                s.tokenGroup = f.groupSize;
            else
                s.group = std::min(f.groupSize, headDim);
            break;
        }
        if (s.group > 0)
            s.numGroups = int(ceilDiv(headDim, s.group));
        s.metaOffset = blockSize * s.dataBytes;
        std::int64_t meta = 0;
        if (s.group > 0)
            meta = std::int64_t(blockSize) * s.numGroups * s.metaStride();
        else if (s.tokenGroup > 0)
            meta = std::int64_t(blockSize / s.tokenGroup) * headDim * s.metaStride();
        const std::int64_t budget = blockSize * (isKey ? L.keyBytesPerToken : L.valueBytesPerToken);
        if (s.metaOffset + meta > budget)
            return std::string(isKey ? "key" : "value") + " page layout needs " +
                   std::to_string(s.metaOffset + meta) + " bytes per head but core's budget is " +
                   std::to_string(budget);
        s.sideBytes = int(budget);
        return s;
    };
    auto k = side(true);
    if (auto* e = std::get_if<std::string>(&k))
        return *e;
    auto v = side(false);
    if (auto* e = std::get_if<std::string>(&v))
        return *e;
    L.k = std::get<SideLayout>(k);
    L.v = std::get<SideLayout>(v);
    return L;
}

std::int64_t attentionScratchFloats(int batch, int qHeads, int maxPartitions, int headDim) {
    return std::int64_t(batch) * qHeads * maxPartitions * (2 + headDim);
}

int defaultThreads() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : int(std::min(n, 64u));
}

bool parallelFor(std::int64_t n, int threads, const std::atomic<bool>* cancel,
                 const std::function<void(std::int64_t)>& fn) {
    if (threads <= 0)
        threads = defaultThreads();
    std::atomic<std::int64_t> next{0};
    std::atomic<bool> stopped{false};
    auto worker = [&] {
        for (;;) {
            if (cancel && cancel->load(std::memory_order_relaxed)) {
                stopped = true;
                return;
            }
            const std::int64_t i = next.fetch_add(1);
            if (i >= n)
                return;
            fn(i);
        }
    };
    const int nt = int(std::min<std::int64_t>(threads, std::max<std::int64_t>(n, 1)));
    std::vector<std::thread> pool;
    for (int i = 1; i < nt; ++i)
        pool.emplace_back(worker);
    worker();
    for (auto& t : pool)
        t.join();
    return !stopped;
}

std::string validateStore(const StoreArgs& a, const std::int64_t* slots) {
    const PageLayout& L = a.layout;
    if (!a.k || !a.v || !slots || !a.pool)
        return "store: null buffer";
    if (a.numTokens < 0)
        return "store: negative token count";
    if (a.inputDtype != kInputF16 && a.inputDtype != kInputBF16)
        return "store: input must be fp16 or bf16";
    if (L.k.outOfPageScale() && (!a.kScale || !a.vScale))
        return "store: this format needs k_scale / v_scale";
    const std::int64_t capacity = a.numBlocks * L.blockSize;
    for (std::int64_t t = 0; t < a.numTokens; ++t) {
        const std::int64_t s = slots[t];
        if (s >= capacity)
            return "store: slot " + std::to_string(s) + " of token " + std::to_string(t) +
                   " is outside the pool (" + std::to_string(capacity) + " slots)";
        if (s < 0 || L.k.tokenGroup == 0)
            continue;
        const bool continues = t > 0 && slots[t - 1] == s - 1 && s % L.k.tokenGroup != 0;
        if (!continues && s % L.k.tokenGroup != 0)
            return "store: KIVI keys are quantized per channel over groups of " +
                   std::to_string(L.k.tokenGroup) + " tokens; token " + std::to_string(t) +
                   " starts a run mid-group (slot " + std::to_string(s) +
                   "): write whole groups in consecutive slots";
    }
    return {};
}

std::string validateAttention(const AttentionArgs& a, std::int64_t numBlocks,
                              const std::int32_t* tables, const std::int32_t* lens) {
    const PageLayout& L = a.layout;
    if (!a.q || !a.pool || !a.out || !tables || !lens || !a.kScale || !a.vScale)
        return "attention: null buffer";
    if (a.batch < 1)
        return "attention: batch must be at least 1";
    if (a.qHeads < 1 || a.qHeads % L.kvHeads != 0)
        return "attention: q heads (" + std::to_string(a.qHeads) +
               ") must be a multiple of KV heads (" + std::to_string(L.kvHeads) + ")";
    if (a.qHeads / L.kvHeads > 64)
        return "attention: at most 64 q heads per KV head";
    for (int r = 0; r < a.batch; ++r) {
        const std::int64_t len = lens[r];
        if (len < 0 || len > std::int64_t(a.maxBlocksPerSeq) * L.blockSize)
            return "attention: context of request " + std::to_string(r) + " (" +
                   std::to_string(len) + ") exceeds its block table";
        if (ceilDiv(len, kPartitionTokens) > a.maxPartitions)
            return "attention: scratch holds too few partitions";
        for (std::int64_t b = 0; b < ceilDiv(len, L.blockSize); ++b) {
            const std::int32_t blk = tables[std::int64_t(r) * a.maxBlocksPerSeq + b];
            if (blk < 0 || blk >= numBlocks)
                return "attention: request " + std::to_string(r) + " references block " +
                       std::to_string(blk) + " outside the pool";
        }
    }
    return {};
}

std::string cpuStore(const StoreArgs& a, int threads, const std::atomic<bool>* cancel) {
    const PageLayout& L = a.layout;
    const int H = L.kvHeads, D = L.headDim, B = L.blockSize;
    const std::int64_t rowElems = std::int64_t(H) * D;
    constexpr std::int64_t kChunk = 64;
    const bool kivi = L.k.tokenGroup > 0;
    const std::int64_t chunks = (a.numTokens + kChunk - 1) / kChunk;
    // Values (and non-KIVI keys): every token independently.
    bool ok = parallelFor(chunks, threads, cancel, [&](std::int64_t ci) {
        std::vector<float> x(D);
        const std::int64_t t1 = std::min(a.numTokens, (ci + 1) * kChunk);
        for (std::int64_t t = ci * kChunk; t < t1; ++t) {
            const std::int64_t slot = a.slotMapping[t];
            if (slot < 0)
                continue;
            const std::int64_t blk = slot / B;
            const int off = int(slot % B);
            for (int h = 0; h < H; ++h) {
                std::uint8_t* ks = kSide(a.pool, L, blk, h);
                const std::uint16_t* kin = a.k + t * rowElems + std::int64_t(h) * D;
                const std::uint16_t* vin = a.v + t * rowElems + std::int64_t(h) * D;
                if (!kivi) {
                    for (int c = 0; c < D; ++c)
                        x[c] = inputToFloat(kin[c], a.inputDtype);
                    quantizeRow(ks, L.k, off, x.data(), a.kScale ? a.kScale[h] : 1.0f);
                }
                for (int c = 0; c < D; ++c)
                    x[c] = inputToFloat(vin[c], a.inputDtype);
                quantizeRow(ks + vSideOffset(L), L.v, off, x.data(), a.vScale ? a.vScale[h] : 1.0f);
            }
        }
    });
    if (!ok)
        return "cancelled";
    if (!kivi)
        return {};
    // KIVI keys: one run = consecutive slots inside one token group (validateStore checked
    // that runs start on group boundaries).
    const int G = L.k.tokenGroup;
    std::vector<std::int64_t> leaders;
    for (std::int64_t t = 0; t < a.numTokens; ++t) {
        const std::int64_t s = a.slotMapping[t];
        if (s < 0)
            continue;
        if (t == 0 || a.slotMapping[t - 1] != s - 1 || s % G == 0)
            leaders.push_back(t);
    }
    ok = parallelFor(std::int64_t(leaders.size()), threads, cancel, [&](std::int64_t li) {
        const std::int64_t t0 = leaders[li];
        const std::int64_t s0 = a.slotMapping[t0];
        int n = 1;
        while (t0 + n < a.numTokens && a.slotMapping[t0 + n] == s0 + n && (s0 + n) % G != 0)
            ++n;
        std::vector<float> x(std::size_t(n) * D);
        for (int h = 0; h < H; ++h) {
            for (int i = 0; i < n; ++i)
                for (int c = 0; c < D; ++c)
                    x[std::size_t(i) * D + c] = inputToFloat(
                        a.k[(t0 + i) * rowElems + std::int64_t(h) * D + c], a.inputDtype);
            std::uint8_t* ks = kSide(a.pool, L, s0 / B, h);
            for (int c = 0; c < D; ++c)
                quantizeChannelRun(ks, L.k, int(s0 % B), n, c, x.data() + c, D);
        }
    });
    return ok ? std::string() : std::string("cancelled");
}

std::string cpuAttention(const AttentionArgs& a, int threads, const std::atomic<bool>* cancel) {
    const PageLayout& L = a.layout;
    const int H = L.kvHeads, D = L.headDim, B = L.blockSize;
    const int gs = a.qHeads / H;
    const int P = a.maxPartitions;
    float* maxLogit = a.scratch;
    float* expSum = maxLogit + std::int64_t(a.batch) * a.qHeads * P;
    float* partial = expSum + std::int64_t(a.batch) * a.qHeads * P;
    const std::int64_t items = std::int64_t(a.batch) * H * P;
    constexpr int kChunk = 32;

    // Pass 1: one work item per (request, KV head, partition), as one CTA would be on the GPU.
    bool ok = parallelFor(items, threads, cancel, [&](std::int64_t it) {
        const int p = int(it % P);
        const int h = int((it / P) % H);
        const int r = int(it / (std::int64_t(P) * H));
        const std::int64_t len = a.contextLens[r];
        const std::int64_t t0 = std::int64_t(p) * kPartitionTokens;
        if (t0 >= len)
            return;
        const std::int64_t t1 = std::min(len, t0 + kPartitionTokens);
        std::vector<float> qs(std::size_t(gs) * D), acc(std::size_t(gs) * D, 0.0f);
        std::vector<float> m(gs, -INFINITY), l(gs, 0.0f), s(std::size_t(gs) * kChunk), row(D);
        std::vector<float> vrows(std::size_t(kChunk) * D);
        // Per-tensor / per-head K scale folds into the softmax scale (REFERENCE.md 4).
        const float qscale = a.smScale * a.kScale[h];
        for (int g = 0; g < gs; ++g)
            for (int c = 0; c < D; ++c)
                qs[std::size_t(g) * D + c] =
                    a.q[(std::int64_t(r) * a.qHeads + h * gs + g) * D + c] * qscale;
        const std::int32_t* table = a.blockTables + std::int64_t(r) * a.maxBlocksPerSeq;
        for (std::int64_t c0 = t0; c0 < t1; c0 += kChunk) {
            const int n = int(std::min<std::int64_t>(kChunk, t1 - c0));
            for (int i = 0; i < n; ++i) {
                const std::int64_t t = c0 + i;
                const std::uint8_t* ks = kSide(a.pool, L, table[t / B], h);
                cpuDequantRow(ks, L.k, int(t % B), row.data());
                cpuDequantRow(ks + vSideOffset(L), L.v, int(t % B),
                              vrows.data() + std::size_t(i) * D);
                for (int g = 0; g < gs; ++g)
                    s[std::size_t(g) * kChunk + i] =
                        dot(qs.data() + std::size_t(g) * D, row.data(), D);
            }
            for (int g = 0; g < gs; ++g) {
                float* sg = s.data() + std::size_t(g) * kChunk;
                float cm = m[g];
                for (int i = 0; i < n; ++i)
                    cm = std::max(cm, sg[i]);
                const float corr = std::exp(m[g] - cm); // exp(-inf) = 0 on the first chunk
                float* ag = acc.data() + std::size_t(g) * D;
                float sum = l[g] * corr;
                for (int c = 0; c < D; ++c)
                    ag[c] *= corr;
                for (int i = 0; i < n; ++i) {
                    const float pr = std::exp(sg[i] - cm);
                    sum += pr;
                    const float* vr = vrows.data() + std::size_t(i) * D;
                    for (int c = 0; c < D; ++c)
                        ag[c] += pr * vr[c];
                }
                m[g] = cm;
                l[g] = sum;
            }
        }
        for (int g = 0; g < gs; ++g) {
            const std::int64_t idx = (std::int64_t(r) * a.qHeads + h * gs + g) * P + p;
            maxLogit[idx] = m[g];
            expSum[idx] = l[g];
            std::copy(acc.begin() + std::ptrdiff_t(g) * D, acc.begin() + std::ptrdiff_t(g + 1) * D,
                      partial + idx * D);
        }
    });
    if (!ok)
        return "cancelled";
    // Pass 2: the split-K reduce (vLLM paged_attention_v2_reduce_kernel): rescale each
    // partition by exp(m_i - M) and divide by the global sum; apply v_scale once.
    ok = parallelFor(std::int64_t(a.batch) * a.qHeads, threads, cancel, [&](std::int64_t rq) {
        const int r = int(rq / a.qHeads);
        const int qh = int(rq % a.qHeads);
        const int h = qh / gs;
        const std::int64_t len = a.contextLens[r];
        float* o = a.out + rq * D;
        const int np = int((len + kPartitionTokens - 1) / kPartitionTokens);
        if (np == 0) {
            std::fill(o, o + D, 0.0f);
            return;
        }
        float M = -INFINITY;
        for (int p = 0; p < np; ++p)
            M = std::max(M, maxLogit[rq * P + p]);
        float Ls = 0.0f;
        std::vector<float> acc(D, 0.0f);
        for (int p = 0; p < np; ++p) {
            const float w = std::exp(maxLogit[rq * P + p] - M);
            Ls += expSum[rq * P + p] * w;
            const float* po = partial + (rq * P + p) * D;
            for (int c = 0; c < D; ++c)
                acc[c] += po[c] * w;
        }
        const float f = a.vScale[h] / Ls;
        for (int c = 0; c < D; ++c)
            o[c] = acc[c] * f;
    });
    return ok ? std::string() : std::string("cancelled");
}

} // namespace kvl::probe
