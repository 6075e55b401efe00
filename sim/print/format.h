// The output formats every command offers, and the one table renderer they share.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/front/ast.h"

namespace toysim {

enum class Format { Table, Markdown, Csv, Json };

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

}  // namespace toysim
