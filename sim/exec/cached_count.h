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
#pragma once

#include <cstdint>
#include <vector>

#include "sim/exec/counters.h"
#include "sim/lower/program.h"

namespace toysim {

struct CachedCountOptions {
    std::int64_t heads = 1;
    std::int64_t workers = 0;        // a grid's workers; 0: the program's (`workers P`)
    // With cold_launches: launch k's grids on launch_workers[k] workers where that is given
    // and positive (a GPU holds as many blocks of each kernel as its occupancy allows), else on
    // `workers`.
    std::vector<std::int64_t> launch_workers;
    std::vector<int> element_bytes;  // per array; empty: the cache's element size for every array
    // Instructions and loop steps (all heads) before it stops with an error; 0: no limit.
    std::uint64_t max_instructions = 0;
    // Each top-level loop is a launch of its own, measured from a cold L2 as `toysim gpu run
    // --measure cold` measures each launch: every head reaches the loop, the cache is emptied
    // (what is dirty is written back uncounted, as the flush before a launch writes it), and
    // each launch's counts are kept. Code before the first loop belongs to the first launch.
    bool cold_launches = false;
};

struct CachedCount {
    CacheCounts counts;                 // every launch's, summed
    std::vector<CacheCounts> launches;  // with cold_launches: one per top-level loop
    std::uint64_t instructions = 0;  // executed, all heads
    std::uint64_t cycles = 0;        // the makespan on the workers (with one head: the run's cycles)
};

// `more`'s counts added to `sum`'s (launch after launch).
void add(CacheCounts& sum, const CacheCounts& more);

// The program must have a cache. Throws ToyError for a slice outside its array, a bound that
// overflows, or more than max_instructions.
CachedCount count_through_cache(const Program& program, const CachedCountOptions& options = {});

}  // namespace toysim
