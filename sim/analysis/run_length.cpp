// Runs that would take hours, refused before they start (the CLI's run, compare, sweep and
// grade; the browser's engine): the estimate comes from the count-only pass (estimate_work).
#include <algorithm>
#include <fmt/format.h>

#include "sim/analysis/cost.h"
#include "support/text.h"

namespace toysim {

namespace {

// A run estimated to take longer than this is refused unless forced.
constexpr double kMaxMinutes = 10;

// The speed of a whole `toysim run` (filling the inputs, executing, and the double-precision
// reference check), measured with the Release build (GCC 12) on the 2-core development
// machine, shared (load average about 3.4), three runs each, wall clock (/usr/bin/time -f %e):
//  - scalar: toysim run programs/matmul_inner.toy --set n=256: 50,397,184 instructions in
//    0.31 s each time: 163 M instructions/s;
//  - tiles: toysim run programs/attention/fa2.toy --set n=4096 --set d=64 --set Br=64 --set Bc=64:
//    62,016 instructions doing 2,267,566,080 units of work in 4.22 to 5.30 s, median 5.07 s
//    (0.89 s of it executing; the rest is the inputs and the reference): 447 M units/s.
// A run's time is then its instructions at the first rate plus the units of work beyond one
// per instruction (what tile instructions add) at the second.
constexpr double kInstructionsPerSecond = 163e6;
constexpr double kTileUnitsPerSecond = 447e6;

}  // namespace

std::vector<WorkEstimate> refuse_long_runs(const std::vector<const Program*>& programs, std::uint64_t max_steps_given, bool force) {
    std::vector<WorkEstimate> estimates;
    double instructions = 0, units = 0, seconds = 0;
    bool exact = true;
    for (const Program* p : programs) {
        WorkEstimate w = estimate_work(*p);
        estimates.push_back(w);
        // A run stops at a step limit the user set: only that share of its work is done. (The
        // default limit is not counted: a run that would take days, cut off after minutes by
        // it, is refused here rather than stopped there.)
        double share = max_steps_given && w.instructions > max_steps_given
                           ? static_cast<double>(max_steps_given) / static_cast<double>(w.instructions)
                           : 1.0;
        double i = static_cast<double>(w.instructions) * share, u = static_cast<double>(w.units) * share;
        instructions += i;
        units += u;
        seconds += i / kInstructionsPerSecond + std::max(0.0, u - i) / kTileUnitsPerSecond;
        exact = exact && w.exact;
    }
    double minutes = seconds / 60;
    if (force || minutes <= kMaxMinutes) return estimates;
    // One program: point at its outermost first loop, where the trip counts start to multiply.
    Loc where = programs.size() == 1 && !programs[0]->loops.empty() ? programs[0]->loops[0].loc : Loc{};
    throw ToyError(ErrorKind::TooLongToRun, where,
                   fmt::format("{} take about {} minutes ({} instructions, {}{} units of work, at about {} M instructions/s "
                               "and {} M units of tile work/s)",
                               programs.size() == 1 ? "this run would" : fmt::format("these {} runs would", programs.size()),
                               grouped(minutes), grouped(instructions), exact ? "" : "up to ", grouped(units),
                               grouped(kInstructionsPerSecond / 1e6), grouped(kTileUnitsPerSecond / 1e6)));
}

}  // namespace toysim
