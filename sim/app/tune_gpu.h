// `toysim tune --gpu` and `--kernel`: the space ranked by the model of the kernel that would run
// each point (the program's own, a version of it, or CUDA generated from the program), then
// its best points and a sample of the rest run on the GPU, so that the model's pick is measured
// against the best that ran. Not in the browser's engine (no GPU layer there).
#pragma once

#include <memory>
#include <string>

#include "sim/app/tune.h"

namespace toysim::app {

struct GpuTuneRequest {
    std::string kernel;       // as gpu run's --kernel: "" the program's own, "generated", or a version of it
    bool run = false;         // run points on the GPU (else: only rank them as that kernel runs)
    int sample = 5;           // points of the rest (past --top) that run too, spread evenly over the ranking; -1: all
    int warmups = 3, repeats = 20;
    bool tensor_cores = true;  // generated CUDA: products of whole fragments on the tensor cores
};

// The ranked space, and with `run`, the measured points. The machine must be the GPU's (h100
// for an H100): the pick is the model's of that GPU. Throws ToyError for what tune_space
// refuses, gpu::GpuError where the device cannot run at all (none, or no CUDA build); a point
// that fails to run on it (too large, its checks failing) is reported in its row.
TunedSpace tune_space_on_gpu(const std::shared_ptr<const ast::Program>& tree, const std::string& path, const SpaceTuneRequest& request,
                             const GpuTuneRequest& gpu, Format format, const Spelling& spelling, bool* all_passed = nullptr);

// The ranks (0-based, into the ranking) that run: the first `top`, then `sample` of the rest
// spread evenly (the middle of each of `sample` equal slices), or every one (sample < 0).
std::vector<std::size_t> ranks_to_run(std::size_t ranked, std::size_t top, int sample);

}  // namespace toysim::app
