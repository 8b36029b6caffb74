#pragma once
// The CPU backend's vector kernels: paged decode attention in the two-phase tile structure of a
// GPU kernel (phase 1 gathers a tile's row addresses and scales and prefetches the next tile;
// phase 2 decodes and dots), and the store's row quantizers. One kernel source
// (cpu_simd_kernels.h) is compiled once per instruction set: AVX-512 and AVX2 + F16C + FMA in
// their own translation units with their own -m flags (x86-64 only), and a portable version in
// plain C++ for every other CPU. cpuSimd() picks the best one the CPU supports at run time.
//
// Only plain structs (trivial: no default member initializers, so no implicit constructor to
// emit), function pointers and constant tables cross between the translation units. The ISA
// units include nothing but this header and <immintrin.h>, and keep every function of their own
// in an anonymous namespace: a C++ inline function or template they used from a shared header
// could be emitted there with AVX-512 instructions and chosen by the linker for the whole
// program, which would then die on a CPU without AVX-512 (the classic pitfall of per-file
// -m flags). The cpu_simd_isolated test checks their objects define no such symbol.

#include "gpu_probe/kernel_layout.h"

#include <cstddef>
#include <cstdint>

namespace kvl::probe {

// How the vector kernels read one side's rows: the codes as they are in the page, or (Generic)
// rows that phase 1 dequantizes into a float tile through `decodeRow`.
enum SimdRowKind : int {
    kSimdGeneric = 0, // anything else: KIVI, INT4/INT2 groups, fp16-scaled INT8
    kSimdF32,
    kSimdF16,
    kSimdBF16,
    kSimdE4M3, // out-of-page scale (folded into the query / the output by the caller)
    kSimdE5M2,
    kSimdI8, // symmetric, one fp32 scale per token-head stored after the page's codes
};

// A side of asymmetric INT4 / INT2 codes (kv_quant.h's kCodecIntAsym with an in-page zero): per
// token, dataBytes of codes packed low bits first. In element groups (tokenGroup 0), group g's
// scale and zero (fp16 or fp32) at metaOffset + (token x numGroups + g) x 2 x scaleBytes; as
// KIVI's keys (tokenGroup > 0), channel c's fp16 scale and zero for the token's group of
// tokenGroup tokens at metaOffset + (token / tokenGroup x dim + c) x 4.
struct SimdGroupSide {
    int dim;
    int bits;  // 4 or 2
    int group; // elements per group: a multiple of 16 that divides dim (dim for KIVI keys)
    int dataBytes;
    int metaOffset;
    int scaleBytes; // 2 or 4 (2 for KIVI keys)
    int tokenGroup;
};

// One side (K or V) of a KV head's slice of a page, as the kernels need it.
struct SimdSide {
    int kind;
    int dataBytes;  // bytes of codes per token
    int metaOffset; // kSimdI8: offset of the fp32 scales (one per token) from the side
    // kSimdGeneric: dequantizes token `token` of the side at `side` into out[dim] (kv_quant.h's
    // values, out-of-page scale not applied), from `layout` (kv_quant.h's SideLayout) or `groups`.
    void (*decodeRow)(const SimdSide& self, const std::uint8_t* side, int token, float* out);
    const void* layout;
    SimdGroupSide groups;
};

// KV heads per work item at most: a page's heads lie one after another, and an item reads them in
// that order (8 heads of Llama-3-8B's INT8 page: one 33 KiB run instead of eight 4 KiB ones).
constexpr int kSimdMaxHeadsPerItem = 8;

// One work item of decode attention: (request, split-K partition, up to kSimdMaxHeadsPerItem
// consecutive KV heads), each head as one CTA.
struct SimdAttention : PageGeometry {
    const float* q; // [batch, qHeads, headDim]
    int qHeads;
    int groupSize;    // q heads per KV head
    int headsPerItem; // 1 .. kSimdMaxHeadsPerItem
    const std::int32_t* blockTables;
    int maxBlocksPerSeq;
    const std::int32_t* contextLens;
    const std::uint8_t* pool;
    SimdSide k, v;
    const float* kScale; // [kvHeads] out-of-page K scale (1 otherwise)
    float smScale;
    int maxPartitions;
    int partitionTokens;
    SplitKScratch<float*> scratch; // the split-K outputs
};

// Quantizes one token-head row of fp16 / bf16 input bits into slot `slot` of a side, with the
// side's out-of-page scale `outScale` (fp8: code = fp8(x / outScale); unused by the others).
// Returns false, having written nothing, when it does not take the row (a NaN or infinity, whose
// handling stays with kv_quant.h's scalar code): the caller then quantizes it that way.
using SimdStoreRow = bool (*)(const std::uint16_t* in, bool bf16Input, std::uint8_t* side, int dim,
                              int dataBytes, int metaOffset, int slot, float outScale);

// Quantizes one token-head row like SimdStoreRow, into a side of asymmetric INT4 / INT2 groups:
// kv_quant.h's quantizeTokenVector with the same bytes. Returns false, having written nothing,
// for a row it leaves to that code (a NaN or infinity, or a group whose least or largest value
// is a zero, whose sign fminf / fmaxf choose).
using SimdStoreGroups = bool (*)(const std::uint16_t* in, bool bf16Input, std::uint8_t* side,
                                 const SimdGroupSide& layout, int slot);
// Quantizes KIVI keys (a SimdGroupSide with tokenGroup > 0) of `tokens` consecutive slots from
// firstSlot, all in one token group, token i's row of input bits at in + i x tokenStride:
// kv_quant.h's quantizeChannelRun for every channel, with the same bytes. Returns false, having
// written nothing, for a run it leaves to that code (a NaN or infinity, or a channel whose least or
// largest value is a zero).
using SimdStoreKiviKeys = bool (*)(const std::uint16_t* in, std::int64_t tokenStride,
                                   bool bf16Input, std::uint8_t* side, const SimdGroupSide& layout,
                                   int firstSlot, int tokens);
// Dequantizes token `token` of such a side (or KIVI keys) into out[dim]: code x scale + zero.
using SimdDecodeGroups = void (*)(const SimdSide& self, const std::uint8_t* side, int token,
                                  float* out);

// OCP FP8 codes as kv_quant.h's floatToE4m3 / floatToE5m2 round a float, for the vector stores
// (plain constants, so each instruction set's file may share them).
struct Fp8Code {
    int shift;              // float mantissa bits below the code's
    std::int32_t rebias;    // 127 minus the code's exponent bias
    std::int32_t maxBits;   // the largest finite code's value, as float bits
    std::int32_t minNormal; // the smallest normal code's value, as float bits
    float subnormalScale;   // 1 / the subnormal step
    int maxCode;            // the largest finite code's magnitude
};
inline constexpr Fp8Code kE4M3Code{20, 120, 0x43e00000, 0x3c800000, 512.0f, 0x7e};   // max 448
inline constexpr Fp8Code kE5M2Code{21, 112, 0x47600000, 0x38800000, 65536.0f, 0x7b}; // 57344

// The kernels of one instruction set.
struct SimdKernels {
    const char* name; // "avx512", "avx2", "portable"
    int width;        // floats per vector; headDim must be a multiple of it
    std::size_t (*workspaceFloats)(const SimdAttention& args);
    // Runs work item `item` (= (request * maxPartitions + partition) * headChunks + chunk, with
    // headChunks = ceil(kvHeads / headsPerItem): heads [chunk * headsPerItem, ...));
    // `workspace` holds workspaceFloats(args) floats.
    void (*attendItem)(const SimdAttention& args, std::int64_t item, float* workspace);
    // The vector stores (nullptr: not vectorized here, kv_quant.h's scalar code stores).
    SimdStoreRow storeF16 = nullptr;  // fp16 codes
    SimdStoreRow storeBF16 = nullptr; // bf16 codes
    SimdStoreRow storeI8 = nullptr;   // INT8 symmetric per token-head, fp32 scale
    SimdStoreRow storeE4M3 = nullptr; // OCP FP8 E4M3 with an out-of-page (tensor or head) scale
    SimdStoreRow storeE5M2 = nullptr; // OCP FP8 E5M2, likewise
    SimdStoreGroups storeIntGroups = nullptr;   // asymmetric INT4 / INT2 in element groups
    SimdDecodeGroups decodeIntGroups = nullptr; // their rows, and KIVI keys, into a float tile
    SimdStoreKiviKeys storeKiviKeys = nullptr;  // KIVI keys, a run of one token group at a time
    // The sum of `count` 64-byte blocks (64-byte aligned) as 64-bit lanes: the read stream's pass
    // (read_stream.h), at the widest loads of this level.
    std::uint64_t (*sumBlocks)(const void* blocks, std::size_t count) = nullptr;
};

// Every instruction set this build has kernels for and this CPU runs, best first (at least the
// portable one).
int simdLevelCount();
const SimdKernels& simdLevel(int index);
// The kernels in use: the best level whose width divides headDim, starting from the level the
// environment variable KVL_CPU_SIMD (avx512, avx2, portable) or setSimdOverride names.
const SimdKernels& cpuSimd(int headDim);
// The name of the best level this CPU runs ("avx512", ...), for `kvprobe info`.
const char* cpuSimdName();

namespace testing {
// Forces a level by name for the next operations ("" restores the automatic choice); false
// when this build or CPU has no such level.
bool setSimdOverride(const char* name);
} // namespace testing

// Per-ISA tables, constant-initialized (defined in cpu_simd_*.cpp): reading one runs no code of
// its instruction set.
extern const SimdKernels kSimdPortable;  // 8 floats per vector, plain C++
extern const SimdKernels kSimdPortable1; // 1 float: any headDim
#if KVL_PROBE_HAVE_X86_SIMD
extern const SimdKernels kSimdAvx2;
extern const SimdKernels kSimdAvx512;
#endif

} // namespace kvl::probe
