// The toysim command line as a function, so tests run it in-process with captured output.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace toysim::cli {

inline constexpr const char* kVersion = "0.1.0";

// args excludes the program name. Exit codes: 0 ok, 1 a check or an expected figure failed,
// 2 bad input (malformed program, bad option, run-time fault, step limit).
int main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace toysim::cli
