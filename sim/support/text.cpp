#include "sim/support/text.h"

#include <algorithm>
#include <cctype>
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
// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// adjacent letters each cost 1, so "LAOD" is one edit from "LOAD".
size_t edit_distance(std::string_view a, std::string_view b) {
    auto lower = [](char ch) { return std::tolower(static_cast<unsigned char>(ch)); };
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}
}  // namespace

std::optional<std::string_view> nearest(std::string_view word, const std::vector<std::string_view>& candidates) {
    std::optional<std::string_view> best;
    size_t best_distance = std::max<size_t>(1, word.size() / 3) + 1;
    for (auto candidate : candidates) {
        size_t d = edit_distance(word, candidate);
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates) {
    auto guess = nearest(word, candidates);
    return guess ? fmt::format("; did you mean '{}'?", *guess) : "";
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

std::string format_number(double v, int digits) {
    if (v == 0) return "0";  // also folds -0
    return fmt::format("{:.{}g}", v, digits);
}

}  // namespace toysim
