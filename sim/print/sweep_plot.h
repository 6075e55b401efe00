// `toysim sweep --plot` and `toysim compare --sweep --plot`: DRAM counters against the swept
// parameter, written as SVG, PNG (the SVG through rsvg-convert) or an offline HTML page.
#pragma once

#include <string>
#include <vector>

#include "sim/exec/counters.h"
#include "sim/print/plot.h"

namespace toysim {

// One run of a sweep: its program's name, the values it was given (--set and the swept one),
// and what it counted.
struct SweepPoint {
    std::string program;
    ParamSettings settings;
    const Counters* counters = nullptr;
    double predicted_seconds = -1;  // on a named machine (PlotMeasure::Time); < 0: none
};

// What a sweep's plot draws: DRAM traffic, the toy machine's cycles (on several workers, the
// makespan), or the time predicted on a named machine (`machine`: its name, for the labels).
enum class PlotMeasure { Traffic, Cycles, Time };

// The runs against the last parameter whose value changes from run to run (the one a sweep
// varies fastest); one curve per program and per value of any other changing parameter. With
// a single such curve the plot shows DRAM reads, writes and traffic (or cycles and work); with
// several, traffic (or cycles). The parameters with one value go in the title.
Plot sweep_plot(const std::vector<SweepPoint>& points, PlotMeasure measure = PlotMeasure::Traffic, const std::string& machine = "");

enum class PlotFormat { Svg, Png, Html };

// The format a plot file's name asks for: .svg, .png or .html (any case). Throws ToyError
// otherwise, and where this machine cannot make that format (HTML without Chart.js built in,
// PNG without rsvg-convert on PATH), before any run starts.
PlotFormat plot_format(const std::string& path);
// The file's bytes. Throws ToyError when rsvg-convert fails.
std::string render_plot(const Plot& plot, PlotFormat format, const std::string& path);

}  // namespace toysim
