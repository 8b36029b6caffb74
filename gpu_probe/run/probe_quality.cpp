// The last two phases of a probe run (probe_run.h): quality against FP64, and the account.
#include "gpu_probe/run/probe_run.h"

#include "gpu_probe/ops.h"
#include "gpu_probe/reference.h"

#include <algorithm>
#include <cmath>

namespace kvl::probe {

namespace {

// The compared requests' block tables and a host copy of their pages: the check's downloaded
// pool, or only their pages gathered into a compact copy with a remapped table (a 32 x 32K
// fp16 pool is 4 GiB per layer; only the compared requests come back to the host).
struct QualityPages {
    BatchAllocation allocation;
    std::vector<std::uint8_t> compact;
    const std::uint8_t* pool = nullptr;
};

Status gatherQualityPages(ProbeRun& run, int requests, QualityPages& pages) {
    const BatchAllocation& all = run.allocation;
    pages.allocation.contexts.assign(run.contexts.begin(), run.contexts.begin() + requests);
    pages.allocation.maxBlocksPerSeq = all.maxBlocksPerSeq;
    pages.allocation.blockTables.assign(all.blockTables.begin(),
                                        all.blockTables.begin() +
                                            std::ptrdiff_t(requests) * all.maxBlocksPerSeq);
    if (!run.hostPool.empty()) {
        pages.pool = run.hostPool.data();
        return {};
    }
    const std::size_t pageBytes = std::size_t(run.layout.pageBytes);
    pages.compact.reserve(std::size_t(run.shape.qualityPages) * pageBytes);
    std::vector<std::int32_t> remap(std::size_t(run.shape.pages), -1);
    std::int32_t next = 0;
    for (auto& block : pages.allocation.blockTables) {
        if (block < 0)
            continue;
        if (remap[std::size_t(block)] < 0) {
            if (run.cancelled())
                return cancelledError();
            remap[std::size_t(block)] = next++;
            pages.compact.resize(std::size_t(next) * pageBytes);
            if (Status got = run.backend->download(
                    pages.compact.data() + std::size_t(next - 1) * pageBytes,
                    run.device.pool.as<std::uint8_t>() + std::int64_t(block) * run.layout.pageBytes,
                    pageBytes);
                !got)
                return got;
        }
        block = remap[std::size_t(block)];
    }
    pages.pool = pages.compact.data();
    return {};
}

// Per-element storage error of the dequantized pages against the stored inputs.
struct ElementError {
    double errorSquares = 0, referenceSquares = 0, maxAbs = 0;
    void add(double stored, double input) {
        const double error = stored - input;
        errorSquares += error * error;
        referenceSquares += input * input;
        maxAbs = std::max(maxAbs, std::fabs(error));
    }
    double relL2() const {
        return referenceSquares > 0 ? std::sqrt(errorSquares / referenceSquares) : 0;
    }
};

// The compared requests read back out of the pages, dequantized, with their storage error.
Status dequantizeRequests(ProbeRun& run, const QualityPages& pages,
                          std::vector<std::vector<float>>& keys,
                          std::vector<std::vector<float>>& values) {
    const std::size_t requests = pages.allocation.contexts.size();
    keys.resize(requests);
    values.resize(requests);
    ElementError keyError, valueError;
    for (std::size_t r = 0; r < requests; ++r) {
        if (Status done = dequantizeRequest(pages.pool, run.layout, pages.allocation, int(r),
                                            run.host.keyScale.data(), run.host.valueScale.data(),
                                            keys[r], values[r], run.cancel);
            !done)
            return done;
        for (std::size_t i = 0; i < keys[r].size(); ++i) {
            keyError.add(keys[r][i], run.host.keys[i]);
            valueError.add(values[r][i], run.host.values[i]);
        }
    }
    ProbeResult& result = run.result;
    result.kRelL2 = keyError.relL2();
    result.vRelL2 = valueError.relL2();
    result.kMaxAbs = keyError.maxAbs;
    result.vMaxAbs = valueError.maxAbs;
    return run.cancelled() ? Status(cancelledError()) : Status();
}

// The kernel's output against FP64 attention over the unquantized K/V (what quantization
// costs) and over the same dequantized pages (the kernel's own error).
Status compareWithReference(ProbeRun& run, int requests,
                            const std::vector<std::vector<float>>& keys,
                            const std::vector<std::vector<float>>& values) {
    const auto count = static_cast<std::size_t>(requests);
    std::vector<RequestKv> unquantized(count), dequantized(count);
    for (std::size_t r = 0; r < std::size_t(requests); ++r) {
        unquantized[r] = RequestKv{run.host.keys.data(), run.host.values.data(), run.contexts[r]};
        dequantized[r] = RequestKv{keys[r].data(), values[r].data(), run.contexts[r]};
    }
    const int qHeads = run.shape.qHeads, heads = run.layout.kvHeads, dim = run.layout.headDim;
    const double smScale = 1.0 / std::sqrt(double(dim));
    std::vector<std::vector<double>> referenceLogits, dequantizedLogits;
    run.report(75, "FP64 reference on the unquantized K/V");
    auto reference = referenceAttention(run.host.queries.data(), requests, qHeads, heads, dim,
                                        unquantized, smScale, &referenceLogits, run.cancel);
    if (!reference)
        return reference.error();
    run.report(82, "FP64 reference on the dequantized pages");
    auto referenceDequantized =
        referenceAttention(run.host.queries.data(), requests, qHeads, heads, dim, dequantized,
                           smScale, &dequantizedLogits, run.cancel);
    if (!referenceDequantized)
        return referenceDequantized.error();
    const std::size_t elems = std::size_t(requests) * std::size_t(qHeads) * std::size_t(dim);
    const ErrorStats quantization =
        compareOutputs(run.attentionOutput.data(), reference->data(), elems);
    const ErrorStats kernel =
        compareOutputs(run.attentionOutput.data(), referenceDequantized->data(), elems);
    ProbeResult& result = run.result;
    result.relL2 = quantization.relL2;
    result.maxAbs = quantization.maxAbs;
    result.kernelVsRefRelL2 = kernel.relL2;
    result.top8 = topKAgreement(referenceLogits, dequantizedLogits, 8);
    result.qualityMeasured = true;
    return {};
}

} // namespace

Status measureQualityRun(ProbeRun& run) {
    if (!run.plan.measureQuality)
        return {};
    run.report(70, "dequantizing the pages");
    const int requests = run.shape.qualityRequests;
    QualityPages pages;
    if (Status gathered = gatherQualityPages(run, requests, pages); !gathered)
        return gathered;
    std::vector<std::vector<float>> keys, values;
    if (Status done = dequantizeRequests(run, pages, keys, values); !done)
        return done;
    return compareWithReference(run, requests, keys, values);
}

Status accountRun(ProbeRun& run) {
    run.report(88, "accounting");
    ProbeResult& result = run.result;
    const Backend& backend = *run.backend;
    result.devicePoolBytes = run.poolDeviceBytes;
    result.deviceAccountKind = backend.deviceAccountKind();
    result.allocatorGranularity = backend.granularity();
    const std::int64_t granularity = result.allocatorGranularity;
    result.allocatedPoolBytes =
        granularity > 0 ? (result.poolBytes + granularity - 1) / granularity * granularity
                        : result.poolBytes;
    if (result.predictedPoolBytes > 0)
        result.memoryErrorPct = 100.0 *
                                double(result.allocatedPoolBytes - result.predictedPoolBytes) /
                                double(result.predictedPoolBytes);
    if (run.plan.keepPool)
        result.poolSnapshot = std::move(run.hostPool);
    if (!run.plan.measureSpeed)
        return {};
    const std::int64_t rowBytes = std::int64_t(run.layout.kvHeads) * run.layout.headDim * 2;
    const std::int64_t bytesPerToken =
        std::int64_t(run.layout.kvHeads) *
        (run.layout.keyBytesPerToken + run.layout.valueBytesPerToken);
    const std::int64_t uniqueTokens = run.stream.uniqueTokens;
    result.copyGBs = 2.0 * double(result.poolBytes) / (run.copyMs * 1e6); // read + write
    result.readGBs = run.readGBs;
    result.storeMs = run.storeMs;
    // The store reads K and V input rows and writes their pages.
    result.storeBytes = uniqueTokens * rowBytes * 2 + uniqueTokens * bytesPerToken;
    result.storeGBs = double(result.storeBytes) / (run.storeMs * 1e6);
    result.attentionMs = run.attentionMs;
    result.attentionBytes = uniqueTokens * bytesPerToken; // shared prefix pages counted once
    result.attentionGBs = double(result.attentionBytes) / (run.attentionMs * 1e6);
    result.tokensPerS = double(run.batch()) / (run.attentionMs * 1e-3);
    result.storePctOfCopy = result.copyGBs > 0 ? 100.0 * result.storeGBs / result.copyGBs : 0;
    result.attentionPctOfCopy =
        result.copyGBs > 0 ? 100.0 * result.attentionGBs / result.copyGBs : 0;
    result.speedMeasured = true;
    if (result.poolBytes < (std::int64_t(64) << 20))
        result.notes.push_back(
            "pool of " + std::to_string(result.poolBytes >> 20) +
            " MiB may be partly cache-resident: bandwidth figures are optimistic");
    return {};
}

} // namespace kvl::probe
