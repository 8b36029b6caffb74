#include "gpu_probe/ops.h"

#include "gpu_probe/cpu/cpu_simd.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
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
    static const Fp8Tables tables;
    return tables;
}

// The row decoder for the layouts the vector kernels do not read directly (cpu_simd.h's
// kSimdGeneric: INT4 / INT2 groups, KIVI): the same values as dequantRow, written as flat loops
// the compiler vectorizes; everything else falls back to dequantRow.
void cpuDequantRow(const std::uint8_t* side, const SideLayout& layout, int token,
                   float* __restrict out) {
    const std::uint8_t* row = side + std::int64_t(token) * layout.dataBytes;
    const int dim = layout.dim;
    if (layout.codec == kCodecF16) {
        // Branch-free fp16 -> fp32: exponent/mantissa shifted into place, rebiased by 2^112
        // (exact for normals and subnormals); inf/NaN patched afterwards.
        for (int c = 0; c < dim; ++c) {
            std::uint16_t half;
            std::memcpy(&half, row + 2 * c, 2);
            const std::uint32_t magnitude = half & 0x7fffu;
            float rebiased = bitsToFloat(magnitude << 13) * 0x1.0p112f;
            std::uint32_t bits32 = floatToBits(rebiased) | (std::uint32_t(half & 0x8000u) << 16);
            if (magnitude >= 0x7c00u)
                bits32 = (std::uint32_t(half & 0x8000u) << 16) | 0x7f800000u |
                         ((magnitude & 0x3ffu) << 13);
            out[c] = bitsToFloat(bits32);
        }
        return;
    }
    if ((layout.codec == kCodecE4M3 || layout.codec == kCodecE5M2) && layout.group == 0) {
        const float* table = layout.codec == kCodecE4M3 ? fp8Tables().e4m3 : fp8Tables().e5m2;
        for (int c = 0; c < dim; ++c)
            out[c] = table[row[c]];
        return;
    }
    if (layout.codec == kCodecIntSym && layout.bits == 8 && layout.group == dim) {
        const float scale =
            loadScalar(side + layout.metaOffset + std::int64_t(token) * layout.metaStride(),
                       layout.scaleBytes);
        for (int c = 0; c < dim; ++c)
            out[c] = float(std::int8_t(row[c])) * scale;
        return;
    }
    if (layout.codec == kCodecIntAsym && (layout.bits == 4 || layout.bits == 2) &&
        layout.group > 0 && (layout.group * layout.bits) % 8 == 0 && dim % layout.group == 0) {
        const int perByte = 8 / layout.bits;
        const std::uint32_t mask = (1u << layout.bits) - 1u;
        for (int g = 0; g < layout.numGroups; ++g) {
            const GroupParams params = loadParams(side, layout, token, g * layout.group);
            const std::uint8_t* codes = row + g * layout.group / perByte;
            float* groupOut = out + g * layout.group;
            for (int i = 0; i < layout.group; ++i)
                groupOut[i] =
                    float((std::uint32_t(codes[i / perByte]) >> ((i % perByte) * layout.bits)) &
                          mask) *
                        params.scale +
                    params.zero;
        }
        return;
    }
    if (layout.tokenGroup > 0 && layout.codec == kCodecIntAsym && layout.scaleBytes == 2 &&
        layout.hasZero && (layout.bits == 4 || layout.bits == 2)) {
        // KIVI keys: (scale, zero) fp16 pairs per channel for this token'layout group, contiguous.
        const std::uint8_t* meta =
            side + layout.metaOffset + std::int64_t(token / layout.tokenGroup) * dim * 4;
        const int perByte = 8 / layout.bits;
        const std::uint32_t mask = (1u << layout.bits) - 1u;
        for (int c = 0; c < dim; ++c) {
            std::uint16_t scaleZero[2];
            std::memcpy(scaleZero, meta + 4 * c, 4);
            const std::uint32_t code =
                (std::uint32_t(row[c / perByte]) >> ((c % perByte) * layout.bits)) & mask;
            out[c] = float(code) * halfToFloat(scaleZero[0]) + halfToFloat(scaleZero[1]);
        }
        return;
    }
    dequantRow(side, layout, token, out);
}

// quantizeTokenVector with the codec and width as compile-time constants, so the per-element
// switches fold away; the arithmetic (and so every byte) is unchanged.
template <int Codec, int Bits>
void quantizeRowT(std::uint8_t* side, SideLayout layout, int token, const float* values,
                  float outScale) {
    layout.codec = Codec;
    layout.bits = Bits;
    quantizeTokenVector(side, layout, token, values, outScale);
}

void quantizeRow(std::uint8_t* side, const SideLayout& layout, int token, const float* values,
                 float outScale) {
    switch (layout.codec) {
    case kCodecF16:
        return quantizeRowT<kCodecF16, 16>(side, layout, token, values, outScale);
    case kCodecBF16:
        return quantizeRowT<kCodecBF16, 16>(side, layout, token, values, outScale);
    case kCodecE4M3:
        return quantizeRowT<kCodecE4M3, 8>(side, layout, token, values, outScale);
    case kCodecE5M2:
        return quantizeRowT<kCodecE5M2, 8>(side, layout, token, values, outScale);
    case kCodecIntSym:
        if (layout.bits == 8)
            return quantizeRowT<kCodecIntSym, 8>(side, layout, token, values, outScale);
        break;
    case kCodecIntAsym:
        if (layout.bits == 4)
            return quantizeRowT<kCodecIntAsym, 4>(side, layout, token, values, outScale);
        if (layout.bits == 2)
            return quantizeRowT<kCodecIntAsym, 2>(side, layout, token, values, outScale);
        break;
    default:
        break;
    }
    quantizeTokenVector(side, layout, token, values, outScale);
}

} // namespace

namespace {

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
    if (format.dtype == core::KvDtype::Fp4E2M1 || format.granularity == core::Granularity::DsMla)
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

// What an exception caught on a worker thread becomes.
Error errorFromException(const std::exception_ptr& failure) {
    try {
        std::rethrow_exception(failure);
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::OutOfMemory, "out of host memory in a worker thread"};
    } catch (const std::exception& e) {
        return Error{ErrorCode::Internal, std::string("a worker thread failed: ") + e.what()};
    } catch (...) {
        return Error{ErrorCode::Internal, "a worker thread failed with an unknown exception"};
    }
}

} // namespace

Error cancelledError() {
    return Error{ErrorCode::Cancelled, "cancelled"};
}

bool cancelRequested(const std::atomic<bool>* cancel) {
    return cancel && cancel->load(std::memory_order_relaxed);
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
        return errorFromException(failure);
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

namespace {

// Asymmetric INT4 / INT2 codes as the vector kernels take them (cpu_simd.h), when the side is
// such a layout: element groups of whole vectors with an fp16 or fp32 scale and zero, or KIVI
// keys (an fp16 scale and zero per channel and token group).
std::optional<SimdGroupSide> simdGroupSide(const SideLayout& side, int width) {
    if (side.codec != kCodecIntAsym || !side.hasZero || (side.bits != 4 && side.bits != 2) ||
        side.dim % 16 != 0 || side.dim % width != 0 || side.dataBytes != side.dim * side.bits / 8)
        return std::nullopt;
    if (side.tokenGroup > 0)
        return side.scaleBytes == 2
                   ? std::optional(SimdGroupSide{side.dim, side.bits, side.dim, side.dataBytes,
                                                 side.metaOffset, 2, side.tokenGroup})
                   : std::nullopt;
    if (side.group <= 0 || side.group % 16 != 0 || side.group % width != 0 ||
        side.dim % side.group != 0 || side.numGroups != side.dim / side.group ||
        (side.scaleBytes != 2 && side.scaleBytes != 4))
        return std::nullopt;
    return SimdGroupSide{side.dim,        side.bits,       side.group, side.dataBytes,
                         side.metaOffset, side.scaleBytes, 0};
}

// The vector store of one side, when this CPU's kernels have one for its layout: fp16 and bf16
// codes, INT8 with one fp32 scale per token-head, FP8 with an out-of-page scale, and asymmetric
// INT4 / INT2 in element groups. Every other layout goes through kv_quant.h.
struct VectorStore {
    SimdStoreRow row = nullptr;
    SimdStoreGroups groups = nullptr;
    SimdGroupSide groupSide{};
    explicit operator bool() const { return row || groups; }
    // Whether it took the row (else kv_quant.h quantizes it).
    bool operator()(const std::uint16_t* in, bool bf16, std::uint8_t* side, const SideLayout& s,
                    int slot, float outScale) const {
        if (row)
            return row(in, bf16, side, s.dim, s.dataBytes, s.metaOffset, slot, outScale);
        return groups && groups(in, bf16, side, groupSide, slot);
    }
};

VectorStore vectorStore(const SideLayout& side, const SimdKernels& kernels) {
    VectorStore store;
    if (side.tokenGroup != 0 || side.dim % kernels.width != 0)
        return store;
    if (side.codec == kCodecF16 && side.group == 0 && side.dataBytes == 2 * side.dim)
        store.row = kernels.storeF16;
    else if (side.codec == kCodecBF16 && side.group == 0 && side.dataBytes == 2 * side.dim)
        store.row = kernels.storeBF16;
    else if (side.codec == kCodecIntSym && side.bits == 8 && side.group == side.dim &&
             side.numGroups == 1 && side.scaleBytes == 4 && !side.hasZero &&
             side.dataBytes == side.dim)
        store.row = kernels.storeI8;
    else if ((side.codec == kCodecE4M3 || side.codec == kCodecE5M2) && side.group == 0 &&
             side.dataBytes == side.dim)
        store.row = side.codec == kCodecE4M3 ? kernels.storeE4M3 : kernels.storeE5M2;
    else if (const auto groups = simdGroupSide(side, kernels.width)) {
        store.groups = kernels.storeIntGroups;
        store.groupSide = *groups;
    }
    return store;
}

// The vector store of KIVI keys when this CPU's kernels have one, with the layout it takes.
SimdStoreKiviKeys kiviKeyStore(const SideLayout& side, const SimdKernels& kernels,
                               SimdGroupSide* layout) {
    const std::optional<SimdGroupSide> groups = simdGroupSide(side, kernels.width);
    if (side.tokenGroup == 0 || !groups || !kernels.storeKiviKeys)
        return nullptr;
    *layout = *groups;
    return kernels.storeKiviKeys;
}

} // namespace

bool testing::storesThroughVector(const SideLayout& side, int headDim) {
    const SimdKernels& kernels = cpuSimd(headDim);
    SimdGroupSide unused;
    if (side.tokenGroup > 0)
        return kiviKeyStore(side, kernels, &unused) != nullptr;
    return bool(vectorStore(side, kernels));
}

namespace {

// Values (and non-KIVI keys): every token on its own, in chunks of 64 tokens.
Status storeTokenRows(const StoreArgs& args, int threads, const std::atomic<bool>* cancel) {
    const PageLayout& layout = args.layout;
    const int heads = layout.kvHeads, dim = layout.headDim, blockSize = layout.blockSize;
    const std::int64_t rowElems = std::int64_t(heads) * dim;
    constexpr std::int64_t kChunk = 64;
    const bool kivi = layout.k.tokenGroup > 0;
    const bool bf16 = args.inputDtype == kInputBF16;
    const SimdKernels& kernels = cpuSimd(dim);
    const VectorStore keyRow = vectorStore(layout.k, kernels);
    const VectorStore valueRow = vectorStore(layout.v, kernels);
    const std::int64_t chunks = (args.numTokens + kChunk - 1) / kChunk;
    return parallelFor(chunks, threads, cancel, [&](std::int64_t chunk) {
        std::vector<float> row(static_cast<std::size_t>(dim));
        // One row of input bits into slot `offset` of a side: the vector path when it takes
        // the row, else kv_quant.h's (a NaN or infinity, or a layout without a vector path).
        auto storeRow = [&](const VectorStore& vector, const std::uint16_t* in, std::uint8_t* side,
                            const SideLayout& sideLayout, int offset, float outScale) {
            if (vector(in, bf16, side, sideLayout, offset, outScale))
                return;
            for (int c = 0; c < dim; ++c)
                row[std::size_t(c)] = inputToFloat(in[c], args.inputDtype);
            quantizeRow(side, sideLayout, offset, row.data(), outScale);
        };
        const std::int64_t end = std::min(args.numTokens, (chunk + 1) * kChunk);
        for (std::int64_t t = chunk * kChunk; t < end; ++t) {
            const std::int64_t slot = args.slotMapping[t];
            if (slot < 0)
                continue;
            const std::int64_t block = slot / blockSize;
            const int offset = int(slot % blockSize);
            for (int h = 0; h < heads; ++h) {
                std::uint8_t* keySide = kSide(args.pool, layout, block, h);
                const std::uint16_t* keyIn = args.k + t * rowElems + std::int64_t(h) * dim;
                const std::uint16_t* valueIn = args.v + t * rowElems + std::int64_t(h) * dim;
                if (!kivi)
                    storeRow(keyRow, keyIn, keySide, layout.k, offset,
                             args.kScale ? args.kScale[h] : 1.0f);
                storeRow(valueRow, valueIn, keySide + vSideOffset(layout), layout.v, offset,
                         args.vScale ? args.vScale[h] : 1.0f);
            }
        }
    });
}

// KIVI keys: one run = consecutive slots inside one token group (validateStore checked that
// runs start on group boundaries), quantized per channel over the run.
Status storeKiviKeys(const StoreArgs& args, int threads, const std::atomic<bool>* cancel) {
    const PageLayout& layout = args.layout;
    const int heads = layout.kvHeads, dim = layout.headDim, blockSize = layout.blockSize;
    const std::int64_t rowElems = std::int64_t(heads) * dim;
    const int group = layout.k.tokenGroup;
    std::vector<std::int64_t> leaders;
    for (std::int64_t t = 0; t < args.numTokens; ++t) {
        const std::int64_t slot = args.slotMapping[t];
        if (slot < 0)
            continue;
        if (t == 0 || args.slotMapping[t - 1] != slot - 1 || slot % group == 0)
            leaders.push_back(t);
    }
    // the vector kernels' store where they have one (for runs it takes), kv_quant.h's otherwise
    SimdGroupSide groupSide{};
    const SimdStoreKiviKeys vector = kiviKeyStore(layout.k, cpuSimd(dim), &groupSide);
    return parallelFor(std::int64_t(leaders.size()), threads, cancel, [&](std::int64_t li) {
        const std::int64_t first = leaders[std::size_t(li)];
        const std::int64_t firstSlot = args.slotMapping[first];
        int runLength = 1;
        while (first + runLength < args.numTokens &&
               args.slotMapping[first + runLength] == firstSlot + runLength &&
               (firstSlot + runLength) % group != 0)
            ++runLength;
        std::vector<float> keys(std::size_t(runLength) * dim);
        for (int h = 0; h < heads; ++h) {
            std::uint8_t* keySide = kSide(args.pool, layout, firstSlot / blockSize, h);
            if (vector && vector(args.k + first * rowElems + std::int64_t(h) * dim, rowElems,
                                 args.inputDtype == kInputBF16, keySide, groupSide,
                                 int(firstSlot % blockSize), runLength))
                continue;
            for (int i = 0; i < runLength; ++i)
                for (int c = 0; c < dim; ++c)
                    keys[std::size_t(i) * dim + c] =
                        inputToFloat(args.k[(first + i) * rowElems + std::int64_t(h) * dim + c],
                                     args.inputDtype);
            for (int c = 0; c < dim; ++c)
                quantizeChannelRun(keySide, layout.k, int(firstSlot % blockSize), runLength, c,
                                   keys.data() + c, dim);
        }
    });
}

} // namespace

Status cpuStore(const StoreArgs& args, int threads, const std::atomic<bool>* cancel) {
    if (Status rows = storeTokenRows(args, threads, cancel); !rows)
        return rows;
    if (args.layout.k.tokenGroup == 0)
        return {};
    return storeKiviKeys(args, threads, cancel);
}

namespace {

// Split-K scratch views: per (request, q head, partition) max logit and exp sum, then the
// partial outputs [.., head_dim].
struct AttentionScratch {
    float* maxLogit;
    float* expSum;
    float* partial;
    AttentionScratch(const AttentionArgs& args)
        : maxLogit(args.scratch),
          expSum(args.scratch + std::int64_t(args.batch) * args.qHeads * args.maxPartitions),
          partial(expSum + std::int64_t(args.batch) * args.qHeads * args.maxPartitions) {}
};

// How the vector kernels read a side (cpu_simd.h): directly for the layouts they decode, through
// cpuDequantRow into a float tile otherwise.
int simdRowKind(const SideLayout& side) {
    if (side.tokenGroup != 0)
        return kSimdGeneric;
    switch (side.codec) {
    case kCodecF32:
        return side.group == 0 ? kSimdF32 : kSimdGeneric;
    case kCodecF16:
        return side.group == 0 ? kSimdF16 : kSimdGeneric;
    case kCodecBF16:
        return side.group == 0 ? kSimdBF16 : kSimdGeneric;
    case kCodecE4M3:
        return side.group == 0 ? kSimdE4M3 : kSimdGeneric;
    case kCodecE5M2:
        return side.group == 0 ? kSimdE5M2 : kSimdGeneric;
    case kCodecIntSym:
        return side.bits == 8 && side.group == side.dim && side.numGroups == 1 &&
                       side.scaleBytes == 4 && !side.hasZero && side.dataBytes == side.dim
                   ? kSimdI8
                   : kSimdGeneric;
    default:
        return kSimdGeneric;
    }
}

void decodeGenericRow(const SimdSide& self, const std::uint8_t* side, int token, float* out) {
    cpuDequantRow(side, *static_cast<const SideLayout*>(self.layout), token, out);
}

// Generic rows decode through the kernels' own INT4 / INT2 group decoder where they have one.
SimdSide simdSide(const SideLayout& side, const SimdKernels& kernels) {
    SimdSide out{};
    out.kind = simdRowKind(side);
    out.dataBytes = side.dataBytes;
    out.metaOffset = side.metaOffset;
    out.decodeRow = decodeGenericRow;
    out.layout = &side;
    if (const auto groups = simdGroupSide(side, kernels.width); groups && kernels.decodeIntGroups) {
        out.decodeRow = kernels.decodeIntGroups;
        out.groups = *groups;
    }
    return out;
}

} // namespace

bool testing::decodesThroughVector(const SideLayout& side, int headDim) {
    return simdSide(side, cpuSimd(headDim)).decodeRow != decodeGenericRow;
}

namespace {

// Pass 1's arguments for the vector kernels: one work item per (request, partition, run of up to
// kSimdMaxHeadsPerItem KV heads), each head as one CTA would be on the GPU.
SimdAttention simdAttention(const AttentionArgs& args, const AttentionScratch& scratch,
                            const SimdKernels& kernels) {
    const PageLayout& layout = args.layout;
    SimdAttention a{};
    a.q = args.q;
    a.qHeads = args.qHeads;
    a.groupSize = args.qHeads / layout.kvHeads;
    a.kvHeads = layout.kvHeads;
    a.headsPerItem = std::min(layout.kvHeads, kSimdMaxHeadsPerItem);
    a.headDim = layout.headDim;
    a.blockSize = layout.blockSize;
    a.blockTables = args.blockTables;
    a.maxBlocksPerSeq = args.maxBlocksPerSeq;
    a.contextLens = args.contextLens;
    a.pool = args.pool;
    a.pageBytes = layout.pageBytes;
    a.headStride = layout.headStride;
    a.vSideOffset = vSideOffset(layout);
    a.k = simdSide(layout.k, kernels);
    a.v = simdSide(layout.v, kernels);
    a.kScale = args.kScale;
    a.smScale = args.smScale;
    a.maxPartitions = args.maxPartitions;
    a.partitionTokens = kPartitionTokens;
    a.maxLogit = scratch.maxLogit;
    a.expSum = scratch.expSum;
    a.partial = scratch.partial;
    return a;
}

// Pass 2: the split-K reduce (vLLM paged_attention_v2_reduce_kernel): rescale each partition by
// exp(m_i - M) and divide by the global sum; apply v_scale once.
void reducePartitions(const AttentionArgs& args, const AttentionScratch& scratch,
                      std::int64_t requestHead) {
    const int dim = args.layout.headDim;
    const int groupSize = args.qHeads / args.layout.kvHeads;
    const int partitions = args.maxPartitions;
    const int request = int(requestHead / args.qHeads);
    const int kvHead = int(requestHead % args.qHeads) / groupSize;
    const std::int64_t len = args.contextLens[request];
    float* out = args.out + requestHead * dim;
    const int used = int((len + kPartitionTokens - 1) / kPartitionTokens);
    if (used == 0) {
        std::fill(out, out + dim, 0.0f);
        return;
    }
    const std::int64_t base = requestHead * partitions;
    float globalMax = -INFINITY;
    for (int partition = 0; partition < used; ++partition)
        globalMax = std::max(globalMax, scratch.maxLogit[base + partition]);
    float globalSum = 0.0f;
    std::vector<float> acc(std::size_t(dim), 0.0f);
    for (int partition = 0; partition < used; ++partition) {
        const float weight = std::exp(scratch.maxLogit[base + partition] - globalMax);
        globalSum += scratch.expSum[base + partition] * weight;
        const float* partial = scratch.partial + (base + partition) * dim;
        for (int c = 0; c < dim; ++c)
            acc[std::size_t(c)] += partial[c] * weight;
    }
    const float factor = args.vScale[kvHead] / globalSum;
    for (int c = 0; c < dim; ++c)
        out[c] = acc[std::size_t(c)] * factor;
}

} // namespace

Status cpuAttention(const AttentionArgs& args, int threads, const std::atomic<bool>* cancel) {
    const AttentionScratch scratch(args);
    const SimdKernels& kernels = cpuSimd(args.layout.headDim);
    const SimdAttention simd = simdAttention(args, scratch, kernels);
    const std::int64_t headChunks = ceilDiv(simd.kvHeads, simd.headsPerItem);
    const std::int64_t items = std::int64_t(args.batch) * args.maxPartitions * headChunks;
    const std::size_t workspaceFloats = kernels.workspaceFloats(simd);
    if (Status pass1 =
            parallelFor(items, threads, cancel,
                        [&](std::int64_t item) {
                            // uninitialized: the kernel writes before it reads
                            const std::unique_ptr<float[]> workspace(new float[workspaceFloats]);
                            kernels.attendItem(simd, item, workspace.get());
                        });
        !pass1)
        return pass1;
    return parallelFor(std::int64_t(args.batch) * args.qHeads, threads, cancel,
                       [&](std::int64_t rq) { reducePartitions(args, scratch, rq); });
}

} // namespace kvl::probe
