#include "sim/check/fill.h"

#include <fmt/format.h>

#include "sim/reference/reference.h"

namespace toysim {

void random_fill(const ast::Fill& fill, std::uint64_t stream, double* out, std::int64_t count) {
    // Reproducible uniform fill: splitmix64, 53-bit mantissa. Stream 0 is the simulator's.
    std::uint64_t state = fill.seed * 0x2545F4914F6CDD1DULL + 1 + stream * 0x9E3779B97F4A7C15ULL * 0x100000001B3ULL;
    for (std::int64_t i = 0; i < count; ++i) {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        // Scale to [0, 1) first: (hi − lo)·2^53 would overflow for the widest finite ranges.
        out[i] = fill.lo + (fill.hi - fill.lo) * (static_cast<double>(z >> 11) * 0x1.0p-53);
    }
}

Tensor evaluate_reference(const Program& p, const MachineState<double>& s, std::string_view function, const std::vector<int>& arrays,
                          Loc loc, std::string_view for_what) {
    Shapes shapes;
    for (int a : arrays) shapes.push_back(p.arrays[static_cast<size_t>(a)].dims);
    if (reference_footprint(function, shapes) > kMaxReferenceElements)
        throw ToyError(ErrorKind::TooLargeToRun, loc,
                       fmt::format("computing {} for {} needs more than {} doubles of memory", function, for_what, kMaxReferenceElements));
    std::vector<Tensor> args;
    for (int array : arrays) {
        const ArrayInfo& a = p.arrays[static_cast<size_t>(array)];
        args.push_back(Tensor{a.dims, std::vector<double>(s.dram.begin() + a.base, s.dram.begin() + a.base + a.size)});
    }
    return reference(function, args);
}

void fill_inputs(const Program& p, MachineState<double>& s, std::uint64_t stream) {
    for (const auto& a : p.arrays) {
        if (!a.starts_filled()) continue;
        auto* out = s.dram.data() + a.base;
        switch (a.fill.kind) {
            case ast::Fill::Kind::Literal: std::copy(a.fill.values.begin(), a.fill.values.end(), out); break;
            case ast::Fill::Kind::Constant: std::fill_n(out, a.size, a.fill.values[0]); break;
            case ast::Fill::Kind::Reference: {
                auto values = evaluate_reference(p, s, a.fill.function, a.fill_args, a.fill.loc, fmt::format("'{}'", a.name)).data;
                std::copy(values.begin(), values.end(), out);
                break;
            }
            default: random_fill(a.fill, stream, out, a.size);
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
