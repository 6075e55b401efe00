// What run and trace refuse before they start, for the CLI and the browser's engine alike (the
// checks that once sat among the printers: sim/print only prints).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/lower/program.h"
#include "sim/print/format.h"
#include "sim/print/report.h"

namespace toysim::app {

// `run --show NAME...`: refused with a format that is not a table (the block of numbers has no
// JSON or CSV form; format_name: the format as given).
void check_show_format(const std::vector<std::string>& names, Format format, std::string_view format_name);
// Each name's array, or ToyError naming the closest array the program has.
std::vector<int> shown_arrays(const Program& program, const std::vector<std::string>& names);
// What a trace refuses before it starts (ToyError): --ditto with JSON (no cells to
// abbreviate), and more steps than fit in 2 GiB (a trace keeps every step it prints).
void check_trace_request(std::uint64_t max_steps, const TraceOptions& options);

}  // namespace toysim::app
