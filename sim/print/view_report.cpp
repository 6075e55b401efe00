#include "sim/print/view_report.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "sim/lower/disasm.h"
#include "sim/print/assets.h"
#include "sim/print/expr_format.h"
#include "sim/print/format.h"
#include "sim/print/report.h"
#include "sim/print/trace_text.h"

namespace toysim {

namespace {

using json = nlohmann::ordered_json;

// An array as the viewer draws it: a grid of elements (a scalar: one cell; 1-D: one row; more
// dimensions: rows of the last one).
struct Grid {
    std::int64_t rows = 1, cols = 1;
};

Grid grid_of(const ArrayInfo& a) {
    if (a.dims.empty()) return {1, 1};
    if (a.dims.size() == 1) return {1, a.dims[0]};
    return {a.size / a.dims.back(), a.dims.back()};
}

json array_json(const ArrayInfo& a) {
    Grid g = grid_of(a);
    return {{"name", a.name},
            {"role", role_name(a.role)},
            {"dims", a.dims},
            {"rows", g.rows},
            {"cols", g.cols},
            {"grid_rows", std::min(g.rows, kViewGridSide)},
            {"grid_cols", std::min(g.cols, g.rows == 1 ? kViewRowCells : kViewGridSide)}};
}

// The grid cell that covers element x of `total` along a side of `cells` cells (the viewer's cellOf).
std::int64_t cell_of(std::int64_t x, std::int64_t total, std::int64_t cells) { return ((x + 1) * cells - 1) / total; }

// A tile cell for a heatmap: five significant digits are more than a color shows, and keep
// a page of 60,000 tile writes a few megabytes.
json cell_json(double v) { return std::isfinite(v) ? json(std::stod(fmt::format("{:.5g}", v))) : json(number_text(v)); }

// The elements an access moved, as rectangles of the array's grid (one for every slice the
// programs make; element by element otherwise).
json access_json(const Program& p, const DramAccess& a) {
    const ArrayInfo& info = p.arrays[static_cast<size_t>(a.array)];
    Grid g = grid_of(info);
    const char* kind = access_kind_name(a.kind);
    auto rect = [&](std::int64_t row, std::int64_t col, std::int64_t rows, std::int64_t cols) {
        return json{{"array", a.array}, {"kind", kind}, {"row", row}, {"col", col}, {"rows", rows}, {"cols", cols}};
    };
    std::int64_t first = a.address - info.base, last = a.at(a.rows - 1, a.cols - 1) - info.base;
    std::int64_t r0 = first / g.cols, c0 = first % g.cols, r1 = last / g.cols, c1 = last % g.cols;
    json out = json::array();
    if (r1 >= r0 && c1 >= c0 && (r1 - r0 + 1) * (c1 - c0 + 1) == a.elements()) {
        out.push_back(rect(r0, c0, r1 - r0 + 1, c1 - c0 + 1));
    } else {
        for (std::int64_t i = 0; i < a.rows; ++i)
            for (std::int64_t j = 0; j < a.cols; ++j) {
                std::int64_t element = a.at(i, j) - info.base;
                out.push_back(rect(element / g.cols, element % g.cols, 1, 1));
            }
    }
    return out;
}

// The fault a run ends on, where it is.
json fault_json(const std::optional<ToyError>& fault) {
    if (!fault) return nullptr;
    return {{"message", fault->what()}, {"line", fault->loc().line}, {"col", fault->loc().col}};
}

template <class Value, class Text, class Cell>
json build(const Program& p, const Recording<Value>& r, bool symbolic, const Text& text, const Cell& cell,
           const std::vector<std::pair<std::string, std::string>>& legend) {
    json j;
    j["format"] = "toysim-view-1";
    j["program"] = p.source ? p.source->path : std::string();
    j["params"] = json::array();
    for (const auto& [name, value] : p.params) j["params"].push_back({name, value});
    j["values"] = symbolic ? "symbolic" : "numeric";
    j["source"] = json::array();
    if (p.source)
        for (const auto& line : p.source->lines) j["source"].push_back(std::string(line));
    // Registers: the whole file when it is small, else those the run wrote.
    std::vector<bool> written(static_cast<size_t>(p.scalar_registers));
    for (const auto& s : r.steps)
        if (s.reg >= 0) written[static_cast<size_t>(s.reg)] = true;
    std::vector<int> index(static_cast<size_t>(p.scalar_registers), -1);
    j["registers"] = json::array();
    for (int reg = 0; reg < p.scalar_registers; ++reg)
        if (p.scalar_registers <= kShownRegisters || written[static_cast<size_t>(reg)]) {
            index[static_cast<size_t>(reg)] = static_cast<int>(j["registers"].size());
            j["registers"].push_back("R" + std::to_string(reg));
        }
    j["tiles"] = json::array();
    for (const auto& t : p.tiles) j["tiles"].push_back({{"name", t.name}, {"rows", t.rows}, {"cols", t.cols}});
    if (p.workers > 1) {
        j["workers"] = p.workers;
        j["worker_word"] = worker_word(p);  // "device" where they are a program's devices
    }
    j["arrays"] = json::array();
    for (const auto& a : p.arrays) j["arrays"].push_back(array_json(a));
    std::vector<CounterRef> counters = counters_of(p);
    // The viewer replays the machine's own counters; the cache's are `toysim run`'s.
    // busiest_link is the most of the links' counts, which no step's delta gives.
    std::erase_if(counters, [](const CounterRef& c) { return is_cache_counter(c.kind) || c.kind == CounterKind::BusiestLink; });
    j["counters"] = json::array();
    for (const auto& c : counters) j["counters"].push_back(p.counter_name(c));

    json steps = json::array();
    for (const auto& s : r.steps) {
        const ast::Instruction* origin = p.origin[static_cast<size_t>(s.pc)];
        json e = {{"cycle", s.cycle}, {"line", origin ? origin->loc.line : 0}, {"text", render_instruction(p, s.pc, s.vars.data())}};
        if (p.workers > 1) e["worker"] = s.worker;
        if (p.workers > 1 && s.grid) e["grid"] = s.grid;
        if (p.workers > 1) {
            e["makespan"] = s.makespan;
            e["clock"] = s.clock;
        }
        if (s.reg >= 0 && index[static_cast<size_t>(s.reg)] >= 0) {
            e["reg"] = index[static_cast<size_t>(s.reg)];
            e["value"] = text(s.value);
        }
        if (s.tile >= 0) {
            e["tile"] = s.tile;
            e["shape"] = {s.rows, s.cols};
            json block = json::array();
            for (std::int32_t i = 0; i < s.pool_rows; ++i) {
                json row = json::array();
                for (std::int32_t c = 0; c < s.pool_cols; ++c) row.push_back(cell(r.pooled[s.first + static_cast<size_t>(i * s.pool_cols + c)]));
                block.push_back(row);
            }
            e["block"] = block;
        }
        std::vector<DramAccess> accesses;
        if (s.access) {
            accesses.push_back(*s.access);
            e["dram"] = access_json(p, *s.access);
            if (writes_dram(s.op) && s.access->elements() == 1) e["stored"] = text(s.value);
        }
        json deltas = json::array();
        for (const auto& [counter, delta] : counter_deltas(p, s.op, s.cost, s.work, accesses)) {
            auto at = std::find(counters.begin(), counters.end(), counter);
            if (delta && at != counters.end()) deltas.push_back({at - counters.begin(), delta});
        }
        e["c"] = deltas;
        steps.push_back(std::move(e));
    }
    j["steps"] = std::move(steps);
    j["legend"] = json::array();
    for (const auto& [name, definition] : legend) j["legend"].push_back({name, definition});
    j["end"] = {{"steps", r.steps.size()}, {"cycles", r.steps.empty() ? 0 : r.steps.back().cycle}, {"complete", !r.fault}, {"fault", fault_json(r.fault)}};
    return j;
}

}  // namespace

json view_json(const Program& p, const Recording<double>& r) {
    auto text = [&](double v) { return p.has_tiles() ? tile_number(v) : number_text(v); };
    return build(p, r, false, text, cell_json, {});
}

json view_json(const Program& p, const Recording<std::uint32_t>& r, const ExprArena& arena) {
    // Named once over everything the page can show, as the whole trace names them.
    std::vector<std::uint32_t> shown(r.pooled.begin(), r.pooled.end());
    for (const auto& s : r.steps)
        if (s.reg >= 0 || (writes_dram(s.op) && s.access && s.access->elements() == 1)) shown.push_back(s.value);
    ExprFormatter names(arena, p, shown);
    auto text = [&](std::uint32_t id) { return names.cell(id); };
    auto cell = [&](std::uint32_t id) { return json(names.cell(id)); };
    return build(p, r, true, text, cell, names.legend());
}

template <class Domain>
json view_state_json(const Session<Domain>& session, const StepStyle& style) {
    const Program& p = session.program();
    const auto& st = session.state();
    const auto* e = session.last_event();
    using Value = typename Domain::Value;
    auto text = [&](const Value& v) { return step_value_text(p, v, style); };
    auto cell = [&](const Value& v) {
        if constexpr (std::is_same_v<Value, double>) return cell_json(v);
        else return json(text(v));
    };
    auto line_at = [&](std::int32_t pc) {
        const ast::Instruction* origin = static_cast<size_t>(pc) < p.origin.size() ? p.origin[static_cast<size_t>(pc)] : nullptr;
        return origin ? origin->loc.line : 0;
    };
    json j;
    j["line"] = e ? line_at(e->pc) : st.halted ? 0 : line_at(st.pc);
    j["next"] = !e;
    j["registers"] = json::array();
    j["values"] = json::array();
    j["reg"] = nullptr;
    for (int r : shown_registers(session)) {
        if (e && e->reg == r) j["reg"] = j["registers"].size();
        j["registers"].push_back(fmt::format("R{}", r));
        j["values"].push_back(st.written[static_cast<size_t>(r)] ? text(st.regs[static_cast<size_t>(r)]) : "");
    }
    auto block_json = [&](const Value* values, std::int64_t stride, std::int64_t rows, std::int64_t cols) {
        std::int64_t pr = std::min(rows, kMaxPoolSide), pc = std::min(cols, kMaxPoolSide);
        std::vector<Value> pooled;
        pool_block(values, stride, rows, cols, pr, pc, pooled);
        json block = json::array();
        for (std::int64_t i = 0; i < pr; ++i) {
            json row = json::array();
            for (std::int64_t c = 0; c < pc; ++c) row.push_back(cell(pooled[static_cast<size_t>(i * pc + c)]));
            block.push_back(std::move(row));
        }
        return block;
    };
    j["tiles"] = json::array();
    j["tile"] = e && e->tile >= 0 ? json(e->tile) : json(nullptr);
    for (size_t k = 0; k < p.tiles.size(); ++k) {
        const Tile& t = p.tiles[k];
        std::int64_t rows = st.tile_rows[k], cols = st.tile_cols[k];
        json tile = {{"name", t.name}, {"rows", t.rows}, {"cols", t.cols}, {"shape", nullptr}};
        if (rows > 0) {
            tile["shape"] = {rows, cols};
            tile["block"] = block_json(st.tiles.data() + t.base, t.cols, rows, cols);
        }
        // The block before the step, for the heatmap to outline what changed (only where the
        // whole block held values before, at this shape).
        if (e && e->tile == static_cast<std::int32_t>(k) && e->old_rows == rows && e->old_cols == cols &&
            std::all_of(e->tile_was_touched.begin(), e->tile_was_touched.end(), [](std::uint8_t b) { return b != 0; }))
            tile["old"] = block_json(e->tile_old.data(), cols, rows, cols);
        j["tiles"].push_back(std::move(tile));
    }
    j["arrays"] = json::array();
    j["cells"] = json::array();
    for (const auto& a : p.arrays) {
        json info = array_json(a);
        Grid g = grid_of(a);
        std::int64_t gr = info["grid_rows"], gc = info["grid_cols"];
        std::vector<std::uint64_t> reads(static_cast<size_t>(gr * gc)), written(reads.size());
        for (std::int64_t x = 0; x < a.size; ++x) {
            auto at = static_cast<size_t>(a.base + x);
            auto c = static_cast<size_t>(cell_of(x / g.cols, g.rows, gr) * gc + cell_of(x % g.cols, g.cols, gc));
            reads[c] += st.reads[at];
            // An input holds its values from the start: only a store makes an element "written".
            written[c] += a.role != ast::Role::Input && st.present[at];
        }
        j["arrays"].push_back(std::move(info));
        j["cells"].push_back({{"reads", reads}, {"written", written}});
    }
    j["dram"] = json::array();
    if (e)
        for (const DramAccess& access : e->accesses)
            for (auto& rect : access_json(p, access)) j["dram"].push_back(std::move(rect));
    j["fault"] = fault_json(session.fault());
    return j;
}
template json view_state_json(const Session<NumericDomain>&, const StepStyle&);
template json view_state_json(const Session<SymbolicDomain>&, const StepStyle&);

std::string view_html(const json& data) {
    std::string page(viewer_template());
    // In a <script> element nothing may read as "</script>": every '<' of the data is escaped.
    std::string payload = data.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string escaped;
    escaped.reserve(payload.size());
    for (char ch : payload) {
        if (ch == '<') escaped += "\\u003c";
        else escaped += ch;
    }
    auto put = [&](std::string_view placeholder, std::string_view with) {
        size_t at = page.find(placeholder);
        if (at != std::string::npos) page.replace(at, placeholder.size(), with);
    };
    // The data last: a program's text could hold a placeholder's words.
    put("/*TOYSIM_MACHINE_JS*/", machine_js());
    put("/*TOYSIM_CHART_JS*/", chart_js());
    put("/*TOYSIM_DATA*/", escaped);
    return page;
}

}  // namespace toysim
