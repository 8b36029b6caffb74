#pragma once
// Integer arithmetic for byte and token counts that cannot wrap: a product or sum past
// INT64_MAX saturates there (a request of a billion tokens is "too big", never negative), and
// a ceiling division that cannot overflow on large numerators. One copy for all of core.

#include <cstdint>
#include <limits>

namespace kvl::core {

inline constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();

inline std::int64_t satAdd(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? kSaturated : r;
}
inline std::int64_t satMul(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? kSaturated : r;
}
// A product of counts that cannot be negative (bytes x requests, GPUs x replicas): a factor at or
// below 0 makes it 0, not a negative figure.
inline std::int64_t satMulCounts(std::int64_t a, std::int64_t b) {
    return a <= 0 || b <= 0 ? 0 : satMul(a, b);
}
inline std::int64_t satSub(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    return __builtin_sub_overflow(a, b, &r)
               ? (b > 0 ? std::numeric_limits<std::int64_t>::min() : kSaturated)
               : r;
}
// ceil(a / b) for a >= 0, b > 0, without the a + b - 1 that overflows near INT64_MAX.
inline std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
    return a / b + (a % b != 0 ? 1 : 0);
}

} // namespace kvl::core
