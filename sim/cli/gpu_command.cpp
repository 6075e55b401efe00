// toysim gpu run and gpu kernels.
#include <fmt/format.h>

#include "gpu/run.h"
#include "sim/cli/common.h"
#include "sim/print/gpu_report.h"

namespace toysim::cli {

int gpu_run_command(const Options& o, Context& ctx) {
    Program program = load_program(o.file, settings_from(o.sets), ctx);
    gpu::GpuRunOptions options;
    options.heads = o.heads;
    options.dtype = *gpu::parse_dtype(o.dtype);  // CLI11 accepted only the names
    options.warmups = o.warmups;
    options.repeats = o.repeats;
    options.measure = o.measure == "cold" ? gpu::L2State::Cold : o.measure == "warm" ? gpu::L2State::Warm : gpu::L2State::Off;
    gpu::GpuRunResult result;
    try {
        result = gpu::gpu_run(program, options);
    } catch (const gpu::GpuError& e) {
        ctx.err << "toysim: error: " << e.what() << "\n";
        return kBadInput;
    }
    ctx.out << format_gpu_run(o.file, result, parse_format(o.format));
    return result.check_passed() && result.traffic_equal() ? kOk : kCheckFailed;
}

int gpu_kernels_command(const Options& o, Context& ctx) {
    ctx.out << format_kernel_catalog(parse_format(o.format));
    return kOk;
}

}  // namespace toysim::cli
