// Runs that would take hours: refused up front unless --force (refuse_long_runs, in
// sim/analysis/run_length.cpp), and a progress line on a terminal while a long one runs.
#include <algorithm>
#include <fmt/format.h>

#include "sim/analysis/cost.h"
#include "sim/cli/common.h"
#include "sim/cli/progress.h"
#include "support/text.h"

namespace toysim::cli {

std::vector<WorkEstimate> check_run_length(const std::vector<const Program*>& programs, std::uint64_t max_steps_given, bool force) {
    for (const Program* p : programs) check_fits_in_run(*p);  // too large to run at all is said before too long to run
    return refuse_long_runs(programs, max_steps_given, force);
}

RunResult run_with_progress(const Program& program, RunOptions options, Context& ctx, const std::string& label,
                            const WorkEstimate& estimate, bool to_verdict) {
    Progress progress(ctx.err, ctx.err_is_terminal, label, estimate.exact ? estimate.instructions : 0);
    options.on_progress = [&progress](std::uint64_t steps_done) { progress.update(steps_done); };
    return to_verdict ? run_to_verdict(program, options) : run(program, options);
}

// ---- Progress ----

Progress::Progress(std::ostream& err, bool enabled, std::string label, std::uint64_t expected_steps,
                   std::chrono::milliseconds delay)
    : err_(err), enabled_(enabled), label_(std::move(label)), expected_(expected_steps), delay_(delay), start_(Clock::now()) {}

Progress::~Progress() {
    if (width_ == 0) return;
    err_ << '\r' << std::string(width_, ' ') << '\r' << std::flush;
}

void Progress::update(std::uint64_t steps_done) {
    if (!enabled_) return;
    auto now = Clock::now();
    if (now - start_ < delay_) return;
    if (width_ > 0 && now - last_ < std::chrono::milliseconds(250)) return;  // at most 4 updates a second
    last_ = now;
    double seconds = std::chrono::duration<double>(now - start_).count();
    std::string line = fmt::format("toysim: {}: {} ", label_, grouped(static_cast<double>(steps_done)));
    if (expected_ >= steps_done && expected_ > 0)
        line += fmt::format("of {} instructions ({:.0f}%)", grouped(static_cast<double>(expected_)),
                            100.0 * static_cast<double>(steps_done) / static_cast<double>(expected_));
    else
        line += "instructions";
    line += fmt::format(" in {:.0f} s", seconds);
    std::size_t width = line.size();
    if (width < width_) line.append(width_ - width, ' ');  // cover a longer line before it
    err_ << '\r' << line << std::flush;
    width_ = std::max(width_, width);
}

}  // namespace toysim::cli
