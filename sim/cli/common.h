// What the subcommands share (their options are in options.h): the program loader, error wording and the guard
// against runs that would take days. Internal to sim/cli.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "sim/cli/app.h"
#include "sim/cli/options.h"
#include "sim/analysis/cost.h"
#include "sim/print/report.h"
#include "sim/front/ast.h"
#include "sim/lower/program.h"
#include "sim/print/format.h"
#include "support/diag.h"
#include "support/text.h"

namespace toysim::cli {

// The streams, and the source file the error being reported points into (for its caret).
struct Context {
    std::istream& in;
    std::ostream& out;
    std::ostream& err;
    bool err_is_terminal = false;
    std::shared_ptr<const SourceFile> source;
    bool stdin_read = false;
    bool in_is_terminal = false, out_is_terminal = false;  // step: line editing and color
};


// ---- the program loader ----

struct Parsed {
    std::shared_ptr<const SourceFile> source;
    std::shared_ptr<const ast::Program> tree;
};

// Reads ("-" is standard input, named <stdin>) and parses a program; ctx.source is it from the
// moment it is read, so a parse error shows its line.
Parsed parse_program(const std::string& path, Context& ctx);
// Binds the parameters; ctx.source is this program's source meanwhile.
Program compile_program(const Parsed& parsed, const ParamSettings& settings, Context& ctx);
// Both.
Program load_program(const std::string& path, const ParamSettings& settings, Context& ctx);
// --cache and --dtype (run, trace, sweep, compare): the cache they give replaces the program's
// own `cache` line; --dtype sets the element size the cache sees, and needs a cache.
void apply_cache_options(Program& program, const CacheArgs& options);
// The same, with a named machine's own L2 (its preset has its name) where neither the options
// nor the program give a cache: what a machine's prediction walks (cost, run, sweep --machine).
void apply_cache_and_machine(Program& program, const CacheArgs& options, const std::string& machine);
// sweep_settings (NAME=V1,V2,... lists) is in sim/lower/program.h, shared with the browser's engine.
// A program's name in compare's columns: the file name without its directory and ".toy".
std::string short_program_name(const std::string& path);

// ---- user text in messages ----

// grouped ("13,999,996") and flag_subject (a name as a flag's prefix shows it) are in
// support/text.h.

// ---- long runs ----

// Each program's work from the count-only pass (estimate_work); unless `force`, refuses
// (ErrorKind::TooLongToRun) runs that together would take more than ten minutes, counting each
// only up to `max_steps_given` instructions, the --max-steps the user gave (0: none).
std::vector<WorkEstimate> check_run_length(const std::vector<const Program*>& programs, std::uint64_t max_steps_given, bool force);
// run() with a progress line on a terminal when the run takes more than a couple of seconds.
// `label` says which run ("run", "n=1000 (3 of 8)").
// to_verdict: a run-time fault ends the run with its counters so far and the fault in
// RunResult::fault, rather than throwing (for JSON, which graders always read).
RunResult run_with_progress(const Program& program, RunOptions options, Context& ctx, const std::string& label,
                            const WorkEstimate& estimate, bool to_verdict = false);

// ---- the subcommands; each returns the exit code ----

int run_command(const RunArgs& options, Context& ctx);
int trace_command(const TraceArgs& options, Context& ctx);
int sweep_command(const SweepArgs& options, Context& ctx);
int cost_command(const CostArgs& options, Context& ctx);
int tune_command(const TuneArgs& options, Context& ctx);
int compare_command(const CompareArgs& options, Context& ctx);
int gpu_run_command(const GpuRunArgs& options, Context& ctx);
int gpu_kernels_command(const FormatArgs& options, Context& ctx);
int gpu_cuda_command(const GpuCudaArgs& options, Context& ctx);
// A solution with its exercise's spec (EXERCISE: a folder or a name, as `toysim grade` takes it),
// compiled at `settings` (the spec's defaults otherwise): `gpu run --exercise`.
Program load_solution_program(const std::string& exercise, const std::string& solution, const ParamSettings& settings, Context& ctx);
int diff_command(const DiffArgs& options, Context& ctx);
int step_command(const StepArgs& options, Context& ctx);
int view_command(const ViewArgs& options, Context& ctx);
int grade_command(const GradeArgs& options, Context& ctx);
int exercise_list_command(const FormatArgs& options, Context& ctx);
int exercise_start_command(const ExerciseStartArgs& options, Context& ctx);

}  // namespace toysim::cli
