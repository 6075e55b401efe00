#include "gpu/runtime/diff.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string_view>

#include <fmt/format.h>

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/nvrtc.h"
#include "sim/analysis/cost.h"
#include "sim/exec/cached_count.h"

namespace toysim::gpu {

namespace {

std::string mb(double bytes) { return fmt::format("{:.1f} MB", bytes / 1e6); }

std::string list(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    return out;
}

// Where generated CUDA's products run: on the tensor cores in tf32 where they may run there.
ProductUnit generated_products(const GeneratedProgram& g) { return g.tensor_cores ? ProductUnit::MmaTf32 : ProductUnit::CudaCores; }

// Where the kernel's products run, as the time model names the units: a catalog kernel's as
// its row says, generated CUDA's as generated_products says.
// What the time model lacks for a run in e4m3: diff says it in place of a time, predict_run refuses.
constexpr std::string_view kNoE4m3Rate = "the time model has no rate measured for e4m3 products (isa/machine.h has fp16's)";

// "" where the program's schedule lines (warps, products, where tiles live) are the kernel's;
// else why its time is not predicted. A version run through --kernel on the program of the
// kernel it is a version of (fa2_v3_mma on fa2.toy) has that kernel's lines: fa2.toy's tiles
// and products are fa2_forward's, and timed so they said 0.951 ms for a v3 launch of 0.249.
std::string schedule_of_another_kernel(const Program& p, const KernelSpec& kernel) {
    if (!p.tree->gpu_kernel || p.tree->gpu_kernel->name == kernel.name || kernel.products == Products::CudaCores) return "";
    const std::string own = p.tree->gpu_kernel->name;
    std::string where = "no program gives its schedule yet";
    if (p.source) {
        const std::filesystem::path schedule = std::filesystem::path(p.source->path).parent_path() / "schedules" / (std::string(kernel.name) + ".toy");
        if (std::filesystem::exists(schedule)) where = fmt::format("{} gives it", schedule.generic_string());
    }
    return fmt::format("this program's schedule lines are {}'s, not {}'s; {}", own, kernel.name, where);
}

ProductUnit product_unit(const KernelSpec& kernel, const GpuRunResult& gpu) {
    if (gpu.generated) return generated_products(*gpu.generated);
    switch (kernel.products) {
        case Products::CudaCores: return ProductUnit::CudaCores;
        case Products::WarpMma: return ProductUnit::MmaF16;
        case Products::Wgmma: return ProductUnit::WgmmaF16;
    }
    return ProductUnit::CudaCores;
}

// A generated stage's first kernel (gpu/codegen/codegen.h), or null where it launches none.
const GeneratedKernel* first_kernel(const GeneratedProgram& g, std::size_t stage) {
    std::function<const GeneratedKernel*(const std::vector<GeneratedStep>&)> first = [&](const std::vector<GeneratedStep>& steps) -> const GeneratedKernel* {
        for (const GeneratedStep& s : steps) {
            if (s.kernel >= 0) return &g.kernels.at(static_cast<size_t>(s.kernel));
            if (const GeneratedKernel* k = first(s.body)) return k;
        }
        return nullptr;
    };
    return stage < g.stages.size() ? first(g.stages[stage].steps) : nullptr;
}

// A generated grid kernel's blocks over `heads` where its loops' bounds are numbers (0 where
// they depend on an outer loop: the count varies).
std::int64_t grid_blocks(const GeneratedKernel& k, std::int64_t heads) {
    if (k.grid.empty() || k.per_thread) return 0;
    std::int64_t blocks = heads;
    for (const LoopInfo& l : k.grid) {
        if (l.lo.terms != 0 || l.hi.terms != 0) return 0;
        blocks *= std::max<std::int64_t>(0, l.hi.constant - l.lo.constant);
    }
    return blocks;
}

// The program as generated CUDA keeps its tiles, whatever its schedule says: in registers the
// tiles some kernel keeps in the tensor cores' fragment layout, every other tile in shared
// memory, loaded synchronously but where a kernel copies it asynchronously (its stages). A tile in registers in one kernel counts as in
// registers in all (the generator keeps none there that another kernel writes). Its warps are
// a grid kernel's.
Program as_generated(const Program& p, const GeneratedProgram& g) {
    Program q = p;
    // A block kernel's warps share a product's rows (the walk's patches and fragment steps).
    for (const GeneratedKernel& k : g.kernels)
        if (!k.per_thread && !k.grid.empty()) q.warps = std::max(1, k.threads / 32);
    for (size_t t = 0; t < q.tiles.size(); ++t) {
        q.tiles[t].in_registers = false;
        q.tiles[t].stages = 1;
        q.tiles[t].stored = false;
        for (const GeneratedKernel& k : g.kernels) {
            if (t < k.tiles_in_registers.size() && k.tiles_in_registers[t]) q.tiles[t].in_registers = true;
            if (t < k.tiles_stored.size() && k.tiles_stored[t]) q.tiles[t].stored = true;
            if (t < k.tile_stages.size() && k.tile_stages[t] > 1) q.tiles[t].stages = k.tile_stages[t];
        }
    }
    for (const GeneratedKernel& k : g.kernels) {
        for (const KernelLaunchFacts::ThreadBlocking& b : k.thread_blockings) {
            TileInst& t = q.tile_insts.at(static_cast<size_t>(q.code.at(static_cast<size_t>(b.pc)).mem));
            t.thread_rows = b.rows;
            t.thread_cols = b.cols;
            t.by_element = b.by_element;
        }
    }
    return q;
}

// The threads of a generated stage's first kernel.
int generated_threads(const GeneratedProgram& g, std::size_t stage) {
    const GeneratedKernel* k = first_kernel(g, stage);
    return k && k->threads > 0 ? k->threads : 128;
}

// The walk through the modeled L2, into out.prediction and the stages' and arrays' predicted
// bytes; or why there is none.
void predict(const Program& p, const GpuRunResult& gpu, const KernelSpec& kernel, const PredictOptions& o, GpuDiff& out) {
    const std::string cache = o.cache.empty() ? cache_preset_of(gpu.device.name) : o.cache;
    if (cache.empty()) {
        out.why_no_prediction = fmt::format("no cache preset models {}: give one with --cache", gpu.device.name);
        return;
    }
    Program q = gpu.generated ? as_generated(p, *gpu.generated) : p;
    q.cache = make_program_cache(cache, Loc{}, fmt::format("--cache {}: ", cache));
    CachedCountOptions walk;
    walk.heads = gpu.heads;
    for (const ArrayInfo& a : p.arrays) {
        const int k = kernel.find_array(a.name);
        walk.element_bytes.push_back(dtype_bytes(k >= 0 ? kernel.storage(k, gpu.dtype) : gpu.dtype));
    }
    Prediction pr;
    pr.cache = cache;
    int per_sm = 0;
    for (const auto& stage : gpu.launch.stages) per_sm = std::max(per_sm, stage.resident_blocks_per_sm);
    if (o.workers > 0) {
        pr.workers = o.workers;
        pr.workers_from = "--workers";
    } else if (per_sm > 0) {
        pr.workers = std::int64_t{per_sm} * gpu.device.sm_count;
        pr.workers_from = fmt::format("{} resident blocks per SM × {} SMs", per_sm, gpu.device.sm_count);
    } else {
        pr.workers = gpu.device.sm_count;
        pr.workers_from = fmt::format("one block per SM × {} SMs (the GPU results record no occupancy)", gpu.device.sm_count);
    }
    walk.workers = pr.workers;
    // A kernel of several launches whose program has one top-level loop per launch: each loop
    // is a launch, measured from a cold L2.
    std::size_t top_loops = 0;
    for (const LoopInfo& l : p.loops) top_loops += l.slot == 0 ? 1 : 0;
    const std::size_t stages = gpu.launch.stages.size();
    // Generated CUDA's stages are the program's top-level items, serial code between grids
    // included: each a launch of the walk.
    if (gpu.generated && gpu.generated->stages.size() == stages) {
        top_loops = stages;
        for (const GeneratedStage& s : gpu.generated->stages) walk.launch_pcs.push_back(s.first_pc);
    }
    pr.per_launch = stages == 1 || top_loops == stages;
    walk.cold_launches = stages > 1 && top_loops == stages;
    // Each launch on the blocks its own kernel keeps resident: the GPU runs standard attention's
    // pv in waves of 3 blocks an SM where its softmax holds 8, and which blocks have finished
    // (and written) before the others read on decides what is still dirty at the end.
    if (walk.cold_launches && o.workers == 0)
        for (const auto& stage : gpu.launch.stages) {
            walk.launch_workers.push_back(std::int64_t{stage.resident_blocks_per_sm} * gpu.device.sm_count);
            pr.launch_workers.push_back(stage.resident_blocks_per_sm > 0 ? walk.launch_workers.back() : pr.workers);
        }
    if (std::adjacent_find(pr.launch_workers.begin(), pr.launch_workers.end(), std::not_equal_to<>()) != pr.launch_workers.end()) {
        std::vector<std::string> each;
        for (std::size_t k = 0; k < stages; ++k)
            each.push_back(fmt::format("{} ({})", pr.launch_workers[k] / gpu.device.sm_count, gpu.launch.stages[k].name));
        pr.workers_from = fmt::format("{} resident blocks per SM × {} SMs", list(each), gpu.device.sm_count);
    } else {
        pr.launch_workers.clear();
    }
    const auto start = std::chrono::steady_clock::now();
    CachedCount counted;
    try {
        counted = count_through_cache(q, walk);
    } catch (const WalkTooLong& e) {
        out.why_no_prediction = e.what();
        return;
    }
    pr.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    pr.instructions = counted.instructions;
    pr.read_bytes = double(counted.counts.total.dram_read_bytes);
    pr.write_bytes = double(counted.counts.total.dram_write_bytes);
    for (auto& a : out.arrays) {
        const CacheStats& s = counted.counts.arrays[static_cast<size_t>(p.find_array(a.array))];
        a.predicted_read_bytes = double(s.dram_read_bytes);
        a.predicted_write_bytes = double(s.dram_write_bytes);
    }
    const MachineSpec* machine = find_machine(cache_preset_of(gpu.device.name));  // the device as a named machine
    if (!machine) pr.why_no_time = fmt::format("no named machine models {}", gpu.device.name);
    else if (!pr.per_launch) pr.why_no_time = "the program's loops are not the kernel's launches";
    else pr.machine = std::string(machine->name);
    if (pr.per_launch) {
        for (std::size_t k = 0; k < stages; ++k) {
            const CacheCounts& c = walk.cold_launches ? counted.launches.at(k) : counted.counts;
            StageDiff& stage = out.stages[k];
            stage.predicted_read_bytes = double(c.total.dram_read_bytes);
            stage.predicted_write_bytes = double(c.total.dram_write_bytes);
            stage.predicted_workers = k < pr.launch_workers.size() ? pr.launch_workers[k] : pr.workers;
            const LaunchWork& work = walk.cold_launches ? counted.launch_work.at(k) : counted.launch_work.front();
            if (!machine) continue;
            // Serial work (a launch without a grid, or loops beside its grid) and a grid of scalar
            // code say nothing of the kernel's blocks: no launch gets a time.
            // Nor does a generated kernel's tiles in global memory: their traffic (the scratch
            // row) is in neither the modeled L2 nor the time (on the H200, tests/gpu/
            // matvec_wide_tile.toy's would have been predicted 76% short).
            std::string why_not;
            if (gpu.dtype == DType::E4M3)
                why_not = fmt::format("{}: its bytes are predicted, its time is not", kNoE4m3Rate);
            else if (const std::string other = schedule_of_another_kernel(p, kernel); !other.empty())
                why_not = other;
            else if (const Untimed why = untimed(work); why != Untimed::Timed)
                why_not = fmt::format("launch {} of the program {}", stage.stage, untimed_reason(why));
            else if (stage.scratch)
                why_not = fmt::format("launch {} keeps tiles in global memory (shared memory cannot hold them): the model times neither "
                                      "their traffic nor their waits",
                                      stage.stage);
            if (!why_not.empty()) {
                pr.why_no_time = why_not;
                machine = nullptr;
                for (StageDiff& before : out.stages) before.predicted_time.reset();
                continue;
            }
            LaunchShape shape;
            shape.blocks = work.blocks;
            shape.resident_per_sm = std::max(gpu.launch.stages[k].resident_blocks_per_sm, 1);
            shape.products = product_unit(kernel, gpu);
            shape.sector_bytes = q.cache->config.sector_bytes;
            shape.tile_element_bytes = dtype_bytes(gpu.dtype);
            shape.warps = q.warps;
            if (gpu.generated) run_as_generated(shape, generated_threads(*gpu.generated, k));
            stage.predicted_time = predict_launch(*machine, work, c, shape);
        }
        if (!machine) pr.machine.clear();
    }
    out.prediction = pr;
}

}  // namespace

ProgramTime predict_run(const Program& p, const MachineSpec& machine, const GpuRunOptions& options, const KernelChoice& choice) {
    if (options.dtype == DType::E4M3)
        throw ToyError(fmt::format("{}: rank by --objective dram or cycles", kNoE4m3Rate));
    if (!choice.generated)
        if (const std::string other = schedule_of_another_kernel(p, *choice.kernel); !other.empty()) throw ToyError(other);
    Program on_machine = on_machine_cache(choice.generated ? as_generated(p, *choice.generated) : p, machine);
    on_machine.cache->element_bytes = dtype_bytes(options.dtype);
    if (!choice.generated) {
        // The kernel's own blocks, as its launchers plan them (the CUDA library, no GPU needed);
        // the schedule's estimate where the library is not there to ask.
        LaunchPlan plan;
        plan.kernel = choice.kernel;
        plan.params = choice.launch_params;
        plan.heads = options.heads;
        plan.dtype = options.dtype;
        std::optional<std::vector<StagePlan>> stages;
        try {
            stages = plan_stages(plan, static_cast<int>(machine[MachineParam::SharedPerBlock]));
        } catch (const GpuError& e) {
            throw ToyError(e.what());  // the kernel refuses these parameters: a limit the point breaks
        }
        if (!stages || stages->empty()) return predict_program(on_machine, machine, options.heads);
        std::vector<Occupancy> kernel;
        for (const StagePlan& s : *stages)
            kernel.push_back(kernel_occupancy({s.threads, s.shared_bytes, s.min_blocks}, on_machine, machine, on_machine.cache->element_bytes));
        return predict_program(on_machine, machine, options.heads, nullptr, &kernel);
    }
    const GeneratedProgram& g = *choice.generated;
    GeneratedLaunches launches;
    launches.products = generated_products(g);
    const auto at = [&](MachineParam q) { return static_cast<std::int64_t>(machine[q]); };
    // The registers ptxas gives each kernel, where NVRTC compiles the module here (no GPU
    // needed; the disk cache keeps it for the run): they decide how many blocks an SM holds.
    std::optional<NvrtcCompiled> compiled;
    if (nvrtc_available()) {
        try {
            compiled = compile_generated(g, kHopperArch);
        } catch (const GpuError&) {
            compiled.reset();  // estimated below, as without NVRTC
        }
    }
    launches.registers_from_compiler = compiled.has_value();
    for (std::size_t k = 0; k < std::max<std::size_t>(g.stages.size(), 1); ++k) {
        const int threads = generated_threads(g, k);
        const GeneratedKernel* kernel = first_kernel(g, k);
        const std::int64_t shared = kernel ? kernel->shared_bytes : 0;
        std::int64_t resident = std::min(at(MachineParam::BlocksPerSm), at(MachineParam::ThreadsPerSm) / threads);
        if (shared > 0) resident = std::min(resident, at(MachineParam::SharedPerSm) / shared);
        std::optional<int> registers;
        if (compiled && kernel)
            if (const auto used = cubin_resources(compiled->image, kernel->function)) {
                // (Registers ptxas spilled to local memory, used->frame_bytes a thread, are not
                // timed: fa2's 128-row tiles at d = 128 spill 56 to 584 bytes and ran 0.93 to 1.12
                // times the prediction; docs/gpu.md, "Predicted time".)
                registers = used->registers;
                launches.spilled_bytes = std::max(launches.spilled_bytes, used->frame_bytes);
            }
        if (!registers && kernel) launches.registers_from_compiler = false;
        if (!registers && kernel && !kernel->per_thread) {
            // Estimated: a thread's floats of its tiles in registers, as the generator declares
            // them, and 32 for addresses, indices and loop state, as occupancy() assumes for a
            // schedule's, at most what the kernel's launch bounds allow (KernelLaunchFacts::min_blocks).
            registers = static_cast<int>(std::min(32 + kernel->register_floats, launch_bounds_registers(machine, kernel->min_blocks, threads)));
        }
        if (registers && *registers > 0) {
            // Registers go to warps in units of 256 (8 a thread): the occupancy calculator's rule.
            const std::int64_t per_warp = (std::int64_t{*registers} * 32 + 255) / 256 * 256;
            const std::int64_t warps = (threads + 31) / 32;
            resident = std::min(resident, at(MachineParam::RegistersPerSm) / per_warp / warps);
            launches.registers.push_back(*registers);
        } else {
            launches.registers.push_back(0);
        }
        launches.threads.push_back(threads);
        launches.resident.push_back(std::max<std::int64_t>(resident, 1));
        if (k < g.stages.size()) launches.launch_pcs.push_back(g.stages[k].first_pc);
    }
    return predict_program(on_machine, machine, options.heads, &launches);
}

std::string cache_preset_of(const std::string& device_name) {
    static const std::pair<const char*, const char*> models[] = {{"H100", "h100"}, {"H200", "h200"}, {"A100", "a100"}};
    for (const auto& [model, preset] : models)
        if (device_name.find(model) != std::string::npos) return preset;
    return "";
}

GpuDiff diff(const Program& p, const GpuRunResult& gpu, const PredictOptions& predict_options) {
    // A generated module's row is its own; results of a version of the program's kernel
    // (--kernel) count against the same program.
    const KernelSpec& kernel = [&]() -> const KernelSpec& {
        if (gpu.generated) return *gpu.kernel;
        const KernelSpec& program_own = program_kernel(p);
        return gpu.kernel->version_of == program_own.name ? program_kernel(p, gpu.kernel->name) : program_own;
    }();
    if (gpu.kernel != &kernel)
        throw ToyError(fmt::format("the GPU results are of kernel {}, but this program's is {}", gpu.kernel->name, kernel.name));
    for (const auto& [name, value] : gpu.params)
        for (const auto& [pname, pvalue] : p.params)
            if (pname == name && pvalue != value)
                throw ToyError(fmt::format("the GPU results are for {} = {}, but the program has {} = {}: use --set {}={}", name, value, name,
                                           pvalue, name, value));
    const std::uint64_t heads = static_cast<std::uint64_t>(gpu.heads);
    GpuDiff out;
    std::vector<ArrayTraffic> simulated = count_traffic(p);
    for (size_t k = 0; k < kernel.arrays.size(); ++k) {
        const ArrayInfo& info = p.arrays[static_cast<size_t>(p.find_array(kernel.arrays[k].name))];
        ArrayDiff a;
        a.array = info.name;
        a.element_bytes = dtype_bytes(kernel.storage(static_cast<int>(k), gpu.dtype));
        const ArrayTraffic& sim = simulated[static_cast<size_t>(p.find_array(a.array))];
        a.simulated_reads = sim.reads * heads;
        a.simulated_writes = sim.writes * heads;
        a.footprint_bytes = info.size * static_cast<std::int64_t>(heads) * a.element_bytes;
        for (const auto& stage : gpu.launch.stages) {
            a.counted_reads += stage.reads[k];
            a.counted_writes += stage.writes[k];
        }
        out.simulated_bytes += double(a.simulated_reads + a.simulated_writes) * a.element_bytes;
        out.counted_bytes += double(a.counted_reads + a.counted_writes) * a.element_bytes;
        out.arrays.push_back(std::move(a));
    }

    out.measured = gpu.measure != L2State::Off && !gpu.launch.stages.empty();
    double error_sum = 0;
    for (const auto& stage : gpu.launch.stages) {
        StageDiff s;
        s.stage = std::string(stage.name);
        s.measured = stage.measured;
        s.measured_seconds = stage.time.ms.empty() ? 0 : stage.time.median() / 1e3;
        for (size_t k = 0; k < out.arrays.size(); ++k) {
            const double bytes = double(out.arrays[k].element_bytes);
            s.counted_read_bytes += double(stage.reads[k]) * bytes;
            s.counted_write_bytes += double(stage.writes[k]) * bytes;
            if (stage.reads[k]) s.reads.push_back(out.arrays[k].array);
            if (stage.writes[k]) s.writes.push_back(out.arrays[k].array);
        }
        if (!stage.measured.available) {
            out.measured = false;
            if (out.why_not_measured.empty())
                out.why_not_measured = gpu.measure == L2State::Off ? "the GPU run was not measured (toysim gpu run --measure cold or warm)"
                                                                   : stage.measured.why_not;
        } else {
            const MeasuredTraffic& m = stage.measured;
            out.l2_bytes += (m.l2_read_sectors + m.l2_write_sectors) * 32;
            out.dram_bytes += m.dram_read_bytes + m.dram_write_bytes;
            error_sum += std::fabs(s.counted_read_bytes + s.counted_write_bytes - m.dram_read_bytes - m.dram_write_bytes);
            // A launch's DRAM traffic belongs to one array only when the launch reads (writes)
            // only that array.
            for (auto& a : out.arrays) {
                if (s.reads.size() == 1 && s.reads[0] == a.array) a.dram_read_bytes = a.dram_read_bytes.value_or(0) + m.dram_read_bytes;
                if (s.writes.size() == 1 && s.writes[0] == a.array) a.dram_write_bytes = a.dram_write_bytes.value_or(0) + m.dram_write_bytes;
            }
        }
        out.stages.push_back(std::move(s));
    }
    for (std::size_t k = 0; gpu.generated && k < out.stages.size(); ++k)
        if (const GeneratedKernel* g = first_kernel(*gpu.generated, k); g && g->spill_floats > 0)
            out.stages[k].scratch = ScratchDiff{g->largest_tile, double(g->spill_floats) * 4, grid_blocks(*g, gpu.heads)};
    if (predict_options.predict) predict(p, gpu, kernel, predict_options, out);
    else out.why_no_prediction = predict_options.why_not;
    if (!out.measured) return out;
    out.aggregate_error = out.dram_bytes > 0 ? error_sum / out.dram_bytes : 0;

    // ---- where they part, from the numbers ----
    const double l2_size = double(gpu.device.l2_bytes);
    for (const auto& s : out.stages) {
        const double counted = s.counted_read_bytes + s.counted_write_bytes;
        const double dram = s.measured.dram_read_bytes + s.measured.dram_write_bytes;
        if (counted <= 0) continue;
        // Generated code's tiles in global memory: traffic that no array counts (its row in
        // the scratch table; the generic readings below would take it for the arrays').
        if (const auto& sc = s.scratch) {
            if (sc->blocks > 0)
                out.notes.push_back(fmt::format("{}: its tiles in global memory ({} over its {} blocks) can add up to {} to DRAM beside the "
                                                "arrays' {} counted where they outgrow the {:.0f} MiB L2: DRAM moved {}",
                                                s.stage, mb(sc->slice_bytes()), sc->blocks, mb(sc->bound_bytes()), mb(counted), l2_size / (1 << 20),
                                                mb(dram)));
            continue;
        }
        // Arrays this launch reads several times over: the L2 can serve the re-reads.
        std::vector<std::string> reread;
        double reread_footprint = 0, reread_counted = 0;
        for (const auto& a : out.arrays) {
            if (std::find(s.reads.begin(), s.reads.end(), a.array) == s.reads.end() || a.footprint_bytes == 0) continue;
            const double times = double(a.counted_reads) * a.element_bytes / double(a.footprint_bytes);
            if (times >= 2) {
                reread.push_back(a.array);
                reread_footprint += double(a.footprint_bytes);
                reread_counted += double(a.counted_reads) * a.element_bytes;
            }
        }
        if (!reread.empty()) {
            const double times = reread_counted / reread_footprint;
            if (reread_footprint <= l2_size && s.measured.dram_read_bytes < 0.5 * s.counted_read_bytes)
                out.notes.push_back(fmt::format("{}: {} ({} in all) fit in the {:.0f} MiB L2, so their re-reads ({:.0f}× each, {} counted) hit "
                                                "L2: DRAM read {} in all",
                                                s.stage, list(reread), mb(reread_footprint), l2_size / (1 << 20), times, mb(reread_counted),
                                                mb(s.measured.dram_read_bytes)));
            else if (reread_footprint > l2_size)
                out.notes.push_back(fmt::format("{}: {} ({} in all) outgrow the {:.0f} MiB L2: their {:.0f}× re-reads reach DRAM ({} read, "
                                                "{} counted)",
                                                s.stage, list(reread), mb(reread_footprint), l2_size / (1 << 20), times,
                                                mb(s.measured.dram_read_bytes), mb(s.counted_read_bytes)));
        }
        if (dram > 1.2 * counted)
            out.notes.push_back(fmt::format("{}: DRAM moved {:.2f}× the counted bytes: whole 32-byte sectors move where a tile's rows are "
                                            "narrower, and lines evicted from L2 come back",
                                            s.stage, dram / counted));
        if (s.counted_write_bytes > 0) {
            const double ratio = s.measured.dram_write_bytes / s.counted_write_bytes;
            if (ratio < 0.5)
                out.notes.push_back(fmt::format("{}: of {} written, {} reached DRAM while the launch ran: the rest stayed in L2 (write-back)",
                                                s.stage, mb(s.counted_write_bytes), mb(s.measured.dram_write_bytes)));
            else if (ratio <= 1.2)
                out.notes.push_back(fmt::format("{}: {} written, written back to DRAM once ({})", s.stage, list(s.writes),
                                                mb(s.measured.dram_write_bytes)));
        }
    }
    return out;
}

}  // namespace toysim::gpu
