#include "sim/check/fill.h"

#include <fmt/format.h>

#include "sim/reference/reference.h"

namespace toysim {

namespace {

// Reproducible uniform fill: splitmix64, 53-bit mantissa.
struct Random {
    std::uint64_t state;
    double next(double lo, double hi) {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        return lo + (hi - lo) * static_cast<double>(z >> 11) * 0x1.0p-53;
    }
};

Tensor region(const Program& p, const MachineState<double>& s, int array) {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(array)];
    Tensor t;
    t.shape = a.dims;
    t.data.assign(s.dram.begin() + a.base, s.dram.begin() + a.base + a.size);
    return t;
}

std::int64_t saturating_product(std::initializer_list<std::int64_t> xs) {
    std::int64_t out = 1;
    for (auto x : xs)
        if (__builtin_mul_overflow(out, x, &out)) return INT64_MAX;
    return out;
}

}  // namespace

std::int64_t reference_footprint(std::string_view function, const std::vector<std::vector<std::int64_t>>& shapes) {
    auto dim = [&](size_t arg, size_t d) -> std::int64_t {
        return arg < shapes.size() && d < shapes[arg].size() ? shapes[arg][d] : 1;
    };
    std::int64_t args = 0;
    for (const auto& s : shapes) {
        std::int64_t n = 1;
        for (auto x : s) n = saturating_product({n, x});
        args = args > INT64_MAX - n ? INT64_MAX : args + n;
    }
    // Attention and its statistics and gradients hold a few n×m matrices (S, P, dP, dS).
    if (function.rfind("attention", 0) == 0 || function == "scores")
        return saturating_product({4, dim(0, 0), dim(1, 0)}) > INT64_MAX - args ? INT64_MAX : saturating_product({4, dim(0, 0), dim(1, 0)}) + args;
    if (function == "matmul") return saturating_product({2, dim(0, 0), dim(1, 1)}) + saturating_product({dim(1, 0), dim(1, 1)});
    return saturating_product({2, args});
}

void fill_inputs(const Program& p, MachineState<double>& s) {
    for (const auto& a : p.arrays) {
        if (!a.starts_filled()) continue;
        auto* out = s.dram.data() + a.base;
        switch (a.fill.kind) {
            case ast::Fill::Kind::Literal: std::copy(a.fill.values.begin(), a.fill.values.end(), out); break;
            case ast::Fill::Kind::Constant: std::fill_n(out, a.size, a.fill.values[0]); break;
            case ast::Fill::Kind::Reference: {
                std::vector<std::vector<std::int64_t>> shapes;
                for (int arg : a.fill_args) shapes.push_back(p.arrays[static_cast<size_t>(arg)].dims);
                if (reference_footprint(a.fill.function, shapes) > kMaxReferenceElements)
                    throw ToyError(ErrorKind::TooLargeToRun, a.fill.loc,
                                   fmt::format("computing {} for '{}' needs more than {} doubles of memory", a.fill.function, a.name,
                                               kMaxReferenceElements));
                std::vector<Tensor> args;
                for (int arg : a.fill_args) args.push_back(region(p, s, arg));
                auto values = reference(a.fill.function, args).data;
                std::copy(values.begin(), values.end(), out);
                break;
            }
            default: {
                Random rng{a.fill.seed * 0x2545F4914F6CDD1DULL + 1};
                for (std::int64_t i = 0; i < a.size; ++i) out[i] = rng.next(a.fill.lo, a.fill.hi);
            }
        }
    }
}

void fill_symbolic_inputs(const Program& p, MachineState<std::uint32_t>& s, ExprArena& arena) {
    for (const auto& a : p.arrays) {
        if (a.role == ast::Role::Input) std::fill_n(s.dram.begin() + a.base, a.size, kUnnamedInput);
        else if (a.fill.kind == ast::Fill::Kind::Constant) std::fill_n(s.dram.begin() + a.base, a.size, arena.constant(a.fill.values[0]));
    }
}

}  // namespace toysim
