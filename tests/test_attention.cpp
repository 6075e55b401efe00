// The attention programs against the seeds' figures: seed 004's loop-order table, seed 002's
// 4N² + 4dN, seed 000's FA1 traffic and flop counts, the D trick's single pass over K and V,
// and seed 001's 4×4 worked example, number by number. The figures are written out here so
// that editing a program's `expect` lines cannot quietly change what the course teaches.
#include <array>
#include <catch2/catch.hpp>
#include <tuple>
#include <cmath>
#include <fmt/format.h>

#include <map>

#include "sim/analysis/cost.h"
#include "sim/print/cost_report.h"
#include "sim/check/run.h"
#include "support.h"

using namespace toysim;
using toysim::testing::build_file;
using toysim::testing::read_text;

namespace {

struct Ran {
    Program program;
    RunResult result;
    std::uint64_t reads(const char* array) const { return result.counters.arrays[static_cast<size_t>(program.find_array(array))].reads; }
    std::uint64_t writes(const char* array) const {
        return result.counters.arrays[static_cast<size_t>(program.find_array(array))].writes;
    }
    std::uint64_t work(Op op) const { return result.counters.work_by_opcode[static_cast<size_t>(op)]; }
    std::vector<double> values(const char* array) const { return result.array_values(program, program.find_array(array)); }
};

Ran run_program(const std::string& path, const ParamSettings& settings = {}) {
    Ran r{build_file("programs/attention/" + path, settings), {}};
    r.result = run(r.program);
    REQUIRE(r.result.checks_ok());
    return r;
}

std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }
std::int64_t cdiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

TEST_CASE("seed 004's loop-order table: inner vs outer product, counted in rows of Q, K, V and O", "[attention][seed]") {
    for (std::int64_t n : {1, 5, 16, 64}) {
        const std::int64_t d = 4;
        INFO("n = " << n);
        Ran inner = run_program("loop_inner_product.toy", {{"n", n}, {"d", d}});
        Ran outer = run_program("loop_outer_product.toy", {{"n", n}, {"d", d}});
        // The table counts rows (one element of the view "element = one query"); DRAM counts elements.
        auto rows = [&](std::uint64_t elements) { return elements / u(d); };
        CHECK(rows(inner.reads("Q")) == u(n));
        CHECK(rows(inner.reads("K")) == u(n * n));
        CHECK(rows(inner.reads("V")) == u(n * n));
        CHECK(rows(inner.reads("O")) == u(n));
        CHECK(rows(inner.writes("O")) == u(n));
        CHECK(rows(outer.reads("Q")) == u(n * n));
        CHECK(rows(outer.reads("K")) == u(n));
        CHECK(rows(outer.reads("V")) == u(n));
        CHECK(rows(outer.reads("O")) == u(n * n));
        CHECK(rows(outer.writes("O")) == u(n * n));
    }
}

TEST_CASE("seed 002: standard attention moves 4N² + 4dN elements", "[attention][seed]") {
    for (auto [n, d] : {std::pair<std::int64_t, std::int64_t>{8, 4}, {17, 8}, {64, 16}}) {
        INFO("n = " << n << ", d = " << d);
        Ran r = run_program("standard.toy", {{"n", n}, {"d", d}});
        const Counters& c = r.result.counters;
        CHECK(c.dram_reads + c.dram_writes == u(4 * n * n + 4 * d * n));
        CHECK(r.reads("Q") + r.reads("K") == u(2 * d * n));  // Load Q and K: 2dN
        CHECK(r.writes("S") == u(n * n));
        CHECK(r.reads("S") == u(n * n));
        CHECK(r.writes("P") == u(n * n));
        CHECK(r.reads("P") + r.reads("V") == u(n * n + d * n));
        CHECK(r.writes("O") == u(d * n));
    }
}

TEST_CASE("seed 000: FlashAttention-1 forward traffic is 2nd(2 + 3Tc) bytes in bf16, plus m and l", "[attention][seed]") {
    for (auto [n, d, br, bc] : {std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>{8, 4, 2, 4},
                                {33, 8, 8, 5},
                                {256, 64, 64, 64},
                                {200, 16, 32, 48}}) {
        INFO(fmt::format("n={} d={} Br={} Bc={}", n, d, br, bc));
        Ran r = run_program("fa1.toy", {{"n", n}, {"d", d}, {"Br", br}, {"Bc", bc}});
        const std::int64_t tc = cdiv(n, bc);
        const Counters& c = r.result.counters;
        std::uint64_t bytes = 2 * (c.dram_reads + c.dram_writes);
        // The seed rounds away the 4n bytes of m and ℓ read and written per K/V tile.
        CHECK(bytes == u(2 * n * d * (2 + 3 * tc) + 8 * n * tc));
        // Q·Kᵀ and P̃·V: 4n²d flops; exp: n²(1 + 2/Bc) when Bc divides n, n² + 2n·Tc exactly.
        CHECK(2 * r.work(Op::MAC_Z) == u(4 * n * n * d));
        CHECK(r.work(Op::EXP) == u(n * n + 2 * n * tc));
        if (n % bc == 0) CHECK(r.work(Op::EXP) * u(bc) == u(n * n * (bc + 2)));
    }
}

TEST_CASE("FlashAttention-2 writes O once and reads K and V once per Q tile", "[attention][seed]") {
    for (auto [n, d, br, bc] : {std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>{8, 4, 2, 4},
                                {33, 8, 8, 5},
                                {256, 64, 64, 64}}) {
        INFO(fmt::format("n={} d={} Br={} Bc={}", n, d, br, bc));
        Ran fa2 = run_program("fa2.toy", {{"n", n}, {"d", d}, {"Br", br}, {"Bc", bc}});
        Ran fa1 = run_program("fa1.toy", {{"n", n}, {"d", d}, {"Br", br}, {"Bc", bc}});
        const std::int64_t tr = cdiv(n, br), tc = cdiv(n, bc);
        CHECK(fa2.writes("O") == u(n * d));
        CHECK(fa2.reads("K") == u(n * d * tr));
        CHECK(fa1.writes("O") == u(n * d * tc));  // FA1's O makes a round trip per K/V tile
        CHECK(fa1.reads("K") == u(n * d));
        CHECK(2 * fa2.work(Op::MAC_Z) + 2 * fa2.work(Op::MAC) == u(4 * n * n * d));
    }
}

// fa2_gqa.toy against fa2.toy run once per query head, on the same sizes. Q tiles may be
// clipped here (n = 33, Br = 8): only the program's cycles formula needs Br to divide n.
TEST_CASE("grouped-query attention reads K and V once per group of G query heads, not once per head", "[attention][gqa]") {
    for (auto [n, d, br, bc, g, hkv] : {std::array<std::int64_t, 6>{8, 4, 2, 4, 2, 2}, {9, 3, 3, 2, 3, 2}, {33, 8, 8, 5, 4, 2}}) {
        INFO(fmt::format("n={} d={} Br={} Bc={} G={} Hkv={}", n, d, br, bc, g, hkv));
        Ran gqa = run_program("fa2_gqa.toy", {{"n", n}, {"d", d}, {"Br", br}, {"Bc", bc}, {"G", g}, {"Hkv", hkv}});
        Ran head = run_program("fa2.toy", {{"n", n}, {"d", d}, {"Br", br}, {"Bc", bc}});  // one query head
        const std::uint64_t hq = u(g * hkv);
        CHECK(gqa.reads("K") == u(hkv) * head.reads("K"));  // once per K/V head ...
        CHECK(gqa.reads("V") == u(hkv) * head.reads("V"));
        CHECK(hq * head.reads("K") == u(g) * gqa.reads("K"));  // ... G times less than once per query head
        CHECK(hq * head.reads("V") == u(g) * gqa.reads("V"));
        CHECK(gqa.reads("Q") == hq * head.reads("Q"));  // the rest is every query head's FA2
        CHECK(gqa.writes("O") == hq * head.writes("O"));
        CHECK(gqa.writes("L") == hq * head.writes("L"));
        for (Op op : {Op::MAC_Z, Op::MAC, Op::EXP}) CHECK(gqa.work(op) == hq * head.work(op));
    }
}

TEST_CASE("grouped-query attention with G = 1 and one K/V head is FlashAttention-2", "[attention][gqa]") {
    const ParamSettings sizes = {{"n", 33}, {"d", 8}, {"Br", 8}, {"Bc", 5}};
    ParamSettings one_head = sizes;
    one_head.push_back({"G", 1});
    one_head.push_back({"Hkv", 1});
    Ran gqa = run_program("fa2_gqa.toy", one_head);
    Ran fa2 = run_program("fa2.toy", sizes);
    const Counters &a = gqa.result.counters, &b = fa2.result.counters;
    CHECK(a.cycles == b.cycles);
    CHECK(a.work == b.work);
    CHECK(a.by_opcode == b.by_opcode);
    CHECK(a.work_by_opcode == b.work_by_opcode);
    CHECK(a.peak_registers == b.peak_registers);
    for (const char* array : {"Q", "K", "V", "O", "L"}) {
        INFO(array);
        CHECK(gqa.reads(array) == fa2.reads(array));
        CHECK(gqa.writes(array) == fa2.writes(array));
    }
    CHECK(gqa.values("O") == fa2.values("O"));  // the same inputs, the same instructions: the same numbers
    CHECK(gqa.values("L") == fa2.values("L"));
}

TEST_CASE("the D trick: K and V are loaded once instead of twice", "[attention][seed]") {
    for (auto [n, d, br, bc] : {std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>{8, 4, 2, 4},
                                {7, 3, 3, 2},
                                {64, 16, 16, 8}}) {
        INFO(fmt::format("n={} d={} Br={} Bc={}", n, d, br, bc));
        ParamSettings s = {{"n", n}, {"d", d}, {"Br", br}, {"Bc", bc}};
        Ran with = run_program("fa2_backward.toy", s);
        Ran without = run_program("fa2_backward_no_d_trick.toy", s);
        CHECK(with.reads("K") == u(n * d));
        CHECK(with.reads("V") == u(n * d));
        CHECK(without.reads("K") == 2 * with.reads("K"));
        CHECK(without.reads("V") == 2 * with.reads("V"));
        // Backward flops: 10n²d, 2.5 times the forward's 4n²d (seed 000).
        CHECK(2 * (with.work(Op::MAC_Z) + with.work(Op::MAC)) == u(10 * n * n * d));
    }
}

TEST_CASE("seed 001's 4x4 example: every printed matrix, forward and backward", "[attention][seed]") {
    Ran r = run_program("seed001_backward.toy");
    // The seed's numbers as printed, to its precision (±0.01), row-major.
    auto printed = [&](const char* array, std::vector<double> want) {
        std::vector<double> got = r.values(array);
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < want.size(); ++i) {
            INFO(array << "[" << i << "] = " << got[i] << ", printed " << want[i]);
            CHECK(std::abs(got[i] - want[i]) <= 0.01 + 1e-12);
        }
    };
    printed("S", {1, 0, 2, 0, 0, 1, 0, 2, 1, 0, 1, 0, 0, 1, 0, 1});
    printed("P", {0.224, 0.083, 0.610, 0.083, 0.083, 0.224, 0.083, 0.610, 0.366, 0.134, 0.366, 0.134, 0.134, 0.366, 0.134, 0.366});
    printed("O", {7.20, 8.20, 9.20, 10.20, 9.88, 10.88, 11.88, 12.88, 6.08, 7.08, 8.08, 9.08, 7.92, 8.92, 9.92, 10.92});
    printed("dV", {0.590, 0.590, 0.590, 0.590, 0.217, 0.217, 0.217, 0.217, 0.976, 0.976, 0.976, 0.976, 0.217, 0.217, 0.217, 0.217});
    printed("dP", {10, 26, 42, 58, 0, 0, 0, 0, 10, 26, 42, 58, 0, 0, 0, 0});
    printed("dS", {-5.57, -0.73, 4.38, 1.91, 0, 0, 0, 0, -7.42, -0.58, 4.28, 3.72, 0, 0, 0, 0});
    printed("dK", {-12.99, 0, -5.57, 0, -1.31, 0, -0.73, 0, 8.66, 0, 4.38, 0, 5.64, 0, 1.91, 0});
    // Where the seed's hand rounding shows (errata), the exact values, and the printed ones
    // are indeed more than their precision away.
    std::vector<double> D = r.values("D"), dQ = r.values("dQ");
    CHECK(D[0] == Approx(34.8155).margin(5e-5));
    CHECK(std::abs(D[0] - 34.83) > 0.01);
    CHECK(D[2] == Approx(30.3031).margin(5e-5));
    CHECK(D[1] == 0);
    CHECK(D[3] == 0);
    CHECK(dQ[1] == Approx(1.1868).margin(5e-5));
    CHECK(std::abs(dQ[1] - 1.18) > 0.005);
    std::vector<double> dq_rest = {-1.19, 1.18, 4.38, 1.91, 0, 0, 0, 0, -3.14, 3.14, 4.28, 3.72, 0, 0, 0, 0};
    for (size_t i = 0; i < dq_rest.size(); ++i)
        if (i != 1) CHECK(std::abs(dQ[i] - dq_rest[i]) <= 0.01);
}

TEST_CASE("seed 001's B=2 tiled trace: l0 and the unnormalized O0 after each K/V tile", "[attention][seed]") {
    Program p = build_file("programs/attention/seed001_fa2_tiled.toy");
    Trace t = trace(p, false);
    REQUIRE_FALSE(t.error);
    // Row 0 of a tile written by the instruction whose text is `instruction`, each time it ran
    // for Q block 0 (loop variable i = 0).
    auto row0 = [&](const std::string& instruction) {
        std::vector<std::vector<double>> out;
        for (const auto& s : t.steps) {
            if (s.vars[0] != 0 || s.rows == 0) continue;
            const ast::Instruction* in = p.origin[static_cast<size_t>(s.pc)];
            std::string_view line = p.source->line(in->loc.line);
            if (line.find(instruction) == std::string_view::npos) continue;
            out.emplace_back(t.tile_numbers.begin() + s.first, t.tile_numbers.begin() + s.first + s.cols);
        }
        return out;
    };
    auto l = row0("ADD l, scale, l");
    auto o = row0("MAC p, v, o, o");
    auto normalized = row0("DIV o, l, o");
    REQUIRE(l.size() == 2);
    REQUIRE(o.size() == 2);
    REQUIRE(normalized.size() == 1);
    // Exact values (seed errata), and the printed ones within their precision where they agree.
    CHECK(l[0][0] == Approx(1.3679).margin(5e-5));
    CHECK(std::abs(l[0][0] - 1.368) <= 0.001);
    CHECK(l[1][0] == Approx(1.6386).margin(5e-5));
    std::vector<double> after1 = {2.8394, 4.2073, 5.5752, 6.9430}, printed1 = {2.84, 4.21, 5.57, 6.94};
    std::vector<double> after2 = {11.8039, 13.4425, 15.0810, 16.7196};
    std::vector<double> final = {7.2039, 8.2039, 9.2039, 10.2039}, printed_final = {7.20, 8.20, 9.20, 10.20};
    for (size_t j = 0; j < 4; ++j) {
        CHECK(o[0][j] == Approx(after1[j]).margin(5e-5));
        CHECK(std::abs(o[0][j] - printed1[j]) <= 0.01);  // the seed prints 5.57 for 5.5752
        CHECK(o[1][j] == Approx(after2[j]).margin(5e-5));
        CHECK(normalized[0][j] == Approx(final[j]).margin(5e-5));
        CHECK(std::abs(normalized[0][j] - printed_final[j]) <= 0.005);
    }
}

TEST_CASE("the seed 001 tiled program runs exactly the instructions of fa2.toy", "[attention]") {
    auto body = [](const std::string& path) {
        std::string text = read_text(std::string(TOYSIM_SOURCE_DIR) + "/programs/attention/" + path);
        return text.substr(text.find("\nparallel for i in 0..Tr {"));
    };
    CHECK(body("seed001_fa2_tiled.toy") == body("fa2.toy"));
}

// `toysim cost` derives, without running, the formulas the seeds derive by hand.
TEST_CASE("derived formulas are the seeds' figures", "[attention][seed][cost]") {
    auto formulas = [](const std::string& path) {
        Program p = build_file("programs/" + path);
        std::map<std::string, std::pair<std::string, std::string>> out;
        auto f = derive_formulas(p);
        for (size_t a = 0; a < p.arrays.size(); ++a) {
            INFO(path << " " << p.arrays[a].name << ": " << f[a].note);
            CHECK(f[a].exact);
            out[p.arrays[a].name] = {f[a].reads.text(), f[a].writes.text()};
        }
        return out;
    };
    // Problems 4 and 5: 3n and 2n reads, n writes.
    CHECK(formulas("p4_softmax_3pass.toy")["x"].first == "3·n");
    CHECK(formulas("p5_online_softmax.toy")["x"].first == "2·n");
    CHECK(formulas("p5_online_softmax.toy")["out"].second == "n");
    // Seed 004's loop orders, in elements (d per row).
    auto inner = formulas("attention/loop_inner_product.toy"), outer = formulas("attention/loop_outer_product.toy");
    CHECK(inner["Q"].first == "n·d");
    CHECK(inner["K"].first == "n·n·d");
    CHECK(outer["Q"].first == "n·n·d");
    CHECK(outer["K"].first == "n·d");
    CHECK(outer["O"].second == "n·n·d");
    // FlashAttention-1 and -2 (seed 000), the D trick (seed 004).
    auto fa1 = formulas("attention/fa1.toy"), fa2 = formulas("attention/fa2.toy");
    CHECK(fa1["Q"].first == "n·d·Tc");
    CHECK(fa1["O"].second == "n·d·Tc");
    CHECK(fa1["K"].first == "n·d");
    CHECK(fa2["K"].first == "n·d·Tr");
    CHECK(fa2["O"].second == "n·d");
    CHECK(formulas("attention/fa2_backward.toy")["K"].first == "n·d");
    CHECK(formulas("attention/fa2_backward_no_d_trick.toy")["K"].first == "2·n·d");
    // Seed 002: S and P written and read once each.
    auto standard = formulas("attention/standard.toy");
    CHECK(standard["S"] == std::pair<std::string, std::string>{"n·n", "n·n"});
    CHECK(standard["P"] == std::pair<std::string, std::string>{"n·n", "n·n"});
}

TEST_CASE("causal FA2 skips the tiles above the diagonal: half of FA2's K/V traffic and products, plus the diagonal", "[attention]") {
    for (auto [n, d, b] : {std::tuple{64, 8, 8}, std::tuple{256, 16, 32}, std::tuple{33, 4, 8}}) {
        INFO("n = " << n << ", d = " << d << ", B = " << b);
        Ran causal = run_program("fa2_causal.toy", {{"n", n}, {"d", d}, {"B", b}});
        Ran full = run_program("fa2.toy", {{"n", n}, {"d", d}, {"Br", b}, {"Bc", b}});
        const std::int64_t t = cdiv(n, b);
        if (n % b == 0) {
            // Q tile i reads i + 1 of the T K/V tiles: T(T + 1)/2 in all, against FA2's T².
            CHECK(2 * causal.reads("K") == full.reads("K") + u(n * d));
            CHECK(2 * causal.reads("V") == full.reads("V") + u(n * d));
            // The visible scores: the n(n + 1)/2 on and below the diagonal plus the masked half
            // of each diagonal tile, B(B − 1)/2 each.
            CHECK(causal.work(Op::MAC_Z) == u(d * (n * (n + 1) / 2 + t * b * (b - 1) / 2)));
        }
        CHECK(causal.work(Op::CAUSAL) == u((t - 1) * b * b + (n - (t - 1) * b) * (n - (t - 1) * b)));
        CHECK(causal.reads("Q") == full.reads("Q"));
        CHECK(causal.writes("O") == full.writes("O"));
    }
}
