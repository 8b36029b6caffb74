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
double elementBound(const SideLayout& side, double x, double scale, double zero) {
    const double tiny = 1e-6 * std::fabs(x) + 1e-30;
    switch (side.codec) {
    case kCodecF32:
        return 0.0;
    case kCodecF16:
        return std::ldexp(std::fabs(x), -11) + std::ldexp(1.0, -25);
    case kCodecBF16:
        return std::ldexp(std::fabs(x), -8) + 1e-38;
    case kCodecE4M3:
    case kCodecE5M2: {
        const double codeUnits = std::fabs(x) / scale;
        const double formatMax = codecMax(side);
        const int mantissaBits = side.codec == kCodecE4M3 ? 3 : 2;
        const double subnormal =
            side.codec == kCodecE4M3 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -17);
        const double saturated = std::max(0.0, codeUnits - formatMax);
        return scale * (std::ldexp(std::min(codeUnits, formatMax), -(mantissaBits + 1)) +
                        subnormal + saturated) +
               tiny;
    }
    case kCodecIntSym: {
        const double qmax = codecMax(side);
        return scale * 0.5 + std::max(0.0, std::fabs(x) - qmax * scale) + tiny +
               1e-7 * scale * qmax;
    }
    case kCodecIntAsym: {
        const double high = zero + codecMax(side) * scale;
        const double outside = x < zero ? zero - x : (x > high ? x - high : 0.0);
        return scale * 0.5 + outside + tiny + 1e-6 * (std::fabs(zero) + std::fabs(high));
    }
    }
    return 0.0;
}

// Where a violation is: "token 12 head 3 K".
std::string place(std::int64_t token, int head, bool key) {
    return "token " + std::to_string(token) + " head " + std::to_string(head) + (key ? " K" : " V");
}

Error violation(std::string message) {
    return Error{ErrorCode::Internal, std::move(message)};
}

void markRange(std::vector<std::uint8_t>& mask, std::int64_t offset, std::int64_t count) {
    std::fill(mask.begin() + offset, mask.begin() + offset + count, std::uint8_t(1));
}

// The bytes the store may write for one token row of one side: its codes and its meta.
void markWritten(std::vector<std::uint8_t>& written, std::int64_t sideOffset,
                 const SideLayout& side, int row) {
    markRange(written, sideOffset + std::int64_t(row) * side.dataBytes, side.dataBytes);
    if (side.group > 0)
        markRange(written,
                  sideOffset + side.metaOffset +
                      std::int64_t(row) * side.numGroups * side.metaStride(),
                  std::int64_t(side.numGroups) * side.metaStride());
    if (side.tokenGroup > 0)
        markRange(written,
                  sideOffset + side.metaOffset +
                      std::int64_t(row / side.tokenGroup) * side.dim * side.metaStride(),
                  std::int64_t(side.dim) * side.metaStride());
}

// The FP64 ideal scale of the element group starting at `channel`: (max - min) / qmax for an
// asymmetric code, amax / max otherwise.
double idealGroupScale(const SideLayout& side, const std::uint16_t* input, int inputDtype,
                       int channel) {
    double low = inputToFloat(input[channel], inputDtype), high = low;
    for (int c = channel; c < std::min(side.dim, channel + side.group); ++c) {
        const double x = inputToFloat(input[c], inputDtype);
        low = std::min(low, x);
        high = std::max(high, x);
    }
    return side.codec == kCodecIntAsym ? (high - low) / codecMax(side)
                                       : std::max(std::fabs(low), std::fabs(high)) / codecMax(side);
}

struct SideError {
    double errorSquares = 0, referenceSquares = 0, maxAbs = 0;
    double relL2() const {
        return referenceSquares > 0 ? std::sqrt(errorSquares / referenceSquares) : 0;
    }
};

// One stored row (one token, one head, one side) against its input.
Status checkRow(const std::uint8_t* sideData, const SideLayout& side, int row,
                const std::uint16_t* input, int inputDtype, float outOfPageScale,
                const std::string& where, SideError& error) {
    for (int c = 0; c < side.dim; ++c) {
        const double x = inputToFloat(input[c], inputDtype);
        const GroupParams params = loadParams(sideData, side, row, c);
        double scale = params.scale;
        double stored = dequantElement(sideData, side, row, c);
        if (side.outOfPageScale()) {
            scale = outOfPageScale;
            stored *= outOfPageScale;
        }
        // The stored scale must be the FP64 ideal for its group (up to fp16 rounding).
        if (side.group > 0 && c % side.group == 0 && side.codec >= kCodecE4M3) {
            const double ideal = idealGroupScale(side, input, inputDtype, c);
            if (std::fabs(scale - ideal) > 1e-3 * ideal + 1e-30)
                return violation(where + " group scale " + std::to_string(scale) +
                                 " differs from the ideal " + std::to_string(ideal));
        }
        const double difference = std::fabs(stored - x);
        const double bound = elementBound(side, x, scale, params.zero);
        if (!(difference <= bound))
            return violation(where + " channel " + std::to_string(c) + ": stored " +
                             std::to_string(stored) + " for " + std::to_string(x) + " (error " +
                             std::to_string(difference) + " > bound " + std::to_string(bound) +
                             ")");
        error.errorSquares += difference * difference;
        error.referenceSquares += x * x;
        error.maxAbs = std::max(error.maxAbs, difference);
    }
    return {};
}

} // namespace

Status checkStore(const std::uint8_t* pool, std::int64_t poolBytes, std::uint8_t poison,
                  const PageLayout& layout, const std::int64_t* slots, std::int64_t numTokens,
                  const std::uint16_t* keysIn, const std::uint16_t* valuesIn, int inputDtype,
                  const float* kScale, const float* vScale, StoreCheckStats* stats) {
    const int heads = layout.kvHeads, dim = layout.headDim, blockSize = layout.blockSize;
    std::vector<std::uint8_t> written(std::size_t(poolBytes), 0);
    SideError keyError, valueError;
    for (std::int64_t t = 0; t < numTokens; ++t) {
        const std::int64_t slot = slots[t];
        if (slot < 0)
            continue;
        const std::int64_t block = slot / blockSize;
        const int row = int(slot % blockSize);
        for (int h = 0; h < heads; ++h) {
            const std::int64_t headOffset =
                block * layout.pageBytes + std::int64_t(h) * layout.headStride;
            for (const bool key : {true, false}) {
                const SideLayout& side = key ? layout.k : layout.v;
                const std::int64_t sideOffset = headOffset + (key ? 0 : vSideOffset(layout));
                const std::uint16_t* input =
                    (key ? keysIn : valuesIn) + (std::size_t(t) * heads + h) * dim;
                markWritten(written, sideOffset, side, row);
                const float* outScales = key ? kScale : vScale;
                if (Status ok = checkRow(pool + sideOffset, side, row, input, inputDtype,
                                         outScales ? outScales[h] : 1.0f, place(t, h, key),
                                         key ? keyError : valueError);
                    !ok)
                    return ok;
            }
        }
    }
    for (std::int64_t i = 0; i < poolBytes; ++i)
        if (!written[std::size_t(i)] && pool[i] != poison)
            return violation("byte " + std::to_string(i) +
                             " outside every written slot was modified");
    if (stats) {
        stats->kMaxAbsErr = keyError.maxAbs;
        stats->vMaxAbsErr = valueError.maxAbs;
        stats->kRelL2 = keyError.relL2();
        stats->vRelL2 = valueError.relL2();
    }
    return {};
}

template <class T>
static ErrorStats compareImpl(const T* got, const double* reference, std::size_t count) {
    ErrorStats stats;
    double errorSquares = 0, referenceSquares = 0;
    for (std::size_t i = 0; i < count; ++i) {
        const double value = double(got[i]);
        if (!std::isfinite(value)) {
            stats.finite = false;
            stats.relL2 = INFINITY;
            stats.maxAbs = INFINITY;
            return stats;
        }
        const double difference = value - reference[i];
        errorSquares += difference * difference;
        referenceSquares += reference[i] * reference[i];
        stats.maxAbs = std::max(stats.maxAbs, std::fabs(difference));
    }
    stats.relL2 =
        referenceSquares > 0 ? std::sqrt(errorSquares / referenceSquares) : std::sqrt(errorSquares);
    return stats;
}

ErrorStats compareOutputs(const float* got, const double* ref, std::size_t n) {
    return compareImpl(got, ref, n);
}
ErrorStats compareOutputs(const double* got, const double* ref, std::size_t n) {
    return compareImpl(got, ref, n);
}

double topKAgreement(const std::vector<std::vector<double>>& refLogits,
                     const std::vector<std::vector<double>>& testLogits, int k) {
    double total = 0;
    std::size_t rows = 0;
    std::vector<std::size_t> refTop, testTop;
    for (std::size_t i = 0; i < refLogits.size() && i < testLogits.size(); ++i) {
        const std::size_t tokens = std::min(refLogits[i].size(), testLogits[i].size());
        if (tokens == 0)
            continue;
        const std::size_t kept = std::min<std::size_t>(std::size_t(k), tokens);
        auto topIndices = [&](const std::vector<double>& logits, std::vector<std::size_t>& top) {
            top.resize(tokens);
            std::iota(top.begin(), top.end(), 0);
            std::partial_sort(
                top.begin(), top.begin() + std::ptrdiff_t(kept), top.end(),
                [&](std::size_t left, std::size_t right) { return logits[left] > logits[right]; });
            top.resize(kept);
            std::sort(top.begin(), top.end());
        };
        topIndices(refLogits[i], refTop);
        topIndices(testLogits[i], testTop);
        std::vector<std::size_t> both;
        std::set_intersection(refTop.begin(), refTop.end(), testTop.begin(), testTop.end(),
                              std::back_inserter(both));
        total += double(both.size()) / double(kept);
        ++rows;
    }
    return rows ? total / double(rows) : 1.0;
}

} // namespace kvl::probe
