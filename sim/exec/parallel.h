// Parallel loops: race checking and time on the workers.
//
// Race checking. While a parallel loop (or grid) runs, the machine
// knows which iteration touched each DRAM element: a write by one iteration and a read or
// write of the same element by another is a data race, a located error that names the element,
// both iterations with their loop indices and both instructions (as ThreadSanitizer reports a
// race: the location, the two accesses, which one wrote).
//
// The iterations run one after another, in order, so per element it is enough to keep the
// last writer and the FIRST reader of the running loop: when iteration t writes, any other
// iteration that read the element ran before t, and the first reader is the earliest of them.
//
// Time. The machine runs the iterations one after another, but counts time as P workers would
// spend it, handing out iterations as a GPU's block scheduler hands out blocks: the next
// iteration goes to the worker that is free first (the lowest-numbered among equals). An
// iteration's cost is the cycles its instructions take. Before, between and after parallel
// loops, worker 0 runs alone while the others wait; a parallel loop ends when its last
// iteration does. `cycles` is then the makespan, and `work` the cycles of all workers summed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "sim/exec/state.h"
#include "sim/lower/program.h"

namespace toysim {

enum class RaceAccess : std::uint8_t { Read, Write };

// The cycles every instruction run so far took, summed: units of work times cycles per unit.
template <class Value>
std::uint64_t total_work(const Program& p, const MachineState<Value>& s) {
    std::uint64_t total = 0;
    for (size_t pc = 0; pc < p.code.size(); ++pc)
        if (is_instruction(p.code[pc].code))
            total += units_done(p, s, pc) * static_cast<std::uint64_t>(p.cycles[static_cast<size_t>(p.op_at(static_cast<std::int32_t>(pc)))]);
    return total;
}

// The serial part that ends now (at work `now`) ran on worker 0.
inline void end_serial_part(ParallelState& s, std::uint64_t now) {
    s.clock += now - s.clock_work;
    s.busy[0] += now - s.clock_work;
    s.clock_work = now;
}

// An iteration that began at work s.iteration_work ends now: the first free worker takes it.
inline void schedule_iteration(ParallelState& s, std::uint64_t now) {
    auto first_free = std::min_element(s.worker_free.begin(), s.worker_free.end());
    std::uint64_t cost = now - s.iteration_work;
    *first_free += cost;
    s.busy[static_cast<size_t>(first_free - s.worker_free.begin())] += cost;
}

// The makespan so far: the serial time, plus (inside a parallel loop) the latest worker or the
// running iteration on the first free one, whichever ends later; then what worker 0 ran since.
inline std::uint64_t makespan(const ParallelState& s, std::uint64_t now) {
    if (s.iteration == 0) return s.clock + (now - s.clock_work);
    auto [first, last] = std::minmax_element(s.worker_free.begin(), s.worker_free.end());
    return std::max(*last, *first + (now - s.iteration_work));
}

[[noreturn]] __attribute__((cold)) void fail_race(const Program& p, const ParallelState& s, std::int32_t pc, std::int64_t at,
                                                  RaceAccess now, std::uint32_t other, std::int32_t other_pc, RaceAccess then,
                                                  const std::int64_t* vars);

// An id recorded in a RaceCell is another iteration of the running loop.
inline bool other_iteration(const ParallelState& s, std::uint32_t id) { return id >= s.first_iteration && id != s.iteration; }

// A parallel loop's LoopBegin (entering: its range is not empty) and LoopEnd (continuing: it
// goes round again), after the loop variable is set.
template <class Value>
void parallel_loop_begin(const Program& p, MachineState<Value>& m, const LoopInfo& l, const std::int64_t* vars, bool entering) {
    ParallelState& s = m.parallel;
    if (l.grid_outer) {
        if (!entering) return;
        // A new loop: every older id is stale. Ids count up; near the end of 32 bits they start
        // again from 1 over a cleared table.
        if (s.iteration > std::numeric_limits<std::uint32_t>::max() / 2) {
            std::fill(m.race.begin(), m.race.end(), RaceCell{});
            s.iteration = 0;
        }
        s.first_iteration = s.iteration + 1;
        std::copy(vars, vars + kMaxLoopDepth, s.grid_start_vars.begin());
        end_serial_part(s, total_work(p, m));
        std::fill(s.worker_free.begin(), s.worker_free.end(), s.clock);
    }
    if (entering && l.grid_inner) {
        ++s.iteration;
        s.iteration_work = total_work(p, m);
    }
}

// After LoopEnd of a parallel loop: `continuing` or not.
template <class Value>
void parallel_loop_end(const Program& p, MachineState<Value>& m, const LoopInfo& l, bool continuing) {
    ParallelState& s = m.parallel;
    std::uint64_t now = l.grid_inner || (!continuing && l.grid_outer) ? total_work(p, m) : 0;
    if (l.grid_inner) schedule_iteration(s, now);  // the iteration that ends here
    if (continuing && l.grid_inner) {
        if (s.iteration == std::numeric_limits<std::uint32_t>::max())
            throw ToyError(l.loc, "this parallel loop has more than 4,294,967,294 iterations: too many to check for races");
        ++s.iteration;
        s.iteration_work = now;
    }
    if (!continuing && l.grid_outer) {
        // The loop ends when its last iteration does; worker 0 goes on alone from there.
        s.iteration = 0;
        s.clock = *std::max_element(s.worker_free.begin(), s.worker_free.end());
        s.clock_work = now;
    }
}

// Checks a read without recording it.
template <class Value>
inline void race_check_read(const Program& p, const MachineState<Value>& s, std::int64_t at, std::int32_t pc, const std::int64_t* vars) {
    const RaceCell& c = s.race[static_cast<size_t>(at)];
    if (other_iteration(s.parallel, c.writer)) fail_race(p, s.parallel, pc, at, RaceAccess::Read, c.writer, c.writer_pc, RaceAccess::Write, vars);
}

template <class Value>
inline void race_read(const Program& p, MachineState<Value>& s, std::int64_t at, std::int32_t pc, const std::int64_t* vars) {
    race_check_read(p, s, at, pc, vars);
    RaceCell& c = s.race[static_cast<size_t>(at)];
    if (c.reader < s.parallel.first_iteration) {
        c.reader = s.parallel.iteration;
        c.reader_pc = pc;
    }
}

// Checks a write without recording it (a slice is checked whole before it moves).
template <class Value>
inline void race_check_write(const Program& p, const MachineState<Value>& s, std::int64_t at, std::int32_t pc, const std::int64_t* vars) {
    const RaceCell& c = s.race[static_cast<size_t>(at)];
    if (other_iteration(s.parallel, c.writer)) fail_race(p, s.parallel, pc, at, RaceAccess::Write, c.writer, c.writer_pc, RaceAccess::Write, vars);
    if (other_iteration(s.parallel, c.reader)) fail_race(p, s.parallel, pc, at, RaceAccess::Write, c.reader, c.reader_pc, RaceAccess::Read, vars);
}

template <class Value>
inline void race_write(const Program& p, MachineState<Value>& s, std::int64_t at, std::int32_t pc, const std::int64_t* vars) {
    race_check_write(p, s, at, pc, vars);
    RaceCell& c = s.race[static_cast<size_t>(at)];
    c.writer = s.parallel.iteration;
    c.writer_pc = pc;
}

}  // namespace toysim
