// The count-only walk's runs of iterations (sim/exec/cached_count.h): a scalar loop's
// iterations counted at once must give exactly what walking them one instruction at a time
// gives (CachedCountOptions::element_walk), every counter, per array and per launch, and the
// cycles, whatever the cache, the heads and the workers.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "gpu/runtime/diff.h"
#include "sim/analysis/cost.h"
#include "sim/exec/cached_count.h"
#include "sim/grade/grade.h"
#include "sim/print/gpu_report.h"
#include "support/text.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

void check_same_counts(const CacheCounts& fast, const CacheCounts& slow) {
    CHECK(fast.total == slow.total);
    CHECK(fast.arrays == slow.arrays);
    CHECK(fast.dirty_bytes == slow.dirty_bytes);
}

// The walk with runs and the element walk, compared; the element walk's work and the runs'.
std::pair<std::uint64_t, std::uint64_t> compare_walks(const Program& p, CachedCountOptions options) {
    options.element_walk = false;
    const CachedCount fast = count_through_cache(p, options);
    options.element_walk = true;
    const CachedCount slow = count_through_cache(p, options);
    check_same_counts(fast.counts, slow.counts);
    REQUIRE(fast.launches.size() == slow.launches.size());
    for (size_t k = 0; k < fast.launches.size(); ++k) check_same_counts(fast.launches[k], slow.launches[k]);
    CHECK(fast.instructions == slow.instructions);
    CHECK(fast.cycles == slow.cycles);
    REQUIRE(fast.launch_work.size() == slow.launch_work.size());
    for (size_t k = 0; k < fast.launch_work.size(); ++k) {
        CHECK(fast.launch_work[k].instructions == slow.launch_work[k].instructions);
        CHECK(fast.launch_work[k].work == slow.launch_work[k].work);
        CHECK(fast.launch_work[k].blocks == slow.launch_work[k].blocks);
        CHECK(fast.launch_work[k].shared_elements == slow.launch_work[k].shared_elements);
        CHECK(fast.launch_work[k].makespan_cycles == slow.launch_work[k].makespan_cycles);
        CHECK(fast.launch_work[k].busy_cycles == slow.launch_work[k].busy_cycles);
    }
    return {slow.work, fast.work};
}

// Every shipped program (programs/**/*.toy) and every exercise's solution with its spec.
std::vector<std::pair<std::string, std::shared_ptr<const ast::Program>>> every_program() {
    std::vector<std::pair<std::string, std::shared_ptr<const ast::Program>>> out;
    for (const std::string& path : shipped_programs())
        out.emplace_back(path, std::make_shared<const ast::Program>(parse(SourceFile::read(std::string(TOYSIM_SOURCE_DIR) + "/" + path))));
    const std::filesystem::path exercises = std::filesystem::path(TOYSIM_SOURCE_DIR) / "programs" / "exercises";
    for (const auto& e : std::filesystem::directory_iterator(exercises))
        if (std::filesystem::exists(e.path() / "solution.toy"))
            out.emplace_back(e.path().filename().string(), grade::solution_program(SourceFile::read((e.path() / "exercise.toy").string()),
                                                                                   SourceFile::read((e.path() / "solution.toy").string())));
    return out;
}

std::string shown(const ParamSettings& settings) {
    std::string out;
    for (const auto& [name, value] : settings) out += " " + name + " = " + std::to_string(value);
    return out;
}

Program with_cache(Program p, const char* cache) {
    p.cache = make_program_cache(cache, Loc{});
    return p;
}

}  // namespace

TEST_CASE("cached runs: runs of iterations count exactly what the element walk counts, for every shipped program", "[cache][programs]") {
    // Small caches, so that evictions and the order of accesses show in the counts (one
    // direct-mapped, where a moving access often shares a set with a steady one; one with
    // 16-byte sectors and 32-byte fills), and the H100's; heads and workers interleave walkers.
    const char* caches[] = {"size=1KiB line=64 sector=32 ways=2 index=mod", "size=512B line=64 sector=16 ways=1 fill=32 index=mod", "h100"};
    struct Shape {
        std::int64_t heads, workers;
        bool cold_launches;
        int element_bytes;  // 0: the cache's
    };
    const Shape shapes[] = {{1, 0, false, 0}, {2, 3, true, 0}, {1, 5, false, 2}, {3, 0, true, 8}};
#ifdef TOYSIM_TEST_ASAN
    const std::uint64_t kLargest = 200'000;  // the same code at smaller sizes: a minute less under the sanitizers
#else
    const std::uint64_t kLargest = 2'000'000;
#endif
    int compared = 0, files = 0;
    std::uint64_t element_work = 0, run_work = 0;  // of the serial scalar loops, one head on the program's one worker
    auto scalar = [](const std::string& path) {
        return path.find("p4_") != std::string::npos || path.find("p5_") != std::string::npos || path.find("welford") != std::string::npos ||
               path.find("p2_") != std::string::npos || path.find("p3_") != std::string::npos;
    };
    for (const auto& [path, tree] : every_program()) {
        ++files;
        for (const ParamSettings& settings : test_settings(*tree)) {
            const Program p = compile(tree, settings);
            if (estimate_work(p).instructions > kLargest || p.dram_size > 10'000'000) continue;
            if (p.devices) continue;  // a cache does not model several devices (refused: test_devices.cpp)
            for (const char* cache : caches)
                for (const Shape& s : shapes) {
                    INFO(path << " at" << shown(settings) << ", cache " << cache << ", " << s.heads << " heads, " << s.workers
                              << " workers");
                    CachedCountOptions o;
                    o.heads = s.heads;
                    o.workers = s.workers;
                    o.cold_launches = s.cold_launches;
                    if (s.element_bytes) o.element_bytes.assign(p.arrays.size(), s.element_bytes);
                    const auto [slow, fast] = compare_walks(with_cache(p, cache), o);
                    if (scalar(path) && s.heads == 1 && s.workers == 0) {
                        element_work += slow;
                        run_work += fast;
                    }
                    ++compared;
                }
        }
    }
    CHECK(files >= 38);
    CHECK(compared >= 500);
    // The runs did happen: on the serial loops of the softmaxes' first passes, Welford's
    // variance and the seeds' matmuls the walk with them did well under half the element
    // walk's work. (Heads of serial code, and workers of a grid such as matmul_inner's or
    // matmul_outer's, take turns an instruction at a time, so no walker is alone for a run:
    // they walk as before.)
    CHECK(run_work * 2 < element_work);
}

TEST_CASE("cached runs: steady and moving accesses, sets shared or not, strides up, down and none", "[cache]") {
    // Each loop mixes accesses that stay in one sector for several iterations with ones that
    // move every iteration (a column, down a row backwards); in a direct-mapped cache of 4 sets
    // the moving ones often land in a steady one's set, so the run must stop and walk.
    const std::string program = "registers 4\nparam n = 24\ninput x[n][n]\ninput w[n]\noutput y[n][n]\noutput s[n]\n"
                                "for i in 0..n {\n"
                                "    for k in 0..n {\n"
                                "        LOAD x[i][k], R0\n        LOAD x[k][i], R1\n        LOAD w[0], R2\n"
                                "        MUL R0, R1, R3\n        STORE R3, y[i][n - 1 - k]\n        STORE_ADD R2, s[i]\n"
                                "    }\n"
                                "    for k in 0..n {\n        LOAD w[n - 1 - k], R0\n        STORE R0, y[k][i]\n    }\n"
                                // Inner loops without accesses: one whose trips change with k (no runs of k),
                                // one whose trips are i's (counted within runs of k).
                                "    for k in 0..n {\n        LOAD w[k], R0\n        for j in 0..k {\n            ADD R0, R0, R1\n        }\n"
                                "        for j in 0..i {\n            ADD R0, R0, R1\n        }\n        STORE R1, y[k][i]\n    }\n"
                                "}\n";
    for (const char* cache : {"size=256B line=64 sector=16 ways=1 index=mod", "size=512B line=32 sector=8 ways=2 fill=16 index=mod",
                              "size=2KiB line=128 sector=32 ways=4 index=hash", "h100"})
        for (int element_bytes : {4, 2, 16}) {
            INFO(cache << ", " << element_bytes << " bytes an element");
            CachedCountOptions o;
            o.element_bytes.assign(4, element_bytes);
            compare_walks(with_cache(build(program), cache), o);
            o.heads = 3;  // three walkers, interleaved one instruction at a time
            compare_walks(with_cache(build(program), cache), o);
        }
}

TEST_CASE("cached runs: workers of a grid with inner scalar loops, clocks apart", "[cache][parallel]") {
    // Rows of different lengths put the workers' clocks apart, so that one runs alone for a
    // while and then another's accesses come due in the middle of its loop.
    // Cycles of 0 and 3 put clocks level and apart in other ways; an inner loop between two
    // accesses moves the second by i's cycles.
    const std::string program = "registers 3\nworkers 3\nparam n = 40\ninput x[n][n]\noutput y[n]\n"
                                "parallel for i in 0..n {\n"
                                "    LOAD x[i][i], R2\n"
                                "    for k in 0..i {\n        LOAD x[i][k], R0\n        ADD R0, R2, R2\n    }\n"
                                "    for k in 0..n - i {\n        ADD R2, R2, R1\n    }\n"
                                "    for k in 0..3 {\n        STORE R2, y[i]\n        for j in 0..i {\n            ADD R2, R2, R1\n        }\n"
                                "        LOAD x[k][i], R0\n    }\n"
                                "}\n";
    for (const char* costs : {"", "cost ADD = 3\ncost STORE = 0\n", "cost LOAD = 0\n"})
        for (const char* cache : {"size=256B line=64 sector=16 ways=1 index=mod", "size=1KiB line=64 sector=32 ways=2 index=mod"})
            for (std::int64_t workers : {1, 2, 3, 7}) {
                INFO(costs << cache << ", " << workers << " workers");
                CachedCountOptions o;
                o.workers = workers;
                const Program p = with_cache(build(costs + program), cache);
                compare_walks(p, o);
                o.heads = 2;
                compare_walks(p, o);
            }
}

TEST_CASE("cached runs: a run ends before another worker's access comes due, inner loops' cycles counted", "[cache][parallel]") {
    // Worker 0 starts `delay` cycles late, so worker 1 walks alone until then: its runs must end
    // where worker 0's first access comes, and the access after the inner loop is the later
    // one. In a direct-mapped cache of eight sets, worker 1's steady x[1] is alone in set 1 and
    // its moving z column goes to sets 4, 6, 0 and 2; worker 0's x[0] is in set 0, so one of
    // worker 1's accesses out of order evicts it, or not, and changes the misses.
    for (int delay = 20; delay <= 80; ++delay) {
        const std::string program = "registers 3\nworkers 2\ncache size=512B line=64 sector=32 ways=1 index=mod\n"
                                    "param n = 8\ninput x[2][16]\ninput z[n][32]\n"
                                    "parallel for i in 0..2 {\n"
                                    "    LOAD x[i][0], R0\n"
                                    "    for j in 0..(1 - i) * " + std::to_string(delay) + " {\n        ADD R0, R0, R1\n    }\n"
                                    "    for k in 0..n {\n        LOAD x[i][k], R0\n        for j in 0..5 {\n            ADD R0, R0, R1\n        }\n"
                                    "        LOAD z[k][i], R2\n    }\n"
                                    "}\n";
        INFO("delay " << delay);
        compare_walks(build(program), {});
    }
}

TEST_CASE("cached runs: toysim diff predicts matmul_outer at n = 1536 on the H100", "[cache][gpu]") {
    // The shape the H100 run was refused at: 4,079,222,784 instructions, more than the 4·10^9
    // the walk once stopped at. The recorded run at n = 1024 stands in for the GPU side, taken
    // to n = 1536, t = 16 (the counts as the kernel makes them, no hardware figures).
#ifdef TOYSIM_TEST_ASAN
    SKIP("a minute under the sanitizers, for code the other tests here run at small sizes: the Release stage runs it");
#endif
    const std::string path = std::string(TOYSIM_SOURCE_DIR) + "/traces/gpu/matmul_outer.cold.json";
    gpu::GpuRunResult r = parse_gpu_run(read_text(path), path);
    const std::int64_t n = 1536, t = 16;
    r.params = {{"n", n}, {"t", t}};
    gpu::StageResult& stage = r.launch.stages.at(0);
    stage.reads = {static_cast<std::uint64_t>(n * n * n / t), static_cast<std::uint64_t>(n * n * n / t), 0};
    stage.writes = {0, 0, static_cast<std::uint64_t>(n * n)};
    stage.measured = {};
    r.measure = gpu::L2State::Off;
    const Program p = build_file("programs/matmul_outer.toy", {{"n", n}, {"t", t}});
    const gpu::GpuDiff d = gpu::diff(p, r);
    INFO(d.why_no_prediction);
    REQUIRE(d.prediction);
    CHECK(d.prediction->instructions == 4'079'222'784);
    // a and b (18.9 MB) fit in the 50 MiB L2: each is read from DRAM once.
    CHECK(d.prediction->read_bytes == 2.0 * n * n * 4);
}

TEST_CASE("cached runs: the walk's limit is work, and past it the walk stops and says why", "[cache]") {
    // matmul_outer at n = 64, t = 8: 3.3·10^5 instructions, in runs a third of the element walk's work or less.
    const Program p = with_cache(build_file("programs/matmul_outer.toy", {{"n", 64}, {"t", 8}}), "h100");
    CachedCountOptions o;
    const CachedCount whole = count_through_cache(p, o);
    CHECK(whole.instructions == 64 * 64 * 64 + 2 * 64 * 64 * 64 / 8 + 64 * 64);
    o.element_walk = true;
    CHECK(whole.work * 3 < count_through_cache(p, o).work);
    o.element_walk = false;
    o.max_work = whole.work / 2;
    CHECK_THROWS_AS(count_through_cache(p, o), WalkTooLong);
    CHECK_THROWS_WITH(count_through_cache(p, o), "the walk through the cache reached its limit, " + grouped(double(o.max_work)) +
                                                     " units of work (instructions and runs of loop iterations walked, cache lines "
                                                     "looked up: minutes of walking): lower the parameters or the heads");
    o.max_work = whole.work;  // exactly enough
    CHECK(count_through_cache(p, o).counts == whole.counts);
}

// Not run by default (toysim_tests "[.bench]"): the walk's time and work with runs and
// without, at a GPU's sizes, for the figures in docs/gpu.md ("A modeled L2") and the limit's
// calibration.
// TOYSIM_BENCH_PROGRAM (matmul_outer), TOYSIM_BENCH_SET ("n=1536,t=32"), TOYSIM_BENCH_HEADS,
// TOYSIM_BENCH_WORKERS (264), TOYSIM_BENCH_BYTES (an element's; 4), TOYSIM_BENCH_ELEMENT=0 for
// runs only.
TEST_CASE("walk timing: with and without runs", "[.bench]") {
    auto env = [](const char* name, const char* otherwise) {
        const char* v = std::getenv(name);
        return std::string(v ? v : otherwise);
    };
    const std::string path = env("TOYSIM_BENCH_PROGRAM", "programs/matmul_outer.toy");
    ParamSettings settings;
    std::stringstream sets(env("TOYSIM_BENCH_SET", "n=1536,t=32"));
    for (std::string set; std::getline(sets, set, ',');)
        settings.emplace_back(set.substr(0, set.find('=')), std::stoll(set.substr(set.find('=') + 1)));
    const Program p = with_cache(build_file(path, settings), "h100");
    CachedCountOptions o;
    o.heads = std::stoll(env("TOYSIM_BENCH_HEADS", "1"));
    o.workers = std::stoll(env("TOYSIM_BENCH_WORKERS", "264"));
    o.element_bytes.assign(p.arrays.size(), std::stoi(env("TOYSIM_BENCH_BYTES", "4")));
    for (bool element_walk : {false, true}) {
        if (element_walk && env("TOYSIM_BENCH_ELEMENT", "1") == "0") break;
        o.element_walk = element_walk;
        const auto start = std::chrono::steady_clock::now();
        const CachedCount c = count_through_cache(p, o);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("%s%s, %lld heads: %s, %.2f s, %.3g instructions/s, %.3g units of work (%.1f ns each), DRAM read %llu bytes\n",
                    path.c_str(), shown(settings).c_str(), static_cast<long long>(o.heads), element_walk ? "element walk" : "runs", seconds,
                    double(c.instructions) / seconds, double(c.work), seconds / double(c.work) * 1e9,
                    static_cast<unsigned long long>(c.counts.total.dram_read_bytes));
    }
}
