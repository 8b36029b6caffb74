#include "gpu_probe/ops.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

namespace kvl::probe {

namespace {

int codecOf(const core::KvFormat& format) {
    switch (format.dtype) {
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
        return format.hasZeroPoint ? kCodecIntAsym : kCodecIntSym;
    }
}

std::int64_t ceilDiv(std::int64_t numerator, std::int64_t denominator) {
    return (numerator + denominator - 1) / denominator;
}

std::atomic<bool> g_failThreadStarts{false};

Error badInput(std::string message) {
    return Error{ErrorCode::BadInput, std::move(message)};
}

bool isKivi(const core::KvFormat& format) {
    return format.granularity == core::Granularity::KPerChannelVPerToken && format.groupSize > 0;
}

// One side (K or V) of a head's page slice: codes first, then scales / zeros, padded to core's
// budget for that side.
Result<SideLayout> sideLayout(const core::KvFormat& format, const PageLayout& page, bool isKey) {
    if (format.dtype == core::KvDtype::Fp4E2M1 || format.granularity == core::Granularity::DsMla ||
        format.granularity == core::Granularity::TurboQuant)
        return makeError(ErrorCode::Unsupported,
                         "the probe does not implement " + core::formatLabel(format) + " yet");
    SideLayout side;
    side.codec = codecOf(format);
    side.bits = core::bitsPerElement(format.dtype);
    side.dim = page.headDim;
    side.dataBytes = int(ceilDiv(std::int64_t(page.headDim) * side.bits, 8));
    side.scaleBytes = core::scaleBytes(format.scaleType);
    side.hasZero = format.hasZeroPoint ? 1 : 0;
    switch (format.granularity) {
    case core::Granularity::None:
    case core::Granularity::PerTensor:
    case core::Granularity::PerHead:
        side.hasZero = 0;
        break;
    case core::Granularity::PerTokenHead:
        side.group = page.headDim;
        break;
    case core::Granularity::PerGroup:
        side.group = format.groupSize;
        break;
    case core::Granularity::KPerChannelVPerToken:
        if (isKey)
            side.tokenGroup = format.groupSize;
        else
            side.group = std::min(format.groupSize, page.headDim);
        break;
    case core::Granularity::DsMla: // refused above
    case core::Granularity::TurboQuant:
        break;
    }
    if (side.group > 0)
        side.numGroups = int(ceilDiv(page.headDim, side.group));
    side.metaOffset = page.blockSize * side.dataBytes;
    std::int64_t metaBytes = 0;
    if (side.group > 0)
        metaBytes = std::int64_t(page.blockSize) * side.numGroups * side.metaStride();
    else if (side.tokenGroup > 0)
        metaBytes =
            std::int64_t(page.blockSize / side.tokenGroup) * page.headDim * side.metaStride();
    const std::int64_t budget =
        page.blockSize * (isKey ? page.keyBytesPerToken : page.valueBytesPerToken);
    if (side.metaOffset + metaBytes > budget)
        return Error{ErrorCode::Internal,
                     std::string(isKey ? "key" : "value") + " page layout needs " +
                         std::to_string(side.metaOffset + metaBytes) +
                         " bytes per head but core's budget is " + std::to_string(budget)};
    side.sideBytes = int(budget);
    return side;
}

// What an exception caught on a worker thread says.
constexpr ExceptionWords kWorkerThreadWords{
    "out of host memory in a worker thread",
    "a worker thread failed: ", "a worker thread failed with an unknown exception"};

} // namespace

Error cancelledError() {
    return Error{ErrorCode::Cancelled, "cancelled"};
}

bool cancelRequested(const std::atomic<bool>* cancel) {
    return cancel && cancel->load(std::memory_order_relaxed);
}

Error errorFromException(const std::exception_ptr& failure, const ExceptionWords& words) {
    try {
        std::rethrow_exception(failure);
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::OutOfMemory, words.outOfMemory};
    } catch (const std::exception& e) {
        return Error{ErrorCode::Internal, std::string(words.failed) + e.what()};
    } catch (...) {
        return Error{ErrorCode::Internal, words.unknown};
    }
}

int blockSizeFor(const core::KvFormat& format, int requested) {
    if (!isKivi(format) || requested < 1)
        return requested;
    const int group = format.groupSize;
    return int(ceilDiv(requested, group) * group);
}

Result<PageLayout> makeLayout(const core::KvFormat& format, int headDim, int kvHeads,
                              int blockSize) {
    if (headDim < 1 || headDim > 1024)
        return badInput("head_dim must be between 1 and 1024, got " + std::to_string(headDim));
    if (kvHeads < 1 || kvHeads > 1024)
        return badInput("kv_heads must be between 1 and 1024, got " + std::to_string(kvHeads));
    if (blockSize < 1 || blockSize > 4096)
        return badInput("block size must be between 1 and 4096, got " + std::to_string(blockSize));
    if (auto err = core::validate(format, headDim))
        return badInput("KV format: " + *err);
    if (codecOf(format) == kCodecIntAsym && (format.granularity == core::Granularity::PerTensor ||
                                             format.granularity == core::Granularity::PerHead))
        return badInput(std::string("asymmetric ") + std::string(core::dtypeName(format.dtype)) +
                        " needs an in-page zero: use per-token-head, per-group or kivi");
    if (blockSizeFor(format, blockSize) != blockSize)
        return badInput("block size " + std::to_string(blockSize) +
                        " must be a multiple of the KIVI group size " +
                        std::to_string(format.groupSize) +
                        " (keys are quantized per channel over G tokens, which must share a page)");

    PageLayout layout;
    layout.headDim = headDim;
    layout.kvHeads = kvHeads;
    layout.blockSize = blockSize;
    layout.keyBytesPerToken = core::keyBytesPerToken(format, headDim);
    layout.valueBytesPerToken = core::valueBytesPerToken(format, headDim);
    layout.headStride =
        std::int64_t(blockSize) * (layout.keyBytesPerToken + layout.valueBytesPerToken);
    layout.pageBytes = std::int64_t(kvHeads) * layout.headStride;
    auto keySide = sideLayout(format, layout, true);
    if (!keySide)
        return keySide.error();
    auto valueSide = sideLayout(format, layout, false);
    if (!valueSide)
        return valueSide.error();
    layout.k = *keySide;
    layout.v = *valueSide;
    return layout;
}

std::int64_t attentionScratchFloats(int batch, int qHeads, int maxPartitions, int headDim) {
    return std::int64_t(batch) * qHeads * maxPartitions * (2 + headDim);
}

int defaultThreads() {
    const unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : int(std::min(n, 64u));
}

namespace testing {
void failThreadStarts(bool on) {
    g_failThreadStarts = on;
}
} // namespace testing

Status parallelFor(std::int64_t n, int threads, const std::atomic<bool>* cancel,
                   const std::function<void(std::int64_t)>& fn) {
    if (threads <= 0)
        threads = defaultThreads();
    std::atomic<std::int64_t> next{0};
    std::atomic<bool> stop{false}, cancelled{false};
    std::mutex failureMutex;
    std::exception_ptr failure;
    auto worker = [&]() noexcept {
        try {
            while (!stop.load(std::memory_order_relaxed)) {
                if (cancelRequested(cancel)) {
                    cancelled = true;
                    stop = true;
                    return;
                }
                const std::int64_t i = next.fetch_add(1);
                if (i >= n)
                    return;
                fn(i);
            }
        } catch (...) {
            const std::lock_guard<std::mutex> lock(failureMutex);
            if (!failure)
                failure = std::current_exception();
            stop = true;
        }
    };
    const int wanted = int(std::min<std::int64_t>(threads, std::max<std::int64_t>(n, 1)));
    std::vector<std::thread> pool;
    Status started;
    try {
        pool.reserve(std::size_t(wanted));
        for (int i = 1; i < wanted; ++i) {
            if (g_failThreadStarts.load())
                throw std::system_error(
                    std::make_error_code(std::errc::resource_unavailable_try_again));
            pool.emplace_back(worker);
        }
    } catch (const std::exception& e) {
        stop = true;
        started = Error{ErrorCode::OutOfMemory, "could not start worker thread " +
                                                    std::to_string(pool.size() + 2) + " of " +
                                                    std::to_string(wanted) + ": " + e.what()};
    }
    if (started)
        worker();
    for (auto& t : pool)
        t.join();
    if (!started)
        return started;
    if (failure)
        return errorFromException(failure, kWorkerThreadWords);
    if (cancelled && next.load() < n)
        return cancelledError();
    return {};
}

Status validateStore(const StoreArgs& args, const std::int64_t* slots) {
    const PageLayout& layout = args.layout;
    if (!args.k || !args.v || !slots || !args.pool)
        return badInput("store: null buffer");
    if (args.numTokens < 0)
        return badInput("store: negative token count");
    if (args.inputDtype != kInputF16 && args.inputDtype != kInputBF16)
        return badInput("store: input must be fp16 or bf16");
    if (layout.k.outOfPageScale() && (!args.kScale || !args.vScale))
        return badInput("store: this format needs k_scale / v_scale");
    const std::int64_t capacity = args.numBlocks * layout.blockSize;
    const int tokenGroup = layout.k.tokenGroup;
    for (std::int64_t t = 0; t < args.numTokens; ++t) {
        const std::int64_t slot = slots[t];
        if (slot >= capacity)
            return badInput("store: slot " + std::to_string(slot) + " of token " +
                            std::to_string(t) + " is outside the pool (" +
                            std::to_string(capacity) + " slots)");
        if (slot < 0 || tokenGroup == 0)
            continue;
        const bool continues = t > 0 && slots[t - 1] == slot - 1 && slot % tokenGroup != 0;
        if (!continues && slot % tokenGroup != 0)
            return badInput("store: KIVI keys are quantized per channel over groups of " +
                            std::to_string(tokenGroup) + " tokens; token " + std::to_string(t) +
                            " starts a run mid-group (slot " + std::to_string(slot) +
                            "): write whole groups in consecutive slots");
    }
    return {};
}

Status validateAttention(const AttentionArgs& args, std::int64_t numBlocks,
                         const std::int32_t* tables, const std::int32_t* lens) {
    const PageLayout& layout = args.layout;
    if (!args.q || !args.pool || !args.out || !tables || !lens || !args.kScale || !args.vScale)
        return badInput("attention: null buffer");
    if (args.batch < 1)
        return badInput("attention: batch must be at least 1");
    if (args.qHeads < 1 || args.qHeads % layout.kvHeads != 0)
        return badInput("attention: q heads (" + std::to_string(args.qHeads) +
                        ") must be a multiple of KV heads (" + std::to_string(layout.kvHeads) +
                        ")");
    if (args.qHeads / layout.kvHeads > 64)
        return badInput("attention: at most 64 q heads per KV head");
    for (int r = 0; r < args.batch; ++r) {
        const std::int64_t len = lens[r];
        if (len < 0 || len > std::int64_t(args.maxBlocksPerSeq) * layout.blockSize)
            return badInput("attention: context of request " + std::to_string(r) + " (" +
                            std::to_string(len) + ") exceeds its block table");
        if (ceilDiv(len, kPartitionTokens) > args.maxPartitions)
            return badInput("attention: scratch holds too few partitions");
        for (std::int64_t b = 0; b < ceilDiv(len, layout.blockSize); ++b) {
            const std::int32_t block = tables[std::int64_t(r) * args.maxBlocksPerSeq + b];
            if (block < 0 || block >= numBlocks)
                return badInput("attention: request " + std::to_string(r) + " references block " +
                                std::to_string(block) + " outside the pool");
        }
    }
    return {};
}

} // namespace kvl::probe
