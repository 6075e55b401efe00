// Settings shared out over programs side by side (side_by_side.h).
#include "sim/app/side_by_side.h"

#include <fmt/format.h>

#include "support/diag.h"
#include "support/text.h"

namespace toysim::app {

ParamSettings settings_declared(const ast::Program& tree, const ParamSettings& settings, std::set<std::string>& used) {
    ParamSettings mine;
    for (const auto& p : tree.params)
        for (const auto& s : settings)
            if (p.name == s.first) {
                mine.push_back(s);
                used.insert(s.first);
            }
    return mine;
}

void refuse_undeclared(const ParamSettings& settings, const std::set<std::string>& used, const std::vector<const ast::Program*>& trees,
                       const Spelling& spelling) {
    std::vector<std::string_view> known;  // every program's parameters, for "did you mean"
    for (const ast::Program* tree : trees)
        for (const auto& p : tree->params) known.push_back(p.name);
    for (const auto& s : settings)
        if (!used.count(s.first))
            throw ToyError(fmt::format("{} {}: no program here has a parameter {}{}", spelling.sets, flag_subject(s.first), quoted_name(s.first),
                                       did_you_mean(s.first, known)));
}

}  // namespace toysim::app
