// The toysim command line as a function, so tests run it in-process with captured output.
#pragma once

#include <functional>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "support/diag.h"

namespace toysim::cli {

inline constexpr const char* kVersion = "0.1.0";
// The commit this toysim was built from, as `git describe --always --dirty` said at build time
// ("unknown" when built from a tarball): `toysim --version` names it so a bug report does. It is
// defined in a file the build generates (cmake/commit.cmake), so only that file recompiles when
// HEAD moves.
extern const char* const kCommit;

// Exit codes: 0 ok, 1 a check or an expected figure failed, 2 bad input (malformed program,
// bad option, run-time fault, step limit, out of memory, output that could not be written),
// 3 an internal error (a bug in toysim).
inline constexpr int kOk = 0, kCheckFailed = 1, kBadInput = 2, kInternalError = 3;

// What the command line runs with besides its arguments and output streams.
struct Io {
    std::istream* in = nullptr;    // the program path "-" reads from here (null: std::cin)
    bool err_is_terminal = false;  // stderr is a terminal: long runs show a progress line there
    bool in_is_terminal = false;   // stdin and stdout are a terminal: `toysim step` edits lines
    bool out_is_terminal = false;  // and colors what changed
};

// args excludes the program name. Returns the exit code; never lets an exception out except
// what guard_internal_errors turns into an internal error. A failed write to `out` is an error
// (exit 2) once everything is written.
int main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, const Io& io = {});

// The last line of defense, around everything the binary does: an exception that escapes is
// "toysim: internal error: WHAT" and exit 3 (running out of memory is "toysim: error: out of
// memory: ..." and exit 2), never std::terminate.
int guard_internal_errors(const std::function<int()>& body, std::ostream& err);

// The error as the CLI prints it: the core's message plus how to change it with this tool's
// flags (--max-steps, --force, `toysim cost`, --set NAME), each added once.
ToyError with_hint(const ToyError& error);

}  // namespace toysim::cli
