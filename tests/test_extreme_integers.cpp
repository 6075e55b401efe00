// Extreme integers: programs whose lets, parameters, array extents, subscripts, loop bounds,
// register counts, cdiv/min/max calls and / % sit at the edges of 64-bit arithmetic (±2^63,
// 2^31, 2^32, 0, −1, products that overflow), or nest 30000 deep. The programs are generated
// here, written to a temporary folder and given to the command line (`run`, and `cost` except
// where it would only repeat run's evaluation), in a child process, so that a crash (SIGFPE, a
// stack overflow, a sanitizer report) fails a check instead of ending the suite. Each command must exit with 0, 1 or 2, and on 2 say
// `FILE:LINE:COL: error: ...`; where the right answer is clear (an overflow is an error, an
// in-range value is not) the exit code is checked too.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "sim/cli/app.h"

namespace fs = std::filesystem;

namespace {

using Codes = std::set<int>;
const Codes kAny = {0, 1, 2}, kOk = {0}, kError = {2}, kOkOrError = {0, 2};

struct Case {
    std::string name;
    std::string text;
    Codes run = kAny, cost = kAny;   // acceptable exit codes of `toysim run` and `toysim cost`
    std::string message;             // when not empty: an exit 2 of `run` says this
    std::vector<std::string> extra;  // more arguments, e.g. --set n=...
    bool cost_too = true;            // also run `toysim cost`
};

Case make(std::string name, std::string text, Codes run = kAny, Codes cost = kAny, std::string message = {},
          std::vector<std::string> extra = {}) {
    return Case{std::move(name), std::move(text), std::move(run), std::move(cost), std::move(message), std::move(extra)};
}

// What one command did in the child: its exit code and stderr, or how the child died.
struct Outcome {
    std::string died;  // empty: returned normally
    int code = -1;
    std::string err;
};

// The start of a text on one line, newlines shown as " | ".
std::string head(const std::string& text, size_t n = 240) {
    std::string out = text.size() <= n ? text : text.substr(0, n) + "...";
    for (size_t at; (at = out.find('\n')) != std::string::npos;) out.replace(at, 1, " | ");
    return out;
}

std::string describe_status(int status) {
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (sig == SIGALRM) return "timed out";
        return std::string("killed by signal ") + strsignal(sig);
    }
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status)) + " (a sanitizer report?)";
    return "died";
}

void write_all(int fd, const std::string& s) {
    for (size_t done = 0; done < s.size();) {
        ssize_t n = ::write(fd, s.data() + done, s.size() - done);
        if (n <= 0) _exit(90);
        done += static_cast<size_t>(n);
    }
}

// Runs every command from `first` on in one child process, each reported through a pipe as
// "CODE LENGTH\nSTDERR". A child that dies leaves the rest to a new child.
std::vector<Outcome> run_commands(const std::vector<std::vector<std::string>>& commands) {
    std::vector<Outcome> outcomes;
    while (outcomes.size() < commands.size()) {
        size_t first = outcomes.size();
        int fd[2];
        REQUIRE(::pipe(fd) == 0);
        pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::close(fd[0]);
            // Die of a fault as a program would, not through Catch2's handlers (inherited).
            for (int sig : {SIGFPE, SIGSEGV, SIGILL, SIGABRT, SIGBUS, SIGTERM, SIGINT}) std::signal(sig, SIG_DFL);
            for (size_t i = first; i < commands.size(); ++i) {
                ::alarm(60);
                std::ostringstream out, err;
                int code;
                try {
                    code = toysim::cli::main(commands[i], out, err);
                } catch (const std::exception& e) {
                    code = 100;
                    err << "an exception escaped toysim::cli::main: " << e.what();
                } catch (...) {
                    code = 100;
                    err << "an exception escaped toysim::cli::main";
                }
                std::string e = err.str();
                write_all(fd[1], std::to_string(code) + " " + std::to_string(e.size()) + "\n" + e);
            }
            _exit(0);
        }
        ::close(fd[1]);
        std::string data;
        char buffer[65536];
        for (ssize_t n; (n = ::read(fd[0], buffer, sizeof buffer)) != 0;) {
            if (n < 0 && errno == EINTR) continue;
            REQUIRE(n > 0);
            data.append(buffer, static_cast<size_t>(n));
        }
        ::close(fd[0]);
        int status = 0;
        ::waitpid(pid, &status, 0);
        size_t at = 0;
        while (at < data.size()) {
            size_t eol = data.find('\n', at);
            if (eol == std::string::npos) break;
            Outcome o;
            size_t length = 0;
            std::istringstream(data.substr(at, eol - at)) >> o.code >> length;
            if (eol + 1 + length > data.size()) break;
            o.err = data.substr(eol + 1, length);
            outcomes.push_back(std::move(o));
            at = eol + 1 + length;
        }
        if (outcomes.size() < commands.size() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            Outcome o;
            o.died = describe_status(status);
            outcomes.push_back(std::move(o));  // the command that was running when the child died
        }
    }
    return outcomes;
}

// Writes each case to a temporary file, runs `run` and `cost` on it, and checks the outcomes.
void check_cases(const std::string& family, const std::vector<Case>& cases) {
    fs::path dir = fs::temp_directory_path() / ("toysim-extreme-" + std::to_string(::getpid()) + "-" + family);
    fs::create_directories(dir);
    std::vector<std::vector<std::string>> commands;
    std::vector<std::string> paths;
    std::vector<size_t> case_of;  // per command
    for (size_t i = 0; i < cases.size(); ++i) {
        std::string path = (dir / (std::to_string(i) + ".toy")).string();
        std::ofstream(path, std::ios::binary) << cases[i].text;
        paths.push_back(path);
        std::vector<std::string> run = {"run", path, "--max-steps", "100000"}, cost = {"cost", path};
        run.insert(run.end(), cases[i].extra.begin(), cases[i].extra.end());
        cost.insert(cost.end(), cases[i].extra.begin(), cases[i].extra.end());
        commands.push_back(run);
        case_of.push_back(i);
        if (!cases[i].cost_too) continue;
        commands.push_back(cost);
        case_of.push_back(i);
    }
    auto outcomes = run_commands(commands);
    for (size_t i = 0; i < commands.size(); ++i) {
        const Case& c = cases[case_of[i]];
        const std::string& p = paths[case_of[i]];
        const Outcome& o = outcomes[i];
        bool is_run = commands[i][0] == "run";
        INFO(family << ": " << c.name << "\ntoysim " << commands[i][0] << " " << p << "\n"
                    << head(c.text, 160) << "\n-> " << (o.died.empty() ? "exit " + std::to_string(o.code) : o.died) << "\n"
                    << head(o.err, 600));
        CHECK(o.died == "");
        if (!o.died.empty()) continue;
        const Codes& want = is_run ? c.run : c.cost;
        CHECK(want.count(o.code) == 1);
        if (o.code == 2) {
            // FILE:LINE:COL: error: ...
            bool located = o.err.rfind(p + ":", 0) == 0;
            size_t after = p.size() + 1, colon1 = o.err.find(':', after), colon2 = colon1 == std::string::npos ? colon1 : o.err.find(':', colon1 + 1);
            auto digits = [&](size_t from, size_t to) {
                return to != std::string::npos && to > from && o.err.find_first_not_of("0123456789", from) == to;
            };
            located = located && digits(after, colon1) && digits(colon1 + 1, colon2) && o.err.compare(colon2, 9, ": error: ") == 0;
            CHECK(located);
            if (is_run && !c.message.empty()) CHECK(o.err.find(c.message) != std::string::npos);
        }
    }
    fs::remove_all(dir);
}

// A program around a few lines: a 4-element input and output and one load and store.
std::string program(const std::string& declarations, const std::string& body = "") {
    return "registers 3\ninput  x[4]\noutput y[4]\n" + declarations + "\n" + body + "\nLOAD x[0], R0\nSTORE R0, y[0]\n";
}

std::string repeat(const std::string& s, int n) {
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

using i128 = __int128;
constexpr i128 kMin = -(i128{1} << 63), kMax = (i128{1} << 63) - 1;
bool fits(i128 v) { return v >= kMin && v <= kMax; }

// The edge values, as source text and as numbers.
struct Value {
    const char* text;
    i128 value;
};
const std::vector<Value> kEdges = {
    {"9223372036854775807", kMax},           {"9223372036854775806", kMax - 1},
    {"-9223372036854775807", -kMax},         {"(-9223372036854775807 - 1)", kMin},
    {"4611686018427387904", i128{1} << 62},  {"3037000500", 3037000500},
    {"4294967296", i128{1} << 32},           {"4294967295", (i128{1} << 32) - 1},
    {"2147483648", i128{1} << 31},           {"-2147483648", -(i128{1} << 31)},
    {"1", 1},                                {"0", 0},
    {"-1", -1},
};

const std::set<std::string> kFewEdges = {"9223372036854775807", "(-9223372036854775807 - 1)", "4294967296", "0", "-1"};

}  // namespace

TEST_CASE("extreme integers: + - * / and % of int64 edges in let and param", "[extreme]") {
    std::vector<Case> cases;
    for (const auto& a : kEdges)
        for (const auto& b : kEdges)
            for (char op : {'+', '-', '*', '/', '%'}) {
                Case c;
                std::string expr = std::string(a.text) + " " + op + " " + b.text;
                c.name = "let v = " + expr;
                c.text = program(c.name);
                i128 exact = 0;
                bool defined = true;
                switch (op) {
                    case '+': exact = a.value + b.value; break;
                    case '-': exact = a.value - b.value; break;
                    case '*': exact = a.value * b.value; break;
                    default:
                        if (b.value == 0) defined = false;
                        else exact = op == '/' ? a.value / b.value : a.value % b.value;
                }
                if (!defined) {
                    c.run = c.cost = kError;
                    c.message = "division by zero";
                } else if (!fits(exact)) {
                    c.run = c.cost = kError;
                    c.message = "overflow";
                } else {
                    c.run = c.cost = op == '%' && b.value == -1 ? kOkOrError : kOk;
                }
                c.cost_too = false;  // the same evaluation as run's; cost runs on the parameters below
                cases.push_back(c);
                // The same as a parameter, also used as a loop bound, on fewer edges (time under the sanitizers).
                if (!kFewEdges.count(a.text) || !kFewEdges.count(b.text)) continue;
                Case p = c;
                p.cost_too = true;
                p.name = "param n = " + expr;
                p.text = program(p.name, "for i in 0..min(n, 2) {\n    LOAD x[i], R1\n}");
                cases.push_back(p);
            }
    // Products that overflow only at the end of a chain.
    cases.push_back(make("2^62 as a product of 62 twos", program("let v = " + repeat("2*", 62) + "1"), kOk, kOk));
    cases.push_back(make("2^63 as a product of 63 twos", program("let v = " + repeat("2*", 63) + "1"), kError, kError, "overflow"));
    cases.push_back(make("-2^63 as a product", program("let v = -" + repeat("2*", 62) + "2"), kOkOrError, kOkOrError));
    cases.push_back(make("3n with n = 2^62 (an expectation)", program("param n = 4611686018427387904\nexpect reads = 3n"), kError,
                     kAny, "overflow"));
    check_cases("arithmetic", cases);
}

TEST_CASE("extreme integers: cdiv min and max of int64 edges", "[extreme]") {
    std::vector<Case> cases;
    for (const auto& a : kEdges)
        for (const auto& b : kEdges) {
            for (const char* f : {"min", "max"})
                cases.push_back(make(std::string("let v = ") + f + "(" + a.text + ", " + b.text + ")",
                                 program(std::string("let v = ") + f + "(" + a.text + ", " + b.text + ")"), kOk, kOk));
            Case c = make(std::string("let v = cdiv(") + a.text + ", " + b.text + ")", "");
            c.text = program(c.name);
            if (b.value == 0) {
                c.run = c.cost = kError;
                c.message = "division by zero";
            } else if (b.value > 0) {
                c.run = c.cost = kOk;  // ⌈a/b⌉ always fits for b > 0
            } else {
                c.run = c.cost = kOkOrError;  // a negative divisor: the language may refuse it
            }
            cases.push_back(c);
        }
    check_cases("cdiv-min-max", cases);
}

TEST_CASE("extreme integers: array extents whose product overflows", "[extreme]") {
    std::vector<Case> cases;
    // Too large for any use (past 2^44 elements, or past 2^63): an error for run and cost alike.
    for (const char* dims : {"[1099511627777][16777216]", "[4294967296][4294967296]", "[3037000500][3037000500]",
                             "[9223372036854775807]", "[2147483648][2147483648]", "[65536][65536][65536]",
                             "[65536][65536][65536][65536]", "[2097152][2097152][2097152][2097152]",
                             "[9223372036854775807][2]", "[2][9223372036854775807]", "[4611686018427387904][4]",
                             "[-1]", "[0]", "[(-9223372036854775807 - 1)]", "[-4294967296][-4294967296]"})
        cases.push_back(make(std::string("input z") + dims, program(std::string("input  z") + dims), kError, kError));
    // Through parameters.
    cases.push_back(make("input z[n][m], n = 2^40 + 1, m = 2^24",
                     program("param n = 1099511627777\nparam m = 16777216\ninput  z[n][m]"), kError, kError, "too large"));
    cases.push_back(make("input z[n][n] with --set n=4294967296", program("param n = 4\ninput  z[n][n]"), kError, kError, "too large",
                     {"--set", "n=4294967296"}));
    cases.push_back(make("input z[n] with --set n=-9223372036854775808", program("param n = 4\ninput  z[n]"), kError, kError, "",
                     {"--set", "n=-9223372036854775808"}));
    // Too large to run, but `cost` counts it.
    cases.push_back(make("input z[4294967296] (run: too large to run)", program("input  z[4294967296]"), kError, kOk, "too large"));
    // Tiles and registers.
    for (const char* decl : {"registers 9223372036854775807", "registers 4294967299", "registers -1", "registers 0",
                             "registers 2147483648"})
        cases.push_back(make(decl, std::string(decl) + "\ninput  x[4]\noutput y[4]\nLOAD x[0], R0\nSTORE R0, y[0]\n", kError, kError));
    for (const char* dims : {"[4294967297][1]", "[9223372036854775807][9223372036854775807]", "[65536][65536]", "[-1][4]"})
        cases.push_back(make(std::string("tile t") + dims, program(std::string("tile t") + dims), kError, kError));
    check_cases("extents", cases);
}

TEST_CASE("extreme integers: subscripts loop bounds and register indices at the edges", "[extreme]") {
    std::vector<Case> cases;
    auto add = [&](const std::string& name, const std::string& text, Codes run, Codes cost, std::string message = "") {
        cases.push_back(make(name, text, std::move(run), std::move(cost), std::move(message)));
    };
    const std::string x2 = "registers 4\ninput  x[4][4]\noutput y[4]\n";
    // Subscripts out of range: the run stops with an error; cost does not check bounds.
    for (const char* s : {"9223372036854775807", "(-9223372036854775807 - 1)", "4294967296", "-1", "18446744073709551616"})
        add(std::string("LOAD x[") + s + "]", program("", std::string("LOAD x[") + s + "], R1"), kError, kAny);
    add("2-D subscript whose flat address wraps to 0", x2 + "LOAD x[4611686018427387904][0], R0\nSTORE R0, y[0]\n", kError, kAny);
    add("2-D subscript whose flat address wraps to 0 (with a loop)",
        x2 + "for i in 0..2 {\n    LOAD x[i * 4611686018427387904][0], R0\n}\nSTORE R0, y[0]\n", kError, kAny);
    add("x[i * 2^62]", program("", "for i in 0..4 {\n    LOAD x[i * 4611686018427387904], R1\n}"), kError, kAny);
    add("x[i * 3037000500 * 3037000500]", program("", "for i in 0..4 {\n    LOAD x[i * 3037000500 * 3037000500], R1\n}"), kError, kAny);
    add("x[i + 2^63 - 1]", program("", "for i in 0..4 {\n    LOAD x[i + 9223372036854775807], R1\n}"), kError, kAny);
    add("x[i - 2^63]", program("", "for i in 0..4 {\n    LOAD x[i - 9223372036854775807 - 1], R1\n}"), kError, kAny);
    add("x[-i] with i near 2^63",
        program("", "for i in 9223372036854775806..9223372036854775807 {\n    LOAD x[-i], R1\n}"), kError, kAny);
    add("a loop at the top of int64 (one trip, in range)",
        program("", "for i in 9223372036854775806..9223372036854775807 {\n    LOAD x[i - 9223372036854775806], R1\n}"), kOk, kOk);
    add("a loop at the bottom of int64 (one trip, in range)",
        program("", "for i in (-9223372036854775807 - 1)..-9223372036854775807 {\n    LOAD x[i + 9223372036854775807 + 1], R1\n}"),
        kOkOrError, kOkOrError);  // the constant 2^63 − 1 + 1 may be refused as an overflow
    // Loop bounds: trip counts of 2^63 and 2^64 − 1 stop at the step limit; cost counts them
    // (or says the count is past 64 bits).
    add("for i in 0..2^63 - 1", program("", "for i in 0..9223372036854775807 {\n    LOAD x[0], R1\n}"), kError, kOkOrError);
    add("for i in -2^63..2^63 - 1",
        program("", "for i in (-9223372036854775807 - 1)..9223372036854775807 {\n    LOAD x[0], R1\n    LOAD x[1], R2\n}"), kError,
        kOkOrError);
    add("for i in 2^63 - 1..-2^63 (reversed)",
        program("", "for i in 9223372036854775807..(-9223372036854775807 - 1) {\n    LOAD x[0], R1\n}"), kOk, kOkOrError);
    add("two loops of 2^32: 2^64 loads",
        program("", "for i in 0..4294967296 {\n    for j in 0..4294967296 {\n        LOAD x[0], R1\n    }\n}"), kError,
        kError);
    add("eight nested loops of 2^8 with an affine subscript",
        program("", repeat("for a in 0..256 {\n", 1) + "for b in 0..256 {\nfor c in 0..256 {\nfor d in 0..256 {\n"
                        "for e in 0..256 {\nfor f in 0..256 {\nfor g in 0..256 {\nfor h in 0..256 {\n"
                        "LOAD x[a*72057594037927936 + b*281474976710656 + c*1099511627776 + d*4294967296 + e*16777216 + "
                        "f*65536 + g*256 + h], R1\n}\n}\n}\n}\n}\n}\n}\n}"),
        kError, kAny);
    add("a loop bound 2^63 - 1 from a parameter",
        program("param n = 9223372036854775807", "for i in n - 1..n {\n    LOAD x[i - n + 1], R1\n}"), kOk, kOk);
    add("--set n=9223372036854775807 as a loop bound", program("param n = 4", "for i in 0..n {\n    LOAD x[0], R1\n}"), kError,
        kOkOrError);
    cases.back().extra = {"--set", "n=9223372036854775807"};
    // Register indices.
    for (const char* r : {"i + 9223372036854775807", "i * 4294967296", "i - 9223372036854775807 - 1", "i * 4611686018427387904"})
        add(std::string("R[") + r + "]", program("", std::string("for i in 1..3 {\n    LOAD x[0], R[") + r + "]\n}"), kError,
            kAny);
    add("R4294967296", program("", "LOAD x[0], R4294967296"), kError, kError);
    add("R9223372036854775808", program("", "LOAD x[0], R9223372036854775808"), kError, kError);
    // Tile slices.
    const std::string t = "registers 8\ntile t[2]\ninput  x[4]\noutput y[4]\n";
    add("slice ending past 2^63", t + "LOAD x[9223372036854775806..9223372036854775807 + 1], t\n", kError, kAny);
    add("slice at 2^63 - 2", t + "LOAD x[9223372036854775806..9223372036854775807], t\n", kError, kAny);
    add("slice with a wrapped width", t + "LOAD x[(-9223372036854775807 - 1)..9223372036854775807], t\n", kError, kError);
    add("slice i*2^62", t + "for i in 0..3 {\n    LOAD x[i*4611686018427387904..i*4611686018427387904 + 2], t\n}\n", kError, kAny);
    check_cases("subscripts", cases);
}

TEST_CASE("extreme integers: costs expectations tests and seeds at the edges", "[extreme]") {
    std::vector<Case> cases;
    for (const char* v : {"9223372036854775807", "-1", "4294967296", "(-9223372036854775807 - 1)"}) {
        cases.push_back(make(std::string("cost LOAD = ") + v, program(std::string("cost LOAD = ") + v), kError, kError));
        cases.push_back(make(std::string("expect cycles = ") + v, program(std::string("expect cycles = ") + v), {1, 2}, kAny));
        cases.push_back(make(std::string("test n = ") + v, program(std::string("param n = 1\ntest n = ") + v), kOk, kOk));
    }
    cases.push_back(make("cost LOAD = 1000000 over 2^40 loads",
                     program("cost LOAD = 1000000", "for i in 0..1099511627776 {\n    LOAD x[0], R1\n}"), kError, kOkOrError));
    cases.push_back(make("random(2^64 - 1)", "registers 3\ninput  x[4] = random(18446744073709551615)\noutput y[4]\nLOAD x[0], R0\nSTORE R0, y[0]\n",
                     kOk, kOk));
    cases.push_back(make("random(2^64)", "registers 3\ninput  x[4] = random(18446744073709551616)\noutput y[4]\nLOAD x[0], R0\nSTORE R0, y[0]\n",
                     kError, kError));
    cases.push_back(make("random(1, -1e308, 1e308)",
                     "registers 3\ninput  x[4] = random(1, -1e308, 1e308)\noutput y[4]\nLOAD x[0], R0\nSTORE R0, y[0]\n", kAny, kAny));
    check_cases("statements", cases);
}

TEST_CASE("extreme integers: nesting 30000 deep", "[extreme]") {
    const int n = 30000;
    std::vector<Case> cases = {
        make("30000 nested parentheses", program("let v = " + repeat("(", n) + "1" + repeat(")", n)), kOkOrError, kOkOrError),
        make("30000 unary minus signs", program("let v = " + repeat("-", n) + "1"), kOkOrError, kOkOrError),
        make("30000 unary minus signs with spaces", program("let v = " + repeat("- ", n) + "1"), kOkOrError, kOkOrError),
        make("a sum of 30000 1+ terms", program("let v = " + repeat("1+", n) + "1"), kOkOrError, kOkOrError),
        make("a product of 30000 1* factors", program("let v = " + repeat("1*", n) + "1"), kOkOrError, kOkOrError),
        make("30000 nested max calls", program("let v = " + repeat("max(", n) + "1" + repeat(", 1)", n)), kOkOrError, kOkOrError),
        make("30000 nested cdiv calls", program("let v = " + repeat("cdiv(", n) + "1" + repeat(", 1)", n)), kOkOrError, kOkOrError),
        make("30000 nested parentheses in a subscript", program("", "LOAD x[" + repeat("(", n) + "0" + repeat(")", n) + "], R1"),
         kOkOrError, kOkOrError),
        make("a subscript of 30000 0+ terms", program("", "LOAD x[" + repeat("0+", n) + "0], R1"), kOkOrError, kOkOrError),
        make("30000 nested for loops",
         program("", repeat("for i in 0..1 {\n", n) + "LOAD x[0], R1\n" + repeat("}\n", n)), kError, kError),
        make("30000 nested brackets in a literal fill",
         "registers 3\ninput  z[1] = " + repeat("[", n) + "1" + repeat("]", n) + "\noutput y[4]\nLOAD z[0], R0\nSTORE R0, y[0]\n",
         kOkOrError, kOkOrError),
        make("30000 lets, each twice the one before",
         [&] {
             std::string lets = "let v0 = 1\n";
             for (int i = 1; i < n; ++i) lets += "let v" + std::to_string(i) + " = v" + std::to_string(i - 1) + " * 2\n";
             return program(lets);
         }(),
         kError, kError, "overflow"),
    };
    check_cases("nesting", cases);
}
