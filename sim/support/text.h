// Small text helpers shared by the parser, the printers and the ISA table.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace toysim {

bool iequals(std::string_view a, std::string_view b);
std::string upper(std::string_view s);
// The candidate closest to `word` (case-insensitive edit distance), if close enough to be a
// plausible typo: at most a third of the word's length, and at least one edit allowed.
std::optional<std::string_view> nearest(std::string_view word, const std::vector<std::string_view>& candidates);
// "; did you mean 'X'?" with the nearest candidate, or "" when none is close: the suffix every
// "unknown ..." message uses.
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates);
// Display width of UTF-8 text in a terminal (each code point one column).
int display_width(std::string_view s);
std::string pad_right(std::string_view s, int width);
std::string pad_left(std::string_view s, int width);
// Shortest decimal form of a double with up to `digits` significant digits ("0.5", "1e+06", "-3").
std::string format_number(double v, int digits = 6);

}  // namespace toysim
