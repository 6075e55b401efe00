// `toysim diff`: the simulator's DRAM counts of a program beside what its GPU kernel counted
// and what the hardware measured (L2 and DRAM), array by array where that is sound.
//
// The simulated side comes from the count-only pass (count_traffic), so it answers at any n;
// the GPU side is a GpuRunResult, from a live run or read back from `toysim gpu run --format
// json`. Nothing here prints.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpu/run.h"

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
};

struct StageDiff {
    std::string stage;
    double counted_read_bytes = 0, counted_write_bytes = 0;
    std::vector<std::string> reads, writes;  // the arrays it reads and writes
    MeasuredTraffic measured;
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
};

// Throws ToyError when the GPU result is not of this program's kernel and parameters.
GpuDiff diff(const Program& program, const GpuRunResult& gpu);

}  // namespace toysim::gpu
