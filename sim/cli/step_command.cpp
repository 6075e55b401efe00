// `toysim step`: the interactive stepper. Commands as a gdb or rr user types them (short forms,
// Enter repeats), read from the terminal with line editing or, when standard input is not a
// terminal, line by line from it, so a class demo or a test can script a session.
#include <atomic>
#include <csignal>
#include <fmt/format.h>
#include <optional>

#include "sim/app/session.h"
#include "sim/cli/common.h"
#include "sim/cli/line_reader.h"
#include "sim/cli/step_commands.h"
#include "sim/print/step_report.h"
#include "support/text.h"

namespace toysim::cli {

namespace {

std::atomic<bool> g_interrupt{false};
extern "C" void on_interrupt(int) { g_interrupt.store(true); }

// Ctrl-C during a move stops the move, not the session.
class InterruptGuard {
public:
    explicit InterruptGuard(bool active) : active_(active) {
        if (!active_) return;
        g_interrupt.store(false);
        struct sigaction sa {};
        sa.sa_handler = on_interrupt;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &previous_);
    }
    ~InterruptGuard() {
        if (active_) sigaction(SIGINT, &previous_, nullptr);
    }

private:
    bool active_;
    struct sigaction previous_ {};
};

std::uint64_t count_argument(const std::string& text, std::uint64_t fallback, std::string_view command) {
    if (text.empty()) return fallback;
    auto v = parse_whole_number(text);
    if (!v) throw ToyError(fmt::format("{} takes a whole number, not {}", command, quoted_name(text)));
    return *v;
}

const std::vector<std::string_view> kStepCommands = {"step", "next", "back", "reverse-step", "goto", "continue", "reverse-continue", "break",
                                                     "watch", "delete", "info", "print", "regs", "mem", "counters", "list", "where", "help",
                                                     "quit"};

}  // namespace

// print W:R3 (or W:o, W:o[1][2]): a register or tile as worker W holds it: its own register
// file, as its last step left it.
template <class Domain>
std::string print_on_worker(Session<Domain>& s, const std::string& worker_text, const std::string& what, const StepStyle& style) {
    const Program& p = s.program();
    auto w = parse_whole_number(worker_text);
    if (!w || *w >= static_cast<std::uint64_t>(p.workers))
        throw ToyError(fmt::format("there is no worker {}: the machine has {} (workers 0..{})", worker_text,
                                   p.workers == 1 ? "one worker" : fmt::format("{} workers", p.workers), p.workers - 1));
    std::string name(trim(what.substr(0, what.find('['))));
    const bool register_name = (name.size() > 1 && (name[0] == 'R' || name[0] == 'r') && name.find_first_not_of("0123456789", 1) == std::string::npos);
    if (!register_name && p.find_tile(name) < 0)
        throw ToyError(fmt::format("{}: print W:WHAT shows a register or a tile of worker W (R3, o, o[1][2]); DRAM is shared by every "
                                   "worker: print it without W:", quoted_name(what)));
    const auto worker = static_cast<std::uint32_t>(*w);
    // Each worker's registers and tiles change only on its own steps, so what it holds now is
    // what it held after its last step.
    const auto* last = s.last_event();
    const bool in_loop = last && last->parallel.iteration != 0;
    if (!in_loop && (worker == 0 || s.state().contexts.empty()))
        return fmt::format("no parallel loop is running: worker 0 runs alone, and its registers are the machine's\n{}",
                           format_print(s, what, style));
    if (s.state().contexts.empty())  // one worker: it runs every step
        return fmt::format("worker {} (it ran this step):\n{}", worker, format_print(s, what, style));
    std::string heading = in_loop && worker == last->parallel.worker ? fmt::format("worker {} (it ran this step):", worker)
                          : in_loop ? fmt::format("worker {}, as its last step left it:", worker)
                                    : fmt::format("worker {}, as the last parallel loop left it:", worker);
    s.exchange_worker_part(worker);
    std::string text;
    try {
        text = format_print(s, what, style);
    } catch (...) {
        s.exchange_worker_part(worker);
        throw;
    }
    s.exchange_worker_part(worker);
    return heading + "\n" + text;
}

// On several workers the machine already stands at the next worker's instruction: registers
// and tiles are shown as the worker that ran the step shown holds them, for as long as this
// lives.
template <class Domain>
class StepWorkerShown {
public:
    explicit StepWorkerShown(Session<Domain>& s) : s_(s) {
        const auto* last = s.last_event();
        if (last && last->parallel.iteration != 0 && !s.state().contexts.empty() && last->parallel.worker != s.state().parallel.worker) {
            worker_ = last->parallel.worker;
            s.exchange_worker_part(*worker_);
        }
    }
    ~StepWorkerShown() {
        if (worker_) s_.exchange_worker_part(*worker_);
    }
    StepWorkerShown(const StepWorkerShown&) = delete;
    StepWorkerShown& operator=(const StepWorkerShown&) = delete;

private:
    Session<Domain>& s_;
    std::optional<std::uint32_t> worker_;
};

template <class Domain>
bool execute_step_command(Session<Domain>& s, const std::string& line, const StepStyle& style, std::ostream& out, bool interactive) {
    std::string word = line.substr(0, line.find(' '));
    std::string arg(trim(line.size() > word.size() ? std::string_view(line).substr(word.size()) : std::string_view()));
    auto move = [&](auto&& how) {
        InterruptGuard guard(interactive);
        Stop stop = how();
        StepWorkerShown<Domain> shown(s);  // the registers of the worker that ran the step, not the next one's
        out << format_stop(s, stop, style);
    };
    if (word == "step" || word == "s" || word == "next" || word == "n") {
        std::uint64_t n = count_argument(arg, 1, word);
        move([&] { return s.forward(n); });
    } else if (word == "back" || word == "reverse-step" || word == "rs" || word == "reverse-next" || word == "rn") {
        std::uint64_t n = count_argument(arg, 1, word);
        move([&] { return s.backward(n); });
    } else if (word == "goto" || word == "g") {
        if (arg.empty()) throw ToyError("goto takes a step number: goto 17 (goto 0 is the start)");
        std::uint64_t step = count_argument(arg, 0, word);
        move([&] { return s.go_to(step); });
    } else if (word == "continue" || word == "c") {
        move([&] { return s.run_forward(); });
    } else if (word == "reverse-continue" || word == "rc") {
        move([&] { return s.run_backward(); });
    } else if (word == "break" || word == "b" || word == "watch") {
        int number = s.add_breakpoint(parse_breakpoint(s.program(), arg, word == "watch"));
        out << fmt::format("breakpoint {}: {}\n", number, s.breakpoints().back().text);
    } else if (word == "delete" || word == "d") {
        if (arg.empty()) {
            out << fmt::format("deleted {} breakpoint{}\n", s.breakpoints().size(), s.breakpoints().size() == 1 ? "" : "s");
            s.breakpoints().clear();
        } else {
            auto n = count_argument(arg, 0, word);
            if (n > 1'000'000 || !s.delete_breakpoint(static_cast<int>(n))) throw ToyError(fmt::format("no breakpoint {}", arg));
            out << fmt::format("deleted breakpoint {}\n", n);
        }
    } else if (word == "info" || word == "i") {
        if (arg == "breakpoints" || arg == "b" || arg == "break" || arg == "watchpoints") out << format_breakpoints(s.breakpoints());
        else if (arg == "registers" || arg == "r" || arg == "regs") {
            StepWorkerShown<Domain> shown(s);
            out << format_registers(s, style);
        }
        else if (arg == "checkpoints") out << format_checkpoints(s);
        else if (arg == "workers" || arg == "devices") out << format_workers(s);
        else throw ToyError("info breakpoints, info registers, info checkpoints or info workers (info devices)");
    } else if (word == "print" || word == "p") {
        if (size_t colon = arg.find(':'); colon != std::string::npos && colon > 0 &&
                                           arg.find_first_not_of("0123456789") == colon)
            out << print_on_worker(s, arg.substr(0, colon), arg.substr(colon + 1), style);
        else {
            StepWorkerShown<Domain> shown(s);
            out << format_print(s, arg, style);
        }
    } else if (word == "regs") {
        StepWorkerShown<Domain> shown(s);
        out << format_registers(s, style);
    } else if (word == "mem" || word == "x") {
        std::string array = arg.substr(0, arg.find(' '));
        std::string row(trim(arg.size() > array.size() ? std::string_view(arg).substr(array.size()) : std::string_view()));
        if (array.empty()) throw ToyError("mem takes an array: mem x (or mem x 100, from row 100)");
        auto first = count_argument(row, 0, "mem ARRAY");
        out << format_memory(s, array, static_cast<std::int64_t>(std::min<std::uint64_t>(first, INT64_MAX)), style);
    } else if (word == "counters") {
        out << format_session_counters(s);
    } else if (word == "list" || word == "l") {
        std::optional<int> line_number;
        if (!arg.empty()) line_number = static_cast<int>(std::min<std::uint64_t>(count_argument(arg, 0, word), 1u << 30));
        out << format_listing(s, line_number);
    } else if (word == "where" || word == "bt") {
        out << format_stop(s, Stop{}, style);
    } else if (word == "help" || word == "h") {
        out << step_help();
    } else if (word == "quit" || word == "q" || word == "exit") {
        return false;
    } else {
        throw ToyError(fmt::format("unknown command {}{}; type 'help' for the commands", quoted_name(word), did_you_mean(word, kStepCommands)));
    }
    return true;
}

template bool execute_step_command(Session<NumericDomain>&, const std::string&, const StepStyle&, std::ostream&, bool);
template bool execute_step_command(Session<SymbolicDomain>&, const std::string&, const StepStyle&, std::ostream&, bool);

namespace {

template <class Domain>
class Stepper {
public:
    Stepper(Session<Domain>& session, StepStyle style, Context& ctx, bool interactive)
        : s_(session), style_(style), ctx_(ctx), interactive_(interactive) {}

    bool execute(const std::string& line) { return execute_step_command(s_, line, style_, ctx_.out, interactive_); }

    int loop(LineReader& reader) {
        std::string last;
        bool failed = false;
        while (auto line = reader.read("(toysim) ")) {
            std::string command(trim(*line));
            if (command.empty()) {
                if (last.empty()) continue;
                command = last;  // Enter repeats the last command, as in gdb
            }
            last = command;
            try {
                if (!execute(command)) break;
            } catch (const ToyError& e) {
                ctx_.out.flush();
                ctx_.err << "error: " << e.what() << "\n";
                ctx_.err.flush();
                failed = true;
            }
            ctx_.out.flush();
        }
        // A script with a mistake in it says so in its exit code; at a terminal the mistake
        // was seen and corrected.
        return failed && !interactive_ ? kBadInput : kOk;
    }

private:
    Session<Domain>& s_;
    StepStyle style_;
    Context& ctx_;
    bool interactive_;
};

template <class Domain>
int run_session(Session<Domain>& session, StepStyle style, Context& ctx, const std::string& banner) {
    bool interactive = ctx.in_is_terminal && ctx.out_is_terminal;
    if (interactive) session.interrupted = [] { return g_interrupt.load(); };
    ctx.out << banner << format_stop(session, Stop{}, style);
    LineReader reader(ctx.in, ctx.out, interactive);
    Stepper<Domain> stepper(session, style, ctx, interactive);
    return stepper.loop(reader);
}

}  // namespace

int step_command(const StepArgs& o, Context& ctx) {
    Program p = load_program(o.file, settings_from(o.sets), ctx);
    if (p.cache)
        ctx.err << fmt::format("note: the stepper does not run the program's cache (line {}): it shows DRAM traffic in elements; `toysim run` "
                               "counts the cache\n",
                               p.cache->loc.line);
    const app::SessionPlan plan = app::plan_session(p, {o.values, o.max_steps}, app::Spelling::cli());
    const bool color = o.color == "always" || (o.color == "auto" && ctx.out_is_terminal);
    auto program = std::make_shared<const Program>(std::move(p));

    // The count-only pass counts instructions exactly (a fault would end the run sooner).
    std::string length = fmt::format("the run has {} steps", grouped(static_cast<double>(plan.steps)));
    auto banner = [&](std::string_view values, std::string_view note) {
        return fmt::format("toysim step: {} ({}); {}; values {}{}; {}.\nType 'help' for the commands.\n",
                           program->source ? program->source->path : o.file, format_params(*program), program->register_file_text(), values,
                           note, length);
    };
    if (plan.symbolic) {
        app::OwnedSession<SymbolicDomain> owned(program, plan.limits);
        owned.style().color = color;
        return run_session(owned.session(), owned.style(), ctx, banner("symbolic", ""));
    }
    app::OwnedSession<NumericDomain> owned(program, plan.limits);
    owned.style().color = color;
    std::string note = o.values == "auto" && !program->has_tiles()
                           ? fmt::format(" (symbolic is for runs of up to {} steps)", grouped(static_cast<double>(kSymbolicSessionSteps)))
                           : "";
    return run_session(owned.session(), owned.style(), ctx, banner("numeric", note));
}

}  // namespace toysim::cli
