#include "sim/check/run.h"

#include <chrono>

#include "sim/check/fill.h"
#include "sim/exec/dram_cache.h"
#include "sim/exec/parallel.h"

namespace toysim {

namespace {

// Runs in chunks so a long run can report progress; the executor itself never calls out. With
// a sink (a program with a cache), every instruction is reported to it.
void run_machine(Machine<NumericDomain>& m, const RunOptions& options, EventSink<double>* sink) {
    auto run_to = [&](std::uint64_t pause) {
        if (sink) m.run_until(pause, options.max_steps, *sink);
        else m.run_until(pause, options.max_steps);
    };
    if (!options.on_progress) return run_to(kNoPause);
    // A pause past the step limit is no pause: run_until faults at the limit on its own.
    while (!m.halted()) {
        std::uint64_t steps = m.state().steps;
        run_to(steps > kNoPause - RunOptions::kProgressSteps ? kNoPause : steps + RunOptions::kProgressSteps);
        if (!m.halted()) options.on_progress(m.state().steps);
    }
}

RunResult run_numeric(const Program& p, const RunOptions& options, bool keep_fault) {
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state(), options.fill_stream);
    std::optional<DramCache> cache;
    std::optional<CacheSink<double>> cache_sink;
    if (p.cache) cache_sink.emplace(cache.emplace(p));
    auto start = std::chrono::steady_clock::now();
    std::optional<ToyError> fault;
    try {
        run_machine(m, options, cache_sink ? &*cache_sink : nullptr);
    } catch (const ToyError& e) {
        if (!keep_fault) throw;
        fault = e;
    }
    RunResult r;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.counters = m.counters();
    if (cache) r.counters.cache = cache->counts();
    r.fault = fault;
    if (fault || !options.grade) return r;  // counters up to the fault; nothing to grade
    for (const auto& spec : p.checks) r.checks.push_back(evaluate_check(p, m.state(), spec));
    for (const auto& e : p.expects) r.expects.push_back(evaluate_expect(r.counters, e));
    r.dram = std::move(m.state().dram);
    r.present = std::move(m.state().present);
    return r;
}

// Keeps what a trace prints of each event.
template <class Value>
struct TraceRecorder final : EventSink<Value> {
    Trace* trace;
    std::vector<Value>* values;
    bool devices = false;  // the cycle a step ended on is its device's clock (a RECV's wait included)
    void keep_block(const Value* data, std::int64_t rows, std::int64_t cols, TraceStep& s, bool old) {
        auto r = static_cast<std::int32_t>(std::min<std::int64_t>(rows, kTraceBlock));
        auto c = static_cast<std::int32_t>(std::min<std::int64_t>(cols, kTraceBlock));
        (old ? s.first_old : s.first) = static_cast<std::uint32_t>(values->size());
        for (std::int32_t i = 0; i < r; ++i)
            for (std::int32_t j = 0; j < c; ++j) values->push_back(data[i * cols + j]);
        if (!old) {
            s.rows = r;
            s.cols = c;
        }
    }
    void on_event(const Event<Value>& e) override {
        TraceStep s;
        s.pc = e.pc;
        s.op = e.op;
        s.cycle = devices ? worker_clock(e.parallel, e.cycle) : e.cycle;
        s.cost = e.cost;
        s.work = e.work;
        s.worker = e.parallel.worker;
        s.grid = e.parallel.iteration != 0 ? e.parallel.first_iteration : 0;
        s.vars = e.vars;
        s.reg = e.reg;
        s.tile = e.tile;
        s.reg_was_written = e.reg_was_written;
        if (!e.accesses.empty()) s.access = e.accesses.front();
        Value now{}, before{};
        if (e.reg >= 0) {
            now = e.reg_new;
            before = e.reg_old;
        } else if (writes_dram(e.op) && !e.dram_new.empty()) {
            now = e.dram_new.front();
            before = e.dram_old.front();
        }
        if constexpr (std::is_same_v<Value, double>) {
            s.number = now;
            s.number_old = before;
        } else {
            s.symbol = now;
            s.symbol_old = before;
        }
        if (e.tile >= 0) {
            s.full_rows = e.rows;
            s.full_cols = e.cols;
            s.old_rows = e.old_rows;
            s.old_cols = e.old_cols;
            keep_block(e.tile_new.data(), e.rows, e.cols, s, false);
            keep_block(e.tile_old.data(), e.rows, e.cols, s, true);
            s.has_old_block = true;
        } else if (writes_dram(e.op) && e.dram_new.size() > 1) {
            const DramAccess& a = e.accesses.front();
            s.full_rows = a.rows;
            s.full_cols = a.cols;
            keep_block(e.dram_new.data(), a.rows, a.cols, s, false);
        }
        trace->steps.push_back(s);
    }
};

template <class Domain>
void record(const Program& p, Machine<Domain>& m, Trace& t, std::vector<typename Domain::Value>& values, const RunOptions& options) {
    TraceRecorder<typename Domain::Value> recorder;
    recorder.trace = &t;
    recorder.values = &values;
    recorder.devices = p.devices != 0;
    std::optional<DramCache> cache;
    std::optional<CacheSink<typename Domain::Value>> cache_sink;
    if (p.cache) cache_sink.emplace(cache.emplace(p), &recorder);
    try {
        if (cache_sink) m.run_until(kNoPause, options.max_steps, *cache_sink);
        else m.run_until(kNoPause, options.max_steps, recorder);
    } catch (const ToyError& e) {
        t.error = e;
    }
    t.counters = m.counters();
    if (cache) t.counters.cache = cache->counts();
    // Any worker's (or device's): on several, each has its own file, and a run that stopped in a
    // grid holds the running one's in the machine and the others' in their contexts.
    const auto& s = m.state();
    for (int r = 0; r < p.scalar_registers; ++r) {
        const auto at = static_cast<size_t>(r);
        bool used = s.written[at] != 0;
        for (const auto& c : s.contexts) used = used || (at < c.written.size() && c.written[at] != 0);
        if (used) t.registers_used.push_back(r);
    }
}

}  // namespace

bool RunResult::checks_ok() const {
    for (const auto& c : checks)
        if (!c.ok) return false;
    return !fault;
}

bool RunResult::expects_ok() const {
    for (const auto& e : expects)
        if (!e.ok) return false;
    return !fault;
}

std::vector<double> RunResult::array_values(const Program& p, int array) const {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(array)];
    std::vector<double> out(static_cast<size_t>(a.size));
    for (std::int64_t i = 0; i < a.size; ++i) {
        auto at = static_cast<size_t>(a.base + i);
        out[static_cast<size_t>(i)] = at < present.size() && present[at] ? dram[at] : NAN;
    }
    return out;
}

RunResult run(const Program& p, const RunOptions& options) { return run_numeric(p, options, false); }
RunResult run_to_verdict(const Program& p, const RunOptions& options) { return run_numeric(p, options, true); }

bool shows_symbols(std::string_view values, const Program& program, bool fits) {
    return values == "symbolic" || (values == "auto" && !program.has_tiles() && fits);
}

Trace trace(const Program& p, bool symbolic, const RunOptions& options) {
    Trace t;
    t.symbolic = symbolic;
    if (symbolic) {
        Machine<SymbolicDomain> m(p, SymbolicDomain{&t.arena, &p});
        fill_symbolic_inputs(p, m.state(), t.arena);
        record(p, m, t, t.tile_symbols, options);
    } else {
        Machine<NumericDomain> m(p, NumericDomain{});
        fill_inputs(p, m.state(), options.fill_stream);
        record(p, m, t, t.tile_numbers, options);
    }
    return t;
}

}  // namespace toysim
