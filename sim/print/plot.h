// A line plot as an SVG file a student can open in any browser: no plotting library needed.
#pragma once

#include <string>
#include <vector>

namespace toysim {

struct PlotSeries {
    std::string name;
    std::vector<double> y;  // one per x; a value <= 0 is left out (log axes)
    std::string color;      // "#1f77b4"
};

// Both axes logarithmic (traffic over n spans decades), ticks at powers of ten on y and at the
// x values themselves.
std::string svg_log_plot(const std::string& title, const std::string& x_label, const std::string& y_label, const std::vector<double>& x,
                         const std::vector<PlotSeries>& series);

}  // namespace toysim
