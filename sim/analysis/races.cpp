// Race freedom from the subscripts (races.h): for each pair of accesses to one array inside a
// parallel loop's iteration that could conflict, look for a dimension that keeps two different
// iterations apart, one grid variable at a time.
#include "sim/analysis/races.h"

#include <algorithm>
#include <fmt/format.h>

namespace toysim {

namespace {

using integer::Interval;
using i64 = std::int64_t;

// Every value each loop variable can take at instruction `pc` (slot-indexed; unused slots 0).
std::vector<Interval> variable_ranges(const Program& p, size_t pc) {
    std::vector<Interval> ranges(kMaxLoopDepth, Interval::point(0));
    for (int l : p.enclosing_loops[pc]) {
        const LoopInfo& loop = p.loops[static_cast<size_t>(l)];
        auto lo = loop.lo.range(ranges.data()), hi = loop.hi.range(ranges.data());
        ranges[static_cast<size_t>(loop.slot)] = lo && hi ? integer::loop_values(*lo, *hi) : Interval::everything();
    }
    return ranges;
}

// An access's elements along one dimension: start .. end − 1 (one element: end = start + 1).
struct Extent {
    Affine start, end;
};

std::optional<Extent> extent(const MemRef& m, size_t d) {
    Extent e{m.subscripts[d], m.subscripts[d]};
    if (m.is_range[d]) {
        e.end = m.ends[d];
    } else {
        auto end = integer::add(e.end.constant, 1);
        if (!end) return std::nullopt;
        e.end.constant = *end;
    }
    return e;
}

// `a` without its term in `slot`.
Affine without(Affine a, int slot) {
    for (int t = 0; t < a.terms; ++t)
        if (a.var[t] == slot) a.coef[t] = 0;
    return a;
}

struct Side {
    std::optional<Extent> extent;  // nullopt: its end overflows, nothing is proven from it
    const std::vector<Interval>* ranges;  // the values of its loop variables
};

// Whether dimension d keeps two iterations that differ in grid slot g apart for accesses x, y:
// both move by the same stride a along g and by nothing along the other grid slots, and what
// is left (the part of the index not owed to g) differs between them by less than |a|. Terms of
// the loops around the grid are the same in both iterations: where x and y have them alike, they
// cancel.
bool separates(const Side& x, const Side& y, int g, const std::vector<int>& grid_slots, int outer_slots) {
    if (!x.extent || !y.extent) return false;
    const Affine* forms[] = {&x.extent->start, &x.extent->end, &y.extent->start, &y.extent->end};
    const i64 a = forms[0]->coefficient(g);
    if (a == 0 || a == integer::kMin) return false;
    for (const Affine* f : forms) {
        if (f->coefficient(g) != a) return false;
        for (int other : grid_slots)
            if (other != g && f->coefficient(other) != 0) return false;
    }
    auto span = [&](const Side& s, const std::vector<bool>& cancelled) -> std::optional<Interval> {
        std::vector<Interval> ranges = *s.ranges;
        for (int slot = 0; slot < outer_slots; ++slot)
            if (cancelled[static_cast<size_t>(slot)]) ranges[static_cast<size_t>(slot)] = Interval::point(0);
        auto lo = without(s.extent->start, g).range(ranges.data()), hi = without(s.extent->end, g).range(ranges.data());
        if (!lo || !hi) return std::nullopt;
        if (lo->empty() || hi->empty()) return Interval{};
        return Interval{lo->lo, hi->hi - 1};
    };
    std::vector<bool> cancelled(static_cast<size_t>(outer_slots), false);
    for (int slot = 0; slot < outer_slots; ++slot) {
        const i64 c = forms[0]->coefficient(slot);
        cancelled[static_cast<size_t>(slot)] = std::all_of(std::begin(forms), std::end(forms), [&](const Affine* f) { return f->coefficient(slot) == c; });
    }
    auto sx = span(x, cancelled), sy = span(y, cancelled);
    if (!sx || !sy) return false;
    if (sx->empty() || sy->empty()) return true;  // one of them never moves an element
    // Iterations g1 ≠ g2 meet only if a·(g1 − g2) = (what y adds) − (what x adds), which lies in
    // [sy.lo − sx.hi, sy.hi − sx.lo]; |a·(g1 − g2)| ≥ |a|.
    auto low = integer::sub(sy->lo, sx->hi), high = integer::sub(sy->hi, sx->lo);
    if (!low || !high) return false;
    const i64 stride = a < 0 ? -a : a;
    return *low > -stride && *high < stride;
}

bool may_conflict(AccessKind x, AccessKind y) {
    if (x == AccessKind::Read && y == AccessKind::Read) return false;
    if (x == AccessKind::Accumulate && y == AccessKind::Accumulate) return false;  // adds commute
    return true;
}

}  // namespace

std::vector<RaceProof> prove_race_freedom(const Program& p) {
    std::vector<RaceProof> proofs;
    for (size_t k = 0; k < p.loops.size(); ++k) {
        if (!p.loops[k].grid_outer) continue;
        RaceProof proof;
        proof.loop = static_cast<int>(k);
        if (p.loops[k].devices) {
            proof.vars.push_back(p.loops[k].var);
            proof.proven = proof.devices = true;
            proofs.push_back(std::move(proof));
            continue;
        }
        // A grid's loops are each the whole body of the one before: consecutive in Program::loops.
        std::vector<int> grid_slots;
        size_t inner = k;
        for (;; ++inner) {
            grid_slots.push_back(p.loops[inner].slot);
            proof.vars.push_back(p.loops[inner].var);
            if (p.loops[inner].grid_inner) break;
        }
        const int outer_slots = p.loops[k].slot;
        // Each access, with its MemRef and the values its loop variables take (found once).
        std::vector<ParallelAccess> accesses;
        std::vector<const MemRef*> refs;
        std::vector<std::vector<Interval>> ranges;
        for (auto pc = p.loops[inner].body.first; pc < p.loops[inner].body.second; ++pc) {
            const std::int32_t mem = p.memref_at(pc);
            if (mem < 0) continue;
            const Op op = p.op_at(pc);
            const MemRef& m = p.mems[static_cast<size_t>(mem)];
            accesses.push_back({pc, op, access_kind(op), m.array});
            refs.push_back(&m);
            ranges.push_back(variable_ranges(p, static_cast<size_t>(pc)));
        }
        auto side = [&](size_t a, size_t d) { return Side{extent(*refs[a], d), &ranges[a]}; };
        proof.proven = true;
        for (size_t i = 0; i < accesses.size() && proof.proven; ++i)
            for (size_t j = i; j < accesses.size() && proof.proven; ++j) {
                const ParallelAccess &x = accesses[i], &y = accesses[j];
                if (x.array != y.array || !may_conflict(x.kind, y.kind)) continue;
                const size_t dims = p.arrays[static_cast<size_t>(x.array)].dims.size();
                for (size_t v = 0; v < grid_slots.size(); ++v) {
                    const int g = grid_slots[v];
                    bool kept_apart = false;
                    for (size_t d = 0; d < dims && !kept_apart; ++d) kept_apart = separates(side(i, d), side(j, d), g, grid_slots, outer_slots);
                    if (kept_apart) continue;
                    proof.proven = false;
                    // The write goes first in the message.
                    const bool swap = x.kind == AccessKind::Read;
                    proof.first = swap ? y : x;
                    proof.second = swap ? x : y;
                    proof.unseparated_var = proof.vars[v];
                    break;
                }
            }
        if (proof.proven) {
            auto add = [](std::vector<int>& arrays, int a) {
                if (std::find(arrays.begin(), arrays.end(), a) == arrays.end()) arrays.push_back(a);
            };
            for (const ParallelAccess& a : accesses)
                if (a.kind == AccessKind::Write) add(proof.written_arrays, a.array);
            for (const ParallelAccess& a : accesses)
                if (a.kind == AccessKind::Accumulate &&
                    std::find(proof.written_arrays.begin(), proof.written_arrays.end(), a.array) == proof.written_arrays.end())
                    add(proof.added_arrays, a.array);
        }
        proofs.push_back(std::move(proof));
    }
    return proofs;
}

std::string describe_race_proof(const Program& p, const RaceProof& proof) {
    auto names = [&](const std::vector<int>& arrays) {
        std::string out;
        for (size_t i = 0; i < arrays.size(); ++i)
            out += (i == 0 ? "" : i + 1 == arrays.size() ? " and " : ", ") + p.arrays[static_cast<size_t>(arrays[i])].name;
        return out;
    };
    if (proof.devices) return "race-free: each device touches only the elements in its own DRAM, which a run checks at every access";
    if (proof.proven) {
        if (proof.written_arrays.empty() && proof.added_arrays.empty()) return "race-free: its iterations only read DRAM";
        std::string what;
        if (!proof.written_arrays.empty()) what = fmt::format("each iteration writes elements of {} of its own", names(proof.written_arrays));
        if (!proof.added_arrays.empty())
            what += fmt::format("{}iterations share {} only by adding with STORE_ADD", what.empty() ? "" : ", and ", names(proof.added_arrays));
        return "proven race-free from the subscripts: " + what;
    }
    auto where = [&](const ParallelAccess& a) {
        const ast::Instruction* in = p.origin[static_cast<size_t>(a.pc)];
        return fmt::format("{} at {}:{}", info(a.op).mnemonic, in ? in->loc.line : 0, in ? in->loc.col : 0);
    };
    const std::string& array = p.arrays[static_cast<size_t>(proof.first.array)].name;
    std::string pair = proof.first.pc == proof.second.pc ? fmt::format("the {}", where(proof.first))
                                                         : fmt::format("the {} and the {}", where(proof.first), where(proof.second));
    return fmt::format("not proven race-free: {} may meet in an element of {} from two values of {} (no subscript of {} moves with {} "
                       "alone by more than the rest of it spans); `toysim run` checks every access",
                       pair, array, proof.unseparated_var, array, proof.unseparated_var);
}

}  // namespace toysim
