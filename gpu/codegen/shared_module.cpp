#include "gpu/codegen/shared_module.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>

#include "gpu/codegen/codegen.h"

namespace toysim::gpu {

namespace {

// A token of the generated C++ (the generator's own output: no raw strings, no digraphs), as far
// as sharing needs: its text, and for a decimal integer literal its value and suffix.
struct Token {
    std::size_t begin = 0, end = 0;
    bool integer = false;           // a decimal integer literal outside a preprocessor line
    std::uint64_t value = 0;
    std::string suffix;             // "", "u", "ll", ... (lower case)
};

struct Scan {
    std::vector<Token> tokens;
    std::vector<std::pair<std::size_t, std::size_t>> comments;  // [begin, end)
};

bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A pp-number's text as a decimal integer: digits (no leading 0 but "0" itself: octal stays
// text), then an integer suffix. False for floats, hex, and what does not fit 63 bits.
bool decimal_integer(std::string_view text, std::uint64_t& value, std::string& suffix) {
    std::size_t i = 0;
    value = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
        if (value > (static_cast<std::uint64_t>(INT64_MAX) - digit) / 10) return false;
        value = value * 10 + digit;
        ++i;
    }
    if (i == 0 || (text[0] == '0' && i > 1)) return false;
    suffix.clear();
    for (; i < text.size(); ++i) {
        const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
        if (c != 'u' && c != 'l') return false;
        suffix += c;
    }
    static const char* const kSuffixes[] = {"", "u", "l", "ul", "lu", "ll", "ull", "llu"};
    return std::find(std::begin(kSuffixes), std::end(kSuffixes), suffix) != std::end(kSuffixes);
}

Scan scan(const std::string& s) {
    Scan out;
    bool line_start = true, directive = false;
    std::size_t i = 0;
    while (i < s.size()) {
        const char c = s[i];
        if (c == '\n') {
            // A directive continues past a newline escaped by a backslash.
            if (!(directive && i > 0 && s[i - 1] == '\\')) directive = false;
            line_start = true;
            ++i;
            continue;
        }
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
            continue;
        }
        if (c == '/' && i + 1 < s.size() && (s[i + 1] == '/' || s[i + 1] == '*')) {
            const bool line = s[i + 1] == '/';
            std::size_t end = line ? s.find('\n', i) : s.find("*/", i + 2);
            end = end == std::string::npos ? s.size() : (line ? end : end + 2);
            out.comments.emplace_back(i, end);
            i = end;
            continue;
        }
        if (line_start && c == '#') directive = true;
        line_start = false;
        Token t;
        t.begin = i;
        if (c == '"' || c == '\'') {
            ++i;
            while (i < s.size() && s[i] != c) i += s[i] == '\\' ? 2 : 1;
            i = std::min(i + 1, s.size());
        } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
            // A pp-number: digits, letters, '.', and a sign after an exponent's e or p.
            ++i;
            while (i < s.size() && (is_identifier_char(s[i]) || s[i] == '.' ||
                                    ((s[i] == '+' || s[i] == '-') && std::strchr("eEpP", s[i - 1]) != nullptr)))
                ++i;
            t.integer = !directive && decimal_integer(std::string_view(s).substr(t.begin, i - t.begin), t.value, t.suffix);
        } else if (is_identifier_char(c)) {
            while (i < s.size() && is_identifier_char(s[i])) ++i;
        } else {
            ++i;
        }
        t.end = i;
        out.tokens.push_back(std::move(t));
    }
    return out;
}

std::string_view text_of(const std::string& s, const Token& t) { return std::string_view(s).substr(t.begin, t.end - t.begin); }

// What the host relies on being the same in every member beyond the text: the kernels' names and
// launch facts. (Tiles of other shapes change these; sharing is for what changes only numbers.)
bool same_launch_facts(const GeneratedProgram& a, const GeneratedProgram& b) {
    if (a.dtype != b.dtype || a.tensor_cores != b.tensor_cores || a.block_threads != b.block_threads || a.kernels.size() != b.kernels.size()) return false;
    for (std::size_t k = 0; k < a.kernels.size(); ++k) {
        const GeneratedKernel &x = a.kernels[k], &y = b.kernels[k];
        if (x.function != y.function || x.per_thread != y.per_thread || x.lanes != y.lanes || x.threads != y.threads || x.min_blocks != y.min_blocks ||
            x.shared_bytes != y.shared_bytes || x.spill_floats != y.spill_floats || x.tiles_in_registers != y.tiles_in_registers ||
            x.register_floats != y.register_floats || x.tiles_stored != y.tiles_stored || x.tile_stages != y.tile_stages)
            return false;
    }
    return true;
}

bool same_text_up_to_integers(const GeneratedProgram& a, const Scan& sa, const GeneratedProgram& b, const Scan& sb) {
    if (sa.tokens.size() != sb.tokens.size()) return false;
    for (std::size_t i = 0; i < sa.tokens.size(); ++i) {
        const Token &x = sa.tokens[i], &y = sb.tokens[i];
        if (x.integer && y.integer) {
            if (x.suffix != y.suffix) return false;
        } else if (x.integer != y.integer || text_of(a.source, x) != text_of(b.source, y)) {
            return false;
        }
    }
    return true;
}

// The C++ type a literal with `suffix` has, for values that all fit `fits_int` (unsuffixed) or
// unsigned int (u): the cast that keeps the literal's type once it is read from toy_param.
std::string cast_for(const std::string& suffix, std::uint64_t largest) {
    if (suffix.empty()) return largest <= static_cast<std::uint64_t>(INT_MAX) ? "int" : "long";
    if (suffix == "u") return largest <= UINT_MAX ? "unsigned" : "unsigned long";
    if (suffix == "l") return "long";
    if (suffix == "ll") return "long long";
    if (suffix == "ul" || suffix == "lu") return "unsigned long";
    return "unsigned long long";
}

}  // namespace

std::string without_comments(const std::string& source) {
    const Scan s = scan(source);
    std::string out;
    std::size_t at = 0;
    for (const auto& [begin, end] : s.comments) {
        out.append(source, at, begin - at);
        out += ' ';
        at = end;
    }
    out.append(source, at, std::string::npos);
    return out;
}

std::vector<std::optional<ModuleShare>> share_modules(const std::vector<const GeneratedProgram*>& modules) {
    std::vector<std::optional<ModuleShare>> out(modules.size());
    std::vector<Scan> scans(modules.size());
    for (std::size_t m = 0; m < modules.size(); ++m)
        if (modules[m]) scans[m] = scan(modules[m]->source);
    std::vector<bool> grouped(modules.size(), false);
    for (std::size_t first = 0; first < modules.size(); ++first) {
        if (!modules[first] || grouped[first]) continue;
        const GeneratedProgram& lead = *modules[first];
        std::vector<std::size_t> group{first};
        for (std::size_t m = first + 1; m < modules.size(); ++m)
            if (modules[m] && !grouped[m] && same_launch_facts(lead, *modules[m]) &&
                same_text_up_to_integers(lead, scans[first], *modules[m], scans[m]))
                group.push_back(m);
        if (group.size() < 2) continue;
        for (std::size_t m : group) grouped[m] = true;

        // Each literal that differs between members is a run-time value; literals that differ
        // the same way in every member (a head's stride, written once per array) are one value.
        const std::vector<Token>& tokens = scans[first].tokens;
        std::vector<std::vector<std::int64_t>> columns;  // per run-time value, per member
        std::vector<int> value_of(tokens.size(), -1);
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            if (!tokens[i].integer) continue;
            std::vector<std::int64_t> column;
            for (std::size_t m : group) column.push_back(static_cast<std::int64_t>(scans[m].tokens[i].value));
            if (std::all_of(column.begin(), column.end(), [&](std::int64_t v) { return v == column.front(); })) continue;
            auto same = std::find(columns.begin(), columns.end(), column);
            value_of[i] = static_cast<int>(same - columns.begin());
            if (same == columns.end()) columns.push_back(std::move(column));
        }

        auto module = std::make_shared<SharedModule>();
        module->program_path = lead.program_path;
        module->members = static_cast<int>(group.size());
        module->run_time_values = static_cast<int>(columns.size());
        std::string body;
        std::size_t at = 0, comment = 0;
        const std::string& src = lead.source;
        const auto& comments = scans[first].comments;
        auto copy_to = [&](std::size_t end) {  // src[at, end) with its comments dropped
            while (at < end) {
                if (comment < comments.size() && comments[comment].first < end) {
                    body.append(src, at, comments[comment].first - at);
                    body += ' ';
                    at = comments[comment].second;
                    ++comment;
                } else {
                    body.append(src, at, end - at);
                    at = end;
                }
            }
        };
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            if (value_of[i] < 0) continue;
            copy_to(tokens[i].begin);
            const auto& column = columns[static_cast<std::size_t>(value_of[i])];
            const auto largest = static_cast<std::uint64_t>(*std::max_element(column.begin(), column.end()));
            body += fmt::format("(({}){}[{}])", cast_for(tokens[i].suffix, largest), kSharedParameterArray, value_of[i]);
            at = tokens[i].end;
        }
        copy_to(src.size());
        module->kernels = std::move(body);
        module->unit = device_prelude(lead.block_threads / 32) + "\n";
        if (!columns.empty())
            module->unit += fmt::format("// One module for {} parameter sets of {}: the integers that differ between them are read from {}[], set "
                                        "before each one's launches.\n__constant__ long long {}[{}];\n",
                                        group.size(), lead.program_path, kSharedParameterArray, kSharedParameterArray, columns.size());
        module->unit += module->kernels;
        for (std::size_t g = 0; g < group.size(); ++g) {
            ModuleShare share{module, {}};
            for (const auto& column : columns) share.values.push_back(column[g]);
            out[group[g]] = std::move(share);
        }
    }
    return out;
}

std::string instantiate_shared(const SharedModule& module, const std::vector<std::int64_t>& values) {
    // Each "((T)toy_param[k])" of the kernels is a value.
    const std::string& text = module.kernels;
    const std::string marker = fmt::format("){}[", kSharedParameterArray);
    std::string out;
    std::size_t at = 0;
    for (std::size_t hit = text.find(marker); hit != std::string::npos; hit = text.find(marker, at)) {
        const std::size_t open = text.rfind("((", hit);
        const std::size_t index = hit + marker.size();
        const std::size_t close = text.find("])", index);
        out.append(text, at, open - at);
        const std::size_t k = std::stoul(text.substr(index, close - index));
        out += std::to_string(k < values.size() ? values[k] : 0);
        at = close + 2;
    }
    out.append(text, at, std::string::npos);
    return out;
}

std::optional<SharedCompile> compile_shared(const SharedModule& module, int arch, std::string* why) {
    std::lock_guard<std::mutex> lock(module.mutex);
    if (auto it = module.compiled.find(arch); it != module.compiled.end()) return SharedCompile{it->second, true};
    if (auto it = module.refused.find(arch); it != module.refused.end()) {
        if (why) *why = it->second;
        return std::nullopt;
    }
    try {
        NvrtcCompiled compiled = compile_module_unit(module.unit, module.program_path, arch);
        module.compiled.emplace(arch, compiled);
        return SharedCompile{std::move(compiled), false};
    } catch (const NvrtcCompileError& e) {
        // A literal that differs is one the compiler needs as a constant: each member compiles its own.
        std::string first = e.log.substr(0, e.log.find('\n'));
        std::string reason = "NVRTC refused the shared module" + (first.empty() ? std::string() : ": " + first);
        module.refused.emplace(arch, reason);
        if (why) *why = reason;
        return std::nullopt;
    }
}

}  // namespace toysim::gpu
