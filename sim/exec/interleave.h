// A grid on several workers, interleaved (Program::workers > 1): the machine's step order is
// the workers' instructions one at a time, each taken by the worker whose clock is earliest
// (the lowest-numbered among equals), so that time on the workers, the order of DRAM accesses
// and what a stepper shows are those of P workers running at once.
//
// Each worker has its own part of the machine (WorkerContext: pc, loop variables, registers
// and tiles); the running worker's is the machine's own, and a switch exchanges it with the
// next one's. Iterations are handed out in the grid's order as a GPU's block scheduler hands
// out blocks: the first P to workers 0..P−1, then each to the worker that finishes first. That
// is the same worker the one-after-another order picks (sim/exec/parallel.h), so cycles, work
// and every worker's busy time agree with it; only the order of the steps differs.
//
// The machine never runs a grid's LoopBegin again or its outer loops' LoopEnd: a worker that
// reaches the grid's innermost LoopEnd takes the next iteration's variables and starts its
// body, or stops; when no worker has an iteration the grid ends, and worker 0 goes on after it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sim/exec/faults.h"
#include "sim/exec/links.h"
#include "sim/exec/parallel.h"

namespace toysim {

// The grid whose outermost loop is p.loops[outer]: its loops are each the whole body of the
// one before, so consecutive in p.loops; the innermost's index.
inline std::size_t grid_inner_loop(const Program& p, std::size_t outer) {
    std::size_t inner = outer;
    while (!p.loops[inner].grid_inner) ++inner;
    return inner;
}

// The outermost loop of the grid whose loop is p.loops[loop].
inline std::size_t grid_outer_of(const Program& p, std::int32_t loop) {
    auto k = static_cast<std::size_t>(loop);
    while (!p.loops[k].grid_outer) --k;
    return k;
}

// Sets the grid variables of levels level..inner to the grid's first iteration from there
// (the earlier levels as they are in `vars`): false when there is none. A bound that overflows
// is the loop's located error, as a run one after another reports it.
inline bool grid_first(const Program& p, std::size_t level, std::size_t inner, std::int64_t* vars, std::int64_t* limit) {
    const LoopInfo& l = p.loops[level];
    std::int64_t lo = 0, hi = 0;
    if (!l.lo.eval_checked(vars, lo) || !l.hi.eval_checked(vars, hi)) fail_loop_bound(p, l.body.first - 1, vars);
    limit[l.slot] = hi;
    for (std::int64_t v = lo; v < hi; ++v) {
        vars[l.slot] = v;
        if (level == inner || grid_first(p, level + 1, inner, vars, limit)) return true;
    }
    return false;
}

// From the iteration in `vars`, the next one in the grid's order: false after the last.
inline bool grid_next(const Program& p, std::size_t level, std::size_t inner, std::int64_t* vars, std::int64_t* limit) {
    const LoopInfo& l = p.loops[level];
    if (level < inner && grid_next(p, level + 1, inner, vars, limit)) return true;
    for (std::int64_t v = vars[l.slot] + 1; v < limit[l.slot]; ++v) {
        vars[l.slot] = v;
        if (level == inner || grid_first(p, level + 1, inner, vars, limit)) return true;
    }
    return false;
}

// Gives worker part `c` the next iteration of the grid (p.loops[outer]): its variables and
// its grid loops' ends, the first instruction of its body, a new id.
inline void hand_out_iteration(const Program& p, ParallelState& s, std::size_t outer, std::uint32_t worker, std::int32_t& pc,
                        std::array<std::int64_t, kMaxLoopDepth>& vars, std::array<std::int64_t, kMaxLoopDepth>& limit) {
    const std::size_t inner = grid_inner_loop(p, outer);
    const LoopInfo& in = p.loops[inner];
    if (s.ids_used == std::numeric_limits<std::uint32_t>::max())
        throw ToyError(in.loc, "this parallel loop has more than 2,147,483,647 iterations: too many to check for races");
    for (std::size_t k = outer; k <= inner; ++k) {
        const auto slot = static_cast<std::size_t>(p.loops[k].slot);
        vars[slot] = s.next_vars[slot];
        limit[slot] = s.next_limit[slot];
    }
    pc = in.body.first;
    s.worker_iteration[worker] = ++s.ids_used;
    s.iteration_fresh[worker] = 1;
    s.next_exists = grid_next(p, outer, inner, s.next_vars.data(), s.next_limit.data());
}

// The heap of workers with an iteration (ParallelState::ready): on top the earliest clock, the
// lowest-numbered among equals. The running worker is always on top, so after its instruction
// only the top moves down: O(log P) a step.
struct LaterWorker {
    const ParallelState* s;
    bool operator()(std::uint32_t a, std::uint32_t b) const {
        return s->worker_free[a] != s->worker_free[b] ? s->worker_free[a] > s->worker_free[b] : a > b;
    }
};

// The running worker's clock moved on: it goes down the heap to its place.
inline void reorder_top(ParallelState& s) {
    std::pop_heap(s.ready.begin(), s.ready.end(), LaterWorker{&s});
    std::push_heap(s.ready.begin(), s.ready.end(), LaterWorker{&s});
}

// Makes `w` the running worker.
template <class Value>
void switch_to(MachineState<Value>& m, std::uint32_t w) {
    ParallelState& s = m.parallel;
    if (w != s.worker) {
        swap_context(m, m.contexts[s.worker]);  // the running worker's part goes back to its place
        swap_context(m, m.contexts[w]);
        s.worker = w;
    }
    s.iteration = s.worker_iteration[w];
}

// The grid is done: worker 0 goes on after it, from when the last worker finished.
template <class Value>
void end_interleaved_grid(const Program& p, MachineState<Value>& m, std::size_t outer) {
    ParallelState& s = m.parallel;
    if (s.worker != 0) switch_to(m, 0);
    s.interleaved = false;
    s.iteration = 0;
    m.pc = p.loops[outer].body.second + 1;  // past the grid's outermost LoopEnd
    m.vars = s.grid_start_vars;
    s.clock = *std::max_element(s.worker_free.begin(), s.worker_free.end());
    s.clock_work = s.grid_work;  // every instruction of a grid is in an iteration
}

// The grid's outermost LoopBegin, its variable set: hands out the first iterations, worker 0
// takes the first. The machine's part is worker 0's; m.vars, m.limit and m.pc are current.
template <class Value>
void begin_interleaved_grid(const Program& p, MachineState<Value>& m, std::size_t outer) {
    ParallelState& s = m.parallel;
    begin_grid(p, m, m.vars.data());
    const std::size_t inner = grid_inner_loop(p, outer);
    s.next_vars = m.vars;
    s.next_limit = m.limit;
    s.next_exists = grid_first(p, outer, inner, s.next_vars.data(), s.next_limit.data());
    s.interleaved = true;
    const auto workers = static_cast<std::uint32_t>(p.workers);
    // Every worker starts from the registers and tiles as the loop found them.
    m.contexts.assign(workers, copy_context(m));
    s.worker_iteration.assign(workers, 0);
    s.iteration_fresh.assign(workers, 0);
    for (std::uint32_t w = 0; w < workers && s.next_exists; ++w) {
        WorkerContext<Value>& c = m.contexts[w];
        hand_out_iteration(p, s, outer, w, c.pc, c.vars, c.limit);
    }
    s.ready.clear();
    for (std::uint32_t w = 0; w < workers; ++w)
        if (s.worker_iteration[w] != 0) s.ready.push_back(w);
    std::make_heap(s.ready.begin(), s.ready.end(), LaterWorker{&s});
    s.worker = 0;
    swap_context(m, m.contexts[0]);  // worker 0's part, with its iteration, into the machine
    if (s.worker_iteration[0] == 0) {
        end_interleaved_grid(p, m, outer);  // no iteration at all
        return;
    }
    s.iteration = s.worker_iteration[0];
}

// The running worker reached the grid's innermost LoopEnd: its iteration is done. It takes
// the next (it is the earliest worker, so it stays the running one), or stops; if none is left
// with an iteration, the grid ends.
template <class Value>
void end_interleaved_iteration(const Program& p, MachineState<Value>& m, std::size_t outer) {
    ParallelState& s = m.parallel;
    if (s.next_exists) {
        hand_out_iteration(p, s, outer, s.worker, m.pc, m.vars, m.limit);
        s.iteration = s.worker_iteration[s.worker];
        return;
    }
    s.worker_iteration[s.worker] = 0;
    std::pop_heap(s.ready.begin(), s.ready.end(), LaterWorker{&s});  // it is on top: off the heap
    s.ready.pop_back();
    if (!s.ready.empty()) {
        switch_to(m, s.ready.front());
        return;
    }
    if (p.devices) {  // devices: none may still wait, and every message must have been received
        if (std::any_of(m.links.waiting.begin(), m.links.waiting.end(), [](std::int64_t w) { return w >= 0; }))
            fail_deadlock(p, m.links.waiting, m.links.waiting_pc);
        check_links_drained(p, m.links);
    }
    end_interleaved_grid(p, m, outer);
}

// The running device waits in the RECV at pc for a message from device `from`: it leaves the
// workers that run (it is on top of the heap) until that message is sent, and the earliest of
// the others runs. When none is left, every device still running waits: a deadlock.
template <class Value>
void wait_for_message(const Program& p, MachineState<Value>& m, std::int32_t pc, std::int64_t from) {
    ParallelState& s = m.parallel;
    m.links.waiting[s.worker] = from;
    m.links.waiting_pc[s.worker] = pc;
    std::pop_heap(s.ready.begin(), s.ready.end(), LaterWorker{&s});
    s.ready.pop_back();
    if (s.ready.empty()) fail_deadlock(p, m.links.waiting, m.links.waiting_pc);
    switch_to(m, s.ready.front());
}

// After an instruction of `cost` cycles on the running worker: its clock moves on; then the
// earliest worker runs next.
template <class Value>
void account_interleaved(MachineState<Value>& m, std::uint64_t cost) {
    ParallelState& s = m.parallel;
    s.first_of_iteration = s.iteration_fresh[s.worker] != 0;
    s.iteration_fresh[s.worker] = 0;
    s.worker_free[s.worker] += cost;
    s.busy[s.worker] += cost;
    s.grid_work += cost;
}

template <class Value>
void switch_interleaved(MachineState<Value>& m) {
    ParallelState& s = m.parallel;
    if (s.reheap) {  // a device woke: the running one need not be on top any more
        std::make_heap(s.ready.begin(), s.ready.end(), LaterWorker{&s});
        s.reheap = false;
    } else {
        reorder_top(s);
    }
    switch_to(m, s.ready.front());
}

}  // namespace toysim
