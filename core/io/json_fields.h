#pragma once
// The typed-field layer every JSON reader of KV Ledger uses (catalogs, config.json import,
// scenario files, probe results): a value of a parsed document together with the file it came
// from and its JSON path, with checked reads. Every failure is one line in one wording:
//
//   config.json: text_config.num_key_value_heads: expected an integer, got string "8"
//   models.json: models[3].head_dim: must be between 1 and 16384, got 0
//   s.kvl.json: levers.paging: missing
//
// Integers stay exact int64 (a float with a fraction, or one beyond 2^53, is not taken for an
// integer); every number read is range-checked, and NaN / Infinity (which only the NonFinite
// syntax of json.h lets in) are refused by every numeric read:
//
//   config.json: rope_scaling.factor: expected a finite number, got Infinity
//
// Reads throw FieldError, which only `guarded` catches: a reader is a straight sequence of
// field reads instead of an error check after each, and nothing is thrown past its API, which
// returns kvl::Result.

#include "core/io/json.h"
#include "core/names.h"
#include "core/result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <new>
#include <optional>
#include <string>
#include <string_view>

namespace kvl::io {

struct FieldError {
    Error error;
};

class Field {
public:
    // The root of a document read from `file` (the name used in messages). `file` and the
    // document must outlive this Field and every Field taken from it.
    Field(const nlohmann::json& root, std::string_view file) : Field(&root, file, {}) {}
    // A value the reader supplies itself (a default), reported under `path` as if read.
    static Field synthetic(const nlohmann::json& value, std::string_view file, std::string path) {
        return Field(&value, file, std::move(path));
    }

    bool exists() const { return m_value != nullptr; }              // there, perhaps null
    bool present() const { return m_value && !m_value->is_null(); } // there and not null
    explicit operator bool() const { return present(); }
    bool isNull() const { return m_value && m_value->is_null(); }
    bool isObject() const { return m_value && m_value->is_object(); }
    bool isArray() const { return m_value && m_value->is_array(); }
    bool isString() const { return m_value && m_value->is_string(); }
    const nlohmann::json& json() const { return *m_value; } // precondition: exists()
    const std::string& path() const { return m_path; }      // "models[3].head_dim"; "" at the root
    std::string_view file() const { return m_file; }

    // A member. Absent or null here: an absent member (optional sections chain). Present but
    // not an object: fails "expected an object".
    Field operator[](std::string_view key) const;
    // Array access (fails "expected an array" otherwise). at(i): precondition i < size().
    std::size_t size() const;
    Field at(std::size_t index) const;

    // Required reads: absent fails "missing", null or the wrong type "expected ..., got null".
    std::int64_t integer(std::int64_t lo, std::int64_t hi) const;
    double number(double lo, double hi) const;      // in [lo, hi]
    double numberAbove(double lo, double hi) const; // in (lo, hi]
    std::string string() const;
    std::string nonEmptyString() const;
    bool boolean() const;
    const Field& object() const; // checks the type; returns *this
    const Field& array() const;

    // Optional reads: nullopt when absent or null, otherwise checked as above.
    std::optional<std::int64_t> optInteger(std::int64_t lo, std::int64_t hi) const;
    std::optional<double> optNumber(double lo, double hi) const;
    std::optional<std::string> optString() const;
    std::optional<bool> optBoolean() const;

    // "<file>: <path>: <problem>".
    [[noreturn]] void fail(const std::string& problem) const;
    // "expected <what>, got <describe()>"; `what` like "an integer", "true or false".
    [[noreturn]] void failExpected(std::string_view what) const;
    // "must be one of a, b, c, got <describe()>".
    [[noreturn]] void failOneOf(std::initializer_list<std::string_view> names) const;
    // "must be between lo and hi, got <describe()>".
    [[noreturn]] void failRange(std::string_view lo, std::string_view hi) const;
    // The value for a message: `string "8"`, `-1`, `1.5`, `true`, `null`, `an array`.
    std::string describe() const;

private:
    Field(const nlohmann::json* value, std::string_view file, std::string path)
        : m_value(value), m_file(file), m_path(std::move(path)) {}
    std::int64_t checkedInteger(std::int64_t lo, std::int64_t hi) const;
    double checkedNumber(double lo, double hi, bool openLow) const;

    const nlohmann::json* m_value; // nullptr: absent
    std::string_view m_file;
    std::string m_path;
};

// Parses a document whose top level must be an object: "<file>: empty file", parse and limit
// errors (parseJson), "<file>: expected an object at the top level, got an array".
Result<nlohmann::json> parseObjectDocument(std::string_view text, std::string_view file,
                                           JsonSyntax syntax = JsonSyntax::Strict);

// Runs `body` (returning T or Result<T>), turning a FieldError into its Error and anything
// else thrown into OutOfMemory / Internal naming `file`: nothing escapes a reader.
template <class T, class F> Result<T> guarded(std::string_view file, F&& body) {
    try {
        return body();
    } catch (const FieldError& e) {
        return e.error;
    } catch (const std::bad_alloc&) {
        return Error{ErrorCode::OutOfMemory, std::string(file) + ": out of memory"};
    } catch (const std::exception& e) {
        return Error{ErrorCode::Internal, std::string(file) + ": internal error: " + e.what()};
    } catch (...) {
        return Error{ErrorCode::Internal, std::string(file) + ": internal error"};
    }
}

// parseObjectDocument, then `body(Field root)` under `guarded`.
template <class T, class F>
Result<T> readDocument(std::string_view text, std::string_view file, F&& body,
                       JsonSyntax syntax = JsonSyntax::Strict) {
    auto doc = parseObjectDocument(text, file, syntax);
    if (!doc)
        return doc.error();
    return guarded<T>(file, [&]() -> Result<T> { return body(Field(doc.value(), file)); });
}

// core's, for io's readers (ids are compared case-insensitively).
using core::lowerAscii;

} // namespace kvl::io
