#include "sim/print/sweep_plot.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "isa/counters.h"
#include "sim/print/assets.h"
#include "support/diag.h"
#include "support/text.h"

extern char** environ;

namespace toysim {

namespace {

namespace fs = std::filesystem;

double counter_of(const Counters& c, CounterKind kind) {
    switch (kind) {
        case CounterKind::Reads: return static_cast<double>(c.dram_reads);
        case CounterKind::Writes: return static_cast<double>(c.dram_writes);
        case CounterKind::Cycles: return static_cast<double>(c.cycles);
        case CounterKind::TotalWork: return static_cast<double>(c.work);
        default: return static_cast<double>(c.dram_reads + c.dram_writes);
    }
}

std::string settings_text(const ParamSettings& settings) {
    std::string out;
    for (const auto& [name, value] : settings) out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", name, value);
    return out;
}

// The first executable file called `program` in $PATH's directories; empty if none.
std::string find_on_path(const std::string& program) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
        std::error_code ec;
        if (access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate, ec)) return candidate;
    }
    return "";
}

// rsvg-convert (Debian's librsvg2-bin), which draws PNG plots; throws if it is not on PATH.
std::string rsvg_convert(const std::string& path) {
    std::string tool = find_on_path("rsvg-convert");
    if (tool.empty())
        throw ToyError(fmt::format("--plot {}: PNG plots are drawn by rsvg-convert, which is not on PATH: install Debian's librsvg2-bin "
                                   "(scripts/install-deps.sh), or write FILE.svg",
                                   quoted_name(path)));
    return tool;
}

// The SVG as a PNG, through two scratch files.
std::string png_from_svg(const std::string& svg, const std::string& path) {
    const std::string tool = rsvg_convert(path);
    static std::atomic<int> serial{0};
    const fs::path base = fs::temp_directory_path() / fmt::format("toysim-plot-{}-{}", getpid(), serial++);
    const std::string in = base.string() + ".svg", out = base.string() + ".png";
    std::ofstream(in, std::ios::binary) << svg;
    std::vector<std::string> args = {"rsvg-convert", "--format", "png", "--output", out, in};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    int status = -1;
    if (posix_spawn(&pid, tool.c_str(), nullptr, nullptr, argv.data(), environ) == 0) waitpid(pid, &status, 0);
    std::ifstream png_file(out, std::ios::binary);
    std::ostringstream png;
    png << png_file.rdbuf();
    std::error_code ec;
    fs::remove(in, ec);
    fs::remove(out, ec);
    if (status != 0 || png.str().empty())
        throw ToyError(fmt::format("--plot {}: {} could not draw the PNG (exit status {})", quoted_name(path), tool,
                                   WIFEXITED(status) ? WEXITSTATUS(status) : status));
    return png.str();
}

}  // namespace

Plot sweep_plot(const std::vector<SweepPoint>& points, PlotMeasure measure, const std::string& machine) {
    std::vector<std::string> params, programs;  // in the order first seen
    std::map<std::string, std::set<std::int64_t>> values;
    for (const auto& p : points) {
        if (std::find(programs.begin(), programs.end(), p.program) == programs.end()) programs.push_back(p.program);
        for (const auto& [name, value] : p.settings) {
            if (!values.count(name)) params.push_back(name);
            values[name].insert(value);
        }
    }
    std::vector<std::string> varying;
    ParamSettings fixed;
    for (const auto& name : params)
        if (values[name].size() > 1) varying.push_back(name);
    const std::string x_name = !varying.empty() ? varying.back() : params.empty() ? "" : params.back();
    for (const auto& name : params)
        if (values[name].size() == 1 && name != x_name) fixed.emplace_back(name, *values[name].begin());

    Plot plot;
    plot.x_label = x_name;
    for (auto v : values[x_name]) plot.x.push_back(static_cast<double>(v));
    // A curve per program and per combination of the other changing parameters.
    std::vector<std::string> keys;
    std::vector<size_t> key_of;
    for (const auto& p : points) {
        ParamSettings others;
        for (const auto& s : p.settings)
            if (s.first != x_name && values[s.first].size() > 1) others.push_back(s);
        std::string key = programs.size() > 1 ? p.program : "";
        for (const auto& [name, value] : others) key += fmt::format("{}{}={}", key.empty() ? "" : " ", name, value);
        auto at = std::find(keys.begin(), keys.end(), key);
        key_of.push_back(static_cast<size_t>(at - keys.begin()));
        if (at == keys.end()) keys.push_back(key);
    }
    if (measure == PlotMeasure::Time) {  // one curve per key: the predicted milliseconds
        for (size_t k = 0; k < keys.size(); ++k) {
            PlotSeries series;
            series.name = keys[k].empty() ? "predicted time" : keys[k];
            series.y.assign(plot.x.size(), NAN);
            for (size_t i = 0; i < points.size(); ++i) {
                if (key_of[i] != k || points[i].predicted_seconds < 0) continue;
                for (const auto& [name, value] : points[i].settings)
                    if (name == x_name) {
                        auto at = std::find(plot.x.begin(), plot.x.end(), static_cast<double>(value));
                        series.y[static_cast<size_t>(at - plot.x.begin())] = points[i].predicted_seconds * 1e3;
                    }
            }
            plot.series.push_back(std::move(series));
        }
        plot.y_label = fmt::format("predicted time on {} (ms)", machine);
        plot.title = fmt::format("{}predicted time on {} against {}", programs.size() == 1 ? programs[0] + ": " : "", machine, x_name);
        if (!fixed.empty()) plot.title += " (" + settings_text(fixed) + ")";
        return plot;
    }
    const bool time = measure == PlotMeasure::Cycles;
    const CounterKind main = time ? CounterKind::Cycles : CounterKind::Traffic;
    std::vector<CounterKind> shown = {main};
    bool workers = std::any_of(points.begin(), points.end(), [](const SweepPoint& p) { return p.counters && p.counters->workers > 1; });
    if (keys.size() == 1) shown = time ? (workers ? std::vector{CounterKind::Cycles, CounterKind::TotalWork} : shown)
                                       : std::vector{CounterKind::Reads, CounterKind::Writes, CounterKind::Traffic};
    for (size_t k = 0; k < keys.size(); ++k)
        for (CounterKind kind : shown) {
            PlotSeries series;
            const std::string label(info(kind).label);
            series.name = shown.size() == 1 && !keys[k].empty() ? keys[k] : keys[k].empty() ? label : keys[k] + " " + label;
            series.y.assign(plot.x.size(), NAN);
            for (size_t i = 0; i < points.size(); ++i) {
                if (key_of[i] != k || !points[i].counters) continue;
                for (const auto& [name, value] : points[i].settings)
                    if (name == x_name) {
                        auto at = std::find(plot.x.begin(), plot.x.end(), static_cast<double>(value));
                        series.y[static_cast<size_t>(at - plot.x.begin())] = counter_of(*points[i].counters, kind);
                    }
            }
            plot.series.push_back(std::move(series));
        }
    const std::string what = shown.size() == 1 ? std::string(info(main).label)
                             : time         ? "cycles (the makespan) and work (cycles on all workers)"
                                            : "DRAM reads, writes and traffic";
    plot.y_label = what == info(main).unit ? what : fmt::format("{} ({})", what, info(main).unit);
    plot.title = fmt::format("{}{} against {}", programs.size() == 1 ? programs[0] + ": " : "", what, x_name);
    if (!fixed.empty()) plot.title += " (" + settings_text(fixed) + ")";
    return plot;
}

PlotFormat plot_format(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (ext == ".svg") return PlotFormat::Svg;
    if (ext == ".png") {
        rsvg_convert(path);
        return PlotFormat::Png;
    }
    if (ext == ".html") {
        if (chart_js().empty())
            throw ToyError(fmt::format("--plot {}: this toysim was built without Chart.js (Debian's libjs-chart.js), which HTML plots "
                                       "need: install it (scripts/install-deps.sh) and rebuild, or write FILE.svg",
                                       quoted_name(path)));
        return PlotFormat::Html;
    }
    throw ToyError(fmt::format("--plot {}: the file name says the format: FILE.svg, FILE.png or FILE.html", quoted_name(path)));
}

std::string render_plot(const Plot& plot, PlotFormat format, const std::string& path) {
    if (format == PlotFormat::Html) return html_plot(plot);
    if (format == PlotFormat::Png) return png_from_svg(svg_plot(plot), path);
    return svg_plot(plot);
}

}  // namespace toysim
