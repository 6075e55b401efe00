// The language reference must describe the ISA the table defines: one row per opcode, with
// its operands, meaning and cycle cost exactly as isa/opcodes.h says.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "isa/counters.h"
#include "isa/isa.h"

TEST_CASE("isa/README.md lists every opcode of the ISA table", "[docs]") {
    std::ifstream in(std::string(TOYSIM_SOURCE_DIR) + "/isa/README.md");
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    for (const auto& row : toysim::all_ops()) {
        std::string line = fmt::format("| `{} {}` | {} | {} |", row.mnemonic, row.operands, row.meaning, row.cycles);
        INFO(line);
        CHECK(text.str().find(line) != std::string::npos);
    }
}

TEST_CASE("README.md lists every counter of the counter table with its JSON path", "[docs]") {
    std::ifstream in(std::string(TOYSIM_SOURCE_DIR) + "/README.md");
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    for (const auto& row : toysim::all_counters()) {
        std::string name = row.name == "{}" ? "LOAD" : row.name_for(row.scope == toysim::CounterScope::PerArray ? (row.name.rfind("reads", 0) == 0 ? "K" : "O") : "MAC");
        std::string json = row.json_for(row.name == "{}" ? "LOAD" : row.scope == toysim::CounterScope::PerArray ? (row.name.rfind("reads", 0) == 0 ? "K" : "O") : "MAC");
        INFO(name << " at " << json);
        CHECK(text.str().find("`" + name + "`") != std::string::npos);
        CHECK(text.str().find("`" + json + "`") != std::string::npos);
    }
}
