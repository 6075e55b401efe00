#include "sim/cli/app.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <fmt/format.h>
#include <memory>
#include <set>

#include "sim/analysis/cost.h"
#include "sim/print/cost_report.h"
#include "sim/front/parser.h"
#include "sim/lower/program.h"
#include "sim/reference/reference.h"
#include "sim/print/report.h"
#include "sim/support/text.h"

namespace toysim::cli {

namespace {

constexpr int kOk = 0, kCheckFailed = 1, kBadInput = 2;

Format parse_format(const std::string& name) {
    if (name == "json") return Format::Json;
    if (name == "markdown") return Format::Markdown;
    if (name == "csv") return Format::Csv;
    return Format::Table;
}

// A program file read, parsed and bound; errors carry the source for their caret line.
struct Loaded {
    std::shared_ptr<const SourceFile> source;
    std::shared_ptr<const ast::Program> tree;
    Program program;
};

Loaded load(const std::string& path, const ParamSettings& settings, std::shared_ptr<const SourceFile>& source_for_errors) {
    Loaded l;
    l.source = SourceFile::read(path);
    source_for_errors = l.source;
    l.tree = std::make_shared<const ast::Program>(parse(l.source));
    l.program = compile(l.tree, settings);
    return l;
}

ParamSettings settings_from(const std::vector<std::string>& sets) {
    ParamSettings out;
    for (const auto& s : sets) out.push_back(parse_setting(s));
    return out;
}

std::string isa_listing() {
    std::string out = "instruction set (destination last, as in the seed; cycles per unit of work, one unit per scalar\n"
                      "instruction; on tiles see isa/README.md):\n";
    int meaning = 0;
    for (const auto& row : all_ops()) meaning = std::max(meaning, display_width(row.meaning));
    for (const auto& row : all_ops())
        out += fmt::format("  {:<6} {:<16} {} {} cycle{}\n", row.mnemonic, row.operands, pad_right(std::string(row.meaning), meaning),
                           row.cycles, row.cycles == 1 ? "" : "s");
    out += "\nreference functions for 'check' (and for computed inputs):\n";
    size_t width = 0;
    for (const auto& f : reference_functions()) width = std::max(width, f.signature.size());
    for (const auto& f : reference_functions()) out += fmt::format("  {:<{}} {}\n", f.signature, width, f.meaning);
    return out;
}

// compare and sweep: one column per run; exit 1 if any check or expected figure failed.
int side_by_side(const std::vector<std::string>& names, const std::vector<Program>& programs, const std::vector<RunResult>& results,
                 Format format, std::ostream& out) {
    std::vector<const Program*> program_ptrs;
    std::vector<const RunResult*> result_ptrs;
    bool ok = true;
    for (size_t i = 0; i < programs.size(); ++i) {
        program_ptrs.push_back(&programs[i]);
        result_ptrs.push_back(&results[i]);
        ok = ok && results[i].checks_ok() && results[i].expects_ok();
    }
    out << format_compare(names, program_ptrs, result_ptrs, format);
    return ok ? kOk : kCheckFailed;
}

// Every combination of the swept values, the first --set varying slowest.
std::vector<ParamSettings> sweep_settings(const std::vector<std::string>& sets) {
    std::vector<ParamSettings> combos{{}};
    for (const auto& s : sets) {
        auto eq = s.find('=');
        std::string name = s.substr(0, eq);
        std::vector<std::int64_t> values;
        if (eq != std::string::npos) {
            std::string list = s.substr(eq + 1);
            for (size_t start = 0;;) {
                size_t comma = list.find(',', start);
                values.push_back(parse_setting(name + "=" + list.substr(start, comma - start)).second);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        } else {
            parse_setting(s);  // throws the usual message
        }
        std::vector<ParamSettings> next;
        for (const auto& c : combos)
            for (auto v : values) {
                ParamSettings more = c;
                more.emplace_back(name, v);
                next.push_back(std::move(more));
            }
        combos = std::move(next);
    }
    return combos;
}

int sweep(const std::string& file, const std::vector<std::string>& sets, Format format, std::ostream& out,
          std::shared_ptr<const SourceFile>& source) {
    source = SourceFile::read(file);
    auto tree = std::make_shared<const ast::Program>(parse(source));
    std::vector<Program> programs;
    std::vector<RunResult> results;
    std::vector<std::string> names;
    for (const auto& settings : sweep_settings(sets)) {
        programs.push_back(compile(tree, settings));
        results.push_back(run(programs.back()));
        std::string name;
        for (const auto& [k, v] : settings) name += fmt::format("{}{}={}", name.empty() ? "" : " ", k, v);
        names.push_back(name);
    }
    return side_by_side(names, programs, results, format, out);
}

}  // namespace

int main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    CLI::App app{"toysim: a cycle-accurate toy machine for learning how FlashAttention works.\n"
                 "Runs .toy instruction programs (LOAD, STORE, MAC, EXP, ...) and counts cycles and DRAM traffic.",
                 "toysim"};
    app.set_version_flag("--version", fmt::format("toysim {}", kVersion));
    app.require_subcommand(1);
    app.footer("\n" + isa_listing() +
               "\nexit codes: 0 ok, 1 a check or an expected figure failed, 2 bad input or a run-time fault.\n"
               "Run 'toysim COMMAND --help' for examples.");

    std::string file, format = "table", values = "auto";
    std::vector<std::string> files, sets;
    bool stats = false, ditto = false;
    std::uint64_t max_steps = 0;
    const std::vector<std::string> formats = {"table", "json", "markdown", "csv"};
    const CLI::Validator positive(
        [](std::string& text) -> std::string {
            std::uint64_t v = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (ec != std::errc() || end != text.data() + text.size() || v == 0)
                return "'" + text + "' is not a positive whole number";
            return "";
        },
        "POSITIVE");

    // Every command prints in the same four formats.
    auto add_format = [&](CLI::App* command) {
        command->add_option("--format", format, "table, json, markdown or csv")->check(CLI::IsMember(formats));
    };

    auto* run_cmd = app.add_subcommand("run", "Run a program: its check verdict, expected figures and every counter.");
    run_cmd->add_option("file", file, "the .toy program")->required();
    run_cmd->add_option("--set", sets, "override a parameter, e.g. --set n=1024 (repeatable)");
    add_format(run_cmd);
    run_cmd->add_flag("--stats", stats, "also report simulated instructions per second");
    std::vector<std::string> shown_arrays;
    run_cmd->add_option("--show", shown_arrays, "also print an array's final values (repeatable), e.g. --show O");
    run_cmd->add_option("--max-steps", max_steps, "stop with an error after this many instructions (default 10000000000)")
        ->check(positive);
    run_cmd->footer("\nexamples:\n"
                    "  toysim run programs/p1_c00.toy\n"
                    "  toysim run programs/p4_softmax_3pass.toy --set n=1000000\n"
                    "  toysim run programs/matmul_inner.toy --set n=256 --stats\n"
                    "  toysim run programs/p3_matmul_outer_6reg.toy --format json");

    auto* trace_cmd = app.add_subcommand("trace", "Print the step table: each instruction and the registers after it.");
    trace_cmd->add_option("file", file, "the .toy program")->required();
    trace_cmd->add_option("--set", sets, "override a parameter, e.g. --set n=4 (repeatable)");
    trace_cmd->add_option("--values", values,
                          "symbolic (a00·b00, the seed's notation) or numeric; by default symbolic, and numeric for tile programs")
        ->check(CLI::IsMember({"auto", "symbolic", "numeric"}));
    trace_cmd->add_option("--max-steps", max_steps, "stop with an error after this many instructions (default 10000)")
        ->check(positive);
    add_format(trace_cmd);
    trace_cmd->add_flag("--ditto", ditto, "print \" where a register is unchanged since the row above, as the seed does");
    trace_cmd->footer("\nexamples:\n"
                      "  toysim trace programs/p1_c00.toy\n"
                      "  toysim trace programs/p3_matmul_outer_6reg.toy --ditto\n"
                      "  toysim trace programs/p5_online_softmax.toy --set n=4 --values numeric\n"
                      "  toysim trace programs/p4_softmax_3pass.toy --format markdown\n"
                      "  toysim trace programs/attention/seed001_fa2_tiled.toy");

    std::vector<std::string> sweep_sets;
    auto* sweep_cmd = app.add_subcommand("sweep", "Every counter of one program across parameter values, side by side.");
    sweep_cmd->add_option("file", file, "the .toy program")->required();
    sweep_cmd->add_option("--set", sweep_sets,
                          "NAME=V1,V2,... values to sweep (repeatable; several lists sweep every combination)")
        ->required();
    add_format(sweep_cmd);
    sweep_cmd->footer("\nexamples:\n"
                      "  toysim sweep programs/p5_online_softmax.toy --set n=10,100,1000\n"
                      "  toysim sweep programs/attention/fa2.toy --set n=128,256,512,1024 --format csv\n"
                      "  toysim sweep programs/attention/fa1.toy --set n=256 --set Bc=16,32,64");

    auto* cost_cmd = app.add_subcommand("cost", "DRAM reads and writes per array as formulas of the parameters, without running.");
    cost_cmd->add_option("file", file, "the .toy program")->required();
    cost_cmd->add_option("--set", sets, "evaluate the formulas at these parameter values, e.g. --set n=1000000");
    add_format(cost_cmd);
    cost_cmd->footer("\nThe formulas come from the loops and slices of the program; the counts beside them come from a\n"
                     "count-only pass over the loops (no arithmetic), so both answer at any n in milliseconds.\n"
                     "\nexamples:\n"
                     "  toysim cost programs/attention/fa2.toy\n"
                     "  toysim cost programs/attention/fa1.toy --set n=1000000 --set d=128 --set Bc=128\n"
                     "  toysim cost programs/p4_softmax_3pass.toy --format json");

    auto* compare_cmd = app.add_subcommand("compare", "Side-by-side cost table of several programs.");
    compare_cmd->add_option("files", files, "the .toy programs")->required();
    compare_cmd->add_option("--set", sets, "override a parameter in every program that declares it");
    add_format(compare_cmd);
    compare_cmd->footer("\nexamples:\n"
                        "  toysim compare programs/p2_matmul_inner_3reg.toy programs/p3_matmul_outer_6reg.toy\n"
                        "  toysim compare programs/p4_softmax_3pass.toy programs/p5_online_softmax.toy --set n=1000");

    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e, out, err);
        return code == 0 ? kOk : kBadInput;
    }

    std::shared_ptr<const SourceFile> source;
    try {
        ParamSettings settings = settings_from(sets);
        if (run_cmd->parsed()) {
            Loaded l = load(file, settings, source);
            RunOptions options;
            if (max_steps) options.max_steps = max_steps;
            std::vector<int> shown;
            for (const auto& name : shown_arrays) {
                int a = l.program.find_array(name);
                if (a < 0) throw ToyError(fmt::format("--show {}: the program has no array '{}'", name, name));
                if (format == "json" || format == "csv") throw ToyError("--show prints a block of numbers; use it with --format table or markdown");
                shown.push_back(a);
            }
            RunResult r = run(l.program, options);
            out << format_run(l.program, r, parse_format(format), stats);
            for (int a : shown) out << "\n" << format_array(l.program, r, a);
            return r.checks_ok() && r.expects_ok() ? kOk : kCheckFailed;
        }
        if (trace_cmd->parsed()) {
            Loaded l = load(file, settings, source);
            RunOptions options;
            options.max_steps = max_steps ? max_steps : 10'000;
            bool symbolic = values == "symbolic" || (values == "auto" && !l.program.has_tiles());
            Trace t = trace(l.program, symbolic, options);
            out << format_trace(l.program, t, TraceOptions{parse_format(format), ditto});
            if (t.error) {
                err << format_error(*t.error, source.get());
                return kBadInput;
            }
            return kOk;
        }
        if (sweep_cmd->parsed()) return sweep(file, sweep_sets, parse_format(format), out, source);
        if (cost_cmd->parsed()) {
            Loaded l = load(file, settings, source);
            out << format_cost(l.program, derive_formulas(l.program), count_traffic(l.program), parse_format(format));
            return kOk;
        }
        // compare: --set applies to the programs that declare the parameter.
        std::set<std::string> used;
        std::vector<Loaded> loaded;
        std::vector<RunResult> results;
        std::vector<std::string> names;
        for (const auto& f : files) {
            auto src = SourceFile::read(f);
            source = src;
            auto tree = std::make_shared<const ast::Program>(parse(src));
            ParamSettings mine;
            for (const auto& s : settings)
                for (const auto& p : tree->params)
                    if (p.name == s.first) {
                        mine.push_back(s);
                        used.insert(s.first);
                    }
            Loaded l{src, tree, compile(tree, mine)};
            results.push_back(run(l.program));
            loaded.push_back(std::move(l));
            std::string name = f.substr(f.find_last_of('/') + 1);
            names.push_back(name.substr(0, name.rfind(".toy")));
        }
        source.reset();
        for (const auto& s : settings)
            if (!used.count(s.first)) throw ToyError(fmt::format("--set {}: no program here has a parameter '{}'", s.first, s.first));
        std::vector<Program> programs;
        for (auto& l : loaded) programs.push_back(std::move(l.program));
        return side_by_side(names, programs, results, parse_format(format), out);
    } catch (const ToyError& e) {
        err << format_error(e, source.get(), "toysim");
        return kBadInput;
    }
}

}  // namespace toysim::cli
