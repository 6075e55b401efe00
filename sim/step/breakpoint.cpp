#include "sim/step/breakpoint.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

#include "support/text.h"

namespace toysim {

namespace {

// A whole number, spaces around it allowed ("break  12 ").
std::optional<std::uint64_t> whole_number(std::string_view s) { return parse_whole_number(trim(s)); }

const char* const kBreakForms =
    "break 12 (a line), break cycle 40, break STORE, break x (any access), break x[3], break reads(K) > 64, break worker 2";
const char* const kWatchForms = "watch R2, watch o (a tile), watch out (an array), watch out[3]";

// "x[3][1]" -> the array and the element's address; "x" -> the array and -1.
std::optional<std::pair<int, std::int64_t>> array_or_element(const Program& p, std::string_view text) {
    size_t bracket = text.find('[');
    int array = p.find_array(trim(text.substr(0, bracket)));
    if (array < 0) return std::nullopt;
    if (bracket == std::string_view::npos) return std::pair{array, std::int64_t{-1}};
    const ArrayInfo& a = p.arrays[static_cast<size_t>(array)];
    std::vector<std::int64_t> index;
    std::string_view rest = text.substr(bracket);
    while (!rest.empty()) {
        size_t close = rest.find(']');
        if (rest.front() != '[' || close == std::string_view::npos)
            throw ToyError(fmt::format("{} is not an element: write it as {}{}", quoted_name(text), a.name,
                                       a.dims.empty() ? "" : a.dims.size() == 1 ? "[i]" : "[i][j]"));
        auto i = whole_number(rest.substr(1, close - 1));
        if (!i) throw ToyError(fmt::format("{}: an index must be a whole number", quoted_name(text)));
        index.push_back(static_cast<std::int64_t>(std::min<std::uint64_t>(*i, INT64_MAX)));
        rest = trim(rest.substr(close + 1));
    }
    if (index.size() != a.dims.size())
        throw ToyError(fmt::format("{} {}; {} gives {}", a.name, a.dimensions_text(), quoted_name(text), index.size()));
    std::int64_t address = a.base;
    for (size_t d = 0; d < index.size(); ++d) {
        if (index[d] >= a.dims[d])
            throw ToyError(fmt::format("{} is out of bounds: dimension {} of {} has {} elements", quoted_name(text), d + 1, a.name, a.dims[d]));
        address += index[d] * a.strides[d];
    }
    return std::pair{array, address};
}

Breakpoint parse_line(const Program& p, std::uint64_t line, std::string_view text) {
    int nearest_before = 0, nearest_after = 0;
    for (const auto* origin : p.origin) {
        if (!origin) continue;
        auto at = static_cast<std::uint64_t>(origin->loc.line);
        if (at == line) {
            Breakpoint bp;
            bp.kind = Breakpoint::Kind::Line;
            bp.line = origin->loc.line;
            bp.text = fmt::format("break {}", line);
            return bp;
        }
        if (at < line) nearest_before = std::max(nearest_before, origin->loc.line);
        if (at > line && (nearest_after == 0 || origin->loc.line < nearest_after)) nearest_after = origin->loc.line;
    }
    std::string near;
    if (nearest_before && nearest_after) near = fmt::format(" (the nearest are on lines {} and {})", nearest_before, nearest_after);
    else if (nearest_before || nearest_after) near = fmt::format(" (the nearest is on line {})", std::max(nearest_before, nearest_after));
    throw ToyError(fmt::format("no instruction on line {}{}{}", text, near, p.origin.empty() ? "" : ""));
}

// "reads(K) > 64", "STORE >= 3", "cycles = 100".
std::optional<Breakpoint> parse_counter(const Program& p, std::string_view text) {
    static const std::pair<std::string_view, Comparison> kOps[] = {{">=", Comparison::GreaterEqual}, {"<=", Comparison::LessEqual},
                                                                   {"==", Comparison::Equal},        {">", Comparison::Greater},
                                                                   {"<", Comparison::Less},          {"=", Comparison::Equal}};
    size_t at = std::string_view::npos, width = 0;
    Comparison comparison = Comparison::Greater;
    for (const auto& [op, c] : kOps) {
        size_t found = text.find(op);
        if (found != std::string_view::npos && (at == std::string_view::npos || found < at || (found == at && op.size() > width))) {
            at = found;
            width = op.size();
            comparison = c;
        }
    }
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view name = trim(text.substr(0, at));
    auto value = whole_number(text.substr(at + width));
    if (!value) throw ToyError(fmt::format("{}: the value after {} must be a whole number", quoted_name(text), comparison_text(comparison)));
    std::string_view argument;
    if (size_t open = name.find('('); open != std::string_view::npos && name.back() == ')') {
        argument = trim(name.substr(open + 1, name.size() - open - 2));
        name = trim(name.substr(0, open));
    }
    auto parsed = parse_counter_name(name, argument);
    if (!parsed) throw ToyError(fmt::format("unknown counter {}; the counters: {}", quoted_name(name), counter_names_help()));
    Breakpoint bp;
    bp.kind = Breakpoint::Kind::Counter;
    bp.counter.kind = parsed->kind;
    if (parsed->kind == CounterKind::Registers || parsed->kind == CounterKind::ArithmeticIntensity ||
        parsed->kind == CounterKind::Utilization)
        throw ToyError(fmt::format("a breakpoint cannot follow {}: it is not a sum over steps (try cycles, reads, writes, "
                                   "reads(ARRAY), an opcode)",
                                   info(parsed->kind).name));
    if (is_cache_counter(parsed->kind)) throw ToyError(cache_not_stepped(info(parsed->kind).name_for(parsed->subject)));
    if (info(parsed->kind).scope == CounterScope::PerOpcode) bp.counter.op = *find_op(parsed->subject);
    if (info(parsed->kind).scope == CounterScope::PerArray) {
        bp.counter.array = p.find_array(parsed->subject);
        if (bp.counter.array < 0) throw ToyError(fmt::format("no array named {}", quoted_name(parsed->subject)));
    }
    bp.comparison = comparison;
    bp.value = *value;
    bp.text = fmt::format("break {} {} {}", p.counter_name(bp.counter), comparison_text(comparison), *value);
    return bp;
}

template <class Value>
bool same_value(const Value& a, const Value& b) {
    // The same bits (memcmp rather than std::bit_cast, which the browser build's libc++ lacks).
    if constexpr (std::is_same_v<Value, double>) return std::memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b);
    else return a == b;
}

// Does the access move element `address` (any element when -1)?
bool covers(const DramAccess& a, std::int64_t address) {
    if (address < 0) return true;
    for (std::int64_t i = 0; i < a.rows; ++i)
        for (std::int64_t j = 0; j < a.cols; ++j)
            if (a.at(i, j) == address) return true;
    return false;
}

}  // namespace

std::string_view comparison_text(Comparison c) {
    switch (c) {
        case Comparison::Less: return "<";
        case Comparison::LessEqual: return "<=";
        case Comparison::Greater: return ">";
        case Comparison::GreaterEqual: return ">=";
        case Comparison::Equal: return "=";
    }
    return "?";
}

bool compare(std::uint64_t actual, Comparison c, std::uint64_t value) {
    switch (c) {
        case Comparison::Less: return actual < value;
        case Comparison::LessEqual: return actual <= value;
        case Comparison::Greater: return actual > value;
        case Comparison::GreaterEqual: return actual >= value;
        case Comparison::Equal: return actual == value;
    }
    return false;
}

Breakpoint parse_breakpoint(const Program& p, std::string_view text, bool watch) {
    text = trim(text);
    if (text.empty()) throw ToyError(fmt::format("{} what? For example: {}", watch ? "watch" : "break", watch ? kWatchForms : kBreakForms));
    if (watch) {
        Breakpoint bp;
        bp.kind = Breakpoint::Kind::Watch;
        bp.text = fmt::format("watch {}", text);
        if ((text[0] == 'R' || text[0] == 'r') && whole_number(text.substr(1))) {
            auto r = *whole_number(text.substr(1));
            if (r >= static_cast<std::uint64_t>(p.scalar_registers))
                throw ToyError(fmt::format("{} is beyond the register file: {}", quoted_name(text), p.register_file_text()));
            bp.reg = static_cast<int>(r);
            bp.text = fmt::format("watch R{}", r);
            return bp;
        }
        if (int t = p.find_tile(text); t >= 0) {
            bp.tile = t;
            return bp;
        }
        if (auto element = array_or_element(p, text)) {
            std::tie(bp.array, bp.address) = *element;
            return bp;
        }
        throw ToyError(fmt::format("{} is not a register, a tile or an array; for example: {}", quoted_name(text), kWatchForms));
    }
    if (text.rfind("cycle", 0) == 0 && text.find_first_of("<>=") == std::string_view::npos && text != "cycles") {
        auto c = whole_number(text.substr(5));
        if (!c || *c == 0) throw ToyError("break cycle N takes a cycle number from 1, e.g. break cycle 40");
        Breakpoint bp;
        bp.kind = Breakpoint::Kind::Cycle;
        bp.cycle = *c;
        bp.text = fmt::format("break cycle {}", *c);
        return bp;
    }
    if (text.rfind("worker", 0) == 0 && (text.size() == 6 || text[6] == ' ')) {
        auto w = whole_number(trim(text.substr(6)));
        if (!w) throw ToyError("break worker W takes a worker number from 0, e.g. break worker 2");
        if (*w >= static_cast<std::uint64_t>(p.workers))
            throw ToyError(fmt::format("there is no worker {}: the machine has {} (workers 0..{}); `workers P` gives it more", *w,
                                       p.workers == 1 ? "one worker" : fmt::format("{} workers", p.workers), p.workers - 1));
        Breakpoint bp;
        bp.kind = Breakpoint::Kind::Worker;
        bp.worker = static_cast<std::uint32_t>(*w);
        bp.text = fmt::format("break worker {}", *w);
        return bp;
    }
    if (auto line = whole_number(text)) return parse_line(p, *line, text);
    if (size_t colon = text.rfind(':'); colon != std::string_view::npos) {
        std::string_view file = text.substr(0, colon);
        std::string path = p.source ? p.source->path : std::string();
        std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
        auto line = whole_number(text.substr(colon + 1));
        if (line && (file == path || file == base)) return parse_line(p, *line, text.substr(colon + 1));
        if (line) throw ToyError(fmt::format("{} is not this program's file ({})", quoted_name(file), path));
    }
    if (auto bp = parse_counter(p, text)) return *bp;
    if (auto op = find_op(text)) {
        Breakpoint bp;
        bp.kind = Breakpoint::Kind::Opcode;
        bp.op = *op;
        bp.text = fmt::format("break {}", info(*op).mnemonic);
        return bp;
    }
    if (auto element = array_or_element(p, text)) {
        Breakpoint bp;
        bp.kind = Breakpoint::Kind::Access;
        std::tie(bp.array, bp.address) = *element;
        bp.text = fmt::format("break {}", text);
        return bp;
    }
    std::vector<std::string_view> names;
    for (const auto& a : p.arrays) names.push_back(a.name);
    for (const auto& row : all_ops()) names.push_back(row.mnemonic);
    throw ToyError(fmt::format("{} is not a line, a cycle, an opcode, an array or a counter{}; for example: {}", quoted_name(text),
                               did_you_mean(text, names), kBreakForms));
}

std::string cache_not_stepped(std::string_view counter) {
    return fmt::format("{} is counted by the modeled cache, which the stepper does not run; `toysim run` and `toysim trace` "
                       "count it",
                       counter);
}

template <class Value>
std::uint64_t counter_delta(const Program& p, const CounterRef& c, const Event<Value>& e) {
    std::uint64_t reads = 0, writes = 0, array_reads = 0, array_writes = 0;
    for (const auto& a : e.accesses) {
        auto n = static_cast<std::uint64_t>(a.elements());
        if (reads_dram(a.kind)) reads += n;
        if (writes_dram(a.kind)) writes += n;
        if (a.array == c.array && reads_dram(a.kind)) array_reads += n;
        if (a.array == c.array && writes_dram(a.kind)) array_writes += n;
    }
    switch (c.kind) {
        case CounterKind::Cycles:
        case CounterKind::TotalWork: return e.cost;
        case CounterKind::Instructions: return 1;
        case CounterKind::Opcode: return e.op == c.op ? 1 : 0;
        case CounterKind::Work: return e.op == c.op ? e.work : 0;
        case CounterKind::Reads: return reads;
        case CounterKind::Writes: return writes;
        case CounterKind::Traffic: return reads + writes;
        case CounterKind::ArrayReads: return array_reads;
        case CounterKind::ArrayWrites: return array_writes;
        case CounterKind::Compute: return info(e.op).klass == OpClass::Compute ? e.work : 0;
        case CounterKind::Registers:
        case CounterKind::ArithmeticIntensity:
        case CounterKind::Utilization: return 0;
        default: return 0;  // the cache's counters: refused when the breakpoint is set
    }
    (void)p;
    return 0;
}

template <class Value>
bool stops_at(const Program& p, const Breakpoint& bp, const Event<Value>& e, std::uint64_t counter_before) {
    using K = Breakpoint::Kind;
    switch (bp.kind) {
        case K::Line: return p.origin[static_cast<size_t>(e.pc)]->loc.line == bp.line;
        case K::Cycle: return e.cycle - e.cost < bp.cycle && bp.cycle <= e.cycle;
        case K::Opcode: return e.op == bp.op;
        case K::Access:
            return std::any_of(e.accesses.begin(), e.accesses.end(), [&](const DramAccess& a) { return a.array == bp.array && covers(a, bp.address); });
        case K::Watch: {
            if (bp.reg >= 0) return e.reg == bp.reg && (!e.reg_was_written || !same_value(e.reg_old, e.reg_new));
            if (bp.tile >= 0) {
                if (e.tile != bp.tile) return false;
                if (e.old_rows != e.rows || e.old_cols != e.cols) return true;
                for (size_t k = 0; k < e.tile_new.size(); ++k)
                    if (!e.tile_was_touched[k] || !same_value(e.tile_old[k], e.tile_new[k])) return true;
                return false;
            }
            for (const auto& a : e.accesses) {
                if (a.array != bp.array || !writes_dram(a.kind)) continue;
                for (std::int64_t i = 0, k = 0; i < a.rows; ++i)
                    for (std::int64_t j = 0; j < a.cols; ++j, ++k)
                        if ((bp.address < 0 || a.at(i, j) == bp.address) &&
                            (!e.dram_was_present[static_cast<size_t>(k)] || !same_value(e.dram_old[static_cast<size_t>(k)], e.dram_new[static_cast<size_t>(k)])))
                            return true;
            }
            return false;
        }
        case K::Worker:  // the iteration began with this instruction
            return e.parallel.iteration != 0 && e.parallel.worker == bp.worker &&
                   (e.parallel.interleaved ? e.parallel.first_of_iteration : e.cycle - e.cost == e.parallel.iteration_work);
        case K::Counter: {
            std::uint64_t after = counter_before + counter_delta(p, bp.counter, e);
            return !compare(counter_before, bp.comparison, bp.value) && compare(after, bp.comparison, bp.value);
        }
    }
    return false;
}

template std::uint64_t counter_delta(const Program&, const CounterRef&, const Event<double>&);
template std::uint64_t counter_delta(const Program&, const CounterRef&, const Event<std::uint32_t>&);
template bool stops_at(const Program&, const Breakpoint&, const Event<double>&, std::uint64_t);
template bool stops_at(const Program&, const Breakpoint&, const Event<std::uint32_t>&, std::uint64_t);

}  // namespace toysim
