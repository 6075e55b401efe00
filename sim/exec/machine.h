// The toy machine: a program's whole state (sim/exec/state.h) and the executor that steps it.
//
//   Machine<NumericDomain> m(program, NumericDomain{});   // a fresh machine; DRAM all unset
//   (fill the inputs: sim/check/fill.h)
//   m.run_until(kForever, max_steps);                     // or m.step(&sink), one instruction
//   Counters c = m.counters();
//
// The executor is compiled twice per domain: without a listener it does nothing but execute
// (the speed of `toysim run`); with one it reports every instruction as an Event (event.h),
// old values included, so a stepper can go back and a trace can print.
// Nothing here prints, fills inputs or grades results: see sim/check and sim/print.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "sim/exec/counters.h"
#include "sim/exec/event.h"
#include "sim/exec/fast_path.h"
#include "sim/exec/state.h"
#include "sim/exec/symbolic.h"
#include "sim/lower/program.h"

namespace toysim {

// Numbers: the machine as the seed runs it, one method per primitive (isa/primitives.h).
// NaN propagates through every operation, MAX included.
struct NumericDomain {
    using Value = double;
#define X(KIND, METHOD, ARITY, NUMERIC, FORM, TEXT, PREFIX, BINDS) \
    static double METHOD(double a, [[maybe_unused]] double b = 0) { return NUMERIC; }
    TOYSIM_PRIMITIVES(X)
#undef X
    static double constant(double v) { return v; }
    static double load(double& cell, std::int64_t) { return cell; }
    static void stored(double, std::int64_t) {}
};

inline constexpr std::uint64_t kNoPause = std::numeric_limits<std::uint64_t>::max();

template <class Domain>
class Machine {
public:
    using Value = typename Domain::Value;

    // A machine at step 0 with the program's memory allocated: no register written, no DRAM
    // element present (fills come after). Throws ErrorKind::TooLargeToRun when the arrays are
    // larger than a run may hold (kMaxRunDram elements).
    Machine(const Program& program, Domain domain);

    const Program& program() const { return *program_; }
    Domain& domain() { return domain_; }
    MachineState<Value>& state() { return state_; }
    const MachineState<Value>& state() const { return state_; }
    bool halted() const { return state_.halted; }

    // Runs until the program ends or `pause_at` instructions have run in all (the machine
    // then stands before the next one). Reaching `max_steps` is a fault. A fault throws
    // ToyError; the machine is then as far as the faulting instruction got, and stays so.
    void run_until(std::uint64_t pause_at, std::uint64_t max_steps);
    void run_until(std::uint64_t pause_at, std::uint64_t max_steps, EventSink<Value>& sink);
    // One instruction (false when the program has already ended).
    bool step(EventSink<Value>* sink = nullptr, std::uint64_t max_steps = kNoPause);

    // Takes back the instruction `event` reported, which must be the last one run: the state
    // is then exactly as before it (symbolic values made on the way stay in the arena, which
    // only grows; the state no longer refers to them).
    void undo(const Event<Value>& event);

    // The cycle the last instruction finished on: each instruction's units of work times its
    // opcode's cost per unit, summed.
    std::uint64_t cycle() const;
    Counters counters() const;

private:
    const Program* program_;
    Domain domain_;
    MachineState<Value> state_;
    std::vector<Value> scratch_;  // a product that overwrites one of its sources is built here
    std::vector<FastInst> fast_;  // the program decoded for the fast path (fast_path.h)
};

extern template class Machine<NumericDomain>;
extern template class Machine<SymbolicDomain>;

// Throws ErrorKind::TooLargeToRun when the program's arrays do not fit in a run, pointing at
// the first array that does not fit: what Machine's constructor checks, callable before.
void check_fits_in_run(const Program& program);

}  // namespace toysim
