// The README and the pages of docs/ must tell the truth: every ```console block that starts
// with "$ build/toysim ARGS" prints exactly the text that follows it. Two shell forms are read too:
// "$ printf 'LINES' | build/toysim ARGS" feeds LINES (with \n escapes) on standard input, as a
// scripted `toysim step` session does, and a trailing "# exits N" is the exit code expected
// (0 when none is given).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/cli/app.h"
#include "support.h"

namespace {

std::string unescape_printf(const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == 'n') {
            out += '\n';
            ++i;
        } else {
            out += text[i];
        }
    }
    return out;
}

int run_console_examples(const std::filesystem::path& page) {
    std::ifstream in(page);
    REQUIRE(in);
    std::string line;
    int examples = 0;
    while (std::getline(in, line)) {
        if (line != "```console") continue;
        std::string command, expected;
        std::getline(in, command);
        while (std::getline(in, line) && line != "```") expected += line + "\n";
        INFO(command);
        std::string input;
        const std::string printf_prefix = "$ printf '";
        if (command.rfind(printf_prefix, 0) == 0) {
            size_t close = command.find("' | build/toysim ");
            REQUIRE(close != std::string::npos);
            input = unescape_printf(command.substr(printf_prefix.size(), close - printf_prefix.size()));
            command = "$ " + command.substr(close + 4);
        }
        int expected_code = 0;
        if (size_t hash = command.find("  # exits "); hash != std::string::npos) {
            expected_code = std::stoi(command.substr(hash + 10));
            command.erase(hash);
        }
        const std::string prefix = "$ build/toysim ";
        REQUIRE(command.rfind(prefix, 0) == 0);
        std::istringstream words(command.substr(prefix.size()));
        std::vector<std::string> args;
        for (std::string w; words >> w;) args.push_back(w);
        std::istringstream stdin_text(input);
        toysim::cli::Io io;
        io.in = &stdin_text;
        std::ostringstream out, err;
        CHECK(toysim::cli::main(args, out, err, io) == expected_code);
        CHECK(out.str() == expected);
        ++examples;
    }
    return examples;
}

}  // namespace

TEST_CASE("README and docs console examples print what they say", "[docs]") {
    int examples = 0, in_readme = 0;
    for (const auto& page : toysim::testing::documentation_pages()) {
        INFO(page.filename().string());
        int n = run_console_examples(page);
        if (page.filename() == "README.md") in_readme = n;
        examples += n;
    }
    CHECK(in_readme >= 3);  // the tour's trace, run and compare
    CHECK(examples >= 11);  // as many as the README held before docs/ took its other pages
}
