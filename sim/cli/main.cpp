#include <cerrno>
#include <fcntl.h>
#include <iostream>
#include <unistd.h>

#include "sim/cli/app.h"
#include "sim/cli/output.h"

namespace {

// A standard descriptor the shell closed (`>&-`) is filled with /dev/null, so the first file
// toysim opens does not become its "stdout". Standard output is opened read-only there: every
// write fails (EBADF) and is reported, as writing to a closed stdout should be.
void fill_closed_descriptors() {
    for (int fd = 0; fd <= 2; ++fd) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        int opened = open("/dev/null", fd == 2 ? O_WRONLY : O_RDONLY);
        if (opened >= 0 && opened != fd) {
            dup2(opened, fd);
            close(opened);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    fill_closed_descriptors();
    std::ios::sync_with_stdio(false);
    toysim::cli::FdWriter stdout_writer(STDOUT_FILENO);
    std::ostream out(&stdout_writer);
    return toysim::cli::guard_internal_errors(
        [&] {
            std::vector<std::string> args(argv + 1, argv + argc);
            toysim::cli::Io io;
            io.in = &std::cin;
            io.err_is_terminal = isatty(STDERR_FILENO) == 1;
            io.in_is_terminal = isatty(STDIN_FILENO) == 1;
            io.out_is_terminal = isatty(STDOUT_FILENO) == 1;
            return toysim::cli::main(args, out, std::cerr, io);
        },
        std::cerr);
}
