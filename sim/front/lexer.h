// Turns .toy source text into tokens. Newlines end statements, except inside ( ) and [ ].
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "support/diag.h"

namespace toysim {

enum class Tok { Ident, Integer, Real, Punct, Newline, End };

struct Token {
    Tok kind;
    std::string_view text;
    Loc loc;
};

// Punctuation tokens: [ ] ( ) { } , = + - * / % : and "..", "<=", ">=".
std::vector<Token> lex(const SourceFile& source);

// The lexer knows no strings, and only an exercise's title needs one: `exercise "..."` has its
// quoted text taken out (into `titles`, by line: the text and where it was) and blanked to
// spaces, so columns stay as written. Null when the source has no title.
std::shared_ptr<const SourceFile> without_titles(const SourceFile& source, std::map<int, std::pair<std::string, Loc>>& titles);

}  // namespace toysim
