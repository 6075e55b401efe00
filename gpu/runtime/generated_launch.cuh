// runtime.cu's view of a generated module (gpu/runtime/generated_launch.cu).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpu/kernels/common.cuh"

namespace toysim::gpu {

struct GeneratedProgram;
struct GeneratedRunner;

// Loads the module's cubin and allocates what its kernels share (the register file, the fault word).
// A module shared by several parameter sets gets this run's values of its toy_param array.
std::shared_ptr<GeneratedRunner> make_generated_runner(const GeneratedProgram& program, const std::string& image, std::int64_t heads,
                                                       const std::vector<std::int64_t>& shared_values);
// Runs stage `stage` of the module: its host loops and launches (with args.plan_only, only
// checks the grids' limits and the shared memory they need).
void run_generated_stage(GeneratedRunner& runner, int stage, const StageArgs& args);
// Throws GeneratedError at the instruction where a kernel stopped, if one did.
void check_generated_fault(GeneratedRunner& runner);

}  // namespace toysim::gpu
