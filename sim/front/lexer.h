// Turns .toy source text into tokens. Newlines end statements, except inside ( ) and [ ].
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/support/diag.h"

namespace toysim {

enum class Tok { Ident, Integer, Real, Punct, Newline, End };

struct Token {
    Tok kind;
    std::string_view text;
    Loc loc;
};

// Punctuation tokens: [ ] ( ) { } , = + - * / % : and "..", "<=", ">=".
std::vector<Token> lex(const SourceFile& source);

}  // namespace toysim
