#include "sim/print/grade_report.h"

#include <algorithm>
#include <fmt/format.h>

#include "support/text.h"

namespace toysim {

namespace {

using nlohmann::ordered_json;
using grade::CaseResult;
using grade::Grade;

std::string indented(const std::string& text, std::string_view by) {
    std::string out;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        out += fmt::format("{}{}\n", by, std::string_view(text).substr(start, end - start));
        start = end + 1;
    }
    return out;
}

// A target's column: "cycles <= 25" when every case expects the same value (the cells then
// show the actual value), "reads(K) <=" when they differ (the cells show both).
struct TargetColumn {
    std::string header;
    bool uniform = true;
};

std::vector<TargetColumn> target_columns(const Grade& g) {
    std::vector<TargetColumn> columns;
    const CaseResult* first = nullptr;
    for (const auto& c : g.cases)
        if (!c.targets.empty()) {
            first = &c;
            break;
        }
    if (!first) return columns;
    for (size_t i = 0; i < first->targets.size(); ++i) {
        TargetColumn col;
        for (const auto& c : g.cases)
            if (i < c.targets.size() && c.targets[i].expected != first->targets[i].expected) col.uniform = false;
        const auto& t = first->targets[i];
        col.header = col.uniform ? t.text() : fmt::format("{} {}", t.counter, relation_text(t.relation));
        columns.push_back(std::move(col));
    }
    return columns;
}

// "25 ok", "28 missed"; a case whose result is wrong earns no target, so its cell only shows
// the figure.
std::string target_cell(const grade::TargetResult& t, bool uniform, bool correct) {
    std::string figure = uniform ? fmt::format("{}", t.actual) : fmt::format("{} {} {}", t.actual, relation_text(t.relation), t.expected);
    return correct ? fmt::format("{} {}", figure, t.met ? "ok" : "missed") : figure;
}

std::string figures_text(const CaseResult& c) {
    if (!c.ran) return "";
    return fmt::format("{} cycles, {} instructions, {} DRAM reads, {} DRAM writes", c.cycles, c.instructions, c.reads, c.writes);
}

std::string format_table(const Grade& g) {
    std::string out = fmt::format("exercise: {} ({})\nsolution: {}\n\n", g.exercise, g.title, escape_invisible(g.solution));
    auto columns = target_columns(g);
    Table t{{"test", "shown", "settings", "verdict", "cycles", "reads", "writes"}, {true, false, false, false, true, true, true}, {}};
    for (const auto& col : columns) {
        t.header.push_back(col.header);
        t.right_aligned.push_back(false);
    }
    // The optimum's column, where the spec asks for one: the solution's figure against the best.
    const auto optimum = std::find_if(g.cases.begin(), g.cases.end(), [](const CaseResult& c) { return c.optimum.has_value(); });
    if (optimum != g.cases.end()) {
        t.header.push_back(fmt::format("least {}", optimum->optimum->counter));
        t.right_aligned.push_back(false);
    }
    t.header.push_back("points");
    t.right_aligned.push_back(true);
    for (const auto& c : g.cases) {
        auto figure = [&](std::uint64_t v) { return c.ran ? std::to_string(v) : std::string("—"); };
        std::vector<std::string> row = {std::to_string(c.test.number), c.test.hidden ? "hidden" : "visible", c.test.settings_text(),
                                        std::string(grade::verdict_name(c.verdict)), figure(c.cycles), figure(c.reads),
                                        figure(c.writes)};
        for (size_t i = 0; i < columns.size(); ++i)
            row.push_back(i < c.targets.size() ? target_cell(c.targets[i], columns[i].uniform, c.verdict <= grade::Verdict::Partial) : "—");
        if (optimum != g.cases.end())
            row.push_back(!c.optimum ? "—"
                          : c.optimum->met ? fmt::format("{} ok", c.optimum->best)
                                           : fmt::format("{} missed", c.optimum->best));
        row.push_back(fmt::format("{}/{}", c.score, c.test.max_score));
        t.rows.push_back(std::move(row));
    }
    out += render_table(t, Format::Table);
    out += fmt::format("\nscore: {} / {}\n", g.score, g.max_score);
    // Each message once: a file refused as a whole says the same thing for every case.
    std::vector<bool> said(g.cases.size(), false);
    for (size_t i = 0; i < g.cases.size(); ++i) {
        const CaseResult& c = g.cases[i];
        if (c.message.empty() || said[i]) continue;
        std::vector<std::string> same;
        for (size_t k = i; k < g.cases.size(); ++k)
            if (g.cases[k].message == c.message && g.cases[k].verdict == c.verdict) {
                said[k] = true;
                same.push_back(std::to_string(g.cases[k].test.number));
            }
        std::string which = same.size() == 1 ? c.test.name() : fmt::format("tests {}", fmt::join(same, ", "));
        out += fmt::format("\n{}: {}\n", which, grade::verdict_name(c.verdict));
        out += indented(c.message, "  ");
    }
    return out;
}

ordered_json case_json(const CaseResult& c) {
    ordered_json params = ordered_json::object();
    for (const auto& [name, value] : c.test.settings) params[name] = value;
    ordered_json j;
    j["number"] = c.test.number;
    j["name"] = c.test.name();
    j["visibility"] = c.test.hidden ? "hidden" : "visible";
    j["params"] = params;
    j["seed"] = c.test.seed;
    j["step_limit"] = c.test.step_limit;
    j["verdict"] = grade::verdict_name(c.verdict);
    j["score"] = c.score;
    j["max_score"] = c.test.max_score;
    j["points"] = c.test.points;
    j["message"] = c.message;
    j["counters"] = c.ran ? ordered_json{{"cycles", c.cycles}, {"instructions", c.instructions}, {"reads", c.reads}, {"writes", c.writes}}
                          : ordered_json(nullptr);
    ordered_json checks = ordered_json::array();
    for (const auto& k : c.checks)
        checks.push_back({{"check", k.text},
                          {"ok", k.result.ok},
                          {"elements", k.result.elements},
                          {"max_abs_err", k.result.max_abs_err},
                          {"max_rel_err", k.result.max_rel_err},
                          {"first_wrong", k.result.first_wrong}});
    j["checks"] = checks;
    ordered_json targets = ordered_json::array();
    for (const auto& t : c.targets)
        targets.push_back({{"counter", t.counter},
                           {"relation", relation_text(t.relation)},
                           {"expected", t.expected},
                           {"actual", t.actual},
                           {"met", t.met},
                           {"points", t.points},
                           {"earned", t.earned}});
    j["targets"] = targets;
    if (c.optimum) {
        const grade::OptimumResult& o = *c.optimum;
        j["optimum"] = {{"counter", o.counter}, {"mine", o.mine},        {"choice", o.my_choice}, {"best", o.best},
                        {"best_choice", o.best_choice}, {"within_percent", o.within_percent}, {"searched", o.searched},
                        {"kept", o.kept}, {"met", o.met}, {"points", o.points}, {"earned", o.earned}};
    }
    return j;
}

// What a student reads for one test case on Gradescope.
std::string case_output(const CaseResult& c) {
    std::string out = fmt::format("{}: {} of {} points", grade::verdict_name(c.verdict), c.score, c.test.max_score);
    if (c.ran) out += "\n" + figures_text(c);
    for (const auto& t : c.targets)
        out += fmt::format("\ntarget {}: {}, {}", t.text(), t.actual, t.met ? fmt::format("met (+{})", t.earned) : std::string("missed"));
    if (c.optimum) out += fmt::format("\noptimum: {}, {}", c.optimum->text(), c.optimum->met ? fmt::format("met (+{})", c.optimum->earned) : std::string("missed"));
    if (!c.message.empty()) out += "\n\n" + c.message;
    return out;
}

std::string format_gradescope(const Grade& g) {
    ordered_json tests = ordered_json::array();
    for (const auto& c : g.cases)
        tests.push_back({{"name", c.test.name()},
                         {"score", c.score},
                         {"max_score", c.test.max_score},
                         {"status", c.score == c.test.max_score ? "passed" : "failed"},
                         {"output", case_output(c)},
                         {"visibility", c.test.hidden ? "after_published" : "visible"}});
    ordered_json j;
    j["score"] = g.score;
    j["max_score"] = g.max_score;
    j["output"] = fmt::format("{}: {} of {} points", g.title, g.score, g.max_score);
    j["tests"] = tests;
    return json_text(j);
}

}  // namespace

std::string format_grade(const Grade& g, GradeFormat format) {
    switch (format) {
        case GradeFormat::Gradescope: return format_gradescope(g);
        case GradeFormat::Json: {
            ordered_json j;
            j["exercise"] = g.exercise;
            j["title"] = g.title;
            j["solution"] = g.solution;
            j["score"] = g.score;
            j["max_score"] = g.max_score;
            j["ok"] = g.full_marks();
            ordered_json tests = ordered_json::array();
            for (const auto& c : g.cases) tests.push_back(case_json(c));
            j["tests"] = tests;
            return json_text(j);
        }
        case GradeFormat::Table: break;
    }
    return format_table(g);
}

std::string format_exercise_list(const std::vector<ExerciseListing>& exercises, Format format) {
    if (format == Format::Json) {
        ordered_json list = ordered_json::array();
        for (const auto& e : exercises) {
            ordered_json j{{"name", e.name}, {"title", e.title}, {"visible_tests", e.visible}, {"hidden_tests", e.hidden},
                           {"max_score", e.max_score}};
            j["error"] = e.error.empty() ? ordered_json(nullptr) : ordered_json(e.error);
            list.push_back(std::move(j));
        }
        return json_text(ordered_json{{"exercises", list}});
    }
    Table t{{"exercise", "title", "visible", "hidden", "points"}, {false, false, true, true, true}, {}};
    for (const auto& e : exercises) {
        if (!e.error.empty()) {
            t.rows.push_back({e.name, "bad spec: " + e.error, "—", "—", "—"});
            continue;
        }
        t.rows.push_back({e.name, e.title, std::to_string(e.visible), std::to_string(e.hidden), std::to_string(e.max_score)});
    }
    return render_table(t, format);
}

}  // namespace toysim
