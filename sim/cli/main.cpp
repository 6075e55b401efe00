#include <iostream>

#include "sim/cli/app.h"

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    return toysim::cli::main(args, std::cout, std::cerr);
}
