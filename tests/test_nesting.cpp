// Nesting limits: any depth of parentheses, unary minus signs, calls, operator chains, loops or
// literal brackets ends in one located error, never a stack overflow. The inputs are 30,000
// levels deep, built here as strings, and go through parse, compile, cost and run in-process.
#include <catch2/catch.hpp>

#include <string>

#include "sim/analysis/cost.h"
#include "sim/check/run.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

constexpr int kDeep = 30000;

std::string repeat(const std::string& s, int n) {
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

struct Failure {
    std::string message;
    Loc loc;
};

// The ToyError that building `text` throws (none: an empty message).
Failure failure(const std::string& text) {
    try {
        build(text);
    } catch (const ToyError& e) {
        return {e.what(), e.loc()};
    }
    return {};
}

const std::string kTooDeep = "expressions nest deeper than 256 levels";

// The column of the k-th (1-based) occurrence of `what` in `line`.
int column_of(const std::string& line, const std::string& what, int k) {
    size_t at = std::string::npos;
    for (int i = 0; i < k; ++i) at = line.find(what, at == std::string::npos ? 0 : at + 1);
    REQUIRE(at != std::string::npos);
    return static_cast<int>(at) + 1;
}

}  // namespace

TEST_CASE("nesting: 30,000 parentheses stop at the 257th", "[nesting]") {
    std::string line = "let v = " + repeat("(", kDeep) + "1" + repeat(")", kDeep);
    Failure f = failure("registers 3\n" + line + "\n");
    CHECK(f.message == kTooDeep);
    CHECK(f.loc.line == 2);
    CHECK(f.loc.col == column_of(line, "(", 257));
}

TEST_CASE("nesting: 30,000 unary minus signs stop at the 257th", "[nesting]") {
    for (const std::string sign : {"-", "- "}) {
        std::string line = "let v = " + repeat(sign, kDeep) + "1";
        Failure f = failure("registers 3\n" + line + "\n");
        CHECK(f.message == kTooDeep);
        CHECK(f.loc.line == 2);
        CHECK(f.loc.col == column_of(line, "-", 257));
    }
}

TEST_CASE("nesting: a flat chain of 30,000 operators is a tree 30,000 deep and stops at the 257th", "[nesting]") {
    for (const std::string op : {"+", "-", "*", "/", "%"}) {
        INFO("operator " << op);
        std::string line = "let v = " + repeat("1" + op, kDeep) + "1";
        Failure f = failure("registers 3\n" + line + "\n");
        CHECK(f.message == kTooDeep);
        CHECK(f.loc.line == 2);
        CHECK(f.loc.col == column_of(line, op, 257));
    }
    // In a subscript, with a loop variable, as the affine folder sees it.
    std::string line = "    LOAD x[" + repeat("i+", kDeep) + "0], R0";
    Failure f = failure("registers 3\ninput x[4]\nfor i in 0..1 {\n" + line + "\n}\n");
    CHECK(f.message == kTooDeep);
    CHECK(f.loc.line == 4);
    CHECK(f.loc.col == column_of(line, "+", 257));
}

TEST_CASE("nesting: 256 levels are allowed, 257 are not", "[nesting]") {
    auto sum = [](int terms) { return "registers 3\nlet v = " + repeat("1+", terms - 1) + "1\n"; };
    Program p = build(sum(257));  // 256 operators: a tree of height 256
    CHECK(p.params.back().second == 257);
    CHECK(failure(sum(258)).message == kTooDeep);
    auto parens = [](int n) { return "registers 3\nlet v = " + repeat("(", n) + "7" + repeat(")", n) + "\n"; };
    CHECK(build(parens(256)).params.back().second == 7);
    CHECK(failure(parens(257)).message == kTooDeep);
    auto negations = [](int n) { return "registers 3\nlet v = " + repeat("-", n) + "7\n"; };
    CHECK(build(negations(256)).params.back().second == 7);
    CHECK(failure(negations(257)).message == kTooDeep);
}

TEST_CASE("nesting: 30,000 nested calls stop at the 257th", "[nesting]") {
    for (const std::string fn : {"max", "min", "cdiv"}) {
        std::string line = "let v = " + repeat(fn + "(", kDeep) + "1" + repeat(", 1)", kDeep);
        Failure f = failure("registers 3\n" + line + "\n");
        CHECK(f.message == kTooDeep);
        CHECK(f.loc.line == 2);
        CHECK(f.loc.col == column_of(line, fn + "(", 257));
    }
}

TEST_CASE("nesting: 30,000 nested loops stop at the ninth, while parsing", "[nesting]") {
    std::string text = "registers 3\ninput x[1]\n" + repeat("for i in 0..1 {\n", kDeep) + "LOAD x[0], R1\n" + repeat("}\n", kDeep);
    Failure f = failure(text);
    CHECK(f.message == "loops may nest at most 8 deep");
    CHECK(f.loc.line == 3 + 8);
    CHECK(f.loc.col == 1);
}

TEST_CASE("nesting: 30,000 nested brackets in a literal fill stop at the 257th", "[nesting]") {
    std::string line = "input z[1] = " + repeat("[", kDeep) + "1" + repeat("]", kDeep);
    Failure f = failure("registers 3\n" + line + "\n");
    CHECK(f.message == "values nest deeper than 256 levels");
    CHECK(f.loc.line == 2);
    CHECK(f.loc.col == column_of(line, "[", 1 + 257));  // after z[1]
    CHECK(build("registers 3\ninput z[1] = " + repeat("[", 256) + "1" + repeat("]", 256) + "\n").arrays[0].fill.values ==
          std::vector<double>{1});
}

TEST_CASE("nesting: the deepest expressions allowed go through compile, cost and run", "[nesting]") {
    // A loop bound and a slice of height 256 each: the compiler's folder, the count-only walk
    // and the formulas' polynomials all recurse over them.
    std::string bound = repeat("(", 200) + "n" + repeat(")", 200) + " + " + repeat("0+", 55) + "0";
    std::string text = "param n = 8\nregisters 2\ninput x[n]\noutput y[1]\nfor i in 0.." + bound + " {\n    LOAD x[i" +
                       repeat(" + 0", 255) + "], R0\n}\nSTORE R0, y[0]\n";
    Program p = build(text);
    auto traffic = count_traffic(p);
    CHECK(traffic[0].reads == 8);
    auto formulas = derive_formulas(p);
    CHECK(formulas[0].reads.evaluate(p.params) == 8);
    CHECK(estimate_work(p).instructions == 9);
    RunResult r = run(p);
    CHECK(r.counters.instructions == 9);
    CHECK(r.counters.dram_reads == 8);
    // The formula's opaque factors (a division by a deep expression) print and evaluate.
    Program q = build("param n = 8\nregisters 2\ninput x[n]\noutput y[1]\nfor i in 0..n / (" + repeat("1*", 250) +
                      "1) {\n    LOAD x[i], R0\n}\nSTORE R0, y[0]\n");
    CHECK(derive_formulas(q)[0].reads.evaluate(q.params) == 8);
    // 255 nested calls in a loop bound: 255 nested opaque factors in the formula.
    Program calls = build("param n = 8\nregisters 2\ninput x[n]\noutput y[1]\nfor i in 0.." + repeat("cdiv(", 255) + "n" +
                      repeat(", 1)", 255) + " {\n    LOAD x[i], R0\n}\nSTORE R0, y[0]\n");
    auto rf = derive_formulas(calls);
    CHECK(rf[0].reads.evaluate(calls.params) == 8);
    CHECK(rf[0].reads.evaluate({{"n", 5}}) == 5);
    CHECK(count_traffic(calls)[0].reads == 8);
}
