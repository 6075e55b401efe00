// The language's integers: 64-bit, and every operation either exact or refused.
//
// This is the one place the semantics of the language's integer arithmetic live. Parameters,
// lets, array extents, subscripts, loop bounds (sim/lower) and trip counts, traffic counts and
// formulas (sim/analysis) all compute with these functions:
//
//   a + b, a - b, a * b, -a    exact, or nullopt when the result is not a 64-bit integer
//   a / b                      floor division: rounds toward −∞ (−7 / 2 = −4, 7 / −2 = −4)
//   a % b                      the remainder of that division, a − (a / b)·b: it has the
//                              divisor's sign or is 0 (−7 % 2 = 1, 7 % −2 = −1), as in Python
//   cdiv(a, b)                 ceiling division ⌈a/b⌉ (cdiv(7, 2) = 4, cdiv(−7, 2) = −3)
//   min(a, b), max(a, b)       never fail
//
// Division and remainder by zero give nullopt as well (callers that report the two faults
// differently test the divisor first). The only quotient that overflows is (−2^63) / −1 (and
// cdiv of the same); (−2^63) % −1 is 0, which fits. Nothing here ever executes an operation
// whose result is undefined in C++ (no signed overflow, no INT64_MIN / −1, which traps).
//
// Counts (trip counts, elements moved, instructions executed) are unsigned 64-bit: count_add
// and count_mul are checked, saturating_add and saturating_mul stop at UINT64_MAX.
//
// Interval is every value an expression can take, for the range proofs of the compiler and
// the count-only analysis; its operations are checked the same way.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace toysim::integer {

using i64 = std::int64_t;
using u64 = std::uint64_t;

inline constexpr i64 kMin = std::numeric_limits<i64>::min();
inline constexpr i64 kMax = std::numeric_limits<i64>::max();
inline constexpr u64 kMaxCount = std::numeric_limits<u64>::max();

// ---- the language's operations ----

constexpr std::optional<i64> add(i64 a, i64 b) {
    i64 v;
    if (__builtin_add_overflow(a, b, &v)) return std::nullopt;
    return v;
}
constexpr std::optional<i64> sub(i64 a, i64 b) {
    i64 v;
    if (__builtin_sub_overflow(a, b, &v)) return std::nullopt;
    return v;
}
constexpr std::optional<i64> mul(i64 a, i64 b) {
    i64 v;
    if (__builtin_mul_overflow(a, b, &v)) return std::nullopt;
    return v;
}
constexpr std::optional<i64> neg(i64 a) {
    if (a == kMin) return std::nullopt;
    return -a;
}
// Floor division.
constexpr std::optional<i64> div(i64 a, i64 b) {
    if (b == 0 || (a == kMin && b == -1)) return std::nullopt;
    i64 q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) --q;  // truncated toward 0: one less when the signs differ
    return q;
}
// The remainder of floor division: the divisor's sign, or 0.
constexpr std::optional<i64> mod(i64 a, i64 b) {
    if (b == 0) return std::nullopt;
    if (b == -1) return 0;  // also for a = −2^63, where a % b would trap
    i64 r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;  // |r| < |b| and opposite signs: cannot overflow
    return r;
}
// Ceiling division: the number of tiles of size b that cover a (for b > 0).
constexpr std::optional<i64> cdiv(i64 a, i64 b) {
    if (b == 0 || (a == kMin && b == -1)) return std::nullopt;
    i64 q = a / b;
    if (a % b != 0 && ((a < 0) == (b < 0))) ++q;  // a nonzero remainder means |q| < |a|: no overflow
    return q;
}
constexpr i64 min(i64 a, i64 b) { return a < b ? a : b; }
constexpr i64 max(i64 a, i64 b) { return a < b ? b : a; }

// By operator: '+', '-', '*', '/', '%'. Anything else is nullopt.
constexpr std::optional<i64> binary(char op, i64 a, i64 b) {
    switch (op) {
        case '+': return add(a, b);
        case '-': return sub(a, b);
        case '*': return mul(a, b);
        case '/': return div(a, b);
        case '%': return mod(a, b);
        default: return std::nullopt;
    }
}
// The language's functions, by name: cdiv, min, max (nullopt for any other name).
constexpr std::optional<i64> call(std::string_view fn, i64 a, i64 b) {
    if (fn == "min") return min(a, b);
    if (fn == "max") return max(a, b);
    if (fn == "cdiv") return cdiv(a, b);
    return std::nullopt;
}
// Whether the function exists (cdiv, min, max).
constexpr bool is_function(std::string_view fn) { return fn == "cdiv" || fn == "min" || fn == "max"; }

// ---- counts ----

constexpr std::optional<u64> count_add(u64 a, u64 b) {
    u64 v;
    if (__builtin_add_overflow(a, b, &v)) return std::nullopt;
    return v;
}
constexpr std::optional<u64> count_mul(u64 a, u64 b) {
    u64 v;
    if (__builtin_mul_overflow(a, b, &v)) return std::nullopt;
    return v;
}
constexpr u64 saturating_add(u64 a, u64 b) { return count_add(a, b).value_or(kMaxCount); }
constexpr u64 saturating_mul(u64 a, u64 b) { return count_mul(a, b).value_or(kMaxCount); }
// hi − lo iterations of a half-open range lo..hi: 0 when hi <= lo. Always fits (at most 2^64 − 1).
constexpr u64 trip_count(i64 lo, i64 hi) { return hi <= lo ? 0 : static_cast<u64>(hi) - static_cast<u64>(lo); }

// ---- intervals ----

// Every value an expression can take, inclusive at both ends; lo > hi is the empty interval
// (code that never runs).
struct Interval {
    i64 lo = 0, hi = -1;
    constexpr bool empty() const { return lo > hi; }
    constexpr bool contains(i64 v) const { return lo <= v && v <= hi; }
    static constexpr Interval point(i64 v) { return {v, v}; }
    static constexpr Interval everything() { return {kMin, kMax}; }
    constexpr bool operator==(const Interval&) const = default;
};

// {a + b : a ∈ x, b ∈ y}; nullopt when an end overflows. Empty if either is.
constexpr std::optional<Interval> add(Interval x, Interval y) {
    if (x.empty() || y.empty()) return Interval{};
    auto lo = add(x.lo, y.lo), hi = add(x.hi, y.hi);
    if (!lo || !hi) return std::nullopt;
    return Interval{*lo, *hi};
}
// {k·a : a ∈ x}; nullopt when an end overflows.
constexpr std::optional<Interval> scale(Interval x, i64 k) {
    if (x.empty()) return Interval{};
    auto a = mul(x.lo, k), b = mul(x.hi, k);
    if (!a || !b) return std::nullopt;
    return Interval{min(*a, *b), max(*a, *b)};
}
// The values of a loop variable for lo..hi, where the bounds range over `lo` and `hi`: from
// the smallest start to the largest end − 1. Empty when no start is below any end.
constexpr Interval loop_values(Interval lo, Interval hi) {
    if (lo.empty() || hi.empty() || hi.hi == kMin || lo.lo > hi.hi - 1) return Interval{};
    return Interval{lo.lo, hi.hi - 1};
}

}  // namespace toysim::integer
