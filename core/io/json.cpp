#include "json.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <unordered_set>

namespace kvl::io {

namespace {

constexpr std::size_t kMaxDocumentBytes = std::size_t{64} << 20;
constexpr int kMaxDepth = 256;

// 2^63 as a double: the first value that no longer fits in int64.
constexpr double kTwoPow63 = 9223372036854775808.0;

void appendUtf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// Shortest text that reads back as the same double (std::to_chars: locale-independent).
std::string formatDouble(double d) {
    if (!std::isfinite(d))
        return "null"; // JSON has no NaN/Infinity
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, d);
    return std::string(buf, r.ptr);
}

void dumpString(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += static_cast<char>(c);
            }
        }
    }
    out += '"';
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Json

Json::Json(std::int64_t v) : m_value(Number{static_cast<double>(v), v}) {}

Json::Type Json::type() const {
    switch (m_value.index()) {
    case 0:
        return Type::Null;
    case 1:
        return Type::Bool;
    case 2:
        return Type::Number;
    case 3:
        return Type::String;
    case 4:
        return Type::Array;
    default:
        return Type::Object;
    }
}

bool Json::asBool() const {
    const bool* b = std::get_if<bool>(&m_value);
    return b ? *b : false;
}

double Json::asDouble() const {
    const Number* n = std::get_if<Number>(&m_value);
    return n ? n->d : 0.0;
}

std::optional<std::int64_t> Json::asInt64() const {
    const Number* n = std::get_if<Number>(&m_value);
    if (!n)
        return std::nullopt;
    if (n->i)
        return n->i;
    // A double with no fraction that fits (e.g. 1.0, 1e3) is an integer too.
    if (!std::isfinite(n->d) || std::trunc(n->d) != n->d)
        return std::nullopt;
    if (n->d < -kTwoPow63 || n->d >= kTwoPow63)
        return std::nullopt;
    return static_cast<std::int64_t>(n->d);
}

const std::string& Json::asString() const {
    static const std::string empty;
    const std::string* s = std::get_if<std::string>(&m_value);
    return s ? *s : empty;
}

const Json::Array& Json::asArray() const {
    static const Array empty;
    const Array* a = std::get_if<Array>(&m_value);
    return a ? *a : empty;
}

const Json::Object& Json::asObject() const {
    static const Object empty;
    const Object* o = std::get_if<Object>(&m_value);
    return o ? *o : empty;
}

// The mutable accessors turn a value of another type into an empty array/object rather than
// handing out a reference to a shared static.
Json::Array& Json::asArray() {
    if (!std::holds_alternative<Array>(m_value))
        m_value = Array{};
    return std::get<Array>(m_value);
}

Json::Object& Json::asObject() {
    if (!std::holds_alternative<Object>(m_value))
        m_value = Object{};
    return std::get<Object>(m_value);
}

const Json* Json::find(std::string_view key) const {
    const Object* o = std::get_if<Object>(&m_value);
    if (!o)
        return nullptr;
    for (const auto& [k, v] : *o)
        if (k == key)
            return &v;
    return nullptr;
}

void Json::set(std::string key, Json value) {
    Object* o = std::get_if<Object>(&m_value);
    if (!o)
        return;
    for (auto& [k, v] : *o) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    o->emplace_back(std::move(key), std::move(value));
}

namespace {

void dumpValue(std::string& out, const Json& j, int indent, int level) {
    const auto newline = [&](int lvl) {
        if (indent < 0)
            return;
        out += '\n';
        out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(lvl), ' ');
    };
    switch (j.type()) {
    case Json::Type::Null:
        out += "null";
        break;
    case Json::Type::Bool:
        out += j.asBool() ? "true" : "false";
        break;
    case Json::Type::Number: {
        // Exact integers (and doubles with no fraction that fit in int64) print as integers.
        if (const auto i = j.asInt64())
            out += std::to_string(*i);
        else
            out += formatDouble(j.asDouble());
        break;
    }
    case Json::Type::String:
        dumpString(out, j.asString());
        break;
    case Json::Type::Array: {
        const auto& a = j.asArray();
        if (a.empty()) {
            out += "[]";
            break;
        }
        out += '[';
        for (std::size_t k = 0; k < a.size(); ++k) {
            if (k)
                out += ',';
            newline(level + 1);
            dumpValue(out, a[k], indent, level + 1);
        }
        newline(level);
        out += ']';
        break;
    }
    case Json::Type::Object: {
        const auto& o = j.asObject();
        if (o.empty()) {
            out += "{}";
            break;
        }
        out += '{';
        for (std::size_t k = 0; k < o.size(); ++k) {
            if (k)
                out += ',';
            newline(level + 1);
            dumpString(out, o[k].first);
            out += indent < 0 ? ":" : ": ";
            dumpValue(out, o[k].second, indent, level + 1);
        }
        newline(level);
        out += '}';
        break;
    }
    }
}

} // namespace

std::string Json::dump(int indent) const {
    std::string out;
    dumpValue(out, *this, indent, 0);
    return out;
}

// ---------------------------------------------------------------------------------------------
// Parser: recursive descent, depth bounded by kMaxDepth so the stack is bounded too. Every loop
// consumes at least one byte per iteration, so no input can make it spin.

class JsonParser {
public:
    explicit JsonParser(std::string_view text) : m_text(text) {}

    std::variant<Json, JsonError> run() {
        if (m_text.size() > kMaxDocumentBytes)
            return JsonError{"line 1, column 1: document larger than 64 MiB", 1, 1};
        // A UTF-8 byte order mark is tolerated (RFC 8259 section 8.1 lets parsers ignore it).
        if (m_text.substr(0, 3) == "\xEF\xBB\xBF")
            m_pos = 3;
        skipWhitespace();
        if (m_pos >= m_text.size())
            return fail("empty document");
        Json value;
        if (!parseValue(value, 0))
            return *m_error;
        skipWhitespace();
        if (m_pos < m_text.size())
            return fail("unexpected text after the JSON value");
        return value;
    }

private:
    std::string_view m_text;
    std::size_t m_pos = 0;
    std::optional<JsonError> m_error;

    JsonError fail(const std::string& what) { return failAt(m_pos, what); }

    JsonError failAt(std::size_t pos, const std::string& what) {
        int line = 1;
        int column = 1;
        const std::size_t end = std::min(pos, m_text.size());
        for (std::size_t k = 0; k < end; ++k) {
            if (m_text[k] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        JsonError e{"line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
                        what,
                    line, column};
        m_error = e;
        return e;
    }

    bool error(const std::string& what) {
        failAt(m_pos, what);
        return false;
    }

    bool errorAt(std::size_t pos, const std::string& what) {
        failAt(pos, what);
        return false;
    }

    static std::string describe(char c) {
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x20 && u < 0x7F)
            return std::string("'") + c + "'";
        char buf[16];
        std::snprintf(buf, sizeof buf, "byte 0x%02X", u);
        return buf;
    }

    bool atEnd() const { return m_pos >= m_text.size(); }
    char peek() const { return m_text[m_pos]; }

    void skipWhitespace() {
        while (m_pos < m_text.size()) {
            const char c = m_text[m_pos];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
                break;
            ++m_pos;
        }
    }

    bool parseValue(Json& out, int depth) {
        if (atEnd())
            return error("unexpected end of input, expected a value");
        const char c = peek();
        switch (c) {
        case '{':
            return parseObject(out, depth + 1);
        case '[':
            return parseArray(out, depth + 1);
        case '"': {
            std::string s;
            if (!parseString(s))
                return false;
            out = Json(std::move(s));
            return true;
        }
        case 't':
            return parseLiteral("true", Json(true), out);
        case 'f':
            return parseLiteral("false", Json(false), out);
        case 'n':
            return parseLiteral("null", Json(nullptr), out);
        default:
            if (c == '-' || (c >= '0' && c <= '9'))
                return parseNumber(out);
            if (c == 'N' || c == 'I')
                return error("NaN and Infinity are not JSON numbers");
            return error("unexpected " + describe(c) + ", expected a value");
        }
    }

    bool parseLiteral(std::string_view word, Json value, Json& out) {
        if (m_text.substr(m_pos, word.size()) != word)
            return error("invalid literal, expected '" + std::string(word) + "'");
        m_pos += word.size();
        out = std::move(value);
        return true;
    }

    bool parseNumber(Json& out) {
        const std::size_t start = m_pos;
        bool isInteger = true;
        if (peek() == '-')
            ++m_pos;
        if (atEnd() || peek() < '0' || peek() > '9') {
            if (!atEnd() && peek() == 'I')
                return error("NaN and Infinity are not JSON numbers");
            return error("expected a digit");
        }
        if (peek() == '0') {
            ++m_pos;
            if (!atEnd() && peek() >= '0' && peek() <= '9')
                return error("leading zeros are not allowed");
        } else {
            while (!atEnd() && peek() >= '0' && peek() <= '9')
                ++m_pos;
        }
        if (!atEnd() && peek() == '.') {
            isInteger = false;
            ++m_pos;
            if (atEnd() || peek() < '0' || peek() > '9')
                return error("expected a digit after the decimal point");
            while (!atEnd() && peek() >= '0' && peek() <= '9')
                ++m_pos;
        }
        if (!atEnd() && (peek() == 'e' || peek() == 'E')) {
            isInteger = false;
            ++m_pos;
            if (!atEnd() && (peek() == '+' || peek() == '-'))
                ++m_pos;
            if (atEnd() || peek() < '0' || peek() > '9')
                return error("expected a digit in the exponent");
            while (!atEnd() && peek() >= '0' && peek() <= '9')
                ++m_pos;
        }
        const char* first = m_text.data() + start;
        const char* last = m_text.data() + m_pos;
        Json::Number n;
        // from_chars is locale-independent (strtod would follow a German locale's ',').
        const auto r = std::from_chars(first, last, n.d);
        if (r.ec == std::errc::result_out_of_range) {
            // Underflow (1e-400) reads as zero; overflow (1e400) has no double and is refused.
            bool tiny = false;
            for (const char* p = first; p < last; ++p)
                if ((*p == 'e' || *p == 'E') && p + 1 < last && p[1] == '-')
                    tiny = true;
            if (!tiny)
                return errorAt(start, "number out of range");
            n.d = (*first == '-') ? -0.0 : 0.0;
        } else if (r.ec != std::errc() || r.ptr != last) {
            return errorAt(start, "invalid number");
        }
        if (isInteger) {
            std::int64_t i = 0;
            const auto ri = std::from_chars(first, last, i);
            if (ri.ec == std::errc() && ri.ptr == last)
                n.i = i;
        }
        out = Json(n);
        return true;
    }

    static int hexValue(char c) {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        return -1;
    }

    bool parseHex4(std::uint32_t& cp) {
        if (m_text.size() - m_pos < 4)
            return error("truncated \\u escape");
        cp = 0;
        for (int k = 0; k < 4; ++k) {
            const int h = hexValue(m_text[m_pos + static_cast<std::size_t>(k)]);
            if (h < 0)
                return errorAt(m_pos + static_cast<std::size_t>(k),
                               "invalid hex digit in \\u escape");
            cp = cp * 16 + static_cast<std::uint32_t>(h);
        }
        m_pos += 4;
        return true;
    }

    // Validates one raw UTF-8 sequence starting at m_pos (RFC 3629: no overlongs, no
    // surrogates, nothing above U+10FFFF) and appends it.
    bool copyUtf8(std::string& out) {
        const auto b0 = static_cast<unsigned char>(m_text[m_pos]);
        int len = 0;
        std::uint32_t cp = 0;
        if (b0 >= 0xC2 && b0 <= 0xDF) {
            len = 2;
            cp = b0 & 0x1F;
        } else if (b0 >= 0xE0 && b0 <= 0xEF) {
            len = 3;
            cp = b0 & 0x0F;
        } else if (b0 >= 0xF0 && b0 <= 0xF4) {
            len = 4;
            cp = b0 & 0x07;
        } else {
            return error("invalid UTF-8 in string");
        }
        if (m_text.size() - m_pos < static_cast<std::size_t>(len))
            return error("truncated UTF-8 sequence in string");
        for (int k = 1; k < len; ++k) {
            const auto b = static_cast<unsigned char>(m_text[m_pos + static_cast<std::size_t>(k)]);
            if ((b & 0xC0) != 0x80)
                return error("invalid UTF-8 in string");
            cp = (cp << 6) | (b & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return error("invalid UTF-8 in string");
        out.append(m_text.substr(m_pos, static_cast<std::size_t>(len)));
        m_pos += static_cast<std::size_t>(len);
        return true;
    }

    bool parseString(std::string& out) {
        const std::size_t open = m_pos;
        ++m_pos; // opening quote
        while (true) {
            if (atEnd())
                return errorAt(open, "unterminated string");
            const char c = peek();
            const auto u = static_cast<unsigned char>(c);
            if (c == '"') {
                ++m_pos;
                return true;
            }
            if (u < 0x20)
                return error("control character in string (must be escaped)");
            if (u >= 0x80) {
                if (!copyUtf8(out))
                    return false;
                continue;
            }
            if (c != '\\') {
                out += c;
                ++m_pos;
                continue;
            }
            ++m_pos;
            if (atEnd())
                return errorAt(open, "unterminated string");
            const char e = peek();
            ++m_pos;
            switch (e) {
            case '"':
                out += '"';
                break;
            case '\\':
                out += '\\';
                break;
            case '/':
                out += '/';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                const std::size_t escapeStart = m_pos - 2;
                std::uint32_t cp = 0;
                if (!parseHex4(cp))
                    return false;
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return errorAt(escapeStart, "lone low surrogate in \\u escape");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    // A high surrogate must be followed by an escaped low surrogate.
                    if (m_text.substr(m_pos, 2) != "\\u")
                        return errorAt(escapeStart, "lone high surrogate in \\u escape");
                    m_pos += 2;
                    std::uint32_t low = 0;
                    if (!parseHex4(low))
                        return false;
                    if (low < 0xDC00 || low > 0xDFFF)
                        return errorAt(escapeStart, "lone high surrogate in \\u escape");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                }
                appendUtf8(out, cp);
                break;
            }
            default:
                return errorAt(m_pos - 2, "invalid escape \\" + describe(e));
            }
        }
    }

    bool parseArray(Json& out, int depth) {
        if (depth > kMaxDepth)
            return error("nesting deeper than 256 levels");
        ++m_pos; // '['
        Json::Array items;
        skipWhitespace();
        if (!atEnd() && peek() == ']') {
            ++m_pos;
            out = Json(std::move(items));
            return true;
        }
        while (true) {
            skipWhitespace();
            if (!atEnd() && peek() == ']')
                return error("trailing comma in array");
            Json item;
            if (!parseValue(item, depth))
                return false;
            items.push_back(std::move(item));
            skipWhitespace();
            if (atEnd())
                return error("unexpected end of input, expected ',' or ']'");
            if (peek() == ',') {
                ++m_pos;
                continue;
            }
            if (peek() == ']') {
                ++m_pos;
                out = Json(std::move(items));
                return true;
            }
            return error("expected ',' or ']', got " + describe(peek()));
        }
    }

    bool parseObject(Json& out, int depth) {
        if (depth > kMaxDepth)
            return error("nesting deeper than 256 levels");
        ++m_pos; // '{'
        Json::Object members;
        std::unordered_set<std::string> seen;
        skipWhitespace();
        if (!atEnd() && peek() == '}') {
            ++m_pos;
            out = Json(std::move(members));
            return true;
        }
        while (true) {
            skipWhitespace();
            if (atEnd())
                return error("unexpected end of input, expected a member name");
            if (peek() == '}')
                return error("trailing comma in object");
            if (peek() != '"')
                return error("expected a member name in double quotes, got " + describe(peek()));
            const std::size_t keyPos = m_pos;
            std::string key;
            if (!parseString(key))
                return false;
            // Duplicate names are legal but ambiguous (RFC 8259 4); a catalog with two
            // "num_kv_heads" is a mistake, so it is refused.
            if (!seen.insert(key).second)
                return errorAt(keyPos, "duplicate member name \"" + key + "\"");
            skipWhitespace();
            if (atEnd() || peek() != ':')
                return error("expected ':' after the member name");
            ++m_pos;
            skipWhitespace();
            Json value;
            if (!parseValue(value, depth))
                return false;
            members.emplace_back(std::move(key), std::move(value));
            skipWhitespace();
            if (atEnd())
                return error("unexpected end of input, expected ',' or '}'");
            if (peek() == ',') {
                ++m_pos;
                continue;
            }
            if (peek() == '}') {
                ++m_pos;
                out = Json(std::move(members));
                return true;
            }
            return error("expected ',' or '}', got " + describe(peek()));
        }
    }
};

std::variant<Json, JsonError> parseJson(std::string_view text) {
    try {
        return JsonParser(text).run();
    } catch (const std::exception& e) {
        // Only allocation can throw here; report it instead of escaping a noexcept caller.
        return JsonError{std::string("line 1, column 1: out of memory (") + e.what() + ")", 1, 1};
    }
}

std::optional<std::string> readFile(const std::string& path, std::string& out) {
    namespace fs = std::filesystem;
    out.clear();
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (ec || !fs::exists(st))
        return std::string("no such file");
    if (fs::is_directory(st))
        return std::string("is a directory, not a file");
    if (!fs::is_regular_file(st))
        return std::string("not a regular file");
    const auto size = fs::file_size(path, ec);
    if (ec)
        return "cannot read: " + ec.message();
    if (size > kMaxDocumentBytes)
        return std::string("file is larger than 64 MiB");
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f)
        return "cannot open: " + std::string(std::strerror(errno));
    try {
        out.resize(static_cast<std::size_t>(size));
    } catch (const std::exception&) {
        std::fclose(f);
        return std::string("out of memory");
    }
    const std::size_t got = size ? std::fread(out.data(), 1, out.size(), f) : 0;
    const bool readError = std::ferror(f) != 0;
    // The file may have grown since the size check: read past it to notice.
    char extra;
    const bool grew = !readError && std::fread(&extra, 1, 1, f) == 1;
    std::fclose(f);
    if (readError)
        return std::string("read error");
    if (grew)
        return std::string("file changed while reading");
    out.resize(got);
    return std::nullopt;
}

} // namespace kvl::io
