// The viewer's page for a run (view.h).
#include "sim/app/view.h"

#include <fmt/format.h>

#include "sim/analysis/cost.h"
#include "sim/check/run.h"
#include "sim/exec/machine.h"
#include "sim/print/assets.h"
#include "sim/print/view_report.h"
#include "sim/step/recording.h"
#include "support/text.h"

namespace toysim::app {

void require_viewer() {
    if (chart_js().empty())
        throw ToyError("this toysim was built without Chart.js (Debian's libjs-chart.js), which the viewer's charts need: install it "
                       "(scripts/install-deps.sh) and rebuild");
}

ViewPage view(const Program& p, const ViewRequest& request, const Spelling& spelling) {
    require_viewer();
    check_fits_in_run(p);
    const std::uint64_t limit = request.max_steps ? request.max_steps : kViewSteps;
    const WorkEstimate work = estimate_work(p);
    if (work.instructions > limit)
        throw ToyError(fmt::format("this run has {} steps, more than a page can show ({}): make it smaller with {} (for example a "
                                   "smaller n), or raise the limit with {}",
                                   grouped(static_cast<double>(work.instructions)), grouped(static_cast<double>(limit)), spelling.sets,
                                   spelling.max_steps));
    nlohmann::ordered_json data;
    if (shows_symbols(request.values, p)) {
        ExprArena arena;
        auto recording = record_symbolic(p, arena, work.instructions, limit);
        data = view_json(p, recording, arena);
    } else {
        data = view_json(p, record_numeric(p, work.instructions, limit));
    }
    return {view_html(data), data["end"]["steps"].get<std::uint64_t>()};
}

}  // namespace toysim::app
