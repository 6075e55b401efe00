// The timing pass: a launch's time on a named machine (isa/machine.h), from what the count-only
// walk through the cache counted (sim/exec/cached_count.h): each unit's work, the bytes that
// reach the L2 and DRAM, and the blocks the grid hands out.
//
// A launch is predicted as the slowest of its bounds, each the time one part of the machine
// would need if nothing else held it back:
//
//   matrix, special, alu,  the busiest SM's share of the unit's work at the unit's rate (shared:
//   shared                 the bytes instructions move through shared memory, a product's
//                          operands as its lanes read them, a product's destination as fp32
//                          sums). The block scheduler deals B blocks to S SMs, so the busiest
//                          SM runs ⌈B/S⌉ of them: (⌈B/S⌉ · work/B) / (rate per SM per clock · clock).
//   issue                  the busiest SM's warp instructions at 4 a clock (an H100 SM's four
//                          schedulers issue one each a clock; the FMA probe's 250.1 FLOP/clk/SM
//                          is 3.9 warp FFMAs a clock): warp_instructions_of in predict.cpp. A
//                          CUDA-core product whose warp's rows make fewer than 32 patches of
//                          4×4 issues for its idle lanes too (InstructionWork::lane_work).
//   l2, dram               all bytes at the whole GPU's bandwidth after a start-up: DRAM's the
//                          probe's short reads measured (their time less the empty kernel's and
//                          their bytes'), the L2's its pointer chase's latency.
//   chain                  each block's instructions one after another, as its warps run them
//                          between barriers. Each instruction is a phase: the longest of its
//                          unit's work, its warp instructions and its shared-memory bytes, at
//                          the share of the SM it gets (R resident blocks run in step and share
//                          every unit; a block of W warps reaches W of the 4 schedulers), then
//                          the latency of its last result (a LOAD: the L2's or DRAM's by the
//                          cache model's hit rate, once for each round of 4 elements a thread
//                          in which a block loads a tile into shared memory (generated CUDA: 4
//                          loads a lane in flight, each 16 bytes into a tile kept as the storage
//                          type, Tile::stored); a product:
//                          mma.sync's, wgmma's or an FFMA's; EXP: MUFU's; a row reduction: its
//                          shuffles), and a barrier where it leaves its result in shared memory.
//                          A product on the CUDA cores issues from the warps that hold its
//                          patches, each a patch loop (72 instructions) in 72 + a shared load's
//                          latency clocks where no other warp on its scheduler fills the wait.
//                          A LOAD's bytes move at the SM's share of the L2's bandwidth and, of
//                          what misses, of DRAM's. Copies into tiles with stages run beside the
//                          rest (the chain takes the longer), all in flight at once; a launch's
//                          serial code runs in every block. The busiest SM's units are busy for
//                          ⌈B/S⌉/R rounds' work and it waits ⌈⌈B/S⌉/R⌉ rounds' latencies, more
//                          where the toy machine's makespan of the grid on R·S workers says
//                          blocks are unequal (a causal mask).
//
// and the launch's own time (an empty kernel's, once for each grid it reaches) is added.
// CUDA generated from the program (LaunchShape::generated) runs as the code generator writes
// it: an instruction on tiles in shared memory costs its elements at the generated loops'
// rates plus a fixed share of the SM (a product on the CUDA cores, each multiply-add its loop's
// a + b · the shared-memory reads it takes, fewer where a thread computes more results; a LOAD
// into a fp32 tile, each element's conversion), and takes at least what one block alone waits for it
// (its barrier, a product's steps in turn); one on tiles in registers (the fragment layout)
// runs at the lanes' and mma.sync's rates; each rate and wait is a row of the machine,
// measured on a probe program (gpu/tools/generated_probe.sh). Its blocks wait on latencies,
// not on issue slots (Nsight Compute), so a last, partial round takes a whole one. The
// program says what the kernel's schedule is: where its tiles live (`in registers`, `in
// shared`, with `stages` for asynchronous copies), its warps and the unit its products run on;
// docs/gpu.md, "Predicted time", says where the model is weakest.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "isa/isa.h"
#include "isa/machine.h"
#include "sim/exec/cache.h"
#include "sim/exec/cached_count.h"
#include "sim/lower/program.h"
#include <vector>

namespace toysim {

// Where a tile product runs: on the CUDA cores (a fused multiply-add per multiply-add) or on
// the tensor cores, by instruction kind and input type.
enum class ProductUnit : std::uint8_t { CudaCores, MmaF16, MmaTf32, WgmmaF16 };
std::string_view product_unit_name(ProductUnit unit);

// What decides a launch's prediction: the bound that is slowest.
#define TOYSIM_TIME_BOUNDS(X)                                                              \
    X(Matrix, "matrix", "the products (tensor cores or CUDA cores, as the schedule says)") \
    X(Special, "special", "EXP, LOG and DIV on the special-function unit")                  \
    X(Alu, "alu", "element-wise work and reductions on the CUDA cores")                     \
    X(Shared, "shared", "the tiles' bytes through shared memory")                           \
    X(Issue, "issue", "warp instructions at the SM's four schedulers' one a clock each")    \
    X(L2, "l2", "bytes through the L2 at its bandwidth")                                    \
    X(Dram, "dram", "bytes to and from DRAM at its bandwidth")                               \
    X(Chain, "chain", "each block's instructions one after another (waits included), R blocks side by side")

enum class TimeBound : std::uint8_t {
#define X(NAME, KEY, MEANING) NAME,
    TOYSIM_TIME_BOUNDS(X)
#undef X
};
inline constexpr int kTimeBoundCount = 0
#define X(NAME, KEY, MEANING) +1
    TOYSIM_TIME_BOUNDS(X)
#undef X
    ;
std::string_view time_bound_key(TimeBound bound);

// An element of a tile on chip (shared memory or registers), for storage elements of
// `storage_bytes`: fp32 where the products run on the CUDA cores (the course's kernels convert a
// tile as they load it, not in the inner loop: gpu/kernels/attention_forward.cu says why;
// generated code keeps every tile fp32), the storage type where the tensor cores read it.
inline int on_chip_element_bytes(ProductUnit products, int storage_bytes) { return products == ProductUnit::CudaCores ? 4 : storage_bytes; }

// How the launch runs: its blocks and how many an SM holds at once, and where its products run.
struct LaunchShape {
    std::uint64_t blocks = 1;          // grid iterations, all heads (a serial launch: one block)
    std::int64_t resident_per_sm = 1;  // blocks an SM holds at once
    ProductUnit products = ProductUnit::CudaCores;
    std::uint32_t sector_bytes = 32;   // the cache's sector (what its hits and misses count)
    int tile_element_bytes = 4;        // an element of the arrays (the storage type's)
    int shared_element_bytes = 0;      // a tile's element in shared memory; 0: on_chip_element_bytes's
    int shared_bytes() const { return shared_element_bytes > 0 ? shared_element_bytes : on_chip_element_bytes(products, tile_element_bytes); }
    int warps = 4;                     // a block's warps
    // Generated CUDA (gpu/codegen/): its element loops and products run at the rates the
    // machine measured for the code generator's own loops, not at the units' peaks.
    bool generated = false;
};

// A launch of CUDA generated from the program (gpu/codegen/): a block of `threads`, its tiles in
// shared memory as fp32, its loops at the rates the machine measured for generated code.
inline void run_as_generated(LaunchShape& shape, int threads) {
    shape.warps = threads >= 32 ? threads / 32 : 1;
    shape.shared_element_bytes = 4;
    shape.generated = true;
}

// Where the chain bound's time goes, on the busiest SM: the loads and stores that wait in line
// (their latency and bytes), the asynchronous copies (overlapped with the rest: the chain takes
// the longer), and the products, the special-function unit and element-wise work at the rate
// the blocks get, and the latencies their results are waited for.
#define TOYSIM_CHAIN_PARTS(X)                                         \
    X(Memory, "memory", "loads and stores, waited for")              \
    X(Copies, "copies", "asynchronous copies (overlapping the rest)") \
    X(Products, "products", "products")                               \
    X(Special, "special", "EXP, LOG, DIV")                            \
    X(Alu, "alu", "element-wise work and reductions")                 \
    X(Waits, "waits", "latencies of results waited for")

enum class ChainPart : std::uint8_t {
#define X(NAME, KEY, MEANING) NAME,
    TOYSIM_CHAIN_PARTS(X)
#undef X
};
inline constexpr int kChainPartCount = 0
#define X(NAME, KEY, MEANING) +1
    TOYSIM_CHAIN_PARTS(X)
#undef X
    ;
std::string_view chain_part_key(ChainPart part);

struct LaunchTime {
    double seconds = 0;                        // the slowest bound plus the launch's own time
    TimeBound bound = TimeBound::Chain;      // which bound it is
    std::array<double, kTimeBoundCount> each{};  // every bound, seconds
    std::array<double, kChainPartCount> chain{};  // the chain bound's parts, seconds
    double launch_seconds = 0;                 // the launch's own time, included in seconds
    std::uint64_t busiest_sm_blocks = 0;       // ⌈B/S⌉
    double flops = 0;                          // 2 per multiply-add
    double shared_bytes = 0;                   // through shared memory's load path (Nsight: wavefronts × 128)
};

LaunchTime predict_launch(const MachineSpec& machine, const LaunchWork& work, const CacheCounts& counts, const LaunchShape& shape);

// Why the model gives a launch no time: its work says nothing of the threads a GPU runs it on.
enum class Untimed : std::uint8_t {
    Timed,
    NoGrid,       // serial code, no parallel loop
    SerialLoops,  // serial loops beside its grid
    ScalarGrid,   // a grid of scalar code: a thread an iteration on a GPU, not a block
};
Untimed untimed(const LaunchWork& work);
// A few words for a table's cell: "no parallel loop".
std::string_view untimed_tag(Untimed why);
// What follows "launch NAME of the program ": "has no parallel loop: its time on the GPU …".
std::string_view untimed_reason(Untimed why);
// The slowest bound after the one that decides: how far the decision is from changing.
TimeBound runner_up(const LaunchTime& time);

// The unit a program's `products` line names (cuda, mma, mma_tf32, wgmma).
ProductUnit product_unit_of(const Program& program);

// How many blocks of a program an SM holds at once, from its schedule, as the occupancy
// calculator finds it for a kernel: threads = 32 · warps; shared memory = the tiles kept there
// (× their stages); registers a thread = the bytes of the tiles kept in registers in 32-bit
// registers, spread over the threads, plus 32 for addresses, indices and loop state (an
// assumption: a kernel's own count is in its ptxas report). A tile holds `element_bytes` an
// element, but a product's destination fp32 sums. Throws ToyError when one
// block does not fit an SM.
struct Occupancy {
    std::int64_t threads = 0, shared_bytes = 0, registers_per_thread = 0;
    std::int64_t resident = 0;  // blocks per SM
    std::string limit;          // what stops one more: "shared memory", "registers", "threads", "blocks"
};
Occupancy occupancy(const Program& program, const MachineSpec& machine, int element_bytes);

// A catalog kernel's block as its launcher plans it (gpu::StagePlan, read from the CUDA library
// without a device): its threads, its dynamic shared memory, and the blocks an SM its
// __launch_bounds__ ask ptxas to fit (0: none asked).
struct KernelBlock {
    int threads = 0;
    std::int64_t shared_bytes = 0;
    int min_blocks = 0;
};
// How many of those blocks an SM holds: its threads and shared memory as the kernel has them
// (not the schedule's tiles: fa2_causal's P reuses S's memory); registers a thread, where the
// launch bounds ask for M blocks, ptxas's budget for M (65536 / (M · threads), down to a multiple of
// 8, at most 255), which the hand-written kernels spend (fa2_causal on the H100: 80 of 80 at B = 16
// to 64, so 3 blocks where the schedule's estimate said 7, 6 and 2); where they ask none, the
// schedule's estimate (occupancy()), at most the 255 ptxas allows. Never throws for registers: the
// kernel runs, spilling what does not fit.
Occupancy kernel_occupancy(const KernelBlock& block, const Program& program, const MachineSpec& machine, int element_bytes);
// The registers a thread ptxas may use when __launch_bounds__ ask for `min_blocks` blocks of
// `threads` an SM: the SM's registers over them (threads in whole warps), down to a multiple of
// 8, at most 255.
std::int64_t launch_bounds_registers(const MachineSpec& machine, int min_blocks, std::int64_t threads);

// A program's time on a named machine without a GPU: each top-level loop a launch from a cold
// L2 (the program's cache, or the machine's preset), its grid on the resident blocks that
// occupancy() finds × the SMs, `heads` copies sharing the L2.
struct ProgramTime {
    Occupancy occupancy;
    ProductUnit products = ProductUnit::CudaCores;
    std::vector<LaunchTime> launches;    // one per top-level loop
    std::vector<Untimed> untimed;        // per launch: why it has no prediction (Timed: it has one)
    // The first launch without a time, as "launch 2 runs scalar code …", or "" where every launch has one.
    std::string first_untimed() const;
    double seconds = 0;                  // every launch's, summed
    // Bytes a thread keeps in local memory (registers ptxas spilled, generated CUDA): their
    // traffic is not in `seconds`.
    int spilled_bytes = 0;
    CachedCountOptions walk;             // the walk the prediction read, and what it counted
    CachedCount counted;
};
// CUDA generated from the program (gpu/codegen/) runs its own way, whatever the program's
// schedule says: each launch a block of `threads[k]`, its tiles in shared memory as fp32,
// `resident[k]` blocks an SM, its loops at the rates the machine measured for generated code.
struct GeneratedLaunches {
    ProductUnit products = ProductUnit::CudaCores;
    std::vector<int> threads;             // per launch
    std::vector<std::int64_t> resident;   // per launch, blocks an SM holds at once
    std::vector<int> registers;           // per launch, a thread's registers (0: not known)
    int spilled_bytes = 0;                // the most a thread of any launch keeps in local memory (ptxas), not timed
    std::vector<std::int32_t> launch_pcs; // where each launch begins (serial code between grids is a launch of its own)
    bool registers_from_compiler = false; // every launch's count is ptxas's (NVRTC ran here); else some are estimated
};
// `kernel`: a catalog kernel's occupancy for each launch (kernel_occupancy), in place of the
// schedule's.
ProgramTime predict_program(const Program& program, const MachineSpec& machine, std::int64_t heads, const GeneratedLaunches* generated = nullptr,
                            const std::vector<Occupancy>* kernel = nullptr);
// The program on the machine's own L2 (the cache preset of its name) where it declares no cache.
Program on_machine_cache(const Program& program, const MachineSpec& machine);

}  // namespace toysim
