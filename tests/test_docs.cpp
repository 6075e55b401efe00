// The language reference must describe the ISA the table defines: one row per opcode, with
// its operands, meaning and cycle cost exactly as isa/opcodes.h says.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "isa/counters.h"
#include "isa/isa.h"
#include "support.h"

using toysim::testing::read_text;

TEST_CASE("isa/README.md lists every opcode of the ISA table", "[docs]") {
    const std::string text = read_text(std::string(TOYSIM_SOURCE_DIR) + "/isa/README.md");
    REQUIRE(!text.empty());
    for (const auto& row : toysim::all_ops()) {
        std::string line = fmt::format("| `{} {}` | {} | {} |", row.mnemonic, row.operands, row.meaning, row.cycles);
        INFO(line);
        CHECK(text.find(line) != std::string::npos);
    }
}

TEST_CASE("README.md lists every counter of the counter table with its JSON path", "[docs]") {
    const std::string text = read_text(std::string(TOYSIM_SOURCE_DIR) + "/README.md");
    REQUIRE(!text.empty());
    for (const auto& row : toysim::all_counters()) {
        // The README's examples: LOAD for an opcode's count, MAC for work, K read and O written.
        std::string subject = row.name == "{}" ? "LOAD"
                              : row.scope == toysim::CounterScope::PerArray ? (row.kind == toysim::CounterKind::ArrayReads ? "K" : "O")
                                                                            : "MAC";
        std::string name = row.name_for(subject), json = row.json_for(subject);
        INFO(name << " at " << json);
        CHECK(text.find("`" + name + "`") != std::string::npos);
        CHECK(text.find("`" + json + "`") != std::string::npos);
    }
}
