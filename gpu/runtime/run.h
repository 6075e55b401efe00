// `toysim gpu run`: a program's kernel on a real GPU, checked against the reference and with
// its counted traffic set against the simulator's.
//
// The program names its kernel (`gpu fa2_forward`); its parameters, arrays, fills and checks
// are the kernel's too. The result holds what printers show and the JSON contract carries
// (README, "On a real GPU"); nothing here prints.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/shared_module.h"
#include "gpu/kernels/kernels.h"
#include "sim/lower/program.h"

namespace toysim::gpu {

// The kernel the program's `gpu` line names, after checking that the kernel takes the
// program's arrays (the same names, all of them) and parameters. Throws ToyError at the
// `gpu` line (or, with no such line, naming the programs that have one).
//
// `kernel`, when not empty, names another kernel of the catalog to run instead (`--kernel`):
// one whose `version_of` is the kernel the program names, taking the same arrays and
// parameters (fa2.toy runs fa2_v2_mma, the tensor-core version of fa2_forward).
const KernelSpec& program_kernel(const Program& program, std::string_view kernel = {});

struct GeneratedProgram;

struct GpuRunOptions {
    // empty: the program's own (or, without a `gpu` line, CUDA generated from the program);
    // "generated": CUDA generated from the program; else a version of the program's kernel
    std::string kernel;
    std::int64_t heads = 1;
    DType dtype = DType::F32;
    bool tensor_cores = true;  // generated CUDA: fp16/bf16 products of whole fragments on the tensor cores
    int warmups = 3;
    int repeats = 20;
    L2State measure = L2State::Off;  // also read each stage's DRAM and L2 traffic (CUPTI)
    bool force = false;               // check for races on the simulator however long it takes
    // Multiply-adds the CPU reference may spend on checks (and on reference fills): past it,
    // sampled rows of every head are checked (or whole heads, for checks that are not row by row).
    double check_budget = 2e9;
    // The module generated from this program, where the caller generated it already (it must be
    // generate_cuda's for this program, dtype and tensor_cores), and the module it shares with
    // other runs of the same program (share_generated): compiled once for them all.
    std::shared_ptr<const GeneratedProgram> generated;
    std::optional<ModuleShare> share;
};

// Options for each of `programs` (one program at several parameter sets, to run one after the
// other): each run that runs generated CUDA gets its module, and where the modules of several
// differ only in integers (a sweep over n), the module they share (gpu/codegen/shared_module.h),
// which NVRTC then compiles once. A program the generator refuses keeps `options` as they are:
// its run reports the refusal as it would alone.
std::vector<GpuRunOptions> share_generated(const std::vector<const Program*>& programs, const GpuRunOptions& options);

// How gpu_run compares a program's outputs with the reference, decided from the shapes before
// anything runs. When the reference's work over every head fits options.check_budget (and what
// comes back, kMaxReferenceElements doubles), every row of every head. Else a check whose row r
// needs only row r of some arguments, its row arguments (matmul's a, softmax's rows, attention's
// q, causal or not: causal attention's reference is also given each sampled row's index, for the
// mask), compares the same sampled rows of every head, and the others compare the first heads.
struct CheckPlan {
    const CheckSpec* spec = nullptr;
    int target = -1;                    // kernel array
    std::vector<int> args;              // kernel arrays
    std::vector<std::size_t> row_args;  // args[i] for i here are cut to the sampled rows
    bool by_rows = false;               // on the sampled rows of every head; else on whole heads
    std::size_t row_dim = 0;            // the dimension its rows are (row_dimension: 1 for the gqa_ functions)
    double work_per_head = 0;           // the reference's multiply-adds on one head
};
struct CheckSampling {
    std::vector<CheckPlan> checks;    // the program's checks of whole arrays, in its order
    std::vector<int> download;        // per kernel array: 0 not read back, 1 its sampled rows, 2 whole heads
    std::vector<std::int64_t> rows;   // the sampled rows, ascending; empty: every row
    std::size_t row_dim = 0;          // the dimension they are of each sampled array (1: within each K/V head)
    std::size_t heads_checked = 0;    // the checks on whole heads: the first this many
};
CheckSampling plan_checks(const Program& program, const KernelSpec& kernel, const GpuRunOptions& options);

// The counted traffic of one array against the simulator's count-only pass × heads.
struct ArrayTrafficRow {
    std::string array;
    int element_bytes = 4;
    std::uint64_t counted_reads = 0, counted_writes = 0;
    std::uint64_t simulated_reads = 0, simulated_writes = 0;
    bool equal() const { return counted_reads == simulated_reads && counted_writes == simulated_writes; }
};

struct ArrayCheckResult {
    std::string array;
    std::string expression;   // "attention(Q, K, V)"
    std::int64_t heads_checked = 0, heads = 0;
    std::int64_t rows_checked = 0, rows = 0;  // per head checked
    double max_abs_error = 0;
    double max_rel_error = 0;  // over elements whose reference is at least 0.01 in magnitude
    double tolerance = 0;     // |gpu − ref| <= tolerance·max(1, |ref|)
    std::int64_t mismatches = 0;
    std::string first_mismatch;  // "O[h3][17][5] = 0.52 but the reference is 0.31"
    bool passed() const { return mismatches == 0; }
};

struct GpuRunResult {
    const KernelSpec* kernel = nullptr;
    // The module generated from the program (--kernel generated, or a program without a `gpu`
    // line): `kernel` is its catalog row.
    std::shared_ptr<const GeneratedProgram> generated;
    // What kept generated CUDA off the generator's fastest path: its own reasons, and the
    // registers ptxas spilled to local memory when it compiled the module for this device.
    std::vector<SlowPath> slow_paths;
    // How the generated module was compiled for this device: its target, NVRTC's seconds (the
    // disk cache's read where it had the module), and whether it did.
    struct ModuleCompile {
        std::string target;
        double seconds = 0;
        bool from_cache = false;
        // A module shared by several runs (share_generated): how many, how many of its integers
        // are read at run time, and whether an earlier run in this process compiled it (reused).
        // Where NVRTC refused the shared text, the run compiled its own and not_shared says why.
        int shared_by = 0;
        int run_time_values = 0;
        bool reused = false;
        std::string not_shared;
    };
    std::optional<ModuleCompile> compile;
    std::vector<std::pair<std::string, std::int64_t>> params;  // the kernel's, in its order
    std::int64_t heads = 1;
    DType dtype = DType::F32;
    int warmups = 0;
    L2State measure = L2State::Off;
    DeviceInfo device;
    LaunchResult launch;
    std::vector<ArrayTrafficRow> traffic;  // kernel array order
    std::vector<ArrayCheckResult> checks;
    std::optional<double> flops;           // all heads; none for softmax
    double counted_bytes = 0;              // reads + writes, all stages, all heads

    bool traffic_equal() const;
    bool check_passed() const;
    std::optional<double> tflops() const;  // at the median time
    double gigabytes_per_second() const;
};

// Whether gpu_run runs CUDA generated from the program: --kernel generated, or no `gpu` line.
bool runs_generated(const Program& program, std::string_view kernel);

// Refuses a program whose parallel loops race, before anything reaches a GPU: a race there
// goes unnoticed (the blocks' order changes from launch to launch, and an output that passes
// its check today is wrong on another day), so the simulator decides first. Loops proven
// race-free from their subscripts (prove_race_freedom) need no run; otherwise the program runs
// on the simulator with every access checked, as `toysim run` runs it, and a race is thrown as
// that run throws it (ErrorKind::Race, at the access, naming both iterations). A check that
// would take longer than a run may (refuse_long_runs) is refused unless `force`.
void refuse_races(const Program& program, bool force = false);

// The kernel gpu_run would launch for `program` and `options`, and its parameters, checked
// without a device: the program's kernel (or a version of it), or CUDA generated from the
// program; the dtype it runs in, --heads, each parameter's range and the combinations the
// kernel refuses. Throws ToyError as gpu_run does, so that `toysim tune` drops a point the
// kernel would refuse before anything runs.
struct KernelChoice {
    const KernelSpec* kernel = nullptr;
    std::shared_ptr<const GeneratedProgram> generated;           // set where the program's CUDA is generated
    std::vector<std::pair<std::string, std::int64_t>> params;   // as GpuRunResult::params
    std::vector<std::int64_t> launch_params;                     // the kernel's, in its order
};
KernelChoice choose_kernel(const Program& program, const GpuRunOptions& options);

// Compiles nothing: `program` is already bound to its parameters. Throws ToyError for what
// the program or the settings get wrong (a race included: refuse_races), GpuError for what the
// device cannot do.
GpuRunResult gpu_run(const Program& program, const GpuRunOptions& options);

// Rounds a double to what a value stored as `t` holds (round to nearest even), on the host;
// e4m3 saturates at ±448, as the device's conversion does.
double round_to(DType t, double value);
// The power of two an e4m3 array is stored times: its largest |value| times it is at most 448
// and over 224 (1 for an array of zeros).
double e4m3_scale(const std::vector<double>& values);
// The least tolerance of a check in a run stored as `t`: 10⁻⁴ in fp32, 2·10⁻² in fp16, 6·10⁻²
// in bf16, and in e4m3 0.063 times the largest |value| an e4m3 array holds, where that is over 1
// (the bound rounding P̃ to e4m3 allows, relative to V's values).
double tolerance_for(DType t, double largest_e4m3 = 1);

}  // namespace toysim::gpu
