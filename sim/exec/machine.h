// Running a program: the counters it produces, its checks, and step-by-step traces.
// Nothing here prints; printers (report.h) turn these results into text.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "sim/lower/program.h"
#include "sim/exec/symbolic.h"

namespace toysim {

struct ArrayStats {
    std::uint64_t reads = 0, writes = 0;
    std::uint64_t elements_read = 0;   // distinct elements read at least once
    std::uint64_t max_reads = 0;       // the most any one element was read (reuse from DRAM)
    std::map<std::uint64_t, std::uint64_t> read_histogram;  // reads per element -> elements
};

struct CounterValue {
    std::uint64_t count = 0;
    double ratio = 0;
    bool is_ratio = false;
};

struct Counters {
    std::uint64_t cycles = 0;
    std::uint64_t instructions = 0;
    std::array<std::uint64_t, kOpCount> by_opcode{};       // instructions
    std::array<std::uint64_t, kOpCount> work_by_opcode{};  // units of work: elements, multiply-adds
    std::uint64_t dram_reads = 0, dram_writes = 0;
    std::vector<ArrayStats> arrays;  // parallel to Program::arrays
    int peak_registers = 0;          // distinct registers the run used (tile registers included)
    std::uint64_t compute_ops = 0;   // work of class Compute (a scalar instruction is one unit)
    double arithmetic_intensity() const {
        std::uint64_t traffic = dram_reads + dram_writes;
        return traffic ? static_cast<double>(compute_ops) / static_cast<double>(traffic) : 0.0;
    }
    // One counter of the table (isa/counters.h); arithmetic_intensity is a ratio, the rest counts.
    CounterValue value(const CounterRef& counter) const;
};

struct CheckResult {
    bool ok = false;
    std::int64_t elements = 0;
    double max_abs_err = 0, max_rel_err = 0;
    std::string first_wrong;  // "c[0][1] = 3 but the reference is 4", or "c[1][1] was never written"
};

struct ExpectResult {
    std::uint64_t actual = 0;
    bool ok = false;
};

struct RunOptions {
    std::uint64_t max_steps = 10'000'000'000ULL;
};

struct RunResult {
    Counters counters;
    std::vector<CheckResult> checks;    // parallel to Program::checks
    std::vector<ExpectResult> expects;  // parallel to Program::expects
    double seconds = 0;                 // execution only, for instructions per second
    std::vector<double> dram;           // DRAM when the program ended (Program::arrays give the layout)
    std::vector<std::uint8_t> present;  // per element: holds a value
    bool checks_ok() const;
    bool expects_ok() const;
    // An array's final values, row-major; NaN where nothing was ever stored.
    std::vector<double> array_values(const Program& program, int array) const;
};

// Numeric run: counters, checks against the references, and the program's expected figures.
// Throws ToyError on a run-time fault (bounds, unwritten register or element, step limit).
RunResult run(const Program& program, const RunOptions& options = {});

// One executed instruction, as a trace row needs it.
struct TraceStep {
    std::int32_t pc = 0;
    std::int32_t reg = -1;  // register written, or -1
    std::int32_t bank = -1; // tile instructions: the tile written (or stored), or -1
    std::int32_t rows = 0, cols = 0;  // tile instructions: the block of values recorded
    std::uint32_t first = 0;          // where they start in Trace::tile_numbers / tile_symbols
    std::array<std::int64_t, kMaxLoopDepth> vars{};
    double number = 0;         // numeric mode: the value written
    std::uint32_t symbol = 0;  // symbolic mode: the expression written
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

}  // namespace toysim
