// The layers of sim/ depend one way: a file may include its own layer and the layers below it,
// never one above. CMake links them that way too (CMakeLists.txt); this test names the file and
// the include that breaks the rule before a reader has to decode a link error.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace fs = std::filesystem;

namespace {

// Each layer and the layers it may include (its own is always allowed).
const std::map<std::string, std::set<std::string>>& allowed() {
    static const std::map<std::string, std::set<std::string>> rules = {
        {"support", {}},
        {"isa", {"support"}},
        {"front", {"support", "isa"}},
        {"reference", {"support"}},
        {"lower", {"support", "isa", "front", "reference"}},
        {"exec", {"support", "isa", "front", "reference", "lower"}},
        {"check", {"support", "isa", "front", "reference", "lower", "exec"}},
        {"analysis", {"support", "isa", "front", "reference", "lower"}},
        {"gpu", {"support", "isa", "front", "reference", "lower", "exec", "check", "analysis"}},
        {"step", {"support", "isa", "front", "reference", "lower", "exec", "check", "analysis"}},
        {"grade", {"support", "isa", "front", "reference", "lower", "exec", "check", "analysis"}},
        {"print", {"support", "isa", "front", "reference", "lower", "exec", "check", "analysis", "gpu", "step", "grade"}},
        {"app", {"support", "isa", "front", "reference", "lower", "exec", "check", "analysis", "gpu", "step", "grade", "print"}},
        {"cli", {"support", "isa", "front", "reference", "lower", "exec", "check", "analysis", "gpu", "step", "grade", "print", "app"}},
    };
    return rules;
}

// "isa" for isa/..., "gpu" for gpu/..., "exec" for sim/exec/...; "" for anything else.
std::string layer_of(const std::string& path) {
    if (path.rfind("isa/", 0) == 0) return "isa";
    if (path.rfind("gpu/", 0) == 0) return "gpu";
    if (path.rfind("sim/", 0) != 0) return "";
    auto slash = path.find('/', 4);
    return slash == std::string::npos ? "" : path.substr(4, slash - 4);
}

std::vector<std::string> sources() {
    std::vector<std::string> out;
    for (const char* top : {"isa", "sim", "gpu"})
        for (const auto& entry : fs::recursive_directory_iterator(fs::path(TOYSIM_SOURCE_DIR) / top)) {
            auto ext = entry.path().extension();
            if (entry.is_regular_file() && (ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".cuh"))
                out.push_back(fs::relative(entry.path(), TOYSIM_SOURCE_DIR).generic_string());
        }
    return out;
}

}  // namespace

TEST_CASE("every source file belongs to a known layer", "[layers]") {
    for (const auto& file : sources()) {
        INFO(file);
        CHECK(allowed().count(layer_of(file)) == 1);
    }
}

TEST_CASE("no layer includes a layer above it", "[layers]") {
    const std::regex include(R"(^\s*#\s*include\s*"([^"]+)\")");
    int includes = 0;
    for (const auto& file : sources()) {
        std::string layer = layer_of(file);
        std::ifstream in(fs::path(TOYSIM_SOURCE_DIR) / file);
        std::string line;
        while (std::getline(in, line)) {
            std::smatch m;
            if (!std::regex_search(line, m, include)) continue;
            std::string target = m[1];
            if (file.rfind("isa/", 0) == 0 && target == "opcodes.h") target = "isa/opcodes.h";
            std::string to = layer_of(target);
            INFO(file << " includes " << target);
            REQUIRE(!to.empty());  // includes name the path from the root: "sim/exec/machine.h"
            ++includes;
            if (to != layer) CHECK(allowed().at(layer).count(to) == 1);
        }
    }
    CHECK(includes > 40);
}

TEST_CASE("the layer rule catches an include that goes up", "[layers]") {
    CHECK(allowed().at("exec").count("print") == 0);
    CHECK(allowed().at("analysis").count("print") == 0);
    CHECK(allowed().at("isa").count("front") == 0);
    CHECK(layer_of("sim/print/report.h") == "print");
    CHECK(layer_of("isa/isa.h") == "isa");
}

TEST_CASE("no source file of the simulator is over 800 lines", "[layers]") {
    for (const auto& file : sources()) {
        if (file.rfind("gpu/", 0) == 0) continue;  // a kernel file holds an operation's versions, naive to fused (llm.c's dev/cuda)
        std::ifstream in(fs::path(TOYSIM_SOURCE_DIR) / file);
        int lines = 0;
        std::string line;
        while (std::getline(in, line)) ++lines;
        INFO(file << " has " << lines << " lines");
        CHECK(lines <= 800);
    }
}
