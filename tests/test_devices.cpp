// Devices and links (sim/exec/links.h): what a SEND costs in time and on the links, and the
// located errors of a program that misuses them (a deadlock, a message nobody receives, a
// RECV of the wrong size, another device's element, a link a ring does not have).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "sim/check/fill.h"
#include "sim/exec/machine.h"
#include "support.h"

using namespace toysim;
using toysim::testing::build;

namespace {

Counters run_counters(const Program& p) {
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    m.run_until(kNoPause, 1'000'000);
    return m.counters();
}

// The located error a run ends with: "LINE:COL: message".
std::string run_error(const std::string& text) {
    Program p = build(text);
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    try {
        m.run_until(kNoPause, 1'000'000);
    } catch (const ToyError& e) {
        return fmt::format("{}:{}: {}", e.loc().line, e.loc().col, e.what());
    }
    return "no error";
}

std::string compile_error(const std::string& text) {
    try {
        build(text);
    } catch (const ToyError& e) {
        return fmt::format("{}:{}: {}", e.loc().line, e.loc().col, e.what());
    }
    return "no error";
}

// Two devices swap halves of X: each sends its 4 elements (4 cycles a element on the link, 10
// of latency), works 9 cycles (a LOAD, then 8 MOVs), and receives.
const char* kSwap = R"(param n = 8
devices 2 link 4 latency 10
registers 4
input X[n] split
scratch Y[n] split
on devices r {
    SEND X[r*4..r*4+4], @r+1
    LOAD X[r*4], R0
    for i in 0..W {
        MOV R0, R1
    }
    RECV @r+1, Y[r*4..r*4+4]
}
)";

std::string swap(int work) { return fmt::format("param W = {}\n{}", work, kSwap); }

}  // namespace

TEST_CASE("a RECV waits for the last element: link cycles times elements plus the latency", "[devices]") {
    // The transfer takes 4·4 + 10 = 26 cycles; a device that works 9 waits 17 for it.
    Counters c = run_counters(build(swap(8)));
    CHECK(c.cycles == 26);
    CHECK(c.work == 2 * 9);
    CHECK(c.link_elements == std::vector<std::uint64_t>{0, 4, 4, 0});
    CHECK(c.sent() == 8);
    CHECK(c.busiest_link() == 4);
    CHECK(c.arrays[0].sent == 8);
    CHECK(c.arrays[0].reads == 8 + 2);  // each SEND reads its 4, each LOAD 1
    CHECK(c.arrays[1].writes == 8);
    // A device that works longer than the transfer does not wait at all.
    Counters longer = run_counters(build(swap(40)));
    CHECK(longer.cycles == 41);
    CHECK(longer.work == 2 * 41);
}

TEST_CASE("RECV takes what the other device sent, element for element", "[devices]") {
    Program p = build(swap(1));
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    m.run_until(kNoPause, 1'000'000);
    const auto& dram = m.state().dram;
    const ArrayInfo& x = p.arrays[0];
    const ArrayInfo& y = p.arrays[1];
    for (std::int64_t i = 0; i < 4; ++i) {
        CHECK(dram[static_cast<size_t>(y.base + i)] == dram[static_cast<size_t>(x.base + 4 + i)]);
        CHECK(dram[static_cast<size_t>(y.base + 4 + i)] == dram[static_cast<size_t>(x.base + i)]);
    }
}

TEST_CASE("a link carries its messages one after another: the second waits for the first", "[devices]") {
    // Device 0 sends two messages of 4 at 4 cycles an element: the second leaves at cycle 16
    // and arrives at 32 + 10; device 1 receives both, working 1 cycle between.
    Counters c = run_counters(build(R"(devices 2 link 4 latency 10
registers 4
input X[8] split
scratch Y[16] split
on devices r {
    for k in 0..1-r {
        SEND X[0..4], @1
        SEND X[0..4], @1
    }
    for k in 0..r {
        RECV @0, Y[8..12]
        LOAD X[4], R0
        RECV @0, Y[12..16]
    }
}
)"));
    CHECK(c.cycles == 42);
    CHECK(c.link_elements == std::vector<std::uint64_t>{0, 8, 0, 0});
}

TEST_CASE("devices' errors are located and name the devices", "[devices]") {
    const std::string head = "param n = 8\ndevices 2\nregisters 4\ninput X[n] split\nscratch Y[n] split\non devices r {\n";
    CHECK(run_error(head + "    RECV @r+1, Y[r*4..r*4+4]\n    SEND X[r*4..r*4+4], @r+1\n}\n") ==
          "7:5: deadlock: every device still running waits for a message that no device will send: device 0 at line 7 (RECV @r+1, "
          "Y[r*4..r*4+4]) waits for device 1; device 1 at line 7 (RECV @r+1, Y[r*4..r*4+4]) waits for device 0. A RECV waits for the "
          "SEND on its link: send before receiving, on at least one side");
    CHECK(run_error(head + "    SEND X[r*4..r*4+4], @r+1\n}\n") ==
          "7:5: device 0 sent 4 elements to device 1 here, and device 1 finished without receiving them: each SEND needs a RECV on "
          "the device it sends to");
    CHECK(run_error(head + "    SEND X[r*4..r*4+4], @r+1\n    RECV @r+1, Y[r*4..r*4+2]\n}\n") ==
          "8:16: device 0 receives 2 elements here, but the message from device 1 (line 7: SEND X[r*4..r*4+4], @r+1) has 4 (at r = 0)");
    CHECK(run_error(head + "    LOAD X[0], R0\n}\n") ==
          "7:10: device 1 reads X[0], which is in device 0's DRAM (X is split: device 1 holds rows 4..7); a device touches only its "
          "own elements: move others with SEND and RECV (at r = 1)");
    CHECK(run_error("devices 2\nregisters 4\ninput Q[2][8] split 1\non devices r {\n    LOAD Q[1][0], R0\n}\n") ==
          "5:10: device 1 reads Q[1][0], which is in device 0's DRAM (Q is split on dimension 1: device 1 holds indices 4..7 of it); a "
          "device touches only its own elements: move others with SEND and RECV (at r = 1)");
    CHECK(run_error("devices 2\nregisters 4\noutput O[2]\non devices r {\n    SET 1, R0, R0\n    STORE R0, O[r]\n}\n") ==
          "6:15: device 1 writes O[1], which is in device 0's DRAM (O is not split, so it is all in device 0's DRAM: declare it "
          "'split' to give each device its rows); a device touches only its own elements: move others with SEND and RECV (at r = 1)");
    CHECK(run_error("devices 4 ring\nregisters 4\ninput X[8] split\nscratch Y[8] split\non devices r {\n    SEND X[r*2..r*2+2], @r+2\n"
                    "    RECV @r+2, Y[r*2..r*2+2]\n}\n") ==
          "6:25: device 0 sends to device 2, but in a ring of 4 devices it has links to 3 and 1 only (at r = 0)");
    CHECK(run_error("devices 1\nregisters 4\ninput X[8] split\nscratch Y[8] split\non devices r {\n    SEND X[0..8], @r\n    RECV @r, Y[0..8]\n}\n") ==
          "6:19: device 0 sends to itself: a link joins two devices (with 1 device there is none) (at r = 0)");
}

TEST_CASE("a program with devices is refused where devices are not modeled, at compile time", "[devices]") {
    CHECK(compile_error("devices 2\nregisters 4\ninput X[8] split\nLOAD X[0], R0\n") ==
          "4:1: with 'devices', instructions run on the devices: put this one inside 'on devices r { ... }'");
    CHECK(compile_error("devices 3\nregisters 4\ninput X[8] split\non devices r {\n    LOAD X[r], R0\n}\n") ==
          "3:12: 'split' gives each of the 3 devices an equal part of the 8 rows of 'X': 8 is not a multiple of 3");
    CHECK(compile_error("registers 4\ninput X[8] split\n") == "2:12: 'split' spreads an array's rows over the devices: declare 'devices D' first");
    CHECK(compile_error("devices 2\nregisters 4\ninput Q[2][8] split 2\n") ==
          "3:15: 'Q' has 2 dimensions, counted from 0: there is no dimension 2 to split");
    CHECK(compile_error("devices 3\nregisters 4\ninput Q[2][8] split 1\n") ==
          "3:15: 'split' gives each of the 3 devices an equal part of the 8 indices of dimension 1 of 'Q': 8 is not a multiple of 3");
    CHECK(compile_error("devices 2\nregisters 4\ninput Q[2][8] split 7\n") == "3:21: an array has at most 4 dimensions: split 0 to split 3, not split 7");
    CHECK(compile_error("registers 4\ninput X[8]\nscratch Y[8]\nSEND X[0..4], @1\n") ==
          "4:1: SEND moves data between devices: it belongs inside 'on devices r { ... }' (and the program declares 'devices D')");
    CHECK(compile_error("registers 4\non devices r {\n    SET 1, R0, R0\n}\n") ==
          "2:1: 'on devices' runs its body on every device: declare 'devices D' above it");
    CHECK(compile_error("devices 2\nworkers 2\nregisters 4\n") ==
          "2:1: with 'devices', each device is one worker: drop 'workers' (a device's workers are not modeled yet)");
    CHECK(compile_error("devices 2\nregisters 4\ncache h100\n") ==
          "1:1: a modeled cache does not model several devices yet: a program with 'devices' runs on the toy machine (run, trace, "
          "step, view, cost's traffic formulas)");
    CHECK(compile_error("devices 2\nregisters 4\ninput X[8] split\non devices r {\n    LOAD X[r*4], R0\n    MOV @r, R0\n}\n") ==
          "6:9: MOV takes no device: only SEND and RECV do");
    CHECK(compile_error("devices 2\nregisters 4\ninput X[8] split\non devices r {\n    SEND R0, @r+1\n}\n") ==
          "5:10: operand 1 of SEND (src) must be a DRAM element or slice such as K[r*N..r*N+N][0..d], got a register");
    CHECK(compile_error("devices 2\nregisters 4\ninput X[8] split\non devices r {\n    on devices s {\n        LOAD X[r], R0\n    }\n}\n") ==
          "5:5: 'on devices' is a block of the program's top level, not inside a loop");
    CHECK(compile_error("registers 4\nexpect sent = 0\n") ==
          "2:8: sent is counted on the links between devices, and this program declares none: add a `devices D` line");
}

TEST_CASE("run lists each link's elements, cost bounds cycles from below and calls the devices race-free", "[devices]") {
    using toysim::testing::contains;
    auto run = toysim::testing::run_cli({"run", "programs/devices/ring_attention.toy"});
    REQUIRE(run.code == 0);
    CHECK(contains(run.out, "4 devices in a ring, a link 1 cycle an element and 16 cycles of latency\n"
                            "link          elements  cycles busy\n"
                            "------------  --------  -----------\n"
                            "device 0 → 1       192          192\n"));
    auto cost = toysim::testing::run_cli({"cost", "programs/devices/ring_attention.toy"});
    REQUIRE(cost.code == 0);
    CHECK(contains(cost.out, " = 4880 *   (the busiest of 4 devices; what its RECVs wait for comes on top: `toysim run` counts it)\n"));
    CHECK(contains(cost.out, "cycles ≥ "));
    CHECK(contains(cost.out, "race-free: each device touches only the elements in its own DRAM, which a run checks at every access"));
    auto gpu = toysim::testing::run_cli({"gpu", "run", "programs/devices/ring_attention.toy"});
    CHECK(gpu.code == 2);
    CHECK(contains(gpu.err, "generated CUDA does not model several devices yet"));
}

TEST_CASE("toysim step: info devices shows each device's clock, next line and wait, and the messages on the links", "[devices][step]") {
    using toysim::testing::contains;
    // Eleven steps: both devices have sent, worked and device 0 has received (at cycle 26).
    std::string script;
    for (int i = 0; i < 11; ++i) script += "n\n";
    script += "info devices\nq\n";
    auto r = toysim::testing::run_cli_input({"step", "tests/fuzz/corpus/devices_ring_swap.toy"}, script);
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, "device  clock  next line  state\n"
                          "------  -----  ---------  ---------\n"
                          "     0     26         15  ready\n"
                          "     1      4         14  runs next\n"
                          "on the links:\n"
                          "  device 0 → 1: 1 message in flight, 4 elements (the first arrives at cycle 26)\n"));
    CHECK(contains(r.out, "step 11, cycle 26 on device 0, work 8  tests/fuzz/corpus/devices_ring_swap.toy:14\n"));
}

TEST_CASE("toysim step: a deadlock found as the last ready device finishes ends the run after that step", "[devices][step]") {
    using toysim::testing::contains;
    // Device 0 waits from the start; device 1 runs its LOAD and finishes, and only then is the
    // deadlock known. Landing on that step once faulted again on every try (a stack overflow).
    auto r = toysim::testing::run_cli_input({"step", "tests/bad/devices_deadlock_after_finish.toy"}, "continue\nback 1\nstep 3\nq\n");
    REQUIRE(r.code == 0);
    const std::string at_end = "step 1, cycle 4 on device 1, work 4  tests/bad/devices_deadlock_after_finish.toy:14\n";
    CHECK(contains(r.out, "(toysim) continue\n" + at_end));
    CHECK(contains(r.out, "the next instruction faults:\ntests/bad/devices_deadlock_after_finish.toy:12:9: error: deadlock: "));
    CHECK(contains(r.out, "(toysim) back 1\nat the start\nstep 0, cycle 0: nothing has run yet\n"));
    CHECK(contains(r.out, "(toysim) step 3\n" + at_end));
}
