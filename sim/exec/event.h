// One executed instruction, as everything that watches a run sees it: the stepper, traces,
// the viewer and the grader read this and nothing else.
//
// A run with no listener builds no events: the executor is compiled twice, and the plain run
// has no event code in it at all.
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/exec/state.h"
#include "sim/lower/program.h"

namespace toysim {

// A block of one DRAM array moved by a LOAD or STORE: element (i, j) is at
// address + i·row_stride + j·col_stride (one element: rows = cols = 1).
struct DramAccess {
    int array = -1;
    AccessKind kind = AccessKind::Read;
    std::int64_t address = 0;
    std::int64_t rows = 1, cols = 1, row_stride = 0, col_stride = 1;
    std::int64_t elements() const { return rows * cols; }
    std::int64_t at(std::int64_t i, std::int64_t j) const { return address + i * row_stride + j * col_stride; }
};

template <class Value>
struct Event {
    std::uint64_t step = 0;   // 1 for the first instruction
    std::uint64_t cycle = 0;  // the cycle the instruction finished on (cycles count from 1)
    std::uint64_t cost = 0;   // cycles it took: its units of work × its opcode's cycles per unit
    std::uint64_t work = 0;   // units of work: elements moved or produced, multiply-adds, elements reduced
    std::int32_t pc = 0;
    Op op = Op::LOAD;
    std::array<std::int64_t, kMaxLoopDepth> vars{};  // the loop variables it ran with
    std::array<std::int64_t, kMaxLoopDepth> limit{};  // and the open loops' ends
    std::uint64_t empty_entries = 0;                   // the machine's count of empty loop entries before it

    // The scalar register it wrote (-1: none), old → new; the old value means nothing if the
    // register had never been written.
    std::int32_t reg = -1;
    Value reg_old{}, reg_new{};
    bool reg_was_written = false;

    // The tile it wrote (-1: none): its shape before and after, and the rows×cols block it
    // wrote (from the top-left), row-major, old → new.
    std::int32_t tile = -1;
    std::int64_t old_rows = 0, old_cols = 0, rows = 0, cols = 0;
    std::vector<Value> tile_old, tile_new;
    std::vector<std::uint8_t> tile_was_touched;  // per register of the block: written before

    // The DRAM it read or wrote. For a write, the elements' old values and whether they held
    // one, and the values written, in the access's row-major order.
    std::vector<DramAccess> accesses;
    std::vector<Value> dram_old, dram_new;
    std::vector<std::uint8_t> dram_was_present;
    // Symbolic inputs this step read for the first time, and so named (a01, x3): undoing the
    // step makes them unnamed again.
    std::vector<std::int64_t> named_inputs;
    // Inside a parallel loop: the race-checking cells of the elements it accessed, before it
    // (sim/exec/parallel.h), in the order of `accesses`, element by element.
    std::vector<RaceCell> race_old;
    // Where the parallel loop and the workers stood when it ran (programs with a parallel loop).
    ParallelState parallel;

    void clear() {
        reg = tile = -1;
        tile_old.clear();
        tile_new.clear();
        tile_was_touched.clear();
        accesses.clear();
        dram_old.clear();
        dram_new.clear();
        dram_was_present.clear();
        named_inputs.clear();
        race_old.clear();
    }
};

template <class Value>
struct EventSink {
    virtual ~EventSink() = default;
    virtual void on_event(const Event<Value>& event) = 0;
};

// What one event added to the counters: instructions, its opcode, its work, cycles and the
// DRAM traffic of each array it touched; zeros left out.
inline std::vector<std::pair<CounterRef, std::uint64_t>> counter_deltas(const Program& program, Op op, std::uint64_t cost,
                                                                         std::uint64_t work, const std::vector<DramAccess>& accesses) {
    std::vector<std::pair<CounterRef, std::uint64_t>> out;
    out.push_back({{CounterKind::Cycles}, cost});
    out.push_back({{CounterKind::Instructions}, 1});
    out.push_back({{CounterKind::Opcode, op}, 1});
    if (program.has_tiles()) out.push_back({{CounterKind::Work, op}, work});
    for (const auto& a : accesses) {
        auto n = static_cast<std::uint64_t>(a.elements());
        if (reads_dram(a.kind)) {
            out.push_back({{CounterKind::Reads}, n});
            out.push_back({{CounterKind::ArrayReads, Op::LOAD, a.array}, n});
        }
        if (writes_dram(a.kind)) {
            out.push_back({{CounterKind::Writes}, n});
            out.push_back({{CounterKind::ArrayWrites, Op::LOAD, a.array}, n});
        }
        if (op == Op::SEND) {  // (busiest_link is a most, not a sum: no step adds to it)
            out.push_back({{CounterKind::Sent}, n});
            out.push_back({{CounterKind::ArraySent, Op::LOAD, a.array}, n});
        }
    }
    return out;
}

template <class Value>
std::vector<std::pair<CounterRef, std::uint64_t>> counter_deltas(const Program& program, const Event<Value>& event) {
    return counter_deltas(program, event.op, event.cost, event.work, event.accesses);
}

}  // namespace toysim
