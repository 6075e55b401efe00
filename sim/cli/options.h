// Each command's options as the command line gives them: one struct per command, built from
// the pieces several commands share, so a command reads only what it has. Internal to sim/cli.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace toysim::cli {

// FILE and --set NAME=VALUE: one program at some parameters.
struct ProgramArgs {
    std::string file;               // "-": standard input
    std::vector<std::string> sets;  // sweep: NAME=V1,V2,...
};

// --format: table, json, markdown or csv (grade: table, json or gradescope).
struct FormatArgs {
    std::string format = "table";
};

// --cache and --dtype (run, trace, sweep, compare, cost): a cache that replaces the program's
// own `cache` line, and the element size it sees (which needs a cache).
struct CacheArgs {
    std::string cache;  // a preset or settings, as isa/cache_config.h parses them
    std::string dtype = "fp32";
    bool dtype_given = false;
};

struct RunArgs : ProgramArgs, FormatArgs, CacheArgs {
    std::string machine;  // a named machine: predicted time after the run
    bool stats = false;
    std::vector<std::string> shown_arrays;  // --show
    std::uint64_t max_steps = 0;            // 0: the default
    bool force = false;                     // run however long the estimate
};

struct TraceArgs : ProgramArgs, FormatArgs, CacheArgs {
    std::string values = "auto";  // symbolic, numeric, or auto
    std::uint64_t max_steps = 0;  // 0: the default
    bool ditto = false;
};

struct StepArgs : ProgramArgs {
    std::string values = "auto";
    std::uint64_t max_steps = 0;
    std::string color = "auto";  // auto (on a terminal), always or never
    // Accepted as run's is, but nothing reads it: a session runs only as far as it is stepped,
    // so there is no long run to refuse.
    bool force = false;
};

struct ViewArgs : ProgramArgs {
    std::string values = "auto";
    std::uint64_t max_steps = 0;
    std::string output;  // the HTML file to write
};

// tune: --schedule searches a straight-line program's instructions for the fewest cycles.
struct TuneArgs : ProgramArgs, FormatArgs {
    bool schedule = false;          // the instruction-level search
    int registers = 0;              // --schedule: 0, the program's registers line
    std::vector<std::string> vary;  // the space: NAME=V1,V2,...
    std::string objective = "time";
    std::string machine = "h100";
    std::int64_t heads = 1;
    std::string dtype = "fp32";
    int top = 10;
    std::string plot;  // --vary: the objective against the first parameter, to this file
    bool gpu = false;        // run the best points and a sample of the rest on the GPU
    std::string kernel;      // rank (and run) as this kernel runs: "generated", or a version of the program's
    std::string sample = "5";  // --gpu: points past --top that run too, or "all"
    int repeats = 20;        // --gpu: timed launches a point
};

struct CostArgs : ProgramArgs, FormatArgs, CacheArgs {
    std::int64_t heads = 1;      // with a cache: copies of the problem sharing it
    std::int64_t workers = 0;    // with a cache: a grid's workers (0: the program's)
    bool cold_launches = false;  // with a cache: each top-level loop from a cold cache
    std::string machine;         // a named machine: predicted time too
};

// What sweep and compare share: several runs side by side, and a plot of them.
struct SideBySideArgs : FormatArgs, CacheArgs {
    std::vector<std::string> sets;
    std::string plot;                 // a file to draw into
    std::string plot_y = "traffic";   // traffic or cycles
    bool force = false;
};

struct SweepArgs : SideBySideArgs {
    std::string file;
    std::string machine;  // a named machine: each run's predicted time
};

struct CompareArgs : SideBySideArgs {
    std::vector<std::string> files;
    std::string sweep;  // NAME=V1,V2,...
};

// How a program's kernel is launched on the GPU (gpu run, diff).
struct LaunchArgs {
    std::string kernel;  // another version of the program's kernel, or "generated"
    std::int64_t heads = 1;
    std::string dtype = "fp32";
    bool heads_given = false, dtype_given = false;  // diff: named (a saved run has its own)
    bool no_tensor_cores = false;
    std::string measure = "off";  // off, cold or warm (diff: off is cold)
    bool force = false;           // check for races however long it takes
};

struct GpuRunArgs : ProgramArgs, FormatArgs, LaunchArgs {
    int warmups = 3, repeats = 20;
    std::string exercise;  // FILE is a solution of this exercise
};

struct GpuCudaArgs : ProgramArgs {
    std::string dtype = "fp32";
    std::string exercise;
    bool no_tensor_cores = false, prelude = false, compile = false, force = false;
};

struct DiffArgs : ProgramArgs, FormatArgs, LaunchArgs {
    std::string gpu_source = "live";  // live, or a saved `gpu run --format json` file
    std::string sweep;                // NAME=V1,V2,...
    std::string plot;                 // with --sweep: an SVG file
    std::string plot_y = "traffic";   // what it draws: traffic or time
    std::string cache;                // the modeled L2 (default: the device's preset)
    std::int64_t workers = 0;         // the prediction's workers (0: as recorded)
};

struct GradeArgs : FormatArgs {
    std::string exercise;  // a folder or a name
    std::string solution;  // the student's .toy file
};

struct ExerciseStartArgs {
    std::string exercise;
    std::string directory;
};

}  // namespace toysim::cli
