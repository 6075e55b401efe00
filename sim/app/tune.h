// `tune --schedule`: the shortest program of a small straight-line one's products on the seeds'
// machine (sim/analysis/schedule_search.h), written as a .toy program and traced, for the CLI,
// the Python module and the browser's engine alike.
#pragma once

#include <cstdint>
#include <string>

#include "sim/app/spelling.h"
#include "sim/lower/program.h"
#include "sim/print/format.h"

namespace toysim::app {

struct ScheduleTuneRequest {
    int registers = 0;                         // 0: the program's `registers` line
    std::uint64_t max_states = 5'000'000;      // the search gives up past this many states (seconds)
};

// The search's answer as `format` prints it: a summary (cycles, each opcode's count, why no
// shorter program exists), the program as .toy source (runnable: its checks and expects hold),
// and its trace in the seeds' notation. JSON holds the same. `path` names the program searched.
// Throws ToyError for a program the search does not take, too few registers, or a search that
// ends without a proof within max_states.
std::string tune_schedule(const Program& program, const std::string& path, const ScheduleTuneRequest& request, Format format,
                          const Spelling& spelling);

}  // namespace toysim::app
