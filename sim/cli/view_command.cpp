// `toysim view`: the run as one offline HTML file (the viewer in sim/print/viewer/), made by
// the command layer (sim/app/view.h).
#include <fmt/format.h>

#include "sim/app/view.h"
#include "sim/cli/common.h"
#include "sim/cli/output.h"

namespace toysim::cli {

int view_command(const ViewArgs& o, Context& ctx) {
    app::require_viewer();  // before the program: a build without the viewer says so first
    Program p = load_program(o.file, settings_from(o.sets), ctx);
    if (p.cache)
        ctx.err << fmt::format("note: the viewer does not run the program's cache (line {}): it shows DRAM traffic in elements; `toysim run` "
                               "counts the cache\n",
                               p.cache->loc.line);
    const app::ViewPage page = app::view(p, {o.values, o.max_steps}, app::Spelling::cli());
    ctx.source = nullptr;  // a file that cannot be written is not the program's fault
    write_file(o.output, page.html, "-o");
    ctx.out << fmt::format("wrote {} ({} steps, {:.1f} MB)\n", o.output, page.steps, static_cast<double>(page.html.size()) / 1e6);
    return kOk;
}

}  // namespace toysim::cli
