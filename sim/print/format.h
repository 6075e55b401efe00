// The output formats every command offers, and the one table renderer they share.
#pragma once

#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/front/ast.h"
#include "sim/lower/program.h"

namespace toysim {

enum class Format { Table, Markdown, Csv, Json };
// A --format name (the CLI validates it; anything else reads as a table).
Format parse_format(std::string_view name);

struct Table {
    std::vector<std::string> header;
    std::vector<bool> right_aligned;  // per column
    std::vector<std::vector<std::string>> rows;
};
// Table, Markdown or CSV (Json is not a table format).
std::string render_table(const Table& table, Format format);

// JSON as every command prints it: indented by 2, a newline at the end, and text that is not
// valid UTF-8 (a path, a name) replaced rather than thrown on.
std::string json_text(const nlohmann::ordered_json& j);

// A number as tables print it: up to 4 significant digits ("0.4706"), and inf, -inf, nan.
std::string number_text(double v);

// "input", "output" or "scratch".
std::string role_name(ast::Role role);

// "1 step", "3 steps".
std::string plural(std::uint64_t n, std::string_view word);

// What runs an iteration of a parallel loop: "worker", or with `devices D`, "device".
inline std::string_view worker_word(const Program& p) { return p.devices ? "device" : "worker"; }

// Bytes as megabytes (10⁶ bytes), 2 decimals: "6.35 MB".
std::string megabytes(double bytes);

}  // namespace toysim
