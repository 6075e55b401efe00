// `toysim view`: the page's data says what the trace says, step by step; tiles are pooled to
// means; a page holds everything it needs; runs too long for a page are refused; a stepping
// session's machine (what the playground's stepper draws) is the trace's. (The pages
// themselves are tested in a real browser: tests/browser/ and tests/web/browser.mjs.)
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "sim/app/session.h"
#include "sim/print/assets.h"
#include "sim/print/view_report.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;
using json = nlohmann::json;

namespace {

// The data a page written by `toysim view ARGS` carries.
json page_data(const std::vector<std::string>& args, std::string* page_out = nullptr) {
    std::string path = (std::filesystem::temp_directory_path() / ("toysim_view_test_" + std::to_string(::getpid()) + ".html")).string();
    std::vector<std::string> full = {"view"};
    full.insert(full.end(), args.begin(), args.end());
    full.insert(full.end(), {"-o", path});
    auto r = run_cli(full);
    REQUIRE(r.code == 0);
    std::string page = read_text(path);
    std::filesystem::remove(path);
    const std::string open = "<script type=\"application/json\" id=\"toysim-data\">";
    size_t at = page.find(open);
    REQUIRE(at != std::string::npos);
    size_t end = page.find("</script>", at);
    if (page_out) *page_out = page;
    return json::parse(page.substr(at + open.size(), end - at - open.size()));
}

json trace_json(const std::vector<std::string>& args) {
    std::vector<std::string> full = {"trace"};
    full.insert(full.end(), args.begin(), args.end());
    full.insert(full.end(), {"--format", "json"});
    auto r = run_cli(full);
    REQUIRE(r.code == 0);
    return json::parse(r.out);
}

}  // namespace

TEST_CASE("view: each step's register, value and DRAM access are the trace's", "[view]") {
    for (const auto& args : std::vector<std::vector<std::string>>{{"programs/p1_c00.toy"}, {"programs/p5_online_softmax.toy", "--set", "n=8"}}) {
        INFO(args[0]);
        json view = page_data(args);
        json trace = trace_json(args);
        CHECK(view["format"] == "toysim-view-1");
        REQUIRE(view["steps"].size() == trace["steps"].size());
        CHECK(view["end"]["steps"] == trace["steps"].size());
        for (size_t k = 0; k < trace["steps"].size(); ++k) {
            const json& v = view["steps"][k];
            const json& t = trace["steps"][k];
            INFO("step " << k + 1);
            CHECK(v["cycle"] == t["cycle"]);
            CHECK(v["line"] == t["line"]);
            CHECK(v["text"] == t["instruction"]);
            if (!t["writes"].empty()) {
                CHECK(view["registers"][v["reg"].get<int>()] == t["writes"][0]["register"]);
                CHECK(v["value"] == t["writes"][0]["new"]);
            }
            if (!t["dram"].empty()) {
                const json& a = v["dram"][0];
                CHECK(view["arrays"][a["array"].get<int>()]["name"] == t["dram"][0]["array"]);
                CHECK(a["kind"] == t["dram"][0]["access"]);
                json index = t["dram"][0]["index"];
                CHECK(a["col"] == index.back());
                CHECK(a["row"] == (index.size() == 2 ? index[0] : json(0)));
                CHECK(a["rows"] == 1);
                CHECK(a["cols"] == 1);
            }
            // The counters the step added, by name.
            json added = json::object();
            for (const auto& c : v["c"]) added[view["counters"][c[0].get<int>()].get<std::string>()] = c[1];
            CHECK(added == t["counters"]);
        }
    }
}

TEST_CASE("view: small tiles are kept whole, as the trace shows them", "[view]") {
    json view = page_data({"programs/attention/seed001_fa2_tiled.toy"});
    json trace = trace_json({"programs/attention/seed001_fa2_tiled.toy"});
    CHECK(view["values"] == "numeric");
    int compared = 0;
    for (size_t k = 0; k < trace["steps"].size(); ++k) {
        const json& t = trace["steps"][k];
        if (t["writes"].empty() || !t["writes"][0].contains("tile")) continue;
        const json& v = view["steps"][k];
        CHECK(view["tiles"][v["tile"].get<int>()]["name"] == t["writes"][0]["tile"]);
        CHECK(v["shape"] == t["writes"][0]["shape"]);
        const json& block = t["writes"][0]["new"];
        for (size_t i = 0; i < block.size(); ++i)
            for (size_t j = 0; j < block[i].size(); ++j)
                if (block[i][j].is_number()) CHECK(v["block"][i][j].get<double>() == Approx(block[i][j].get<double>()).epsilon(1e-4));
        ++compared;
    }
    CHECK(compared > 20);
}

TEST_CASE("view: a long tile run pools each tile write to cell means and a slice to one rectangle", "[view]") {
    json view = page_data({"programs/attention/fa2.toy", "--set", "n=1024", "--set", "d=64", "--set", "Br=64", "--set", "Bc=64"});
    CHECK(view["end"]["steps"] == 3984);
    // 1,500,000 pooled values over 3984 steps: at most 376 a step, so 16×16 cells of 4×4.
    const json* mac = nullptr;
    for (const auto& s : view["steps"])
        if (s["text"].get<std::string>().rfind("MAC_Z", 0) == 0) {
            mac = &s;
            break;
        }
    REQUIRE(mac);
    CHECK((*mac)["shape"] == json::array({64, 64}));
    CHECK((*mac)["block"].size() == 16);
    CHECK((*mac)["block"][0].size() == 16);
    // The first K slice is rows 0..63 of a 1024×64 array, drawn on a 64×64 grid.
    const json& k = view["arrays"][1];
    CHECK(k["name"] == "K");
    CHECK(k["grid_rows"] == 64);
    CHECK(k["grid_cols"] == 64);
    const json& load_k = view["steps"][4]["dram"][0];
    CHECK(load_k == json{{"array", 1}, {"kind", "read"}, {"row", 0}, {"col", 0}, {"rows", 64}, {"cols", 64}});
}

TEST_CASE("view: the page holds Chart.js, its drawing of the machine and its data, escaped so no source text can end a script", "[view]") {
    REQUIRE_FALSE(chart_js().empty());
    Program p = build("registers 1\ninput x[1]\noutput y[1]\n# </script><script>alert(1)</script>\nLOAD x[0], R0\nSTORE R0, y[0]\n");
    ExprArena arena;
    std::string page = view_html(view_json(p, record_symbolic(p, arena, 2, 100), arena));
    CHECK(page.find("alert(1)</script>") == std::string::npos);
    CHECK(page.find("\\u003c/script>\\u003cscript>alert(1)") != std::string::npos);
    CHECK(page.find(std::string(chart_js().substr(0, 200))) != std::string::npos);
    CHECK(page.find(std::string(machine_js().substr(0, 200))) != std::string::npos);
    CHECK(page.find("/*TOYSIM_DATA*/") == std::string::npos);
    CHECK(page.find("/*TOYSIM_CHART_JS*/") == std::string::npos);
    CHECK(page.find("/*TOYSIM_MACHINE_JS*/") == std::string::npos);
}

TEST_CASE("view: a run too long for a page is refused, saying how to shrink it", "[view]") {
    auto r = run_cli({"view", "programs/p5_online_softmax.toy", "--set", "n=1000000", "-o", "/nonexistent/x.html"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/p5_online_softmax.toy: error: this run has 13,999,996 steps, more than a page can show (100,000): make it "
                   "smaller with --set (for example a smaller n), or raise the limit with --max-steps\n");
    auto w = run_cli({"view", "programs/p1_c00.toy", "-o", "/nonexistent/dir/p1.html"});
    CHECK(w.code == 2);
    CHECK(w.err == "toysim: error: -o '/nonexistent/dir/p1.html': cannot write the file: No such file or directory\n");
}

TEST_CASE("view: an array with no dimensions is drawn as one cell, and its access is that cell", "[view]") {
    // Once a crash (an empty vector's back()): tests/view/scalar_array.toy declares `input x`.
    json view = page_data({"tests/view/scalar_array.toy"});
    const json& x = view["arrays"][0];
    CHECK(x["name"] == "x");
    CHECK(x["dims"] == json::array());
    CHECK(x["rows"] == 1);
    CHECK(x["cols"] == 1);
    CHECK(x["grid_rows"] == 1);
    CHECK(x["grid_cols"] == 1);
    REQUIRE(view["steps"].size() == 2);
    CHECK(view["steps"][0]["dram"] == json::array({{{"array", 0}, {"kind", "read"}, {"row", 0}, {"col", 0}, {"rows", 1}, {"cols", 1}}}));
    CHECK(view["steps"][1]["dram"] == json::array({{{"array", 1}, {"kind", "write"}, {"row", 0}, {"col", 0}, {"rows", 1}, {"cols", 1}}}));
}

TEST_CASE("view: the stepper prints and shows a scalar array as it is written", "[view]") {
    auto r = run_cli_input({"step", "tests/view/scalar_array.toy"}, "step 2\nprint x\nprint x[0]\nmem x\nbreak x[0]\nbreak x\nquit\n");
    CHECK(r.code == 2);  // the two mistakes
    CHECK(r.err == "error: x has no dimensions (a scalar): print one element, as x, or the array with 'mem x'\n"
                   "error: x has no dimensions (a scalar); 'x[0]' gives 1\n");
    CHECK(r.out.find("(toysim) print x\nx = x (read 1 time)\n") != std::string::npos);
    CHECK(r.out.find("(toysim) mem x\ninput x\n") != std::string::npos);
    CHECK(r.out.find("(toysim) break x\nbreakpoint 1: break x\n") != std::string::npos);
}

namespace {

// The machine a session reports (view_state_json) after `step`, as plain JSON.
template <class Domain>
json machine_at(app::OwnedSession<Domain>& owned, std::uint64_t step) {
    owned.session().go_to(step);
    return json::parse(view_state_json(owned.session(), owned.style()).dump());
}

// A value of the trace against the five significant digits a heatmap cell keeps.
bool near(const json& shown, const json& traced) {
    if (!traced.is_number()) return shown == traced;
    double want = traced.get<double>();
    return std::abs(shown.get<double>() - want) <= 1e-4 * std::max(1.0, std::abs(want));
}

}  // namespace

TEST_CASE("view: the stepper's machine is the trace's at every step, in the viewer's terms", "[view]") {
    // P5 stepped symbolically, as the playground steps it: the line, every register, the reads
    // and stores per element so far and the step's access, at each step of the run.
    const std::string path = "programs/p5_online_softmax.toy";
    json trace = trace_json({path});
    app::OwnedSession<SymbolicDomain> owned(std::make_shared<const Program>(build_file(path)), SessionLimits{});
    json start = machine_at(owned, 0);
    CHECK(start["line"] == trace["steps"][0]["line"]);
    CHECK(start["next"] == true);
    CHECK(start["values"] == json::array({"", "", "", ""}));
    CHECK(start["dram"].empty());
    std::map<std::string, std::vector<int>> reads, stores;
    for (const auto& a : {"x", "out"}) reads[a] = stores[a] = std::vector<int>(4);
    for (const auto& t : trace["steps"]) {
        std::uint64_t k = t["step"];
        INFO("step " << k);
        json m = machine_at(owned, k);
        CHECK(m["line"] == t["line"]);
        CHECK(m["next"] == false);
        REQUIRE(m["registers"] == trace["registers"]);
        for (size_t i = 0; i < m["registers"].size(); ++i) {
            std::string name = m["registers"][i];
            CHECK(m["values"][i] == t["registers"].value(name, ""));
            bool wrote = !t["writes"].empty() && t["writes"][0].value("register", "") == name;
            CHECK((m["reg"] == i) == wrote);
        }
        for (const auto& a : t["dram"]) (a["access"] == "read" ? reads : stores)[a["array"].get<std::string>()][a["index"][0].get<size_t>()]++;
        CHECK(m["arrays"][0]["name"] == "x");
        CHECK(m["cells"][0]["reads"] == json(reads["x"]));
        CHECK(m["cells"][1]["written"] == json(stores["out"]));
        CHECK(m["dram"].size() == t["dram"].size());
        CHECK(m["fault"].is_null());
    }
    // The example: step 17 is line 38.
    CHECK(machine_at(owned, 17)["line"] == 38);
}

TEST_CASE("view: the stepper's tiles hold their last write, and the block the step overwrote", "[view]") {
    const std::string path = "programs/attention/seed001_fa2_tiled.toy";
    json trace = trace_json({path});
    app::OwnedSession<NumericDomain> owned(std::make_shared<const Program>(build_file(path)), SessionLimits{});
    json m = machine_at(owned, 33);
    const json& write = trace["steps"][32]["writes"][0];
    REQUIRE(write["tile"] == "o");
    const json& o = m["tiles"][m["tile"].get<size_t>()];
    CHECK(o["name"] == "o");
    CHECK(o["shape"] == write["shape"]);
    for (const char* key : {"block", "old"}) {
        const json& traced = write[std::string(key) == "block" ? "new" : "old"];
        for (size_t i = 0; i < traced.size(); ++i)
            for (size_t j = 0; j < traced[i].size(); ++j) CHECK(near(o[key][i][j], traced[i][j]));
    }
    // A tile not written yet has no shape and no values.
    json start = machine_at(owned, 0);
    CHECK(start["tiles"][0]["shape"].is_null());
    CHECK_FALSE(start["tiles"][0].contains("block"));
    CHECK(start["tile"].is_null());
}

TEST_CASE("view: the stepper's machine names the fault the run ends on", "[view]") {
    Program p = build("registers 2\ninput x[2]\noutput y[1]\nLOAD x[0], R0\nLOAD y[0], R1\nSTORE R1, y[0]\n");
    app::OwnedSession<NumericDomain> owned(std::make_shared<const Program>(p), SessionLimits{});
    CHECK(owned.session().forward(10).reason == Stop::Reason::Fault);
    json m = json::parse(view_state_json(owned.session(), owned.style()).dump());
    CHECK(m["line"] == 4);
    CHECK(m["fault"]["line"] == 5);
    CHECK(m["fault"]["col"] == 6);
    CHECK(m["fault"]["message"] == "y[0] is read before anything was stored there (y is an output array)");
}
