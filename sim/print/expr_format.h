// How symbolic values are written: the seed's notation (a00·b00, x1 − m, e^(x0 − m),
// max(x0, x1)), with long subexpressions abbreviated by names explained in a legend.
//
// Naming rules, decided once for everything a trace shows:
//  - a value that the program stores to DRAM is called by that element's name (c00), as the
//    seed writes c₀₀ in the register column once the sum is complete;
//  - a max inside another operation is always named (the seed's m, m'), so running maxima
//    read as m1, m2, ...;
//  - a subexpression longer than kNestedWidth inside a different operation, or any value
//    longer than kCellWidth, gets a short name from its operation (m for max, s for sums,
//    p for products, q for quotients, d for differences, e for exponentials), numbered in
//    order of creation when there is more than one.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/lower/program.h"
#include "sim/exec/symbolic.h"

namespace toysim {

class ExprFormatter {
public:
    static constexpr int kNestedWidth = 14;
    static constexpr int kCellWidth = 24;

    ExprFormatter(const ExprArena& arena, const Program& program, const std::vector<std::uint32_t>& shown);
    std::string cell(std::uint32_t id) const;  // the name if it has one, else the expression
    // Every name used, with its definition, in order of creation.
    std::vector<std::pair<std::string, std::string>> legend() const;

private:
    const ExprArena& arena_;
    std::map<std::uint32_t, std::string> text_;  // expansion of each reachable node
    std::map<std::uint32_t, std::string> name_;
    std::string ref(std::uint32_t id) const;
    std::string expand(std::uint32_t id) const;
};

}  // namespace toysim
