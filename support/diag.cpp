#include "support/diag.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <istream>

#include "support/text.h"

namespace toysim {

SourceFile::SourceFile(std::string path_, std::string text_) : path(std::move(path_)), text(std::move(text_)) {
    // A byte-order mark is how some editors start a UTF-8 file; it is not part of the program.
    if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
    std::string_view all = text;
    size_t start = 0;
    while (start <= all.size()) {
        size_t end = all.find('\n', start);
        if (end == std::string_view::npos) {
            if (start < all.size()) lines.push_back(all.substr(start));
            break;
        }
        std::string_view line = all.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        start = end + 1;
    }
}

namespace {

// At most kMaxSourceBytes, read a block at a time: /dev/zero or a stray multi-gigabyte file is
// refused after 16 MiB, not read until memory runs out.
std::string read_bounded(std::istream& in, const std::string& name) {
    std::string text;
    std::vector<char> block(std::size_t{1} << 16);
    while (in) {
        in.read(block.data(), static_cast<std::streamsize>(block.size()));
        text.append(block.data(), static_cast<std::size_t>(in.gcount()));
        if (text.size() > SourceFile::kMaxSourceBytes)
            throw ToyError(fmt::format("'{}' is too large for a program: toysim reads at most {} MiB of source",
                                       name, SourceFile::kMaxSourceBytes >> 20));
    }
    if (in.bad()) {
        int code = errno;
        throw ToyError(fmt::format("cannot read '{}': {}", name, code ? std::strerror(code) : "read error"));
    }
    return text;
}

}  // namespace

std::shared_ptr<const SourceFile> SourceFile::read(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw ToyError(fmt::format("'{}' is a directory, not a .toy program", path));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ToyError(fmt::format("cannot open '{}': no such file or not readable", path));
    errno = 0;
    return std::make_shared<SourceFile>(path, read_bounded(in, path));
}

std::shared_ptr<const SourceFile> SourceFile::read_stream(std::istream& in, std::string name) {
    errno = 0;
    std::string text = read_bounded(in, name);
    return std::make_shared<SourceFile>(std::move(name), std::move(text));
}

std::string_view SourceFile::line(int n) const {
    if (n < 1 || n > static_cast<int>(lines.size())) return {};
    return lines[static_cast<size_t>(n - 1)];
}

std::string format_error(const ToyError& error, const SourceFile* source, std::string_view where) {
    // Messages quote the user's text; a control character, byte-order mark or stray byte in it
    // is spelt out (\x01, U+FEFF) rather than sent raw to the terminal.
    const Loc& loc = error.loc();
    const std::string message = escape_invisible(error.what());
    if (!source || loc.line == 0) {
        std::string_view name = source ? std::string_view(source->path) : where;
        return fmt::format("{}: error: {}\n", escape_invisible(name), message);
    }
    std::string out = fmt::format("{}:{}:{}: error: {}\n", escape_invisible(source->path), loc.line, loc.col, message);
    std::string_view text = source->line(loc.line);
    // Tabs are shown as single spaces so the caret lines up with the column count; other
    // invisible characters are spelt out, and the caret moves past their spelling.
    std::string shown(text);
    for (char& ch : shown)
        if (ch == '\t') ch = ' ';
    size_t caret_col = static_cast<size_t>(std::max(1, loc.col));
    std::string before = escape_invisible(std::string_view(shown).substr(0, std::min(shown.size(), caret_col - 1)));
    std::string after = caret_col - 1 < shown.size() ? escape_invisible(std::string_view(shown).substr(caret_col - 1)) : "";
    int prefix_width = display_width(before);
    out += fmt::format("{:5} | {}{}\n", loc.line, before, after);
    out += fmt::format("      | {}{}\n", std::string(static_cast<size_t>(prefix_width), ' '),
                       std::string(static_cast<size_t>(std::max(1, loc.len)), '^'));
    return out;
}

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

ToyError with_cli_hint(const ToyError& error) {
    std::string message = error.what();
    // Idempotent: an error that already carries a hint (one hinted twice on its way out) gets it once.
    auto add = [&](std::string_view hint) {
        if (!ends_with(message, hint)) message += hint;
    };
    switch (error.kind()) {
        case ErrorKind::StepLimit: add("; raise it with --max-steps"); break;
        case ErrorKind::TooLargeToRun: add("; `toysim cost` counts it without running"); break;
        case ErrorKind::TooLongToRun: add("; run it anyway with --force, or see `toysim cost`"); break;
        case ErrorKind::Setting:
            if (message.rfind("--set ", 0) != 0) message = fmt::format("--set {}: {}", flag_subject(error.subject()), message);
            break;
        case ErrorKind::Input:
        case ErrorKind::Race: break;
    }
    return ToyError(error.kind(), error.loc(), std::move(message), error.subject());
}

}  // namespace toysim
