#pragma once

// Tables that map an enum's values to their names (or to other values), one {value, name} row a
// value, so that each enum's names are written once: its name function reads the table one way
// and its parser the other, where a switch and a loop over the same names had to agree by hand.
// A value may have more than one row: the first is its name, the later ones are aliases that
// parseName also accepts.

#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

namespace kvl::core {

template <class E, class T = std::string_view> struct EnumRow {
    E key;
    T value;
};

// What `table` maps `key` to (its first row for `key`), if it has a row for it.
template <class E, class T, std::size_t N>
constexpr std::optional<T> lookup(const EnumRow<E, T> (&table)[N], E key) {
    for (const auto& row : table)
        if (row.key == key)
            return row.value;
    return std::nullopt;
}

// The same, with `fallback` for a key the table has no row for (a value out of the enum's range,
// or one the mapping leaves out).
template <class E, class T, std::size_t N>
constexpr T lookupOr(const EnumRow<E, T> (&table)[N], E key,
                     std::type_identity_t<T> fallback = T{}) {
    return lookup(table, key).value_or(fallback);
}

// The value whose name (or alias) is `name`; nullopt for a name the table does not hold.
template <class E, std::size_t N>
constexpr std::optional<E> parseName(const EnumRow<E> (&table)[N], std::string_view name) {
    for (const auto& row : table)
        if (row.value == name)
            return row.key;
    return std::nullopt;
}

} // namespace kvl::core
