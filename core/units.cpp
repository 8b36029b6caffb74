#include "units.h"
#include "saturating.h"

#include <array>
#include <cmath>
#include <cstdio>

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

} // namespace kvl::core
