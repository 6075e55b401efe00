// Man pages and bash completion for toysim, written at build time from the built executable's own
// --help (cmake/install.cmake), so neither can list a command or an option the CLI lacks, or miss
// one it has.
//
//   toysim_help_docs TOYSIM MAN_DIR COMPLETION_FILE
//
// MAN_DIR gets toysim.1 and toysim-COMMAND.1 for each command; a command's own subcommands
// (`toysim gpu run`, `toysim exercise list`) are sections of its page, as git's are, since each is
// a few options long. The help is CLI11's layout: a description, "Usage:", then "Positionals:",
// "Options:" and "Subcommands:" sections of two-space-indented items whose text starts at column
// 30, then the footer: paragraphs that are a heading over a table, "examples:", "exit codes:", or
// prose.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "packaging/help_model.h"

namespace fs = std::filesystem;
using namespace toysim::help;

namespace {

// ---- reading the help ----

std::string shell_quoted(const std::string& word) {
    std::string out = "'";
    for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// What `command` prints on stdout; it must succeed.
std::string output_of(const std::string& command) {
    FILE* pipe = popen(command.c_str(), "r");
    if (!pipe) throw std::runtime_error("cannot run " + command);
    std::string text;
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
    if (int status = pclose(pipe); status != 0) throw std::runtime_error(command + " failed (status " + std::to_string(status) + ")");
    return text;
}

std::string help_text(const std::string& toysim, const std::vector<std::string>& path) {
    std::string command = shell_quoted(toysim);
    for (const auto& word : path) command.append(1, ' ').append(shell_quoted(word));
    return output_of(command + " --help");
}

Help read_help(const std::string& toysim, const std::vector<std::string>& path) {
    Help help = parse_help(help_text(toysim, path), path);
    if (help.usage.empty()) throw std::runtime_error("no 'Usage:' line in the help of " + command_words(path));
    for (const auto& sub : help.subcommands) {
        auto child_path = path;
        child_path.push_back(sub.names.at(0));
        help.children.push_back(read_help(toysim, child_path));
    }
    return help;
}

// ---- roff ----

// Text as roff: an ASCII hyphen-minus stays one (\-: options must copy and paste), so do quotes
// (\(aq, \(ga), and every other non-ASCII character is \[uXXXX], so the page is ASCII and renders
// the same whatever encoding man guesses for it.
std::string roff(std::string_view text) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
        auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            switch (c) {
                case '\\': out += "\\e"; break;
                case '-': out += "\\-"; break;
                case '\'': out += "\\(aq"; break;
                case '`': out += "\\(ga"; break;
                default: out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        unsigned code = c & (length == 4 ? 0x07 : length == 3 ? 0x0F : 0x1F);
        for (size_t k = 1; k < length && i + k < text.size(); ++k) code = (code << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
        char escaped[16];
        std::snprintf(escaped, sizeof escaped, "\\[u%04X]", code);
        out += escaped;
        i += length;
    }
    return out;
}

// A text line: one that starts with '.' would be a request.
std::string roff_line(std::string_view text) {
    std::string line = roff(trim(text));
    return line.starts_with(".") ? "\\&" + line : line;
}

std::string bold(std::string_view text) { return "\\fB" + roff(text) + "\\fR"; }
std::string italic(std::string_view text) { return "\\fI" + roff(text) + "\\fR"; }

std::string page_name(const std::vector<std::string>& path) { return path.empty() ? "toysim" : "toysim-" + path.at(0); }

// A shell command wider than a man page's nofill block, broken at a space outside quotes that
// leaves it under `width` (before an option, a pipe or a redirection when one is far enough
// along, so an option stays with its value), each break a backslash-newline so the lines still
// paste as one command.
std::vector<std::string> wrap_command(std::string line, size_t width = 64) {
    std::vector<std::string> lines;
    const std::string indent = "    ";
    bool first = true;
    while ((first ? 0 : indent.size()) + line.size() > width) {
        const size_t limit = width - (first ? 0 : indent.size()) - 2;
        size_t cut = std::string::npos, before_option = std::string::npos;
        char quote = 0;
        for (size_t i = 1; i < line.size() && (i <= limit || cut == std::string::npos); ++i) {
            if (quote) quote = line[i] == quote ? 0 : quote;
            else if (line[i] == '\'' || line[i] == '"') quote = line[i];
            else if (line[i] == ' ' && line[i - 1] != ' ') {
                cut = i;
                if (i + 1 < line.size() && std::string_view("-|<>").find(line[i + 1]) != std::string_view::npos) before_option = i;
            }
        }
        if (before_option != std::string::npos && before_option > limit / 2 && before_option <= limit) cut = before_option;
        if (cut == std::string::npos || cut + 1 >= line.size()) break;
        lines.push_back((first ? "" : indent) + line.substr(0, cut) + " \\");
        line = trim(line.substr(cut + 1));
        first = false;
    }
    lines.push_back((first ? "" : indent) + line);
    return lines;
}

void write_verbatim(std::ostream& out, const std::vector<std::string>& commands) {
    out << ".PP\n.RS 4\n.nf\n";
    for (const auto& command : commands)
        for (const auto& line : wrap_command(trim(command))) out << (line.starts_with(".") ? "\\&" : "") << roff(line) << "\n";
    out << ".fi\n.RE\n";
}

void write_text(std::ostream& out, const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
        if (!trim(line).empty()) out << roff_line(line) << "\n";
}

// `toysim view [OPTIONS] --output TEXT file`: required options and the positionals spelled out.
std::string synopsis(const Help& help) {
    std::string line = bold(command_words(help.path));
    if (!help.options.empty()) line += " [" + italic("OPTIONS") + "]";
    for (const auto& option : help.options)
        if (option.required) {
            line.append(" ").append(bold(option.names.back()));
            if (!option.value().empty()) line.append(" ").append(italic(option.value()));
        }
    if (!help.subcommands.empty()) line.append(" ").append(italic("COMMAND")).append(" [").append(italic("ARGS")).append("]");
    for (const auto& positional : help.positionals) {
        std::string word = italic(positional.names.at(0)) + (positional.repeated ? "..." : "");
        line += ' ';
        line += positional.required ? word : "[" + word + "]";
    }
    return line;
}

// An item: its tag (roff), its text (plain), then `more` (roff) when there is any.
void write_item(std::ostream& out, const std::string& tag, const std::string& text, const std::string& more = "") {
    out << ".TP\n" << tag << "\n";
    write_text(out, text);
    if (!more.empty()) out << more << "\n";
}

void write_arguments(std::ostream& out, const Help& help) {
    for (const auto& positional : help.positionals)
        write_item(out, italic(positional.names.at(0)) + (positional.repeated ? "..." : ""), positional.text);
    for (const auto& option : help.options) {
        std::string tag;
        for (const auto& name : option.names) tag += (tag.empty() ? "" : ", ") + bold(name);
        if (!option.value().empty()) tag.append(" ").append(italic(option.value()));
        write_item(out, tag, option.text + (option.required ? "\n(required)" : ""));
    }
}

// What a page says besides its items, sorted by where it goes.
struct Sections {
    std::vector<Paragraph> prose, tables, examples, exit_status;
};

// Footer paragraphs of `help` and of its sections' commands, without those toysim itself prints
// under every command's help (`inherited`): they are toysim(1)'s.
void sort_footer(const Help& help, const std::set<Paragraph>& inherited, Sections& sections) {
    for (const auto& paragraph : help.footer) {
        if (inherited.count(paragraph)) continue;
        switch (classify(paragraph)) {
            case Block::Examples: sections.examples.push_back(paragraph); break;
            case Block::ExitStatus: sections.exit_status.push_back(paragraph); break;
            case Block::Table: sections.tables.push_back(paragraph); break;
            case Block::Prose: sections.prose.push_back(paragraph); break;
        }
    }
}

// Prose: its lines filled, an indented line (a command to type) shown as it is.
void write_prose(std::ostream& out, const Paragraph& paragraph) {
    out << ".PP\n";
    std::vector<std::string> verbatim;
    for (const auto& line : paragraph) {
        if (line.starts_with(" ")) {
            verbatim.push_back(line);
            continue;
        }
        if (!verbatim.empty()) write_verbatim(out, verbatim), verbatim.clear(), out << ".PP\n";
        out << roff_line(line) << "\n";
    }
    if (!verbatim.empty()) write_verbatim(out, verbatim);
}

// A heading over a table: a section named by the heading, the heading, then one item per row, its
// first column the tag and the rest its text.
void write_table(std::ostream& out, const Paragraph& paragraph) {
    std::string heading;
    size_t first_row = 0;
    for (; first_row < paragraph.size() && !paragraph[first_row].starts_with(" "); ++first_row)
        heading.append(heading.empty() ? "" : " ").append(trim(paragraph[first_row]));
    std::string title = trim(heading.substr(0, heading.find_first_of("(:")));
    std::transform(title.begin(), title.end(), title.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    out << ".SH " << roff(title) << "\n.PP\n";
    heading[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(heading[0])));
    out << roff_line(heading) << "\n";
    const Paragraph rows(paragraph.begin() + static_cast<std::ptrdiff_t>(first_row), paragraph.end());
    std::vector<std::pair<std::string, std::string>> items;
    size_t widest = 0;
    for (const auto& row : rows) {
        items.push_back(table_row(row, rows));
        widest = std::max(widest, items.back().first.size());
    }
    // Short tags (mnemonics) side by side with their text; long ones (signatures) above it.
    const std::string indent = widest <= 12 ? std::to_string(widest + 2) + "n" : "";
    if (!indent.empty()) out << ".PD 0\n";  // one line each, as the help shows them
    for (const auto& [tag, text] : items) out << ".TP " << indent << "\n" << bold(tag) << "\n" << roff_line(text) << "\n";
    if (!indent.empty()) out << ".PD\n";
}

void write_examples(std::ostream& out, const std::vector<Paragraph>& examples) {
    if (examples.empty()) return;
    out << ".SH EXAMPLES\n";
    for (const auto& paragraph : examples) write_verbatim(out, Paragraph(paragraph.begin() + 1, paragraph.end()));
}

void write_exit_status(std::ostream& out, const std::vector<Paragraph>& paragraphs) {
    if (paragraphs.empty()) return;
    out << ".SH EXIT STATUS\n";
    for (const auto& paragraph : paragraphs) {
        out << ".PP\n";
        for (const auto& line : paragraph) out << roff_line(line) << "\n";
    }
}

void write_see_also(std::ostream& out, const std::vector<std::string>& pages) {
    out << ".SH SEE ALSO\n";
    for (size_t i = 0; i < pages.size(); ++i) out << bold(pages[i]) << "(1)" << (i + 1 < pages.size() ? "," : "") << "\n";
}

// .TH's date: SOURCE_DATE_EPOCH's when set (reproducible builds), else none, so that a rebuild
// of the same commit writes the same pages.
std::string page_date() {
    const char* epoch = std::getenv("SOURCE_DATE_EPOCH");
    if (!epoch || !*epoch) return "";
    std::time_t t = static_cast<std::time_t>(std::strtoll(epoch, nullptr, 10));
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&t));
    return date;
}

void write_header(std::ostream& out, const std::string& page, const std::string& version) {
    std::string upper = page;
    std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    out << ".\\\" Generated from toysim's --help by packaging/help_docs.cpp at build time: do not edit.\n"
        << ".TH " << roff(upper) << " 1 \"" << page_date() << "\" \"" << roff(version) << "\" \"toysim manual\"\n"
        << ".nh\n.ad l\n";  // no hyphenation (it would split options), ragged right
}

// What toysim(1) says that no help text does: where the exercises come from.
constexpr const char* kEnvironmentAndFiles = R"(.SH ENVIRONMENT
.TP
.B TOYSIM_EXERCISES
The folder of exercises that \fBtoysim grade\fR \fINAME\fR and \fBtoysim exercise\fR use. When it is
set, it replaces the folders below.
.SH FILES
.TP
.I programs/exercises
In the current folder (a clone of the course's repository): the exercises, when
\fBTOYSIM_EXERCISES\fR is not set.
.TP
\fIPREFIX\fB/share/toysim/programs/\fR
The course's programs, and under \fIexercises/\fR its exercises (each a folder of
\fIexercise.toy\fR, the spec with its hidden tests, \fIstarter.toy\fR and \fIsolution.toy\fR),
where \fIPREFIX\fR is the folder above the one \fBtoysim\fR is in (\fI/usr\fR for the Debian
package). The exercises, when neither of the above has them.
)";

std::string main_page(const Help& top, const std::string& version, const std::vector<std::string>& pages) {
    std::ostringstream out;
    write_header(out, "toysim", version);
    out << ".SH NAME\ntoysim \\- " << roff(name_description(top)) << "\n.SH SYNOPSIS\n" << synopsis(top) << "\n.SH DESCRIPTION\n";
    for (const auto& line : top.description) out << roff_line(line) << "\n";
    Sections sections;
    sort_footer(top, {}, sections);
    for (const auto& paragraph : sections.prose) write_prose(out, paragraph);
    out << ".PP\nEach command has its own page, " << bold("toysim-") << italic("COMMAND") << "(1), and "
        << bold("toysim ") << italic("COMMAND") << " " << bold("--help") << " shows its examples.\n";
    out << ".SH COMMANDS\n";
    for (const auto& sub : top.subcommands) write_item(out, bold(sub.names.at(0)), sub.text, "See " + bold("toysim-" + sub.names.at(0)) + "(1).");
    out << ".SH OPTIONS\n";
    write_arguments(out, top);
    for (const auto& paragraph : sections.tables) write_table(out, paragraph);
    write_examples(out, sections.examples);
    write_exit_status(out, sections.exit_status);
    out << kEnvironmentAndFiles;
    write_see_also(out, std::vector<std::string>(pages.begin() + 1, pages.end()));
    return out.str();
}

std::string command_page(const Help& command, const std::set<Paragraph>& inherited, const std::string& version,
                         const std::vector<std::string>& pages) {
    std::ostringstream out;
    const std::string page = page_name(command.path);
    write_header(out, page, version);
    out << ".SH NAME\n" << roff(page) << " \\- " << roff(name_description(command)) << "\n.SH SYNOPSIS\n";
    if (command.children.empty()) out << synopsis(command) << "\n";
    for (size_t i = 0; i < command.children.size(); ++i) out << (i ? ".br\n" : "") << synopsis(command.children[i]) << "\n";
    out << ".SH DESCRIPTION\n";
    for (const auto& line : command.description) out << roff_line(line) << "\n";
    Sections sections;
    sort_footer(command, inherited, sections);
    for (const auto& paragraph : sections.prose) write_prose(out, paragraph);
    if (!command.positionals.empty()) {
        out << ".SH ARGUMENTS\n";
        Help positionals_only = command;
        positionals_only.options.clear();
        write_arguments(out, positionals_only);
    }
    out << ".SH OPTIONS\n";
    Help options_only = command;
    options_only.positionals.clear();
    write_arguments(out, options_only);
    if (!command.children.empty()) {
        out << ".SH COMMANDS\n";
        for (const auto& child : command.children) {
            Sections own;
            sort_footer(child, inherited, own);
            out << ".SS " << roff(command_words(child.path)) << "\n.PP\n" << synopsis(child) << "\n.PP\n";
            for (const auto& line : child.description) out << roff_line(line) << "\n";
            for (const auto& paragraph : own.prose) write_prose(out, paragraph);
            write_arguments(out, child);
            sections.tables.insert(sections.tables.end(), own.tables.begin(), own.tables.end());
            sections.examples.insert(sections.examples.end(), own.examples.begin(), own.examples.end());
            sections.exit_status.insert(sections.exit_status.end(), own.exit_status.begin(), own.exit_status.end());
        }
    }
    for (const auto& paragraph : sections.tables) write_table(out, paragraph);
    write_examples(out, sections.examples);
    write_exit_status(out, sections.exit_status);
    std::vector<std::string> see_also;
    for (const auto& other : pages)
        if (other != page) see_also.push_back(other);
    write_see_also(out, see_also);
    return out.str();
}

void write_file(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream file(path, std::ios::binary);
    file << text;
    if (!file.flush()) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::cerr << "usage: toysim_help_docs TOYSIM MAN_DIR COMPLETION_FILE\n";
        return 2;
    }
    try {
        const std::string toysim = argv[1];
        const fs::path man_dir = argv[2];
        Help top = read_help(toysim, {});
        const std::string version = trim(output_of(shell_quoted(toysim) + " --version"));
        std::vector<std::string> pages = {"toysim"};
        for (const auto& command : top.children) pages.push_back(page_name(command.path));
        // Pages of commands that are gone must not be installed with the others.
        std::error_code ec;
        for (fs::directory_iterator it(man_dir, ec), end; !ec && it != end; it.increment(ec))
            if (it->path().extension() == ".1" && it->path().filename().string().starts_with("toysim")) fs::remove(it->path(), ec);
        write_file(man_dir / "toysim.1", main_page(top, version, pages));
        const std::set<Paragraph> inherited(top.footer.begin(), top.footer.end());
        for (const auto& command : top.children) write_file(man_dir / (page_name(command.path) + ".1"), command_page(command, inherited, version, pages));
        write_file(argv[3], bash_completion(top));
    } catch (const std::exception& e) {
        std::cerr << "toysim_help_docs: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
