#include "gpu_probe/reference.h"

#include "gpu_probe/ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kvl::probe {

double codecMax(const SideLayout& side) {
    switch (side.codec) {
    case kCodecE4M3:
        return kE4m3Max;
    case kCodecE5M2:
        return kE5m2Max;
    case kCodecIntSym:
    case kCodecIntAsym:
        return double(intQmax(side.bits, side.codec));
    default:
        return INFINITY;
    }
}

Result<std::vector<double>> referenceAttention(const float* q, int batch, int qHeads, int kvHeads,
                                               int headDim, const std::vector<RequestKv>& kv,
                                               double smScale,
                                               std::vector<std::vector<double>>* logits,
                                               const std::atomic<bool>* cancel) {
    std::vector<double> out(std::size_t(batch) * qHeads * headDim, 0.0);
    const int groupSize = qHeads / kvHeads;
    if (logits)
        logits->assign(std::size_t(batch) * qHeads, {});
    // Rows are independent: spread them over the threads (plain double loops inside).
    Status done = parallelFor(std::int64_t(batch) * qHeads, 0, cancel, [&](std::int64_t rq) {
        const int request = int(rq / qHeads), qHead = int(rq % qHeads);
        const RequestKv& x = kv[std::size_t(request)];
        const int kvHead = qHead / groupSize;
        const float* query = q + std::size_t(rq) * headDim;
        std::vector<double> scores(std::size_t(x.tokens), 0.0);
        double maxScore = -INFINITY;
        for (std::int64_t t = 0; t < x.tokens; ++t) {
            const float* keyRow = x.k + (std::size_t(t) * kvHeads + kvHead) * headDim;
            double dotProduct = 0;
            for (int c = 0; c < headDim; ++c)
                dotProduct += double(query[c]) * double(keyRow[c]);
            scores[std::size_t(t)] = dotProduct * smScale;
            maxScore = std::max(maxScore, scores[std::size_t(t)]);
        }
        double sum = 0;
        double* outRow = out.data() + std::size_t(rq) * headDim;
        for (std::int64_t t = 0; t < x.tokens; ++t) {
            const double weight = std::exp(scores[std::size_t(t)] - maxScore);
            sum += weight;
            const float* valueRow = x.v + (std::size_t(t) * kvHeads + kvHead) * headDim;
            for (int c = 0; c < headDim; ++c)
                outRow[c] += weight * double(valueRow[c]);
        }
        if (sum > 0)
            for (int c = 0; c < headDim; ++c)
                outRow[c] /= sum;
        if (logits)
            (*logits)[std::size_t(rq)] = std::move(scores);
    });
    if (!done)
        return done.error();
    return out;
}

Status dequantizeRequest(const std::uint8_t* pool, const PageLayout& layout,
                         const BatchAllocation& allocation, int request, const float* kScale,
                         const float* vScale, std::vector<float>& keys, std::vector<float>& values,
                         const std::atomic<bool>* cancel) {
    const std::int64_t tokens = allocation.contexts[std::size_t(request)];
    const int heads = layout.kvHeads, dim = layout.headDim, blockSize = layout.blockSize;
    keys.assign(std::size_t(tokens) * heads * dim, 0.0f);
    values.assign(std::size_t(tokens) * heads * dim, 0.0f);
    return parallelFor(tokens, 0, cancel, [&](std::int64_t t) {
        for (int h = 0; h < heads; ++h) {
            const std::uint8_t* keySide =
                kSide(pool, layout, allocation.block(request, t, blockSize), h);
            const std::uint8_t* valueSide = keySide + vSideOffset(layout);
            const float keyFactor = layout.k.outOfPageScale() ? kScale[h] : 1.0f;
            const float valueFactor = layout.v.outOfPageScale() ? vScale[h] : 1.0f;
            for (int c = 0; c < dim; ++c) {
                keys[(std::size_t(t) * heads + h) * dim + c] = float(
                    double(dequantElement(keySide, layout.k, int(t % blockSize), c)) * keyFactor);
                values[(std::size_t(t) * heads + h) * dim + c] =
                    float(double(dequantElement(valueSide, layout.v, int(t % blockSize), c)) *
                          valueFactor);
            }
        }
    });
}

namespace {

// Rounding bound of one element x given its (stored) scale and zero, in double.
double elementBound(const SideLayout& s, double x, double scale, double zero) {
    const double tiny = 1e-6 * std::fabs(x) + 1e-30;
    switch (s.codec) {
    case kCodecF32:
        return 0.0;
    case kCodecF16:
        return std::ldexp(std::fabs(x), -11) + std::ldexp(1.0, -25);
    case kCodecBF16:
        return std::ldexp(std::fabs(x), -8) + 1e-38;
    case kCodecE4M3:
    case kCodecE5M2: {
        const double y = std::fabs(x) / scale; // in code units
        const double mx = codecMax(s);
        const int mant = s.codec == kCodecE4M3 ? 3 : 2;
        const double sub = s.codec == kCodecE4M3 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -17);
        const double sat = std::max(0.0, y - mx);
        return scale * (std::ldexp(std::min(y, mx), -(mant + 1)) + sub + sat) + tiny;
    }
    case kCodecIntSym: {
        const double qmax = codecMax(s);
        return scale * 0.5 + std::max(0.0, std::fabs(x) - qmax * scale) + tiny +
               1e-7 * scale * qmax;
    }
    case kCodecIntAsym: {
        const double hi = zero + codecMax(s) * scale;
        const double outside = x < zero ? zero - x : (x > hi ? x - hi : 0.0);
        return scale * 0.5 + outside + tiny + 1e-6 * (std::fabs(zero) + std::fabs(hi));
    }
    }
    return 0.0;
}

Error violation(std::string message) {
    return Error{ErrorCode::Internal, std::move(message)};
}

void markRange(std::vector<std::uint8_t>& mask, std::int64_t off, std::int64_t n) {
    std::fill(mask.begin() + off, mask.begin() + off + n, std::uint8_t(1));
}

} // namespace

Status checkStore(const std::uint8_t* pool, std::int64_t poolBytes, std::uint8_t poison,
                  const PageLayout& L, const std::int64_t* slots, std::int64_t numTokens,
                  const std::uint16_t* kin, const std::uint16_t* vin, int inputDtype,
                  const float* kScale, const float* vScale, StoreCheckStats* stats) {
    const int H = L.kvHeads, D = L.headDim, B = L.blockSize;
    std::vector<std::uint8_t> written(std::size_t(poolBytes), 0);
    double kErr2 = 0, kRef2 = 0, vErr2 = 0, vRef2 = 0, kMax = 0, vMax = 0;
    const int G = L.k.tokenGroup;
    for (std::int64_t t = 0; t < numTokens; ++t) {
        const std::int64_t slot = slots[t];
        if (slot < 0)
            continue;
        const std::int64_t blk = slot / B;
        const int off = int(slot % B);
        for (int h = 0; h < H; ++h) {
            const std::int64_t headOff = blk * L.pageBytes + std::int64_t(h) * L.headStride;
            for (int side = 0; side < 2; ++side) {
                const SideLayout& s = side == 0 ? L.k : L.v;
                const std::int64_t sideOff = headOff + (side == 0 ? 0 : vSideOffset(L));
                const std::uint8_t* sp = pool + sideOff;
                const std::uint16_t* in = (side == 0 ? kin : vin) + (std::size_t(t) * H + h) * D;
                markRange(written, sideOff + std::int64_t(off) * s.dataBytes, s.dataBytes);
                if (s.group > 0)
                    markRange(written,
                              sideOff + s.metaOffset +
                                  std::int64_t(off) * s.numGroups * s.metaStride(),
                              std::int64_t(s.numGroups) * s.metaStride());
                if (s.tokenGroup > 0)
                    markRange(written,
                              sideOff + s.metaOffset + std::int64_t(off / G) * D * s.metaStride(),
                              std::int64_t(D) * s.metaStride());
                const float outScale =
                    side == 0 ? (kScale ? kScale[h] : 1.f) : (vScale ? vScale[h] : 1.f);
                for (int c = 0; c < D; ++c) {
                    const double x = inputToFloat(in[c], inputDtype);
                    const GroupParams p = loadParams(sp, s, off, c);
                    double scale = p.scale, zero = p.zero;
                    double got = dequantElement(sp, s, off, c);
                    if (s.outOfPageScale()) {
                        scale = outScale;
                        got *= outScale;
                    }
                    // The stored scale must be the FP64 ideal for its group (up to fp16 rounding).
                    if (s.group > 0 && c % s.group == 0 && s.codec >= kCodecE4M3) {
                        double mn = x, mx = x;
                        for (int j = c; j < std::min(D, c + s.group); ++j) {
                            const double y = inputToFloat(in[j], inputDtype);
                            mn = std::min(mn, y);
                            mx = std::max(mx, y);
                        }
                        const double ideal =
                            s.codec == kCodecIntAsym
                                ? (mx - mn) / codecMax(s)
                                : std::max(std::fabs(mn), std::fabs(mx)) / codecMax(s);
                        if (std::fabs(scale - ideal) > 1e-3 * ideal + 1e-30)
                            return violation("token " + std::to_string(t) + " head " +
                                             std::to_string(h) + (side == 0 ? " K" : " V") +
                                             " group scale " + std::to_string(scale) +
                                             " differs from the ideal " + std::to_string(ideal));
                    }
                    const double err = std::fabs(got - x);
                    const double bound = elementBound(s, x, scale, zero);
                    if (!(err <= bound))
                        return violation("token " + std::to_string(t) + " head " +
                                         std::to_string(h) + (side == 0 ? " K" : " V") +
                                         " channel " + std::to_string(c) + ": stored " +
                                         std::to_string(got) + " for " + std::to_string(x) +
                                         " (error " + std::to_string(err) + " > bound " +
                                         std::to_string(bound) + ")");
                    if (side == 0) {
                        kErr2 += err * err;
                        kRef2 += x * x;
                        kMax = std::max(kMax, err);
                    } else {
                        vErr2 += err * err;
                        vRef2 += x * x;
                        vMax = std::max(vMax, err);
                    }
                }
            }
        }
    }
    for (std::int64_t i = 0; i < poolBytes; ++i)
        if (!written[std::size_t(i)] && pool[i] != poison)
            return violation("byte " + std::to_string(i) +
                             " outside every written slot was modified");
    if (stats) {
        stats->kMaxAbsErr = kMax;
        stats->vMaxAbsErr = vMax;
        stats->kRelL2 = kRef2 > 0 ? std::sqrt(kErr2 / kRef2) : 0;
        stats->vRelL2 = vRef2 > 0 ? std::sqrt(vErr2 / vRef2) : 0;
    }
    return {};
}

template <class T> static ErrorStats compareImpl(const T* got, const double* ref, std::size_t n) {
    ErrorStats e;
    double err2 = 0, ref2 = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double g = double(got[i]);
        if (!std::isfinite(g)) {
            e.finite = false;
            e.relL2 = INFINITY;
            e.maxAbs = INFINITY;
            return e;
        }
        const double d = g - ref[i];
        err2 += d * d;
        ref2 += ref[i] * ref[i];
        e.maxAbs = std::max(e.maxAbs, std::fabs(d));
    }
    e.relL2 = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    return e;
}

ErrorStats compareOutputs(const float* got, const double* ref, std::size_t n) {
    return compareImpl(got, ref, n);
}
ErrorStats compareOutputs(const double* got, const double* ref, std::size_t n) {
    return compareImpl(got, ref, n);
}

double topKAgreement(const std::vector<std::vector<double>>& a,
                     const std::vector<std::vector<double>>& b, int k) {
    double total = 0;
    std::size_t rows = 0;
    std::vector<std::size_t> ia, ib;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        const std::size_t n = std::min(a[i].size(), b[i].size());
        if (n == 0)
            continue;
        const std::size_t kk = std::min<std::size_t>(std::size_t(k), n);
        auto top = [&](const std::vector<double>& x, std::vector<std::size_t>& idx) {
            idx.resize(n);
            std::iota(idx.begin(), idx.end(), 0);
            std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(kk), idx.end(),
                              [&](std::size_t p, std::size_t q) { return x[p] > x[q]; });
            idx.resize(kk);
            std::sort(idx.begin(), idx.end());
        };
        top(a[i], ia);
        top(b[i], ib);
        std::vector<std::size_t> both;
        std::set_intersection(ia.begin(), ia.end(), ib.begin(), ib.end(), std::back_inserter(both));
        total += double(both.size()) / double(kk);
        ++rows;
    }
    return rows ? total / double(rows) : 1.0;
}

} // namespace kvl::probe
