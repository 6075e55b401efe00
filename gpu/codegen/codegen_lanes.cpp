// A scalar grid whose iterations keep more registers than a GPU thread holds, spread over a
// group of threads an iteration (issue 38, part 4).
//
// matmul_outer.toy keeps a t×t tile of partial sums in one worker's registers, as Problem 3
// does: at t = 32, 1,057 registers. A thread an iteration spills them (4,232 bytes a thread at
// n = 256, 0.00× its hand-written kernel). The loops over those registers, though, are loops
// whose iterations are independent: `for j { MAC R0, R[1 + j], R[1 + t + i*t + j], ... }`
// writes register 1 + t + i·t + j in iteration j and reads only that one, R[1 + j], and R0,
// which no iteration writes. Such a loop's iterations can run at once, on `lanes_` threads:
// iteration j on lane (j − lo) mod lanes_, which keeps the registers that iteration writes.
// The rest of the code runs on every lane alike (each loads what it reads, lane 0 alone
// stores and counts), so every lane holds the registers no lane loop writes.
//
// A lane keeps register X of its own at R[X − lane]: the register lane 0 would keep in the
// same place, a number once the loops that pick the register are unrolled, so that ptxas keeps
// the lane's few registers in registers. That is sound where (all checked here, the register
// sets enumerated):
//   - every register a lane loop writes has the loop variable's coefficient 1 in its index,
//     and every other register a lane loop names has coefficient 0 (read, never written there);
//   - each register a lane loop writes belongs to one lane (whichever loop and iteration
//     writes it), and a lane loop reads with coefficient 1 only registers of the reading lane;
//   - code outside the lane loops names none of those registers;
//   - no array is both read and written by the kernel (the lanes run its code in no fixed
//     order against each other).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "gpu/codegen/codegen_emit.h"

namespace toysim::gpu {

namespace {

// The most register values enumerated for the proof: past it, the grid keeps a thread an iteration.
constexpr std::int64_t kMaxLaneRegisterValues = 1 << 16;

int next_power_of_two(std::int64_t v) {
    int p = 1;
    while (p < v && p < 32) p *= 2;
    return p;
}

}  // namespace

std::string KernelEmitter::plan_lanes(std::int32_t first, std::int32_t last) {
    lanes_ = 1;
    lane_loops_.clear();
    unrolled_loops_.clear();
    auto at = [&](std::int32_t pc) { return fmt::format("{} at line {}", info(p_.op_at(pc)).mnemonic, code_loc(p_, pc).line); };

    // The loops inside the kernel, and each pc's innermost one.
    std::vector<int> loop_of(static_cast<size_t>(last - first), -1);
    std::vector<std::int32_t> stack;
    std::map<int, std::int32_t> begin_of_slot;
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code == Code::LoopEnd && !stack.empty()) stack.pop_back();
        loop_of[static_cast<size_t>(pc - first)] = stack.empty() ? -1 : stack.back();
        if (in.code == Code::LoopBegin) stack.push_back(pc);
    }
    auto slot_of = [&](std::int32_t loop_begin) { return p_.loops[static_cast<size_t>(p_.code[static_cast<size_t>(loop_begin)].loop)].slot; };
    auto constant_bounds = [&](std::int32_t loop_begin) {
        const LoopInfo& l = p_.loops[static_cast<size_t>(p_.code[static_cast<size_t>(loop_begin)].loop)];
        return l.lo.is_constant() && l.hi.is_constant();
    };
    // The loops around a pc inside the kernel, innermost first.
    auto enclosing = [&](std::int32_t pc) {
        std::vector<std::int32_t> out;
        for (std::int32_t l = loop_of[static_cast<size_t>(pc - first)]; l >= 0; l = loop_of[static_cast<size_t>(l - first)]) out.push_back(l);
        return out;
    };
    auto writes = [&](const Inst& in, const OpInfo& o, int k) { return k == in.reg_count - 1 && in.reg_count > o.register_sources(); };

    // Candidates: innermost loops with numbers for bounds that write a register by R[expr] with
    // the loop variable's coefficient 1, or that write no register and read one so (a loop
    // that stores a lane's registers).
    std::set<std::int32_t> candidates;
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code != Code::LoopBegin) continue;
        bool innermost = true, indexed_write = false, indexed_read = false, other_write = false;
        for (std::int32_t q = pc + 1; q < in.jump; ++q) {
            const Inst& body = p_.code[static_cast<size_t>(q)];
            if (body.code == Code::LoopBegin) innermost = false;
            if (!is_instruction(body.code)) continue;
            const OpInfo& o = info(p_.op_at(q));
            for (int k = 0; k < body.reg_count; ++k) {
                const std::int32_t operand = body.reg[static_cast<size_t>(k)];
                const bool indexed = operand < 0 && p_.dynamic_registers[static_cast<size_t>(-1 - operand)].index.coefficient(slot_of(pc)) == 1;
                if (writes(body, o, k)) (indexed ? indexed_write : other_write) = true;
                else if (indexed) indexed_read = true;
            }
        }
        const LoopInfo& loop = p_.loops[static_cast<size_t>(in.loop)];
        const auto trip = constant_bounds(pc) ? integer::sub(loop.hi.constant, loop.lo.constant) : std::nullopt;
        if (innermost && trip && *trip > 0 && *trip <= kMaxLaneRegisterValues && (indexed_write || (indexed_read && !other_write))) candidates.insert(pc);
    }
    if (candidates.empty()) return "no loop names registers by R[expr] with the loop's variable at coefficient 1";

    // Every register value an operand names, over the loops around it (`lane_slot`'s term left
    // out: a lane loop's base register); false where there are too many to enumerate.
    auto values = [&](std::int32_t pc, std::int32_t operand, int lane_slot, std::vector<std::int64_t>& out) {
        out.clear();
        if (operand >= 0) {
            out.push_back(operand);
            return true;
        }
        Affine index = p_.dynamic_registers[static_cast<size_t>(-1 - operand)].index;
        // Each loop variable's values, from the grid's (set by now) inwards.
        std::vector<integer::Interval> slot_values = slot_range_;
        const std::vector<std::int32_t> around = enclosing(pc);
        for (auto l = around.rbegin(); l != around.rend(); ++l) {
            const LoopInfo& loop = p_.loops[static_cast<size_t>(p_.code[static_cast<size_t>(*l)].loop)];
            auto lo = loop.lo.range(slot_values.data()), hi = loop.hi.range(slot_values.data());
            slot_values[static_cast<size_t>(loop.slot)] = lo && hi ? integer::loop_values(*lo, *hi) : integer::Interval::everything();
        }
        std::vector<std::pair<int, integer::Interval>> ranges;  // the slots it uses, and their values
        std::int64_t count = 1;
        for (int t = 0; t < index.terms; ++t) {
            const int slot = index.var[static_cast<size_t>(t)];
            if (slot == lane_slot) continue;
            const integer::Interval r = slot_values[static_cast<size_t>(slot)];
            if (r.empty()) return true;  // never runs
            if (r.lo < -kMaxLaneRegisterValues || r.hi > kMaxLaneRegisterValues) return false;
            if (r.hi - r.lo + 1 > kMaxLaneRegisterValues || count * (r.hi - r.lo + 1) > kMaxLaneRegisterValues) return false;
            count *= r.hi - r.lo + 1;
            ranges.emplace_back(slot, r);
        }
        std::int64_t vars[kMaxLoopDepth] = {};
        for (std::int64_t k = 0; k < count; ++k) {
            std::int64_t rest = k;
            for (const auto& [slot, r] : ranges) {
                const std::int64_t width = r.hi - r.lo + 1;
                vars[slot] = r.lo + rest % width;
                rest /= width;
            }
            if (lane_slot >= 0) vars[lane_slot] = 0;
            out.push_back(index.eval(vars));
        }
        return true;
    };

    // Register b + v, where it is in the register file (a register outside it stops the kernel
    // at run time, as a thread an iteration does).
    auto register_at = [&](std::int64_t b, std::int64_t v) -> std::optional<std::int64_t> {
        const auto x = integer::add(b, v);
        if (!x || *x < 0 || *x >= layout_.registers()) return std::nullopt;
        return x;
    };
    // The pairs (base, iteration) a loop's operand is checked over, bounded.
    auto small_enough = [](const std::vector<std::int64_t>& bases, const LoopInfo& loop) {
        return static_cast<std::int64_t>(bases.size()) * (loop.hi.constant - loop.lo.constant) <= 16 * kMaxLaneRegisterValues;
    };
    std::int64_t widest = 1;
    for (std::int32_t l : candidates) {
        const LoopInfo& loop = p_.loops[static_cast<size_t>(p_.code[static_cast<size_t>(l)].loop)];
        widest = std::max(widest, loop.hi.constant - loop.lo.constant);
    }
    const int lanes = next_power_of_two(widest);
    if (lanes < 2) return "its loops over registers have one iteration";

    // Pass 1: the registers lane loops write, and the lane that owns each.
    std::map<std::int64_t, std::int64_t> owner;
    std::vector<std::int64_t> bases;
    for (std::int32_t l : candidates) {
        const LoopInfo& loop = p_.loops[static_cast<size_t>(p_.code[static_cast<size_t>(l)].loop)];
        for (std::int32_t pc = l + 1; pc < p_.code[static_cast<size_t>(l)].jump; ++pc) {
            const Inst& in = p_.code[static_cast<size_t>(pc)];
            if (!is_instruction(in.code)) continue;
            const OpInfo& o = info(p_.op_at(pc));
            for (int k = 0; k < in.reg_count; ++k) {
                const std::int32_t operand = in.reg[static_cast<size_t>(k)];
                const std::int64_t c = operand < 0 ? p_.dynamic_registers[static_cast<size_t>(-1 - operand)].index.coefficient(loop.slot) : 0;
                if (c != 0 && c != 1) return fmt::format("{} names a register whose index has {} times the loop's variable", at(pc), c);
                if (writes(in, o, k) && c != 1)
                    return fmt::format("{} writes the same register in every iteration of the loop at line {}", at(pc), loop.loc.line);
                if (!writes(in, o, k)) continue;
                if (!values(pc, operand, loop.slot, bases) || !small_enough(bases, loop)) return fmt::format("{}: too many registers to check", at(pc));
                for (std::int64_t b : bases)
                    for (std::int64_t v = loop.lo.constant; v < loop.hi.constant; ++v) {
                        const std::int64_t lane = (v - loop.lo.constant) % lanes;
                        const auto x = register_at(b, v);
                        if (!x) return fmt::format("{} names a register outside the register file", at(pc));
                        auto [it, fresh] = owner.emplace(*x, lane);
                        if (!fresh && it->second != lane)
                            return fmt::format("R{} is written by lanes {} and {} ({}): its loops give it to different threads", *x, it->second, lane, at(pc));
                    }
            }
        }
    }
    // Pass 2: what lane loops read by the variable is their lane's own; everything else names
    // none of the lanes' registers.
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (!is_instruction(in.code)) continue;
        std::int32_t lane_loop = -1;
        for (std::int32_t l : enclosing(pc))
            if (candidates.count(l)) lane_loop = l;
        const LoopInfo* loop = lane_loop >= 0 ? &p_.loops[static_cast<size_t>(p_.code[static_cast<size_t>(lane_loop)].loop)] : nullptr;
        for (int k = 0; k < in.reg_count; ++k) {
            const std::int32_t operand = in.reg[static_cast<size_t>(k)];
            const bool by_lane = loop && operand < 0 && p_.dynamic_registers[static_cast<size_t>(-1 - operand)].index.coefficient(loop->slot) == 1;
            if (!values(pc, operand, by_lane ? loop->slot : -1, bases) || (by_lane && !small_enough(bases, *loop)))
                return fmt::format("{}: too many registers to check", at(pc));
            for (std::int64_t b : bases) {
                if (!by_lane) {
                    if (owner.count(b))
                        return fmt::format("{} names R{}, which a loop over registers gives to one thread, {}", at(pc), b,
                                           loop ? "with an index that does not follow that loop" : "outside such a loop");
                    continue;
                }
                for (std::int64_t v = loop->lo.constant; v < loop->hi.constant; ++v) {
                    const auto x = register_at(b, v);
                    if (!x) return fmt::format("{} names a register outside the register file", at(pc));
                    auto it = owner.find(*x);
                    if (it == owner.end() || it->second != (v - loop->lo.constant) % lanes)
                        return fmt::format("{} reads R{}, which its thread does not keep", at(pc), *x);
                }
            }
        }
    }
    // No array both read and written: the lanes of an iteration run in no fixed order.
    std::vector<bool> read(p_.arrays.size(), false), written(p_.arrays.size(), false);
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (!is_instruction(in.code) || info(p_.op_at(pc)).shape != OpShape::Memory) continue;
        const auto a = static_cast<size_t>(p_.mems[static_cast<size_t>(in.mem)].array);
        (p_.op_at(pc) == Op::LOAD ? read : written)[a] = true;
    }
    for (size_t a = 0; a < p_.arrays.size(); ++a)
        if (read[a] && written[a]) return fmt::format("it both reads and writes array {}", p_.arrays[a].name);
    // Nor an element that two lanes write, where the program's order decides the value: one
    // instruction writes each array, and a STORE in a lane loop writes a new element every
    // time it runs in the iteration (its address, over the loops around it, never repeats).
    // (STORE_ADD adds in any order, as a parallel loop's do.)
    std::vector<std::int32_t> writer(p_.arrays.size(), -1);
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (!is_instruction(in.code) || info(p_.op_at(pc)).shape != OpShape::Memory || p_.op_at(pc) == Op::LOAD) continue;
        const MemRef& m = p_.mems[static_cast<size_t>(in.mem)];
        const auto a = static_cast<size_t>(m.array);
        if (writer[a] >= 0)
            return fmt::format("array {} is written by two instructions ({} and {}): its lanes could write an element in another order", p_.arrays[a].name,
                               at(writer[a]), at(pc));
        writer[a] = pc;
        const std::vector<std::int32_t> around = enclosing(pc);
        const bool in_lane_loop = std::any_of(around.begin(), around.end(), [&](std::int32_t l) { return candidates.count(l) > 0; });
        if (!in_lane_loop || p_.op_at(pc) != Op::STORE) continue;
        // Injective over a box: each term's coefficient (by size) exceeds what the smaller terms span.
        std::vector<integer::Interval> slot_values = slot_range_;
        std::vector<std::pair<std::int64_t, std::int64_t>> terms;  // |coefficient|, values − 1
        for (auto l = around.rbegin(); l != around.rend(); ++l) {
            const LoopInfo& loop = p_.loops[static_cast<size_t>(p_.code[static_cast<size_t>(*l)].loop)];
            auto lo = loop.lo.range(slot_values.data()), hi = loop.hi.range(slot_values.data());
            slot_values[static_cast<size_t>(loop.slot)] = lo && hi ? integer::loop_values(*lo, *hi) : integer::Interval::everything();
            const std::int64_t c = m.address.coefficient(loop.slot);
            const integer::Interval r = slot_values[static_cast<size_t>(loop.slot)];
            if (r.empty() || r.lo == r.hi) continue;
            if (c == 0 || r.lo < -kMaxLaneRegisterValues || r.hi > kMaxLaneRegisterValues)
                return fmt::format("{} may write one element in two iterations of the loop at line {}", at(pc), loop.loc.line);
            terms.emplace_back(c < 0 ? -c : c, r.hi - r.lo);
        }
        std::sort(terms.begin(), terms.end());
        std::int64_t span = 0;
        for (const auto& [c, width] : terms) {
            const auto more = integer::mul(c, width);
            const auto sum = more ? integer::add(span, *more) : std::nullopt;
            if (c <= span || !sum) return fmt::format("{} may write one element in two iterations of its loops", at(pc));
            span = *sum;
        }
    }

    lanes_ = lanes;
    lane_loops_ = candidates;
    // The loops whose variables pick a lane's register, unrolled so that each is a number.
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (!is_instruction(in.code)) continue;
        for (int k = 0; k < in.reg_count; ++k) {
            const std::int32_t operand = in.reg[static_cast<size_t>(k)];
            if (operand >= 0) continue;
            const Affine& index = p_.dynamic_registers[static_cast<size_t>(-1 - operand)].index;
            for (std::int32_t l : enclosing(pc))
                if (!candidates.count(l) && index.coefficient(slot_of(l)) != 0 && constant_bounds(l)) unrolled_loops_.insert(p_.code[static_cast<size_t>(l)].loop);
        }
    }
    return "";
}

void KernelEmitter::open_lane_loop(std::int32_t loop_begin) {
    const Inst& head = p_.code[static_cast<size_t>(loop_begin)];
    const LoopInfo& l = p_.loops[static_cast<size_t>(head.loop)];
    comment_source(l.loc);
    enter_loop(l, false);
    const std::string& v = slot_name_[static_cast<size_t>(l.slot)];
    const std::int64_t lo = l.lo.constant, hi = l.hi.constant, rounds = (hi - lo + lanes_ - 1) / lanes_;
    // The round's name carries the loop's pc: no name of the program's can be it.
    line("#pragma unroll");
    line(fmt::format("for (long long round{0} = 0; round{0} < {1}; ++round{0}) {{  // {2}'s iterations over the {3} lanes: "
                     "each keeps the registers its iterations write",
                     loop_begin, rounds, v, lanes_));
    ++indent_;
    line(fmt::format("const long long {} = {} + lane + round{} * {};", v, lo, loop_begin, lanes_));
    line(fmt::format("if ({} >= {}) break;", v, hi));
    lane_loop_end_ = head.jump;
    lane_slot_ = l.slot;
}

}  // namespace toysim::gpu
