// The executor: one loop over the flat code, one switch case per opcode, compiled for each
// value domain with and without a listener. The machine's state lives in MachineState; the
// loop works on local copies of the hot fields and writes them back when it stops. Without a
// listener it hands the machine to the fast path (fast_exec.h) wherever that can go on.
#include "sim/exec/machine.h"

#include <fmt/format.h>

#include "sim/exec/fast_exec.h"
#include "sim/exec/faults.h"
#include "sim/exec/interleave.h"
#include "sim/exec/links.h"
#include "sim/exec/parallel.h"
#include "sim/exec/tile_exec.h"

namespace toysim {

namespace {

// The executor proper. Listening: build an Event per instruction and hand it to `sink`.
template <class Domain, bool Listening>
void execute(const Program& p, const FastInst* fast, Domain& dom, MachineState<typename Domain::Value>& s,
             std::vector<typename Domain::Value>& scratch, EventSink<typename Domain::Value>* sink, std::uint64_t pause_at, std::uint64_t max_steps, std::uint64_t cycle) {
    using V = typename Domain::Value;
    if (s.halted) return;
    const Inst* code = p.code.data();
    const MemRef* mems = p.mems.data();
    const LoopInfo* loops = p.loops.data();
    V* regs = s.regs.data();
    std::uint8_t* written = s.written.data();
    V* dram = s.dram.data();
    std::uint8_t* present = s.present.data();
    std::uint64_t* reads = s.reads.data();
    std::uint64_t* executed = s.executed.data();
    std::uint64_t* work = s.work.data();
    std::int64_t vars[kMaxLoopDepth], limit[kMaxLoopDepth];
    std::copy(s.vars.begin(), s.vars.end(), vars);
    std::copy(s.limit.begin(), s.limit.end(), limit);
    std::uint64_t steps = s.steps;
    // Every loop body holds an instruction (the compiler checks), so each iteration runs one or
    // enters a nested loop; only entries into loops that run zero times make no progress.
    // Counting those against the same limit means no program spins forever.
    std::uint64_t empty_entries = s.empty_entries;
    std::int32_t pc = s.pc;
    std::int32_t resolved[kMaxRegisterOperands];
    std::uint64_t last_units = 0;  // the last tile instruction's units of work
    // Inside an iteration of a parallel loop: memory accesses are checked for races. A local
    // copy, kept where the loop begins and ends, so the compiler need not reload it after every
    // store (a byte store may alias anything).
    bool in_parallel = s.parallel.iteration != 0;
    // A grid running interleaved on several workers (sim/exec/interleave.h): after each
    // instruction the earliest worker runs the next, so the worker part in the locals below is
    // written back and read again around a switch.
    bool interleaved = s.parallel.interleaved;
    // One compare a step, marked unlikely: the nearer of the pause and the step limit.
    const std::uint64_t stop = std::min(pause_at, max_steps);
    // Whatever way the loop ends (a pause, the end, a fault), the state gets its position back.
    struct WriteBack {
        MachineState<V>& s;
        std::int32_t& pc;
        std::int64_t* vars;
        std::int64_t* limit;
        std::uint64_t& steps;
        std::uint64_t& empty_entries;
        ~WriteBack() {
            s.pc = pc;
            std::copy(vars, vars + kMaxLoopDepth, s.vars.begin());
            std::copy(limit, limit + kMaxLoopDepth, s.limit.begin());
            s.steps = steps;
            s.empty_entries = empty_entries;
        }
    } write_back{s, pc, vars, limit, steps, empty_entries};
    // Around a change of the running worker: the locals out to the state, then back.
    auto sync_out = [&] {
        s.pc = pc;
        std::copy(vars, vars + kMaxLoopDepth, s.vars.begin());
        std::copy(limit, limit + kMaxLoopDepth, s.limit.begin());
    };
    auto sync_in = [&] {
        pc = s.pc;
        std::copy(s.vars.begin(), s.vars.end(), vars);
        std::copy(s.limit.begin(), s.limit.end(), limit);
        regs = s.regs.data();
        written = s.written.data();
        in_parallel = s.parallel.iteration != 0;
        interleaved = s.parallel.interleaved;
    };
    [[maybe_unused]] Event<V> ev;
    [[maybe_unused]] std::uint64_t entries_before = 0;

    auto address = [&](const MemRef& m) {
        if (!m.bounds_proven) {
            const ArrayInfo& a = p.arrays[static_cast<size_t>(m.array)];
            for (size_t d = 0; d < m.subscripts.size(); ++d) {
                std::int64_t i;
                if (!m.subscripts[d].eval_checked(vars, i) || i < 0 || i >= a.dims[d]) fail_bounds(p, pc, m, vars);
            }
        }
        return m.address.eval(vars);  // in bounds, so no overflow
    };
    auto registers_of = [&](const Inst& in) -> const std::int32_t* {
        if (!in.dynamic_registers) return in.reg.data();
        for (int k = 0; k < in.reg_count; ++k) resolved[k] = resolve_register(p, pc, in.reg[static_cast<size_t>(k)], vars);
        return resolved;
    };
    auto read = [&](const Inst& in, const std::int32_t* R, int k) {
        if (((in.unproven_reads >> k) & 1) && !written[R[k]]) fail_unwritten_register(p, pc, k, R[k], vars);
        return regs[R[k]];
    };
    // A scalar register about to be written: its old value, for the event.
    auto will_write = [&](std::int32_t r) {
        if constexpr (Listening) {
            ev.reg = r;
            ev.reg_old = regs[r];
            ev.reg_was_written = written[r];
        }
    };
    // Every ISA instruction: pause or fault at the stop, count it in its execution counter.
#define TOYSIM_COUNT_STEP()                                                   \
    if (__builtin_expect(steps == stop, 0)) {                                 \
        if (stop == pause_at) return;                                         \
        fail_step_limit(p, pc, max_steps, vars);                              \
    }                                                                         \
    ++steps;                                                                  \
    ++executed[pc]
#define TOYSIM_STEP()                                                         \
    TOYSIM_COUNT_STEP();                                                      \
    if constexpr (Listening) {                                                \
        ev.clear();                                                           \
        entries_before = empty_entries;                                       \
    }                                                                         \
    const std::int32_t* R = registers_of(in)

    for (;;) {
        // A plain run hands the machine to the fast path while it can take it (fast_path.h).
        if constexpr (!Listening)
            if (fast[pc].kind != FastKind::Exit && !interleaved) {
                // Back at an instruction it does not run, at the stop, or at a loop that is empty
                // or has a bound to report: the general case below takes that one.
                FastStop back{pc, stop - steps};
                try {
                    back = run_fast_path(p, fast, dom, s, vars, limit, pc, stop - steps, back);
                } catch (...) {  // a fault: the machine stands at the faulting instruction
                    pc = back.pc;
                    steps = stop - back.budget;
                    throw;
                }
                pc = back.pc;
                steps = stop - back.budget;
                in_parallel = s.parallel.iteration != 0;  // it may have ended a parallel loop
            }
        const Inst& in = code[pc];
        switch (in.code) {
            case Code::LoopBegin: {
                const LoopInfo& l = loops[in.loop];
                if (!l.lo.eval_checked(vars, vars[l.slot]) || !l.hi.eval_checked(vars, limit[l.slot])) fail_loop_bound(p, pc, vars);
                if (__builtin_expect(l.parallel, 0)) {
                    if ((p.workers > 1 || l.devices) && l.grid_outer) {
                        if (vars[l.slot] < limit[l.slot]) {
                            sync_out();
                            begin_interleaved_grid(p, s, static_cast<size_t>(in.loop));
                            sync_in();
                            continue;
                        }
                    } else {
                        parallel_loop_begin(p, s, l, vars, vars[l.slot] < limit[l.slot]);
                        in_parallel = s.parallel.iteration != 0;
                    }
                }
                if (vars[l.slot] < limit[l.slot]) {
                    ++pc;
                } else {
                    if (++empty_entries > max_steps) fail_empty_loops(p, pc, max_steps, vars);
                    pc = in.jump + 1;
                }
                continue;
            }
            case Code::LoopEnd: {
                const LoopInfo& l = loops[in.loop];
                if (__builtin_expect(interleaved && l.grid_inner, 0)) {
                    sync_out();
                    end_interleaved_iteration(p, s, grid_outer_of(p, in.loop));
                    sync_in();
                    continue;
                }
                bool again = ++vars[l.slot] < limit[l.slot];
                if (__builtin_expect(l.parallel, 0)) {
                    parallel_loop_end(p, s, l, again);
                    in_parallel = s.parallel.iteration != 0;
                }
                pc = again ? in.jump + 1 : pc + 1;
                continue;
            }
            case Code::Halt: s.halted = true; return;
            case Code::Tile: {
                TOYSIM_STEP();
                (void)R;
                std::uint64_t units = execute_tile<Domain, Listening>(p, dom, s, scratch, Listening ? &ev : nullptr, pc, vars);
                work[pc] += units;
                last_units = units;
                break;
            }
            case Code::LOAD: {
                TOYSIM_STEP();
                const MemRef& m = mems[in.mem];
                std::int64_t at = address(m);
                if (__builtin_expect(p.devices != 0, 0)) check_owner(p, s, pc, m, at, at, false, vars);
                if (!m.always_present && !present[at]) fail_unwritten_element(p, pc, m, vars);
                if (__builtin_expect(in_parallel, 0) && m.race_tracked) {
                    RaceCell& cell = race_cell(s, m, at);
                    if constexpr (Listening) ev.race_old.push_back(cell);
                    race_access(p, s, cell, at, pc, vars, AccessKind::Read);
                }
                ++reads[at];
                will_write(R[0]);
                if constexpr (Listening && std::is_same_v<V, std::uint32_t>)
                    if (dram[at] == kUnnamedInput) ev.named_inputs.push_back(at);
                regs[R[0]] = dom.load(dram[at], at);
                written[R[0]] = 1;
                if constexpr (Listening) {
                    ev.reg_new = regs[R[0]];
                    ev.accesses.push_back({m.array, AccessKind::Read, at});
                }
                break;
            }
            case Code::STORE:
            case Code::STORE_ADD: {
                TOYSIM_STEP();
                const bool accumulate = in.code == Code::STORE_ADD;
                const AccessKind kind = access_kind(static_cast<Op>(in.code));
                V v = read(in, R, 0);
                const MemRef& m = mems[in.mem];
                std::int64_t at = address(m);
                if (__builtin_expect(p.devices != 0, 0)) check_owner(p, s, pc, m, at, at, true, vars);
                if (accumulate && !m.always_present && !present[at]) fail_unwritten_element(p, pc, m, vars);
                if (__builtin_expect(in_parallel, 0) && m.race_tracked) {  // a write in a parallel loop (not on devices, which cannot race)
                    RaceCell& cell = race_cell(s, m, at);
                    if constexpr (Listening) ev.race_old.push_back(cell);
                    race_access(p, s, cell, at, pc, vars, kind);
                }
                if constexpr (Listening) {
                    ev.accesses.push_back({m.array, kind, at});
                    ev.dram_old.push_back(dram[at]);
                    ev.dram_was_present.push_back(present[at]);
                }
                if (accumulate) {
                    ++reads[at];
                    v = stored_value(Op::STORE_ADD, dom, v, dom.load(dram[at], at));
                }
                if constexpr (Listening) ev.dram_new.push_back(v);
                dram[at] = v;
                present[at] = 1;
                dom.stored(v, at);
                break;
            }
            // Devices (links.h): a slice or one element, over the link to or from another device.
            case Code::SEND: {
                TOYSIM_STEP();
                (void)R;
                const MemRef& m = mems[in.mem];
                const SliceGeometry g = slice_geometry(p, pc, m, vars);
                check_owner(p, s, pc, m, g.address, g.last(), false, vars);
                std::vector<V> values;
                values.reserve(static_cast<size_t>(g.rows * g.cols));
                for (std::int64_t i = 0; i < g.rows; ++i)
                    for (std::int64_t j = 0; j < g.cols; ++j) {
                        const std::int64_t at = g.at(i, j);
                        if (!m.always_present && !present[at]) fail_unwritten_element(p, pc, m, vars);
                        values.push_back(dom.load(dram[at], at));
                    }
                // Counted once every element is known to hold a value (a fault changes nothing).
                for (std::int64_t i = 0; i < g.rows; ++i)
                    for (std::int64_t j = 0; j < g.cols; ++j) ++reads[g.at(i, j)];
                if constexpr (Listening) ev.accesses.push_back({m.array, AccessKind::Read, g.address, g.rows, g.cols, g.row_stride, g.col_stride});
                link_send(p, s, pc, device_operand(p, in, vars), std::move(values), g.rows, g.cols, vars);
                last_units = static_cast<std::uint64_t>(g.rows * g.cols);
                work[pc] += last_units;
                break;
            }
            case Code::RECV: {
                const std::int64_t from = device_operand(p, in, vars);
                const Message<V>* msg = link_peek(p, s, from);
                if (!msg) {  // nothing sent yet: this device waits, another runs (not a step)
                    sync_out();
                    wait_for_message(p, s, pc, from);
                    sync_in();
                    continue;
                }
                TOYSIM_STEP();
                (void)R;
                const MemRef& m = mems[in.mem];
                const SliceGeometry g = slice_geometry(p, pc, m, vars);
                check_owner(p, s, pc, m, g.address, g.last(), true, vars);
                if (static_cast<std::int64_t>(msg->values.size()) != g.rows * g.cols)
                    fail_message_size(p, pc, running_device(s), from, msg->pc, static_cast<std::int64_t>(msg->values.size()), g.rows * g.cols, vars);
                Message<V> got = link_take(p, s, from);
                std::uint64_t& clock = s.parallel.worker_free[s.parallel.worker];
                clock = std::max(clock, got.arrival);  // it waits for the last element (idle, not work)
                if constexpr (Listening) ev.accesses.push_back({m.array, AccessKind::Write, g.address, g.rows, g.cols, g.row_stride, g.col_stride});
                for (std::int64_t i = 0, k = 0; i < g.rows; ++i)
                    for (std::int64_t j = 0; j < g.cols; ++j, ++k) {
                        const std::int64_t at = g.at(i, j);
                        if constexpr (Listening) {
                            ev.dram_old.push_back(dram[at]);
                            ev.dram_was_present.push_back(present[at]);
                            ev.dram_new.push_back(got.values[static_cast<size_t>(k)]);
                        }
                        dram[at] = got.values[static_cast<size_t>(k)];
                        present[at] = 1;
                        dom.stored(dram[at], at);
                    }
                last_units = static_cast<std::uint64_t>(g.rows * g.cols);
                work[pc] += last_units;
                break;
            }
            // Register-to-register instructions, one case per row of the ISA table: read the
            // sources (a, b, c), evaluate the row's semantics in the domain D, write Rd.
#define TOYSIM_ALU_Memory(NAME, SIG, SEM)
#define TOYSIM_ALU_Move(NAME, SIG, SEM) TOYSIM_ALU(NAME, SIG, SEM)
#define TOYSIM_ALU_Compute(NAME, SIG, SEM) TOYSIM_ALU(NAME, SIG, SEM)
#define TOYSIM_ALU(NAME, SIG, SEM)                                                \
    case Code::NAME: {                                                            \
        constexpr int sources = register_reads(SIG);                              \
        TOYSIM_STEP();                                                            \
        [[maybe_unused]] V a = read(in, R, 0);                                    \
        [[maybe_unused]] V b = sources > 1 ? read(in, R, 1) : a;                  \
        [[maybe_unused]] V c = sources > 2 ? read(in, R, 2) : a;                  \
        [[maybe_unused]] Domain& D = dom;                                         \
        [[maybe_unused]] double imm = 0;                                          \
        if constexpr (SIG[0] == 'i') imm = p.immediates[static_cast<size_t>(in.mem)]; \
        V result = SEM;                                                           \
        will_write(R[sources]);                                                   \
        regs[R[sources]] = result;                                                \
        written[R[sources]] = 1;                                                  \
        if constexpr (Listening) ev.reg_new = result;                             \
        break;                                                                    \
    }
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) TOYSIM_ALU_##CLASS(NAME, SIG, TOYSIM_SCALAR_SEM_##SHAPE(SEM))
            TOYSIM_OPCODES(X)
#undef X
#undef TOYSIM_ALU
#undef TOYSIM_ALU_Compute
#undef TOYSIM_ALU_Move
#undef TOYSIM_ALU_Memory
            default: __builtin_unreachable();  // every code has its case: no range check to pay
        }
        // The instruction's cycles: its units of work (one for a scalar instruction) times its
        // opcode's cost, for the running worker's clock and for the listener.
        if (Listening || __builtin_expect(interleaved, 0)) {
            const Op op = p.op_at(pc);
            const std::uint64_t units = in.code == Code::Tile || in.code == Code::SEND || in.code == Code::RECV ? last_units : 1;
            const std::uint64_t cost = units * static_cast<std::uint64_t>(p.cycles[static_cast<size_t>(op)]);
            if (interleaved) account_interleaved(s, cost);
            if constexpr (Listening) {
                ev.work = units;
                ev.cost = cost;
            }
        }
        if constexpr (Listening) {
            Op op = p.op_at(pc);
            ev.step = steps;
            cycle += ev.cost;
            ev.cycle = cycle;
            ev.pc = pc;
            ev.op = op;
            std::copy(vars, vars + kMaxLoopDepth, ev.vars.begin());
            std::copy(limit, limit + kMaxLoopDepth, ev.limit.begin());
            ev.empty_entries = entries_before;
            if (p.has_parallel) ev.parallel = s.parallel;
            ++pc;  // the machine stands at the next instruction when the sink looks
            s.pc = pc;
            sink->on_event(ev);
        } else {
            ++pc;
        }
        if (__builtin_expect(interleaved, 0)) {
            sync_out();
            switch_interleaved(s);
            sync_in();
        }
    }
#undef TOYSIM_STEP
#undef TOYSIM_COUNT_STEP
}

template <class Value>
Counters tally(const Program& p, const MachineState<Value>& s) {
    Counters c;
    c.arrays.resize(p.arrays.size());
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        const Inst& in = p.code[pc];
        if (!is_instruction(in.code)) continue;
        Op op = p.op_at(static_cast<std::int32_t>(pc));
        std::uint64_t n = s.executed[pc];
        std::uint64_t units = units_done(p, s, pc);
        c.by_opcode[static_cast<size_t>(op)] += n;
        c.work_by_opcode[static_cast<size_t>(op)] += units;
        if (std::int32_t mem = p.memref_at(static_cast<std::int32_t>(pc)); mem >= 0) {
            ArrayStats& st = c.arrays[static_cast<size_t>(p.mems[static_cast<size_t>(mem)].array)];
            if (reads_dram(op)) st.reads += units;
            if (writes_dram(op)) st.writes += units;
            if (op == Op::SEND) st.sent += units;
        }
    }
    for (const auto& row : all_ops()) {
        std::uint64_t units = c.work_by_opcode[static_cast<size_t>(row.op)];
        c.instructions += c.by_opcode[static_cast<size_t>(row.op)];
        c.cycles += units * static_cast<std::uint64_t>(p.cycles[static_cast<size_t>(row.op)]);
        if (row.klass == OpClass::Compute) c.compute_ops += units;
    }
    for (size_t a = 0; a < p.arrays.size(); ++a) {
        ArrayStats& st = c.arrays[a];
        c.dram_reads += st.reads;
        c.dram_writes += st.writes;
        const ArrayInfo& info = p.arrays[a];
        for (std::int64_t i = info.base; i < info.base + info.size; ++i) {
            std::uint64_t r = s.reads[static_cast<size_t>(i)];
            ++st.read_histogram[r];
            if (r) ++st.elements_read;
            st.max_reads = std::max(st.max_reads, r);
        }
    }
    // Registers any worker wrote: every worker's file has the same layout, and this is how much
    // of it the program uses (on several workers, the union of their files' written marks).
    auto count_touched = [&](const std::vector<std::uint8_t>& mine, auto member) {
        for (size_t r = 0; r < mine.size(); ++r) {
            bool any = mine[r] != 0;
            for (const auto& ctx : s.contexts) any = any || (ctx.*member)[r] != 0;
            c.peak_registers += any;
        }
    };
    if (p.devices) {
        c.devices = p.devices;
        c.link_elements = s.links.elements;
    }
    count_touched(s.written, &WorkerContext<Value>::written);
    count_touched(s.tile_touched, &WorkerContext<Value>::tile_touched);
    if (p.has_parallel) {
        // On P workers: cycles is the makespan, work what cycles would be on one.
        c.workers = p.workers;
        c.work = c.cycles;
        c.cycles = makespan(s.parallel, c.work);
        c.busy = s.parallel.busy;
        if (s.parallel.iteration == 0) c.busy[0] += c.work - s.parallel.clock_work;
    } else {
        c.work = c.cycles;
        c.busy = {c.cycles};
    }
    return c;
}

template <class Value>
MachineState<Value> fresh_state(const Program& p) {
    check_fits_in_run(p);
    MachineState<Value> s;
    s.regs.assign(static_cast<size_t>(p.scalar_registers), Value{});
    s.written.assign(static_cast<size_t>(p.scalar_registers), 0);
    s.dram.assign(static_cast<size_t>(p.dram_size), Value{});
    s.present.assign(static_cast<size_t>(p.dram_size), 0);
    s.reads.assign(static_cast<size_t>(p.dram_size), 0);
    s.executed.assign(p.code.size(), 0);
    s.work.assign(p.code.size(), 0);
    s.tiles.assign(static_cast<size_t>(p.tile_elements), Value{});
    s.tile_rows.assign(p.tiles.size(), 0);
    s.tile_cols.assign(p.tiles.size(), 0);
    s.tile_touched.assign(static_cast<size_t>(p.tile_elements), 0);
    for (const auto& a : p.arrays)
        if (a.starts_filled()) std::fill(s.present.begin() + a.base, s.present.begin() + a.base + a.size, std::uint8_t{1});
    if (p.has_parallel) {
        s.race.assign(static_cast<size_t>(p.race_cells), RaceCell{});
        if (p.workers > 1) s.race_sharers.assign(static_cast<size_t>(p.race_cells), RaceSharer{});
        if (p.devices) start_links(p, s.links);
        s.parallel.worker_free.assign(static_cast<size_t>(p.workers), 0);
        s.parallel.busy.assign(static_cast<size_t>(p.workers), 0);
    }
    return s;
}

}  // namespace

void check_fits_in_run(const Program& p) {
    // The first array that does not fit is where the error points.
    if (p.dram_size > kMaxRunDram)
        for (const auto& a : p.arrays)
            if (a.base + a.size > kMaxRunDram)
                throw ToyError(ErrorKind::TooLargeToRun, a.loc,
                               fmt::format("{} too large to run (at most {} elements in all, {} bytes each while running)",
                                           a.base == 0 ? fmt::format("array '{}' is", a.name) : "the arrays are", kMaxRunDram,
                                           kStateBytesPerElement<double>));
    // The race table of parallel loops (sizeof(RaceCell) more an element of each array they
    // write) fits in the same budget: the first array whose cells do not is where the error points.
    constexpr std::int64_t budget = kMaxRunDram * kStateBytesPerElement<double>;
    const auto cell = static_cast<std::int64_t>(sizeof(RaceCell) + (p.workers > 1 ? sizeof(RaceSharer) : 0));
    // On several workers each holds a register file of its own while a grid runs.
    if (p.has_parallel && p.workers > 1) {
        const std::int64_t per_worker = (p.scalar_registers + p.tile_elements) * static_cast<std::int64_t>(sizeof(double) + 1) +
                                        static_cast<std::int64_t>(p.tiles.size()) * 16;
        if (p.dram_size * kStateBytesPerElement<double> + p.race_cells * cell + p.workers * per_worker > budget)
            throw ToyError(ErrorKind::TooLargeToRun, p.workers_loc,
                           fmt::format("{} workers with {} bytes of registers and tiles each do not fit beside the arrays (at most {} "
                                       "bytes in all while running)",
                                       p.workers, per_worker, budget));
    }
    for (const auto& a : p.arrays)
        if (a.race_base >= 0 && p.dram_size * kStateBytesPerElement<double> + (a.race_base + a.size) * cell > budget)
            throw ToyError(ErrorKind::TooLargeToRun, a.loc,
                           fmt::format("array '{}' is too large to run with race checking: a parallel loop writes it, and each element "
                                       "its loops write takes {} more bytes to check (at most {} bytes in all while running)",
                                       a.name, cell, budget));
}


template <class Domain>
Machine<Domain>::Machine(const Program& program, Domain domain)
    : program_(&program), domain_(std::move(domain)), state_(fresh_state<Value>(program)), fast_(decode_fast_path(program)) {}

template <class Domain>
void Machine<Domain>::run_until(std::uint64_t pause_at, std::uint64_t max_steps) {
    execute<Domain, false>(*program_, fast_.data(), domain_, state_, scratch_, nullptr, pause_at, max_steps, 0);
}

template <class Domain>
void Machine<Domain>::run_until(std::uint64_t pause_at, std::uint64_t max_steps, EventSink<Value>& sink) {
    execute<Domain, true>(*program_, fast_.data(), domain_, state_, scratch_, &sink, pause_at, max_steps, cycle());
}

template <class Domain>
bool Machine<Domain>::step(EventSink<Value>* sink, std::uint64_t max_steps) {
    if (state_.halted) return false;
    std::uint64_t before = state_.steps;
    if (sink) run_until(before + 1, max_steps, *sink);
    else run_until(before + 1, max_steps);
    return state_.steps > before;
}

template <class Domain>
void Machine<Domain>::undo(const Event<Value>& e) {
    const Program& p = *program_;
    auto& s = state_;
    // An interleaved step may be followed by a switch of workers, which an event does not
    // record: the stepper goes back by replaying from a checkpoint instead.
    if (s.parallel.interleaved || e.parallel.interleaved)
        throw ToyError("internal: Machine::undo does not go back over an interleaved step (several workers)");
    auto pc = static_cast<size_t>(e.pc);
    // Where it was: the instruction, its loop variables and bounds, the step counter.
    s.pc = e.pc;
    std::copy(e.vars.begin(), e.vars.end(), s.vars.begin());
    std::copy(e.limit.begin(), e.limit.end(), s.limit.begin());
    s.empty_entries = e.empty_entries;
    if (p.has_parallel) s.parallel = e.parallel;
    s.steps = e.step - 1;
    s.halted = false;
    --s.executed[pc];
    if (p.code[pc].code == Code::Tile) s.work[pc] -= e.work;
    // What it wrote, back to the old values.
    if (e.reg >= 0) {
        s.regs[static_cast<size_t>(e.reg)] = e.reg_old;
        s.written[static_cast<size_t>(e.reg)] = e.reg_was_written;
    }
    if (e.tile >= 0) {
        const Tile& t = p.tiles[static_cast<size_t>(e.tile)];
        for (std::int64_t i = 0, k = 0; i < e.rows; ++i)
            for (std::int64_t j = 0; j < e.cols; ++j, ++k) {
                auto at = static_cast<size_t>(t.base + i * t.cols + j);
                s.tiles[at] = e.tile_old[static_cast<size_t>(k)];
                s.tile_touched[at] = e.tile_was_touched[static_cast<size_t>(k)];
            }
        s.tile_rows[static_cast<size_t>(e.tile)] = e.old_rows;
        s.tile_cols[static_cast<size_t>(e.tile)] = e.old_cols;
    }
    if constexpr (std::is_same_v<Value, std::uint32_t>)
        for (std::int64_t at : e.named_inputs) s.dram[static_cast<size_t>(at)] = kUnnamedInput;
    size_t race_k = 0;
    for (const DramAccess& a : e.accesses) {
        const ArrayInfo& array = p.arrays[static_cast<size_t>(a.array)];
        const bool race_followed = array.race_base >= 0 && !e.race_old.empty();
        for (std::int64_t i = 0, k = 0; i < a.rows; ++i)
            for (std::int64_t j = 0; j < a.cols; ++j, ++k) {
                auto at = static_cast<size_t>(a.at(i, j));
                if (race_followed) s.race[at - static_cast<size_t>(array.base - array.race_base)] = e.race_old[race_k++];
                if (reads_dram(a.kind)) --s.reads[at];
                if (writes_dram(a.kind)) {
                    s.dram[at] = e.dram_old[static_cast<size_t>(k)];
                    s.present[at] = e.dram_was_present[static_cast<size_t>(k)];
                }
            }
    }
}

template <class Domain>
std::uint64_t Machine<Domain>::cycle() const {
    return total_work(*program_, state_);
}

template <class Domain>
Counters Machine<Domain>::counters() const {
    return tally(*program_, state_);
}

template class Machine<NumericDomain>;
template class Machine<SymbolicDomain>;

}  // namespace toysim
