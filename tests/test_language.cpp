// The .toy language end to end: parse, compile (bind parameters), run, and the counters,
// checks and expectations that come out.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/check/run.h"
#include "sim/front/parser.h"
#include "sim/lower/program.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {



std::uint64_t ops(const RunResult& r, Op op) { return r.counters.by_opcode[static_cast<size_t>(op)]; }

// The value each executed step wrote (LOAD: the element loaded), from a numeric trace.
std::vector<double> written_values(const Program& p) {
    Trace t = trace(p, false);
    REQUIRE_FALSE(t.error.has_value());
    std::vector<double> out;
    for (const auto& s : t.steps) out.push_back(s.number);
    return out;
}

}  // namespace

TEST_CASE("a nested loop with affine subscripts does n*n LOADs", "[language]") {
    const char* text = R"(registers 1
param n = 5
input a[n][n]
for i in 0..n {
    for j in 0..n {
        LOAD a[i][j], R0
    }
}
)";
    Program p = build(text);
    REQUIRE(p.params.size() == 1);
    CHECK(p.params[0] == std::pair<std::string, std::int64_t>{"n", 5});
    RunResult r = run(p);
    CHECK(ops(r, Op::LOAD) == 25);
    CHECK(r.counters.instructions == 25);
    CHECK(r.counters.cycles == 25);
    CHECK(r.counters.dram_reads == 25);
    CHECK(r.counters.dram_writes == 0);
    // Every element read exactly once.
    CHECK(r.counters.arrays[0].elements_read == 25);
    CHECK(r.counters.arrays[0].max_reads == 1);
    CHECK(r.counters.peak_registers == 1);
}

TEST_CASE("affine subscripts address the right elements", "[language]") {
    // x[2i + 1] for i in 0..3 reads x1, x3, x5: each odd element once, no even one.
    const char* text = R"(registers 1
input x[6] = [10, 11, 12, 13, 14, 15]
for i in 0..3 {
    LOAD x[2*i + 1], R0
}
)";
    Program p = build(text);
    CHECK(written_values(p) == std::vector<double>{11, 13, 15});
    RunResult r = run(p);
    CHECK(r.counters.arrays[0].elements_read == 3);
    CHECK(r.counters.arrays[0].read_histogram == std::map<std::uint64_t, std::uint64_t>{{0, 3}, {1, 3}});
}

TEST_CASE("3n in an expectation means 3*n, and --set style overrides rebind it", "[language]") {
    const char* text = R"(registers 1
param n = 4
input x[n]
expect LOAD = 3n
expect reads(x) = 3n
expect cycles = 3n + 1 - 1
for pass in 0..3 {
    for i in 0..n {
        LOAD x[i], R0
    }
}
)";
    Program p = build(text);
    REQUIRE(p.expects.size() == 3);
    CHECK(p.expects[0].value == 12);
    CHECK(p.expects[0].text == "LOAD");
    CHECK(p.expects[1].value == 12);
    CHECK(p.expects[1].text == "reads(x)");
    RunResult r = run(p);
    CHECK(ops(r, Op::LOAD) == 12);
    CHECK(r.expects_ok());
    for (const auto& e : r.expects) CHECK(e.actual == 12);

    Program q = build(text, {{"n", 7}});
    CHECK(q.params[0].second == 7);
    CHECK(q.arrays[0].dims == std::vector<std::int64_t>{7});
    CHECK(q.expects[0].value == 21);
    RunResult rq = run(q);
    CHECK(ops(rq, Op::LOAD) == 21);
    CHECK(rq.counters.cycles == 21);
    CHECK(rq.expects_ok());
}

TEST_CASE("overriding an unknown parameter is an error naming it", "[language]") {
    const char* text = "registers 1\nparam n = 4\ninput x[n]\nLOAD x[0], R0\n";
    try {
        build(text, {{"m", 3}});
        FAIL("compile accepted an unknown parameter");
    } catch (const ToyError& e) {
        CHECK_THAT(e.what(), Catch::Contains("unknown parameter 'm'"));
    }
}

TEST_CASE("parameters may depend on earlier parameters, and see their overrides", "[language]") {
    const char* text = R"(registers 1
param n = 3
param m = 2n + 1
input x[m]
for i in 0..m {
    LOAD x[i], R0
}
)";
    Program p = build(text);
    REQUIRE(p.params.size() == 2);
    CHECK(p.params[1] == std::pair<std::string, std::int64_t>{"m", 7});
    CHECK(ops(run(p), Op::LOAD) == 7);

    // Overriding n changes m, which is computed from it.
    Program q = build(text, {{"n", 10}});
    CHECK(q.params[1].second == 21);
    CHECK(ops(run(q), Op::LOAD) == 21);

    // Overriding m itself wins over its formula.
    Program s = build(text, {{"m", 2}});
    CHECK(s.params[1].second == 2);
    CHECK(ops(run(s), Op::LOAD) == 2);
}

TEST_CASE("zero-trip loops run nothing, even with out-of-range subscripts inside", "[language]") {
    const char* text = R"(registers 1
param n = 0
input x[2]
for i in 0..n {
    LOAD x[i + 100], R0
}
for i in 3..2 {
    LOAD x[i], R0
}
LOAD x[1], R0
)";
    Program p = build(text);
    RunResult r = run(p);
    CHECK(r.counters.instructions == 1);
    CHECK(ops(r, Op::LOAD) == 1);
    CHECK(r.counters.cycles == 1);
}

TEST_CASE("an inner loop bound may depend on the outer variable: triangular count", "[language]") {
    const char* text = R"(registers 1
param n = 6
input a[n][n]
for i in 0..n {
    for j in 0..i+1 {
        LOAD a[i][j], R0
    }
}
)";
    for (std::int64_t n : {1, 2, 6, 10}) {
        INFO("n = " << n);
        RunResult r = run(build(text, {{"n", n}}));
        CHECK(ops(r, Op::LOAD) == static_cast<std::uint64_t>(n * (n + 1) / 2));
        CHECK(r.counters.arrays[0].elements_read == static_cast<std::uint64_t>(n * (n + 1) / 2));
    }
}

TEST_CASE("R[expr] selects registers by a loop variable", "[language]") {
    const char* text = R"(registers 4
input x[3] = [1.5, 2.5, 4]
output y[3]
check y = copy(x)
for i in 0..3 {
    LOAD x[i], R[i + 1]
}
for i in 0..3 {
    STORE R[3 - i], y[2 - i]
}
)";
    Program p = build(text);
    RunResult r = run(p);
    REQUIRE(r.checks.size() == 1);
    CHECK(r.checks[0].ok);
    CHECK(r.checks[0].elements == 3);
    CHECK(r.checks[0].max_abs_err == 0);
    // R0 is never touched: 3 registers used.
    CHECK(r.counters.peak_registers == 3);

    Trace t = trace(p, false);
    REQUIRE(t.steps.size() == 6);
    CHECK(t.steps[0].reg == 1);
    CHECK(t.steps[1].reg == 2);
    CHECK(t.steps[2].reg == 3);
    CHECK(t.registers_used == std::vector<int>{1, 2, 3});
}

TEST_CASE("an indexed register beyond the register file is a run-time error", "[language]") {
    const char* text = R"(registers 2
input x[3]
for i in 0..3 {
    LOAD x[i], R[i]
}
)";
    Program p = build(text);
    try {
        run(p);
        FAIL("R[2] on a 2-register machine ran");
    } catch (const ToyError& e) {
        CHECK_THAT(e.what(), Catch::Contains("register index 2 is out of range for the register file (2 registers: R0..R1)"));
        CHECK_THAT(e.what(), Catch::Contains("i = 2"));
    }
}

TEST_CASE("literal fills, nested or flat, put the values in row-major order", "[language]") {
    const char* nested = R"(registers 1
input a[2][3] = [[1, 2, 3], [4.5, -5, 6e2]]
LOAD a[0][0], R0
LOAD a[0][2], R0
LOAD a[1][0], R0
LOAD a[1][1], R0
LOAD a[1][2], R0
)";
    CHECK(written_values(build(nested)) == std::vector<double>{1, 3, 4.5, -5, 600});

    const char* flat = R"(registers 1
input a[2][3] = [1, 2, 3, 4.5, -5, 6e2]
LOAD a[0][1], R0
LOAD a[1][0], R0
LOAD a[1][2], R0
)";
    CHECK(written_values(build(flat)) == std::vector<double>{2, 4.5, 600});
}

TEST_CASE("literal data flows through MAC to the stored result", "[language]") {
    // c00 = a00·b00 + a01·b10 = 1·5 + 2·7 = 19, P1's program on known data.
    Program p = build(kP1Literal);
    CHECK(written_values(p) == std::vector<double>{1, 5, 5, 2, 7, 19, 19});
    RunResult r = run(p);
    CHECK(r.checks_ok());
    CHECK(r.checks[0].elements == 1);
}

TEST_CASE("a literal fill with the wrong number of values is an error", "[language]") {
    try {
        build("registers 1\ninput a[2][2] = [1, 2, 3]\n");
        FAIL("accepted 3 values for 4 elements");
    } catch (const ToyError& e) {
        CHECK(std::string(e.what()) == "array 'a' has 4 elements but 3 values are given");
    }
}

TEST_CASE("random fills are deterministic, in range, and differ by seed", "[language]") {
    const char* text = R"(registers 1
input x[8] = random(42, 2, 3)
input y[8] = random(43, 2, 3)
input z[8]
for i in 0..8 {
    LOAD x[i], R0
}
for i in 0..8 {
    LOAD y[i], R0
}
for i in 0..8 {
    LOAD z[i], R0
}
)";
    std::vector<double> first = written_values(build(text));
    std::vector<double> second = written_values(build(text));
    REQUIRE(first.size() == 24);
    CHECK(first == second);
    for (size_t i = 0; i < 16; ++i) {
        CHECK(first[i] >= 2.0);
        CHECK(first[i] < 3.0);
    }
    // The default fill (z) is uniform in [-1, 1).
    for (size_t i = 16; i < 24; ++i) {
        CHECK(first[i] >= -1.0);
        CHECK(first[i] < 1.0);
    }
    std::vector<double> x(first.begin(), first.begin() + 8), y(first.begin() + 8, first.begin() + 16);
    CHECK(x != y);
    // Not a constant fill.
    CHECK(std::set<double>(x.begin(), x.end()).size() == 8);
}

TEST_CASE("cost OP = N changes that opcode's cycles only", "[language]") {
    std::string body = R"(registers 2
input x[3]
for i in 0..3 {
    LOAD x[i], R0
    EXP R0, R1
}
)";
    RunResult plain = run(build(body));
    CHECK(plain.counters.cycles == 6);
    Program costly = build("cost EXP = 4\n" + body);
    CHECK(costly.cycles[static_cast<size_t>(Op::EXP)] == 4);
    CHECK(costly.cycles[static_cast<size_t>(Op::LOAD)] == 1);
    RunResult r = run(costly);
    CHECK(r.counters.cycles == 3 * 1 + 3 * 4);
    CHECK(r.counters.instructions == 6);
    CHECK(ops(r, Op::EXP) == 3);
}

namespace {
// out = copy(x) but the program copies y, which is x plus a relative error of 1e-3.
std::string near_copy(const std::string& tolerance) {
    return R"(registers 1
input x[2] = [1, 2]
input y[2] = [1.001, 2]
output out[2]
check out = copy(x))" +
           tolerance + R"(
LOAD y[0], R0
STORE R0, out[0]
LOAD y[1], R0
STORE R0, out[1]
)";
}
}  // namespace

TEST_CASE("within sets the check's tolerance", "[language]") {
    RunResult loose = run(build(near_copy(" within 0.01")));
    REQUIRE(loose.checks.size() == 1);
    CHECK(loose.checks[0].ok);
    CHECK(loose.checks[0].max_abs_err == Approx(0.001).epsilon(1e-6));
    CHECK(loose.checks[0].max_rel_err == Approx(0.001).epsilon(1e-6));

    RunResult tight = run(build(near_copy(" within 0.0001")));
    CHECK_FALSE(tight.checks[0].ok);
    CHECK(tight.checks[0].first_wrong == "out[0] = 1.0009999999999999 but the reference is 1");

    // The default tolerance (1e-9) rejects a 1e-3 error too.
    RunResult strict = run(build(near_copy("")));
    CHECK_FALSE(strict.checks[0].ok);
    CHECK_FALSE(strict.checks_ok());
}

TEST_CASE("scalar (zero-dimension) arrays", "[language]") {
    const char* text = R"(registers 2
input s = [2.5]
input t = [4]
output u
output v
check v = copy(s)
check u = copy(t)
LOAD s, R0
STORE R0, v
LOAD t, R1
MUL R0, R1, R0
STORE R0, u
)";
    Program p = build(text);
    REQUIRE(p.arrays.size() == 4);
    CHECK(p.arrays[0].dims.empty());
    CHECK(p.arrays[0].size == 1);
    CHECK(p.dram_size == 4);
    CHECK(written_values(p) == std::vector<double>{2.5, 2.5, 4, 10, 10});
    RunResult r = run(p);
    REQUIRE(r.checks.size() == 2);
    CHECK(r.checks[0].ok);
    CHECK(r.checks[0].elements == 1);
    CHECK(r.checks[0].max_abs_err == 0);
    // u holds s·t = 10, not t = 4.
    CHECK_FALSE(r.checks[1].ok);
    CHECK(r.checks[1].elements == 1);
    CHECK(r.checks[1].first_wrong == "u = 10 but the reference is 4");
    CHECK(r.counters.dram_reads == 2);
    CHECK(r.counters.dram_writes == 2);
}

namespace {
const char* kWrongMatmul = R"(registers 3
input  a[2][2] = [[1, 2], [3, 4]]
input  b[2][2] = [[5, 6], [7, 8]]
output c[2][2]
check c = matmul(a, b)
# c00 = 1·5 + 2·7 = 19: right
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
STORE R2, c[0][0]
# c01 should be 1·6 + 2·8 = 22; this stores R1 (b10 = 7) instead
LOAD a[0][0], R0
LOAD b[0][1], R1
MAC_Z R0, R1, R2
LOAD a[0][1], R0
LOAD b[1][1], R1
MAC R0, R1, R2, R2
LOAD b[1][0], R1
STORE R1, c[0][1]
# c10 = 3·5 + 4·7 = 43: right; c11 is never stored
LOAD a[1][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
LOAD a[1][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
STORE R2, c[1][0]
)";
}  // namespace

TEST_CASE("a wrong program fails its check, naming the first wrong element", "[language]") {
    RunResult r = run(build(kWrongMatmul));
    REQUIRE(r.checks.size() == 1);
    const CheckResult& c = r.checks[0];
    CHECK_FALSE(c.ok);
    CHECK_FALSE(r.checks_ok());
    CHECK(c.elements == 4);
    CHECK(c.first_wrong == "c[0][1] = 7 but the reference is 22");
    // c[1][1] was never written: the error is unbounded.
    CHECK(std::isinf(c.max_abs_err));
}

TEST_CASE("an output element the program never wrote fails the check", "[language]") {
    const char* text = R"(registers 3
input  a[2][2] = [[1, 2], [3, 4]]
input  b[2][2] = [[5, 6], [7, 8]]
output c[2][2]
check c[1] = matmul(a, b)[1]
LOAD a[1][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
LOAD a[1][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
STORE R2, c[1][0]
)";
    RunResult r = run(build(text));
    REQUIRE(r.checks.size() == 1);
    CHECK_FALSE(r.checks[0].ok);
    CHECK(r.checks[0].elements == 2);
    CHECK(r.checks[0].first_wrong == "c[1][1] was never written");

    // The same program checked only on the row element it wrote passes.
    std::string narrowed = text;
    const std::string row_check = "check c[1] = matmul(a, b)[1]";
    narrowed.replace(narrowed.find(row_check), row_check.size(), "check c[1][0] = matmul(a, b)[1][0]");
    RunResult ok = run(build(narrowed));
    CHECK(ok.checks[0].ok);
    CHECK(ok.checks[0].elements == 1);
    CHECK(ok.checks[0].max_abs_err == 0);
}

TEST_CASE("expectations that do not match are reported with the actual figure", "[language]") {
    const char* text = R"(registers 3
param n = 3
input x[n]
expect LOAD = 3
expect cycles = 5
expect reads(x) = 2n
expect writes = 0
expect registers = 1
for i in 0..n {
    LOAD x[i], R0
}
)";
    Program p = build(text);
    RunResult r = run(p);
    REQUIRE(r.expects.size() == 5);
    CHECK(r.expects[0].ok);
    CHECK(r.expects[0].actual == 3);
    CHECK_FALSE(r.expects[1].ok);
    CHECK(r.expects[1].actual == 3);
    CHECK(p.expects[1].value == 5);
    CHECK_FALSE(r.expects[2].ok);
    CHECK(r.expects[2].actual == 3);
    CHECK(p.expects[2].value == 6);
    CHECK(r.expects[3].ok);
    CHECK(r.expects[4].ok);
    CHECK_FALSE(r.expects_ok());
    // No check declared: checks are vacuously fine.
    CHECK(r.checks.empty());
    CHECK(r.checks_ok());
}

TEST_CASE("P2 inner product: per-element read reuse", "[language]") {
    Program p = build_file("programs/p2_matmul_inner_3reg.toy");
    RunResult r = run(p);
    REQUIRE(p.arrays.size() == 3);
    REQUIRE(p.arrays[0].name == "a");
    REQUIRE(p.arrays[1].name == "b");
    const ArrayStats& a = r.counters.arrays[0];
    const ArrayStats& b = r.counters.arrays[1];
    const ArrayStats& c = r.counters.arrays[2];
    // a00 and a10 are loaded twice, a01 and a11 once (kept in R0 for the next output).
    CHECK(a.reads == 6);
    CHECK(a.max_reads == 2);
    CHECK(a.elements_read == 4);
    CHECK(a.read_histogram == std::map<std::uint64_t, std::uint64_t>{{1, 2}, {2, 2}});
    // b00, b10, b11 twice, b01 once (kept in R1 from c01 to c11).
    CHECK(b.reads == 7);
    CHECK(b.max_reads == 2);
    CHECK(b.read_histogram == std::map<std::uint64_t, std::uint64_t>{{1, 1}, {2, 3}});
    CHECK(c.reads == 0);
    CHECK(c.writes == 4);
    CHECK(c.max_reads == 0);
    CHECK(c.read_histogram == std::map<std::uint64_t, std::uint64_t>{{0, 4}});
    CHECK(r.counters.cycles == 25);
    CHECK(r.checks_ok());
    CHECK(r.expects_ok());
}

TEST_CASE("P3 outer product: every a element read once", "[language]") {
    Program p = build_file("programs/p3_matmul_outer_6reg.toy");
    RunResult r = run(p);
    const ArrayStats& a = r.counters.arrays[0];
    const ArrayStats& b = r.counters.arrays[1];
    CHECK(a.reads == 4);
    CHECK(a.max_reads == 1);
    CHECK(a.read_histogram == std::map<std::uint64_t, std::uint64_t>{{1, 4}});
    // b00 and b10 are reloaded for the second row of A; b01 and b11 are read once.
    CHECK(b.reads == 6);
    CHECK(b.max_reads == 2);
    CHECK(b.read_histogram == std::map<std::uint64_t, std::uint64_t>{{1, 2}, {2, 2}});
    CHECK(r.counters.cycles == 22);
    CHECK(r.counters.peak_registers == 6);
    CHECK(r.checks_ok());
    CHECK(r.expects_ok());
}
