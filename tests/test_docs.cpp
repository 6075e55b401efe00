// The language reference must describe the ISA the table defines: one row per opcode, with
// its operands, meaning and cycle cost exactly as isa/opcodes.h says; docs/counters.md lists
// every counter; the README's and docs/'s links lead to files and headings that exist; the
// README stays short and each page of docs/ opens with its contents; committed results name no
// path of the machine that made them.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "isa/counters.h"
#include "isa/isa.h"
#include "support.h"

using toysim::testing::documentation_pages;
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

TEST_CASE("docs/counters.md lists every counter of the counter table with its JSON path", "[docs]") {
    const std::string text = read_text(std::string(TOYSIM_SOURCE_DIR) + "/docs/counters.md");
    REQUIRE(!text.empty());
    for (const auto& row : toysim::all_counters()) {
        // The page's examples: LOAD for an opcode's count, MAC for work, O for what is
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

namespace fs = std::filesystem;

// The lines of a Markdown file outside its ``` blocks, where headings and links are.
std::vector<std::string> prose_lines(const fs::path& file) {
    std::istringstream in(read_text(file));
    std::vector<std::string> out;
    bool fenced = false;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("```", 0) == 0) fenced = !fenced;
        else if (!fenced) out.push_back(line);
    }
    return out;
}

// GitHub's anchor for a heading: lower case, spaces as hyphens, punctuation and symbols
// dropped, letters of any script kept. Of the non-ASCII characters, those our headings use
// that are not letters are listed here.
std::string anchor_of(std::string_view heading) {
    static const std::set<std::string_view> dropped = {"×", "→", "·", "−", "–", "—", "’", "∘"};
    std::string out;
    for (size_t i = 0; i < heading.size();) {
        const auto c = static_cast<unsigned char>(heading[i]);
        if (c < 0x80) {
            if (std::isalnum(c)) out += static_cast<char>(std::tolower(c));
            else if (c == ' ' || c == '-') out += '-';
            else if (c == '_') out += '_';
            ++i;
            continue;
        }
        const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        const std::string_view character = heading.substr(i, length);
        if (!dropped.count(character)) out += character;
        i += length;
    }
    return out;
}

// Each heading's anchor, in order; a repeated one gets -1, -2, ... as on GitHub.
std::vector<std::pair<int, std::string>> headings_of(const fs::path& file) {
    std::vector<std::pair<int, std::string>> out;
    std::map<std::string, int> seen;
    static const std::regex heading(R"(^(#{1,6}) (.+)$)");
    for (const auto& line : prose_lines(file)) {
        std::smatch m;
        if (!std::regex_match(line, m, heading)) continue;
        std::string anchor = anchor_of(m[2].str());
        if (int n = seen[anchor]++; n > 0) {
            anchor += '-';  // appended in two steps: "-" + to_string trips GCC 12's -Wrestrict
            anchor += std::to_string(n);
        }
        out.emplace_back(static_cast<int>(m[1].length()), anchor);
    }
    return out;
}

bool has_anchor(const fs::path& file, const std::string& anchor) {
    for (const auto& [level, a] : headings_of(file))
        if (a == anchor) return true;
    return false;
}

}  // namespace

TEST_CASE("the README and docs/ link only to files and headings that exist", "[docs]") {
    static const std::regex link(R"(\]\(([^)\s]+)\))");
    int links = 0;
    for (const auto& page : documentation_pages()) {
        for (const auto& line : prose_lines(page)) {
            for (auto it = std::sregex_iterator(line.begin(), line.end(), link); it != std::sregex_iterator(); ++it) {
                const std::string target = (*it)[1].str();
                if (std::regex_search(target, std::regex("^[a-z]+:"))) continue;  // https:, mailto:
                const size_t hash = target.find('#');
                const std::string path = target.substr(0, hash);
                const fs::path file = path.empty() ? page : page.parent_path() / path;
                INFO(page.filename().string() << ": " << target);
                ++links;
                CHECK(fs::exists(file));
                if (hash != std::string::npos && file.extension() == ".md" && fs::exists(file))
                    CHECK(has_anchor(file, target.substr(hash + 1)));
            }
        }
    }
    CHECK(links > 100);
}

// Issue 35: a newcomer reads the README in ten minutes; the rest belongs in a page of docs/.
TEST_CASE("the README stays a ten-minute read: at most 400 lines", "[docs]") {
    const std::string text = read_text(std::string(TOYSIM_SOURCE_DIR) + "/README.md");
    CHECK(std::count(text.begin(), text.end(), '\n') <= 400);
}

TEST_CASE("every page of docs/ starts with contents that list its headings", "[docs]") {
    for (const auto& page : documentation_pages()) {
        if (page.filename() == "README.md") continue;
        INFO(page.filename().string());
        std::vector<std::string> listed, headings;
        static const std::regex entry(R"(^ *- \[.*\]\(#([^)]+)\)$)");
        bool in_contents = false;
        for (const auto& line : prose_lines(page)) {
            std::smatch m;
            if (line == "## Contents") in_contents = true;
            else if (in_contents && std::regex_match(line, m, entry)) listed.push_back(m[1].str());
            else if (in_contents && !line.empty()) in_contents = false;
        }
        for (const auto& [level, anchor] : headings_of(page))
            if (level >= 2 && anchor != "contents") headings.push_back(anchor);
        CHECK(listed == headings);
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
            // docs/'s pages are prose that names install paths (/usr/share/toysim) on purpose,
            // as the README they came from did; this test is about recorded output.
            if (ext == ".png" || (std::string_view(dir) == "docs" && ext == ".md")) continue;
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
