// Programs side by side (compare): how the settings given to all of them are shared out, for
// the CLI and the browser's engine alike.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "sim/app/spelling.h"
#include "sim/front/ast.h"
#include "sim/lower/program.h"

namespace toysim::app {

// The settings program `tree` declares a parameter for, each one's name noted in `used`.
ParamSettings settings_declared(const ast::Program& tree, const ParamSettings& settings, std::set<std::string>& used);

// A setting that no program of `trees` declares (none in `used`) is refused, with the nearest
// parameter any of them has. Throws ToyError (no location: it is no one program's).
void refuse_undeclared(const ParamSettings& settings, const std::set<std::string>& used, const std::vector<const ast::Program*>& trees,
                       const Spelling& spelling);

}  // namespace toysim::app
