#include "gpu_probe/io/npy.h"

#include "core/io/files.h"
#include "core/names.h"
#include "gpu_probe/kv_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string_view>

namespace kvl::probe {

namespace {

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

Error bad(std::string message) {
    return Error{ErrorCode::BadFile, std::move(message)};
}

// Where the header ends (magic, version, length field and the dictionary), from the file's first
// bytes; at most 12 + 64 KiB.
Result<std::size_t> headerEnd(const std::uint8_t* data, std::size_t size) {
    static const std::uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (!data || size < 10)
        return bad("file too short for a header (" + std::to_string(size) + " bytes)");
    if (std::memcmp(data, magic, 6) != 0)
        return bad("bad magic (not a NumPy .npy file)");
    const int major = data[6];
    if (major == 1)
        return 10 + (std::size_t(data[8]) | (std::size_t(data[9]) << 8));
    if (major != 2 && major != 3)
        return bad("unsupported format version " + std::to_string(major));
    if (size < 12)
        return bad("file too short for a version 2 header");
    return 12 + (std::size_t(data[8]) | (std::size_t(data[9]) << 8) |
                 (std::size_t(data[10]) << 16) | (std::size_t(data[11]) << 24));
}

// Little-endian fp16 / fp32 elements to float.
void convertData(const std::uint8_t* p, std::size_t count, int item, float* out) {
    for (std::size_t k = 0; k < count; ++k) {
        if (item == 2) {
            const std::uint16_t b = std::uint16_t(p[2 * k] | (p[2 * k + 1] << 8));
            out[k] = halfToFloat(b);
        } else {
            const std::uint32_t b = std::uint32_t(p[4 * k]) | (std::uint32_t(p[4 * k + 1]) << 8) |
                                    (std::uint32_t(p[4 * k + 2]) << 16) |
                                    (std::uint32_t(p[4 * k + 3]) << 24);
            out[k] = bitsToFloat(b);
        }
    }
}

// The data section's size against what the header declares.
Status checkDataBytes(const NpyHeader& header, std::size_t present) {
    const std::size_t bytes = header.dataBytes();
    if (present < bytes)
        return bad("truncated data (" + std::to_string(bytes) + " bytes declared by the shape, " +
                   std::to_string(present) + " present)");
    if (present > bytes)
        return bad(std::to_string(present - bytes) + " unexpected bytes after the data");
    return {};
}

// The header's 'shape' tuple at h[i] ("(4, 128)", "(7,)", "()"), i left after it.
Status parseShape(std::string_view h, std::size_t& i, std::vector<std::int64_t>& shape) {
    if (i >= h.size() || h[i] != '(')
        return bad("'shape' must be a tuple");
    ++i;
    for (;;) {
        skipSpaces(h, i);
        if (i < h.size() && h[i] == ')') {
            ++i;
            return {};
        }
        if (i >= h.size() || h[i] < '0' || h[i] > '9')
            return bad("'shape' holds a non-integer");
        std::int64_t v = 0;
        while (i < h.size() && h[i] >= '0' && h[i] <= '9') {
            if (v > (kNpyMaxElements * 16) / 10)
                return bad("shape dimension too large");
            v = v * 10 + (h[i++] - '0');
        }
        if (shape.size() >= 32)
            return bad("too many dimensions");
        shape.push_back(v);
        skipSpaces(h, i);
        if (i < h.size() && h[i] == ',') {
            ++i;
        } else if (i < h.size() && h[i] == ')') {
            ++i;
            return {};
        } else {
            return bad("malformed 'shape' tuple");
        }
    }
}

Result<NpyHeader> parseHeader(const std::uint8_t* data, std::size_t size) {
    auto end = headerEnd(data, size);
    if (!end)
        return end.error();
    std::size_t pos = data[6] == 1 ? 10 : 12;
    const std::size_t headerLen = *end - pos;
    if (headerLen > kNpyMaxHeaderBytes)
        return bad("header length " + std::to_string(headerLen) + " exceeds 64 KiB");
    if (headerLen > size - pos)
        return bad("truncated header (" + std::to_string(headerLen) + " bytes declared, " +
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
        return bad("header is not a dictionary");
    ++i;
    for (;;) {
        skipSpaces(h, i);
        if (i < h.size() && h[i] == '}')
            break;
        std::string key;
        if (!parseQuoted(h, i, key))
            return bad("malformed header key");
        skipSpaces(h, i);
        if (i >= h.size() || h[i] != ':')
            return bad("expected ':' after '" + core::shownName(key) + "'");
        ++i;
        skipSpaces(h, i);
        if (key == "descr") {
            if (!parseQuoted(h, i, descr))
                return bad("'descr' must be a string");
        } else if (key == "fortran_order") {
            if (h.substr(i, 4) == "True") {
                fortran = 1;
                i += 4;
            } else if (h.substr(i, 5) == "False") {
                fortran = 0;
                i += 5;
            } else {
                return bad("'fortran_order' must be True or False");
            }
        } else if (key == "shape") {
            if (auto ok = parseShape(h, i, shape); !ok)
                return ok.error();
            haveShape = true;
        } else {
            return bad("unexpected header key '" + core::shownName(key) + "'");
        }
        skipSpaces(h, i);
        if (i < h.size() && h[i] == ',') {
            ++i;
            continue;
        }
        if (i < h.size() && h[i] == '}')
            break;
        return bad("malformed header dictionary");
    }
    if (descr.empty())
        return bad("header lacks 'descr'");
    if (fortran < 0)
        return bad("header lacks 'fortran_order'");
    if (!haveShape)
        return bad("header lacks 'shape'");
    if (fortran == 1)
        return bad("Fortran-order arrays are not supported (save with np.ascontiguousarray)");
    int item = 0;
    if (descr == "<f2" || descr == "f2")
        item = 2;
    else if (descr == "<f4" || descr == "f4")
        item = 4;
    else if (descr == ">f2" || descr == ">f4")
        return bad("big-endian data ('" + core::shownName(descr) + "') is not supported");
    else
        return bad("dtype '" + core::shownName(descr) +
                   "' is not supported (use float16 or float32)");
    std::int64_t count = 1;
    for (std::int64_t d : shape) {
        if (d != 0 && count > kNpyMaxElements / d)
            return bad("shape claims more than 2^31 elements");
        count *= d;
    }
    if (count > kNpyMaxElements)
        return bad("shape claims more than 2^31 elements");
    NpyHeader header;
    header.shape = shape;
    header.itemBytes = item;
    header.count = count;
    header.dataOffset = pos;
    return header;
}

} // namespace

Result<NpyHeader> parseNpyHeader(const std::uint8_t* data, std::size_t size) {
    auto header = parseHeader(data, size);
    if (!header)
        return header.error().prefixed("npy");
    return header;
}

Result<NpyArray> parseNpy(const std::uint8_t* data, std::size_t size) {
    auto header = parseNpyHeader(data, size);
    if (!header)
        return header.error();
    if (Status fits = checkDataBytes(*header, size - header->dataOffset); !fits)
        return fits.error().prefixed("npy");
    NpyArray a;
    a.shape = header->shape;
    a.itemBytes = header->itemBytes;
    a.data.resize(std::size_t(header->count));
    convertData(data + header->dataOffset, a.data.size(), a.itemBytes, a.data.data());
    return a;
}

namespace {

// Reads exactly n bytes; a file that ends sooner changed after its size was taken.
Status readExactly(io::RegularFile& file, const std::string& path, std::uint8_t* buffer,
                   std::size_t n) {
    auto got = file.read(buffer, n);
    if (!got)
        return got.error();
    if (*got != n)
        return Error{ErrorCode::Io, path + ": changed while it was read (it shrank)"};
    return {};
}

// The fixed prefix, then the header it announces (at most 64 KiB), parsed: nothing of the data is
// read.
Result<NpyHeader> readHeader(io::RegularFile& file, const std::string& path,
                             std::size_t fileBytes) {
    std::vector<std::uint8_t> head(std::min<std::size_t>(fileBytes, 12));
    if (Status got = readExactly(file, path, head.data(), head.size()); !got)
        return got.error();
    auto end = headerEnd(head.data(), head.size());
    if (!end)
        return end.error().prefixed(path);
    const std::size_t wanted = std::min(std::min(*end, fileBytes), 12 + kNpyMaxHeaderBytes + 1);
    if (wanted > head.size()) {
        const std::size_t had = head.size();
        head.resize(wanted);
        if (Status got = readExactly(file, path, head.data() + had, wanted - had); !got)
            return got.error();
    }
    // A header that parses is longer than the 12 bytes read first (it names three keys), so the
    // file is at its data's first byte.
    auto header = parseHeader(head.data(), head.size());
    if (!header)
        return header.error().prefixed(path);
    return header;
}

std::size_t sizeOf(const io::RegularFile& file) {
    return std::size_t(std::max<std::int64_t>(0, file.size()));
}

} // namespace

Result<NpyHeader> readNpyHeader(const std::string& path) {
    auto file = io::RegularFile::open(path);
    if (!file)
        return file.error();
    return readHeader(*file, path, sizeOf(*file));
}

Result<NpyArray> loadNpy(const std::string& path) {
    auto file = io::RegularFile::open(path);
    if (!file)
        return file.error();
    const std::size_t fileBytes = sizeOf(*file);
    // The header and the file's size must agree before anything of the data is read or
    // allocated.
    auto header = readHeader(*file, path, fileBytes);
    if (!header)
        return header.error();
    if (Status fits = checkDataBytes(*header, fileBytes - header->dataOffset); !fits)
        return fits.error().prefixed(path);
    NpyArray a;
    a.shape = header->shape;
    a.itemBytes = header->itemBytes;
    try {
        a.data.resize(std::size_t(header->count));
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::OutOfMemory, path + ": not enough memory for its " +
                                                 std::to_string(header->count) + " elements"};
    }
    // The data in pieces of 1 MiB, converted as they arrive.
    constexpr std::size_t kPiece = std::size_t(1) << 20;
    std::vector<std::uint8_t> piece(std::min(kPiece, header->dataBytes()));
    const std::size_t perPiece = kPiece / std::size_t(a.itemBytes);
    for (std::size_t done = 0; done < a.data.size();) {
        const std::size_t count = std::min(perPiece, a.data.size() - done);
        if (Status got = readExactly(*file, path, piece.data(), count * std::size_t(a.itemBytes));
            !got)
            return got.error();
        convertData(piece.data(), count, a.itemBytes, a.data.data() + done);
        done += count;
    }
    return a;
}

Status checkKvShape(const std::vector<std::int64_t>& shape, int kvHeads, int headDim,
                    const std::string& what) {
    if (shape.size() != 3)
        return bad(what + ": expected shape [tokens, kv_heads, head_dim], got " +
                   std::to_string(shape.size()) + " dimensions");
    if (shape[0] < 1)
        return bad(what + ": no tokens");
    if (shape[1] != kvHeads || shape[2] != headDim)
        return bad(what + ": shape [" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) +
                   ", " + std::to_string(shape[2]) + "] does not match the layer (kv_heads " +
                   std::to_string(kvHeads) + ", head_dim " + std::to_string(headDim) + ")");
    return {};
}

Status checkKvShape(const NpyArray& a, int kvHeads, int headDim, const std::string& what) {
    if (Status fits = checkKvShape(a.shape, kvHeads, headDim, what); !fits)
        return fits;
    for (float x : a.data)
        if (!std::isfinite(x))
            return bad(what + ": holds NaN or infinity");
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
