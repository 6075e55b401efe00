// Every shipped exercise (programs/exercises/NAME/): its reference solution scores full marks in
// every output format, and is the shipped program it comes from, instruction for instruction;
// its starter parses as a solution and does not; and the known-wrong solutions of
// tests/exercises/NAME/ score exactly what the table below says, with the message that says why.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/front/parser.h"
#include "sim/grade/grade.h"
#include "sim/lower/disasm.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kRoot = TOYSIM_SOURCE_DIR;

// Every folder under programs/exercises, by name.
std::vector<std::string> exercise_folders() {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(kRoot / "programs/exercises"))
        if (e.is_directory()) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

std::string folder(const std::string& name) { return "programs/exercises/" + name; }

// Each exercise's reference solution is this shipped program's code. Its lets (Br, Bc, or
// P7's register names) become the program's parameters of the same names.
const std::map<std::string, std::string> kShipped = {
    {"p1_c00", "programs/p1_c00.toy"},
    {"p2_matmul_3reg", "programs/p2_matmul_inner_3reg.toy"},
    {"p3_outer_product_6reg", "programs/p3_matmul_outer_6reg.toy"},
    {"quiz_inner_product_6reg", "programs/quiz_matmul_inner_6reg.toy"},
    {"p4_softmax_3pass", "programs/p4_softmax_3pass.toy"},
    {"p5_online_softmax", "programs/p5_online_softmax.toy"},
    {"p7_online_attention", "programs/attention/p7_online_attention.toy"},
    {"welford_variance", "programs/attention/welford_variance.toy"},
    {"fa2_forward", "programs/attention/fa2.toy"},
    {"fa2_tiles", "programs/attention/fa2.toy"},
    {"fa2_backward", "programs/attention/fa2_backward.toy"},
    {"fa2_parallel", "programs/attention/fa2.toy"},
    {"split_kv_decoding", "programs/attention/flash_decoding.toy"},
    {"ring_attention", "programs/devices/ring_attention.toy"},
};

json grade_json(const std::string& exercise, const std::string& solution, const std::string& format, int& code) {
    auto r = run_cli({"grade", folder(exercise), solution, "--format", format});
    INFO(r.err);
    REQUIRE(r.escaped.empty());
    code = r.code;
    return json::parse(r.out);
}

// The program `toysim grade` runs, at the spec's default parameters: the spec's declarations,
// then the solution's lets and tiles, then its code (as programs/exercises/README.md says).
Program graded_program(const std::string& exercise) {
    auto spec = std::make_shared<ast::Program>(
        parse(SourceFile::read((kRoot / folder(exercise) / "exercise.toy").string()), ParseMode::Exercise));
    ast::Program solution = parse(SourceFile::read((kRoot / folder(exercise) / "solution.toy").string()), ParseMode::Solution);
    for (auto& p : solution.params) spec->params.push_back(std::move(p));
    for (auto& t : solution.tiles) spec->tiles.push_back(std::move(t));
    spec->body = std::move(solution.body);
    spec->source = solution.source;
    spec->exercise.reset();
    return compile(spec);
}

bool same_affine(const Affine& a, const Affine& b) {
    if (a.constant != b.constant || a.terms != b.terms) return false;
    for (int t = 0; t < a.terms; ++t)
        if (a.var[t] != b.var[t] || a.coef[t] != b.coef[t]) return false;
    return true;
}

// One known-wrong solution: its score, each test case's verdict, and what the message of one
// test case (1-based) says. The file is in tests/exercises/EXERCISE/, except "starter.toy": the
// exercise's own starter, when it is a correct program that misses a target.
struct Wrong {
    std::string exercise, file;
    std::int64_t score;
    std::vector<std::string> verdicts;
    int test;
    std::vector<std::string> message;
    std::string path() const {
        return file == "starter.toy" ? folder(exercise) + "/starter.toy" : "tests/exercises/" + exercise + "/" + file;
    }
};

const std::vector<std::string> kAllWrong(5, "wrong"), kAllPartial(5, "partial"), kAllRejected(5, "rejected"),
    kAllFault(5, "fault");

const std::vector<Wrong> kWrong = {
    // Problem 4: 25 points, 5 tests of 2 + reads, writes and cycles.
    {"p4_softmax_3pass", "unsafe.toy", 0, kAllWrong, 1, {"wrong result: check out = softmax(x) failed: out[0] = ", "nan"}},
    {"p4_softmax_3pass", "materialized.toy", 10, kAllPartial, 1,
     {"missed the target reads <= 12: 16 reads", "missed the target writes <= 4: 8 writes",
      "missed the target cycles <= 43: 50 cycles"}},
    {"p4_softmax_3pass", "four_registers.toy", 0, kAllRejected, 2,
     {"four_registers.toy:13:13: error: register R3 is beyond the register file (3 registers: R0..R2)"}},
    {"p4_softmax_3pass", "hang.toy", 0, kAllFault, 1, {"hang.toy:2:1: error: did not finish within 260 steps"}},
    {"p4_softmax_3pass", "writes_input.toy", 0, kAllRejected, 1, {"STORE cannot write to input array 'x'"}},
    // Problem 5: 25 points, 5 tests of 2 + reads, writes and cycles.
    {"p5_online_softmax", "no_rescale.toy", 5, {"wrong", "wrong", "passed", "wrong", "wrong"}, 2,
     {"wrong result: check out = softmax(x) failed: out[0] = "}},
    {"p5_online_softmax", "five_registers.toy", 0, kAllRejected, 1,
     {"five_registers.toy:13:13: error: register R4 is beyond the register file (4 registers: R0..R3)"}},
    {"p5_online_softmax", "three_pass.toy", 20, kAllPartial, 5, {"missed the target reads <= 2000: 3000 reads"}},
    {"p5_online_softmax", "hang.toy", 0, kAllFault, 5, {"did not finish within 40100 steps"}},
    {"p5_online_softmax", "writes_input.toy", 0, kAllRejected, 1, {"writes_input.toy:15:15: error: STORE cannot write to input array 'x'"}},
    // Problem 7: 25 points, 5 tests of 2 + reads(K), reads(V) and writes(O).
    {"p7_online_attention", "no_numerator_rescale.toy", 5, {"wrong", "wrong", "passed", "wrong", "wrong"}, 1,
     {"wrong result: check O = attention(Q, K, V) failed: O[2][0] = "}},
    {"p7_online_attention", "two_passes_over_k.toy", 20, kAllPartial, 1, {"missed the target reads(K) <= 64: 128 reads(K)"}},
    {"p7_online_attention", "hang.toy", 0, kAllFault, 1, {"did not finish within 2504 steps"}},
    {"p7_online_attention", "writes_input.toy", 0, kAllRejected, 1, {"STORE cannot write to input array 'Q'"}},
    {"p7_online_attention", "index_past_file.toy", 0, kAllFault, 1,
     {"register index 13 is out of range for the register file (13 registers: R0..R12) (at i = 0, c = 0)"}},
    // Welford: 15 points, 5 tests of 2 + reads(x).
    {"welford_variance", "population_variance.toy", 0, kAllWrong, 1,
     {"check var = variance(x) failed: var[0] = 0.07330187808640", "but the reference is 0.08377357495588"}},
    {"welford_variance", "textbook.toy", 0, kAllWrong, 5, {"check var = variance(x) failed"}},
    {"welford_variance", "two_pass.toy", 10, kAllPartial, 1, {"missed the target reads(x) <= 8: 16 reads(x)"}},
    {"welford_variance", "hang.toy", 0, kAllFault, 1, {"did not finish within 260 steps"}},
    {"welford_variance", "writes_input.toy", 0, kAllRejected, 1, {"STORE cannot write to input array 'x'"}},
    // FlashAttention-2 forward: 30 points, 5 tests of 2 + reads(Q), reads(K), reads(V), writes(O).
    // Test 4 (n = 5) is one tile: no rescale is needed, and everything fits.
    {"fa2_forward", "no_output_rescale.toy", 6, {"wrong", "wrong", "wrong", "passed", "wrong"}, 1,
     {"wrong result: check O = attention(Q, K, V) failed"}},
    {"fa2_forward", "whole_in_sram.toy", 6, {"rejected", "rejected", "rejected", "passed", "rejected"}, 1,
     {"error: tile 'k' does not fit in the register file: the tiles need 1536 registers", "but the machine has 1088"}},
    {"fa2_forward", "fa1_order.toy", 22, {"partial", "partial", "partial", "passed", "partial"}, 1,
     {"missed the target reads(Q) <= 512: 2048 reads(Q); missed the target writes(O) <= 512: 2048 writes(O)"}},
    {"fa2_forward", "hang.toy", 0, kAllFault, 1, {"did not finish within 89320 steps"}},
    {"fa2_forward", "writes_input.toy", 0, kAllRejected, 1, {"STORE cannot write to input array 'Q'"}},
    // FlashAttention-2's block sizes: 25 points, 5 tests of 1 + reads(Q), writes(O) and the optimum (2).
    {"fa2_tiles", "square_tiles.toy", 15, kAllPartial, 1,
     {"not the optimum: reads 4608 (Br=16 Bc=16); the least of the 13 choices that are correct and within the targets: 2560 (Br=32 Bc=1)"}},
    {"fa2_tiles", "bc4.toy", 20, {"passed", "passed", "passed", "passed", "rejected"}, 5,
     {"bc4.toy:16:6: error: tile 'l' does not fit in the register file: the tiles need 2656 registers"}},
    {"fa2_tiles", "no_lets.toy", 15, kAllPartial, 1, {"the exercise asks for your choice of Br: declare it with `let Br = ...`"}},
    // FlashAttention-2 backward: 20 points, 5 tests of 2 + reads(K) and reads(V).
    {"fa2_backward", "no_delta.toy", 0, kAllWrong, 1, {"wrong result: check dQ = attention_dq(Q, K, V, dO) failed"}},
    {"fa2_backward", "no_d_trick.toy", 10, kAllPartial, 1,
     {"missed the target reads(K) <= 128: 256 reads(K); missed the target reads(V) <= 128: 256 reads(V)"}},
    {"fa2_backward", "hang.toy", 0, kAllFault, 1, {"did not finish within 45160 steps"}},
    {"fa2_backward", "writes_input.toy", 0, kAllRejected, 1, {"STORE cannot write to input array 'O'"}},
    // FlashAttention-2 on 8 workers: 40 points, 5 tests of 2 + cycles (2), reads(Q), reads(K),
    // reads(V), writes(O). The starter is the serial FA2: correct, its makespan all its work.
    {"fa2_parallel", "starter.toy", 30, kAllPartial, 1, {"missed the target cycles <= 22992: 91968 cycles"}},
    // Test 2 (n = 20) has two K/V tiles: FA1's parallel loop (from the second) runs once, no race.
    {"fa2_parallel", "kv_loop_parallel_fa1.toy", 4, {"fault", "partial", "fault", "fault", "fault"}, 1,
     {"kv_loop_parallel_fa1.toy:70:18: error: data race on O[0][0]: iteration j = 1 of the parallel loop at line 42 writes it "
      "here, and iteration j = 3 read it at line 56 (LOAD O[i*Br..i*Br+Br][0..d], o); iterations of a parallel loop may "
      "share an element only by all reading it or all adding to it with STORE_ADD"}},
    {"fa2_parallel", "kv_loop_parallel_fa2.toy", 0, kAllRejected, 1,
     {"kv_loop_parallel_fa2.toy:30:13: error: tile 'm' is read before this iteration of the parallel loop over j (line 25) "
      "surely writes it"}},
    {"fa2_parallel", "declares_workers.toy", 0, kAllRejected, 1,
     {"declares_workers.toy:2:1: error: a solution may not declare 'workers': the exercise fixes the checks, tolerances, targets "
      "and the machine"}},
    // Split-KV decoding: 35 points, 5 tests of 2 + cycles (2), reads(K), reads(V), writes(O).
    // The starter is FA2 on one query: correct, on one worker.
    {"split_kv_decoding", "starter.toy", 25, kAllPartial, 1, {"missed the target cycles <= 314: 1378 cycles"}},
    {"split_kv_decoding", "serial_splits.toy", 25, kAllPartial, 1, {"missed the target cycles <= 314: 1616 cycles"}},
    {"split_kv_decoding", "no_rescale_merge.toy", 0, kAllWrong, 1, {"wrong result: check O = attention(Q, K, V) failed: O[0][0] = "}},
    {"split_kv_decoding", "shared_partial_row.toy", 0, kAllFault, 1,
     {"shared_partial_row.toy:46:14: error: data race on Opart[0][0]: iteration sp = 1 of the parallel loop at line 24 writes it "
      "here, and iteration sp = 0 wrote it at line 46 (STORE o, Opart[0..1][0..d]); iterations of a parallel loop may share an "
      "element only by all reading it or all adding to it with STORE_ADD"}},
    // Ring attention: 35 points, 5 tests of 2 + sent (2), cycles (2), reads(K). The starter sends
    // each block D times and waits for each transfer before computing; on one device its SEND
    // has no link (test 5).
    {"ring_attention", "starter.toy", 12, {"partial", "partial", "partial", "partial", "fault"}, 1,
     {"missed the target sent <= 768: 1024 sent; missed the target cycles <= 4880: 5288 cycles"}},
    {"ring_attention", "receive_first.toy", 7, {"fault", "fault", "fault", "fault", "passed"}, 1,
     {"receive_first.toy:22:9: error: deadlock: every device still running waits for a message that no device will send: device 0 "
      "at line 22 (RECV @r-1, KB[r*N..r*N+N][0..d]) waits for device 3; device 1 at line 22"}},
};

}  // namespace

TEST_CASE("exercises: every folder holds a spec, a starter and a solution, and has hidden tests", "[exercises]") {
    auto names = exercise_folders();
    REQUIRE(names.size() >= 10);
    for (const auto& name : names) {
        INFO(name);
        for (const char* file : {"exercise.toy", "starter.toy", "solution.toy"}) CHECK(fs::is_regular_file(kRoot / folder(name) / file));
        auto ex = grade::load_exercise(SourceFile::read((kRoot / folder(name) / "exercise.toy").string()), name);
        CHECK(!ex.title.empty());
        CHECK(ex.visible_tests() >= 1);
        CHECK(ex.hidden_tests() >= 1);
        // A hidden test is other data than every visible one: another seed or other sizes.
        for (const auto& hidden : ex.tests) {
            if (!hidden.hidden) continue;
            for (const auto& visible : ex.tests)
                if (!visible.hidden) CHECK((hidden.seed != visible.seed || hidden.settings != visible.settings));
        }
    }
}

TEST_CASE("exercises: every reference solution scores full marks, in every format", "[exercises]") {
    for (const auto& name : exercise_folders()) {
        DYNAMIC_SECTION(name) {
            const std::string solution = folder(name) + "/solution.toy";
            auto table = run_cli({"grade", folder(name), solution});
            INFO(table.out << table.err);
            REQUIRE(table.escaped.empty());
            CHECK(table.code == 0);
            CHECK(table.err.empty());

            int code = -1;
            json j = grade_json(name, solution, "json", code);
            CHECK(code == 0);
            CHECK(j["exercise"] == name);
            CHECK(j["ok"] == true);
            REQUIRE(j["max_score"].get<std::int64_t>() > 0);
            CHECK(j["score"] == j["max_score"]);
            CHECK(table.out.find(fmt::format("score: {} / {}", j["score"].get<std::int64_t>(), j["max_score"].get<std::int64_t>())) !=
                  std::string::npos);
            for (const auto& t : j["tests"]) {
                INFO(t["name"]);
                CHECK(t["verdict"] == "passed");
                CHECK(t["score"] == t["max_score"]);
                CHECK(t["message"] == "");
                for (const auto& target : t["targets"]) CHECK(target["met"] == true);
            }

            json gs = grade_json(name, solution, "gradescope", code);
            CHECK(code == 0);
            CHECK(gs["score"] == j["max_score"]);
            CHECK(gs["max_score"] == j["max_score"]);
            REQUIRE(gs["tests"].size() == j["tests"].size());
            for (const auto& t : gs["tests"]) {
                CHECK(t["status"] == "passed");
                CHECK(t["score"] == t["max_score"]);
                for (const char* key : {"name", "output", "visibility"}) CHECK(t.contains(key));
            }
        }
    }
}

TEST_CASE("exercises: each reference solution is its shipped program's code", "[exercises]") {
    auto names = exercise_folders();
    for (const auto& name : names) CHECK(kShipped.count(name) == 1);  // a new exercise gets a row above
    for (const auto& [name, shipped_path] : kShipped) {
        DYNAMIC_SECTION(name) {
            REQUIRE(std::find(names.begin(), names.end(), name) != names.end());
            Program graded = graded_program(name);
            // The shipped program at the same parameters; the solution's lets (Br = 16) set
            // the shipped program's parameters of the same names.
            auto shipped_tree = std::make_shared<const ast::Program>(parse_file((kRoot / shipped_path).string()));
            ParamSettings settings;
            for (const auto& p : shipped_tree->params) {
                if (p.derived) continue;
                for (const auto& [graded_name, value] : graded.params)
                    if (graded_name == p.name) settings.emplace_back(p.name, value);
            }
            INFO(shipped_path);
            Program shipped = compile(shipped_tree, settings);
            // The spec's machine is what the shipped program needs: the same register file; in an
            // exercise that asks for the best block sizes under a budget (fa2_tiles), at least it.
            if (name == "fa2_tiles") CHECK(graded.registers >= shipped.registers);
            else CHECK(graded.registers == shipped.registers);
            CHECK(graded.tile_elements == shipped.tile_elements);
            REQUIRE(graded.code.size() == shipped.code.size());
            std::vector<std::int64_t> zeros(kMaxLoopDepth, 0);
            int instructions = 0;
            for (std::int32_t pc = 0; pc < static_cast<std::int32_t>(graded.code.size()); ++pc) {
                INFO("pc " << pc);
                const Inst& a = graded.code[static_cast<size_t>(pc)];
                const Inst& b = shipped.code[static_cast<size_t>(pc)];
                REQUIRE(a.code == b.code);
                if (a.code == Code::LoopBegin) {
                    const LoopInfo& la = graded.loops[static_cast<size_t>(a.loop)];
                    const LoopInfo& lb = shipped.loops[static_cast<size_t>(b.loop)];
                    CHECK(la.var == lb.var);
                    CHECK(same_affine(la.lo, lb.lo));
                    CHECK(same_affine(la.hi, lb.hi));
                }
                if (!graded.origin[static_cast<size_t>(pc)]) {
                    CHECK(!shipped.origin[static_cast<size_t>(pc)]);
                    continue;
                }
                ++instructions;
                // As written, and evaluated (addresses, register numbers) at the loops' start.
                CHECK(render_instruction(graded, pc) == render_instruction(shipped, pc));
                CHECK(render_instruction(graded, pc, zeros.data()) == render_instruction(shipped, pc, zeros.data()));
            }
            CHECK(instructions > 0);
        }
    }
}

TEST_CASE("exercises: every starter parses as a solution and does not score full marks", "[exercises]") {
    for (const auto& name : exercise_folders()) {
        DYNAMIC_SECTION(name) {
            const std::string starter = folder(name) + "/starter.toy";
            CHECK_NOTHROW(parse(SourceFile::read((kRoot / starter).string()), ParseMode::Solution));
            int code = -1;
            json j = grade_json(name, starter, "json", code);
            CHECK(code == 1);
            CHECK(j["score"].get<std::int64_t>() < j["max_score"].get<std::int64_t>());
            // It compiles and runs: the student starts from a wrong answer, not an error.
            for (const auto& t : j["tests"]) CHECK(t["verdict"] != "rejected");
        }
    }
}

TEST_CASE("exercises: exercise list names every folder", "[exercises]") {
    auto r = run_cli({"exercise", "list"});
    INFO(r.out << r.err);
    CHECK(r.code == 0);
    std::set<std::string> listed;
    for (const auto& line : split_lines(r.out)) listed.insert(line.substr(0, line.find(' ')));
    for (const auto& name : exercise_folders()) CHECK(listed.count(name) == 1);
}

TEST_CASE("exercises: every known-wrong solution of these exercises is in the table", "[exercises]") {
    // The folders of tests/exercises whose exercises the table covers (the others have their
    // own tests): every file there has its row.
    std::set<std::string> exercises, covered;
    for (const auto& w : kWrong) {
        exercises.insert(w.exercise);
        covered.insert(w.exercise + "/" + w.file);
    }
    for (const auto& name : exercises) {
        REQUIRE(fs::is_directory(kRoot / "tests/exercises" / name));
        for (const auto& f : fs::directory_iterator(kRoot / "tests/exercises" / name)) {
            const std::string key = name + "/" + f.path().filename().string();
            INFO(key);
            CHECK(covered.count(key) == 1);
        }
    }
}

TEST_CASE("exercises: known-wrong solutions score what they deserve, and say why", "[exercises]") {
    for (const auto& w : kWrong) {
        DYNAMIC_SECTION(w.exercise << "/" << w.file) {
            const std::string solution = w.path();
            int code = -1;
            json j = grade_json(w.exercise, solution, "json", code);
            INFO(j.dump(2));
            CHECK(code == 1);
            CHECK(j["ok"] == false);
            CHECK(j["score"] == w.score);
            REQUIRE(j["tests"].size() == w.verdicts.size());
            std::vector<std::string> verdicts;
            for (const auto& t : j["tests"]) verdicts.push_back(t["verdict"]);
            CHECK(verdicts == w.verdicts);
            const std::string message = j["tests"][static_cast<size_t>(w.test - 1)]["message"];
            for (const auto& part : w.message) {
                INFO(part);
                CHECK(message.find(part) != std::string::npos);
            }
            // Gradescope agrees, and no case that lost points says it passed.
            json gs = grade_json(w.exercise, solution, "gradescope", code);
            CHECK(gs["score"] == w.score);
            for (size_t i = 0; i < w.verdicts.size(); ++i)
                CHECK((gs["tests"][i]["status"] == "passed") == (w.verdicts[i] == "passed"));
        }
    }
}
