// Count-only analysis: how much a run would move (count_traffic) and how much it would execute
// (estimate_work), from the loop structure, without executing an instruction. Per instruction,
// only the loops that change what it moves or how often it runs are iterated; every other loop
// is a multiplicative trip count, and a slice that slides along a loop is summed in closed
// form. Arithmetic is the language's checked arithmetic (sim/lower/integer.h). See cost.h.
#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "sim/analysis/cost.h"

namespace toysim {

namespace {

using integer::Interval;
using i64 = std::int64_t;
using u64 = std::uint64_t;

// Why a saturating walk (estimate_work) stopped early: a count past 64 bits, or more loop
// iterations than its budget.
struct Saturated {};
struct OverBudget {};

// Loop iterations all of estimate_work's walks together may take before each remaining
// instruction gets an upper bound instead of its exact count (about a second).
constexpr u64 kEstimateBudget = 20'000'000;

void mark_vars(const Affine& a, std::vector<bool>& relevant) {
    for (int t = 0; t < a.terms; ++t)
        if (a.coef[t] != 0 && a.var[t] < relevant.size()) relevant[a.var[t]] = true;
}

// end − start, when no loop variable is left in it (nullopt too when it overflows).
std::optional<i64> constant_width(const Affine& start, const Affine& end) {
    for (int slot = 0; slot < kMaxLoopDepth; ++slot)
        if (end.coefficient(slot) != start.coefficient(slot)) return std::nullopt;
    return integer::sub(end.constant, start.constant);
}

// Where an instruction's memory operand is written, for errors about its traffic.
Loc memory_operand_loc(const Program& p, size_t pc) {
    const ast::Instruction* in = p.origin[pc];
    if (!in) return {};
    const OpInfo& op = info(in->op);
    for (int i = 0; i < op.operand_count() && static_cast<size_t>(i) < in->operands.size(); ++i)
        if (op.operand(i) == OperandKind::MemRead || op.operand(i) == OperandKind::MemWrite)
            return in->operands[static_cast<size_t>(i)].loc;
    return in->loc;
}

// The executions of one instruction (no MemRef) or the elements it moves (a MemRef), summed
// over its enclosing loops. Exact mode (count_traffic) throws a located ToyError when a value
// or a count leaves 64 bits; saturating mode (estimate_work) throws Saturated or OverBudget.
class Walker {
public:
    Walker(const Program& p, const std::vector<int>& enclosing, const MemRef* m, Loc where, u64* budget)
        : p_(p), m_(m), where_(where), budget_(budget) {
        for (int l : enclosing) chain_.push_back(&p.loops[static_cast<size_t>(l)]);
    }

    u64 count() {
        size_t depth = chain_.size();
        // Every value each loop variable can take; a loop that can never run means the
        // instruction never executes. A bound that overflows leaves the variable unknown.
        vars_range_.assign(kMaxLoopDepth, Interval::point(0));
        for (size_t k = 0; k < depth; ++k) {
            const LoopInfo& l = *chain_[k];
            if (static_cast<size_t>(l.slot) != k) throw ToyError("count_traffic: loop slots do not follow nesting depth");
            auto lo = l.lo.range(vars_range_.data()), hi = l.hi.range(vars_range_.data());
            Interval values = lo && hi ? integer::loop_values(*lo, *hi) : Interval::everything();
            if (values.empty()) return 0;
            vars_range_[k] = values;
        }
        // Which loops must be iterated: those a varying slice extent or a loop bound reads.
        relevant_.assign(depth, false);
        for (const LoopInfo* l : chain_) {
            mark_vars(l->lo, relevant_);
            mark_vars(l->hi, relevant_);
        }
        if (m_) {
            const ArrayInfo& a = p_.arrays[static_cast<size_t>(m_->array)];
            for (size_t d = 0; d < m_->subscripts.size(); ++d) {
                if (!m_->is_range[d]) continue;
                auto width = constant_width(m_->subscripts[d], m_->ends[d]);
                auto ends = m_->ends[d].range(vars_range_.data());
                if (width && ends && ends->hi <= a.dims[d]) {
                    // Never clipped, and always the same width: no iteration needed.
                    constant_extent_ = mul(constant_extent_, static_cast<u64>(std::max<i64>(*width, 0)));
                    continue;
                }
                variable_dims_.push_back(d);
                mark_vars(m_->subscripts[d], relevant_);
                mark_vars(m_->ends[d], relevant_);
            }
        }
        if (constant_extent_ == 0) return 0;
        skip_.assign(m_ ? m_->subscripts.size() : 0, false);
        find_sliding_dims();
        return walk(0);
    }

    // An upper bound without iterating: every loop at its widest range, every execution
    // moving `per_execution` elements at most. Saturates.
    u64 bound(u64 per_execution) const {
        u64 n = per_execution;
        for (size_t k = 0; k < chain_.size(); ++k) {
            const Interval& r = vars_range_[k];
            n = integer::saturating_mul(n, integer::saturating_add(static_cast<u64>(r.hi) - static_cast<u64>(r.lo), 1));
        }
        return n;
    }

private:
    const Program& p_;
    const MemRef* m_;
    Loc where_;
    u64* budget_;  // saturating mode: iterations left; null: exact mode
    std::vector<const LoopInfo*> chain_;
    std::vector<Interval> vars_range_;
    std::vector<bool> relevant_;
    std::vector<size_t> variable_dims_;
    std::vector<bool> skip_;  // per dimension: summed in closed form by an enclosing level
    // Per loop level: the one clipped dimension whose sum over this loop has a closed form
    // (see find_sliding_dims), or -1.
    std::vector<int> sliding_;
    u64 constant_extent_ = 1;
    i64 vars_[kMaxLoopDepth] = {};

    static bool mentions_deeper(const Affine& a, size_t slot) {
        for (int t = 0; t < a.terms; ++t)
            if (a.var[t] > slot && a.coef[t] != 0) return true;
        return false;
    }

    // A level whose variable v only slides one range of constant width W forward (start and
    // end both v·a + ..., a > 0), with nothing deeper depending on v: the range is whole up to
    // some v, then clipped for fewer than W/a + 1 values, then past the edge. Its sum over v is
    // then arithmetic, and the deeper levels need walking once, not once per v. This keeps the
    // tiled loop of a causal (triangular) attention at n = 10⁶ in milliseconds.
    void find_sliding_dims() {
        sliding_.assign(chain_.size(), -1);
        if (!m_) return;
        for (size_t k = 0; k < chain_.size(); ++k) {
            if (!relevant_[k]) continue;
            int slot = static_cast<int>(k);
            bool bounds = false;
            for (size_t j = k + 1; j < chain_.size(); ++j)
                bounds = bounds || chain_[j]->lo.coefficient(slot) != 0 || chain_[j]->hi.coefficient(slot) != 0;
            if (bounds) continue;
            int found = -1, uses = 0;
            for (size_t d : variable_dims_)
                if (m_->subscripts[d].coefficient(slot) != 0 || m_->ends[d].coefficient(slot) != 0) {
                    ++uses;
                    found = static_cast<int>(d);
                }
            if (uses != 1) continue;
            const Affine& start = m_->subscripts[static_cast<size_t>(found)];
            const Affine& end = m_->ends[static_cast<size_t>(found)];
            if (mentions_deeper(start, k) || mentions_deeper(end, k) || !constant_width(start, end) || end.coefficient(slot) <= 0)
                continue;
            sliding_[k] = found;
        }
    }

    // ---- arithmetic: checked in exact mode, Saturated in saturating mode ----
    [[noreturn]] void overflow() const {
        if (budget_) throw Saturated{};
        std::string what = m_ ? fmt::format("the traffic of array '{}'", p_.arrays[static_cast<size_t>(m_->array)].name)
                              : std::string("the number of times this instruction runs");
        throw ToyError(where_, fmt::format("{} overflows 64 bits", what));
    }
    u64 mul(u64 a, u64 b) const {
        auto v = integer::count_mul(a, b);
        if (!v) overflow();
        return *v;
    }
    u64 add(u64 a, u64 b) const {
        auto v = integer::count_add(a, b);
        if (!v) overflow();
        return *v;
    }
    // A subscript or slice end, with the loop variables set.
    i64 value(const Affine& a) const {
        i64 v;
        if (!a.eval_checked(vars_, v)) {
            if (budget_) throw Saturated{};
            throw ToyError(where_, fmt::format("a subscript of array '{}' overflows 64-bit integers",
                                               p_.arrays[static_cast<size_t>(m_->array)].name));
        }
        return v;
    }
    i64 bound_value(const LoopInfo& l, const Affine& a) const {
        i64 v;
        if (!a.eval_checked(vars_, v)) {
            if (budget_) throw Saturated{};
            throw ToyError(l.loc, fmt::format("the bounds of loop '{}' overflow 64-bit integers", l.var));
        }
        return v;
    }
    void spend() {
        if (budget_ && (*budget_ == 0 || --*budget_ == 0)) throw OverBudget{};
    }

    // Σ over v in [lo, hi) of the clipped extent of dimension d, which slides with level k:
    // with u = v − lo, the range is s0 + a·u .. e0 + a·u (a > 0), of constant width e0 − s0.
    u64 sliding_sum(size_t k, size_t d, i64 lo, i64 hi) {
        const Affine& start = m_->subscripts[d];
        const Affine& end = m_->ends[d];
        vars_[k] = lo;
        i64 s0 = value(start), e0 = value(end);
        auto a = static_cast<u64>(end.coefficient(static_cast<int>(k)));
        i64 dim = p_.arrays[static_cast<size_t>(m_->array)].dims[d];
        auto width = integer::sub(e0, s0);
        if (!width) overflow();
        u64 trips = integer::trip_count(lo, hi);
        // Whole: e0 + a·u <= dim, for u = 0 .. whole − 1.
        u64 whole = 0;
        if (e0 <= dim) {
            u64 last = (static_cast<u64>(dim) - static_cast<u64>(e0)) / a;
            whole = last >= trips ? trips : last + 1;
        }
        u64 sum = mul(whole, static_cast<u64>(std::max<i64>(*width, 0)));
        // Clipped: past the edge but starting inside it (s0 + a·u < dim): dim − s0 − a·u
        // elements each, a positive run that falls by a per step.
        if (s0 < dim && whole < trips) {
            u64 room = static_cast<u64>(dim) - static_cast<u64>(s0);  // dim − s0 >= 1
            u64 last = std::min(trips - 1, (room - 1) / a);
            if (whole <= last) {
                u64 count = last - whole + 1;
                u64 first = room - a * whole;  // dim − s(whole), at least 1 (whole <= last)
                u64 pairs = count % 2 == 0 ? mul(count / 2, count - 1) : mul(count, (count - 1) / 2);
                sum = add(sum, mul(count, first) - mul(a, pairs));  // every term positive: no wrap
            }
        }
        // Beyond that the slice starts past the array: nothing (a run stops with an error there).
        return sum;
    }

    // Elements moved by one execution (1: one execution), with the relevant loop variables set.
    u64 extent() const {
        u64 n = constant_extent_;
        if (!m_) return n;
        const ArrayInfo& a = p_.arrays[static_cast<size_t>(m_->array)];
        for (size_t d : variable_dims_) {
            if (skip_[d]) continue;
            i64 start = value(m_->subscripts[d]), end = std::min(value(m_->ends[d]), a.dims[d]);  // the edge tile is clipped
            n = end <= start ? 0 : mul(n, static_cast<u64>(end) - static_cast<u64>(start));
        }
        return n;
    }

    u64 walk(size_t k) {
        if (k == chain_.size()) return extent();
        const LoopInfo& l = *chain_[k];
        i64 lo = bound_value(l, l.lo), hi = bound_value(l, l.hi);
        u64 trip = integer::trip_count(lo, hi);
        if (trip == 0) return 0;
        if (!relevant_[k]) {
            u64 inner = walk(k + 1);
            return inner == 0 ? 0 : mul(trip, inner);
        }
        if (int d = sliding_[k]; d >= 0) {
            skip_[static_cast<size_t>(d)] = true;
            u64 inner = walk(k + 1);  // nothing deeper reads v
            skip_[static_cast<size_t>(d)] = false;
            return inner == 0 ? 0 : mul(inner, sliding_sum(k, static_cast<size_t>(d), lo, hi));
        }
        u64 sum = 0;
        for (i64 v = lo; v < hi; ++v) {
            spend();
            vars_[k] = v;
            sum = add(sum, walk(k + 1));
        }
        return sum;
    }
};

// ---- estimate_work ----

// Units of work one execution of a tile instruction other than LOAD and STORE does at most,
// from the declared capacities of its operands (shapes are dynamic, up to those): a product's
// r·k·c multiply-adds, a reduction's source elements, otherwise the elements produced, which
// must fit the destination.
u64 tile_work_bound(const Program& p, const TileInst& t) {
    auto shape = [&](int k) -> std::pair<u64, u64> {
        const TileOperand& a = t.args[static_cast<size_t>(k)];
        if (a.kind != TileOperand::Kind::Tile) return {1, 1};
        const Tile& b = p.tiles[static_cast<size_t>(a.index)];
        auto rows = static_cast<u64>(b.rows), cols = static_cast<u64>(b.cols);
        return a.transposed ? std::pair{cols, rows} : std::pair{rows, cols};
    };
    if (t.count == 0) return 1;
    OpShape kind = info(t.op).shape;  // as the executor dispatches (isa/opcodes.h)
    bool matmul = kind == OpShape::Product && t.count >= 2 && t.args[0].kind == TileOperand::Kind::Tile &&
                  t.args[1].kind == TileOperand::Kind::Tile;
    if (matmul) {
        auto [ra, ka] = shape(0);
        auto [kb, cb] = shape(1);
        return integer::saturating_mul(integer::saturating_mul(ra, std::min(ka, kb)), cb);
    }
    auto [rows, cols] = kind == OpShape::RowReduce ? shape(0) : shape(t.count - 1);
    return integer::saturating_mul(rows, cols);
}

// The elements a tile LOAD or STORE moves at most in one execution: its tile's capacity.
u64 slice_capacity(const Program& p, const TileInst& t) {
    if (t.count == 0) return 1;
    const TileOperand& a = t.args[0];
    if (a.kind != TileOperand::Kind::Tile) return 1;
    const Tile& b = p.tiles[static_cast<size_t>(a.index)];
    return integer::saturating_mul(static_cast<u64>(b.rows), static_cast<u64>(b.cols));
}

// A saturating walk: its count, or on a count past 64 bits UINT64_MAX, or once the budget is
// spent the walker's upper bound; `exact` is cleared when it is not the exact count.
u64 estimate(const Program& p, size_t pc, const MemRef* m, u64 per_execution, u64& budget, bool& exact) {
    Walker w(p, p.enclosing_loops[pc], m, Loc{}, &budget);
    try {
        return w.count();
    } catch (const Saturated&) {
        exact = false;
        return integer::kMaxCount;
    } catch (const OverBudget&) {
        exact = false;
        return w.bound(per_execution);
    }
}

}  // namespace

// ---- public API ----

std::vector<ArrayTraffic> count_traffic(const Program& p) {
    std::vector<ArrayTraffic> out(p.arrays.size());
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        const Inst& in = p.code[pc];
        Op op;
        int mem;
        if (in.code == Code::Tile) {
            const TileInst& t = p.tile_insts[static_cast<size_t>(in.mem)];
            op = t.op;
            mem = t.mem;
        } else if (static_cast<int>(in.code) < kOpCount && info(static_cast<Op>(in.code)).klass == OpClass::Memory) {
            op = static_cast<Op>(in.code);
            mem = in.mem;
        } else {
            continue;
        }
        if (info(op).klass != OpClass::Memory || mem < 0) continue;
        const MemRef& m = p.mems[static_cast<size_t>(mem)];
        Loc where = memory_operand_loc(p, pc);
        std::uint64_t n = Walker(p, p.enclosing_loops[pc], &m, where, nullptr).count();
        auto add = [&](std::uint64_t& total) {
            auto sum = integer::count_add(total, n);
            if (!sum)
                throw ToyError(where, fmt::format("the traffic of array '{}' overflows 64 bits", p.arrays[static_cast<size_t>(m.array)].name));
            total = *sum;
        };
        if (reads_dram(op)) add(out[static_cast<size_t>(m.array)].reads);
        if (writes_dram(op)) add(out[static_cast<size_t>(m.array)].writes);
    }
    return out;
}

WorkEstimate estimate_work(const Program& p) {
    WorkEstimate w;
    u64 budget = kEstimateBudget;
    // An instruction runs as often as any other in the same innermost loop.
    std::map<int, std::pair<u64, bool>> runs_in;
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        const Inst& in = p.code[pc];
        if (in.code == Code::LoopBegin || in.code == Code::LoopEnd || in.code == Code::Halt) continue;
        const auto& loops = p.enclosing_loops[pc];
        int innermost = loops.empty() ? -1 : loops.back();
        auto cached = runs_in.find(innermost);
        if (cached == runs_in.end()) {
            bool exact = true;
            u64 runs = estimate(p, pc, nullptr, 1, budget, exact);
            cached = runs_in.emplace(innermost, std::pair{runs, exact}).first;
        }
        auto [runs, runs_exact] = cached->second;
        w.exact = w.exact && runs_exact;
        w.instructions = integer::saturating_add(w.instructions, runs);
        u64 units = runs;  // a scalar instruction is one unit of work
        if (in.code == Code::Tile) {
            const TileInst& t = p.tile_insts[static_cast<size_t>(in.mem)];
            if (info(t.op).klass == OpClass::Memory && t.mem >= 0) {
                units = estimate(p, pc, &p.mems[static_cast<size_t>(t.mem)], slice_capacity(p, t), budget, w.exact);
            } else {
                units = integer::saturating_mul(runs, tile_work_bound(p, t));
                w.exact = false;
            }
        } else if (in.code == Code::SEND || in.code == Code::RECV) {  // a unit an element it moves, at most its array's
            const MemRef& m = p.mems[static_cast<size_t>(in.mem)];
            units = estimate(p, pc, &m, static_cast<u64>(p.arrays[static_cast<size_t>(m.array)].size), budget, w.exact);
        }
        w.units = integer::saturating_add(w.units, units);
    }
    return w;
}

}  // namespace toysim
