// Race freedom proven from the subscripts (sim/analysis/races.h), which `toysim cost` reports
// without running: sound against a brute-force comparison of every pair of iterations on random
// programs, true of every shipped parallel program, and silent about nothing: FA1 with its
// outer loop parallel is named as not proven, at the STORE and LOAD of O.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <array>
#include <random>
#include <set>

#include "sim/analysis/races.h"
#include "sim/print/cost_report.h"
#include "support.h"

using namespace toysim;
using toysim::testing::build;
using toysim::testing::build_file;
using toysim::testing::shipped_programs;

namespace {

// One access of a random parallel body: `width` elements of a from c + k·i on (an inner loop
// over r when wider than one), or a[i][c] of a two-dimensional array.
struct Access {
    int kind;  // 0 LOAD, 1 STORE, 2 STORE_ADD
    int constant, coefficient, width;
};

}  // namespace

TEST_CASE("a loop proven race-free from its subscripts never races: random loops against a brute force", "[parallel][cost]") {
    std::mt19937 rng(20261125);
    int proven = 0, unproven_but_clean = 0, races = 0;
    for (int trial = 0; trial < 1500; ++trial) {
        const int iterations = 2 + static_cast<int>(rng() % 4);
        const int count = 1 + static_cast<int>(rng() % 3);
        std::vector<Access> body;
        for (int k = 0; k < count; ++k)
            body.push_back({static_cast<int>(rng() % 3), static_cast<int>(rng() % 4), static_cast<int>(rng() % 4),
                            1 + static_cast<int>(rng() % 3)});
        const int size = 3 + 3 * iterations + 3;
        std::string source = fmt::format("registers 1\nscratch a[{}] = 0\nparallel for i in 0..{} {{\n    SET 1, R0, R0\n", size, iterations);
        const char* forms[] = {"LOAD {}, R0", "STORE R0, {}", "STORE_ADD R0, {}"};
        for (const Access& a : body) {
            std::string element = fmt::format("a[{} + {}*i{}]", a.constant, a.coefficient, a.width > 1 ? " + r" : "");
            std::string inst = fmt::format(fmt::runtime(forms[a.kind]), element);
            source += a.width > 1 ? fmt::format("    for r in 0..{} {{\n        {}\n    }}\n", a.width, inst) : fmt::format("    {}\n", inst);
        }
        source += "}\n";
        // Brute force: iterations i != j conflict where one writes what the other touches, or
        // one adds to what the other reads.
        std::vector<std::array<std::set<int>, 3>> touched(static_cast<size_t>(iterations));
        for (int i = 0; i < iterations; ++i)
            for (const Access& a : body)
                for (int r = 0; r < a.width; ++r) touched[static_cast<size_t>(i)][static_cast<size_t>(a.kind)].insert(a.constant + a.coefficient * i + r);
        bool conflict = false;
        for (int i = 0; i < iterations; ++i)
            for (int j = 0; j < iterations; ++j) {
                if (i == j) continue;
                const auto &mine = touched[static_cast<size_t>(i)], &theirs = touched[static_cast<size_t>(j)];
                for (int e : mine[1])
                    for (const auto& set : theirs) conflict = conflict || set.count(e);
                for (int e : mine[2]) conflict = conflict || theirs[0].count(e);
            }
        Program p = build(source);
        auto proofs = prove_race_freedom(p);
        REQUIRE(proofs.size() == 1);
        INFO(source);
        INFO(describe_race_proof(p, proofs[0]));
        if (proofs[0].proven) {
            CHECK_FALSE(conflict);
            ++proven;
        } else if (conflict) {
            ++races;
        } else {
            ++unproven_but_clean;
        }
    }
    // Every verdict was exercised: proofs, races it declined to prove, and loops it could not
    // prove that a run would pass (the test is sound, not complete).
    CHECK(proven > 200);
    CHECK(races > 200);
    CHECK(unproven_but_clean > 20);
}

TEST_CASE("every shipped parallel program is proven race-free from its subscripts", "[parallel][cost]") {
    int loops = 0;
    for (const std::string& path : shipped_programs()) {
        Program p = build_file(path);
        for (const RaceProof& proof : prove_race_freedom(p)) {
            INFO(path << ": " << describe_race_proof(p, proof));
            CHECK(proof.proven);
            ++loops;
        }
    }
    CHECK(loops >= 9);
}

TEST_CASE("cost on FA2 backward: which arrays each parallel loop writes and which it adds to", "[parallel][cost]") {
    Program p = build_file("programs/attention/fa2_backward.toy");
    auto proofs = prove_race_freedom(p);
    REQUIRE(proofs.size() == 2);
    CHECK(describe_race_proof(p, proofs[0]) == "proven race-free from the subscripts: each iteration writes elements of D of its own");
    CHECK(describe_race_proof(p, proofs[1]) ==
          "proven race-free from the subscripts: each iteration writes elements of dK and dV of its own, and iterations share dQ only "
          "by adding with STORE_ADD");
    auto j = nlohmann::json::parse(format_cost(p, derive_formulas(p), count_traffic(p), Format::Json, proofs));
    REQUIRE(j["parallel"].size() == 2);
    CHECK(j["parallel"][1]["vars"] == nlohmann::json::array({"j"}));
    CHECK(j["parallel"][1]["proven"] == true);
}

TEST_CASE("cost on FA1 with its outer loop parallel: not proven, naming the STORE and LOAD of O", "[parallel][cost]") {
    Program p = build_file("tests/bad/parallel_race_fa1_outer_loop.toy");
    auto proofs = prove_race_freedom(p);
    REQUIRE(proofs.size() == 1);
    CHECK_FALSE(proofs[0].proven);
    std::string table = format_cost(p, derive_formulas(p), count_traffic(p), Format::Table, proofs);
    CHECK(table.find("parallel loop over j (line 14): not proven race-free: the STORE at 20:9 and the LOAD at 17:9 may meet in an "
                     "element of O from two values of j (no subscript of O moves with j alone by more than the rest of it spans); "
                     "`toysim run` checks every access\n") != std::string::npos);
}

TEST_CASE("a grid is proven one variable at a time: each needs a dimension of its own", "[parallel][cost]") {
    // y[h][i] on a grid over h and i: each variable moves its own dimension.
    Program ok = build("registers 1\ninput x[2][3]\noutput y[2][3]\nparallel for h in 0..2 {\n parallel for i in 0..3 {\n"
                       "  LOAD x[h][i], R0\n  STORE R0, y[h][i]\n }\n}\n");
    auto proofs = prove_race_freedom(ok);
    REQUIRE(proofs.size() == 1);
    CHECK(proofs[0].vars == std::vector<std::string>{"h", "i"});
    CHECK(proofs[0].proven);
    // y[h + i]: the two variables share one dimension, so neither keeps iterations apart (and
    // h = 0, i = 1 meets h = 1, i = 0).
    Program shared = build("registers 1\ninput x[4]\noutput y[4]\nparallel for h in 0..2 {\n parallel for i in 0..3 {\n"
                           "  LOAD x[h + i], R0\n  STORE R0, y[h + i]\n }\n}\n");
    proofs = prove_race_freedom(shared);
    REQUIRE(proofs.size() == 1);
    CHECK_FALSE(proofs[0].proven);
    CHECK(proofs[0].unseparated_var == "h");
}
