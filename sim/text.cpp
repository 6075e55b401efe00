#include "text.h"

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
size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
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
