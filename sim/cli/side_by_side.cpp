// toysim sweep and compare: several runs, one column each; with --plot, the DRAM counters
// against the swept parameter (sim/print/sweep_plot.h).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <optional>
#include <set>
#include <sstream>
#include <unistd.h>

#include "sim/app/cost.h"
#include "sim/app/side_by_side.h"
#include "sim/print/cost_report.h"
#include "sim/cli/common.h"
#include "sim/cli/output.h"
#include "sim/front/parser.h"
#include "sim/print/report.h"
#include "sim/print/sweep_plot.h"
#include "support/text.h"

namespace toysim::cli {

namespace {

// What the side-by-side table needs of a run (counters, check and expect verdicts): the final
// DRAM image is dropped as soon as a run ends, so a sweep holds one run's memory at a time.
void keep_counters_only(RunResult& r) {
    r.dram.clear();
    r.dram.shrink_to_fit();
    r.present.clear();
    r.present.shrink_to_fit();
}

template <typename T>
std::vector<const T*> pointers(const std::vector<T>& items, size_t from = 0, size_t count = SIZE_MAX) {
    std::vector<const T*> out;
    for (size_t i = from; i < items.size() && i - from < count; ++i) out.push_back(&items[i]);
    return out;
}

struct Runs {
    std::vector<RunResult> results;
    bool ok = true;  // every check and expected figure held
};

// Runs each program in turn; `labels` name them in the progress line. Runs that together
// would take too long are refused before the first starts.
Runs run_all(const std::vector<std::string>& labels, const std::vector<const Program*>& programs, const SideBySideArgs& o, Context& ctx) {
    std::vector<WorkEstimate> work = check_run_length(programs, 0, o.force);
    Runs runs;
    runs.results.reserve(programs.size());
    for (size_t i = 0; i < programs.size(); ++i) {
        ctx.source = programs[i]->source;  // a run-time fault points into this program
        std::string label = programs.size() == 1 ? labels[i] : fmt::format("{} ({} of {})", labels[i], i + 1, programs.size());
        runs.results.push_back(run_with_progress(*programs[i], RunOptions{}, ctx, label, work[i]));
        keep_counters_only(runs.results.back());
        runs.ok = runs.ok && runs.results.back().checks_ok() && runs.results.back().expects_ok();
    }
    ctx.source.reset();
    return runs;
}

// A prediction with something to say: some launch is timed (untimed() says why one is not).
bool timed(const ProgramTime& t) { return std::find(t.untimed.begin(), t.untimed.end(), Untimed::Timed) != t.untimed.end(); }
// Where some launches have no time beside timed ones: " (2 of 3 launches: …)", else "".
std::string untimed_launches(const ProgramTime& t) {
    const auto timed_launches = std::count(t.untimed.begin(), t.untimed.end(), Untimed::Timed);
    if (timed_launches == static_cast<std::ptrdiff_t>(t.untimed.size())) return "";
    return fmt::format(" ({} of {} launches: the others have no predicted time)", timed_launches, t.untimed.size());
}
// Why none is timed: the first launch's reason, "launch 1 has no parallel loop: …".
std::string why_untimed(const ProgramTime& t) {
    const std::string why = t.first_untimed();
    return why.empty() ? "no launch" : why;
}

void write_plot(const SideBySideArgs& o, PlotFormat format, const std::vector<SweepPoint>& points, const std::string& machine = "") {
    const PlotMeasure measure = o.plot_y == "cycles" ? PlotMeasure::Cycles : o.plot_y == "time" ? PlotMeasure::Time : PlotMeasure::Traffic;
    write_file(o.plot, render_plot(sweep_plot(points, measure, machine), format, o.plot), "--plot");
}

// compare --sweep NAME=V1,V2,...: the name and its values.
std::pair<std::string, std::vector<std::int64_t>> swept_values(const std::string& sweep) {
    auto eq = sweep.find('=');
    if (eq == std::string::npos) throw ToyError(fmt::format("--sweep {}: expected NAME=V1,V2,...", quoted_name(sweep)));
    std::vector<std::int64_t> values;
    try {
        for (const auto& settings : sweep_settings({sweep})) values.push_back(settings.at(0).second);
    } catch (const ToyError& e) {  // the value's own message, under the flag it came from
        std::string message = with_hint(e).what();
        if (message.rfind("--set ", 0) == 0) message.replace(0, 6, "--sweep ");
        throw ToyError(ErrorKind::Input, e.loc(), message);
    }
    return {sweep.substr(0, eq), values};
}

// compare --sweep's table: format_compare's at each value, one after the other (CSV: one
// table with the value in a first column; JSON: one entry per value).
std::string format_compare_sweep(const std::string& name, const std::vector<std::int64_t>& values, const std::vector<std::string>& names,
                                 const std::vector<Program>& programs, const Runs& runs, Format format) {
    const size_t width = names.size();
    std::string out;
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (size_t v = 0; v < values.size(); ++v) {
        std::string table = format_compare(names, pointers(programs, v * width, width), pointers(runs.results, v * width, width), format);
        if (format == Format::Json) {
            all.push_back({{"swept", {{"name", name}, {"value", values[v]}}}, {"runs", nlohmann::ordered_json::parse(table)}});
        } else if (format == Format::Csv) {
            std::istringstream lines(table);
            for (std::string line; std::getline(lines, line);) {
                const bool header = line.rfind("counter,", 0) == 0;
                if (!header || v == 0) out += fmt::format("{},{}\n", header ? name : std::to_string(values[v]), line);
            }
        } else {
            out += fmt::format("{0}{1}{2} = {3}{1}\n\n{4}", v ? "\n" : "", format == Format::Markdown ? "**" : "", name, values[v], table);
        }
    }
    return format == Format::Json ? json_text(all) : out;
}

}  // namespace

int sweep_command(const SweepArgs& o, Context& ctx) {
    if (o.plot_y == "time" && o.machine.empty()) throw ToyError("--plot-y time draws the predicted time: give --machine NAME too");
    const MachineSpec* machine = o.machine.empty() ? nullptr : &app::named_machine(o.machine, app::Spelling::cli());
    const auto plot = plot_target(o.plot);
    Parsed parsed = parse_program(o.file, ctx);
    const std::vector<ParamSettings> combos = sweep_settings(o.sets);
    std::vector<Program> programs;
    std::vector<std::string> names;
    std::vector<ProgramTime> predicted;  // with a machine: each run's predicted time
    for (const auto& settings : combos) {
        programs.push_back(compile_program(parsed, settings, ctx));
        apply_cache_and_machine(programs.back(), o, o.machine);
        if (machine) predicted.push_back(predict_program(programs.back(), *machine, 1));
        std::string name;
        for (const auto& [k, v] : settings) name += fmt::format("{}{}={}", name.empty() ? "" : " ", k, v);
        names.push_back(name);
    }
    Runs runs = run_all(names, pointers(programs), o, ctx);
    const Format format = parse_format(o.format);
    const std::string table = format_compare(names, pointers(programs), pointers(runs.results), format);
    if (!machine) {
        ctx.out << table;
    } else if (format == Format::Json) {  // each run's object gets its "predicted_time", as cost --machine gives it
        auto all = nlohmann::ordered_json::parse(table);
        for (size_t i = 0; i < all.size() && i < predicted.size(); ++i)
            all[i]["predicted_time"] = program_time_json(programs[i], predicted[i], *machine, 1);  // the program for its launches' lines
        ctx.out << json_text(all);
    } else if (format == Format::Csv) {  // one more row: the seconds (empty: no launch with a grid)
        ctx.out << table << fmt::format("predicted_seconds_{}", machine->name);
        for (const ProgramTime& t : predicted) ctx.out << (timed(t) ? fmt::format(",{}", t.seconds) : std::string(","));
        ctx.out << "\n";
    } else {
        ctx.out << table << fmt::format("\npredicted time on machine {} (1 head; every timed launch, summed):\n", machine->name);
        for (size_t i = 0; i < names.size(); ++i)
            ctx.out << fmt::format("{}{}: {}\n", format == Format::Markdown ? "- " : "  ", names[i],
                                   timed(predicted[i]) ? milliseconds_text(predicted[i].seconds) + untimed_launches(predicted[i])
                                                       : "none (" + why_untimed(predicted[i]) + ")");
    }
    if (plot) {
        std::vector<SweepPoint> points;
        for (size_t i = 0; i < combos.size(); ++i)
            points.push_back({short_program_name(o.file), combos[i], &runs.results[i].counters,
                              machine && timed(predicted[i]) ? predicted[i].seconds : -1.0});
        write_plot(o, *plot, points, machine ? std::string(machine->name) : "");
    }
    return runs.ok ? kOk : kCheckFailed;
}

// --set applies to the programs that declare the parameter; --sweep to all, which must declare it.
int compare_command(const CompareArgs& o, Context& ctx) {
    if (!o.plot.empty() && o.sweep.empty()) throw ToyError("--plot draws a sweep: use it with --sweep NAME=V1,V2,...");
    const auto plot = plot_target(o.plot);
    ParamSettings settings = settings_from(o.sets);
    std::string swept;
    std::vector<std::int64_t> values = {0};  // without --sweep: one run of each program
    if (!o.sweep.empty()) {
        std::tie(swept, values) = swept_values(o.sweep);
        for (const auto& s : settings)
            if (s.first == swept)
                throw ToyError(fmt::format("--sweep {}: --set gives {} too: give it one way", flag_subject(swept), quoted_name(swept)));
    }
    std::set<std::string> used;
    std::vector<Parsed> parsed;
    std::vector<ParamSettings> own;  // each program's part of --set
    std::vector<std::string> names;
    for (const auto& f : o.files) {
        parsed.push_back(parse_program(f, ctx));
        own.push_back(app::settings_declared(*parsed.back().tree, settings, used));
        std::vector<std::string_view> its;
        for (const auto& p : parsed.back().tree->params) its.push_back(p.name);
        if (!swept.empty() && std::find(its.begin(), its.end(), swept) == its.end()) {
            ctx.source.reset();
            std::string hint = did_you_mean(swept, its), list;
            for (auto name : its) list += fmt::format("{}{}", list.empty() ? "" : ", ", name);
            if (hint.empty()) hint = its.empty() ? " (it has none)" : " (its parameters: " + list + ")";
            throw ToyError(fmt::format("--sweep {}: {} has no parameter {}{}", flag_subject(swept), f, quoted_name(swept), hint));
        }
        names.push_back(short_program_name(f));
    }
    ctx.source.reset();
    std::vector<const ast::Program*> trees;
    for (const Parsed& p : parsed) trees.push_back(p.tree.get());
    app::refuse_undeclared(settings, used, trees, app::Spelling::cli());

    // Every program at each value, in that order: value-major, so each value's runs are together.
    std::vector<Program> programs;
    std::vector<std::string> labels;
    std::vector<SweepPoint> points;
    for (auto value : values)
        for (size_t i = 0; i < parsed.size(); ++i) {
            ParamSettings mine = own[i];
            if (!swept.empty()) mine.emplace_back(swept, value);
            programs.push_back(compile_program(parsed[i], mine, ctx));
            apply_cache_options(programs.back(), o);
            labels.push_back(swept.empty() ? names[i] : fmt::format("{} {}={}", names[i], swept, value));
            // A curve per program, even where two files share a name.
            const bool shared = std::count(names.begin(), names.end(), names[i]) > 1;
            points.push_back({shared ? fmt::format("{} ({})", names[i], i + 1) : names[i], mine, nullptr});
        }
    ctx.source.reset();
    Runs runs = run_all(labels, pointers(programs), o, ctx);
    if (swept.empty()) {
        ctx.out << format_compare(names, pointers(programs), pointers(runs.results), parse_format(o.format));
    } else {
        ctx.out << format_compare_sweep(swept, values, names, programs, runs, parse_format(o.format));
    }
    if (plot) {
        for (size_t i = 0; i < points.size(); ++i) points[i].counters = &runs.results[i].counters;
        write_plot(o, *plot, points);
    }
    return runs.ok ? kOk : kCheckFailed;
}

}  // namespace toysim::cli
