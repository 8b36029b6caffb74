#pragma once
// A GGUF file's header, read as a stream without loading a byte of the weights: the
// architecture, the metadata that sizes llama.cpp's KV cache ({arch}.block_count,
// .attention.head_count(_kv), .attention.key_length / value_length, .context_length,
// .attention.sliding_window) and every tensor's type and shape, with the real bytes each type
// takes (core/llamacpp/ggml_types.h). Layout: ggml-org/ggml docs/gguf.md (versions 2 and 3:
// magic "GGUF", version, tensor and metadata counts, the key/value pairs, the tensor infos,
// then the data section at general.alignment).
//
// A file that is not a GGUF, is truncated, or lies about its sizes (a string, an array or a
// tensor larger than the file) gets a one-line error naming the file; nothing is allocated from
// a size the file claims before that size is checked against the bytes that are left.

#include "core/result.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kvl::io {

struct GgufTensorType {
    std::string type; // ggml's name: "q4_K", "f16"
    std::int64_t tensors = 0;
    std::int64_t elements = 0;
    std::int64_t bytes = 0;
};

struct GgufInfo {
    std::string path;
    std::uint32_t version = 0;
    std::string architecture; // general.architecture
    std::string name;         // general.name
    std::string fileType;     // general.file_type as llama.cpp names it: "Q4_K_M"
    std::int64_t blockCount = 0;
    std::int64_t contextLength = 0;
    std::int64_t embeddingLength = 0;
    std::int64_t headCount = 0;
    std::vector<std::int64_t> headCountKv; // one value, or one per layer
    std::int64_t keyLength = 0;            // 0 = embedding_length / head_count
    std::int64_t valueLength = 0;
    std::int64_t slidingWindow = 0;
    std::int64_t expertCount = 0;
    std::int64_t alignment = 32;
    std::int64_t tensorCount = 0;
    std::int64_t dataOffset = 0;  // where the weights start
    std::int64_t weightBytes = 0; // every tensor's bytes, as its type stores them
    std::int64_t weightElements = 0;
    std::vector<GgufTensorType> types; // by bytes, largest first
    // Bits per weight over the whole file's tensors (llama.cpp's "BPW").
    double bitsPerWeight() const {
        return weightElements > 0 ? double(weightBytes) * 8.0 / double(weightElements) : 0.0;
    }
};

Result<GgufInfo> readGgufHeader(const std::string& path);

} // namespace kvl::io
