// The engine's JS-facing API, compiled to WebAssembly (embind): what the playground page and
// tests/web call. Each function takes one request as JSON text and answers with JSON text
//   {"out": what the CLI prints on stdout, "err": what it prints on stderr, "code": its exit
//    code, "loc": {"line", "col", "len"} of the error in the program, or null}
// and calls the library functions the matching `toysim` command calls (sim/cli/commands.cpp,
// side_by_side.cpp, exercise_command.cpp, view_command.cpp, step_command.cpp), so the answers
// are the CLI's byte for byte (tests/web/manifest.mjs checks traces/MANIFEST). No file is
// read: the program's text comes with the request, under the path its messages name.
//
// A request: {"path": "programs/p1_c00.toy", "text": "...", "sets": ["n=4"], "format":
// "table|markdown|csv|json", "values": "auto|symbolic|numeric", "ditto": false,
// "max_steps": 0 (the command's default), "show": ["O"], "stats": false}; compare takes
// "programs": [{"path", "text"}]; grade takes "spec_path", "spec", and the solution as path and
// text; sweep's "sets" are NAME=V1,V2,... lists, as the CLI's; tune takes "vary" (NAME=V1,V2,...
// lists), "objective", "machine", "heads", "dtype" and "top", or "schedule": true and "registers".
#include <emscripten/bind.h>

#include <algorithm>

#include <fmt/format.h>
#include <functional>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/analysis/cost.h"
#include "sim/app/cost.h"
#include "sim/app/requests.h"
#include "sim/app/tune.h"
#include "sim/app/view.h"
#include "sim/check/run.h"
#include "sim/front/parser.h"
#include "sim/grade/grade.h"
#include "sim/print/grade_report.h"
#include "sim/print/report.h"
#include "support/text.h"
#include "web/engine/api.h"

namespace toysim::web {

using Json = nlohmann::ordered_json;

namespace {

// Exit codes, as the CLI's (sim/cli/app.h).
constexpr int kOk = 0, kCheckFailed = 1, kBadInput = 2, kInternalError = 3;

std::string text_field(const Json& request, const char* key, const std::string& fallback = {}) {
    auto it = request.find(key);
    return it != request.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::vector<std::string> list_field(const Json& request, const char* key) {
    std::vector<std::string> out;
    auto it = request.find(key);
    if (it == request.end() || !it->is_array()) return out;
    for (const auto& item : *it)
        if (item.is_string()) out.push_back(item.get<std::string>());
    return out;
}

std::uint64_t count_field(const Json& request, const char* key) {
    auto it = request.find(key);
    return it != request.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : 0;
}

bool flag_field(const Json& request, const char* key) {
    auto it = request.find(key);
    return it != request.end() && it->is_boolean() && it->get<bool>();
}

Format format_of(const Json& request) { return parse_format(text_field(request, "format", "table")); }

// The program text of a request, under the path messages name it by.
std::shared_ptr<const SourceFile> source_of(const Json& request, const char* path_key = "path", const char* text_key = "text") {
    return std::make_shared<const SourceFile>(text_field(request, path_key, "<playground>"), text_field(request, text_key));
}

// Values a trace, view or session shows: names for scalar programs unless asked for numbers.
bool symbolic_values(const Json& request, const Program& program) {
    const std::string values = text_field(request, "values", "auto");
    return shows_symbols(values, program);
}

}  // namespace

// ---- the reply ----

std::string Reply::json() const {
    Json j;
    j["out"] = out;
    j["err"] = err;
    j["code"] = code;
    if (loc) j["loc"] = {{"line", loc->line}, {"col", loc->col}, {"len", loc->len}};
    else j["loc"] = nullptr;
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void Reply::fail(const ToyError& error, const SourceFile* where) {
    err += format_error(with_cli_hint(error), where, "toysim");
    if (where && error.loc().line > 0) loc = error.loc();
    code = kBadInput;
}

// Runs one request: bad input is the located error the CLI prints, and nothing escapes (a
// throw out of wasm would leave the worker's engine unusable).
std::string answer(const std::string& request_text, const std::function<int(const Json&, Reply&, Where&)>& body) {
    Reply reply;
    Where where;
    try {
        Json request = Json::parse(request_text);
        reply.code = body(request, reply, where);
    } catch (const ToyError& e) {
        reply.fail(e, where.get());
    } catch (const Json::exception& e) {
        reply.err += fmt::format("toysim: error: a request that is not the API's JSON: {}\n", e.what());
        reply.code = kBadInput;
    } catch (const std::bad_alloc&) {
        reply.err += "toysim: error: out of memory: the run needs more memory than this page can have; try smaller parameters, or "
                     "Cost, which counts without running\n";
        reply.code = kBadInput;
    } catch (const std::exception& e) {
        reply.err += fmt::format("toysim: internal error: {}\n", escape_invisible(e.what()));
        reply.code = kInternalError;
    }
    return reply.json();
}

Program load(const Json& request, Where& where) {
    ParamSettings settings = settings_from(list_field(request, "sets"));
    where = source_of(request);
    return compile(std::make_shared<const ast::Program>(parse(where)), settings);
}

namespace {

// ---- run, trace, cost (sim/cli/commands.cpp) ----

int run_request(const Json& request, Reply& reply, Where& where) {
    app::check_show_format(list_field(request, "show"), format_of(request), text_field(request, "format", "table"));
    Program program = load(request, where);
    const std::vector<int> shown = app::shown_arrays(program, list_field(request, "show"));
    check_fits_in_run(program);
    RunOptions options;
    if (std::uint64_t limit = count_field(request, "max_steps")) options.max_steps = limit;
    refuse_long_runs({&program}, count_field(request, "max_steps"), flag_field(request, "force"));  // as the CLI, before it starts
    const Format format = format_of(request);
    // JSON always carries a verdict a grader can read: a run-time fault is a field of it.
    RunResult r = format == Format::Json ? run_to_verdict(program, options) : run(program, options);
    reply.out += format_run(program, r, format, flag_field(request, "stats"));
    if (r.fault) {
        reply.fail(*r.fault, where.get());
        return kBadInput;
    }
    for (int a : shown) reply.out += "\n" + format_array(program, r, a);
    return r.checks_ok() && r.expects_ok() ? kOk : kCheckFailed;
}

int trace_request(const Json& request, Reply& reply, Where& where) {
    RunOptions options;
    options.max_steps = count_field(request, "max_steps") ? count_field(request, "max_steps") : 10'000;
    const TraceOptions shown{format_of(request), flag_field(request, "ditto")};
    app::check_trace_request(options.max_steps, shown);
    Program program = load(request, where);
    Trace t = trace(program, symbolic_values(request, program), options);
    reply.out += format_trace(program, t, shown);
    if (t.error) {
        reply.fail(*t.error, where.get());
        return kBadInput;
    }
    return kOk;
}

int cost_request(const Json& request, Reply& reply, Where& where) {
    Program program = load(request, where);
    app::CostRequest cost;
    cost.machine = text_field(request, "machine");  // "h100": each launch's predicted time too
    reply.out += app::cost(program, cost, format_of(request), app::Spelling::cli());
    return kOk;
}

// ---- tune --schedule (sim/cli/commands.cpp) ----

int tune_request(const Json& request, Reply& reply, Where& where) {
    if (!flag_field(request, "schedule")) {
        app::SpaceTuneRequest space;
        space.vary = list_field(request, "vary");
        space.sets = list_field(request, "sets");
        space.objective = text_field(request, "objective", "time");
        space.machine = text_field(request, "machine", "h100");
        space.heads = static_cast<std::int64_t>(std::clamp<std::uint64_t>(count_field(request, "heads"), 1, 65535));
        space.dtype = text_field(request, "dtype", "fp32");
        if (std::uint64_t top = count_field(request, "top")) space.top = static_cast<int>(std::min<std::uint64_t>(top, 10000));
        where = source_of(request);
        reply.out += app::tune_space(std::make_shared<const ast::Program>(parse(where)), text_field(request, "path", "<playground>"), space,
                                     format_of(request), app::Spelling::cli())
                         .text;
        return kOk;
    }
    Program program = load(request, where);
    app::ScheduleTuneRequest tune;
    tune.registers = static_cast<int>(std::min<std::uint64_t>(count_field(request, "registers"), 1000));  // past 16: the search's own refusal
    reply.out += app::tune_schedule(program, text_field(request, "path", "<playground>"), tune, format_of(request), app::Spelling::cli());
    return kOk;
}

// ---- grade (sim/cli/exercise_command.cpp) ----

int grade_request(const Json& request, Reply& reply, Where& where) {
    where = source_of(request, "spec_path", "spec");
    grade::Exercise exercise;
    try {
        exercise = grade::load_exercise(where, text_field(request, "exercise", "exercise"));
    } catch (const ToyError& e) {
        reply.fail(e, where.get());
        reply.err += "toysim: error: the exercise itself is bad: fix its spec; no solution was graded\n";
        return kBadInput;
    }
    where.reset();  // the solution's errors are the grade's messages, not the request's
    grade::Grade result = grade::grade_solution(exercise, source_of(request));
    const std::string name = text_field(request, "format", "table");
    reply.out += format_grade(result, name == "json" ? GradeFormat::Json : name == "gradescope" ? GradeFormat::Gradescope : GradeFormat::Table);
    return result.full_marks() ? kOk : kCheckFailed;
}

// ---- view (sim/cli/view_command.cpp): the viewer's page for the run ----

int view_request(const Json& request, Reply& reply, Where& where) {
    Program program = load(request, where);
    reply.out += app::view(program, {text_field(request, "values", "auto"), count_field(request, "max_steps")}, app::Spelling::cli()).html;
    return kOk;
}

// ---- the parameter panel ----

// The program's `param` lines: name, value at these settings, and whether it is a `let`.
int params_request(const Json& request, Reply& reply, Where& where) {
    ParamSettings settings = settings_from(list_field(request, "sets"));
    where = source_of(request);
    auto tree = std::make_shared<const ast::Program>(parse(where));
    Program program = compile(tree, settings);
    Json params = Json::array();
    for (const auto& p : tree->params) {
        Json row = {{"name", p.name}, {"derived", p.derived}, {"line", p.loc.line}};
        for (const auto& [name, value] : program.params)
            if (name == p.name) row["value"] = value;
        params.push_back(row);
    }
    reply.out += Json{{"params", params}, {"tiles", program.has_tiles()}}.dump();
    return kOk;
}

// ---- the editor's words ----

// The language's keywords and the ISA's opcodes, from the tables the parser and the machine
// use (sim/front/parser.h, isa/opcodes.h), for the editor's highlighting (toy-mode.js).
int language_request(const Json&, Reply& reply, Where&) {
    Json opcodes = Json::array(), keywords = Json::array();
    for (const auto& op : all_ops()) opcodes.push_back(std::string(op.mnemonic));
    for (const auto* words : {&statement_keywords(), &exercise_keywords()})
        for (std::string_view w : *words) keywords.push_back(std::string(w));
    reply.out += Json{{"opcodes", opcodes}, {"keywords", keywords}}.dump();
    return kOk;
}

std::string run_api(const std::string& r) { return answer(r, run_request); }
std::string language_api(const std::string& r) { return answer(r, language_request); }
std::string trace_api(const std::string& r) { return answer(r, trace_request); }
std::string cost_api(const std::string& r) { return answer(r, cost_request); }
std::string tune_api(const std::string& r) { return answer(r, tune_request); }
std::string grade_api(const std::string& r) { return answer(r, grade_request); }
std::string view_api(const std::string& r) { return answer(r, view_request); }
std::string params_api(const std::string& r) { return answer(r, params_request); }
std::string compare_api(const std::string& r) { return answer(r, compare_request); }
std::string sweep_api(const std::string& r) { return answer(r, sweep_request); }

}  // namespace

}  // namespace toysim::web

EMSCRIPTEN_BINDINGS(toysim) {
    using namespace toysim::web;
    emscripten::function("run", &run_api);
    emscripten::function("trace", &trace_api);
    emscripten::function("cost", &cost_api);
    emscripten::function("tune", &tune_api);
    emscripten::function("compare", &compare_api);
    emscripten::function("sweep", &sweep_api);
    emscripten::function("grade", &grade_api);
    emscripten::function("view", &view_api);
    emscripten::function("params", &params_api);
    emscripten::function("language", &language_api);
    bind_session();
}
