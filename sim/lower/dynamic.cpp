// R[expr] inside a parallel loop: each iteration's registers are its own, so a register the
// loop writes may be read only after this iteration wrote it (what read_private proves for a
// named register). A named register is followed by name; R[expr] is followed by the values
// its index takes:
//   - a write records the index and the loops open around it; once those loops close, and
//     their bounds are numbers (or follow only one another), the registers it wrote are
//     counted one by one and are written from then on (`for j in 0..t { LOAD …, R[1 + j] }`
//     writes R1 to Rt);
//   - a read is proven when every register its index can name is written by now in this
//     iteration, or is one no instruction of the loop writes (the value the loop found), or
//     is the same R[expr] an earlier instruction of the same straight run of code wrote.
// What cannot be proven is refused at its operand, as an unproven named read is.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "sim/lower/compiler.h"

namespace toysim::detail {

namespace {

// At most this many values of a loop nest are counted to settle a write.
constexpr std::int64_t kMaxSettledValues = std::int64_t{1} << 16;

bool same_affine(const Affine& a, const Affine& b) {
    if (a.constant != b.constant || a.terms != b.terms) return false;
    for (int t = 0; t < a.terms; ++t)
        if (a.coefficient(a.var[static_cast<size_t>(t)]) != b.coefficient(a.var[static_cast<size_t>(t)])) return false;
    return true;
}

}  // namespace

// The registers R[index] can name here, clipped to the register file; nullopt: any of them.
std::optional<Interval> Compiler::registers_named(const Affine& index) const {
    Interval r = range(index);
    if (r.empty()) return r;
    if (r == Interval::everything()) return std::nullopt;
    return Interval{std::max<std::int64_t>(r.lo, 0), std::min<std::int64_t>(r.hi, p_.scalar_registers - 1)};
}

void Compiler::dynamic_write(const Affine& index, Loc loc) {
    dynamic_writes_.push_back({index, open_loops_, loc});
    run_writes_.push_back({run_, index});
    if (parallel_depth_ == 0) return;
    const auto named = registers_named(index);
    const Interval all{0, p_.scalar_registers - 1};
    const Interval r = named ? *named : all;
    for (std::int64_t k = r.lo; k <= r.hi; ++k) written_inside_[static_cast<size_t>(k)] = true;
}

void Compiler::dynamic_read(const Affine& index, Loc loc) {
    for (const auto& [run, written] : run_writes_)
        if (run == run_ && same_affine(written, index)) return;  // the register this run of code wrote
    const auto named = registers_named(index);
    if (parallel_depth_ == 0) {
        // After a parallel loop, a register its iterations wrote holds whichever worker's value
        // until it is written again (read_private's rule for a named one).
        if (!named) return;  // unbounded: the run checks each register it names for a value
        for (std::int64_t k = named->lo; k <= named->hi; ++k) {
            const auto r = static_cast<size_t>(k);
            if (clobbered_[r] < 0 || definitely_written_[r]) continue;
            const LoopInfo& l = p_.loops[static_cast<size_t>(clobbered_[r])];
            throw ToyError(loc, fmt::format("R[expr] may name R{}, which the iterations of the parallel loop over {} (line {}) wrote: after "
                                            "that loop it holds whichever worker's value, so write it again before reading it",
                                            k, l.var, l.loc.line));
        }
        return;
    }
    const LoopInfo& l = p_.loops[static_cast<size_t>(innermost_iteration_loop())];
    if (!named)
        throw ToyError(loc, fmt::format("R[expr] inside the parallel loop over {} (line {}) can name any register: its index is not bounded by "
                                        "the loops, so no register it reads can be proven written earlier in the iteration",
                                        l.var, l.loc.line));
    for (std::int64_t k = named->lo; k <= named->hi; ++k) {
        const auto r = static_cast<size_t>(k);
        if (definitely_written_[r] || !iteration_writes_[r]) continue;
        throw ToyError(loc, fmt::format("R[expr] may name R{} here, which this iteration of the parallel loop over {} (line {}) has not "
                                        "surely written yet: each iteration runs on a worker of its own, which may have run another "
                                        "iteration before, so inside the loop a register the loop writes is read only after the "
                                        "iteration writes it (a write by R[expr] counts once the loops around it close, where their "
                                        "bounds are numbers)",
                                        k, l.var, l.loc.line));
    }
}

// Serial loop `index` closed: the R[expr] writes in its body whose index and loops depend on
// nothing outside it are counted, register by register (inside a parallel iteration, for the
// reads that follow; outside, as written again after a parallel loop).
void Compiler::settle_dynamic_writes(int index) {
    const LoopInfo& closed = p_.loops[static_cast<size_t>(index)];
    for (auto it = dynamic_writes_.begin(); it != dynamic_writes_.end();) {
        const auto at = std::find(it->loops.begin(), it->loops.end(), index);
        if (at == it->loops.end()) {
            ++it;
            continue;
        }
        const std::vector<int> nest(at, it->loops.end());  // the closed loop and those inside it around the write
        auto inside = [&](const Affine& a) {
            for (int t = 0; t < a.terms; ++t)
                if (a.var[static_cast<size_t>(t)] < closed.slot) return false;
            return true;
        };
        bool countable = inside(it->index);
        for (int k : nest) countable = countable && inside(p_.loops[static_cast<size_t>(k)].lo) && inside(p_.loops[static_cast<size_t>(k)].hi);
        if (!countable) {
            ++it;
            continue;
        }
        // Walk the nest's values (the closed loop's bounds are numbers; each inner one's follow
        // the loops above it), marking each register the write names.
        std::array<std::int64_t, kMaxLoopDepth> vars{};
        std::int64_t walked = 0;
        bool complete = true;
        auto walk = [&](auto&& self, std::size_t depth) -> void {
            if (!complete) return;
            if (depth == nest.size()) {
                std::int64_t r = 0;
                if (++walked > kMaxSettledValues || !it->index.eval_checked(vars.data(), r)) {
                    complete = false;
                    return;
                }
                if (r >= 0 && r < p_.scalar_registers) {
                    definitely_written_[static_cast<size_t>(r)] = true;
                    clobbered_[static_cast<size_t>(r)] = -1;  // written again since a parallel loop left it
                }
                return;
            }
            const LoopInfo& l = p_.loops[static_cast<size_t>(nest[depth])];
            std::int64_t lo = 0, hi = 0;
            if (!l.lo.eval_checked(vars.data(), lo) || !l.hi.eval_checked(vars.data(), hi)) {
                complete = false;
                return;
            }
            for (std::int64_t v = lo; v < hi && complete; ++v) {
                vars[static_cast<size_t>(l.slot)] = v;
                self(self, depth + 1);
            }
        };
        // A walk cut short has marked only registers the write surely wrote: still true.
        walk(walk, 0);
        it = dynamic_writes_.erase(it);
    }
}

// Every register a parallel loop's body may write by R[expr], from the interval of its index
// (the body's loops entered as lower_loop enters them); false where an index is unbounded.
bool Compiler::collect_dynamic_writes(const std::vector<ast::Statement>& body, std::vector<bool>& regs) {
    for (const auto& st : body) {
        if (const auto* loop = std::get_if<std::unique_ptr<ast::Loop>>(&st)) {
            const ast::Loop& l = **loop;
            if (static_cast<int>(scope_.size()) >= kMaxLoopDepth) return false;  // lower_loop says so at its line
            const Interval values = integer::loop_values(range(affine(*l.lo)), range(l.hi ? affine(*l.hi) : Affine{p_.devices}));
            const int slot = static_cast<int>(scope_.size());
            scope_.emplace_back(l.var, slot);
            ranges_.resize(scope_.size());
            ranges_[static_cast<size_t>(slot)] = values;
            const bool bounded = collect_dynamic_writes(l.body, regs);
            scope_.pop_back();
            ranges_.resize(scope_.size());
            if (!bounded) return false;
            continue;
        }
        const auto& in = std::get<ast::Instruction>(st);
        const OpInfo& op = info(in.op);
        for (int i = 0; i < op.operand_count() && i < static_cast<int>(in.operands.size()); ++i) {
            const ast::Operand& o = in.operands[static_cast<size_t>(i)];
            if (op.operand(i) != OperandKind::RegWrite || o.kind != ast::Operand::Kind::IndexedRegister) continue;
            const auto named = registers_named(affine(*o.reg_index));
            if (!named) return false;
            for (std::int64_t k = named->lo; k <= named->hi; ++k) regs[static_cast<size_t>(k)] = true;
        }
    }
    return true;
}

}  // namespace toysim::detail
