#pragma once
// Formatting exact byte counts for people. Binary (KiB, MiB, GiB = 2^30) or decimal
// (KB, MB, GB = 10^9) units, chosen by the caller, never mixed in one figure.

#include <cstdint>
#include <string>

namespace kvl::core {

enum class UnitSystem : std::uint8_t { Binary, Decimal };

// "128 KiB", "4 GiB", "51.38 GiB", "4.29 GB"; `decimals` after the point for non-whole values.
std::string formatBytes(std::int64_t bytes, UnitSystem units = UnitSystem::Binary,
                        int decimals = 2);
std::string formatBytes(double bytes, UnitSystem units = UnitSystem::Binary, int decimals = 2);
// "32K", "128K", "1M", "8000" for token counts (K = 1024 when exact, else plain digits).
std::string formatTokens(std::int64_t tokens);
// "131,072"
std::string withThousands(std::int64_t value);

} // namespace kvl::core
