#include "sim/analysis/schedule_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <unordered_map>

#include "support/diag.h"

namespace toysim {

namespace {

constexpr int kMaxRegisters = 16;
constexpr int kMaxTerms = 64;     // a sum's products: a bit each
constexpr int kMaxOutputs = 64;
constexpr int kMaxElements = 256;
constexpr std::size_t kMaxSeen = 500'000;  // states the table remembers in one bound: under 100 MB

// A register as the program leaves it: nothing the search tracks, a loaded element, or a sum.
struct Value {
    enum class Kind { None, Element, Sum } kind = Kind::None;
    int element = -1;
    std::vector<std::array<int, 2>> terms;
};

}  // namespace

ScheduleProblem schedule_problem(const Program& program) {
    ScheduleProblem problem;
    std::vector<std::int64_t> loaded;  // addresses, in first-load order
    std::vector<Value> regs(static_cast<size_t>(std::max(program.scalar_registers, 1)));
    auto where = [&](std::size_t pc) { return program.origin[pc] ? program.origin[pc]->loc : Loc{}; };
    auto element_of = [&](std::int64_t address) {
        auto it = std::find(loaded.begin(), loaded.end(), address);
        if (it != loaded.end()) return static_cast<int>(it - loaded.begin());
        loaded.push_back(address);
        return static_cast<int>(loaded.size()) - 1;
    };
    if (program.has_tiles()) throw ToyError("tune --schedule searches programs of scalar registers: this one has tiles");
    for (std::size_t pc = 0; pc < program.code.size(); ++pc) {
        const Inst& inst = program.code[pc];
        if (inst.code == Code::Halt) break;
        if (inst.code == Code::LoopBegin || inst.code == Code::LoopEnd)
            throw ToyError(program.loops[static_cast<size_t>(inst.loop)].loc, "tune --schedule searches straight-line programs: this is a loop");
        if (inst.code == Code::Tile) throw ToyError(where(pc), "tune --schedule searches programs of scalar registers: this is a tile instruction");
        const Op op = program.op_at(static_cast<std::int32_t>(pc));
        if (op != Op::LOAD && op != Op::MAC_Z && op != Op::MAC && op != Op::STORE)
            throw ToyError(where(pc), fmt::format("tune --schedule searches programs of LOAD, MAC_Z, MAC and STORE: this is {}", info(op).mnemonic));
        for (int k = 0; k < inst.reg_count; ++k)
            if (inst.reg[static_cast<size_t>(k)] < 0) throw ToyError(where(pc), "tune --schedule needs every register named: this one is R[expr]");
        auto reg = [&](int k) -> Value& { return regs[static_cast<size_t>(inst.reg[static_cast<size_t>(k)])]; };
        auto operand = [&](int k) {
            const Value& v = reg(k);
            if (v.kind != Value::Kind::Element)
                throw ToyError(where(pc), fmt::format("tune --schedule searches sums of products of loaded values: R{} holds {} here",
                                                      inst.reg[static_cast<size_t>(k)], v.kind == Value::Kind::Sum ? "a sum" : "no loaded value"));
            return v.element;
        };
        auto product = [&] {
            std::array<int, 2> t = {operand(0), operand(1)};
            if (t[0] > t[1]) std::swap(t[0], t[1]);
            return t;
        };
        const std::int64_t address = op == Op::LOAD || op == Op::STORE ? program.mems[static_cast<size_t>(inst.mem)].address.constant : -1;
        if (op == Op::LOAD) {
            reg(0) = Value{Value::Kind::Element, element_of(address), {}};
        } else if (op == Op::MAC_Z) {
            Value sum{Value::Kind::Sum, -1, {product()}};
            reg(2) = std::move(sum);
        } else if (op == Op::MAC) {
            const std::array<int, 2> t = product();
            if (reg(2).kind != Value::Kind::Sum)
                throw ToyError(where(pc), fmt::format("tune --schedule searches sums built by MAC_Z and MAC: R{} holds no sum here", inst.reg[2]));
            Value sum = reg(2);
            sum.terms.push_back(t);
            if (sum.terms.size() > kMaxTerms) throw ToyError(where(pc), fmt::format("tune --schedule searches sums of at most {} products", kMaxTerms));
            reg(3) = std::move(sum);
        } else {
            const Value& v = reg(0);
            if (v.kind != Value::Kind::Sum)
                throw ToyError(where(pc), fmt::format("tune --schedule searches programs that store sums of products: R{} holds {} here", inst.reg[0],
                                                      v.kind == Value::Kind::Element ? "a loaded value" : "nothing"));
            for (const auto& o : problem.outputs)
                if (o.address == address) throw ToyError(where(pc), "tune --schedule searches programs that store each output once: this one is stored again");
            problem.outputs.push_back({address, v.terms});
        }
    }
    if (problem.outputs.empty()) throw ToyError("tune --schedule: the program stores no sum of products");
    // An element both loaded and stored would take its value from the order, which the search changes.
    for (const auto& o : problem.outputs)
        if (std::find(loaded.begin(), loaded.end(), o.address) != loaded.end())
            throw ToyError(fmt::format("tune --schedule searches programs whose loads do not read what they store: {} is both",
                                       program.element_ref_at(o.address)));
    if (problem.outputs.size() > kMaxOutputs) throw ToyError(fmt::format("tune --schedule searches at most {} outputs", kMaxOutputs));
    // The elements the products use, renumbered in first-use order.
    std::vector<int> renumber(loaded.size(), -1);
    for (auto& o : problem.outputs)
        for (auto& t : o.terms)
            for (int& e : t) {
                if (renumber[static_cast<size_t>(e)] < 0) {
                    renumber[static_cast<size_t>(e)] = static_cast<int>(problem.elements.size());
                    problem.elements.push_back(loaded[static_cast<size_t>(e)]);
                }
                e = renumber[static_cast<size_t>(e)];
            }
    if (problem.elements.size() > kMaxElements) throw ToyError(fmt::format("tune --schedule searches products of at most {} elements", kMaxElements));
    return problem;
}

namespace {

// A register's content in the search: free, element e (0..E-1), or output o's sum (E + o).
constexpr std::int16_t kFree = -1;

struct Searcher {
    const ScheduleProblem& p;
    int registers;
    std::uint64_t max_states;
    int elements = 0, outputs = 0;
    std::vector<std::uint64_t> all_terms;  // per output: every product's bit

    // The state.
    std::array<std::int16_t, kMaxRegisters> reg{};
    std::vector<std::uint64_t> done;  // per output: the products in its sum
    std::vector<std::uint8_t> stored;
    std::vector<ScheduleStep> path;

    std::unordered_map<std::string, int> seen;  // canonical state -> the fewest instructions it was reached in (this bound)
    std::uint64_t states = 0;
    int next_bound = 0;
    bool out_of_states = false;

    Searcher(const ScheduleProblem& problem, int regs, std::uint64_t limit) : p(problem), registers(regs), max_states(limit) {
        elements = static_cast<int>(p.elements.size());
        outputs = static_cast<int>(p.outputs.size());
        for (const auto& o : p.outputs) all_terms.push_back(o.terms.size() == 64 ? ~0ull : (1ull << o.terms.size()) - 1);
        reg.fill(kFree);
        done.assign(static_cast<size_t>(outputs), 0);
        stored.assign(static_cast<size_t>(outputs), 0);
    }

    int holder(std::int16_t content) const {
        for (int r = 0; r < registers; ++r)
            if (reg[static_cast<size_t>(r)] == content) return r;
        return -1;
    }
    int free_register() const { return holder(kFree); }

    // Never more than the instructions still to come: a MAC_Z or MAC per product left, a STORE
    // per output left, a LOAD per element a product left needs that no register holds.
    int lower_bound() const {
        int bound = 0;
        std::array<bool, kMaxElements> needed{};
        for (int o = 0; o < outputs; ++o) {
            if (stored[static_cast<size_t>(o)]) continue;
            ++bound;
            const std::uint64_t left = all_terms[static_cast<size_t>(o)] & ~done[static_cast<size_t>(o)];
            bound += std::popcount(left);
            for (int t = 0; t < static_cast<int>(p.outputs[static_cast<size_t>(o)].terms.size()); ++t)
                if (left >> t & 1)
                    for (int e : p.outputs[static_cast<size_t>(o)].terms[static_cast<size_t>(t)]) needed[static_cast<size_t>(e)] = true;
        }
        for (int r = 0; r < registers; ++r)
            if (reg[static_cast<size_t>(r)] >= 0 && reg[static_cast<size_t>(r)] < elements) needed[static_cast<size_t>(reg[static_cast<size_t>(r)])] = false;
        for (int e = 0; e < elements; ++e) bound += needed[static_cast<size_t>(e)];
        return bound;
    }

    // Which register holds what does not matter, only what the registers hold.
    std::string key() const {
        std::array<std::int16_t, kMaxRegisters> sorted = reg;
        std::sort(sorted.begin(), sorted.begin() + registers);
        std::string k(reinterpret_cast<const char*>(sorted.data()), sizeof(std::int16_t) * static_cast<size_t>(registers));
        k.append(reinterpret_cast<const char*>(done.data()), sizeof(std::uint64_t) * done.size());
        k.append(reinterpret_cast<const char*>(stored.data()), stored.size());
        return k;
    }

    bool finished() const { return std::all_of(stored.begin(), stored.end(), [](std::uint8_t s) { return s != 0; }); }

    // Runs one step, searches on, and undoes it: true when a program within the bound was found.
    template <class Do, class Undo>
    bool step(const ScheduleStep& s, int g, int bound, Do&& apply, Undo&& undo) {
        apply();
        path.push_back(s);
        if (search(g + 1, bound)) return true;
        path.pop_back();
        undo();
        return false;
    }

    bool search(int g, int bound) {
        const int f = g + lower_bound();
        if (f > bound) {
            next_bound = std::min(next_bound, f);
            return false;
        }
        if (finished()) return true;
        if (++states > max_states) {
            out_of_states = true;
            return false;
        }
        // The table only saves work: past kMaxSeen states it stops growing (memory), and the
        // search stays exact, exploring again what it no longer remembers.
        std::string k = key();
        if (auto it = seen.find(k); it != seen.end()) {
            if (it->second <= g) return false;
            it->second = g;
        } else if (seen.size() < kMaxSeen) {
            seen.emplace(std::move(k), g);
        }
        // A finished sum is stored at once: it only holds a register.
        for (int o = 0; o < outputs; ++o) {
            const int r = holder(static_cast<std::int16_t>(elements + o));
            if (r < 0 || done[static_cast<size_t>(o)] != all_terms[static_cast<size_t>(o)]) continue;
            ScheduleStep s{Op::STORE, {r, 0, 0, 0}, 1, p.outputs[static_cast<size_t>(o)].address};
            return step(s, g, bound, [&] { stored[static_cast<size_t>(o)] = 1, reg[static_cast<size_t>(r)] = kFree; },
                        [&] { stored[static_cast<size_t>(o)] = 0, reg[static_cast<size_t>(r)] = static_cast<std::int16_t>(elements + o); });
        }
        // Where a new value may go: a free register (any one is as good as another), else over
        // an element (never over a sum, whose products would be lost).
        auto targets = [&](auto&& each) {
            const int r = free_register();
            if (r >= 0) return each(r);
            for (int t = 0; t < registers; ++t)
                if (reg[static_cast<size_t>(t)] < elements && each(t)) return true;
            return false;
        };
        // Products whose operands are both in registers: added to their sum (MAC, in place),
        // or starting it (MAC_Z).
        for (int o = 0; o < outputs; ++o) {
            if (stored[static_cast<size_t>(o)]) continue;
            const int sum = holder(static_cast<std::int16_t>(elements + o));
            const auto& terms = p.outputs[static_cast<size_t>(o)].terms;
            for (int t = 0; t < static_cast<int>(terms.size()); ++t) {
                if (done[static_cast<size_t>(o)] >> t & 1) continue;
                const int x = holder(static_cast<std::int16_t>(terms[static_cast<size_t>(t)][0]));
                const int y = holder(static_cast<std::int16_t>(terms[static_cast<size_t>(t)][1]));
                if (x < 0 || y < 0) continue;
                const std::uint64_t bit = 1ull << t;
                if (sum >= 0) {
                    ScheduleStep s{Op::MAC, {x, y, sum, sum}, 4, -1};
                    if (step(s, g, bound, [&] { done[static_cast<size_t>(o)] |= bit; }, [&] { done[static_cast<size_t>(o)] &= ~bit; })) return true;
                } else if (done[static_cast<size_t>(o)] == 0) {
                    const bool found = targets([&](int d) {
                        const std::int16_t before = reg[static_cast<size_t>(d)];
                        ScheduleStep s{Op::MAC_Z, {x, y, d, 0}, 3, -1};
                        return step(
                            s, g, bound, [&] { done[static_cast<size_t>(o)] = bit, reg[static_cast<size_t>(d)] = static_cast<std::int16_t>(elements + o); },
                            [&] { done[static_cast<size_t>(o)] = 0, reg[static_cast<size_t>(d)] = before; });
                    });
                    if (found) return true;
                }
                if (out_of_states) return false;
            }
        }
        // Loads of the elements a product still needs that no register holds.
        for (int e = 0; e < elements; ++e) {
            if (holder(static_cast<std::int16_t>(e)) >= 0 || !needed(e)) continue;
            const bool found = targets([&](int d) {
                const std::int16_t before = reg[static_cast<size_t>(d)];
                ScheduleStep s{Op::LOAD, {d, 0, 0, 0}, 1, p.elements[static_cast<size_t>(e)]};
                return step(s, g, bound, [&] { reg[static_cast<size_t>(d)] = static_cast<std::int16_t>(e); }, [&] { reg[static_cast<size_t>(d)] = before; });
            });
            if (found) return true;
            if (out_of_states) return false;
        }
        return false;
    }

    bool needed(int e) const {
        for (int o = 0; o < outputs; ++o) {
            if (stored[static_cast<size_t>(o)]) continue;
            const auto& terms = p.outputs[static_cast<size_t>(o)].terms;
            for (int t = 0; t < static_cast<int>(terms.size()); ++t)
                if (!(done[static_cast<size_t>(o)] >> t & 1) && (terms[static_cast<size_t>(t)][0] == e || terms[static_cast<size_t>(t)][1] == e)) return true;
        }
        return false;
    }
};

}  // namespace

ScheduleSearch search_schedule(const ScheduleProblem& problem, int registers, std::uint64_t max_states) {
    if (registers < 1 || registers > kMaxRegisters)
        throw ToyError(fmt::format("tune --schedule searches 1 to {} registers, not {}", kMaxRegisters, registers));
    // A product needs its operands in registers (one, for a square) and a sum a register of its
    // own while the next product's operands are loaded.
    int need = 0;
    for (const auto& o : problem.outputs)
        for (const auto& t : o.terms) need = std::max(need, (t[0] == t[1] ? 1 : 2) + (o.terms.size() > 1 ? 1 : 0));
    if (registers < need)
        throw ToyError(fmt::format("tune --schedule: {} register{} cannot compute these sums: a product's operands and a sum being built take {}", registers,
                                   registers == 1 ? "" : "s", need));
    Searcher s(problem, registers, max_states);
    ScheduleSearch result;
    result.lower_bound = s.lower_bound();
    result.bound_reached = result.lower_bound - 1;  // no program that short exists
    for (int bound = result.lower_bound;; bound = s.next_bound) {
        s.seen.clear();
        s.next_bound = std::numeric_limits<int>::max();
        if (s.search(0, bound)) {
            result.found = true;
            result.steps = s.path;
            result.bound_reached = bound;
            break;
        }
        if (s.out_of_states || s.next_bound == std::numeric_limits<int>::max()) break;
        result.bound_reached = bound;
    }
    result.states = s.states;
    return result;
}

}  // namespace toysim
