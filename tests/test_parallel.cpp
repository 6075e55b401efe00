// Parallel loops: the race checker against a brute-force comparison of every pair of
// iterations' read and write sets, on random small programs; what a race-free parallel loop
// leaves (the same DRAM as the loop run plainly); stepping back over iteration boundaries.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <random>
#include <set>

#include "sim/check/fill.h"
#include "support.h"

using namespace toysim;
using toysim::testing::build;

namespace {

// One access of a random parallel body: LOAD a[c + k·i] or STORE to it.
struct Access {
    bool write;
    int constant, coefficient;
};

struct Verdict {
    bool race = false;
    std::string message;
};

Verdict run_checked(const std::string& source) {
    Program p = build(source);
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    Verdict v;
    try {
        m.run_until(kNoPause, 1'000'000);
    } catch (const ToyError& e) {
        v.race = true;
        v.message = e.what();
    }
    return v;
}

}  // namespace

TEST_CASE("the race checker's verdict equals a pairwise comparison of the iterations' read and write sets", "[parallel]") {
    std::mt19937 rng(20261124);
    int races = 0, clean = 0;
    for (int trial = 0; trial < 600; ++trial) {
        const int iterations = 2 + static_cast<int>(rng() % 4), size = iterations + 3;
        const int count = 1 + static_cast<int>(rng() % 4);
        std::vector<Access> body;
        for (int k = 0; k < count; ++k)
            body.push_back({rng() % 2 == 0, static_cast<int>(rng() % 4), static_cast<int>(rng() % 2)});
        std::string source = fmt::format("registers 1\nscratch a[{}] = 0\nparallel for i in 0..{} {{\n    SET 1, R0, R0\n", size, iterations);
        for (const Access& a : body) {
            std::string element = fmt::format("a[{} + {}*i]", a.constant, a.coefficient);
            source += a.write ? fmt::format("    STORE R0, {}\n", element) : fmt::format("    LOAD {}, R0\n", element);
        }
        source += "}\n";
        // Brute force: iterations i != j conflict on an element one writes and the other touches.
        std::vector<std::set<int>> reads(static_cast<size_t>(iterations)), writes(static_cast<size_t>(iterations));
        for (int i = 0; i < iterations; ++i)
            for (const Access& a : body) (a.write ? writes : reads)[static_cast<size_t>(i)].insert(a.constant + a.coefficient * i);
        std::set<int> conflicting;
        for (int i = 0; i < iterations; ++i)
            for (int j = 0; j < iterations; ++j) {
                if (i == j) continue;
                for (int e : writes[static_cast<size_t>(i)])
                    if (reads[static_cast<size_t>(j)].count(e) || writes[static_cast<size_t>(j)].count(e)) conflicting.insert(e);
            }
        Verdict v = run_checked(source);
        INFO(source);
        INFO(v.message);
        CHECK(v.race == !conflicting.empty());
        if (v.race) {
            ++races;
            // The element it names is one that two iterations conflict on.
            auto at = v.message.find("data race on a[");
            REQUIRE(at != std::string::npos);
            int element = std::stoi(v.message.substr(at + 15));
            CHECK(conflicting.count(element) == 1);
        } else {
            ++clean;
        }
    }
    // Both verdicts were exercised.
    CHECK(races > 100);
    CHECK(clean > 100);
}

TEST_CASE("a race-free parallel loop leaves DRAM as the same loop run plainly", "[parallel]") {
    const std::string body = R"(param n = 37
param Br = 5
param d = 3
let Tr = cdiv(n, Br)
registers 2*Br*d + 2
tile q[Br][d]
tile o[Br][d]
input  Q[n][d]
output O[n][d]
FOR i in 0..Tr {
    LOAD Q[i*Br..i*Br+Br][0..d], q
    EXP q, o
    MUL o, q, o
    STORE o, O[i*Br..i*Br+Br][0..d]
}
)";
    auto run = [](const std::string& source) {
        Program p = build(source);
        Machine<NumericDomain> m(p, NumericDomain{});
        fill_inputs(p, m.state());
        m.run_until(kNoPause, 1'000'000);
        return m.state().dram;
    };
    std::string plain = body, parallel = body;
    plain.replace(plain.find("FOR"), 3, "for");
    parallel.replace(parallel.find("FOR"), 3, "parallel for");
    CHECK(run(plain) == run(parallel));
}

TEST_CASE("FA2 on 8 workers: cycles is the makespan of 16 equal Q tiles, work is the one-worker cycles", "[parallel]") {
    // fa2.toy as shipped, with `workers P` added (P = 1 is the program as it is).
    std::string source = toysim::testing::read_text(std::string(TOYSIM_SOURCE_DIR) + "/programs/attention/fa2.toy");
    source.replace(source.find("registers "), 0, "param P = 1\nworkers P\n");
    auto counters = [&](std::int64_t workers) {
        Program p = build(source, {{"n", 1024}, {"d", 64}, {"Br", 64}, {"Bc", 64}, {"P", workers}});
        Machine<NumericDomain> m(p, NumericDomain{});
        fill_inputs(p, m.state());
        m.run_until(kNoPause, kNoPause);
        return m.counters();
    };
    Counters one = counters(1), eight = counters(8), five = counters(5), many = counters(64);
    const std::uint64_t tile = one.cycles / 16;  // FA2 has no serial part: every instruction is in the Q-tile loop
    CHECK(one.cycles == 141'923'328);
    CHECK(one.work == one.cycles);
    CHECK(tile * 16 == one.cycles);
    CHECK(eight.cycles == 2 * tile);  // ⌈16/8⌉ tiles each
    CHECK(eight.work == one.cycles);
    CHECK(eight.utilization() == 1.0);
    CHECK(eight.busy == std::vector<std::uint64_t>(8, 2 * tile));
    CHECK(five.cycles == 4 * tile);  // ⌈16/5⌉: worker 0 takes tiles 0, 5, 10, 15
    CHECK(five.busy == std::vector<std::uint64_t>{4 * tile, 3 * tile, 3 * tile, 3 * tile, 3 * tile});
    CHECK(many.cycles == tile);  // 16 tiles on 64 workers: one round, 48 workers idle
    CHECK(many.utilization() == Approx(16.0 / 64.0));
}

TEST_CASE("the serial parts run on worker 0 while the others wait, and a parallel loop ends with its last iteration", "[parallel]") {
    // 3 serial instructions, 5 iterations of 3 on 2 workers (3 rounds: 9 cycles), then 2 serial.
    const std::string source = R"(registers 2
workers 2
input  x[5]
output y[5]
output z[1]
SET 0, R0, R1
SET 1, R0, R1
SET 2, R0, R1
parallel for i in 0..5 {
    LOAD x[i], R0
    ADD R0, R0, R0
    STORE R0, y[i]
}
SET 3, R0, R0
STORE R0, z[0]
)";
    Program p = build(source);
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    m.run_until(kNoPause, kNoPause);
    Counters c = m.counters();
    CHECK(c.work == 3 + 5 * 3 + 2);
    CHECK(c.cycles == 3 + 3 * 3 + 2);
    CHECK(c.busy == std::vector<std::uint64_t>{3 + 3 * 3 + 2, 2 * 3});
    // Paused inside the loop, after the first two iterations and one instruction of the third:
    // worker 0 has run 3 + 3 + 1, worker 1 three.
    Machine<NumericDomain> paused(p, NumericDomain{});
    fill_inputs(p, paused.state());
    paused.run_until(3 + 2 * 3 + 1, kNoPause);
    CHECK(paused.counters().cycles == 3 + 3 + 1);
}
