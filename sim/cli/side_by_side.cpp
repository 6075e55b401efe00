// toysim sweep and compare: several runs, one column each.
#include <fmt/format.h>
#include <set>

#include "sim/cli/common.h"
#include "sim/front/parser.h"
#include "sim/print/report.h"
#include "sim/support/text.h"

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

// Runs each program in turn; one column per run. Exit 1 if any check or expected figure failed.
int run_side_by_side(const std::vector<std::string>& names, const std::vector<Program>& programs, const Options& o, Context& ctx) {
    std::vector<const Program*> program_ptrs;
    for (const auto& p : programs) program_ptrs.push_back(&p);
    std::vector<WorkEstimate> work = check_run_length(program_ptrs, 0, o.force);

    std::vector<RunResult> results;
    results.reserve(programs.size());
    bool ok = true;
    for (size_t i = 0; i < programs.size(); ++i) {
        ctx.source = programs[i].source;  // a run-time fault points into this program
        std::string label = programs.size() == 1 ? names[i] : fmt::format("{} ({} of {})", names[i], i + 1, programs.size());
        results.push_back(run_with_progress(programs[i], RunOptions{}, ctx, label, work[i]));
        keep_counters_only(results.back());
        ok = ok && results.back().checks_ok() && results.back().expects_ok();
    }
    ctx.source.reset();
    std::vector<const RunResult*> result_ptrs;
    for (const auto& r : results) result_ptrs.push_back(&r);
    ctx.out << format_compare(names, program_ptrs, result_ptrs, parse_format(o.format));
    return ok ? kOk : kCheckFailed;
}

}  // namespace

std::vector<ParamSettings> sweep_settings(const std::vector<std::string>& sets) {
    std::vector<ParamSettings> combos{{}};
    for (const auto& s : sets) {
        auto eq = s.find('=');
        std::string name = s.substr(0, eq);
        std::vector<std::int64_t> values;
        if (eq != std::string::npos) {
            std::string list = s.substr(eq + 1);
            for (size_t start = 0;;) {
                size_t comma = list.find(',', start);
                values.push_back(parse_setting(name + "=" + list.substr(start, comma - start)).second);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        } else {
            parse_setting(s);  // throws the usual message
        }
        std::vector<ParamSettings> next;
        for (const auto& c : combos)
            for (auto v : values) {
                ParamSettings more = c;
                more.emplace_back(name, v);
                next.push_back(std::move(more));
            }
        combos = std::move(next);
    }
    return combos;
}

int sweep_command(const Options& o, Context& ctx) {
    Parsed parsed = parse_program(o.file, ctx);
    std::vector<Program> programs;
    std::vector<std::string> names;
    for (const auto& settings : sweep_settings(o.sets)) {
        programs.push_back(compile_program(parsed, settings, ctx));
        std::string name;
        for (const auto& [k, v] : settings) name += fmt::format("{}{}={}", name.empty() ? "" : " ", k, v);
        names.push_back(name);
    }
    return run_side_by_side(names, programs, o, ctx);
}

// --set applies to the programs that declare the parameter.
int compare_command(const Options& o, Context& ctx) {
    ParamSettings settings = settings_from(o.sets);
    std::set<std::string> used;
    std::vector<std::string> known;  // every program's parameters, for "did you mean"
    std::vector<Program> programs;
    std::vector<std::string> names;
    for (const auto& f : o.files) {
        Parsed parsed = parse_program(f, ctx);
        ParamSettings mine;
        for (const auto& p : parsed.tree->params) {
            known.push_back(p.name);
            for (const auto& s : settings)
                if (p.name == s.first) {
                    mine.push_back(s);
                    used.insert(s.first);
                }
        }
        programs.push_back(compile_program(parsed, mine, ctx));
        names.push_back(short_program_name(f));
    }
    ctx.source.reset();
    std::vector<std::string_view> candidates(known.begin(), known.end());
    for (const auto& s : settings)
        if (!used.count(s.first))
            throw ToyError(fmt::format("--set {}: no program here has a parameter {}{}", flag_subject(s.first), quoted_name(s.first),
                                       did_you_mean(s.first, candidates)));
    return run_side_by_side(names, programs, o, ctx);
}

}  // namespace toysim::cli
