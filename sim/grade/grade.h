// The grader: an exercise spec (the instructor's machine, arrays, checks, targets and test
// cases: programs/exercises/README.md) and a student's solution (instructions, loops, lets and
// tiles only), run on every test case. The spec holds everything that decides a grade; nothing
// in the student's file can change it. Nothing here prints: sim/print/grade_report.h does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/check/checks.h"
#include "sim/front/ast.h"
#include "sim/lower/program.h"

namespace toysim::grade {

// A test case's step limit when the spec gives none (`limit steps = ...`).
inline constexpr std::uint64_t kDefaultStepLimit = 1'000'000;
// The most units of work (tile elements moved or multiplied) one test case may do: about ten
// seconds of tile work. A solution whose loops and tiles say more is refused before it runs,
// since a few huge tile instructions stay far below any step limit.
inline constexpr std::uint64_t kMaxWorkUnits = std::uint64_t{1} << 32;
// An optimum's space: each choice is one more run of every test case.
inline constexpr std::size_t kMaxOptimumChoices = 64;

struct TestCase {
    int number = 0;  // 1-based, in the spec's order
    bool hidden = false;
    ParamSettings settings;  // the `test` line's own settings (the others keep their defaults)
    std::uint64_t seed = 0;  // RunOptions::fill_stream
    std::int64_t points = 1;
    std::uint64_t step_limit = kDefaultStepLimit;
    std::int64_t max_score = 0;  // points + every target's points
    Loc loc;
    // "n=1000, seed 7", or "defaults"
    std::string settings_text() const;
    // "test 2 (hidden): n=1000, seed 7"
    std::string name() const;
};

struct Exercise {
    std::string name;  // the folder's name
    std::shared_ptr<const SourceFile> source;  // exercise.toy
    std::string title;
    std::vector<TestCase> tests;
    std::int64_t max_score = 0;
    int hidden_tests() const;
    int visible_tests() const { return static_cast<int>(tests.size()) - hidden_tests(); }
};

// Parses the spec and checks it: compiled (with an empty body) at every test case's settings,
// its arrays fit a run, its references fit in memory, its step limits are positive. Throws a
// ToyError located in `source` when the exercise itself is bad.
Exercise load_exercise(std::shared_ptr<const SourceFile> source, std::string name);

enum class Verdict { Passed, Partial, Wrong, Fault, Rejected };
std::string_view verdict_name(Verdict verdict);  // "passed", "partial", ...

// One target in one test case.
struct TargetResult {
    std::string counter;  // "cycles", "reads(K)"
    Relation relation = Relation::AtMost;
    std::int64_t expected = 0;
    std::uint64_t actual = 0;
    bool met = false;
    std::int64_t points = 0, earned = 0;
    std::string text() const;  // "cycles <= 25"
};

// The solution's choice of its lets against the space's best for its own code (an exercise's
// `optimum` line): `mine` and `best` are the counter's values, `best_choice` where the best is.
struct OptimumResult {
    std::string counter;               // "reads"
    std::string my_choice, best_choice;  // "Br=16 Bc=16"
    std::uint64_t mine = 0, best = 0;
    std::int64_t within_percent = 0;
    std::size_t searched = 0, kept = 0;  // combinations run, and those correct and within every target
    bool met = false;
    std::int64_t points = 0, earned = 0;
    std::string text() const;  // "reads 3264, the least of 16 choices 1632 (Br=32 Bc=4)"
};

struct CheckOutcome {
    std::string text;  // "c = matmul(a, b)"
    CheckResult result;
};

struct CaseResult {
    TestCase test;
    Verdict verdict = Verdict::Rejected;
    // Why points were lost: the located error (file:line:col: error: ... with the line and a
    // caret), the failed check, or the missed targets. Empty when the case passed.
    std::string message;
    bool ran = false;  // the counters below are a run's (to its end, or to its fault)
    std::uint64_t cycles = 0, instructions = 0, reads = 0, writes = 0;
    std::vector<CheckOutcome> checks;    // when the run finished
    std::vector<TargetResult> targets;   // when the run finished
    std::optional<OptimumResult> optimum;  // when the run finished correct and the spec asks for one
    std::int64_t score = 0;
};

struct Grade {
    std::string exercise, title, solution;  // the exercise's name, its title, the solution's path
    std::vector<CaseResult> cases;
    std::int64_t score = 0, max_score = 0;
    bool full_marks() const { return score == max_score; }
};

// What one test case may use beyond what the spec says. The defaults are the grader's; a
// caller may lower them (the fuzz target does, to keep each input fast).
struct GradeLimits {
    std::uint64_t max_steps = std::numeric_limits<std::uint64_t>::max();             // caps every test case's step limit
    std::uint64_t max_work_units = kMaxWorkUnits;     // tile work, refused before running
    std::int64_t max_elements = std::int64_t{1} << 27;  // DRAM + register file, in elements
};

// The program a solution makes with its exercise's spec (spec_source: exercise.toy): what
// grading runs, for tools that run it elsewhere (`toysim gpu run --exercise`). Throws a
// ToyError located in the solution (or the spec) when either is bad.
std::shared_ptr<const ast::Program> solution_program(std::shared_ptr<const SourceFile> spec_source,
                                                     std::shared_ptr<const SourceFile> solution);

// ---- where the exercises are (`toysim grade NAME`, `toysim exercise`, the Python module) ----

// Where named exercises are: $TOYSIM_EXERCISES when set (it replaces the others), else
// ./programs/exercises (a clone of the repository), else `built_in`, the folder the build knows.
std::filesystem::path exercises_root(const std::filesystem::path& built_in);

// The exercises installed with a binary (cmake --install, the .deb): `relative` (the install
// layout's path from the binary's folder to them) from `binary`'s folder when that is a folder,
// else `fallback` (the source tree this build came from). Found from where the binary is rather
// than where it was built, so a package works under any prefix.
std::filesystem::path installed_exercises(const std::filesystem::path& binary, const std::filesystem::path& relative,
                                          const std::filesystem::path& fallback);
// The exercises under `root` (folders holding exercise.toy), sorted.
std::vector<std::string> exercise_names(const std::filesystem::path& root);
// The folder's own name, whatever trailing '/' or '.' the path was given with.
std::string folder_name(const std::filesystem::path& folder);
// EXERCISE as the user gave it: a folder holding exercise.toy (or that file), else a name under
// `root`. Throws ToyError naming the exercises there (and the nearest one) otherwise.
std::filesystem::path find_exercise(const std::string& given, const std::filesystem::path& root);

// Runs the student's file on every test case. A broken or hostile solution never throws (parse
// errors, refused declarations, disallowed opcodes, run-time faults, endless or huge loops):
// each case gets its verdict and message. Throws a ToyError located in the exercise's spec only
// when the spec itself turns out bad while running.
Grade grade_solution(const Exercise& exercise, std::shared_ptr<const SourceFile> solution, const GradeLimits& limits = {});

}  // namespace toysim::grade
