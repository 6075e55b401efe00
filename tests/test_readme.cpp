// The README must tell the truth: every ```console block that starts with
// "$ build/toysim ARGS" prints exactly the text that follows it.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "sim/cli/app.h"

TEST_CASE("README console examples print what the README says", "[docs]") {
    std::ifstream in(std::string(TOYSIM_SOURCE_DIR) + "/README.md");
    REQUIRE(in);
    std::string line;
    int examples = 0;
    while (std::getline(in, line)) {
        if (line != "```console") continue;
        std::string command, expected;
        std::getline(in, command);
        while (std::getline(in, line) && line != "```") expected += line + "\n";
        const std::string prefix = "$ build/toysim ";
        REQUIRE(command.rfind(prefix, 0) == 0);
        std::istringstream words(command.substr(prefix.size()));
        std::vector<std::string> args;
        for (std::string w; words >> w;) args.push_back(w);
        std::ostringstream out, err;
        INFO(command);
        CHECK(toysim::cli::main(args, out, err) == 0);
        CHECK(out.str() == expected);
        ++examples;
    }
    CHECK(examples >= 3);
}
