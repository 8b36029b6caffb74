#include "gguf.h"

#include "core/llamacpp/ggml_types.h"
#include "core/names.h"
#include "core/saturating.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace kvl::io {

namespace {

// gguf_type (ggml/include/gguf.h).
enum : std::uint32_t {
    kU8 = 0,
    kI8,
    kU16,
    kI16,
    kU32,
    kI32,
    kF32,
    kBool,
    kString,
    kArray,
    kU64,
    kI64,
    kF64,
};

struct Fail {
    std::string message;
};

// A bounded sequential reader: every read checks what is left of the file first.
class Reader {
public:
    Reader(std::ifstream& in, std::int64_t size) : m_in(in), m_size(size) {}
    std::int64_t pos() const { return m_pos; }
    std::int64_t left() const { return m_size - m_pos; }

    void bytes(void* out, std::int64_t n, const char* what) {
        if (n < 0 || n > left())
            throw Fail{std::string("truncated: ") + what + " at byte " + std::to_string(m_pos) +
                       " needs " + std::to_string(n) + " bytes, " + std::to_string(left()) +
                       " left"};
        m_in.read(static_cast<char*>(out), n);
        if (!m_in)
            throw Fail{std::string("read error at byte ") + std::to_string(m_pos)};
        m_pos += n;
    }
    void skip(std::int64_t n, const char* what) {
        if (n < 0 || n > left())
            throw Fail{std::string("truncated: ") + what + " at byte " + std::to_string(m_pos) +
                       " needs " + std::to_string(n) + " bytes, " + std::to_string(left()) +
                       " left"};
        m_in.seekg(n, std::ios::cur);
        m_pos += n;
    }
    template <class T> T num(const char* what) {
        T v{};
        unsigned char b[sizeof(T)];
        bytes(b, sizeof(T), what);
        std::memcpy(&v, b, sizeof(T)); // GGUF is little-endian, as every host KV Ledger runs on
        return v;
    }
    std::string str(const char* what) {
        const std::uint64_t n = num<std::uint64_t>(what);
        if (n > std::uint64_t(left()))
            throw Fail{std::string("truncated or lying about its sizes: ") + what + " at byte " +
                       std::to_string(m_pos - 8) + " claims " + std::to_string(n) +
                       " bytes, the file has " + std::to_string(left()) + " left"};
        std::string s(std::size_t(n), '\0');
        bytes(s.data(), std::int64_t(n), what);
        return s;
    }

private:
    std::ifstream& m_in;
    std::int64_t m_size = 0;
    std::int64_t m_pos = 0;
};

std::int64_t scalarSize(std::uint32_t t) {
    switch (t) {
    case kU8:
    case kI8:
    case kBool:
        return 1;
    case kU16:
    case kI16:
        return 2;
    case kU32:
    case kI32:
    case kF32:
        return 4;
    case kU64:
    case kI64:
    case kF64:
        return 8;
    default:
        return 0;
    }
}

// An integer value of any integer type (metadata such as block_count is u32 in most files,
// u64 in some).
std::optional<std::int64_t> readInt(Reader& r, std::uint32_t t) {
    switch (t) {
    case kU8:
        return r.num<std::uint8_t>("a value");
    case kI8:
        return r.num<std::int8_t>("a value");
    case kU16:
        return r.num<std::uint16_t>("a value");
    case kI16:
        return r.num<std::int16_t>("a value");
    case kU32:
        return r.num<std::uint32_t>("a value");
    case kI32:
        return r.num<std::int32_t>("a value");
    case kU64: {
        const auto v = r.num<std::uint64_t>("a value");
        return v > std::uint64_t(INT64_MAX) ? std::nullopt : std::optional<std::int64_t>(v);
    }
    case kI64:
        return r.num<std::int64_t>("a value");
    default:
        return std::nullopt;
    }
}

bool endsWith(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The magic, the version and the two counts; the counts checked against the file's size.
void readPreamble(Reader& r, std::int64_t size, GgufInfo& g, std::uint64_t& nTensors,
                  std::uint64_t& nKv) {
    char magic[4] = {};
    if (size < 4)
        throw Fail{"not a GGUF file (" + std::to_string(size) + " bytes, no magic)"};
    r.bytes(magic, 4, "the magic");
    if (std::memcmp(magic, "GGUF", 4) != 0)
        throw Fail{"not a GGUF file (it does not start with \"GGUF\")"};
    g.version = r.num<std::uint32_t>("the version");
    if (g.version != 2 && g.version != 3)
        throw Fail{"GGUF version " + std::to_string(g.version) +
                   " is not one KV Ledger reads (2 or 3)"};
    nTensors = r.num<std::uint64_t>("the tensor count");
    nKv = r.num<std::uint64_t>("the metadata count");
    // A key/value takes at least 8 + 4 + 1 bytes and a tensor info 8 + 4 + 8 + 4 + 8.
    if (nKv > std::uint64_t(r.left() / 13) || nTensors > std::uint64_t(r.left() / 32))
        throw Fail{"truncated or lying about its sizes: " + std::to_string(nTensors) +
                   " tensors and " + std::to_string(nKv) + " metadata keys cannot fit in " +
                   std::to_string(size) + " bytes"};
    g.tensorCount = std::int64_t(nTensors);
}

// An array value: skipped, except the per-layer KV head counts.
void readArray(Reader& r, const std::string& key, GgufInfo& g) {
    const std::uint32_t et = r.num<std::uint32_t>("an array type");
    const std::uint64_t n = r.num<std::uint64_t>("an array length");
    const bool kvHeads = endsWith(key, ".attention.head_count_kv");
    if (et == kString) {
        for (std::uint64_t k = 0; k < n; ++k) {
            const std::uint64_t len = r.num<std::uint64_t>("an array string");
            r.skip(std::int64_t(std::min<std::uint64_t>(len, INT64_MAX)), "an array string");
        }
        return;
    }
    const std::int64_t es = scalarSize(et);
    if (es == 0)
        throw Fail{"metadata '" + core::shownName(key) + "' is an array of type " +
                   std::to_string(et) + ", which GGUF does not define"};
    if (n > std::uint64_t(r.left() / es))
        throw Fail{"truncated or lying about its sizes: metadata '" + core::shownName(key) +
                   "' claims " + std::to_string(n) + " elements, the file has " +
                   std::to_string(r.left()) + " bytes left"};
    if (kvHeads) {
        for (std::uint64_t k = 0; k < n; ++k)
            g.headCountKv.push_back(readInt(r, et).value_or(0));
    } else {
        r.skip(std::int64_t(n) * es, "an array");
    }
}

// The "{arch}." integer keys read into a field as they are.
struct ArchInt {
    std::string_view key;
    std::int64_t GgufInfo::*field;
};

constexpr ArchInt kArchInts[] = {
    {"block_count", &GgufInfo::blockCount},
    {"context_length", &GgufInfo::contextLength},
    {"embedding_length", &GgufInfo::embeddingLength},
    {"attention.head_count", &GgufInfo::headCount},
    {"attention.key_length", &GgufInfo::keyLength},
    {"attention.value_length", &GgufInfo::valueLength},
    {"attention.sliding_window", &GgufInfo::slidingWindow},
    {"expert_count", &GgufInfo::expertCount},
};

// A scalar value of `size` bytes: the integers KV Ledger reads (`prefix` is "{arch}.").
void readScalar(Reader& r, const std::string& key, std::uint32_t type, std::int64_t size,
                const std::string& prefix, GgufInfo& g) {
    if (type == kF32 || type == kF64 || type == kBool) {
        r.skip(size, "a value");
        return;
    }
    const std::optional<std::int64_t> v = readInt(r, type);
    if (!v)
        throw Fail{"metadata '" + core::shownName(key) + "' is larger than 2^63"};
    const std::string k =
        !prefix.empty() && key.rfind(prefix, 0) == 0 ? key.substr(prefix.size()) : std::string();
    if (key == "general.alignment")
        g.alignment = *v;
    else if (key == "general.file_type")
        g.fileType = std::string(core::llamacpp::llamaFtypeName(*v));
    else if (k == "attention.head_count_kv")
        g.headCountKv = {*v};
    else
        for (const ArchInt& a : kArchInts)
            if (k == a.key)
                g.*a.field = *v;
}

// The `nKv` metadata key/values, then the alignment they set.
void readMetadata(Reader& r, std::uint64_t nKv, GgufInfo& g) {
    std::string prefix; // "{arch}."
    for (std::uint64_t i = 0; i < nKv; ++i) {
        const std::string key = r.str("a metadata key");
        const std::uint32_t type = r.num<std::uint32_t>("a metadata type");
        if (type == kString) {
            const std::string v = r.str("a metadata string");
            if (key == "general.architecture") {
                g.architecture = v;
                prefix = v + ".";
            } else if (key == "general.name") {
                g.name = v;
            }
        } else if (type == kArray) {
            readArray(r, key, g);
        } else if (const std::int64_t ss = scalarSize(type); ss > 0) {
            readScalar(r, key, type, ss, prefix, g);
        } else {
            throw Fail{"metadata '" + core::shownName(key) + "' has type " + std::to_string(type) +
                       ", which GGUF does not define"};
        }
    }
    if (g.alignment <= 0 || (g.alignment & (g.alignment - 1)) != 0)
        throw Fail{"general.alignment " + std::to_string(g.alignment) + " is not a power of two"};
}

struct TensorInfo {
    std::string name;
    const core::llamacpp::GgmlTypeInfo* type;
    std::int64_t elements;
    std::int64_t bytes;
    std::uint64_t offset;
};

TensorInfo readTensorInfo(Reader& r) {
    TensorInfo t;
    t.name = r.str("a tensor name");
    const std::uint32_t dims = r.num<std::uint32_t>("a tensor's dimensions");
    if (dims == 0 || dims > 4)
        throw Fail{"tensor '" + core::shownName(t.name) + "' has " + std::to_string(dims) +
                   " dimensions (ggml has 1 to 4)"};
    t.elements = 1;
    std::int64_t rowValues = 0;
    for (std::uint32_t d = 0; d < dims; ++d) {
        const std::uint64_t n = r.num<std::uint64_t>("a tensor dimension");
        if (n == 0 || n > (std::uint64_t(1) << 40))
            throw Fail{"lying about its sizes: tensor '" + core::shownName(t.name) +
                       "' has a dimension of " + std::to_string(n)};
        if (d == 0)
            rowValues = std::int64_t(n);
        t.elements = core::satMul(t.elements, std::int64_t(n));
    }
    const std::uint32_t type = r.num<std::uint32_t>("a tensor type");
    t.type = core::llamacpp::ggmlType(int(type));
    if (!t.type)
        throw Fail{"tensor '" + core::shownName(t.name) + "' has ggml type " +
                   std::to_string(type) + ", which KV Ledger does not know"};
    if (rowValues % t.type->blockSize != 0)
        throw Fail{"tensor '" + core::shownName(t.name) + "' rows of " + std::to_string(rowValues) +
                   " values are not whole " + std::string(t.type->name) + " blocks"};
    t.bytes = core::satMul(t.elements / t.type->blockSize, t.type->typeSize);
    t.offset = r.num<std::uint64_t>("a tensor offset");
    return t;
}

// Each tensor checked to lie within the data section, and the weights summed by type.
void sumTensors(const std::vector<TensorInfo>& infos, std::int64_t size, GgufInfo& g) {
    const std::int64_t data = std::max<std::int64_t>(0, size - g.dataOffset);
    std::map<std::string, GgufTensorType> byType;
    for (const auto& t : infos) {
        if (t.offset > std::uint64_t(data) ||
            std::uint64_t(t.bytes) > std::uint64_t(data) - t.offset)
            throw Fail{"truncated or lying about its sizes: tensor '" + core::shownName(t.name) +
                       "' (" + std::string(t.type->name) + ", " + std::to_string(t.bytes) +
                       " bytes at data offset " + std::to_string(t.offset) +
                       ") ends past the file's " + std::to_string(data) + " bytes of data"};
        auto& e = byType[std::string(t.type->name)];
        e.type = t.type->name;
        ++e.tensors;
        e.elements = core::satAdd(e.elements, t.elements);
        e.bytes = core::satAdd(e.bytes, t.bytes);
        g.weightBytes = core::satAdd(g.weightBytes, t.bytes);
        g.weightElements = core::satAdd(g.weightElements, t.elements);
    }
    for (auto& [name, e] : byType)
        g.types.push_back(e);
    std::sort(g.types.begin(), g.types.end(),
              [](const GgufTensorType& a, const GgufTensorType& b) { return a.bytes > b.bytes; });
}

} // namespace

Result<GgufInfo> readGgufHeader(const std::string& path) {
    // An ifstream opens a directory on Linux and then fails its first read ("read error at byte
    // 0"); say what it is instead. Other non-regular files (a FIFO, a device) are read as streams.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        return makeError(ErrorCode::BadFile, path + ": is a directory, not a regular file");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorCode::NotFound, path + ": cannot open the file");
    in.seekg(0, std::ios::end);
    const std::int64_t size = in.tellg();
    in.seekg(0, std::ios::beg);
    GgufInfo g;
    g.path = path;
    try {
        Reader r(in, size);
        std::uint64_t nTensors = 0, nKv = 0;
        readPreamble(r, size, g, nTensors, nKv);
        readMetadata(r, nKv, g);
        std::vector<TensorInfo> infos;
        for (std::uint64_t i = 0; i < nTensors; ++i)
            infos.push_back(readTensorInfo(r));
        g.dataOffset = (r.pos() + g.alignment - 1) / g.alignment * g.alignment;
        sumTensors(infos, size, g);
    } catch (const Fail& f) {
        return makeError(ErrorCode::BadFile, path + ": " + f.message);
    }
    return g;
}

} // namespace kvl::io
