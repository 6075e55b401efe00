// Printing `toysim cost`: the per-array formulas, their values and the counted figures, as a
// table, Markdown, CSV or JSON.
#include "sim/print/cost_report.h"

#include <fmt/format.h>

#include "sim/print/report.h"

namespace toysim {

namespace {

std::string value_cell(const std::optional<std::int64_t>& value, std::uint64_t counted) {
    if (value && *value >= 0 && static_cast<std::uint64_t>(*value) == counted) return std::to_string(counted);
    return fmt::format("{} (counted {}) *", value ? std::to_string(*value) : "?", counted);
}


// The lets' legend covers the time formulas too.
std::vector<ArrayFormulas> with_time(std::vector<ArrayFormulas> formulas, const TimeFormulas* time) {
    if (!time) return formulas;
    formulas.push_back(ArrayFormulas{time->work, time->cycles, true, {}});
    for (const GridTime& g : time->grids) formulas.push_back(ArrayFormulas{g.iterations, g.iteration_cycles, true, {}});
    return formulas;
}

std::string value_text(const Program& p, const Formula& f) {
    auto v = f.evaluate(p.params);
    return v ? std::to_string(*v) : std::string("?");
}

// "work = ... = N" and "cycles = ... = N" lines, then each grid's iterations.
std::string time_text(const Program& p, const TimeFormulas& t, const std::vector<RaceProof>& races, bool md) {
    std::string out = "\n";
    const bool exact_here = t.exact_at(p.params);
    const char* mark = exact_here ? "" : " *";
    out += fmt::format("{}work   = {} = {}{}   (the cycles of every instruction: `cycles` on one worker)\n", md ? "- " : "", t.work.text(),
                       value_text(p, t.work), mark);
    if (p.devices)  // the links' waits depend on when each SEND and RECV runs: only a run has them
        out += fmt::format("{}cycles ≥ {} = {}{}   (the busiest of {} device{}; what its RECVs wait for comes on top: `toysim run` counts it)\n",
                           md ? "- " : "", t.cycles.text(), value_text(p, t.cycles), mark, p.devices, p.devices == 1 ? "" : "s");
    else
        out += fmt::format("{}cycles = {} = {}{}   (the makespan on {} worker{})\n", md ? "- " : "", t.cycles.text(), value_text(p, t.cycles),
                           mark, p.workers, p.workers == 1 ? "" : "s");
    if (!t.exact && exact_here) {
        std::string conditions;
        for (const auto& [width, dim] : t.exact_when) conditions += fmt::format("{}{} divides {}", conditions.empty() ? "" : " and ", width.text(), dim.text());
        out += fmt::format("{}exact at these parameters, where {}; in general {}\n", md ? "- " : "", conditions, t.note);
    } else if (!t.exact) {
        out += fmt::format("{}* {}\n", md ? "- " : "", t.note);
    }
    for (const GridTime& g : t.grids) {
        if (g.loop < 0) continue;
        const LoopInfo& l = p.loops[static_cast<size_t>(g.loop)];
        std::string verdict;
        for (const RaceProof& r : races)
            if (r.loop == g.loop) verdict = ": " + describe_race_proof(p, r);
        out += fmt::format("\n{}parallel loop over {} (line {}){}\n", md ? "- " : "", l.var, l.loc.line, verdict);
        out += fmt::format("{}  {} = {} iterations of {} = {} cycles{}, handed to the workers in ⌈iterations/workers⌉ rounds\n",
                           md ? "  " : "", g.iterations.text(), value_text(p, g.iterations), g.iteration_cycles.text(),
                           value_text(p, g.iteration_cycles), g.uniform ? " each" : " (the heaviest)");
        if (!g.uniform) out += fmt::format("{}  ({})\n", md ? "  " : "", g.note);
    }
    return out;
}

}  // namespace

nlohmann::ordered_json cost_json(const Program& p, const std::vector<ArrayFormulas>& formulas,
                                 const std::vector<ArrayTraffic>& counted, const std::vector<RaceProof>& races,
                                 const TimeFormulas* time) {
    using json = nlohmann::ordered_json;
    json j;
    j["program"] = p.source ? p.source->path : std::string();
    j["params"] = json::object();
    for (const auto& [name, value] : p.params) j["params"][name] = value;
    j["arrays"] = json::object();
    for (size_t a = 0; a < p.arrays.size() && a < formulas.size() && a < counted.size(); ++a) {
        const ArrayFormulas& f = formulas[a];
        // Each side names its counter as run and expect do: reads(K), writes(O).
        auto side = [&](CounterKind kind, const Formula& x, std::uint64_t n) {
            auto v = x.evaluate(p.params);
            return json{{"counter", p.counter_name({kind, Op::LOAD, static_cast<int>(a)})},
                        {"formula", x.text()},
                        {"value", v ? json(*v) : json(nullptr)},
                        {"counted", n}};
        };
        json& arr = j["arrays"][p.arrays[a].name];
        arr["role"] = role_name(p.arrays[a].role);
        arr["shape"] = p.arrays[a].dims;
        arr["reads"] = side(CounterKind::ArrayReads, f.reads, counted[a].reads);
        arr["writes"] = side(CounterKind::ArrayWrites, f.writes, counted[a].writes);
        arr["exact"] = f.exact;
        arr["note"] = f.exact ? json(nullptr) : json(f.note);
    }
    j["lets"] = json::array();
    for (const auto& l : let_legend(p, with_time(formulas, time)))
        j["lets"].push_back({{"name", l.name}, {"definition", l.definition}, {"math", l.math}, {"value", l.value}});
    j["parallel"] = json::array();
    for (const RaceProof& r : races)
        j["parallel"].push_back({{"line", p.loops[static_cast<size_t>(r.loop)].loc.line},
                                 {"vars", r.vars},
                                 {"proven", r.proven},
                                 {"verdict", describe_race_proof(p, r)}});
    if (time) {
        auto formula = [&](const Formula& f) {
            auto v = f.evaluate(p.params);
            return json{{"formula", f.text()}, {"value", v ? json(*v) : json(nullptr)}};
        };
        json& t = j["time"];
        t["work"] = formula(time->work);
        t["cycles"] = formula(time->cycles);
        // With devices, the busiest device's instructions: what its RECVs wait for comes on top.
        if (p.devices) t["cycles"]["at_least"] = true;
        t["workers"] = p.workers;
        t["exact"] = time->exact;
        t["exact_here"] = time->exact_at(p.params);
        t["note"] = time->exact ? json(nullptr) : json(time->note);
        t["grids"] = json::array();
        for (const GridTime& g : time->grids)
            t["grids"].push_back({{"line", g.loop >= 0 ? p.loops[static_cast<size_t>(g.loop)].loc.line : 0},
                                  {"iterations", formula(g.iterations)},
                                  {"iteration_cycles", formula(g.iteration_cycles)},
                                  {"uniform", g.uniform},
                                  {"note", g.uniform ? json(nullptr) : json(g.note)}});
    }
    return j;
}

std::string format_cost(const Program& p, const std::vector<ArrayFormulas>& formulas, const std::vector<ArrayTraffic>& counted,
                        Format format, const std::vector<RaceProof>& races, const TimeFormulas* time) {
    if (format == Format::Json) return json_text(cost_json(p, formulas, counted, races, time));
    size_t n = std::min({p.arrays.size(), formulas.size(), counted.size()});
    if (format == Format::Csv) {
        Table t{{"array", "reads", "reads_value", "reads_counted", "writes", "writes_value", "writes_counted", "exact", "note"},
                {false, false, true, true, false, true, true, false, false},
                {}};
        for (size_t a = 0; a < n; ++a) {
            const ArrayFormulas& f = formulas[a];
            auto value = [&](const Formula& x) {
                auto v = x.evaluate(p.params);
                return v ? std::to_string(*v) : std::string();
            };
            t.rows.push_back({p.arrays[a].name, f.reads.text(), value(f.reads), std::to_string(counted[a].reads), f.writes.text(),
                              value(f.writes), std::to_string(counted[a].writes), f.exact ? "true" : "false", f.note});
        }
        return render_table(t, format);
    }
    Table t{{"array", "reads", "=", "writes", "="}, {false, false, true, false, true}, {}};
    for (size_t a = 0; a < n; ++a) {
        const ArrayFormulas& f = formulas[a];
        t.rows.push_back({p.arrays[a].name, f.reads.text(), value_cell(f.reads.evaluate(p.params), counted[a].reads),
                          f.writes.text(), value_cell(f.writes.evaluate(p.params), counted[a].writes)});
    }
    bool md = format == Format::Markdown;
    std::string out = fmt::format("program: {}   params: {}\n\n", p.source ? p.source->path : std::string("?"), format_params(p));
    out += render_table(t, format);
    auto lets = let_legend(p, with_time(formulas, time));
    if (!lets.empty()) {
        out += "\n";
        for (const auto& l : lets)
            out += fmt::format("{}{} = {}{} = {}\n", md ? "- " : "", l.name, l.definition, l.math.empty() ? "" : " = " + l.math, l.value);
    }
    bool any_note = false, all_agree = true;
    for (size_t a = 0; a < n; ++a) {
        all_agree = all_agree && formulas[a].reads.evaluate(p.params) == std::optional<std::int64_t>(static_cast<std::int64_t>(counted[a].reads)) &&
                    formulas[a].writes.evaluate(p.params) == std::optional<std::int64_t>(static_cast<std::int64_t>(counted[a].writes));
        if (formulas[a].exact) continue;
        if (!any_note) out += "\n";
        any_note = true;
        out += fmt::format("{}* {}\n", md ? "- " : "", formulas[a].note);
    }
    // Say what the figures rest on: the formulas' values were compared with counting the loops.
    out += all_agree ? "\nEvery value equals the count-only pass over the loops (elements, as `run` counts them).\n"
                     : "\n* where a formula is an estimate, \"counted\" is the exact figure from the count-only pass.\n";
    if (time) return out + time_text(p, *time, races, md);
    if (!races.empty()) out += "\n";
    for (const RaceProof& r : races) {
        std::string vars;
        for (const auto& v : r.vars) vars += (vars.empty() ? "" : ", ") + v;
        out += fmt::format("{}parallel loop over {} (line {}): {}\n", md ? "- " : "", vars, p.loops[static_cast<size_t>(r.loop)].loc.line,
                           describe_race_proof(p, r));
    }
    return out;
}

}  // namespace toysim

namespace toysim {

namespace {

// Each top-level loop's line, in order: the launches of `cost --machine`.
std::vector<int> launch_lines(const Program& p) {
    std::vector<int> lines;
    for (const LoopInfo& l : p.loops)
        if (l.slot == 0) lines.push_back(l.loc.line);
    return lines;
}

}  // namespace

std::string milliseconds_text(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

std::string bound_text(const LaunchTime& time, TimeBound bound) {
    return fmt::format("{} {}", time_bound_key(bound), milliseconds_text(time.each[static_cast<size_t>(bound)]));
}

nlohmann::ordered_json bounds_json(const LaunchTime& time) {
    auto bounds = nlohmann::ordered_json::object();
    for (int b = 0; b < kTimeBoundCount; ++b) bounds[std::string(time_bound_key(static_cast<TimeBound>(b)))] = time.each[static_cast<size_t>(b)];
    return bounds;
}

nlohmann::ordered_json chain_json(const LaunchTime& time) {
    auto parts = nlohmann::ordered_json::object();
    for (int p = 0; p < kChainPartCount; ++p) parts[std::string(chain_part_key(static_cast<ChainPart>(p)))] = time.chain[static_cast<size_t>(p)];
    return parts;
}

std::string chain_text(const LaunchTime& time) {
    std::string out;
    for (int p = 0; p < kChainPartCount; ++p) {
        const double seconds = time.chain[static_cast<size_t>(p)];
        if (seconds > 0) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", chain_part_key(static_cast<ChainPart>(p)), milliseconds_text(seconds));
    }
    return out.empty() ? "nothing" : out;
}

nlohmann::ordered_json program_time_json(const Program& program, const ProgramTime& time, const MachineSpec& machine, std::int64_t heads) {
    using json = nlohmann::ordered_json;
    const Occupancy& o = time.occupancy;
    json launches = json::array();
    const std::vector<int> lines = launch_lines(program);
    for (size_t k = 0; k < time.launches.size(); ++k) {
        const LaunchTime& t = time.launches[k];
        json j{{"launch", k + 1}, {"line", k < lines.size() ? json(lines[k]) : json(nullptr)}};
        if (time.untimed[k] != Untimed::Timed) {
            j["seconds"] = nullptr;
            j["why"] = std::string(untimed_reason(time.untimed[k]));
        } else {
            j["seconds"] = t.seconds;
            j["bound"] = time_bound_key(t.bound);
            j["bounds"] = bounds_json(t);
            j["chain"] = chain_json(t);
            j["tflops"] = t.seconds > 0 ? t.flops / t.seconds / 1e12 : 0.0;
            j["shared_bytes"] = t.shared_bytes;
        }
        launches.push_back(j);
    }
    return json{{"machine", machine.name},
                {"heads", heads},
                {"products", product_unit_name(time.products)},
                {"occupancy", {{"threads", o.threads}, {"shared_bytes", o.shared_bytes}, {"registers_per_thread", o.registers_per_thread},
                               {"resident_blocks_per_sm", o.resident}, {"limit", o.limit}}},
                {"launches", launches},
                {"seconds", time.seconds}};
}

std::string format_program_time(const Program& program, const ProgramTime& time, const MachineSpec& machine, std::int64_t heads, Format format) {
    if (format == Format::Json) return json_text(program_time_json(program, time, machine, heads));
    const Occupancy& o = time.occupancy;
    std::string out = fmt::format(
        "predicted time on machine {} ({} head{}; products on {}): a block of {} threads, {} bytes of shared memory, {} registers a "
        "thread; {} resident an SM ({} stop one more)\n",
        machine.name, heads, heads == 1 ? "" : "s", product_unit_name(time.products), o.threads, o.shared_bytes, o.registers_per_thread,
        o.resident, o.limit);
    Table t{{"launch", "time (predicted)", "TFLOP/s", "bound", "next bound"}, {false, true, true, false, false}, {}};
    const std::vector<int> lines = launch_lines(program);
    for (size_t k = 0; k < time.launches.size(); ++k) {
        const std::string name = k < lines.size() ? fmt::format("line {}", lines[k]) : fmt::format("launch {}", k + 1);
        if (time.untimed[k] != Untimed::Timed) {
            t.rows.push_back({name, "-", "-", std::string(untimed_tag(time.untimed[k])), "-"});
            continue;
        }
        const LaunchTime& p = time.launches[k];
        t.rows.push_back({name, milliseconds_text(p.seconds), p.flops > 0 ? fmt::format("{:.1f}", p.flops / p.seconds / 1e12) : "-",
                          bound_text(p, p.bound), bound_text(p, runner_up(p))});
    }
    out += render_table(t, format);
    // Where each launch's chain goes: what a program's lines change when a schedule changes.
    std::string parts;
    for (size_t k = 0; k < time.launches.size(); ++k)
        if (time.untimed[k] == Untimed::Timed)
            parts += fmt::format("{}{}: {}\n", format == Format::Markdown ? "- " : "  ",
                                 k < lines.size() ? fmt::format("line {}", lines[k]) : fmt::format("launch {}", k + 1), chain_text(time.launches[k]));
    if (!parts.empty()) out += "\nthe chain on the busiest SM, by part (copies overlap the rest):\n" + parts;
    return out;
}

}  // namespace toysim
