#include "json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace kvl::io {

namespace {

using nlohmann::json;

// A `const char*` that counts the bytes nlohmann's lexer has read, so that the limits and the
// duplicate-name check below, which stop the parse from the SAX handler, can say where. (The
// lexer reads one byte at a time through its input adapter.)
class CountingIterator {
public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    CountingIterator(const char* p, std::size_t* consumed) : m_p(p), m_consumed(consumed) {}
    reference operator*() const { return *m_p; }
    CountingIterator& operator++() {
        ++m_p;
        ++*m_consumed;
        return *this;
    }
    CountingIterator operator++(int) {
        CountingIterator old = *this;
        ++*this;
        return old;
    }
    friend bool operator==(const CountingIterator& a, const CountingIterator& b) {
        return a.m_p == b.m_p;
    }

private:
    const char* m_p;
    std::size_t* m_consumed;
};

// "line 3, column 8" of the last byte read when `consumed` bytes have been read (nlohmann
// counts the byte it stopped at).
std::string lineColumn(std::string_view text, std::size_t consumed) {
    const std::size_t at = std::min(consumed > 0 ? consumed - 1 : 0, text.size());
    std::size_t line = 1;
    std::size_t lineStart = 0;
    for (std::size_t k = 0; k < at; ++k) {
        if (text[k] == '\n') {
            ++line;
            lineStart = k + 1;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(at - lineStart + 1);
}

// nlohmann's what() without its "[json.exception.parse_error.101] parse error at line 1,
// column 4: " prefix (the position is given separately) and without the "; last read: '...'"
// echo of the input, which can be as long as the document. At most 160 characters.
std::string explanation(std::string what) {
    if (what.rfind("[json.exception.", 0) == 0) {
        if (const auto close = what.find("] "); close != std::string::npos)
            what.erase(0, close + 2);
    }
    for (const char* prefix : {"parse error at ", "parse error: "}) {
        if (what.rfind(prefix, 0) == 0) {
            const auto colon = what.find(": ", std::strlen(prefix) - 2);
            what.erase(0, colon == std::string::npos ? std::strlen(prefix) : colon + 2);
            break;
        }
    }
    if (const auto echo = what.find("; last read: '"); echo != std::string::npos) {
        const auto expected = what.rfind("; expected ");
        what.erase(echo, expected != std::string::npos && expected > echo ? expected - echo
                                                                          : std::string::npos);
    }
    if (what.size() > 160)
        what = what.substr(0, 157) + "...";
    return what;
}

// The non-finite tokens Python's json module writes (json.dumps(float("inf")) is Infinity) and
// the marker strings they become before nlohmann's lexer, which has no such literals, sees
// them. A marker decodes to a string that starts with a NUL character, which a JSON text can
// only spell as the escape \u0000, so no ordinary config value is mistaken for one; the
// builder turns each marker back into the double it stands for.
struct NonFiniteToken {
    std::string_view token;  // as in the file
    std::string_view marker; // the JSON string literal it is replaced by
    std::string_view decoded;
    double value;
};
const std::array<NonFiniteToken, 3>& nonFiniteTokens() {
    static const std::array<NonFiniteToken, 3> tokens{{
        {"-Infinity", R"("\u0000kvl:-inf")", std::string_view("\0kvl:-inf", 9),
         -std::numeric_limits<double>::infinity()},
        {"Infinity", R"("\u0000kvl:+inf")", std::string_view("\0kvl:+inf", 9),
         std::numeric_limits<double>::infinity()},
        {"NaN", R"("\u0000kvl:nan")", std::string_view("\0kvl:nan", 8),
         std::numeric_limits<double>::quiet_NaN()},
    }};
    return tokens;
}

// The document with every NaN / Infinity / -Infinity outside strings replaced by its marker,
// and where, so that an error position in the rewritten text is reported in the original.
// (nlohmann offers no hook for extra literals: its lexer rejects them before any SAX call.)
class NonFiniteRewrite {
public:
    explicit NonFiniteRewrite(std::string_view original) {
        bool inString = false;
        for (std::size_t i = 0; i < original.size(); ++i) {
            const char c = original[i];
            if (inString) {
                if (c == '\\' && i + 1 < original.size()) {
                    m_text += c;
                    m_text += original[++i];
                    continue;
                }
                inString = c != '"';
                m_text += c;
                continue;
            }
            if (c == '"') {
                inString = true;
                m_text += c;
                continue;
            }
            bool replaced = false;
            for (const auto& t : nonFiniteTokens()) {
                if (original.substr(i, t.token.size()) == t.token) {
                    m_replacements.push_back({m_text.size(), t.marker.size(), i, t.token.size()});
                    m_text += t.marker;
                    i += t.token.size() - 1;
                    replaced = true;
                    break;
                }
            }
            if (!replaced)
                m_text += c;
        }
    }
    const std::string& text() const { return m_text; }
    // A byte count in text() as a byte count in the original document.
    std::size_t original(std::size_t pos) const {
        std::size_t shift = 0;
        for (const auto& r : m_replacements) {
            if (pos <= r.at)
                break;
            if (pos < r.at + r.markerSize)
                return r.originalAt + std::min(pos - r.at, r.tokenSize);
            shift += r.markerSize - r.tokenSize;
        }
        return pos - shift;
    }

private:
    struct Replacement {
        std::size_t at, markerSize, originalAt, tokenSize;
    };
    std::string m_text;
    std::vector<Replacement> m_replacements;
};

// Builds the document like nlohmann's own DOM parser, and stops the parse (by returning false)
// as soon as a limit is exceeded or a member name repeats. nlohmann's parse() cannot be
// stopped early (its callback can only drop values), hence this handler.
class BoundedDomBuilder : public nlohmann::json_sax<json> {
public:
    BoundedDomBuilder(json& root, const std::size_t* consumed, bool nonFinite)
        : m_root(root), m_consumed(consumed), m_nonFinite(nonFinite) {}

    bool null() override { return add(nullptr); }
    bool boolean(bool v) override { return add(v); }
    bool number_integer(number_integer_t v) override { return add(v); }
    bool number_unsigned(number_unsigned_t v) override { return add(v); }
    bool number_float(number_float_t v, const string_t&) override {
        if (!std::isfinite(v))
            return stop("number out of range");
        return add(v);
    }
    bool string(string_t& v) override {
        if (const NonFiniteToken* t = marker(v))
            return add(t->value);
        return add(std::move(v));
    }
    bool binary(binary_t&) override { return stop("binary values are not JSON"); }

    bool start_object(std::size_t) override { return open(json::value_t::object); }
    bool key(string_t& k) override {
        if (marker(k)) // {Infinity: 1} is no more valid than in strict JSON
            return stop("syntax error while parsing object key - invalid literal");
        auto& members = m_stack.back()->get_ref<json::object_t&>();
        auto [it, inserted] = members.emplace(k, nullptr);
        // Duplicate names are legal JSON but ambiguous (RFC 8259 section 4: the result is
        // unpredictable); a config with two "num_key_value_heads" is a mistake, so it is refused.
        if (!inserted)
            return stop("duplicate member name " + quoteText(k));
        m_member = &it->second;
        return true;
    }
    bool end_object() override {
        m_stack.pop_back();
        return true;
    }
    bool start_array(std::size_t) override { return open(json::value_t::array); }
    bool end_array() override {
        m_stack.pop_back();
        return true;
    }

    bool parse_error(std::size_t position, const std::string&,
                     const nlohmann::json::exception& ex) override {
        m_position = position;
        m_error = explanation(ex.what());
        return false;
    }

    const std::string& error() const { return m_error; }
    std::size_t position() const { return m_position; }

private:
    json& m_root;
    const std::size_t* m_consumed;
    std::vector<json*> m_stack; // the open arrays and objects, innermost last
    json* m_member = nullptr;   // where the value after an object key goes
    bool m_nonFinite = false;   // NonFiniteRewrite markers stand for NaN / Infinity
    std::size_t m_values = 0;
    std::string m_error;
    std::size_t m_position = 0;

    const NonFiniteToken* marker(const string_t& v) const {
        if (!m_nonFinite || v.empty() || v[0] != '\0')
            return nullptr;
        for (const auto& t : nonFiniteTokens())
            if (v == t.decoded)
                return &t;
        return nullptr;
    }

    bool stop(std::string why) {
        m_error = std::move(why);
        m_position = *m_consumed;
        return false;
    }

    bool count() {
        if (++m_values <= kMaxJsonValues)
            return true;
        return stop("more than " + std::to_string(kMaxJsonValues) +
                    " values (the limit for a file KV Ledger reads)");
    }

    // Places `v` in the innermost open container (or at the root) and returns where it is.
    json* place(json&& v) {
        if (m_stack.empty()) {
            m_root = std::move(v);
            return &m_root;
        }
        json& top = *m_stack.back();
        if (top.is_array()) {
            auto& items = top.get_ref<json::array_t&>();
            items.push_back(std::move(v));
            return &items.back();
        }
        *m_member = std::move(v);
        return m_member;
    }

    bool add(json&& v) {
        if (!count())
            return false;
        place(std::move(v));
        return true;
    }

    bool open(json::value_t type) {
        if (!count())
            return false;
        if (m_stack.size() >= static_cast<std::size_t>(kMaxJsonDepth))
            return stop("nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
        // A pointer into the parent stays valid while this container is open: the parent gets
        // no new element until it closes.
        m_stack.push_back(place(json(type)));
        return true;
    }
};

} // namespace

std::string formatNumber(double value) {
    if (!std::isfinite(value))
        return "null";
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, value);
    return std::string(buf, r.ptr);
}

std::string quoteText(std::string_view text) {
    constexpr std::size_t kKeep = 37;
    bool cut = false;
    if (text.size() > kKeep + 3) {
        std::size_t end = kKeep;
        // Back up to the start of a UTF-8 sequence so the cut leaves valid text.
        while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
            --end;
        text = text.substr(0, end);
        cut = true;
    }
    std::string out = dumpJson(json(std::string(text)), -1);
    if (cut)
        out.insert(out.size() - 1, "...");
    return out;
}

Result<nlohmann::json> parseJson(std::string_view text, std::string_view source,
                                 JsonSyntax syntax) {
    const std::string src(source);
    if (text.size() > kMaxJsonBytes)
        return Error{ErrorCode::BadFile, src + ": is larger than " + kMaxFileBytesText + " (" +
                                             std::to_string(text.size()) + " bytes)"};
    // nlohmann reads a NUL byte as the end of the input: "[1]\0garbage" would pass.
    if (const auto nul = text.find('\0'); nul != std::string_view::npos)
        return Error{ErrorCode::BadFile, src + ": not valid JSON: " + lineColumn(text, nul + 1) +
                                             ": NUL byte (JSON text cannot contain one)"};
    try {
        const bool nonFinite = syntax == JsonSyntax::NonFinite;
        std::optional<NonFiniteRewrite> rewrite;
        std::string_view parsed = text;
        if (nonFinite) {
            rewrite.emplace(text);
            parsed = rewrite->text();
        }
        json root;
        std::size_t consumed = 0;
        BoundedDomBuilder builder(root, &consumed, nonFinite);
        const CountingIterator first(parsed.data(), &consumed);
        const CountingIterator last(parsed.data() + parsed.size(), &consumed);
        if (json::sax_parse(first, last, &builder))
            return root;
        const std::size_t at = rewrite ? rewrite->original(builder.position()) : builder.position();
        return Error{ErrorCode::BadFile,
                     src + ": not valid JSON: " + lineColumn(text, at) + ": " + builder.error()};
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::OutOfMemory, src + ": out of memory while parsing"};
    } catch (const std::exception& e) {
        return Error{ErrorCode::Internal, src + ": could not be parsed: " + explanation(e.what())};
    }
}

} // namespace kvl::io
