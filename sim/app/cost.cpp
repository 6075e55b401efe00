// `cost` (cost.h).
#include "sim/app/cost.h"

#include <fmt/format.h>

#include "sim/analysis/cost.h"
#include "sim/analysis/races.h"
#include "sim/print/cost_report.h"
#include "sim/print/report.h"

namespace toysim::app {

CachedCountOptions walk_options(const Program& p, const CostRequest& request, const Spelling& spelling) {
    if ((request.heads != 1 || request.workers != 0 || request.cold_launches) && !p.cache)
        throw ToyError(fmt::format("{}: heads, workers and launches say how the accesses reach a cache; give a cache too ({})",
                                   request.heads != 1 ? spelling.heads : request.workers != 0 ? spelling.workers : spelling.cold_launches,
                                   spelling.cache));
    CachedCountOptions walk;
    walk.heads = request.heads;
    walk.workers = request.workers;
    walk.cold_launches = request.cold_launches;
    return walk;
}

std::string cost(const Program& program, const CostRequest& request, Format format, const Spelling& spelling) {
    const CachedCountOptions walk = walk_options(program, request, spelling);
    if (program.cache) {  // the count-only walk through the cache: what reaches DRAM
        CachedCount counted = count_through_cache(program, walk);
        std::string out;
        if (format == Format::Table || format == Format::Markdown)  // the formulas first (element counts)
            out = format_cost(program, derive_formulas(program), count_traffic(program), format, prove_race_freedom(program), nullptr) + "\n";
        return out + format_cached_count(program, counted, walk, format);
    }
    // The counts first: an overflow is reported as the count's, whichever compiler built this.
    std::vector<ArrayTraffic> counted = count_traffic(program);
    std::vector<ArrayFormulas> formulas = derive_formulas(program);
    TimeFormulas time = derive_time(program);
    return format_cost(program, formulas, counted, format, prove_race_freedom(program), &time);
}

}  // namespace toysim::app
