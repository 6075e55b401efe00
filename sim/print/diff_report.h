// The printer of `toysim diff`: simulated vs counted vs measured traffic.
#pragma once

#include <string>

#include "gpu/diff.h"
#include "sim/print/format.h"

namespace toysim {

// `gpu_source` says where the GPU side came from: "live" or the results file's path.
std::string format_diff(const std::string& program_path, const gpu::GpuRunResult& gpu, const gpu::GpuDiff& diff,
                        const std::string& gpu_source, Format format);

}  // namespace toysim
