// A whole run kept compactly for `toysim view`: every step's position, the register or tile
// it wrote and the DRAM it moved, with a tile's values pooled to a few cells so a run of
// 100,000 tile instructions fits in a page a browser opens in seconds.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/exec/machine.h"

namespace toysim {

template <class Value>
struct RecordedStep {
    std::int32_t pc = 0;
    Op op = Op::LOAD;
    std::array<std::int64_t, kMaxLoopDepth> vars{};
    std::uint64_t cycle = 0, cost = 0, work = 0;
    std::uint32_t worker = 0;  // the worker that ran it (programs with a parallel loop)
    std::uint32_t grid = 0;    // inside a parallel loop: the loop's first iteration id, which names that run of it
    std::uint64_t makespan = 0;  // on several workers: the cycles counter (the makespan) after it
    std::uint64_t clock = 0;     // and the cycle it ended on, on its worker's clock
    std::int32_t reg = -1;  // scalar register written
    Value value{};          // its new value; a one-element STORE's value
    std::int32_t tile = -1; // tile written: its shape, and pool_rows × pool_cols values at `first`
    std::int64_t rows = 0, cols = 0;
    std::int32_t pool_rows = 0, pool_cols = 0;
    std::uint32_t first = 0;
    std::optional<DramAccess> access;
};

template <class Value>
struct Recording {
    std::vector<RecordedStep<Value>> steps;
    // Tile values, pooled: numeric runs keep the mean of each cell's block of the tile;
    // symbolic runs keep the top-left values (expressions have no mean).
    std::vector<Value> pooled;
    Counters counters;
    std::optional<ToyError> fault;
};

// The most cells a tile's values are pooled to, per side, and the most pooled values a
// recording keeps in all (so a long tile run pools each write more coarsely).
inline constexpr std::int64_t kMaxPoolSide = 16;
inline constexpr std::int64_t kPooledValueBudget = 1'500'000;

// Appends a rows × cols block of `values` (row-major, `stride` values a row) pooled to pr × pc
// cells: numeric cells the mean of the values they cover, symbolic ones the block's top-left
// pr × pc values (expressions have no mean). The recording pools each tile write so, and the
// stepper's picture of a tile (view_state_json) the tile as it stands.
template <class Value>
void pool_block(const Value* values, std::int64_t stride, std::int64_t rows, std::int64_t cols, std::int64_t pr, std::int64_t pc,
                std::vector<Value>& out);

// Runs `program` from the start (inputs filled as `run` fills them) to its end or its first
// fault, keeping every step. `expected_steps` (estimate_work) sizes the pooling.
Recording<double> record_numeric(const Program& program, std::uint64_t expected_steps, std::uint64_t max_steps);
// Symbolically, into `arena` (which the caller keeps to name the values).
Recording<std::uint32_t> record_symbolic(const Program& program, ExprArena& arena, std::uint64_t expected_steps, std::uint64_t max_steps);

}  // namespace toysim
