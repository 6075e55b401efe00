// Run-time faults (an index out of bounds, a value read before it was written, the step
// limit) and the geometry of slices, shared by the scalar and tile executors.
#pragma once

#include <cstdint>
#include <string>

#include "sim/lower/program.h"

namespace toysim {

#define TOYSIM_FAULT [[noreturn]] __attribute__((cold))

// " (at i = 3, k = 1)": the loop variables in force at an instruction, for run-time errors.
std::string loop_context(const Program& p, std::int32_t pc, const std::int64_t* vars);
Loc operand_loc(const Program& p, std::int32_t pc, int operand);
// Which source operand holds the idx-th register operand of an instruction.
int register_operand_position(const Program& p, std::int32_t pc, int reg_index);
int memory_operand_position(const Program& p, std::int32_t pc);

TOYSIM_FAULT void fail_bounds(const Program& p, std::int32_t pc, const MemRef& m, const std::int64_t* vars);
TOYSIM_FAULT void fail_unwritten_element(const Program& p, std::int32_t pc, const MemRef& m, const std::int64_t* vars);
TOYSIM_FAULT void fail_unwritten_register(const Program& p, std::int32_t pc, int reg_index, std::int32_t reg, const std::int64_t* vars);
TOYSIM_FAULT void fail_step_limit(const Program& p, std::int32_t pc, std::uint64_t limit, const std::int64_t* vars);
TOYSIM_FAULT void fail_register_range(const Program& p, std::int32_t pc, const DynamicRegister& d, std::int64_t r, bool overflow,
                                      const std::int64_t* vars);
// A tile instruction's fault, pointed at its reg_index-th register operand.
TOYSIM_FAULT void fail_tile(const Program& p, std::int32_t pc, int reg_index, const std::string& message, const std::int64_t* vars);
TOYSIM_FAULT void fail_loop_bound(const Program& p, std::int32_t pc, const std::int64_t* vars);
TOYSIM_FAULT void fail_empty_loops(const Program& p, std::int32_t pc, std::uint64_t limit, const std::int64_t* vars);

// R[expr]: the register it names now, or a fault.
inline std::int32_t resolve_register(const Program& p, std::int32_t pc, std::int32_t index, const std::int64_t* vars) {
    if (index >= 0) return index;
    const DynamicRegister& d = p.dynamic_registers[static_cast<size_t>(-index - 1)];
    std::int64_t r = 0;
    bool fits = d.index.eval_checked(vars, r);
    if (!fits || r < 0 || r >= p.scalar_registers) fail_register_range(p, pc, d, r, !fits, vars);
    return static_cast<std::int32_t>(r);
}

std::string shape_text(std::int64_t rows, std::int64_t cols);  // "4×64"

// The part of an array a slice covers now: up to two ranges (clipped at the array's edge).
struct SliceGeometry {
    std::int64_t address = 0;  // first element
    std::int64_t rows = 1, cols = 1, row_stride = 0, col_stride = 0;
    std::int64_t at(std::int64_t i, std::int64_t j) const { return address + i * row_stride + j * col_stride; }
    std::int64_t last() const { return at(rows - 1, cols - 1); }  // its last element
};
std::string slice_text(const Program& p, const MemRef& m, const std::int64_t* vars);  // "K[64..128][0..64]"
// Throws a located error for a slice that starts outside its array or is empty.
SliceGeometry slice_geometry(const Program& p, std::int32_t pc, const MemRef& m, const std::int64_t* vars);

}  // namespace toysim
