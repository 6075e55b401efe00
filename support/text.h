// Small text helpers shared by the parser, the printers and the ISA table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace toysim {

bool iequals(std::string_view a, std::string_view b);
std::string upper(std::string_view s);
// The candidate closest to `word` (case-insensitive edit distance), if close enough to be a
// plausible typo: at most a third of the word's length, and at least one edit allowed. The work
// is bounded: a word or candidate longer than kMaxSuggestLength bytes gets no suggestion, and a
// candidate whose length differs by more than the allowed edits is not compared.
inline constexpr std::size_t kMaxSuggestLength = 64;
std::optional<std::string_view> nearest(std::string_view word, const std::vector<std::string_view>& candidates);
// "; did you mean 'X'?" with the nearest candidate, or "" when none is close: the suffix every
// "unknown ..." message uses.
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates);
// The text with every invisible or non-printable character spelt out, so a message never
// carries a raw control character, byte-order mark or stray byte: control characters and bytes
// that are not UTF-8 as \xNN, invisible code points (U+FEFF, zero-width and bidi marks,
// unusual spaces) as U+XXXX. Printable UTF-8 ("×", "·") is kept; a newline is kept.
std::string escape_invisible(std::string_view s);
// A user-supplied name as a message quotes it: 'name', escaped as above; past
// kQuotedNameLength characters, the first ones then "…" and the length:
// 'aaaaaaaa…' (20000 characters).
inline constexpr int kQuotedNameLength = 40;
std::string quoted_name(std::string_view name);
// A name as a flag's prefix shows it: as typed if short and printable ("--set n: "), else
// quoted and shortened like quoted_name.
std::string flag_subject(std::string_view name);
// Display width of UTF-8 text in a terminal (each code point one column).
int display_width(std::string_view s);
std::string pad_right(std::string_view s, int width);
std::string pad_left(std::string_view s, int width);
// The text without the whitespace around it.
std::string_view trim(std::string_view s);
// A whole number in decimal digits only ("42"); nullopt for anything else (empty, a sign, a
// space, a value past 2^64 − 1).
std::optional<std::uint64_t> parse_whole_number(std::string_view s);
// A count with thousands separators: "13,999,996".
std::string grouped(double value);
// Shortest decimal form of a double with up to `digits` significant digits ("0.5", "1e+06", "-3").
std::string format_number(double v, int digits = 6);

}  // namespace toysim
