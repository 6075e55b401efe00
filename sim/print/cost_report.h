// Printing what `toysim cost` found (sim/analysis/cost.h): tables, Markdown, CSV and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/analysis/cost.h"
#include "sim/analysis/races.h"
#include "sim/print/format.h"
#include "sim/timing/predict.h"

namespace toysim {

// ---- printing ----

// The table array | reads | = | writes | =, where "=" is the formula's value at the program's
// parameters. Where the exact count differs (an inexact formula) the cell shows both,
// "72 (counted 64) *", with the note below. Then the lets' legend. CSV has one row per array
// with separate columns (array, reads, reads_value, reads_counted, writes, writes_value,
// writes_counted, exact, note); JSON is cost_json. Then, per parallel loop, what the subscripts
// prove about races (not in CSV). With `time`: work and cycles as formulas, and each parallel
// loop's iterations and cycles per iteration (not in CSV).
std::string format_cost(const Program& program, const std::vector<ArrayFormulas>& formulas,
                        const std::vector<ArrayTraffic>& counted, Format format, const std::vector<RaceProof>& races = {},
                        const TimeFormulas* time = nullptr);
// {"program", "params": {name: value}, "arrays": {NAME: {"role", "shape", "reads": {"formula",
//  "value", "counted"}, "writes": {...}, "exact", "note"}}, "lets": [{"name", "definition",
//  "math", "value"}], "parallel": [{"line", "vars", "proven", "verdict"}], and with `time`
//  "time": {"work": {"formula", "value"}, "cycles": {...}, "workers", "exact", "exact_here", "note",
//  "grids": [{"line", "iterations": {...}, "iteration_cycles": {...}, "uniform", "note"}]}};
//  "value" is null where the formula cannot be evaluated, "note" null when exact.
nlohmann::ordered_json cost_json(const Program& program, const std::vector<ArrayFormulas>& formulas,
                                 const std::vector<ArrayTraffic>& counted, const std::vector<RaceProof>& races = {},
                                 const TimeFormulas* time = nullptr);

// A launch's predicted time as `cost --machine` and `diff` print it: "1.087 ms"; a bound with
// its time, "chain 0.151 ms"; every bound's seconds as a JSON object keyed by bound.
std::string milliseconds_text(double seconds);
std::string bound_text(const LaunchTime& time, TimeBound bound);
nlohmann::ordered_json bounds_json(const LaunchTime& time);
// The chain bound's parts: a JSON object keyed by part; "memory 0.012 ms, products 0.110 ms, ..."
// (the parts that take any time).
nlohmann::ordered_json chain_json(const LaunchTime& time);
std::string chain_text(const LaunchTime& time);

// `cost --machine NAME`: the occupancy the schedule gives, then each launch's predicted time,
// the bound that decides it and the next one (a launch without a grid: none, and why). JSON:
// {"machine", "heads", "products", "occupancy": {"threads", "shared_bytes",
// "registers_per_thread", "resident_blocks_per_sm", "limit"}, "launches": [{"launch", "line",
// "blocks", "seconds", "bound", "bounds": {...}, "chain": {...}, "tflops"} or {"launch", "line", "seconds": null,
// "why"}], "seconds"}.
std::string format_program_time(const Program& program, const ProgramTime& time, const MachineSpec& machine, std::int64_t heads, Format format);
nlohmann::ordered_json program_time_json(const Program& program, const ProgramTime& time, const MachineSpec& machine, std::int64_t heads);

}  // namespace toysim
