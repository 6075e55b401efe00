// The H100 results committed under traces/gpu/ (gpu/tools/record_results.sh) against today's
// simulator: its count-only pass must still give exactly the counts the kernels recorded, so a
// change to a program that breaks its kernel's mirror fails here, on any machine.
#include <catch2/catch.hpp>

#include <cmath>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "gpu/codegen/codegen.h"
#include "gpu/runtime/diff.h"
#include "sim/analysis/cost.h"
#include "sim/print/gpu_report.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

// Counts only: no walk through the modeled L2.
gpu::PredictOptions no_prediction() {
    gpu::PredictOptions o;
    o.predict = false;
    return o;
}


std::vector<std::filesystem::path> results(const std::string& suffix) {
    std::vector<std::filesystem::path> out;
    for (const auto& e : std::filesystem::directory_iterator(std::string(TOYSIM_SOURCE_DIR) + "/traces/gpu")) {
        const std::string name = e.path().filename().string();
        if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

// A committed run read back; a run of generated CUDA with the module its program makes at the
// run's parameters, as `toysim diff --gpu FILE` reads it.
gpu::GpuRunResult read_run(const std::string& text, const std::string& path) {
    const std::string program = nlohmann::json::parse(text).at("program").get<std::string>();
    return parse_gpu_run(text, path, [&](const ParamSettings& params, gpu::DType dtype) {
        return gpu::generate_cuda(build_file(program, params), dtype, true);
    });
}

}  // namespace

TEST_CASE("every committed GPU run still counts what the simulator counts", "[gpu]") {
    int runs = 0;
    for (const auto& suffix : {".cold.json", ".warm.json"})
        for (const auto& path : results(suffix)) {
            INFO(path.string());
            const std::string text = read_text(path);
            gpu::GpuRunResult r = read_run(text, path.string());
            const std::string program = nlohmann::json::parse(text).at("program").get<std::string>();
            ParamSettings settings(r.params.begin(), r.params.end());
            gpu::GpuDiff d = gpu::diff(build_file(program, settings), r, no_prediction());  // counts only: no walk
            for (const auto& a : d.arrays) {
                INFO(a.array);
                CHECK(a.counted_reads == a.simulated_reads);
                CHECK(a.counted_writes == a.simulated_writes);
            }
            CHECK(d.measured);  // CUPTI answered on the H100: no run was recorded without its hardware figures
            CHECK(d.dram_bytes > 0);
            ++runs;
        }
    // 15 runs (gpu/tools/record_results.sh) and matmul_outer at n = 1536, t = 32 and 16 (issue 34),
    // cold and warm; and the 7 cold runs the time model added (record_results.sh kernels).
    CHECK(runs == 41);
}

TEST_CASE("the committed runs of the tensor-core versions are fa2.toy's, at their own tiles", "[gpu]") {
    // Recorded through --kernel: the JSON names the version, the program is fa2.toy, and
    // toysim diff reads them against fa2.toy as it does fa2_forward's.
    int runs = 0;
    for (const std::string version : {"fa2_v1_wmma", "fa2_v2_mma", "fa2_v3_mma"})
        for (const std::string l2 : {"cold", "warm"}) {
            const std::string path = std::string(TOYSIM_SOURCE_DIR) + "/traces/gpu/" + version + ".n4096.fp16." + l2 + ".json";
            INFO(path);
            const std::string text = read_text(path);
            gpu::GpuRunResult r = parse_gpu_run(text, path);
            CHECK(r.kernel->name == version);
            CHECK(r.kernel->version_of == "fa2_forward");
            CHECK(nlohmann::json::parse(text).at("program").get<std::string>() == "programs/attention/fa2.toy");
            CHECK(r.traffic_equal());
            CHECK(r.check_passed());
            ParamSettings settings(r.params.begin(), r.params.end());
            gpu::GpuDiff d = gpu::diff(build_file("programs/attention/fa2.toy", settings), r, no_prediction());
            CHECK(d.counted_bytes == d.simulated_bytes);
            ++runs;
        }
    CHECK(runs == 6);
}

TEST_CASE("the committed sweeps still count what the simulator counts at every n", "[gpu]") {
    int points = 0;
    for (const auto& path : results(".sweep.json")) {
        INFO(path.string());
        auto rows = nlohmann::json::parse(read_text(path));
        REQUIRE(rows.size() == 7);
        for (const auto& row : rows) {
            ParamSettings settings;
            for (const auto& [name, value] : row.at("params").items()) settings.emplace_back(name, value.get<std::int64_t>());
            Program p = build_file(row.at("program").get<std::string>(), settings);
            std::vector<ArrayTraffic> sim = count_traffic(p);
            const auto heads = row.at("heads").get<std::uint64_t>();
            for (const auto& [array, figures] : row.at("arrays").items()) {
                INFO(array << " at n = " << row.at("swept").at("value"));
                const ArrayTraffic& t = sim[static_cast<size_t>(p.find_array(array))];
                CHECK(figures.at("simulated_reads").get<std::uint64_t>() == t.reads * heads);
                CHECK(figures.at("counted_reads").get<std::uint64_t>() == t.reads * heads);
                CHECK(figures.at("simulated_writes").get<std::uint64_t>() == t.writes * heads);
                CHECK(figures.at("counted_writes").get<std::uint64_t>() == t.writes * heads);
            }
            CHECK(row.at("measured").get<bool>());
            ++points;
        }
    }
    CHECK(points == 14);
}

TEST_CASE("the modeled L2 predicts the committed runs' DRAM bytes as it did when they were recorded", "[gpu][cache]") {
    // The prediction (the program walked through the h100 preset on each launch's recorded
    // resident blocks × 132 SMs, heads sharing it, each launch from a cold cache) for the committed cold
    // runs whose walk takes a second or less; a change in the cache model, the walk or the
    // layout shows here. The error against the H100 is in traces/gpu/prediction.md.
    struct Pinned {
        const char* run;
        double read, written;
        std::int64_t workers;
    };
    const Pinned pinned[] = {
        {"standard_tiled.n4096.fp16", 1099956224, 1034031104, 1056},  // each launch on its own workers (396, 1056, 396)
        {"fa1.n4096.fp32", 67633152, 2902016, 396},
        {"fa2.n4096.fp16", 25165824, 0, 396},
        {"fa2_v3_mma.n4096.fp16", 25165824, 0, 264},
        {"fa2_backward.n1024.fp16", 4227072, 0, 1056},  // the delta launch, 8 resident blocks of 32 registers a thread
        {"fa2_backward_no_d_trick.n1024.fp16", 5308416, 0, 264},  // 2 resident blocks of 105 KB of shared memory
    };
    for (const Pinned& p : pinned) {
        const std::string path = std::string(TOYSIM_SOURCE_DIR) + "/traces/gpu/" + p.run + ".cold.json";
        INFO(path);
        const std::string text = read_text(path);
        gpu::GpuRunResult r = parse_gpu_run(text, path);
        const std::string program = nlohmann::json::parse(text).at("program").get<std::string>();
        ParamSettings settings(r.params.begin(), r.params.end());
        gpu::GpuDiff d = gpu::diff(build_file(program, settings), r);
        REQUIRE(d.prediction);
        CHECK(d.prediction->cache == "h100");
        CHECK(d.prediction->workers == p.workers);
        CHECK(d.prediction->read_bytes == p.read);
        CHECK(d.prediction->write_bytes == p.written);
        double measured = 0;
        for (const auto& s : d.stages) measured += s.measured.dram_read_bytes;
        CHECK(std::abs(d.prediction->read_bytes - measured) <= 0.15 * measured);
    }
}

TEST_CASE("the modeled L2 predicts the DRAM writes of every committed cold run that writes 5 MB or more within 15%", "[gpu][cache]") {
    // Every traces/gpu/*.cold.json whose launches wrote at least 5 MB to DRAM while they ran
    // (below that, the 0.1–0.3 MB the flush leaves dirty is much of what is measured): the
    // prediction of the run, and of each such launch, within ±15% of the measured, as
    // traces/gpu/prediction.md shows them. Two runs are outside, for reasons the L2 model cannot
    // see; they stay listed only while they are still outside.
#ifdef TOYSIM_TEST_ASAN
    SKIP("a check of the model's numbers, a minute of walks here and ten under the sanitizers; tests/test_cache.cpp runs its code there");
#endif
    const std::map<std::string, std::string> outside = {
        // fa1.toy's loops run K/V tiles outside and every head's Q tiles inside, so O stays in
        // use to the end; the CUDA kernel's blocks each hold one K/V tile of one head, and a
        // head's O is done long before the launch ends. Walked in the kernel's order, the
        // model writes 6.3 MB (docs/gpu.md, "Where the model misses").
        {"fa1.n4096.fp32", "fa1.toy's loop order is not the kernel's"},
        // Every block of a head reads its K and V: the H100 keeps such a line in both halves of
        // its L2, and dirty lines leave twice as fast as under reads of one SM
        // (gpu/results/l2_writeback_h100.txt, "each line by all 264 blocks"); the model's one LRU
        // cache does not see the copies (gpu/README.md, "Writes").
        {"fa2.n4096.fp32", "reads shared by every block push dirty lines out sooner"},
    };
    int judged = 0, runs = 0;
    for (const auto& path : results(".cold.json")) {
        const std::string name = path.filename().string().substr(0, path.filename().string().size() - std::string(".cold.json").size());
        INFO(name);
        const std::string text = read_text(path);
        gpu::GpuRunResult r = read_run(text, path.string());
        double measured = 0;
        for (const auto& stage : r.launch.stages) measured += stage.measured.dram_write_bytes;
        ++runs;
        if (measured < 5e6) continue;
        const std::string program = nlohmann::json::parse(text).at("program").get<std::string>();
        ParamSettings settings(r.params.begin(), r.params.end());
        gpu::GpuDiff d = gpu::diff(build_file(program, settings), r);
        REQUIRE(d.prediction);
        const double error = (d.prediction->write_bytes - measured) / measured;
        INFO("predicted " << d.prediction->write_bytes << " bytes written, measured " << measured << ": " << 100 * error << "%");
        if (outside.count(name)) {
            CHECK(std::abs(error) > 0.15);  // once inside, take it off the list
            continue;
        }
        CHECK(std::abs(error) <= 0.15);
        for (const auto& s : d.stages) {
            if (s.measured.dram_write_bytes < 5e6) continue;
            INFO(s.stage << ": predicted " << *s.predicted_write_bytes << ", measured " << s.measured.dram_write_bytes);
            CHECK(std::abs(*s.predicted_write_bytes - s.measured.dram_write_bytes) <= 0.15 * s.measured.dram_write_bytes);
        }
        ++judged;
    }
    CHECK(runs == 24);  // matmul_outer at n = 1536 among them (1.1 and 1.4 MB written, not judged), and the 7 of the time model
    CHECK(judged == 4);  // softmax_3pass, softmax_online, standard_tiled at fp16 and fp32
}

TEST_CASE("toysim diff shows generated code's tiles in global memory, traffic that no array counts", "[gpu][diff]") {
    // tests/gpu/matvec_wide_tile.toy: a 32 × 4,096 tile of A a block, 524,800 bytes with its
    // padding, more than shared memory holds; the H200 run (16 heads, 512 blocks) moved 804.7 MB
    // to and from DRAM where the arrays count 276.9: the slices (268.7 MB, 60 MiB of L2) were
    // written back and read again, 2 × 268.7 beside the arrays' 276.9 (814.3 MB, 1.2% above).
    const CliResult r = run_cli({"diff", "tests/gpu/matvec_wide_tile.toy", "--gpu", "traces/gpu/matvec_wide_tile_generated.cold.h200.json"});
    REQUIRE(r.code == 0);
    // Its own row: the slices and their bound beside what DRAM moved beyond the arrays.
    CHECK(r.out.find("scratch: tiles the generated kernel keeps in global memory (shared memory cannot hold them), traffic that no array "
                     "counts; at most each slice written back and read again\n") != std::string::npos);
    CHECK(r.out.find("parallel for i (line 22)  a[32][4096]   0.52 MB     512  268.70 MB      537.40 MB                          527.78 MB\n") !=
          std::string::npos);
    CHECK(r.out.find("  - parallel for i (line 22): its tiles in global memory (268.7 MB over its 512 blocks) can add up to 537.4 MB to DRAM "
                     "beside the arrays' 276.9 MB counted where they outgrow the 60 MiB L2: DRAM moved 804.7 MB\n") != std::string::npos);
    const CliResult j = run_cli({"diff", "tests/gpu/matvec_wide_tile.toy", "--gpu", "traces/gpu/matvec_wide_tile_generated.cold.h200.json",
                                 "--format", "json"});
    REQUIRE(j.code == 0);
    const auto row = nlohmann::json::parse(j.out).at("scratch").at(0);
    CHECK(row.at("block_bytes").get<double>() == 524800);
    CHECK(row.at("blocks").get<std::int64_t>() == 512);
    CHECK(row.at("dram_bytes_at_most").get<double>() == 2.0 * 524800 * 512);
    // Not read as the arrays' own sectors and evictions.
    CHECK(r.out.find("whole 32-byte sectors") == std::string::npos);
    // On the h200 machine, no time: the model would leave the scratch traffic out (0.102 ms
    // predicted against 0.427 measured).
    CHECK(r.out.find("no predicted time: launch parallel for i (line 22) keeps tiles in global memory (shared memory cannot hold them): the "
                     "model times neither their traffic nor their waits\n") != std::string::npos);
    CHECK(r.out.find("predicted time on machine h200") == std::string::npos);
}
