#include "sim/print/format.h"

#include <cmath>
#include <fmt/format.h>

#include "support/text.h"

namespace toysim {

Format parse_format(std::string_view name) {
    if (name == "json") return Format::Json;
    if (name == "markdown") return Format::Markdown;
    if (name == "csv") return Format::Csv;
    return Format::Table;
}

namespace {

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"') out += '"';
        out += ch;
    }
    return out + "\"";
}

std::string md_field(const std::string& s) {
    std::string out;
    for (char ch : s) {
        if (ch == '|') out += '\\';
        out += ch;
    }
    return out;
}

}  // namespace

std::string render_table(const Table& t, Format format) {
    std::string out;
    size_t columns = t.header.size();
    auto right = [&](size_t c) { return c < t.right_aligned.size() && t.right_aligned[c]; };
    if (format == Format::Csv) {
        auto line = [&](const std::vector<std::string>& cells) {
            for (size_t c = 0; c < columns; ++c) {
                if (c) out += ',';
                out += csv_field(c < cells.size() ? cells[c] : "");
            }
            out += '\n';
        };
        line(t.header);
        for (const auto& row : t.rows) line(row);
        return out;
    }
    if (format == Format::Markdown) {
        auto line = [&](const std::vector<std::string>& cells) {
            out += '|';
            for (size_t c = 0; c < columns; ++c) out += fmt::format(" {} |", md_field(c < cells.size() ? cells[c] : ""));
            out += '\n';
        };
        line(t.header);
        out += '|';
        for (size_t c = 0; c < columns; ++c) out += right(c) ? " ---: |" : " --- |";
        out += '\n';
        for (const auto& row : t.rows) line(row);
        return out;
    }
    std::vector<int> width(columns, 0);
    for (size_t c = 0; c < columns; ++c) width[c] = display_width(t.header[c]);
    for (const auto& row : t.rows)
        for (size_t c = 0; c < columns && c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
    auto line = [&](const std::vector<std::string>& cells) {
        std::string s;
        for (size_t c = 0; c < columns; ++c) {
            const std::string& cell = c < cells.size() ? cells[c] : "";
            if (c) s += "  ";
            s += right(c) ? pad_left(cell, width[c]) : (c + 1 == columns ? cell : pad_right(cell, width[c]));
        }
        while (!s.empty() && s.back() == ' ') s.pop_back();
        return s + "\n";
    };
    out += line(t.header);
    std::vector<std::string> rule;
    for (size_t c = 0; c < columns; ++c) rule.push_back(std::string(static_cast<size_t>(width[c]), '-'));
    out += line(rule);
    for (const auto& row : t.rows) out += line(row);
    return out;
}

std::string number_text(double v) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (std::isnan(v)) return "nan";
    return format_number(v, 4);
}

std::string json_text(const nlohmann::ordered_json& j) {
    return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::string role_name(ast::Role r) {
    return r == ast::Role::Input ? "input" : r == ast::Role::Output ? "output" : "scratch";
}

std::string plural(std::uint64_t n, std::string_view word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

std::string megabytes(double bytes) { return fmt::format("{:.2f} MB", bytes / 1e6); }

}  // namespace toysim
