// The one way an instruction becomes text: traces, errors and listings all call this.
#pragma once

#include <cstdint>
#include <string>

#include "sim/lower/program.h"

namespace toysim {

// "LOAD a[0][1], R0". With `vars` (the loop variables' values at that step) subscripts and
// indexed registers are evaluated; without, they are shown as written ("LOAD a[i][k], R0").
std::string render_instruction(const Program& program, std::int32_t pc, const std::int64_t* vars = nullptr);

}  // namespace toysim
