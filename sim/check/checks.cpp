#include "sim/check/checks.h"

#include <cmath>
#include <fmt/format.h>

#include "sim/check/fill.h"
#include "sim/reference/reference.h"

namespace toysim {

namespace {

std::int64_t offset_of(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& prefix, std::int64_t& count) {
    std::int64_t offset = 0, stride = 1;
    count = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        if (d < prefix.size())
            offset += prefix[d] * stride;
        else
            count *= shape[d];
        stride *= shape[d];
    }
    return offset;
}

}  // namespace

CheckResult evaluate_check(const Program& p, const MachineState<double>& s, const CheckSpec& spec) {
    Tensor ref = evaluate_reference(p, s, spec.function, spec.args, spec.loc, "this check");
    const ArrayInfo& target = p.arrays[static_cast<size_t>(spec.target)];
    std::int64_t count = 0;
    std::int64_t out_at = target.base + offset_of(target.dims, spec.target_index, count);
    std::int64_t ref_count = 0;
    std::int64_t ref_at = offset_of(ref.shape, spec.reference_index, ref_count);
    CheckResult r;
    r.elements = count;
    r.ok = true;
    double peak = 0;
    for (std::int64_t i = 0; i < count; ++i)
        if (std::isfinite(ref.data[static_cast<size_t>(ref_at + i)])) peak = std::max(peak, std::abs(ref.data[static_cast<size_t>(ref_at + i)]));
    for (std::int64_t i = 0; i < count; ++i) {
        std::int64_t at = out_at + i;
        double want = ref.data[static_cast<size_t>(ref_at + i)];
        auto name = [&] { return p.element_ref(spec.target, at - target.base); };
        if (!s.present[static_cast<size_t>(at)]) {
            if (r.ok) r.first_wrong = fmt::format("{} was never written", name());
            r.ok = false;
            r.max_abs_err = r.max_rel_err = INFINITY;
            continue;
        }
        double got = s.dram[static_cast<size_t>(at)];
        double err = std::abs(got - want);
        // NaN or infinity anywhere is wrong, whatever the tolerance: inf − inf would say 0.
        if (!std::isfinite(got) || !std::isfinite(want)) err = INFINITY;
        double rel = want != 0 ? err / std::abs(want) : (err == 0 ? 0 : INFINITY);
        r.max_abs_err = std::max(r.max_abs_err, err);
        r.max_rel_err = std::max(r.max_rel_err, rel);
        // Relative to the element, or for elements near zero to a thousandth of the largest.
        if (!(err <= spec.tolerance * std::max(std::abs(want), 1e-3 * peak)) || std::isinf(err)) {
            if (r.ok) r.first_wrong = fmt::format("{} = {:.17g} but the reference is {:.17g}", name(), got, want);
            r.ok = false;
        }
    }
    return r;
}


ExpectResult evaluate_expect(const Counters& counters, const ExpectSpec& spec) {
    std::uint64_t actual = counters.value(spec.counter).count;
    return {actual, spec.holds(actual)};
}

}  // namespace toysim
