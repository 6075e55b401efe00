// `tune --schedule`: the shortest program of a small straight-line one's products on the seeds'
// machine (sim/analysis/schedule_search.h), written as a .toy program and traced, for the CLI,
// the Python module and the browser's engine alike.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/app/spelling.h"
#include "sim/front/ast.h"
#include "sim/lower/program.h"
#include "sim/print/format.h"
#include "sim/print/plot.h"

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

// `tune --vary`: a schedule's parameters searched by the model, without running a point.
struct SpaceTuneRequest {
    std::vector<std::string> vary;   // NAME=V1,V2,...: every combination, the first varying slowest
    std::vector<std::string> sets;   // NAME=V: the same at every point
    std::string objective = "time";  // time (the machine's prediction), dram (bytes, its L2 walked), cycles (the toy machine's)
    std::string machine = "h100";
    std::int64_t heads = 1;          // copies of the problem sharing the L2, as a GPU's grid runs them
    std::string dtype = "fp32";      // what the L2 sees an element take: fp32 (4 bytes), fp16 or bf16 (2)
    int top = 10;                    // points printed, best first
};
inline constexpr std::size_t kMaxTunePoints = 10'000;

// Every point of the space compiled, walked through the machine's L2 and timed on it
// (predict_program), ranked by the objective; the points the program or the machine refuses
// (a parameter its asserts reject, tiles past the register file, a block past an SM) dropped,
// each with its reason. Throws ToyError for a bad --vary or objective, or more than
// kMaxTunePoints points.
struct TunedSpace {
    std::string text;  // as `format` prints it
    Plot plot;         // the objective against the first --vary parameter, a curve per value of the others
};
TunedSpace tune_space(const std::shared_ptr<const ast::Program>& tree, const std::string& path, const SpaceTuneRequest& request, Format format,
                      const Spelling& spelling);

}  // namespace toysim::app
