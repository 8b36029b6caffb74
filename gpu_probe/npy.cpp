#include "gpu_probe/npy.h"

#include "gpu_probe/kv_quant.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <string_view>

namespace kvl::probe {

namespace {

using Err = std::string;

void skipSpaces(std::string_view h, std::size_t& i) {
    while (i < h.size() && (h[i] == ' ' || h[i] == '\t' || h[i] == '\n'))
        ++i;
}

// Parses a Python literal string '...' or "..." at i.
bool parseQuoted(std::string_view h, std::size_t& i, std::string& out) {
    if (i >= h.size() || (h[i] != '\'' && h[i] != '"'))
        return false;
    const char q = h[i++];
    const std::size_t end = h.find(q, i);
    if (end == std::string_view::npos)
        return false;
    out = std::string(h.substr(i, end - i));
    i = end + 1;
    return true;
}

} // namespace

std::variant<NpyArray, std::string> parseNpy(const std::uint8_t* data, std::size_t size) {
    static const std::uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (!data || size < 10)
        return Err("npy: file too short for a header (" + std::to_string(size) + " bytes)");
    if (std::memcmp(data, magic, 6) != 0)
        return Err("npy: bad magic (not a NumPy .npy file)");
    const int major = data[6];
    std::size_t headerLen = 0, pos = 0;
    if (major == 1) {
        headerLen = std::size_t(data[8]) | (std::size_t(data[9]) << 8);
        pos = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12)
            return Err("npy: file too short for a version 2 header");
        headerLen = std::size_t(data[8]) | (std::size_t(data[9]) << 8) |
                    (std::size_t(data[10]) << 16) | (std::size_t(data[11]) << 24);
        pos = 12;
    } else {
        return Err("npy: unsupported format version " + std::to_string(major));
    }
    if (headerLen > 65536)
        return Err("npy: header length " + std::to_string(headerLen) + " exceeds 64 KiB");
    if (headerLen > size - pos)
        return Err("npy: truncated header (" + std::to_string(headerLen) + " bytes declared, " +
                   std::to_string(size - pos) + " present)");
    const std::string_view h(reinterpret_cast<const char*>(data + pos), headerLen);
    pos += headerLen;

    std::string descr;
    int fortran = -1;
    std::vector<std::int64_t> shape;
    bool haveShape = false;
    std::size_t i = 0;
    skipSpaces(h, i);
    if (i >= h.size() || h[i] != '{')
        return Err("npy: header is not a dictionary");
    ++i;
    for (;;) {
        skipSpaces(h, i);
        if (i < h.size() && h[i] == '}')
            break;
        std::string key;
        if (!parseQuoted(h, i, key))
            return Err("npy: malformed header key");
        skipSpaces(h, i);
        if (i >= h.size() || h[i] != ':')
            return Err("npy: expected ':' after '" + key + "'");
        ++i;
        skipSpaces(h, i);
        if (key == "descr") {
            if (!parseQuoted(h, i, descr))
                return Err("npy: 'descr' must be a string");
        } else if (key == "fortran_order") {
            if (h.substr(i, 4) == "True") {
                fortran = 1;
                i += 4;
            } else if (h.substr(i, 5) == "False") {
                fortran = 0;
                i += 5;
            } else {
                return Err("npy: 'fortran_order' must be True or False");
            }
        } else if (key == "shape") {
            if (i >= h.size() || h[i] != '(')
                return Err("npy: 'shape' must be a tuple");
            ++i;
            for (;;) {
                skipSpaces(h, i);
                if (i < h.size() && h[i] == ')') {
                    ++i;
                    break;
                }
                if (i >= h.size() || h[i] < '0' || h[i] > '9')
                    return Err("npy: 'shape' holds a non-integer");
                std::int64_t v = 0;
                while (i < h.size() && h[i] >= '0' && h[i] <= '9') {
                    if (v > (kNpyMaxElements * 16) / 10)
                        return Err("npy: shape dimension too large");
                    v = v * 10 + (h[i++] - '0');
                }
                if (shape.size() >= 32)
                    return Err("npy: too many dimensions");
                shape.push_back(v);
                skipSpaces(h, i);
                if (i < h.size() && h[i] == ',')
                    ++i;
                else if (i < h.size() && h[i] == ')') {
                    ++i;
                    break;
                } else
                    return Err("npy: malformed 'shape' tuple");
            }
            haveShape = true;
        } else {
            return Err("npy: unexpected header key '" + key + "'");
        }
        skipSpaces(h, i);
        if (i < h.size() && h[i] == ',') {
            ++i;
            continue;
        }
        if (i < h.size() && h[i] == '}')
            break;
        return Err("npy: malformed header dictionary");
    }
    if (descr.empty())
        return Err("npy: header lacks 'descr'");
    if (fortran < 0)
        return Err("npy: header lacks 'fortran_order'");
    if (!haveShape)
        return Err("npy: header lacks 'shape'");
    if (fortran == 1)
        return Err("npy: Fortran-order arrays are not supported (save with np.ascontiguousarray)");
    int item = 0;
    if (descr == "<f2" || descr == "f2")
        item = 2;
    else if (descr == "<f4" || descr == "f4")
        item = 4;
    else if (descr == ">f2" || descr == ">f4")
        return Err("npy: big-endian data ('" + descr + "') is not supported");
    else
        return Err("npy: dtype '" + descr + "' is not supported (use float16 or float32)");
    std::int64_t count = 1;
    for (std::int64_t d : shape) {
        if (d != 0 && count > kNpyMaxElements / d)
            return Err("npy: shape claims more than 2^31 elements");
        count *= d;
    }
    if (count > kNpyMaxElements)
        return Err("npy: shape claims more than 2^31 elements");
    const std::size_t bytes = std::size_t(count) * std::size_t(item);
    if (size - pos < bytes)
        return Err("npy: truncated data (" + std::to_string(bytes) +
                   " bytes declared by the shape, " + std::to_string(size - pos) + " present)");
    if (size - pos > bytes)
        return Err("npy: " + std::to_string(size - pos - bytes) +
                   " unexpected bytes after the data");
    NpyArray a;
    a.shape = shape;
    a.itemBytes = item;
    a.data.resize(std::size_t(count));
    const std::uint8_t* p = data + pos;
    for (std::size_t k = 0; k < std::size_t(count); ++k) {
        if (item == 2) {
            const std::uint16_t b = std::uint16_t(p[2 * k] | (p[2 * k + 1] << 8));
            a.data[k] = halfToFloat(b);
        } else {
            const std::uint32_t b = std::uint32_t(p[4 * k]) | (std::uint32_t(p[4 * k + 1]) << 8) |
                                    (std::uint32_t(p[4 * k + 2]) << 16) |
                                    (std::uint32_t(p[4 * k + 3]) << 24);
            a.data[k] = bitsToFloat(b);
        }
    }
    return a;
}

std::variant<NpyArray, std::string> loadNpy(const std::string& path) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f)
        return Err("npy: cannot open " + path);
    const std::streamoff n = f.tellg();
    if (n < 0 || n > (std::streamoff(1) << 34))
        return Err("npy: " + path + " is too large");
    std::vector<std::uint8_t> buf(static_cast<std::size_t>(n));
    f.seekg(0);
    if (n > 0 && !f.read(reinterpret_cast<char*>(buf.data()), n))
        return Err("npy: cannot read " + path);
    auto r = parseNpy(buf.data(), buf.size());
    if (auto* e = std::get_if<std::string>(&r))
        return Err(*e + " (" + path + ")");
    return r;
}

std::string checkKvShape(const NpyArray& a, int kvHeads, int headDim, const std::string& what) {
    if (a.shape.size() != 3)
        return what + ": expected shape [tokens, kv_heads, head_dim], got " +
               std::to_string(a.shape.size()) + " dimensions";
    if (a.shape[0] < 1)
        return what + ": no tokens";
    if (a.shape[1] != kvHeads || a.shape[2] != headDim)
        return what + ": shape [" + std::to_string(a.shape[0]) + ", " + std::to_string(a.shape[1]) +
               ", " + std::to_string(a.shape[2]) + "] does not match the layer (kv_heads " +
               std::to_string(kvHeads) + ", head_dim " + std::to_string(headDim) + ")";
    for (float x : a.data)
        if (!std::isfinite(x))
            return what + ": holds NaN or infinity";
    return {};
}

std::vector<std::uint8_t> encodeNpy(const std::vector<std::int64_t>& shape,
                                    const std::vector<float>& data, bool float16) {
    std::string h = std::string("{'descr': '") + (float16 ? "<f2" : "<f4") +
                    "', 'fortran_order': False, 'shape': (";
    for (std::size_t i = 0; i < shape.size(); ++i)
        h += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? ", " : "");
    h += "), }";
    while ((10 + h.size() + 1) % 64 != 0)
        h += ' ';
    h += '\n';
    std::vector<std::uint8_t> out(10 + h.size());
    const std::uint8_t magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    std::memcpy(out.data(), magic, 8);
    out[8] = std::uint8_t(h.size() & 0xff);
    out[9] = std::uint8_t(h.size() >> 8);
    std::memcpy(out.data() + 10, h.data(), h.size());
    for (float x : data) {
        if (float16) {
            const std::uint16_t b = floatToHalf(x);
            out.push_back(std::uint8_t(b & 0xff));
            out.push_back(std::uint8_t(b >> 8));
        } else {
            const std::uint32_t b = floatToBits(x);
            for (int k = 0; k < 4; ++k)
                out.push_back(std::uint8_t(b >> (8 * k)));
        }
    }
    return out;
}

} // namespace kvl::probe
