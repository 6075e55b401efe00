// Line plots of counters against a parameter: a hand-written SVG file that any browser opens
// (no plotting library, byte for byte the same on every machine, so it can be a golden file),
// or one offline HTML page drawn by Chart.js (inlined from sim/print/assets.h).
#pragma once

#include <string>
#include <vector>

namespace toysim {

struct PlotSeries {
    std::string name;
    std::vector<double> y;  // one per x; NaN where the series has no value (a value <= 0 on a log axis is left out too)
    std::string color;      // "#1f77b4"; empty: the palette's color for this series' place
};

enum class AxisScale { Auto, Linear, Log };

struct Plot {
    std::string title, x_label, y_label;
    std::vector<double> x;  // ascending
    std::vector<PlotSeries> series;
    AxisScale x_scale = AxisScale::Auto, y_scale = AxisScale::Auto;
};

// True when the values grow (or shrink) geometrically: at least two, all positive, every ratio
// of consecutive values above 1.5 (or every one below 1/1.5), and the largest ratio within 25%
// of the smallest. 128, 256, 512 is; 100, 200, 300 is not.
bool grows_geometrically(const std::vector<double>& values);

// What an Auto axis becomes: x is logarithmic when its values grow geometrically; y when x is,
// every value shown is positive, and they span at least a factor of 10.
struct PlotScales {
    bool x_log = false, y_log = false;
};
PlotScales plot_scales(const Plot& plot);

// The plot as an SVG document: one <polyline class="curve" data-series="NAME"> per series and
// one <circle class="point" data-series="NAME" data-x="X" data-value="Y"> per value shown,
// the exact numbers plotted, for tests and scripts to read back.
std::string svg_plot(const Plot& plot);
// The plot as one HTML page with Chart.js inlined: no network request. Empty when this build
// has no Chart.js (chart_js() is empty).
std::string html_plot(const Plot& plot);

// Both axes logarithmic (`toysim diff --sweep --plot`: traffic over n spans decades).
std::string svg_log_plot(const std::string& title, const std::string& x_label, const std::string& y_label, const std::vector<double>& x,
                         const std::vector<PlotSeries>& series);

}  // namespace toysim
