// The language reference must describe the ISA the table defines: one row per opcode, with
// its operands, meaning and cycle cost exactly as isa/opcodes.h says.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

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
