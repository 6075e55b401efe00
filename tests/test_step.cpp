// The stepper: a session goes to any step, forward or back, and lands on exactly the state a
// fresh run has there; breakpoints stop at the same steps going forward and back; `toysim
// step` scripted from standard input prints what a student sees.
#include <catch2/catch.hpp>

#include <random>
#include <sstream>

#include "sim/check/fill.h"
#include "sim/step/session.h"
#include "support.h"

using namespace toysim;
using toysim::testing::build;
using toysim::testing::contains;
using toysim::testing::build_file;

namespace {

// The state a fresh machine has after `steps` instructions.
MachineState<double> fresh_at(const Program& p, std::uint64_t steps) {
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    m.run_until(steps, kNoPause);
    return m.state();
}

// Every step at which `bp` stops, from a plain walk over the events.
std::vector<std::uint64_t> brute_force_hits(const Program& p, const Breakpoint& bp) {
    struct Walk final : EventSink<double> {
        const Program& p;
        const Breakpoint& bp;
        std::uint64_t counter = 0;
        std::vector<std::uint64_t> hits;
        Walk(const Program& program, const Breakpoint& b) : p(program), bp(b) {}
        void on_event(const Event<double>& e) override {
            if (stops_at(p, bp, e, counter)) hits.push_back(e.step);
            if (bp.kind == Breakpoint::Kind::Counter) counter += counter_delta(p, bp.counter, e);
        }
    } walk(p, bp);
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    m.run_until(kNoPause, kNoPause, walk);
    return walk.hits;
}

testing::CliResult step_session(const std::vector<std::string>& args, const std::string& commands) {
    std::vector<std::string> full = {"step"};
    full.insert(full.end(), args.begin(), args.end());
    return testing::run_cli_input(full, commands);
}


}  // namespace

TEST_CASE("goto lands on the state a fresh run has, forward and back, across thinned checkpoints", "[step]") {
    // 3000 elements: 41,996 steps, checkpoints every 4096 steps until a tiny budget thins them.
    Program p = build_file("programs/p5_online_softmax.toy", {{"n", 3000}});
    SessionLimits limits;
    limits.checkpoint_bytes = 1;  // keep only the two a session always keeps
    Session<NumericDomain> s(p, NumericDomain{}, nullptr, limits);
    for (std::uint64_t t : {41996ULL, 100ULL, 30001ULL, 4096ULL, 4095ULL, 0ULL, 41995ULL, 17ULL, 20000ULL, 1ULL}) {
        INFO("goto " << t);
        Stop stop = s.go_to(t);
        CHECK(s.position() == t);
        CHECK(stop.reason == (t == 0 ? Stop::Reason::Start : Stop::Reason::Moved));
        CHECK(s.state() == fresh_at(p, t));
        if (t > 0) CHECK(s.last_event()->step == t);
    }
    CHECK(s.checkpoint_count() == 2);
    CHECK(s.end() == 41996u);
    // Past the end: stays at the end and says so.
    CHECK(s.go_to(50000).reason == Stop::Reason::End);
    CHECK(s.position() == 41996);
    CHECK(s.state() == fresh_at(p, 41996));
}

TEST_CASE("forward and backward by N, one step at a time, agree with fresh runs", "[step]") {
    Program p = build_file("programs/attention/fa2.toy", {{"n", 7}, {"d", 3}, {"Br", 3}, {"Bc", 2}});
    Session<NumericDomain> s(p, NumericDomain{}, nullptr);
    std::uint64_t end = 0;
    while (s.forward(1).reason == Stop::Reason::Moved) {
        ++end;
        REQUIRE(s.state() == fresh_at(p, end));
    }
    CHECK(s.end() == end);
    for (std::uint64_t t = end; t-- > 0;) {
        s.backward(1);
        REQUIRE(s.position() == t);
        REQUIRE(s.state() == fresh_at(p, t));
    }
    CHECK(s.backward(5).reason == Stop::Reason::Start);
}

TEST_CASE("every kind of breakpoint stops at the same steps going forward and going back", "[step]") {
    Program p = build_file("programs/p5_online_softmax.toy", {{"n", 40}});
    const std::vector<std::pair<std::string, bool>> specs = {
        {"39", false},          {"p5_online_softmax.toy:53", false}, {"cycle 100", false}, {"STORE", false},
        {"x[7]", false},        {"out", false},                                {"reads(x) > 45", false}, {"EXP >= 30", false},
        {"writes = 3", false},  {"R1", true},                                  {"R3", true},             {"out[39]", true},
    };
    for (const auto& [text, watch] : specs) {
        INFO((watch ? "watch " : "break ") << text);
        Breakpoint bp = parse_breakpoint(p, text, watch);
        std::vector<std::uint64_t> expected = brute_force_hits(p, bp);
        REQUIRE_FALSE(expected.empty());
        Session<NumericDomain> s(p, NumericDomain{}, nullptr);
        s.add_breakpoint(bp);
        std::vector<std::uint64_t> forward, backward;
        for (Stop stop = s.run_forward(); stop.reason == Stop::Reason::Breakpoint; stop = s.run_forward()) forward.push_back(s.position());
        CHECK(s.position() == *s.end());
        for (Stop stop = s.run_backward(); stop.reason == Stop::Reason::Breakpoint; stop = s.run_backward()) backward.push_back(s.position());
        CHECK(s.position() == 0);
        std::reverse(backward.begin(), backward.end());
        // Going back starts at the end, which reverse-continue does not stop at again.
        if (expected.back() == *s.end()) backward.push_back(*s.end());
        CHECK(forward == expected);
        CHECK(backward == expected);
    }
}

TEST_CASE("a counter breakpoint stops where the counter crosses the value, not wherever it holds", "[step]") {
    Program p = build_file("programs/p4_softmax_3pass.toy", {{"n", 10}});
    Breakpoint bp = parse_breakpoint(p, "reads(x) > 12", false);
    CHECK(bp.text == "break reads(x) > 12");
    CHECK(brute_force_hits(p, bp).size() == 1);
    Session<NumericDomain> s(p, NumericDomain{}, nullptr);
    s.add_breakpoint(bp);
    REQUIRE(s.run_forward().reason == Stop::Reason::Breakpoint);
    CHECK(s.counters().value(bp.counter).count == 13);
    CHECK(s.run_forward().reason == Stop::Reason::End);
}

TEST_CASE("breakpoint mistakes are explained", "[step]") {
    Program p = build_file("programs/p5_online_softmax.toy");
    auto message = [&](const std::string& text, bool watch) {
        try {
            parse_breakpoint(p, text, watch);
        } catch (const ToyError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    CHECK(message("999", false) == "no instruction on line 999 (the nearest is on line 55)");
    CHECK(message("33", false) == "no instruction on line 33 (the nearest are on lines 32 and 36)");
    CHECK(message("xs", false).rfind("'xs' is not a line, a cycle, an opcode, an array or a counter; did you mean 'x'?", 0) == 0);
    CHECK(message("x[4][1]", false) == "x has 1 dimension; 'x[4][1]' gives 2");
    CHECK(message("x[4]", false) == "'x[4]' is out of bounds: dimension 1 of x has 4 elements");
    CHECK(message("registers > 3", false).rfind("a breakpoint cannot follow registers", 0) == 0);
    CHECK(message("reads(y) > 3", false) == "no array named 'y'");
    CHECK(message("reads(x) > lots", false) == "'reads(x) > lots': the value after > must be a whole number");
    CHECK(message("R9", true) == "'R9' is beyond the register file: 4 registers: R0..R3");
    CHECK(message("", true) == "watch what? For example: watch R2, watch o (a tile), watch out (an array), watch out[3]");
    CHECK(message("other.toy:12", false) == "'other.toy' is not this program's file (" + p.source->path + ")");
}

TEST_CASE("a fault ends the run one step before it: stepping stops there and goes back from there", "[step]") {
    Program p = build(R"(registers 2
param n = 6
input  x[4]
output y[4]
for i in 0..n {
    LOAD x[i], R0
    STORE R0, y[i]
}
)");
    Session<NumericDomain> s(p, NumericDomain{}, nullptr);
    Stop stop = s.go_to(100);
    CHECK(stop.reason == Stop::Reason::Fault);
    CHECK(s.position() == 8);
    CHECK(s.end() == 8u);
    CHECK(std::string(s.fault()->what()) == "x[4] is out of bounds: x has 4 elements (index 0..3) (at i = 4)");
    CHECK(s.state() == fresh_at(p, 8));
    CHECK(s.forward(1).reason == Stop::Reason::Fault);
    CHECK(s.position() == 8);
    s.go_to(3);
    CHECK(s.state() == fresh_at(p, 3));
    // The step limit is the same kind of end.
    SessionLimits limits;
    limits.max_steps = 5;
    Session<NumericDomain> limited(p, NumericDomain{}, nullptr, limits);
    CHECK(limited.run_forward().reason == Stop::Reason::Fault);
    CHECK(limited.position() == 5);
    CHECK(limited.fault()->kind() == ErrorKind::StepLimit);
}

TEST_CASE("toysim step scripted: moves, Enter repeats, breakpoints, print and regs", "[step][cli]") {
    auto r = step_session({"programs/p1_c00.toy"}, "step\n\nstep 1\nback 2\nprint R0\nbreak STORE\ncontinue\ninfo breakpoints\nquit\n");
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    CHECK(contains(r.out, "toysim step: programs/p1_c00.toy (none); 3 registers: R0..R2; values symbolic; the run has 7 steps.\n"));
    // Step 3, as the trace prints its row, the changed register marked.
    CHECK(contains(r.out, "(toysim) step 1\n"
                          "step 3, cycle 3  programs/p1_c00.toy:26\n"
                          "   26 | MAC_Z R0, R1, R2\n"
                          "  Step  Instruction       R0   R1   R2\n"
                          "     3  MAC_Z R0, R1, R2  a00  b00  a00·b00\n"
                          "                                    ^^^^^^^\n"
                          "  R2: (unwritten) → a00·b00\n"
                          "  DRAM: none\n"
                          "  counters: cycles 3 (+1), instructions 3 (+1), MAC_Z 1 (+1)\n"));
    // Enter repeated "step": step 2 came between.
    CHECK(contains(r.out, "(toysim) \nstep 2, cycle 2  programs/p1_c00.toy:25\n"));
    CHECK(contains(r.out, "(toysim) back 2\nstep 1, cycle 1  programs/p1_c00.toy:24\n"));
    CHECK(contains(r.out, "(toysim) print R0\nR0 = a00\n"));
    CHECK(contains(r.out, "(toysim) continue\nbreakpoint 1: break STORE\nstep 7, cycle 7  programs/p1_c00.toy:30\n"));
    CHECK(contains(r.out, "  DRAM: wrote c[0][0] = c00\n"));
    CHECK(contains(r.out, "  1  break STORE     1\n"));
}

TEST_CASE("symbolic values keep the trace's names however the session moves", "[step][cli]") {
    auto r = step_session({"programs/p5_online_softmax.toy"}, "goto 22\ngoto 0\nstep 30\nback 8\n");
    REQUIRE(r.code == 0);
    const std::string row = "    22  MUL R2, R3, R2  e^(x2 − m2)  m2  s1·e^(m1 − m2)  e^(m1 − m2)\n";
    auto first = r.out.find(row);
    REQUIRE(first != std::string::npos);
    CHECK(r.out.find(row, first + 1) != std::string::npos);  // the same row after going round
    CHECK(contains(r.out, "  R2: s1 → s1·e^(m1 − m2)\n    m1 = max(x0, x1)\n    s1 = e^(x0 − m1) + e^(x1 − m1)\n    m2 = max(m1, x2)\n"));
}

TEST_CASE("P5 at n = 1,000,000: goto, back, watch and reverse-continue in one scripted session", "[step][cli]") {
    auto r = step_session({"programs/p5_online_softmax.toy", "--set", "n=1000000"}, "goto 900000\nback 3\nwatch R1\nreverse-continue\nprint R1\n");
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, "values numeric (symbolic is for runs of up to 100,000 steps); the run has 13,999,996 steps.\n"));
    CHECK(contains(r.out, "(toysim) goto 900000\nstep 900000, cycle 900000  programs/p5_online_softmax.toy:39\n"));
    CHECK(contains(r.out, "(toysim) back 3\nstep 899997, cycle 899997  programs/p5_online_softmax.toy:36\n"));
    CHECK(contains(r.out, "  899997  LOAD x[100000], R0"));
    // The running max last changed at element 89,809 (step 9·89,808 + 8).
    CHECK(contains(r.out, "(toysim) reverse-continue\nbreakpoint 1: watch R1\nstep 808280, cycle 808280  programs/p5_online_softmax.toy:38\n"));
    CHECK(contains(r.out, "  R1: 0.999961664719 → 0.99998379493\n"));
}

TEST_CASE("a tile program steps with its blocks shown as the trace shows them", "[step][cli]") {
    auto r = step_session({"programs/attention/seed001_fa2_tiled.toy"}, "goto 18\nwatch l\nreverse-continue\nbreak K\ncontinue\nprint m_new\n");
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, "  MAC p, v, o, o\n  o = [2.8394, 4.2073, 5.5752, 6.943; 5.3679, 6.7358, 8.1036, 9.4715]\n"));
    CHECK(contains(r.out, "breakpoint 1: watch l\nstep 17, cycle 86"));
    CHECK(contains(r.out, "  l = [1.3679; 1.3679]\n"));
    CHECK(contains(r.out, "  DRAM: read K[2][0] … K[3][3] (8 elements)\n"));
    CHECK(contains(r.out, "m_new: 2×1 (of 2×1) = [1; 1]\n"));
}

TEST_CASE("a scripted session with a mistake says so and exits 2, having run the rest", "[step][cli]") {
    auto r = step_session({"programs/p1_c00.toy"}, "stpe\nbreak nowhere\nstep 2\n");
    CHECK(r.code == 2);
    CHECK(r.err == "error: unknown command 'stpe'; did you mean 'step'?; type 'help' for the commands\n"
                   "error: 'nowhere' is not a line, a cycle, an opcode, an array or a counter; for example: break 12 (a line), break "
                   "cycle 40, break STORE, break x (any access), break x[3], break reads(K) > 64, break worker 2\n");
    CHECK(contains(r.out, "step 2, cycle 2"));
}

TEST_CASE("symbolic stepping is refused for a run too long to name every value", "[step][cli]") {
    auto r = step_session({"programs/p5_online_softmax.toy", "--set", "n=100000", "--values", "symbolic"}, "");
    CHECK(r.code == 2);
    CHECK(contains(r.err, "error: symbolic stepping names every value of the run, which is for runs of up to 100,000 steps; this one has "
                          "1,399,996: use --values numeric, or smaller parameters\n"));
}

TEST_CASE("a random walk of moves and breakpoints always stands on a fresh run's state", "[step]") {
    std::mt19937_64 rng(20261122);
    for (const char* path : {"programs/p5_online_softmax.toy", "programs/attention/fa2_backward.toy"}) {
        INFO(path);
        Program p = build_file(path);
        const std::vector<std::pair<std::string, bool>> specs = {{"STORE", false}, {"R1", true}, {"reads > 20", false}, {"cycle 40", false}};
        SessionLimits limits;
        limits.checkpoint_bytes = 1;
        Session<NumericDomain> s(p, NumericDomain{}, nullptr, limits);
        for (const auto& [text, watch] : specs)
            if (!(watch && p.scalar_registers < 2)) s.add_breakpoint(parse_breakpoint(p, text, watch));
        for (int move = 0; move < 300; ++move) {
            switch (rng() % 5) {
                case 0: s.go_to(rng() % 700); break;
                case 1: s.forward(rng() % 50); break;
                case 2: s.backward(rng() % 50); break;
                case 3: s.run_forward(); break;
                case 4: s.run_backward(); break;
            }
            REQUIRE(s.state() == fresh_at(p, s.position()));
            if (s.position() > 0) REQUIRE(s.last_event()->step == s.position());
        }
    }
}
