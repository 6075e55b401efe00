// Parallel loops: race checking and time on the workers.
//
// Race checking. While a parallel loop (or grid) runs, the machine knows which iteration touched
// each DRAM element: a write by one iteration and a read, write or accumulation (STORE_ADD) of
// the same element by another is a data race, and so is an accumulation by one and a read by
// another. Iterations may share an element only by all reading it or all accumulating into it
// (an atomic add commutes). A race is a located error that names the element, both iterations
// with their loop indices and both instructions (as ThreadSanitizer reports a race: the
// location, the two accesses, which one wrote).
//
// Per element it is enough to keep two iterations: the first that touched it, and the latest
// of the others that shared it the same way. A conflicting access by any iteration but the
// first races with the first; by the first, with the sharer. This holds whatever order the
// iterations' instructions interleave in (on several workers they run one instruction at a
// time). When they run one after another (one worker) the first never comes back once another
// has shared, so only that it was shared is kept, not who.
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
#include <optional>

#include "sim/exec/state.h"
#include "sim/lower/program.h"

namespace toysim {

inline constexpr std::uint8_t race_bit(AccessKind a) { return static_cast<std::uint8_t>(1u << static_cast<unsigned>(a)); }
// In RaceCell::kinds beside the access bits: another iteration shared the element.
inline constexpr std::uint8_t kRaceShared = 1u << 3;

// The cycles the instructions at pcs first..last − 1 took so far, summed: units of work times
// cycles per unit.
template <class Value>
std::uint64_t work_of_code(const Program& p, const MachineState<Value>& s, size_t first, size_t last) {
    std::uint64_t total = 0;
    for (size_t pc = first; pc < last; ++pc)
        if (is_instruction(p.code[pc].code))
            total += units_done(p, s, pc) * static_cast<std::uint64_t>(p.cycles[static_cast<size_t>(p.op_at(static_cast<std::int32_t>(pc)))]);
    return total;
}

// Every instruction's: the work done so far.
template <class Value>
std::uint64_t total_work(const Program& p, const MachineState<Value>& s) {
    return work_of_code(p, s, 0, p.code.size());
}

// A loop body's: an iteration's cost is the difference across it, without summing the whole
// program. (A body of scalar instructions costs LoopInfo::iteration_cycles an iteration:
// nothing to sum.)
template <class Value>
std::uint64_t body_work(const Program& p, const MachineState<Value>& s, const LoopInfo& l) {
    if (l.iteration_cycles >= 0) return 0;
    return work_of_code(p, s, static_cast<size_t>(l.body.first), static_cast<size_t>(l.body.second));
}

// The serial part that ends now (at work `now`) ran on worker 0.
inline void end_serial_part(ParallelState& s, std::uint64_t now) {
    s.clock += now - s.clock_work;
    s.busy[0] += now - s.clock_work;
    s.clock_work = now;
}

// An iteration begins, its loop's body having done `body_now` work: the first free worker (the
// lowest-numbered among equals) takes it.
inline void begin_iteration(ParallelState& s, std::uint64_t body_now) {
    s.iteration = ++s.ids_used;
    s.iteration_work = s.grid_work;
    s.iteration_body_work = body_now;
    s.worker = static_cast<std::uint32_t>(std::min_element(s.worker_free.begin(), s.worker_free.end()) - s.worker_free.begin());
}

// The running iteration of loop l ends on its worker, l's body having done `body_now` work.
inline void end_iteration(ParallelState& s, const LoopInfo& l, std::uint64_t body_now) {
    std::uint64_t cost = l.iteration_cycles >= 0 ? static_cast<std::uint64_t>(l.iteration_cycles) : body_now - s.iteration_body_work;
    s.worker_free[s.worker] += cost;
    s.busy[s.worker] += cost;
    s.grid_work += cost;
}

// When the instruction that brought the work to `now` ended on its worker's clock.
inline std::uint64_t worker_clock(const ParallelState& s, std::uint64_t now) {
    if (s.iteration == 0) return s.clock + (now - s.clock_work);
    if (s.interleaved) return s.worker_free[s.worker];  // each worker's clock, kept as it runs
    return s.worker_free[s.worker] + (now - s.iteration_work);
}

// The makespan so far: outside a parallel loop, worker 0's clock (every other worker finished
// before it went on alone); inside one, the latest of the workers' finished iterations and the
// running one.
inline std::uint64_t makespan(const ParallelState& s, std::uint64_t now) {
    if (s.iteration == 0) return worker_clock(s, now);
    return std::max(*std::max_element(s.worker_free.begin(), s.worker_free.end()), worker_clock(s, now));
}

[[noreturn]] __attribute__((cold)) void fail_race(const Program& p, const ParallelState& s, std::int32_t pc, std::int64_t at,
                                                  AccessKind now, std::uint32_t other, std::int32_t other_pc, AccessKind then,
                                                  const std::int64_t* vars);

// A parallel loop's LoopBegin (entering: its range is not empty) and LoopEnd (continuing: it
// goes round again), after the loop variable is set.
// A grid begins (its outermost loop's LoopBegin, entering): ids, the serial part's end, every
// worker free from now.
template <class Value>
void begin_grid(const Program& p, MachineState<Value>& m, const std::int64_t* vars) {
    ParallelState& s = m.parallel;
    // A new loop: every older id is stale. Ids count up; near the end of 32 bits they start
    // again from 1 over a cleared table.
    if (s.ids_used > std::numeric_limits<std::uint32_t>::max() / 2) {
        std::fill(m.race.begin(), m.race.end(), RaceCell{});
        s.ids_used = 0;
    }
    s.first_iteration = s.ids_used + 1;
    std::copy(vars, vars + kMaxLoopDepth, s.grid_start_vars.begin());
    end_serial_part(s, total_work(p, m));
    s.grid_work = s.clock_work;
    std::fill(s.worker_free.begin(), s.worker_free.end(), s.clock);
}

template <class Value>
void parallel_loop_begin(const Program& p, MachineState<Value>& m, const LoopInfo& l, const std::int64_t* vars, bool entering) {
    if (l.grid_outer) {
        if (!entering) return;
        begin_grid(p, m, vars);
    }
    if (entering && l.grid_inner) begin_iteration(m.parallel, body_work(p, m, l));
}

// After LoopEnd of a parallel loop: `continuing` or not. Inlined: in a loop of a few scalar
// instructions, a call here cost as much as the race checks.
template <class Value>
[[gnu::always_inline]] inline void parallel_loop_end(const Program& p, MachineState<Value>& m, const LoopInfo& l, bool continuing) {
    ParallelState& s = m.parallel;
    std::uint64_t now = l.grid_inner ? body_work(p, m, l) : 0;
    if (l.grid_inner) end_iteration(s, l, now);  // the iteration that ends here
    if (continuing && l.grid_inner) {
        if (s.ids_used == std::numeric_limits<std::uint32_t>::max())
            throw ToyError(l.loc, "this parallel loop has more than 2,147,483,647 iterations: too many to check for races");
        begin_iteration(s, now);
    }
    if (!continuing && l.grid_outer) {
        // The loop ends when its last iteration does; worker 0 goes on alone from there.
        s.iteration = 0;
        s.worker = 0;
        s.clock = *std::max_element(s.worker_free.begin(), s.worker_free.end());
        s.clock_work = s.grid_work;  // every instruction of a grid is in an iteration
    }
}

// The access the running iteration would make races with the cell's iteration (or its
// sharer's): the kind of that access it races with, or nothing.
inline std::optional<AccessKind> race_with(const ParallelState& s, const RaceCell& c, AccessKind now) {
    if (c.iteration < s.first_iteration) return std::nullopt;                            // stale: nobody in this loop
    if (c.iteration == s.iteration && !(c.kinds & kRaceShared)) return std::nullopt;  // its own element so far
    const auto kinds = static_cast<std::uint8_t>(c.kinds & ~kRaceShared);
    // Sharing: all reading, or all accumulating.
    if (kinds == race_bit(now) && now != AccessKind::Write) return std::nullopt;
    if (kinds & race_bit(AccessKind::Write)) return AccessKind::Write;
    bool accumulated = kinds & race_bit(AccessKind::Accumulate), read = kinds & race_bit(AccessKind::Read);
    if (now == AccessKind::Accumulate) return read ? AccessKind::Read : AccessKind::Accumulate;
    return accumulated ? AccessKind::Accumulate : AccessKind::Read;
}

// Checks an access to the element at address `at`, whose cell is `c` (in m.race), without
// recording it (a slice is checked whole before it moves).
template <class Value>
inline void race_check(const Program& p, const MachineState<Value>& m, const RaceCell& c, std::int64_t at, std::int32_t pc,
                       const std::int64_t* vars, AccessKind now) {
    if (auto then = race_with(m.parallel, c, now); __builtin_expect(then.has_value(), 0)) {
        // The first iteration; or, when that is the running one, the latest that shared it.
        std::uint32_t other = c.iteration;
        std::int32_t other_pc = *then == AccessKind::Read ? c.read_pc : c.pc;
        if (other == m.parallel.iteration && !m.race_sharers.empty()) {
            const RaceSharer& sharer = m.race_sharers[static_cast<size_t>(&c - m.race.data())];
            other = sharer.iteration;
            other_pc = sharer.pc;
        }
        fail_race(p, m.parallel, pc, at, now, other, other_pc, *then, vars);
    }
}

// Records a checked access: the running iteration's own, or one more of a shared kind.
template <class Value>
inline void race_record(MachineState<Value>& m, RaceCell& c, std::int32_t pc, AccessKind now) {
    const ParallelState& s = m.parallel;
    if (c.iteration < s.first_iteration) c = RaceCell{s.iteration, 0, 0, 0};
    if (c.iteration != s.iteration) {  // shared: the first stays; on several workers the latest other is kept
        c.kinds |= kRaceShared;
        if (!m.race_sharers.empty()) m.race_sharers[static_cast<size_t>(&c - m.race.data())] = {s.iteration, pc};
        return;
    }
    bool first_of_kind = !(c.kinds & race_bit(now));
    c.kinds |= race_bit(now);
    if (now == AccessKind::Read) {
        if (first_of_kind) c.read_pc = pc;
    } else if (now == AccessKind::Write || !(c.kinds & race_bit(AccessKind::Write))) {
        c.pc = pc;  // a write is what another iteration's access races with first
    }
}

// A scalar access through `m` to the element at `at`, on an array that race checking follows.
template <class Value>
inline RaceCell& race_cell(MachineState<Value>& s, const MemRef& m, std::int64_t at) {
    return s.race[static_cast<size_t>(at - m.race_shift)];
}

template <class Value>
inline void race_access(const Program& p, MachineState<Value>& s, RaceCell& c, std::int64_t at, std::int32_t pc, const std::int64_t* vars,
                        AccessKind now) {
    race_check(p, s, c, at, pc, vars, now);
    race_record(s, c, pc, now);
}

}  // namespace toysim
