// One fuzz input, through every stage the command line has. The input is a .toy program,
// optionally followed by a line "%%" and more text (the second part):
//  - the program: parse -> compile -> cost -> tune --schedule -> run -> trace -> a stepping
//    session -> the viewer's data -> every printer -> the CUDA generated from it (toysim gpu
//    cuda, without compiling);
//  - the second part, line by line, as `toysim step` commands on a session of the program;
//  - the program read as an exercise spec, and the second part as a student's solution to it:
//    load -> grade -> every grade printer.
// Shared by the libFuzzer target (fuzz_toy.cpp) and the replay of the corpus and of past
// crashes (tests/test_fuzz_regressions.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "gpu/codegen/codegen.h"
#include "sim/analysis/cost.h"
#include "sim/app/tune.h"
#include "sim/cli/step_commands.h"
#include "sim/grade/grade.h"
#include "sim/print/grade_report.h"
#include "sim/exec/machine.h"
#include "sim/front/parser.h"
#include "sim/lower/program.h"
#include "sim/print/cost_report.h"
#include "sim/print/report.h"
#include "sim/print/step_report.h"
#include "sim/exec/cached_count.h"
#include "sim/print/view_report.h"
#include "support/diag.h"
#include "support/text.h"

namespace toysim::fuzz {

inline constexpr std::size_t kMaxInput = 4096;          // bytes; longer inputs are refused
inline constexpr std::int64_t kMaxDram = 1 << 16;       // elements; larger programs are not run
inline constexpr std::uint64_t kRunSteps = 20'000, kTraceSteps = 500;
inline constexpr std::uint64_t kMaxWorkUnits = 1 << 22;  // a graded test case's tile work
inline constexpr std::size_t kMaxTests = 8;               // graded test cases
inline constexpr int kMaxCommands = 64;                   // stepper commands

// Bad input is a ToyError: expected, caught (stage by stage, so a program that faults at run
// time still has its cost and trace printed). Anything else escapes to the caller: a bug.
// Returns the text printed, so nothing is optimized away.
inline std::string one_input(std::string_view input) {
    if (input.size() > kMaxInput) return {};
    std::string_view bytes = input, second;
    if (input.rfind("%%\n", 0) == 0) {
        bytes = {};
        second = input.substr(3);
    } else if (size_t split = input.find("\n%%\n"); split != std::string_view::npos) {
        bytes = input.substr(0, split + 1);
        second = input.substr(split + 4);
    }
    auto source = std::make_shared<const SourceFile>("fuzz.toy", std::string(bytes));
    std::string printed;
    auto stage = [&](auto&& body) {
        try {
            body();
            return true;
        } catch (const ToyError& e) {
            printed += format_error(e, source.get());
            return false;
        }
    };
    const Format formats[] = {Format::Table, Format::Markdown, Format::Csv, Format::Json};

    // The exercise reading first: a spec is not a program, so the program stages may stop early.
    stage([&] {
        grade::Exercise exercise = grade::load_exercise(source, "fuzz");
        if (exercise.tests.size() > kMaxTests) return;
        grade::GradeLimits limits;
        limits.max_steps = kRunSteps;
        limits.max_work_units = kMaxWorkUnits;
        limits.max_elements = kMaxDram;
        auto solution = std::make_shared<const SourceFile>("solution.toy", std::string(second));
        grade::Grade g = grade::grade_solution(exercise, solution, limits);
        for (GradeFormat f : {GradeFormat::Table, GradeFormat::Json, GradeFormat::Gradescope}) printed += format_grade(g, f);
    });

    std::shared_ptr<const ast::Program> tree;
    Program program;
    if (!stage([&] { tree = std::make_shared<const ast::Program>(parse(source)); })) return printed;
    stage([&] {
        for (const auto& settings : test_settings(*tree)) stage([&] { compile(tree, settings); });
    });
    if (!stage([&] { program = compile(tree); })) return printed;
    if (program.dram_size > kMaxDram || program.registers > kMaxDram) return printed;

    stage([&] {
        auto formulas = derive_formulas(program);
        auto counted = count_traffic(program);
        auto races = prove_race_freedom(program);
        auto time = derive_time(program);
        for (Format f : formats) printed += format_cost(program, formulas, counted, f, races, &time);
    });
    // tune --schedule: a straight-line program's shortest schedule, written, compiled, run and
    // checked against the program (a program it does not take is a ToyError).
    stage([&] {
        app::ScheduleTuneRequest tune;
        tune.max_states = 20'000;
        printed += app::tune_schedule(program, "fuzz.toy", tune, Format::Table, app::Spelling::cli());
    });
    // The CUDA generated from it (toysim gpu cuda): every program either generates or is a
    // located error.
    stage([&] {
        for (gpu::DType t : {gpu::DType::F32, gpu::DType::BF16}) printed += gpu::generate_cuda(program, t)->source;
    });
    // The count-only walk through the program's cache (cost --cache), two heads sharing it.
    if (program.cache && program.cache->config.size_bytes <= (std::uint64_t{1} << 26))
        stage([&] {
            CachedCountOptions walk;
            walk.heads = 2;
            walk.cold_launches = true;
            walk.max_work = kRunSteps;
            CachedCount counted = count_through_cache(program, walk);
            for (Format f : formats) printed += format_cached_count(program, counted, walk, f);
            // With one head a walker runs alone, so loops are counted in runs of iterations:
            // exactly what walking them one instruction at a time counts.
            walk.heads = 1;
            const CachedCount runs = count_through_cache(program, walk);
            walk.element_walk = true;
            const CachedCount element = count_through_cache(program, walk);
            if (runs.counts != element.counts || runs.launches != element.launches || runs.instructions != element.instructions ||
                runs.cycles != element.cycles)
                throw std::logic_error("the walk through the cache counted runs of iterations differently from the element walk");
        });
    RunOptions run_options, trace_options;
    run_options.max_steps = kRunSteps;
    trace_options.max_steps = kTraceSteps;
    stage([&] {
        RunResult result = run(program, run_options);
        // The wall time is the one figure of a run that differs from run to run: printed, its
        // digits would send the formatter down different paths, and the same fuzz seed would
        // then explore different inputs (scripts/fuzz.sh --ci must give the same answer twice).
        result.seconds = 0;
        for (Format f : formats) printed += format_run(program, result, f, f == Format::Json);
    });
    for (bool symbolic : {false, true})
        stage([&] {
            Trace t = trace(program, symbolic, trace_options);
            for (Format f : formats) printed += format_trace(program, t, TraceOptions{f, f == Format::Table});
            if (t.error) printed += format_error(*t.error, source.get());
        });
    // A session moving both ways with a breakpoint, as `toysim step` drives it.
    stage([&] {
        SessionLimits limits;
        limits.max_steps = kRunSteps;
        limits.checkpoint_bytes = 1;
        Session<NumericDomain> s(program, NumericDomain{}, nullptr, limits);
        s.add_breakpoint(parse_breakpoint(program, "STORE", false));
        StepStyle style;
        printed += format_stop(s, s.go_to(5), style);
        printed += format_stop(s, s.run_forward(), style);
        printed += format_stop(s, s.backward(3), style);
        printed += format_stop(s, s.run_backward(), style);
        printed += format_stop(s, s.forward(50), style);
        printed += format_registers(s, style) + format_session_counters(s) + format_listing(s, std::nullopt);
    });
    // The second part as a stepper script: each line a command, as `toysim step` reads them.
    if (!second.empty())
        stage([&] {
            SessionLimits limits;
            limits.max_steps = kRunSteps;
            limits.checkpoint_bytes = 1;
            Session<NumericDomain> s(program, NumericDomain{}, nullptr, limits);
            StepStyle style;
            std::ostringstream out;
            int commands = 0;
            for (std::string_view rest = second; !rest.empty() && commands < kMaxCommands; ++commands) {
                size_t end = rest.find('\n');
                std::string line(trim(rest.substr(0, end)));
                rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
                if (line.empty()) continue;
                bool go_on = true;
                stage([&] { go_on = cli::execute_step_command(s, line, style, out, false); });
                if (!go_on) break;
            }
            printed += out.str();
        });
    // As `toysim view` writes it: text that is not UTF-8 (a source line) is replaced, not thrown on.
    const auto replace = nlohmann::ordered_json::error_handler_t::replace;
    stage([&] { printed += view_json(program, record_numeric(program, kTraceSteps, kTraceSteps)).dump(-1, ' ', false, replace); });
    stage([&] {
        ExprArena arena;
        printed += view_json(program, record_symbolic(program, arena, kTraceSteps, kTraceSteps), arena).dump(-1, ' ', false, replace);
    });
    return printed;
}

}  // namespace toysim::fuzz
