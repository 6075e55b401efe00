// After a run: each `check` compared with its double-precision reference, and each `expect`
// compared with the counter it names.
#pragma once

#include <string>
#include <vector>

#include "sim/exec/machine.h"

namespace toysim {

struct CheckResult {
    bool ok = false;
    std::int64_t elements = 0;
    double max_abs_err = 0, max_rel_err = 0;  // infinite when an element is NaN, infinite or never written
    std::string first_wrong;  // "c[0][1] = 3 but the reference is 4", or "c[1][1] was never written"
};

struct ExpectResult {
    std::uint64_t actual = 0;
    bool ok = false;
};

// A check passes only when every element is finite and within tolerance of a finite
// reference: NaN or infinity on either side fails it, whatever the tolerance.
CheckResult evaluate_check(const Program& program, const MachineState<double>& state, const CheckSpec& spec);
ExpectResult evaluate_expect(const Counters& counters, const ExpectSpec& spec);

}  // namespace toysim
