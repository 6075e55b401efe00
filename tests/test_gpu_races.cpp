// A racy program never reaches a GPU: every GPU path (gpu run with any kernel choice, gpu cuda,
// diff live, --exercise) refuses it with the message `toysim run` gives, and exit 2. The
// refusal comes before anything looks for a GPU, so these run on any machine.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gpu/runtime/run.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

namespace fs = std::filesystem;

// The corpus's racy programs: those whose expect-error header (what `toysim run` says) is a
// data race. (parallel_race_table_too_large.toy is proven race-free: too large for the CPU's
// check, it may run on a GPU.)
std::vector<std::string> racy_programs() {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(fs::path(TOYSIM_SOURCE_DIR) / "tests/bad")) {
        std::ifstream in(entry.path());
        std::string header;
        std::getline(in, header);
        if (header.find("error: data race on ") != std::string::npos) files.push_back("tests/bad/" + entry.path().filename().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

TEST_CASE("gpu run, gpu cuda and diff refuse a racy program with the message of toysim run", "[gpu][race]") {
    const std::vector<std::string> files = racy_programs();
    REQUIRE(files.size() >= 6);  // read/write, write/write, add then read, a grid, a triangular grid, FA1's outer loop
    for (const std::string& file : files) {
        INFO(file);
        const CliResult cpu = run_cli({"run", file});
        REQUIRE(cpu.code == 2);
        REQUIRE(cpu.err.find("error: data race on ") != std::string::npos);
        for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
                 {"gpu", "run", file},
                 {"gpu", "run", file, "--kernel", "generated"},
                 {"gpu", "run", file, "--kernel", "generated", "--dtype", "fp16", "--heads", "4"},
                 {"diff", file},
             }) {
            INFO(args[0] + " " + args[1]);
            const CliResult gpu = run_cli(args);
            CHECK(gpu.code == 2);
            CHECK(gpu.err == cpu.err);
            CHECK(gpu.out.empty());
        }
        // The CUDA is printed for reading; the verdict is the same refusal.
        const CliResult cuda = run_cli({"gpu", "cuda", file});
        CHECK(cuda.code == 2);
        CHECK(cuda.err == cpu.err);
        CHECK(cuda.out.find("__global__") != std::string::npos);
    }
}

TEST_CASE("both kinds of race are refused before a GPU run: read then write, and write then write", "[gpu][race]") {
    const CliResult read_write = run_cli({"gpu", "run", "tests/bad/parallel_race_read_then_write.toy"});
    CHECK(read_write.code == 2);
    CHECK(read_write.err ==
          "tests/bad/parallel_race_read_then_write.toy:7:15: error: data race on x[1]: iteration i = 1 of the parallel loop at line 5 writes it "
          "here, and iteration i = 0 read it at line 6 (LOAD x[i+1], R0); iterations of a parallel loop may share an element only by all "
          "reading it or all adding to it with STORE_ADD\n"
          "    7 |     STORE R0, x[i]\n"
          "      |               ^^^^\n");
    const CliResult write_write = run_cli({"gpu", "run", "tests/bad/parallel_race_write_write.toy", "--kernel", "generated"});
    CHECK(write_write.code == 2);
    CHECK(write_write.err.find("tests/bad/parallel_race_write_write.toy:6:15: error: data race on y[0]: iteration i = 1 of the parallel loop "
                               "at line 4 writes it here, and iteration i = 0 wrote it at line 6 (STORE R0, y[0])") == 0);
}

TEST_CASE("a racy exercise solution is refused by gpu run --exercise", "[gpu][race]") {
    const CliResult r = run_cli({"gpu", "run", "tests/exercises/fa2_parallel/kv_loop_parallel_fa1.toy", "--exercise", "fa2_parallel"});
    CHECK(r.code == 2);
    CHECK(r.err.find("tests/exercises/fa2_parallel/kv_loop_parallel_fa1.toy:") == 0);
    CHECK(r.err.find(": error: data race on O[") != std::string::npos);
}

TEST_CASE("refuse_races lets STORE_ADD share elements and checks only what it cannot prove", "[gpu][race]") {
    // A split-K sum: every iteration adds to y[0]. Adds commute: no race, on the CPU or the GPU.
    Program split_k = build(
        "registers 1\ninput x[8]\noutput y[1]\nparallel for s in 0..4 {\n    LOAD x[2*s], R0\n    STORE_ADD R0, y[0]\n"
        "    LOAD x[2*s+1], R0\n    STORE_ADD R0, y[0]\n}\n");
    CHECK_NOTHROW(gpu::refuse_races(split_k));
    // The same sum with STORE: a write/write race the subscripts cannot rule out, found by the run.
    Program racy = build("registers 1\ninput x[8]\noutput y[1]\nparallel for s in 0..4 {\n    LOAD x[2*s], R0\n    STORE R0, y[0]\n}\n");
    try {
        gpu::refuse_races(racy);
        FAIL("not refused");
    } catch (const ToyError& e) {
        CHECK(e.kind() == ErrorKind::Race);
        CHECK(e.loc().line == 6);
        CHECK(std::string(e.what()).find("data race on y[0]: iteration s = 1 of the parallel loop at line 4 writes it here, and iteration s = 0 "
                                         "wrote it at line 6") == 0);
    }
    // FA2's backward adds to dQ from every K/V tile's iteration: allowed, as on the CPU.
    Program backward = build_file("programs/attention/fa2_backward.toy", {{"n", 64}, {"d", 16}, {"Br", 16}, {"Bc", 16}});
    CHECK_NOTHROW(gpu::refuse_races(backward));
    // Too large for the CPU's race check, but proven race-free: the GPU may run it.
    CHECK_NOTHROW(gpu::refuse_races(build_file("tests/bad/parallel_race_table_too_large.toy")));
}

TEST_CASE("a race check too long for a run is refused unless forced, and says why it runs", "[gpu][race]") {
    // Not proven race-free (every iteration writes y[0]), and at this n the check would take hours.
    Program long_check = build(
        "param n = 1000000\nregisters 1\ninput x[4]\noutput y[1]\nparallel for s in 0..4 {\n    for k in 0..n {\n        for m in 0..n {\n"
        "            LOAD x[s], R0\n        }\n    }\n    STORE R0, y[0]\n}\n");
    try {
        gpu::refuse_races(long_check);
        FAIL("not refused");
    } catch (const ToyError& e) {
        CHECK(e.kind() == ErrorKind::TooLongToRun);
        CHECK(std::string(e.what()).find("the parallel loop at line 5 is not proven race-free from its subscripts, so the simulator checks every "
                                         "access before the GPU runs it; this run would take about ") == 0);
    }
}
