// Every kernel on a real GPU, at several shapes (ragged n included): its counted global-memory
// traffic equals the simulator's count-only pass (count_traffic) times the heads, array by
// array, and its outputs pass the program's checks against the CPU reference.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>

#include "gpu/runtime/diff.h"
#include "gpu/runtime/run.h"
#include "isa/machine.h"
#include "sim/timing/predict.h"
#include "sim/front/parser.h"

using namespace toysim;

namespace {

// The repository, as built; TOYSIM_SOURCE_DIR in the environment overrides it (a build copied
// to a GPU machine, where the checkout lives elsewhere).
std::string source_dir() {
    const char* env = std::getenv("TOYSIM_SOURCE_DIR");
    return env && *env ? env : TOYSIM_SOURCE_DIR;
}

Program load(const std::string& path, const ParamSettings& settings) {
    auto tree = std::make_shared<const ast::Program>(parse(SourceFile::read(source_dir() + "/" + path)));
    return compile(tree, settings);
}

std::string describe(const gpu::GpuRunResult& r) {
    std::ostringstream out;
    for (const auto& t : r.traffic)
        out << t.array << ": counted " << t.counted_reads << "/" << t.counted_writes << " simulated " << t.simulated_reads << "/"
            << t.simulated_writes << "\n";
    for (const auto& c : r.checks)
        out << c.array << " = " << c.expression << ": max abs " << c.max_abs_error << ", " << c.mismatches << " mismatches " << c.first_mismatch
            << "\n";
    return out.str();
}

// One run, timed once with no warm-up: the tests want its counts and checks.
gpu::GpuRunResult run_once(const std::string& path, const ParamSettings& shape, gpu::DType dtype, std::int64_t heads,
                           double check_budget = gpu::GpuRunOptions{}.check_budget, const std::string& kernel = {}) {
    gpu::GpuRunOptions o;
    o.kernel = kernel;
    o.heads = heads;
    o.dtype = dtype;
    o.warmups = 0;
    o.repeats = 1;
    o.check_budget = check_budget;
    return gpu::gpu_run(load(path, shape), o);
}

void run_all(const std::string& path, const std::vector<ParamSettings>& shapes, const std::vector<gpu::DType>& dtypes,
             std::int64_t heads = 3) {
    for (const auto& shape : shapes)
        for (gpu::DType t : dtypes) {
            gpu::GpuRunResult r = run_once(path, shape, t, heads);
            std::string params;
            for (const auto& [name, value] : r.params) params += name + "=" + std::to_string(value) + " ";
            INFO(path << " " << params << gpu::dtype_name(t) << "\n" << describe(r));
            CHECK(r.traffic_equal());
            CHECK(r.check_passed());
            CHECK(!r.checks.empty());
        }
}

// A tensor-core version of fa2_forward (gpu/kernels/attention_tensor_core.cu) on fa2.toy at its tile
// shapes: n ragged at both ends (1, 7, 100, 1000, 4097), d = 64 and 128, fp16 and bf16 (or the
// FP8 kernel's d and type).
void run_version(const std::string& kernel, const std::vector<std::pair<int, int>>& tiles, const std::vector<int>& dims = {64, 128},
                 const std::vector<gpu::DType>& types = {gpu::DType::F16, gpu::DType::BF16}) {
    for (int n : {1, 7, 100, 1000, 4097})
        for (int d : dims)
            for (auto [br, bc] : tiles)
                for (gpu::DType t : types) {
                    const ParamSettings shape = {{"n", n}, {"d", d}, {"Br", br}, {"Bc", bc}};
                    gpu::GpuRunResult r = run_once("programs/attention/fa2.toy", shape, t, 3, gpu::GpuRunOptions{}.check_budget, kernel);
                    INFO(kernel << " n=" << n << " d=" << d << " Br=" << br << " Bc=" << bc << " " << gpu::dtype_name(t) << "\n" << describe(r));
                    CHECK(r.kernel->name == kernel);
                    CHECK(r.traffic_equal());
                    CHECK(r.check_passed());
                    CHECK(r.checks.size() == 2);
                }
}

using gpu::DType;
const std::vector<DType> kAll = {DType::F32, DType::F16, DType::BF16};

std::vector<ParamSettings> attention_shapes() {
    return {{},
            {{"n", 7}, {"d", 3}, {"Br", 3}, {"Bc", 2}},
            {{"n", 33}, {"d", 8}, {"Br", 8}, {"Bc", 5}},
            {{"n", 200}, {"d", 16}, {"Br", 32}, {"Bc", 48}},
            {{"n", 1000}, {"d", 64}, {"Br", 64}, {"Bc", 64}},
            {{"n", 333}, {"d", 128}, {"Br", 32}, {"Bc", 16}}};
}

}  // namespace

TEST_CASE("matmul_inner on the GPU", "[matmul_inner]") {
    run_all("programs/matmul_inner.toy", {{}, {{"n", 7}}, {{"n", 33}}, {{"n", 200}}}, {DType::F32});
}

TEST_CASE("matmul_outer on the GPU", "[matmul_outer]") {
    run_all("programs/matmul_outer.toy",
            {{}, {{"n", 33}, {"t", 3}}, {{"n", 200}, {"t", 8}}, {{"n", 1000}, {"t", 8}}, {{"n", 64}, {"t", 32}}, {{"n", 7}, {"t", 1}}},
            {DType::F32});
}

TEST_CASE("softmax_3pass on the GPU", "[softmax_3pass]") {
    run_all("programs/p4_softmax_3pass.toy", {{}, {{"n", 7}}, {{"n", 33}}, {{"n", 200}}, {{"n", 1000}}, {{"n", 1000000}}}, {DType::F32});
}

TEST_CASE("softmax_online on the GPU", "[softmax_online]") {
    run_all("programs/p5_online_softmax.toy", {{}, {{"n", 1}}, {{"n", 7}}, {{"n", 33}}, {{"n", 1000}}, {{"n", 1000000}}}, {DType::F32});
}

TEST_CASE("attention_standard on the GPU", "[attention_standard]") {
    run_all("programs/attention/standard_tiled.toy", attention_shapes(), kAll);
}

TEST_CASE("fa1_forward on the GPU", "[fa1_forward]") { run_all("programs/attention/fa1.toy", attention_shapes(), kAll); }

TEST_CASE("fa2_forward on the GPU", "[fa2_forward]") { run_all("programs/attention/fa2.toy", attention_shapes(), kAll); }

// Each version is its own ctest entry ("gpu: fa2_v1_wmma", ...: tests/CMakeLists.txt).
TEST_CASE("fa2_v1_wmma (tensor cores through WMMA) on the GPU", "[fa2_v1_wmma]") { run_version("fa2_v1_wmma", {{64, 64}}); }

TEST_CASE("fa2_v2_mma (mma.sync, ldmatrix, cp.async) on the GPU", "[fa2_v2_mma]") {
    run_version("fa2_v2_mma", {{64, 32}, {64, 64}, {128, 32}, {128, 64}});
}

TEST_CASE("fa2_v3_mma (32 rows a warp) on the GPU", "[fa2_v3_mma]") { run_version("fa2_v3_mma", {{128, 32}, {128, 64}}); }

// fa2_causal.toy's square tiles (B = Br = Bc), ragged n among them.
std::vector<ParamSettings> causal_shapes() {
    return {{},
            {{"n", 7}, {"d", 3}, {"B", 3}},
            {{"n", 33}, {"d", 8}, {"B", 8}},
            {{"n", 200}, {"d", 16}, {"B", 32}},
            {{"n", 1000}, {"d", 64}, {"B", 64}},
            {{"n", 333}, {"d", 128}, {"B", 16}}};
}
TEST_CASE("fa2_causal on the GPU", "[fa2_causal]") { run_all("programs/attention/fa2_causal.toy", causal_shapes(), kAll); }
TEST_CASE("fa2_causal_heaviest_first on the GPU", "[fa2_causal_heaviest_first]") {
    run_all("programs/attention/fa2_causal_heaviest_first.toy", causal_shapes(), kAll);
}
namespace {
// A causal tensor-core version on fa2_causal_heaviest_first.toy at B = 128: n ragged at both
// ends, d = 64 and 128, fp16 and bf16 (or the FP8 kernel's d and type).
void run_causal_version(const std::string& kernel, const std::vector<int>& dims = {64, 128},
                        const std::vector<gpu::DType>& types = {gpu::DType::F16, gpu::DType::BF16}) {
    for (int n : {1, 7, 100, 1000, 4097})
        for (int d : dims)
            for (gpu::DType t : types) {
                const ParamSettings shape = {{"n", n}, {"d", d}, {"B", 128}};
                gpu::GpuRunResult r =
                    run_once("programs/attention/fa2_causal_heaviest_first.toy", shape, t, 3, gpu::GpuRunOptions{}.check_budget, kernel);
                INFO(kernel << " n=" << n << " d=" << d << " " << gpu::dtype_name(t) << "\n" << describe(r));
                CHECK(r.kernel->name == kernel);
                CHECK(r.traffic_equal());
                CHECK(r.check_passed());
                CHECK(r.checks.size() == 2);
            }
}

// The Hopper versions run on sm_90 only; elsewhere they must refuse before launching.
bool on_hopper() {
    const gpu::DeviceInfo d = gpu::query_device();
    return d.compute_major == 9 && d.compute_minor == 0;
}
void check_refused_off_hopper(const std::string& program, const ParamSettings& shape, const std::string& kernel, DType type = DType::F16) {
    CHECK_THROWS_WITH(run_once(program, shape, type, 1, gpu::GpuRunOptions{}.check_budget, kernel),
                      Catch::Contains(kernel + " runs on Hopper (sm_90: wgmma, TMA, setmaxnreg)"));
}
}  // namespace

TEST_CASE("fa2_causal_v3_mma (tensor cores, the longest Q tiles first) on the GPU", "[fa2_causal_v3_mma]") {
    run_causal_version("fa2_causal_v3_mma");
}

TEST_CASE("fa2_v4_wgmma (wgmma, TMA, a producer warpgroup) on the GPU", "[fa2_v4_wgmma]") {
    if (on_hopper()) run_version("fa2_v4_wgmma", {{128, 128}});
    else check_refused_off_hopper("programs/attention/fa2.toy", {{"n", 256}, {"d", 64}, {"Br", 128}, {"Bc", 128}}, "fa2_v4_wgmma");
}

TEST_CASE("fa2_causal_v4_wgmma (wgmma, TMA, the longest Q tiles first) on the GPU", "[fa2_causal_v4_wgmma]") {
    if (on_hopper()) run_causal_version("fa2_causal_v4_wgmma");
    else check_refused_off_hopper("programs/attention/fa2_causal_heaviest_first.toy", {{"n", 256}, {"d", 64}, {"B", 128}}, "fa2_causal_v4_wgmma");
}

TEST_CASE("fa2_v5_wgmma (v4, K and V released apart) on the GPU", "[fa2_v5_wgmma]") {
    if (on_hopper()) run_version("fa2_v5_wgmma", {{128, 128}});
    else check_refused_off_hopper("programs/attention/fa2.toy", {{"n", 256}, {"d", 64}, {"Br", 128}, {"Bc", 128}}, "fa2_v5_wgmma");
}

TEST_CASE("fa2_causal_v5_wgmma (v5, the longest Q tiles first) on the GPU", "[fa2_causal_v5_wgmma]") {
    if (on_hopper()) run_causal_version("fa2_causal_v5_wgmma");
    else check_refused_off_hopper("programs/attention/fa2_causal_heaviest_first.toy", {{"n", 256}, {"d", 64}, {"B", 128}}, "fa2_causal_v5_wgmma");
}

// e4m3 Q, K, V and P̃: within the e4m3 tolerance (gpu/runtime/run.cpp's tolerance_for, 0.063,
// a bound on what rounding P̃ can do), against a reference that holds the inputs as rounded.
TEST_CASE("fa2_fp8_wgmma (e4m3 wgmma, V transposed in shared memory) on the GPU", "[fa2_fp8_wgmma]") {
    if (on_hopper()) run_version("fa2_fp8_wgmma", {{128, 128}}, {128}, {DType::E4M3});
    else check_refused_off_hopper("programs/attention/fa2.toy", {{"n", 256}, {"d", 128}, {"Br", 128}, {"Bc", 128}}, "fa2_fp8_wgmma", DType::E4M3);
}

TEST_CASE("fa2_causal_fp8_wgmma (e4m3 wgmma, the longest Q tiles first) on the GPU", "[fa2_causal_fp8_wgmma]") {
    if (on_hopper()) run_causal_version("fa2_causal_fp8_wgmma", {128}, {DType::E4M3});
    else
        check_refused_off_hopper("programs/attention/fa2_causal_heaviest_first.toy", {{"n", 256}, {"d", 128}, {"B", 128}}, "fa2_causal_fp8_wgmma",
                                 DType::E4M3);
}

TEST_CASE("a tensor-core version refuses what it was not built for", "[fa2_v2_mma]") {
    CHECK_THROWS_WITH(run_once("programs/attention/fa2.toy", {{"n", 64}, {"d", 32}, {"Br", 64}, {"Bc", 64}}, DType::F16, 1,
                               gpu::GpuRunOptions{}.check_budget, "fa2_v2_mma"),
                      Catch::Contains("fa2_v2_mma takes d = 64 or 128"));
    CHECK_THROWS_WITH(run_once("programs/attention/fa2.toy", {{"n", 64}, {"d", 64}, {"Br", 64}, {"Bc", 64}}, DType::F32, 1,
                               gpu::GpuRunOptions{}.check_budget, "fa2_v2_mma"),
                      Catch::Contains("kernel fa2_v2_mma runs on the tensor cores in fp16, bf16 only (--dtype)"));
}

TEST_CASE("fa2_backward on the GPU", "[fa2_backward]") {
    run_all("programs/attention/fa2_backward.toy", attention_shapes(), kAll, 2);
}

TEST_CASE("fa2_backward_no_d_trick on the GPU", "[fa2_backward_no_d_trick]") {
    run_all("programs/attention/fa2_backward_no_d_trick.toy", attention_shapes(), kAll, 2);
}

// The tensor-core backward (gpu/kernels/attention_backward_tensor_core.cu) on fa2_backward.toy at each
// tile shape it takes: n ragged at both ends, d = 64 and 128, fp16 and bf16, 3 heads. Every
// run checks D, dQ, dK and dV and the counts of all ten arrays.
TEST_CASE("fa2_backward_mma (mma.sync, dK and dV in registers, dQ by atomics) on the GPU", "[fa2_backward_mma]") {
    for (int n : {1, 7, 100, 1000, 4097})
        for (int d : {64, 128})
            for (auto [br, bc] : std::vector<std::pair<int, int>>{{64, 64}, {64, 128}, {128, 64}, {128, 128}}) {
                if (br == 128 && d == 128) continue;  // refused: see the next test
                for (gpu::DType t : {gpu::DType::F16, gpu::DType::BF16}) {
                    const ParamSettings shape = {{"n", n}, {"d", d}, {"Br", br}, {"Bc", bc}};
                    gpu::GpuRunResult r = run_once("programs/attention/fa2_backward.toy", shape, t, 3, gpu::GpuRunOptions{}.check_budget,
                                                   "fa2_backward_mma");
                    INFO("fa2_backward_mma n=" << n << " d=" << d << " Br=" << br << " Bc=" << bc << " " << gpu::dtype_name(t) << "\n"
                                               << describe(r));
                    CHECK(r.kernel->name == "fa2_backward_mma");
                    CHECK(r.traffic_equal());
                    CHECK(r.check_passed());
                    CHECK(r.checks.size() == 4);
                }
            }
}

TEST_CASE("fa2_backward_mma refuses the tiles it was not built for", "[fa2_backward_mma]") {
    CHECK_THROWS_WITH(run_once("programs/attention/fa2_backward.toy", {{"n", 64}, {"d", 128}, {"Br", 128}, {"Bc", 64}}, DType::F16, 1,
                               gpu::GpuRunOptions{}.check_budget, "fa2_backward_mma"),
                      Catch::Contains("fa2_backward_mma takes Bc = 64 or 128 (4 or 8 warps of 16 keys) and Br = 64, or Br = 128 at d = 64"));
    CHECK_THROWS_WITH(run_once("programs/attention/fa2_backward.toy", {{"n", 64}, {"d", 32}, {"Br", 64}, {"Bc", 64}}, DType::BF16, 1,
                               gpu::GpuRunOptions{}.check_budget, "fa2_backward_mma"),
                      Catch::Contains("fa2_backward_mma takes d = 64 or 128"));
}

TEST_CASE("a large forward run checks sampled rows of every head", "[fa2_forward]") {
    // n = 4096 with 16 heads is past the check budget: sampled rows of every head are compared.
    gpu::GpuRunResult r = run_once("programs/attention/fa2.toy", {{"n", 4096}, {"d", 64}, {"Br", 64}, {"Bc", 64}}, DType::F16, 16, 1e8);
    INFO(describe(r));
    CHECK(r.traffic_equal());
    CHECK(r.check_passed());
    REQUIRE(r.checks.size() == 2);
    CHECK(r.checks[0].heads_checked == 16);
    CHECK(r.checks[0].rows_checked < 4096);
    CHECK(r.checks[0].rows_checked >= 2);
}

TEST_CASE("a large backward run checks sampled rows of D and dQ in every head and whole heads of dK and dV", "[fa2_backward]") {
    gpu::GpuRunResult r = run_once("programs/attention/fa2_backward.toy", {{"n", 1024}, {"d", 64}, {"Br", 64}, {"Bc", 64}}, DType::F16, 4, 1e9);
    INFO(describe(r));
    CHECK(r.traffic_equal());
    CHECK(r.check_passed());
    REQUIRE(r.checks.size() == 4);
    for (const auto& c : r.checks) {
        INFO(c.array << ": " << c.heads_checked << " heads, " << c.rows_checked << " rows");
        if (c.array == "D" || c.array == "dQ") {
            CHECK(c.heads_checked == 4);
            CHECK(c.rows_checked >= 2);
            CHECK(c.rows_checked < 1024);
        } else {
            CHECK(c.heads_checked >= 1);
            CHECK(c.heads_checked < 4);
            CHECK(c.rows_checked == 1024);
        }
    }
}

TEST_CASE("a check fails when the kernel's output is not what the program claims", "[fa2_forward]") {
    // fa2.toy with L checked against the row max instead of m + ln ℓ: the kernel is right, the
    // claim is wrong, and the run must say so (while its traffic still equals the simulator's).
    std::string text = SourceFile::read(source_dir() + "/programs/attention/fa2.toy")->text;
    const std::string lse = "check L = attention_lse(Q, K)";
    REQUIRE(text.find(lse) != std::string::npos);
    text.replace(text.find(lse), lse.size(), "check L = attention_rowmax(Q, K)");
    auto tree = std::make_shared<const ast::Program>(parse(std::make_shared<SourceFile>("fa2_wrong_check.toy", text)));
    gpu::GpuRunOptions o;
    o.warmups = 0;
    o.repeats = 1;
    gpu::GpuRunResult r = gpu::gpu_run(compile(tree, {{"n", 33}, {"d", 8}, {"Br", 8}, {"Bc", 5}}), o);
    CHECK(r.traffic_equal());
    CHECK_FALSE(r.check_passed());
    REQUIRE(r.checks.size() == 2);
    CHECK(r.checks[0].passed());
    CHECK(r.checks[1].mismatches == 33);
    CHECK(r.checks[1].first_mismatch.find("L of head 0, row 0, element 0: ") == 0);
}

// The time model's blocks an SM for a catalog kernel (its launch plan: gpu::predict_run, no
// device) against the occupancy calculator's on this GPU, kernel by kernel. Where the kernel's
// launch bounds ask for blocks, the model reads its registers from them (ptxas's budget) and must
// agree; where they ask none (fa2_backward's D pass), its registers are the schedule's estimate,
// and a difference is printed, not failed (the H100: 8 blocks of the D pass, the estimate 5 to 7).
TEST_CASE("the time model's blocks an SM for each kernel are the occupancy calculator's", "[occupancy]") {
    const MachineSpec* machine = find_machine("h100");
    REQUIRE(machine);
    struct Case {
        std::string path, kernel;
        ParamSettings shape;
    };
    const std::vector<Case> cases = {
        {"programs/attention/schedules/fa2_causal.toy", "", {{"n", 1024}, {"d", 64}, {"B", 16}}},
        {"programs/attention/schedules/fa2_causal.toy", "", {{"n", 1024}, {"d", 64}, {"B", 32}}},
        {"programs/attention/schedules/fa2_causal.toy", "", {{"n", 1024}, {"d", 64}, {"B", 64}}},
        {"programs/attention/schedules/fa2_causal.toy", "", {{"n", 1024}, {"d", 64}, {"B", 128}}},
        {"programs/attention/schedules/fa2_causal.toy", "", {{"n", 1024}, {"d", 128}, {"B", 64}}},
        {"programs/attention/fa2.toy", "", {{"n", 1024}, {"d", 64}, {"Br", 64}, {"Bc", 64}}},
        {"programs/attention/schedules/fa2_v3_mma.toy", "fa2_v3_mma", {{"n", 1024}, {"d", 64}, {"Br", 128}, {"Bc", 64}}},
        {"programs/attention/schedules/fa2_v3_mma.toy", "fa2_v3_mma", {{"n", 1024}, {"d", 128}, {"Br", 128}, {"Bc", 32}}},
        {"programs/attention/schedules/fa2_v3_mma.toy", "fa2_v3_mma", {{"n", 1024}, {"d", 128}, {"Br", 128}, {"Bc", 64}}},
        {"programs/attention/schedules/fa2_backward.toy", "", {{"n", 512}, {"d", 64}, {"Br", 16}, {"Bc", 16}}},
        {"programs/attention/schedules/fa2_backward.toy", "", {{"n", 512}, {"d", 64}, {"Br", 32}, {"Bc", 64}}},
        {"programs/attention/schedules/fa2_backward.toy", "", {{"n", 512}, {"d", 128}, {"Br", 32}, {"Bc", 32}}},
    };
    int mismatches = 0;
    for (const Case& c : cases) {
        gpu::GpuRunOptions o;
        o.kernel = c.kernel;
        o.heads = 2;
        o.dtype = gpu::DType::F16;
        o.warmups = 0;
        o.repeats = 1;
        const Program p = load(c.path, c.shape);
        const gpu::KernelChoice choice = gpu::choose_kernel(p, o);
        const ProgramTime predicted = gpu::predict_run(p, *machine, o, choice);
        gpu::LaunchPlan plan;
        plan.kernel = choice.kernel;
        plan.params = choice.launch_params;
        plan.heads = o.heads;
        plan.dtype = o.dtype;
        const auto stages = gpu::plan_stages(plan, static_cast<int>((*machine)[MachineParam::SharedPerBlock]));
        REQUIRE(stages);
        const gpu::GpuRunResult r = gpu::gpu_run(p, o);
        std::string params;
        for (const auto& [name, value] : r.params) params += name + "=" + std::to_string(value) + " ";
        for (std::size_t k = 0; k < r.launch.stages.size(); ++k) {
            const int measured = r.launch.stages[k].resident_blocks_per_sm;
            const auto sms = static_cast<std::int64_t>((*machine)[MachineParam::Sms]);
            const std::int64_t model = k < predicted.walk.launch_workers.size() ? predicted.walk.launch_workers[k] / sms : -1;
            if (model == measured) continue;
            WARN(r.kernel->name << " " << params << "stage " << k << ": model " << model << ", occupancy calculator " << measured);
            if (stages->at(k).min_blocks > 0) ++mismatches;
        }
    }
    CHECK(mismatches == 0);
}
