// Helpers shared by the test files: build programs from text or from the repository, run the
// command line in-process, and read files.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/app.h"
#include "sim/front/parser.h"
#include "sim/lower/program.h"

// Catch2 2 has no SKIP (Catch2 3.3 has): say why and leave the test case. ctest reports a test
// that prints "toysim-skip:" as skipped (SKIP_REGULAR_EXPRESSION, tests/CMakeLists.txt).
#ifndef SKIP
#define SKIP(why)                          \
    do {                                   \
        WARN("toysim-skip: " << why);      \
        return;                            \
    } while (false)
#endif

// TOYSIM_TEST_ASAN: built with AddressSanitizer (the sanitize preset), where some limits
// cannot be tested and a test whose point is not what the sanitizers check may do less (NVRTC's
// compiles, say: the same work in both builds, run in Release only).
#if defined(__SANITIZE_ADDRESS__)
#define TOYSIM_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TOYSIM_TEST_ASAN 1
#endif
#endif

namespace toysim::testing {

// An environment variable set (or unset, with nullopt) for one scope, then put back.
class ScopedEnv {
public:
    ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value) setenv(name, value->c_str(), 1);
        else unsetenv(name);
    }
    ~ScopedEnv() {
        if (old_) setenv(name_, old_->c_str(), 1);
        else unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

inline Program build(const std::string& text, const ParamSettings& settings = {}) {
    auto source = std::make_shared<SourceFile>("test.toy", text);
    return compile(std::make_shared<const ast::Program>(parse(source)), settings);
}

// A program of the repository, by its path from the repository root.
inline Program build_file(const std::string& path, const ParamSettings& settings = {}) {
    auto tree = std::make_shared<const ast::Program>(parse(SourceFile::read(std::string(TOYSIM_SOURCE_DIR) + "/" + path)));
    return compile(tree, settings);
}

// Every shipped program, as paths from the repository root, sorted: programs/**/*.toy except
// programs/exercises/, whose files are exercise specs and solutions (graded, not run alone).
inline std::vector<std::string> shipped_programs() {
    std::vector<std::string> out;
    const std::filesystem::path root(TOYSIM_SOURCE_DIR);
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / "programs")) {
        std::string path = std::filesystem::relative(e.path(), root).generic_string();
        if (e.is_regular_file() && e.path().extension() == ".toy" && path.rfind("programs/exercises/", 0) != 0) out.push_back(path);
    }
    std::sort(out.begin(), out.end());
    return out;
}

struct CliResult {
    int code = -1;
    std::string out, err;
    std::string escaped;  // what() of an exception that left toysim::cli::main, if any
};

// toysim ARGS, in-process, from the repository root (the CLI's examples use relative paths),
// with `input` as its standard input (not a terminal).
inline CliResult run_cli_input(const std::vector<std::string>& args, const std::string& input) {
    std::filesystem::current_path(TOYSIM_SOURCE_DIR);
    CliResult r;
    std::istringstream in(input);
    std::ostringstream out, err;
    toysim::cli::Io io;
    io.in = &in;
    try {
        r.code = toysim::cli::main(args, out, err, io);
    } catch (const std::exception& e) {
        r.escaped = e.what();
    }
    r.out = out.str();
    r.err = err.str();
    return r;
}

inline CliResult run_cli(const std::vector<std::string>& args) { return run_cli_input(args, ""); }

// Whether `text` holds `part` (a generated kernel's line, a message's clause).
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(line);
    }
    return lines;
}

inline std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// README.md, then the pages of docs/ in name order: the documentation the tests hold to what
// toysim does (its examples run, its links resolve).
inline std::vector<std::filesystem::path> documentation_pages() {
    const std::filesystem::path root(TOYSIM_SOURCE_DIR);
    std::vector<std::filesystem::path> pages;
    for (const auto& e : std::filesystem::directory_iterator(root / "docs"))
        if (e.is_regular_file() && e.path().extension() == ".md") pages.push_back(e.path());
    std::sort(pages.begin(), pages.end());
    pages.insert(pages.begin(), root / "README.md");
    return pages;
}

// Problem 1 on known data: c00 = 1·5 + 2·7 = 19.
inline const char* const kP1Literal = R"(registers 3
input  a[2][2] = [[1, 2], [3, 4]]
input  b[2][2] = [[5, 6], [7, 8]]
output c[2][2]
check c[0][0] = matmul(a, b)[0][0]
LOAD a[0][0], R0
LOAD b[0][0], R1
MAC_Z R0, R1, R2
LOAD a[0][1], R0
LOAD b[1][0], R1
MAC R0, R1, R2, R2
STORE R2, c[0][0]
)";

}  // namespace toysim::testing
