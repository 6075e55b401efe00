#include "sim/step/recording.h"

#include <algorithm>
#include <cmath>

#include "sim/check/fill.h"
#include "sim/exec/parallel.h"

namespace toysim {

namespace {

template <class Value>
struct Recorder final : EventSink<Value> {
    Recording<Value>& out;
    std::int64_t side;  // pooled cells per side, at most
    Recorder(Recording<Value>& r, std::int64_t s) : out(r), side(s) {}

    void on_event(const Event<Value>& e) override {
        RecordedStep<Value> s;
        s.pc = e.pc;
        s.op = e.op;
        s.vars = e.vars;
        s.cycle = e.cycle;
        s.cost = e.cost;
        s.work = e.work;
        s.worker = e.parallel.worker;
        s.grid = e.parallel.iteration != 0 ? e.parallel.first_iteration : 0;
        if (!e.parallel.worker_free.empty()) {
            s.makespan = makespan(e.parallel, e.cycle);
            s.clock = worker_clock(e.parallel, e.cycle);
        }
        s.reg = e.reg;
        if (e.reg >= 0) s.value = e.reg_new;
        else if (writes_dram(e.op) && e.dram_new.size() == 1) s.value = e.dram_new.front();
        if (!e.accesses.empty()) s.access = e.accesses.front();
        if (e.tile >= 0) {
            s.tile = e.tile;
            s.rows = e.rows;
            s.cols = e.cols;
            s.pool_rows = static_cast<std::int32_t>(std::min(e.rows, side));
            s.pool_cols = static_cast<std::int32_t>(std::min(e.cols, side));
            s.first = static_cast<std::uint32_t>(out.pooled.size());
            pool_block(e.tile_new.data(), e.cols, e.rows, e.cols, s.pool_rows, s.pool_cols, out.pooled);
        }
        out.steps.push_back(s);
    }
};

std::int64_t pool_side(std::uint64_t expected_steps) {
    double per_step = static_cast<double>(kPooledValueBudget) / static_cast<double>(std::max<std::uint64_t>(1, expected_steps));
    return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::sqrt(per_step)), 1, kMaxPoolSide);
}

template <class Domain>
void record(Machine<Domain>& m, Recording<typename Domain::Value>& r, std::uint64_t expected_steps, std::uint64_t max_steps) {
    r.steps.reserve(static_cast<size_t>(std::min<std::uint64_t>(expected_steps, max_steps)));
    Recorder<typename Domain::Value> recorder(r, pool_side(expected_steps));
    try {
        m.run_until(kNoPause, max_steps, recorder);
    } catch (const ToyError& e) {
        r.fault = e;
    }
    r.counters = m.counters();
}

}  // namespace

// Cell (i, j) of a pr × pc pooling covers rows [i·rows/pr, (i+1)·rows/pr) and likewise
// columns, the same split the viewer draws.
template <class Value>
void pool_block(const Value* values, std::int64_t stride, std::int64_t rows, std::int64_t cols, std::int64_t pr, std::int64_t pc,
                std::vector<Value>& out) {
    for (std::int64_t i = 0; i < pr; ++i)
        for (std::int64_t j = 0; j < pc; ++j) {
            std::int64_t r0 = i * rows / pr, r1 = (i + 1) * rows / pr, c0 = j * cols / pc, c1 = (j + 1) * cols / pc;
            if constexpr (std::is_same_v<Value, double>) {
                double sum = 0;
                for (std::int64_t r = r0; r < r1; ++r)
                    for (std::int64_t c = c0; c < c1; ++c) sum += values[r * stride + c];
                out.push_back(sum / static_cast<double>((r1 - r0) * (c1 - c0)));
            } else {
                out.push_back(values[i * stride + j]);  // top-left: no mean of expressions
            }
        }
}
template void pool_block(const double*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::vector<double>&);
template void pool_block(const std::uint32_t*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::vector<std::uint32_t>&);

Recording<double> record_numeric(const Program& p, std::uint64_t expected_steps, std::uint64_t max_steps) {
    Recording<double> r;
    Machine<NumericDomain> m(p, NumericDomain{});
    fill_inputs(p, m.state());
    record(m, r, expected_steps, max_steps);
    return r;
}

Recording<std::uint32_t> record_symbolic(const Program& p, ExprArena& arena, std::uint64_t expected_steps, std::uint64_t max_steps) {
    Recording<std::uint32_t> r;
    Machine<SymbolicDomain> m(p, SymbolicDomain{&arena, &p});
    fill_symbolic_inputs(p, m.state(), arena);
    record(m, r, expected_steps, max_steps);
    return r;
}

}  // namespace toysim
