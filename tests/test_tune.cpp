// tune --schedule: the fewest cycles of the seeds' 2×2 matmul with 3 to 6 registers, each
// proven minimal, against the seeds' own figures (seed 004: 25 cycles with 3 registers, 22 for
// the outer product with 6, 20 for the quiz as the course answers it).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <tuple>
#include <nlohmann/json.hpp>

#include "sim/analysis/schedule_search.h"
#include "gpu/kernels/kernels.h"
#include "sim/app/tune.h"
#include "sim/app/tune_gpu.h"
#include "gpu/runtime/diff.h"
#include "gpu/runtime/run.h"
#include "isa/machine.h"
#include "sim/timing/predict.h"
#include "tests/support.h"
#include "sim/front/parser.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

ScheduleSearch shortest(const std::string& path, int registers) {
    return search_schedule(schedule_problem(build_file(path)), registers, 5'000'000);
}

// How tune --kernel KERNEL --dtype fp16 --heads HEADS runs its points.
gpu::GpuRunOptions fp16_options(const std::string& kernel, std::int64_t heads) {
    gpu::GpuRunOptions options;
    options.kernel = kernel;
    options.heads = heads;
    options.dtype = gpu::DType::F16;
    return options;
}

// The prediction of a generated run with one fact of its first kernel changed by `change`: what
// the model makes of that fact alone.
template <typename Change>
ProgramTime predict_changed(const Program& p, const MachineSpec& machine, const gpu::GpuRunOptions& options, gpu::KernelChoice choice, Change change) {
    auto changed = std::make_shared<gpu::GeneratedProgram>(*choice.generated);
    change(changed->kernels.at(0));
    choice.generated = changed;
    return gpu::predict_run(p, machine, options, choice);
}

int count(const ScheduleSearch& s, Op op) {
    return static_cast<int>(std::count_if(s.steps.begin(), s.steps.end(), [&](const ScheduleStep& step) { return step.op == op; }));
}

}  // namespace

TEST_CASE("tune --schedule: what a straight-line program computes, read from it", "[tune]") {
    const ScheduleProblem p = schedule_problem(build_file("programs/p2_matmul_inner_3reg.toy"));
    REQUIRE(p.outputs.size() == 4);
    CHECK(p.elements.size() == 8);
    for (const auto& o : p.outputs) CHECK(o.terms.size() == 2);
    // c00 = a00·b00 + a01·b10, stored first; a at addresses 0..3, b at 4..7.
    CHECK(p.elements[static_cast<size_t>(p.outputs[0].terms[0][0])] == 0);
    CHECK(p.elements[static_cast<size_t>(p.outputs[0].terms[0][1])] == 4);
    CHECK(p.elements[static_cast<size_t>(p.outputs[0].terms[1][0])] == 1);
    CHECK(p.elements[static_cast<size_t>(p.outputs[0].terms[1][1])] == 6);
}

TEST_CASE("tune --schedule: the 2x2 matmul's fewest cycles with 3 to 6 registers", "[tune]") {
    // 3 registers: the seed's 25 (Problem 2) is the minimum, proven by ruling out 20 to 24.
    ScheduleSearch s = shortest("programs/p2_matmul_inner_3reg.toy", 3);
    REQUIRE(s.found);
    CHECK(s.steps.size() == 25);
    CHECK(count(s, Op::LOAD) == 13);
    CHECK(s.lower_bound == 20);
    CHECK(s.bound_reached == 25);
    // 4 and 5 registers: 22 and 21, between the seed's two machines.
    CHECK(shortest("programs/p2_matmul_inner_3reg.toy", 4).steps.size() == 22);
    CHECK(shortest("programs/p2_matmul_inner_3reg.toy", 5).steps.size() == 21);
    // 6 registers: 20, the lower bound (8 products, 4 stores, 8 elements loaded once), for the
    // quiz's inner product and for Problem 3's outer product, whose trace takes 22.
    for (const char* path : {"programs/quiz_matmul_inner_6reg.toy", "programs/p3_matmul_outer_6reg.toy"}) {
        INFO(path);
        s = shortest(path, 6);
        REQUIRE(s.found);
        CHECK(s.steps.size() == 20);
        CHECK(s.lower_bound == 20);
        CHECK(count(s, Op::LOAD) == 8);
    }
}

TEST_CASE("tune --schedule: the program found runs, its checks and expects hold, and its trace follows", "[tune][cli]") {
    CliResult r = run_cli({"tune", "--schedule", "programs/p2_matmul_inner_3reg.toy"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto lines = split_lines(r.out);
    REQUIRE(lines.size() > 40);
    CHECK(lines[0] == "programs/p2_matmul_inner_3reg.toy with 3 registers: 25 cycles (13 LOAD, 4 MAC_Z, 4 MAC, 4 STORE); as written, 25 cycles");
    CHECK(lines[1].rfind("no program is shorter: every program of 20 to 24 instructions was searched (", 0) == 0);
    CHECK(r.out.find("expect cycles = 25\n") != std::string::npos);
    CHECK(r.out.find("Step  Instruction") != std::string::npos);
    CHECK(r.out.find("25 cycles, 25 instructions (13 LOAD, 4 STORE, 4 MAC_Z, 4 MAC); DRAM: 13 reads, 4 writes; 3 registers used") != std::string::npos);

    r = run_cli({"tune", "--schedule", "programs/p3_matmul_outer_6reg.toy", "--format", "json"});
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("cycles") == 20);
    CHECK(j.at("as_written") == 22);
    CHECK(j.at("lower_bound") == 20);
    CHECK(j.at("counts").at("LOAD") == 8);
    CHECK(j.at("proof") == "no program is shorter: 8 products, 4 stores and 8 elements to load at least once");
    // The source it prints is a program of its own: it runs, and its expects hold.
    const Program again = build(j.at("source").get<std::string>());
    CHECK(again.scalar_registers == 6);
}

TEST_CASE("tune --schedule refuses what it cannot search, by name", "[tune][errors]") {
    CliResult r = run_cli({"tune", "--schedule", "programs/p2_matmul_inner_3reg.toy", "--registers", "2"});
    CHECK(r.code == 2);
    CHECK(r.err.find("error: tune --schedule: 2 registers cannot compute these sums: a product's operands and a sum being built take 3") !=
          std::string::npos);
    r = run_cli({"tune", "--schedule", "programs/matmul_inner.toy"});
    CHECK(r.code == 2);
    CHECK(r.err.find("error: tune --schedule searches straight-line programs: this is a loop") != std::string::npos);
    r = run_cli({"tune", "--schedule", "programs/p4_softmax_3pass.toy", "--set", "n=3"});
    CHECK(r.code == 2);
    CHECK(r.err.find("error: tune --schedule searches") != std::string::npos);
    // A product of a sum is not a sum of products of loaded values.
    r = run_cli_input({"tune", "--schedule", "-"},
                      "registers 3\ninput a[2]\noutput c[1]\nLOAD a[0], R0\nLOAD a[1], R1\nMAC_Z R0, R1, R2\nMAC_Z R2, R1, R0\nSTORE R0, c[0]\n");
    CHECK(r.code == 2);
    CHECK(r.err.find("<stdin>:7:1: error: tune --schedule searches sums of products of loaded values: R2 holds a sum here") != std::string::npos);
}

TEST_CASE("tune --vary: the space ranked by the model, each point as cost --machine predicts it", "[tune][time]") {
    const std::vector<std::string> args = {"tune",  "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=512", "--set", "d=64",
                                           "--vary", "Br=64,128", "--vary", "Bc=64,128", "--format", "json"};
    CliResult r = run_cli(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("points") == 4);
    CHECK(j.at("objective") == "time");
    // Br = 128 keeps Q, O, S and P̃ of 128 rows in the registers of 4 warps: in fp32, past 255 a thread.
    REQUIRE(j.at("dropped").size() == 2);
    CHECK(j.at("dropped")[0].at("params") == nlohmann::json{{"Br", 128}, {"Bc", 64}});
    CHECK(j.at("dropped")[0].at("why") ==
          "a block's tiles in registers need 292 registers a thread over 128 threads (warps 4); a thread has at most 255");
    const auto& ranked = j.at("ranked");
    REQUIRE(ranked.size() == 2);
    CHECK(ranked[0].at("seconds").get<double>() <= ranked[1].at("seconds").get<double>());
    // Each point's time is cost --machine's at its parameters.
    for (const auto& point : ranked) {
        const auto params = point.at("params");
        CliResult c = run_cli({"cost", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=512", "--set", "d=64", "--set",
                               "Br=" + std::to_string(params.at("Br").get<int>()), "--set", "Bc=" + std::to_string(params.at("Bc").get<int>()),
                               "--machine", "h100", "--format", "json"});
        REQUIRE(c.code == 0);
        CHECK(nlohmann::json::parse(c.out).at("predicted_time").at("seconds").get<double>() == point.at("seconds").get<double>());
    }
    // By the toy machine's cycles, smaller tiles of Q first: Br = 8 does the fewest rescales.
    r = run_cli({"tune", "programs/attention/fa2.toy", "--set", "n=256", "--set", "d=16", "--vary", "Br=8,16,32", "--objective", "cycles",
                 "--format", "json"});
    REQUIRE(r.code == 0);
    const auto c = nlohmann::json::parse(r.out).at("ranked");
    REQUIRE(c.size() == 3);
    CHECK(c[0].at("cycles").get<std::uint64_t>() <= c[1].at("cycles").get<std::uint64_t>());
    CHECK(c[1].at("cycles").get<std::uint64_t>() <= c[2].at("cycles").get<std::uint64_t>());
}

TEST_CASE("tune refuses a space it cannot rank, by name", "[tune][errors]") {
    CliResult r = run_cli({"tune", "programs/attention/fa2.toy"});
    CHECK(r.code == 2);
    CHECK(r.err.find("error: tune: give --vary NAME=V1,V2,... (the space), or --schedule") != std::string::npos);
    r = run_cli({"tune", "--schedule", "programs/p1_c00.toy", "--vary", "n=1,2"});
    CHECK(r.code == 2);
    CHECK(r.err.find("give one") != std::string::npos);
    std::string many;
    for (int v = 1; v <= 101; ++v) {
        if (v > 1) many += ',';
        many += std::to_string(v);
    }
    r = run_cli({"tune", "programs/attention/fa2.toy", "--vary", "n=" + many, "--vary", "d=" + many});
    CHECK(r.code == 2);
    CHECK(r.err.find("error: tune: 10201 points; at most 10000 are ranked") != std::string::npos);
    // The command layer, not each front end, knows the element sizes (the browser's engine and
    // Python pass the name through).
    app::SpaceTuneRequest bad;
    bad.vary = {"Br=8,16"};
    bad.dtype = "fp64";
    auto tree = std::make_shared<const ast::Program>(parse(SourceFile::read(std::string(TOYSIM_SOURCE_DIR) + "/programs/attention/fa2.toy")));
    CHECK_THROWS_WITH(app::tune_space(tree, "fa2.toy", bad, Format::Table, app::Spelling::cli()), "tune: dtype 'fp64': fp32, fp16, bf16 or e4m3");
    // e4m3 ranks by bytes (1 an element) or cycles; the machines have no e4m3 product rate.
    bad.dtype = "e4m3";
    CHECK_THROWS_WITH(app::tune_space(tree, "fa2.toy", bad, Format::Table, app::Spelling::cli()),
                      "tune: the time model has no rate measured for e4m3 products: rank by --objective dram or cycles");
    bad.objective = "dram";
    bad.sets = {"n=256", "d=16", "Bc=8"};
    const std::string e4m3 = app::tune_space(tree, "fa2.toy", bad, Format::Json, app::Spelling::cli()).text;
    bad.dtype = "fp16";
    const std::string fp16 = app::tune_space(tree, "fa2.toy", bad, Format::Json, app::Spelling::cli()).text;
    CHECK(nlohmann::json::parse(e4m3)["ranked"][0]["dram_bytes"].get<double>() * 2 == nlohmann::json::parse(fp16)["ranked"][0]["dram_bytes"].get<double>());
}

TEST_CASE("tune --vary --plot: the objective against the first parameter, a curve per value of the others", "[tune][plot]") {
    const std::string file = (std::filesystem::temp_directory_path() / "toysim_tune_plot.svg").string();
    CliResult r = run_cli({"tune", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=512", "--set", "d=64", "--vary", "Bc=64,128", "--vary",
                           "Br=64,128", "--plot", file});
    INFO(r.err);
    REQUIRE(r.code == 0);
    const std::string svg = read_text(file);
    std::filesystem::remove(file);
    // Br = 128 is refused at both Bc (its registers, in fp32): its curve has no point, Br = 64's two.
    CHECK(svg.find("data-series=\"Br=64\" data-x=\"64\"") != std::string::npos);
    CHECK(svg.find("data-series=\"Br=64\" data-x=\"128\"") != std::string::npos);
    CHECK(svg.find("data-series=\"Br=128\" data-x=") == std::string::npos);
    r = run_cli({"tune", "--schedule", "programs/p1_c00.toy", "--plot", file});
    CHECK(r.code == 2);
    CHECK(r.err.find("error: tune: --plot draws a space (--vary); --schedule has none") != std::string::npos);
}

TEST_CASE("tune --kernel: each point as its kernel runs it and the points the kernel refuses dropped with its reason", "[tune][gpu]") {
    // The program of v3's schedule: fa2.toy's lines are fa2_forward's, and a version timed by them
    // is refused (below).
    CliResult r = run_cli({"tune", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=512", "--set", "d=64", "--vary", "Br=64,128", "--vary",
                           "Bc=32,64,128", "--dtype", "fp16", "--heads", "4", "--kernel", "fa2_v3_mma", "--format", "json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("kernel") == "kernel fa2_v3_mma");
    REQUIRE(j.at("ranked").size() == 2);  // Br = 128 with Bc = 32 or 64: the only tiles v3 has
    for (const auto& row : j.at("ranked")) CHECK(row.at("params").at("Br") == 128);
    REQUIRE(j.at("dropped").size() == 4);
    CHECK(j.at("dropped")[0].at("params") == nlohmann::json{{"Br", 64}, {"Bc", 32}});
    CHECK(j.at("dropped")[0].at("why") == "fa2_v3_mma takes Br = 128 (4 warps of 32 rows) and Bc = 32 or 64, not Br = 64, Bc = 32");
    // Generated CUDA: each launch's own block and shared memory, as `toysim diff` predicts a
    // generated run (the recorded fa2 run at n = 4096, 2 blocks an SM as measured: 2.617 ms, its
    // loads' conversions into fp32 tiles included).
    r = run_cli({"tune", "programs/attention/fa2.toy", "--set", "n=4096", "--set", "d=64", "--vary", "Br=64", "--vary", "Bc=64", "--dtype", "fp16",
                 "--heads", "16", "--kernel", "generated", "--format", "json"});
    REQUIRE(r.code == 0);
    j = nlohmann::json::parse(r.out);
    CHECK(j.at("kernel") == "CUDA generated from the program");
    CHECK(j.at("ranked")[0].at("seconds").get<double>() == Approx(2.617e-3).epsilon(0.0005));
    // fp32 on a kernel that runs in fp16 and bf16 only: every point dropped, each saying so.
    r = run_cli({"tune", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=512", "--set", "d=64", "--vary", "Br=128", "--vary", "Bc=32", "--kernel",
                 "fa2_v3_mma"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find("1 point dropped:\n  Br=128 Bc=32: kernel fa2_v3_mma runs on the tensor cores in fp16, bf16 only (--dtype)\n") != std::string::npos);
    // A version timed by the lines of the kernel it is a version of: fa2.toy's tiles and products
    // are fa2_forward's (they said 0.951 ms for a v3 launch the H100 ran in 0.249).
    r = run_cli({"tune", "programs/attention/fa2.toy", "--set", "n=512", "--set", "d=64", "--vary", "Br=128", "--vary", "Bc=64", "--dtype", "fp16",
                 "--kernel", "fa2_v3_mma"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find("1 point dropped:\n  Br=128 Bc=64: this program's schedule lines are fa2_forward's, not fa2_v3_mma's; "
                     "programs/attention/schedules/fa2_v3_mma.toy gives it\n") != std::string::npos);
    r = run_cli({"tune", "--schedule", "programs/p1_c00.toy", "--kernel", "generated"});
    CHECK(r.code == 2);
    CHECK(r.err.find("error: tune: --gpu and --kernel rank a space (--vary); --schedule searches the seeds' machine") != std::string::npos);
}

TEST_CASE("tune --gpu: the points that run and how the model's order is scored", "[tune][gpu]") {
    // The --top points, then --sample of the rest, the middle of equal slices of the ranking.
    CHECK(app::ranks_to_run(16, 3, 5) == std::vector<std::size_t>{0, 1, 2, 4, 6, 9, 12, 14});
    CHECK(app::ranks_to_run(16, 3, -1).size() == 16);
    CHECK(app::ranks_to_run(16, 3, 13).size() == 16);
    CHECK(app::ranks_to_run(2, 3, 5) == std::vector<std::size_t>{0, 1});
    CHECK(app::ranks_to_run(10, 1, 0) == std::vector<std::size_t>{0});
    // Spearman's rho: the fa2_forward tiles measured on the H100 (n = 4096, 16 heads, fp16), against
    // the same order (1), reversed (-1), and one swap of five (0.9); ties share their ranks.
    CHECK(app::spearman({1, 2, 3, 4}, {10, 20, 30, 40}) == Approx(1.0));
    CHECK(app::spearman({1, 2, 3, 4}, {4, 3, 2, 1}) == Approx(-1.0));
    CHECK(app::spearman({1, 2, 3, 4, 5}, {1, 2, 3, 5, 4}) == Approx(0.9));
    CHECK(app::spearman({1, 1, 2}, {1, 2, 3}) == Approx(0.8660254));
    CHECK(std::isnan(app::spearman({1, 2}, {1, 2})));
    CHECK(std::isnan(app::spearman({1, 1, 1}, {1, 2, 3})));
    // Without a GPU, --gpu says so once, before any point runs (with one, tests/gpu runs it).
    try {
        gpu::query_device();
        SUCCEED("a GPU is present: gpu/tools/tune_grid.sh runs tune --gpu there");
        return;
    } catch (const gpu::GpuError&) {
    }
    CliResult r = run_cli({"tune", "programs/attention/schedules/fa2_v3_mma.toy", "--set", "n=512", "--set", "d=64", "--vary", "Br=128", "--vary",
                           "Bc=32,64", "--dtype", "fp16", "--gpu"});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("toysim: error: ") == 0);
}

TEST_CASE("tune --kernel generated: serial code between grids is a launch of its own and runs once a head", "[tune][time]") {
    // flash_decoding: the splits' grid (S blocks a head), then the merge, serial code that the
    // generator runs as a kernel of one block a head. The merge is timed as that launch, not in
    // every block of the grid: more splits add blocks, not merges.
    const MachineSpec& h100 = *find_machine("h100");
    const gpu::GpuRunOptions options = fp16_options("generated", 64);
    auto predicted = [&](std::int64_t s) {
        const Program p = build_file("programs/attention/flash_decoding.toy", {{"n", 4096}, {"d", 64}, {"S", s}, {"Bc", 64}});
        return gpu::predict_run(p, h100, options, gpu::choose_kernel(p, options));
    };
    const ProgramTime s8 = predicted(8), s64 = predicted(64);
    REQUIRE(s8.launches.size() == 2);
    CHECK(s8.launches[0].busiest_sm_blocks == 4);   // 8 × 64 blocks on 132 SMs
    CHECK(s8.launches[1].busiest_sm_blocks == 1);   // the merge: 64 blocks, one a head
    CHECK(s64.launches[1].busiest_sm_blocks == 1);
    // The merge's own work grows with S (S partial rows), but it is one block a head's.
    CHECK(s64.launches[1].seconds < s64.launches[0].seconds);
    CHECK(s8.seconds == Approx(s8.launches[0].seconds + s8.launches[1].seconds));
}

TEST_CASE("tune --kernel: a catalog kernel's blocks an SM from its own launch plan", "[tune][time]") {
    const MachineSpec& h100 = *find_machine("h100");
    const Program causal = build_file("programs/attention/schedules/fa2_causal.toy", {{"n", 4096}, {"d", 64}, {"B", 64}});
    // Launch bounds (256, 3): ptxas's budget is 65536 / (3 · 256) = 85, down to 80, and 3 blocks
    // fit (the H100's occupancy calculator said 3 at B = 16, 32 and 64: gpu/results/tune_grid_h100.md).
    Occupancy o = kernel_occupancy({256, 50'000, 3}, causal, h100, 2);
    CHECK(o.registers_per_thread == 80);
    CHECK(o.resident == 3);
    CHECK(o.limit == "registers");
    // Shared memory decides where it is the scarcer: 233472 / 100000 = 2.
    o = kernel_occupancy({256, 100'000, 3}, causal, h100, 2);
    CHECK(o.resident == 2);
    CHECK(o.limit == "shared memory");
    // No launch bounds' minimum: the schedule's estimate of its registers (O's 64 × 64 fp32 over
    // 256 threads: 16, + 32), and never an error past 255 (the kernel spills instead).
    o = kernel_occupancy({256, 0, 0}, causal, h100, 2);
    CHECK(o.registers_per_thread == 48);
    CHECK(o.resident == 5);
    o = kernel_occupancy({32, 0, 0}, build_file("programs/attention/schedules/fa2_v3_mma.toy", {{"n", 512}, {"d", 128}, {"Br", 128}, {"Bc", 64}}), h100, 2);
    CHECK(o.registers_per_thread == 255);
    CHECK(o.resident == 8);

    // The launch plan, read from the CUDA library without a device.
    const gpu::GpuRunOptions options = fp16_options("fa2_causal", 16);
    const gpu::KernelChoice choice = gpu::choose_kernel(causal, options);
    gpu::LaunchPlan plan;
    plan.kernel = choice.kernel;
    plan.params = choice.launch_params;
    plan.heads = 16;
    plan.dtype = gpu::DType::F16;
    const auto stages = gpu::plan_stages(plan, 232448);
    if (!gpu::built_with_cuda()) {
        CHECK_FALSE(stages);
        return;
    }
    REQUIRE(stages);
    REQUIRE(stages->size() == 1);
    // Q, K, Vᵀ and S (P̃ written over it), 64 rows of 64 + 4 floats (padded against bank
    // conflicts), and m, ℓ and the scale: 4 · 17408 + 3 · 256.
    CHECK(stages->front().shared_bytes == 70400);
    CHECK(stages->front().threads == 256);
    CHECK(stages->front().min_blocks == 3);
    // The schedule keeps P apart from S (81 KB: 2 blocks); the kernel writes P over S: 3.
    CHECK(occupancy(causal, h100, 2).resident == 2);
    const ProgramTime t = gpu::predict_run(causal, h100, options, choice);
    CHECK(t.occupancy.resident == 3);
    // A tile the kernel refuses is the point's limit, in the kernel's words.
    const Program big = build_file("programs/attention/schedules/fa2_causal.toy", {{"n", 4096}, {"d", 128}, {"B", 128}});
    CHECK_THROWS_WITH(gpu::predict_run(big, h100, options, gpu::choose_kernel(big, options)),
                      Catch::Contains("fa2_causal needs 271872 bytes of shared memory per block; this GPU allows 232448"));
}

TEST_CASE("tune --kernel generated: a LOAD into a tile kept as fp16 waits for 16 bytes a read", "[tune][time]") {
    // fa2 at Br = Bc = 128, d = 128 in fp16: K and V (the products' b) stay in shared memory as
    // fp16 and load 8 elements a read, 4 reads a lane in flight: 16384 elements over 256 threads
    // in 2 rounds, where fp32 pieces of 4 take 4. One block an SM (255 registers): no other block
    // fills the waits, so they are the chain's.
    const MachineSpec& h100 = *find_machine("h100");
    const gpu::GpuRunOptions options = fp16_options("generated", 16);
    const Program p = build_file("programs/attention/fa2.toy", {{"n", 4096}, {"d", 128}, {"Br", 128}, {"Bc", 128}});
    const gpu::KernelChoice choice = gpu::choose_kernel(p, options);
    REQUIRE(choice.generated);
    const gpu::GeneratedKernel& kernel = choice.generated->kernels.at(0);
    REQUIRE(kernel.tiles_stored.size() == p.tiles.size());
    for (size_t t = 0; t < p.tiles.size(); ++t) CHECK(kernel.tiles_stored[t] == (p.tiles[t].name == "k" || p.tiles[t].name == "v"));
    CHECK(kernel.min_blocks == 1);
    const ProgramTime stored = gpu::predict_run(p, h100, options, choice);
    const ProgramTime pieces_of_4 = predict_changed(p, h100, options, choice, [](gpu::GeneratedKernel& k) { k.tiles_stored.clear(); });
    const auto memory = [](const ProgramTime& t) { return t.launches.at(0).chain[static_cast<size_t>(ChainPart::Memory)]; };
    // The same bytes, half the rounds: the loads' waits halve, their bytes' time stays.
    CHECK(memory(stored) < memory(pieces_of_4));
    CHECK(memory(stored) > memory(pieces_of_4) / 2);
    CHECK(stored.seconds < pieces_of_4.seconds);
}

TEST_CASE("tune --kernel generated: a product on the CUDA cores takes its loop's steps of k and costs its loop's reads", "[tune][time]") {
    // flash_decoding's p·v (1 × Bc by Bc × d, v not transposed) may run on the tensor cores, so
    // the whole block shares its d results, a thread each, on the CUDA cores: b not transposed
    // and a thread's one column, which generated CUDA reads an element at a time (tile_product).
    // q·kᵀ (k transposed) reads 16 bytes at a time (tile_product4), a thread's one result too.
    const MachineSpec& h100 = *find_machine("h100");
    const gpu::GpuRunOptions options = fp16_options("generated", 64);
    for (std::int64_t d : {64, 128}) {
        INFO("d = " << d);
        const Program p = build_file("programs/attention/flash_decoding.toy", {{"n", 4096}, {"d", d}, {"S", 8}, {"Bc", 64}});
        const gpu::KernelChoice choice = gpu::choose_kernel(p, options);
        REQUIRE(choice.generated);
        const gpu::GeneratedKernel& kernel = choice.generated->kernels.at(0);
        const auto line_of = [&](std::int32_t pc) { return p.origin.at(static_cast<size_t>(pc))->loc.line; };
        std::vector<int> lines;
        for (const auto& b : kernel.thread_blockings)
            if (b.by_element) lines.push_back(line_of(b.pc));
        CHECK(lines == std::vector<int>{89});  // MAC p, v, o, o
        // Each product's results a thread: one (256 threads, Bc or d results).
        std::vector<std::tuple<int, int, int>> blockings;
        for (const auto& b : kernel.thread_blockings) blockings.emplace_back(line_of(b.pc), b.rows, b.cols);
        CHECK(blockings == std::vector<std::tuple<int, int, int>>{{78, 1, 1}, {89, 1, 1}});
        // Its Bc steps of k at the element loop's 5.78 ns rather than 3.46 ns, and its
        // multiply-adds at 5.66 + 2 × 13.46 ps an SM rather than 2.74 + 0.5 × 43.98: counted as
        // read 16 bytes at a time, the same product costs less.
        const ProgramTime by_element = gpu::predict_run(p, h100, options, choice);
        const ProgramTime by_16_bytes = predict_changed(p, h100, options, choice, [](gpu::GeneratedKernel& k) {
            for (auto& b : k.thread_blockings) b.by_element = false;
        });
        const auto products = [](const ProgramTime& t) { return t.launches.at(0).chain[static_cast<size_t>(ChainPart::Products)]; };
        CHECK(products(by_element) > products(by_16_bytes));
        CHECK(by_element.seconds > by_16_bytes.seconds);
        // Without the blocking the reads are not counted: the products cost the SM less.
        const ProgramTime unblocked = predict_changed(p, h100, options, choice, [](gpu::GeneratedKernel& k) { k.thread_blockings.clear(); });
        CHECK(products(unblocked) < products(by_element));
    }
}

TEST_CASE("codegen: rows of a multiple of 4 columns are an odd number of 16-byte pieces apart", "[codegen]") {
    // 60 columns padded by 4 would be 64 floats, every row in the same banks: 16-byte reads of
    // 8 rows (a transposed operand) would take 8 wavefronts for 1. The probe measured the loop
    // at 135.5 ps a multiply-add an SM with rows 64 apart and 24.7 with 68 (the H200).
    const Program p = build_file("gpu/tools/generated_probe_products.toy", {{"K", 60}, {"R", 8}, {"C", 32}});
    gpu::GpuRunOptions options = fp16_options("generated", 1);
    const gpu::KernelChoice choice = gpu::choose_kernel(p, options);
    REQUIRE(choice.generated);
    const std::string& source = choice.generated->source;
    CHECK(source.find("float* const a = smem + 0;  // line 19: tile a[8][60] (row stride 68)") != std::string::npos);
    CHECK(source.find("// line 20: tile bn[60][32] (row stride 36)") != std::string::npos);
    CHECK(source.find("// line 21: tile bt[32][60] (row stride 68)") != std::string::npos);
}

TEST_CASE("tune --kernel generated: a tile the schedule stages is copied beside the work", "[tune][time]") {
    // fa2_v3_mma.toy's K and V `stages 2` (cp.async in generated CUDA) against fa2.toy's
    // synchronous loads, the same instructions and tiles.
    const MachineSpec& h100 = *find_machine("h100");
    const gpu::GpuRunOptions options = fp16_options("generated", 16);
    auto predicted = [&](const char* path) {
        const Program p = build_file(path, {{"n", 4096}, {"d", 64}, {"Br", 128}, {"Bc", 64}});
        return gpu::predict_run(p, h100, options, gpu::choose_kernel(p, options));
    };
    const ProgramTime staged = predicted("programs/attention/schedules/fa2_v3_mma.toy"), waiting = predicted("programs/attention/fa2.toy");
    auto part = [](const ProgramTime& t, ChainPart c) { return t.launches.at(0).chain[static_cast<size_t>(c)]; };
    CHECK(part(staged, ChainPart::Copies) > 0);
    CHECK(part(waiting, ChainPart::Copies) == 0);
    // K and V's loads leave the loads waited for: Q's load and O's and L's stores remain.
    CHECK(part(staged, ChainPart::Memory) < part(waiting, ChainPart::Memory) / 4);
    CHECK(staged.seconds < waiting.seconds);
}
