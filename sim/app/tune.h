// `tune --schedule`: the shortest program of a small straight-line one's products on the seeds'
// machine (sim/analysis/schedule_search.h), written as a .toy program and traced, for the CLI,
// the Python module and the browser's engine alike.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "sim/app/spelling.h"
#include "sim/front/ast.h"
#include "sim/lower/program.h"
#include "sim/print/format.h"
#include "sim/print/plot.h"
#include "sim/timing/predict.h"

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
    std::string machine;  // "": the GPU's own machine where the points run on it (--gpu), else h100
    std::int64_t heads = 1;          // copies of the problem sharing the L2, as a GPU's grid runs them
    std::string dtype = "fp32";      // what the L2 sees an element take: fp32 (4 bytes), fp16 or bf16 (2), e4m3 (1)
    int top = 10;                    // points printed, best first
};
inline constexpr std::size_t kMaxTunePoints = 10'000;

// One point of the space: its --vary values, what the model predicts, and where it ran on a
// GPU (`toysim tune --gpu`, sim/app/tune_gpu.h), what was measured.
struct TunePoint {
    ParamSettings varied;  // the --vary names' values
    double seconds = 0, flops = 0, dram_bytes = 0;
    std::uint64_t cycles = 0;
    std::string bound;  // the slowest launch's
    std::string untimed;  // why some launch has no predicted time ("": every launch has one; then seconds is theirs)
    int spilled_bytes = 0;  // a thread's registers spilled to local memory (generated CUDA): not timed
    // On the GPU: the median of the timed launches (all stages), whether the program's checks
    // passed and the counted traffic equals the simulated, or why the point did not run.
    std::optional<double> measured_seconds;
    bool checks_passed = true, traffic_equal = true;
    std::string gpu_error;
    bool ran() const { return measured_seconds.has_value() || !gpu_error.empty(); }
};

// The space ranked: every point compiled, predicted (`predict`: by default predict_program,
// the program's schedule on the machine's L2 and units) and sorted by the objective, the points
// the program, the machine or `predict` refuses (a ToyError) dropped with the reason.
struct RankedSpace {
    std::string path, machine;
    SpaceTuneRequest request;
    std::vector<ParamSettings> space;
    ParamSettings fixed;
    std::vector<TunePoint> ranked;  // best first
    std::vector<std::pair<ParamSettings, std::string>> dropped;
    std::string device;             // the GPU the measured points ran on ("": none ran)
    std::string kernel;             // what ran there, or what the model predicted ("": the program's schedule)
};
// The bytes an element of `dtype` takes (fp32 4, fp16 and bf16 2, e4m3 1); ToyError for another name.
int tune_element_bytes(const std::string& dtype);
using PointPredictor = std::function<ProgramTime(const Program& program, const MachineSpec& machine)>;
RankedSpace rank_space(const std::shared_ptr<const ast::Program>& tree, const std::string& path, const SpaceTuneRequest& request,
                       const Spelling& spelling, const PointPredictor& predict = {});
// The points' settings: --set's values, then the point's --vary values.
ParamSettings point_settings(const RankedSpace& space, const TunePoint& point);

// Spearman's rank correlation of two equally long lists (ties get their ranks' mean); NaN for
// fewer than 3 values or a list whose values are all equal.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// The ranked space as `format` prints it: the top points with their predicted figures; where
// points ran on a GPU, their measured times, the model's pick against the measured best and
// the rank correlation of predicted and measured; the dropped points with their reasons.
struct TunedSpace {
    std::string text;  // as `format` prints it
    Plot plot;         // the objective against the first --vary parameter, a curve per value of the others
};
TunedSpace format_space(const RankedSpace& space, Format format);

// rank_space, then format_space. Throws ToyError for a bad --vary or objective, or more than
// kMaxTunePoints points.
TunedSpace tune_space(const std::shared_ptr<const ast::Program>& tree, const std::string& path, const SpaceTuneRequest& request, Format format,
                      const Spelling& spelling);

}  // namespace toysim::app
