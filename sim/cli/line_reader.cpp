#include "sim/cli/line_reader.h"

#include <cstdio>
#include <cstdlib>

#ifdef TOYSIM_HAS_LIBEDIT
#include <editline/readline.h>
#endif

namespace toysim::cli {

LineReader::LineReader(std::istream& in, std::ostream& out, bool terminal) : in_(in), out_(out), terminal_(terminal) {
#ifdef TOYSIM_HAS_LIBEDIT
    editing_ = terminal;
    if (editing_) {
        rl_readline_name = const_cast<char*>("toysim");
        using_history();
    }
#else
#endif
}

LineReader::~LineReader() {
#ifdef TOYSIM_HAS_LIBEDIT
    if (editing_) clear_history();
#endif
}

std::optional<std::string> LineReader::read(const std::string& prompt) {
#ifdef TOYSIM_HAS_LIBEDIT
    if (editing_) {
        out_.flush();
        char* line = readline(prompt.c_str());
        if (!line) return std::nullopt;
        std::string text(line);
        std::free(line);
        // Enter on an empty line repeats the last command: no history entry for it.
        if (!text.empty() && text.find_first_not_of(" \t") != std::string::npos) add_history(text.c_str());
        return text;
    }
#endif
    std::string text;
    if (terminal_) out_ << prompt << std::flush;  // the terminal echoes what is typed
    if (!std::getline(in_, text)) return std::nullopt;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (!terminal_) out_ << prompt << text << "\n";
    return text;
}

}  // namespace toysim::cli
