// The layers depend one way: a file may include its own layer and the layers below it, never one
// above. A layer is a folder (support/, isa/, sim/exec/, gpu/kernels/, ...), so the tree shows
// them. CMake links them that way too (CMakeLists.txt); this test names the file and the include
// that breaks the rule before a reader has to decode a link error.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

// Each layer (its folder) and the layers it may include (its own is always allowed).
const std::map<std::string, std::set<std::string>>& allowed() {
    static const std::set<std::string> below_check = {"support", "isa", "sim/front", "sim/reference", "sim/lower", "sim/exec"};
    static const std::set<std::string> below_gpu = {"support", "isa", "sim/front", "sim/reference", "sim/lower", "sim/exec", "sim/check",
                                                    "sim/analysis", "sim/timing"};
    auto with = [](std::set<std::string> layers, std::initializer_list<const char*> more) {
        layers.insert(more.begin(), more.end());
        return layers;
    };
    static const std::map<std::string, std::set<std::string>> rules = {
        {"support", {}},
        {"isa", {"support"}},
        {"sim/front", {"support", "isa"}},
        {"sim/reference", {"support"}},
        {"sim/lower", {"support", "isa", "sim/front", "sim/reference"}},
        {"sim/exec", {"support", "isa", "sim/front", "sim/reference", "sim/lower"}},
        {"sim/check", below_check},
        {"sim/analysis", {"support", "isa", "sim/front", "sim/reference", "sim/lower"}},
        // The timing pass: the walk's counts on a named machine.
        {"sim/timing", {"support", "isa", "sim/front", "sim/reference", "sim/lower", "sim/exec"}},
        // The kernels' boundary and the kernels themselves: nothing of the simulator, because
        // libtoysim_cuda.so links none of it.
        {"gpu/kernels", {}},
        // CUDA from a lowered program, and NVRTC that compiles it.
        {"gpu/codegen", {"support", "isa", "sim/front", "sim/reference", "sim/lower", "gpu/kernels"}},
        // Running and measuring: the host's runs and diffs, and the device side of a launch.
        {"gpu/runtime", with(below_gpu, {"gpu/kernels", "gpu/codegen"})},
        // The probes and scripts: anything of the GPU's.
        {"gpu/tools", with(below_gpu, {"gpu/kernels", "gpu/codegen", "gpu/runtime"})},
        {"sim/step", below_gpu},
        {"sim/grade", below_gpu},
        {"sim/print", with(below_gpu, {"gpu/kernels", "gpu/codegen", "gpu/runtime", "sim/step", "sim/grade"})},
        // The command layer: what each command does, for the CLI, the Python module and the browser.
        {"sim/app", with(below_gpu, {"gpu/kernels", "gpu/codegen", "gpu/runtime", "sim/step", "sim/grade", "sim/print"})},
        {"sim/cli", with(below_gpu, {"gpu/kernels", "gpu/codegen", "gpu/runtime", "sim/step", "sim/grade", "sim/print", "sim/app"})},
    };
    return rules;
}

// The layer (folder) of a path from the repository's root: "isa" for isa/isa.h, "support" for
// support/text.h, "sim/exec" for sim/exec/machine.h, "gpu/kernels" for gpu/kernels/kernels.h;
// "" for a file at the top of sim/ or gpu/ or anywhere else.
std::string layer_of(const std::string& path) {
    for (const char* top : {"support/", "isa/"})
        if (path.rfind(top, 0) == 0) return std::string(top, std::string(top).size() - 1);
    for (const char* top : {"sim/", "gpu/"}) {
        if (path.rfind(top, 0) != 0) continue;
        auto slash = path.find('/', 4);
        return slash == std::string::npos ? "" : path.substr(0, slash);
    }
    return "";
}

// The CMake library of a layer: toysim_exec for sim/exec, toysim_gpu_kernels for gpu/kernels.
std::string library_of(const std::string& layer) {
    std::string name = layer.rfind("sim/", 0) == 0 ? layer.substr(4) : layer;
    for (char& c : name)
        if (c == '/') c = '_';
    return "toysim_" + name;
}

std::vector<std::string> sources() {
    std::vector<std::string> out;
    for (const char* top : {"support", "isa", "sim", "gpu"})
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

// The table is an order, so "below" means something: no layer may include itself through
// another, and a layer may include whatever the layers below it may.
TEST_CASE("the layer table runs one way", "[layers]") {
    for (const auto& [layer, below] : allowed())
        for (const auto& lower : below) {
            INFO(layer << " may include " << lower);
            REQUIRE(allowed().count(lower) == 1);
            CHECK(lower != layer);
            CHECK(allowed().at(lower).count(layer) == 0);
            for (const auto& further : allowed().at(lower)) {
                INFO("which may include " << further);
                CHECK(below.count(further) == 1);
            }
        }
}

TEST_CASE("the layer rule catches an include that goes up", "[layers]") {
    CHECK(allowed().at("sim/exec").count("sim/print") == 0);
    CHECK(allowed().at("sim/analysis").count("sim/print") == 0);
    CHECK(allowed().at("isa").count("sim/front") == 0);
    CHECK(allowed().at("gpu/kernels").count("gpu/runtime") == 0);
    CHECK(allowed().at("gpu/codegen").count("gpu/runtime") == 0);
    CHECK(allowed().at("gpu/runtime").count("gpu/tools") == 0);
    CHECK(layer_of("sim/print/report.h") == "sim/print");
    CHECK(layer_of("isa/isa.h") == "isa");
    CHECK(layer_of("support/text.h") == "support");
    CHECK(layer_of("gpu/codegen/codegen.h") == "gpu/codegen");
    CHECK(layer_of("gpu/kernels.h") == "");  // gpu/ holds folders, not sources
    CHECK(library_of("sim/exec") == "toysim_exec");
    CHECK(library_of("gpu/runtime") == "toysim_gpu_runtime");
}

// Each toysim_layer(NAME SOURCES ... DEPS ...) of CMakeLists.txt is one folder's library and
// links only layers its folder may include.
TEST_CASE("each layer's library is its folder and links only the layers below", "[layers]") {
    std::ifstream in(fs::path(TOYSIM_SOURCE_DIR) / "CMakeLists.txt");
    std::stringstream text;
    text << in.rdbuf();
    const std::string cmake = text.str();
    const std::regex call(R"(\ntoysim_layer\(([a-z_]+)\s+SOURCES\s+([^)]*?)\s+DEPS\s+([^)]*)\))");
    std::map<std::string, std::string> layer_of_library;
    for (const auto& [layer, below] : allowed()) layer_of_library[library_of(layer)] = layer;
    int libraries = 0;
    for (auto it = std::sregex_iterator(cmake.begin(), cmake.end(), call); it != std::sregex_iterator(); ++it) {
        const std::string library = "toysim_" + (*it)[1].str();
        INFO(library);
        REQUIRE(layer_of_library.count(library) == 1);
        const std::string layer = layer_of_library.at(library);
        ++libraries;
        std::istringstream sources((*it)[2].str());
        for (std::string source; sources >> source;) {
            if (source.find("${") != std::string::npos) continue;  // generated files, optional lists
            INFO(source);
            CHECK(layer_of(source) == layer);
        }
        std::istringstream deps((*it)[3].str());
        for (std::string dep; deps >> dep;) {
            if (dep.rfind("toysim_", 0) != 0 || dep == "toysim_flags") continue;  // fmt::fmt, CLI11::CLI11, ...
            INFO("links " << dep);
            REQUIRE(layer_of_library.count(dep) == 1);
            CHECK(allowed().at(layer).count(layer_of_library.at(dep)) == 1);
        }
    }
    CHECK(libraries == int(allowed().size()) - 1);  // every layer but gpu/tools (executables, no library)
}

TEST_CASE("no source file of the simulator is over 800 lines", "[layers]") {
    for (const auto& file : sources()) {
        if (file.rfind("gpu/kernels/", 0) == 0) continue;  // a kernel file holds an operation's versions, naive to fused (llm.c's dev/cuda)
        std::ifstream in(fs::path(TOYSIM_SOURCE_DIR) / file);
        int lines = 0;
        std::string line;
        while (std::getline(in, line)) ++lines;
        INFO(file << " has " << lines << " lines");
        CHECK(lines <= 800);
    }
}
