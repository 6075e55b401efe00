// Printers for `toysim gpu`: a GPU run (table, markdown, csv, json) and the kernel catalog.
#pragma once

#include <string>

#include "gpu/run.h"
#include "sim/print/format.h"

namespace toysim {

// `program_path` is how the user named the program. The JSON is the contract `toysim diff`
// builds on (README, "On a real GPU").
std::string format_gpu_run(const std::string& program_path, const gpu::GpuRunResult& result, Format format);

// Every kernel a program's `gpu` line may name.
std::string format_kernel_catalog(Format format);

}  // namespace toysim

namespace toysim {

// A `toysim gpu run --format json` read back (the fields `toysim diff` uses: kernel, params,
// heads, dtype, device, launches with their counts and measurements). Throws ToyError naming
// `path` when the text is not such a result.
gpu::GpuRunResult parse_gpu_run(const std::string& text, const std::string& path);

}  // namespace toysim
