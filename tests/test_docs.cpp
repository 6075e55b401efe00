// The language reference must describe the ISA the table defines: one row per opcode, with
// its operands, meaning and cycle cost exactly as isa/opcodes.h says; the README lists every
// counter; committed results name no path of the machine that made them.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "isa/counters.h"
#include "isa/isa.h"
#include "support.h"

using toysim::testing::read_text;

TEST_CASE("isa/README.md lists every opcode of the ISA table", "[docs]") {
    const std::string text = read_text(std::string(TOYSIM_SOURCE_DIR) + "/isa/README.md");
    REQUIRE(!text.empty());
    for (const auto& row : toysim::all_ops()) {
        std::string line = fmt::format("| `{} {}` | {} | {} |", row.mnemonic, row.operands, row.meaning, row.cycles);
        INFO(line);
        CHECK(text.find(line) != std::string::npos);
    }
}

TEST_CASE("README.md lists every counter of the counter table with its JSON path", "[docs]") {
    const std::string text = read_text(std::string(TOYSIM_SOURCE_DIR) + "/README.md");
    REQUIRE(!text.empty());
    for (const auto& row : toysim::all_counters()) {
        // The README's examples: LOAD for an opcode's count, MAC for work, O for what is
        // written (writes, DRAM bytes written back) and K for any other array's counter.
        using toysim::CounterKind;
        bool written = row.kind == CounterKind::ArrayWrites || row.kind == CounterKind::ArrayCacheDramWritten;
        std::string subject = row.name == "{}"                               ? "LOAD"
                              : row.scope == toysim::CounterScope::PerArray ? (written ? "O" : "K")
                                                                            : "MAC";
        std::string name = row.name_for(subject), json = row.json_for(subject);
        INFO(name << " at " << json);
        CHECK(text.find("`" + name + "`") != std::string::npos);
        CHECK(text.find("`" + json + "`") != std::string::npos);
    }
}

namespace {

// A path that names a machine's own folders: "/work/...", "/home/...", "C:\...".
bool absolute_path(std::string_view s) {
    static const std::regex path(R"((^|[\s"'(=:,])(/(home|work|tmp|root|usr|opt|mnt|var|srv|scratch|Users|private)/|[A-Za-z]:\\))");
    return std::regex_search(s.begin(), s.end(), path);
}

void strings_of(const nlohmann::json& j, std::vector<std::string>& out) {
    if (j.is_string()) out.push_back(j.get<std::string>());
    else if (j.is_structured())
        for (const auto& [key, value] : j.items()) {
            if (j.is_object()) out.push_back(key);
            strings_of(value, out);
        }
}

}  // namespace

TEST_CASE("no committed result names a path of the machine that made it", "[docs]") {
    CHECK(absolute_path("\"program\": \"/work/main/programs/fa2.toy\""));
    CHECK(absolute_path("(/home/me/toysim)"));
    CHECK_FALSE(absolute_path("programs/attention/fa2.toy"));
    CHECK_FALSE(absolute_path("4 KiB/s, 1/2"));
    int files = 0;
    for (const char* dir : {"traces", "gpu/results", "docs"}) {
        for (const auto& e : std::filesystem::recursive_directory_iterator(std::filesystem::path(TOYSIM_SOURCE_DIR) / dir)) {
            if (!e.is_regular_file()) continue;
            const std::string ext = e.path().extension().string();
            if (ext == ".png") continue;
            std::string text = read_text(e.path());
            std::string relative = std::filesystem::relative(e.path(), TOYSIM_SOURCE_DIR).string();
            INFO(relative);
            ++files;
            if (ext == ".json") {
                // Every string of the document, keys too.
                std::vector<std::string> strings;
                strings_of(nlohmann::json::parse(text), strings);
                for (const auto& s : strings) {
                    INFO(s);
                    CHECK_FALSE(absolute_path(s));
                    CHECK_FALSE((s.size() > 1 && s[0] == '/' && s.find('/', 1) != std::string::npos));
                }
            } else {
                std::istringstream lines(text);
                std::string line;
                while (std::getline(lines, line)) {
                    INFO(line);
                    CHECK_FALSE(absolute_path(line));
                }
            }
        }
    }
    CHECK(files > 50);
}
