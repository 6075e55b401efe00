// `view`: a run as the viewer's one offline HTML page (sim/print/viewer/), made once for the
// CLI, the Python module and the browser's engine.
#pragma once

#include <cstdint>
#include <string>

#include "sim/app/spelling.h"
#include "sim/lower/program.h"

namespace toysim::app {

// A page holds every step; past this many, it would no longer open in seconds.
inline constexpr std::uint64_t kViewSteps = 100'000;

struct ViewRequest {
    std::string values = "auto";  // auto, numeric or symbolic, as shows_symbols takes them
    std::uint64_t max_steps = 0;  // the most steps the page may hold; 0: kViewSteps
};

struct ViewPage {
    std::string html;
    std::uint64_t steps = 0;  // the steps the page holds: the whole run
};

// Throws ToyError when this build has no Chart.js, which the page's charts need.
void require_viewer();

// Throws ToyError: a build without Chart.js, a program too large to run, a run longer than
// the page may hold.
ViewPage view(const Program& program, const ViewRequest& request, const Spelling& spelling);

}  // namespace toysim::app
