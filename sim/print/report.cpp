#include "sim/print/report.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "support/text.h"

namespace toysim {

namespace {



// JSON has no infinity: an unbounded error is written as null.
nlohmann::ordered_json json_number(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); }

}  // namespace

std::string format_params(const Program& p) {
    if (p.params.empty()) return "none";
    std::string out;
    for (const auto& [name, value] : p.params) out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", name, value);
    return out;
}

std::string counter_text(const CounterValue& v) { return v.is_ratio ? number_text(v.ratio) : std::to_string(v.count); }

nlohmann::ordered_json cache_json(const ProgramCache& cache) {
    const CacheConfig& c = cache.config;
    return {{"text", cache.text},          {"size_bytes", c.size_bytes}, {"line_bytes", c.line_bytes},
            {"sector_bytes", c.sector_bytes}, {"ways", c.ways},         {"fill_bytes", c.fill_bytes ? c.fill_bytes : c.sector_bytes},
            {"index", c.hashed_index ? "hash" : "mod"}, {"dirty_limit_bytes", c.dirty_limit_bytes}, {"dirty_ways", c.dirty_ways},
            {"element_bytes", cache.element_bytes},
            {"array_alignment_bytes", kCacheArrayAlignment}};
}

nlohmann::ordered_json cache_counters_json(const Program& p, const CacheCounts& counts) {
    using json = nlohmann::ordered_json;
    Counters c;
    c.cache = counts;
    json k = json::object();
    for (const auto& row : all_counters()) {
        if (!is_cache_counter(row.kind)) continue;
        auto put = [&](const CounterRef& ref) {
            CounterValue v = c.value(ref);
            k[json::json_pointer(p.counter_json(ref))] = v.is_ratio ? json(v.ratio) : json(v.count);
        };
        if (row.scope == CounterScope::Run) put({row.kind});
        if (row.scope == CounterScope::PerArray)
            for (size_t a = 0; a < p.arrays.size(); ++a)
                if (row.kind != CounterKind::ArrayCacheDramWritten || p.arrays[a].role != ast::Role::Input) put({row.kind, Op::LOAD, static_cast<int>(a)});
    }
    k["l2"]["cache"] = cache_json(*p.cache);
    return k["l2"];
}

std::string format_cached_count(const Program& p, const CachedCount& c, const CachedCountOptions& o, Format format) {
    const std::int64_t workers = o.workers ? o.workers : p.workers;
    if (format == Format::Json) {
        nlohmann::ordered_json j;
        j["program"] = p.source ? p.source->path : "";
        j["params"] = nlohmann::ordered_json::object();
        for (const auto& [name, value] : p.params) j["params"][name] = value;
        j["heads"] = o.heads;
        j["workers"] = workers;
        j["instructions"] = c.instructions;
        j["cycles"] = c.cycles;
        j["counters"]["l2"] = cache_counters_json(p, c.counts);
        return j.dump(2) + "\n";
    }
    std::string out = fmt::format("through the cache, counted without running the arithmetic: {} on {} worker{}, {} instructions, "
                                  "{} cycles (the makespan)\n",
                                  o.heads == 1 ? std::string("1 head") : fmt::format("{} heads", o.heads), workers,
                                  workers == 1 ? "" : "s", c.instructions, c.cycles);
    return out + format_cache_counts(p, c.counts, format);
}

std::string cache_summary(const ProgramCache& cache) {
    const CacheConfig& c = cache.config;
    std::string dirty;
    if (c.dirty_limit_bytes) dirty += fmt::format(", at most {} B of lines dirty", c.dirty_limit_bytes);
    if (c.dirty_ways && c.dirty_ways < c.ways) dirty += fmt::format(", dirty lines written back past the {} newest of a set", c.dirty_ways);
    return fmt::format("{}: {} B, {}-byte lines of {}-byte sectors, {} way{}, {} sets ({} index), {}-byte fills{}; {} bytes an element",
                       cache.text, c.size_bytes, c.line_bytes, c.sector_bytes, c.ways, c.ways == 1 ? "" : "s", c.sets(),
                       c.hashed_index ? "hashed" : "line number mod sets", c.fill_bytes ? c.fill_bytes : c.sector_bytes, dirty,
                       cache.element_bytes);
}

std::string format_cache_counts(const Program& p, const CacheCounts& counts, Format format) {
    Table t{{"array", "L2 hits", "L2 misses", "hit rate", "DRAM bytes read", "DRAM bytes written"}, {false, true, true, true, true, true}, {}};
    auto row = [&](std::string name, const CacheStats& s) {
        const std::uint64_t hits = s.hits(), misses = s.misses();
        t.rows.push_back({std::move(name), std::to_string(hits), std::to_string(misses),
                          hits + misses ? fmt::format("{:.1f}%", 100.0 * static_cast<double>(hits) / static_cast<double>(hits + misses)) : "-",
                          std::to_string(s.dram_read_bytes), std::to_string(s.dram_write_bytes)});
    };
    for (size_t a = 0; a < p.arrays.size(); ++a) row(p.arrays[a].name, counts.arrays[a]);
    row("total", counts.total);
    std::string out = fmt::format("cache {}\n", cache_summary(*p.cache));
    out += render_table(t, format);
    out += fmt::format("hits and misses are {}-byte sectors; {} bytes are still dirty in the cache at the end (not in DRAM bytes "
                       "written, as a GPU launch's DRAM writes leave them out)\n",
                       p.cache->config.sector_bytes, counts.dirty_bytes);
    return out;
}

std::vector<CounterRow> counter_rows(const Program& p, const Counters& c, const OpcodeSet* shown) {
    std::vector<CounterRow> rows;
    for (const CounterRef& ref : counters_of(p, shown))
        if (c.cache || !is_cache_counter(ref.kind)) rows.push_back({ref, p.counter_name(ref), c.value(ref)});  // the stepper runs no cache
    return rows;
}

std::vector<LinkCount> link_counts(const Program& p, const Counters& c) {
    std::vector<LinkCount> out;
    for (size_t link = 0; link < c.link_elements.size(); ++link)
        if (c.link_elements[link])
            out.push_back({static_cast<std::int64_t>(link) / p.devices, static_cast<std::int64_t>(link) % p.devices, c.link_elements[link]});
    return out;
}

std::string format_links(const Program& p, const Counters& c, Format format) {
    Table t{{"link", "elements", "cycles busy"}, {false, true, true}, {}};
    for (const LinkCount& l : link_counts(p, c))
        t.rows.push_back({fmt::format("device {} → {}", l.from, l.to), std::to_string(l.elements),
                          std::to_string(l.elements * static_cast<std::uint64_t>(p.link_cycles))});
    std::string out = fmt::format("{} devices{}, a link {} cycle{} an element and {} of latency\n", p.devices, p.ring ? " in a ring" : ", every pair linked",
                                  p.link_cycles, p.link_cycles == 1 ? "" : "s", plural(static_cast<std::uint64_t>(p.link_latency), "cycle"));
    if (t.rows.empty()) return out + "no link carried anything\n";
    return out + render_table(t, format);
}

nlohmann::ordered_json counters_json(const Program& p, const Counters& c) {
    using json = nlohmann::ordered_json;
    json k = json::object();
    // Every counter at its path, every opcode zeros included: a stable schema for graders.
    for (const auto& row : all_counters()) {
        auto put = [&](const CounterRef& ref) {
            CounterValue v = c.value(ref);
            k[json::json_pointer(p.counter_json(ref))] = v.is_ratio ? json(v.ratio) : json(v.count);
        };
        // (Work and utilization only on a machine of more than one worker: with one, the JSON
        // is what it was before workers existed.)
        bool workers_only = row.kind == CounterKind::TotalWork || row.kind == CounterKind::Utilization;
        if (is_cache_counter(row.kind)) continue;  // under "l2", below
        if (is_link_counter(row.kind) && !p.devices) continue;  // (and SEND, RECV: the JSON of a program without devices is as before them)
        if (row.scope == CounterScope::Run && (!workers_only || p.workers > 1)) put({row.kind});
        if (row.scope == CounterScope::PerOpcode)
            for (const auto& op : all_ops())
                if (p.devices || !is_transfer(op.op)) put({row.kind, op.op});
    }
    if (p.devices) {
        json links = json::array();
        for (const LinkCount& l : link_counts(p, c)) links.push_back({{"from", l.from}, {"to", l.to}, {"elements", l.elements}});
        k["links"]["per_link"] = links;
        k["links"]["arrays"] = json::object();
        for (size_t a = 0; a < p.arrays.size(); ++a) k["links"]["arrays"][p.arrays[a].name]["sent"] = c.arrays[a].sent;
    }
    if (p.workers > 1) {
        k["workers"]["count"] = p.workers;
        k["workers"]["busy"] = c.busy;
    }
    if (c.cache && p.cache) k["l2"] = cache_counters_json(p, *c.cache);
    k["dram"]["arrays"] = json::object();
    for (size_t a = 0; a < p.arrays.size(); ++a) {
        const ArrayStats& s = c.arrays[a];
        json& arr = k["dram"]["arrays"][p.arrays[a].name];
        arr["role"] = role_name(p.arrays[a].role);
        arr["shape"] = p.arrays[a].dims;
        arr["elements"] = p.arrays[a].size;
        arr["reads"] = s.reads;
        arr["writes"] = s.writes;
        arr["elements_read"] = s.elements_read;
        arr["max_reads_per_element"] = s.max_reads;
        json hist = json::object();
        for (const auto& [reads, count] : s.read_histogram) hist[std::to_string(reads)] = count;
        arr["reads_per_element_histogram"] = hist;
    }
    return k;
}

namespace {
// The fault that ended a run early, for JSON: where and what.
nlohmann::ordered_json fault_json(const Program& p, const std::optional<ToyError>& fault) {
    if (!fault) return nullptr;
    const Loc& loc = fault->loc();
    return {{"message", fault->what()},
            {"file", p.source ? p.source->path : std::string()},
            {"line", loc.line},
            {"col", loc.col}};
}

std::string expected_text(const ExpectSpec& e) {
    return e.relation == Relation::Equal ? std::to_string(e.value) : fmt::format("{} {}", relation_text(e.relation), e.value);
}
}  // namespace

nlohmann::ordered_json run_json(const Program& p, const RunResult& r, bool stats) {
    using json = nlohmann::ordered_json;
    const Counters& c = r.counters;
    json j;
    j["program"] = p.source->path;
    j["params"] = json::object();
    for (const auto& [name, value] : p.params) j["params"][name] = value;
    j["machine"]["registers"] = p.registers;
    for (const auto& row : all_ops())
        if (p.devices || !is_transfer(row.op)) j["machine"]["cycle_costs"][std::string(row.mnemonic)] = p.cycles[static_cast<size_t>(row.op)];
    if (p.devices)
        j["machine"]["devices"] = {{"count", p.devices}, {"topology", p.ring ? "ring" : "all"}, {"link_cycles", p.link_cycles},
                                   {"link_latency", p.link_latency}};
    j["ok"] = r.checks_ok() && r.expects_ok();
    j["fault"] = fault_json(p, r.fault);
    j["counters"] = counters_json(p, c);
    json checks = json::array();
    double max_abs = 0, max_rel = 0;
    for (size_t i = 0; i < r.checks.size(); ++i) {
        const CheckResult& cr = r.checks[i];
        checks.push_back({{"check", p.checks[i].text},
                          {"ok", cr.ok},
                          {"elements", cr.elements},
                          {"max_abs_err", json_number(cr.max_abs_err)},
                          {"max_rel_err", json_number(cr.max_rel_err)},
                          {"first_wrong", cr.ok ? json(nullptr) : json(cr.first_wrong)}});
        max_abs = std::max(max_abs, cr.max_abs_err);
        max_rel = std::max(max_rel, cr.max_rel_err);
    }
    j["check"] = {{"ok", r.checks_ok()}, {"max_abs_err", json_number(max_abs)}, {"max_rel_err", json_number(max_rel)}, {"checks", checks}};
    json expects = json::array();
    for (size_t i = 0; i < r.expects.size(); ++i)
        expects.push_back({{"counter", p.expects[i].text},
                           {"relation", relation_text(p.expects[i].relation)},
                           {"expected", p.expects[i].value},
                           {"actual", r.expects[i].actual},
                           {"ok", r.expects[i].ok}});
    j["expect"] = {{"ok", r.expects_ok()}, {"figures", expects}};
    if (stats) {
        j["stats"]["seconds"] = r.seconds;
        j["stats"]["instructions_per_second"] = r.seconds > 0 ? static_cast<double>(c.instructions) / r.seconds : 0.0;
    }
    return j;
}

std::string format_run(const Program& p, const RunResult& r, Format format, bool stats) {
    if (format == Format::Json) return json_text(run_json(p, r, stats));
    const Counters& c = r.counters;
    if (format == Format::Csv) {
        Table t{{"counter", "value"}, {false, true}, {}};
        t.rows.push_back({"register_file", std::to_string(p.registers)});
        for (const auto& row : counter_rows(p, c)) t.rows.push_back({row.name, counter_text(row.value)});
        for (size_t i = 0; i < r.checks.size(); ++i) t.rows.push_back({fmt::format("check {}", p.checks[i].text), r.checks[i].ok ? "ok" : "FAILED"});
        for (size_t i = 0; i < r.expects.size(); ++i)
            t.rows.push_back({fmt::format("expect {} {} {}", p.expects[i].text, relation_text(p.expects[i].relation), p.expects[i].value),
                              r.expects[i].ok ? "ok" : "MISMATCH"});
        if (stats) t.rows.push_back({"instructions_per_second", fmt::format("{:.0f}", r.seconds > 0 ? static_cast<double>(c.instructions) / r.seconds : 0.0)});
        return render_table(t, format);
    }
    std::string out;
    out += fmt::format("program: {}   registers: {}   params: {}\n\n", p.source->path, p.registers, format_params(p));
    Table checks{{"check", "result", "elements", "max abs err", "max rel err"}, {false, false, true, true, true}, {}};
    for (size_t i = 0; i < r.checks.size(); ++i) {
        const CheckResult& cr = r.checks[i];
        checks.rows.push_back({p.checks[i].text, cr.ok ? "ok" : "FAILED: " + cr.first_wrong, std::to_string(cr.elements),
                               number_text(cr.max_abs_err), number_text(cr.max_rel_err)});
    }
    if (checks.rows.empty()) checks.rows.push_back({"(the program declares no check)", "", "", "", ""});
    out += render_table(checks, format) + "\n";
    if (!r.expects.empty()) {
        Table expects{{"expected figure", "expected", "actual", "result"}, {false, true, true, false}, {}};
        for (size_t i = 0; i < r.expects.size(); ++i)
            expects.rows.push_back({p.expects[i].text, expected_text(p.expects[i]), std::to_string(r.expects[i].actual),
                                    r.expects[i].ok ? "ok" : "MISMATCH"});
        out += render_table(expects, format) + "\n";
    }
    // The counters a reader scans first, labelled by the counter table.
    Table counters{{"counter", "value"}, {false, true}, {}};
    for (const auto& row : counter_rows(p, c)) {
        switch (row.counter.kind) {
            case CounterKind::Cycles:
            case CounterKind::Instructions:
            case CounterKind::Opcode:
            case CounterKind::Reads:
            case CounterKind::Writes:
            case CounterKind::ArithmeticIntensity:
            case CounterKind::TotalWork:
            case CounterKind::Utilization:
                counters.rows.push_back({p.counter_label(row.counter), counter_text(row.value)});
                break;
            case CounterKind::Registers:
                counters.rows.push_back({p.counter_label(row.counter), fmt::format("{} of {}", row.value.count, p.registers)});
                break;
            default: break;
        }
    }
    out += render_table(counters, format) + "\n";
    if (p.has_tiles()) {
        // The cost model: each opcode's cycles are its cost per unit times its units of work.
        Table work{{"opcode", "instructions", "work", "unit", "cycles/unit", "cycles"}, {false, true, true, false, true, true}, {}};
        for (const auto& row : all_ops()) {
            if (!p.uses(row.op)) continue;
            auto i = static_cast<size_t>(row.op);
            work.rows.push_back({std::string(row.mnemonic), std::to_string(c.by_opcode[i]), std::to_string(c.work_by_opcode[i]),
                                 std::string(row.unit), std::to_string(p.cycles[i]),
                                 std::to_string(c.work_by_opcode[i] * static_cast<std::uint64_t>(p.cycles[i]))});
        }
        out += render_table(work, format) + "\n";
    }
    Table arrays{{"array", "role", "shape", "reads", "writes", "elements read", "max reads/element"},
                 {false, false, false, true, true, true, true}, {}};
    for (size_t a = 0; a < p.arrays.size(); ++a) {
        const ArrayInfo& info = p.arrays[a];
        const ArrayStats& s = c.arrays[a];
        std::string shape = info.dims.empty() ? "scalar" : fmt::format("{}", fmt::join(info.dims, "×"));
        arrays.rows.push_back({info.name, role_name(info.role), shape, std::to_string(s.reads), std::to_string(s.writes),
                               fmt::format("{} of {}", s.elements_read, info.size), std::to_string(s.max_reads)});
    }
    out += render_table(arrays, format);
    if (p.devices) out += "\n" + format_links(p, c, format);
    if (c.cache && p.cache) out += "\n" + format_cache_counts(p, *c.cache, format);
    if (stats) {
        double rate = r.seconds > 0 ? static_cast<double>(c.instructions) / r.seconds : 0.0;
        // A tile program runs few instructions, each a lot of work: its rate may be far under 0.1 M/s.
        std::string rate_text = rate >= 1e5 ? fmt::format("{:.1f} M instructions/s", rate / 1e6) : fmt::format("{:.0f} instructions/s", rate);
        out += fmt::format("\nspeed: {} instructions in {:.3f} s = {}\n", c.instructions, r.seconds, rate_text);
        if (p.has_tiles()) {
            // A tile instruction is many units of work: the rate that says how fast tiles run.
            std::uint64_t units = 0, multiply_adds = 0;
            for (const auto& row : all_ops())
                if (row.shape == OpShape::Product) multiply_adds += c.work_by_opcode[static_cast<size_t>(row.op)];
            for (auto w : c.work_by_opcode) units += w;
            double seconds = r.seconds > 0 ? r.seconds : 1e-9;
            out += fmt::format("       {} units of work ({} multiply-adds) = {:.2f} G units/s, {:.2f} GFLOP/s in MAC and MAC_Z\n", units,
                               multiply_adds, static_cast<double>(units) / seconds / 1e9, 2.0 * static_cast<double>(multiply_adds) / seconds / 1e9);
        }
    }
    return out;
}

std::string format_array(const Program& p, const RunResult& r, int array) {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(array)];
    std::vector<double> values = r.array_values(p, array);
    // "—" marks an element never written; NaN and infinities print as themselves.
    std::int64_t cols = a.dims.empty() ? 1 : a.dims.back();
    std::vector<std::string> cells;
    int width = 0;
    for (double v : values) {
        auto at = static_cast<size_t>(a.base + static_cast<std::int64_t>(cells.size()));
        bool written = at < r.present.size() && r.present[at];
        cells.push_back(!written ? "—" : std::isfinite(v) ? fmt::format("{:.4f}", v == 0 ? 0.0 : v) : number_text(v));
        width = std::max(width, display_width(cells.back()));
    }
    std::string shape = a.dims.empty() ? "one element" : fmt::format("{}", fmt::join(a.dims, "×"));
    std::string out = fmt::format("{} ({}):\n", a.name, shape);
    for (size_t i = 0; i < cells.size(); ++i) {
        out += (i % static_cast<size_t>(cols) == 0 ? "  " : "  ") + pad_left(cells[i], width);
        if ((i + 1) % static_cast<size_t>(cols) == 0) out += "\n";
    }
    return out;
}

std::string format_compare(const std::vector<std::string>& names, const std::vector<const Program*>& programs,
                           const std::vector<const RunResult*>& results, Format format) {
    // Rows: the union of every program's counters, in first-seen order; "—" where absent.
    std::vector<std::string> keys;
    std::vector<std::map<std::string, std::string>> values;
    OpcodeSet used{};  // an opcode any of them uses is a row for all of them
    for (const Program* p : programs) {
        OpcodeSet own = opcodes_used(*p);
        for (size_t k = 0; k < used.size(); ++k) used[k] = used[k] || own[k];
    }
    auto add = [&](std::map<std::string, std::string>& v, const std::string& key, std::string value) {
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
        v[key] = std::move(value);
    };
    for (size_t i = 0; i < programs.size(); ++i) {
        std::map<std::string, std::string> v;
        const RunResult& r = *results[i];
        add(v, "register_file", std::to_string(programs[i]->registers));
        for (const auto& row : counter_rows(*programs[i], r.counters, &used)) add(v, row.name, counter_text(row.value));
        v["check"] = r.fault ? "FAULT" : r.checks.empty() ? "none" : r.checks_ok() ? "ok" : "FAILED";
        v["expect"] = r.fault ? "FAULT" : r.expects.empty() ? "none" : r.expects_ok() ? "ok" : "FAILED";
        values.push_back(std::move(v));
    }
    keys.push_back("check");
    keys.push_back("expect");
    if (format == Format::Json) {
        nlohmann::ordered_json j = nlohmann::ordered_json::array();
        for (size_t i = 0; i < programs.size(); ++i) {
            auto entry = run_json(*programs[i], *results[i], false);
            entry["name"] = names[i];
            j.push_back(entry);
        }
        return json_text(j);
    }
    Table t;
    t.header = {"counter"};
    t.right_aligned = {false};
    for (const auto& n : names) {
        t.header.push_back(n);
        t.right_aligned.push_back(true);
    }
    for (const auto& key : keys) {
        std::vector<std::string> row = {key};
        for (const auto& v : values) row.push_back(v.count(key) ? v.at(key) : "—");
        t.rows.push_back(std::move(row));
    }
    return render_table(t, format);
}

}  // namespace toysim
