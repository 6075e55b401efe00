// A stepping session: one run that moves forward and backward to any step, and stops at
// breakpoints in either direction (the engine behind `toysim step`).
//
// Going back is re-execution, as rr and Venus do it: the machine is deterministic, so the
// state at step t is the nearest checkpoint at or before t, run forward to t. Checkpoints are
// whole MachineState copies taken every `interval` steps as the run first gets there; when
// they outgrow their memory budget every other one is dropped and the interval doubles, so a
// run of any length holds at most a few states (at least two) and any step is one copy plus
// at most one interval of plain execution away (300 M steps/s).
//
// Symbolic values are nodes of an arena that only grows as the run goes forward. Restoring a
// checkpoint rolls the arena back to where it stood at that step, so replaying makes the same
// nodes with the same ids, and a value keeps its name however often the student steps over it.
//
// Nothing here prints (sim/print/step_report.h does).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "sim/exec/machine.h"
#include "sim/step/breakpoint.h"

namespace toysim {

struct SessionLimits {
    std::uint64_t max_steps = 10'000'000'000ULL;      // the run's step limit (a fault, as in `run`)
    std::size_t checkpoint_bytes = std::size_t{128} << 20;  // checkpoints' budget (at least two are kept)
};

// Why a move ended where it did.
struct Stop {
    enum class Reason : std::uint8_t {
        Moved,        // got where it was asked to go
        Breakpoint,   // `breakpoint` (an index into breakpoints()) stopped it
        Start,        // ran back to step 0
        End,          // the program ended (halted) before getting there
        Fault,        // the next instruction faults (fault() says how)
        Interrupted,  // the interrupt callback asked it to stop
    } reason = Reason::Moved;
    int breakpoint = -1;
};

template <class Domain>
class Session {
public:
    using Value = typename Domain::Value;

    // A session at step 0, inputs filled (numeric: fill_inputs; symbolic: left unnamed until
    // read). `arena` is the symbolic domain's arena (null for numeric).
    Session(const Program& program, Domain domain, ExprArena* arena, SessionLimits limits = {});

    const Program& program() const { return *program_; }
    const MachineState<Value>& state() const { return machine_.state(); }
    std::uint64_t position() const { return machine_.state().steps; }
    std::uint64_t cycle() const { return machine_.cycle(); }
    Counters counters() const { return machine_.counters(); }
    // The instruction that brought the machine to this step (none at step 0).
    const Event<Value>* last_event() const { return has_last_ ? &last_ : nullptr; }
    // The last step, once the run has got there (halted or faulted); unknown before.
    std::optional<std::uint64_t> end() const { return end_; }
    // The fault the instruction after end() raises, if that is how the run ends.
    const std::optional<ToyError>& fault() const { return fault_; }

    // Moves. forward/backward: n instructions; go_to: to step `step`. None of them stops at a
    // breakpoint. run_forward/run_backward (continue, reverse-continue): to the next or previous
    // step that a breakpoint stops at, else the end or the start.
    Stop forward(std::uint64_t n);
    Stop backward(std::uint64_t n);
    Stop go_to(std::uint64_t step);
    Stop run_forward();
    Stop run_backward();

    // Puts worker `worker`'s registers and tiles where the machine's are (sim/exec/interleave.h)
    // and the running worker's in its place; called again with the same worker, puts them back.
    // Nothing else changes: for showing what a worker holds.
    void exchange_worker_part(std::uint32_t worker);

    // Runs the program from the start with every event to `sink`, at most `limit` steps, and
    // stays where it stopped: false when the run is longer than `limit`.
    bool visit_all(EventSink<Value>& sink, std::uint64_t limit);

    std::vector<Breakpoint>& breakpoints() { return breakpoints_; }
    const std::vector<Breakpoint>& breakpoints() const { return breakpoints_; }
    // Adds a breakpoint and returns its number (1, 2, ...).
    int add_breakpoint(Breakpoint bp);
    bool delete_breakpoint(int number);

    // Polled between chunks of a long move; true stops it (Ctrl-C on a terminal).
    std::function<bool()> interrupted;

    // Checkpoints: how many, every how many steps, and the bytes they hold.
    std::size_t checkpoint_count() const { return checkpoints_.size(); }
    std::uint64_t checkpoint_interval() const { return interval_; }
    std::size_t checkpoint_bytes() const { return checkpoints_.size() * state_bytes_; }

private:
    struct Checkpoint {
        std::uint64_t step = 0;
        MachineState<Value> state;
        ExprArena::Mark mark;
    };
    const Program* program_;
    ExprArena* arena_;
    SessionLimits limits_;
    Machine<Domain> machine_;
    std::vector<Checkpoint> checkpoints_;
    std::uint64_t interval_ = 0;
    std::size_t state_bytes_ = 0;
    Event<Value> last_;
    bool has_last_ = false;
    std::optional<std::uint64_t> end_;
    std::optional<ToyError> fault_;
    std::vector<Breakpoint> breakpoints_;
    int next_breakpoint_ = 1;

    void restore(const Checkpoint& c);
    void take_checkpoint();
    // Runs forward (no events) to `step`, or to the end: false if the end came first.
    bool run_plain_to(std::uint64_t step);
    // After a fault: records it and puts the machine at the last step that completed.
    void settle_after_fault(const ToyError& e);
    // Puts the machine exactly at `step` (<= the end) with the event that got it there.
    void land(std::uint64_t step);
    // Goes back over the steps up to `upper`, segment by segment, newest first: restores each
    // segment's checkpoint and calls replay(to, from), which replays steps (from, to] and says
    // whether to stop there. Returns whether one did.
    template <class Replay>
    bool back_over_segments(std::uint64_t upper, Replay&& replay);
    Stop at_end_reason() const;
    std::uint64_t next_boundary() const;
};

extern template class Session<NumericDomain>;
extern template class Session<SymbolicDomain>;

// Every symbolic value a symbolic session can show (what each step writes, old and new; tile
// blocks up to kShownBlock × kShownBlock), from a run to the end of at most `limit` steps,
// which leaves the session there: the values to name once, as the whole trace names them.
// Nullopt when the run is longer than `limit`.
inline constexpr std::int64_t kShownBlock = 16;
// A symbolic session names every value of the whole run once (as `trace` does), so it is for
// runs up to this long; longer ones step numerically (`toysim step` and the Python module).
inline constexpr std::uint64_t kSymbolicSessionSteps = 100'000;
std::optional<std::vector<std::uint32_t>> collect_shown_values(Session<SymbolicDomain>& session, std::uint64_t limit);

}  // namespace toysim
