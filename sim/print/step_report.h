// What `toysim step` prints: where a move stopped and what that step did (the trace's row for
// it, the change marked), and the answers to print, regs, mem, counters, list and info.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/print/expr_format.h"
#include "sim/step/session.h"

namespace toysim {

struct StepStyle {
    const ExprFormatter* names = nullptr;  // a symbolic session's names (the whole trace's)
    bool color = false;                    // ANSI color for what changed (a terminal)
};

// A register file of up to this many scalar registers is shown whole; a larger one shows the
// registers written so far (the stepper's `regs` and the viewer's register panel).
inline constexpr int kShownRegisters = 32;
template <class Domain>
std::vector<int> shown_registers(const Session<Domain>& session);
// A value as the stepper shows it: a number as the trace prints it, a symbolic value by the
// trace's name for it.
template <class Value>
std::string step_value_text(const Program& program, const Value& v, const StepStyle& style);

// After a move: why it stopped, then the step: step and cycle, file:line and the source line,
// the trace's row (the changed cell marked), old → new, the DRAM it moved and the counters it
// changed with their totals.
template <class Domain>
std::string format_stop(const Session<Domain>& session, const Stop& stop, const StepStyle& style);
// `print WHAT`: a register (R3), a tile (o) or one of its elements (o[1][2]), a DRAM element
// (x[2]) or a counter (reads(K)). Throws ToyError when WHAT is none of these.
template <class Domain>
std::string format_print(const Session<Domain>& session, std::string_view what, const StepStyle& style);
// `regs`: every scalar register and tile, as they stand.
template <class Domain>
std::string format_registers(const Session<Domain>& session, const StepStyle& style);
// `mem ARRAY [FIRST]`: an array's values and how often each was read, 16 rows from FIRST.
template <class Domain>
std::string format_memory(const Session<Domain>& session, std::string_view array, std::int64_t first_row, const StepStyle& style);
// `counters`: every counter so far.
template <class Domain>
std::string format_session_counters(const Session<Domain>& session);
// `list [LINE]`: the source around LINE (default: the current instruction), marked.
template <class Domain>
std::string format_listing(const Session<Domain>& session, std::optional<int> line);
// `info breakpoints` and `info checkpoints`.
std::string format_breakpoints(const std::vector<Breakpoint>& breakpoints);
template <class Domain>
std::string format_checkpoints(const Session<Domain>& session);
// `info workers` / `info devices`: each one's clock, next line and state; the links' messages.
template <class Domain>
std::string format_workers(const Session<Domain>& session);
// A symbolic session's names: every value the run can show, named once as the whole trace
// names it (a run to the end, of at most kSymbolicSessionSteps steps, then back to step 0), as
// `toysim step` and the browser's engine start one. Throws ToyError when the run is longer.
std::unique_ptr<ExprFormatter> name_session_values(Session<SymbolicDomain>& session, const ExprArena& arena);

// Why a move stopped, as one word: moved, breakpoint, start, end, fault or interrupted.
std::string_view stop_reason_name(Stop::Reason reason);

// `help`.
std::string step_help();

}  // namespace toysim
