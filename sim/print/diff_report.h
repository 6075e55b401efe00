// The printer of `toysim diff`: simulated vs counted vs measured traffic.
#pragma once

#include <string>

#include "gpu/runtime/diff.h"
#include "sim/print/format.h"

namespace toysim {

// `gpu_source` says where the GPU side came from: "live" or the results file's path.
std::string format_diff(const std::string& program_path, const gpu::GpuRunResult& gpu, const gpu::GpuDiff& diff,
                        const std::string& gpu_source, Format format);

}  // namespace toysim

namespace toysim {

// One program swept over a parameter: totals per value, and the same as an SVG plot.
struct DiffSweepPoint {
    std::int64_t value;
    gpu::GpuRunResult gpu;
    gpu::GpuDiff diff;
};
std::string format_diff_sweep(const std::string& program_path, const std::string& name, const std::vector<DiffSweepPoint>& points,
                              Format format);
std::string svg_diff_sweep(const std::string& program_path, const std::string& name, const std::vector<DiffSweepPoint>& points);
// The same sweep's time: every launch's measured median and predicted time, summed, against
// the swept value (diff --sweep --plot-y time).
std::string svg_diff_sweep_time(const std::string& program_path, const std::string& name, const std::vector<DiffSweepPoint>& points);

}  // namespace toysim
