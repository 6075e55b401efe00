// Runs that would take hours: refused up front unless --force, and a progress line on a
// terminal while a long one runs.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>

#include "sim/analysis/cost.h"
#include "sim/cli/common.h"
#include "sim/cli/progress.h"
#include "sim/support/text.h"

namespace toysim::cli {

namespace {

// The work a run may do without --force, in elements moved through DRAM: about 40 minutes of
// FlashAttention at the rate below, a few minutes of a scalar program.
constexpr double kMaxElementMoves = 2e10;

// Elements moved through DRAM per second of a whole `toysim run` (execution plus filling the
// inputs and the reference check), measured with the Release build (GCC 12, -O3) on the 2-core
// development machine, shared, load average about 5:
//   /usr/bin/time -f %e toysim run programs/attention/fa2.toy --set n=4096 --set d=64 --set Br=64 --set Bc=64
// moves 34,082,816 elements (count_traffic: Q 262,144, K and V 16,777,216 each, O 262,144,
// L 4,096) in 3.89 s (median of 5 runs: 3.76 to 4.19 s): 8.8 M elements/s. FlashAttention does
// much arithmetic per element moved; a scalar program moves elements faster, so the estimate
// errs toward refusing.
constexpr double kElementsPerSecond = 8.8e6;

std::string grouped(double value) {
    std::string digits = fmt::format("{:.0f}", value);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

// The elements a run moves through DRAM, from the count-only pass (no instruction executed);
// infinity if the count overflows 64 bits.
// TODO(estimate_work): when sim/analysis/cost.h offers estimate_work(const Program&) (exact
// instructions and units of work), estimate from that instead.
double element_moves(const Program& program) {
    try {
        double total = 0;
        for (const ArrayTraffic& t : count_traffic(program)) total += static_cast<double>(t.reads) + static_cast<double>(t.writes);
        return total;
    } catch (const ToyError&) {
        return INFINITY;
    }
}

// Sets RunOptions::on_progress where the machine offers it (the run loop calls it every few
// million steps); until then a run shows no progress line.
template <class RunOptionsT>
void attach_progress(RunOptionsT& options, Progress& progress) {
    if constexpr (requires(RunOptionsT& o, std::function<void(std::uint64_t)> f) { o.on_progress = f; })
        options.on_progress = [&progress](std::uint64_t steps_done) { progress.update(steps_done); };
}

}  // namespace

void refuse_long_runs(const std::vector<const Program*>& programs, bool force) {
    if (force) return;
    double total = 0;
    for (const Program* p : programs) total += element_moves(*p);
    if (total <= kMaxElementMoves) return;
    std::string what = programs.size() == 1 ? "this run would" : fmt::format("these {} runs would", programs.size());
    if (!std::isfinite(total))
        throw ToyError(ErrorKind::TooLongToRun, {}, fmt::format("{} move more than 2^64 elements through DRAM", what));
    double minutes = total / kElementsPerSecond / 60;
    throw ToyError(ErrorKind::TooLongToRun, {},
                   fmt::format("{} move about {} elements through DRAM (≈ {} minutes at {} M elements/s)", what, grouped(total),
                               grouped(std::max(1.0, minutes)), format_number(kElementsPerSecond / 1e6, 2)));
}

RunResult run_with_progress(const Program& program, RunOptions options, Context& ctx, const std::string& label) {
    Progress progress(ctx.err, ctx.err_is_terminal, label);
    attach_progress(options, progress);
    return run(program, options);
}

// ---- Progress ----

Progress::Progress(std::ostream& err, bool enabled, std::string label, std::chrono::milliseconds delay)
    : err_(err), enabled_(enabled), label_(std::move(label)), delay_(delay), start_(Clock::now()) {}

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
    std::string line = fmt::format("toysim: {}: {} instructions in {:.0f} s", label_, grouped(static_cast<double>(steps_done)), seconds);
    std::size_t width = line.size();
    if (width < width_) line.append(width_ - width, ' ');  // cover a longer line before it
    err_ << '\r' << line << std::flush;
    width_ = std::max(width_, width);
}

}  // namespace toysim::cli
