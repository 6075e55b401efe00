// A scalar grid whose iterations keep more registers than a GPU thread holds, spread over a
// group of threads an iteration, its lanes (issue 38, part 4).
//
// matmul_outer.toy keeps a t×t tile of partial sums in one worker's registers, as Problem 3
// does: at t = 32, 1,057 registers. A thread an iteration spills them (4,232 bytes a thread at
// n = 256, 0.00× its hand-written kernel). Its loops over those registers, though, have
// iterations that are independent: `for i { LOAD a[i][k], R0; for j { MAC R0, R[1 + j],
// R[1 + t + i*t + j], … } }` writes register 1 + t + i·t + j in iteration (i, j) and reads
// only that one, R[1 + j], which the loop over j before it wrote, and R0, which iteration i
// wrote first. Such loops run at once on the iteration's lanes, a grid of lanes_x_ × lanes_y_
// threads: an innermost loop over registers (an x loop) gives iteration j to lane_x =
// (j − lo) mod lanes_x_, and a loop around x loops (a y loop) iteration i to lane_y; a lane
// runs its iterations in rounds, as few lanes as give the grid kLaneThreads threads. Code
// outside a loop of a dimension runs on every lane of that dimension alike (each loads what
// it reads; the lanes at 0 of it alone store and count), so a lane holds what the serial code
// would hold in the registers it uses.
//
// A lane keeps register X at R[X − c_y·lane_y − c_x·lane_x], c being the register index's
// coefficients of the lane loops' variables: where lane (0, 0) keeps its own. The generated
// index is the program's with each lane loop's variable as lane (0, 0) has it (no lane in
// it), a number once the rounds and the loops that pick registers unroll, so that ptxas keeps
// a lane's few registers in registers. That is sound where (checked here, the register sets enumerated):
//   - every register has one home: the lanes that write it, the same at each of its writes
//     (a lane coordinate, or every lane of a dimension), at one place; every read of it is by
//     lanes of its home, at that place;
//   - or it is private to a y loop's iterations (R0 above): written in the y loop's body
//     outside its x loops, the same register whatever the iteration, and in each y loop that
//     names it written before anything reads it, and named nowhere else;
//   - no array is both read and written, one instruction writes each array, and a STORE in a
//     lane loop writes a new element every time it runs (the lanes of an iteration run in no
//     fixed order against each other).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <tuple>

#include "gpu/codegen/codegen_emit.h"

namespace toysim::gpu {

namespace {

// The most values enumerated for the proof: past it, the grid keeps a thread an iteration.
constexpr std::int64_t kMaxLaneRegisterValues = 1 << 16;
// The most threads an iteration: a block's.
constexpr std::int64_t kMaxLanes = 1024;

// The lanes that run an instruction, as a message names them: "lane_x 3", "lane_y 1, lane_x 3",
// "every lane" (a coordinate −1: every lane of that dimension).
std::string lanes_text(std::int64_t y, std::int64_t x) {
    if (y < 0 && x < 0) return "every lane";
    if (y < 0) return fmt::format("lane_x {}", x);
    if (x < 0) return fmt::format("lane_y {}", y);
    return fmt::format("lane_y {}, lane_x {}", y, x);
}

int next_power_of_two(std::int64_t v) {
    int p = 1;
    while (p < v && p < 32) p *= 2;
    return p;
}

// The threads a grid of lanes aims at (a head's iterations × lanes): measured on the H200 with
// matmul_outer at n = 256 to 2048, t = 16 and 32, every shape from 4 × 4 to 32 × 32 lanes
// (gpu/results/lanes_shape_h200.md): the fastest shape gave the grid 65,536 threads at four
// of the five sizes, and 131,072 at the fifth (8% faster than 65,536 there). Fewer lanes give
// each more partial sums a load of A and B; fewer threads than this leave SMs waiting.
constexpr std::int64_t kLaneThreads = 65536;

// The lanes of each dimension, at most most_x × most_y, for a grid of `iterations` a head (0:
// not known).
std::pair<int, int> lane_shape(int most_x, int most_y, std::int64_t iterations) {
    // TOYSIM_LANES=XxY: that shape, within what the loops have (to measure the rule: gpu/tools/lanes_shape.sh).
    if (const char* forced = std::getenv("TOYSIM_LANES")) {
        int x = 0, y = 0;
        if (std::sscanf(forced, "%dx%d", &x, &y) == 2 && x > 0 && y > 0)
            return {std::min(most_x, next_power_of_two(x)), std::min(most_y, next_power_of_two(y))};
    }
    if (iterations <= 0) return {most_x, most_y};
    // The fewest lanes that reach kLaneThreads; among as many, the squarest, x the wider.
    std::pair<int, int> best{most_x, most_y};
    for (int x = 1; x <= most_x; x *= 2)
        for (int y = 1; y <= most_y; y *= 2) {
            const std::int64_t lanes = std::int64_t{x} * y, best_lanes = std::int64_t{best.first} * best.second;
            if (iterations < (kLaneThreads + lanes - 1) / lanes) continue;
            auto skew = [](int a, int b) { return a >= b ? a / b : 2 * (b / a); };
            if (lanes < best_lanes || (lanes == best_lanes && skew(x, y) < skew(best.first, best.second))) best = {x, y};
        }
    return best;
}

}  // namespace

std::string KernelEmitter::plan_lanes(std::int32_t first, std::int32_t last, std::int64_t iterations) {
    // Lanes in two dimensions where the loops allow, else in one; the reason given is the last.
    std::string why = try_lanes(first, last, true, iterations);
    if (!why.empty()) why = try_lanes(first, last, false, iterations);
    return why;
}

std::string KernelEmitter::try_lanes(std::int32_t first, std::int32_t last, bool two_dimensions, std::int64_t iterations) {
    lanes_ = lanes_x_ = lanes_y_ = 1;
    lane_loops_.clear();
    unrolled_loops_.clear();
    auto at = [&](std::int32_t pc) { return instruction_at(p_, pc); };
    auto loop_info = [&](std::int32_t loop_begin) -> const LoopInfo& { return p_.loops[static_cast<size_t>(p_.code[static_cast<size_t>(loop_begin)].loop)]; };
    auto writes = [&](const Inst& in, const OpInfo& o, int k) { return k == in.reg_count - 1 && in.reg_count > o.register_sources(); };
    auto index_of = [&](std::int32_t operand) -> const Affine* {
        return operand < 0 ? &p_.dynamic_registers[static_cast<size_t>(-1 - operand)].index : nullptr;
    };
    auto coefficient = [&](std::int32_t operand, int slot) { return operand < 0 ? index_of(operand)->coefficient(slot) : 0; };

    // The loops inside the kernel, and each pc's innermost one.
    std::vector<std::int32_t> loop_of(static_cast<size_t>(last - first), -1);
    std::vector<std::int32_t> stack;
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code == Code::LoopEnd && !stack.empty()) stack.pop_back();
        loop_of[static_cast<size_t>(pc - first)] = stack.empty() ? -1 : stack.back();
        if (in.code == Code::LoopBegin) stack.push_back(pc);
    }
    auto enclosing = [&](std::int32_t pc) {  // innermost first
        std::vector<std::int32_t> out;
        for (std::int32_t l = loop_of[static_cast<size_t>(pc - first)]; l >= 0; l = loop_of[static_cast<size_t>(l - first)]) out.push_back(l);
        return out;
    };
    auto trip_of = [&](std::int32_t loop_begin) -> std::int64_t {
        const LoopInfo& l = loop_info(loop_begin);
        if (!l.lo.is_constant() || !l.hi.is_constant()) return 0;
        const auto trip = integer::sub(l.hi.constant, l.lo.constant);
        return trip && *trip > 0 && *trip <= kMaxLaneRegisterValues ? *trip : 0;
    };

    // x loops: innermost loops with numbers for bounds that write registers by R[expr] with the
    // variable's coefficient 1 and no other register, or that write none and read one so.
    std::set<std::int32_t> x_loops, y_loops;
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code != Code::LoopBegin) continue;
        const int slot = loop_info(pc).slot;
        bool innermost = true, indexed_write = false, indexed_read = false, other_write = false;
        for (std::int32_t q = pc + 1; q < in.jump; ++q) {
            const Inst& body = p_.code[static_cast<size_t>(q)];
            if (body.code == Code::LoopBegin) innermost = false;
            if (!is_instruction(body.code)) continue;
            const OpInfo& o = info(p_.op_at(q));
            for (int k = 0; k < body.reg_count; ++k) {
                const bool indexed = coefficient(body.reg[static_cast<size_t>(k)], slot) == 1;
                if (writes(body, o, k)) (indexed ? indexed_write : other_write) = true;
                else if (indexed) indexed_read = true;
            }
        }
        if (innermost && trip_of(pc) > 0 && (indexed_write || (indexed_read && !other_write))) x_loops.insert(pc);
    }
    if (x_loops.empty()) return "no loop names registers by R[expr] with the loop's variable at coefficient 1";
    // y loops: loops of instructions and x loops (one at least) whose variable picks registers.
    if (two_dimensions)
        for (std::int32_t pc = first; pc < last; ++pc) {
            const Inst& in = p_.code[static_cast<size_t>(pc)];
            if (in.code != Code::LoopBegin || x_loops.count(pc) || trip_of(pc) == 0) continue;
            bool only_x = true, has_x = false, picks = false;
            for (std::int32_t q = pc + 1; q < in.jump; ++q) {
                const Inst& body = p_.code[static_cast<size_t>(q)];
                if (body.code == Code::LoopBegin) {
                    only_x = only_x && x_loops.count(q) > 0;
                    has_x = true;
                }
                if (is_instruction(body.code))
                    for (int k = 0; k < body.reg_count; ++k) picks = picks || coefficient(body.reg[static_cast<size_t>(k)], loop_info(pc).slot) != 0;
            }
            if (only_x && has_x && picks) y_loops.insert(pc);
        }
    std::int64_t widest_x = 1, widest_y = 1;
    for (std::int32_t l : x_loops) widest_x = std::max(widest_x, trip_of(l));
    for (std::int32_t l : y_loops) widest_y = std::max(widest_y, trip_of(l));
    int gx = next_power_of_two(widest_x);
    int gy = y_loops.empty() ? 1 : std::min<int>(next_power_of_two(widest_y), static_cast<int>(kMaxLanes / gx));
    // As few lanes as give the grid kLaneThreads threads: a lane then runs several iterations
    // of each lane loop (rounds) and keeps their registers, more products a load.
    std::tie(gx, gy) = lane_shape(gx, gy, iterations);
    if (gx * gy < 2) return "its loops over registers have one iteration";

    // Where each pc stands: its y loop and x loop (-1: none).
    auto lane_loops_at = [&](std::int32_t pc) {
        std::pair<std::int32_t, std::int32_t> yx{-1, -1};
        for (std::int32_t l : enclosing(pc)) {
            if (y_loops.count(l)) yx.first = l;
            if (x_loops.count(l)) yx.second = l;
        }
        return yx;
    };
    // Every (register, lane_y, lane_x, place) an operand names, over the loops around it: a
    // lane coordinate -1 where its dimension's loop is not around it (every lane of it runs the
    // instruction). False where there are too many to enumerate.
    struct Named {
        std::int64_t reg, y, x, place;
    };
    auto named = [&](std::int32_t pc, std::int32_t operand, const std::function<bool(const Named&)>& each) -> std::optional<bool> {
        const auto [yl, xl] = lane_loops_at(pc);
        std::vector<std::int32_t> around = enclosing(pc);
        std::reverse(around.begin(), around.end());
        const std::vector<integer::Interval> slot_values = ranges_inside(around);
        std::vector<int> slots;  // enumerated: the index's loop variables, and the lane loops'
        if (const Affine* index = index_of(operand))
            for (int t = 0; t < index->terms; ++t) slots.push_back(index->var[static_cast<size_t>(t)]);
        for (std::int32_t l : {yl, xl})
            if (l >= 0 && std::find(slots.begin(), slots.end(), loop_info(l).slot) == slots.end()) slots.push_back(loop_info(l).slot);
        std::int64_t count = 1;
        for (int slot : slots) {
            const integer::Interval r = slot_values[static_cast<size_t>(slot)];
            if (r.empty()) return true;  // never runs
            if (r.lo < -kMaxLaneRegisterValues || r.hi > kMaxLaneRegisterValues || count * (r.hi - r.lo + 1) > 16 * kMaxLaneRegisterValues)
                return std::nullopt;
            count *= r.hi - r.lo + 1;
        }
        std::int64_t vars[kMaxLoopDepth] = {};
        for (std::int64_t k = 0; k < count; ++k) {
            std::int64_t rest = k;
            for (int slot : slots) {
                const integer::Interval r = slot_values[static_cast<size_t>(slot)];
                vars[slot] = r.lo + rest % (r.hi - r.lo + 1);
                rest /= r.hi - r.lo + 1;
            }
            Named n{operand, -1, -1, 0};
            if (const Affine* index = index_of(operand)) {
                std::int64_t value = 0;
                if (!index->eval_checked(vars, value) || value < 0 || value >= layout_.registers()) return false;
                n.reg = value;
            }
            n.place = n.reg;
            if (yl >= 0) {
                const LoopInfo& l = loop_info(yl);
                n.y = (vars[l.slot] - l.lo.constant) % gy;
                n.place -= coefficient(operand, l.slot) * n.y;
            }
            if (xl >= 0) {
                const LoopInfo& l = loop_info(xl);
                n.x = (vars[l.slot] - l.lo.constant) % gx;
                n.place -= coefficient(operand, l.slot) * n.x;
            }
            if (!each(n)) return false;
        }
        return true;
    };

    // Every operand's registers, once.
    struct Operand {
        std::int32_t pc;
        int k;
        bool write;
        std::vector<Named> names;
    };
    std::vector<Operand> operands;
    std::int64_t total_names = 0;
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (!is_instruction(in.code)) continue;
        const OpInfo& o = info(p_.op_at(pc));
        const auto [yl, xl] = lane_loops_at(pc);
        for (int k = 0; k < in.reg_count; ++k) {
            const std::int32_t operand = in.reg[static_cast<size_t>(k)];
            for (std::int32_t l : {yl, xl})
                if (l >= 0 && coefficient(operand, loop_info(l).slot) < 0)
                    return fmt::format("{} names a register whose index has {} times the variable of the loop at line {}", at(pc),
                                       coefficient(operand, loop_info(l).slot), loop_info(l).loc.line);
            if (xl >= 0 && coefficient(operand, loop_info(xl).slot) > 1)
                return fmt::format("{} names a register whose index has {} times the loop's variable", at(pc), coefficient(operand, loop_info(xl).slot));
            Operand op{pc, k, writes(in, o, k), {}};
            const auto done = named(pc, operand, [&](const Named& n) {
                op.names.push_back(n);
                return ++total_names <= 16 * kMaxLaneRegisterValues;  // past it: too many to check
            });
            if (!done || total_names > 16 * kMaxLaneRegisterValues) return fmt::format("{}: too many registers to check", at(pc));
            if (!*done) return fmt::format("{} names a register outside the register file", at(pc));
            operands.push_back(std::move(op));
        }
    }
    // Pass 1: each register's home, from its writes; the registers private to y loops' iterations
    // (written in a y loop's body outside its x loops, the same register in every iteration).
    struct Home {
        std::int64_t y, x, place;
    };
    std::map<std::int64_t, Home> home;
    std::set<std::int64_t> privates;
    auto private_write = [&](const Operand& op) {
        const auto [yl, xl] = lane_loops_at(op.pc);
        return op.write && yl >= 0 && xl < 0 && coefficient(p_.code[static_cast<size_t>(op.pc)].reg[static_cast<size_t>(op.k)], loop_info(yl).slot) == 0;
    };
    for (const Operand& op : operands)
        if (private_write(op))
            for (const Named& n : op.names) privates.insert(n.reg);
    for (const Operand& op : operands) {
        if (!op.write || private_write(op)) continue;
        for (const Named& n : op.names) {
            if (privates.count(n.reg))
                return fmt::format("{} writes R{}, which a loop keeps to each of its iterations, outside such a loop's body", at(op.pc), n.reg);
            auto [it, fresh] = home.emplace(n.reg, Home{n.y, n.x, n.place});
            if (!fresh && (it->second.y != n.y || it->second.x != n.x || it->second.place != n.place))
                return fmt::format("R{} is written by {} and by {} ({}): its loops give it to different threads", n.reg, lanes_text(it->second.y, it->second.x),
                                   lanes_text(n.y, n.x), at(op.pc));
        }
    }
    // Pass 2: every read by lanes of the register's home, at its place.
    for (const Operand& op : operands) {
        if (op.write) continue;
        const auto [yl, xl] = lane_loops_at(op.pc);
        for (const Named& n : op.names) {
            if (privates.count(n.reg)) continue;
            const auto h = home.find(n.reg);
            // A register no instruction here writes: every lane holds it where lane (0, 0) does.
            const Home where = h == home.end() ? Home{-1, -1, n.reg} : h->second;
            if ((where.y >= 0 && where.y != n.y) || (where.x >= 0 && where.x != n.x) || where.place != n.place)
                return yl < 0 && xl < 0 ? fmt::format("{} names R{}, which a loop over registers gives to one thread, outside such a loop", at(op.pc), n.reg)
                                        : fmt::format("{} reads R{}, which its thread does not keep", at(op.pc), n.reg);
        }
    }
    // A private register: named only in y loops, and in each, written (by a private write that
    // does not read it) before anything else names it. Operands are in pc order, an
    // instruction's sources before its destination.
    std::map<std::pair<std::int64_t, std::int32_t>, bool> first_is_write;  // by register and y loop
    for (const Operand& op : operands) {
        const std::int32_t yl = lane_loops_at(op.pc).first;
        for (const Named& n : op.names) {
            if (!privates.count(n.reg)) continue;
            if (yl < 0) return fmt::format("{} names R{}, which a loop keeps to each of its iterations, outside such a loop", at(op.pc), n.reg);
            if (const auto [it, fresh] = first_is_write.emplace(std::pair{n.reg, yl}, private_write(op)); fresh && !it->second)
                return fmt::format("R{} is read in the loop at line {} before the iteration writes it", n.reg, loop_info(yl).loc.line);
        }
    }
    if (std::string why = lane_memory_order(first, last, x_loops, y_loops); !why.empty()) return why;

    lanes_x_ = gx;
    lanes_y_ = gy;
    lanes_ = gx * gy;
    for (std::int32_t l : x_loops) lane_loops_[l] = 0;
    for (std::int32_t l : y_loops) lane_loops_[l] = 1;
    // The loops whose variables pick a lane's register, unrolled so that each is a number.
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (!is_instruction(in.code)) continue;
        for (int k = 0; k < in.reg_count; ++k)
            for (std::int32_t l : enclosing(pc))
                if (!lane_loops_.count(l) && coefficient(in.reg[static_cast<size_t>(k)], loop_info(l).slot) != 0 && trip_of(l) > 0)
                    unrolled_loops_.insert(p_.code[static_cast<size_t>(l)].loop);
    }
    return "";
}

std::string KernelEmitter::lane_memory_order(std::int32_t first, std::int32_t last, const std::set<std::int32_t>& x_loops,
                                             const std::set<std::int32_t>& y_loops) const {
    auto at = [&](std::int32_t pc) { return instruction_at(p_, pc); };
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
    std::vector<std::int32_t> around;  // the loops open at pc, outermost first
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code == Code::LoopBegin) around.push_back(pc);
        if (in.code == Code::LoopEnd && !around.empty()) around.pop_back();
        if (!is_instruction(in.code) || info(p_.op_at(pc)).shape != OpShape::Memory || p_.op_at(pc) == Op::LOAD) continue;
        const MemRef& m = p_.mems[static_cast<size_t>(in.mem)];
        const auto a = static_cast<size_t>(m.array);
        if (writer[a] >= 0)
            return fmt::format("array {} is written by two instructions ({} and {}): its lanes could write an element in another order", p_.arrays[a].name,
                               at(writer[a]), at(pc));
        writer[a] = pc;
        const bool in_lane_loop = std::any_of(around.begin(), around.end(), [&](std::int32_t l) { return x_loops.count(l) || y_loops.count(l); });
        if (!in_lane_loop || p_.op_at(pc) != Op::STORE) continue;
        // Injective over a box: each term's coefficient (by size) exceeds what the smaller terms span.
        const std::vector<integer::Interval> slot_values = ranges_inside(around);
        std::vector<std::pair<std::int64_t, std::int64_t>> terms;  // |coefficient|, values − 1
        for (std::int32_t l : around) {
            const LoopInfo& loop = p_.loops[static_cast<size_t>(p_.code[static_cast<size_t>(l)].loop)];
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
    return "";
}

std::vector<integer::Interval> KernelEmitter::ranges_inside(const std::vector<std::int32_t>& loops) const {
    std::vector<integer::Interval> ranges = slot_range_;
    for (std::int32_t l : loops) {
        const LoopInfo& loop = p_.loops[static_cast<size_t>(p_.code[static_cast<size_t>(l)].loop)];
        ranges[static_cast<size_t>(loop.slot)] = loop_values_of(loop, ranges.data());
    }
    return ranges;
}

void KernelEmitter::open_lane_loop(std::int32_t loop_begin) {
    const Inst& head = p_.code[static_cast<size_t>(loop_begin)];
    const LoopInfo& l = p_.loops[static_cast<size_t>(head.loop)];
    const int level = lane_loops_.at(loop_begin);  // 0: x, 1: y
    const int lanes = level == 0 ? lanes_x_ : lanes_y_;
    const char* lane = level == 0 ? "lane_x" : "lane_y";
    comment_source(l.loc);
    enter_loop(l, false);
    const std::string& v = slot_name_[static_cast<size_t>(l.slot)];
    const std::int64_t lo = l.lo.constant, hi = l.hi.constant, rounds = (hi - lo + lanes - 1) / lanes;
    // The round's name carries the loop's pc: no name of the program's can be it.
    line("#pragma unroll");
    line(fmt::format("for (long long round{0} = 0; round{0} < {1}; ++round{0}) {{  // {2}'s iterations over the {3} lanes of {4}: "
                     "each keeps the registers its iterations write",
                     loop_begin, rounds, v, lanes, lane));
    ++indent_;
    line(fmt::format("const long long {} = {} + {} + round{} * {};", v, lo, lane, loop_begin, lanes));
    line(fmt::format("if ({} >= {}) break;", v, hi));
    open_lanes_[level] = {head.jump, l.slot, fmt::format("({} + round{} * {})", lo, loop_begin, lanes)};
}

std::string KernelEmitter::redundant_guard() const {
    if (redundant_ && !in_split_) return "threadIdx.x == 0";
    std::string guard;
    if (lanes_y_ > 1 && open_lanes_[1].slot < 0) guard = "lane_y == 0";
    if (lanes_x_ > 1 && open_lanes_[0].slot < 0) guard += std::string(guard.empty() ? "" : " && ") + "lane_x == 0";
    return guard;
}

}  // namespace toysim::gpu
