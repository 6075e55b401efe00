// Parsing CLI11's help layout (see help_model.h): what the man pages and the completion are made of.
#include "packaging/help_model.h"

#include <cctype>
#include <map>
#include <sstream>

namespace toysim::help {

namespace {

// CLI11's default column width: an item's text starts here, or on the next line, this far in,
// when its names are this wide or wider.
constexpr size_t kColumn = 30;

std::vector<std::string> words(std::string_view text) {
    std::vector<std::string> out;
    std::istringstream in{std::string(text)};
    for (std::string word; in >> word;) out.push_back(word);
    return out;
}

std::string rtrim(std::string_view text) {
    size_t end = text.find_last_not_of(" \t\r");
    return end == std::string_view::npos ? std::string() : std::string(text.substr(0, end + 1));
}

// "  --format TEXT:{table,json}   table or json": names, type and text.
Item parse_item(const std::string& line) {
    std::string head = line, text;
    if (line.size() > kColumn && line[kColumn - 1] == ' ') {
        head = line.substr(0, kColumn);
        text = trim(std::string_view(line).substr(kColumn));
    }
    Item item;
    auto head_words = words(head);
    std::string names = head_words.at(0);
    for (size_t start = 0; start <= names.size();) {
        size_t comma = names.find(',', start);
        if (comma == std::string::npos) comma = names.size();
        if (comma > start) item.names.push_back(names.substr(start, comma - start));
        start = comma + 1;
    }
    head = trim(head);
    item.type = head.size() > names.size() ? trim(std::string_view(head).substr(names.size())) : "";
    for (const auto& word : words(item.type)) {
        item.required = item.required || word == "REQUIRED";
        item.repeated = item.repeated || word == "...";
    }
    if (size_t open = item.type.find('{'), close = item.type.find('}'); open != std::string::npos && close > open) {
        std::string list = item.type.substr(open + 1, close - open - 1);
        std::istringstream in(list);
        for (std::string choice; std::getline(in, choice, ',');) item.choices.push_back(choice);
    }
    item.text = text;
    return item;
}

}  // namespace

std::string Item::value() const {
    std::string out;
    for (const auto& word : words(type))
        if (word != "REQUIRED") out += (out.empty() ? "" : " ") + word;
    return out;
}

std::string trim(std::string_view text) {
    size_t begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string_view::npos) return "";
    size_t end = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(begin, end - begin + 1));
}

std::string command_words(const std::vector<std::string>& path) {
    std::string out = "toysim";
    for (const auto& word : path) out += " " + word;
    return out;
}

Help parse_help(const std::string& text, const std::vector<std::string>& path) {
    Help help;
    help.path = path;
    std::vector<Item>* section = nullptr;
    bool in_footer = false;
    Paragraph paragraph;
    std::istringstream lines(text);
    for (std::string raw; std::getline(lines, raw);) {
        std::string line = rtrim(raw);
        if (help.usage.empty()) {
            if (line.starts_with("Usage: ")) help.usage = trim(std::string_view(line).substr(7));
            else if (!line.empty()) help.description.push_back(line);
            continue;
        }
        if (in_footer) {
            if (line.empty()) {
                if (!paragraph.empty()) help.footer.push_back(paragraph);
                paragraph.clear();
            } else {
                paragraph.push_back(line);
            }
            continue;
        }
        if (line == "Positionals:") section = &help.positionals;
        else if (line == "Options:") section = &help.options;
        else if (line == "Subcommands:") section = &help.subcommands;
        else if (line.empty()) section = nullptr;
        else if (section && line.size() > 2 && line.starts_with("  ") && line[2] != ' ') section->push_back(parse_item(line));
        else if (section && line.starts_with("   ") && !section->empty()) {
            std::string& item_text = section->back().text;
            item_text.append(item_text.empty() ? "" : "\n").append(trim(line));
        } else {
            in_footer = true;  // the footer's first line: everything from here on is the footer
            paragraph.push_back(line);
        }
    }
    if (!paragraph.empty()) help.footer.push_back(paragraph);
    return help;
}

std::vector<std::string> table_fields(std::string_view row) {
    std::vector<std::string> fields;
    std::string text = trim(row);
    for (size_t start = 0; start < text.size();) {
        size_t gap = text.find("  ", start);
        if (gap == std::string::npos) gap = text.size();
        fields.push_back(text.substr(start, gap - start));
        start = text.find_first_not_of(' ', gap);
        if (start == std::string::npos) break;
    }
    return fields;
}

std::pair<std::string, std::string> table_row(const std::string& row, const std::vector<std::string>& rows) {
    std::map<size_t, int> starts;  // where the second column starts in each row that shows it
    for (const auto& other : rows) {
        size_t indent = other.find_first_not_of(' ');
        size_t gap = other.find("  ", indent);
        if (indent == std::string::npos || gap == std::string::npos) continue;
        if (size_t next = other.find_first_not_of(' ', gap); next != std::string::npos) ++starts[next];
    }
    size_t column = 0;
    int most = 0;
    for (const auto& [start, count] : starts)
        if (count > most) column = start, most = count;
    size_t indent = row.find_first_not_of(' ');
    size_t cut = column > indent + 1 && column < row.size() && row[column - 1] == ' ' ? column : row.find(' ', indent);
    if (cut == std::string::npos) return {trim(row), ""};
    std::string text;
    for (const auto& field : table_fields(std::string_view(row).substr(cut))) text += (text.empty() ? "" : "  ") + field;
    return {trim(std::string_view(row).substr(0, cut)), text};
}

Block classify(const Paragraph& paragraph) {
    if (paragraph.empty()) return Block::Prose;
    if (paragraph[0] == "examples:") return Block::Examples;
    if (paragraph[0].starts_with("exit codes:")) return Block::ExitStatus;
    size_t row = 0;
    while (row < paragraph.size() && !paragraph[row].starts_with(" ")) ++row;
    if (row == 0 || row == paragraph.size() || !paragraph[row - 1].ends_with(":")) return Block::Prose;
    // Rows: indented, and most of them two columns or more (one may fill its first column).
    size_t split = 0, rows = paragraph.size() - row;
    for (; row < paragraph.size(); ++row) {
        if (!paragraph[row].starts_with(" ")) return Block::Prose;
        split += table_fields(paragraph[row]).size() >= 2;
    }
    return 2 * split > rows ? Block::Table : Block::Prose;
}

std::string name_description(const Help& help) {
    std::string line = help.description.empty() ? "" : help.description[0];
    const std::string self = command_words(help.path) + ": ";
    if (line.starts_with(self)) line = line.substr(self.size());
    if (line.ends_with(".")) line.pop_back();
    // "Run a program" reads "run a program" after the page's name; "DRAM ..." keeps its capital.
    if (line.size() > 1 && std::isupper(static_cast<unsigned char>(line[0])) && !std::isupper(static_cast<unsigned char>(line[1])))
        line[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(line[0])));
    return line;
}

}  // namespace toysim::help
