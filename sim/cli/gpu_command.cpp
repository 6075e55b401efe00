// toysim gpu run and gpu kernels.
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "gpu/run.h"
#include "sim/cli/common.h"
#include "gpu/diff.h"
#include "sim/print/diff_report.h"
#include "sim/print/gpu_report.h"
#include "sim/support/text.h"

namespace toysim::cli {

namespace {

gpu::L2State l2_state(const std::string& name) {
    return name == "cold" ? gpu::L2State::Cold : name == "warm" ? gpu::L2State::Warm : gpu::L2State::Off;
}

}  // namespace

int gpu_run_command(const Options& o, Context& ctx) {
    Program program = load_program(o.file, settings_from(o.sets), ctx);
    gpu::GpuRunOptions options;
    options.heads = o.heads;
    options.dtype = *gpu::parse_dtype(o.dtype);  // CLI11 accepted only the names
    options.warmups = o.warmups;
    options.repeats = o.repeats;
    options.measure = l2_state(o.measure);
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

int diff_command(const Options& o, Context& ctx) {
    Program program = load_program(o.file, settings_from(o.sets), ctx);
    gpu::GpuRunResult result;
    if (o.gpu_source == "live") {
        gpu::GpuRunOptions options;
        options.heads = o.heads;
        options.dtype = *gpu::parse_dtype(o.dtype);
        options.measure = o.measure == "off" ? gpu::L2State::Cold : l2_state(o.measure);
        try {
            result = gpu::gpu_run(program, options);
        } catch (const gpu::GpuError& e) {
            ctx.err << "toysim: error: " << e.what() << "\n";
            return kBadInput;
        }
    } else {
        std::ifstream in(o.gpu_source, std::ios::binary);
        if (!in) throw ToyError(fmt::format("--gpu {}: cannot read the file", quoted_name(o.gpu_source)));
        std::ostringstream text;
        text << in.rdbuf();
        result = parse_gpu_run(text.str(), o.gpu_source);
    }
    gpu::GpuDiff d = gpu::diff(program, result);
    ctx.out << format_diff(o.file, result, d, o.gpu_source, parse_format(o.format));
    return kOk;
}

}  // namespace toysim::cli
