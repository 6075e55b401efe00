// The static cost analysis (sim/cost.h): exact counts from the loop structure and closed-form
// formulas from the source, both checked against what a full run counts.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/analysis/cost.h"
#include "sim/print/cost_report.h"
#include "sim/print/report.h"
#include "sim/check/run.h"
#include "sim/front/parser.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

// FlashAttention-2's forward pass: Q tiles outer, K/V tiles inner.
const char* const kFa2 = R"(param n = 4
param d = 4
param Br = 2
param Bc = 2
let Tr = cdiv(n, Br)
let Tc = cdiv(n, Bc)
registers 2*Br*d + 2*Bc*d + 2*Br*Bc + 4*Br

tile q[Br][d]
tile k[Bc][d]
tile v[Bc][d]
tile o[Br][d]
tile s[Br][Bc]
tile pt[Br][Bc]
tile m[Br][1]
tile mnew[Br][1]
tile l[Br][1]
tile c[Br][1]

input Q[n][d]
input K[n][d]
input V[n][d]
output O[n][d]
output L[n]

check O = attention(Q, K, V)

for i in 0..Tr {
    LOAD Q[i*Br..i*Br+Br][0..d], q
    SET -inf, q, m
    SET 0, q, l
    SET 0, q, o
    for j in 0..Tc {
        LOAD K[j*Bc..j*Bc+Bc][0..d], k
        LOAD V[j*Bc..j*Bc+Bc][0..d], v
        MAC_Z q, k.T, s
        ROWMAX s, mnew
        MAX m, mnew, mnew
        SUB s, mnew, s
        EXP s, pt
        SUB m, mnew, c
        EXP c, c
        MUL l, c, l
        ROWSUM pt, m
        ADD l, m, l
        MUL o, c, o
        MAC pt, v, o, o
        MOV mnew, m
    }
    DIV o, l, o
    STORE o, O[i*Br..i*Br+Br][0..d]
}
)";

int array_index(const Program& p, const std::string& name) {
    int a = p.find_array(name);
    REQUIRE(a >= 0);
    return a;
}

std::string reads_text(const Program& p, const std::vector<ArrayFormulas>& f, const std::string& name) {
    return f[static_cast<size_t>(array_index(p, name))].reads.text();
}
std::string writes_text(const Program& p, const std::vector<ArrayFormulas>& f, const std::string& name) {
    return f[static_cast<size_t>(array_index(p, name))].writes.text();
}

// Every array: count-only equals the run's counters, and so does an exact formula's value.
// Returns a description of the first disagreement, or "" when all agree.
std::string disagreement(const Program& p, bool require_exact_formulas) {
    auto formulas = derive_formulas(p);
    auto counted = count_traffic(p);
    RunResult r = run(p);
    for (size_t a = 0; a < p.arrays.size(); ++a) {
        const ArrayStats& s = r.counters.arrays[a];
        const ArrayFormulas& f = formulas[a];
        std::string where = fmt::format("array {} at {}", p.arrays[a].name, format_params(p));
        if (counted[a].reads != s.reads || counted[a].writes != s.writes)
            return fmt::format("{}: counted {}/{} but the run has {}/{}", where, counted[a].reads, counted[a].writes, s.reads, s.writes);
        if (require_exact_formulas && !f.exact) return fmt::format("{}: the formula is not exact: {}", where, f.note);
        if (!f.exact) continue;
        auto reads = f.reads.evaluate(p.params), writes = f.writes.evaluate(p.params);
        if (!reads || !writes || *reads != static_cast<std::int64_t>(s.reads) || *writes != static_cast<std::int64_t>(s.writes))
            return fmt::format("{}: {} = {}, {} = {} but the run has {}/{}", where, f.reads.text(), reads ? *reads : -1,
                               f.writes.text(), writes ? *writes : -1, s.reads, s.writes);
    }
    return "";
}

}  // namespace

TEST_CASE("cost: scalar nested loops give polynomial formulas", "[cost]") {
    const char* text = R"(param n = 5
param m = 3
registers 2
input  x[n]
input  a[n][m]
output y[n]
for i in 0..n {
    for j in 0..n {
        LOAD x[j], R0
    }
    for k in 0..m {
        LOAD a[i][k], R1
    }
    STORE R0, y[i]
}
for i in 1..n {
    LOAD x[i], R0
}
)";
    Program p = build(text);
    auto f = derive_formulas(p);
    CHECK(reads_text(p, f, "x") == "n·n + n − 1");
    CHECK(reads_text(p, f, "a") == "n·m");
    CHECK(writes_text(p, f, "a") == "0");
    CHECK(writes_text(p, f, "y") == "n");
    for (const auto& af : f) CHECK(af.exact);
    auto c = count_traffic(p);
    CHECK(c[static_cast<size_t>(array_index(p, "x"))].reads == 5 * 5 + 4);
    CHECK(c[static_cast<size_t>(array_index(p, "a"))].reads == 15);
    CHECK(c[static_cast<size_t>(array_index(p, "y"))].writes == 5);
    for (std::int64_t n = 1; n <= 12; ++n)
        for (std::int64_t m = 1; m <= 4; ++m) {
            Program q = build(text, {{"n", n}, {"m", m}});
            CHECK(disagreement(q, true) == "");
        }
}

TEST_CASE("cost: a peeled sum collapses to 2·n (online softmax's reads)", "[cost]") {
    Program p = build_file("programs/p5_online_softmax.toy");
    auto f = derive_formulas(p);
    CHECK(reads_text(p, f, "x") == "2·n");
    CHECK(writes_text(p, f, "out") == "n");
}

TEST_CASE("cost: FlashAttention-2's formulas are n·d, n·d·Tr and n·d", "[cost][fa2]") {
    Program p = build(kFa2);
    auto f = derive_formulas(p);
    CHECK(reads_text(p, f, "Q") == "n·d");
    CHECK(reads_text(p, f, "K") == "n·d·Tr");
    CHECK(reads_text(p, f, "V") == "n·d·Tr");
    CHECK(writes_text(p, f, "O") == "n·d");
    CHECK(writes_text(p, f, "L") == "0");
    CHECK(reads_text(p, f, "O") == "0");
    for (const auto& af : f) {
        CHECK(af.exact);
        CHECK(af.note.empty());
    }
    CHECK(describe_lets(p, f) == "Tr = cdiv(n, Br) = ⌈n/Br⌉ = 2\n");  // Tc is not in any formula
    auto lets = let_legend(p, f);
    REQUIRE(lets.size() == 1);
    CHECK(lets[0].name == "Tr");
    CHECK(lets[0].definition == "cdiv(n, Br)");
    CHECK(lets[0].math == "⌈n/Br⌉");
    CHECK(lets[0].value == 2);
}

TEST_CASE("cost: FlashAttention-2, formula = count-only = run for many block sizes", "[cost][fa2]") {
    auto tree = std::make_shared<const ast::Program>(parse(std::make_shared<SourceFile>("fa2.toy", kFa2)));
    const std::vector<std::int64_t> blocks = {1, 2, 3, 4, 5, 7, 8};
    int cases = 0;
    std::string first_failure;
    for (std::int64_t n = 1; n <= 40; ++n)
        for (std::int64_t br : blocks)
            for (std::int64_t bc : blocks)
                for (std::int64_t d : {1, 3, 4}) {
                    Program p = compile(tree, {{"n", n}, {"d", d}, {"Br", br}, {"Bc", bc}});
                    std::string why = disagreement(p, true);
                    if (!why.empty() && first_failure.empty()) first_failure = why;
                    // And the closed form itself: reads(K) = n·d·⌈n/Br⌉, with the edge tiles clipped.
                    auto c = count_traffic(p);
                    std::uint64_t tr = static_cast<std::uint64_t>((n + br - 1) / br);
                    if (c[static_cast<size_t>(p.find_array("K"))].reads != static_cast<std::uint64_t>(n * d) * tr &&
                        first_failure.empty())
                        first_failure = fmt::format("reads(K) at {}", format_params(p));
                    ++cases;
                }
    CHECK(cases == 40 * 7 * 7 * 3);
    CHECK(first_failure == "");
}

TEST_CASE("cost: a triangular loop has an inexact formula but an exact count", "[cost]") {
    const char* text = R"(param n = 5
registers 1
input  x[n]
output y[n]
for i in 0..n {
    for j in 0..i+1 {
        LOAD x[j], R0
    }
    STORE R0, y[i]
}
)";
    for (std::int64_t n = 1; n <= 20; ++n) {
        Program p = build(text, {{"n", n}});
        auto f = derive_formulas(p);
        const ArrayFormulas& x = f[static_cast<size_t>(p.find_array("x"))];
        CHECK_FALSE(x.exact);
        CHECK(x.note.find("bounds of loop j depend on loop variable i") != std::string::npos);
        CHECK(x.reads.text() == "n·n");  // the largest pass, i = n − 1, every time: an upper bound
        CHECK(f[static_cast<size_t>(p.find_array("y"))].exact);
        CHECK(count_traffic(p)[static_cast<size_t>(p.find_array("x"))].reads == static_cast<std::uint64_t>(n * (n + 1) / 2));
        CHECK(disagreement(p, false) == "");
        CHECK(*x.reads.evaluate(p.params) >= n * (n + 1) / 2);
    }
}

TEST_CASE("cost: a peeled tile loop `for j in 1..Tc` is exact", "[cost]") {
    const char* text = R"(param n = 10
param Bc = 3
let Tc = cdiv(n, Bc)
registers Bc
tile t[Bc]
input  x[n]
output y[n]
LOAD x[0..Bc], t
STORE t, y[0..Bc]
for j in 1..Tc {
    LOAD x[j*Bc..j*Bc+Bc], t
    STORE t, y[j*Bc..j*Bc+Bc]
}
)";
    Program p = build(text);
    auto f = derive_formulas(p);
    CHECK(reads_text(p, f, "x") == "min(Bc, n) + max(0, n − Bc)");
    CHECK(writes_text(p, f, "y") == "min(Bc, n) + max(0, n − Bc)");
    for (std::int64_t n = 1; n <= 30; ++n)
        for (std::int64_t bc = 1; bc <= 9; ++bc) {
            Program q = build(text, {{"n", n}, {"Bc", bc}});
            CHECK(disagreement(q, true) == "");
            CHECK(count_traffic(q)[static_cast<size_t>(q.find_array("x"))].reads == static_cast<std::uint64_t>(n));
        }
}

TEST_CASE("cost: whole tiles `for i in 0..n/B` are never clipped", "[cost]") {
    const char* text = R"(param n = 10
param B = 3
registers B + 1
tile t[B]
input x[n]
output y[n]
for i in 0..n/B {
    LOAD x[i*B..i*B+B], t
}
LOAD x[0], R0
STORE R0, y[0]
)";
    Program p = build(text);
    auto f = derive_formulas(p);
    CHECK(reads_text(p, f, "x") == "B·(n/B) + 1");
    for (std::int64_t n = 1; n <= 20; ++n)
        for (std::int64_t b = 1; b <= 6; ++b) CHECK(disagreement(build(text, {{"n", n}, {"B", b}}), true) == "");
}

TEST_CASE("cost: a clipped range that is not the tiling pattern is an upper bound with a note", "[cost]") {
    // A sliding window: x[j..j+B] is clipped for the last B − 1 positions.
    const char* text = R"(param n = 10
param B = 3
registers B + 1
tile t[B]
input x[n]
output y[n]
for j in 0..n {
    LOAD x[j..j+B], t
}
LOAD x[0], R0
STORE R0, y[0]
)";
    Program p = build(text);
    auto f = derive_formulas(p);
    const ArrayFormulas& x = f[static_cast<size_t>(p.find_array("x"))];
    CHECK_FALSE(x.exact);
    CHECK(x.reads.text() == "n·B + 1");
    CHECK(x.note.find("reads(x): the range j..j + B may be clipped at the edge of x") != std::string::npos);
    CHECK(x.note.find("an upper bound") != std::string::npos);
    for (std::int64_t n = 1; n <= 25; ++n)
        for (std::int64_t b = 1; b <= 6; ++b) {
            Program q = build(text, {{"n", n}, {"B", b}});
            CHECK(disagreement(q, false) == "");
            std::uint64_t expected = 1;
            for (std::int64_t j = 0; j < n; ++j) expected += static_cast<std::uint64_t>(std::min(j + b, n) - j);
            CHECK(count_traffic(q)[static_cast<size_t>(q.find_array("x"))].reads == expected);
        }
}

TEST_CASE("cost: a window that provably stays inside the array is exact", "[cost]") {
    const char* text = R"(param n = 10
param B = 3
registers B + 1
tile t[B]
input x[n]
output y[n]
for j in 0..n-B+1 {
    LOAD x[j..j+B], t
}
LOAD x[0], R0
STORE R0, y[0]
)";
    Program p = build(text);
    auto f = derive_formulas(p);
    CHECK(reads_text(p, f, "x") == "n·B − B·B + B + 1");
    for (std::int64_t n = 3; n <= 20; ++n)
        for (std::int64_t b = 1; b <= 3; ++b) CHECK(disagreement(build(text, {{"n", n}, {"B", b}}), true) == "");
}

TEST_CASE("cost: count_traffic answers for n = 1,000,000 without iterating", "[cost][fa2]") {
    auto tree = std::make_shared<const ast::Program>(parse(std::make_shared<SourceFile>("fa2.toy", kFa2)));
    // 15625 tiles exactly, and one more that is clipped (the count then iterates j: 15625 passes).
    for (std::int64_t n : {1'000'000, 999'999}) {
        Program p = compile(tree, {{"n", n}, {"d", 64}, {"Br", 64}, {"Bc", 64}});
        auto c = count_traffic(p);
        auto f = derive_formulas(p);
        std::uint64_t tr = static_cast<std::uint64_t>((n + 63) / 64);
        std::uint64_t nd = static_cast<std::uint64_t>(n) * 64;
        auto at = [&](const char* name) { return static_cast<size_t>(p.find_array(name)); };
        CHECK(c[at("Q")].reads == nd);
        CHECK(c[at("K")].reads == nd * tr);
        CHECK(c[at("V")].reads == nd * tr);
        CHECK(c[at("O")].writes == nd);
        CHECK(c[at("L")].writes == 0);
        CHECK(f[at("K")].reads.evaluate(p.params) == static_cast<std::int64_t>(nd * tr));
        CHECK(f[at("O")].writes.evaluate(p.params) == static_cast<std::int64_t>(nd));
    }
}

TEST_CASE("cost: 2-D edge tiles in both dimensions are exact", "[cost]") {
    const char* text = R"(param n = 7
param m = 5
param B = 2
param C = 3
registers B*C
tile t[B][C]
input  A[n][m]
output Y[n][m]
for i in 0..cdiv(n, B) {
    for j in 0..cdiv(m, C) {
        LOAD A[i*B..i*B+B][j*C..j*C+C], t
        STORE t, Y[i*B..i*B+B][j*C..j*C+C]
    }
}
)";
    Program p = build(text);
    auto f = derive_formulas(p);
    CHECK(reads_text(p, f, "A") == "n·m");
    CHECK(writes_text(p, f, "Y") == "n·m");
    for (std::int64_t n = 1; n <= 9; ++n)
        for (std::int64_t m = 1; m <= 9; ++m)
            for (std::int64_t b : {1, 2, 4})
                for (std::int64_t c : {1, 3, 5}) CHECK(disagreement(build(text, {{"n", n}, {"m", m}, {"B", b}, {"C", c}}), true) == "");
}

TEST_CASE("cost: windows with a stride other than their width, clipped at the edge", "[cost]") {
    // S < B overlaps, S > B leaves gaps: the count is exact, the formula B·cdiv(n, S) an upper bound.
    const char* text = R"(param n = 10
param B = 3
param S = 2
registers B + 1
tile t[B]
input  x[n]
output y[n]
for j in 0..cdiv(n, S) {
    LOAD x[j*S..j*S+B], t
}
LOAD x[0], R0
STORE R0, y[0]
)";
    Program p = build(text);
    const ArrayFormulas x = derive_formulas(p)[static_cast<size_t>(p.find_array("x"))];
    CHECK(x.reads.text() == "B·cdiv(n, S) + 1");
    CHECK(x.note.find("the range j·S..j·S + B may be clipped") != std::string::npos);
    for (std::int64_t n = 1; n <= 20; ++n)
        for (std::int64_t b = 1; b <= 5; ++b)
            for (std::int64_t stride = 1; stride <= 5; ++stride) {
                Program q = build(text, {{"n", n}, {"B", b}, {"S", stride}});
                CHECK(disagreement(q, false) == "");
                std::uint64_t expected = 1;
                for (std::int64_t j = 0; j < (n + stride - 1) / stride; ++j)
                    expected += static_cast<std::uint64_t>(std::min(j * stride + b, n) - j * stride);
                CHECK(count_traffic(q)[static_cast<size_t>(q.find_array("x"))].reads == expected);
                // Symbolic: B and S are different names, so even where they are equal this is not the pattern.
                CHECK_FALSE(derive_formulas(q)[static_cast<size_t>(q.find_array("x"))].exact);
            }
}

TEST_CASE("cost: causal (triangular) attention: inexact formula, exact and fast count", "[cost][fa2]") {
    std::string text = kFa2;
    auto at = text.find("for j in 0..Tc {");
    REQUIRE(at != std::string::npos);
    text.replace(at, std::string("for j in 0..Tc {").size(), "for j in 0..i+1 {");
    auto tree = std::make_shared<const ast::Program>(parse(std::make_shared<SourceFile>("causal.toy", text)));
    for (std::int64_t n = 1; n <= 20; ++n)
        for (std::int64_t b : {1, 2, 3, 5})
            for (std::int64_t d : {1, 3}) {
                Program p = compile(tree, {{"n", n}, {"d", d}, {"Br", b}, {"Bc", b}});
                CHECK(disagreement(p, false) == "");
                CHECK_FALSE(derive_formulas(p)[static_cast<size_t>(p.find_array("K"))].exact);
            }
    // At n = 999,999 the count walks the 15625 query tiles, each key tile loop in closed form.
    const std::int64_t n = 999'999, b = 64, d = 64;
    Program p = compile(tree, {{"n", n}, {"d", d}, {"Br", b}, {"Bc", b}});
    std::uint64_t expected = 0;
    for (std::int64_t i = 0; i < (n + b - 1) / b; ++i)  // the whole tiles j < i, then j = i
        expected += static_cast<std::uint64_t>(i * b * d + (std::min(i * b + b, n) - i * b) * d);
    CHECK(count_traffic(p)[static_cast<size_t>(p.find_array("K"))].reads == expected);
}

TEST_CASE("cost: a count past 64 bits is an error", "[cost]") {
    const char* text = R"(param N = 4194304
registers 1
input x[1]
output y[1]
for i in 0..N {
    for j in 0..N {
        for k in 0..N {
            LOAD x[0], R0
        }
    }
}
STORE R0, y[0]
)";
    Program p = build(text);
    CHECK_THROWS_AS(count_traffic(p), ToyError);
    Program small = build(text, {{"N", 3}});
    CHECK(count_traffic(small)[0].reads == 27);
    CHECK(derive_formulas(small)[0].reads.text() == "N·N·N");
}

TEST_CASE("cost: Formula text and evaluation", "[cost]") {
    Formula zero;
    CHECK(zero.text() == "0");
    CHECK(zero.evaluate({}) == 0);
    Formula f;
    f.terms.push_back({2, {{"n", nullptr}, {"d", nullptr}}});
    f.terms.push_back({-1, {{"n", nullptr}}});
    f.terms.push_back({-4, {}});
    CHECK(f.text() == "2·n·d − n − 4");
    CHECK(f.evaluate({{"n", 3}, {"d", 5}}) == 30 - 3 - 4);
    CHECK_FALSE(f.evaluate({{"n", 3}}).has_value());  // d unbound
    Formula big;
    big.terms.push_back({1, {{"n", nullptr}, {"n", nullptr}}});
    CHECK_FALSE(big.evaluate({{"n", std::int64_t{1} << 40}}).has_value());  // overflow
    // A factor that is an expression evaluates with the language's integer semantics.
    Program p = build(R"(param n = 7
param t = 2
registers 1
input a[n]
output c[1]
for i in 0..n/t {
    LOAD a[i], R0
}
for i in 0..cdiv(n, t) {
    LOAD a[i], R0
}
STORE R0, c[0]
)");
    auto fs = derive_formulas(p);
    CHECK(fs[0].reads.text() == "(n/t) + cdiv(n, t)");
    CHECK(fs[0].reads.evaluate(p.params) == 3 + 4);
    CHECK(fs[0].reads.evaluate({{"n", 8}, {"t", 3}}) == 2 + 3);
    CHECK(fs[0].reads.evaluate({{"n", 8}, {"t", 0}}) == std::nullopt);
}

TEST_CASE("cost: every shipped program, count-only = run, and exact formulas too", "[cost][programs]") {
    std::vector<std::string> programs = testing::shipped_programs();
    REQUIRE(programs.size() >= 8);
    for (const auto& path : programs) {
        INFO(path);
        auto tree = std::make_shared<const ast::Program>(parse_file(std::string(TOYSIM_SOURCE_DIR) + "/" + path));
        for (const auto& settings : test_settings(*tree)) {
            Program p = compile(tree, settings);
            CHECK(disagreement(p, false) == "");
        }
    }
}

TEST_CASE("cost: the printer's table, Markdown, CSV and JSON", "[cost][report]") {
    Program p = build(kFa2, {{"n", 5}});
    auto f = derive_formulas(p);
    auto c = count_traffic(p);

    std::string table = format_cost(p, f, c, Format::Table);
    auto lines = split_lines(table);
    REQUIRE(lines.size() >= 9);
    CHECK(lines[0] == "program: test.toy   params: n = 5, d = 4, Br = 2, Bc = 2, Tr = 3, Tc = 3");
    CHECK(lines[2] == "array  reads    =  writes   =");
    CHECK(lines[5] == "K      n·d·Tr  60  0        0");
    CHECK(table.find("\nTr = cdiv(n, Br) = ⌈n/Br⌉ = 3\n") != std::string::npos);
    CHECK(table.find("*") == std::string::npos);  // every formula exact

    std::string md = format_cost(p, f, c, Format::Markdown);
    CHECK(md.find("| array | reads | = | writes | = |") != std::string::npos);
    CHECK(md.find("| K | n·d·Tr | 60 | 0 | 0 |") != std::string::npos);
    CHECK(md.find("- Tr = cdiv(n, Br) = ⌈n/Br⌉ = 3") != std::string::npos);

    auto csv = split_lines(format_cost(p, f, c, Format::Csv));
    REQUIRE(csv.size() == 1 + p.arrays.size());
    CHECK(csv[0] == "array,reads,reads_value,reads_counted,writes,writes_value,writes_counted,exact,note");
    CHECK(csv[2] == "K,n·d·Tr,60,60,0,0,0,true,");

    auto j = nlohmann::json::parse(format_cost(p, f, c, Format::Json));
    CHECK(j["params"]["n"] == 5);
    CHECK(j["arrays"]["K"]["role"] == "input");
    CHECK(j["arrays"]["K"]["reads"]["formula"] == "n·d·Tr");
    CHECK(j["arrays"]["K"]["reads"]["value"] == 60);
    CHECK(j["arrays"]["K"]["reads"]["counted"] == 60);
    CHECK(j["arrays"]["K"]["exact"] == true);
    CHECK(j["arrays"]["K"]["note"].is_null());
    REQUIRE(j["lets"].size() == 1);
    CHECK(j["lets"][0]["name"] == "Tr");
    CHECK(j["lets"][0]["math"] == "⌈n/Br⌉");
    CHECK(j["lets"][0]["value"] == 3);

    // An inexact formula: both figures, marked, with the note below.
    Program tri = build(R"(param n = 5
registers 1
input  x[n]
output y[1]
for i in 0..n {
    for j in 0..i+1 {
        LOAD x[j], R0
    }
}
STORE R0, y[0]
)");
    std::string out = format_cost(tri, derive_formulas(tri), count_traffic(tri), Format::Table);
    CHECK(out.find("x      n·n    25 (counted 15) *  0       0\n") != std::string::npos);
    CHECK(out.find("\n* reads(x): the bounds of loop j depend on loop variable i") != std::string::npos);
    auto tj = nlohmann::json::parse(format_cost(tri, derive_formulas(tri), count_traffic(tri), Format::Json));
    CHECK(tj["arrays"]["x"]["exact"] == false);
    CHECK(tj["arrays"]["x"]["reads"]["value"] == 25);
    CHECK(tj["arrays"]["x"]["reads"]["counted"] == 15);
}
