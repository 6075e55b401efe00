// What run and trace refuse before they start (requests.h).
#include "sim/app/requests.h"

#include <fmt/format.h>

#include "sim/check/run.h"
#include "support/text.h"

namespace toysim::app {

void check_show_format(const std::vector<std::string>& names, Format format, std::string_view format_name) {
    if (!names.empty() && format != Format::Table && format != Format::Markdown)
        throw ToyError(fmt::format("--show prints a block of numbers; use it with --format table or markdown, not --format {}", format_name));
}

std::vector<int> shown_arrays(const Program& program, const std::vector<std::string>& names) {
    std::vector<int> shown;
    for (const auto& name : names) {
        int a = program.find_array(name);
        if (a < 0) {
            std::vector<std::string_view> arrays;
            for (const auto& info : program.arrays) arrays.push_back(info.name);
            throw ToyError(fmt::format("--show {}: the program has no array {}{}", flag_subject(name), quoted_name(name),
                                       did_you_mean(name, arrays)));
        }
        shown.push_back(a);
    }
    return shown;
}

void check_trace_request(std::uint64_t max_steps, const TraceOptions& options) {
    // " for an unchanged cell abbreviates a table (CSV included: a spreadsheet shows it as the
    // seed does); JSON has no cells to abbreviate, and would ignore it.
    if (options.ditto && options.format == Format::Json)
        throw ToyError("--ditto abbreviates a table for reading; use it with --format table, markdown or csv, not --format json");
    constexpr std::uint64_t kMaxTraceBytes = std::uint64_t{2} << 30;
    constexpr std::uint64_t kMaxTraceSteps = kMaxTraceBytes / sizeof(TraceStep);
    if (max_steps > kMaxTraceSteps)
        throw ToyError(fmt::format("--max-steps {}: a trace keeps every step it prints ({} bytes each), so at most {} steps fit in "
                                   "2 GiB; `toysim run` counts a run of any length",
                                   max_steps, sizeof(TraceStep), kMaxTraceSteps));
}

}  // namespace toysim::app
