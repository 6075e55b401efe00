// The toysim command line: its options (CLI11), which subcommand runs, and how every error
// reaches stderr. The subcommands are in commands.cpp and side_by_side.cpp.
#include "sim/cli/app.h"

#include <CLI/CLI.hpp>
#include <cstring>
#include <fmt/format.h>
#include <iostream>
#include <new>
#include <stdexcept>

#include "sim/cli/common.h"
#include "sim/cli/output.h"
#include "sim/reference/reference.h"
#include "support/text.h"

namespace toysim::cli {

namespace {

const std::vector<std::string_view> kCommands = {"run", "trace", "step", "view", "sweep", "cost", "tune", "compare", "gpu", "diff", "grade", "exercise"};

std::string isa_listing() {
    std::string out = "instruction set (destination last, as in the seed; cycles per unit of work, one unit per scalar\n"
                      "instruction; on tiles see isa/README.md):\n";
    int mnemonic = 0, operands = 0, meaning = 0;
    for (const auto& row : all_ops()) {
        mnemonic = std::max(mnemonic, display_width(row.mnemonic));
        operands = std::max(operands, display_width(row.operands));
        meaning = std::max(meaning, display_width(row.meaning));
    }
    for (const auto& row : all_ops())
        out += fmt::format("  {} {} {} {} cycle{}\n", pad_right(row.mnemonic, mnemonic), pad_right(row.operands, operands + 1),
                           pad_right(row.meaning, meaning), row.cycles, row.cycles == 1 ? "" : "s");
    out += "\nreference functions for 'check' (and for computed inputs):\n";
    size_t width = 0;
    for (const auto& f : reference_functions()) width = std::max(width, f.signature.size());
    for (const auto& f : reference_functions()) out += fmt::format("  {:<{}} {}\n", f.signature, width, f.meaning);
    return out;
}

struct Commands {
    CLI::App* run = nullptr;
    CLI::App* trace = nullptr;
    CLI::App* sweep = nullptr;
    CLI::App* cost = nullptr;
    CLI::App* tune = nullptr;
    CLI::App* compare = nullptr;
    CLI::App* gpu = nullptr;
    CLI::App* gpu_run = nullptr;
    CLI::App* gpu_kernels = nullptr;
    CLI::App* gpu_cuda = nullptr;
    CLI::App* diff = nullptr;
    CLI::App* step = nullptr;
    CLI::App* view = nullptr;
    CLI::App* grade = nullptr;
    CLI::App* exercise = nullptr;
    CLI::App* exercise_list = nullptr;
    CLI::App* exercise_start = nullptr;
};

// Each command's options, filled in by the parse.
struct Args {
    RunArgs run;
    TraceArgs trace;
    StepArgs step;
    ViewArgs view;
    SweepArgs sweep;
    CostArgs cost;
    TuneArgs tune;
    CompareArgs compare;
    GpuRunArgs gpu_run;
    GpuCudaArgs gpu_cuda;
    FormatArgs gpu_kernels;
    DiffArgs diff;
    GradeArgs grade;
    FormatArgs exercise_list;
    ExerciseStartArgs exercise_start;
};

// What --cache takes, said once for every command that has it.
const char* const kCacheSpec = "a preset (h100, h200, a100) or settings (size=1KiB line=64 sector=32 ways=2 fill=32 index=mod|hash), or both (h100 ways=8)";

Commands define_commands(CLI::App& app, Args& a) {
    app.set_version_flag("--version", fmt::format("toysim {} (commit {})", kVersion, kCommit));
    app.require_subcommand(1);
    app.footer("\n" + isa_listing() +
               "\nexit codes: 0 ok, 1 a check or an expected figure failed, 2 bad input or a run-time fault,\n"
               "3 an internal error.\n"
               "Run 'toysim COMMAND --help' for examples.");

    const std::vector<std::string> formats = {"table", "json", "markdown", "csv"};
    const CLI::Validator positive(
        [](std::string& text) -> std::string {
            auto v = parse_whole_number(text);
            if (!v || *v == 0) return quoted_name(text) + " is not a positive whole number";
            return "";
        },
        "POSITIVE");
    const std::string program_help = "the .toy program ('-': read it from standard input)";
    // Every command prints in the same four formats.
    auto add_format = [&](CLI::App* command, FormatArgs& o) {
        command->add_option("--format", o.format, "table, json, markdown or csv")->check(CLI::IsMember(formats));
    };
    // The modeled cache (sim/exec/cache.h): a preset or settings, and the element size it sees.
    auto add_cache = [&](CLI::App* command, CacheArgs& o) {
        command->add_option("--cache", o.cache, std::string("model a cache between the workers and DRAM: ") + kCacheSpec);
        command->add_option("--dtype", o.dtype, "with a cache: the element size it sees, fp32 (4 bytes, the default), fp16 or bf16 (2), e4m3 (1)")
            ->check(CLI::IsMember({"fp32", "fp16", "bf16", "e4m3"}));
    };
    // The GPU commands check a program that is not proven race-free on the simulator first.
    auto add_race_force = [&](CLI::App* command, bool& force) {
        command->add_flag("--force", force, "check the program for races on the simulator first however long that takes (a program not proven race-free from its subscripts runs there before the GPU)");
    };
    auto add_force = [&](CLI::App* command, bool& force) {
        command->add_flag("--force", force, "run even if the estimated work would take more than a few minutes");
    };

    Commands c;
    c.run = app.add_subcommand("run", "Run a program: its check verdict, expected figures and every counter.");
    c.run->add_option("file", a.run.file, program_help)->required();
    c.run->add_option("--set", a.run.sets, "override a parameter, e.g. --set n=1024 (repeatable)");
    add_format(c.run, a.run);
    c.run->add_flag("--stats", a.run.stats, "also report simulated instructions per second");
    c.run->add_option("--show", a.run.shown_arrays, "also print an array's final values (repeatable), e.g. --show O");
    c.run->add_option("--max-steps", a.run.max_steps, "stop with an error after this many instructions (default 10000000000)")
        ->check(positive);
    add_force(c.run, a.run.force);
    add_cache(c.run, a.run);
    c.run->add_option("--machine", a.run.machine,
                      "also predict each launch's time on a named machine (h100, h200), as 'toysim cost --machine' does (one head)");
    c.run->footer("\nexamples:\n"
                  "  toysim run programs/p1_c00.toy\n"
                  "  toysim run programs/p4_softmax_3pass.toy --set n=1000000\n"
                  "  toysim run programs/matmul_inner.toy --set n=256 --stats\n"
                  "  toysim run programs/p3_matmul_outer_6reg.toy --format json\n"
                  "  toysim run - < programs/p1_c00.toy");

    c.trace = app.add_subcommand("trace", "Print the step table: each instruction and the registers after it.");
    c.trace->add_option("file", a.trace.file, program_help)->required();
    c.trace->add_option("--set", a.trace.sets, "override a parameter, e.g. --set n=4 (repeatable)");
    c.trace->add_option("--values", a.trace.values,
                        "symbolic (a00·b00, the seed's notation) or numeric; by default symbolic, and numeric for tile programs")
        ->check(CLI::IsMember({"auto", "symbolic", "numeric"}));
    c.trace->add_option("--max-steps", a.trace.max_steps, "stop with an error after this many instructions (default 10000)")->check(positive);
    add_format(c.trace, a.trace);
    add_cache(c.trace, a.trace);
    c.trace->add_flag("--ditto", a.trace.ditto,
                      "print \" where a register is unchanged since the row above, as the seed does (not with --format json)");
    c.trace->footer("\nexamples:\n"
                    "  toysim trace programs/p1_c00.toy\n"
                    "  toysim trace programs/p3_matmul_outer_6reg.toy --ditto\n"
                    "  toysim trace programs/p5_online_softmax.toy --set n=4 --values numeric\n"
                    "  toysim trace programs/p4_softmax_3pass.toy --format markdown\n"
                    "  toysim trace programs/attention/seed001_fa2_tiled.toy");

    c.step = app.add_subcommand("step", "Step through a run, forward and backward, with breakpoints (type 'help' inside).");
    c.step->add_option("file", a.step.file, program_help)->required();
    c.step->add_option("--set", a.step.sets, "override a parameter, e.g. --set n=8 (repeatable)");
    c.step->add_option("--values", a.step.values,
                       "symbolic or numeric; by default symbolic as `trace` shows it, numeric for tile programs and long runs")
        ->check(CLI::IsMember({"auto", "symbolic", "numeric"}));
    c.step->add_option("--max-steps", a.step.max_steps, "the run's step limit (default 10000000000)")->check(positive);
    c.step->add_option("--color", a.step.color, "mark changed cells in color: auto (on a terminal), always or never")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    add_force(c.step, a.step.force);
    c.step->footer("\nCommands are read from the terminal (with line editing and history) or, when standard input is\n"
                   "not one, line by line from it, so a session can be scripted:\n"
                   "  printf 'goto 900000\\nback 3\\nwatch R1\\nreverse-continue\\n' | toysim step programs/p5_online_softmax.toy --set n=1000000\n"
                   "\nexamples:\n"
                   "  toysim step programs/p1_c00.toy\n"
                   "  toysim step programs/p5_online_softmax.toy --set n=8\n"
                   "  toysim step programs/attention/seed001_fa2_tiled.toy");

    c.view = app.add_subcommand("view", "Write a self-contained HTML trace viewer: step through the run in a browser, offline.");
    c.view->add_option("file", a.view.file, program_help)->required();
    c.view->add_option("--set", a.view.sets, "override a parameter, e.g. --set n=8 (repeatable)");
    c.view->add_option("--values", a.view.values, "symbolic or numeric; by default symbolic as `trace`, numeric for tile programs")
        ->check(CLI::IsMember({"auto", "symbolic", "numeric"}));
    c.view->add_option("-o,--output", a.view.output, "the HTML file to write")->required();
    c.view->add_option("--max-steps", a.view.max_steps, "refuse runs longer than this (default 100000)")->check(positive);
    c.view->footer("\nexamples:\n"
                   "  toysim view programs/p1_c00.toy -o p1.html\n"
                   "  toysim view programs/attention/seed001_fa2_tiled.toy -o fa2.html\n"
                   "  toysim view programs/attention/fa2.toy --set n=4096 --set d=64 --set Br=64 --set Bc=64 -o fa2_4096.html");

    c.sweep = app.add_subcommand("sweep", "Every counter of one program across parameter values, side by side.");
    c.sweep->add_option("file", a.sweep.file, program_help)->required();
    c.sweep->add_option("--set", a.sweep.sets, "NAME=V1,V2,... values to sweep (repeatable; several lists sweep every combination)")
        ->required();
    add_format(c.sweep, a.sweep);
    add_force(c.sweep, a.sweep.force);
    add_cache(c.sweep, a.sweep);
    c.sweep->add_option("--plot", a.sweep.plot, "also draw the DRAM traffic against the swept parameter: FILE.svg, FILE.png or FILE.html");
    c.sweep->add_option("--plot-y", a.sweep.plot_y,
                        "what --plot draws: traffic (DRAM reads, writes and their sum), cycles (with workers: and work), or time (the "
                        "predicted time on --machine)")
        ->check(CLI::IsMember({"traffic", "cycles", "time"}));
    c.sweep->add_option("--machine", a.sweep.machine,
                        "also predict each run's time on a named machine (h100, h200), as 'toysim cost --machine' does (one head): a line "
                        "after the table, and --plot-y time");
    c.sweep->footer("\nexamples:\n"
                    "  toysim sweep programs/p5_online_softmax.toy --set n=10,100,1000\n"
                    "  toysim sweep programs/attention/fa2.toy --set n=128,256,512,1024 --format csv\n"
                    "  toysim sweep programs/attention/fa1.toy --set n=256 --set Bc=16,32,64");

    c.cost = app.add_subcommand("cost", "DRAM reads and writes per array as formulas of the parameters, without running.");
    c.cost->add_option("file", a.cost.file, program_help)->required();
    c.cost->add_option("--set", a.cost.sets, "evaluate the formulas at these parameter values, e.g. --set n=1000000");
    add_format(c.cost, a.cost);
    add_cache(c.cost, a.cost);
    c.cost->add_option("--heads", a.cost.heads, "with a cache: independent copies of the problem that share it, as a GPU's grid runs them (default 1)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{65535}));
    c.cost->add_flag("--cold-launches", a.cost.cold_launches,
                     "with a cache: each top-level loop is a GPU launch measured from a cold L2 (emptied before it)");
    c.cost->add_option("--machine", a.cost.machine,
                       "also predict each launch's time on a named machine (h100, h200): its occupancy from the program's schedule, its "
                       "L2 unless --cache or the program gives one");
    c.cost->add_option("--workers", a.cost.workers, "with a cache: the workers a grid runs on, as a GPU's resident blocks (default: the program's)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
    c.cost->footer("\nThe formulas come from the loops and slices of the program; the counts beside them come from a\n"
                   "count-only pass over the loops (no arithmetic), so both answer at any n in milliseconds.\n"
                   "\nexamples:\n"
                   "  toysim cost programs/attention/fa2.toy\n"
                   "  toysim cost programs/attention/fa1.toy --set n=1000000 --set d=128 --set Bc=128\n"
                   "  toysim cost programs/p4_softmax_3pass.toy --format json\n"
                   "  toysim cost programs/attention/schedules/fa2_v3_mma.toy --set n=4096 --set d=64 --set Br=128 --set Bc=64 --machine h100 --heads 16 --dtype fp16");

    c.tune = app.add_subcommand("tune", "The best schedule by the model: --vary ranks a space of parameters by predicted time, DRAM bytes or "
                                        "cycles; --schedule searches a straight-line program's instructions for the fewest cycles.");
    c.tune->add_option("file", a.tune.file, program_help)->required();
    c.tune->add_option("--vary", a.tune.vary, "NAME=V1,V2,...: the space, every combination of the lists (repeatable), e.g. --vary Br=32,64,128");
    c.tune->add_option("--objective", a.tune.objective, "what ranks the points: time (predicted on --machine), dram (bytes, its L2 walked) or cycles (the toy machine's)")
        ->check(CLI::IsMember({"time", "dram", "cycles"}));
    c.tune->add_option("--machine", a.tune.machine, "the named machine whose time and L2 rank the points (default: with --gpu the GPU's own, h100 or h200; else h100)");
    c.tune->add_option("--heads", a.tune.heads, "independent copies of the problem, as a GPU's grid runs them (default 1)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{65535}));
    c.tune->add_option("--dtype", a.tune.dtype, "the element size the L2 sees: fp32 (the default), fp16, bf16 or e4m3")
        ->check(CLI::IsMember({"fp32", "fp16", "bf16", "e4m3"}));
    c.tune->add_option("--top", a.tune.top, "points printed, best first (default 10)")->check(CLI::Range(1, 10000));
    c.tune->add_option("--plot", a.tune.plot, "with --vary: draw the objective against the first --vary parameter, a curve per value of the others, into FILE (.svg, .png or .html)");
    c.tune->add_flag("--schedule", a.tune.schedule,
                     "search the orders of the program's loads, products and stores and their registers for the fewest cycles, and prove "
                     "none is shorter");
    c.tune->add_option("--registers", a.tune.registers, "the register file to search with (default: the program's registers line)")
        ->check(CLI::Range(1, 16));
    c.tune->add_flag("--gpu", a.tune.gpu,
                     "with --vary: run the --top points and a --sample of the rest on the GPU, checked as gpu run checks them, and set the "
                     "model's pick against the best measured, with the rank correlation of predicted and measured times");
    c.tune->add_option("--kernel", a.tune.kernel,
                       "with --vary: rank (and with --gpu, run) each point as this kernel runs it: 'generated' (CUDA generated from the program) or a "
                       "version of the program's kernel, as gpu run's --kernel; points the kernel refuses are dropped");
    c.tune->add_option("--sample", a.tune.sample, "with --gpu: points past --top that run too, spread evenly over the ranking, or 'all' (default 5)")
        ->check(CLI::IsMember({"all"}) | CLI::Range(0, 10000));
    c.tune->add_option("--repeats", a.tune.repeats, "with --gpu: timed launches a point, the median kept (default 20)")->check(CLI::Range(1, 1000));
    c.tune->add_option("--set", a.tune.sets, "override a parameter, e.g. --set n=2 (repeatable)");
    c.tune->add_option("--format", a.tune.format, "table or json (--vary: also markdown or csv)")->check(CLI::IsMember(formats));
    c.tune->footer("\nThe program says what is computed (each stored output a sum of products of loaded values), not in\n"
                   "which order: the search finds the shortest program that stores the same sums on the seeds' machine\n"
                   "(one cycle an instruction), writes it as a .toy program, runs its checks and traces it. Shorter\n"
                   "means fewer instructions among programs that compute each product once and keep each sum in one\n"
                   "register until it is stored.\n"
                   "\nexamples:\n"
                   "  toysim tune programs/attention/schedules/fa2_v3_mma.toy --set n=4096 --set d=64 --vary Br=64,128 --vary Bc=32,64,128 --heads 16 --dtype fp16\n"
                   "  toysim tune programs/attention/fa2.toy --set n=4096 --set d=64 --vary Br=32,64,128 --vary Bc=32,64,128 --heads 16 --dtype fp16 --kernel generated --gpu\n"
                   "  toysim tune --schedule programs/quiz_matmul_inner_6reg.toy\n"
                   "  toysim tune --schedule programs/p2_matmul_inner_3reg.toy --registers 4\n"
                   "  toysim tune --schedule programs/p3_matmul_outer_6reg.toy --format json");

    c.compare = app.add_subcommand("compare", "Side-by-side cost table of several programs.");
    c.compare->add_option("files", a.compare.files, "the .toy programs")->required();
    c.compare->add_option("--set", a.compare.sets, "override a parameter in every program that declares it");
    c.compare->add_option("--sweep", a.compare.sweep, "NAME=V1,V2,...: compare at each value (with --plot, one curve per program)");
    c.compare->add_option("--plot", a.compare.plot, "with --sweep: draw DRAM traffic against the swept value: FILE.svg, FILE.png or FILE.html");
    c.compare->add_option("--plot-y", a.compare.plot_y, "what --plot draws: traffic or cycles")->check(CLI::IsMember({"traffic", "cycles"}));
    add_format(c.compare, a.compare);
    add_force(c.compare, a.compare.force);
    add_cache(c.compare, a.compare);
    c.compare->footer("\nexamples:\n"
                      "  toysim compare programs/p2_matmul_inner_3reg.toy programs/p3_matmul_outer_6reg.toy\n"
                      "  toysim compare programs/p4_softmax_3pass.toy programs/p5_online_softmax.toy --set n=1000");

    c.gpu = app.add_subcommand("gpu", "Run a program's CUDA kernel on a real GPU: counted traffic against the simulator's, checked, timed.");
    c.gpu->require_subcommand(1);
    c.gpu_run = c.gpu->add_subcommand("run", "Run the program on the GPU: the kernel its 'gpu' line names, or CUDA generated from it (--kernel generated, "
                                             "and any program without a 'gpu' line).");
    c.gpu_run->add_option("file", a.gpu_run.file, program_help)->required();
    c.gpu_run->add_option("--set", a.gpu_run.sets, "override a parameter, e.g. --set n=4096 (repeatable)");
    c.gpu_run->add_option("--kernel", a.gpu_run.kernel,
                          "run another version of the program's kernel, e.g. fa2_v2_mma for fa2.toy (toysim gpu kernels), or 'generated': "
                          "CUDA generated from the program (toysim gpu cuda)");
    c.gpu_run->add_option("--heads", a.gpu_run.heads, "batch × heads: independent copies of the problem, the grid's extra dimension (default 1)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{65535}));
    c.gpu_run->add_option("--dtype", a.gpu_run.dtype,
                          "storage type: fp32, or fp16 or bf16 for attention (fp32 arithmetic in every case), or e4m3 for the FP8 kernels (fp8 products, fp16 O)")
        ->check(CLI::IsMember({"fp32", "fp16", "bf16", "e4m3"}));
    c.gpu_run->add_option("--warmups", a.gpu_run.warmups, "launches before timing (default 3)")->check(CLI::Range(0, 1000));
    c.gpu_run->add_option("--repeats", a.gpu_run.repeats, "timed launches; the median is reported (default 20)")->check(CLI::Range(1, 10000));
    c.gpu_run->add_option("--measure", a.gpu_run.measure,
                          "also read each launch's DRAM and L2 traffic with CUPTI: cold (L2 flushed first) or warm (default off)")
        ->check(CLI::IsMember({"off", "cold", "warm"}));
    c.gpu_run->add_option("--exercise", a.gpu_run.exercise, "FILE is a solution of this exercise (a folder or a name, as 'toysim grade' takes it): "
                                                     "its spec's arrays, checks and parameters, run generated");
    c.gpu_run->add_flag("--no-tensor-cores", a.gpu_run.no_tensor_cores, "generated CUDA: every product on the CUDA cores (in fp16 and bf16, products of whole 16×16 fragments run on the tensor cores, in tf32)");
    add_race_force(c.gpu_run, a.gpu_run.force);
    add_format(c.gpu_run, a.gpu_run);
    c.gpu_run->footer("\nexamples:\n"
                      "  toysim gpu run programs/attention/fa2.toy --set n=4096 --set d=64 --set Br=64 --set Bc=64\n"
                      "  toysim gpu run programs/attention/fa2.toy --kernel fa2_v2_mma --set n=4096 --set d=64 --set Br=128 --set Bc=64 --heads 64 --dtype fp16\n"
                      "  toysim gpu run programs/attention/fa1.toy --set n=1000 --set d=64 --set Br=32 --set Bc=32 --heads 8 --dtype fp16\n"
                      "  toysim gpu run programs/p5_online_softmax.toy --set n=100000 --heads 64 --format json\n"
                      "  toysim gpu run programs/matmul_outer.toy --set n=1024 --set t=16\n"
                      "  toysim gpu run programs/attention/fa2_causal.toy --set n=1000   (no 'gpu' line: generated)\n"
                      "  toysim gpu run programs/attention/fa2.toy --kernel generated --set n=4096 --set d=64 --heads 64 --dtype fp16");
    c.gpu_cuda = c.gpu->add_subcommand("cuda", "Print the CUDA that 'gpu run' generates from a program: your program, as CUDA, each "
                                               "kernel under the .toy lines it came from.");
    c.gpu_cuda->add_option("file", a.gpu_cuda.file, program_help)->required();
    c.gpu_cuda->add_option("--set", a.gpu_cuda.sets, "override a parameter, e.g. --set n=4096 (repeatable)");
    c.gpu_cuda->add_option("--dtype", a.gpu_cuda.dtype, "storage type of the arrays: fp32, fp16 or bf16 (default fp32)")
        ->check(CLI::IsMember({"fp32", "fp16", "bf16"}));
    c.gpu_cuda->add_option("--exercise", a.gpu_cuda.exercise, "FILE is a solution of this exercise (a folder or a name, as 'toysim grade' takes it)");
    c.gpu_cuda->add_flag("--no-tensor-cores", a.gpu_cuda.no_tensor_cores, "generated CUDA: every product on the CUDA cores (in fp16 and bf16, products of whole 16×16 fragments run on the tensor cores, in tf32)");
    c.gpu_cuda->add_flag("--prelude", a.gpu_cuda.prelude, "also print the device prelude the module starts with (the tile loops)");
    c.gpu_cuda->add_flag("--compile", a.gpu_cuda.compile, "also compile it with NVRTC for sm_90a, the H100 and H200 (no GPU needed) and say what ptxas gave each kernel (registers, spills), or print the compiler's errors");
    add_race_force(c.gpu_cuda, a.gpu_cuda.force);
    c.gpu_cuda->footer("\nexamples:\n"
                       "  toysim gpu cuda programs/attention/fa2.toy\n"
                       "  toysim gpu cuda programs/p2_matmul_inner_3reg.toy --prelude\n"
                       "  toysim gpu cuda programs/attention/flash_decoding.toy --dtype fp16 --compile");
    c.gpu_kernels = c.gpu->add_subcommand("kernels", "List the kernels a program's 'gpu' line may name.");
    add_format(c.gpu_kernels, a.gpu_kernels);

    c.diff = app.add_subcommand("diff", "Simulated DRAM traffic beside the GPU kernel's counts and the hardware's L2 and DRAM traffic.");
    c.diff->add_option("file", a.diff.file, program_help)->required();
    c.diff->add_option("--set", a.diff.sets, "override a parameter, e.g. --set n=4096 (repeatable)");
    c.diff->add_option("--kernel", a.diff.kernel, "live: run another version of the program's kernel, e.g. fa2_v2_mma for fa2.toy");
    c.diff->add_option("--gpu", a.diff.gpu_source, "live (run the kernel on this machine's GPU) or a saved 'toysim gpu run --format json' file");
    c.diff->add_option("--heads", a.diff.heads, "live: batch × heads (default 1)")->check(CLI::Range(std::int64_t{1}, std::int64_t{65535}));
    c.diff->add_option("--dtype", a.diff.dtype, "live: fp32, fp16, bf16 or e4m3")->check(CLI::IsMember({"fp32", "fp16", "bf16", "e4m3"}));
    c.diff->add_flag("--no-tensor-cores", a.diff.no_tensor_cores, "generated CUDA: every product on the CUDA cores (in fp16 and bf16, products of whole 16×16 fragments run on the tensor cores, in tf32)");
    c.diff->add_option("--measure", a.diff.measure, "live: L2 cold (flushed first, the default) or warm")->check(CLI::IsMember({"cold", "warm"}));
    c.diff->add_option("--sweep", a.diff.sweep, "live: NAME=V1,V2,... runs the kernel at each value (n=1024,4096,16384)");
    c.diff->add_option("--plot", a.diff.plot, "with --sweep: write the traffic against the swept value as an SVG file");
    c.diff->add_option("--plot-y", a.diff.plot_y, "what --plot draws: traffic (simulated, L2, DRAM) or time (measured and predicted)")
        ->check(CLI::IsMember({"traffic", "time"}));
    c.diff->add_option("--cache", a.diff.cache, std::string("the modeled L2 that predicts DRAM bytes (default: the device's preset, h100 on an H100, h200 on an H200): ") + kCacheSpec);
    c.diff->add_option("--workers", a.diff.workers, "the workers the prediction runs a grid on (default: resident blocks per SM × SMs, as recorded)")
        ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 20));
    add_race_force(c.diff, a.diff.force);
    add_format(c.diff, a.diff);
    c.diff->footer("\nexamples:\n"
                   "  toysim diff programs/attention/fa2.toy --set n=4096 --set d=64 --set Br=64 --set Bc=64 --heads 16 --dtype fp16\n"
                   "  toysim diff programs/attention/fa2.toy --set n=4096 --set d=64 --set Br=64 --set Bc=64 --gpu results.json");
    c.grade = app.add_subcommand("grade", "Grade a student's solution against an exercise: every test case, its verdict, figures and points.");
    c.grade->add_option("exercise", a.grade.exercise, "the exercise: a folder holding exercise.toy, or a name under programs/exercises")->required();
    c.grade->add_option("solution", a.grade.solution, "the student's .toy file (instructions, loops and lets only)")->required();
    c.grade->add_option("--format", a.grade.format, "table, json or gradescope (Gradescope's results.json)")
        ->check(CLI::IsMember({"table", "json", "gradescope"}));
    c.grade->footer("\nexit codes: 0 every test passed, 1 some did not, 2 the exercise itself is bad.\n"
                    "\nexamples:\n"
                    "  toysim grade programs/exercises/p2_matmul_3reg my_p2.toy\n"
                    "  toysim grade p5_online_softmax my_p5.toy --format gradescope > /autograder/results/results.json");

    c.exercise = app.add_subcommand("exercise", "The course's exercises: list them, or start one.");
    c.exercise->require_subcommand(1);
    c.exercise_list = c.exercise->add_subcommand("list", "List the exercises with their titles and points.");
    add_format(c.exercise_list, a.exercise_list);
    c.exercise_start = c.exercise->add_subcommand("start", "Copy an exercise's starter file into a folder to work in.");
    c.exercise_start->add_option("name", a.exercise_start.exercise, "the exercise's name (see 'toysim exercise list')")->required();
    c.exercise_start->add_option("dir", a.exercise_start.directory, "the folder to work in (created if missing)")->required();
    return c;
}

std::string command_list() {
    std::string out;
    for (auto name : kCommands) out += (out.empty() ? "" : ", ") + std::string(name);
    return out;
}

// "Usage: toysim [OPTIONS] SUBCOMMAND", as --help says it.
std::string usage_line(CLI::App& app) {
    std::string help = app.help();
    size_t at = help.find("Usage:");
    if (at == std::string::npos) return "Usage: toysim COMMAND [OPTIONS] FILE";
    return help.substr(at, help.find('\n', at) - at);
}

// Parses the arguments and runs the subcommand they name; every parse error is one
// "toysim: error: ..." line.
int parse_and_dispatch(const std::vector<std::string>& args, Context& ctx) {
    CLI::App app{"toysim: a cycle-accurate toy machine for learning how FlashAttention works.\n"
                 "Runs .toy instruction programs (LOAD, STORE, MAC, EXP, ...) and counts cycles and DRAM traffic.",
                 "toysim"};
    Args a;
    Commands c = define_commands(app, a);

    // The command is the first word that is not an option (the top level has only --help and
    // --version, which take no value): say which commands there are when it is not one.
    std::string command;
    for (const auto& a : args)
        if (a.empty() || a[0] != '-') {
            command = a;
            break;
        }
    bool asks_help_or_version = false;
    for (const auto& a : args) asks_help_or_version = asks_help_or_version || a == "--help" || a == "-h" || a == "--version";
    if (command.empty() && !asks_help_or_version) {
        ctx.err << fmt::format("toysim: error: no command given; the commands are {}\n{}\nRun 'toysim --help' for more.\n",
                               command_list(), usage_line(app));
        return kBadInput;
    }
    if (!command.empty() && std::find(kCommands.begin(), kCommands.end(), command) == kCommands.end()) {
        ctx.err << fmt::format("toysim: error: unknown command {}{} (the commands: {})\n", quoted_name(command),
                               did_you_mean(command, kCommands), command_list());
        return kBadInput;
    }

    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e, ctx.out, ctx.err) == 0 ? kOk : kBadInput;  // --help, --version
        std::string see = command.empty() ? "toysim --help" : fmt::format("toysim {} --help", command);
        ctx.err << fmt::format("toysim: error: {}; see '{}'\n", escape_invisible(e.what()), see);
        return kBadInput;
    }

    auto dtype_given = [](CLI::App* command) { return command->count("--dtype") > 0; };
    if (c.run->parsed()) return a.run.dtype_given = dtype_given(c.run), run_command(a.run, ctx);
    if (c.trace->parsed()) return a.trace.dtype_given = dtype_given(c.trace), trace_command(a.trace, ctx);
    if (c.sweep->parsed()) return a.sweep.dtype_given = dtype_given(c.sweep), sweep_command(a.sweep, ctx);
    if (c.cost->parsed()) return a.cost.dtype_given = dtype_given(c.cost), cost_command(a.cost, ctx);
    if (c.tune->parsed()) return tune_command(a.tune, ctx);
    if (c.compare->parsed()) return a.compare.dtype_given = dtype_given(c.compare), compare_command(a.compare, ctx);
    if (c.gpu_run->parsed()) return gpu_run_command(a.gpu_run, ctx);
    if (c.gpu_kernels->parsed()) return gpu_kernels_command(a.gpu_kernels, ctx);
    if (c.gpu_cuda->parsed()) return gpu_cuda_command(a.gpu_cuda, ctx);
    if (c.diff->parsed()) {
        a.diff.heads_given = c.diff->count("--heads") > 0;
        a.diff.dtype_given = dtype_given(c.diff);
        return diff_command(a.diff, ctx);
    }
    if (c.step->parsed()) return step_command(a.step, ctx);
    if (c.view->parsed()) return view_command(a.view, ctx);
    if (c.grade->parsed()) return grade_command(a.grade, ctx);
    if (c.exercise_list->parsed()) return exercise_list_command(a.exercise_list, ctx);
    return exercise_start_command(a.exercise_start, ctx);
}

}  // namespace

int main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const Io& io) {
    Context ctx{io.in ? *io.in : std::cin, out, err, io.err_is_terminal, nullptr};
    ctx.in_is_terminal = io.in_is_terminal;
    ctx.out_is_terminal = io.out_is_terminal;
    int code = kBadInput;
    try {
        code = parse_and_dispatch(args, ctx);
    } catch (const ToyError& e) {
        err << format_error(with_hint(e), ctx.source.get(), "toysim");
        code = kBadInput;
    } catch (const std::bad_alloc&) {
        err << "toysim: error: out of memory: the run needs more memory than this machine has; try smaller parameters, or "
               "`toysim cost`, which counts without running\n";
        code = kBadInput;
    } catch (const std::length_error&) {
        err << "toysim: error: out of memory: the run would need more memory than a process can have; try smaller "
               "parameters, or `toysim cost`, which counts without running\n";
        code = kBadInput;
    }
    // Everything is written: a full disk, a closed stdout or a reader that went away is an
    // error, not a silent success.
    out.flush();
    if (!out) {
        int reason = write_error(out.rdbuf());
        err << "toysim: error: cannot write the output" << (reason ? std::string(": ") + std::strerror(reason) : std::string()) << "\n";
        code = kBadInput;
    }
    err.flush();
    return code;
}

}  // namespace toysim::cli
