#include "sim/support/diag.h"

#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "sim/support/text.h"

namespace toysim {

SourceFile::SourceFile(std::string path_, std::string text_) : path(std::move(path_)), text(std::move(text_)) {
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

std::shared_ptr<const SourceFile> SourceFile::read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ToyError(fmt::format("cannot open '{}': no such file or not readable", path));
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return std::make_shared<SourceFile>(path, buffer.str());
}

std::string_view SourceFile::line(int n) const {
    if (n < 1 || n > static_cast<int>(lines.size())) return {};
    return lines[static_cast<size_t>(n - 1)];
}

std::string format_error(const ToyError& error, const SourceFile* source, std::string_view where) {
    const Loc& loc = error.loc();
    if (!source || loc.line == 0) {
        std::string_view name = source ? std::string_view(source->path) : where;
        return fmt::format("{}: error: {}\n", name, error.what());
    }
    std::string out = fmt::format("{}:{}:{}: error: {}\n", source->path, loc.line, loc.col, error.what());
    std::string_view text = source->line(loc.line);
    // Tabs are shown as single spaces so the caret lines up with the column count.
    std::string shown(text);
    for (char& ch : shown)
        if (ch == '\t') ch = ' ';
    int caret_col = std::max(1, loc.col);
    int prefix_width = display_width(std::string_view(shown).substr(0, std::min<size_t>(shown.size(), static_cast<size_t>(caret_col - 1))));
    out += fmt::format("{:5} | {}\n", loc.line, shown);
    out += fmt::format("      | {}{}\n", std::string(static_cast<size_t>(prefix_width), ' '),
                       std::string(static_cast<size_t>(std::max(1, loc.len)), '^'));
    return out;
}

}  // namespace toysim
