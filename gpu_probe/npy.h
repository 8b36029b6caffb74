#pragma once
// .npy reader for real K/V samples: float16 / float32, shape [tokens, kv_heads, head_dim],
// C order, little-endian (NumPy format versions 1.0, 2.0 and 3.0). Every malformed input gets
// a one-line error naming what is wrong; parseNpy never reads past `size` (fuzzed).

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
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

std::variant<NpyArray, std::string> parseNpy(const std::uint8_t* data, std::size_t size);
std::variant<NpyArray, std::string> loadNpy(const std::string& path);

// Checks a loaded K or V array against a layer's shape; "" when it fits.
std::string checkKvShape(const NpyArray& a, int kvHeads, int headDim, const std::string& what);

// Serializes an array (for tests and for users who want the probe's synthetic data).
std::vector<std::uint8_t> encodeNpy(const std::vector<std::int64_t>& shape,
                                    const std::vector<float>& data, bool float16);

} // namespace kvl::probe
