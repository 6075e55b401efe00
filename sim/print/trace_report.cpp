// `toysim trace`: the step table, and in JSON the event stream itself (one object per
// executed instruction: where it is in the source, what it wrote, old → new, the DRAM it
// moved and the counters it added).
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <map>
#include <optional>

#include "sim/lower/disasm.h"
#include "sim/print/format.h"
#include "sim/print/expr_format.h"
#include "sim/print/report.h"
#include "sim/print/trace_text.h"
#include "support/text.h"

namespace toysim {

// Four decimals, trailing zeros dropped (1.3679, 0.5, 12), the precision of the seed's
// worked examples; very large or very small magnitudes in scientific notation.
std::string tile_number(double v) {
    if (!std::isfinite(v)) return number_text(v);
    double a = std::abs(v);
    if (a != 0 && (a >= 1e6 || a < 1e-4)) return format_number(v, 5);
    std::string t = fmt::format("{:.4f}", v);
    while (t.back() == '0') t.pop_back();
    if (t.back() == '.') t.pop_back();
    return t == "-0" ? "0" : t;
}

// A tile's values as rows: "[1, 0.36788; 0.36788, 1]". Large tiles show their top-left corner.
std::string tile_block_text(std::int64_t rows, std::int64_t cols, std::int64_t full_rows, std::int64_t full_cols,
                            const std::function<std::string(std::int64_t, std::int64_t)>& value) {
    constexpr std::int64_t kShownRows = 8, kShownCols = 8;
    std::string out = "[";
    for (std::int64_t i = 0; i < std::min(rows, kShownRows); ++i) {
        if (i) out += "; ";
        for (std::int64_t j = 0; j < std::min(cols, kShownCols); ++j) out += (j ? ", " : "") + value(i, j);
        if (full_cols > kShownCols) out += ", …";
    }
    if (full_rows > kShownRows) out += "; …";
    return out + "]";
}

Table step_table(const Program& p, const std::vector<int>& registers) {
    Table t;
    t.header = {"Step", "Instruction"};
    t.right_aligned = {true, false};
    if (!unit_costs(p)) {
        t.header.insert(t.header.begin() + 1, "Cycle");
        t.right_aligned.insert(t.right_aligned.begin() + 1, true);
    }
    for (int r : registers) {
        t.header.push_back(fmt::format("R{}", r));
        t.right_aligned.push_back(false);
    }
    return t;
}

std::vector<std::string> step_row(const Program& p, std::uint64_t step, std::uint64_t cycle, std::int32_t pc, const std::int64_t* vars,
                                  std::vector<std::string> cells) {
    std::vector<std::string> row = {std::to_string(step), render_instruction(p, pc, vars)};
    if (!unit_costs(p)) row.insert(row.begin() + 1, std::to_string(cycle));
    row.insert(row.end(), std::make_move_iterator(cells.begin()), std::make_move_iterator(cells.end()));
    return row;
}

bool unit_costs(const Program& p) {
    // SEND and RECV (0 cycles) exist only with devices.
    return std::all_of(all_ops().begin(), all_ops().end(),
                       [&](const OpInfo& op) { return (is_transfer(op.op) && !p.devices) || p.cycles[static_cast<size_t>(op.op)] == 1; });
}

namespace {

using json = nlohmann::ordered_json;


// "7 cycles, 7 instructions (4 LOAD, ...); DRAM: 4 reads, 1 write; 3 registers used"
std::string trace_summary(const Program& p, const Counters& c) {
    std::string mix;
    for (const auto& row : all_ops())
        if (auto n = c.by_opcode[static_cast<size_t>(row.op)]) mix += fmt::format("{}{} {}", mix.empty() ? "" : ", ", n, row.mnemonic);
    std::string registers = p.has_tiles() ? fmt::format("{} of {} registers used", c.peak_registers, p.registers)
                                          : fmt::format("{} used", plural(static_cast<std::uint64_t>(c.peak_registers), "register"));
    // On several workers, cycles is the makespan: say so, with the work (the cycles on one).
    std::string cycles = c.workers > 1 ? fmt::format("{} on {} (work {})", plural(c.cycles, "cycle"), plural(static_cast<std::uint64_t>(c.workers), worker_word(p)), c.work)
                                       : plural(c.cycles, "cycle");
    std::string cache;  // what reached DRAM past the cache
    if (c.cache) {
        const CacheStats& t = c.cache->total;
        cache = fmt::format("; L2 sectors: {} hits, {} misses; DRAM past the L2: {} bytes read, {} written back, {} dirty at the end",
                            t.hits(), t.misses(), t.dram_read_bytes, t.dram_write_bytes,
                            c.cache->dirty_bytes);
    }
    return fmt::format("{}, {} ({}); DRAM: {}, {}; {}{}", cycles, plural(c.instructions, "instruction"),
                       mix.empty() ? "none" : mix, plural(c.dram_reads, "read"), plural(c.dram_writes, "write"), registers, cache);
}


std::string block_text(const TraceStep& s, const std::function<std::string(size_t)>& value) {
    return tile_block_text(s.rows, s.cols, s.full_rows, s.full_cols, [&](std::int64_t i, std::int64_t j) {
        return value(s.first + static_cast<size_t>(i) * static_cast<size_t>(s.cols) + static_cast<size_t>(j));
    });
}

// How a trace shows one value, in its mode: an expression (symbolic) or a number.
struct ValueText {
    const Trace& tr;
    std::optional<ExprFormatter> names;
    bool tile_style;  // tile traces print four decimals
    std::string symbol(std::uint32_t id) const { return names->cell(id); }
    std::string scalar(const TraceStep& s, bool old) const {
        if (tr.symbolic) return symbol(old ? s.symbol_old : s.symbol);
        double v = old ? s.number_old : s.number;
        return tile_style ? tile_number(v) : number_text(v);
    }
    std::string block(size_t k) const { return tr.symbolic ? symbol(tr.tile_symbols[k]) : tile_number(tr.tile_numbers[k]); }
    json block_json(size_t k) const {
        if (tr.symbolic) return symbol(tr.tile_symbols[k]);
        double v = tr.tile_numbers[k];
        return std::isfinite(v) ? json(v) : json(number_text(v));
    }
    json scalar_json(const TraceStep& s, bool old) const {
        if (tr.symbolic) return scalar(s, old);
        double v = old ? s.number_old : s.number;
        return std::isfinite(v) ? json(v) : json(number_text(v));
    }
};

std::vector<std::uint32_t> shown_symbols(const Trace& tr) {
    std::vector<std::uint32_t> shown;
    if (!tr.symbolic) return shown;
    for (const auto& s : tr.steps) {
        if (s.reg >= 0 || writes_dram(s.op)) shown.push_back(s.symbol);
        if (s.reg >= 0 && s.reg_was_written) shown.push_back(s.symbol_old);
    }
    shown.insert(shown.end(), tr.tile_symbols.begin(), tr.tile_symbols.end());
    return shown;
}

json block_rows(const TraceStep& s, std::uint32_t first, const ValueText& vt) {
    json rows = json::array();
    for (std::int32_t r = 0; r < s.rows; ++r) {
        json row = json::array();
        for (std::int32_t c = 0; c < s.cols; ++c) row.push_back(vt.block_json(first + static_cast<size_t>(r) * static_cast<size_t>(s.cols) + static_cast<size_t>(c)));
        rows.push_back(row);
    }
    return rows;
}

// "K[0..4][0..64]" or "a[0][1]": the DRAM a step moved, as indices.
json access_json(const Program& p, const TraceStep& s, const ValueText& vt) {
    json out = json::array();
    if (!s.access) return out;
    const DramAccess& a = *s.access;
    const ArrayInfo& info = p.arrays[static_cast<size_t>(a.array)];
    json entry = {{"array", info.name}, {"access", access_kind_name(a.kind)}};
    auto first = p.element_index(a.array, a.address - info.base);
    if (a.elements() == 1) {
        entry["index"] = first;
    } else {
        auto last = p.element_index(a.array, a.at(a.rows - 1, a.cols - 1) - info.base);
        entry["first"] = first;
        entry["last"] = last;
        entry["shape"] = {a.rows, a.cols};
    }
    entry["elements"] = a.elements();
    if (writes_dram(a.kind) && a.elements() == 1 && s.tile < 0) entry["new"] = vt.scalar_json(s, false);
    out.push_back(entry);
    return out;
}

// One event of the stream.
json event_json(const Program& p, const TraceStep& s, size_t index, const std::string& instruction, const ValueText& vt) {
    const ast::Instruction* origin = p.origin[static_cast<size_t>(s.pc)];
    json e = {{"step", index + 1}, {"cycle", s.cycle}, {"cost", s.cost}};
    if (p.workers > 1) e["worker"] = s.worker;
    e["at"] = fmt::format("{}:{}:{}", p.source ? p.source->path : std::string(), origin->loc.line, origin->loc.col);
    e["line"] = origin->loc.line;
    e["col"] = origin->loc.col;
    e["instruction"] = instruction;
    json writes = json::array();
    if (s.reg >= 0)
        writes.push_back({{"register", fmt::format("R{}", s.reg)}, {"old", s.reg_was_written ? vt.scalar_json(s, true) : json(nullptr)},
                          {"new", vt.scalar_json(s, false)}});
    if (s.tile >= 0) {
        json w = {{"tile", p.tiles[static_cast<size_t>(s.tile)].name},
                  {"old_shape", {s.old_rows, s.old_cols}},
                  {"shape", {s.full_rows, s.full_cols}},
                  {"old", block_rows(s, s.first_old, vt)},
                  {"new", block_rows(s, s.first, vt)}};
        if (s.full_rows > s.rows || s.full_cols > s.cols) w["shown"] = {s.rows, s.cols};  // the top-left block kept
        writes.push_back(w);
    }
    e["writes"] = writes;
    json dram = access_json(p, s, vt);
    if (writes_dram(s.op) && s.rows > 0 && !dram.empty()) {
        dram[0]["new"] = block_rows(s, s.first, vt);
        if (s.full_rows > s.rows || s.full_cols > s.cols) dram[0]["shown"] = {s.rows, s.cols};
    }
    e["dram"] = dram;
    // The counters this step added, by the counter table's names.
    std::vector<DramAccess> accesses;
    if (s.access) accesses.push_back(*s.access);
    json deltas = json::object();
    for (const auto& [counter, delta] : counter_deltas(p, s.op, s.cost, s.work, accesses))
        if (delta) deltas[p.counter_name(counter)] = delta;
    e["counters"] = deltas;
    return e;
}

using Legend = std::vector<std::pair<std::string, std::string>>;

// What every trace ends with: JSON with its events, or the table, the legend of named values
// and the summary line.
std::string finish_trace(const Program& p, const Trace& tr, const TraceOptions& options, const Table& t, json events,
                         const Legend& legend, json registers) {
    if (options.format == Format::Json) {
        json j;
        j["program"] = p.source ? p.source->path : std::string();
        j["values"] = tr.symbolic ? "symbolic" : "numeric";
        if (registers.is_array()) j["registers"] = std::move(registers);
        j["steps"] = std::move(events);
        j["legend"] = json::object();
        for (const auto& [name, def] : legend) j["legend"][name] = def;
        j["counters"] = counters_json(p, tr.counters);
        j["complete"] = !tr.error.has_value();
        if (tr.error) {
            const Loc& loc = tr.error->loc();
            j["fault"] = {{"message", tr.error->what()}, {"line", loc.line}, {"col", loc.col}};
        } else {
            j["fault"] = nullptr;
        }
        return json_text(j);
    }
    std::string out = render_table(t, options.format);
    if (options.format == Format::Csv) return out;
    if (!legend.empty()) {
        out += "\n";
        for (const auto& [name, def] : legend) out += fmt::format("{}{} = {}\n", options.format == Format::Markdown ? "- " : "", name, def);
    }
    if (!tr.error) out += "\n" + trace_summary(p, tr.counters) + "\n";
    return out;
}

// On several workers: a Worker column after Step, the worker that ran each row's step.
void add_worker_column(const Program& p, const Trace& tr, Table& t) {
    if (p.workers < 2 || t.rows.size() != tr.steps.size()) return;
    t.header.insert(t.header.begin() + 1, p.devices ? "Device" : "Worker");
    t.right_aligned.insert(t.right_aligned.begin() + 1, true);
    for (size_t i = 0; i < t.rows.size(); ++i) t.rows[i].insert(t.rows[i].begin() + 1, std::to_string(tr.steps[i].worker));
}

// Tile programs: one row per instruction with the block it wrote (or stored), since a row of
// register columns cannot show tiles.
std::string format_tile_trace(const Program& p, const Trace& tr, const TraceOptions& options, const ValueText& vt) {
    Table t{{"Step", "Instruction", "Result"}, {true, false, false}, {}};
    json events = json::array();
    for (size_t i = 0; i < tr.steps.size(); ++i) {
        const TraceStep& s = tr.steps[i];
        std::string instruction = render_instruction(p, s.pc, s.vars.data());
        bool stored = writes_dram(s.op);
        std::string target = stored ? "stored" : s.tile >= 0 ? p.tiles[static_cast<size_t>(s.tile)].name : s.reg >= 0 ? fmt::format("R{}", s.reg) : "";
        std::string text = s.rows > 0 ? block_text(s, [&](size_t k) { return vt.block(k); }) : vt.scalar(s, false);
        if (options.format == Format::Json) events.push_back(event_json(p, s, i, instruction, vt));
        else t.rows.push_back({std::to_string(i + 1), instruction, target.empty() ? text : target + " = " + text});
    }
    add_worker_column(p, tr, t);
    return finish_trace(p, tr, options, t, std::move(events), vt.names ? vt.names->legend() : Legend{}, json());
}

}  // namespace

std::string format_trace(const Program& p, const Trace& tr, const TraceOptions& options) {
    ValueText vt{tr, std::nullopt, p.has_tiles()};
    if (tr.symbolic) vt.names.emplace(tr.arena, p, shown_symbols(tr));
    if (p.has_tiles()) return format_tile_trace(p, tr, options, vt);

    // Column per register the run used; cells hold the register's value after each step, in
    // the register file of the worker that ran it (each worker has its own: at the start of a
    // parallel loop every worker's is worker 0's).
    std::map<int, size_t> column;
    for (size_t i = 0; i < tr.registers_used.size(); ++i) column[tr.registers_used[i]] = i;
    std::vector<std::vector<std::string>> files(static_cast<size_t>(p.workers), std::vector<std::string>(tr.registers_used.size()));
    std::uint32_t grid_seen = 0;
    std::vector<std::string> shown;  // the row above
    // Step counts instructions from 1; with the seed's costs (1 cycle each) it is also the
    // cycle. When a program sets other costs, a Cycle column shows when each step finishes.
    size_t first_register = unit_costs(p) ? 2 : 3;
    Table t = step_table(p, tr.registers_used);
    json events = json::array();
    for (size_t i = 0; i < tr.steps.size(); ++i) {
        const TraceStep& s = tr.steps[i];
        if (s.grid != 0 && s.grid != grid_seen) {
            grid_seen = s.grid;
            for (auto& file : files) file = files[0];
        }
        std::vector<std::string>& current = files[std::min<size_t>(s.worker, files.size() - 1)];
        std::vector<std::string> previous = shown.empty() ? current : shown;
        if (auto col = column.find(s.reg); s.reg >= 0 && col != column.end()) current[col->second] = vt.scalar(s, false);
        shown = current;
        std::string instruction = render_instruction(p, s.pc, s.vars.data());
        if (options.format == Format::Json) {
            json e = event_json(p, s, i, instruction, vt);
            json regs = json::object();  // the whole register row after the step, as the table shows it
            for (size_t c = 0; c < current.size(); ++c)
                if (!current[c].empty()) regs[t.header[c + first_register]] = current[c];
            e["registers"] = regs;
            events.push_back(std::move(e));
            continue;
        }
        std::vector<std::string> cells;
        for (size_t c = 0; c < current.size(); ++c)
            cells.push_back(options.ditto && !current[c].empty() && current[c] == previous[c] && !(s.reg >= 0 && column[s.reg] == c) ? "\""
                                                                                                                                   : current[c]);
        std::vector<std::string> row = step_row(p, i + 1, s.cycle, s.pc, s.vars.data(), std::move(cells));
        t.rows.push_back(std::move(row));
    }
    json registers = json::array();
    for (size_t k = first_register; k < t.header.size(); ++k) registers.push_back(t.header[k]);
    add_worker_column(p, tr, t);
    return finish_trace(p, tr, options, t, std::move(events), vt.names ? vt.names->legend() : Legend{}, std::move(registers));
}

}  // namespace toysim
