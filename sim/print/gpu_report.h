// Printers for `toysim gpu`: a GPU run (table, markdown, csv, json) and the kernel catalog.
#pragma once

#include <functional>
#include <memory>

#include <string>

#include <nlohmann/json.hpp>

#include "gpu/codegen/codegen.h"
#include "gpu/runtime/run.h"
#include "sim/print/format.h"

namespace toysim {

// `program_path` is how the user named the program. The JSON is the contract `toysim diff`
// builds on (docs/gpu.md, "On a real GPU").
std::string format_gpu_run(const std::string& program_path, const gpu::GpuRunResult& result, Format format);

// How a generated module was compiled, in one line without its newline ("the module for sm_90a:
// compiled by NVRTC in 2.31 s, shared by 4 runs (2 integers read at run time)"), and as the
// JSON's "compile" object.
std::string format_module_compile(const gpu::GpuRunResult::ModuleCompile& compile);
nlohmann::ordered_json module_compile_json(const gpu::GpuRunResult::ModuleCompile& compile);

// Every kernel a program's `gpu` line may name.
std::string format_kernel_catalog(Format format);

// What kept CUDA generated from the program off the generator's fastest path, a line each at
// the program's line (`program_path:line:col: INSTRUCTION: why`), each line starting with
// `prefix` ("  ", or "// " in the CUDA source); "" where nothing did.
std::string format_slow_paths(const std::string& program_path, const std::vector<gpu::SlowPath>& slow_paths, const std::string& prefix);

}  // namespace toysim

namespace toysim {

// A `toysim gpu run --format json` read back (the fields `toysim diff` uses: kernel, params,
// heads, dtype, device, launches with their counts and measurements). Throws ToyError naming
// `path` when the text is not such a result. A run of generated CUDA (kernel "generated") is
// read against the module `generate` makes from the run's parameters and dtype: its stages and
// arrays are the program's.
using GenerateForRun = std::function<std::shared_ptr<const gpu::GeneratedProgram>(const ParamSettings& params, gpu::DType dtype)>;
gpu::GpuRunResult parse_gpu_run(const std::string& text, const std::string& path, const GenerateForRun& generate = {});

}  // namespace toysim
