// The pieces of a trace's text that `toysim step` shows too, so a step reads the same in
// both: values in tiles, the step table's header and one of its rows.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/lower/program.h"
#include "sim/print/format.h"

namespace toysim {

// Four decimals, trailing zeros dropped (1.3679, 0.5, 12): tile values, as the seed's worked
// examples print them.
std::string tile_number(double v);
// A tile block as rows, "[1, 0.3679; 0.3679, 1]": the top-left 8×8 of a rows×cols block of a
// full_rows×full_cols tile, "…" where it goes on.
std::string tile_block_text(std::int64_t rows, std::int64_t cols, std::int64_t full_rows, std::int64_t full_cols,
                            const std::function<std::string(std::int64_t, std::int64_t)>& value);
// Every opcode costs one cycle (the seed's machine): the step is the cycle.
bool unit_costs(const Program& program);
// The step table: Step, Cycle (when costs are not all 1), Instruction, then one column per
// register in `registers`.
Table step_table(const Program& program, const std::vector<int>& registers);
// One row of it: the instruction at `pc` with the loop variables it ran with, then the cells.
std::vector<std::string> step_row(const Program& program, std::uint64_t step, std::uint64_t cycle, std::int32_t pc,
                                  const std::int64_t* vars, std::vector<std::string> cells);

}  // namespace toysim
