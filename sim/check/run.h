// A whole run as the commands use it: fill the inputs, run the machine, tally the counters,
// grade the checks and the expected figures. And a trace: the same with every step recorded.
// Nothing here prints; printers (sim/print) turn these results into text.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/check/checks.h"
#include "sim/exec/machine.h"

namespace toysim {

struct RunOptions {
    std::uint64_t max_steps = 10'000'000'000ULL;
    // Called every kProgressSteps instructions with the steps done so far (a long run's sign
    // of life); the executor itself never calls out.
    std::function<void(std::uint64_t steps)> on_progress;
    static constexpr std::uint64_t kProgressSteps = std::uint64_t{1} << 24;
    // The stream of every random (and default) input fill (random_fill): 0 is what `toysim run`
    // fills; a graded test case's seed picks another, so hidden tests see other data.
    std::uint64_t fill_stream = 0;
    // false: execute only (a race check before a GPU run): no checks against the references
    // and no expected figures, whose double-precision work would be thrown away.
    bool grade = true;
    static RunOptions limited_to(std::uint64_t steps) {
        RunOptions o;
        o.max_steps = steps;
        return o;
    }
};

struct RunResult {
    Counters counters;
    std::vector<CheckResult> checks;    // parallel to Program::checks
    std::vector<ExpectResult> expects;  // parallel to Program::expects
    double seconds = 0;                 // execution only, for instructions per second
    std::vector<double> dram;           // DRAM when the program ended (Program::arrays give the layout)
    std::vector<std::uint8_t> present;  // per element: holds a value
    std::optional<ToyError> fault;      // a run-time fault ended the run early (counters up to it)
    bool checks_ok() const;
    bool expects_ok() const;
    // An array's final values, row-major; NaN where nothing was ever stored.
    std::vector<double> array_values(const Program& program, int array) const;
};

// Numeric run: counters, checks against the references, and the program's expected figures.
// Throws ToyError on a run-time fault (bounds, unwritten register or element, step limit);
// run_to_verdict instead returns the counters so far with the fault in RunResult::fault.
RunResult run(const Program& program, const RunOptions& options = {});
RunResult run_to_verdict(const Program& program, const RunOptions& options = {});

// One executed instruction, as a trace shows it: the event (sim/exec/event.h) with the values
// it wrote kept only up to a block of kTraceBlock × kTraceBlock, so a trace's memory follows
// what it prints, not the size of the tiles.
inline constexpr std::int32_t kTraceBlock = 16;

struct TraceStep {
    std::int32_t pc = 0;
    Op op = Op::LOAD;
    std::uint64_t cycle = 0, cost = 0, work = 0;
    std::uint32_t worker = 0;  // the worker that ran it (programs with a parallel loop)
    std::uint32_t grid = 0;    // in a parallel loop: the loop's first iteration id, which names that run of it
    std::array<std::int64_t, kMaxLoopDepth> vars{};
    std::int32_t reg = -1;   // scalar register written, or -1
    std::int32_t tile = -1;  // tile written, or -1
    bool reg_was_written = false;
    double number = 0, number_old = 0;       // numeric: the scalar value written (a STORE: the value stored), old
    std::uint32_t symbol = 0, symbol_old = 0;  // symbolic: the same as expressions
    // A tile written, or the block a tile STORE wrote: its whole shape, and the recorded
    // top-left rows×cols block, new values at `first` and old ones (tiles) at `first_old` in
    // Trace::tile_numbers / tile_symbols.
    std::int64_t full_rows = 0, full_cols = 0, old_rows = 0, old_cols = 0;
    std::int32_t rows = 0, cols = 0;
    std::uint32_t first = 0, first_old = 0;
    bool has_old_block = false;
    std::optional<DramAccess> access;  // the DRAM it read or wrote
};

struct Trace {
    bool symbolic = false;
    std::vector<TraceStep> steps;
    std::vector<double> tile_numbers;          // tile steps' values, numeric mode
    std::vector<std::uint32_t> tile_symbols;   // and symbolic mode
    ExprArena arena;
    Counters counters;
    std::vector<int> registers_used;  // ascending
    std::optional<ToyError> error;    // the run stopped early with this fault
};

// Runs with every step recorded, numerically or symbolically; a fault ends the trace and is
// returned in Trace::error, so the rows before it can still be shown.
Trace trace(const Program& program, bool symbolic, const RunOptions& options = {});
// --values symbolic|numeric|auto: whether a trace, view or step session shows symbols. auto:
// for scalar programs (a tile's elements read better as numbers), and only where `fits` (a
// step session names every value of its run, so it takes runs of kSymbolicSessionSteps at most).
bool shows_symbols(std::string_view values, const Program& program, bool fits = true);

}  // namespace toysim
