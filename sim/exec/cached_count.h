// The cache's counts without running the program's arithmetic: the count-only fast path of a
// run with a cache (issue "A modeled L2"), fast enough for the sizes a GPU runs.
//
// What reaches DRAM past a cache depends only on the order of the DRAM accesses, and that
// order depends only on the control flow and each instruction's cycles, never on a value. So
// this walks the program's code as the machine would, keeping per worker its position, its
// loop variables and its tiles' shapes (which set a tile instruction's units of work, and so
// its cycles), and feeds each LOAD's and STORE's block to the cache: no register holds a
// number, nothing is checked, and a tile row is one cache lookup per line it touches.
//
// The order is the machine's (sim/exec/interleave.h): the instructions of the running workers
// one at a time, each taken by the worker whose clock is earliest (the lowest-numbered among
// equals), a grid's iterations handed out in order to the first free worker. With one head and
// the program's own workers, the cache sees exactly what a run through DramCache sees (a test
// checks every shipped program).
//
// Heads: the GPU runs `heads` independent copies of the problem, each on its own slice of
// every array (a grid's extra dimension). Here every head runs the program's serial code at
// once, interleaved like workers, and a grid's iterations are handed out head after head
// (head 0's first, as a GPU's blockIdx.y): the copies share the cache as the GPU's blocks share
// its L2.
//
// Runs of iterations: a scalar loop does the same instructions every iteration, and its
// accesses are affine in the loop variable, so the walk need not take its iterations one by
// one. An innermost loop of scalar instructions that touches no memory is counted whole (only
// its cycles and instructions matter). After an iteration of one that does, walked
// instruction by instruction, the iterations that follow while some of its accesses stay in
// the same sectors are counted at once: those accesses are hits that change nothing in the
// cache (their lines were just touched in the same order, as the proof in cached_count.cpp
// says), and the others are sent to the cache as they come. Where that proof does not hold (a
// set too full, another worker's access due in between), the walk takes iterations one at a
// time; element_walk takes every iteration so, and a test checks both give the same counts.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/exec/counters.h"
#include "sim/lower/program.h"
#include "support/diag.h"

namespace toysim {

// The walk's one limit, in its units of work: an instruction or a loop step walked on its own,
// a run of iterations counted at once, a cache line looked up (a tile's row is one or more).
// A unit took 4 to 30 ns on a 2-core machine of this project's kind (matmul_outer walked
// element by element 4 ns, in runs 12 ns; tile programs 16 to 28 ns), so 10^10 of them is one
// to five minutes. A walk that reaches it stops with WalkTooLong (cost --cache fails with it,
// diff says it in place of its prediction) rather than run for hours at sizes nobody meant;
// it is counted in work and not in instructions because runs make instructions cheap.
inline constexpr std::uint64_t kMaxWalkWork = 10'000'000'000ULL;

// The walk reached CachedCountOptions::max_work.
struct WalkTooLong : ToyError {
    using ToyError::ToyError;
};

struct CachedCountOptions {
    std::int64_t heads = 1;
    std::int64_t workers = 0;        // a grid's workers; 0: the program's (`workers P`)
    // With cold_launches: launch k's grids on launch_workers[k] workers where that is given
    // and positive (a GPU holds as many blocks of each kernel as its occupancy allows), else on
    // `workers`.
    std::vector<std::int64_t> launch_workers;
    std::vector<int> element_bytes;  // per array; empty: the cache's element size for every array
    // Units of work (kMaxWalkWork's, all heads) before it stops with WalkTooLong; 0: no limit.
    std::uint64_t max_work = kMaxWalkWork;
    // Every iteration walked instruction by instruction, none counted in a run: the reference
    // that runs of iterations must equal (tests), and a way to time what they save.
    bool element_walk = false;
    // Each top-level loop is a launch of its own, measured from a cold L2 as `toysim gpu run
    // --measure cold` measures each launch: every head reaches the loop, the cache is emptied
    // (what is dirty is written back uncounted, as the flush before a launch writes it), and
    // each launch's counts are kept. Code before the first loop belongs to the first launch.
    bool cold_launches = false;
    // With cold_launches: where else a launch begins, by pc (an instruction or a loop at the
    // top level): generated CUDA runs serial code between grids as a kernel of its own.
    std::vector<std::int32_t> launch_pcs;
};

// One instruction of the program as a launch executed it (all heads), for the timing pass's
// chain: how often, its units of work and shared-memory elements in all, and whether it is an
// asynchronous copy or leaves its result in shared memory (where the block's other warps read
// it after a barrier). Scalar instructions counted in runs are in LaunchWork's totals only.
struct InstructionWork {
    std::uint64_t executions = 0, work = 0, shared_elements = 0, product_shared_elements = 0, shared_sum_elements = 0;
    // A product's multiply-adds as the lanes issue them, on the CUDA cores: a warp's 32 lanes
    // × ⌈P/32⌉ patches of 4×4 a step of k, over its R rows × C columns' real ones (× 32/P
    // where P < 32 patches leave lanes idle, × 4/R where R < 4 rows pad each patch).
    double lane_work = 0;
    // The warps a CUDA-core product gives patches to, summed over its executions: those with
    // rows (a warp's rows' patches), or ⌈patches/32⌉ of them (`products cuda block`).
    double active_warps = 0;
    // A product's steps on 16×16 fragments, k 8 at a time (wmma m16n16k8: generated CUDA's
    // products in shared memory), that the busiest of the block's warps takes in turn: in all.
    double product_steps = 0;
    // Or, where its shapes are not whole fragments, on the CUDA cores: the steps of k (each a
    // multiply-add of a lane's 4×4 patches of its warp's rows) a lane takes in turn.
    double scalar_product_steps = 0;
    int op = 0;                  // its Op
    bool async = false;          // a LOAD into a tile with stages
    bool writes_shared = false;  // its destination is a tile in shared memory
    bool stored = false;         // a LOAD into a tile kept as the storage type (Tile::stored)
    bool by_element = false;     // a product whose loop reads an element at a time (TileInst::by_element)
    int thread_rows = 0, thread_cols = 0;  // and the results a thread computes (TileInst::thread_rows)
    bool in_grid = false;        // run by a grid's blocks (else by the launch's serial code)
};

// What one launch executed, for the timing pass (sim/timing/): its instructions and units of
// work per opcode (all heads), and the grid iterations it handed out (a GPU's blocks).
struct LaunchWork {
    std::array<std::uint64_t, kOpCount> instructions{};
    std::array<std::uint64_t, kOpCount> work{};  // units of work: elements, multiply-adds
    std::uint64_t blocks = 0;                    // grid iterations, all heads (0: no grid)
    std::uint64_t grids = 0;                     // grids reached, all heads counted once
    std::int64_t heads = 1;                      // the walk's heads (each runs the launch's serial code)
    // Elements read from and written to tiles in shared memory (not `in registers`); a
    // product's right operand once for each of the worker's warps (`warps`).
    std::uint64_t shared_elements = 0;
    std::uint64_t product_shared_elements = 0;  // of those, what products read (wgmma reads it without the load path)
    double idle_lane_work = 0;                  // what products' idle lanes issue, in multiply-adds: Σ (lane_work − work)
    std::uint64_t shared_sum_elements = 0;      // of those, in tiles that hold a product's fp32 sums (tiles_holding_sums)
    // LOADs into tiles with stages (asynchronous copies), and their elements.
    std::uint64_t async_loads = 0, async_elements = 0;
    // The grids' makespan on the workers and the workers' busy cycles, in the toy's cycles:
    // makespan ÷ (busy ÷ blocks) is how many average blocks the busiest worker runs in turn.
    std::uint64_t makespan_cycles = 0, busy_cycles = 0;
    // Loops the launch's serial code ran outside its grids (none holding a grid), all heads: what
    // such a loop costs on a GPU depends on threads the program does not describe.
    std::uint64_t serial_loops = 0;
    // Grids whose body holds no tile instruction: scalar code, which a GPU runs as a thread an
    // iteration, 32 to a warp (matmul_inner, a softmax's normalize pass), where the model times
    // an iteration as a block of a tile program.
    std::uint64_t scalar_grids = 0;
    std::vector<InstructionWork> by_pc;  // per Program::code entry; empty where none ran
};

struct CachedCount {
    CacheCounts counts;                 // every launch's, summed
    std::vector<CacheCounts> launches;  // with cold_launches: one per top-level loop
    // Per launch as `launches` (without cold_launches: one, the whole run).
    std::vector<LaunchWork> launch_work;
    std::uint64_t instructions = 0;  // executed, all heads
    std::uint64_t cycles = 0;        // the makespan on the workers (with one head: the run's cycles)
    std::uint64_t work = 0;          // the walk's units of work (max_work's)
};

// `more`'s counts added to `sum`'s (launch after launch).
void add(CacheCounts& sum, const CacheCounts& more);

// The program must have a cache. Throws ToyError for a slice outside its array or a bound that
// overflows, WalkTooLong past max_work.
CachedCount count_through_cache(const Program& program, const CachedCountOptions& options = {});

// Per tile: whether some product writes it, so that a GPU keeps it as fp32 sums whatever the
// arrays' storage type (the timing pass's shared-memory bytes and registers).
std::vector<bool> tiles_holding_sums(const Program& p);

}  // namespace toysim
