#include "sim/app/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "sim/analysis/schedule_search.h"
#include "sim/app/cost.h"
#include "sim/timing/predict.h"
#include "sim/check/run.h"
#include "sim/front/parser.h"
#include "sim/print/report.h"
#include "support/diag.h"
#include "support/parallel.h"

namespace toysim::app {

namespace {

// The program's declarations, as written: what the searched program keeps of it (its arrays,
// parameters and checks; not its registers, instructions, expects or tests).
std::string declarations(const Program& program) {
    std::string out;
    std::istringstream in(program.source->text);
    std::string line;
    while (std::getline(in, line)) {
        std::size_t start = line.find_first_not_of(" \t");
        if (start == std::string::npos) continue;
        std::string_view rest(line);
        rest.remove_prefix(start);
        const std::string_view word = rest.substr(0, rest.find_first_of(" \t["));
        for (std::string_view kept : {"param", "let", "input", "output", "scratch", "check"})
            if (word == kept) out += std::string(rest) + "\n";
    }
    return out;
}

// A step as source text (the program then compiled and traced renders it the one way, disasm).
std::string source_line(const Program& program, const ScheduleStep& s) {
    switch (s.op) {
        case Op::LOAD: return fmt::format("LOAD {}, R{}", program.element_ref_at(s.address), s.regs[0]);
        case Op::STORE: return fmt::format("STORE R{}, {}", s.regs[0], program.element_ref_at(s.address));
        case Op::MAC_Z: return fmt::format("MAC_Z R{}, R{}, R{}", s.regs[0], s.regs[1], s.regs[2]);
        default: return fmt::format("MAC R{}, R{}, R{}, R{}", s.regs[0], s.regs[1], s.regs[2], s.regs[3]);
    }
}

}  // namespace

std::string tune_schedule(const Program& program, const std::string& path, const ScheduleTuneRequest& request, Format format,
                          const Spelling& spelling) {
    const ScheduleProblem problem = schedule_problem(program);
    // The program itself runs first: a fault of its own is its error, reported as a run's.
    const RunResult searched = run_to_verdict(program);
    if (searched.fault) throw *searched.fault;
    const int registers = request.registers > 0 ? request.registers : program.scalar_registers;
    if (registers <= 0) throw ToyError(fmt::format("tune --schedule: the program declares no registers; give {}", spelling.registers));
    const ScheduleSearch found = search_schedule(problem, registers, request.max_states);
    if (!found.found)
        throw ToyError(fmt::format("tune --schedule: no answer within {} states: no program of {} instructions or fewer stores every "
                                   "output, and the search stopped before it settled {} (a smaller program ends sooner)",
                                   request.max_states, found.bound_reached, found.bound_reached + 1));

    std::map<Op, int> counts;
    for (const ScheduleStep& s : found.steps) ++counts[s.op];
    const int cycles = static_cast<int>(found.steps.size());
    int as_written = 0;
    for (std::size_t pc = 0; pc < program.code.size(); ++pc)
        if (is_instruction(program.code[pc].code)) ++as_written;
    std::size_t products = 0;
    for (const auto& o : problem.outputs) products += o.terms.size();
    const std::string proof =
        cycles == found.lower_bound
            ? fmt::format("no program is shorter: {}, {} and {} to load at least once", plural(products, "product"),
                          plural(problem.outputs.size(), "store"), plural(problem.elements.size(), "element"))
            : fmt::format("no program is shorter: every program of {} instructions was searched ({} states), and none stores every output",
                          cycles - 1 == found.lower_bound ? std::to_string(found.lower_bound)
                                                          : fmt::format("{} to {}", found.lower_bound, cycles - 1),
                          found.states);

    // The program: the declarations kept, the registers asked for, the steps, and what they cost.
    std::string text = fmt::format("# {} with {} registers: the shortest program of its products, found by `toysim tune --schedule`.\n"
                                   "# {} cycles; {}.\nregisters {}\n\n{}\n",
                                   path, registers, cycles, proof, registers, declarations(program));
    for (Op op : {Op::LOAD, Op::MAC_Z, Op::MAC, Op::STORE})
        if (counts[op]) text += fmt::format("expect {} = {}\n", info(op).mnemonic, counts[op]);
    text += fmt::format("expect cycles = {}\n\n", cycles);
    for (const ScheduleStep& s : found.steps) text += source_line(program, s) + "\n";

    // Compiled, run and traced: the simulator runs its checks and expects. What fails here is
    // the search's bug, not the user's program (logic_error, not ToyError).
    Program tuned;
    try {
        tuned = compile(std::make_shared<const ast::Program>(parse(std::make_shared<const SourceFile>("<tune>", text))), program.params);
    } catch (const ToyError& e) {
        throw std::logic_error(fmt::format("tune --schedule: the program found does not compile ({}):\n{}", e.what(), text));
    }
    const RunResult mine = run_to_verdict(tuned);
    if (mine.fault || !mine.expects_ok() || (searched.checks_ok() && !mine.checks_ok()))
        throw std::logic_error(fmt::format("tune --schedule: the program found does not compute what the program searched does:\n{}", text));
    const Trace t = trace(tuned, shows_symbols("auto", tuned));

    if (format == Format::Json) {
        nlohmann::ordered_json j;
        j["program"] = path;
        j["registers"] = registers;
        j["cycles"] = cycles;
        j["as_written"] = as_written;
        for (Op op : {Op::LOAD, Op::MAC_Z, Op::MAC, Op::STORE}) j["counts"][std::string(info(op).mnemonic)] = counts[op];
        j["lower_bound"] = found.lower_bound;
        j["minimal"] = true;
        j["proof"] = proof;
        j["states"] = found.states;
        j["source"] = text;
        return json_text(j);
    }
    std::string out = fmt::format("{} with {} registers: {} cycles ({} LOAD, {} MAC_Z, {} MAC, {} STORE); as written, {} cycles\n{}\n\n", path,
                                  registers, cycles, counts[Op::LOAD], counts[Op::MAC_Z], counts[Op::MAC], counts[Op::STORE], as_written, proof);
    out += text + "\n";
    out += format_trace(tuned, t, TraceOptions{format, false});
    return out;
}

namespace {

double objective_of(const TunePoint& p, const std::string& objective) {
    return objective == "dram" ? p.dram_bytes : objective == "cycles" ? static_cast<double>(p.cycles) : p.seconds;
}

std::string settings_text(const ParamSettings& s) {
    std::string out;
    for (const auto& [name, value] : s) out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, value);
    return out;
}

// The objective against the first varied parameter, one curve per combination of the others
// (one curve when only one varies); a point dropped is a gap.
Plot space_plot(const RankedSpace& r) {
    const std::string& objective = r.request.objective;
    Plot plot;
    const std::string& x_name = r.space.front().front().first;
    plot.title = fmt::format("{}: {} by {}", r.path, objective == "time" ? "predicted time" : objective == "dram" ? "DRAM bytes" : "cycles", x_name);
    plot.x_label = x_name;
    plot.y_label = objective == "time" ? "predicted time (ms)" : objective == "dram" ? "DRAM (MB)" : "cycles (the toy machine)";
    std::map<std::string, std::map<std::int64_t, double>> curves;  // the other parameters -> x -> y
    std::set<std::int64_t> xs;
    for (const ParamSettings& point : r.space) {
        xs.insert(point.front().second);
        curves[settings_text(ParamSettings(point.begin() + 1, point.end()))];
    }
    for (const TunePoint& p : r.ranked) {
        const double y = objective == "time" ? p.seconds * 1e3 : objective == "dram" ? p.dram_bytes / 1e6 : static_cast<double>(p.cycles);
        curves[settings_text(ParamSettings(p.varied.begin() + 1, p.varied.end()))][p.varied.front().second] = y;
    }
    plot.x.assign(xs.begin(), xs.end());
    for (const auto& [name, values] : curves) {
        PlotSeries series{name.empty() ? objective : name, {}, ""};
        for (double x : plot.x) {
            auto it = values.find(static_cast<std::int64_t>(x));
            series.y.push_back(it == values.end() ? std::numeric_limits<double>::quiet_NaN() : it->second);
        }
        plot.series.push_back(std::move(series));
    }
    return plot;
}

std::vector<double> ranks_of(const std::vector<double>& v) {
    std::vector<std::size_t> order(v.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
    std::vector<double> rank(v.size());
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i;
        while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
        for (std::size_t k = i; k <= j; ++k) rank[order[k]] = (static_cast<double>(i + j) / 2) + 1;
        i = j + 1;
    }
    return rank;
}

// What the GPU runs say of the model: its pick (rank 1) measured against the best measured,
// and how well the predicted order matches the measured one.
struct GpuVerdict {
    std::vector<const TunePoint*> measured;  // the points that ran, were timed and passed, in the model's order
    const TunePoint* best = nullptr;         // the fastest measured
    double pick_over_best = 0;               // the pick's measured time / the best's, less 1
    double rho = std::numeric_limits<double>::quiet_NaN();
    std::size_t failed = 0;                  // checks failed or traffic unequal
};

GpuVerdict gpu_verdict(const RankedSpace& r) {
    GpuVerdict v;
    std::vector<double> predicted, measured;
    for (const TunePoint& p : r.ranked) {
        if (!p.ran()) continue;
        // A point whose outputs are wrong is no schedule: it is neither the best nor ranked.
        if (!p.checks_passed || !p.traffic_equal) ++v.failed;
        if (!p.measured_seconds || !p.checks_passed || !p.traffic_equal) continue;
        v.measured.push_back(&p);
        predicted.push_back(objective_of(p, r.request.objective));
        measured.push_back(*p.measured_seconds);
        if (!v.best || *p.measured_seconds < *v.best->measured_seconds) v.best = &p;
    }
    if (v.best && v.measured.front() == &r.ranked.front())
        v.pick_over_best = *r.ranked.front().measured_seconds / *v.best->measured_seconds - 1;
    v.rho = spearman(predicted, measured);
    return v;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size() || a.size() < 3) return std::numeric_limits<double>::quiet_NaN();
    const std::vector<double> ra = ranks_of(a), rb = ranks_of(b);
    const double n = static_cast<double>(a.size()), mean = (n + 1) / 2;
    double cov = 0, va = 0, vb = 0;
    for (std::size_t i = 0; i < ra.size(); ++i) {
        cov += (ra[i] - mean) * (rb[i] - mean);
        va += (ra[i] - mean) * (ra[i] - mean);
        vb += (rb[i] - mean) * (rb[i] - mean);
    }
    return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : std::numeric_limits<double>::quiet_NaN();
}

ParamSettings point_settings(const RankedSpace& space, const TunePoint& point) {
    ParamSettings settings = space.fixed;
    settings.insert(settings.end(), point.varied.begin(), point.varied.end());
    return settings;
}

int tune_element_bytes(const std::string& dtype) {
    // The playground's build has no GPU catalog (gpu::dtype_bytes): the same sizes, spelled here.
    if (dtype == "fp32") return 4;
    if (dtype == "fp16" || dtype == "bf16") return 2;
    if (dtype == "e4m3") return 1;
    throw ToyError(fmt::format("tune: dtype '{}': fp32, fp16, bf16 or e4m3", dtype));
}

RankedSpace rank_space(const std::shared_ptr<const ast::Program>& tree, const std::string& path, const SpaceTuneRequest& request,
                       const Spelling& spelling, const PointPredictor& predict) {
    if (request.objective != "time" && request.objective != "dram" && request.objective != "cycles")
        throw ToyError(fmt::format("tune: objective '{}': time, dram or cycles", request.objective));
    if (request.vary.empty()) throw ToyError("tune: give --vary NAME=V1,V2,... (the space), or --schedule");
    const MachineSpec& machine = named_machine(request.machine.empty() ? "h100" : request.machine, spelling);
    const int element_bytes = tune_element_bytes(request.dtype);
    // The machines' product rates are fp16's and fp32's (isa/machine.h): an e4m3 time would be
    // a guess. Its bytes (1 an element) and the toy's cycles are ranked.
    if (request.dtype == "e4m3" && request.objective == "time")
        throw ToyError("tune: the time model has no rate measured for e4m3 products: rank by --objective dram or cycles");
    RankedSpace r;
    r.path = path;
    r.machine = std::string(machine.name);
    r.request = request;
    // The space: every combination of the --vary lists; --set's values at every point.
    r.space = sweep_settings(request.vary);
    if (r.space.size() > kMaxTunePoints)
        throw ToyError(fmt::format("tune: {} points; at most {} are ranked (fewer values a --vary)", r.space.size(), kMaxTunePoints));
    r.fixed = settings_from(request.sets);

    // Each point compiled and walked on its own: the points share nothing but the tree, so they
    // are spread over the cores, and gathered in the space's order, so that the ranking and the
    // dropped list do not depend on the threads.
    std::vector<std::optional<TunePoint>> points(r.space.size());
    std::vector<std::string> why(r.space.size());
    for_each_index(r.space.size(), [&](std::size_t k) {
        const ParamSettings& varied = r.space[k];
        ParamSettings settings = r.fixed;
        settings.insert(settings.end(), varied.begin(), varied.end());
        try {
            Program program = on_machine_cache(compile(tree, settings), machine);
            program.cache->element_bytes = element_bytes;
            const ProgramTime time = predict ? predict(program, machine) : predict_program(program, machine, request.heads);
            // A launch the model cannot time leaves the point's time partial: not a rank by time.
            TunePoint p;
            p.untimed = time.first_untimed();
            if (!p.untimed.empty() && request.objective == "time")
                throw ToyError(fmt::format("no predicted time: {} (--objective dram or cycles ranks it)", p.untimed));
            p.varied = varied;
            p.seconds = time.seconds;
            p.cycles = time.counted.cycles;
            p.spilled_bytes = time.spilled_bytes;
            double slowest = -1;
            for (const LaunchTime& l : time.launches) {
                p.flops += l.flops;
                if (l.seconds > slowest) slowest = l.seconds, p.bound = std::string(time_bound_key(l.bound));
            }
            p.dram_bytes = static_cast<double>(time.counted.counts.total.dram_read_bytes + time.counted.counts.total.dram_write_bytes);
            points[k] = std::move(p);
        } catch (const ToyError& e) {
            why[k] = e.what();
        }
    });
    for (std::size_t k = 0; k < r.space.size(); ++k) {
        if (points[k]) r.ranked.push_back(std::move(*points[k]));
        else r.dropped.emplace_back(r.space[k], why[k]);
    }
    std::stable_sort(r.ranked.begin(), r.ranked.end(), [&](const TunePoint& a, const TunePoint& b) {
        return objective_of(a, request.objective) < objective_of(b, request.objective);
    });
    return r;
}

TunedSpace format_space(const RankedSpace& r, Format format) {
    const SpaceTuneRequest& request = r.request;
    const bool on_gpu = !r.device.empty();
    const GpuVerdict verdict = on_gpu ? gpu_verdict(r) : GpuVerdict{};
    // Every point that ran is shown, with the top ones.
    std::vector<std::size_t> shown;
    for (std::size_t k = 0; k < r.ranked.size(); ++k)
        if (k < static_cast<std::size_t>(std::max(request.top, 1)) || r.ranked[k].ran()) shown.push_back(k);
    TunedSpace result;
    if (!r.space.empty()) result.plot = space_plot(r);
    const auto pick_text = [&](const TunePoint& p) { return settings_text(p.varied); };

    if (format == Format::Json) {
        nlohmann::ordered_json j;
        j["program"] = r.path;
        j["machine"] = r.machine;
        j["heads"] = request.heads;
        j["dtype"] = request.dtype;
        j["objective"] = request.objective;
        if (!r.kernel.empty()) j["kernel"] = r.kernel;
        j["points"] = r.space.size();
        j["ranked"] = nlohmann::ordered_json::array();
        for (std::size_t k = 0; k < r.ranked.size(); ++k) {
            const TunePoint& p = r.ranked[k];
            nlohmann::ordered_json row;
            row["rank"] = k + 1;
            for (const auto& [name, value] : p.varied) row["params"][name] = value;
            row["seconds"] = p.untimed.empty() ? nlohmann::ordered_json(p.seconds) : nlohmann::ordered_json(nullptr);
            row["tflops"] = p.untimed.empty() && p.seconds > 0 ? p.flops / p.seconds / 1e12 : 0.0;
            if (!p.untimed.empty()) row["why_no_time"] = p.untimed;
            row["dram_bytes"] = p.dram_bytes;
            row["cycles"] = p.cycles;
            row["bound"] = p.bound;
            if (p.spilled_bytes > 0) row["spilled_bytes"] = p.spilled_bytes;
            if (p.measured_seconds) {
                row["measured_seconds"] = *p.measured_seconds;
                row["checks_passed"] = p.checks_passed;
                row["traffic_equal"] = p.traffic_equal;
            }
            if (!p.gpu_error.empty()) row["gpu_error"] = p.gpu_error;
            j["ranked"].push_back(row);
        }
        j["dropped"] = nlohmann::ordered_json::array();
        for (const auto& [varied, why] : r.dropped) {
            nlohmann::ordered_json row;
            for (const auto& [name, value] : varied) row["params"][name] = value;
            row["why"] = why;
            j["dropped"].push_back(row);
        }
        if (on_gpu) {
            nlohmann::ordered_json g;
            g["device"] = r.device;
            g["run"] = verdict.measured.size();
            g["failed"] = verdict.failed;
            if (verdict.best) {
                const bool pick_measured = verdict.measured.front() == &r.ranked.front();
                for (const auto& [name, value] : r.ranked.front().varied) g["pick"][name] = value;
                if (pick_measured) g["pick_measured_seconds"] = *r.ranked.front().measured_seconds;
                for (const auto& [name, value] : verdict.best->varied) g["best"][name] = value;
                g["best_measured_seconds"] = *verdict.best->measured_seconds;
                if (pick_measured) g["pick_over_best"] = verdict.pick_over_best;
            }
            g["spearman"] = std::isnan(verdict.rho) ? nlohmann::ordered_json() : nlohmann::ordered_json(verdict.rho);
            j["gpu"] = g;
        }
        result.text = json_text(j);
        return result;
    }
    Table t;
    t.header = {"rank"};
    for (const auto& [name, value] : r.space.front()) t.header.push_back(name);
    for (const char* h : {"time (predicted)", "TFLOP/s", "DRAM", "cycles (toy)", "bound"}) t.header.push_back(h);
    if (on_gpu)
        for (const char* h : {"measured", "error", "checks"}) t.header.push_back(h);
    t.right_aligned.assign(t.header.size(), true);
    t.right_aligned[r.space.front().size() + 5] = false;  // bound
    if (on_gpu) t.right_aligned.back() = false;
    for (std::size_t k : shown) {
        const TunePoint& p = r.ranked[k];
        std::vector<std::string> row = {std::to_string(k + 1)};
        for (const auto& [name, value] : p.varied) row.push_back(std::to_string(value));
        row.push_back(p.untimed.empty() ? fmt::format("{:.3f} ms", p.seconds * 1e3) : "-");
        row.push_back(p.untimed.empty() && p.flops > 0 ? fmt::format("{:.1f}", p.flops / p.seconds / 1e12) : "-");
        row.push_back(megabytes(p.dram_bytes));
        row.push_back(std::to_string(p.cycles));
        row.push_back(p.untimed.empty() ? p.bound : "-");
        if (on_gpu) {
            row.push_back(p.measured_seconds ? fmt::format("{:.3f} ms", *p.measured_seconds * 1e3) : p.ran() ? "error" : "");
            row.push_back(p.measured_seconds && p.untimed.empty() ? fmt::format("{:+.1f}%", (p.seconds / *p.measured_seconds - 1) * 100) : "");
            row.push_back(!p.ran() ? "" : !p.gpu_error.empty() ? p.gpu_error
                          : p.checks_passed && p.traffic_equal ? "passed"
                          : !p.checks_passed ? "FAILED" : "traffic differs");
        }
        t.rows.push_back(std::move(row));
    }
    std::string out = fmt::format("{}{}: {} on machine {} ({}{}), by {}; {} {} of {} ranked\n", r.path,
                                  r.fixed.empty() ? "" : " (" + settings_text(r.fixed) + ")", plural(r.space.size(), "point"), r.machine,
                                  plural(static_cast<std::uint64_t>(request.heads), "head"), r.kernel.empty() ? "" : ", " + r.kernel,
                                  request.objective == "time" ? "predicted time" : request.objective == "dram" ? "DRAM bytes" : "the toy machine's cycles",
                                  on_gpu ? "shown:" : "the best", shown.size(), r.ranked.size());
    out += render_table(t, format);
    std::string spills;
    for (std::size_t k : shown)
        if (r.ranked[k].spilled_bytes > 0)
            spills += fmt::format("{}{} {}", spills.empty() ? "" : ", ", settings_text(r.ranked[k].varied), r.ranked[k].spilled_bytes);
    if (!spills.empty())
        out += fmt::format("Registers ptxas spills to local memory, bytes a thread (not in the predicted time): {}\n", spills);
    if (on_gpu) {
        out += fmt::format("\nOn the GPU ({}): {} timed and checked", r.device, plural(verdict.measured.size(), "point"));
        if (verdict.failed) out += fmt::format("; {} whose checks or traffic failed, left out", plural(verdict.failed, "point"));
        out += "\n";
        if (verdict.best && verdict.measured.front() == &r.ranked.front()) {
            const TunePoint& pick = r.ranked.front();
            out += fmt::format("  the model's pick {}: {:.3f} ms measured; the best measured {}: {:.3f} ms", pick_text(pick), *pick.measured_seconds * 1e3,
                               pick_text(*verdict.best), *verdict.best->measured_seconds * 1e3);
            out += &pick == verdict.best ? " (the pick is the best)\n" : fmt::format(" (the pick is {:.1f}% slower)\n", verdict.pick_over_best * 100);
        } else if (!r.ranked.empty()) {
            const TunePoint& pick = r.ranked.front();
            out += fmt::format("  the model's pick {} {}\n", pick_text(pick),
                               !pick.gpu_error.empty() ? "did not run: " + pick.gpu_error : "failed its checks or its traffic: no verdict");
        }
        out += std::isnan(verdict.rho) ? "  rank correlation: needs 3 timed points with different times\n"
                                       : fmt::format("  rank correlation (Spearman) of predicted and measured: {:.2f} over {}\n", verdict.rho,
                                                     plural(verdict.measured.size(), "point"));
    }
    if (!r.dropped.empty()) {
        out += fmt::format("\n{} dropped:\n", plural(r.dropped.size(), "point"));
        for (const auto& [varied, why] : r.dropped) out += fmt::format("  {}: {}\n", settings_text(varied), why);
    }
    result.text = std::move(out);
    return result;
}

TunedSpace tune_space(const std::shared_ptr<const ast::Program>& tree, const std::string& path, const SpaceTuneRequest& request, Format format,
                      const Spelling& spelling) {
    return format_space(rank_space(tree, path, request, spelling), format);
}

}  // namespace toysim::app
