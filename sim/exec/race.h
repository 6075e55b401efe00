// Race checking of `parallel for` loops. While a parallel loop (or grid) runs, the machine
// knows which iteration touched each DRAM element: a write by one iteration and a read or
// write of the same element by another is a data race, a located error that names the element,
// both iterations with their loop indices and both instructions (as ThreadSanitizer reports a
// race: the location, the two accesses, which one wrote).
//
// The iterations run one after another, in order, so per element it is enough to keep the
// last writer and the FIRST reader of the running loop: when iteration t writes, any other
// iteration that read the element ran before t, and the first reader is the earliest of them.
#pragma once

#include <cstdint>
#include <limits>

#include "sim/exec/state.h"
#include "sim/lower/program.h"

namespace toysim {

enum class RaceAccess : std::uint8_t { Read, Write };

[[noreturn]] __attribute__((cold)) void fail_race(const Program& p, std::int32_t pc, std::int64_t at, RaceAccess now,
                                                  std::uint32_t other, std::int32_t other_pc, RaceAccess then,
                                                  std::uint32_t iteration, std::uint32_t first_iteration,
                                                  const std::int64_t* start_vars, const std::int64_t* vars);

// A parallel loop's LoopBegin (entering: its range is not empty) and LoopEnd (continuing: it
// goes round again), after the loop variable is set.
template <class Value>
void race_loop_begin(const Program& p, MachineState<Value>& s, const LoopInfo& l, const std::int64_t* vars, bool entering) {
    if (l.grid_outer) {
        if (!entering) return;
        // A new loop: every older id is stale. Ids count up; near the end of 32 bits they start
        // again from 1 over a cleared table.
        if (s.iteration > std::numeric_limits<std::uint32_t>::max() / 2) {
            std::fill(s.race.begin(), s.race.end(), RaceCell{});
            s.iteration = 0;
        }
        s.first_iteration = s.iteration + 1;
        std::copy(vars, vars + kMaxLoopDepth, s.grid_start_vars.begin());
    }
    if (entering && l.grid_inner) ++s.iteration;
}

// After LoopEnd of a parallel loop: `continuing` or not.
template <class Value>
void race_loop_end(const Program& p, MachineState<Value>& s, const LoopInfo& l, const std::int64_t* vars, bool continuing) {
    (void)p;
    (void)vars;
    if (continuing && l.grid_inner) {
        if (s.iteration == std::numeric_limits<std::uint32_t>::max())
            throw ToyError(l.loc, "this parallel loop has more than 4,294,967,294 iterations: too many to check for races");
        ++s.iteration;
    }
    if (!continuing && l.grid_outer) s.iteration = 0;
}

// Checks a read without recording it.
template <class Value>
inline void race_check_read(const Program& p, const MachineState<Value>& s, std::int64_t at, std::int32_t pc, const std::int64_t* vars) {
    const RaceCell& c = s.race[static_cast<size_t>(at)];
    if (c.writer >= s.first_iteration && c.writer != s.iteration)
        fail_race(p, pc, at, RaceAccess::Read, c.writer, c.writer_pc, RaceAccess::Write, s.iteration, s.first_iteration,
                  s.grid_start_vars.data(), vars);
}

template <class Value>
inline void race_read(const Program& p, MachineState<Value>& s, std::int64_t at, std::int32_t pc, const std::int64_t* vars) {
    race_check_read(p, s, at, pc, vars);
    RaceCell& c = s.race[static_cast<size_t>(at)];
    if (c.reader < s.first_iteration) {
        c.reader = s.iteration;
        c.reader_pc = pc;
    }
}

// Checks a write without recording it (a slice is checked whole before it moves).
template <class Value>
inline void race_check_write(const Program& p, const MachineState<Value>& s, std::int64_t at, std::int32_t pc, const std::int64_t* vars) {
    const RaceCell& c = s.race[static_cast<size_t>(at)];
    if (c.writer >= s.first_iteration && c.writer != s.iteration)  // write after another iteration's write
        fail_race(p, pc, at, RaceAccess::Write, c.writer, c.writer_pc, RaceAccess::Write, s.iteration, s.first_iteration,
                  s.grid_start_vars.data(), vars);
    if (c.reader >= s.first_iteration && c.reader != s.iteration)
        fail_race(p, pc, at, RaceAccess::Write, c.reader, c.reader_pc, RaceAccess::Read, s.iteration, s.first_iteration,
                  s.grid_start_vars.data(), vars);
}

template <class Value>
inline void race_write(const Program& p, MachineState<Value>& s, std::int64_t at, std::int32_t pc, const std::int64_t* vars) {
    race_check_write(p, s, at, pc, vars);
    RaceCell& c = s.race[static_cast<size_t>(at)];
    c.writer = s.iteration;
    c.writer_pc = pc;
}

}  // namespace toysim
