#include "sim/cli/output.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <unistd.h>

#include "sim/print/sweep_plot.h"
#include "support/diag.h"
#include "support/text.h"

namespace toysim::cli {

FdWriter::FdWriter(int fd, std::size_t buffer_size) : fd_(fd), buffer_(buffer_size) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
}

FdWriter::~FdWriter() { drain(); }

bool FdWriter::drain() {
    const char* from = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    if (error_) return false;  // nothing more reaches a descriptor that failed once
    while (left > 0) {
        ssize_t wrote = ::write(fd_, from, left);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) {
            error_ = wrote < 0 ? errno : EIO;
            return false;
        }
        from += wrote;
        left -= static_cast<std::size_t>(wrote);
    }
    return true;
}

FdWriter::int_type FdWriter::overflow(int_type ch) {
    if (!drain()) return traits_type::eof();
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
    return ch;
}

int FdWriter::sync() { return drain() ? 0 : -1; }

std::streamsize FdWriter::xsputn(const char* s, std::streamsize n) {
    std::streamsize done = 0;
    while (done < n) {
        if (pptr() == epptr() && !drain()) return done;
        std::streamsize room = epptr() - pptr();
        std::streamsize take = std::min(room, n - done);
        std::memcpy(pptr(), s + done, static_cast<std::size_t>(take));
        pbump(static_cast<int>(take));
        done += take;
    }
    return done;
}

int write_error(std::streambuf* buffer) {
    auto* writer = dynamic_cast<FdWriter*>(buffer);
    return writer ? writer->error() : 0;
}

void write_file(const std::string& path, std::string_view text, std::string_view option) {
    errno = 0;
    std::ofstream out(path, std::ios::binary);
    if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (out) out.close();
    if (!out) {
        int reason = errno;
        throw ToyError(fmt::format("{} {}: cannot write the file{}", option, quoted_name(path), reason ? std::string(": ") + std::strerror(reason) : ""));
    }
}

// --plot's format, and that its file can be written, checked before any run starts.
std::optional<PlotFormat> plot_target(const std::string& path) {
    if (path.empty()) return std::nullopt;
    PlotFormat format = plot_format(path);
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path p(path);
    const std::string dir = p.parent_path().empty() ? std::string(".") : p.parent_path().string();
    int reason = 0;
    if (fs::is_directory(p, ec)) reason = EISDIR;
    else if (access(fs::exists(p, ec) ? path.c_str() : dir.c_str(), W_OK) != 0) reason = errno;
    if (reason) throw ToyError(fmt::format("--plot {}: cannot write the file: {}", quoted_name(path), std::strerror(reason)));
    return format;
}

}  // namespace toysim::cli
