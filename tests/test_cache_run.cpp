// The modeled cache in a run (sim/exec/dram_cache.h): the `cache` line and --cache, the byte
// layout the cache sees, its counters per array, and what parallel workers sharing one cache
// do to DRAM traffic. Every figure here is derived by hand in the comment above it.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "sim/analysis/cost.h"
#include "sim/check/run.h"
#include "sim/exec/cached_count.h"
#include "sim/exec/cache.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

// A copy loop: x[i] -> y[i], 16 fp32 elements each, so each array is 64 bytes, one 64-byte
// line of two 32-byte sectors; y starts at byte 256 (every array starts on a 256-byte boundary).
std::string copy_program(const std::string& cache) {
    return "registers 3\ncache " + cache +
           "\nparam n = 16\ninput x[n]\noutput y[n]\n"
           "for i in 0..n {\n    LOAD x[i], R0\n    STORE R0, y[i]\n}\n";
}


}  // namespace

TEST_CASE("cache run: each line belongs to the array that brought it in, write-backs included", "[cache]") {
    // Two owners in a direct-mapped cache of two 64-byte lines: owner 1 dirties line 0, owner
    // 0 reads line 2 (the same set) and evicts it: the 32 bytes written back are owner 1's.
    Cache c(CacheConfig{128, 64, 32, 1}, 2);
    c.write(0, 4, 1);
    c.read(128, 4, 0);
    CHECK(c.stats(1).dram_write_bytes == 32);
    CHECK(c.stats(1).write_misses == 1);
    CHECK(c.stats(0).dram_write_bytes == 0);
    CHECK(c.stats(0).read_misses == 1);
    CHECK(c.stats(0).dram_read_bytes == 32);
    c.write(64 + 32, 8, 1);  // line 1, set 1: dirty, still there at the end
    CHECK(c.dirty_bytes(1) == 32);
    CHECK(c.dirty_bytes(0) == 0);
    CHECK(c.dirty_bytes() == 32);
}

TEST_CASE("cache run: arrays start on 256-byte boundaries, at the element size --dtype gives", "[cache]") {
    Program p = build("registers 1\ncache size=1KiB line=64 ways=2\ninput a[10]\ninput b[100]\noutput c[3]\nLOAD a[0], R0\nSTORE R0, c[0]\n");
    // fp32: a is 40 bytes (one 256-byte block), b 400 (two), c from 768.
    CHECK(cache_layout(p).base == std::vector<std::uint64_t>{0, 256, 768});
    p.cache->element_bytes = 2;  // fp16: b is 200 bytes, one block
    CHECK(cache_layout(p).base == std::vector<std::uint64_t>{0, 256, 512});
    // 3 heads, head after head: a is 3 × 20 bytes, b 3 × 200 (three blocks), c from 1024.
    CacheLayout heads = cache_layout(p, 3);
    CHECK(heads.base == std::vector<std::uint64_t>{0, 256, 1024});
    CHECK(heads.head_bytes == std::vector<std::uint64_t>{20, 200, 6});
    // Per-array element sizes (a GPU run keeps some arrays in fp32).
    CHECK(cache_layout(p, 1, {4, 2, 4}).base == std::vector<std::uint64_t>{0, 256, 512});
}

TEST_CASE("cache run: a direct-mapped cache where two arrays share every set thrashes", "[cache]") {
    // 256 bytes, 64-byte lines, one way: 4 sets. x's line (bytes 0..63) and y's (256..319) are
    // both line-number ≡ 0 mod 4: every LOAD x[i] evicts y's line and every STORE y[i] evicts
    // x's. So all 32 accesses miss; each read miss fills one 32-byte sector (512 bytes for
    // x); each of y's 16 write misses dirties a sector that the next LOAD evicts, except the
    // last, which stays dirty: 15 × 32 = 480 bytes written back, 32 left.
    RunResult r = run(build(copy_program("size=256B line=64 sector=32 ways=1 index=mod")));
    REQUIRE(r.counters.cache);
    const CacheCounts& c = *r.counters.cache;
    CHECK(c.arrays[0].misses() == 16);
    CHECK(c.arrays[0].hits() == 0);
    CHECK(c.arrays[0].dram_read_bytes == 512);
    CHECK(c.arrays[1].misses() == 16);
    CHECK(c.arrays[1].dram_write_bytes == 480);
    CHECK(c.dirty_bytes == 32);
    CHECK(c.total.dram_read_bytes == 512);
    CHECK(c.total.dram_write_bytes == 480);
}

TEST_CASE("cache run: with two ways the same loop misses once per sector", "[cache]") {
    // Two ways keep x's and y's lines side by side: x misses on elements 0 and 8 (its two
    // sectors) and hits on the other 14; y's writes likewise; nothing is evicted, so nothing
    // is written back and y's 64 bytes are dirty at the end.
    RunResult r = run(build(copy_program("size=256B line=64 sector=32 ways=2 index=mod")));
    const CacheCounts& c = *r.counters.cache;
    CHECK(c.arrays[0].misses() == 2);
    CHECK(c.arrays[0].hits() == 14);
    CHECK(c.arrays[0].dram_read_bytes == 64);
    CHECK(c.arrays[1].misses() == 2);
    CHECK(c.arrays[1].hits() == 14);
    CHECK(c.total.dram_write_bytes == 0);
    CHECK(c.dirty_bytes == 64);
    // The counter table's names, as expect lines and JSON read them.
    CHECK(r.counters.value({CounterKind::CacheHits}).count == 28);
    CHECK(r.counters.value({CounterKind::CacheMisses}).count == 4);
    CHECK(r.counters.value({CounterKind::CacheHitRate}).ratio == Approx(28.0 / 32.0));
    CHECK(r.counters.value({CounterKind::ArrayCacheDramRead, Op::LOAD, 0}).count == 64);
    CHECK(r.counters.value({CounterKind::CacheDirty}).count == 64);
}

TEST_CASE("cache run: workers that walk K and V together share one cache, as a GPU's blocks do", "[cache][parallel]") {
    // FA2 at n = 256, d = 16, 16×16 tiles, fp32: K and V are 16 KiB each, the cache 8 KiB. On
    // one worker each of the Tr = 16 Q tiles streams all of K and V through the cache, which
    // cannot hold them (LRU on a cyclic stream larger than the cache misses every time): K is
    // read from DRAM 16 times, 16 × 16 KiB = 262,144 bytes. On 16 workers, interleaved one
    // instruction at a time, all 16 Q tiles load K tile j within a few instructions of each
    // other: one miss serves all 16, and K is read once, 16,384 bytes (compulsory).
    auto k_bytes = [](std::int64_t workers) {
        Program p = build_file("programs/attention/fa2.toy", {{"n", 256}, {"d", 16}, {"Br", 16}, {"Bc", 16}, {"P", workers}});
        p.cache = make_program_cache("size=8KiB line=64 sector=32 ways=4 index=mod", Loc{});
        RunResult r = run(p);
        REQUIRE(r.checks_ok());
        int k = p.find_array("K"), v = p.find_array("V");
        CHECK(r.counters.cache->arrays[static_cast<size_t>(v)].dram_read_bytes == r.counters.cache->arrays[static_cast<size_t>(k)].dram_read_bytes);
        return r.counters.cache->arrays[static_cast<size_t>(k)].dram_read_bytes;
    };
    CHECK(k_bytes(1) == 16 * 16384);
    CHECK(k_bytes(16) == 16384);
}

TEST_CASE("cache run: no cache line and no --cache leave every output as it was", "[cache]") {
    CliResult plain = run_cli({"run", "programs/p1_c00.toy", "--format", "json"});
    REQUIRE(plain.code == 0);
    auto j = nlohmann::json::parse(plain.out);
    CHECK_FALSE(j["counters"].contains("l2"));
    CliResult cached = run_cli({"run", "programs/p1_c00.toy", "--format", "json", "--cache", "size=256B line=64 ways=1"});
    REQUIRE(cached.code == 0);
    auto c = nlohmann::json::parse(cached.out);
    CHECK(c["counters"]["l2"]["cache"]["size_bytes"] == 256);
    // Everything else is the same run.
    c["counters"].erase("l2");
    CHECK(c["counters"] == j["counters"]);
}

TEST_CASE("cache run: bad caches are located errors, exit 2", "[cache][errors]") {
    CliResult r = run_cli({"run", "programs/p1_c00.toy", "--cache", "h10"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/p1_c00.toy: error: --cache h10: unknown cache preset 'h10'; did you mean 'h100'?\n");
    r = run_cli({"run", "programs/p1_c00.toy", "--cache", "size=1KiB sector=256"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/p1_c00.toy: error: --cache size=1KiB sector=256: a sector of 256 bytes is larger than the line (128 bytes)\n");
    r = run_cli({"run", "programs/p1_c00.toy", "--dtype", "fp16"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--dtype fp16: the element size is what the modeled cache sees; give a cache too") != std::string::npos);
    // In the program: the caret under the word at fault.
    try {
        build("registers 3\ncache size=1KiB wayz=2\ninput x\noutput y[1]\nLOAD x, R0\nSTORE R0, y[0]\n");
        FAIL("no error");
    } catch (const ToyError& e) {
        CHECK(std::string(e.what()) == "unknown cache setting 'wayz'; did you mean 'ways'?");
        CHECK(e.loc().line == 2);
        CHECK(e.loc().col == 17);
        CHECK(e.loc().len == 4);
    }
    CHECK_THROWS_WITH(build("registers 3\ncache\ninput x\n"), "expected a cache preset or settings, such as h100 or size=1KiB line=64 ways=2, got end of line");
    CHECK_THROWS_WITH(build("registers 3\ncache h100\ncache a100\ninput x\n"), "the program's cache is already declared (at line 2)");
    CHECK_THROWS_WITH(build("registers 3\ncache size=1000B\ninput x\n"),
                      "a cache of 1000 bytes is not a whole number of sets of 16 ways × 128-byte lines (2048 bytes each)");
    CHECK_THROWS_WITH(build("registers 3\ninput x\noutput y[1]\nexpect l2_hits = 3\nLOAD x, R0\nSTORE R0, y[0]\n"),
                      "l2_hits is counted by a modeled cache, and this program declares none: add a `cache` line (cache h100, or "
                      "cache size=1KiB line=64 ways=2)");
}

TEST_CASE("cache run: expect lines check the cache's counters", "[cache]") {
    Program p = build(copy_program("size=256B line=64 sector=32 ways=2 index=mod") +
                      "expect l2_misses = 4\nexpect dram_bytes_read(x) = 64\nexpect dram_bytes_written(y) = 0\nexpect l2_dirty_bytes = 64\n");
    RunResult r = run(p);
    CHECK(r.expects_ok());
    CHECK(r.expects.size() == 4);
}

TEST_CASE("cache run: the stepper does not run the cache and says so", "[cache][step]") {
    std::string file = (std::filesystem::temp_directory_path() / "toysim-test-cache-step.toy").string();
    {
        std::ofstream out(file);
        out << copy_program("size=256B line=64 ways=1");
    }
    CliResult s = run_cli_input({"step", file}, "print l2_hits\nbreak l2_misses >= 3\nquit\n");
    std::filesystem::remove(file);
    CHECK(s.err.find("note: the stepper does not run the program's cache (line 2)") != std::string::npos);
    const std::string said = s.out + s.err;
    CHECK(said.find("l2_hits is counted by the modeled cache, which the stepper does not run; `toysim run` and `toysim trace` count it") !=
          std::string::npos);
    CHECK(said.find("l2_misses is counted by the modeled cache") != std::string::npos);
}

TEST_CASE("cache run: a trace counts the cache too, and its summary says what reached DRAM", "[cache]") {
    // Two elements: x[0] and x[1] share a sector, but each access evicts the other array's
    // line, so all four miss (two 32-byte fills of x); y[0]'s sector is written back when
    // LOAD x[1] evicts it, and y[1]'s stays dirty.
    CliResult r = run_cli({"trace", "programs/cache_conflict.toy", "--set", "n=2"});
    REQUIRE(r.code == 0);
    CHECK(r.out.find("; L2 sectors: 0 hits, 4 misses; DRAM past the L2: 64 bytes read, 32 written back, 32 dirty at the end\n") !=
          std::string::npos);
}

TEST_CASE("cache run: the count-only walk sees what the machine's run sees, for every shipped program", "[cache][programs]") {
    // A small cache, so that the order of every access shows in the counts: any difference in
    // the walk's order, its tile shapes (which set cycles, and so the workers' order) or its
    // slices changes hits, misses or bytes.
    int compared = 0;
    for (const std::string& path : shipped_programs()) {
        auto tree = std::make_shared<const ast::Program>(parse(SourceFile::read(std::string(TOYSIM_SOURCE_DIR) + "/" + path)));
        for (const ParamSettings& settings : test_settings(*tree)) {
            Program p = compile(tree, settings);
            if (estimate_work(p).instructions > 200'000 || p.dram_size > 1'000'000) continue;
            if (p.devices) continue;  // a cache does not model several devices (refused: test_devices.cpp)
            p.cache = make_program_cache("size=1KiB line=64 sector=32 ways=2 index=mod", Loc{});
            INFO(path << " " << p.params.size());
            RunResult r = run_to_verdict(p);
            if (r.fault) continue;  // a program that faults on purpose (none today)
            CachedCount walked = count_through_cache(p);
            CHECK(walked.counts.total == r.counters.cache->total);
            CHECK(walked.counts.arrays == r.counters.cache->arrays);
            CHECK(walked.counts.dirty_bytes == r.counters.cache->dirty_bytes);
            CHECK(walked.cycles == r.counters.cycles);
            CHECK(walked.instructions == r.counters.instructions);
            // What the timing pass reads: per opcode, the run's instructions and units of work.
            REQUIRE(walked.launch_work.size() == 1);
            CHECK(walked.launch_work[0].instructions == r.counters.by_opcode);
            CHECK(walked.launch_work[0].work == r.counters.work_by_opcode);
            ++compared;
        }
    }
    CHECK(compared >= 40);
}
