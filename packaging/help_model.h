// toysim's --help, parsed (packaging/help_model.cpp), for the man pages and the bash completion
// that packaging/help_docs.cpp writes from it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace toysim::help {

// One line of a "Positionals:", "Options:" or "Subcommands:" section.
struct Item {
    std::vector<std::string> names;    // "-o", "--output"; a positional's or a subcommand's one name
    std::string type;                  // what CLI11 prints after the names: "TEXT:{table,json} REQUIRED"
    std::string text;                  // its help, lines joined with '\n'
    bool required = false;             // "REQUIRED"
    bool repeated = false;             // "..."
    std::vector<std::string> choices;  // the {a,b,c} of the type

    // The type without the words that are flags: what a value looks like ("TEXT:{fp32,fp16}").
    std::string value() const;
};

using Paragraph = std::vector<std::string>;  // lines, trailing spaces removed

struct Help {
    std::vector<std::string> path;  // {"gpu", "run"}; empty for toysim itself
    std::vector<std::string> description;
    std::string usage;
    std::vector<Item> positionals, options, subcommands;
    std::vector<Paragraph> footer;  // what follows the sections, split at blank lines
    std::vector<Help> children;     // one per subcommand, in order
};

// The help CLI11 prints for the command at `path`.
Help parse_help(const std::string& text, const std::vector<std::string>& path);

// What a footer paragraph is: "examples:" and its commands; "exit codes: ..."; a heading that
// ends in ':' over rows of two or more columns (the instruction set); anything else.
enum class Block { Examples, ExitStatus, Table, Prose };
Block classify(const Paragraph& paragraph);

// A table row's columns: split where two or more spaces are.
std::vector<std::string> table_fields(std::string_view row);
// A row of `rows` as a tag and its text. The tag ends where most rows' second column starts,
// which also splits a row whose first column filled its width (one space before the text);
// where a row's first column overran that (STORE_ADD), at its first space. The text's runs of
// spaces become two.
std::pair<std::string, std::string> table_row(const std::string& row, const std::vector<std::string>& rows);

std::string trim(std::string_view text);
// "toysim gpu run"
std::string command_words(const std::vector<std::string>& path);
// The description's first line as a man page's NAME says it: "run a program: ..." (no "toysim: "
// in front, no final period).
std::string name_description(const Help& help);

// The bash completion script for toysim and every command under it.
std::string bash_completion(const Help& top);

}  // namespace toysim::help
