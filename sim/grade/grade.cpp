#include "sim/grade/grade.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <fmt/format.h>
#include <new>
#include <set>
#include <stdexcept>

#include "sim/analysis/cost.h"
#include "sim/check/fill.h"
#include "sim/check/run.h"
#include "sim/front/parser.h"
#include "sim/reference/reference.h"
#include "support/text.h"

namespace toysim::grade {

namespace {

using Bindings = std::vector<std::pair<std::string, std::int64_t>>;

// An integer expression of the spec's own (a test's setting, the step limit) with the
// language's checked arithmetic; `names` are what it may use ("a number" or "the parameters").
std::int64_t evaluate(const ast::Expr& e, const Bindings& bindings, std::string_view names) {
    switch (e.kind) {
        case ast::Expr::Kind::Number: return e.value;
        case ast::Expr::Kind::Name:
            for (const auto& [name, value] : bindings)
                if (name == e.name) return value;
            throw ToyError(e.loc, fmt::format("unknown name {} here: this is an expression of {}", quoted_name(e.name), names));
        case ast::Expr::Kind::Negate:
            if (auto v = integer::neg(evaluate(*e.lhs, bindings, names))) return *v;
            break;
        case ast::Expr::Kind::Binary:
            if (auto v = integer::binary(e.op, evaluate(*e.lhs, bindings, names), evaluate(*e.rhs, bindings, names))) return *v;
            break;
        case ast::Expr::Kind::Call:
            if (!integer::is_function(e.name)) throw ToyError(e.loc, fmt::format("unknown function {}", quoted_name(e.name)));
            if (auto v = integer::call(e.name, evaluate(*e.lhs, bindings, names), evaluate(*e.rhs, bindings, names))) return *v;
            break;
    }
    throw ToyError(e.loc, "this expression overflows 64-bit integers or divides by zero");
}

std::shared_ptr<ast::Program> parse_spec(const std::shared_ptr<const SourceFile>& source) {
    return std::make_shared<ast::Program>(parse(source, ParseMode::Exercise));
}

// A spec error found at one test case's settings says which: the same line may be fine at others.
[[noreturn]] void rethrow_at(const ToyError& e, const TestCase& test, const ast::ExerciseTest& line) {
    if (e.kind() == ErrorKind::Setting) {
        Loc at = test.loc;
        for (const auto& [name, value] : line.settings)
            if (name == e.subject()) at = value->loc;
        throw ToyError(at, fmt::format("test {}: {}", test.number, e.what()));
    }
    if (test.settings.empty()) throw;
    throw ToyError(e.kind(), e.loc(), fmt::format("{} (with test {}'s settings: {})", e.what(), test.number, test.settings_text()));
}

// What a run would need beyond what the compiler checks: its arrays in memory, and each
// reference (a computed fill or a check) within kMaxReferenceElements.
void check_fits(const Program& p) {
    check_fits_in_run(p);
    auto fits = [&](std::string_view function, const std::vector<int>& args, Loc loc) {
        Shapes shapes;
        for (int a : args) shapes.push_back(p.arrays[static_cast<size_t>(a)].dims);
        if (reference_footprint(function, shapes) > kMaxReferenceElements)
            throw ToyError(ErrorKind::TooLargeToRun, loc,
                           fmt::format("computing {} needs more than {} doubles of memory", function, kMaxReferenceElements));
    };
    for (const auto& a : p.arrays)
        if (a.fill.kind == ast::Fill::Kind::Reference) fits(a.fill.function, a.fill_args, a.fill.loc);
    for (const auto& c : p.checks) fits(c.function, c.args, c.loc);
}

// The program graded: the spec's declarations, then the student's lets (after the spec's
// parameters, so they may use them) and tiles, then the student's code. Nothing else of the
// student's file exists here: ParseMode::Solution refused it.
std::shared_ptr<const ast::Program> merge(std::shared_ptr<ast::Program> spec, ast::Program solution) {
    std::set<std::string, std::less<>> taken;
    for (const auto& p : spec->params) taken.insert(p.name);
    for (const auto& a : spec->arrays) taken.insert(a.name);
    for (const auto& t : spec->tiles) taken.insert(t.name);
    auto refuse_taken = [&](const std::string& name, Loc loc) {
        if (taken.count(name))
            throw ToyError(loc, fmt::format("{} is already declared by the exercise; choose another name", quoted_name(name)));
    };
    for (auto& p : solution.params) {
        refuse_taken(p.name, p.loc);
        spec->params.push_back(std::move(p));
    }
    for (auto& t : solution.tiles) {
        refuse_taken(t.name, t.loc);
        spec->tiles.push_back(std::move(t));
    }
    spec->body = std::move(solution.body);
    spec->source = solution.source;  // faults and compile errors point into the student's file
    spec->exercise.reset();
    return spec;
}

void check_allowed(const Program& p, const ast::Exercise& spec) {
    if (spec.allowed.empty()) return;
    std::vector<std::string_view> allowed;
    for (const auto& [op, loc] : spec.allowed) allowed.push_back(info(op).mnemonic);
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        const ast::Instruction* in = p.origin[pc];
        if (in && std::find(allowed.begin(), allowed.end(), info(in->op).mnemonic) == allowed.end())
            throw ToyError(in->loc, fmt::format("{} is not allowed in this exercise: use only {}", info(in->op).mnemonic,
                                                fmt::join(allowed, ", ")));
    }
}

std::string located(const ToyError& e, const SourceFile& source) {
    std::string text = format_error(e, &source, source.path);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
}

// The graded program with the solution's lets named in `lets` set to their values instead (the
// optimum's search); ToyError when the solution does not declare one of them.
// A test case's run: its step limit and its data's stream.
RunOptions case_run_options(const TestCase& test) {
    RunOptions options = RunOptions::limited_to(test.step_limit);
    options.fill_stream = test.seed;
    return options;
}

using LetsBuilder = std::function<std::shared_ptr<const ast::Program>(const Bindings& lets)>;

std::uint64_t counter_of(const RunResult& run, const std::string& counter) {
    return counter == "cycles" ? run.counters.cycles : counter == "instructions" ? run.counters.instructions
                                                   : counter == "reads"  ? run.counters.dram_reads
                                                                         : run.counters.dram_writes;
}

std::string choice_text(const Bindings& b) {
    std::string out;
    for (const auto& [name, value] : b) out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, value);
    return out;
}

// Every combination of the optimum's space run as the solution's own code at this test case
// (its data, its step limit); kept where its checks pass and it meets every target (the
// budget). The solution's own run is among the candidates, so a choice outside the space that
// beats it is the best.
OptimumResult search_optimum(const ast::Optimum& o, const Program& mine, const RunResult& my_run, bool my_targets_met,
                             const LetsBuilder& with_lets, const CaseResult& r) {
    OptimumResult out;
    out.counter = o.counter;
    out.within_percent = o.within_percent;
    out.points = o.points;
    Bindings mine_values;
    for (const auto& varied : o.space) {
        const std::string& name = varied.first;  // (a lambda may not capture a structured binding in C++20 as clang 14 reads it)
        auto it = std::find_if(mine.params.begin(), mine.params.end(), [&](const auto& p) { return p.first == name; });
        if (it != mine.params.end()) mine_values.emplace_back(name, it->second);
    }
    out.my_choice = choice_text(mine_values);
    out.mine = counter_of(my_run, o.counter);
    std::vector<Bindings> space(1);
    for (const auto& [name, values] : o.space) {
        std::vector<Bindings> grown;
        for (const Bindings& b : space)
            for (const auto& v : values) {
                Bindings c = b;
                c.emplace_back(name, evaluate(*v, mine.params, "the parameters"));
                grown.push_back(std::move(c));
            }
        space = std::move(grown);
    }
    with_lets(space.front());  // a name the solution does not declare with `let` is its error, said once
    bool have_best = false;
    if (my_targets_met) {
        out.best = out.mine;
        out.best_choice = out.my_choice;
        have_best = true;
    }
    for (const Bindings& choice : space) {
        ++out.searched;
        RunResult run;
        try {
            const Program p = compile(with_lets(choice), r.test.settings);
            run = run_to_verdict(p, case_run_options(r.test));
        } catch (const ToyError&) {
            continue;  // past the machine (a tile that does not fit the registers) or the language's limits
        }
        if (run.fault || !run.checks_ok() || !run.expects_ok()) continue;
        ++out.kept;
        const std::uint64_t value = counter_of(run, o.counter);
        if (!have_best || value < out.best) {
            out.best = value;
            out.best_choice = choice_text(choice);
            have_best = true;
        }
    }
    // Within P%: mine · 100 <= best · (100 + P), in exact integers.
    out.met = my_targets_met && have_best &&
              static_cast<unsigned __int128>(out.mine) * 100 <= static_cast<unsigned __int128>(out.best) * static_cast<unsigned>(100 + o.within_percent);
    out.earned = out.met ? out.points : 0;
    return out;
}

// Per test case: compile, refuse what the spec does not allow or what cannot finish, run,
// compare. ToyErrors of the student's are the verdict; a spec's own (too large to run) is thrown.
void grade_case(const std::shared_ptr<const ast::Program>& tree, const ast::Exercise& spec, const SourceFile& solution,
                const GradeLimits& limits, const LetsBuilder& with_lets, CaseResult& r) {
    Program p;
    try {
        p = compile(tree, r.test.settings);
        check_allowed(p, spec);
    } catch (const ToyError& e) {
        r.verdict = Verdict::Rejected;
        r.message = located(e, solution);
        return;
    }
    Loc first_tile = p.tiles.empty() ? Loc{} : p.tiles.front().loc;
    if (p.dram_size + p.registers > limits.max_elements) {
        r.verdict = Verdict::Rejected;
        r.message = located(ToyError(first_tile, fmt::format("the arrays and the register file take {} elements, more than a test case "
                                                             "may use ({})",
                                                             p.dram_size + p.registers, limits.max_elements)),
                            solution);
        return;
    }
    r.test.step_limit = std::min(r.test.step_limit, limits.max_steps);
    WorkEstimate work = estimate_work(p);
    Loc first_loop = p.loops.empty() ? Loc{} : p.loops.front().loc;
    if (work.exact && work.instructions > r.test.step_limit) {
        r.verdict = Verdict::Fault;
        r.message = located(ToyError(first_loop, fmt::format("did not finish within {} steps: its loops run {} instructions. "
                                                             "Does it loop forever?",
                                                             r.test.step_limit, work.instructions)),
                            solution);
        return;
    }
    if (p.has_tiles() && work.units > limits.max_work_units) {
        r.verdict = Verdict::Fault;
        r.message = located(ToyError(first_loop, fmt::format("its tile instructions would do {}{} units of work, more than a test "
                                                             "case may do ({})",
                                                             work.exact ? "" : "up to ", work.units, limits.max_work_units)),
                            solution);
        return;
    }
    const RunOptions options = case_run_options(r.test);
    RunResult run;
    try {
        run = run_to_verdict(p, options);
    } catch (const std::bad_alloc&) {
        r.verdict = Verdict::Fault;
        r.message = "the run needs more memory than this machine has";
        return;
    }
    r.ran = true;
    r.cycles = run.counters.cycles;
    r.instructions = run.counters.instructions;
    r.reads = run.counters.dram_reads;
    r.writes = run.counters.dram_writes;
    if (run.fault) {
        if (run.fault->kind() == ErrorKind::TooLargeToRun) throw *run.fault;
        r.verdict = Verdict::Fault;
        ToyError fault = run.fault->kind() == ErrorKind::StepLimit
                             ? ToyError(run.fault->loc(), fmt::format("did not finish within {} steps: does it loop forever?", r.test.step_limit))
                             : *run.fault;
        r.message = located(fault, solution);
        return;
    }
    std::vector<std::string> wrong;
    for (size_t i = 0; i < run.checks.size(); ++i) {
        const CheckResult& c = run.checks[i];
        r.checks.push_back(CheckOutcome{p.checks[i].text, c});
        if (c.ok) continue;
        // An element never written (or NaN) makes the errors infinite: the element says more.
        std::string errors = std::isfinite(c.max_abs_err) ? fmt::format(" (max abs error {:.3g}, max rel error {:.3g})", c.max_abs_err, c.max_rel_err) : "";
        wrong.push_back(fmt::format("check {} failed: {}{}", p.checks[i].text, c.first_wrong, errors));
    }
    std::vector<std::string> missed;
    for (size_t i = 0; i < run.expects.size(); ++i) {
        const ExpectSpec& e = p.expects[i];
        TargetResult t{e.text, e.relation, e.value, run.expects[i].actual, run.expects[i].ok, spec.targets[i].points, 0};
        if (!t.met) missed.push_back(fmt::format("missed the target {}: {} {}", t.text(), t.actual, t.counter));
        r.targets.push_back(std::move(t));
    }
    if (!wrong.empty()) {
        r.verdict = Verdict::Wrong;
        r.message = fmt::format("wrong result: {}", fmt::join(wrong, "; "));
        return;
    }
    r.score = r.test.points;
    for (auto& t : r.targets) {
        t.earned = t.met ? t.points : 0;
        r.score += t.earned;
    }
    if (spec.optimum) {
        try {
            r.optimum = search_optimum(*spec.optimum, p, run, missed.empty(), with_lets, r);
        } catch (const ToyError& e) {  // the solution names no let the space varies
            r.optimum = OptimumResult{spec.optimum->counter, "", "", counter_of(run, spec.optimum->counter), 0, spec.optimum->within_percent,
                                      0, 0, false, spec.optimum->points, 0};
            missed.push_back(e.what());
        }
        r.score += r.optimum->earned;
        if (!r.optimum->met && missed.empty()) missed.push_back(fmt::format("not the optimum: {}", r.optimum->text()));
    }
    r.verdict = missed.empty() ? Verdict::Passed : Verdict::Partial;
    r.message = fmt::format("{}", fmt::join(missed, "; "));
}

}  // namespace

std::string TestCase::settings_text() const {
    std::string out;
    for (const auto& [name, value] : settings) out += fmt::format("{}{}={}", out.empty() ? "" : ", ", name, value);
    if (seed) out += fmt::format("{}seed {}", out.empty() ? "" : ", ", seed);
    return out.empty() ? "defaults" : out;
}

std::string TestCase::name() const { return fmt::format("test {} ({}): {}", number, hidden ? "hidden" : "visible", settings_text()); }

int Exercise::hidden_tests() const {
    return static_cast<int>(std::count_if(tests.begin(), tests.end(), [](const TestCase& t) { return t.hidden; }));
}

std::string_view verdict_name(Verdict v) {
    switch (v) {
        case Verdict::Passed: return "passed";
        case Verdict::Partial: return "partial";
        case Verdict::Wrong: return "wrong";
        case Verdict::Fault: return "fault";
        case Verdict::Rejected: return "rejected";
    }
    return "rejected";
}

std::string OptimumResult::text() const {
    return fmt::format("{} {}{}; the least of the {} choices that are correct and within the targets: {} ({}){}", counter, mine,
                       my_choice.empty() ? "" : " (" + my_choice + ")", kept, best, best_choice,
                       within_percent ? fmt::format(", {}% over it allowed", within_percent) : "");
}

std::string TargetResult::text() const { return fmt::format("{} {} {}", counter, relation_text(relation), expected); }

Exercise load_exercise(std::shared_ptr<const SourceFile> source, std::string name) {
    auto tree = parse_spec(source);
    const ast::Exercise& spec = *tree->exercise;
    Exercise ex;
    ex.name = std::move(name);
    ex.source = source;
    ex.title = spec.title;
    std::int64_t target_points = 0;
    for (const auto& t : spec.targets) target_points += t.points;
    for (const auto& line : spec.tests) {
        TestCase test;
        test.number = static_cast<int>(ex.tests.size()) + 1;
        test.hidden = line.hidden;
        test.seed = line.seed;
        test.points = line.points;
        test.loc = line.loc;
        for (const auto& [setting, value] : line.settings) test.settings.emplace_back(setting, evaluate(*value, {}, "numbers"));
        test.max_score = test.points + target_points + (spec.optimum ? spec.optimum->points : 0);
        try {
            Program p = compile(tree, test.settings);
            check_fits(p);
            if (spec.optimum) {  // its values at this test's parameters, and a space the grader can afford
                std::size_t combinations = 1;
                for (const auto& [name, values] : spec.optimum->space) {
                    for (const auto& v : values) evaluate(*v, p.params, "the parameters");
                    combinations *= values.size();
                    if (combinations > kMaxOptimumChoices)
                        throw ToyError(spec.optimum->loc, fmt::format("the optimum's space has more than {} choices: each is a run of every test",
                                                                      kMaxOptimumChoices));
                }
            }
            if (spec.step_limit) {
                std::int64_t limit = evaluate(*spec.step_limit, p.params, "the parameters");
                if (limit < 1) throw ToyError(spec.step_limit->loc, fmt::format("the step limit must be at least 1, not {}", limit));
                test.step_limit = static_cast<std::uint64_t>(limit);
            }
        } catch (const ToyError& e) {
            rethrow_at(e, test, line);
        }
        ex.max_score += test.max_score;
        ex.tests.push_back(std::move(test));
    }
    return ex;
}

std::shared_ptr<const ast::Program> solution_program(std::shared_ptr<const SourceFile> spec_source,
                                                     std::shared_ptr<const SourceFile> solution) {
    auto spec_tree = parse_spec(spec_source);
    return merge(spec_tree, parse(solution, ParseMode::Solution));
}

Grade grade_solution(const Exercise& exercise, std::shared_ptr<const SourceFile> solution, const GradeLimits& limits) {
    Grade g;
    g.exercise = exercise.name;
    g.title = exercise.title;
    g.solution = solution->path;
    g.max_score = exercise.max_score;
    auto spec_tree = parse_spec(exercise.source);
    const ast::Exercise spec_decls = std::move(*spec_tree->exercise);
    std::shared_ptr<const ast::Program> tree;
    std::string refused;  // the solution as a whole is refused: every case says why
    try {
        tree = merge(spec_tree, parse(solution, ParseMode::Solution));
    } catch (const ToyError& e) {
        refused = located(e, *solution);
    }
    // The optimum's search: the spec and the solution parsed again, the lets it varies set.
    const LetsBuilder with_lets = [&](const Bindings& lets) {
        ast::Program mine = parse(solution, ParseMode::Solution);
        for (const auto& let : lets) {
            const std::string& name = let.first;
            const std::int64_t value = let.second;
            auto it = std::find_if(mine.params.begin(), mine.params.end(), [&](const ast::Param& p) { return p.name == name; });
            if (it == mine.params.end() || !it->derived)
                throw ToyError(fmt::format("the exercise asks for your choice of {}: declare it with `let {} = ...`", name, name));
            auto number = std::make_unique<ast::Expr>();
            number->kind = ast::Expr::Kind::Number;
            number->value = value;
            number->loc = it->value->loc;
            it->value = std::move(number);
        }
        return merge(parse_spec(exercise.source), std::move(mine));
    };
    for (const auto& test : exercise.tests) {
        CaseResult r;
        r.test = test;
        if (tree) {
            grade_case(tree, spec_decls, *solution, limits, with_lets, r);
        } else {
            r.verdict = Verdict::Rejected;
            r.message = refused;
        }
        g.score += r.score;
        g.cases.push_back(std::move(r));
    }
    return g;
}

// ---- where the exercises are ----

namespace fs = std::filesystem;

namespace {

bool is_exercise(const fs::path& folder) {
    std::error_code ec;
    return fs::is_regular_file(folder / "exercise.toy", ec);
}

}  // namespace

fs::path exercises_root(const fs::path& built_in) {
    if (const char* env = std::getenv("TOYSIM_EXERCISES"); env && *env) return env;
    std::error_code ec;
    if (fs::is_directory("programs/exercises", ec)) return "programs/exercises";
    return built_in;
}

fs::path installed_exercises(const fs::path& binary, const fs::path& relative, const fs::path& fallback) {
    if (binary.empty()) return fallback;
    std::error_code ec;
    fs::path installed = (fs::absolute(binary, ec).parent_path() / relative).lexically_normal();
    if (!ec && fs::is_directory(installed, ec)) return installed;
    return fallback;
}

std::vector<std::string> exercise_names(const fs::path& root) {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
        if (is_exercise(it->path())) names.push_back(it->path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

std::string folder_name(const fs::path& folder) {
    fs::path p = fs::absolute(folder).lexically_normal();
    if (!p.has_filename()) p = p.parent_path();
    return p.filename().string();
}

fs::path find_exercise(const std::string& given, const fs::path& root) {
    fs::path path(given);
    if (path.filename() == "exercise.toy" && is_exercise(path.parent_path())) return path.parent_path();
    if (is_exercise(path)) return path;
    if (given.find('/') == std::string::npos && !given.empty() && is_exercise(root / given)) return root / given;
    auto names = exercise_names(root);
    std::vector<std::string_view> views(names.begin(), names.end());
    throw ToyError(fmt::format("no exercise {}: it is neither a folder holding exercise.toy nor one of the exercises in {} ({}){}",
                               quoted_name(given), escape_invisible(root.string()),
                               names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")),
                               did_you_mean(given, views)));
}

}  // namespace toysim::grade
