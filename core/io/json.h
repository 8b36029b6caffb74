#pragma once
// A small, strict JSON reader and writer (RFC 8259) so that core, the catalogs and the probe
// need no Qt. Depth- and size-limited; errors carry line and column.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kvl::io {

class Json {
public:
    enum class Type : std::uint8_t { Null, Bool, Number, String, Array, Object };
    using Array = std::vector<Json>;
    using Object = std::vector<std::pair<std::string, Json>>; // keeps file order

    Json() = default;
    Json(std::nullptr_t) {}
    Json(bool b) : m_value(b) {}
    Json(double d) : m_value(Number{d, std::nullopt}) {}
    Json(int v) : m_value(Number{static_cast<double>(v), v}) {}
    Json(std::int64_t v); // kept as an exact int64 beside its double
    Json(const char* s) : m_value(std::string(s)) {}
    Json(std::string s) : m_value(std::move(s)) {}
    Json(Array a) : m_value(std::move(a)) {}
    Json(Object o) : m_value(std::move(o)) {}

    Type type() const;
    bool isNull() const { return type() == Type::Null; }
    bool isBool() const { return type() == Type::Bool; }
    bool isNumber() const { return type() == Type::Number; }
    bool isString() const { return type() == Type::String; }
    bool isArray() const { return type() == Type::Array; }
    bool isObject() const { return type() == Type::Object; }

    bool asBool() const;     // precondition: isBool
    double asDouble() const; // precondition: isNumber
    // The number as an exact integer, when it is one (no fraction, fits in int64).
    std::optional<std::int64_t> asInt64() const;
    const std::string& asString() const; // precondition: isString
    const Array& asArray() const;
    const Object& asObject() const;
    Array& asArray();
    Object& asObject();

    // Object member lookup; nullptr when absent or not an object.
    const Json* find(std::string_view key) const;
    bool contains(std::string_view key) const { return find(key) != nullptr; }
    // Appends or replaces a member (object only).
    void set(std::string key, Json value);

    // Compact (indent < 0) or pretty (indent spaces) text. Integers print without a fraction.
    std::string dump(int indent = 2) const;

private:
    // Number kept as double plus the exact integer when the literal was one.
    struct Number {
        double d = 0;
        std::optional<std::int64_t> i;
    };
    std::variant<std::nullptr_t, bool, Number, std::string, Array, Object> m_value{nullptr};
    Json(Number n) : m_value(n) {}
    friend class JsonParser;
};

struct JsonError {
    std::string message; // "line 3, column 14: expected ',' or '}'"
    int line = 0;
    int column = 0;
};

// Parses a whole document. Rejects trailing garbage, NaN/Infinity, nesting deeper than 256,
// documents over 64 MiB and invalid UTF-8 escapes.
std::variant<Json, JsonError> parseJson(std::string_view text);

// Reads a whole file (max 64 MiB) into `out`; on failure returns the reason.
std::optional<std::string> readFile(const std::string& path, std::string& out);

} // namespace kvl::io
