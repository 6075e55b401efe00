// Source files, locations and the one error type every stage throws on bad input.
#pragma once

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
    std::string_view line(int n) const;
};

// Bad input: a malformed program, a bad command-line value, or a run-time fault of the
// program (index out of bounds, unwritten register, step limit). Exit code 2.
class ToyError : public std::runtime_error {
public:
    ToyError(Loc loc, std::string message) : std::runtime_error(std::move(message)), loc_(loc) {}
    explicit ToyError(std::string message) : std::runtime_error(std::move(message)) {}
    const Loc& loc() const { return loc_; }

private:
    Loc loc_;
};

// "file:line:col: error: message", then the source line and a caret under the culprit.
// `where` names the source when the error has no location (e.g. "toysim" or a file path).
std::string format_error(const ToyError& error, const SourceFile* source, std::string_view where = "toysim");

}  // namespace toysim
