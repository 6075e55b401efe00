// Plots of cost against size: `toysim sweep --plot` and `toysim compare --sweep --plot`, in
// SVG, HTML and PNG, in-process. The SVG's points carry the numbers they plot
// (data-series, data-x, data-value), so these tests read the plot back and compare it with the
// runs' counters; the plots docs/course.md shows (traces/plots/MANIFEST) must match byte for byte.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/print/assets.h"
#include "sim/print/plot.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

namespace fs = std::filesystem;

// A scratch path in the temporary directory, removed when the test ends.
struct ScratchFile {
    fs::path path;
    explicit ScratchFile(const std::string& name) : path(fs::temp_directory_path() / (std::to_string(getpid()) + "-" + name)) {}
    ~ScratchFile() {
        std::error_code ec;
        fs::remove(path, ec);
    }
    std::string str() const { return path.string(); }
};

// What an SVG plot shows: its curves, and each point as series -> x -> value.
struct SvgPlot {
    std::vector<std::string> curves;
    std::map<std::string, std::map<double, double>> points;
    std::string x_scale, y_scale;
};

SvgPlot read_svg(const std::string& svg) {
    SvgPlot out;
    const std::regex curve(R"re(<polyline class="curve" data-series="([^"]*)")re");
    for (std::sregex_iterator it(svg.begin(), svg.end(), curve), end; it != end; ++it) out.curves.push_back((*it)[1]);
    const std::regex point(R"re(<circle class="point" data-series="([^"]*)" data-x="([^"]*)" data-value="([^"]*)")re");
    for (std::sregex_iterator it(svg.begin(), svg.end(), point), end; it != end; ++it)
        out.points[(*it)[1]][std::stod((*it)[2])] = std::stod((*it)[3]);
    std::smatch m;
    if (std::regex_search(svg, m, std::regex(R"re(data-x-scale="(\w+)" data-y-scale="(\w+)")re"))) {
        out.x_scale = m[1];
        out.y_scale = m[2];
    }
    return out;
}

const std::vector<std::string> kFa = {"programs/attention/fa1.toy", "programs/attention/fa2.toy"};
const std::vector<std::string> kSmallBlocks = {"--set", "d=4", "--set", "Br=2", "--set", "Bc=4"};

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// A manifest's entries, each as its words: the file, then the toysim arguments.
std::vector<std::vector<std::string>> manifest_entries(const std::string& text) {
    std::vector<std::vector<std::string>> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] != '#') {
            std::istringstream words(line);
            out.emplace_back(std::istream_iterator<std::string>(words), std::istream_iterator<std::string>());
        }
    return out;
}

std::string join(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
}

}  // namespace

TEST_CASE("plot: compare --sweep --plot draws one curve per program at the runs' traffic", "[plot]") {
    ScratchFile file("compare.svg");
    const auto args = std::vector<std::string>{"compare"} + kFa + kSmallBlocks + std::vector<std::string>{"--sweep", "n=8,16,32"};
    CliResult plotted = run_cli(args + std::vector<std::string>{"--plot", file.str()});
    REQUIRE(plotted.code == 0);
    CHECK(plotted.err.empty());
    const SvgPlot svg = read_svg(read_text(file.path));
    CHECK(svg.curves == std::vector<std::string>{"fa1", "fa2"});
    CHECK((svg.x_scale == "log" && svg.y_scale == "log"));

    CliResult json = run_cli(args + std::vector<std::string>{"--format", "json"});
    REQUIRE(json.code == 0);
    int checked = 0;
    for (const auto& at : nlohmann::json::parse(json.out)) {
        const double n = at["swept"]["value"].get<double>();
        CHECK(at["swept"]["name"] == "n");
        for (const auto& run : at["runs"]) {
            const double traffic = run["counters"]["dram"]["traffic"].get<double>();
            INFO(run["name"] << " at n = " << n);
            CHECK(svg.points.at(run["name"].get<std::string>()).at(n) == traffic);
            ++checked;
        }
    }
    CHECK(checked == 6);
    // FA2 at n = 32, d = 4, Br = 2: Q and O once, K and V Tr = 16 times, L once.
    CHECK(svg.points.at("fa2").at(32) == 2 * 32 * 4 + 2 * 32 * 4 * 16 + 32);
}

TEST_CASE("plot: sweep --plot of one program draws DRAM reads, writes and traffic", "[plot]") {
    ScratchFile file("sweep.svg");
    const std::vector<std::string> args = {"sweep", "programs/p5_online_softmax.toy", "--set", "n=10,20,30"};
    CliResult plotted = run_cli(args + std::vector<std::string>{"--plot", file.str()});
    REQUIRE(plotted.code == 0);
    const std::string text = read_text(file.path);
    const SvgPlot svg = read_svg(text);
    CHECK(svg.curves == std::vector<std::string>{"DRAM reads", "DRAM writes", "DRAM traffic"});
    CHECK((svg.x_scale == "linear" && svg.y_scale == "linear"));  // 10, 20, 30 grow by a constant step
    CHECK(text.find(">p5_online_softmax: DRAM reads, writes and traffic against n</text>") != std::string::npos);
    CHECK(text.find(">DRAM reads, writes and traffic (elements)</text>") != std::string::npos);

    CliResult json = run_cli(args + std::vector<std::string>{"--format", "json"});
    REQUIRE(json.code == 0);
    const auto runs = nlohmann::json::parse(json.out);
    REQUIRE(runs.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
        const double n = 10.0 * double(i + 1);
        const auto& dram = runs[i]["counters"]["dram"];
        CHECK(svg.points.at("DRAM reads").at(n) == dram["reads"].get<double>());
        CHECK(svg.points.at("DRAM writes").at(n) == dram["writes"].get<double>());
        CHECK(svg.points.at("DRAM traffic").at(n) == dram["traffic"].get<double>());
    }
}

TEST_CASE("plot: a sweep of two parameters draws a curve per value of the slower one", "[plot]") {
    ScratchFile file("two.svg");
    CliResult o = run_cli({"sweep", "programs/attention/fa2.toy", "--set", "n=16", "--set", "d=4", "--set", "Br=2,4", "--set", "Bc=2,4,8",
                           "--plot", file.str()});
    REQUIRE(o.code == 0);
    const std::string text = read_text(file.path);
    const SvgPlot svg = read_svg(text);
    CHECK(svg.curves == std::vector<std::string>{"Br=2", "Br=4"});
    CHECK(text.find(">fa2: DRAM traffic against Bc (n = 16, d = 4)</text>") != std::string::npos);
    // FA2 reads K and V Tr = n/Br times, whatever Bc is.
    for (double bc : {2.0, 4.0, 8.0}) {
        CHECK(svg.points.at("Br=2").at(bc) == 2 * 16 * 4 + 2 * 16 * 4 * 8 + 16);
        CHECK(svg.points.at("Br=4").at(bc) == 2 * 16 * 4 + 2 * 16 * 4 * 4 + 16);
    }
}

TEST_CASE("plot: log axes only where the values grow geometrically", "[plot]") {
    CHECK(grows_geometrically({128, 256, 512, 1024}));
    CHECK(grows_geometrically({10, 100, 1000}));
    CHECK(grows_geometrically({512, 256, 128}));
    CHECK(grows_geometrically({1, 2}));
    CHECK_FALSE(grows_geometrically({100, 200, 300, 400}));
    CHECK_FALSE(grows_geometrically({128, 256, 1024}));  // ratios 2 and 4: not roughly constant
    CHECK_FALSE(grows_geometrically({1, 1.2, 1.44}));    // constant, but not above 1.5
    CHECK_FALSE(grows_geometrically({0, 1, 2}));
    CHECK_FALSE(grows_geometrically({4}));

    Plot plot{"t", "n", "y", {128, 256, 512}, {{"a", {1000, 4000, 16000}, ""}}};
    CHECK((plot_scales(plot).x_log && plot_scales(plot).y_log));
    plot.series[0].y = {1000, 1100, 1200};  // less than a decade: a linear y from 0
    CHECK((plot_scales(plot).x_log && !plot_scales(plot).y_log));
    CHECK(svg_plot(plot).find("data-x-scale=\"log\" data-y-scale=\"linear\"") != std::string::npos);
    plot.x = {100, 200, 300};
    plot.series[0].y = {1, 100, 10000};
    CHECK((!plot_scales(plot).x_log && !plot_scales(plot).y_log));
    plot.y_scale = AxisScale::Log;
    CHECK(plot_scales(plot).y_log);
    // The diff's plot keeps both axes logarithmic, leaving out what is not positive.
    const std::string diff = svg_log_plot("d", "n", "bytes", {100, 200, 300}, {{"s", {5, 0, 50}, "#123456"}});
    CHECK(diff.find("data-x-scale=\"log\" data-y-scale=\"log\"") != std::string::npos);
    CHECK(read_svg(diff).points.at("s").size() == 2);
}

TEST_CASE("plot: compare --sweep without --plot prints the comparison at each value", "[plot]") {
    const auto args = std::vector<std::string>{"compare"} + kFa + kSmallBlocks + std::vector<std::string>{"--sweep", "n=8,16"};
    CliResult table = run_cli(args);
    REQUIRE(table.code == 0);
    const auto lines = split_lines(table.out);
    REQUIRE(lines.size() > 4);
    CHECK(lines[0] == "n = 8");
    CHECK(lines[1].empty());
    CHECK(lines[2].rfind("counter", 0) == 0);
    CHECK(lines[2].find("fa1") != std::string::npos);
    CHECK(std::count(lines.begin(), lines.end(), "n = 16") == 1);

    CliResult csv = run_cli(args + std::vector<std::string>{"--format", "csv"});
    REQUIRE(csv.code == 0);
    const auto rows = split_lines(csv.out);
    CHECK(rows[0] == "n,counter,fa1,fa2");
    CHECK(std::count(rows.begin(), rows.end(), "n,counter,fa1,fa2") == 1);
    // FA1 at n = 16, d = 4, Bc = 4: Q, O, m and l make Tc = 4 round trips.
    const std::string fa1 = std::to_string(2 * 16 * 4 + 3 * 16 * 4 * 4 + 4 * 16 * 4), fa2 = std::to_string(2 * 16 * 4 + 2 * 16 * 4 * 8 + 16);
    CHECK(std::count(rows.begin(), rows.end(), "16,traffic," + fa1 + "," + fa2) == 1);
}

TEST_CASE("plot: an HTML plot is one offline page with Chart.js inlined", "[plot]") {
    ScratchFile file("plot.html");
    CliResult o = run_cli(std::vector<std::string>{"compare"} + kFa + kSmallBlocks +
                          std::vector<std::string>{"--sweep", "n=8,16,32", "--plot", file.str()});
    if (chart_js().empty()) {
        CHECK(o.code == 2);
        CHECK(o.err == "toysim: error: --plot '" + file.str() +
                           "': this toysim was built without Chart.js (Debian's libjs-chart.js), which HTML plots need: install it "
                           "(scripts/install-deps.sh) and rebuild, or write FILE.svg\n");
        return;
    }
    REQUIRE(o.code == 0);
    std::string page = read_text(file.path);
    CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
    const size_t at = page.find(chart_js());
    REQUIRE(at != std::string::npos);
    page.erase(at, chart_js().size());
    // Chart.js's own license comment names its home page; the rest of the page names no URL,
    // loads no script or stylesheet from anywhere.
    CHECK(page.find("http://") == std::string::npos);
    CHECK(page.find("https://") == std::string::npos);
    CHECK(page.find(" src=") == std::string::npos);
    CHECK(page.find("<link") == std::string::npos);
    CHECK(page.find("\"name\":\"fa2\"") != std::string::npos);
    CHECK(page.find("\"x_log\":true") != std::string::npos);
    CHECK(page.find("{\"x\":32.0,\"y\":" + std::to_string(2 * 32 * 4 + 2 * 32 * 4 * 16 + 32) + ".0}") != std::string::npos);
}

TEST_CASE("plot: a PNG plot is the SVG drawn by rsvg-convert, which must be on PATH", "[plot]") {
    ScratchFile file("plot.png");
    const auto args = std::vector<std::string>{"sweep", "programs/p5_online_softmax.toy", "--set", "n=4,8", "--plot", file.str()};
    const char* path = std::getenv("PATH");
    const std::string saved = path ? path : "";
    setenv("PATH", "/nonexistent", 1);
    CliResult missing = run_cli(args);
    setenv("PATH", saved.c_str(), 1);
    CHECK(missing.code == 2);
    CHECK(missing.out.empty());  // refused before any run
    CHECK(missing.err == "toysim: error: --plot '" + file.str() +
                             "': PNG plots are drawn by rsvg-convert, which is not on PATH: install Debian's librsvg2-bin "
                             "(scripts/install-deps.sh), or write FILE.svg\n");
    if (std::system("command -v rsvg-convert > /dev/null 2>&1") != 0) {
        WARN("rsvg-convert is not installed (Debian's librsvg2-bin): the PNG itself is not checked");
        return;
    }
    CliResult o = run_cli(args);
    REQUIRE(o.code == 0);
    CHECK(read_text(file.path).rfind("\x89PNG\r\n\x1a\n", 0) == 0);
}

TEST_CASE("plot: errors name the flag and exit 2", "[plot]") {
    const auto compare = std::vector<std::string>{"compare"} + kFa + kSmallBlocks;
    struct Case {
        std::vector<std::string> args;
        std::string err;
    };
    const std::vector<Case> cases = {
        {compare + std::vector<std::string>{"--sweep", "n=8,16", "--plot", "x.pdf"},
         "--plot 'x.pdf': the file name says the format: FILE.svg, FILE.png or FILE.html"},
        {{"sweep", "programs/p5_online_softmax.toy", "--set", "n=4,8", "--plot", "plot"},
         "--plot 'plot': the file name says the format: FILE.svg, FILE.png or FILE.html"},
        {compare + std::vector<std::string>{"--plot", "x.svg"}, "--plot draws a sweep: use it with --sweep NAME=V1,V2,..."},
        {{"compare", "programs/attention/standard.toy", "programs/attention/fa2.toy", "--sweep", "Bc=4,8"},
         "--sweep Bc: programs/attention/standard.toy has no parameter 'Bc' (its parameters: n, d)"},
        {compare + std::vector<std::string>{"--sweep", "nn=8,16"}, "--sweep nn: programs/attention/fa1.toy has no parameter 'nn'; did you mean 'n'?"},
        {compare + std::vector<std::string>{"--sweep", "d=4,8"}, "--sweep d: --set gives 'd' too: give it one way"},
        {compare + std::vector<std::string>{"--sweep", "n"}, "--sweep 'n': expected NAME=V1,V2,..."},
        {compare + std::vector<std::string>{"--sweep", "n=8,x"}, "--sweep n=x: 'x' is not an integer"},
        {compare + std::vector<std::string>{"--sweep", "n=8,16", "--plot", "/nonexistent-toysim-dir/x.svg"},
         "--plot '/nonexistent-toysim-dir/x.svg': cannot write the file: No such file or directory"},
        {compare + std::vector<std::string>{"--sweep", "n=8,16", "--plot", fs::temp_directory_path().string() + "/.svg"},
         "--plot '" + fs::temp_directory_path().string() + "/.svg': the file name says the format: FILE.svg, FILE.png or FILE.html"},
    };
    for (const auto& c : cases) {
        CliResult o = run_cli(c.args);
        INFO(c.err);
        CHECK(o.code == 2);
        CHECK(o.out.empty());  // every one is refused before any run
        CHECK(o.err == "toysim: error: " + c.err + "\n");
    }
    // A directory where the file should be.
    fs::path dir = fs::temp_directory_path() / (std::to_string(getpid()) + "-dir.svg");
    fs::create_directory(dir);
    CliResult o = run_cli(compare + std::vector<std::string>{"--sweep", "n=8,16", "--plot", dir.string()});
    fs::remove(dir);
    CHECK(o.code == 2);
    CHECK(o.err == "toysim: error: --plot '" + dir.string() + "': cannot write the file: Is a directory\n");
}

TEST_CASE("plot: the committed plots are what their commands write, byte for byte", "[plot]") {
    const std::string root = TOYSIM_SOURCE_DIR;
    std::vector<std::string> listed;
    for (auto args : manifest_entries(read_text(root + "/traces/plots/MANIFEST"))) {
        const std::string file = args.at(0), line = join(args);
        args.erase(args.begin());
        auto plot = std::find(args.begin(), args.end(), "--plot");
        REQUIRE(plot + 1 < args.end());
        CHECK(plot[1] == "traces/plots/" + file);
        ScratchFile fresh("golden-" + file);
        plot[1] = fresh.str();
        CliResult o = run_cli(args);
        INFO("traces/plots/" << file << ": " << line);
        CHECK(o.code == 0);
        CHECK(o.err.empty());
        const std::string golden = read_text(root + "/traces/plots/" + file);
        CHECK(!golden.empty());
        CHECK(read_text(fresh.path) == golden);
        listed.push_back(file);
    }
    for (const auto& e : fs::directory_iterator(root + "/traces/plots"))
        if (e.path().extension() == ".svg") CHECK(std::count(listed.begin(), listed.end(), e.path().filename().string()) == 1);
    CHECK(listed.size() >= 2);
}

TEST_CASE("plot: the attention plot of docs/course.md shows seed 002's and seed 000's traffic", "[plot]") {
    const SvgPlot svg = read_svg(read_text(std::string(TOYSIM_SOURCE_DIR) + "/traces/plots/attention_traffic_vs_n.svg"));
    CHECK(svg.curves == std::vector<std::string>{"standard", "fa1", "fa2"});
    const double d = 64, block = 64;
    for (double n : {128.0, 256.0, 512.0, 1024.0}) {
        const double t = std::ceil(n / block);
        INFO("n = " << n);
        CHECK(svg.points.at("standard").at(n) == 4 * n * n + 4 * d * n);       // seed 002
        CHECK(svg.points.at("fa1").at(n) == 2 * n * d + 3 * n * d * t + 4 * n * t);  // seed 000's 2nd(2 + 3Tc) bytes, with m and ℓ
        CHECK(svg.points.at("fa2").at(n) == 2 * n * d + 2 * n * d * t + n);     // K and V read Tr times
    }
    const SvgPlot blocks = read_svg(read_text(std::string(TOYSIM_SOURCE_DIR) + "/traces/plots/fa_traffic_vs_bc.svg"));
    CHECK(blocks.curves == std::vector<std::string>{"fa1", "fa2"});
    for (double bc : {16.0, 32.0, 64.0, 128.0, 256.0, 512.0}) {
        const double n = 1024, tc = n / bc, tr = n / 64;
        CHECK(blocks.points.at("fa1").at(bc) == 2 * n * d + 3 * n * d * tc + 4 * n * tc);
        CHECK(blocks.points.at("fa2").at(bc) == 2 * n * d + 2 * n * d * tr + n);
    }
}
