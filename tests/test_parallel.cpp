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
