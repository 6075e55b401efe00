#include "sim/cli/common.h"

namespace toysim::cli {

int step_command(const Options&, Context& ctx) {
    ctx.err << "toysim: error: step is not built yet\n";
    return kBadInput;
}

}  // namespace toysim::cli
