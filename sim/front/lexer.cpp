#include "sim/front/lexer.h"

#include <cctype>
#include <fmt/format.h>

#include "support/text.h"

namespace toysim {

namespace {
bool ident_start(char ch) { return std::isalpha(static_cast<unsigned char>(ch)) || ch == '_'; }
bool ident_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }
bool digit(char ch) { return std::isdigit(static_cast<unsigned char>(ch)) != 0; }
}  // namespace

std::vector<Token> lex(const SourceFile& source) {
    std::vector<Token> tokens;
    int depth = 0;  // ( [ nesting: newlines inside do not end a statement
    for (int line_no = 1; line_no <= static_cast<int>(source.lines.size()); ++line_no) {
        std::string_view line = source.lines[static_cast<size_t>(line_no - 1)];
        size_t i = 0;
        auto at = [&](size_t start, size_t len) {
            return Loc{line_no, static_cast<int>(start) + 1, static_cast<int>(len)};
        };
        while (i < line.size()) {
            char ch = line[i];
            if (ch == ' ' || ch == '\t') {
                ++i;
            } else if (ch == '#') {
                break;  // comment to end of line
            } else if (ident_start(ch)) {
                size_t start = i;
                while (i < line.size() && ident_char(line[i])) ++i;
                tokens.push_back({Tok::Ident, line.substr(start, i - start), at(start, i - start)});
            } else if (digit(ch) || (ch == '.' && i + 1 < line.size() && digit(line[i + 1]))) {
                size_t start = i;
                if (ch == '0' && i + 1 < line.size() && (line[i + 1] == 'x' || line[i + 1] == 'X' || line[i + 1] == 'b' || line[i + 1] == 'B'))
                    throw ToyError(at(start, 2), "only decimal numbers are supported (no 0x or 0b prefixes)");
                bool real = false;
                while (i < line.size() && digit(line[i])) ++i;
                // "0..n" is a range, not the real number "0."
                if (i < line.size() && line[i] == '.' && !(i + 1 < line.size() && line[i + 1] == '.')) {
                    real = true;
                    ++i;
                    while (i < line.size() && digit(line[i])) ++i;
                }
                if (i < line.size() && (line[i] == 'e' || line[i] == 'E')) {
                    size_t j = i + 1;
                    if (j < line.size() && (line[j] == '+' || line[j] == '-')) ++j;
                    if (j < line.size() && digit(line[j])) {
                        real = true;
                        i = j;
                        while (i < line.size() && digit(line[i])) ++i;
                    }
                }
                // "2.0.5": a second fraction is a malformed number, not a range or a new number.
                if (real && i < line.size() && line[i] == '.' && !(i + 1 < line.size() && line[i + 1] == '.')) {
                    size_t end = i + 1;
                    while (end < line.size() && (digit(line[end]) || line[end] == '.')) ++end;
                    throw ToyError(at(start, end - start), fmt::format("malformed number {}", quoted_name(line.substr(start, end - start))));
                }
                // A letter right after a number is left to the parser: "3n" reads as 3 * n.
                tokens.push_back({real ? Tok::Real : Tok::Integer, line.substr(start, i - start), at(start, i - start)});
            } else if ((ch == '.' && i + 1 < line.size() && line[i + 1] == '.') ||
                       ((ch == '<' || ch == '>') && i + 1 < line.size() && line[i + 1] == '=')) {
                tokens.push_back({Tok::Punct, line.substr(i, 2), at(i, 2)});
                i += 2;
            } else if (std::string_view("[](){},=+-*/%:.@").find(ch) != std::string_view::npos) {
                if (ch == '(' || ch == '[') ++depth;
                if ((ch == ')' || ch == ']') && depth > 0) --depth;
                tokens.push_back({Tok::Punct, line.substr(i, 1), at(i, 1)});
                ++i;
            } else {
                size_t len = 1;
                if (static_cast<unsigned char>(ch) >= 0x80)  // a whole UTF-8 sequence, e.g. "×" or "−"
                    while (i + len < line.size() && (static_cast<unsigned char>(line[i + len]) & 0xC0) == 0x80) ++len;
                std::string_view text = line.substr(i, len);
                std::string hint = text == "×" || text == "·" ? "; write '*' for multiplication" : text == "−" ? "; write '-' for minus" : "";
                throw ToyError(at(i, 1), fmt::format("unexpected character {}{}", quoted_name(text), hint));
            }
        }
        if (depth == 0) tokens.push_back({Tok::Newline, {}, at(line.size(), 1)});
    }
    int last = static_cast<int>(source.lines.size());
    tokens.push_back({Tok::End, {}, Loc{std::max(1, last), static_cast<int>(source.line(last).size()) + 1, 1}});
    return tokens;
}

std::shared_ptr<const SourceFile> without_titles(const SourceFile& source, std::map<int, std::pair<std::string, Loc>>& titles) {
    std::string text;
    bool changed = false;
    for (size_t n = 0; n < source.lines.size(); ++n) {
        std::string line(source.lines[n]);
        size_t word = line.find_first_not_of(" \t");
        if (word != std::string::npos && line.compare(word, 8, "exercise") == 0) {
            size_t open = line.find_first_not_of(" \t", word + 8);
            if (open != std::string::npos && open > word + 8 && line[open] == '"') {
                int line_no = static_cast<int>(n) + 1;
                size_t close = line.find('"', open + 1);
                if (close == std::string::npos)
                    throw ToyError(Loc{line_no, static_cast<int>(open) + 1, 1}, "this title is never closed: expected '\"' at its end");
                titles[line_no] = {line.substr(open + 1, close - open - 1),
                                   Loc{line_no, static_cast<int>(open) + 1, static_cast<int>(close - open) + 1}};
                std::fill(line.begin() + static_cast<long>(open), line.begin() + static_cast<long>(close) + 1, ' ');
                changed = true;
            }
        }
        text += line;
        text += '\n';
    }
    if (!changed) return nullptr;
    return std::make_shared<const SourceFile>(source.path, std::move(text));
}

}  // namespace toysim
