// The CPU backend's two operations (cpu_ops.h) on ops.cpp's thread pool: the store's rows and
// KIVI key runs through this CPU's vector kernels (cpu_simd.h) where they take the layout, else
// through kv_quant.h's scalar code; decode attention as the vector kernels' work items, then the
// split-K reduce.
#include "gpu_probe/cpu/cpu_ops.h"

#include "gpu_probe/cpu/cpu_simd.h"
#include "gpu_probe/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

namespace kvl::probe {

namespace {

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
SimdAttention simdAttention(const AttentionArgs& args, const SplitKScratch<float*>& scratch,
                            const SimdKernels& kernels) {
    const PageLayout& layout = args.layout;
    SimdAttention a{};
    static_cast<PageGeometry&>(a) = pageGeometry(layout);
    a.q = args.q;
    a.qHeads = args.qHeads;
    a.groupSize = args.qHeads / layout.kvHeads;
    a.headsPerItem = std::min(layout.kvHeads, kSimdMaxHeadsPerItem);
    a.blockTables = args.blockTables;
    a.maxBlocksPerSeq = args.maxBlocksPerSeq;
    a.contextLens = args.contextLens;
    a.pool = args.pool;
    a.k = simdSide(layout.k, kernels);
    a.v = simdSide(layout.v, kernels);
    a.kScale = args.kScale;
    a.smScale = args.smScale;
    a.maxPartitions = args.maxPartitions;
    a.partitionTokens = kPartitionTokens;
    a.scratch = scratch;
    return a;
}

// Pass 2: the split-K reduce (vLLM paged_attention_v2_reduce_kernel): rescale each partition by
// exp(m_i - M) and divide by the global sum; apply v_scale once.
void reducePartitions(const AttentionArgs& args, const SplitKScratch<float*>& scratch,
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
    const SplitKScratch<float*> scratch =
        splitKScratch(args.scratch, args.batch, args.qHeads, args.maxPartitions);
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
