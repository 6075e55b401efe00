// Before a run: the inputs' values. Literal lists, seeded random fills, constants, and
// reference fills computed from inputs declared above them (O = attention(Q, K, V)).
#pragma once

#include "sim/exec/machine.h"
#include "sim/reference/reference.h"

namespace toysim {

// Numeric: writes every input (and constant-filled array) into DRAM, in declaration order,
// so a reference fill finds its arguments already filled. Throws a located ToyError when a
// reference fill would need more memory than a run may use. `stream` picks the data of every
// random (and default) fill: 0 is what `toysim run` fills; a grader's hidden test uses another.
void fill_inputs(const Program& program, MachineState<double>& state, std::uint64_t stream = 0);

// The seeded uniform values of a random (or default) fill: stream 0 is what a run fills; the
// GPU backend gives every head its own stream.
void random_fill(const ast::Fill& fill, std::uint64_t stream, double* out, std::int64_t count);

// Symbolic: inputs stay unnamed until first read (named a01, x3 then); constant fills hold
// their constant.
void fill_symbolic_inputs(const Program& program, MachineState<std::uint32_t>& state, ExprArena& arena);

// A reference function of arrays in DRAM, for a fill or a check. Refused at `loc` before it
// starts ("computing attention for 'O' needs more than …", naming `for_what`) when it would
// hold more than kMaxReferenceElements doubles.
Tensor evaluate_reference(const Program& program, const MachineState<double>& state, std::string_view function,
                          const std::vector<int>& arrays, Loc loc, std::string_view for_what);

// The most doubles a reference evaluation (a fill or a check) may hold at once
// (reference_footprint): one that would need more is refused before it starts.
inline constexpr std::int64_t kMaxReferenceElements = std::int64_t{1} << 27;  // 1 GiB of doubles

}  // namespace toysim
