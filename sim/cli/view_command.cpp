// `toysim view`: the run as one offline HTML file (the viewer in sim/print/viewer/).
#include <fmt/format.h>

#include "sim/analysis/cost.h"
#include "sim/cli/common.h"
#include "sim/cli/output.h"
#include "sim/print/assets.h"
#include "sim/print/view_report.h"
#include "sim/step/recording.h"

namespace toysim::cli {

namespace {
// A page holds every step; past this many, it would no longer open in seconds.
constexpr std::uint64_t kViewSteps = 100'000;
}  // namespace

int view_command(const Options& o, Context& ctx) {
    if (chart_js().empty())
        throw ToyError("this toysim was built without Chart.js (Debian's libjs-chart.js), which the viewer's charts need: install it "
                       "(scripts/install-deps.sh) and rebuild");
    Program p = load_program(o.file, settings_from(o.sets), ctx);
    if (p.cache)
        ctx.err << fmt::format("note: the viewer does not run the program's cache (line {}): it shows DRAM traffic in elements; `toysim run` "
                               "counts the cache\n",
                               p.cache->loc.line);
    check_fits_in_run(p);
    std::uint64_t limit = o.max_steps ? o.max_steps : kViewSteps;
    WorkEstimate work = estimate_work(p);
    if (work.instructions > limit)
        throw ToyError(fmt::format("this run has {} steps, more than a page can show ({}): make it smaller with --set (for example a "
                                   "smaller n), or raise the limit with --max-steps",
                                   grouped(static_cast<double>(work.instructions)), grouped(static_cast<double>(limit))));
    bool symbolic = shows_symbols(o.values, p);
    nlohmann::ordered_json data;
    if (symbolic) {
        ExprArena arena;
        auto recording = record_symbolic(p, arena, work.instructions, limit);
        data = view_json(p, recording, arena);
    } else {
        data = view_json(p, record_numeric(p, work.instructions, limit));
    }
    std::string page = view_html(data);
    ctx.source = nullptr;  // a file that cannot be written is not the program's fault
    write_file(o.output, page, "-o");
    ctx.out << fmt::format("wrote {} ({} steps, {:.1f} MB)\n", o.output, data["end"]["steps"].get<std::uint64_t>(),
                           static_cast<double>(page.size()) / 1e6);
    return kOk;
}

}  // namespace toysim::cli
