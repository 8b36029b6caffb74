#include "trace.h"

#include "core/io/json.h"
#include "core/units.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace kvl::io {

namespace {

using core::sim::ArrivingRequest;
using core::sim::kMaxTokens;

constexpr const char* kFields[5] = {"arrival_s", "prompt_tokens", "output_tokens", "prefix_id",
                                    "prefix_tokens"};
constexpr std::int64_t kMaxPrefixId = (std::int64_t{1} << 39) - 1;

bool endsWith(const std::string& s, std::string_view tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string_view trim(std::string_view t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t'))
        t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r'))
        t.remove_suffix(1);
    return t;
}

std::string shown(std::string_view t) {
    return quoteText(t);
}

} // namespace

TraceSource::TraceSource(RegularFile file) : m_file(std::move(file)) {}

Result<std::unique_ptr<TraceSource>> TraceSource::open(const std::string& path,
                                                       std::int64_t defaultPrefixTokens) {
    auto f = RegularFile::open(path);
    if (!f)
        return f.error();
    std::unique_ptr<TraceSource> t(new TraceSource(std::move(*f)));
    t->m_defaultPrefix = defaultPrefixTokens;
    // The first line that is not blank or a comment decides the format.
    std::string first;
    while (t->readLine(first)) {
        const std::string_view v = trim(first);
        if (v.empty() || v.front() == '#')
            continue;
        break;
    }
    if (!t->m_error.empty())
        return makeError(ErrorCode::BadFile, t->m_error);
    const std::string_view v = trim(first);
    if (v.empty())
        return makeError(ErrorCode::BadFile, path + ": the trace holds no requests");
    t->m_csv = endsWith(path, ".csv") ||
               (!endsWith(path, ".jsonl") && !endsWith(path, ".json") && v.front() != '{');
    if (!t->m_csv) {
        t->m_pendingLine = first;
        t->m_hasPending = true;
        return t;
    }
    // The CSV header names the columns, in any order.
    std::size_t start = 0;
    int index = 0;
    while (start <= v.size()) {
        const std::size_t at = v.find(',', start);
        const std::string_view name =
            trim(v.substr(start, at == std::string_view::npos ? v.size() - start : at - start));
        bool known = false;
        for (int k = 0; k < 5; ++k)
            if (name == kFields[k]) {
                if (t->m_col[k] >= 0)
                    return makeError(ErrorCode::BadFile, path + ":" + std::to_string(t->m_line) +
                                                             ": column " + std::string(name) +
                                                             " appears twice in the header");
                t->m_col[k] = index;
                known = true;
            }
        if (!known)
            return makeError(ErrorCode::BadFile,
                             path + ":" + std::to_string(t->m_line) + ": unknown column " +
                                 shown(name) +
                                 " in the header (expected arrival_s, prompt_tokens, "
                                 "output_tokens and optionally prefix_id, prefix_tokens)");
        ++index;
        if (at == std::string_view::npos)
            break;
        start = at + 1;
    }
    t->m_columns = index;
    for (int k = 0; k < 3; ++k)
        if (t->m_col[k] < 0)
            return makeError(ErrorCode::BadFile, path + ":" + std::to_string(t->m_line) +
                                                     ": the header lacks the column " + kFields[k]);
    return t;
}

bool TraceSource::fail(const std::string& message) {
    if (m_error.empty())
        m_error = m_file.path() + ":" + std::to_string(m_line) + ": " + message;
    return false;
}

bool TraceSource::readLine(std::string& line) {
    line.clear();
    while (true) {
        const std::size_t nl = m_buf.find('\n', m_pos);
        if (nl != std::string::npos) {
            line.append(m_buf, m_pos, nl - m_pos);
            m_pos = nl + 1;
            ++m_line;
            if (line.size() > kMaxTraceLineBytes)
                return fail("the line is longer than " +
                            core::withThousands(static_cast<std::int64_t>(kMaxTraceLineBytes)) +
                            " bytes");
            return true;
        }
        line.append(m_buf, m_pos, std::string::npos);
        m_buf.clear();
        m_pos = 0;
        if (line.size() > kMaxTraceLineBytes) {
            ++m_line;
            return fail("the line is longer than " +
                        core::withThousands(static_cast<std::int64_t>(kMaxTraceLineBytes)) +
                        " bytes");
        }
        if (m_eof) {
            if (line.empty())
                return false;
            ++m_line; // a last line without its newline
            return true;
        }
        m_buf.resize(1 << 16);
        auto n = m_file.read(m_buf.data(), m_buf.size());
        if (!n) {
            m_buf.clear();
            return fail(n.error().message);
        }
        m_buf.resize(*n);
        if (*n == 0)
            m_eof = true;
    }
}

bool TraceSource::check(ArrivingRequest& out, bool hasPrefixTokens) {
    if (!std::isfinite(out.arrivalS) || out.arrivalS < 0 || out.arrivalS > 1e9)
        return fail("arrival_s must be from 0 to 1e9 seconds, got " + formatNumber(out.arrivalS));
    if (out.arrivalS < m_last)
        return fail("arrival_s " + formatNumber(out.arrivalS) + " is before the previous line's " +
                    formatNumber(m_last) + " (the trace must be in order of arrival)");
    m_last = out.arrivalS;
    auto tokens = [&](const char* field, std::int64_t v) {
        if (v < 1 || v > kMaxTokens)
            return fail(std::string(field) + " must be from 1 to " +
                        core::withThousands(kMaxTokens) + ", got " + std::to_string(v));
        return true;
    };
    if (!tokens("prompt_tokens", out.promptTokens) || !tokens("output_tokens", out.outputTokens))
        return false;
    if (out.prefixId > kMaxPrefixId)
        return fail("prefix_id must be from 0 to " + core::withThousands(kMaxPrefixId) + ", got " +
                    std::to_string(out.prefixId));
    if (!hasPrefixTokens)
        out.prefixTokens = m_defaultPrefix;
    if (out.prefixTokens < 0 || out.prefixTokens > kMaxTokens)
        return fail("prefix_tokens must be from 0 to " + core::withThousands(kMaxTokens) +
                    ", got " + std::to_string(out.prefixTokens));
    if (out.prefixId < 0 || out.prefixTokens == 0) {
        out.prefixId = -1;
        out.prefixTokens = 0;
    }
    out.prefixTokens = std::min(out.prefixTokens, out.promptTokens);
    return true;
}

bool TraceSource::parseCsv(const std::string& line, ArrivingRequest& out) {
    std::string_view cells[16];
    int n = 0;
    std::string_view v(line);
    std::size_t start = 0;
    while (true) {
        const std::size_t at = v.find(',', start);
        if (n == 16)
            return fail("more than " + std::to_string(m_columns) + " columns");
        cells[n++] =
            trim(v.substr(start, at == std::string_view::npos ? v.size() - start : at - start));
        if (at == std::string_view::npos)
            break;
        start = at + 1;
    }
    if (n != m_columns)
        return fail("expected " + std::to_string(m_columns) + " columns as the header names, got " +
                    std::to_string(n));
    auto whole = [&](int k, std::int64_t& dst) {
        const std::string_view c = cells[m_col[k]];
        std::int64_t x = 0;
        const auto [p, ec] = std::from_chars(c.data(), c.data() + c.size(), x);
        if (ec != std::errc() || p != c.data() + c.size() || c.empty())
            return fail(std::string(kFields[k]) + " must be a whole number, got " + shown(c));
        dst = x;
        return true;
    };
    {
        const std::string c(cells[m_col[0]]);
        char* end = nullptr;
        out.arrivalS = c.empty() ? NAN : std::strtod(c.c_str(), &end);
        if (c.empty() || end != c.c_str() + c.size())
            return fail("arrival_s must be a number of seconds, got " + shown(c));
    }
    if (!whole(1, out.promptTokens) || !whole(2, out.outputTokens))
        return false;
    out.prefixId = -1;
    if (m_col[3] >= 0 && !cells[m_col[3]].empty() && !whole(3, out.prefixId))
        return false;
    if (m_col[3] >= 0 && out.prefixId < -1)
        return fail("prefix_id must be from 0, got " + std::to_string(out.prefixId));
    const bool hasTokens = m_col[4] >= 0 && !cells[m_col[4]].empty();
    if (hasTokens && !whole(4, out.prefixTokens))
        return false;
    return check(out, hasTokens);
}

bool TraceSource::parseJsonl(const std::string& line, ArrivingRequest& out) {
    const std::string where = m_file.path() + ":" + std::to_string(m_line);
    auto doc = parseJson(line, where);
    if (!doc) {
        // parseJson's message names the source already ("FILE:LINE: not valid JSON: ...").
        if (m_error.empty())
            m_error = doc.error().message;
        return false;
    }
    const nlohmann::json& j = *doc;
    if (!j.is_object())
        return fail("expected a JSON object with arrival_s, prompt_tokens and output_tokens");
    for (auto it = j.begin(); it != j.end(); ++it) {
        bool known = false;
        for (const char* f : kFields)
            known = known || it.key() == f;
        if (!known)
            return fail("unknown field " + shown(it.key()) +
                        " (expected arrival_s, prompt_tokens, output_tokens, prefix_id, "
                        "prefix_tokens)");
    }
    auto whole = [&](const char* f, std::int64_t& dst, bool required) {
        const auto it = j.find(f);
        if (it == j.end() || it->is_null())
            return required ? fail(std::string(f) + " is missing") : true;
        if (!it->is_number_integer())
            return fail(std::string(f) + " must be a whole number, got " + shown(it->dump()));
        dst = it->get<std::int64_t>();
        return true;
    };
    const auto a = j.find("arrival_s");
    if (a == j.end())
        return fail("arrival_s is missing");
    if (!a->is_number())
        return fail("arrival_s must be a number of seconds, got " + shown(a->dump()));
    out.arrivalS = a->get<double>();
    out.prefixId = -1;
    if (!whole("prompt_tokens", out.promptTokens, true) ||
        !whole("output_tokens", out.outputTokens, true) || !whole("prefix_id", out.prefixId, false))
        return false;
    if (out.prefixId < -1)
        return fail("prefix_id must be from 0, got " + std::to_string(out.prefixId));
    const bool hasTokens = j.contains("prefix_tokens") && !j["prefix_tokens"].is_null();
    if (hasTokens && !whole("prefix_tokens", out.prefixTokens, false))
        return false;
    return check(out, hasTokens);
}

bool TraceSource::next(ArrivingRequest& out) {
    if (!m_error.empty())
        return false;
    std::string line;
    while (true) {
        if (m_hasPending) {
            line = std::move(m_pendingLine);
            m_hasPending = false;
        } else if (!readLine(line)) {
            return false;
        }
        const std::string_view v = trim(line);
        if (v.empty() || v.front() == '#')
            continue;
        out = ArrivingRequest{};
        return m_csv ? parseCsv(line, out) : parseJsonl(line, out);
    }
}

} // namespace kvl::io
