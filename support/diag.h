// Source files, locations and the one error type every stage throws on bad input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace toysim {

struct Loc {
    int line = 0;  // 1-based; 0 means "no source location" (e.g. a command-line error)
    int col = 0;   // 1-based column of the first character
    int len = 1;   // how many characters the caret underlines
};

struct SourceFile {
    std::string path;
    std::string text;
    std::vector<std::string_view> lines;

    SourceFile(std::string path, std::string text);
    static std::shared_ptr<const SourceFile> read(const std::string& path);  // throws ToyError if missing
    // Like read (a leading byte-order mark dropped, at most kMaxSourceBytes, else ToyError), from
    // a stream such as standard input, named `name` in messages.
    static std::shared_ptr<const SourceFile> read_stream(std::istream& in, std::string name);
    static constexpr std::size_t kMaxSourceBytes = std::size_t{16} << 20;  // 16 MiB
    std::string_view line(int n) const;
};

// What kind of bad input an error is. The core says what went wrong in its own terms; the
// front end adds how to change it (with_cli_hint: the CLI's flags, which the Python module
// quotes too, since it promises the CLI's messages).
enum class ErrorKind : std::uint8_t {
    Input,          // a malformed program or value
    Setting,        // a parameter setting NAME=VALUE; subject() is NAME (the CLI prefixes "--set NAME: ")
    StepLimit,      // the run reached its step limit (the CLI names --max-steps)
    TooLargeToRun,  // the arrays do not fit in a run (the CLI names `toysim cost`)
    TooLongToRun,   // the estimated work is past the limit for a run (the CLI names --force)
    Race,           // two iterations of a parallel loop met at an element (the run's race check)
};

// Bad input: a malformed program, a bad command-line value, or a run-time fault of the
// program (index out of bounds, unwritten register, step limit). Exit code 2.
class ToyError : public std::runtime_error {
public:
    ToyError(Loc loc, std::string message) : std::runtime_error(std::move(message)), loc_(loc) {}
    explicit ToyError(std::string message) : std::runtime_error(std::move(message)) {}
    ToyError(ErrorKind kind, Loc loc, std::string message, std::string subject = {})
        : std::runtime_error(std::move(message)), loc_(loc), kind_(kind), subject_(std::move(subject)) {}
    const Loc& loc() const { return loc_; }
    ErrorKind kind() const { return kind_; }
    const std::string& subject() const { return subject_; }

private:
    Loc loc_;
    ErrorKind kind_ = ErrorKind::Input;
    std::string subject_;
};

// "file:line:col: error: message", then the source line and a caret under the culprit.
// `where` names the source when the error has no location (e.g. "toysim" or a file path).
std::string format_error(const ToyError& error, const SourceFile* source, std::string_view where = "toysim");

// The error as the command line words it: the core's message plus how to change it with the
// CLI's flags (--max-steps, --force, `toysim cost`, --set NAME), each added once. The CLI
// (cli::with_hint) and the Python module (python/) both report errors this way.
ToyError with_cli_hint(const ToyError& error);

}  // namespace toysim
