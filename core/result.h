#pragma once
// One error type for the whole project: a code for programs (exit status, retry, "cancelled"
// without string compares) and a one-line message for people that names the file, option or
// field. Functions that can fail return Result<T>, a small stand-in for C++23 std::expected.

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace kvl {

enum class ErrorCode : std::uint8_t {
    BadInput,    // an option, field or value a user gave is wrong (CLI exit 2)
    BadFile,     // a file is malformed, from the future, too large or not a regular file
    NotFound,    // no such file, model, GPU or backend
    Unsupported, // valid, but this build or vLLM cannot do it
    NoDevice,    // the backend has no device (no GPU, driver missing)
    OutOfMemory, // an allocation failed or would exceed what is available
    Io,          // reading or writing failed (disk full, permission)
    Cancelled,   // the user cancelled; not a failure to report as one
    Internal,    // a bug: a broken invariant caught before it could crash
};

std::string_view errorCodeName(ErrorCode code); // "bad input", "bad file", ...

struct Error {
    ErrorCode code = ErrorCode::BadInput;
    std::string message; // one line

    bool cancelled() const { return code == ErrorCode::Cancelled; }
    // The same error with "prefix: " in front of the message (adds the file or option name).
    Error prefixed(std::string_view prefix) const {
        return {code, std::string(prefix) + ": " + message};
    }
    friend bool operator==(const Error&, const Error&) = default;
};

inline Error makeError(ErrorCode code, std::string message) {
    return Error{code, std::move(message)};
}

// Result<T> holds a T or an Error. Construct from a T (success) or an Error (failure).
template <class T> class [[nodiscard]] Result {
    static_assert(!std::is_same_v<std::remove_cvref_t<T>, Error>, "Result<Error> is ambiguous");

public:
    Result(const T& value) : m_v(std::in_place_index<0>, value) {}
    Result(T&& value) : m_v(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}
    template <class U>
    requires(std::is_constructible_v<T, U&&> && !std::is_same_v<std::remove_cvref_t<U>, T> &&
             !std::is_same_v<std::remove_cvref_t<U>, Error> &&
             !std::is_same_v<std::remove_cvref_t<U>, Result>) Result(U&& value)
        : m_v(std::in_place_index<0>, T(std::forward<U>(value))) {}

    bool ok() const { return m_v.index() == 0; }
    explicit operator bool() const { return ok(); }

    // Preconditions: ok() for value(), !ok() for error().
    T& value() & { return std::get<0>(m_v); }
    const T& value() const& { return std::get<0>(m_v); }
    T&& value() && { return std::get<0>(std::move(m_v)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const { return std::get<1>(m_v); }
    T valueOr(T fallback) const { return ok() ? value() : std::move(fallback); }

private:
    std::variant<T, Error> m_v;
};

// Result<void>: success or an Error.
template <> class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : m_error(std::move(error)), m_failed(true) {}

    bool ok() const { return !m_failed; }
    explicit operator bool() const { return ok(); }
    const Error& error() const { return m_error; }

private:
    Error m_error;
    bool m_failed = false;
};

using Status = Result<void>;

} // namespace kvl
