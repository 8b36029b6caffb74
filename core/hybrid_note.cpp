#include "core/hybrid_note.h"

#include "core/saturating.h"

#include <algorithm>
#include <sstream>

namespace kvl::core {

namespace {

std::string fixed2(double v) {
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(2);
    o << v;
    return o.str();
}

} // namespace

std::vector<std::string> hybridLadderNotes(const Scenario& s, const LedgerResult& r,
                                           const std::vector<LadderStep>& ladder,
                                           UnitSystem units) {
    std::vector<std::string> out;
    const int sliding = s.model.countLayers(LayerKind::Sliding);
    const int chunked = s.model.countLayers(LayerKind::Chunked);
    if (sliding + chunked == 0)
        return out;
    const int layers = s.model.numLayers();
    std::int64_t window = 0, chunk = 0;
    for (const auto& l : s.model.layers) {
        if (l.kind == LayerKind::Sliding && window == 0)
            window = l.window;
        if (l.kind == LayerKind::Chunked && chunk == 0)
            chunk = l.window;
    }
    std::string what;
    if (sliding > 0)
        what = std::to_string(sliding) + " of " + std::to_string(layers) +
               " layers keep a sliding window of " + withThousands(window) + " tokens";
    if (chunked > 0)
        what += (what.empty() ? "" : " and ") + std::to_string(chunked) + " of " +
                std::to_string(layers) + " attend within chunks of " + withThousands(chunk) +
                " tokens";
    if (r.hybridKvCacheManagerDisabled) {
        out.push_back("Hybrid model: " + what +
                      ", but vLLM's hybrid KV cache manager is off here, so they are counted as "
                      "full attention and hold the whole context.");
        return out;
    }
    const std::int64_t product = satMul(r.kvBytesPerTokenPerGpu, r.contextTokens);
    out.push_back("Hybrid model: " + what +
                  "; those hold at most their window, not the whole context, so KV per token x "
                  "context (" +
                  formatBytes(r.kvBytesPerTokenPerGpu, units) + " x " +
                  withThousands(r.contextTokens) + " = " + formatBytes(product, units) +
                  " per GPU) is not what a request holds (" +
                  formatBytes(r.kvBytesPerRequestPerGpu, units) + " per GPU).");
    if (r.blockSize > 0 && r.inFlightTokens > 0) {
        const std::int64_t b = r.blockSize;
        std::string blocks;
        if (sliding > 0) {
            const std::int64_t n =
                ceilDiv(std::min(window - 1 + r.inFlightTokens, r.maxModelLen), b) + 1;
            blocks = "each sliding-window layer " + withThousands(n) + " blocks of " +
                     withThousands(b) +
                     " tokens (cdiv(min(window - 1 + in-flight, max_model_len), block) + 1, "
                     "vllm/v1/kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes)";
        }
        if (chunked > 0) {
            const std::int64_t n = ceilDiv(std::min(chunk + r.inFlightTokens, r.maxModelLen), b);
            blocks += (blocks.empty() ? "" : ", ") + std::string("each chunked layer ") +
                      withThousands(n) +
                      " blocks (cdiv(min(chunk + in-flight, max_model_len), block), "
                      "ChunkedLocalAttentionSpec)";
        }
        out.push_back("With paging vLLM admits a request only when the pool can give it its "
                      "window plus the " +
                      withThousands(r.inFlightTokens) +
                      " tokens one scheduler step may have in flight: " + blocks +
                      ", whatever the context.");
    }
    // The "+paging" step against the applied step before it.
    const LadderStep* before = nullptr;
    for (const auto& st : ladder) {
        if (st.id == LadderStepId::Paging && st.applied && before) {
            const LedgerResult& a = before->result;
            const LedgerResult& p = st.result;
            const bool lowerConcurrency = p.maxConcurrency < a.maxConcurrency;
            const bool lowerRequests = p.maxRequestsAtContext < a.maxRequestsAtContext;
            if (lowerConcurrency || lowerRequests) {
                std::string figures;
                if (lowerConcurrency)
                    figures = "vLLM's maximum concurrency from " + fixed2(a.maxConcurrency) +
                              "x to " + fixed2(p.maxConcurrency) + "x";
                if (lowerRequests)
                    figures += (figures.empty() ? "" : " and ") +
                               std::string("the requests that fit from ") +
                               withThousands(a.maxRequestsAtContext) + " to " +
                               withThousands(p.maxRequestsAtContext);
                out.push_back("Why \"" + st.label + "\" lowers " + figures +
                              ": the contiguous step before it reserves each windowed layer's "
                              "window only, while the paged one also holds those in-flight "
                              "blocks per request in every windowed layer; a dense model has no "
                              "such term and paging only removes its max-length reservation.");
            }
        }
        if (st.applied)
            before = &st;
    }
    return out;
}

} // namespace kvl::core
