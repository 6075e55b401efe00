// Golden outputs: every line of traces/MANIFEST names a file in traces/ and the toysim
// arguments that must print it, byte for byte.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "sim/cli/app.h"
#include "support.h"

using namespace toysim::testing;

namespace {
// The first line where two texts differ, for a readable failure.
std::string first_difference(const std::string& want, const std::string& got) {
    std::istringstream a(want), b(got);
    std::string la, lb;
    for (int line = 1;; ++line) {
        bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
        if (!more_a && !more_b) return "identical";
        if (la != lb || more_a != more_b)
            return "line " + std::to_string(line) + "\n  golden: " + (more_a ? la : "<end>") + "\n  actual: " + (more_b ? lb : "<end>");
    }
}
}  // namespace

TEST_CASE("golden traces match byte for byte", "[traces]") {
    std::string root = TOYSIM_SOURCE_DIR;
    std::istringstream manifest(read_text(root + "/traces/MANIFEST"));
    std::string line;
    int checked = 0;
    while (std::getline(manifest, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string file, word;
        words >> file;
        std::vector<std::string> args;
        while (words >> word) args.push_back(word);
        std::ostringstream out, err;
        int code = toysim::cli::main(args, out, err);
        std::string golden = read_text(root + "/traces/" + file);
        INFO("traces/" << file << ": toysim " << line.substr(line.find_first_not_of(' ', file.size())));
        INFO(first_difference(golden, out.str()));
        CHECK(code == 0);
        CHECK(err.str().empty());
        CHECK(!golden.empty());
        CHECK(out.str() == golden);
        ++checked;
    }
    CHECK(checked >= 10);
}
