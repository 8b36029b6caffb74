#include "names.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

namespace kvl::core {

std::optional<std::int64_t> parseTokenCount(std::string_view text) {
    std::string t;
    for (const char c : text)
        if (c != ',' && c != ' ')
            t += c;
    if (t.empty())
        return std::nullopt;
    std::int64_t mult = 1;
    if (const char last = static_cast<char>(std::tolower(static_cast<unsigned char>(t.back())));
        last == 'k' || last == 'm') {
        mult = last == 'k' ? 1024 : 1024 * 1024;
        t.pop_back();
    }
    // Digits, at most one point with digits on both sides: no sign, no exponent, no "inf".
    const auto point = t.find('.');
    const auto digits = [](std::string_view d) {
        return !d.empty() &&
               std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    const std::string_view whole = std::string_view(t).substr(0, point);
    const std::string_view frac =
        point == std::string::npos ? std::string_view() : std::string_view(t).substr(point + 1);
    if (!digits(whole) || (point != std::string::npos && !digits(frac)))
        return std::nullopt;
    if (whole.size() > 16)
        return std::nullopt;
    const double v = std::strtod(t.c_str(), nullptr) * static_cast<double>(mult);
    constexpr double kExact = 9007199254740992.0; // 2^53
    if (!std::isfinite(v) || v > kExact || std::abs(v - std::round(v)) > 1e-6)
        return std::nullopt;
    return static_cast<std::int64_t>(std::llround(v));
}

namespace {

std::string lowered(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
// neighbours ("contxet") each count one.
std::size_t editDistance(const std::string& a, const std::string& b) {
    const std::size_t n = a.size(), m = b.size();
    std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
    for (std::size_t i = 0; i <= n; ++i)
        d[i][0] = i;
    for (std::size_t j = 0; j <= m; ++j)
        d[0][j] = j;
    for (std::size_t i = 1; i <= n; ++i)
        for (std::size_t j = 1; j <= m; ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[n][m];
}

} // namespace

std::vector<std::string> closestNames(std::string_view typed, const std::vector<std::string>& names,
                                      std::size_t most) {
    const std::string t = lowered(typed);
    if (t.empty())
        return {};
    std::vector<std::pair<std::size_t, std::string>> prefixed, near;
    const std::size_t limit = std::max<std::size_t>(1, t.size() / 3);
    for (const auto& name : names) {
        const std::string n = lowered(name);
        if (n == t)
            continue;
        if (n.starts_with(t))
            prefixed.emplace_back(n.size(), name);
        else if (const std::size_t dist = editDistance(t, n); dist <= limit)
            near.emplace_back(dist, name);
    }
    std::stable_sort(prefixed.begin(), prefixed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::stable_sort(near.begin(), near.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    for (const auto* list : {&prefixed, &near})
        for (const auto& [rank, name] : *list)
            if (out.size() < most)
                out.push_back(name);
    return out;
}

std::string didYouMean(std::string_view typed, const std::vector<std::string>& names,
                       std::string_view prefix) {
    const auto best = closestNames(typed, names);
    if (best.empty())
        return {};
    std::string out = "; did you mean ";
    for (std::size_t i = 0; i < best.size(); ++i) {
        if (i > 0)
            out += i + 1 == best.size() ? " or " : ", ";
        out += std::string(prefix) + best[i];
    }
    return out + "?";
}

std::string shownName(std::string_view name, std::size_t most) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    std::size_t shown = 0;
    for (const char c : name) {
        if (shown++ == most) {
            out += "...";
            break;
        }
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            out += "\\x";
            out += kHex[u >> 4];
            out += kHex[u & 15];
        } else {
            out += c;
        }
    }
    return out;
}

std::string lowerAscii(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

} // namespace kvl::core
