#include "sim/print/plot.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace toysim {

namespace {

std::string escape(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '<') out += "&lt;";
        else if (c == '>') out += "&gt;";
        else if (c == '&') out += "&amp;";
        else out += c;
    }
    return out;
}

std::string short_number(double v) {
    if (v >= 1e9) return fmt::format("{:g}G", v / 1e9);
    if (v >= 1e6) return fmt::format("{:g}M", v / 1e6);
    if (v >= 1e3) return fmt::format("{:g}k", v / 1e3);
    return fmt::format("{:g}", v);
}

}  // namespace

std::string svg_log_plot(const std::string& title, const std::string& x_label, const std::string& y_label, const std::vector<double>& x,
                         const std::vector<PlotSeries>& series) {
    const double width = 720, height = 440, left = 80, right = 170, top = 40, bottom = 60;
    double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
    for (double v : x)
        if (v > 0) x_lo = std::min(x_lo, v), x_hi = std::max(x_hi, v);
    for (const auto& s : series)
        for (double v : s.y)
            if (v > 0) y_lo = std::min(y_lo, v), y_hi = std::max(y_hi, v);
    if (!(x_lo < INFINITY) || !(y_lo < INFINITY)) return "";
    const double lx0 = std::log10(x_lo), lx1 = std::max(std::log10(x_hi), lx0 + 1e-9);
    const double ly0 = std::floor(std::log10(y_lo)), ly1 = std::max(std::ceil(std::log10(y_hi)), ly0 + 1);
    auto px = [&](double v) { return left + (std::log10(v) - lx0) / (lx1 - lx0) * (width - left - right); };
    auto py = [&](double v) { return height - bottom - (std::log10(v) - ly0) / (ly1 - ly0) * (height - top - bottom); };

    std::string out = fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif" font-size="12">)"
                                  "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                                  width, height);
    out += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n", left, escape(title));
    for (double e = ly0; e <= ly1 + 1e-9; e += 1) {
        const double y = py(std::pow(10.0, e));
        out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", left, y, width - right, y);
        out += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6, y + 4, short_number(std::pow(10.0, e)));
    }
    for (double v : x) {
        const double X = px(v);
        out += fmt::format("<line x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{}\" stroke=\"#eee\"/>\n", X, top, X, height - bottom);
        out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", X, height - bottom + 16, short_number(v));
    }
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (left + width - right) / 2, height - 18, escape(x_label));
    out += fmt::format("<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">{}</text>\n", (top + height - bottom) / 2,
                       (top + height - bottom) / 2, escape(y_label));
    for (size_t k = 0; k < series.size(); ++k) {
        const auto& s = series[k];
        std::string points;
        for (size_t i = 0; i < x.size() && i < s.y.size(); ++i)
            if (s.y[i] > 0 && x[i] > 0) points += fmt::format("{:.1f},{:.1f} ", px(x[i]), py(s.y[i]));
        out += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", s.color, points);
        for (size_t i = 0; i < x.size() && i < s.y.size(); ++i)
            if (s.y[i] > 0 && x[i] > 0) out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(x[i]), py(s.y[i]), s.color);
        const double ly = top + 14 + 20 * double(k);
        out += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"/>\n", width - right + 12, ly - 4,
                           width - right + 32, ly - 4, s.color);
        out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", width - right + 38, ly, escape(s.name));
    }
    out += "</svg>\n";
    return out;
}

}  // namespace toysim
