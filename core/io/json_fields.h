#pragma once
// Internal to kvl_io: typed, range-checked reading of JSON fields with one-line errors that
// name the file and the field. Not part of the library's interface.

#include "catalog.h"
#include "json.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvl::io::fields {

// Thrown inside this file only and turned into a LoadError at every API boundary.
struct Failure {
    std::string message;
};

[[noreturn]] inline void fail(std::string message) {
    throw Failure{std::move(message)};
}

// Largest hidden size / intermediate size / vocabulary we accept: far beyond any real model,
// small enough that the params estimate stays exact in a double.
constexpr std::int64_t kMaxWidth = std::int64_t{1} << 30;
constexpr std::int64_t kMaxGpuMemory = std::int64_t{1} << 50; // 1 PiB, as core's validate

inline std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

inline bool equalsIgnoreCase(std::string_view a, std::string_view b) {
    return lower(a) == lower(b);
}

inline std::string num(std::int64_t v) {
    return std::to_string(v);
}

inline std::string typeName(const Json& j) {
    switch (j.type()) {
    case Json::Type::Null:
        return "null";
    case Json::Type::Bool:
        return "boolean";
    case Json::Type::Number:
        return "number";
    case Json::Type::String:
        return "string";
    case Json::Type::Array:
        return "array";
    case Json::Type::Object:
        return "object";
    }
    return "value";
}

// "-1", "4096.5", "string \"32\"", "array": short enough for a one-line message.
inline std::string describe(const Json& j) {
    switch (j.type()) {
    case Json::Type::Null:
    case Json::Type::Bool:
    case Json::Type::Number:
        return j.dump(-1);
    case Json::Type::String: {
        std::string text = j.dump(-1);
        if (text.size() > 40)
            text = text.substr(0, 37) + "...";
        return "string " + text;
    }
    default:
        return typeName(j);
    }
}

// Reads typed, range-checked fields of one JSON object; every failure names `prefix` + field.
class FieldReader {
public:
    FieldReader(const Json& obj, std::string prefix) : m_obj(obj), m_prefix(std::move(prefix)) {}

    const Json* get(std::string_view key) const { return m_obj.find(key); }

    [[noreturn]] void error(std::string_view field, const std::string& problem) const {
        fail(m_prefix + std::string(field) + " " + problem);
    }

    std::string string(std::string_view key, bool allowEmpty = false) const {
        const Json* v = get(key);
        if (!v)
            error(key, "is missing");
        if (!v->isString() || (!allowEmpty && v->asString().empty()))
            error(key, "must be a non-empty string, got " + describe(*v));
        return v->asString();
    }

    std::string optString(std::string_view key) const {
        const Json* v = get(key);
        if (!v || v->isNull())
            return {};
        if (!v->isString())
            error(key, "must be a string, got " + describe(*v));
        return v->asString();
    }

    std::int64_t integer(std::string_view key, std::int64_t lo, std::int64_t hi) const {
        const Json* v = get(key);
        if (!v)
            error(key, "is missing");
        return checkInteger(key, *v, lo, hi);
    }

    std::optional<std::int64_t> optInteger(std::string_view key, std::int64_t lo,
                                           std::int64_t hi) const {
        const Json* v = get(key);
        if (!v || v->isNull())
            return std::nullopt;
        return checkInteger(key, *v, lo, hi);
    }

    std::int64_t checkInteger(std::string_view key, const Json& v, std::int64_t lo,
                              std::int64_t hi) const {
        const std::string kind = lo >= 1 ? "a positive integer" : "a non-negative integer";
        const auto i = v.asInt64();
        if (!i || *i < lo)
            error(key, "must be " + kind + ", got " + describe(v));
        if (*i > hi)
            error(key, "must be at most " + num(hi) + ", got " + describe(v));
        return *i;
    }

    std::optional<bool> optBool(std::string_view key) const {
        const Json* v = get(key);
        if (!v || v->isNull())
            return std::nullopt;
        if (!v->isBool())
            error(key, "must be true or false, got " + describe(*v));
        return v->asBool();
    }

    // A finite number in [lo, hi] (lo excluded when `openLow`).
    double number(std::string_view key, double lo, double hi, bool openLow) const {
        const Json* v = get(key);
        if (!v)
            error(key, "is missing");
        const double d = v->isNumber() ? v->asDouble() : 0;
        const bool ok = v->isNumber() && (openLow ? d > lo : d >= lo) && d <= hi;
        if (!ok)
            error(key, "must be a number in " + std::string(openLow ? "(" : "[") +
                           Json(lo).dump(-1) + ", " + Json(hi).dump(-1) + "], got " + describe(*v));
        return d;
    }

    double positiveNumber(std::string_view key, double hi) const {
        const Json* v = get(key);
        if (!v)
            error(key, "is missing");
        if (!v->isNumber() || !(v->asDouble() > 0) || v->asDouble() > hi)
            error(key,
                  "must be a number between 0 and " + Json(hi).dump(-1) + ", got " + describe(*v));
        return v->asDouble();
    }

private:
    const Json& m_obj;
    std::string m_prefix;
};

inline Json parseDocument(std::string_view text, std::string_view source) {
    const std::string src(source);
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        fail(src + ": empty file");
    auto parsed = parseJson(text);
    if (auto* e = std::get_if<JsonError>(&parsed))
        fail(src + ": not valid JSON: " + e->message);
    Json doc = std::move(std::get<Json>(parsed));
    if (!doc.isObject())
        fail(src + ": top level must be a JSON object, got " + typeName(doc));
    return doc;
}

// Runs `body`, turning a Failure (or anything else thrown) into a LoadError: nothing escapes
// the io API.
template <class T, class F> Result<T> guarded(std::string_view source, F&& body) {
    try {
        return body();
    } catch (const Failure& f) {
        return LoadError{f.message};
    } catch (const std::exception& e) {
        return LoadError{std::string(source) + ": internal error: " + e.what()};
    } catch (...) {
        return LoadError{std::string(source) + ": internal error"};
    }
}

} // namespace kvl::io::fields
