#include "sim/print/diff_report.h"

#include <algorithm>
#include <fmt/format.h>

#include "sim/print/cost_report.h"
#include "sim/print/gpu_report.h"
#include "sim/print/plot.h"
#include "sim/print/format.h"

namespace toysim {

namespace {

using json = nlohmann::ordered_json;

std::string ratio(double a, double b) { return b > 0 ? fmt::format("{:.3f}", a / b) : "-"; }
json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// The measured DRAM bytes read, every launch's.
double measured_read(const gpu::GpuDiff& d) {
    double bytes = 0;
    for (const auto& s : d.stages) bytes += s.measured.dram_read_bytes;
    return bytes;
}

std::string percent(double fraction) { return fmt::format("{:+.1f}%", 100 * fraction); }

// A launch's predicted time: every bound, the one that decides, and the error against the
// measured median.
json time_json(const LaunchTime& t, double measured) {
    json j{{"seconds", t.seconds}, {"bound", time_bound_key(t.bound)}, {"bounds", bounds_json(t)}, {"chain", chain_json(t)}, {"launch_seconds", t.launch_seconds},
           {"busiest_sm_blocks", t.busiest_sm_blocks},
           {"shared_bytes", t.shared_bytes}};
    if (measured > 0) j["error"] = (t.seconds - measured) / measured;
    return j;
}

// The time table: per launch, predicted against measured, and what bounds the prediction.
std::string format_time_table(const gpu::GpuDiff& d, Format format) {
    const gpu::Prediction& pr = *d.prediction;
    if (pr.machine.empty()) return pr.why_no_time.empty() ? "" : fmt::format("\nno predicted time: {}\n", pr.why_no_time);
    Table t{{"launch", "time (predicted)", "time (measured)", "error", "bound", "next bound"}, {false, true, true, true, false, false}, {}};
    for (const auto& s : d.stages) {
        if (!s.predicted_time) continue;
        const LaunchTime& p = *s.predicted_time;
        t.rows.push_back({s.stage, milliseconds_text(p.seconds), s.measured_seconds > 0 ? milliseconds_text(s.measured_seconds) : "-",
                          s.measured_seconds > 0 ? percent((p.seconds - s.measured_seconds) / s.measured_seconds) : "-", bound_text(p, p.bound),
                          bound_text(p, runner_up(p))});
    }
    return fmt::format("\npredicted time on machine {} (the slowest bound plus the launch's own {}), against the measured median\n", pr.machine,
                       fmt::format("{:.2f} µs", d.stages.front().predicted_time ? d.stages.front().predicted_time->launch_seconds * 1e6 : 0.0)) +
           render_table(t, format);
}

// (predicted − measured) / measured DRAM bytes read, all launches: the modeled L2's error.
double read_error(const gpu::GpuDiff& d) {
    const double measured = measured_read(d);
    return measured > 0 ? (d.prediction->read_bytes - measured) / measured : 0;
}


json diff_json(const std::string& path, const gpu::GpuRunResult& g, const gpu::GpuDiff& d, const std::string& source) {
    json params = json::object();
    for (const auto& [name, value] : g.params) params[name] = value;
    json arrays = json::object();
    for (const auto& a : d.arrays)
        arrays[a.array] = json{{"element_bytes", a.element_bytes},       {"simulated_reads", a.simulated_reads},
                               {"simulated_writes", a.simulated_writes}, {"counted_reads", a.counted_reads},
                               {"counted_writes", a.counted_writes},     {"footprint_bytes", a.footprint_bytes},
                               {"dram_read_bytes", optional_number(a.dram_read_bytes)},
                               {"dram_write_bytes", optional_number(a.dram_write_bytes)},
                               {"predicted_dram_read_bytes", optional_number(a.predicted_read_bytes)},
                               {"predicted_dram_write_bytes", optional_number(a.predicted_write_bytes)}};
    json stages = json::array();
    for (const auto& s : d.stages) {
        json j{{"stage", s.stage}, {"counted_read_bytes", s.counted_read_bytes}, {"counted_write_bytes", s.counted_write_bytes}};
        if (s.measured.available) {
            j["l2_read_bytes"] = s.measured.l2_read_sectors * 32;
            j["l2_write_bytes"] = s.measured.l2_write_sectors * 32;
            j["dram_read_bytes"] = s.measured.dram_read_bytes;
            j["dram_write_bytes"] = s.measured.dram_write_bytes;
            j["l2_hit_rate"] = s.measured.l2_hit_rate;
        }
        if (s.predicted_read_bytes) {
            j["predicted_dram_read_bytes"] = *s.predicted_read_bytes;
            j["predicted_dram_write_bytes"] = *s.predicted_write_bytes;
            j["predicted_workers"] = s.predicted_workers;
        }
        j["measured_seconds"] = s.measured_seconds;
        if (s.predicted_time) j["predicted_time"] = time_json(*s.predicted_time, s.measured_seconds);
        stages.push_back(j);
    }
    json out{{"program", path},     {"kernel", g.kernel->name}, {"gpu", source},         {"device", g.device.name},
             {"params", params},    {"heads", g.heads},         {"dtype", gpu::dtype_name(g.dtype)},
             {"l2", gpu::l2_state_name(g.measure)},             {"arrays", arrays},       {"stages", stages},
             {"simulated_bytes", d.simulated_bytes},            {"counted_bytes", d.counted_bytes}};
    if (d.prediction) {
        const gpu::Prediction& p = *d.prediction;
        out["prediction"] = json{{"cache", p.cache},           {"workers", p.workers},
                                 {"workers_from", p.workers_from}, {"per_launch", p.per_launch},
                                 {"dram_read_bytes", p.read_bytes}, {"dram_write_bytes", p.write_bytes},
                                 {"instructions", p.instructions}};
        if (d.measured) out["prediction"]["read_error"] = read_error(d);
        out["prediction"]["machine"] = p.machine.empty() ? json(nullptr) : json(p.machine);
        if (!p.why_no_time.empty()) out["prediction"]["why_no_time"] = p.why_no_time;
    } else {
        out["prediction"] = nullptr;
        out["why_no_prediction"] = d.why_no_prediction;
    }
    if (g.compile) out["compile"] = module_compile_json(*g.compile);
    out["measured"] = d.measured;
    if (d.measured) {
        out["l2_bytes"] = d.l2_bytes;
        out["dram_bytes"] = d.dram_bytes;
        out["aggregate_error"] = d.aggregate_error;
        out["notes"] = d.notes;
    }
    json scratch = json::array();
    for (const auto& s : d.stages)
        if (const auto& sc = s.scratch)
            scratch.push_back(json{{"launch", s.stage}, {"largest_tile", sc->largest_tile}, {"block_bytes", sc->block_bytes}, {"blocks", sc->blocks},
                                   {"slice_bytes", sc->slice_bytes()}, {"dram_bytes_at_most", sc->bound_bytes()}});
    if (!scratch.empty()) out["scratch"] = scratch;
    if (!d.measured) out["why_not_measured"] = d.why_not_measured;
    return out;
}

}  // namespace

std::string format_diff(const std::string& path, const gpu::GpuRunResult& g, const gpu::GpuDiff& d, const std::string& source,
                        Format format) {
    if (format == Format::Json) return json_text(diff_json(path, g, d, source));
    Table arrays{{"array", "simulated", "counted on the GPU", "simulated bytes", "DRAM (measured)", "DRAM / simulated"},
                 {false, true, true, true, true, true},
                 {}};
    for (const auto& a : d.arrays) {
        auto add = [&](const char* what, std::uint64_t sim, std::uint64_t counted, const std::optional<double>& dram) {
            if (!sim && !counted) return;
            const double sim_bytes = double(sim) * a.element_bytes;
            arrays.rows.push_back({fmt::format("{}({})", what, a.array), fmt::format("{}", sim), fmt::format("{}", counted), megabytes(sim_bytes),
                                   dram ? megabytes(*dram) : (d.measured ? "in the total" : "-"), dram ? ratio(*dram, sim_bytes) : "-"});
        };
        add("reads", a.simulated_reads, a.counted_reads, a.dram_read_bytes);
        add("writes", a.simulated_writes, a.counted_writes, a.dram_write_bytes);
    }
    Table stages{{"launch", "counted", "L2 (measured)", "DRAM (measured)", "L2 / counted", "DRAM / counted", "L2 hit rate"},
                 {false, true, true, true, true, true, true},
                 {}};
    for (const auto& s : d.stages) {
        const double counted = s.counted_read_bytes + s.counted_write_bytes;
        if (!s.measured.available) {
            stages.rows.push_back({s.stage, megabytes(counted), "-", "-", "-", "-", "-"});
            continue;
        }
        const double l2 = (s.measured.l2_read_sectors + s.measured.l2_write_sectors) * 32;
        const double dram = s.measured.dram_read_bytes + s.measured.dram_write_bytes;
        stages.rows.push_back({s.stage, megabytes(counted), megabytes(l2), megabytes(dram), ratio(l2, counted), ratio(dram, counted),
                               fmt::format("{:.1f}%", s.measured.l2_hit_rate)});
    }
    if (format == Format::Csv) return render_table(arrays, format) + "\n" + render_table(stages, format);

    std::string params;
    for (const auto& [name, value] : g.params) params += fmt::format("{}{} = {}", params.empty() ? "" : ", ", name, value);
    std::string out = fmt::format("{} ({}), {}; {} head{}; {}\n", path, params, g.kernel->name, g.heads, g.heads == 1 ? "" : "s",
                                  gpu::dtype_name(g.dtype));
    out += fmt::format("GPU side: {} ({}){}\n\n", source, g.device.name,
                       g.measure == gpu::L2State::Off ? std::string() : fmt::format(", measured with a {} L2", gpu::l2_state_name(g.measure)));
    out += "per array: the simulator's DRAM elements (count-only pass × heads), what the kernel counted, and DRAM where one array owns a launch's traffic\n";
    out += render_table(arrays, format);
    out += "\nper launch, in bytes\n";
    out += render_table(stages, format);
    // Generated code's tiles in global memory, beside the arrays: what they can cost.
    Table scratch{{"launch", "largest tile", "a block", "blocks", "slices", "DRAM, at most", "DRAM beyond the arrays (measured)"},
                  {false, false, true, true, true, true, true},
                  {}};
    for (const auto& s : d.stages) {
        const auto& sc = s.scratch;
        if (!sc) continue;
        const double beyond = s.measured.dram_read_bytes + s.measured.dram_write_bytes - s.counted_read_bytes - s.counted_write_bytes;
        scratch.rows.push_back({s.stage, sc->largest_tile, megabytes(sc->block_bytes), sc->blocks ? std::to_string(sc->blocks) : "varies",
                                sc->blocks ? megabytes(sc->slice_bytes()) : "-", sc->blocks ? megabytes(sc->bound_bytes()) : "-",
                                s.measured.available ? megabytes(beyond) : "-"});
    }
    if (!scratch.rows.empty()) {
        out += "\nscratch: tiles the generated kernel keeps in global memory (shared memory cannot hold them), traffic that no array counts; "
               "at most each slice written back and read again\n";
        out += render_table(scratch, format);
    }
    if (d.prediction) {
        const gpu::Prediction& pr = *d.prediction;
        Table predicted{{"launch", "DRAM read (predicted)", "DRAM read (measured)", "error", "DRAM written (predicted)", "DRAM written (measured)"},
                        {false, true, true, true, true, true},
                        {}};
        auto row = [&](const std::string& name, double read, double written, const gpu::MeasuredTraffic* m) {
            const bool has = m && m->available;
            predicted.rows.push_back({name, megabytes(read), has ? megabytes(m->dram_read_bytes) : "-",
                                      has && m->dram_read_bytes > 0 ? percent((read - m->dram_read_bytes) / m->dram_read_bytes) : "-",
                                      megabytes(written), has ? megabytes(m->dram_write_bytes) : "-"});
        };
        for (const auto& s : d.stages)
            if (s.predicted_read_bytes) row(s.stage, *s.predicted_read_bytes, *s.predicted_write_bytes, &s.measured);
        if (d.stages.size() > 1 || !pr.per_launch) {
            gpu::MeasuredTraffic all;
            all.available = d.measured;
            for (const auto& s : d.stages) {
                all.dram_read_bytes += s.measured.dram_read_bytes;
                all.dram_write_bytes += s.measured.dram_write_bytes;
            }
            row("all launches", pr.read_bytes, pr.write_bytes, &all);
        }
        const std::string workers = pr.launch_workers.empty() ? fmt::format("{} workers", pr.workers)
                                                              : fmt::format("{} to {} workers", *std::min_element(pr.launch_workers.begin(), pr.launch_workers.end()),
                                                                            pr.workers);
        out += fmt::format("\npredicted by the modeled L2 (cache {}, {}: {}{}), against the measured DRAM\n", pr.cache, workers,
                           pr.workers_from, pr.per_launch ? (d.stages.size() > 1 ? "; each launch from a cold cache" : "") : "; one run of the whole program");
        out += render_table(predicted, format);
        out += format_time_table(d, format);
    } else if (!d.why_no_prediction.empty()) {
        out += fmt::format("\nno prediction: {}\n", d.why_no_prediction);
    }
    if (!d.measured) {
        out += fmt::format("\nhardware traffic: not measured: {}\n", d.why_not_measured);
        return out;
    }
    out += fmt::format("\nsimulated {}, counted {}, L2 {}, DRAM {}; aggregate error Σ|counted − DRAM| / Σ DRAM = {:.3f}\n",
                       megabytes(d.simulated_bytes), megabytes(d.counted_bytes), megabytes(d.l2_bytes), megabytes(d.dram_bytes), d.aggregate_error);
    if (d.prediction)
        out += fmt::format("predicted DRAM read {} against {} measured: {}\n", megabytes(d.prediction->read_bytes), megabytes(measured_read(d)),
                           percent(read_error(d)));
    if (!d.notes.empty()) {
        out += "\nwhere they part:\n";
        for (const auto& n : d.notes) out += "  - " + n + "\n";
    }
    return out;
}

namespace {

// DRAM bytes read over the bytes of the arrays read: 1 when DRAM reads each once, up to the
// re-read count (Tr for FA2's K and V) when nothing is served by L2.
double reread_factor(const gpu::GpuDiff& d) {
    double footprint = 0, dram = 0;
    for (const auto& a : d.arrays)
        if (a.counted_reads) footprint += double(a.footprint_bytes);
    for (const auto& s : d.stages) dram += s.measured.dram_read_bytes;
    return footprint > 0 ? dram / footprint : 0;
}

// How the sweep's generated modules were compiled, in a line: "" where no run generated CUDA.
std::string sweep_compiles(const std::vector<DiffSweepPoint>& points) {
    int compiled = 0, cached = 0, reused = 0, shared = 0;
    double seconds = 0;
    for (const auto& p : points) {
        if (!p.gpu.compile) continue;
        const auto& c = *p.gpu.compile;
        (c.reused ? reused : c.from_cache ? cached : compiled) += 1;
        if (!c.reused && !c.from_cache) seconds += c.seconds;
        if (c.shared_by > 0) ++shared;
    }
    if (compiled + cached + reused == 0) return "";
    return fmt::format("generated modules: {} compiled by NVRTC ({:.2f} s), {} from the disk cache, {} reused; {} of the {} runs shared a module\n",
                       compiled, seconds, cached, reused, shared, compiled + cached + reused);
}

}  // namespace

std::string format_diff_sweep(const std::string& path, const std::string& name, const std::vector<DiffSweepPoint>& points, Format format) {
    if (format == Format::Json) {
        json rows = json::array();
        for (const auto& p : points) {
            json j = diff_json(path, p.gpu, p.diff, "live");
            j["swept"] = json{{"name", name}, {"value", p.value}};
            rows.push_back(j);
        }
        return json_text(rows);
    }
    Table t{{name, "heads", "simulated", "counted", "L2", "DRAM", "DRAM / simulated", "DRAM reads / arrays read", "DRAM read predicted",
             "DRAM read measured", "error"},
            {true, true, true, true, true, true, true, true, true, true, true},
            {}};
    for (const auto& p : points) {
        const auto& d = p.diff;
        t.rows.push_back({fmt::format("{}", p.value), fmt::format("{}", p.gpu.heads), megabytes(d.simulated_bytes), megabytes(d.counted_bytes),
                          d.measured ? megabytes(d.l2_bytes) : "-", d.measured ? megabytes(d.dram_bytes) : "-",
                          d.measured ? ratio(d.dram_bytes, d.simulated_bytes) : "-",
                          d.measured ? fmt::format("{:.2f}×", reread_factor(d)) : "-",
                          d.prediction ? megabytes(d.prediction->read_bytes) : "-", d.measured ? megabytes(measured_read(d)) : "-",
                          d.prediction && d.measured ? percent(read_error(d)) : "-"});
    }
    std::string out;
    if (format != Format::Csv && !points.empty())
        out = fmt::format("{}: {} swept; {}, {}, {} L2\n", path, name, points[0].gpu.device.name, gpu::dtype_name(points[0].gpu.dtype),
                          gpu::l2_state_name(points[0].gpu.measure));
    out += render_table(t, format);
    if (format != Format::Csv) out += sweep_compiles(points);
    return out;
}

std::string svg_diff_sweep(const std::string& path, const std::string& name, const std::vector<DiffSweepPoint>& points) {
    std::vector<double> x;
    PlotSeries sim{"simulated DRAM", {}, "#1f77b4"}, l2{"L2 (measured)", {}, "#2ca02c"}, dram{"DRAM (measured)", {}, "#d62728"},
        predicted{"DRAM (predicted)", {}, "#ff7f0e"};
    for (const auto& p : points) {
        x.push_back(double(p.value));
        sim.y.push_back(p.diff.simulated_bytes);
        l2.y.push_back(p.diff.measured ? p.diff.l2_bytes : 0);
        dram.y.push_back(p.diff.measured ? p.diff.dram_bytes : 0);
        predicted.y.push_back(p.diff.prediction ? p.diff.prediction->read_bytes + p.diff.prediction->write_bytes : 0);
    }
    std::string title = path;
    if (!points.empty())
        title += fmt::format(" on {}, {}, {} heads", points[0].gpu.device.name, gpu::dtype_name(points[0].gpu.dtype), points[0].gpu.heads);
    std::vector<PlotSeries> series{sim, l2, dram};
    if (std::any_of(points.begin(), points.end(), [](const DiffSweepPoint& p) { return p.diff.prediction.has_value(); })) series.push_back(predicted);
    return svg_log_plot(title, name, "bytes", x, series);
}

std::string svg_diff_sweep_time(const std::string& path, const std::string& name, const std::vector<DiffSweepPoint>& points) {
    std::vector<double> x;
    PlotSeries measured{"measured (median)", {}, "#d62728"}, predicted{"predicted", {}, "#ff7f0e"};
    std::string machine;
    for (const auto& p : points) {
        x.push_back(double(p.value));
        double measured_seconds = 0, predicted_seconds = 0;
        bool timed = !p.diff.stages.empty();
        for (const gpu::StageDiff& s : p.diff.stages) {
            measured_seconds += s.measured_seconds;
            if (s.predicted_time) predicted_seconds += s.predicted_time->seconds;
            else timed = false;
        }
        measured.y.push_back(measured_seconds);
        predicted.y.push_back(timed ? predicted_seconds : 0);  // 0: not drawn (no prediction at that point)
        if (p.diff.prediction && !p.diff.prediction->machine.empty()) machine = p.diff.prediction->machine;
    }
    std::string title = path;
    if (!points.empty())
        title += fmt::format(" on {}, {}, {} heads", points[0].gpu.device.name, gpu::dtype_name(points[0].gpu.dtype), points[0].gpu.heads);
    predicted.name = machine.empty() ? "predicted" : fmt::format("predicted ({})", machine);
    return svg_log_plot(title, name, "seconds", x, {measured, predicted});
}

}  // namespace toysim
