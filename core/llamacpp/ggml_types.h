#pragma once
// ggml's tensor types with their real storage: a block of `blockSize` values takes `typeSize`
// bytes (ggml/src/ggml.c, type_traits; the block structs in ggml/src/ggml-common.h). A row of n
// values takes n / blockSize x typeSize bytes (ggml_row_size), the rule llama.cpp's KV cache and
// every GGUF tensor follow. The numeric ids are enum ggml_type's, as GGUF files store them.

#include "core/scenario.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace kvl::core::llamacpp {

struct GgmlTypeInfo {
    int id = 0;                 // enum ggml_type (GGUF tensor info)
    std::string_view name;      // ggml_type_name: "f16", "q8_0", "q4_K"
    std::int64_t blockSize = 1; // values per block
    std::int64_t typeSize = 0;  // bytes per block
};

// The type with this GGUF id, or nothing (ids ggml removed or does not know).
const GgmlTypeInfo* ggmlType(int id);
const GgmlTypeInfo* ggmlTypeByName(std::string_view name); // case-sensitive, as ggml prints it
const GgmlTypeInfo& ggmlKvType(GgmlKvType t);
std::optional<GgmlKvType> parseGgmlKvType(std::string_view name); // -ctk / -ctv names
std::string_view ggmlKvTypeName(GgmlKvType t);
// The -ctk / -ctv type that stores KV Ledger's KV dtype: f32, f16 and bf16 as they are; INT8 as
// q8_0 and INT4 as q4_0, ggml's integer blocks of 32 values with an fp16 scale
// (ggml/src/ggml-common.h block_q8_0, block_q4_0). Empty for a dtype llama.cpp has no cache
// type for (fp8, fp4, int2): common/arg.cpp kv_cache_types lists none.
std::optional<GgmlKvType> kvTypeForDtype(KvDtype d);

// ggml_row_size: bytes of `n` values (n a multiple of the block size); saturating.
std::int64_t rowBytes(const GgmlTypeInfo& t, std::int64_t n);
// Bytes for n values when n is not a whole number of blocks (rounded up to whole blocks).
std::int64_t paddedRowBytes(const GgmlTypeInfo& t, std::int64_t n);

// llama.cpp's file types (general.file_type, enum llama_ftype in include/llama.h): the
// quantization a GGUF was made with, "Q4_K_M", "Q8_0", ...; empty when unknown.
std::string_view llamaFtypeName(std::int64_t ftype);

} // namespace kvl::core::llamacpp
