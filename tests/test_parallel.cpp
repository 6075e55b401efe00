// Parallel loops: the race checker against a brute-force comparison of every pair of
// iterations' read and write sets, on random small programs; what a race-free parallel loop
// leaves (the same DRAM as the loop run plainly); stepping back over iteration boundaries.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <array>
#include <random>
#include <set>

#include "sim/check/fill.h"
#include "support.h"

using namespace toysim;
using toysim::testing::build;
using toysim::testing::contains;
using toysim::testing::CliResult;

namespace {

// One access of a random parallel body: LOAD a[c + k·i], STORE to it or STORE_ADD to it.
enum class Kind { Read, Write, Add };
struct Access {
    Kind kind;
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

// A whole numeric run's counters.
Counters run_counters(const Program& p) {
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    m.run_until(kNoPause, kNoPause);
    return m.counters();
}

}  // namespace

TEST_CASE("the race checker's verdict equals a pairwise comparison of the iterations' read and write sets, in either order", "[parallel]") {
    std::mt19937 rng(20261124);
    int races = 0, clean = 0;
    for (int trial = 0; trial < 900; ++trial) {
        const int iterations = 2 + static_cast<int>(rng() % 4), size = iterations + 3;
        const int count = 1 + static_cast<int>(rng() % 4);
        std::vector<Access> body;
        for (int k = 0; k < count; ++k)
            body.push_back({static_cast<Kind>(rng() % 3), static_cast<int>(rng() % 4), static_cast<int>(rng() % 2)});
        std::string source = fmt::format("registers 1\nscratch a[{}] = 0\nparallel for i in 0..{} {{\n    SET 1, R0, R0\n", size, iterations);
        const char* forms[] = {"    LOAD {}, R0\n", "    STORE R0, {}\n", "    STORE_ADD R0, {}\n"};
        for (const Access& a : body)
            source += fmt::format(fmt::runtime(forms[static_cast<int>(a.kind)]), fmt::format("a[{} + {}*i]", a.constant, a.coefficient));
        source += "}\n";
        // Brute force: iterations i != j conflict on an element one writes and the other touches,
        // or one adds to and the other reads.
        std::vector<std::array<std::set<int>, 3>> touched(static_cast<size_t>(iterations));
        for (int i = 0; i < iterations; ++i)
            for (const Access& a : body) touched[static_cast<size_t>(i)][static_cast<size_t>(a.kind)].insert(a.constant + a.coefficient * i);
        std::set<int> conflicting;
        for (int i = 0; i < iterations; ++i)
            for (int j = 0; j < iterations; ++j) {
                if (i == j) continue;
                const auto &mine = touched[static_cast<size_t>(i)], &theirs = touched[static_cast<size_t>(j)];
                for (int e : mine[static_cast<size_t>(Kind::Write)])
                    for (const auto& set : theirs)
                        if (set.count(e)) conflicting.insert(e);
                for (int e : mine[static_cast<size_t>(Kind::Add)])
                    if (theirs[static_cast<size_t>(Kind::Read)].count(e)) conflicting.insert(e);
            }
        // One worker runs the iterations one after another; three interleave them an instruction
        // at a time. The verdict must not depend on the order.
        for (int workers : {1, 3}) {
            std::string program = workers == 1 ? source : "workers 3\n" + source;
            Verdict v = run_checked(program);
            INFO(program);
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
    // fa2.toy as shipped: `workers P`, P = 1 by default.
    auto counters = [&](std::int64_t workers) {
        Program p = toysim::testing::build_file("programs/attention/fa2.toy", {{"n", 1024}, {"d", 64}, {"Br", 64}, {"Bc", 64}, {"P", workers}});
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
    Counters c = run_counters(p);
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

TEST_CASE("STORE_ADD: parallel iterations add into one element, each add a read and a write", "[parallel]") {
    // A split-K dot product: each of 4 iterations sums its chunk of x·y in a tile and adds it
    // into s (from 0) and into both (from 1).
    const std::string source = R"(param n = 12
param S = 4
let C = n / S
registers 2*C + 2
workers 2
tile a[1][C]
tile b[C][1]
tile part[1][1]
input  x[1][n] = random(1)
input  y[n][1] = random(2)
output s[1][1] = 0
output both[1][1] = 1
parallel for i in 0..S {
    LOAD x[0..1][i*C..i*C+C], a
    LOAD y[i*C..i*C+C][0..1], b
    MAC_Z a, b, part
    STORE_ADD part, s[0..1][0..1]
    STORE_ADD part, both[0..1][0..1]
}
)";
    Program p = build(source);
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    std::vector<double> x(m.state().dram.begin(), m.state().dram.begin() + 12), y(m.state().dram.begin() + 12, m.state().dram.begin() + 24);
    m.run_until(kNoPause, kNoPause);
    double dot = 0;
    for (int k = 0; k < 12; ++k) dot += x[static_cast<size_t>(k)] * y[static_cast<size_t>(k)];
    const int s = p.find_array("s"), both = p.find_array("both");
    CHECK(m.state().dram[static_cast<size_t>(p.arrays[static_cast<size_t>(s)].base)] == Approx(dot).epsilon(1e-12));
    CHECK(m.state().dram[static_cast<size_t>(p.arrays[static_cast<size_t>(both)].base)] == Approx(1 + dot).epsilon(1e-12));
    Counters c = m.counters();
    CHECK(c.arrays[static_cast<size_t>(s)].reads == 4);
    CHECK(c.arrays[static_cast<size_t>(s)].writes == 4);
    CHECK(c.by_opcode[static_cast<size_t>(Op::STORE_ADD)] == 8);
    CHECK(c.dram_reads == 24 + 8);
    CHECK(c.dram_writes == 8);
    // Each iteration: 3 + 3 loaded, 3 multiply-adds, 2 elements added: 11 cycles; 2 rounds of 2.
    CHECK(c.work == 4 * 11);
    CHECK(c.cycles == 2 * 11);
}

TEST_CASE("STORE_ADD in the stepper: the new value and its undo", "[parallel]") {
    CliResult r = toysim::testing::run_cli_input({"step", "tests/view/store_add.toy", "--values", "numeric"},
                                                 "next 2\nnext 2\nprint s[0]\nback\nprint s[0]\n");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(contains(r.out, "DRAM: added to s[0] → 13"));
    CHECK(contains(r.out, "DRAM: added to s[0] → 17"));
    CHECK(contains(r.out, "s[0] = 17 (read 2 times)"));
    CHECK(contains(r.out, "s[0] = 13 (read 1 time)"));  // back over the second add
}

TEST_CASE("a parallel loop may read what an earlier parallel loop wrote, and a loop entered again starts afresh", "[parallel]") {
    // Pass 1 writes y[i] in iteration i; pass 2 reads y[1 - j], written by another iteration of
    // pass 1, not of pass 2. The loop inside `for r` is entered twice: its second entry reads
    // what its first wrote.
    const std::string source = R"(registers 1
input  x[2]
output y[2]
output z[2]
parallel for i in 0..2 {
    LOAD x[i], R0
    STORE R0, y[i]
}
parallel for j in 0..2 {
    LOAD y[1 - j], R0
    STORE R0, z[j]
}
for r in 0..2 {
    parallel for k in 0..2 {
        LOAD z[1 - k], R0
        STORE R0, y[k]
    }
}
)";
    Program p = build(source);
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    const std::vector<double> x(m.state().dram.begin(), m.state().dram.begin() + 2);
    CHECK_NOTHROW(m.run_until(kNoPause, kNoPause));
    CHECK(m.state().dram[2] == x[0]);  // z is x reversed, y is z reversed
    CHECK(m.state().dram[3] == x[1]);
    CHECK(m.state().dram[4] == x[1]);
}

TEST_CASE("GQA on workers: equal iterations when Br divides n, so the makespan is whole rounds of one", "[parallel]") {
    // 2 K/V heads × 4 Q tiles = 8 equal iterations.
    auto counters = [](std::int64_t workers) {
        Program p = toysim::testing::build_file("programs/attention/fa2_gqa.toy",
                                                {{"n", 256}, {"d", 64}, {"Br", 64}, {"Bc", 64}, {"G", 4}, {"Hkv", 2}, {"P", workers}});
        Machine<NumericDomain> m(p, NumericDomain{});
        fill_inputs(p, m.state());
        m.run_until(kNoPause, kNoPause);
        return m.counters();
    };
    Counters one = counters(1), four = counters(4), three = counters(3);
    const std::uint64_t iteration = one.work / 8;
    CHECK(iteration == 8'822'016);
    CHECK(iteration * 8 == one.work);
    CHECK(four.cycles == 2 * iteration);
    CHECK(three.cycles == 3 * iteration);  // ⌈8/3⌉ rounds
    CHECK(three.work == one.work);
    CHECK(three.busy == std::vector<std::uint64_t>{3 * iteration, 3 * iteration, 2 * iteration});
}

TEST_CASE("R[expr] inside a parallel loop: read after the iteration writes it, or a value the loop never writes", "[parallel]") {
    auto refusal = [](const std::string& text) -> std::string {
        try {
            build(text);
        } catch (const ToyError& e) {
            return fmt::format("{}:{}: {}", e.loc().line, e.loc().col, e.what());
        }
        return "compiled";
    };
    const std::string head = "registers 6\nworkers 2\ninput x[4][4]\noutput y[4][4]\nSET 7, R5, R5\n";
    // Written by R[i + 1] and read back by the same R[i + 1] in the same run of code; R[5 − j]
    // of a register the loop never writes (R5, set before it): both proven.
    const std::string same_run = head + "parallel for i in 0..3 {\n    LOAD x[i][0], R[i + 1]\n    STORE R[i + 1], y[i][0]\n}\n"
                                        "parallel for i in 0..4 {\n    for j in 0..1 {\n        STORE R[5 - j], y[i][1]\n    }\n}\n";
    CHECK(refusal(same_run) == "compiled");
    Counters c = run_counters(build(same_run));
    CHECK(c.workers == 2);
    // A loop over j writes R0 to R3 one by one; after it closes, any of them may be read.
    const std::string counted = head + "parallel for i in 0..4 {\n    for j in 0..4 {\n        LOAD x[i][j], R[j]\n    }\n"
                                       "    for j in 0..4 {\n        ADD R[j], R[3 - j], R4\n        STORE R4, y[i][j]\n    }\n}\n";
    CHECK(refusal(counted) == "compiled");
    // Only R0 to R2 are written before the reads, R3 after them: R[j] may name R3, which
    // the iteration has not written yet.
    std::string short_loop = std::string(counted).replace(counted.find("for j in 0..4 {\n        LOAD"), 15, "for j in 0..3 {");
    short_loop.insert(short_loop.rfind("}"), "    LOAD x[i][3], R3\n");
    CHECK(refusal(short_loop).rfind("11:13: R[expr] may name R3 here, which this iteration of the parallel loop over i (line 6) has not surely "
                                    "written yet",
                                    0) == 0);
    // A register the loop never writes is the value the loop found: without the LOAD into R3,
    // the read is allowed, and the run says R3 never held a value.
    const std::string never = std::string(counted).replace(counted.find("for j in 0..4 {\n        LOAD"), 15, "for j in 0..3 {");
    CHECK(refusal(never) == "compiled");
    // A loop whose bounds follow the parallel index is not counted: which registers it writes
    // differs from one iteration to the next.
    const std::string moving = std::string(counted).replace(counted.find("for j in 0..4 {\n        LOAD"), 15, "for j in 0..i+1 {");
    CHECK(refusal(moving).rfind("11:13: R[expr] may name R0 here", 0) == 0);
    // After the loop, a register its iterations wrote by R[expr] holds whichever worker's
    // value: refused until written again.
    const std::string after = same_run + "for k in 1..3 {\n    STORE R[k], y[k][3]\n}\n";
    CHECK(refusal(after) == "16:11: R[expr] may name R1, which the iterations of the parallel loop over i (line 6) wrote: after that loop it "
                            "holds whichever worker's value, so write it again before reading it");
    const std::string rewritten = same_run + "for k in 1..3 {\n    LOAD x[k][2], R[k]\n}\nfor k in 1..3 {\n    STORE R[k], y[k][3]\n}\n";
    CHECK(refusal(rewritten) == "compiled");
}

TEST_CASE("a triangular grid: the inner loop's bounds may use the outer index", "[parallel]") {
    // Rows i = 0..3 of the lower triangle: 1 + 2 + 3 + 4 = 10 iterations of 2 cycles on 3 workers.
    const std::string source = R"(registers 1
workers 3
input  x[4][4]
output y[4][4]
parallel for i in 0..4 {
    parallel for j in 0..i+1 {
        LOAD x[i][j], R0
        STORE R0, y[i][j]
    }
}
)";
    Counters c = run_counters(build(source));
    CHECK(c.work == 20);
    CHECK(c.cycles == 4 * 2);  // ⌈10/3⌉ rounds
    CHECK(c.busy == std::vector<std::uint64_t>{8, 6, 6});
}

TEST_CASE("the worker of each step: step's header, break worker W, and the trace's JSON", "[parallel]") {
    // Flash-Decoding, 8 splits on 4 workers: worker 2 takes splits 2 and 6.
    CliResult r = toysim::testing::run_cli_input({"step", "programs/attention/flash_decoding.toy", "--set", "S=8", "--set", "P=4"},
                                                 "break worker 2\ncontinue\ncontinue\ncontinue\nbreak worker 4\nbreak worker\n");
    INFO(r.out);
    // Splits take 196 cycles: split 2 starts at cycle 0 on worker 2, split 6 at 196. The workers
    // run one instruction at a time, the earliest clock first (the lowest-numbered among
    // equals): worker 2's first instruction is the run's third.
    CHECK(contains(r.out, "breakpoint 1: break worker 2\nstep 3, cycle 4 on worker 2, work 12  programs/attention/flash_decoding.toy:71\n"));
    CHECK(contains(r.out, "breakpoint 1: break worker 2\nstep 151, cycle 200 on worker 2, work 796  programs/attention/flash_decoding.toy:71\n"));
    CHECK(contains(r.err, "error: there is no worker 4: the machine has 4 workers (workers 0..3); `workers P` gives it more\n"));
    CHECK(contains(r.err, "error: break worker W takes a worker number from 0, e.g. break worker 2\n"));
    // The third continue runs to the end: no iteration is left for worker 2.
    CHECK(contains(r.out, "the program has ended: 307 steps, 520 cycles on 4 workers, work 1696\n"));

    CliResult trace = toysim::testing::run_cli({"trace", "programs/attention/flash_decoding.toy", "--set", "S=8", "--set", "P=4", "--format", "json"});
    REQUIRE(trace.code == 0);
    auto j = nlohmann::json::parse(trace.out);
    std::vector<int> steps_of(4, 0);
    for (const auto& e : j.at("steps")) steps_of.at(e.at("worker").get<size_t>())++;
    // 8 splits of 37 steps, two per worker; worker 0 also runs the merge's 11.
    CHECK(steps_of == std::vector<int>{2 * 37 + 11, 2 * 37, 2 * 37, 2 * 37});
    // One worker: no "worker" field, as before workers existed.
    CliResult one = toysim::testing::run_cli({"trace", "programs/attention/flash_decoding.toy", "--format", "json"});
    CHECK(!contains(one.out, "\"worker\""));
}

TEST_CASE("race checking follows only the arrays a parallel loop writes or adds to", "[parallel]") {
    // FA2 writes O and L in its parallel loop; Q, K and V are only read there and cannot race.
    Program fa2 = toysim::testing::build_file("programs/attention/fa2.toy", {{"n", 64}, {"d", 8}});
    CHECK(fa2.race_cells == 64 * 8 + 64);
    CHECK(fa2.arrays[static_cast<size_t>(fa2.find_array("Q"))].race_base == -1);
    CHECK(fa2.arrays[static_cast<size_t>(fa2.find_array("O"))].race_base == 0);
    // FA2 backward: pass 1 writes D, pass 2 writes dK and dV and adds to dQ.
    Program backward = toysim::testing::build_file("programs/attention/fa2_backward.toy", {{"n", 16}, {"d", 4}});
    CHECK(backward.race_cells == 16 + 3 * 16 * 4);
    // Without the D trick: both passes add to D (STORE_ADD), the second writes dK and dV and adds to dQ.
    CHECK(toysim::testing::build_file("programs/attention/fa2_backward_no_d_trick.toy", {{"n", 16}, {"d", 4}}).race_cells == 16 + 3 * 16 * 4);
    // A program with no parallel loop has no race table.
    CHECK(toysim::testing::build_file("programs/attention/welford_variance.toy").race_cells == 0);
}

TEST_CASE("print W:R3 shows a register or tile as worker W holds it", "[parallel]") {
    // Flash-Decoding, 8 splits on 4 workers; step 100 is worker 3's, in split 3.
    CliResult r = toysim::testing::run_cli_input({"step", "programs/attention/flash_decoding.toy", "--set", "S=8", "--set", "P=4"},
                                                 "goto 100\np 3:q[0][1]\np 2:m\np 1:m\np 9:m\np 1:Q[0][0]\np m\ngoto 300\np 1:m\n"
                                                 "p 0:m\nback 200\n");
    INFO(r.out);
    INFO(r.err);
    CHECK(contains(r.out, "(toysim) p 3:q[0][1]\nworker 3 (it ran this step):\nq[0][1] = -0.5298\n"));
    CHECK(contains(r.out, "(toysim) p 2:m\nworker 2, as its last step left it:\nm: 1×1 (of 1×1) = [0.268]\n"));
    CHECK(contains(r.out, "(toysim) p 1:m\nworker 1, as its last step left it:\nm: 1×1 (of 1×1) = [0.0781]\n"));
    CHECK(contains(r.err, "error: there is no worker 9: the machine has 4 workers (workers 0..3)\n"));
    CHECK(contains(r.err, "error: 'Q[0][0]': print W:WHAT shows a register or a tile of worker W (R3, o, o[1][2]); DRAM is shared by "
                          "every worker: print it without W:\n"));
    // Without W: the registers of the worker that ran the step shown (the machine already
    // stands at the next worker's instruction).
    CHECK(contains(r.out, "(toysim) p m\nm: 1×1 (of 1×1) = [0.4146]\n"));
    // After the loop: each worker's registers as the loop left them; worker 0 goes on alone.
    CHECK(contains(r.out, "(toysim) p 1:m\nworker 1, as the last parallel loop left it:\nm: 1×1 (of 1×1) = [1.0066]\n"));
    CHECK(contains(r.out, "(toysim) p 0:m\nno parallel loop is running: worker 0 runs alone, and its registers are the machine's\n"));
    // Looking at another worker leaves the session where it was: back 200 from step 300.
    CHECK(contains(r.out, "(toysim) back 200\nstep 100, cycle 157 on worker 3, work 628"));

    // Two workers copying three elements: 1 LOAD (w0), 2 LOAD (w1), 3 STORE (w0), 4 STORE (w1),
    // 5 and 6 worker 0's second iteration. Each holds its own R0.
    CliResult edge = toysim::testing::run_cli_input({"step", "tests/view/workers_copy.toy"},
                                                    "goto 4\np 1:R0\np 0:R0\np R0\ngoto 6\np 1:R0\n");
    CHECK(contains(edge.out, "(toysim) p 1:R0\nworker 1 (it ran this step):\nR0 = x1\n"));
    CHECK(contains(edge.out, "(toysim) p 0:R0\nworker 0, as its last step left it:\nR0 = x0\n"));
    CHECK(contains(edge.out, "(toysim) p R0\nR0 = x1\n"));
    CHECK(contains(edge.out, "(toysim) p 1:R0\nworker 1, as its last step left it:\nR0 = x1\n"));
}

TEST_CASE("trace on several workers: a Worker column, and cycles on P workers with the work", "[parallel]") {
    CliResult r = toysim::testing::run_cli({"trace", "tests/view/workers_copy.toy"});
    CHECK(r.code == 0);
    CHECK(r.out ==
          "Step  Worker  Instruction     R0\n"
          "----  ------  --------------  --\n"
          "   1       0  LOAD x[0], R0   x0\n"
          "   2       1  LOAD x[1], R0   x1\n"
          "   3       0  STORE R0, y[0]  x0\n"
          "   4       1  STORE R0, y[1]  x1\n"
          "   5       0  LOAD x[2], R0   x2\n"
          "   6       0  STORE R0, y[2]  x2\n"
          "\n"
          "4 cycles on 2 workers (work 6), 6 instructions (3 LOAD, 3 STORE); DRAM: 3 reads, 3 writes; 1 register used\n");
}

TEST_CASE("causal attention on workers: Q tiles handed out heaviest first keep every worker busy", "[parallel]") {
    // n = 1024, d = 64, B = 64: 16 Q tiles, tile i costing about i + 1 K/V tiles.
    auto counters = [](const char* program, std::int64_t workers) {
        return run_counters(toysim::testing::build_file(std::string("programs/attention/") + program,
                                                        {{"n", 1024}, {"d", 64}, {"B", 64}, {"P", workers}}));
    };
    for (std::int64_t workers : {4, 8}) {
        INFO("workers " << workers);
        Counters in_order = counters("fa2_causal.toy", workers), heaviest_first = counters("fa2_causal_heaviest_first.toy", workers);
        CHECK(heaviest_first.work == 75'586'560);
        CHECK(in_order.work == heaviest_first.work);
        CHECK(heaviest_first.cycles * static_cast<std::uint64_t>(workers) == heaviest_first.work);  // utilization 1
        CHECK(in_order.cycles == (workers == 4 ? 22'216'704u : 13'321'728u));
    }
}

TEST_CASE("toysim step on two workers: each step's row shows the registers of the worker that ran it", "[parallel][step]") {
    // Steps 1 and 2 load X[0] and X[1] on workers 0 and 1; step 3 is worker 0's MOV, whose R0
    // is X0 (worker 1's next instruction is what the machine stands at, holding X1).
    const std::string program = "workers 2\nregisters 2\ninput X[2]\noutput Y[2]\nparallel for i in 0..2 {\n    LOAD X[i], R0\n"
                                "    MOV R0, R1\n    STORE R1, Y[i]\n}\n";
    const auto path = std::filesystem::temp_directory_path() / "toysim_step_two_workers.toy";
    { std::ofstream(path) << program; }
    CliResult r = toysim::testing::run_cli_input({"step", path.string()}, "n\nn\nn\nq\n");
    std::filesystem::remove(path);
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, "     2  LOAD X[1], R0  X1\n"));
    CHECK(contains(r.out, "     3  MOV R0, R1   X0  X0\n"));
}
