#include "units.h"
#include "saturating.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kvl::core {

std::string formatBytes(double bytes, UnitSystem units, int decimals) {
    static constexpr std::array<const char*, 7> kBin{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    static constexpr std::array<const char*, 7> kDec{"B", "KB", "MB", "GB", "TB", "PB", "EB"};
    const double base = units == UnitSystem::Binary ? 1024.0 : 1000.0;
    const auto& names = units == UnitSystem::Binary ? kBin : kDec;
    if (!std::isfinite(bytes))
        return "n/a";
    const bool negative = bytes < 0;
    double v = std::fabs(bytes);
    std::size_t i = 0;
    while (v >= base && i + 1 < names.size()) {
        v /= base;
        ++i;
    }
    char buf[64];
    if (i == 0 || std::fabs(v - std::round(v)) < 1e-9)
        std::snprintf(buf, sizeof buf, "%s%.0f %s", negative ? "-" : "", v, names[i]);
    else
        std::snprintf(buf, sizeof buf, "%s%.*f %s", negative ? "-" : "", decimals, v, names[i]);
    return buf;
}

std::string formatBytes(std::int64_t bytes, UnitSystem units, int decimals) {
    // A saturated sum or product (core/saturating.h) is a bound, not a figure.
    if (bytes == kSaturated)
        return units == UnitSystem::Binary ? "over 8 EiB" : "over 9.22 EB";
    return formatBytes(static_cast<double>(bytes), units, decimals);
}

std::string formatTokens(std::int64_t tokens) {
    if (tokens >= 1024 * 1024 && tokens % (1024 * 1024) == 0)
        return std::to_string(tokens / (1024 * 1024)) + "M";
    if (tokens >= 1024 && tokens % 1024 == 0)
        return std::to_string(tokens / 1024) + "K";
    return std::to_string(tokens);
}

std::string withThousands(std::int64_t value) {
    const bool negative = value < 0;
    const std::uint64_t magnitude = negative ? std::uint64_t{0} - static_cast<std::uint64_t>(value)
                                             : static_cast<std::uint64_t>(value);
    const std::string digits = std::to_string(magnitude);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return negative ? "-" + out : out;
}

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

} // namespace kvl::core
