// `cost`: what a program costs without running it, for the CLI, the Python module and the
// browser's engine: its formulas, or with a cache the count-only walk through it.
#pragma once

#include <cstdint>
#include <string>

#include "isa/machine.h"
#include "sim/app/spelling.h"
#include "sim/exec/cached_count.h"
#include "sim/lower/program.h"
#include "sim/print/format.h"
#include "sim/timing/predict.h"

namespace toysim::app {

// How the accesses reach the program's cache, as a GPU's grid makes them.
struct CostRequest {
    std::int64_t heads = 1;      // independent copies of the problem sharing the cache
    std::int64_t workers = 0;    // a grid's workers (0: the program's)
    bool cold_launches = false;  // each top-level loop a launch from a cold cache
    std::string machine;         // a named machine (isa/machine.h): each launch's predicted time too
};

// The walk's options for the request. A program without a cache walks nothing, and a request
// that says how accesses reach a cache it does not have is refused (ToyError). The walk bounds
// itself (kMaxWalkWork).
CachedCountOptions walk_options(const Program& program, const CostRequest& request, const Spelling& spelling);

// The cost as `format` prints it: the formulas (element counts, cycles); with a cache, the
// walk's counts, after the formulas in a table; with a machine, each launch's predicted time
// after them (JSON: under "predicted_time"), the program's cache or the machine's preset
// walked with each top-level loop a launch from a cold L2. Throws ToyError (a count that overflows, a walk
// too long).
std::string cost(const Program& program, const CostRequest& request, Format format, const Spelling& spelling);

// The named machine, or a ToyError that lists the machines.
const MachineSpec& named_machine(const std::string& name, const Spelling& spelling);
// `base` (a command's output in `format`) with each launch's predicted time on the machine
// after it (JSON: the object with "predicted_time" added), `heads` copies sharing the L2:
// what `cost --machine` and `run --machine` add.
std::string with_predicted_time(const Program& program, const MachineSpec& machine, std::int64_t heads, Format format, const std::string& base);
std::string with_predicted_time(const Program& program, const MachineSpec& machine, const ProgramTime& time, std::int64_t heads, Format format,
                                const std::string& base);

}  // namespace toysim::app
