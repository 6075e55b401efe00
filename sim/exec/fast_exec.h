// The fast path's loop (fast_path.h says what it is for); included only by
// sim/exec/machine.cpp.
#pragma once

#include <cstdint>
#include <iterator>
#include <string_view>

#include "sim/exec/fast_path.h"
#include "sim/exec/parallel.h"
#include "sim/exec/state.h"
#include "sim/exec/tile_exec.h"

namespace toysim {

constexpr int register_reads(std::string_view signature) {
    int n = 0;
    for (char ch : signature) n += ch == 'r';
    return n;
}

// The semantics of an ISA row on a scalar register, by the row's shape: a row reduction of
// one value is that value; a scalar register is one element, on the diagonal.
#define TOYSIM_SCALAR_SEM_RowReduce(SEM) a
#define TOYSIM_SCALAR_SEM_Memory(SEM) SEM
#define TOYSIM_SCALAR_SEM_Elementwise(SEM) SEM
#define TOYSIM_SCALAR_SEM_Product(SEM) SEM
#define TOYSIM_SCALAR_SEM_Fill(SEM) SEM
#define TOYSIM_SCALAR_SEM_Mask(SEM) a

// Runs from `pc` while instructions have a fast kind and fewer than `budget` instructions have
// run; returns the pc of the first instruction it did not run (the general executor's to run,
// pause at or fault on) and how much of the budget is left. Before each step that may fault (a
// race check, a parallel loop's end) it sets `at_fault` to that instruction and the budget left
// after it: where the machine stands if the exception comes (no try block: one would keep the
// budget out of a register).
struct FastStop {
    std::int32_t pc;
    std::uint64_t budget;
};
template <class Domain>
[[gnu::noinline]] FastStop run_fast_path(const Program& p, const FastInst* fast, Domain& dom, MachineState<typename Domain::Value>& s,
                                         std::int64_t* vars, std::int64_t* limit, std::int32_t pc, std::uint64_t budget,
                                         FastStop& at_fault) {
    using V = typename Domain::Value;
    V* const regs = s.regs.data();
    std::uint8_t* const written = s.written.data();
    V* const dram = s.dram.data();
    std::uint8_t* const present = s.present.data();
    std::uint64_t* const reads = s.reads.data();
    std::uint64_t* const executed = s.executed.data();
    const FastInst* ip = fast + pc;  // where it stands (its pc is ip->pc)
    // An address from the decoded terms: wraps as Affine::eval does (the compiler proved it in
    // bounds). Terms < 0: as many as f.terms says, or the MemRef's where there are more than 3.
    auto address = [&]<int Terms>(const FastInst& f) {
        if constexpr (Terms < 0) {
            if (__builtin_expect(f.terms == FastInst::kTermsInMemRef, 0)) return p.mems[static_cast<size_t>(f.mem)].address.eval(vars);
        }
        auto v = static_cast<std::uint64_t>(f.constant);
        const int terms = Terms < 0 ? f.terms : Terms;
        for (int t = 0; t < terms; ++t) v += static_cast<std::uint64_t>(f.coef[t]) * static_cast<std::uint64_t>(vars[f.slot[t]]);
        return static_cast<std::int64_t>(v);
    };
    auto race = [&](const FastInst& f, std::int64_t at, AccessKind kind) {
        race_access(p, s, s.race[static_cast<size_t>(at - f.reg[1])], at, f.pc, vars, kind);
    };
    auto load = [&]<int Terms, bool MaybeRace>(const FastInst& f) {
        const std::int64_t at = address.template operator()<Terms>(f);
        if (MaybeRace && f.race_checked) {
            at_fault = {f.pc, budget};
            race(f, at, AccessKind::Read);
        }
        ++reads[at];
        regs[f.reg[0]] = dom.load(dram[at], at);
        written[f.reg[0]] = 1;
    };
    auto store = [&]<int Terms, bool MaybeRace>(const FastInst& f) {
        const std::int64_t at = address.template operator()<Terms>(f);
        if (MaybeRace && f.race_checked) {
            at_fault = {f.pc, budget};
            race(f, at, AccessKind::Write);
        }
        const V v = regs[f.reg[0]];
        dram[at] = v;
        present[at] = 1;
        dom.stored(v, at);
    };
    // Threaded dispatch (a GNU extension, in GCC and Clang): each handler ends with its own jump
    // to the next one's label, one indirect jump an instruction and none shared.
    static constexpr const void* handlers[] = {
#define TOYSIM_FAST_LABEL_Memory(NAME) &&exit,
#define TOYSIM_FAST_LABEL_Move(NAME) &&op_##NAME,
#define TOYSIM_FAST_LABEL_Compute(NAME) &&op_##NAME,
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) TOYSIM_FAST_LABEL_##CLASS(NAME)
        TOYSIM_OPCODES(X)
#undef X
#undef TOYSIM_FAST_LABEL_Memory
#undef TOYSIM_FAST_LABEL_Move
#undef TOYSIM_FAST_LABEL_Compute
        &&load0, &&load1, &&load2, &&load3, &&store0, &&store1, &&store2, &&store3,
        &&load_any, &&store_any, &&store_add, &&loop_begin, &&loop_end, &&parallel_end, &&exit,
    };
    static_assert(std::size(handlers) == static_cast<size_t>(FastKind::Exit) + 1, "a handler for every kind");
#define TOYSIM_FAST_DISPATCH() goto* handlers[static_cast<size_t>(ip->kind)]
#define TOYSIM_FAST_NEXT() \
    ++ip;                  \
    TOYSIM_FAST_DISPATCH()
    // Each instruction pauses or leaves at the stop, then counts itself.
#define TOYSIM_FAST_STEP()                            \
    if (__builtin_expect(budget == 0, 0)) goto exit;  \
    --budget;                                         \
    ++executed[ip->pc]
#define TOYSIM_FAST_MEMORY(LABEL, FN, TERMS, MAYBE_RACE) \
    LABEL : {                                         \
        TOYSIM_FAST_STEP();                           \
        FN.template operator()<TERMS, MAYBE_RACE>(*ip); \
        TOYSIM_FAST_NEXT();                           \
    }
    TOYSIM_FAST_DISPATCH();
    TOYSIM_FAST_MEMORY(load0, load, 0, false)
    TOYSIM_FAST_MEMORY(load1, load, 1, false)
    TOYSIM_FAST_MEMORY(load2, load, 2, false)
    TOYSIM_FAST_MEMORY(load3, load, 3, false)
    TOYSIM_FAST_MEMORY(store0, store, 0, false)
    TOYSIM_FAST_MEMORY(store1, store, 1, false)
    TOYSIM_FAST_MEMORY(store2, store, 2, false)
    TOYSIM_FAST_MEMORY(store3, store, 3, false)
    // Any number of terms, and the race check inside a parallel loop on one worker (which
    // costs more than the rest).
    TOYSIM_FAST_MEMORY(load_any, load, -1, true)
    TOYSIM_FAST_MEMORY(store_any, store, -1, true)
store_add : {
    TOYSIM_FAST_STEP();
    const FastInst& f = *ip;
    const std::int64_t at = address.template operator()<-1>(f);
    if (f.race_checked) {
        at_fault = {f.pc, budget};
        race(f, at, AccessKind::Accumulate);
    }
    ++reads[at];
    const V v = stored_value(Op::STORE_ADD, dom, regs[f.reg[0]], dom.load(dram[at], at));
    dram[at] = v;
    present[at] = 1;
    dom.stored(v, at);
    TOYSIM_FAST_NEXT();
}
// Loop control is not an instruction: no step to count.
loop_end : {
    const auto slot = static_cast<size_t>(ip->reg[0]);
    // Again: to the body's first instruction, reg[1] bytes back.
    if (++vars[slot] < limit[slot]) {
        ip = reinterpret_cast<const FastInst*>(reinterpret_cast<const char*>(ip) + ip->reg[1]);
        TOYSIM_FAST_DISPATCH();
    }
    TOYSIM_FAST_NEXT();
}
// On one worker: the iteration's bookkeeping (parallel.h), then as any loop's end.
parallel_end : {
    const auto slot = static_cast<size_t>(ip->reg[0]);
    const bool again = ++vars[slot] < limit[slot];
    at_fault = {ip->pc, budget};  // it throws past 2^31 iterations
    parallel_loop_end(p, s, p.loops[static_cast<size_t>(ip->mem)], again);
    if (again) {
        ip = reinterpret_cast<const FastInst*>(reinterpret_cast<const char*>(ip) + ip->reg[1]);
        TOYSIM_FAST_DISPATCH();
    }
    TOYSIM_FAST_NEXT();
}
loop_begin : {
    const LoopInfo& l = p.loops[static_cast<size_t>(ip->mem)];
    std::int64_t lo, hi;
    // An overflowing bound or an empty range: the general executor's to report or count.
    if (!l.lo.eval_checked(vars, lo) || !l.hi.eval_checked(vars, hi) || lo >= hi) goto exit;
    vars[l.slot] = lo;
    limit[l.slot] = hi;
    TOYSIM_FAST_NEXT();
}
    // One handler per register-to-register row of the ISA table, as in the general executor.
#define TOYSIM_FAST_Memory(NAME, SIG, SEM)
#define TOYSIM_FAST_Move(NAME, SIG, SEM) TOYSIM_FAST(NAME, SIG, SEM)
#define TOYSIM_FAST_Compute(NAME, SIG, SEM) TOYSIM_FAST(NAME, SIG, SEM)
#define TOYSIM_FAST(NAME, SIG, SEM)                                                    \
    op_##NAME : {                                                                      \
        TOYSIM_FAST_STEP();                                                            \
        const FastInst& f = *ip;                                                       \
        constexpr int sources = register_reads(SIG);                                   \
        [[maybe_unused]] V a = regs[f.reg[0]];                                         \
        [[maybe_unused]] V b = sources > 1 ? regs[f.reg[1]] : a;                       \
        [[maybe_unused]] V c = sources > 2 ? regs[f.reg[2]] : a;                       \
        [[maybe_unused]] Domain& D = dom;                                              \
        [[maybe_unused]] double imm = 0;                                               \
        if constexpr (SIG[0] == 'i') imm = p.immediates[static_cast<size_t>(f.mem)];   \
        regs[f.reg[sources]] = SEM;                                                    \
        written[f.reg[sources]] = 1;                                                   \
        TOYSIM_FAST_NEXT();                                                            \
    }
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) TOYSIM_FAST_##CLASS(NAME, SIG, TOYSIM_SCALAR_SEM_##SHAPE(SEM))
    TOYSIM_OPCODES(X)
#undef X
#undef TOYSIM_FAST
#undef TOYSIM_FAST_Compute
#undef TOYSIM_FAST_Move
#undef TOYSIM_FAST_Memory
#undef TOYSIM_FAST_MEMORY
#undef TOYSIM_FAST_STEP
#undef TOYSIM_FAST_NEXT
#undef TOYSIM_FAST_DISPATCH
exit:
    return {ip->pc, budget};
}

}  // namespace toysim
