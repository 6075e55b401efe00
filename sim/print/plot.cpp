#include "sim/print/plot.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/print/assets.h"

namespace toysim {

namespace {

// Text for SVG and HTML, in elements and in double-quoted attributes.
std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else if (c == '"') out += "&quot;";
        else out += c;
    }
    return out;
}

// A tick's label: whole numbers below `exact_below` as they are (the 1024 the user typed),
// larger ones with k, M or G.
std::string tick_label(double v, double exact_below) {
    const double a = std::fabs(v);
    if (a < exact_below && v == std::floor(v)) return fmt::format("{}", static_cast<long long>(v));
    if (a >= 1e9) return fmt::format("{:.4g}G", v / 1e9);
    if (a >= 1e6) return fmt::format("{:.4g}M", v / 1e6);
    if (a >= 1e3) return fmt::format("{:.4g}k", v / 1e3);
    return fmt::format("{:.4g}", v);
}

// A plotted value exactly: counters are whole numbers.
std::string value_text(double v) {
    if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return fmt::format("{}", static_cast<long long>(v));
    return fmt::format("{}", v);
}

const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string color_of(const Plot& plot, size_t k) {
    const auto& c = plot.series[k].color;
    return c.empty() ? kPalette[k % std::size(kPalette)] : c;
}

bool shown(double x, double y, const PlotScales& s) {
    return std::isfinite(x) && std::isfinite(y) && (!s.x_log || x > 0) && (!s.y_log || y > 0);
}

// An axis: its range in data units and the values that get a labelled gridline.
struct Axis {
    bool log = false;
    double lo = 0, hi = 1;
    std::vector<double> ticks;
    double unit(double v) const {  // 0 at lo, 1 at hi
        if (log) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
        return (v - lo) / (hi - lo);
    }
};

// 1, 2 or 5 times a power of ten, near span / 5.
double nice_step(double span) {
    const double raw = span / 5, mag = std::pow(10.0, std::floor(std::log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

// Linear from lo to hi, widened to whole steps; ticks at every step.
Axis linear_axis(double lo, double hi) {
    Axis a;
    if (hi <= lo) hi = lo + (lo == 0 ? 1 : std::fabs(lo));
    const double step = nice_step(hi - lo);
    const double first = std::floor(lo / step), last = std::ceil(hi / step - 1e-9);
    a.lo = first * step;
    a.hi = last * step;
    for (double i = first; i <= last; i += 1) a.ticks.push_back(i * step);
    return a;
}

// The x axis: from the first value to the last, ticks at the values themselves when there
// are a dozen or fewer.
Axis x_axis(const std::vector<double>& xs, bool log) {
    Axis a;
    if (xs.empty()) return a;
    a.log = log;
    a.lo = xs.front();
    a.hi = xs.back();
    if (a.hi <= a.lo) {
        a.lo = log ? a.lo / 2 : a.lo - 1;
        a.hi = log ? a.hi * 2 : a.hi + 1;
    }
    if (xs.size() <= 12) {
        a.ticks = xs;
    } else if (log) {
        for (double e = std::ceil(std::log10(a.lo)); e <= std::log10(a.hi) + 1e-9; e += 1) a.ticks.push_back(std::pow(10.0, e));
    } else {
        for (double t : linear_axis(a.lo, a.hi).ticks)
            if (t >= a.lo && t <= a.hi) a.ticks.push_back(t);
    }
    return a;
}

// The y axis: log from the decade below the least value to the decade above the greatest
// (2× and 5× ticks too when that is two decades or less), or linear from 0.
Axis y_axis(const std::vector<double>& ys, bool log) {
    if (ys.empty()) return Axis{};
    const auto [lo, hi] = std::minmax_element(ys.begin(), ys.end());
    if (!log) return linear_axis(std::min(0.0, *lo), std::max(0.0, *hi));
    Axis a;
    a.log = true;
    const double e0 = std::floor(std::log10(*lo)), e1 = std::max(std::ceil(std::log10(*hi)), e0 + 1);
    a.lo = std::pow(10.0, e0);
    a.hi = std::pow(10.0, e1);
    for (double e = e0; e <= e1; e += 1) {
        a.ticks.push_back(std::pow(10.0, e));
        if (e1 - e0 <= 2 && e < e1)
            for (double m : {2.0, 5.0}) a.ticks.push_back(m * std::pow(10.0, e));
    }
    std::sort(a.ticks.begin(), a.ticks.end());
    return a;
}

std::string axis_label(const std::string& label, bool log) { return log ? label + ", log scale" : label; }

}  // namespace

bool grows_geometrically(const std::vector<double>& values) {
    if (values.size() < 2) return false;
    double least = INFINITY, most = 0;
    for (size_t i = 1; i < values.size(); ++i) {
        if (!(values[i - 1] > 0) || !(values[i] > 0)) return false;
        const double r = values[i] / values[i - 1];
        least = std::min(least, r);
        most = std::max(most, r);
    }
    const bool growing = least > 1.5, shrinking = most < 1 / 1.5;
    return (growing || shrinking) && most <= least * 1.25;
}

PlotScales plot_scales(const Plot& plot) {
    PlotScales s;
    s.x_log = plot.x_scale == AxisScale::Log || (plot.x_scale == AxisScale::Auto && grows_geometrically(plot.x));
    if (plot.y_scale != AxisScale::Auto) {
        s.y_log = plot.y_scale == AxisScale::Log;
        return s;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (const auto& series : plot.series)
        for (size_t i = 0; i < plot.x.size() && i < series.y.size(); ++i)
            if (std::isfinite(series.y[i]) && std::isfinite(plot.x[i]) && (!s.x_log || plot.x[i] > 0))
                lo = std::min(lo, series.y[i]), hi = std::max(hi, series.y[i]);
    s.y_log = s.x_log && lo > 0 && hi >= 10 * lo;
    return s;
}

std::string svg_plot(const Plot& plot) {
    const double width = 760, height = 460, left = 84, right = 200, top = 48, bottom = 64;
    const PlotScales s = plot_scales(plot);
    std::vector<double> xs, ys;
    for (size_t i = 0; i < plot.x.size(); ++i)
        for (const auto& series : plot.series)
            if (i < series.y.size() && shown(plot.x[i], series.y[i], s)) {
                if (xs.empty() || xs.back() != plot.x[i]) xs.push_back(plot.x[i]);
                ys.push_back(series.y[i]);
            }
    const Axis ax = x_axis(xs, s.x_log), ay = y_axis(ys, s.y_log);
    const double x0 = left, x1 = width - right, y0 = height - bottom, y1 = top;
    auto px = [&](double v) { return x0 + ax.unit(v) * (x1 - x0); };
    auto py = [&](double v) { return y0 - ay.unit(v) * (y0 - y1); };

    std::string out = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\" "
        "data-x-scale=\"{}\" data-y-scale=\"{}\">\n<title>{}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
        width, height, s.x_log ? "log" : "linear", s.y_log ? "log" : "linear", escape(plot.title));
    out += fmt::format("<text x=\"{}\" y=\"26\" font-size=\"15\">{}</text>\n", left, escape(plot.title));
    for (double t : ay.ticks) {
        const double y = py(t);
        out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", x0, y, x1, y);
        out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", x0 - 6, y + 4, tick_label(t, 1e4));
    }
    for (double t : ax.ticks) {
        const double x = px(t);
        out += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#eee\"/>\n", x, y1, x, y0);
        out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x, y0 + 16, tick_label(t, 1e6));
    }
    out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", x0, y1, x1 - x0, y0 - y1);
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (x0 + x1) / 2, height - 20,
                       escape(axis_label(plot.x_label, s.x_log)));
    out += fmt::format("<text x=\"18\" y=\"{0}\" transform=\"rotate(-90 18 {0})\" text-anchor=\"middle\">{1}</text>\n", (y0 + y1) / 2,
                       escape(axis_label(plot.y_label, s.y_log)));
    for (size_t k = 0; k < plot.series.size(); ++k) {
        const auto& series = plot.series[k];
        const std::string color = color_of(plot, k), name = escape(series.name);
        std::string points, circles;
        for (size_t i = 0; i < plot.x.size() && i < series.y.size(); ++i) {
            if (!shown(plot.x[i], series.y[i], s)) continue;
            const double x = px(plot.x[i]), y = py(series.y[i]);
            points += fmt::format("{}{:.1f},{:.1f}", points.empty() ? "" : " ", x, y);
            circles += fmt::format(
                "<circle class=\"point\" data-series=\"{0}\" data-x=\"{1}\" data-value=\"{2}\" cx=\"{3:.1f}\" cy=\"{4:.1f}\" r=\"3\" "
                "fill=\"{5}\"><title>{0}, {6} = {1}: {2}</title></circle>\n",
                name, value_text(plot.x[i]), value_text(series.y[i]), x, y, color, escape(plot.x_label));
        }
        out += fmt::format("<polyline class=\"curve\" data-series=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                           name, color, points);
        out += circles;
        const double ly = top + 14 + 20 * double(k);
        out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"/>\n", x1 + 12, ly - 4, x1 + 32,
                           ly - 4, color);
        out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", x1 + 38, ly, name);
    }
    out += "</svg>\n";
    return out;
}

std::string html_plot(const Plot& plot) {
    if (chart_js().empty()) return "";
    const PlotScales s = plot_scales(plot);
    nlohmann::ordered_json series = nlohmann::ordered_json::array();
    for (size_t k = 0; k < plot.series.size(); ++k) {
        nlohmann::ordered_json points = nlohmann::ordered_json::array();
        for (size_t i = 0; i < plot.x.size() && i < plot.series[k].y.size(); ++i)
            if (shown(plot.x[i], plot.series[k].y[i], s)) points.push_back({{"x", plot.x[i]}, {"y", plot.series[k].y[i]}});
        series.push_back({{"name", plot.series[k].name}, {"color", color_of(plot, k)}, {"points", points}});
    }
    nlohmann::ordered_json data{{"title", plot.title},
                                {"x_label", axis_label(plot.x_label, s.x_log)},
                                {"y_label", axis_label(plot.y_label, s.y_log)},
                                {"x_log", s.x_log},
                                {"y_log", s.y_log},
                                {"x", plot.x},
                                {"series", series}};
    // In a <script> element nothing may read as "</script>": '<' only occurs in JSON strings.
    std::string text = data.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace), json;
    for (char c : text) json += c == '<' ? std::string("\\u003c") : std::string(1, c);
    std::string page = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + escape(plot.title) +
                       "</title>\n<style>body { font-family: sans-serif; margin: 1.5em; } #box { max-width: 960px; }</style>\n"
                       "</head>\n<body>\n<div id=\"box\"><canvas id=\"plot\"></canvas></div>\n<script>\n";
    page += chart_js();
    page += "\n</script>\n<script>\nconst plot = " + json + ";\n";
    page += R"(const ticks = plot.x.length <= 12 ? { afterBuildTicks: axis => { axis.ticks = plot.x.map(v => ({ value: v })); } } : {};
new Chart(document.getElementById('plot'), {
  type: 'line',
  data: { datasets: plot.series.map(s => ({ label: s.name, data: s.points, borderColor: s.color, backgroundColor: s.color,
                                            pointRadius: 3, borderWidth: 2 })) },
  options: {
    animation: false,
    plugins: { title: { display: true, text: plot.title, font: { size: 15 } },
               tooltip: { callbacks: { label: c => c.dataset.label + ': ' + c.parsed.y.toLocaleString('en') } } },
    scales: {
      x: Object.assign({ type: plot.x_log ? 'logarithmic' : 'linear', title: { display: true, text: plot.x_label },
                         ticks: { callback: v => Number(v).toLocaleString('en') } }, ticks),
      y: { type: plot.y_log ? 'logarithmic' : 'linear', beginAtZero: !plot.y_log, title: { display: true, text: plot.y_label },
           ticks: { callback: v => !plot.y_log || [1, 2, 5].includes(Math.round(v / 10 ** Math.floor(Math.log10(v) + 1e-9)))
                                     ? Number(v).toLocaleString('en') : '' } }
    }
  }
});
</script>
</body>
</html>
)";
    return page;
}

std::string svg_log_plot(const std::string& title, const std::string& x_label, const std::string& y_label, const std::vector<double>& x,
                         const std::vector<PlotSeries>& series) {
    return svg_plot(Plot{title, x_label, y_label, x, series, AxisScale::Log, AxisScale::Log});
}

}  // namespace toysim
