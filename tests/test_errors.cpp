// The bad-input corpus: every tests/bad/*.toy is a small malformed program whose header says
// which error toysim must report.
//
//   # expect-error: LINE:COL: error: MESSAGE   the first stderr line, less the leading file path
//   # expect-error: error: MESSAGE             an error without a location: "PATH: error: MESSAGE"
//   # expect-error: toysim: error: MESSAGE     a command-line error reported as "toysim: ...",
//                                              compared as written
//   # args: run --set n=3                      toysim's arguments before the file (default: run)
//
// Every corpus file must exit with 2. An error with a location must be followed by the source
// line ("  LINE | text") and a caret line whose first '^' sits under column COL.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sim/cli/app.h"
#include "support.h"

using namespace toysim::testing;

namespace {

namespace fs = std::filesystem;




// The corpus directory as toysim should be given it: relative to the working directory (the
// repository root, as ctest runs the suite) so messages read "tests/bad/NAME.toy:...", or
// absolute when the tests run from elsewhere.
std::string corpus_dir() {
    if (fs::is_directory("tests/bad")) return "tests/bad";
    return std::string(TOYSIM_SOURCE_DIR) + "/tests/bad";
}

std::vector<std::string> corpus_files() {
    std::vector<std::string> names;
    if (!fs::is_directory(corpus_dir())) return names;
    for (const auto& entry : fs::directory_iterator(corpus_dir()))
        if (entry.is_regular_file() && entry.path().extension() == ".toy") names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

struct Header {
    std::string expect_error;  // empty: no header found
    std::vector<std::string> args{"run"};
};

Header read_header(const std::vector<std::string>& lines) {
    Header h;
    const std::string expect_key = "# expect-error: ", args_key = "# args:";
    for (const auto& line : lines) {
        if (line.empty() || line[0] != '#') break;  // the header is the leading comment block
        if (line.rfind(expect_key, 0) == 0) {
            h.expect_error = line.substr(expect_key.size());
        } else if (line.rfind(args_key, 0) == 0) {
            std::istringstream words(line.substr(args_key.size()));
            h.args.clear();
            for (std::string w; words >> w;) h.args.push_back(w);
        }
    }
    return h;
}

// Code points, not bytes: the caret of a line holding "×" is placed by display width.
size_t display_width(const std::string& s) {
    size_t width = 0;
    for (unsigned char ch : s)
        if ((ch & 0xC0) != 0x80) ++width;
    return width;
}

bool starts_with_digit(const std::string& s) { return !s.empty() && std::isdigit(static_cast<unsigned char>(s[0])); }

}  // namespace

TEST_CASE("the bad-input corpus is there", "[errors]") {
    auto files = corpus_files();
    INFO("corpus directory: " << corpus_dir());
    CHECK(files.size() >= 30);
    for (const auto& name : files) {
        INFO("file: " << corpus_dir() << "/" << name);
        CHECK_FALSE(read_header(split_lines(read_text(fs::path(corpus_dir()) / name))).expect_error.empty());
    }
}

TEST_CASE("every bad program fails with its expected message", "[errors]") {
    const std::string dir = corpus_dir();
    for (const auto& name : corpus_files()) {
        DYNAMIC_SECTION(name) {
            const std::string path = dir + "/" + name;
            const std::vector<std::string> source = split_lines(read_text(path));
            const Header header = read_header(source);
            INFO("file: " << path);
            REQUIRE_FALSE(header.expect_error.empty());

            std::vector<std::string> args = header.args;
            args.push_back(path);
            std::string command = "toysim";
            for (const auto& a : args) command += " " + a;
            INFO("command: " << command);

            CliResult o = run_cli(args);
            INFO("stderr:\n" << o.err);
            if (!o.escaped.empty()) FAIL("an exception escaped toysim::cli::main (the binary would abort): " << o.escaped);
            CHECK(o.code == 2);

            const std::string& e = header.expect_error;
            std::string expected_first;
            if (e.rfind("toysim: ", 0) == 0)
                expected_first = e;
            else if (e.rfind("error: ", 0) == 0)
                expected_first = path + ": " + e;
            else
                expected_first = path + ":" + e;

            const std::vector<std::string> lines = split_lines(o.err);
            REQUIRE(!lines.empty());
            CHECK(lines[0] == expected_first);

            if (starts_with_digit(e)) {
                // LINE:COL: error: ...
                int line_no = std::stoi(e);
                int col = std::stoi(e.substr(e.find(':') + 1));
                REQUIRE(lines.size() >= 3);
                std::string text = line_no >= 1 && line_no <= static_cast<int>(source.size()) ? source[static_cast<size_t>(line_no - 1)] : "";
                std::replace(text.begin(), text.end(), '\t', ' ');
                std::string number = std::to_string(line_no);
                std::string expected_source = std::string(number.size() < 5 ? 5 - number.size() : 0, ' ') + number + " | " + text;
                CHECK(lines[1] == expected_source);
                const std::string caret_prefix = "      | ";
                CHECK(lines[2].rfind(caret_prefix, 0) == 0);
                size_t caret = lines[2].find('^');
                REQUIRE(caret != std::string::npos);
                std::string before = text.substr(0, std::min(text.size(), static_cast<size_t>(std::max(0, col - 1))));
                CHECK(caret == caret_prefix.size() + display_width(before));
                CHECK(lines[2].find_first_not_of(' ', caret_prefix.size()) == caret);
                CHECK(lines[2].find_first_not_of('^', caret) == std::string::npos);
            }
        }
    }
}

TEST_CASE("representative errors, the whole message", "[errors]") {
    const std::string dir = corpus_dir();
    SECTION("an unknown opcode with a suggestion") {
        const std::string path = dir + "/unknown_opcode_mak.toy";
        CliResult o = run_cli({"run", path});
        CHECK(o.code == 2);
        CHECK(o.err == path + ":9:1: error: unknown opcode 'MAK'; did you mean 'MAC'?\n"
                              "    9 | MAK R0, R1, R2\n"
                              "      | ^^^\n");
    }
    SECTION("a run-time index out of bounds names the loop variables") {
        const std::string path = dir + "/index_out_of_bounds_2d.toy";
        CliResult o = run_cli({"run", path});
        CHECK(o.code == 2);
        CHECK(o.err == path + ":8:14: error: a[2][0] is out of bounds: a is 2×3 (at i = 0, j = 2)\n"
                              "    8 |         LOAD a[j][i], R0\n"
                              "      |              ^^^^^^^\n");
    }
    SECTION("a caret after a multi-byte character") {
        const std::string path = dir + "/unexpected_character_times.toy";
        CliResult o = run_cli({"run", path});
        CHECK(o.code == 2);
        CHECK(o.err == path + ":3:13: error: unexpected character '×'; write '*' for multiplication\n"
                              "    3 | param n = 2 × 3\n"
                              "      |             ^\n");
    }
}

TEST_CASE("a program file that is not there", "[errors]") {
    REQUIRE_FALSE(fs::exists("nope.toy"));
    CliResult o = run_cli({"run", "nope.toy"});
    CHECK(o.code == 2);
    CHECK(o.err == "toysim: error: cannot open 'nope.toy': no such file or not readable\n");
    CHECK(o.out.empty());
}

TEST_CASE("a completely empty program file", "[errors]") {
    const fs::path path = fs::temp_directory_path() / "toysim_test_errors_empty.toy";
    { std::ofstream create(path, std::ios::binary | std::ios::trunc); }
    REQUIRE(fs::exists(path));
    CliResult o = run_cli({"run", path.string()});
    fs::remove(path);
    CHECK(o.code == 2);
    auto lines = split_lines(o.err);
    REQUIRE(!lines.empty());
    CHECK(lines[0] == path.string() + ": error: the program does not say how many registers the machine has: add 'registers N'");
}

TEST_CASE("command-line mistakes exit with 2", "[errors]") {
    SECTION("an unknown subcommand") {
        CliResult o = run_cli({"frobnicate", "programs/p1_c00.toy"});
        CHECK(o.code == 2);
        CHECK_FALSE(o.err.empty());
    }
    SECTION("an unknown option") {
        CliResult o = run_cli({"run", "--frobnicate", "programs/p1_c00.toy"});
        CHECK(o.code == 2);
        CHECK_FALSE(o.err.empty());
    }
    SECTION("no subcommand at all") {
        CliResult o = run_cli({});
        CHECK(o.code == 2);
    }
    SECTION("run without a file") {
        CliResult o = run_cli({"run"});
        CHECK(o.code == 2);
    }
    SECTION("a value --format does not know") {
        CliResult o = run_cli({"run", "--format", "xml", "programs/p1_c00.toy"});
        CHECK(o.code == 2);
    }
}

TEST_CASE("the help flag exits with 0", "[errors]") {
    SECTION("toysim --help") {
        CliResult o = run_cli({"--help"});
        CHECK(o.code == 0);
        CHECK(o.out.find("run") != std::string::npos);
        CHECK(o.out.find("trace") != std::string::npos);
        CHECK(o.err.empty());
    }
    SECTION("toysim run --help") {
        CliResult o = run_cli({"run", "--help"});
        CHECK(o.code == 0);
        CHECK(o.out.find("--max-steps") != std::string::npos);
    }
}
