// `cost` (cost.h).
#include "sim/app/cost.h"

#include <fmt/format.h>

#include "sim/analysis/cost.h"
#include "sim/analysis/races.h"
#include "sim/print/cost_report.h"
#include "sim/print/report.h"
#include "sim/timing/predict.h"
#include "support/text.h"

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

namespace {

// The count-only walk's table (after the formulas' element counts, in a table).
std::string format_walk(const Program& program, const CachedCount& counted, const CachedCountOptions& walk, Format format) {
    std::string out;
    if (format == Format::Table || format == Format::Markdown)
        out = format_cost(program, derive_formulas(program), count_traffic(program), format, prove_race_freedom(program), nullptr) + "\n";
    return out + format_cached_count(program, counted, walk, format);
}

std::string cost_without_machine(const Program& program, const CostRequest& request, Format format, const Spelling& spelling) {
    const CachedCountOptions walk = walk_options(program, request, spelling);
    if (program.cache) return format_walk(program, count_through_cache(program, walk), walk, format);  // what reaches DRAM
    // The counts first: an overflow is reported as the count's, whichever compiler built this.
    std::vector<ArrayTraffic> counted = count_traffic(program);
    std::vector<ArrayFormulas> formulas = derive_formulas(program);
    TimeFormulas time = derive_time(program);
    return format_cost(program, formulas, counted, format, prove_race_freedom(program), &time);
}

}  // namespace

std::string cost(const Program& program, const CostRequest& request, Format format, const Spelling& spelling) {
    if (request.machine.empty()) return cost_without_machine(program, request, format, spelling);
    const MachineSpec& machine = named_machine(request.machine, spelling);
    if (request.workers != 0 || request.cold_launches)
        throw ToyError(fmt::format("{}: a machine runs each top-level loop as a launch from a cold L2, on the blocks its SMs hold; leave out {}",
                                   spelling.machine, request.workers != 0 ? spelling.workers : spelling.cold_launches));
    // The walk the prediction reads (on the machine's cache where the program has none, its
    // grids on the resident blocks of every SM), counted once and shown as cost shows a walk.
    const Program on_machine = on_machine_cache(program, machine);
    const ProgramTime time = predict_program(on_machine, machine, request.heads);
    return with_predicted_time(on_machine, machine, time, request.heads, format, format_walk(on_machine, time.counted, time.walk, format));
}

const MachineSpec& named_machine(const std::string& name, const Spelling& spelling) {
    const MachineSpec* machine = find_machine(name);
    if (!machine)
        throw ToyError(fmt::format("{} {}: no such machine (the machines: {}; without it, the seeds' machine)", spelling.machine, quoted_name(name),
                                   machine_names()));
    return *machine;
}

std::string with_predicted_time(const Program& program, const MachineSpec& machine, std::int64_t heads, Format format, const std::string& base) {
    return with_predicted_time(program, machine, predict_program(program, machine, heads), heads, format, base);
}

std::string with_predicted_time(const Program& program, const MachineSpec& machine, const ProgramTime& time, std::int64_t heads, Format format,
                                const std::string& base) {
    if (format == Format::Json) {
        auto j = nlohmann::ordered_json::parse(base);
        j["predicted_time"] = program_time_json(program, time, machine, heads);
        return json_text(j);
    }
    return base + "\n" + format_program_time(program, time, machine, heads, format);
}

}  // namespace toysim::app
