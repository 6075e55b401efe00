// Standard output for the binary: a buffered writer on a file descriptor that remembers why a
// write failed (a full disk, a closed descriptor, a reader that went away), so toysim can say
// so and exit 2 instead of 0.
#pragma once

#include <streambuf>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/print/sweep_plot.h"

namespace toysim::cli {

class FdWriter : public std::streambuf {
public:
    explicit FdWriter(int fd, std::size_t buffer_size = std::size_t{1} << 16);
    ~FdWriter() override;
    FdWriter(const FdWriter&) = delete;
    FdWriter& operator=(const FdWriter&) = delete;
    int error() const { return error_; }  // errno of the first failed write; 0 if none

protected:
    int_type overflow(int_type ch) override;
    int sync() override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;

private:
    bool drain();  // writes the buffer out; false once a write has failed
    int fd_;
    int error_ = 0;
    std::vector<char> buffer_;
};

// The errno of a stream's failed write when it writes through an FdWriter, else 0.
int write_error(std::streambuf* buffer);

// Writes `text` to the file `path` (a page, a plot), or throws ToyError naming the option it
// came from ("-o 'x.html': cannot write the file: No such file or directory").
void write_file(const std::string& path, std::string_view text, std::string_view option);

// --plot's format, from the file's extension, and that the file can be written, checked before
// any run starts (ToyError otherwise); nothing for an empty path.
std::optional<PlotFormat> plot_target(const std::string& path);

}  // namespace toysim::cli
