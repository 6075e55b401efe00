// The machine as a value that steps: pausing, stepping, undoing, and the event each step
// reports. The stepper, the viewer and the grader to come stand on these.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <random>

#include "sim/check/fill.h"
#include "sim/check/run.h"
#include "support.h"

using namespace toysim;
using toysim::testing::build;
using toysim::testing::build_file;

namespace {

template <class Value = double>
struct Keep final : EventSink<Value> {
    std::vector<Event<Value>> events;
    void on_event(const Event<Value>& e) override { events.push_back(e); }
};

Machine<NumericDomain> fresh(const Program& p) {
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    return m;
}

// The state of a machine run from the start and paused after `steps` instructions.
MachineState<double> state_at(const Program& p, std::uint64_t steps) {
    auto m = fresh(p);
    m.run_until(steps, kNoPause);
    return m.state();
}

void walk_forward_and_back(const Program& p, int samples) {
    auto m = fresh(p);
    const MachineState<double> start = m.state();
    Keep<> keep;
    while (m.step(&keep)) {}
    REQUIRE(m.halted());
    const std::uint64_t total = keep.events.size();
    REQUIRE(m.state().steps == total);
    // The end: the same as a plain run, counters included.
    auto plain = fresh(p);
    plain.run_until(kNoPause, kNoPause);
    CHECK(m.state() == plain.state());
    CHECK(m.counters().cycles == plain.counters().cycles);
    CHECK(m.cycle() == keep.events.back().cycle);

    std::mt19937_64 rng(7);
    std::vector<std::uint64_t> probes;
    for (int i = 0; i < samples; ++i) probes.push_back(rng() % (total + 1));
    std::sort(probes.begin(), probes.end(), std::greater<>());
    // Back to the start, one undo at a time; at each probe, the state equals a fresh run
    // paused there.
    size_t next = 0;
    for (std::uint64_t k = total; k-- > 0;) {
        m.undo(keep.events[k]);
        while (next < probes.size() && probes[next] == k) {
            INFO("after undoing back to step " << k);
            CHECK(m.state() == state_at(p, k));
            ++next;
        }
    }
    // Step 0: where a fresh machine stands once it has entered the loops around its first
    // instruction (a machine never run has not yet done that loop control).
    CHECK(m.state() == state_at(p, 0));
    CHECK(m.state().dram == start.dram);
    CHECK(m.state().reads == start.reads);
    CHECK(m.cycle() == 0);
    // And forward again from there: the same events.
    Keep<> again;
    while (m.step(&again)) {}
    REQUIRE(again.events.size() == total);
    for (std::uint64_t k = 0; k < total; k += 97) {
        CHECK(again.events[k].pc == keep.events[k].pc);
        CHECK(again.events[k].cycle == keep.events[k].cycle);
        CHECK(again.events[k].reg_new == keep.events[k].reg_new);
    }
}

}  // namespace

TEST_CASE("P5 at n = 1000 steps forward to the end and back to the start, matching fresh runs on the way", "[machine]") {
    Program p = build_file("programs/p5_online_softmax.toy", {{"n", 1000}});
    walk_forward_and_back(p, 40);
}

TEST_CASE("a tile program steps forward and back: FlashAttention-2 with edge tiles", "[machine]") {
    Program p = build_file("programs/attention/fa2.toy", {{"n", 7}, {"d", 3}, {"Br", 2}, {"Bc", 3}});
    walk_forward_and_back(p, 25);
}

TEST_CASE("the FlashAttention-2 backward pass steps back through dQ accumulated in DRAM", "[machine]") {
    Program p = build_file("programs/attention/fa2_backward.toy", {{"n", 5}, {"d", 2}, {"Br", 2}, {"Bc", 2}});
    walk_forward_and_back(p, 25);
}

TEST_CASE("pausing anywhere and going on gives the plain run", "[machine]") {
    Program p = build_file("programs/p4_softmax_3pass.toy", {{"n", 50}});
    auto whole = fresh(p);
    whole.run_until(kNoPause, kNoPause);
    auto paused = fresh(p);
    for (std::uint64_t at : {1u, 2u, 3u, 50u, 51u, 149u}) {
        paused.run_until(at, kNoPause);
        CHECK(paused.state().steps == at);
        CHECK_FALSE(paused.halted());
    }
    paused.run_until(kNoPause, kNoPause);
    CHECK(paused.halted());
    CHECK(paused.state() == whole.state());
    CHECK_FALSE(paused.step());  // nothing left
}

TEST_CASE("each event says where, what it wrote old to new, the DRAM it moved and its cost", "[machine]") {
    Program p = build(toysim::testing::kP1Literal);
    auto m = fresh(p);
    Keep<> keep;
    while (m.step(&keep)) {}
    REQUIRE(keep.events.size() == 7);
    const auto& first = keep.events[0];  // LOAD a[0][0], R0
    CHECK(first.step == 1);
    CHECK(first.cycle == 1);
    CHECK(first.cost == 1);
    CHECK(first.op == Op::LOAD);
    CHECK(p.origin[static_cast<size_t>(first.pc)]->loc.line == 6);
    CHECK(first.reg == 0);
    CHECK_FALSE(first.reg_was_written);
    CHECK(first.reg_new == 1);
    REQUIRE(first.accesses.size() == 1);
    CHECK(first.accesses[0].kind == AccessKind::Read);
    CHECK(p.arrays[static_cast<size_t>(first.accesses[0].array)].name == "a");
    const auto& mac = keep.events[5];  // MAC R0, R1, R2, R2: 5 + 2·7
    CHECK(mac.op == Op::MAC);
    CHECK(mac.reg == 2);
    CHECK(mac.reg_was_written);
    CHECK(mac.reg_old == 5);
    CHECK(mac.reg_new == 19);
    CHECK(mac.accesses.empty());
    const auto& store = keep.events[6];  // STORE R2, c[0][0]
    REQUIRE(store.accesses.size() == 1);
    CHECK(store.accesses[0].kind == AccessKind::Write);
    CHECK(store.dram_new == std::vector<double>{19});
    CHECK(store.dram_was_present == std::vector<std::uint8_t>{0});
    CHECK(store.cycle == 7);
    auto deltas = counter_deltas(p, store);
    std::vector<std::string> names;
    for (const auto& [counter, delta] : deltas) names.push_back(fmt::format("{} +{}", p.counter_name(counter), delta));
    CHECK(names == std::vector<std::string>{"cycles +1", "instructions +1", "STORE +1", "writes +1", "writes(c) +1"});
}

TEST_CASE("a tile event carries the block written, old and new, and its shape change", "[machine]") {
    Program p = build_file("programs/attention/seed001_fa2_tiled.toy");
    auto m = fresh(p);
    Keep<> keep;
    while (m.step(&keep)) {}
    const Event<double>* load = nullptr;
    for (const auto& e : keep.events)
        if (e.op == Op::LOAD && e.tile >= 0) {
            load = &e;
            break;
        }
    REQUIRE(load);
    CHECK(load->old_rows == 0);  // never written before
    CHECK(static_cast<std::uint64_t>(load->rows * load->cols) == load->work);
    CHECK(static_cast<std::int64_t>(load->tile_new.size()) == load->rows * load->cols);
    CHECK(load->accesses.at(0).elements() == load->rows * load->cols);
}

TEST_CASE("the step limit is a fault, a pause is not", "[machine]") {
    Program p = build_file("programs/p5_online_softmax.toy", {{"n", 100}});
    auto m = fresh(p);
    m.run_until(30, 30);  // the pause comes first at the limit: no fault yet
    CHECK(m.state().steps == 30);
    try {
        m.run_until(kNoPause, 30);
        FAIL("expected the step limit");
    } catch (const ToyError& e) {
        CHECK(e.kind() == ErrorKind::StepLimit);
        CHECK(std::string(e.what()) == "step limit reached: 30 instructions ran and the program has not finished (at i = 3)");
    }
}

TEST_CASE("MAX propagates NaN whatever the operand order", "[machine]") {
    double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK(std::isnan(NumericDomain::max(nan, 1.0)));
    CHECK(std::isnan(NumericDomain::max(1.0, nan)));
    CHECK(NumericDomain::max(-INFINITY, 2.0) == 2.0);
    CHECK(NumericDomain::max(3.0, 2.0) == 3.0);
}

TEST_CASE("a reference fill that cannot fit is refused before it is computed", "[machine]") {
    // attention(Q, K, V) at n = 100,000 holds n² = 10^10 scores: refused up front, not
    // attempted (it used to allocate them after the DRAM size check passed).
    Program p = build_file("programs/attention/fa2_backward.toy", {{"n", 100'000}, {"d", 1}, {"Br", 64}, {"Bc", 64}});
    try {
        run(p);
        FAIL("expected the reference fill to be refused");
    } catch (const ToyError& e) {
        CHECK(e.kind() == ErrorKind::TooLargeToRun);
        CHECK_THAT(e.what(), Catch::Matchers::Contains("needs more than 134217728 doubles of memory"));
        CHECK(e.loc().line > 0);
    }
}

TEST_CASE("a symbolic run steps back to the start too: inputs read on the way are unnamed again", "[machine]") {
    Program p = build_file("programs/p5_online_softmax.toy", {{"n", 50}});
    ExprArena arena;
    Machine<SymbolicDomain> m(p, SymbolicDomain{&arena, &p});
    fill_symbolic_inputs(p, m.state(), arena);
    m.run_until(0, kNoPause);
    const MachineState<std::uint32_t> start = m.state();
    Keep<std::uint32_t> keep;
    while (m.step(&keep)) {}
    REQUIRE(keep.events.size() > 100);
    CHECK(keep.events.front().named_inputs.size() == 1);  // LOAD x[0] names x0
    for (auto it = keep.events.rbegin(); it != keep.events.rend(); ++it) m.undo(*it);
    CHECK(m.state() == start);
}

// A plain run takes the fast path (sim/exec/fast_path.h) wherever it can; a listened run never
// does. Both, and a plain run paused at odd places, must end in the same state.
TEST_CASE("the fast path and the listened executor end in the same state on every shipped program", "[machine]") {
    for (const auto& path : testing::shipped_programs()) {
        INFO(path);
        Program p = build_file(path);
        auto plain = fresh(p);
        plain.run_until(kNoPause, kNoPause);
        REQUIRE(plain.halted());
        auto listened = fresh(p);
        Keep<> keep;
        listened.run_until(kNoPause, kNoPause, keep);
        CHECK(listened.state() == plain.state());
        auto paused = fresh(p);
        std::mt19937_64 rng(11);
        const std::uint64_t total = plain.state().steps;
        for (std::uint64_t at = rng() % 7; at < total; at += 1 + rng() % (total / 5 + 1)) paused.run_until(at, kNoPause);
        paused.run_until(kNoPause, kNoPause);
        CHECK(paused.state() == plain.state());
        CHECK(paused.counters().cycles == listened.counters().cycles);
    }
}

TEST_CASE("the fast path takes addresses of many terms, empty loops, STORE_ADD and immediates", "[machine]") {
    Program p = build(R"(registers 3
param n = 3
input a[n][n][n][n]
output y[n][n][n][n]
output t[1] = 0
for i in 0..n {
    for j in 0..n {
        for z in 0..i - i {
            SET 1.0, R0, R0
        }
        for k in 0..n {
            for l in 0..n {
                LOAD a[i][j][k][l], R0
                SET 2.0, R0, R1
                MUL R0, R1, R2
                STORE R2, y[l][k][j][i]
                STORE_ADD R0, t[0]
            }
        }
    }
}
)");
    auto plain = fresh(p);
    plain.run_until(kNoPause, kNoPause);
    auto listened = fresh(p);
    Keep<> keep;
    listened.run_until(kNoPause, kNoPause, keep);
    CHECK(listened.state() == plain.state());
    CHECK(plain.state().steps == 5 * 81);
    const auto& s = plain.state();
    const ArrayInfo& a = p.arrays[0];
    const ArrayInfo& y = p.arrays[1];
    double sum = 0;
    for (std::int64_t i = 0; i < 81; ++i) sum += s.dram[static_cast<size_t>(a.base + i)];
    CHECK(s.dram[static_cast<size_t>(p.arrays[2].base)] == Approx(sum));
    // y[l][k][j][i] = 2·a[i][j][k][l]
    CHECK(s.dram[static_cast<size_t>(y.base + 1 * 27 + 2 * 9 + 0 * 3 + 2)] == 2 * s.dram[static_cast<size_t>(a.base + 2 * 27 + 0 * 9 + 2 * 3 + 1)]);
}

TEST_CASE("a fault in the fast path leaves the machine at the faulting instruction, counted", "[machine]") {
    // Iteration i = 1 reads y[0], which iteration 0 wrote: a race, found by the fast path's
    // race-checked LOAD on one worker.
    Program p = build(R"(registers 2
param n = 4
input x[n]
output y[n] = 0
parallel for i in 0..n {
    LOAD x[i], R0
    LOAD y[0], R1
    STORE R0, y[i]
}
)");
    auto m = fresh(p);
    CHECK_THROWS_WITH(m.run_until(kNoPause, kNoPause), Catch::Contains("data race on y[0]"));
    const auto& s = m.state();
    std::uint64_t executed = 0;
    for (std::uint64_t n : s.executed) executed += n;
    CHECK(s.steps == executed);
    CHECK(s.steps == 5);  // iteration 0's three, iteration 1's LOAD x[1] and the racing LOAD y[0]
    CHECK(p.code[static_cast<size_t>(s.pc)].code == Code::LOAD);
    CHECK(p.memref_at(s.pc) >= 0);
    CHECK(p.mems[static_cast<size_t>(p.memref_at(s.pc))].array == 1);
}
