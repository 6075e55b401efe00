#include "support/text.h"

#include <algorithm>
#include <array>
#include <utility>
#include <cctype>
#include <charconv>
#include <fmt/format.h>

namespace toysim {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return out;
}

namespace {
// Optimal string alignment distance (insertions, deletions, substitutions and swaps of two
// adjacent letters each cost 1, so "LAOD" is one edit from "LOAD"), case-insensitive, of two
// strings of at most kMaxSuggestLength bytes. Three rows on the stack, not a matrix; the result
// is only exact up to `limit`: once every entry of a row is past it, the answer is limit + 1.
size_t edit_distance(std::string_view a, std::string_view b, size_t limit) {
    auto lower = [](char ch) { return std::tolower(static_cast<unsigned char>(ch)); };
    std::array<size_t, kMaxSuggestLength + 1> before{}, previous{}, current{};
    for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        size_t row_min = current[0];
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
                current[j] = std::min(current[j], before[j - 2] + 1);
            row_min = std::min(row_min, current[j]);
        }
        if (row_min > limit) return limit + 1;
        before = previous;
        previous = current;
    }
    return std::min(previous[b.size()], limit + 1);
}

// One UTF-8 sequence at s[i]: its code point and length, or length 0 if the bytes there are not
// well-formed UTF-8 (overlong forms, surrogates and stray continuation bytes included).
std::pair<char32_t, size_t> decode(std::string_view s, size_t i) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char b0 = byte(i);
    if (b0 < 0x80) return {b0, 1};
    size_t len = b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3 : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return {0, 0};
    char32_t cp = b0 & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return {0, 0};
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
    return {cp, len};
}

// Code points a terminal shows as nothing, as a space that is not one, or not at all.
bool invisible(char32_t cp) {
    return cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD || cp == 0x34F || cp == 0x61C || cp == 0x115F ||
           cp == 0x1160 || cp == 0x17B4 || cp == 0x17B5 || cp == 0x180E || (cp >= 0x2000 && cp <= 0x200F) ||
           (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0x3164 ||
           (cp >= 0xFE00 && cp <= 0xFE0F) || cp == 0xFEFF || cp == 0xFFA0 || (cp >= 0xFFF0 && cp <= 0xFFFB) ||
           (cp & 0xFFFE) == 0xFFFE || (cp >= 0xE0000 && cp <= 0xE0FFF);
}
}  // namespace

std::optional<std::string_view> nearest(std::string_view word, const std::vector<std::string_view>& candidates) {
    if (word.size() > kMaxSuggestLength) return std::nullopt;
    std::optional<std::string_view> best;
    size_t allowed = std::max<size_t>(1, word.size() / 3);
    for (auto candidate : candidates) {
        if (candidate.size() > kMaxSuggestLength) continue;
        size_t length_gap = candidate.size() > word.size() ? candidate.size() - word.size() : word.size() - candidate.size();
        if (length_gap > allowed) continue;  // at least that many insertions or deletions
        size_t d = edit_distance(word, candidate, allowed);
        if (d <= allowed) {
            best = candidate;
            if (d == 0) break;
            allowed = d - 1;  // only a strictly closer one replaces it
        }
    }
    return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates) {
    auto guess = nearest(word, candidates);
    return guess ? fmt::format("; did you mean {}?", quoted_name(*guess)) : "";
}

std::string escape_invisible(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
        auto [cp, len] = decode(s, i);
        if (len == 0) {
            out += fmt::format("\\x{:02X}", static_cast<unsigned char>(s[i]));
            ++i;
        } else if (cp == '\n' || !invisible(cp)) {
            out.append(s.substr(i, len));
            i += len;
        } else {
            out += cp < 0x80 ? fmt::format("\\x{:02X}", static_cast<unsigned>(cp)) : fmt::format("U+{:04X}", static_cast<unsigned>(cp));
            i += len;
        }
    }
    return out;
}

std::string quoted_name(std::string_view name) {
    int length = display_width(name);
    if (length <= kQuotedNameLength) return fmt::format("'{}'", escape_invisible(name));
    size_t cut = 0;
    for (int shown = 0; cut < name.size(); ++cut)
        if ((static_cast<unsigned char>(name[cut]) & 0xC0) != 0x80 && shown++ == kQuotedNameLength) break;
    return fmt::format("'{}…' ({} characters)", escape_invisible(name.substr(0, cut)), length);
}

std::string flag_subject(std::string_view name) {
    if (display_width(name) <= kQuotedNameLength && escape_invisible(name) == name) return std::string(name);
    return quoted_name(name);
}

std::string grouped(double value) {
    std::string digits = fmt::format("{:.0f}", value);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

int display_width(std::string_view s) {
    int width = 0;
    for (unsigned char ch : s)
        if ((ch & 0xC0) != 0x80) ++width;  // count code points, not continuation bytes
    return width;
}

std::string pad_right(std::string_view s, int width) {
    std::string out(s);
    out.append(static_cast<size_t>(std::max(0, width - display_width(s))), ' ');
    return out;
}

std::string pad_left(std::string_view s, int width) {
    std::string out(static_cast<size_t>(std::max(0, width - display_width(s))), ' ');
    out.append(s);
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::optional<std::uint64_t> parse_whole_number(std::string_view s) {
    std::uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

std::string format_number(double v, int digits) {
    if (v == 0) return "0";  // also folds -0
    return fmt::format("{:.{}g}", v, digits);
}

}  // namespace toysim
