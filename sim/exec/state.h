// The machine's whole state, as a value: copy it to snapshot a run, compare two to check a
// replay. Nothing else holds state between steps.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/lower/program.h"

namespace toysim {

// Race checking of parallel loops (sim/exec/parallel.h), per DRAM element: the first iteration
// that touched it in the running loop and how (AccessKind bits: read, write, accumulate; and a
// bit set once another iteration shared it the same way), with the instruction of its write or
// accumulation and of its first read. Iterations have ids that count up over the run (0:
// none); an id from before the running loop's first is stale.
// Packed: 13 bytes, not 16. A race-checked run touches one cell for every element its parallel
// loops write, so the padding cost time (a 2·10⁷-element parallel copy loop: 1.32× the run
// without race checking at 16 bytes a cell; unaligned loads cost nothing measurable on x86).
struct __attribute__((packed)) RaceCell {
    std::uint32_t iteration = 0;
    std::int32_t pc = 0, read_pc = 0;
    std::uint8_t kinds = 0;
    bool operator==(const RaceCell&) const = default;
};
static_assert(sizeof(RaceCell) == 13);

// On several workers, per DRAM element beside its RaceCell: the latest other iteration that
// shared it, and its instruction. (On one worker the iterations run one after another, and the
// first never comes back to an element another shared: no need to keep who.)
struct RaceSharer {
    std::uint32_t iteration = 0;
    std::int32_t pc = 0;
    bool operator==(const RaceSharer&) const = default;
};

// Where the running parallel loop and the workers stand (sim/exec/parallel.h): the running
// iteration's id (0 outside a parallel loop), the loop's first id, the last id given out (ids
// count up over the run, so an older loop's are stale), the loop variables' values where the
// loop began; and time on the workers. Outside parallel loops worker 0 runs alone: `clock` is
// when the running serial part began and `clock_work` the work done by then. In a parallel
// loop, each worker's time when it is next free and the work done when the running iteration
// began; and each worker's busy cycles.
struct ParallelState {
    std::uint32_t iteration = 0, first_iteration = 0, ids_used = 0;
    std::uint32_t worker = 0;  // the worker that runs the running iteration (0 outside a parallel loop)
    std::array<std::int64_t, kMaxLoopDepth> grid_start_vars{};
    std::uint64_t clock = 0, clock_work = 0, iteration_work = 0;
    // In a parallel loop: the work done by the end of its last finished iteration, and the work
    // of the iteration loop's body (all its iterations so far) when the running one began.
    std::uint64_t grid_work = 0, iteration_body_work = 0;
    std::vector<std::uint64_t> worker_free, busy;
    // On several workers (Program::workers > 1) a grid runs interleaved: each worker holds an
    // iteration, and the worker whose clock is earliest (the lowest-numbered among equals) runs
    // the next instruction. worker_free is then each worker's clock; `worker` and `iteration`
    // are the running instruction's.
    bool interleaved = false;
    std::vector<std::uint32_t> worker_iteration;    // per worker: its iteration's id (0: none)
    std::vector<std::uint32_t> ready;               // the workers with an iteration, a heap: earliest clock on top
    std::vector<std::uint8_t> iteration_fresh;      // per worker: its iteration has run no instruction yet
    bool first_of_iteration = false;                // the last instruction was the first of its iteration
    // The next iteration to hand out: its grid variables, and its grid loops' ends.
    std::array<std::int64_t, kMaxLoopDepth> next_vars{}, next_limit{};
    bool next_exists = false;
    // A worker came back to `ready` during the last instruction (a RECV's message was sent):
    // the heap is rebuilt before the next choice, not just its top moved (interleave.h).
    bool reheap = false;
    bool operator==(const ParallelState&) const = default;
};

// Devices (`devices D`, sim/exec/links.h): a SEND's elements on their way to the receiver,
// which takes them with a RECV once they have arrived.
template <class Value>
struct Message {
    std::uint32_t from = 0;
    std::int32_t pc = 0;        // the SEND
    std::uint64_t arrival = 0;  // the cycle its last element reaches the receiver
    std::int64_t rows = 1, cols = 1;
    std::vector<Value> values;  // as the SEND read them
    bool operator==(const Message&) const = default;
};

// The links between devices: per link (from·D + to) the messages in flight, oldest first from
// `head`, when the link is next free, and the elements it carried; per device, the device whose
// message its RECV waits for (-1: none) and that RECV.
template <class Value>
struct LinkState {
    std::vector<std::vector<Message<Value>>> queue;
    std::vector<std::size_t> head;
    std::vector<std::uint64_t> free_at, elements;
    std::vector<std::int64_t> waiting;
    std::vector<std::int32_t> waiting_pc;
    std::uint64_t in_flight = 0;  // bytes of the messages sent and not yet received
    bool operator==(const LinkState&) const = default;
};

// One worker's own part of the machine (sim/exec/parallel.h): where it is and its register
// file. The running worker's is the machine's own; the others wait here.
template <class Value>
struct WorkerContext {
    std::int32_t pc = 0;
    std::array<std::int64_t, kMaxLoopDepth> vars{}, limit{};
    std::vector<Value> regs;
    std::vector<std::uint8_t> written;
    std::vector<Value> tiles;
    std::vector<std::int64_t> tile_rows, tile_cols;
    std::vector<std::uint8_t> tile_touched;
    bool operator==(const WorkerContext&) const = default;
};

template <class Value>
struct MachineState {
    // Where the program is: the next instruction and the loop variables in force there.
    std::int32_t pc = 0;
    std::array<std::int64_t, kMaxLoopDepth> vars{};
    std::array<std::int64_t, kMaxLoopDepth> limit{};  // each open loop's end
    std::uint64_t steps = 0;          // ISA instructions executed (the step counter)
    std::uint64_t empty_entries = 0;  // entries into loops that ran zero times (held to the step limit)
    bool halted = false;

    // The register file: scalar registers, then the tiles (named tiles of registers).
    std::vector<Value> regs;
    std::vector<std::uint8_t> written;               // per scalar register: ever written
    std::vector<Value> tiles;                        // every tile's registers
    std::vector<std::int64_t> tile_rows, tile_cols;  // each tile's current shape; 0 rows: never written
    std::vector<std::uint8_t> tile_touched;          // per tile register: ever written

    // DRAM.
    std::vector<Value> dram;
    std::vector<std::uint8_t> present;  // element holds a value (an input, or stored since)
    std::vector<std::uint64_t> reads;   // per element: times read

    // Per code index: times executed, and tile instructions' units of work. The counters
    // (sim/exec/counters.h) are tallied from these, so the hot loop adds one number a step.
    std::vector<std::uint64_t> executed;
    std::vector<std::uint64_t> work;

    // Parallel loops (only when the program has one; empty otherwise): per DRAM element its
    // RaceCell, and where the running parallel loop and the workers stand.
    std::vector<RaceCell> race;
    std::vector<RaceSharer> race_sharers;  // on several workers: one per RaceCell
    ParallelState parallel;
    // Per worker, while a grid runs interleaved and after it: the workers' own parts (the running
    // worker's entry is stale: its part is the machine's, above).
    std::vector<WorkerContext<Value>> contexts;
    LinkState<Value> links;  // with devices (Program::devices > 0); empty otherwise

    bool operator==(const MachineState&) const = default;
};

// Exchanges the machine's worker part with `c`.
template <class Value>
void swap_context(MachineState<Value>& s, WorkerContext<Value>& c) {
    std::swap(s.pc, c.pc);
    std::swap(s.vars, c.vars);
    std::swap(s.limit, c.limit);
    s.regs.swap(c.regs);
    s.written.swap(c.written);
    s.tiles.swap(c.tiles);
    s.tile_rows.swap(c.tile_rows);
    s.tile_cols.swap(c.tile_cols);
    s.tile_touched.swap(c.tile_touched);
}

// The machine's worker part, copied.
template <class Value>
WorkerContext<Value> copy_context(const MachineState<Value>& s) {
    return {s.pc, s.vars, s.limit, s.regs, s.written, s.tiles, s.tile_rows, s.tile_cols, s.tile_touched};
}


// The units of work the instruction at pc has done so far: a scalar one is one unit a run (SEND
// and RECV: the elements they moved, a slice or one element).
template <class Value>
std::uint64_t units_done(const Program& p, const MachineState<Value>& s, size_t pc) {
    const Code code = p.code[pc].code;
    return code == Code::Tile || code == Code::SEND || code == Code::RECV ? s.work[pc] : s.executed[pc];
}

// Bytes a run holds per DRAM element: the value, its present flag and its read count. The
// DRAM limit (kMaxRunDram) is set from this, so a run at the limit fits its stated memory.
template <class Value>
inline constexpr std::int64_t kStateBytesPerElement = sizeof(Value) + sizeof(std::uint8_t) + sizeof(std::uint64_t);

}  // namespace toysim
