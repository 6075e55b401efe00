// What the Python module's sources share (python/module.cpp, python/session.cpp): a compiled
// program as Python holds it, and how errors cross into Python.
//
// The module is a thin layer over the simulator's libraries: every command it offers calls the
// functions `toysim` calls for it (sim/cli/*.cpp) and hands back what the CLI prints, as JSON
// text that toysim/__init__.py turns into Python objects. Errors reach Python as
// toysim.ToyError carrying the CLI's located message, never as a crash of the interpreter.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/app/spelling.h"
#include "sim/exec/counters.h"
#include "sim/lower/program.h"
#include "support/diag.h"

namespace toysim::python {

namespace py = pybind11;

// How the module's API spells what the command layer's messages ask to change
// (toysim/__init__.py: Program.with_params, max_steps=, values="numeric").
inline const app::Spelling kSpelling{"with_params()",     "max_steps=",        "values=\"numeric\"",
                                     "cost(heads=...)", "cost(workers=...)", "cost(cold_launches=...)",
                                     "a `cache h100` line in the program", "cost(machine=...)", "tune_schedule(registers=...)"};

// Raised to Python as toysim.ToyError; what() is the whole message as the CLI prints it on
// stderr, without its final newline (a traceback adds one).
class LocatedError : public std::runtime_error {
public:
    explicit LocatedError(const std::string& text);
};

// Ctrl-C reached a run: the Python error (KeyboardInterrupt) is already set, and the binding's
// boundary raises it once the run has unwound.
struct Interrupted {};

// Between chunks of a long run, with the GIL held: throws Interrupted if a signal handler
// (Ctrl-C's KeyboardInterrupt) raised.
void check_signals();

// `body` with every error the CLI reports with exit 2 turned into LocatedError, worded as
// sim/cli words it: a ToyError located in `*where` (the source the work is in at the moment,
// as the CLI's Context::source), running out of memory as the CLI says it. Interrupted
// becomes the pending KeyboardInterrupt.
template <class Body>
auto reported(const std::shared_ptr<const SourceFile>* where, Body&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const ToyError& e) {
        throw LocatedError(format_error(with_cli_hint(e), where ? where->get() : nullptr, "toysim"));
    } catch (const std::bad_alloc&) {
        throw LocatedError("toysim: error: out of memory: the run needs more memory than this machine has; try smaller parameters, or "
                           "`toysim cost`, which counts without running");
    } catch (const std::length_error&) {
        throw LocatedError("toysim: error: out of memory: the run would need more memory than a process can have; try smaller "
                           "parameters, or `toysim cost`, which counts without running");
    } catch (const Interrupted&) {
        throw py::error_already_set();
    }
}

// A program as toysim.load made it: its source, its parse tree (to compile again at other
// parameters: cost formulas, sweeps) and the settings it was compiled at.
struct LoadedProgram {
    std::shared_ptr<const SourceFile> source;
    std::shared_ptr<const ast::Program> tree;
    std::vector<std::string> sets;  // "n=4", as --set has them
    std::shared_ptr<const Program> program;
};

// --set's settings ("n=4") are parsed by toysim::settings_from (sim/lower/program.h), as the CLI's.
// The program compiled at `sets`: a malformed setting is a LocatedError at once, a setting the
// program rejects a ToyError.
std::shared_ptr<const Program> compile_at(const LoadedProgram& loaded, const std::vector<std::string>& sets);

// Every counter by its name in the counter table ("cycles", "LOAD", "reads(K)"), each with
// the value `counters_json` has at that counter's JSON path: the flat view of run's JSON.
// `shown`: the opcodes to list (every opcode when null, as the JSON has them).
nlohmann::ordered_json flat_counters(const Program& program, const Counters& counters, const nlohmann::ordered_json& json,
                                     const OpcodeSet* shown = nullptr);

// The session bindings (python/session.cpp).
void bind_session(py::module_& m);

}  // namespace toysim::python
