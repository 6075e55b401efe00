// Printers for `toysim grade` (a table, our JSON, or Gradescope's results.json) and
// `toysim exercise list`.
#pragma once

#include <string>
#include <vector>

#include "sim/grade/grade.h"
#include "sim/print/format.h"

namespace toysim {

enum class GradeFormat { Table, Json, Gradescope };

// Table: one row per test case (its settings, verdict, figures, each target's actual against
// its expected value, points), the total, then each case's message where it lost points.
// Json: everything in the table, as data. Gradescope: results.json as Gradescope reads it
// (score, max_score, output, and tests[] with name, score, max_score, status, output and
// visibility; hidden cases are "after_published").
std::string format_grade(const grade::Grade& grade, GradeFormat format);

// One exercise folder as `toysim exercise list` shows it: its spec's title and tests, or why
// the spec is bad.
struct ExerciseListing {
    std::string name;
    std::string title;
    int visible = 0, hidden = 0;
    std::int64_t max_score = 0;
    std::string error;  // non-empty: the spec is bad (the first line of the error)
};
std::string format_exercise_list(const std::vector<ExerciseListing>& exercises, Format format);

}  // namespace toysim
