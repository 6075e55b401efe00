#include "sim/print/step_report.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <map>
#include <set>

#include "sim/exec/parallel.h"
#include "sim/lower/disasm.h"
#include "sim/print/format.h"
#include "sim/print/report.h"
#include "sim/print/trace_text.h"
#include "support/text.h"

namespace toysim {

template <class Value>
std::string step_value_text(const Program& p, const Value& v, const StepStyle& style) {
    if constexpr (std::is_same_v<Value, double>) return p.has_tiles() ? tile_number(v) : number_text(v);
    else return style.names ? style.names->cell(v) : std::to_string(v);
}
template std::string step_value_text(const Program&, const double&, const StepStyle&);
template std::string step_value_text(const Program&, const std::uint32_t&, const StepStyle&);

template <class Domain>
std::vector<int> shown_registers(const Session<Domain>& s) {
    const Program& p = s.program();
    std::vector<int> out;
    for (int r = 0; r < p.scalar_registers; ++r)
        if (p.scalar_registers <= kShownRegisters || s.state().written[static_cast<size_t>(r)]) out.push_back(r);
    return out;
}

namespace {

constexpr const char* kChanged = "\x1b[1;32m";  // bold green: what this step changed
constexpr const char* kReset = "\x1b[0m";
constexpr std::int64_t kMemoryRows = 16, kMemoryCols = 16;

// "programs/p5.toy:35" and the source line, as an error shows it.
std::string source_line(const Program& p, int line) {
    if (!p.source || line <= 0) return {};
    return fmt::format("{:>5} | {}\n", line, p.source->line(line));
}

int line_of(const Program& p, std::int32_t pc) {
    const ast::Instruction* origin = p.origin[static_cast<size_t>(pc)];
    return origin ? origin->loc.line : 0;
}

// The names a symbolic cell uses (s2, m1), with what they stand for: the legend lines that
// explain this step.
std::vector<std::pair<std::string, std::string>> names_in(const std::string& text, const StepStyle& style) {
    std::vector<std::pair<std::string, std::string>> out;
    if (!style.names) return out;
    std::set<std::string> tokens;
    std::string token;
    for (char ch : text + " ") {
        if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') token += ch;
        else if (!token.empty()) tokens.insert(std::exchange(token, {}));
    }
    for (const auto& [name, definition] : style.names->legend())
        if (tokens.count(name)) out.emplace_back(name, definition);
    return out;
}

// The one-row step table for a scalar step, as the trace prints it, with the changed cell
// marked by carets (and in color on a terminal).
template <class Domain>
std::string scalar_row(const Session<Domain>& s, const Event<typename Domain::Value>& e, const StepStyle& style) {
    const Program& p = s.program();
    std::vector<int> regs = shown_registers(s);
    Table t = step_table(p, regs);
    std::vector<std::string> cells, carets;
    std::string changed;
    const std::string kPlaceholder(1, '\x1f');
    for (int r : regs) {
        bool written = s.state().written[static_cast<size_t>(r)];
        std::string text = written ? step_value_text(p, s.state().regs[static_cast<size_t>(r)], style) : "";
        bool is_changed = e.reg == r;
        carets.push_back(is_changed ? std::string(static_cast<size_t>(std::max(1, display_width(text))), '^') : "");
        if (is_changed && style.color) {
            changed = text;
            text = std::string(static_cast<size_t>(std::max(1, display_width(text))), '\x1f');
        }
        cells.push_back(text);
    }
    // With devices, the cycle on the clock of the device that ran it (its RECVs' waits included), as the trace shows it.
    t.rows.push_back(step_row(p, e.step, p.devices ? worker_clock(e.parallel, e.cycle) : e.cycle, e.pc, e.vars.data(), cells));
    if (e.reg >= 0) {
        std::vector<std::string> caret_row(t.header.size() - carets.size(), "");
        caret_row.insert(caret_row.end(), carets.begin(), carets.end());
        t.rows.push_back(caret_row);
    }
    std::string table = render_table(t, Format::Table);
    // The rule under the header says nothing in a one-row table.
    size_t rule = table.find('\n');
    table.erase(rule + 1, table.find('\n', rule + 1) - rule);
    if (style.color && e.reg >= 0) {
        size_t at = table.find('\x1f');
        size_t end = table.find_first_not_of('\x1f', at);
        table.replace(at, end - at, kChanged + changed + kReset);
        size_t caret = table.find('^');
        if (caret != std::string::npos) {
            table.insert(table.find_first_not_of('^', caret), kReset);
            table.insert(caret, kChanged);
        }
    }
    std::string out;
    for (size_t start = 0; start < table.size();) {
        size_t end = table.find('\n', start);
        out += "  " + table.substr(start, end - start + 1);
        start = end + 1;
    }
    return out;
}

template <class Value>
std::string access_text(const Program& p, const MachineState<Value>& state, const Event<Value>& e, const StepStyle& style) {
    if (e.accesses.empty()) return "DRAM: none";
    std::string out = "DRAM:";
    for (const DramAccess& a : e.accesses) {
        const ArrayInfo& info = p.arrays[static_cast<size_t>(a.array)];
        std::string first = p.element_ref(a.array, a.address - info.base);
        bool read = a.kind == AccessKind::Read;
        const char* wrote = a.kind == AccessKind::Accumulate ? "added to" : "wrote";
        if (a.elements() == 1) {
            auto at = static_cast<size_t>(a.address);
            if (read) out += fmt::format(" read {} (read {} so far)", first, plural(state.reads[at], "time"));
            else out += fmt::format(" {} {} {} {}", wrote, first, a.kind == AccessKind::Accumulate ? "→" : "=", step_value_text(p, e.dram_new.front(), style));
        } else {
            std::string last = p.element_ref(a.array, a.at(a.rows - 1, a.cols - 1) - info.base);
            out += fmt::format(" {} {} … {} ({} elements)", read ? "read" : wrote, first, last, a.elements());
        }
    }
    return out;
}

template <class Domain>
std::string counters_changed(const Session<Domain>& s, const Event<typename Domain::Value>& e) {
    const Program& p = s.program();
    Counters totals = s.counters();
    std::string out;
    for (const auto& [counter, delta] : counter_deltas(p, e))
        if (delta) out += fmt::format("{}{} {} (+{})", out.empty() ? "" : ", ", p.counter_name(counter), totals.value(counter).count, delta);
    return "counters: " + out;
}

template <class Domain>
std::string step_text(const Session<Domain>& s, const StepStyle& style) {
    const Program& p = s.program();
    const auto* e = s.last_event();
    std::string path = p.source ? p.source->path : "";
    if (!e) {
        std::string out = "step 0, cycle 0: nothing has run yet\n";
        if (!s.state().halted && p.origin[static_cast<size_t>(s.state().pc)]) {
            int line = line_of(p, s.state().pc);
            out += fmt::format("  next: {}:{}  {}\n", path, line, render_instruction(p, s.state().pc, s.state().vars.data()));
        }
        return out;
    }
    int line = line_of(p, e->pc);
    // On several workers: the cycle it ended on, on the clock of the worker that ran it, and the
    // work done so far on all of them (what the cycle is on one worker).
    std::string out = p.workers > 1 ? fmt::format("step {}, cycle {} on {} {}, work {}  {}:{}\n", e->step,
                                                  worker_clock(e->parallel, e->cycle), worker_word(p), e->parallel.worker, e->cycle, path, line)
                                    : fmt::format("step {}, cycle {}  {}:{}\n", e->step, e->cycle, path, line);
    out += source_line(p, line);
    if (p.has_tiles()) {
        out += "  " + render_instruction(p, e->pc, e->vars.data()) + "\n";
        std::string target, text;
        if (e->tile >= 0) {
            target = p.tiles[static_cast<size_t>(e->tile)].name;
            auto cols = e->cols;
            text = tile_block_text(e->rows, e->cols, e->rows, e->cols,
                                   [&](std::int64_t i, std::int64_t j) { return step_value_text(p, e->tile_new[static_cast<size_t>(i * cols + j)], style); });
        } else if (e->reg >= 0) {
            target = fmt::format("R{}", e->reg);
            text = step_value_text(p, e->reg_new, style);
        } else if (writes_dram(e->op) && !e->accesses.empty()) {
            const DramAccess& a = e->accesses.front();
            target = "stored";
            text = tile_block_text(a.rows, a.cols, a.rows, a.cols,
                                   [&](std::int64_t i, std::int64_t j) { return step_value_text(p, e->dram_new[static_cast<size_t>(i * a.cols + j)], style); });
        }
        if (!target.empty()) out += fmt::format("  {}{}{} = {}\n", style.color ? kChanged : "", target, style.color ? kReset : "", text);
    } else {
        out += scalar_row(s, *e, style);
        if (e->reg >= 0) {
            std::string now = step_value_text(p, e->reg_new, style);
            std::string before = e->reg_was_written ? step_value_text(p, e->reg_old, style) : "(unwritten)";
            // A change too small for four digits is shown with enough of them to see it.
            if constexpr (std::is_same_v<typename Domain::Value, double>)
                if (before == now && e->reg_old != e->reg_new) {
                    before = format_number(e->reg_old, 12);
                    now = format_number(e->reg_new, 12);
                }
            out += fmt::format("  R{}: {} → {}\n", e->reg, before, now);
            for (const auto& [name, definition] : names_in(now, style)) out += fmt::format("    {} = {}\n", name, definition);
        }
    }
    out += "  " + access_text(p, s.state(), *e, style) + "\n";
    out += "  " + counters_changed(s, *e) + "\n";
    return out;
}

template <class Value>
std::string dram_value(const Program& p, const MachineState<Value>& st, int array, std::int64_t offset, const StepStyle& style) {
    auto at = static_cast<size_t>(p.arrays[static_cast<size_t>(array)].base + offset);
    if (!st.present[at]) return "—";
    if constexpr (!std::is_same_v<Value, double>)
        if (st.dram[at] == kUnnamedInput) return p.element_symbol(array, offset);
    return step_value_text(p, st.dram[at], style);
}

// "o[1][2]" or "x[3]": a name and whole-number indices.
std::optional<std::pair<std::string, std::vector<std::int64_t>>> split_indices(std::string_view text) {
    size_t bracket = text.find('[');
    std::pair<std::string, std::vector<std::int64_t>> out{std::string(text.substr(0, bracket)), {}};
    if (bracket == std::string_view::npos) return out;
    std::string_view rest = text.substr(bracket);
    while (!rest.empty()) {
        size_t close = rest.find(']');
        if (rest.front() != '[' || close == std::string_view::npos) return std::nullopt;
        auto number = parse_whole_number(rest.substr(1, close - 1));
        if (!number) return std::nullopt;
        out.second.push_back(static_cast<std::int64_t>(std::min<std::uint64_t>(*number, INT64_MAX)));
        rest = rest.substr(close + 1);
    }
    return out;
}

template <class Domain>
std::string tile_text(const Session<Domain>& s, int tile, const StepStyle& style) {
    const Program& p = s.program();
    const Tile& t = p.tiles[static_cast<size_t>(tile)];
    std::int64_t rows = s.state().tile_rows[static_cast<size_t>(tile)], cols = s.state().tile_cols[static_cast<size_t>(tile)];
    if (rows == 0) return fmt::format("{}: never written ({}×{} tile)", t.name, t.rows, t.cols);
    return fmt::format("{}: {}×{} (of {}×{}) = {}", t.name, rows, cols, t.rows, t.cols,
                       tile_block_text(rows, cols, rows, cols, [&](std::int64_t i, std::int64_t j) {
                           return step_value_text(p, s.state().tiles[static_cast<size_t>(t.base + i * t.cols + j)], style);
                       }));
}

}  // namespace

template <class Domain>
std::string format_stop(const Session<Domain>& s, const Stop& stop, const StepStyle& style) {
    const Program& p = s.program();
    std::string head, tail;
    switch (stop.reason) {
        case Stop::Reason::Moved: break;
        case Stop::Reason::Breakpoint: {
            const Breakpoint& bp = s.breakpoints()[static_cast<size_t>(stop.breakpoint)];
            head = fmt::format("breakpoint {}: {}\n", bp.number, bp.text);
            break;
        }
        case Stop::Reason::Start: head = "at the start\n"; break;
        case Stop::Reason::Interrupted: head = "interrupted\n"; break;
        case Stop::Reason::End:
            // On several workers, its cycles are the makespan, and its work what one would take.
            tail = p.workers > 1 ? fmt::format("the program has ended: {}, {} on {}, work {}\n", plural(s.position(), "step"),
                                               plural(s.counters().cycles, "cycle"), plural(static_cast<std::uint64_t>(p.workers), worker_word(p)), s.cycle())
                                 : fmt::format("the program has ended: {}, {}\n", plural(s.position(), "step"), plural(s.cycle(), "cycle"));
            break;
        case Stop::Reason::Fault:
            tail = "the next instruction faults:\n" + format_error(*s.fault(), p.source.get(), "toysim");
            break;
    }
    return head + step_text(s, style) + tail;
}

template <class Domain>
std::string format_print(const Session<Domain>& s, std::string_view what, const StepStyle& style) {
    const Program& p = s.program();
    std::string text(trim(what));
    if (text.empty()) throw ToyError("print what? A register (R3), a tile (o), an element (x[2]) or a counter (reads(x))");
    if ((text[0] == 'R' || text[0] == 'r') && text.size() > 1 && text.find_first_not_of("0123456789", 1) == std::string::npos && text.size() < 10) {
        int r = std::stoi(text.substr(1));
        if (r >= p.scalar_registers) throw ToyError(fmt::format("R{} is beyond the register file: {}", r, p.register_file_text()));
        if (!s.state().written[static_cast<size_t>(r)]) return fmt::format("R{} has not been written\n", r);
        std::string v = step_value_text(p, s.state().regs[static_cast<size_t>(r)], style);
        std::string out = fmt::format("R{} = {}\n", r, v);
        for (const auto& [name, definition] : names_in(v, style)) out += fmt::format("  {} = {}\n", name, definition);
        return out;
    }
    if (text.find('(') != std::string::npos || parse_counter_name(text, "")) {
        std::string name = text.substr(0, text.find('(')), argument;
        if (text.find('(') != std::string::npos && text.back() == ')') argument = text.substr(text.find('(') + 1, text.size() - text.find('(') - 2);
        if (auto parsed = parse_counter_name(name, argument)) {
            if (is_cache_counter(parsed->kind)) throw ToyError(cache_not_stepped(info(parsed->kind).name_for(parsed->subject)));
            CounterRef ref{parsed->kind};
            if (info(parsed->kind).scope == CounterScope::PerOpcode) ref.op = *find_op(parsed->subject);
            if (info(parsed->kind).scope == CounterScope::PerArray) {
                ref.array = p.find_array(parsed->subject);
                if (ref.array < 0) throw ToyError(fmt::format("no array named {}", quoted_name(parsed->subject)));
            }
            return fmt::format("{} = {}\n", p.counter_name(ref), counter_text(s.counters().value(ref)));
        }
    }
    auto parts = split_indices(text);
    if (!parts) throw ToyError(fmt::format("{}: write an element as x[2] or o[1][2]", quoted_name(text)));
    const auto& [name, index] = *parts;
    if (int tile = p.find_tile(name); tile >= 0) {
        if (index.empty()) return tile_text(s, tile, style) + "\n";
        const Tile& t = p.tiles[static_cast<size_t>(tile)];
        std::int64_t rows = s.state().tile_rows[static_cast<size_t>(tile)], cols = s.state().tile_cols[static_cast<size_t>(tile)];
        std::int64_t i = index.size() == 2 ? index[0] : 0, j = index.back();
        if (index.size() > 2 || i >= rows || j >= cols)
            throw ToyError(fmt::format("{} is outside the tile's current {}×{} shape", quoted_name(text), rows, cols));
        return fmt::format("{} = {}\n", text, step_value_text(p, s.state().tiles[static_cast<size_t>(t.base + i * t.cols + j)], style));
    }
    int array = p.find_array(name);
    if (array < 0) {
        std::vector<std::string_view> names;
        for (const auto& a : p.arrays) names.push_back(a.name);
        for (const auto& t : p.tiles) names.push_back(t.name);
        throw ToyError(fmt::format("{} is not a register, a tile, an array or a counter{}", quoted_name(name), did_you_mean(name, names)));
    }
    const ArrayInfo& a = p.arrays[static_cast<size_t>(array)];
    if (index.size() != a.dims.size())
        throw ToyError(fmt::format("{} {}: print one element, as {}, or the array with 'mem {}'", a.name, a.dimensions_text(),
                                   a.first_element(), a.name));
    std::int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) {
        if (index[d] >= a.dims[d]) throw ToyError(fmt::format("{} is out of bounds: dimension {} has {} elements", quoted_name(text), d + 1, a.dims[d]));
        offset += index[d] * a.strides[d];
    }
    auto reads = s.state().reads[static_cast<size_t>(a.base + offset)];
    return fmt::format("{} = {} (read {})\n", p.element_ref(array, offset), dram_value(p, s.state(), array, offset, style), plural(reads, "time"));
}

template <class Domain>
std::string format_registers(const Session<Domain>& s, const StepStyle& style) {
    const Program& p = s.program();
    Table t{{"register", "value"}, {false, false}, {}};
    for (int r : shown_registers(s))
        t.rows.push_back({fmt::format("R{}", r), s.state().written[static_cast<size_t>(r)] ? step_value_text(p, s.state().regs[static_cast<size_t>(r)], style) : "—"});
    std::string out = t.rows.empty() ? "" : render_table(t, Format::Table);
    for (size_t k = 0; k < p.tiles.size(); ++k) out += tile_text(s, static_cast<int>(k), style) + "\n";
    return out.empty() ? "no registers have been written\n" : out;
}

template <class Domain>
std::string format_memory(const Session<Domain>& s, std::string_view name, std::int64_t first_row, const StepStyle& style) {
    const Program& p = s.program();
    int array = p.find_array(name);
    if (array < 0) {
        std::vector<std::string_view> names;
        for (const auto& a : p.arrays) names.push_back(a.name);
        throw ToyError(fmt::format("no array named {}{}", quoted_name(name), did_you_mean(name, names)));
    }
    const ArrayInfo& a = p.arrays[static_cast<size_t>(array)];
    std::int64_t rows = a.dims.size() == 2 ? a.dims[0] : a.size, cols = a.dims.size() == 2 ? a.dims[1] : 1;
    if (a.dims.size() > 2) {
        rows = a.size / a.dims.back();
        cols = a.dims.back();
    }
    if (first_row >= rows) throw ToyError(fmt::format("{} has {} rows (0..{})", a.name, rows, rows - 1));
    std::int64_t last_row = std::min(rows, first_row + kMemoryRows), shown_cols = std::min(cols, kMemoryCols);
    std::string shape;
    for (auto d : a.dims) shape += fmt::format("[{}]", d);
    std::string out = fmt::format("{} {}{}", role_name(a.role), a.name, shape);
    if (last_row - first_row < rows || shown_cols < cols)
        out += fmt::format(", rows {}..{}{} of {} ('mem {} ROW' shows from ROW)", first_row, last_row - 1,
                           shown_cols < cols ? fmt::format(", columns 0..{}", shown_cols - 1) : "", rows, a.name);
    out += "\n";
    auto grid = [&](bool reads) {
        Table t;
        t.header = {cols == 1 ? "index" : ""};
        t.right_aligned = {true};
        if (cols == 1) {
            t.header.push_back(reads ? "reads" : "value");
            t.right_aligned.push_back(reads);
        } else {
            for (std::int64_t j = 0; j < shown_cols; ++j) {
                t.header.push_back(std::to_string(j));
                t.right_aligned.push_back(reads);
            }
        }
        for (std::int64_t i = first_row; i < last_row; ++i) {
            std::vector<std::string> row = {std::to_string(i)};
            for (std::int64_t j = 0; j < shown_cols; ++j) {
                std::int64_t offset = i * cols + j;
                row.push_back(reads ? std::to_string(s.state().reads[static_cast<size_t>(a.base + offset)]) : dram_value(p, s.state(), array, offset, style));
            }
            t.rows.push_back(row);
        }
        return render_table(t, Format::Table);
    };
    out += "values:\n" + grid(false) + "reads so far, per element:\n" + grid(true);
    return out;
}

template <class Domain>
std::string format_session_counters(const Session<Domain>& s) {
    Table t{{"counter", "value"}, {false, true}, {}};
    for (const auto& row : counter_rows(s.program(), s.counters())) t.rows.push_back({row.name, counter_text(row.value)});
    return fmt::format("after step {}:\n", s.position()) + render_table(t, Format::Table);
}

template <class Domain>
std::string format_listing(const Session<Domain>& s, std::optional<int> line) {
    const Program& p = s.program();
    if (!p.source) return "no source\n";
    int current = s.last_event() ? line_of(p, s.last_event()->pc) : line_of(p, s.state().pc);
    int center = line.value_or(current);
    int total = static_cast<int>(p.source->lines.size());
    if (center < 1 || center > total) throw ToyError(fmt::format("{} has lines 1..{}", p.source->path, total));
    std::set<int> breaks;
    for (const auto& bp : s.breakpoints())
        if (bp.kind == Breakpoint::Kind::Line) breaks.insert(bp.line);
    std::string out;
    for (int n = std::max(1, center - 5); n <= std::min(total, center + 5); ++n)
        out += fmt::format("{}{} {:>4} | {}\n", n == current ? "=>" : "  ", breaks.count(n) ? "b" : " ", n, p.source->line(n));
    return out;
}

std::string format_breakpoints(const std::vector<Breakpoint>& breakpoints) {
    if (breakpoints.empty()) return "no breakpoints\n";
    Table t{{"Num", "Breakpoint", "Hits"}, {true, false, true}, {}};
    for (const auto& bp : breakpoints) t.rows.push_back({std::to_string(bp.number), bp.text, std::to_string(bp.hits)});
    return render_table(t, Format::Table);
}

// Each worker (or device) side by side: the line it runs next, its clock, and whether it has
// finished or waits in a RECV; with devices, the messages on the links.
template <class Domain>
std::string format_workers(const Session<Domain>& s) {
    const Program& p = s.program();
    const auto& m = s.state();
    const ParallelState& par = m.parallel;
    const std::string_view who = worker_word(p);
    if (!par.interleaved)
        return fmt::format("no {} is running: {}\n", p.devices ? "'on devices' block" : "parallel loop on several workers",
                           p.workers > 1 ? fmt::format("{} 0 runs alone", who) : "the machine has one worker");
    auto line_at = [&](std::int32_t pc) {
        const Inst& in = p.code[static_cast<size_t>(pc)];
        if (in.code == Code::LoopBegin || in.code == Code::LoopEnd) return p.loops[static_cast<size_t>(in.loop)].loc.line;
        const ast::Instruction* origin = p.origin[static_cast<size_t>(pc)];
        return origin ? origin->loc.line : 0;
    };
    Table t{{std::string(who), "clock", "next line", "state"}, {true, true, true, false}, {}};
    for (std::uint32_t w = 0; w < par.worker_free.size(); ++w) {
        const bool done = w >= par.worker_iteration.size() || par.worker_iteration[w] == 0;
        const std::int32_t pc = w == par.worker ? m.pc : m.contexts[w].pc;
        std::string state = done ? "finished" : w == par.worker ? "runs next" : "ready";
        if (!done && p.devices && m.links.waiting[w] >= 0)
            state = fmt::format("waits for device {} (RECV at line {})", m.links.waiting[w], line_at(m.links.waiting_pc[w]));
        t.rows.push_back({std::to_string(w), std::to_string(par.worker_free[w]), done ? "-" : std::to_string(line_at(pc)), state});
    }
    std::string out = render_table(t, Format::Table);
    if (!p.devices) return out;
    std::string links;
    for (size_t link = 0; link < m.links.queue.size(); ++link) {
        const auto& q = m.links.queue[link];
        const size_t head = m.links.head[link];
        if (head >= q.size()) continue;
        std::uint64_t elements = 0;
        for (size_t k = head; k < q.size(); ++k) elements += q[k].values.size();
        links += fmt::format("  device {} → {}: {} in flight, {} (the first arrives at cycle {})\n", link / static_cast<size_t>(p.devices),
                             link % static_cast<size_t>(p.devices), plural(q.size() - head, "message"), plural(elements, "element"), q[head].arrival);
    }
    return out + (links.empty() ? "no message on the links\n" : "on the links:\n" + links);
}

template <class Domain>
std::string format_checkpoints(const Session<Domain>& s) {
    return fmt::format("{} (every {} steps), {:.1f} MiB; the end {}\n", plural(s.checkpoint_count(), "checkpoint"), s.checkpoint_interval(),
                       static_cast<double>(s.checkpoint_bytes()) / (1 << 20), s.end() ? fmt::format("is step {}", *s.end()) : "is not reached yet");
}

std::string step_help() {
    return "moving (Enter repeats the last command; none of these stops at breakpoints):\n"
           "  step [N], s [N]              forward N instructions (default 1); also next, n\n"
           "  back [N], reverse-step, rs   backward N instructions\n"
           "  goto STEP, g STEP            to step STEP, forward or backward (goto 0: the start)\n"
           "  continue, c                  forward to the next breakpoint, or the end\n"
           "  reverse-continue, rc         backward to the previous breakpoint, or the start\n"
           "breakpoints:\n"
           "  break LINE | FILE:LINE       an instruction on that source line\n"
           "  break cycle N                the instruction during which cycle N passes\n"
           "  break OPCODE                 e.g. break STORE\n"
           "  break ARRAY | ARRAY[i][j]    a LOAD or STORE of the array, or of that element\n"
           "  break COUNTER > N            a counter crossing a value: break reads(K) > 64 (also >=, <, <=, =)\n"
           "  break worker W               the first instruction of each parallel iteration worker W takes\n"
           "  watch R2 | TILE | ARRAY[i]   a write that changes it\n"
           "  info breakpoints, i b        list them;  delete N, d N (delete: all)\n"
           "looking:\n"
           "  print WHAT, p WHAT           R3, a tile o, o[1][2], x[2], a counter such as reads(K)\n"
           "  print W:R3, print W:o        in a parallel loop, a register or tile as worker W holds it\n"
           "  regs, info registers         every register and tile\n"
           "  mem ARRAY [ROW], x ARRAY     an array's values and reads per element\n"
           "  counters                     every counter so far\n"
           "  list [LINE], l               the source around the current instruction\n"
           "  where                        the current step again\n"
           "  info checkpoints             the snapshots reverse stepping replays from\n"
           "  info workers, info devices   each worker or device side by side: its clock, next line, whether it waits\n"
           "  help, h;  quit, q (or end of input)\n";
}

#define TOYSIM_STEP_REPORTS(D)                                                                              \
    template std::string format_stop(const Session<D>&, const Stop&, const StepStyle&);                     \
    template std::vector<int> shown_registers(const Session<D>&);                                           \
    template std::string format_print(const Session<D>&, std::string_view, const StepStyle&);               \
    template std::string format_registers(const Session<D>&, const StepStyle&);                             \
    template std::string format_memory(const Session<D>&, std::string_view, std::int64_t, const StepStyle&); \
    template std::string format_session_counters(const Session<D>&);                                        \
    template std::string format_listing(const Session<D>&, std::optional<int>);                             \
    template std::string format_checkpoints(const Session<D>&);                                             \
    template std::string format_workers(const Session<D>&);
TOYSIM_STEP_REPORTS(NumericDomain)
TOYSIM_STEP_REPORTS(SymbolicDomain)
#undef TOYSIM_STEP_REPORTS

std::unique_ptr<ExprFormatter> name_session_values(Session<SymbolicDomain>& session, const ExprArena& arena) {
    auto shown = collect_shown_values(session, kSymbolicSessionSteps);
    if (!shown)
        throw ToyError(fmt::format("this run is longer than {} steps, too long to step symbolically: use --values numeric",
                                   grouped(static_cast<double>(kSymbolicSessionSteps))));
    auto names = std::make_unique<ExprFormatter>(arena, session.program(), *shown);
    session.go_to(0);
    return names;
}

std::string_view stop_reason_name(Stop::Reason reason) {
    switch (reason) {
        case Stop::Reason::Moved: return "moved";
        case Stop::Reason::Breakpoint: return "breakpoint";
        case Stop::Reason::Start: return "start";
        case Stop::Reason::End: return "end";
        case Stop::Reason::Fault: return "fault";
        case Stop::Reason::Interrupted: return "interrupted";
    }
    return "moved";
}

}  // namespace toysim
