// Double-precision reference functions a program's check compares its output with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/diag.h"

namespace toysim {

struct Tensor {
    std::vector<std::int64_t> shape;
    std::vector<double> data;  // row-major
};

using Shapes = std::vector<std::vector<std::int64_t>>;

// One row of the table of reference functions (sim/reference/reference.cpp).
struct ReferenceFunction {
    std::string_view name;
    std::string_view signature;  // "matmul(a, b)"
    std::string_view meaning;
    // The result's shape for arguments of these shapes, or a located error on a mismatch.
    std::vector<std::int64_t> (*shape)(const ReferenceFunction& self, const Shapes& shapes, Loc loc);
    // The values, row-major, for arguments the shape rule accepted. `rows`: on a check of sampled
    // rows, the indices in the full arguments of the rows that the row arguments (and the result)
    // hold; empty: every row, in order. Only a causal function needs them (query rows[i] sees
    // keys 0..rows[i]); for the others a row's result depends on the row alone.
    std::vector<double> (*evaluate)(const ReferenceFunction& self, const std::vector<Tensor>& args, std::span<const std::int64_t> rows);
    // Doubles held at once while evaluating (result, copies and temporaries): what a run
    // checks before it starts one.
    std::int64_t (*footprint)(const Shapes& shapes);
};

const std::vector<ReferenceFunction>& reference_functions();
const ReferenceFunction* find_reference(std::string_view name);
// The result's shape for arguments of these shapes; throws ToyError at `loc` on a mismatch.
std::vector<std::int64_t> reference_shape(std::string_view name, const Shapes& shapes, Loc loc);
// Doubles an evaluation holds at once (0 for an unknown name).
std::int64_t reference_footprint(std::string_view name, const Shapes& shapes);

// Some rows of a reference's result, for a check of sampled rows: the arguments `args` (their
// indices) are cut to the rows `rows` of the full ones, which have `of` rows each, and the others
// are whole. The result holds those rows of the full arguments' result: row i is row rows[i].
struct RowSample {
    std::span<const std::size_t> args;
    std::span<const std::int64_t> rows;  // indices in the full arguments, each below `of`
    std::int64_t of = 0;
    // The dimension that holds the rows: 0, or 1 for the gqa_ functions, whose arguments are
    // K/V heads × rows × columns (each K/V head's rows cut to the same sample).
    std::size_t dim = 0;
};
// The dimension of `name`'s arguments and result that holds their rows (RowSample::dim).
std::size_t row_dimension(std::string_view name);

// The reference's result on `args`; with a sample, those rows of it (empty: every row).
Tensor reference(std::string_view name, const std::vector<Tensor>& args, const RowSample& sample = {});

}  // namespace toysim
