// Double-precision reference functions a program's check compares its output with.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/support/diag.h"

namespace toysim {

struct Tensor {
    std::vector<std::int64_t> shape;
    std::vector<double> data;  // row-major
};

struct ReferenceFunction {
    std::string_view name;
    std::string_view signature;  // "matmul(a, b)"
    std::string_view meaning;
};

const std::vector<ReferenceFunction>& reference_functions();
// The result's shape for arguments of these shapes; throws ToyError at `loc` on a mismatch.
std::vector<std::int64_t> reference_shape(std::string_view name, const std::vector<std::vector<std::int64_t>>& shapes, Loc loc);
Tensor reference(std::string_view name, const std::vector<Tensor>& args);

}  // namespace toysim
