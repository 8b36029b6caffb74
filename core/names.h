#pragma once
// Names and counts as people type them: token counts with K/M suffixes (the window's token
// boxes and the command line read them with the same function), and the catalog or option
// name a typo most likely meant. Kept apart from units.h, which nearly every file includes.

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kvl::core {

// A token count as people write it and as the window's token boxes read it: "32K" -> 32768,
// "1.5k" -> 1536, "1M" -> 1048576, "8,000" -> 8000 (K = 1024, M = 2^20). Nothing when the text
// is not a whole count (negative, "1.1K", text) or exceeds 2^53, where doubles stop being exact.
std::optional<std::int64_t> parseTokenCount(std::string_view text);

// The names of `names` a user most likely meant by `typed` (case-insensitive), best first, at
// most `most`: those `typed` is a prefix of (shortest first), then those within a small edit
// distance (a third of the typed length, at least 1; a swap of neighbours counts one). Empty
// when nothing is close: a wild guess is worse than none.
std::vector<std::string> closestNames(std::string_view typed, const std::vector<std::string>& names,
                                      std::size_t most = 3);
// "; did you mean a, b or c?" for closestNames (each name after `prefix`), or "" when there is
// none.
std::string didYouMean(std::string_view typed, const std::vector<std::string>& names,
                       std::string_view prefix = "");

// A name read from a file (a GGUF key, a tensor name, an .npy header key), fit for a one-line
// message: control bytes as \xNN (the name may hold a newline), cut to `most` characters with
// "..." after.
std::string shownName(std::string_view name, std::size_t most = 64);

// Lower-cases ASCII letters only, whatever the locale (ids are compared case-insensitively).
std::string lowerAscii(std::string_view s);

// The element of `items` (models, GPUs: anything with an `id`) whose id is `id` but for ASCII
// case; null when there is none.
template <class Range> auto findById(const Range& items, std::string_view id) {
    const std::string key = lowerAscii(id);
    for (const auto& item : items)
        if (lowerAscii(item.id) == key)
            return &item;
    return static_cast<decltype(&*std::begin(items))>(nullptr);
}

} // namespace kvl::core
