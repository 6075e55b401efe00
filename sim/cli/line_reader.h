// Where `toysim step` reads its commands: on a terminal, libedit's line editor with history
// (arrow keys, Ctrl-R); otherwise plain lines from standard input, each echoed after the
// prompt, so a scripted session's output reads like the session itself.
#pragma once

#include <istream>
#include <optional>
#include <ostream>
#include <string>

namespace toysim::cli {

class LineReader {
public:
    LineReader(std::istream& in, std::ostream& out, bool terminal);
    ~LineReader();
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;
    // The next line without its newline; nullopt at the end of input (Ctrl-D).
    std::optional<std::string> read(const std::string& prompt);
    bool editing() const { return editing_; }

private:
    std::istream& in_;
    std::ostream& out_;
    bool terminal_ = false;
    bool editing_ = false;  // libedit is reading the terminal
};

}  // namespace toysim::cli
