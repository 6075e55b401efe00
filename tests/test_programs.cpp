// Every shipped program carries its expected figures; this walks them all, in the spirit of
// clox's `// expect:` tests. Each program runs with its default parameters and with every
// `test` line's settings, and must pass its check and meet every expected figure.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fmt/format.h>

#include "sim/check/run.h"
#include "sim/front/parser.h"
#include "support.h"

namespace fs = std::filesystem;
using namespace toysim;

namespace {
std::vector<std::string> shipped_programs() {
    std::vector<std::string> out;
    for (const auto& path : testing::shipped_programs()) out.push_back(std::string(TOYSIM_SOURCE_DIR) + "/" + path);
    return out;
}

std::string describe(const ParamSettings& s) {
    if (s.empty()) return "defaults";
    std::string out;
    for (const auto& [k, v] : s) out += fmt::format("{}{}={}", out.empty() ? "" : " ", k, v);
    return out;
}
}  // namespace

TEST_CASE("every shipped program passes its check and meets its expected figures", "[programs]") {
    auto programs = shipped_programs();
    REQUIRE(programs.size() >= 8);
    for (const auto& path : programs) {
        auto tree = std::make_shared<const ast::Program>(parse_file(path));
        INFO(path);
        CHECK(!tree->checks.empty());   // each shipped program says what it computes
        CHECK(!tree->expects.empty());  // and what it costs
        for (const auto& settings : test_settings(*tree)) {
            Program program = compile(tree, settings);
            RunResult result = run(program);
            INFO("parameters: " << describe(settings));
            for (size_t i = 0; i < result.checks.size(); ++i) {
                INFO("check " << program.checks[i].text << ": " << result.checks[i].first_wrong);
                CHECK(result.checks[i].ok);
            }
            for (size_t i = 0; i < result.expects.size(); ++i) {
                INFO("expect " << program.expects[i].text << ": " << result.expects[i].actual << " against " << program.expects[i].value);
                CHECK(result.expects[i].ok);  // =, <= or >=, as the line says
            }
        }
    }
}

// The seed's figures, asserted directly so that editing a program's `expect` lines cannot
// quietly change what the course teaches.
TEST_CASE("the seed's cost figures", "[programs][seed]") {
    auto counters = [](const std::string& name, ParamSettings settings = {}) {
        auto tree = std::make_shared<const ast::Program>(parse_file(std::string(TOYSIM_SOURCE_DIR) + "/programs/" + name));
        Program program = compile(tree, settings);
        RunResult r = run(program);
        REQUIRE(r.checks_ok());
        return r.counters;
    };
    auto op = [](const Counters& c, Op o) { return c.by_opcode[static_cast<size_t>(o)]; };

    SECTION("Problem 1: c00 in 7 cycles, 4 LOADs + 2 MACs + 1 STORE") {
        Counters c = counters("p1_c00.toy");
        CHECK(c.cycles == 7);
        CHECK(op(c, Op::LOAD) == 4);
        CHECK(op(c, Op::MAC_Z) + op(c, Op::MAC) == 2);
        CHECK(op(c, Op::STORE) == 1);
        CHECK(c.peak_registers == 3);
    }
    SECTION("Problem 2: inner product, 3 registers, 25 cycles, 13 LOADs") {
        Counters c = counters("p2_matmul_inner_3reg.toy");
        CHECK(c.cycles == 25);
        CHECK(op(c, Op::LOAD) == 13);
        CHECK(c.peak_registers == 3);
    }
    SECTION("Problem 3: outer product, 6 registers, 22 cycles: 10 LOADs + 8 MACs + 4 STOREs") {
        Counters c = counters("p3_matmul_outer_6reg.toy");
        CHECK(c.cycles == 22);
        CHECK(op(c, Op::LOAD) == 10);
        CHECK(op(c, Op::MAC_Z) + op(c, Op::MAC) == 8);
        CHECK(op(c, Op::STORE) == 4);
        CHECK(c.peak_registers == 6);
    }
    SECTION("Quiz: the best inner product with 6 registers reaches the 20-cycle lower bound") {
        Counters c = counters("quiz_matmul_inner_6reg.toy");
        // Lower bound: 8 distinct inputs loaded once, 8 products, 4 outputs stored.
        CHECK(c.cycles == 8 + 8 + 4);
        CHECK(op(c, Op::LOAD) == 8);
        CHECK(c.peak_registers <= 6);
    }
    SECTION("Problems 4 and 5: 3n reads vs 2n reads, n writes, for n = 4, 1000, 1000000") {
        for (std::int64_t n : {4, 1000, 1000000}) {
            INFO("n = " << n);
            Counters three = counters("p4_softmax_3pass.toy", {{"n", n}});
            Counters online = counters("p5_online_softmax.toy", {{"n", n}});
            CHECK(three.dram_reads == static_cast<std::uint64_t>(3 * n));
            CHECK(three.dram_writes == static_cast<std::uint64_t>(n));
            CHECK(three.peak_registers == 3);
            CHECK(online.dram_reads == static_cast<std::uint64_t>(2 * n));
            CHECK(online.dram_writes == static_cast<std::uint64_t>(n));
            CHECK(online.peak_registers == 4);
        }
    }
}
