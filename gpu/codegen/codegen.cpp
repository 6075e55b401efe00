// The program's lowered code as CUDA (gpu/codegen/codegen.h says how it maps): the module's layout
// here, each instruction's code in codegen_emit.cpp.
#include "gpu/codegen/codegen.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "gpu/codegen/codegen_emit.h"
#include "sim/lower/disasm.h"

namespace toysim::gpu {

namespace {

// One top-level item of a pc range: a grid, a serial loop around grids (a host loop), or a run
// of serial code (instructions and loops without a grid).
struct Item {
    enum class Kind { Serial, Grid, HostLoop } kind;
    std::int32_t first = 0, last = 0;  // pcs [first, last)
    int loop = -1;                     // Grid, HostLoop
    std::vector<Item> children;        // HostLoop
};

bool holds_grid(const Program& p, std::int32_t first, std::int32_t last) {
    for (std::int32_t pc = first; pc < last; ++pc)
        if (p.code[static_cast<size_t>(pc)].code == Code::LoopBegin && p.loops[static_cast<size_t>(p.code[static_cast<size_t>(pc)].loop)].parallel)
            return true;
    return false;
}

std::vector<Item> partition(const Program& p, std::int32_t first, std::int32_t last) {
    std::vector<Item> items;
    auto serial = [&](std::int32_t a, std::int32_t b) {
        if (!items.empty() && items.back().kind == Item::Kind::Serial && items.back().last == a) items.back().last = b;
        else items.push_back({Item::Kind::Serial, a, b, -1, {}});
    };
    for (std::int32_t pc = first; pc < last;) {
        const Inst& in = p.code[static_cast<size_t>(pc)];
        if (in.code == Code::Halt) break;
        if (in.code != Code::LoopBegin) {
            serial(pc, pc + 1);
            ++pc;
            continue;
        }
        const std::int32_t end = in.jump + 1;  // past its LoopEnd
        const LoopInfo& l = p.loops[static_cast<size_t>(in.loop)];
        if (l.parallel) items.push_back({Item::Kind::Grid, pc, end, in.loop, {}});
        else if (holds_grid(p, pc + 1, end - 1)) items.push_back({Item::Kind::HostLoop, pc, end, in.loop, partition(p, pc + 1, end - 1)});
        else serial(pc, end);
        pc = end;
    }
    return items;
}

class ModuleBuilder {
public:
    ModuleBuilder(const Program& p, GeneratedProgram& out) : p_(p), out_(out), layout_(p), fp32_(fp32_arrays(p)) {}

    void build() {
        std::vector<Item> items = partition(p_, 0, static_cast<std::int32_t>(p_.code.size()));
        // What serial code leaves in worker 0's register file, for the code after it.
        for (const Item& item : items) collect_serial_writes(item);
        for (const Item& item : items) collect_reads(item);
        header();
        const size_t kernels_at = out_.source.size();
        for (const Item& item : items) {
            GeneratedStage stage;
            stage.name = stage_name(item);
            stage.first_pc = item.first;
            stage.steps = steps(item, {});
            out_.stages.push_back(std::move(stage));
        }
        // The wgmma instructions the kernels issue, before them (the prelude declares the templates).
        std::string instructions;
        for (const WgmmaShape& w : wgmma_) instructions += wgmma_instruction(w, out_.dtype);
        if (!instructions.empty())
            out_.source.insert(kernels_at, "\n// The wgmma instructions of this module's products (Hopper: compiled for sm_90a).\n" + instructions);
        out_.regfile_floats = layout_.regfile_floats();
    }

private:
    const Program& p_;
    GeneratedProgram& out_;
    RegisterFileLayout layout_;
    std::vector<bool> fp32_;
    Footprint serial_writes_;          // every serial kernel's
    Footprint serial_writes_so_far_;   // the serial kernels' before the one being generated
    std::set<WgmmaShape> wgmma_;       // every kernel's

    // Every piece of code's footprint, in program order.
    std::vector<std::pair<std::int32_t, Footprint>> reads_;
    void collect_reads(const Item& item) {
        if (item.kind != Item::Kind::HostLoop) reads_.emplace_back(item.first, footprint(p_, item.first, item.last));
        for (const Item& c : item.children) collect_reads(c);
    }
    Footprint read_after(std::int32_t pc, bool in_host_loop) const {
        Footprint f = footprint(p_, 0, 0);
        for (const auto& [first, fp] : reads_)
            if (in_host_loop || first > pc) f.add(fp);
        return f;
    }

    void collect_serial_writes(const Item& item) {
        if (item.kind == Item::Kind::Serial) serial_writes_.add(footprint(p_, item.first, item.last));
        for (const Item& c : item.children) collect_serial_writes(c);
    }

    std::string stage_name(const Item& item) const {
        const int line = item.kind == Item::Kind::Serial ? code_loc(p_, item.first).line
                                                         : p_.loops[static_cast<size_t>(item.loop)].loc.line;
        switch (item.kind) {
            case Item::Kind::Grid: return fmt::format("parallel for {} (line {})", p_.loops[static_cast<size_t>(item.loop)].var, line);
            case Item::Kind::HostLoop: return fmt::format("for {} (line {})", p_.loops[static_cast<size_t>(item.loop)].var, line);
            case Item::Kind::Serial: break;
        }
        return fmt::format("serial (line {})", line);
    }

    void header() {
        std::string& s = out_.source;
        // gpu/codegen.cpp: this file's path before gpu/ had folders, kept so that the generated
        // modules stayed byte-identical through the move.
        s += fmt::format("// {}, as CUDA: generated by `toysim gpu cuda` (gpu/codegen.cpp).\n", out_.program_path);
        s += "//\n// Parameters (compile-time constants of this module):";
        for (const auto& [name, value] : p_.params) s += fmt::format(" {} = {}", name, value);
        std::string kept;
        for (size_t a = 0; a < p_.arrays.size(); ++a)
            if (fp32_[a]) kept += (kept.empty() ? "" : ", ") + p_.arrays[a].name;
        s += fmt::format("\n// Arrays are stored as {} (T){}; tiles and registers hold fp32, in shared memory.\n", dtype_name(out_.dtype),
                         kept.empty() || out_.dtype == DType::F32 ? "" : fmt::format(", but {} (read and written: a running state) as fp32", kept));
        s += "// Each kernel has a timed variant and a counting one (suffix _count): the counting one adds\n"
             "// the elements every LOAD and STORE moves to its array's counters, as the simulator counts.\n";
        const char* type = out_.dtype == DType::F32 ? "float" : out_.dtype == DType::F16 ? "__half" : "__nv_bfloat16";
        s += fmt::format("typedef {} T;\n", type);
        s += "// FAULT(pc, code) stops the block at the instruction at pc: code 1, a slice outside its array; 2, operand shapes\n"
             "// that do not fit; 3, a result larger than its tile; 4, a tile read before it was written; 5, R[expr] outside.\n"
             "#define FAULT(pc, code) do { fault_at(fault, pc, code); return; } while (0)\n";
    }

    std::vector<GeneratedStep> steps(const Item& item, std::vector<int> host_loops) {
        std::vector<GeneratedStep> out;
        if (item.kind == Item::Kind::HostLoop) {
            GeneratedStep step;
            step.loop = p_.loops[static_cast<size_t>(item.loop)];
            host_loops.push_back(item.loop);
            for (const Item& c : item.children)
                for (auto& s : steps(c, host_loops)) step.body.push_back(std::move(s));
            out.push_back(std::move(step));
            return out;
        }
        GeneratedStep step;
        step.kernel = kernel(item, host_loops);
        out.push_back(std::move(step));
        return out;
    }

    int kernel(const Item& item, const std::vector<int>& host_loops) {
        const int index = static_cast<int>(out_.kernels.size());
        GeneratedKernel k;
        std::int32_t body_first = item.first, body_last = item.last;
        if (item.kind == Item::Kind::Grid) {
            // The grid: directly nested parallel loops, outermost first.
            std::int32_t pc = item.first;
            while (true) {
                const Inst& in = p_.code[static_cast<size_t>(pc)];
                const LoopInfo& l = p_.loops[static_cast<size_t>(in.loop)];
                k.grid.push_back(l);
                body_first = pc + 1;
                body_last = in.jump;
                if (l.grid_inner) break;
                pc = pc + 1;
            }
            k.loc = k.grid.front().loc;
            k.function = fmt::format("k{}_parallel_for_{}", index, k.grid.front().var);
        } else {
            k.loc = code_loc(p_, item.first);
            k.function = fmt::format("k{}_serial_line{}", index, k.loc.line);
        }
        KernelEmitter e(p_, layout_, fp32_, out_.tensor_cores, out_.block_threads);
        KernelEmitter::Shape shape{k.function, body_first, body_last, k.grid, host_loops, item.kind == Item::Kind::Serial};
        // What worker 0 may have left: in a host loop, anything a serial kernel writes (the loop
        // comes back); elsewhere, what the serial kernels before this one wrote.
        const Footprint& before = host_loops.empty() ? serial_writes_so_far_ : serial_writes_;
        EmittedKernel emitted = e.emit(shape, before, read_after(item.first, !host_loops.empty()));
        if (item.kind == Item::Kind::Serial) serial_writes_so_far_.add(footprint(p_, item.first, item.last));
        static_cast<KernelLaunchFacts&>(k) = emitted;
        out_.slow_paths.insert(out_.slow_paths.end(), emitted.slow_paths.begin(), emitted.slow_paths.end());
        out_.source += emitted.source;
        wgmma_.insert(emitted.wgmma.begin(), emitted.wgmma.end());
        out_.kernels.push_back(std::move(k));
        return index;
    }
};

}  // namespace

// On compute capability 9.0, for sm_90a: the target whose code may use wgmma (the prelude's
// TOYSIM_WGMMA), and which runs only there, as the module is compiled for the device in hand.
// TOYSIM_NO_WGMMA=1 compiles for plain sm_90 instead: the same tiles in the same swizzle, read
// by ldmatrix + mma.sync, as on GPUs before Hopper (to compare the two, and to test that path).
NvrtcCompiled compile_module_unit(const std::string& unit, const std::string& program_path, int arch) {
    return nvrtc_compile(unit, program_path + ".cu", arch, {"-std=c++17", "-lineinfo"}, arch == kHopperArch && !env_flag("TOYSIM_NO_WGMMA"));
}

NvrtcCompiled compile_generated(const GeneratedProgram& g, int arch) { return compile_module_unit(g.compile_unit(), g.program_path, arch); }

std::string GeneratedProgram::compile_unit() const { return device_prelude(block_threads / 32) + "\n" + source; }

std::shared_ptr<const GeneratedProgram> generate_cuda(const Program& p, DType dtype, bool tensor_cores) {
    refuse_devices(p, "generated CUDA");
    // (gpu run refuses it first, naming the FP8 kernels; this keeps any other caller honest.)
    if (dtype == DType::E4M3) throw ToyError(ErrorKind::Input, Loc{}, "generated CUDA runs in fp32, fp16 or bf16, not e4m3");
    auto out = std::make_shared<GeneratedProgram>();
    out->program_path = p.source ? p.source->path : "program";
    // Only the file's name: a module's text (and so its cache key) does not depend on where
    // the program was read from.
    if (auto slash = out->program_path.rfind('/'); slash != std::string::npos) out->program_path = out->program_path.substr(slash + 1);
    out->dtype = dtype;
    out->tensor_cores = tensor_cores && dtype != DType::F32;
    out->pc_loc.resize(p.code.size());
    out->pc_text.resize(p.code.size());
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        if (!is_instruction(p.code[pc].code)) continue;
        out->pc_loc[pc] = p.origin[pc]->loc;
        out->pc_text[pc] = render_instruction(p, static_cast<std::int32_t>(pc));
    }
    // A block kernel's threads: the program's `warps W` where its products may run on the
    // tensor cores (fp16, bf16), whose fragments it splits in 16-row blocks a warp
    // (fa2_v3_mma's 4 warps of 32 rows); else 8 warps, the shape the CUDA-core loops were
    // measured in (gpu/tools/generated_probe.sh). A product left on the CUDA cores holds at
    // most 8×8 of its result a thread: where W warps are too few for one, the module takes a
    // warp more at a time until it fits, and says so at the `warps` line.
    // Where W warps' tiles in registers would pass what a thread holds without spilling
    // (kLiveFragmentFloats, after tiles that can leave for shared memory have), the module
    // takes twice the warps, each holding half the rows, if that brings them under it: spilled
    // registers cost more than the second warp's shared-memory reads (the causal schedule at d =
    // 128, B = 128 on an H200: 4 warps 0.54-0.60x the hand-written v3, 8 warps 0.81-0.91x).
    const bool declared = p.warps_declared && out->tensor_cores;
    const GeneratedProgram before = *out;
    auto live_floats = [](const GeneratedProgram& g) {
        std::int64_t most = 0;
        for (const GeneratedKernel& k : g.kernels) most = std::max(most, k.live_register_floats);
        return most;
    };
    std::string more_warps;  // why the module runs more warps than the program says
    for (int threads = declared ? static_cast<int>(32 * p.warps) : kBlockThreads;; threads += 32) {
        out->block_threads = threads;
        try {
            ModuleBuilder(p, *out).build();
        } catch (const ProductTooWide&) {
            if (!declared || threads >= 32 * static_cast<int>(kMaxWarps)) throw;
            *out = before;
            more_warps = "is too few for a product on the CUDA cores (a thread holds at most 8 × 8 of its result)";
            continue;
        }
        if (const std::int64_t live = live_floats(*out); declared && live > kLiveFragmentFloats && 2 * threads <= 32 * static_cast<int>(kMaxWarps)) {
            GeneratedProgram doubled = before;
            doubled.block_threads = 2 * threads;
            try {
                ModuleBuilder(p, doubled).build();
                if (const std::int64_t halved = live_floats(doubled); halved <= kLiveFragmentFloats) {
                    more_warps = fmt::format("would leave a thread {} floats of tiles in registers at once, more than the {} that leave room for "
                                             "the rest (ptxas would spill; {} with twice the warps, each holding half the rows)",
                                             live, kLiveFragmentFloats, halved);
                    *out = std::move(doubled);
                    threads *= 2;
                }
            } catch (const ProductTooWide&) {
            }
        }
        if (declared && threads != 32 * p.warps && p.tree && p.tree->warps)
            out->slow_paths.insert(out->slow_paths.begin(),
                                   {p.tree->warps->loc, "", fmt::format("`warps {}` {}: its kernels run {} warps", p.warps, more_warps, threads / 32)});
        break;
    }
    // Without a `warps` line a block has 8 warps of 16 rows: where its tiles in registers have
    // 128 rows or more, `warps 4` would give a warp 32, so that each fragment of a product's b
    // read from shared memory feeds two products (fa2_v3_mma's schedule): said at the grid.
    if (!p.warps_declared && out->tensor_cores)
        for (const GeneratedKernel& k : out->kernels) {
            bool wide = false;
            for (size_t t = 0; t < k.tiles_in_registers.size(); ++t) wide = wide || (k.tiles_in_registers[t] && p.tiles[t].rows >= 128 && p.tiles[t].rows % 64 == 0);
            if (!wide) continue;
            out->slow_paths.push_back({k.loc, "", "8 warps of 16 rows a tile (no `warps` line): `warps 4` would give each warp 32 rows, so that each "
                                                  "fragment of a product's right operand read from shared memory feeds two products"});
            break;
        }
    // Without the tensor cores every product runs on the CUDA cores: said once, at the first.
    if (!out->tensor_cores)
        for (size_t pc = 0; pc < p.code.size(); ++pc)
            if (is_instruction(p.code[pc].code) && info(p.op_at(static_cast<std::int32_t>(pc))).shape == OpShape::Product) {
                out->slow_paths.insert(out->slow_paths.begin(),
                                       {out->pc_loc[pc], out->pc_text[pc], dtype == DType::F32 ? "fp32: every product runs on the CUDA cores (the tensor cores take "
                                                                               "fp16 and bf16: --dtype)"
                                                                             : "--no-tensor-cores: every product runs on the CUDA cores"});
                break;
            }

    // The catalog row: every array of the program, one stage per top-level item.
    out->owned_names.push_back("generated");
    out->owned_names.push_back(out->program_path);
    out->spec.name = out->owned_names[0];
    out->spec.source = out->owned_names[1];
    out->spec.summary = "CUDA generated from the program (toysim gpu cuda), compiled at run time with NVRTC";
    const std::vector<bool> fp32 = fp32_arrays(p);
    for (size_t a = 0; a < p.arrays.size(); ++a) {
        out->owned_names.push_back(p.arrays[a].name);
        out->spec.arrays.push_back({out->owned_names.back(), fp32[a]});
    }
    for (const auto& s : out->stages) {
        out->owned_names.push_back(s.name);
        out->spec.stages.push_back(out->owned_names.back());
    }
    out->spec.dtypes = {DType::F32, DType::F16, DType::BF16};
    return out;
}

}  // namespace toysim::gpu
