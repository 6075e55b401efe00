// The symbolic value domain and how its expressions are written: the seed's notation
// (a00·b00 + a01·b10, x1 − m, e^(x0 − m), max(x0, x1)) and the names in the legend.
#include <catch2/catch.hpp>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/print/expr_format.h"
#include "sim/check/run.h"
#include "sim/front/parser.h"
#include "sim/lower/program.h"
#include "sim/print/report.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {



// A symbolic run: what each register-writing step put in its register (as the trace's cell
// shows it), and the legend lines of the printed trace.
struct Symbolic {
    std::vector<std::string> cells;   // one per step that writes a register, in order
    std::vector<std::string> legend;  // "name = definition", in the printed order
    std::string table;                // format_trace, plain table
};

Symbolic symbolic(const Program& p) {
    Trace t = trace(p, true);
    REQUIRE_FALSE(t.error.has_value());
    std::vector<std::uint32_t> shown;
    for (const auto& s : t.steps)
        if (s.reg >= 0) shown.push_back(s.symbol);
    ExprFormatter names(t.arena, p, shown);
    Symbolic out;
    for (auto id : shown) out.cells.push_back(names.cell(id));
    // The legend as printed: Markdown writes it as "- name = definition" lines.
    std::istringstream md(format_trace(p, t, TraceOptions{Format::Markdown, false}));
    for (std::string line; std::getline(md, line);)
        if (line.rfind("- ", 0) == 0) out.legend.push_back(line.substr(2));
    // The formatter's own legend agrees with the printed one.
    std::vector<std::string> direct;
    for (const auto& [name, def] : names.legend()) direct.push_back(name + " = " + def);
    CHECK(direct == out.legend);
    out.table = format_trace(p, t, TraceOptions{Format::Table, false});
    return out;
}

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("identities fold: x − x = 0, e^0 = 1, 1·x = x, x·1 = x, 0 + x = x", "[symbolic]") {
    // P5's initialization, then the identities the online-softmax trace relies on.
    const char* text = R"(registers 4
input x[2]
LOAD x[0], R0
MOV R0, R1
SUB R0, R1, R0
EXP R0, R0
MOV R0, R2
LOAD x[1], R3
MUL R2, R3, R3
MUL R3, R2, R3
SUB R1, R1, R0
ADD R0, R3, R3
MAX R3, R3, R3
)";
    Symbolic s = symbolic(build(text));
    CHECK(s.cells == Lines{"x0", "x0", "0", "1", "1", "x1", "x1", "x1", "0", "x1", "x1"});
    CHECK(s.legend.empty());

    // The folded values are the very nodes they fold to, not look-alikes.
    Program p = build(text);
    Trace t = trace(p, true);
    REQUIRE(t.steps.size() == 11);
    std::uint32_t x1 = t.steps[5].symbol;
    CHECK(t.arena[x1].kind == ExprNode::Kind::Leaf);
    CHECK(t.steps[6].symbol == x1);   // 1·x1
    CHECK(t.steps[7].symbol == x1);   // x1·1
    CHECK(t.steps[9].symbol == x1);   // 0 + x1
    CHECK(t.steps[10].symbol == x1);  // max(x1, x1)
    CHECK(t.arena[t.steps[2].symbol].kind == ExprNode::Kind::Const);
    CHECK(t.arena[t.steps[2].symbol].value == 0);
    CHECK(t.arena[t.steps[3].symbol].value == 1);
}

TEST_CASE("P1: MAC renders as a sum of products and the stored value is named c00", "[symbolic]") {
    Symbolic s = symbolic(build_file("programs/p1_c00.toy"));
    // The seed's trace, register column by register column: LOAD, LOAD, MAC_Z, LOAD, LOAD, MAC.
    CHECK(s.cells == Lines{"a00", "b00", "a00·b00", "a01", "b10", "c00"});
    CHECK(s.legend == Lines{"c00 = a00·b00 + a01·b10"});
    CHECK(s.table.find("   6  MAC R0, R1, R2, R2  a01  b10  c00\n") != std::string::npos);
    CHECK(s.table.find("   3  MAC_Z R0, R1, R2    a00  b00  a00·b00\n") != std::string::npos);
}

TEST_CASE("MAC without a store shows the whole sum in the cell", "[symbolic]") {
    const char* text = R"(registers 3
input a[2][2]
input b[2][2]
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
)";
    Symbolic s = symbolic(build(text));
    CHECK(s.cells.back() == "a00·b00 + a01·b10");
    CHECK(s.legend.empty());
}

TEST_CASE("P3: each accumulator is named by the element it is stored to", "[symbolic]") {
    Symbolic s = symbolic(build_file("programs/p3_matmul_outer_6reg.toy"));
    // The seed's k = 1 steps: c00, c01, c11, c10 appear as each MAC completes a sum.
    REQUIRE(s.cells.size() == 18);
    CHECK(s.cells[2] == "a00·b00");
    CHECK(s.cells[4] == "a00·b01");
    CHECK(s.cells[6] == "a10·b01");
    CHECK(s.cells[8] == "a10·b00");
    CHECK(s.cells[11] == "c00");
    CHECK(s.cells[13] == "c01");
    CHECK(s.cells[15] == "c11");
    CHECK(s.cells[17] == "c10");
    CHECK(s.legend == Lines{"c00 = a00·b00 + a01·b10", "c01 = a00·b01 + a01·b11", "c11 = a10·b01 + a11·b11",
                            "c10 = a10·b00 + a11·b10"});
}

TEST_CASE("parentheses: only where precedence needs them", "[symbolic]") {
    const char* text = R"(registers 6
input x[3]
LOAD x[0], R0
LOAD x[1], R1
LOAD x[2], R2
ADD R1, R2, R3
SUB R0, R3, R4
SUB R1, R2, R5
SUB R0, R5, R5
SUB R3, R0, R4
MUL R0, R1, R5
ADD R5, R2, R5
MUL R3, R2, R5
DIV R3, R2, R5
MUL R1, R2, R4
DIV R0, R4, R4
SUB R0, R4, R4
)";
    Symbolic s = symbolic(build(text));
    REQUIRE(s.cells.size() == 15);
    CHECK(s.cells[3] == "x1 + x2");
    CHECK(s.cells[4] == "x0 − (x1 + x2)");   // subtracting a sum
    CHECK(s.cells[5] == "x1 − x2");
    CHECK(s.cells[6] == "x0 − (x1 − x2)");   // subtracting a difference
    CHECK(s.cells[7] == "x1 + x2 − x0");     // a sum minus: none needed
    CHECK(s.cells[8] == "x0·x1");
    CHECK(s.cells[9] == "x0·x1 + x2");       // a product in a sum: none needed
    CHECK(s.cells[10] == "(x1 + x2)·x2");    // a sum in a product
    CHECK(s.cells[11] == "(x1 + x2)/x2");    // a sum over something
    CHECK(s.cells[12] == "x1·x2");
    CHECK(s.cells[13] == "x0/(x1·x2)");      // dividing by a product
    CHECK(s.cells[14] == "x0 − x0/(x1·x2)"); // a quotient in a difference
}

TEST_CASE("softmax of two: a nested max is m, the sum s, division e^(x0 − m)/s", "[symbolic]") {
    // Problem 4's passes for n = 2, without the stores.
    const char* text = R"(registers 3
input x[2]
LOAD x[0], r1
LOAD x[1], R0
MAX R0, r1, r1
LOAD x[0], R0
SUB R0, r1, R0
EXP R0, R0
MOV R0, r2
LOAD x[1], R0
SUB R0, r1, R0
EXP R0, R0
ADD r2, R0, r2
LOAD x[0], R0
SUB R0, r1, R0
EXP R0, R0
DIV R0, r2, R0
)";
    Symbolic s = symbolic(build(text));
    CHECK(s.cells == Lines{"x0", "x1", "m", "x0", "x0 − m", "e^(x0 − m)", "e^(x0 − m)", "x1", "x1 − m", "e^(x1 − m)", "s",
                           "x0", "x0 − m", "e^(x0 − m)", "e^(x0 − m)/s"});
    CHECK(s.legend == Lines{"m = max(x0, x1)", "s = e^(x0 − m) + e^(x1 − m)"});
}

TEST_CASE("P4 with n = 2: stored quotients are named out0, out1", "[symbolic]") {
    Symbolic s = symbolic(build_file("programs/p4_softmax_3pass.toy", {{"n", 2}}));
    CHECK(s.legend == Lines{"m = max(x0, x1)", "s = e^(x0 − m) + e^(x1 − m)", "out0 = e^(x0 − m)/s", "out1 = e^(x1 − m)/s"});
}

TEST_CASE("P4: a chain of max prints flat, and is named m once it is used", "[symbolic]") {
    Symbolic s = symbolic(build_file("programs/p4_softmax_3pass.toy"));
    // Pass 1: LOAD x[0], r1; then (LOAD x[i], R0; MAX R0, r1, r1) for i = 1..3.
    REQUIRE(s.cells.size() >= 9);
    CHECK(s.cells[0] == "x0");
    CHECK(s.cells[2] == "max(x0, x1)");
    CHECK(s.cells[4] == "max(x0, x1, x2)");
    CHECK(s.cells[6] == "m");
    CHECK(s.cells[8] == "x0 − m");
    REQUIRE_FALSE(s.legend.empty());
    CHECK(s.legend[0] == "m = max(x0, x1, x2, x3)");
    CHECK(s.legend.back() == "out3 = e^(x3 − m)/s2");
}

TEST_CASE("P5: running maxima are m1, m2, m3 and the rescaling reads e^(m1 − m2)", "[symbolic]") {
    Symbolic s = symbolic(build_file("programs/p5_online_softmax.toy"));
    // Initialization (5 steps): x0, x0, 0, 1, 1.
    REQUIRE(s.cells.size() >= 23);
    CHECK(Lines(s.cells.begin(), s.cells.begin() + 5) == Lines{"x0", "x0", "0", "1", "1"});
    // First steady-state step (x1): the old max is x0 and s = 1, so s·e^(x0 − m1) is e^(x0 − m1).
    CHECK(Lines(s.cells.begin() + 5, s.cells.begin() + 14) ==
          Lines{"x1", "x0", "m1", "x0 − m1", "x1 − m1", "e^(x0 − m1)", "e^(x1 − m1)", "e^(x0 − m1)", "s1"});
    // Second steady-state step (x2): the seed's m, m', s·e^(m − m').
    CHECK(Lines(s.cells.begin() + 14, s.cells.begin() + 22) ==
          Lines{"x2", "m1", "m2", "m1 − m2", "x2 − m2", "e^(m1 − m2)", "e^(x2 − m2)", "s1·e^(m1 − m2)"});
    Lines maxima;
    for (const auto& line : s.legend)
        if (line.rfind("m", 0) == 0) maxima.push_back(line);
    CHECK(maxima == Lines{"m1 = max(x0, x1)", "m2 = max(m1, x2)", "m3 = max(m2, x3)"});
    CHECK(s.legend.front() == "m1 = max(x0, x1)");
    CHECK(s.legend.back() == "out3 = e^(x3 − m3)/s3");
}

TEST_CASE("long sums are abbreviated s1, s2 with a legend", "[symbolic]") {
    // An 8-term dot product kept in R2: a sum wider than a cell (24 columns) gets a name.
    const char* text = R"(registers 3
input a[8]
input b[8]
LOAD a[0], R0
LOAD b[0], R1
MAC_Z R0, R1, R2
for k in 1..8 {
    LOAD a[k], R0
    LOAD b[k], R1
    MAC R0, R1, R2, R2
}
)";
    Symbolic s = symbolic(build(text));
    Lines sums;
    for (size_t i = 2; i < s.cells.size(); i += 3) sums.push_back(s.cells[i]);
    CHECK(sums == Lines{"a0·b0", "a0·b0 + a1·b1", "a0·b0 + a1·b1 + a2·b2", "s1", "s1 + a4·b4", "s1 + a4·b4 + a5·b5", "s2",
                        "s2 + a7·b7"});
    CHECK(s.legend == Lines{"s1 = a0·b0 + a1·b1 + a2·b2 + a3·b3", "s2 = s1 + a4·b4 + a5·b5 + a6·b6"});
}

TEST_CASE("a single abbreviated sum is called s, without a number", "[symbolic]") {
    const char* text = R"(registers 3
input a[4]
input b[4]
LOAD a[0], R0
LOAD b[0], R1
MAC_Z R0, R1, R2
for k in 1..4 {
    LOAD a[k], R0
    LOAD b[k], R1
    MAC R0, R1, R2, R2
}
)";
    Symbolic s = symbolic(build(text));
    CHECK(s.cells.back() == "s");
    CHECK(s.legend == Lines{"s = a0·b0 + a1·b1 + a2·b2 + a3·b3"});
}

TEST_CASE("short names never read as an array or one of its elements", "[symbolic]") {
    // Arrays s and m: a sum may not be called s, a max not m or m1 (m1 is the element m[1]).
    Symbolic r = symbolic(build(R"(registers 4
input x[3]
output s[1]
output m[2]
LOAD x[0], R0
LOAD x[1], R1
LOAD x[2], R2
MAX R0, R1, R3
MAX R3, R2, R3
SUB R0, R3, R0
EXP R0, R0
SUB R1, R3, R1
EXP R1, R1
ADD R0, R1, R0
SUB R2, R3, R2
EXP R2, R2
ADD R0, R2, R0
STORE R0, m[0]
)"));
    CHECK(r.legend == std::vector<std::string>{"m2 = max(x0, x1, x2)", "s1 = e^(x0 − m2) + e^(x1 − m2)", "m0 = s1 + e^(x2 − m2)"});
}

TEST_CASE("a symbolic trace names only the input elements it reads", "[symbolic]") {
    // n = 10,000,000: the inputs stay unnamed until read, so memory follows the 20 steps shown.
    Program p = build_file("programs/p5_online_softmax.toy", {{"n", 10'000'000}});
    Trace t = trace(p, true, RunOptions::limited_to(20));
    REQUIRE(t.error.has_value());  // the step limit
    CHECK(t.steps.size() == 20);
    CHECK(t.arena.leaf_names().size() <= 20);
}
