#pragma once
// .npy reader for real K/V samples: float16 / float32, shape [tokens, kv_heads, head_dim],
// C order, little-endian (NumPy format versions 1.0, 2.0 and 3.0). Every malformed input gets
// a one-line error naming what is wrong (BadFile); parseNpy never reads past `size` (fuzzed).
//
// readNpyHeader and loadNpy open the file through io::RegularFile (core/io/files.h), so a FIFO,
// a device or a directory is refused at once instead of blocking. readNpyHeader reads the
// header alone (at most 12 + 64 KiB), so a caller can check shapes and weigh the memory a run
// needs before any data is read (the probe's memory guard, issue 32). loadNpy reads and checks
// the header, checks the data's size against the file's before allocating anything, and then
// streams the data into floats in 1 MiB pieces: a large file that is not a .npy costs one
// header read, never its size in memory.

#include "core/result.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kvl::probe {

struct NpyArray {
    std::vector<std::int64_t> shape;
    std::vector<float> data; // converted to float (fp16 exactly)
    int itemBytes = 0;       // 2 or 4 in the file
};

// Limits: header at most 64 KiB, at most 2^31 elements (8 GiB of float) and a data section of
// exactly the declared size (trailing bytes are an error, as NumPy would not write them).
inline constexpr std::int64_t kNpyMaxElements = std::int64_t(1) << 31;
inline constexpr std::size_t kNpyMaxHeaderBytes = 65536;

// What the header says, and where the data starts.
struct NpyHeader {
    std::vector<std::int64_t> shape;
    int itemBytes = 0;
    std::int64_t count = 0;     // elements
    std::size_t dataOffset = 0; // bytes before the data
    std::size_t dataBytes() const { return std::size_t(count) * std::size_t(itemBytes); }
};

// The header from the first `size` bytes of a file (all of it, or at least its header).
Result<NpyHeader> parseNpyHeader(const std::uint8_t* data, std::size_t size);
// A whole .npy in memory.
Result<NpyArray> parseNpy(const std::uint8_t* data, std::size_t size);
// A .npy file's header, nothing of its data read; errors name the file. The data's size is not
// compared with the file's here but by loadNpy, where the data is read.
Result<NpyHeader> readNpyHeader(const std::string& path);
// A .npy file; errors name the file.
Result<NpyArray> loadNpy(const std::string& path);

// Checks a K or V shape (from a header) against a layer's: [tokens >= 1, kvHeads, headDim]
// (BadFile naming `what` otherwise).
Status checkKvShape(const std::vector<std::int64_t>& shape, int kvHeads, int headDim,
                    const std::string& what);
// The same for a loaded array, and its values finite.
Status checkKvShape(const NpyArray& a, int kvHeads, int headDim, const std::string& what);

// Serializes an array (for tests and for users who want the probe's synthetic data).
std::vector<std::uint8_t> encodeNpy(const std::vector<std::int64_t>& shape,
                                    const std::vector<float>& data, bool float16);

} // namespace kvl::probe
