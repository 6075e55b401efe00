// Printers and the command line: table formats, the JSON contract of `run`, `compare`,
// `trace` in every format, and exit codes. The CLI runs in-process with captured streams.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/app.h"
#include "sim/print/report.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {



// A .toy file in the temp directory, removed when the test ends.
struct TempProgram {
    std::filesystem::path path;
    TempProgram(const std::string& name, const std::string& text)
        : path(std::filesystem::temp_directory_path() / ("toysim_test_report_" + name + ".toy")) {
        std::ofstream(path) << text;
    }
    ~TempProgram() { std::filesystem::remove(path); }
};


Table sample_table() {
    Table t;
    t.header = {"name", "n", "note"};
    t.right_aligned = {false, true, false};
    t.rows = {
        {"a,b", "1", "say \"hi\""},
        {"x|y", "−3", "·"},
        {"ab·c", "22", ""},
    };
    return t;
}

}  // namespace

TEST_CASE("render_table: plain table pads by display width and right-aligns", "[report]") {
    // Widths in columns: name 4 ("ab·c" is 4 code points), n 2 ("−3"), note 8.
    // The last column is not padded and trailing spaces are trimmed.
    CHECK(render_table(sample_table(), Format::Table) ==
          "name   n  note\n"
          "----  --  --------\n"
          "a,b    1  say \"hi\"\n"
          "x|y   −3  ·\n"
          "ab·c  22\n");
}

TEST_CASE("render_table: a right-aligned last column is padded on the left", "[report]") {
    Table t{{"k", "v"}, {false, true}, {{"α", "1"}, {"ββ", "−10"}}};
    CHECK(render_table(t, Format::Table) ==
          "k     v\n"
          "--  ---\n"
          "α     1\n"
          "ββ  −10\n");
}

TEST_CASE("render_table: Markdown escapes | and marks right-aligned columns", "[report]") {
    CHECK(render_table(sample_table(), Format::Markdown) ==
          "| name | n | note |\n"
          "| --- | ---: | --- |\n"
          "| a,b | 1 | say \"hi\" |\n"
          "| x\\|y | −3 | · |\n"
          "| ab·c | 22 |  |\n");
}

TEST_CASE("render_table: CSV quotes commas and doubles quotes", "[report]") {
    CHECK(render_table(sample_table(), Format::Csv) ==
          "name,n,note\n"
          "\"a,b\",1,\"say \"\"hi\"\"\"\n"
          "x|y,−3,·\n"
          "ab·c,22,\n");
}

TEST_CASE("run --format json on P1: the contract fields", "[report]") {
    CliResult r = run_cli({"run", "programs/p1_c00.toy", "--format", "json"});
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("program") == "programs/p1_c00.toy");
    CHECK(j.at("params") == nlohmann::json::object());
    CHECK(j.at("machine").at("registers") == 3);

    const auto& k = j.at("counters");
    CHECK(k.at("cycles") == 7);
    CHECK(k.at("instructions") == 7);
    // Every opcode is present, zeros included.
    const std::map<std::string, int> by_opcode = {{"LOAD", 4}, {"STORE", 1}, {"STORE_ADD", 0}, {"MOV", 0}, {"MAC_Z", 1},
                                                  {"MAC", 1},  {"MAX", 0},   {"SUB", 0}, {"EXP", 0},
                                                  {"ADD", 0},  {"MUL", 0},   {"DIV", 0}, {"LOG", 0},
                                                  {"ROWMAX", 0}, {"ROWSUM", 0}, {"SET", 0}, {"CAUSAL", 0}};
    CHECK(k.at("by_opcode").size() == by_opcode.size());
    for (const auto& [op, n] : by_opcode) {
        INFO(op);
        REQUIRE(k.at("by_opcode").contains(op));
        CHECK(k.at("by_opcode").at(op) == n);
    }
    CHECK(k.at("dram").at("reads") == 4);
    CHECK(k.at("dram").at("writes") == 1);
    CHECK(k.at("dram").at("arrays").at("a").at("reads") == 2);
    CHECK(k.at("dram").at("arrays").at("a").at("writes") == 0);
    CHECK(k.at("dram").at("arrays").at("b").at("reads") == 2);
    CHECK(k.at("dram").at("arrays").at("c").at("reads") == 0);
    CHECK(k.at("dram").at("arrays").at("c").at("writes") == 1);
    CHECK(k.at("registers") == 3);  // registers used, as `expect registers` names it
    CHECK(k.at("dram").at("traffic") == 5);
    CHECK(k.at("compute") == 2);
    CHECK(j.at("ok") == true);
    CHECK(j.at("fault").is_null());

    CHECK(j.at("check").at("ok") == true);
    CHECK(j.at("check").at("max_abs_err") == 0);
    CHECK(j.at("expect").at("ok") == true);
}

namespace {
// counter -> the value in each program's column, from `compare --format csv`.
std::map<std::string, std::vector<std::string>> csv_columns(const std::string& csv) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& line : split_lines(csv)) {
        std::vector<std::string> cells;
        std::istringstream in(line);
        for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
        if (cells.empty()) continue;
        out[cells[0]] = std::vector<std::string>(cells.begin() + 1, cells.end());
    }
    return out;
}
}  // namespace

TEST_CASE("compare P2 and P3: the seed's cost table", "[report]") {
    CliResult r = run_cli({"compare", "programs/p2_matmul_inner_3reg.toy", "programs/p3_matmul_outer_6reg.toy", "--format", "csv"});
    REQUIRE(r.code == 0);
    auto cols = csv_columns(r.out);
    using V = std::vector<std::string>;
    CHECK(cols.at("counter") == V{"p2_matmul_inner_3reg", "p3_matmul_outer_6reg"});
    // Inner product | Outer product: registers 3 | 6, cycles 25 | 22, LOADs 13 | 10.
    CHECK(cols.at("register_file") == V{"3", "6"});
    CHECK(cols.at("registers") == V{"3", "6"});
    CHECK(cols.at("cycles") == V{"25", "22"});
    CHECK(cols.at("LOAD") == V{"13", "10"});
    CHECK(cols.at("MAC_Z") == V{"4", "4"});
    CHECK(cols.at("MAC") == V{"4", "4"});
    CHECK(cols.at("STORE") == V{"4", "4"});
    CHECK(cols.at("reads") == V{"13", "10"});
    CHECK(cols.at("writes") == V{"4", "4"});
    CHECK(cols.at("traffic") == V{"17", "14"});
    CHECK(cols.at("reads(a)") == V{"6", "4"});
    CHECK(cols.at("check") == V{"ok", "ok"});
    CHECK(cols.at("expect") == V{"ok", "ok"});
}

TEST_CASE("compare --format json gives one run record per program", "[report]") {
    CliResult r = run_cli({"compare", "programs/p2_matmul_inner_3reg.toy", "programs/p3_matmul_outer_6reg.toy", "--format", "json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    REQUIRE(j.size() == 2);
    CHECK(j[0].at("name") == "p2_matmul_inner_3reg");
    CHECK(j[0].at("counters").at("cycles") == 25);
    CHECK(j[0].at("counters").at("by_opcode").at("LOAD") == 13);
    CHECK(j[1].at("name") == "p3_matmul_outer_6reg");
    CHECK(j[1].at("counters").at("cycles") == 22);
    CHECK(j[1].at("counters").at("by_opcode").at("LOAD") == 10);
}

TEST_CASE("trace --format csv of P1: a header and 7 step rows", "[report]") {
    CliResult r = run_cli({"trace", "programs/p1_c00.toy", "--format", "csv"});
    REQUIRE(r.code == 0);
    auto lines = split_lines(r.out);
    REQUIRE(lines.size() == 8);
    CHECK(lines[0] == "Step,Instruction,R0,R1,R2");
    CHECK(lines[1] == "1,\"LOAD a[0][0], R0\",a00,,");
    CHECK(lines[3] == "3,\"MAC_Z R0, R1, R2\",a00,b00,a00·b00");
    CHECK(lines[6] == "6,\"MAC R0, R1, R2, R2\",a01,b10,c00");
    CHECK(lines[7] == "7,\"STORE R2, c[0][0]\",a01,b10,c00");
}

TEST_CASE("trace --format markdown of P1: 7 step rows and the legend", "[report]") {
    CliResult r = run_cli({"trace", "programs/p1_c00.toy", "--format", "markdown"});
    REQUIRE(r.code == 0);
    auto lines = split_lines(r.out);
    REQUIRE(lines.size() >= 9);
    CHECK(lines[0] == "| Step | Instruction | R0 | R1 | R2 |");
    CHECK(lines[1] == "| ---: | --- | --- | --- | --- |");
    CHECK(lines[2] == "| 1 | LOAD a[0][0], R0 | a00 |  |  |");
    CHECK(lines[8] == "| 7 | STORE R2, c[0][0] | a01 | b10 | c00 |");
    int step_rows = 0;
    for (const auto& line : lines)
        if (line.size() > 2 && line.rfind("| ", 0) == 0 && std::isdigit(static_cast<unsigned char>(line[2]))) ++step_rows;
    CHECK(step_rows == 7);
    CHECK(r.out.find("- c00 = a00·b00 + a01·b10\n") != std::string::npos);
}

TEST_CASE("trace --values numeric prints the numbers", "[report]") {
    TempProgram p("numeric", kP1Literal);
    CliResult r = run_cli({"trace", p.path.string(), "--values", "numeric", "--format", "csv"});
    REQUIRE(r.code == 0);
    auto lines = split_lines(r.out);
    REQUIRE(lines.size() == 8);
    CHECK(lines[1] == "1,\"LOAD a[0][0], R0\",1,,");
    CHECK(lines[2] == "2,\"LOAD b[0][0], R1\",1,5,");
    CHECK(lines[3] == "3,\"MAC_Z R0, R1, R2\",1,5,5");
    CHECK(lines[4] == "4,\"LOAD a[0][1], R0\",2,5,5");
    CHECK(lines[5] == "5,\"LOAD b[1][0], R1\",2,7,5");
    CHECK(lines[6] == "6,\"MAC R0, R1, R2, R2\",2,7,19");
    CHECK(lines[7] == "7,\"STORE R2, c[0][0]\",2,7,19");

    // On P1's random data every cell is still a number.
    CliResult random = run_cli({"trace", "programs/p1_c00.toy", "--values", "numeric", "--format", "csv"});
    REQUIRE(random.code == 0);
    auto rows = split_lines(random.out);
    REQUIRE(rows.size() == 8);
    const std::string& last = rows[7];
    std::string values = last.substr(last.rfind('"') + 2);  // "R0,R1,R2"
    std::istringstream in(values);
    int cells = 0;
    for (std::string cell; std::getline(in, cell, ',');) {
        INFO(cell);
        size_t used = 0;
        CHECK_NOTHROW(std::stod(cell, &used));
        CHECK(used == cell.size());
        ++cells;
    }
    CHECK(cells == 3);
}

TEST_CASE("trace --ditto prints \" for cells unchanged since the row above", "[report]") {
    CliResult r = run_cli({"trace", "programs/p1_c00.toy", "--ditto", "--format", "markdown"});
    REQUIRE(r.code == 0);
    auto lines = split_lines(r.out);
    REQUIRE(lines.size() >= 9);
    CHECK(lines[2] == "| 1 | LOAD a[0][0], R0 | a00 |  |  |");
    CHECK(lines[3] == "| 2 | LOAD b[0][0], R1 | \" | b00 |  |");
    CHECK(lines[4] == "| 3 | MAC_Z R0, R1, R2 | \" | \" | a00·b00 |");
    CHECK(lines[5] == "| 4 | LOAD a[0][1], R0 | a01 | \" | \" |");
    CHECK(lines[6] == "| 5 | LOAD b[1][0], R1 | \" | b10 | \" |");
    CHECK(lines[7] == "| 6 | MAC R0, R1, R2, R2 | \" | \" | c00 |");
    CHECK(lines[8] == "| 7 | STORE R2, c[0][0] | \" | \" | \" |");
}

TEST_CASE("trace --ditto: a register rewritten with the same value is shown, not dittoed", "[report]") {
    // R0 is loaded with x0 twice; the second LOAD writes R0, so its cell is spelled out.
    TempProgram p("ditto_same", "registers 1\ninput x[1]\nLOAD x[0], R0\nLOAD x[0], R0\n");
    CliResult r = run_cli({"trace", p.path.string(), "--ditto", "--format", "csv"});
    REQUIRE(r.code == 0);
    auto lines = split_lines(r.out);
    REQUIRE(lines.size() == 3);
    CHECK(lines[1] == "1,\"LOAD x[0], R0\",x0");
    CHECK(lines[2] == "2,\"LOAD x[0], R0\",x0");
}

TEST_CASE("a failing check exits with 1 and names the wrong element", "[report]") {
    // P1 on known data, but storing R1 (b10 = 7) instead of the sum in R2 (19).
    std::string wrong = kP1Literal;
    wrong.replace(wrong.find("STORE R2, c[0][0]"), 17, "STORE R1, c[0][0]");
    TempProgram p("wrong", wrong);
    CliResult r = run_cli({"run", p.path.string()});
    CHECK(r.code == 1);
    CHECK(r.out.find("FAILED: c[0][0] = 7 but the reference is 19") != std::string::npos);

    CliResult j = run_cli({"run", p.path.string(), "--format", "json"});
    CHECK(j.code == 1);
    auto json = nlohmann::json::parse(j.out);
    CHECK(json.at("check").at("ok") == false);
    CHECK(json.at("check").at("max_abs_err") == 12);
    CHECK(json.at("check").at("checks").at(0).at("first_wrong") == "c[0][0] = 7 but the reference is 19");

    // The right program on the same data exits with 0.
    TempProgram right("right", kP1Literal);
    CHECK(run_cli({"run", right.path.string()}).code == 0);
}

TEST_CASE("a mismatched expected figure exits with 1", "[report]") {
    std::string text = kP1Literal;
    text.insert(text.find("LOAD a[0][0]"), "expect cycles = 8\n");
    TempProgram p("expect", text);
    CliResult r = run_cli({"run", p.path.string(), "--format", "json"});
    CHECK(r.code == 1);
    auto json = nlohmann::json::parse(r.out);
    CHECK(json.at("check").at("ok") == true);
    CHECK(json.at("expect").at("ok") == false);
    CHECK(json.at("expect").at("figures").at(0).at("expected") == 8);
    CHECK(json.at("expect").at("figures").at(0).at("actual") == 7);
}

TEST_CASE("bad input exits with 2", "[report]") {
    CliResult missing = run_cli({"run", "programs/no_such_program.toy"});
    CHECK(missing.code == 2);
    CHECK(missing.err.find("cannot open 'programs/no_such_program.toy'") != std::string::npos);

    TempProgram p("typo", "registers 3\ninput x[2]\nMAK x[0], R0\n");
    CliResult typo = run_cli({"run", p.path.string()});
    CHECK(typo.code == 2);
    CHECK(typo.err.find("unknown opcode 'MAK'; did you mean 'MAC'?") != std::string::npos);
}

TEST_CASE("the version flag prints the version and the commit it was built from", "[report]") {
    CliResult r = run_cli({"--version"});
    CHECK(r.code == 0);
    CHECK(r.out == std::string("toysim 0.1.0 (commit ") + toysim::cli::kCommit + ")\n");
    // What `git describe --always --dirty` says (a hash, or a tag and a hash), or "unknown".
    const std::string commit = toysim::cli::kCommit;
    CHECK(!commit.empty());
    CHECK(commit.find_first_of(" ()\n") == std::string::npos);
}

TEST_CASE("trace --format json is the event stream: step 6 of Problem 1 as docs/counters.md shows it", "[report]") {
    CliResult r = run_cli({"trace", "programs/p1_c00.toy", "--format", "json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    auto expected = nlohmann::json::parse(R"({"step": 6, "cycle": 6, "cost": 1, "at": "programs/p1_c00.toy:29:1", "line": 29, "col": 1,
 "instruction": "MAC R0, R1, R2, R2",
 "writes": [{"register": "R2", "old": "a00·b00", "new": "c00"}],
 "dram": [],
 "counters": {"cycles": 1, "instructions": 1, "MAC": 1},
 "registers": {"R0": "a01", "R1": "b10", "R2": "c00"}})");
    CHECK(j.at("steps").at(5) == expected);
    // A LOAD: the element it read; a STORE: the element and value it wrote.
    const auto load_dram = nlohmann::json::parse(R"([{"array": "a", "access": "read", "index": [0, 0], "elements": 1}])");
    const auto store_dram = nlohmann::json::parse(R"([{"array": "c", "access": "write", "index": [0, 0], "elements": 1, "new": "c00"}])");
    const auto store_counters = nlohmann::json::parse(R"js({"cycles": 1, "instructions": 1, "STORE": 1, "writes": 1, "writes(c)": 1})js");
    CHECK(j.at("steps").at(0).at("dram") == load_dram);
    CHECK(j.at("steps").at(6).at("dram") == store_dram);
    CHECK(j.at("steps").at(6).at("counters") == store_counters);
    // The same counters object as run's JSON.
    CliResult run = run_cli({"run", "programs/p1_c00.toy", "--format", "json"});
    CHECK(j.at("counters") == nlohmann::json::parse(run.out).at("counters"));
    CHECK(j.at("complete") == true);
    CHECK(j.at("fault").is_null());
}

TEST_CASE("a tile trace's JSON shows each tile write old to new with its shapes", "[report]") {
    CliResult r = run_cli({"trace", "programs/attention/seed001_fa2_tiled.toy", "--format", "json"});
    REQUIRE(r.code == 0);
    auto j = nlohmann::json::parse(r.out);
    const auto& first = j.at("steps").at(0);  // the first LOAD of a Q tile: 2×4 from Q
    REQUIRE(first.at("writes").size() == 1);
    const auto never_written = nlohmann::json::parse("[0, 0]");
    CHECK(first.at("writes").at(0).at("old_shape") == never_written);
    CHECK(first.at("dram").at(0).at("access") == "read");
    CHECK(first.at("dram").at(0).at("elements") == first.at("counters").at("reads"));
}

TEST_CASE("expect takes <= and >=, and the run table shows the relation", "[report]") {
    TempProgram p("expect_relations", "registers 1\ninput x[2]\nexpect cycles <= 20\nexpect reads >= 2\nexpect writes <= 0\nLOAD x[0], R0\nLOAD x[1], R0\n");
    CliResult r = run_cli({"run", p.path.string()});
    CHECK(r.code == 0);
    CHECK(r.out.find("cycles              <= 20       2  ok") != std::string::npos);
    CHECK(r.out.find("writes               <= 0       0  ok") != std::string::npos);
    TempProgram q("expect_relations_fail", "registers 1\ninput x[2]\nexpect cycles <= 1\nLOAD x[0], R0\nLOAD x[1], R0\n");
    CliResult f = run_cli({"run", q.path.string(), "--format", "csv"});
    CHECK(f.code == 1);
    CHECK(f.out.find("expect cycles <= 1,MISMATCH") != std::string::npos);
}

TEST_CASE("a run-time fault still writes the run JSON with the fault as a field", "[report]") {
    TempProgram p("fault_json", "registers 1\ninput x[2]\noutput y[2]\nLOAD x[0], R0\nSTORE R0, y[0]\nLOAD y[1], R0\n");
    CliResult r = run_cli({"run", p.path.string(), "--format", "json"});
    CHECK(r.code == 2);
    auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("ok") == false);
    CHECK(j.at("fault").at("message") == "y[1] is read before anything was stored there (y is an output array)");
    CHECK(j.at("fault").at("line") == 6);
    CHECK(j.at("fault").at("col") == 6);
    CHECK(j.at("counters").at("instructions") == 3);  // the faulting LOAD counts as attempted
    CHECK(j.at("counters").at("dram").at("writes") == 1);
    CHECK(r.err.find(":6:6: error: y[1] is read before anything was stored there") != std::string::npos);
}

TEST_CASE("non-finite values fail a check and print as themselves", "[report]") {
    // y = x / z elementwise with z = [1, 0, 0]: 2/1, 1/0 = inf and 0/0 = NaN. Even against a
    // reference of the same infinity, a non-finite element is wrong.
    TempProgram p("non_finite", R"(registers 3
input x[3] = [2, 1, 0]
input z[3] = [1, 0, 0]
output y[3]
check y = copy(x) within 1e300
for i in 0..3 {
    LOAD x[i], R0
    LOAD z[i], R1
    DIV R0, R1, R2
    STORE R2, y[i]
}
)");
    CliResult r = run_cli({"run", p.path.string(), "--show", "y"});
    CHECK(r.code == 1);
    CHECK(r.out.find("FAILED: y[0] = 2 but the reference is 2") == std::string::npos);
    CHECK(r.out.find("FAILED: y[1] = inf but the reference is 1") != std::string::npos);
    CHECK(r.out.find("  2.0000     inf     nan") != std::string::npos);  // --show: "—" is only for never written
    CliResult j = run_cli({"run", p.path.string(), "--format", "json"});
    auto json = nlohmann::json::parse(j.out);
    CHECK(json.at("check").at("ok") == false);
    CHECK(json.at("check").at("max_abs_err").is_null());  // infinite
    TempProgram same("inf_against_inf", R"(registers 1
input x[1] = [inf]
output y[1]
check y = copy(x)
LOAD x[0], R0
STORE R0, y[0]
)");
    CliResult s = run_cli({"run", same.path.string()});
    CHECK(s.code == 1);
    CHECK(s.out.find("FAILED: y[0] = inf but the reference is inf") != std::string::npos);
}
