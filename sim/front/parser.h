// Parses .toy source into the AST. Throws ToyError with a location on malformed input.
#pragma once

#include <memory>

#include "sim/front/ast.h"

namespace toysim {

// What a file is: an ordinary program; an exercise spec (exercise.toy: declarations only, plus
// `exercise`, `allow`, `limit`, `target` and `test visible|hidden`); or a student's solution
// (instructions, loops, lets and tiles only). Each refuses, at the word, what belongs to another.
enum class ParseMode { Program, Exercise, Solution };

ast::Program parse(std::shared_ptr<const SourceFile> source, ParseMode mode = ParseMode::Program);

// Keywords that may start a statement, for "did you mean" suggestions.
const std::vector<std::string_view>& statement_keywords();
// The declarations only an exercise spec makes.
const std::vector<std::string_view>& exercise_keywords();

}  // namespace toysim
