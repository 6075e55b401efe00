// `toysim compare` and `toysim sweep` for the browser's engine (sim/cli/side_by_side.cpp):
// several runs, one column each, printed by the same format_compare.
#include <fmt/format.h>
#include <set>

#include "sim/analysis/cost.h"
#include "sim/app/side_by_side.h"
#include "sim/check/run.h"
#include "sim/front/parser.h"
#include "sim/print/report.h"
#include "support/text.h"
#include "web/engine/api.h"

namespace toysim::web {

using Json = nlohmann::ordered_json;

namespace {

std::vector<std::string> sets_of(const Json& request) { return request.value("sets", std::vector<std::string>{}); }

// A program's column name: its file name without the folder and ".toy", as the CLI's.
std::string column_name(const std::string& path) {
    std::string name = escape_invisible(path.substr(path.find_last_of('/') + 1));
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".toy") == 0) name.resize(name.size() - 4);
    return name;
}

// Runs each program in turn (a fault points into its program) and prints the table.
int run_side_by_side(const std::vector<std::string>& names, const std::vector<Program>& programs, Format format, Reply& reply,
                     Where& where) {
    std::vector<RunResult> results;
    results.reserve(programs.size());
    bool ok = true;
    std::vector<const Program*> all;
    for (const auto& p : programs) check_fits_in_run(p), all.push_back(&p);
    refuse_long_runs(all, 0, false);  // runs that together would take too long, as the CLI refuses them
    for (const auto& p : programs) {
        where = p.source;
        results.push_back(run(p, RunOptions{}));
        ok = ok && results.back().checks_ok() && results.back().expects_ok();
        results.back().dram = {};  // the table needs the counters and verdicts only
        results.back().present = {};
    }
    where.reset();
    std::vector<const Program*> program_ptrs;
    std::vector<const RunResult*> result_ptrs;
    for (size_t i = 0; i < programs.size(); ++i) {
        program_ptrs.push_back(&programs[i]);
        result_ptrs.push_back(&results[i]);
    }
    reply.out += format_compare(names, program_ptrs, result_ptrs, format);
    return ok ? 0 : 1;
}

}  // namespace

// "programs": [{"path", "text"}]; each gets the "sets" its `param` lines declare, and a setting
// none declares is an error.
int compare_request(const Json& request, Reply& reply, Where& where) {
    ParamSettings settings;
    for (const auto& s : sets_of(request)) settings.push_back(parse_setting(s));
    std::set<std::string> used;
    std::vector<std::string> names;
    std::vector<std::shared_ptr<const ast::Program>> trees;
    std::vector<Program> programs;
    for (const auto& given : request.at("programs")) {
        where = std::make_shared<const SourceFile>(given.value("path", std::string("<playground>")), given.value("text", std::string()));
        trees.push_back(std::make_shared<const ast::Program>(parse(where)));
        programs.push_back(compile(trees.back(), app::settings_declared(*trees.back(), settings, used)));
        names.push_back(column_name(where->path));
    }
    where.reset();
    std::vector<const ast::Program*> declared;
    for (const auto& tree : trees) declared.push_back(tree.get());
    app::refuse_undeclared(settings, used, declared, app::Spelling::cli());
    return run_side_by_side(names, programs, parse_format(request.value("format", std::string("table"))), reply, where);
}

// "sets": NAME=V1,V2,... lists; one run at every combination, named by its settings.
int sweep_request(const Json& request, Reply& reply, Where& where) {
    where = std::make_shared<const SourceFile>(request.value("path", std::string("<playground>")), request.value("text", std::string()));
    auto tree = std::make_shared<const ast::Program>(parse(where));
    std::vector<Program> programs;
    std::vector<std::string> names;
    for (const auto& settings : sweep_settings(sets_of(request))) {
        programs.push_back(compile(tree, settings));
        std::string name;
        for (const auto& [k, v] : settings) name += fmt::format("{}{}={}", name.empty() ? "" : " ", k, v);
        names.push_back(name);
    }
    return run_side_by_side(names, programs, parse_format(request.value("format", std::string("table"))), reply, where);
}

}  // namespace toysim::web
