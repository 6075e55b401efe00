// toysim gpu run and gpu kernels.
#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/nvrtc.h"
#include "gpu/runtime/run.h"
#include "sim/cli/common.h"
#include "gpu/runtime/diff.h"
#include "sim/print/diff_report.h"
#include "sim/print/gpu_report.h"
#include "support/text.h"

namespace toysim::cli {

namespace {

gpu::L2State l2_state(const std::string& name) {
    return name == "cold" ? gpu::L2State::Cold : name == "warm" ? gpu::L2State::Warm : gpu::L2State::Off;
}

}  // namespace

namespace {

// FILE, or with --exercise the solution FILE inside its exercise's spec.
Program load_gpu_program(const ProgramArgs& o, const std::string& exercise, Context& ctx) {
    if (!exercise.empty()) return load_solution_program(exercise, o.file, settings_from(o.sets), ctx);
    return load_program(o.file, settings_from(o.sets), ctx);
}

}  // namespace

int gpu_run_command(const GpuRunArgs& o, Context& ctx) {
    Program program = load_gpu_program(o, o.exercise, ctx);
    gpu::GpuRunOptions options;
    options.kernel = o.kernel;
    options.heads = o.heads;
    options.dtype = *gpu::parse_dtype(o.dtype);  // CLI11 accepted only the names
    options.tensor_cores = !o.no_tensor_cores;
    options.warmups = o.warmups;
    options.repeats = o.repeats;
    options.measure = l2_state(o.measure);
    options.force = o.force;
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

int gpu_kernels_command(const FormatArgs& o, Context& ctx) {
    ctx.out << format_kernel_catalog(parse_format(o.format));
    return kOk;
}

int gpu_cuda_command(const GpuCudaArgs& o, Context& ctx) {
    Program program = load_gpu_program(o, o.exercise, ctx);
    auto generated = gpu::generate_cuda(program, *gpu::parse_dtype(o.dtype), !o.no_tensor_cores);
    if (o.prelude) ctx.out << gpu::device_prelude(generated->block_threads / 32) << "\n";
    ctx.out << generated->source;
    if (const std::string slow = format_slow_paths(o.file, generated->slow_paths, "// "); !slow.empty()) ctx.out << "\n" << slow;
    // Printed for reading, but a racy program's CUDA is no kernel to run: said as `gpu run` says it.
    gpu::refuse_races(program, o.force);
    if (!o.compile) return kOk;
    try {
        gpu::NvrtcCompiled compiled = gpu::compile_generated(*generated, gpu::kHopperArch);
        ctx.out << fmt::format("\n// compiled with NVRTC {} for sm_90a (Hopper: wgmma where the module has it): {} bytes of machine code{}\n", gpu::nvrtc_version(), compiled.image.size(),
                               compiled.from_cache ? " (from the cache)" : "");
        // What ptxas gave each kernel: a stack frame is local memory, traffic no array counts.
        for (const gpu::GeneratedKernel& k : generated->kernels)
            if (const auto used = gpu::cubin_resources(compiled.image, k.function))
                ctx.out << fmt::format("// {} (line {}): {} registers a thread{}\n", k.function, k.loc.line, used->registers,
                                       used->frame_bytes > 0 ? fmt::format(", {} bytes a thread in local memory (spilled registers)", used->frame_bytes)
                                                             : std::string(", nothing in local memory"));
    } catch (const gpu::NvrtcCompileError& e) {
        ctx.err << "toysim: error: " << e.what() << "\n";
        return kBadInput;
    } catch (const gpu::GpuError& e) {
        ctx.err << "toysim: error: " << e.what() << "\n";
        return kBadInput;
    }
    return kOk;
}

namespace {

// The live GPU side of a diff: measured, cold L2 unless warm was asked for.
gpu::GpuRunOptions live_options(const LaunchArgs& o) {
    gpu::GpuRunOptions options;
    options.kernel = o.kernel;
    options.heads = o.heads;
    options.dtype = *gpu::parse_dtype(o.dtype);
    options.tensor_cores = !o.no_tensor_cores;
    options.measure = o.measure == "off" ? gpu::L2State::Cold : l2_state(o.measure);
    options.force = o.force;
    return options;
}
gpu::GpuRunResult live_run(const Program& program, const LaunchArgs& o) { return gpu::gpu_run(program, live_options(o)); }

// --cache and --workers. A walk past its limit (kMaxWalkWork) stops, and the diff says so in
// place of the prediction.
gpu::PredictOptions predict_options(const DiffArgs& o) {
    gpu::PredictOptions p;
    p.cache = o.cache;
    p.workers = o.workers;
    return p;
}

int diff_sweep(const DiffArgs& o, Context& ctx) {
    if (o.gpu_source != "live") throw ToyError("--sweep runs the kernel at each value: it needs --gpu live (the default)");
    auto eq = o.sweep.find('=');
    if (eq == std::string::npos) throw ToyError(fmt::format("--sweep {}: expected NAME=V1,V2,...", quoted_name(o.sweep)));
    const std::string name = o.sweep.substr(0, eq);
    // Every value's program first: the runs whose generated modules differ only in integers
    // share one module, compiled once (gpu::share_generated).
    std::vector<std::int64_t> values;
    std::vector<Program> programs;
    for (const auto& swept : sweep_settings({o.sweep})) {
        values.push_back(swept.front().second);
        ParamSettings settings = settings_from(o.sets);
        settings.emplace_back(name, values.back());
        programs.push_back(load_program(o.file, settings, ctx));
    }
    std::vector<const Program*> each;
    for (const Program& program : programs) each.push_back(&program);
    const std::vector<gpu::GpuRunOptions> options = gpu::share_generated(each, live_options(o));
    std::vector<DiffSweepPoint> points;
    for (std::size_t k = 0; k < programs.size(); ++k) {
        gpu::GpuRunResult result = gpu::gpu_run(programs[k], options[k]);
        gpu::GpuDiff d = gpu::diff(programs[k], result, predict_options(o));
        points.push_back({values[k], std::move(result), std::move(d)});
    }
    ctx.out << format_diff_sweep(o.file, name, points, parse_format(o.format));
    if (!o.plot.empty()) {
        std::ofstream out(o.plot, std::ios::binary);
        out << (o.plot_y == "time" ? svg_diff_sweep_time(o.file, name, points) : svg_diff_sweep(o.file, name, points));
        if (!out) throw ToyError(fmt::format("--plot {}: cannot write the file", quoted_name(o.plot)));
    }
    return kOk;
}

// A saved run says what it ran: its parameters are the program's, unless --set names one
// (which must then agree with the file), and its heads and dtype are the run's own.
ParamSettings saved_run_settings(const DiffArgs& o, const gpu::GpuRunResult& result) {
    ParamSettings settings = result.params;
    for (const auto& setting : settings_from(o.sets)) {
        const auto& [name, value] = setting;
        auto same = std::find_if(settings.begin(), settings.end(), [&](const auto& s) { return s.first == setting.first; });
        if (same == settings.end()) {
            settings.emplace_back(name, value);
        } else if (same->second != value) {
            throw ToyError(fmt::format("--set {}={}: the GPU results in {} are for {} = {} (leave --set {} out to take the file's value)", name,
                                       value, o.gpu_source, name, same->second, name));
        }
    }
    if (o.heads_given && o.heads != result.heads)
        throw ToyError(fmt::format("--heads {}: the GPU results in {} are for {} head{}", o.heads, o.gpu_source, result.heads,
                                   result.heads == 1 ? "" : "s"));
    if (o.dtype_given && *gpu::parse_dtype(o.dtype) != result.dtype)
        throw ToyError(fmt::format("--dtype {}: the GPU results in {} are for {}", o.dtype, o.gpu_source, gpu::dtype_name(result.dtype)));
    return settings;
}

}  // namespace

int diff_command(const DiffArgs& o, Context& ctx) {
    try {
        if (!o.sweep.empty()) return diff_sweep(o, ctx);
        if (!o.plot.empty()) throw ToyError("--plot draws a sweep: use it with --sweep NAME=V1,V2,...");
    } catch (const gpu::GpuError& e) {
        ctx.err << "toysim: error: " << e.what() << "\n";
        return kBadInput;
    }
    gpu::GpuRunResult result;
    Program program;
    if (o.gpu_source == "live") {
        program = load_program(o.file, settings_from(o.sets), ctx);
        try {
            result = live_run(program, o);
        } catch (const gpu::GpuError& e) {
            ctx.err << "toysim: error: " << e.what() << "\n";
            return kBadInput;
        }
    } else {
        std::ifstream in(o.gpu_source, std::ios::binary);
        if (!in) throw ToyError(fmt::format("--gpu {}: cannot read the file", quoted_name(o.gpu_source)));
        std::ostringstream text;
        text << in.rdbuf();
        // A run of generated CUDA: the module this program makes at the run's parameters.
        auto generate = [&](const ParamSettings& params, gpu::DType dtype) {
            gpu::GpuRunResult settings_only;
            settings_only.params = params;
            settings_only.heads = o.heads_given ? o.heads : 1;
            settings_only.dtype = dtype;
            return gpu::generate_cuda(load_program(o.file, saved_run_settings(o, settings_only), ctx), dtype, !o.no_tensor_cores);
        };
        result = parse_gpu_run(text.str(), o.gpu_source, generate);
        if (!o.kernel.empty() && result.kernel->name != o.kernel)
            throw ToyError(fmt::format("--kernel {}: the GPU results in {} are of kernel {}", o.kernel, o.gpu_source, result.kernel->name));
        program = load_program(o.file, saved_run_settings(o, result), ctx);
    }
    gpu::GpuDiff d = gpu::diff(program, result, predict_options(o));
    ctx.out << format_diff(o.file, result, d, o.gpu_source, parse_format(o.format));
    return kOk;
}

}  // namespace toysim::cli
