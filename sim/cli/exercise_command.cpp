// `toysim grade`, `toysim exercise list` and `toysim exercise start`: where the exercises are,
// and the exit codes graders read (0 full marks, 1 points lost, 2 a bad exercise or a missing file).
#include <filesystem>
#include <fmt/format.h>
#include <system_error>

#include "sim/cli/common.h"
#include "sim/grade/grade.h"
#include "sim/print/grade_report.h"
#include "support/text.h"

#ifndef TOYSIM_EXERCISES_DIR
#define TOYSIM_EXERCISES_DIR "programs/exercises"
#endif
// Where an installed toysim's exercises are, from the folder the executable is in
// (cmake/install.cmake passes the install layout's; this is GNUInstallDirs' default).
#ifndef TOYSIM_INSTALLED_EXERCISES_DIR
#define TOYSIM_INSTALLED_EXERCISES_DIR "../share/toysim/programs/exercises"
#endif

namespace toysim::cli {

namespace fs = std::filesystem;

namespace {

// The exercises installed with this executable, else the folder this build came from.
fs::path built_in_exercises() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    return grade::installed_exercises(ec ? fs::path() : exe, TOYSIM_INSTALLED_EXERCISES_DIR, TOYSIM_EXERCISES_DIR);
}

// Where named exercises are (grade::exercises_root): $TOYSIM_EXERCISES, ./programs/exercises,
// else those installed beside the executable, else the folder this build came from.
fs::path exercises_root() { return grade::exercises_root(built_in_exercises()); }

fs::path find_exercise(const std::string& given) { return grade::find_exercise(given, exercises_root()); }

using grade::exercise_names;
using grade::folder_name;

}  // namespace

Program load_solution_program(const std::string& exercise, const std::string& solution, const ParamSettings& settings, Context& ctx) {
    const fs::path folder = find_exercise(exercise);
    ctx.source = SourceFile::read((folder / "exercise.toy").string());
    auto spec = ctx.source;
    auto source = SourceFile::read(solution);
    ctx.source = source;  // errors point into the solution (merge says where in the spec otherwise)
    return compile(grade::solution_program(spec, source), settings);
}

namespace {

// The spec of the exercise in `folder`, read into ctx.source so that an error in it shows its line.
grade::Exercise load(const fs::path& folder, Context& ctx) {
    ctx.source = SourceFile::read((folder / "exercise.toy").string());
    return grade::load_exercise(ctx.source, folder_name(folder));
}

int bad_exercise(const ToyError& e, const fs::path& folder, Context& ctx) {
    ctx.err << format_error(e, ctx.source.get(), "toysim");
    ctx.err << fmt::format("toysim: error: the exercise itself is bad ({}): fix its spec; no solution was graded\n",
                           escape_invisible((folder / "exercise.toy").string()));
    return kBadInput;
}

}  // namespace

int grade_command(const GradeArgs& o, Context& ctx) {
    fs::path folder = find_exercise(o.exercise);
    grade::Exercise exercise;
    try {
        exercise = load(folder, ctx);
    } catch (const ToyError& e) {
        return bad_exercise(e, folder, ctx);
    }
    auto spec_source = ctx.source;
    ctx.source.reset();  // a missing solution is not the spec's error
    std::shared_ptr<const SourceFile> solution = SourceFile::read(o.solution);
    grade::Grade result;
    try {
        result = grade::grade_solution(exercise, solution);
    } catch (const ToyError& e) {  // the spec's own: too large to run
        ctx.source = spec_source;
        return bad_exercise(e, folder, ctx);
    }
    GradeFormat format = o.format == "json" ? GradeFormat::Json : o.format == "gradescope" ? GradeFormat::Gradescope : GradeFormat::Table;
    ctx.out << format_grade(result, format);
    return result.full_marks() ? kOk : kCheckFailed;
}

int exercise_list_command(const FormatArgs& o, Context& ctx) {
    fs::path root = exercises_root();
    std::error_code ec;
    if (!fs::is_directory(root, ec))
        throw ToyError(fmt::format("no exercises folder at {} (set TOYSIM_EXERCISES to one)", escape_invisible(root.string())));
    std::vector<ExerciseListing> rows;
    bool all_good = true;
    for (const auto& name : exercise_names(root)) {
        ExerciseListing row;
        row.name = name;
        try {
            grade::Exercise ex = load(root / name, ctx);
            row.title = ex.title;
            row.visible = ex.visible_tests();
            row.hidden = ex.hidden_tests();
            row.max_score = ex.max_score;
        } catch (const ToyError& e) {
            std::string text = format_error(e, ctx.source.get(), "toysim");
            row.error = text.substr(0, text.find('\n'));
            all_good = false;
        }
        rows.push_back(std::move(row));
    }
    ctx.source.reset();
    ctx.out << format_exercise_list(rows, parse_format(o.format));
    return all_good ? kOk : kBadInput;
}

int exercise_start_command(const ExerciseStartArgs& o, Context& ctx) {
    fs::path folder = find_exercise(o.exercise);
    std::string name = folder_name(folder);
    grade::Exercise exercise = load(folder, ctx);  // a bad spec is said now, not at the first grade
    ctx.source.reset();
    fs::path starter = folder / "starter.toy";
    fs::path dir(o.directory);
    fs::path target = dir / (name + ".toy");
    std::error_code ec;
    if (!fs::is_regular_file(starter, ec)) throw ToyError(fmt::format("the exercise has no starter file {}", escape_invisible(starter.string())));
    if (fs::exists(target, ec))
        throw ToyError(fmt::format("{} already exists; not overwriting it (grade it with: toysim grade {} {})",
                                   escape_invisible(target.string()), name, escape_invisible(target.string())));
    fs::create_directories(dir, ec);
    if (ec) throw ToyError(fmt::format("cannot create {}: {}", escape_invisible(dir.string()), ec.message()));
    if (!fs::copy_file(starter, target, fs::copy_options::none, ec) || ec)
        throw ToyError(fmt::format("cannot write {}: {}", escape_invisible(target.string()), ec.message()));
    ctx.out << fmt::format("{}: {}\nwrote {} ({} visible and {} hidden test cases, {} points)\n\n"
                           "next: write your instructions in it, then grade it:\n  toysim grade {} {}\n",
                           name, exercise.title, escape_invisible(target.string()), exercise.visible_tests(), exercise.hidden_tests(),
                           exercise.max_score, name, escape_invisible(target.string()));
    return kOk;
}

}  // namespace toysim::cli
