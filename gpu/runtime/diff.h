// `toysim diff`: the simulator's DRAM counts of a program beside what its GPU kernel counted
// and what the hardware measured (L2 and DRAM), array by array where that is sound.
//
// The simulated side comes from the count-only pass (count_traffic), so it answers at any n;
// the GPU side is a GpuRunResult, from a live run or read back from `toysim gpu run --format
// json`. Nothing here prints.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "gpu/runtime/run.h"
#include "sim/timing/predict.h"

namespace toysim::gpu {

struct ArrayDiff {
    std::string array;
    int element_bytes = 4;
    std::uint64_t simulated_reads = 0, simulated_writes = 0;  // elements, × heads
    std::uint64_t counted_reads = 0, counted_writes = 0;      // elements the kernel asked for
    // DRAM bytes of this array, where a launch reads (writes) only this array: otherwise the
    // launch's DRAM traffic is a total that no count can split.
    std::optional<double> dram_read_bytes, dram_write_bytes;
    std::int64_t footprint_bytes = 0;  // the array itself, all heads
    // What the modeled L2 predicts reaches DRAM for this array (GpuDiff::prediction).
    std::optional<double> predicted_read_bytes, predicted_write_bytes;
};

// A generated launch's tiles in global memory (shared memory could not hold them): traffic
// that no array counts.
struct ScratchDiff {
    std::string largest_tile;       // "a[32][4096]"
    double block_bytes = 0;         // a block's slice
    std::int64_t blocks = 0;        // the launch's blocks, all heads (0: its grid's bounds vary)
    double slice_bytes() const { return block_bytes * double(blocks); }
    // What the slices can add to DRAM where they outgrow the L2: each written back and read again.
    double bound_bytes() const { return 2 * slice_bytes(); }
};

struct StageDiff {
    std::string stage;
    double counted_read_bytes = 0, counted_write_bytes = 0;
    std::vector<std::string> reads, writes;  // the arrays it reads and writes
    MeasuredTraffic measured;
    std::optional<double> predicted_read_bytes, predicted_write_bytes;  // where the program's launches are known
    std::int64_t predicted_workers = 0;  // the workers its prediction ran on
    // Its time on the named machine (sim/timing/), where the launch is known and the machine
    // is; the measured time is the stage's median (GpuRunResult).
    std::optional<LaunchTime> predicted_time;
    double measured_seconds = 0;
    std::optional<ScratchDiff> scratch;  // generated code that keeps tiles in global memory
};

// The modeled L2's prediction (sim/exec/cached_count.h): the program walked through the
// device's cache preset on as many workers as the GPU holds blocks at once, every head sharing
// the cache.
struct Prediction {
    std::string cache;           // as --cache takes it: "h100"
    std::int64_t workers = 0;    // the most any launch ran on
    std::string workers_from;    // how that number was found
    std::vector<std::int64_t> launch_workers;  // per launch, where they differ by launch (else empty)
    bool per_launch = false;     // each launch from a cold cache, as measured
    double read_bytes = 0, write_bytes = 0;
    std::uint64_t instructions = 0;
    double seconds = 0;          // the walk's
    std::string machine;         // the named machine the times are predicted on ("": none)
    std::string why_no_time;     // where there is no predicted time, why
};

struct PredictOptions {
    bool predict = true;
    std::string why_not;       // when !predict, what the diff says instead
    std::string cache;         // "": the device's preset
    std::int64_t workers = 0;  // 0: resident blocks per SM × SMs, as recorded
};

struct GpuDiff {
    std::vector<ArrayDiff> arrays;  // kernel order
    std::vector<StageDiff> stages;
    double simulated_bytes = 0, counted_bytes = 0;
    bool measured = false;          // every stage has hardware figures
    std::string why_not_measured;   // otherwise, why
    double l2_bytes = 0, dram_bytes = 0;
    // Accel-Sim's correlation figure over the launches: Σ|counted − DRAM| / Σ DRAM (bytes).
    double aggregate_error = 0;
    std::vector<std::string> notes;  // where the toy model and the GPU part, from the numbers
    std::optional<Prediction> prediction;
    std::string why_no_prediction;
};

// Throws ToyError when the GPU result is not of this program's kernel and parameters.
GpuDiff diff(const Program& program, const GpuRunResult& gpu, const PredictOptions& predict = {});

// The model's time for `program` run as gpu_run would run it (`choice`, from choose_kernel), on
// `machine`, without a device: a catalog kernel as the program's schedule says; CUDA generated
// from the program with each launch's own block size and shared memory, its resident blocks an
// SM as many as the SM's blocks, threads and shared memory allow (its registers are known only
// once compiled: assumed not to limit it). Throws ToyError as predict_program does.
ProgramTime predict_run(const Program& program, const MachineSpec& machine, const GpuRunOptions& options, const KernelChoice& choice);

// The cache preset of a device, by its name ("h100" for an NVIDIA H100), or "" when none models it.
std::string cache_preset_of(const std::string& device_name);

}  // namespace toysim::gpu
