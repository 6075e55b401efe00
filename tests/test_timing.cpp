// The named machine (isa/machine.h) and the timing pass (sim/timing/predict.h): every constant
// read back from the probe's committed results, and each bound worked by hand.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <tuple>
#include <sstream>
#include <string>

#include "gpu/kernels/kernels.h"
#include "gpu/runtime/diff.h"
#include "isa/machine.h"
#include "sim/front/parser.h"
#include "sim/timing/predict.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

const MachineSpec& h100() {
    const MachineSpec* m = find_machine("h100");
    REQUIRE(m != nullptr);
    return *m;
}

std::uint64_t& units(LaunchWork& w, Op op) { return w.work[static_cast<size_t>(op)]; }
std::uint64_t& count(LaunchWork& w, Op op) { return w.instructions[static_cast<size_t>(op)]; }

}  // namespace

TEST_CASE("machine: every value of every named machine is the figure on its row of its probe's results", "[time]") {
    // A probe's output, its lines; its first names the device the figures are of.
    const auto read_results = [](std::string_view results) {
        std::ifstream in(std::string(TOYSIM_SOURCE_DIR) + "/" + std::string(results));
        std::vector<std::string> lines;
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        return lines;
    };
    for (const MachineSpec& machine : machines()) {
        INFO("machine " << machine.name << ", " << machine.results);
        const std::vector<std::string> own = read_results(machine.results);
        REQUIRE_FALSE(own.empty());
        CHECK(own[0].find(machine.name == "h100" ? "NVIDIA H100" : "NVIDIA H200") != std::string::npos);
        for (int p = 0; p < kMachineParamCount; ++p) {
            const MachineValue& v = machine.values[static_cast<size_t>(p)];
            INFO(machine_param_info(static_cast<MachineParam>(p)).key << ": row " << v.row << ", figure " << v.figure << ", results " << v.results);
            // A figure measured on another machine with the same SM is on that machine's rows.
            const std::vector<std::string> lines = v.results.empty() ? own : read_results(v.results);
            REQUIRE_FALSE(lines.empty());
            bool found = false;
            for (const std::string& line : lines)
                found = found || (line.rfind(std::string(v.row) + " ", 0) == 0 && line.find(std::string(v.figure), v.row.size()) != std::string::npos);
            CHECK(found);
            // The figure's first number is the value.
            const std::string figure(v.figure);
            const auto digit = figure.find_first_of("0123456789");
            REQUIRE(digit != std::string::npos);
            CHECK(std::stod(figure.substr(digit)) == Approx(v.measured));
        }
    }
    CHECK(machine_names() == "h100, h200");
    CHECK(find_machine("h200")->device == "NVIDIA H200 (SXM)");
    CHECK((*find_machine("h200"))[MachineParam::DramBytesPerSecond] == 4487);
    CHECK((*find_machine("h200"))[MachineParam::Sms] == 132);  // from h100(), read back from machine_h200.txt above
    CHECK(find_machine("a100") == nullptr);
}

TEST_CASE("time: the products' bound on wgmma, and the busiest SM's extra block", "[time]") {
    LaunchWork w;
    units(w, Op::MAC) = 1'000'000'000;  // 10⁹ multiply-adds
    count(w, Op::MAC) = 132;
    CacheCounts c;
    LaunchShape shape;
    shape.blocks = 132;
    shape.products = ProductUnit::WgmmaF16;
    // 2·10⁹ FLOP at 988 TFLOP/s: 2.0243 µs, every SM one block.
    LaunchTime t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Matrix)] == Approx(2.0243e-6).epsilon(1e-4));
    CHECK(t.bound == TimeBound::Matrix);
    CHECK(t.seconds == Approx(2.0243e-6 + 3.01e-6).epsilon(1e-4));
    CHECK(t.flops == 2e9);
    // One block more: an SM runs two, so the launch takes twice one SM's share of 10⁹/133 each.
    shape.blocks = 133;
    t = predict_launch(h100(), w, c, shape);
    CHECK(t.busiest_sm_blocks == 2);
    CHECK(t.each[static_cast<size_t>(TimeBound::Matrix)] == Approx(2.0243e-6 * 132 * 2 / 133).epsilon(1e-4));
    // On the CUDA cores: 125.05 fused multiply-adds a clock at 1978 MHz.
    shape.blocks = 132;
    shape.products = ProductUnit::CudaCores;
    t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Matrix)] == Approx(1e9 / 132 / (125.05 * 1.978e9)).epsilon(1e-4));
}

TEST_CASE("time: DRAM and L2 bounds, and a block's chain of waits", "[time]") {
    LaunchWork w;
    units(w, Op::LOAD) = count(w, Op::LOAD) = 13'200;  // 100 scalar loads a block, 132 blocks
    CacheCounts c;
    c.total.read_hits = 13'200;  // one 32-byte sector each, every one a hit
    LaunchShape shape;
    shape.blocks = 132;
    LaunchTime t = predict_launch(h100(), w, c, shape);
    // 100 waits of 272 cycles at 1978 MHz, and 3,200 bytes at one SM's share of 7902 GB/s.
    CHECK(t.each[static_cast<size_t>(TimeBound::Chain)] == Approx(100 * 272 / 1.978e9 + 3200 / (7902e9 / 132)).epsilon(1e-4));
    CHECK(t.bound == TimeBound::Chain);
    // The L2's bytes at its bandwidth, after its latency: 272 cycles.
    CHECK(t.each[static_cast<size_t>(TimeBound::L2)] == Approx(272 / 1.978e9 + 13'200 * 32 / 7902e9).epsilon(1e-4));
    // Two resident blocks wait side by side, in step: 264 blocks wait as long as 132, and each
    // load's bytes move at half the SM's share, the other block's beside them.
    shape.blocks = 264;
    shape.resident_per_sm = 2;
    units(w, Op::LOAD) = count(w, Op::LOAD) = 26'400;
    c.total.read_hits = 26'400;
    CHECK(predict_launch(h100(), w, c, shape).each[static_cast<size_t>(TimeBound::Chain)] ==
          Approx(100 * 272 / 1.978e9 + 2 * 3200 / (7902e9 / 132)).epsilon(1e-4));
    // Misses wait DRAM's 660 cycles; 3072 MB from DRAM take a millisecond after the 0.91 µs a
    // short read takes to start streaming (the probe's "DRAM stream start-up").
    c.total.read_hits = 0;
    c.total.read_misses = 26'400;
    c.total.dram_read_bytes = 3'072'000'000;
    t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Dram)] == Approx(0.91e-6 + 1e-3).epsilon(1e-9));
    CHECK(t.bound == TimeBound::Dram);
    // 1 MiB: mostly the start-up (the probe's 1 MiB read, 4.29 µs between events, is its
    // empty kernel's 3.04, 0.34 of bytes and 0.91).
    c.total.dram_read_bytes = 1 << 20;
    t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Dram)] == Approx(0.91e-6 + (1 << 20) / 3072e9).epsilon(1e-9));
}

TEST_CASE("time: a block's chain, an instruction at a time, with its latency", "[time]") {
    // One EXP of a 64 × 64 tile a block, 132 blocks of 4 warps: the SFU's 16 results a clock
    // take 256 clocks (the issue of 128 warp instructions at 4 a clock takes 32), and the
    // next instruction waits MUFU.EX2's 17-cycle latency after the last.
    LaunchWork w;
    w.by_pc.resize(1);
    w.by_pc[0].op = static_cast<int>(Op::EXP);
    CacheCounts c;
    LaunchShape shape;
    auto blocks_of = [&](std::uint64_t blocks) {  // one EXP of 4096 elements a block
        shape.blocks = blocks;
        units(w, Op::EXP) = w.by_pc[0].work = 4096 * blocks;
        count(w, Op::EXP) = w.by_pc[0].executions = blocks;
    };
    blocks_of(132);
    LaunchTime t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Chain)] == Approx((256 + 17) / 1.978e9).epsilon(1e-6));
    // Its parts: the SFU's clocks, and the wait for its last result.
    CHECK(t.chain[static_cast<size_t>(ChainPart::Special)] == Approx(256 / 1.978e9).epsilon(1e-6));
    CHECK(t.chain[static_cast<size_t>(ChainPart::Waits)] == Approx(17 / 1.978e9).epsilon(1e-6));
    CHECK(t.chain[static_cast<size_t>(ChainPart::Products)] == 0);
    // Two blocks an SM, in step: they share the SFU (512 clocks), and wait its latency once.
    blocks_of(264);
    shape.resident_per_sm = 2;
    t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Chain)] == Approx((512 + 17) / 1.978e9).epsilon(1e-6));
    // One warp a block reaches one of the SM's four schedulers, and a quarter of its SFU.
    blocks_of(132);
    shape.resident_per_sm = 1;
    shape.warps = 1;
    t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Chain)] == Approx((1024 + 17) / 1.978e9).epsilon(1e-6));
    // Generated CUDA's element loops in shared memory run at the rate measured for them, 21.17
    // G elements a second on an SM (slower than the SFU's 16 a clock), plus what an
    // instruction costs the SM whatever its size (22.3 ns); the block's wait, 75.0 ns with one
    // block an SM, is under that: no more.
    shape.warps = 8;
    shape.generated = true;
    w.by_pc[0].writes_shared = true;
    t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Chain)] == Approx(4096 / 21.17e9 + 22.3e-9).epsilon(1e-6));
    // A 4 × 4 tile: the wait is longer than the work.
    units(w, Op::EXP) = w.by_pc[0].work = 16 * 132;
    t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Chain)] == Approx(75.0e-9).epsilon(1e-6));
    // In registers (the fragment layout: its result is not in shared memory), the SFU's rate
    // and MUFU's latency, as in a hand-written kernel.
    units(w, Op::EXP) = w.by_pc[0].work = 4096 * 132;
    w.by_pc[0].writes_shared = false;
    t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Chain)] == Approx((256 + 17) / 1.978e9).epsilon(1e-6));
}

TEST_CASE("time: generated CUDA's products on the CUDA cores cost their multiply-adds and reads, its loads their conversions", "[time]") {
    // One 64 × 61 by 61 × 64 product a block (249,856 multiply-adds, shapes that are not whole
    // fragments), 132 blocks of 8 warps: an SM's time is a + b · reads a multiply-add, each
    // loop its own a and b (the H200's probe rows, which the h100 machine takes: the same SM),
    // plus what any generated instruction costs the SM (22.3 ns); its waits are shorter.
    LaunchWork w;
    w.by_pc.resize(1);
    InstructionWork& mac = w.by_pc[0];
    mac.op = static_cast<int>(Op::MAC);
    mac.in_grid = mac.writes_shared = true;
    LaunchShape shape;
    shape.blocks = 132;
    shape.warps = 8;
    shape.generated = true;
    units(w, Op::MAC) = mac.work = 64 * 64 * 61 * 132;
    count(w, Op::MAC) = mac.executions = 132;
    mac.scalar_product_steps = 61 * 132;
    const auto chain = [&] { return predict_launch(h100(), w, CacheCounts{}, shape).each[static_cast<size_t>(TimeBound::Chain)]; };
    // A thread's one result, an element at a time: 2 reads a multiply-add (one of a, one of b).
    mac.by_element = true;
    mac.thread_rows = mac.thread_cols = 1;
    CHECK(chain() == Approx(249856 * (5.66 + 2 * 13.46) * 1e-12 + 22.3e-9).epsilon(1e-6));
    // 2 × 2 results a thread, 16 bytes at a time: a read of 4 steps of k feeds 2 results, so
    // (1/2 + 1/2) / 4 reads a multiply-add.
    mac.by_element = false;
    mac.thread_rows = mac.thread_cols = 2;
    CHECK(chain() == Approx(249856 * (2.74 + 0.25 * 43.98) * 1e-12 + 22.3e-9).epsilon(1e-6));
    // Without the code generator's blocking (a catalog kernel's product) the term is not taken.
    mac.thread_rows = mac.thread_cols = 0;
    CHECK(chain() < 249856 * (2.74 + 0.25 * 43.98) * 1e-12);

    // A LOAD of a fp16 tile into a fp32 one: each element converted and stored at the probe's
    // 29.27 G elements a second on an SM, where that is slower than its bytes through the L2
    // (on the H200, every access a hit: 2 bytes at 9254 GB/s over 132 SMs, 28.5 ps an element,
    // against 34.2). 2048 and 4096 elements a block are one round of a lane's loads each (8
    // warps × 32 lanes × 4 loads of 4 elements), so they wait alike and differ by 2048
    // conversions.
    LaunchWork l;
    l.by_pc.resize(1);
    InstructionWork& load = l.by_pc[0];
    load.op = static_cast<int>(Op::LOAD);
    load.in_grid = true;
    count(l, Op::LOAD) = load.executions = 132;
    CacheCounts hits;
    hits.total.read_hits = 1;
    shape.tile_element_bytes = 2;
    const MachineSpec& h200 = *find_machine("h200");
    const auto load_chain = [&](std::uint64_t elements) {
        units(l, Op::LOAD) = load.work = load.shared_elements = elements * 132;
        return predict_launch(h200, l, hits, shape).each[static_cast<size_t>(TimeBound::Chain)];
    };
    CHECK(load_chain(4096) - load_chain(2048) == Approx(2048 / 29.27e9).epsilon(1e-6));
    // A tile kept as fp16 is copied, not converted: its bytes decide.
    load.stored = true;
    CHECK(load_chain(4096) - load_chain(2048) == Approx(2048 * 2 / (9254e9 / 132)).epsilon(1e-6));
}

TEST_CASE("time: a last, partial round shares the units, and waits as long", "[time]") {
    // The EXP above, 4 blocks on each SM that holds 3 at once: the SFU is busy for 4 blocks'
    // work (4 · 256 clocks), and the SM waits MUFU.EX2's latency in 2 rounds.
    LaunchWork w;
    w.by_pc.resize(1);
    w.by_pc[0].op = static_cast<int>(Op::EXP);
    w.by_pc[0].in_grid = true;
    LaunchShape shape;
    shape.blocks = 4 * 132;
    shape.resident_per_sm = 3;
    units(w, Op::EXP) = w.by_pc[0].work = 4096 * shape.blocks;
    count(w, Op::EXP) = w.by_pc[0].executions = shape.blocks;
    const LaunchTime t = predict_launch(h100(), w, CacheCounts{}, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Chain)] == Approx((4 * 256 + 2 * 17) / 1.978e9).epsilon(1e-6));
}

TEST_CASE("time: generated CUDA's last, partial round takes a whole round", "[time]") {
    // The EXP above as generated code runs it: its blocks wait on latencies, not on the issue
    // slots, so 4 blocks an SM that holds 3 take as long as 6 (two full rounds), where the
    // course's kernels share the units among the last round's fewer blocks.
    auto chain = [](std::uint64_t per_sm, bool generated) {
        LaunchWork w;
        w.by_pc.resize(1);
        w.by_pc[0].op = static_cast<int>(Op::EXP);
        w.by_pc[0].in_grid = true;
        LaunchShape shape;
        shape.blocks = per_sm * 132;
        shape.resident_per_sm = 3;
        shape.generated = generated;
        units(w, Op::EXP) = w.by_pc[0].work = 4096 * shape.blocks;
        count(w, Op::EXP) = w.by_pc[0].executions = shape.blocks;
        return predict_launch(h100(), w, CacheCounts{}, shape).each[static_cast<size_t>(TimeBound::Chain)];
    };
    CHECK(chain(4, true) == Approx(chain(6, true)).epsilon(1e-9));
    CHECK(chain(4, true) > chain(3, true) * 1.5);
    CHECK(chain(4, false) < chain(6, false) * 0.75);
}

TEST_CASE("time: a tile loaded into shared memory in rounds, a copy with stages at once", "[time]") {
    // One LOAD of a 64 × 64 fp32 tile into shared memory a block, 132 blocks of 4 warps, every
    // sector an L2 hit: 128 threads load it 4 elements each at a time, in 8 rounds, each waiting
    // the L2's 272 cycles; its 16,384 bytes move at one SM's share of 7902 GB/s; the block then
    // meets at a barrier (21.3 cycles) before anything reads the tile.
    LaunchWork w;
    w.by_pc.resize(1);
    InstructionWork& load = w.by_pc[0];
    load.op = static_cast<int>(Op::LOAD);
    load.in_grid = true;
    load.executions = count(w, Op::LOAD) = 132;
    load.work = units(w, Op::LOAD) = 4096 * 132;
    load.shared_elements = 4096 * 132;
    load.writes_shared = true;
    CacheCounts c;
    c.total.read_hits = 512 * 132;
    LaunchShape shape;
    shape.blocks = 132;
    const double bytes = 16384 / (7902e9 / 132);
    LaunchTime t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Chain)] == Approx(bytes + (8 * 272 + 21.3) / 1.978e9).epsilon(1e-6));
    CHECK(t.chain[static_cast<size_t>(ChainPart::Memory)] == Approx(bytes + (8 * 272 + 21.3) / 1.978e9).epsilon(1e-6));
    // 8 warps: 4 rounds.
    shape.warps = 8;
    CHECK(predict_launch(h100(), w, c, shape).each[static_cast<size_t>(TimeBound::Chain)] ==
          Approx(bytes + (4 * 272 + 21.3) / 1.978e9).epsilon(1e-6));
    // An asynchronous copy (a tile with stages): every round in flight at once, one wait.
    load.async = true;
    t = predict_launch(h100(), w, c, shape);
    CHECK(t.chain[static_cast<size_t>(ChainPart::Copies)] == Approx(bytes + (272 + 21.3) / 1.978e9).epsilon(1e-6));
    CHECK(t.chain[static_cast<size_t>(ChainPart::Memory)] == 0);
}

TEST_CASE("time: with products on the CUDA cores, tiles in shared memory are fp32", "[time][cost]") {
    // v0's schedule in fp16 and in fp32 alike: Q, K, V, S, P̃ (64 × 64) and four row vectors
    // of 64, fp32, in shared memory: 5 · 16,384 + 4 · 256 = 82,944 bytes.
    for (const char* dtype : {"fp16", "fp32"}) {
        INFO(dtype);
        const CliResult r = run_cli({"cost", "programs/attention/schedules/fa2_forward.toy", "--set", "n=4096", "--set", "d=64", "--set", "Br=64",
                                     "--set", "Bc=64", "--machine", "h100", "--dtype", dtype});
        REQUIRE(r.code == 0);
        CHECK(r.out.find("a block of 256 threads, 82944 bytes of shared memory") != std::string::npos);
    }
}

TEST_CASE("time: a recorded H100 run read back, its prediction against its median", "[time][traces]") {
    // fa2_v3_mma's schedule, n = 4096, d = 64, Br = 128, Bc = 64, 16 heads, fp16: 512 blocks, 2
    // resident per SM, so the busiest SM runs 4, 2 at a time; the chain bound decides.
    CliResult r = run_cli({"diff", "programs/attention/schedules/fa2_v3_mma.toy", "--gpu", "traces/gpu/fa2_v3_mma.n4096.fp16.cold.json"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find("predicted time on machine h100 (the slowest bound plus the launch's own 3.01 µs), against the measured median\n") !=
          std::string::npos);
    CHECK(r.out.find("fa2_v3_mma          0.245 ms         0.249 ms  -1.5%  chain 0.242 ms  matrix 0.110 ms\n") != std::string::npos);
    // A program whose launch is a grid of scalar code says why it has no time (a thread an
    // iteration on the GPU), and so does one whose launch runs serial loops beside its parallel
    // loop (the online softmax's first pass beside its normalize pass, where the kernel spreads
    // both over its threads).
    r = run_cli({"diff", "programs/matmul_outer.toy", "--gpu", "traces/gpu/matmul_outer.cold.json"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find("no predicted time: launch matmul_outer of the program runs scalar code in its parallel loop: a GPU runs each "
                     "iteration as a thread, 32 to a warp, and the model times an iteration as a block of a tile program, which would be "
                     "hundreds of times too slow\n") != std::string::npos);
    r = run_cli({"diff", "programs/p5_online_softmax.toy", "--gpu", "traces/gpu/softmax_online.cold.json"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find("no predicted time: launch softmax_online of the program runs serial loops beside its parallel loop: their time on "
                     "the GPU depends on threads it does not describe\n") != std::string::npos);
}

TEST_CASE("schedule lines: warps, where a tile lives, its stages, and their errors", "[time][language]") {
    // The toy machine ignores them: fa2_v3_mma's schedule counts what fa2.toy counts.
    CliResult plain = run_cli({"run", "programs/attention/fa2.toy", "--set", "n=33", "--set", "d=8", "--set", "Br=8", "--set", "Bc=5", "--format", "json"});
    CliResult scheduled = run_cli({"run", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=33", "--set", "d=8", "--set", "Br=8", "--set", "Bc=5",
                                   "--format", "json"});
    REQUIRE(plain.code == 0);
    REQUIRE(scheduled.code == 0);
    auto counters = [](const std::string& json) { return json.substr(json.find("\"counters\"")); };
    CHECK(counters(plain.out) == counters(scheduled.out));

    const std::vector<std::pair<std::string, std::string>> bad = {
        {"registers 8\nwarps 0\n", "<stdin>:2:7: error: a worker has 1 to 32 warps, not 0\n"},
        {"registers 8\nwarps 4\nwarps 2\n", "<stdin>:3:1: error: the number of warps is already declared\n"},
        {"registers 8\ntile a[2][2] in cache\n", "<stdin>:2:17: error: a tile lives in registers or shared (memory), not 'cache'\n"},
        {"registers 8\ntile a[2][2] in registers stages 2\n",
         "<stdin>:2:34: error: asynchronous copies (stages) fill shared memory: the tile is in registers\n"},
        {"registers 8\ntile a[2][2] in shared stages 9\n", "<stdin>:2:31: error: a tile has 1 to 8 stages, not 9\n"},
        {"registers 8\nproducts tpu\n", "<stdin>:2:10: error: products run on cuda (cores), mma, mma_tf32 or wgmma, not 'tpu'\n"},
        {"registers 8\nproducts mma\nproducts wgmma\n", "<stdin>:3:1: error: the unit products run on is already declared\n"},
        {"registers 8\nproducts cuda grid\n",
         "<stdin>:2:15: error: a lane's patches are of its warp's rows (warp) or of the block's result (block), not 'grid'\n"},
        {"registers 8\nproducts mma block\n", "<stdin>:2:14: error: warp or block says how the CUDA cores' lanes split a product, not mma's\n"},
        {"registers 8\nproducts cuda block warp\n", "<stdin>:2:21: error: expected end of line, got 'warp'\n"},
    };
    for (const auto& [text, message] : bad) {
        INFO(text);
        CliResult r = run_cli_input({"run", "-"}, text);
        CHECK(r.code == 2);
        CHECK(r.err.substr(0, r.err.find('\n') + 1) == message);
    }
}

TEST_CASE("time: the schedules' shared-memory bytes are what Nsight counted on the H100", "[time][traces]") {
    // fa2_v2_mma and fa2_v3_mma at n = 4096, d = 64, Br = 128, Bc = 64, 16 heads, fp16: 512
    // blocks of 64 K/V tiles; each tile's K and V (64 × 64, 2 bytes) read by each warp from shared
    // memory (8 warps in v2, 4 in v3), everything else in registers, the copies asynchronous:
    // 512 · 64 · warps · 2 · 4096 · 2 bytes. Nsight's shared-load wavefronts (128 bytes each,
    // gpu/results/ncu_versions_h100.md): 33,777,232 and 16,923,974.
    const std::vector<std::tuple<std::string, double, double>> runs = {{"fa2_v2_mma", 512.0 * 64 * 8 * 2 * 4096 * 2, 33'777'232.0 * 128},
                                                                      {"fa2_v3_mma", 512.0 * 64 * 4 * 2 * 4096 * 2, 16'923'974.0 * 128}};
    for (const auto& [kernel, bytes, nsight] : runs) {
        INFO(kernel);
        CliResult r = run_cli({"diff", "programs/attention/schedules/" + kernel + ".toy", "--gpu", "traces/gpu/" + kernel + ".n4096.fp16.cold.json",
                               "--format", "json"});
        REQUIRE(r.code == 0);
        const auto j = nlohmann::json::parse(r.out);
        const double predicted = j.at("stages").at(0).at("predicted_time").at("shared_bytes").get<double>();
        CHECK(predicted == bytes);
        CHECK(std::abs(predicted - nsight) < 0.01 * nsight);
    }
}

TEST_CASE("cost --machine: occupancy from the schedule, and each launch's predicted time", "[time][cost]") {
    // v3's schedule at n = 4096, fp16: 4 warps (128 threads); K and V in shared memory, 2 stages
    // of 64 × 64 × 2 bytes each (32,768 bytes); Q, P̃ (fp16) and S, O (fp32 sums) and the row
    // statistics in registers: 99,328 bytes over 128 threads, 194 registers, + 32 = 226; 65,536
    // registers hold 2 such blocks. Its launch as the diff of the recorded run predicts it.
    CliResult r = run_cli({"cost", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=4096", "--set", "d=64", "--set", "Br=128", "--set",
                           "Bc=64", "--machine", "h100", "--heads", "16", "--dtype", "fp16"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find("predicted time on machine h100 (16 heads; products on tensor cores (mma.sync, fp16)): a block of 128 threads, 32768 bytes of "
                     "shared memory, 226 registers a thread; 2 resident an SM (registers stop one more)\n") != std::string::npos);
    CHECK(r.out.find("line 69          0.245 ms    280.0  chain 0.242 ms  matrix 0.110 ms\n") != std::string::npos);
    // The chain's parts: v3's copies of K and V (2 stages) overlap the products, EXP and row work.
    CHECK(r.out.find("the chain on the busiest SM, by part (copies overlap the rest):\n"
                     "  line 69: memory 0.003 ms, copies 0.114 ms, products 0.110 ms, special 0.076 ms, alu 0.038 ms, waits 0.016 ms\n") !=
          std::string::npos);
    // In fp32 its registers do not fit: said, not predicted.
    r = run_cli({"cost", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=4096", "--set", "d=64", "--set", "Br=128", "--set", "Bc=64",
                 "--machine", "h100"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/attention/schedules/fa2_v3_mma.toy: error: a block's tiles in registers need 292 registers a thread over 128 threads "
                   "(warps 4); a thread has at most 255\n");
    // The H200: the same chip's figures but its memory (4487 GB/s against 3072) and clocks.
    const std::vector<std::string> v3 = {"cost", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=4096", "--set", "d=64", "--set", "Br=128",
                                         "--set", "Bc=64", "--dtype", "fp16", "--heads", "16", "--format", "json"};
    auto on = [&](const char* machine) {
        std::vector<std::string> args = v3;
        args.insert(args.end(), {"--machine", machine});
        const CliResult c = run_cli(args);
        REQUIRE(c.code == 0);
        return nlohmann::json::parse(c.out).at("predicted_time");
    };
    const auto on_h100 = on("h100"), on_h200 = on("h200");
    CHECK(on_h200.at("machine") == "h200");
    CHECK(on_h200.at("seconds").get<double>() > 0);
    CHECK(on_h200.at("seconds").get<double>() <= on_h100.at("seconds").get<double>());
    CHECK(gpu::cache_preset_of("NVIDIA H200") == "h200");
    CHECK(gpu::cache_preset_of("NVIDIA H100 80GB HBM3") == "h100");
    r = run_cli({"cost", "programs/attention/fa2.toy", "--machine", "a100"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/attention/fa2.toy: error: --machine 'a100': no such machine (the machines: h100, h200; without it, the seeds' machine)\n");
    r = run_cli({"cost", "programs/attention/fa2.toy", "--machine", "h100", "--workers", "4"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/attention/fa2.toy: error: --machine: a machine runs each top-level loop as a launch from a cold L2, on the blocks its "
                   "SMs hold; leave out --workers\n");
}

TEST_CASE("run --machine: the run, then each launch's predicted time as cost --machine gives it", "[time][cli]") {
    const std::vector<std::string> program = {"programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=1024", "--set", "d=64", "--set", "Br=128",
                                              "--set", "Bc=64", "--machine", "h100", "--dtype", "fp16"};
    auto with = [&](std::vector<std::string> head) {
        head.insert(head.end(), program.begin(), program.end());
        return run_cli(head);
    };
    const CliResult run = with({"run"}), cost = with({"cost"});
    REQUIRE(run.code == 0);
    REQUIRE(cost.code == 0);
    const std::string section = "predicted time on machine h100 (1 head; products on tensor cores (mma.sync, fp16))";
    REQUIRE(run.out.find(section) != std::string::npos);
    CHECK(run.out.substr(run.out.find(section)) == cost.out.substr(cost.out.find(section)));
    const CliResult json = with({"run", "--format", "json"});
    REQUIRE(json.code == 0);
    const auto j = nlohmann::json::parse(json.out);
    CHECK(j.at("predicted_time").at("launches").size() == 1);
    CHECK(j.contains("counters"));
    const CliResult bad = run_cli({"run", "programs/p1_c00.toy", "--machine", "a100"});
    CHECK(bad.code == 2);
    CHECK(bad.err == "programs/p1_c00.toy: error: --machine 'a100': no such machine (the machines: h100, h200; without it, the seeds' machine)\n");
}

TEST_CASE("sweep --machine: each run's predicted time after the table, and --plot-y time draws it", "[time][cli][plot]") {
    const std::string svg = (std::filesystem::temp_directory_path() / "toysim_sweep_time.svg").string();
    const CliResult r = run_cli({"sweep", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=1024,4096", "--set", "d=64", "--set", "Br=128",
                                 "--set", "Bc=64", "--machine", "h100", "--dtype", "fp16", "--plot", svg, "--plot-y", "time"});
    REQUIRE(r.code == 0);
    // Each point as cost --machine predicts it at one head.
    const CliResult one = run_cli({"cost", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=4096", "--set", "d=64", "--set", "Br=128",
                                   "--set", "Bc=64", "--machine", "h100", "--dtype", "fp16", "--format", "json"});
    REQUIRE(one.code == 0);
    const double seconds = nlohmann::json::parse(one.out).at("predicted_time").at("seconds").get<double>();
    CHECK(r.out.find(fmt::format("predicted time on machine h100 (1 head; every timed launch, summed):\n  n=1024 d=64 Br=128 Bc=64: ")) !=
          std::string::npos);
    CHECK(r.out.find(fmt::format("  n=4096 d=64 Br=128 Bc=64: {:.3f} ms\n", seconds * 1e3)) != std::string::npos);
    std::ifstream drawn(svg);
    const std::string text((std::istreambuf_iterator<char>(drawn)), std::istreambuf_iterator<char>());
    CHECK(text.find("predicted time on h100 (ms)") != std::string::npos);
    std::filesystem::remove(svg);
    // JSON: each run's object with its "predicted_time"; CSV: a row of seconds.
    const std::vector<std::string> sweep = {"sweep", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=1024,4096", "--set", "d=64",
                                            "--set", "Br=128", "--set", "Bc=64", "--machine", "h100", "--dtype", "fp16", "--format"};
    auto with_format = [&](const char* format) {
        std::vector<std::string> args = sweep;
        args.push_back(format);
        return run_cli(args);
    };
    const CliResult json = with_format("json");
    REQUIRE(json.code == 0);
    CHECK(nlohmann::json::parse(json.out).at(1).at("predicted_time").at("seconds").get<double>() == Approx(seconds));
    const CliResult csv = with_format("csv");
    REQUIRE(csv.code == 0);
    CHECK(csv.out.find(fmt::format("\npredicted_seconds_h100,")) != std::string::npos);
    // A program without a parallel loop has no time to predict: said, not 0.
    const CliResult serial = run_cli({"sweep", "programs/attention/welford_variance.toy", "--set", "n=8,16", "--machine", "h100"});
    REQUIRE(serial.code == 0);
    CHECK(serial.out.find("  n=8: none (launch 1 has no parallel loop: its time on the GPU depends on threads it does not describe)\n") !=
          std::string::npos);
    // Nor does a grid of scalar code (a thread an iteration on a GPU, where the model times a
    // block an iteration): matmul_inner at n = 1024 was predicted 291 ms against 0.428 measured.
    const CliResult scalar = run_cli({"sweep", "programs/matmul_inner.toy", "--set", "n=8,16", "--machine", "h100"});
    REQUIRE(scalar.code == 0);
    CHECK(scalar.out.find("  n=8: none (launch 1 runs scalar code in its parallel loop: a GPU runs each iteration as a thread, 32 to a warp, "
                          "and the model times an iteration as a block of a tile program, which would be hundreds of times too slow)\n") !=
          std::string::npos);
    // One whose serial launch runs beside a timed one: the time is the timed one's, and says so.
    const std::string mixed_path = (std::filesystem::temp_directory_path() / "toysim_test_mixed_launches.toy").string();
    std::ofstream(mixed_path) << "param n = 64\nregisters 258\ntile t[16][16]\ninput x[n][16]\noutput y[n][16]\nLOAD x[0][0], R0\n"
                                 "for k in 1..n {\n    LOAD x[k][0], R1\n    ADD R0, R1, R0\n}\nparallel for i in 0..n/16 {\n"
                                 "    LOAD x[i*16..i*16+16][0..16], t\n    STORE t, y[i*16..i*16+16][0..16]\n}\n";
    const CliResult mixed = run_cli({"sweep", mixed_path, "--set", "n=64,128", "--machine", "h100"});
    std::filesystem::remove(mixed_path);
    REQUIRE(mixed.code == 0);
    CHECK(mixed.out.find(" ms (1 of 2 launches: the others have no predicted time)\n") != std::string::npos);
    const CliResult bad = run_cli({"sweep", "programs/p1_c00.toy", "--set", "n=2,4", "--plot", svg, "--plot-y", "time"});
    CHECK(bad.code == 2);
    CHECK(bad.err == "toysim: error: --plot-y time draws the predicted time: give --machine NAME too\n");
}

TEST_CASE("schedules: each program's products line is its kernel's", "[time][gpu]") {
    // programs/attention/schedules/KERNEL.toy says `products` as the catalog row says where
    // the kernel's products run (gpu/kernels/catalog.cpp).
    int checked = 0;
    for (const auto& entry : std::filesystem::directory_iterator(std::string(TOYSIM_SOURCE_DIR) + "/programs/attention/schedules")) {
        const std::string kernel = entry.path().stem().string();
        INFO(kernel);
        const gpu::KernelSpec* spec = gpu::find_kernel(kernel);
        REQUIRE(spec != nullptr);
        const auto tree = std::make_shared<const ast::Program>(parse(SourceFile::read(entry.path().string())));
        REQUIRE(tree->gpu_kernel);
        CHECK(tree->gpu_kernel->name == kernel);
        const Program p = compile(tree, {});
        const char* expected = spec->products == gpu::Products::Wgmma ? "wgmma" : spec->products == gpu::Products::WarpMma ? "mma" : "cuda";
        CHECK(p.products == expected);
        ++checked;
    }
    CHECK(checked == 12);
}

TEST_CASE("time: products cuda block spreads a product's patches over the block's threads", "[time]") {
    // fa2_backward's gradient pass (attention_backward.cu's block_product): at Br = 16, Bc = 64,
    // d = 64 S = Q·K_jᵀ is 4 × 16 patches, lanes of 2 warps, none idle or padded; dVᵀ's 16 × 16
    // patches fill all 8 warps; the 2-warp products take longer than their instructions at four
    // a clock, as their warps wait on shared memory with no other warp on their schedulers.
    auto products = [](const char* layout) {
        std::string text = SourceFile::read(std::string(TOYSIM_SOURCE_DIR) + "/programs/attention/schedules/fa2_backward.toy")->text;
        const std::size_t line = text.find("\nproducts cuda block\n");  // the line, not a comment's words
        REQUIRE(line != std::string::npos);
        text.replace(line + 1, 19, layout);
        const Program p = on_machine_cache(build(text, {{"n", 1024}, {"d", 64}, {"Br", 16}, {"Bc", 64}}), h100());
        const ProgramTime t = predict_program(p, h100(), 16);
        std::vector<std::pair<double, double>> out;  // lane factor, warps with patches
        for (const InstructionWork& i : t.counted.launch_work.back().by_pc)
            if (i.executions > 0 && kOpShape[static_cast<size_t>(i.op)] == OpShape::Product)
                out.emplace_back(i.lane_work / static_cast<double>(i.work), i.active_warps / static_cast<double>(i.executions));
        return std::make_pair(out, t.launches.back().seconds);
    };
    const auto [block, block_seconds] = products("products cuda block");
    const auto [warp, warp_seconds] = products("products cuda warp");
    // In the program's order: S (16 × 64), dV += Pᵀ·dO (64 × 64), dP (16 × 64), dS·K (16 × 64),
    // dK += dSᵀ·Q (64 × 64).
    CHECK(block == std::vector<std::pair<double, double>>{{1, 2}, {1, 8}, {1, 2}, {1, 2}, {1, 8}});
    // A warp's rows instead: 2 rows a warp, each patch half padding, 16 of 32 lanes (4× over).
    CHECK(warp == std::vector<std::pair<double, double>>{{4, 8}, {1, 8}, {4, 8}, {4, 8}, {1, 8}});
    CHECK(block_seconds < warp_seconds);
}

TEST_CASE("time: the issue bound, four warp instructions a clock", "[time]") {
    // 16,896,000 element-wise lane operations over 132 blocks: 528,000 warp instructions, 4,000
    // on each SM, 1,000 clocks at four a clock (1978 MHz): 505.6 ns. The CUDA cores' own bound
    // (125.05 lanes a clock) is longer: 128,000 lanes an SM, 1,023.6 clocks.
    LaunchWork w;
    units(w, Op::ADD) = 16'896'000;
    count(w, Op::ADD) = 132;
    CacheCounts c;
    LaunchShape shape;
    shape.blocks = 132;
    const LaunchTime t = predict_launch(h100(), w, c, shape);
    CHECK(t.each[static_cast<size_t>(TimeBound::Issue)] == Approx(1000 / 1.978e9).epsilon(1e-9));
    CHECK(t.each[static_cast<size_t>(TimeBound::Alu)] == Approx(128'000 / 125.05 / 1.978e9).epsilon(1e-9));
    CHECK(t.bound == TimeBound::Alu);
}

TEST_CASE("time: a CUDA-core product's idle lanes issue too where a warp's rows make fewer than 32 patches", "[time]") {
    // fa2_forward's schedule splits a tile's rows over 8 warps, a lane a 4×4 patch (the course's
    // kernels). At Br = Bc = 16 a warp has 2 rows: S = Q·Kᵀ is 1 × 4 patches a warp, 4 of 32
    // lanes, each patch half rows past the warp's (its multiply-adds issue 16 times over), P̃·V
    // 1 × 16 (4 times over); at 32, 4 rows: 1 × 8 patches (4 times over) and 1 × 16 (twice); at
    // 64, 8 rows and 2 × 16 patches fill every lane.
    auto factors = [](std::int64_t tile) {
        const Program p = on_machine_cache(
            build_file("programs/attention/schedules/fa2_forward.toy", {{"n", 256}, {"d", 64}, {"Br", tile}, {"Bc", tile}}), h100());
        const ProgramTime t = predict_program(p, h100(), 1);
        std::vector<double> out;
        for (const InstructionWork& i : t.counted.launch_work.at(0).by_pc)
            if (i.executions > 0 && kOpShape[static_cast<size_t>(i.op)] == OpShape::Product)
                out.push_back(i.lane_work / static_cast<double>(i.work));
        return out;
    };
    CHECK(factors(16) == std::vector<double>{16, 4});
    CHECK(factors(32) == std::vector<double>{4, 2});
    CHECK(factors(64) == std::vector<double>{1, 1});
    // And the launch takes longer for it: 4.44 against 3.01 ms at n = 4096, 16 heads, Br = Bc = 32,
    // where the H100 measured 8.65 (toysim tune's check, docs/gpu.md).
}
