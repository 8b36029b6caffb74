#include "json_fields.h"

#include <cmath>
#include <limits>

namespace kvl::io {

namespace {

// Integers beyond 2^53 are not exact in a double: such a float is not read as an integer.
constexpr double kTwoPow53 = 9007199254740992.0;

} // namespace

Field Field::operator[](std::string_view key) const {
    std::string path = m_path.empty() ? std::string(key) : m_path + "." + std::string(key);
    if (!present())
        return Field(nullptr, m_file, std::move(path));
    if (!m_value->is_object())
        failExpected("an object");
    const auto& members = m_value->get_ref<const nlohmann::json::object_t&>();
    const auto it = members.find(std::string(key));
    return Field(it == members.end() ? nullptr : &it->second, m_file, std::move(path));
}

std::size_t Field::size() const {
    array();
    return m_value->size();
}

Field Field::at(std::size_t index) const {
    array();
    return Field(&(*m_value)[index], m_file, m_path + "[" + std::to_string(index) + "]");
}

void Field::fail(const std::string& problem) const {
    std::string message(m_file);
    message += ": ";
    if (!m_path.empty())
        message += m_path + ": ";
    message += problem;
    throw FieldError{Error{ErrorCode::BadFile, std::move(message)}};
}

void Field::failExpected(std::string_view what) const {
    if (!exists())
        fail("missing");
    fail("expected " + std::string(what) + ", got " + describe());
}

void Field::failOneOf(std::initializer_list<std::string_view> names) const {
    std::string list;
    for (std::string_view n : names)
        list += (list.empty() ? "" : ", ") + std::string(n);
    fail("must be one of " + list + ", got " + describe());
}

void Field::failRange(std::string_view lo, std::string_view hi) const {
    fail("must be between " + std::string(lo) + " and " + std::string(hi) + ", got " + describe());
}

std::string Field::describe() const {
    if (!m_value)
        return "nothing";
    switch (m_value->type()) {
    case nlohmann::json::value_t::null:
        return "null";
    case nlohmann::json::value_t::boolean:
        return m_value->get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_float: {
        const double d = m_value->get<double>();
        if (std::isnan(d))
            return "NaN";
        if (std::isinf(d))
            return d > 0 ? "Infinity" : "-Infinity";
        return dumpJson(*m_value, -1);
    }
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
        return dumpJson(*m_value, -1);
    case nlohmann::json::value_t::string:
        return "string " + quoteText(m_value->get_ref<const std::string&>());
    case nlohmann::json::value_t::array:
        return "an array";
    case nlohmann::json::value_t::object:
        return "an object";
    default:
        return "a value";
    }
}

std::int64_t Field::checkedInteger(std::int64_t lo, std::int64_t hi) const {
    const nlohmann::json& v = *m_value;
    std::int64_t i = 0;
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            failRange(std::to_string(lo), std::to_string(hi));
        i = static_cast<std::int64_t>(u);
    } else if (v.is_number_integer()) {
        i = v.get<std::int64_t>();
    } else if (v.is_number_float()) {
        // 1e3 or 4096.0 is an integer written as a float; 32.5 is not.
        const double d = v.get<double>();
        if (!std::isfinite(d) || std::trunc(d) != d)
            failExpected("an integer");
        if (!(d >= -kTwoPow53 && d <= kTwoPow53))
            failRange(std::to_string(lo), std::to_string(hi));
        i = static_cast<std::int64_t>(d);
    } else {
        failExpected("an integer");
    }
    if (i < lo || i > hi)
        failRange(std::to_string(lo), std::to_string(hi));
    return i;
}

double Field::checkedNumber(double lo, double hi, bool openLow) const {
    if (!m_value->is_number())
        failExpected("a number");
    const double d = m_value->get<double>();
    if (!std::isfinite(d))
        failExpected("a finite number");
    if (openLow ? !(d > lo && d <= hi) : !(d >= lo && d <= hi)) {
        if (openLow)
            fail("must be above " + formatNumber(lo) + " and at most " + formatNumber(hi) +
                 ", got " + describe());
        failRange(formatNumber(lo), formatNumber(hi));
    }
    return d;
}

std::int64_t Field::integer(std::int64_t lo, std::int64_t hi) const {
    if (!exists())
        fail("missing");
    return checkedInteger(lo, hi);
}

double Field::number(double lo, double hi) const {
    if (!exists())
        fail("missing");
    return checkedNumber(lo, hi, false);
}

double Field::numberAbove(double lo, double hi) const {
    if (!exists())
        fail("missing");
    return checkedNumber(lo, hi, true);
}

std::string Field::string() const {
    if (!isString())
        failExpected("a string");
    return m_value->get<std::string>();
}

std::string Field::nonEmptyString() const {
    std::string s = string();
    if (s.empty())
        fail("must not be empty");
    return s;
}

bool Field::boolean() const {
    if (!m_value || !m_value->is_boolean())
        failExpected("true or false");
    return m_value->get<bool>();
}

const Field& Field::object() const {
    if (!isObject())
        failExpected("an object");
    return *this;
}

const Field& Field::array() const {
    if (!isArray())
        failExpected("an array");
    return *this;
}

std::optional<std::int64_t> Field::optInteger(std::int64_t lo, std::int64_t hi) const {
    if (!present())
        return std::nullopt;
    return checkedInteger(lo, hi);
}

std::optional<double> Field::optNumber(double lo, double hi) const {
    if (!present())
        return std::nullopt;
    return checkedNumber(lo, hi, false);
}

std::optional<std::string> Field::optString() const {
    if (!present())
        return std::nullopt;
    return string();
}

std::optional<bool> Field::optBoolean() const {
    if (!present())
        return std::nullopt;
    return boolean();
}

Result<nlohmann::json> parseObjectDocument(std::string_view text, std::string_view file,
                                           JsonSyntax syntax) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        return Error{ErrorCode::BadFile, std::string(file) + ": empty file"};
    auto doc = parseJson(text, file, syntax);
    if (doc && !doc->is_object()) {
        const nlohmann::json& top = doc.value();
        return Error{ErrorCode::BadFile, std::string(file) +
                                             ": expected an object at the top level, got " +
                                             Field(top, file).describe()};
    }
    return doc;
}

} // namespace kvl::io
