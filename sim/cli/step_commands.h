// One command of `toysim step` (gdb/rr names and short forms: step, back, goto, continue,
// reverse-continue, break, watch, print, mem, ...), applied to a session. The interactive loop
// (step_command.cpp) reads lines and calls this; the fuzz target drives it with arbitrary lines.
#pragma once

#include <ostream>
#include <string>

#include "sim/print/step_report.h"
#include "sim/step/session.h"

namespace toysim::cli {

// Runs `line` (already trimmed, not empty) on the session and writes what it shows to `out`.
// Returns false for quit. A mistake in the command is a ToyError (the session is unchanged).
// `interactive`: Ctrl-C interrupts a long move.
template <class Domain>
bool execute_step_command(Session<Domain>& s, const std::string& line, const StepStyle& style, std::ostream& out, bool interactive);

}  // namespace toysim::cli
