// Parses .toy source into the AST. Throws ToyError with a location on malformed input.
#pragma once

#include <memory>

#include "sim/front/ast.h"

namespace toysim {

ast::Program parse(std::shared_ptr<const SourceFile> source);

// Keywords that may start a statement, for "did you mean" suggestions.
const std::vector<std::string_view>& statement_keywords();

}  // namespace toysim
