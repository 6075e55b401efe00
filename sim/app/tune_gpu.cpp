#include "sim/app/tune_gpu.h"

#include <fmt/format.h>

#include <mutex>
#include <optional>

#include "gpu/runtime/diff.h"
#include "gpu/runtime/run.h"
#include "isa/machine.h"
#include "support/diag.h"

namespace toysim::app {

std::vector<std::size_t> ranks_to_run(std::size_t ranked, std::size_t top, int sample) {
    std::vector<std::size_t> ranks;
    for (std::size_t k = 0; k < std::min(ranked, top); ++k) ranks.push_back(k);
    if (ranked <= top) return ranks;
    const std::size_t rest = ranked - top;
    if (sample < 0 || static_cast<std::size_t>(sample) >= rest) {
        for (std::size_t k = top; k < ranked; ++k) ranks.push_back(k);
        return ranks;
    }
    for (int i = 0; i < sample; ++i) ranks.push_back(top + (2 * static_cast<std::size_t>(i) + 1) * rest / (2 * static_cast<std::size_t>(sample)));
    return ranks;
}

TunedSpace tune_space_on_gpu(const std::shared_ptr<const ast::Program>& tree, const std::string& path, const SpaceTuneRequest& request,
                             const GpuTuneRequest& gpu_request, Format format, const Spelling& spelling, bool* all_passed) {
    tune_element_bytes(request.dtype);  // a name gpu::parse_dtype knows, or the command's error
    gpu::GpuRunOptions options;
    options.kernel = gpu_request.kernel;
    options.heads = request.heads;
    options.dtype = *gpu::parse_dtype(request.dtype);
    options.tensor_cores = gpu_request.tensor_cores;
    options.warmups = gpu_request.warmups;
    options.repeats = gpu_request.repeats;
    // The GPU, asked once (no GPU: GpuError, before any point runs).
    std::optional<gpu::DeviceInfo> queried;
    auto device = [&]() -> const gpu::DeviceInfo& {
        if (!queried) queried = gpu::query_device();
        return *queried;
    };
    // Points that run on the GPU are ranked on its own machine unless the request names one.
    SpaceTuneRequest on_device = request;
    if (gpu_request.run && request.machine.empty()) {
        on_device.machine = gpu::cache_preset_of(device().name);
        if (!find_machine(on_device.machine))
            throw ToyError(fmt::format("tune --gpu: no named machine models {} (the machines: {}): give --machine to rank on one anyway",
                                       device().name, machine_names()));
    }
    // Each point predicted as its kernel runs it, and dropped where the kernel refuses it.
    // (rank_space calls this from several threads at once.)
    std::string kernel_name;
    std::once_flag named;
    RankedSpace ranked = rank_space(tree, path, on_device, spelling, [&](const Program& program, const MachineSpec& machine) {
        const gpu::KernelChoice choice = gpu::choose_kernel(program, options);
        std::call_once(named, [&] { kernel_name = choice.generated ? "CUDA generated from the program" : "kernel " + std::string(choice.kernel->name); });
        return gpu::predict_run(program, machine, options, choice);
    });
    ranked.kernel = kernel_name;
    if (all_passed) *all_passed = true;
    if (gpu_request.run && !ranked.ranked.empty()) {
        ranked.device = device().name;
        const std::string preset = gpu::cache_preset_of(device().name);
        if (preset != ranked.machine)
            throw ToyError(fmt::format("tune --gpu: the GPU is {}, but the points are ranked on machine {}{}", device().name, ranked.machine,
                                       preset.empty() ? " (no named machine models this GPU)" : fmt::format(": give --machine {}", preset)));
        // Every point's program first: points that differ only in sizes the generated module
        // reads at run time (n, not the tiles) share one module, compiled once.
        const std::vector<std::size_t> ranks = ranks_to_run(ranked.ranked.size(), static_cast<std::size_t>(std::max(request.top, 1)), gpu_request.sample);
        std::vector<std::optional<Program>> programs(ranks.size());
        std::vector<const Program*> each;
        for (std::size_t r = 0; r < ranks.size(); ++r) {
            try {
                programs[r] = compile(tree, point_settings(ranked, ranked.ranked[ranks[r]]));
                each.push_back(&*programs[r]);
            } catch (const ToyError& e) {
                ranked.ranked[ranks[r]].gpu_error = e.what();
            }
        }
        std::vector<gpu::GpuRunOptions> shared = gpu::share_generated(each, options);
        std::size_t next = 0;
        for (std::size_t r = 0; r < ranks.size(); ++r) {
            TunePoint& point = ranked.ranked[ranks[r]];
            if (!programs[r]) {
                if (all_passed) *all_passed = false;
                continue;
            }
            try {
                const Program& program = *programs[r];
                const gpu::GpuRunResult result = gpu::gpu_run(program, shared[next++]);
                point.measured_seconds = result.launch.total.median() * 1e-3;
                point.checks_passed = result.check_passed();
                point.traffic_equal = result.traffic_equal();
            } catch (const ToyError& e) {
                point.gpu_error = e.what();
            } catch (const gpu::GpuError& e) {
                point.gpu_error = e.what();
            }
            if (all_passed && (!point.checks_passed || !point.traffic_equal || !point.gpu_error.empty())) *all_passed = false;
        }
    }
    return format_space(ranked, format);
}

}  // namespace toysim::app
