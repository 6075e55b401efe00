// The fuzzer's inputs, replayed: every file of tests/fuzz/crashes/ (each once crashed
// toysim_fuzz; scripts/fuzz.sh adds them) and of the seed corpus tests/fuzz/corpus/ goes
// through parse -> compile -> cost -> run -> trace -> every printer, as the fuzz target does
// (tests/fuzz/one_input.h). Each must end in results or a ToyError; nothing else may escape.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>

#include "support.h"
#include "tests/fuzz/one_input.h"

using namespace toysim::testing;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> inputs(const char* dir) {
    std::vector<fs::path> out;
    fs::path root = fs::path(TOYSIM_SOURCE_DIR) / "tests" / "fuzz" / dir;
    if (!fs::exists(root)) return out;
    for (const auto& e : fs::directory_iterator(root))
        if (e.is_regular_file() && e.path().filename().string().rfind("README", 0) != 0) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

void replay(const std::vector<fs::path>& files) {
    for (const auto& path : files) {
        INFO(path.string());
        std::string escaped;
        try {
            toysim::fuzz::one_input(read_text(path));
        } catch (const std::exception& e) {
            escaped = e.what();
        }
        CHECK(escaped == "");
    }
}

}  // namespace

TEST_CASE("fuzz regressions: every input that once crashed the fuzzer ends in results or a ToyError", "[fuzz]") {
    replay(inputs("crashes"));
}

TEST_CASE("fuzz regressions: every seed of the fuzz corpus ends in results or a ToyError", "[fuzz]") {
    auto files = inputs("corpus");
    CHECK(files.size() >= 50);
    replay(files);
}
