// `toysim grade`, `toysim exercise list` and `toysim exercise start`.
// (Being written: see issue 10.)
#include "sim/cli/common.h"

namespace toysim::cli {

int grade_command(const Options&, Context& ctx) {
    ctx.err << "toysim: error: grade is not built yet\n";
    return kBadInput;
}
int exercise_list_command(const Options&, Context& ctx) {
    ctx.err << "toysim: error: exercise list is not built yet\n";
    return kBadInput;
}
int exercise_start_command(const Options&, Context& ctx) {
    ctx.err << "toysim: error: exercise start is not built yet\n";
    return kBadInput;
}

}  // namespace toysim::cli
