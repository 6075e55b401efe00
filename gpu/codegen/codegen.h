// CUDA generated from a .toy program (issue "Any tile program on the GPU"): the program's
// lowered code, in the same order and with the same DRAM traffic, as CUDA C++ that NVRTC
// compiles at run time. Plain C++: every build (and `toysim gpu cuda`) generates; only a CUDA
// build launches (gpu/runtime/generated_launch.cu).
//
// How a program maps onto the GPU:
//   - Each top-level `parallel for` grid is a kernel with one block per iteration (a tile
//     program) or one thread per iteration (a scalar program); heads are the grid's y.
//   - Serial code between grids is a kernel of its own, run by one block (or thread) per head.
//   - A serial loop that holds a grid is a loop on the host, launching its body's kernels
//     each iteration with the loop variables as kernel arguments.
//   - Tiles live in shared memory, in fp32; scalar registers in shared memory (tile kernels)
//     or in the thread's registers (scalar kernels). Worker 0's register file, which serial
//     code leaves for the grids after it, is kept in global memory between launches
//     ("regfile": the toy machine's SRAM, not one of the program's arrays, so never counted).
//   - Parameters are compile-time constants: tile shapes and loop bounds are numbers the
//     compiler unrolls by. The generated source is compiled once per parameter set and
//     cached on disk (gpu/codegen/nvrtc.h); the runs of a sweep whose modules differ only in
//     integers share one module that reads them at run time (gpu/codegen/shared_module.h).
//   - Every LOAD, STORE and STORE_ADD adds the elements it moves to its array's counters in
//     the counting variant (kCount): the simulator's counts, by construction.
//   - What the simulator would stop on (a slice outside its array, shapes that do not fit)
//     stops the kernel with the instruction's pc; the host reports it at its line.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/codegen/nvrtc.h"
#include "gpu/kernels/kernels.h"
#include "sim/lower/program.h"

namespace toysim::gpu {

// What kept an instruction (or a kernel) off the generator's fastest path, at its line: said
// to the student by `toysim gpu run` and `toysim gpu cuda`, so that they know what to change.
struct SlowPath {
    Loc loc;
    std::string instruction;  // as the listing shows it; "" for a kernel's or the module's
    std::string why;          // one line
};

// How a kernel launches and what a block needs: what writing it decided (KernelEmitter::emit).
struct KernelLaunchFacts {
    bool per_thread = false;         // scalar code: one thread per iteration (else a block per iteration)
    int lanes = 1;                   // per_thread: threads an iteration (a scalar grid's loops over registers spread over them)
    int threads = 256;               // block size
    // A block kernel's __launch_bounds__ minimum of blocks an SM: 2 (at most 128 registers a
    // thread) unless its tiles in registers hold more than 168 floats a thread; then 1 (255
    // registers), faster there than two blocks' spills (codegen_emit.cpp has the measurements).
    int min_blocks = 2;
    std::int64_t shared_bytes = 0;   // dynamic shared memory of a block: the tiles and scalar registers
    std::int64_t spill_floats = 0;   // a block's tiles in global memory, where shared memory cannot hold them all
    // Per tile: kept in registers, in the tensor cores' fragment layout (codegen_fragment.cpp);
    // empty where the kernel keeps every tile in shared memory.
    std::vector<bool> tiles_in_registers;
    std::int64_t register_floats = 0;  // a thread's floats of those tiles, as the kernel declares them
    std::int64_t live_register_floats = 0;  // the most of them a thread holds at once (past kLiveFragmentFloats, ptxas spills)
    // Per tile: kept in shared memory as the arrays' storage type (a product's b that only LOADs
    // fill: read 16 bytes at a time); empty where none is.
    std::vector<bool> tiles_stored;
    // Products on the CUDA cores: the results each thread computes (rows × columns of the
    // result) at the tiles' full shapes, from which the time model counts the shared-memory
    // reads a multiply-add takes (an element of a read for each of a thread's rows, one of b for
    // each of its columns), and whether its loop reads its operands an element at a time
    // (tile_product: b not transposed and a lane's columns not 4, or strides or shapes not
    // multiples of 4), not 16 bytes at a time (tile_product4).
    struct ThreadBlocking {
        std::int32_t pc = 0;
        int rows = 0, cols = 0;
        bool by_element = false;
    };
    std::vector<ThreadBlocking> thread_blockings;
    // Per tile: the stages of its LOADs where they are asynchronous copies (the program's `stages
    // S`, on a tile kept as T that a loop loads first thing: cp.async, S − 1 tiles ahead), else 0;
    // empty where none is.
    std::vector<int> tile_stages;
    std::vector<SlowPath> slow_paths;  // what kept it off the fastest path, in program order
    // The tile that takes the most shared memory, for the message when a block's do not fit.
    std::string largest_tile;
    std::int64_t largest_tile_bytes = 0;
    Loc largest_tile_loc;
};

// One kernel of the generated module: a grid, or a run of serial code.
struct GeneratedKernel : KernelLaunchFacts {
    std::string function;            // the timed variant's name; the counting one adds "_count"
    std::vector<LoopInfo> grid;      // the grid's loops, outermost first; empty: serial code (one iteration)
    Loc loc;                         // the grid's `parallel for`, or the serial code's first instruction
};

// The host's schedule: launches, and serial loops around them.
struct GeneratedStep {
    int kernel = -1;                  // >= 0: launch this kernel
    std::optional<LoopInfo> loop;     // else a host loop over `body`
    std::vector<GeneratedStep> body;
};

// A stage of `toysim gpu run`: one top-level item of the program (a grid, a host loop, or a
// run of serial code), measured and timed on its own.
struct GeneratedStage {
    std::string name;                 // "parallel for i (line 53)"
    std::int32_t first_pc = 0;        // where its top-level item begins in the program's code
    std::vector<GeneratedStep> steps;
};

// What a generated module cannot do on this device, or a kernel that stopped at an
// instruction: located at the program's line (gpu_run rethrows it as a ToyError).
struct GeneratedError : GpuError {
    Loc loc;
    GeneratedError(Loc where, const std::string& message) : GpuError(message), loc(where) {}
};

struct GeneratedProgram {
    std::string program_path;
    DType dtype = DType::F32;
    bool tensor_cores = false;        // some products may run on the tensor cores
    // A block kernel's threads: 32 × the program's `warps` where it says, else 256 (8 warps).
    // The prelude's tile loops and the fragment layout divide rows by its warps.
    int block_threads = 256;
    std::string source;               // the program's kernels: what `toysim gpu cuda` prints
    std::vector<GeneratedKernel> kernels;
    std::vector<GeneratedStage> stages;
    std::int64_t regfile_floats = 0;  // worker 0's register file, per head
    std::vector<Loc> pc_loc;          // per pc: where a fault there is reported
    std::vector<std::string> pc_text; // per pc: the instruction as the listing shows it
    std::optional<double> flops_per_head;  // 2 per multiply-add (MAC, MAC_Z); none without any
    std::vector<SlowPath> slow_paths;      // every kernel's, and the module's (fp32: no tensor cores)
    // The catalog row `toysim gpu run` uses: the program's arrays (all of them, in declaration
    // order) and one stage per GeneratedStage. Its string_views point into this object.
    KernelSpec spec;
    std::deque<std::string> owned_names;  // a deque: what it holds never moves

    // The whole translation unit NVRTC compiles: the device prelude, then `source`.
    std::string compile_unit() const;
};

// Generates the module for `program` (bound to its parameters) with arrays stored as `dtype`.
// tensor_cores: in fp16 and bf16, products of whole 16×16 fragments run on the tensor cores
// (tf32 inputs, fp32 sums); fp32 runs, and false, keep every product on the CUDA cores.
// Throws ToyError (located) for what cannot be generated.
std::shared_ptr<const GeneratedProgram> generate_cuda(const Program& program, DType dtype, bool tensor_cores = true);

// The module compiled with NVRTC for sm_<arch> (nvrtc_compile: the disk cache, its errors).
NvrtcCompiled compile_generated(const GeneratedProgram& generated, int arch);
// The same for a compile unit of its own (a module that several parameter sets share:
// gpu/codegen/shared_module.h), named after the program it comes from.
NvrtcCompiled compile_module_unit(const std::string& unit, const std::string& program_path, int arch);
// sm_90, the H100 that the h100 machine models: what a module is compiled for without a device.
inline constexpr int kHopperArch = 90;

// The device prelude every generated module starts with: element types, the ISA's primitives
// on fp32 (from isa/primitives.h), and the block-cooperative tile loops.
std::string device_prelude(int warps = 8);

// The pc's fault code (a generated kernel stops with it) as the located message the host throws.
enum class DeviceFault : int { None = 0, SliceOutside = 1, Shape = 2, TileOverflow = 3, TileUnwritten = 4, RegisterOutside = 5 };
// Inline: the CUDA kernels' library (libtoysim_cuda.so) words a fault as toysim does.
inline std::string device_fault_text(DeviceFault fault) {
    switch (fault) {
        case DeviceFault::None: return "";
        case DeviceFault::SliceOutside: return "a slice or an element outside its array (or an empty slice)";
        case DeviceFault::Shape: return "operand shapes that do not fit together";
        case DeviceFault::TileOverflow: return "a result larger than its tile";
        case DeviceFault::TileUnwritten: return "a tile read before it was written";
        case DeviceFault::RegisterOutside: return "an indexed register outside the register file";
    }
    return "an unknown fault";
}

}  // namespace toysim::gpu
