// The compiled part of the Python module `toysim` (imported as toysim._toysim; the API and its
// documentation are in python/toysim/__init__.py). Each function here is what one `toysim`
// command does (sim/cli/commands.cpp, side_by_side.cpp, exercise_command.cpp,
// view_command.cpp), calling the same library functions, and returns what that command prints
// with --format json, as text.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <dlfcn.h>
#include <cstdint>
#include <filesystem>
#include <fmt/format.h>
#include <optional>
#include <tuple>
#include <utility>

#include "python/module.h"
#include "sim/app/cost.h"
#include "sim/app/tune.h"
#include "sim/app/tune_gpu.h"
#include "sim/app/view.h"
#include "sim/analysis/cost.h"
#include "sim/analysis/races.h"
#include "sim/check/run.h"
#include "sim/front/parser.h"
#include "sim/grade/grade.h"
#include "sim/print/cost_report.h"
#include "sim/print/grade_report.h"
#include "sim/print/report.h"
#include "support/text.h"

#ifndef TOYSIM_VERSION
#define TOYSIM_VERSION "unknown"
#endif
#ifndef TOYSIM_EXERCISES_DIR
#define TOYSIM_EXERCISES_DIR "programs/exercises"
#endif

namespace toysim::python {

namespace {

std::string without_final_newline(std::string text) {
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
}

}  // namespace

LocatedError::LocatedError(const std::string& text) : std::runtime_error(without_final_newline(text)) {}

void check_signals() {
    if (PyErr_CheckSignals() != 0) throw Interrupted{};
}

std::shared_ptr<const Program> compile_at(const LoadedProgram& loaded, const std::vector<std::string>& sets) {
    // A malformed setting is said without the program, as the CLI reads --set before the file.
    ParamSettings settings = reported(nullptr, [&] { return settings_from(sets); });
    return std::make_shared<const Program>(compile(loaded.tree, settings));
}

nlohmann::ordered_json flat_counters(const Program& p, const Counters& c, const nlohmann::ordered_json& json, const OpcodeSet* shown) {
    OpcodeSet every{};
    every.fill(true);
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& row : counter_rows(p, c, shown ? shown : &every))
        out[row.name] = json.at(nlohmann::ordered_json::json_pointer(p.counter_json(row.counter)));
    return out;
}

namespace {

// A run's progress callback: Ctrl-C stops it. Runs release the GIL (the program they run is
// immutable and every run has its own machine), so the check takes it back for a moment.
void on_progress(std::uint64_t) {
    py::gil_scoped_acquire gil;
    check_signals();
}

// ---- load ----

// As the CLI's loader (sim/cli/load.cpp parse_program): a file, its path as messages show it;
// or program text, named "<string>".
LoadedProgram load(const std::optional<std::string>& path, const std::optional<std::string>& text, const std::vector<std::string>& sets) {
    LoadedProgram lp;
    std::shared_ptr<const SourceFile> where;
    reported(&where, [&] {
        // The settings are read before the file, as the CLI reads its arguments first.
        ParamSettings settings = settings_from(sets);
        if (path) {
            lp.source = SourceFile::read(*path);
            std::string shown = escape_invisible(*path);  // spelt out, as the CLI prints a path
            if (shown != *path) lp.source = std::make_shared<const SourceFile>(shown, lp.source->text);
        } else {
            lp.source = std::make_shared<const SourceFile>("<string>", text.value_or(""));
        }
        where = lp.source;
        lp.tree = std::make_shared<const ast::Program>(parse(lp.source));
        lp.sets = sets;
        lp.program = std::make_shared<const Program>(compile(lp.tree, settings));
    });
    return lp;
}

// The same source compiled at other settings.
LoadedProgram at_settings(const LoadedProgram& lp, const std::vector<std::string>& sets) {
    LoadedProgram out = lp;
    out.sets = sets;
    reported(&lp.source, [&] { out.program = compile_at(lp, sets); });
    return out;
}

// ---- run ----

struct RunHandle {
    std::shared_ptr<const Program> program;
    RunResult result;
    std::string json, counters;          // run --format json, and flat_counters of it
    std::optional<std::string> fault;    // the located message of a run-time fault

    py::array_t<double> array(const std::string& name) const {
        int a = program->find_array(name);
        if (a < 0) throw py::key_error(fmt::format("the program has no array {}", quoted_name(name)));
        const ArrayInfo& info = program->arrays[static_cast<size_t>(a)];
        std::vector<py::ssize_t> shape(info.dims.begin(), info.dims.end());
        py::array_t<double> out(shape);
        std::vector<double> values = result.array_values(*program, a);
        std::copy(values.begin(), values.end(), out.mutable_data());
        return out;
    }
};

// `toysim run --format json`: a run-time fault is a field of the JSON (and the error the CLI
// prints on stderr).
RunHandle run(const LoadedProgram& lp, std::optional<std::uint64_t> max_steps) {
    RunHandle h;
    h.program = lp.program;
    reported(&lp.source, [&] {
        const Program& p = *lp.program;
        check_fits_in_run(p);
        RunOptions options;
        if (max_steps) options.max_steps = *max_steps;
        options.on_progress = on_progress;
        {
            py::gil_scoped_release release;
            h.result = run_to_verdict(p, options);
        }
        auto j = run_json(p, h.result, false);
        h.json = json_text(j);
        h.counters = flat_counters(p, h.result.counters, j["counters"]).dump();
        if (h.result.fault) h.fault = without_final_newline(format_error(with_cli_hint(*h.result.fault), lp.source.get()));
    });
    return h;
}

// ---- trace ----

// `toysim trace --format json`, its counters by name, and the error: a fault ends the trace
// (its JSON says so) and is the error the CLI prints.
std::tuple<std::string, std::string, std::optional<std::string>> trace_json(const LoadedProgram& lp, const std::string& values,
                                                                            std::uint64_t max_steps) {
    return reported(&lp.source, [&] {
        const Program& p = *lp.program;
        RunOptions options;
        options.max_steps = max_steps;
        bool symbolic = shows_symbols(values, p);
        Trace t;
        {
            py::gil_scoped_release release;
            t = trace(p, symbolic, options);
        }
        std::optional<std::string> error;
        if (t.error) error = without_final_newline(format_error(with_cli_hint(*t.error), lp.source.get()));
        std::string counters = flat_counters(p, t.counters, counters_json(p, t.counters)).dump();
        return std::make_tuple(format_trace(p, t, TraceOptions{Format::Json, false}), counters, error);
    });
}

// ---- cost ----

// `toysim cost --format json` (sim/cli/commands.cpp cost_command), and the formulas' JSON: the
// same text, except for a program with a cache, whose JSON is the count through the cache (its
// table shows the formulas first, as these are).
// tune --schedule's JSON (the command layer's), with `registers` (0: the program's).
std::string tune_schedule_json(const LoadedProgram& lp, int registers) {
    return reported(&lp.source, [&] {
        app::ScheduleTuneRequest request;
        request.registers = registers;
        return app::tune_schedule(*lp.program, lp.source->path, request, Format::Json, kSpelling);
    });
}

// tune --vary's JSON (the command layer's): `vary` as NAME=V1,V2,... lists, the program's own
// settings at every point.
std::string tune_space_json(const LoadedProgram& lp, const std::vector<std::string>& vary, const std::string& objective, const std::string& machine,
                            std::int64_t heads, const std::string& dtype, int top, const std::string& kernel, bool gpu, int sample, int repeats) {
    return reported(&lp.source, [&] {
        app::SpaceTuneRequest request{vary, lp.sets, objective, machine, heads, dtype, top};
        if (kernel.empty() && !gpu) return app::tune_space(lp.tree, lp.source->path, request, Format::Json, kSpelling).text;
        if (repeats < 1 || repeats > 1000) throw ToyError(fmt::format("tune: repeats {}: 1 to 1000", repeats));
        app::GpuTuneRequest on_gpu;
        on_gpu.kernel = kernel;
        on_gpu.run = gpu;
        on_gpu.sample = sample < 0 ? -1 : sample;
        on_gpu.repeats = repeats;
        return app::tune_space_on_gpu(lp.tree, lp.source->path, request, on_gpu, Format::Json, kSpelling).text;
    });
}

std::pair<std::string, std::string> cost_json_text(const LoadedProgram& lp, std::int64_t heads, std::int64_t workers, bool cold_launches,
                                                   const std::string& machine) {
    return reported(&lp.source, [&] {
        const Program& p = *lp.program;
        auto formulas_json = [&] {
            std::vector<ArrayTraffic> counted = count_traffic(p);  // first: an overflow is the count's, as in the CLI
            std::vector<ArrayFormulas> formulas = derive_formulas(p);
            TimeFormulas time = derive_time(p);
            return json_text(cost_json(p, formulas, counted, prove_race_freedom(p), &time));
        };
        const app::CostRequest request{heads, workers, cold_launches, machine};
        if (p.cache || !machine.empty()) {  // the count-only walk through the cache: the CLI's JSON, from the command layer
            std::string formulas = formulas_json();
            py::gil_scoped_release release;
            return std::make_pair(app::cost(p, request, Format::Json, kSpelling), formulas);
        }
        app::walk_options(p, request, kSpelling);  // heads, workers or launches without a cache: refused
        std::string text = formulas_json();
        return std::make_pair(text, text);
    });
}

// One formula of `toysim cost` at other parameters: what its "value" is with `sets` (the
// program's own settings, overridden). `which`: reads, writes (of `array`), work or cycles.
std::optional<std::int64_t> formula_value(const LoadedProgram& lp, const std::vector<std::string>& sets, const std::string& which,
                                          const std::string& array) {
    return reported(&lp.source, [&]() -> std::optional<std::int64_t> {
        auto p = compile_at(lp, sets);
        if (which == "work" || which == "cycles") {
            TimeFormulas time = derive_time(*p);
            return (which == "work" ? time.work : time.cycles).evaluate(p->params);
        }
        int a = p->find_array(array);
        if (a < 0) throw py::key_error(fmt::format("the program has no array {}", quoted_name(array)));
        std::vector<ArrayFormulas> formulas = derive_formulas(*p);
        const ArrayFormulas& f = formulas[static_cast<size_t>(a)];
        return (which == "reads" ? f.reads : f.writes).evaluate(p->params);
    });
}

// ---- sweep ----

// `toysim sweep --format json` (sim/cli/side_by_side.cpp sweep_command): every setting run in
// turn. Returns that JSON and one flat row per run: its parameters, then the counters the
// sweep's table lists (the opcodes any run uses), then "ok".
std::pair<std::string, std::string> sweep(const LoadedProgram& lp, const std::vector<std::vector<std::string>>& settings,
                                          const std::vector<std::string>& names) {
    return reported(&lp.source, [&] {
        std::vector<std::shared_ptr<const Program>> programs;
        // (Unlike run's, sweep's settings are read once the file is: an error in one points into it.)
        for (const auto& sets : settings) programs.push_back(std::make_shared<const Program>(compile(lp.tree, settings_from(sets))));
        std::vector<RunResult> results;
        for (const auto& p : programs) {
            check_fits_in_run(*p);
            RunOptions options;
            options.on_progress = on_progress;
            py::gil_scoped_release release;
            results.push_back(run(*p, options));
            // As the CLI's sweep: only the counters and verdicts are kept between runs.
            results.back().dram = {};
            results.back().present = {};
        }
        std::vector<const Program*> program_ptrs;
        std::vector<const RunResult*> result_ptrs;
        OpcodeSet used{};
        for (size_t i = 0; i < programs.size(); ++i) {
            program_ptrs.push_back(programs[i].get());
            result_ptrs.push_back(&results[i]);
            OpcodeSet own = opcodes_used(*programs[i]);
            for (size_t k = 0; k < used.size(); ++k) used[k] = used[k] || own[k];
        }
        std::string text = format_compare(names, program_ptrs, result_ptrs, Format::Json);
        auto all = nlohmann::ordered_json::parse(text);
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        for (size_t i = 0; i < programs.size(); ++i) {
            nlohmann::ordered_json row = all[i]["params"];
            nlohmann::ordered_json counters = flat_counters(*programs[i], results[i].counters, all[i]["counters"], &used);
            for (auto& [name, value] : counters.items()) row[name] = value;
            row["ok"] = all[i]["ok"];
            rows.push_back(row);
        }
        return std::make_pair(text, rows.dump());
    });
}

// ---- grade ----

// `toysim grade` (sim/cli/exercise_command.cpp grade_command): our JSON and Gradescope's, and
// whether every test passed.
struct GradeTexts {
    std::string json, gradescope;
    bool full_marks = false;
};

// The exercises installed with this module (cmake --install, the .deb: TOYSIM_INSTALLED_EXERCISES_DIR
// is the install layout's path from the module's folder to them), else this build's source tree.
std::filesystem::path built_in_exercises() {
    Dl_info info{};
    const bool found = dladdr(reinterpret_cast<const void*>(&built_in_exercises), &info) != 0 && info.dli_fname;
    return grade::installed_exercises(found ? std::filesystem::path(info.dli_fname) : std::filesystem::path(),
                                      TOYSIM_INSTALLED_EXERCISES_DIR, TOYSIM_EXERCISES_DIR);
}

GradeTexts grade(const std::string& exercise, const std::optional<std::string>& solution_path,
                 const std::optional<std::string>& solution_text) {
    std::shared_ptr<const SourceFile> where;
    return reported(&where, [&] {
        namespace fs = std::filesystem;
        const fs::path folder = grade::find_exercise(exercise, grade::exercises_root(built_in_exercises()));
        auto bad_exercise = [&](const ToyError& e) {
            return LocatedError(format_error(e, where.get(), "toysim") +
                                fmt::format("toysim: error: the exercise itself is bad ({}): fix its spec; no solution was graded\n",
                                            escape_invisible((folder / "exercise.toy").string())));
        };
        grade::Exercise ex;
        try {
            where = SourceFile::read((folder / "exercise.toy").string());
            ex = grade::load_exercise(where, grade::folder_name(folder));
        } catch (const ToyError& e) {
            throw bad_exercise(e);
        }
        auto spec_source = where;
        where.reset();  // a missing solution is not the spec's error
        auto solution = solution_path ? SourceFile::read(*solution_path)
                                      : std::make_shared<const SourceFile>("<string>", solution_text.value_or(""));
        grade::Grade result;
        try {
            py::gil_scoped_release release;
            result = grade::grade_solution(ex, solution);
        } catch (const ToyError& e) {  // the spec's own: too large to run
            where = spec_source;
            throw bad_exercise(e);
        }
        return GradeTexts{format_grade(result, GradeFormat::Json), format_grade(result, GradeFormat::Gradescope), result.full_marks()};
    });
}

// ---- view ----

// The page `toysim view` writes (sim/app/view.h).
std::string view(const LoadedProgram& lp, const std::string& values, std::optional<std::uint64_t> max_steps) {
    return reported(&lp.source, [&] {
        py::gil_scoped_release release;
        return app::view(*lp.program, {values, max_steps.value_or(0)}, kSpelling).html;
    });
}

std::vector<std::pair<std::string, std::int64_t>> params_of(const LoadedProgram& lp) { return lp.program->params; }

py::list arrays_of(const LoadedProgram& lp) {
    py::list out;
    for (const auto& a : lp.program->arrays) out.append(py::make_tuple(a.name, role_name(a.role), py::tuple(py::cast(a.dims))));
    return out;
}

}  // namespace

}  // namespace toysim::python

PYBIND11_MODULE(_toysim, m) {
    using namespace toysim::python;
    m.doc() = "The compiled part of toysim: use the package `toysim`, which documents the API.";
    m.attr("__version__") = TOYSIM_VERSION;
    auto& toy_error = py::register_exception<LocatedError>(m, "ToyError", PyExc_Exception);
    toy_error.doc() = "A toysim error: str() is the message the toysim CLI prints on stderr (file:line:col: error: ..., the source line "
                      "and a caret), without its final newline.";

    py::class_<LoadedProgram>(m, "Program")
        .def_property_readonly("path", [](const LoadedProgram& lp) { return lp.source->path; })
        .def_property_readonly("text", [](const LoadedProgram& lp) { return lp.source->text; })
        .def_property_readonly("sets", [](const LoadedProgram& lp) { return lp.sets; })
        .def_property_readonly("params", &params_of)
        .def_property_readonly("arrays", &arrays_of)
        .def_property_readonly("has_tiles", [](const LoadedProgram& lp) { return lp.program->has_tiles(); })
        .def("at", &at_settings, py::arg("sets"))
        .def("run", &run, py::arg("max_steps") = py::none())
        .def("trace", &trace_json, py::arg("values"), py::arg("max_steps"))
        .def("cost", &cost_json_text, py::arg("heads"), py::arg("workers"), py::arg("cold_launches"), py::arg("machine"))
        .def("tune_schedule", &tune_schedule_json, py::arg("registers"))
        .def("tune", &tune_space_json, py::arg("vary"), py::arg("objective"), py::arg("machine"), py::arg("heads"), py::arg("dtype"), py::arg("top"),
             py::arg("kernel"), py::arg("gpu"), py::arg("sample"), py::arg("repeats"))
        .def("formula", &formula_value, py::arg("sets"), py::arg("which"), py::arg("array"))
        .def("sweep", &sweep, py::arg("settings"), py::arg("names"))
        .def("view", &view, py::arg("values"), py::arg("max_steps") = py::none());

    py::class_<RunHandle>(m, "Run")
        .def_readonly("json", &RunHandle::json)
        .def_readonly("counters", &RunHandle::counters)
        .def_readonly("fault", &RunHandle::fault)
        .def("array", &RunHandle::array, py::arg("name"));

    py::class_<GradeTexts>(m, "Grade")
        .def_readonly("json", &GradeTexts::json)
        .def_readonly("gradescope", &GradeTexts::gradescope)
        .def_readonly("full_marks", &GradeTexts::full_marks);

    m.def("load", &load, py::arg("path"), py::arg("text"), py::arg("sets"));
    m.def("grade", &grade, py::arg("exercise"), py::arg("solution_path"), py::arg("solution_text"));
    bind_session(m);
}
