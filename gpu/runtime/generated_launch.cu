// The host side of a generated module (gpu/codegen/codegen.h): its cubin loaded with the runtime's
// library API, each stage's schedule walked (host loops, launches), the register file and
// the fault word that generated kernels share.
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/shared_module.h"
#include "gpu/kernels/common.cuh"
#include "gpu/runtime/generated_launch.cuh"

namespace toysim::gpu {

namespace {

// Must match the prelude's struct HostVars.
struct HostVars {
    long long v[8];
    long long extent[8];
    long long total;
};

// The largest value of hi − lo of grid loop `level` over every value of the loops outside it
// (each from its own bounds), with `vars` holding the host loops' values.
long long widest(const std::vector<LoopInfo>& grid, size_t level, size_t at, std::int64_t* vars) {
    const LoopInfo& l = grid[at];
    const std::int64_t lo = l.lo.eval(vars), hi = l.hi.eval(vars);
    if (at == level) return std::max<std::int64_t>(hi - lo, 0);
    long long most = 0;
    for (std::int64_t v = lo; v < hi; ++v) {
        vars[l.slot] = v;
        most = std::max(most, widest(grid, level, at + 1, vars));
    }
    return most;
}

}  // namespace

struct GeneratedRunner {
    const GeneratedProgram& program;
    std::int64_t heads = 1;
    cudaLibrary_t library = nullptr;
    std::vector<cudaKernel_t> timed, counted;
    float* regfile = nullptr;
    int* fault = nullptr;
    float* spill = nullptr;           // tiles that shared memory cannot hold, a slice per block
    std::size_t spill_floats = 0;     // allocated
    std::size_t spill_needed = 0;     // by the largest launch the plan walked

    ~GeneratedRunner() {
        if (spill) cudaFree(spill);
        if (regfile) cudaFree(regfile);
        if (fault) cudaFree(fault);
        if (library) cudaLibraryUnload(library);
    }

    void launch(int k, const std::int64_t* vars, const StageArgs& args) {
        const GeneratedKernel& kernel = program.kernels[static_cast<size_t>(k)];
        HostVars host{};
        for (int s = 0; s < kMaxLoopDepth; ++s) host.v[s] = vars[s];
        host.total = 1;
        std::int64_t scratch[kMaxLoopDepth];
        for (size_t level = 0; level < kernel.grid.size(); ++level) {
            std::copy(vars, vars + kMaxLoopDepth, scratch);
            host.extent[level] = widest(kernel.grid, level, 0, scratch);
            host.total = host.extent[level] == 0 || host.total > (1LL << 40) / std::max<long long>(host.extent[level], 1)
                             ? (host.extent[level] == 0 ? 0 : (1LL << 40))
                             : host.total * host.extent[level];
        }
        if (host.total == 0) return;  // a grid of no iterations
        const long long blocks = kernel.per_thread ? (host.total * kernel.lanes + kernel.threads - 1) / kernel.threads : host.total;
        if (blocks > 2147483647LL)
            throw GeneratedError(kernel.loc, "this grid has " + std::to_string(host.total) + " iterations; a launch takes at most 2^31 − 1 " +
                                                 (kernel.per_thread ? "blocks of " + std::to_string(kernel.threads) + " threads" : "blocks") +
                                                 ": lower the parameters its bounds use");
        if (kernel.shared_bytes > args.shared_memory_limit)
            throw GeneratedError(kernel.largest_tile_loc.line ? kernel.largest_tile_loc : kernel.loc,
                                 "the tiles of the kernel for line " + std::to_string(kernel.loc.line) + " need " + std::to_string(kernel.shared_bytes) +
                                     " bytes of shared memory per block (tile " + kernel.largest_tile + " alone takes " +
                                     std::to_string(kernel.largest_tile_bytes) + "); this GPU gives a block at most " +
                                     std::to_string(args.shared_memory_limit) + ": make the tiles smaller");
        const std::size_t spill_here = static_cast<std::size_t>(kernel.spill_floats) * static_cast<std::size_t>(blocks) * static_cast<std::size_t>(heads);
        if (args.plan_only) {
            spill_needed = std::max(spill_needed, spill_here);
            return;
        }
        if (spill_here > spill_floats) {  // the plan walked every launch: this happens once, before the first
            if (spill) cudaFree(spill);
            spill = nullptr;
            spill_floats = 0;
            cuda_check(cudaMalloc(reinterpret_cast<void**>(&spill), std::max(spill_needed, spill_here) * sizeof(float)),
                  "allocating global memory for the tiles that shared memory cannot hold");
            spill_floats = std::max(spill_needed, spill_here);
        }
        cudaKernel_t function = args.counts ? counted[static_cast<size_t>(k)] : timed[static_cast<size_t>(k)];
        std::vector<void*> params;
        for (size_t a = 0; a < program.spec.arrays.size(); ++a) params.push_back(const_cast<void**>(&args.arrays[a]));
        unsigned long long* counts = args.counts;
        params.push_back(&counts);
        params.push_back(&regfile);
        params.push_back(&spill);
        params.push_back(&fault);
        params.push_back(&host);
        const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>(heads));
        if (args.resident_blocks && !args.counts && *args.resident_blocks == 0) {
            int resident = 0;
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, reinterpret_cast<const void*>(function), kernel.threads,
                                                              static_cast<size_t>(kernel.shared_bytes)) == cudaSuccess)
                *args.resident_blocks = resident;
        }
        cuda_check(cudaLaunchKernel(reinterpret_cast<const void*>(function), grid, dim3(static_cast<unsigned>(kernel.threads)), params.data(),
                               static_cast<size_t>(kernel.shared_bytes), args.stream),
              ("launching " + kernel.function).c_str());
    }

    void walk(const std::vector<GeneratedStep>& steps, std::int64_t* vars, const StageArgs& args) {
        for (const GeneratedStep& step : steps) {
            if (step.kernel >= 0) {
                launch(step.kernel, vars, args);
                continue;
            }
            const LoopInfo& l = *step.loop;
            const std::int64_t lo = l.lo.eval(vars), hi = l.hi.eval(vars);
            for (std::int64_t v = lo; v < hi; ++v) {
                vars[l.slot] = v;
                walk(step.body, vars, args);
            }
        }
    }
};

std::shared_ptr<GeneratedRunner> make_generated_runner(const GeneratedProgram& program, const std::string& image, std::int64_t heads,
                                                       const std::vector<std::int64_t>& shared_values) {
    auto runner = std::make_shared<GeneratedRunner>(GeneratedRunner{program, heads});
    cuda_check(cudaLibraryLoadData(&runner->library, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), "loading the generated module");
    if (!shared_values.empty()) {
        void* values = nullptr;
        std::size_t bytes = 0;
        cuda_check(cudaLibraryGetGlobal(&values, &bytes, runner->library, kSharedParameterArray), "finding the shared module's values");
        if (bytes != shared_values.size() * sizeof(long long)) throw GpuError("internal: the shared module's toy_param has another size than its values");
        cuda_check(cudaMemcpy(values, shared_values.data(), bytes, cudaMemcpyHostToDevice), "setting the shared module's values");
    }
    for (const GeneratedKernel& k : program.kernels) {
        cudaKernel_t timed = nullptr, counted = nullptr;
        cuda_check(cudaLibraryGetKernel(&timed, runner->library, k.function.c_str()), ("finding " + k.function).c_str());
        cuda_check(cudaLibraryGetKernel(&counted, runner->library, (k.function + "_count").c_str()), ("finding " + k.function + "_count").c_str());
        for (cudaKernel_t f : {timed, counted})
            if (k.shared_bytes > 48 * 1024)
                cudaFuncSetAttribute(reinterpret_cast<const void*>(f), cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(k.shared_bytes));
        cudaGetLastError();  // a size above the device's is refused at plan time, with the tile's name
        runner->timed.push_back(timed);
        runner->counted.push_back(counted);
    }
    const std::size_t regfile_bytes = static_cast<std::size_t>(std::max<std::int64_t>(program.regfile_floats, 1) * heads) * sizeof(float);
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&runner->regfile), regfile_bytes), "allocating the register file");
    cuda_check(cudaMemset(runner->regfile, 0, regfile_bytes), "clearing the register file");
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&runner->fault), 2 * sizeof(int)), "allocating the fault word");
    cuda_check(cudaMemset(runner->fault, 0, 2 * sizeof(int)), "clearing the fault word");
    return runner;
}

void run_generated_stage(GeneratedRunner& runner, int stage, const StageArgs& args) {
    std::int64_t vars[kMaxLoopDepth] = {};
    runner.walk(runner.program.stages[static_cast<size_t>(stage)].steps, vars, args);
}

void check_generated_fault(GeneratedRunner& runner) {
    int word[2] = {0, 0};
    cuda_check(cudaMemcpy(word, runner.fault, sizeof word, cudaMemcpyDeviceToHost), "reading the fault word");
    if (word[0] == 0) return;
    const std::size_t pc = static_cast<std::size_t>(word[0] - 1);
    const GeneratedProgram& p = runner.program;
    const std::string text = pc < p.pc_text.size() ? p.pc_text[pc] : "an instruction";
    throw GeneratedError(pc < p.pc_loc.size() ? p.pc_loc[pc] : Loc{},
                         "the generated kernel stopped at " + text + ": " + device_fault_text(static_cast<DeviceFault>(word[1])) +
                             " (toysim run at these parameters says which element and iteration)");
}

}  // namespace toysim::gpu
