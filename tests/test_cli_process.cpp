// The toysim binary as a process, for what only a process has: a full disk, a closed stdout, a
// reader that went away, a memory limit, standard input, and its peak memory. The binary is
// found beside the test binary: build*/tests/toysim_tests runs build*/toysim.
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "support.h"

namespace {

namespace fs = std::filesystem;

fs::path tool_path() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    return self.parent_path().parent_path() / "toysim";
}

enum class Stdout { DevNull, DevFull, Closed, BrokenPipe };

struct Proc {
    int code = -1;    // exit status, or -1 if a signal ended it
    int signal = 0;
    std::string err;
    long max_rss_kb = 0;
};

// Runs toysim ARGS from the repository root with stdout as `mode`, stdin from `stdin_path`
// (or /dev/null) and, if `address_space` is not 0, that limit on its memory.
Proc run_tool(const std::vector<std::string>& args, Stdout mode, const std::string& stdin_path = "/dev/null",
              rlim_t address_space = 0) {
    Proc r;
    const std::string tool = tool_path().string();
    std::vector<std::string> words{tool};
    words.insert(words.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    fs::current_path(TOYSIM_SOURCE_DIR);

    int err_pipe[2], out_pipe[2] = {-1, -1};
    REQUIRE(pipe(err_pipe) == 0);
    if (mode == Stdout::BrokenPipe) {
        REQUIRE(pipe(out_pipe) == 0);
        close(out_pipe[0]);  // no reader, ever
    }
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int in = open(stdin_path.c_str(), O_RDONLY);
        dup2(in, 0);
        dup2(err_pipe[1], 2);
        close(err_pipe[0]);
        close(err_pipe[1]);
        if (mode == Stdout::Closed) {
            close(1);
        } else if (mode == Stdout::BrokenPipe) {
            signal(SIGPIPE, SIG_IGN);  // stays ignored across exec
            dup2(out_pipe[1], 1);
            close(out_pipe[1]);
        } else {
            int out = open(mode == Stdout::DevFull ? "/dev/full" : "/dev/null", O_WRONLY);
            dup2(out, 1);
        }
        if (address_space) {
            struct rlimit limit{address_space, address_space};
            setrlimit(RLIMIT_AS, &limit);
        }
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(err_pipe[1]);
    if (out_pipe[1] >= 0) close(out_pipe[1]);
    char buffer[4096];
    for (ssize_t n; (n = read(err_pipe[0], buffer, sizeof buffer)) > 0;) r.err.append(buffer, static_cast<size_t>(n));
    close(err_pipe[0]);
    int status = 0;
    struct rusage usage{};
    wait4(pid, &status, 0, &usage);
    if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.max_rss_kb = usage.ru_maxrss;
    return r;
}

bool have_tool() {
    if (fs::exists(tool_path())) return true;
    WARN("toysim binary not found beside the tests at " << tool_path());
    return false;
}

}  // namespace

TEST_CASE("cli process: output that cannot be written exits 2 with one line", "[cli]") {
    if (!have_tool()) return;
    SECTION("a full disk") {
        if (!fs::exists("/dev/full")) return;
        Proc p = run_tool({"run", "programs/p1_c00.toy"}, Stdout::DevFull);
        CHECK(p.code == 2);
        CHECK(p.err == "toysim: error: cannot write the output: No space left on device\n");
    }
    SECTION("a closed stdout") {
        Proc p = run_tool({"run", "programs/p1_c00.toy"}, Stdout::Closed);
        CHECK(p.code == 2);
        CHECK(p.err == "toysim: error: cannot write the output: Bad file descriptor\n");
    }
    SECTION("a reader that went away, SIGPIPE ignored") {
        Proc p = run_tool({"trace", "programs/p1_c00.toy"}, Stdout::BrokenPipe);
        CHECK(p.code == 2);
        CHECK(p.err == "toysim: error: cannot write the output: Broken pipe\n");
    }
    SECTION("errors still reach stderr and keep their code") {
        Proc p = run_tool({"run", "nope.toy"}, Stdout::DevFull);
        CHECK(p.code == 2);
        CHECK(p.err == "toysim: error: cannot open 'nope.toy': no such file or not readable\n");
    }
    SECTION("a good run is still 0") {
        Proc p = run_tool({"run", "programs/p1_c00.toy"}, Stdout::DevNull);
        CHECK(p.code == 0);
        CHECK(p.err.empty());
    }
}

TEST_CASE("cli process: the program from standard input, /dev/zero and a directory", "[cli]") {
    if (!have_tool()) return;
    Proc in = run_tool({"run", "-"}, Stdout::DevNull, std::string(TOYSIM_SOURCE_DIR) + "/programs/p1_c00.toy");
    CHECK(in.code == 0);
    CHECK(in.err.empty());
    Proc zero = run_tool({"run", "/dev/zero"}, Stdout::DevNull);
    CHECK(zero.code == 2);
    CHECK(zero.err == "toysim: error: '/dev/zero' is too large for a program: toysim reads at most 16 MiB of source\n");
    Proc stdin_zero = run_tool({"run", "-"}, Stdout::DevNull, "/dev/zero");
    CHECK(stdin_zero.code == 2);
    CHECK(stdin_zero.err == "toysim: error: '<stdin>' is too large for a program: toysim reads at most 16 MiB of source\n");
    Proc dir = run_tool({"run", "programs"}, Stdout::DevNull);
    CHECK(dir.code == 2);
    CHECK(dir.err == "toysim: error: 'programs' is a directory, not a .toy program\n");
}

// AddressSanitizer reserves terabytes of address space, so a limit on it cannot be tested there.
TEST_CASE("cli process: running out of memory is an error, not an abort", "[cli]") {
#ifdef TOYSIM_TEST_ASAN
    WARN("skipped under AddressSanitizer");
#else
    if (!have_tool()) return;
    // 66 million elements of DRAM (530 MB of doubles; within what a run may declare) under a
    // 256 MiB limit. (welford_variance has no parallel loop: the race check's own limit, which
    // refuses such a run up front, does not come first; --force: past the time estimate.)
    Proc p = run_tool({"run", "programs/attention/welford_variance.toy", "--set", "n=66000000", "--force"}, Stdout::DevNull, "/dev/null",
                      rlim_t{256} << 20);
    INFO(p.err);
    CHECK(p.signal == 0);
    CHECK(p.code == 2);
    CHECK(p.err.rfind("toysim: error: out of memory: ", 0) == 0);
    CHECK(std::count(p.err.begin(), p.err.end(), '\n') == 1);
#endif
}

// A sweep keeps each run's counters, not its DRAM: eight runs of 36 MB each (two arrays of
// 2,000,000 doubles, and a byte per element) peak near one run's memory (measured: one run
// 103 MB, the sweep 150 MB, where keeping every run's DRAM took 356 MB).
TEST_CASE("cli process: a sweep's memory follows one run at a time", "[cli]") {
#ifdef TOYSIM_TEST_ASAN
    WARN("skipped under AddressSanitizer (its quarantine keeps freed memory)");
#else
    if (!have_tool()) return;
    Proc one = run_tool({"run", "programs/p4_softmax_3pass.toy", "--set", "n=2000000"}, Stdout::DevNull);
    REQUIRE(one.code == 0);
    Proc sweep = run_tool({"sweep", "programs/p4_softmax_3pass.toy", "--set",
                           "n=2000000,2000001,2000002,2000003,2000004,2000005,2000006,2000007"},
                          Stdout::DevNull);
    REQUIRE(sweep.code == 0);
    INFO("one run: " << one.max_rss_kb << " KB, a sweep of eight: " << sweep.max_rss_kb << " KB");
    CHECK(sweep.max_rss_kb < one.max_rss_kb + 100'000);
#endif
}
