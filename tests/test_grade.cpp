// The grader (sim/grade, `toysim grade`, `toysim exercise`): the course's matmul exercises score
// their reference solutions fully and their known-wrong ones (tests/exercises/) exactly as the
// table says; bad specs exit 2 at the line; Gradescope's results.json has its fields and types;
// nothing a student writes can declare a check, a tolerance or the machine.
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/check/run.h"
#include "sim/front/parser.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kRoot = TOYSIM_SOURCE_DIR;

// A folder of its own under the system's temporary folder, removed at the end.
struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& name) {
        static std::atomic<int> count{0};
        path = fs::temp_directory_path() / ("toysim_grade_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(count++));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    fs::path write(const std::string& file, const std::string& text) const {
        fs::create_directories((path / file).parent_path());
        std::ofstream(path / file) << text;
        return path / file;
    }
};

json grade_json(const std::string& exercise, const std::string& solution, const std::string& format, int& code) {
    auto r = run_cli({"grade", exercise, solution, "--format", format});
    INFO(r.out << r.err);
    REQUIRE(r.escaped.empty());
    code = r.code;
    return json::parse(r.out);
}

// One known-wrong solution: the points it gets, its verdict in every test case, and a part of
// the message the first test case shows.
struct Wrong {
    std::string exercise, file;
    std::int64_t score;
    std::string verdict;
    std::string message;
};

const std::vector<Wrong> kWrong = {
    // Problem 1: 4 tests of 2 points + the 7-cycle target (1): 12.
    {"p1_c00", "wrong_result.toy", 0, "wrong", "wrong result: check c[0][0] = matmul(a, b)[0][0] failed: c[0][0] = "},
    {"p1_c00", "too_many_registers.toy", 0, "rejected",
     "too_many_registers.toy:6:15: error: register R3 is beyond the register file (3 registers: R0..R2)"},
    {"p1_c00", "writes_input.toy", 0, "rejected", "writes_input.toy:8:11: error: STORE cannot write to input array 'a'"},
    {"p1_c00", "parse_error.toy", 0, "rejected", "parse_error.toy:3:14: error: expected ',' between operands or the end of the line, got 'R1'"},
    {"p1_c00", "out_of_bounds.toy", 0, "fault", "out_of_bounds.toy:3:8: error: a[2][0] is out of bounds: a is 2×2 (at i = 2)"},
    {"p1_c00", "unwritten_register.toy", 0, "fault", "unwritten_register.toy:4:13: error: R2 is read before it was ever written"},
    {"p1_c00", "disallowed_opcode.toy", 0, "rejected",
     "disallowed_opcode.toy:4:1: error: MUL is not allowed in this exercise: use only LOAD, STORE, MAC_Z, MAC"},
    {"p1_c00", "declares_check.toy", 0, "rejected",
     "declares_check.toy:2:1: error: a solution may not declare 'check': the exercise fixes the checks, tolerances, targets and the machine"},
    {"p1_c00", "declares_registers.toy", 0, "rejected", "declares_registers.toy:2:1: error: a solution may not declare 'registers'"},
    {"p1_c00", "declares_input.toy", 0, "rejected", "declares_input.toy:2:1: error: a solution may not declare 'input'"},
    {"p1_c00", "declares_expect.toy", 0, "rejected", "declares_expect.toy:2:1: error: a solution may not declare 'expect'"},
    {"p1_c00", "huge_let.toy", 0, "rejected", "huge_let.toy:2:11: error: integer overflow in this expression"},
    {"p1_c00", "huge_tile.toy", 0, "rejected", "huge_tile.toy:2:6: error: tile 't' does not fit in the register file"},
    // Problem 2: 4 tests of 2 points + the 25-cycle target (1): 12.
    {"p2_matmul_3reg", "wrong_result.toy", 0, "wrong", "wrong result: check c = matmul(a, b) failed: c[0][1] = "},
    {"p2_matmul_3reg", "over_cycles.toy", 8, "partial", "missed the target cycles <= 25: 28 cycles"},
    {"p2_matmul_3reg", "never_terminates.toy", 0, "fault",
     "never_terminates.toy:2:1: error: did not finish within 1000 steps: its loops run 1000000000028 instructions. Does it loop forever?"},
    {"p2_matmul_3reg", "step_limit.toy", 0, "fault", "step_limit.toy:4:5: error: did not finish within 1000 steps: does it loop forever?"},
    // Problem 3: 4 tests of 2 points + 22 cycles (1) + 10 reads (1): 16.
    {"p3_outer_product_6reg", "wrong_result.toy", 0, "wrong", "wrong result: check c = matmul(a, b) failed: c[0][0] = "},
    {"p3_outer_product_6reg", "too_many_registers.toy", 0, "rejected",
     "too_many_registers.toy:2:15: error: register R6 is beyond the register file (6 registers: R0..R5)"},
    {"p3_outer_product_6reg", "over_targets.toy", 8, "partial",
     "missed the target cycles <= 22: 24 cycles; missed the target reads <= 10: 12 reads"},
    // The quiz: 4 tests of 2 points + 20 cycles (2) + exactly 8 reads (1): 20.
    {"quiz_inner_product_6reg", "over_cycles.toy", 8, "partial", "missed the target cycles <= 20: 28 cycles; missed the target reads = 8: 16 reads"},
    {"quiz_inner_product_6reg", "nearly.toy", 8, "partial", "missed the target cycles <= 20: 21 cycles; missed the target reads = 8: 9 reads"},
};

const char* const kSpecBase = "registers 3\ninput a[2][2]\ninput b[2][2]\noutput c[2][2]\ncheck c[0][0] = matmul(a, b)[0][0]\n";

}  // namespace

TEST_CASE("grade: the matmul exercises' reference solutions score full marks", "[grade]") {
    const std::vector<std::pair<std::string, std::int64_t>> full = {
        {"p1_c00", 12}, {"p2_matmul_3reg", 12}, {"p3_outer_product_6reg", 16}, {"quiz_inner_product_6reg", 20}};
    for (const auto& [name, points] : full) {
        INFO(name);
        int code = -1;
        json j = grade_json(name, "programs/exercises/" + name + "/solution.toy", "json", code);
        CHECK(code == 0);
        CHECK(j["score"] == points);
        CHECK(j["max_score"] == points);
        CHECK(j["tests"].size() == 4);
    }
}

TEST_CASE("grade: known-wrong solutions of the matmul exercises score what they deserve, and say why", "[grade]") {
    std::set<std::string> covered;
    for (const auto& w : kWrong) {
        covered.insert(w.exercise + "/" + w.file);
        INFO(w.exercise << "/" << w.file);
        int code = -1;
        json j = grade_json(w.exercise, "tests/exercises/" + w.exercise + "/" + w.file, "json", code);
        CHECK(code == 1);
        CHECK(j["score"] == w.score);
        CHECK(j["ok"] == false);
        for (const auto& t : j["tests"]) CHECK(t["verdict"] == w.verdict);
        std::string message = j["tests"][0]["message"];
        INFO(message);
        CHECK(message.find(w.message) != std::string::npos);
        // A run that never finished has no checks or targets to show.
        if (w.verdict == "rejected") CHECK(j["tests"][0]["counters"].is_null());
    }
    // Every file of these folders has its row.
    for (const char* name : {"p1_c00", "p2_matmul_3reg", "p3_outer_product_6reg", "quiz_inner_product_6reg"})
        for (const auto& f : fs::directory_iterator(kRoot / "tests/exercises" / name)) {
            INFO(f.path());
            CHECK(covered.count(std::string(name) + "/" + f.path().filename().string()) == 1);
        }
}

TEST_CASE("grade: the table shows each case's figures against the targets, then the messages once", "[grade]") {
    auto r = run_cli({"grade", "programs/exercises/p2_matmul_3reg", "tests/exercises/p2_matmul_3reg/over_cycles.toy"});
    CHECK(r.code == 1);
    auto lines = split_lines(r.out);
    REQUIRE(lines.size() >= 10);
    CHECK(lines[0] == "exercise: p2_matmul_3reg (Problem 2: the full 2×2 matmul on three registers)");
    CHECK(lines[3] == "test  shown    settings   verdict  cycles  reads  writes  cycles <= 25  points");
    CHECK(lines[5] == "   1  visible  defaults   partial      28     16       4  28 missed        2/3");
    CHECK(lines[8] == "   4  hidden   seed 2024  partial      28     16       4  28 missed        2/3");
    CHECK(r.out.find("\nscore: 8 / 12\n") != std::string::npos);
    // A file refused as a whole: its message once, for every case.
    auto p = run_cli({"grade", "p1_c00", "tests/exercises/p1_c00/parse_error.toy"});
    CHECK(p.code == 1);
    CHECK(p.out.find("tests 1, 2, 3, 4: rejected\n  tests/exercises/p1_c00/parse_error.toy:3:14: error:") != std::string::npos);
    CHECK(p.out.find("    3 | LOAD b[0][0] R1\n") != std::string::npos);
}

TEST_CASE("grade: --format gradescope is Gradescope's results.json", "[grade]") {
    for (const char* file : {"programs/exercises/p2_matmul_3reg/solution.toy", "tests/exercises/p2_matmul_3reg/over_cycles.toy",
                             "tests/exercises/p2_matmul_3reg/never_terminates.toy"}) {
        INFO(file);
        int code = -1;
        json j = grade_json("p2_matmul_3reg", file, "gradescope", code);
        REQUIRE(j.is_object());
        REQUIRE(j["score"].is_number());
        REQUIRE(j["max_score"].is_number());
        CHECK(j["max_score"] == 12);
        CHECK(j["score"].get<double>() <= j["max_score"].get<double>());
        CHECK(j["output"].is_string());
        REQUIRE(j["tests"].is_array());
        REQUIRE(j["tests"].size() == 4);
        double sum = 0;
        const std::set<std::string> visibilities = {"hidden", "after_due_date", "after_published", "visible"};
        for (const auto& t : j["tests"]) {
            REQUIRE(t["name"].is_string());
            REQUIRE(t["score"].is_number());
            REQUIRE(t["max_score"].is_number());
            CHECK(t["score"].get<double>() <= t["max_score"].get<double>());
            CHECK(t["score"].get<double>() >= 0);
            REQUIRE(t["status"].is_string());
            CHECK((t["status"] == "passed" || t["status"] == "failed"));
            CHECK(t["status"] == (t["score"] == t["max_score"] ? "passed" : "failed"));
            CHECK(t["output"].is_string());
            REQUIRE(t["visibility"].is_string());
            CHECK(visibilities.count(t["visibility"].get<std::string>()) == 1);
            sum += t["score"].get<double>();
        }
        CHECK(sum == j["score"].get<double>());
        // The spec's two hidden cases are shown only once the grades are published.
        CHECK(j["tests"][0]["visibility"] == "visible");
        CHECK(j["tests"][2]["visibility"] == "after_published");
        CHECK(j["tests"][3]["visibility"] == "after_published");
    }
}

TEST_CASE("grade: a bad exercise spec exits 2 with the located error in exercise.toy", "[grade]") {
    TempDir dir("bad_specs");
    const std::string solution = (kRoot / "programs/exercises/p1_c00/solution.toy").string();
    struct Bad {
        std::string name, spec, message;
    };
    const std::vector<Bad> bad = {
        {"no_title", std::string(kSpecBase) + "test visible\n",
         "exercise.toy:1:1: error: an exercise spec needs a title: add 'exercise \"Problem 1: ...\"' at the top"},
        {"no_test", std::string("exercise \"x\"\n") + kSpecBase,
         "exercise.toy:1:1: error: an exercise spec needs at least one test case"},
        {"expect", std::string("exercise \"x\"\n") + kSpecBase + "expect cycles = 7\ntest visible\n",
         "exercise.toy:7:1: error: an exercise spec states its figures as targets with points: write 'target' instead of 'expect'"},
        {"unknown_counter", std::string("exercise \"x\"\n") + kSpecBase + "target cylces <= 7\ntest visible\n",
         "exercise.toy:7:8: error: unknown counter 'cylces'; did you mean 'cycles'?"},
        {"instructions", std::string("exercise \"x\"\n") + kSpecBase + "LOAD a[0][0], R0\ntest visible\n",
         "exercise.toy:7:1: error: an exercise spec holds no instructions"},
        {"unknown_setting", std::string("exercise \"x\"\nparam n = 2\n") + kSpecBase + "test visible m = 3\n",
         "exercise.toy:8:18: error: test 1: unknown parameter 'm'"},
        {"bad_at_one_test", "exercise \"x\"\nparam n = 2\nregisters 3\ninput a[n]\ntest visible\ntest hidden n = 0\n",
         "exercise.toy:4:9: error: array dimension must be at least 1, not 0 (with test 2's settings: n=0)"},
        {"open_title", "exercise \"x\n" + std::string(kSpecBase) + "test visible\n",
         "exercise.toy:1:10: error: this title is never closed"},
        {"zero_limit", std::string("exercise \"x\"\n") + kSpecBase + "limit steps = 0\ntest visible\n",
         "exercise.toy:7:15: error: the step limit must be at least 1, not 0"},
    };
    for (const auto& b : bad) {
        INFO(b.name);
        dir.write(b.name + "/exercise.toy", b.spec);
        auto r = run_cli({"grade", (dir.path / b.name).string(), solution});
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        INFO(r.err);
        CHECK(r.err.find(b.message) != std::string::npos);
        CHECK(r.err.find("toysim: error: the exercise itself is bad (") != std::string::npos);
    }
    // No such exercise, and a missing solution: exit 2 too.
    auto none = run_cli({"grade", "p1_c0", solution});
    CHECK(none.code == 2);
    CHECK(none.err.find("no exercise 'p1_c0': it is neither a folder holding exercise.toy nor one of the exercises in") != std::string::npos);
    CHECK(none.err.find("did you mean 'p1_c00'?") != std::string::npos);
    auto folder = run_cli({"grade", dir.path.string(), solution});
    CHECK(folder.code == 2);
    auto missing = run_cli({"grade", "p1_c00", (dir.path / "nothing.toy").string()});
    CHECK(missing.code == 2);
    CHECK(missing.err.find("cannot open") != std::string::npos);
}

TEST_CASE("grade: a solution declares nothing, and a program declares no exercise", "[grade][language]") {
    auto solution = [](const std::string& text) {
        try {
            parse(std::make_shared<SourceFile>("sol.toy", text), ParseMode::Solution);
        } catch (const ToyError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    for (const char* word : {"check", "expect", "registers", "workers", "param", "input", "output", "scratch", "cost", "gpu", "test",
                             "exercise", "allow", "target", "limit"}) {
        INFO(word);
        CHECK(solution(std::string("LOAD a[0][0], R0\n") + word + " x\n").find(
                  std::string("a solution may not declare '") + word + "': the exercise fixes the checks") != std::string::npos);
    }
    // Even inside a loop.
    CHECK(solution("for i in 0..2 {\n  check c = matmul(a, b)\n}\n").find("a solution may not declare 'check'") != std::string::npos);
    CHECK(solution("let k = 2\ntile t[2]\nfor i in 0..k {\n  LOAD a[i], R0\n}\n") == "accepted");

    auto program = [](const std::string& text) {
        try {
            parse(std::make_shared<SourceFile>("p.toy", text));
        } catch (const ToyError& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    CHECK(program("registers 3\ntarget cycles <= 7\n") == "'target' belongs in an exercise spec (exercise.toy)");
    CHECK(program("exercise \"P1\"\nregisters 3\n") == "'exercise' belongs in an exercise spec (exercise.toy)");
    CHECK(program("registers 3\ntest hidden seed = 2\n") == "'test' belongs in an exercise spec (exercise.toy)");
    CHECK(program("registers 3\nparam n = 2\ntest n = 4\n") == "accepted");

    // A student's let or tile cannot take a name the spec declares.
    TempDir dir("clash");
    auto sol = dir.write("sol.toy", "let a = 2\nLOAD b[0][0], R0\n");
    auto r = run_cli({"grade", "p1_c00", sol.string()});
    CHECK(r.code == 1);
    CHECK(r.out.find("sol.toy:1:5: error: 'a' is already declared by the exercise; choose another name") != std::string::npos);
}

TEST_CASE("grade: a test's seed is the stream of every random fill, and 0 is what run fills", "[grade]") {
    Program p = build("registers 1\ninput x[4]\ninput y[3] = random(5, 2, 3)\noutput z[1]\nLOAD x[0], R0\nSTORE R0, z[0]\n");
    RunResult plain = run(p);
    RunOptions zero;
    RunOptions other;
    other.fill_stream = 7;
    RunResult same = run_to_verdict(p, zero), seeded = run_to_verdict(p, other);
    CHECK(same.array_values(p, 0) == plain.array_values(p, 0));
    CHECK(same.array_values(p, 1) == plain.array_values(p, 1));
    CHECK(seeded.array_values(p, 0) != plain.array_values(p, 0));
    CHECK(seeded.array_values(p, 1) != plain.array_values(p, 1));
    for (double v : seeded.array_values(p, 1)) CHECK((v >= 2 && v < 3));  // the range still holds
}

TEST_CASE("grade: exercise list and exercise start", "[grade]") {
    auto list = run_cli({"exercise", "list"});
    CHECK(list.code == 0);
    bool found = false;
    for (const auto& line : split_lines(list.out))
        if (line.rfind("p2_matmul_3reg ", 0) == 0) {
            found = true;
            CHECK(line.find("Problem 2: the full 2×2 matmul on three registers") != std::string::npos);
            CHECK(line.substr(line.size() - 21) == "    2       2      12");
        }
    CHECK(found);
    json j = json::parse(run_cli({"exercise", "list", "--format", "json"}).out);
    bool in_json = false;
    for (const auto& e : j["exercises"])
        if (e["name"] == "quiz_inner_product_6reg") {
            in_json = true;
            CHECK(e["max_score"] == 20);
            CHECK(e["hidden_tests"] == 2);
            CHECK(e["error"].is_null());
        }
    CHECK(in_json);

    TempDir dir("start");
    const fs::path work = dir.path / "my work";
    auto start = run_cli({"exercise", "start", "p2_matmul_3reg", work.string()});
    INFO(start.err);
    CHECK(start.code == 0);
    const fs::path file = work / "p2_matmul_3reg.toy";
    CHECK(read_text(file) == read_text(kRoot / "programs/exercises/p2_matmul_3reg/starter.toy"));
    CHECK(start.out.find("toysim grade p2_matmul_3reg " + file.string()) != std::string::npos);
    // Never over a student's work.
    std::ofstream(file) << "# my work\n";
    auto again = run_cli({"exercise", "start", "p2_matmul_3reg", work.string()});
    CHECK(again.code == 2);
    CHECK(again.err.find("already exists; not overwriting it") != std::string::npos);
    CHECK(read_text(file) == "# my work\n");
    auto unknown = run_cli({"exercise", "start", "p9", work.string()});
    CHECK(unknown.code == 2);
}
