// The count-only run through the cache (cached_count.h).
#include "sim/exec/cached_count.h"

#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <optional>
#include <queue>

#include "sim/exec/dram_cache.h"
#include "sim/exec/faults.h"
#include "sim/exec/interleave.h"

namespace toysim {

namespace {

// One worker of the walk: where it is, its loop variables and its tiles' shapes.
struct Walker {
    std::int32_t pc = 0;
    std::array<std::int64_t, kMaxLoopDepth> vars{}, limit{};
    std::vector<std::int64_t> rows, cols;  // per tile: its shape now (0 × 0: never written)
    std::uint64_t clock = 0;
    std::int64_t head = 0;
    std::int32_t released = -1;  // the launch boundary (a pc) it has passed last
};

// What a walker did when asked for one instruction.
enum class Moved { Instruction, Halted, AtGrid, IterationDone, AtLaunch };

class Walk {
public:
    Walk(const Program& p, const CachedCountOptions& o) : p_(p), o_(o), workers_(o.workers ? o.workers : p.workers) {
        cache_.emplace(p, o.heads, o.element_bytes);
        launch_at_.assign(p.code.size(), false);
        if (o.cold_launches)
            for (size_t pc = 0; pc < p.code.size(); ++pc)
                if (p.code[pc].code == Code::LoopBegin && p.loops[static_cast<size_t>(p.code[pc].loop)].slot == 0) launch_at_[pc] = true;
    }

    CachedCount run() {
        std::vector<Walker> serial(static_cast<size_t>(o_.heads));
        for (std::int64_t h = 0; h < o_.heads; ++h) {
            Walker& w = serial[static_cast<size_t>(h)];
            w.rows.assign(p_.tiles.size(), 0);
            w.cols.assign(p_.tiles.size(), 0);
            w.head = h;
        }
        CachedCount out;
        for (;;) {
            // The heads' serial code, interleaved, until every head halts or reaches the same
            // grid or launch (every head takes the same path: control flow reads no value).
            Moved stopped = Moved::Halted;
            interleave(serial, [&](Walker&, std::size_t, Moved m) {
                stopped = m;
                return false;
            });
            if (stopped == Moved::Halted) break;
            if (stopped == Moved::AtLaunch) {  // a new launch, from a cold cache
                if (serial[0].released >= 0) {  // the first launch also has the code before its loop
                    out.launches.push_back(cache_->counts());
                    cache_.emplace(p_, o_.heads, o_.element_bytes);
                    ++launch_;
                }
                for (Walker& w : serial) w.released = w.pc;
                continue;
            }
            run_grid(serial, static_cast<std::size_t>(p_.code[static_cast<size_t>(serial[0].pc)].loop));
        }
        if (o_.cold_launches) {
            out.launches.push_back(cache_->counts());
            out.counts = out.launches.front();
            for (size_t k = 1; k < out.launches.size(); ++k) add(out.counts, out.launches[k]);
        } else {
            out.counts = cache_->counts();
        }
        out.instructions = instructions_;
        for (const Walker& w : serial) out.cycles = std::max(out.cycles, w.clock);
        return out;
    }

private:
    const Program& p_;
    const CachedCountOptions& o_;
    std::optional<DramCache> cache_;  // a new one for each launch (cold_launches)
    std::vector<bool> launch_at_;     // per pc: a launch begins at this loop
    std::int64_t workers_;
    std::size_t launch_ = 0;  // with cold_launches: which launch the walk is in
    std::uint64_t instructions_ = 0;
    std::uint64_t steps_ = 0;  // instructions and loop steps, against max_instructions

    // Runs the walkers, each instruction by the one whose clock is earliest (the lowest index
    // among equals), until none is left. After a walker halts, reaches a grid or ends its
    // iteration, `after(walker, index, what)` says whether it goes on (it may have been given
    // new work).
    template <class After>
    void interleave(std::vector<Walker>& walkers, After after) {
        using Entry = std::pair<std::uint64_t, std::size_t>;
        std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
        for (std::size_t k = 0; k < walkers.size(); ++k) ready.push({walkers[k].clock, k});
        while (!ready.empty()) {
            const std::size_t k = ready.top().second;
            ready.pop();
            Walker& w = walkers[k];
            for (;;) {
                Moved m = step(w);
                while (m != Moved::Instruction) {
                    if (!after(w, k, m)) break;
                    m = step(w);
                }
                if (m != Moved::Instruction) break;
                // Still the earliest (always, when it runs alone): on without the queue.
                if (ready.empty() || Entry{w.clock, k} < ready.top()) continue;
                ready.push({w.clock, k});
                break;
            }
        }
    }

    // The grid whose outermost loop is p.loops[outer], reached by every serial walker: its
    // iterations, head after head, on the workers; then every head goes on after it.
    void run_grid(std::vector<Walker>& serial, std::size_t outer) {
        const LoopInfo& lo = p_.loops[outer];
        const std::size_t inner = grid_inner_loop(p_, outer);
        const Walker& first = serial[0];
        std::uint64_t start = 0;
        for (const Walker& w : serial) start = std::max(start, w.clock);
        // The iteration to hand out next: its head and variables.
        std::int64_t head = 0;
        std::array<std::int64_t, kMaxLoopDepth> next_vars = first.vars, next_limit = first.limit;
        bool next_exists = grid_first(p_, outer, inner, next_vars.data(), next_limit.data());
        auto hand_out = [&](Walker& w) {
            while (!next_exists && ++head < o_.heads) {
                next_vars = first.vars;
                next_limit = first.limit;
                next_exists = grid_first(p_, outer, inner, next_vars.data(), next_limit.data());
            }
            if (!next_exists) return false;
            for (std::size_t k = outer; k <= inner; ++k) {
                const auto slot = static_cast<std::size_t>(p_.loops[k].slot);
                w.vars[slot] = next_vars[slot];
                w.limit[slot] = next_limit[slot];
            }
            w.pc = p_.loops[inner].body.first;
            w.head = head;
            next_exists = grid_next(p_, outer, inner, next_vars.data(), next_limit.data());
            return true;
        };
        // Every worker starts from the tiles as the loop found them.
        std::vector<Walker> workers;
        const std::int64_t count = launch_ < o_.launch_workers.size() && o_.launch_workers[launch_] > 0 ? o_.launch_workers[launch_] : workers_;
        for (std::int64_t k = 0; k < count; ++k) {
            Walker w = first;
            w.clock = start;
            if (!hand_out(w)) break;
            workers.push_back(std::move(w));
        }
        interleave(workers, [&](Walker& w, std::size_t, Moved m) { return m == Moved::IterationDone && hand_out(w); });
        std::uint64_t end = start;
        for (const Walker& w : workers) end = std::max(end, w.clock);
        for (Walker& w : serial) {
            w.pc = lo.body.second + 1;  // past the grid's outermost LoopEnd
            w.clock = end;
            if (!workers.empty()) {  // worker 0 goes on with its tiles, as in the machine
                w.rows = workers[0].rows;
                w.cols = workers[0].cols;
            }
        }
    }

    // One more step (an instruction, or a loop going round): past max_instructions, an error.
    void spend() {
        if (o_.max_instructions && steps_ == o_.max_instructions)
            throw ToyError(fmt::format("the walk through the cache stopped after {} instructions and loop steps, its limit",
                                       o_.max_instructions));
        ++steps_;
    }

    // Loop control (free) up to the next instruction, which it executes: its accesses go to
    // the cache and its cycles onto the walker's clock.
    Moved step(Walker& w) {
        for (;;) {
            const Inst& in = p_.code[static_cast<size_t>(w.pc)];
            switch (in.code) {
                case Code::LoopBegin: {
                    if (launch_at_[static_cast<size_t>(w.pc)] && w.released != w.pc) return Moved::AtLaunch;
                    const LoopInfo& l = p_.loops[static_cast<size_t>(in.loop)];
                    if (!l.lo.eval_checked(w.vars.data(), w.vars[static_cast<size_t>(l.slot)]) ||
                        !l.hi.eval_checked(w.vars.data(), w.limit[static_cast<size_t>(l.slot)]))
                        fail_loop_bound(p_, w.pc, w.vars.data());
                    const bool enters = w.vars[static_cast<size_t>(l.slot)] < w.limit[static_cast<size_t>(l.slot)];
                    if (l.grid_outer && enters) return Moved::AtGrid;
                    w.pc = enters ? w.pc + 1 : in.jump + 1;
                    continue;
                }
                case Code::LoopEnd: {
                    const LoopInfo& l = p_.loops[static_cast<size_t>(in.loop)];
                    if (l.grid_inner) return Moved::IterationDone;
                    spend();  // a loop of no instructions still takes steps: bounded like them
                    const bool again = ++w.vars[static_cast<size_t>(l.slot)] < w.limit[static_cast<size_t>(l.slot)];
                    w.pc = again ? in.jump + 1 : w.pc + 1;
                    continue;
                }
                case Code::Halt: return Moved::Halted;
                default: break;
            }
            spend();
            ++instructions_;
            const std::uint64_t units = execute(w, in);
            w.clock += units * static_cast<std::uint64_t>(p_.cycles[static_cast<size_t>(p_.op_at(w.pc))]);
            ++w.pc;
            return Moved::Instruction;
        }
    }

    // An instruction's accesses and its units of work, from the tiles' shapes as the machine
    // sets them (sim/exec/tile_exec.h): a slice's rows × columns, a product's r·c·k, a row
    // reduction's source elements, an element-wise result's elements (numpy broadcasting).
    std::uint64_t execute(Walker& w, const Inst& in) {
        if (in.code == Code::LOAD || in.code == Code::STORE || in.code == Code::STORE_ADD) {
            const MemRef& m = p_.mems[static_cast<size_t>(in.mem)];
            cache_->access({m.array, access_kind(static_cast<Op>(in.code)), m.address.eval(w.vars.data())}, w.head);
            return 1;
        }
        if (in.code != Code::Tile) return 1;
        const TileInst& t = p_.tile_insts[static_cast<size_t>(in.mem)];
        const OpInfo& op = info(t.op);
        auto shape = [&](int k) -> std::pair<std::int64_t, std::int64_t> {
            const TileOperand& a = t.args[static_cast<size_t>(k)];
            if (a.kind == TileOperand::Kind::Register) return {1, 1};
            std::pair<std::int64_t, std::int64_t> s{w.rows[static_cast<size_t>(a.index)], w.cols[static_cast<size_t>(a.index)]};
            if (a.transposed) std::swap(s.first, s.second);
            return s;
        };
        const TileOperand& dest = t.args[static_cast<size_t>(t.count - 1)];
        auto set_destination = [&](std::int64_t rows, std::int64_t cols) {
            if (dest.kind != TileOperand::Kind::Tile) return;
            w.rows[static_cast<size_t>(dest.index)] = rows;
            w.cols[static_cast<size_t>(dest.index)] = cols;
        };
        auto units = [](std::int64_t a, std::int64_t b, std::int64_t c = 1) { return static_cast<std::uint64_t>(a * b * c); };
        if (op.shape == OpShape::Memory) {
            const MemRef& m = p_.mems[static_cast<size_t>(t.mem)];
            SliceGeometry g = slice_geometry(p_, w.pc, m, w.vars.data());
            if (t.column) {
                std::swap(g.rows, g.cols);
                std::swap(g.row_stride, g.col_stride);
            }
            cache_->access({m.array, access_kind(t.op), g.address, g.rows, g.cols, g.row_stride, g.col_stride}, w.head);
            if (t.op == Op::LOAD) set_destination(g.rows, g.cols);
            return units(g.rows, g.cols);
        }
        if (op.shape == OpShape::RowReduce) {
            auto [rows, cols] = shape(0);
            set_destination(rows, 1);
            return units(rows, cols);
        }
        if (op.shape == OpShape::Product && t.args[0].kind == TileOperand::Kind::Tile && t.args[1].kind == TileOperand::Kind::Tile) {
            auto [rows, inner] = shape(0);
            std::int64_t cols = shape(1).second;
            set_destination(rows, cols);
            return units(rows, cols, inner);
        }
        std::int64_t rows = 1, cols = 1;
        if (op.shape == OpShape::Fill) {
            rows = shape(0).first;
            cols = dest.kind == TileOperand::Kind::Tile ? p_.tiles[static_cast<size_t>(dest.index)].cols : 1;
        } else {
            for (int k = 0; k < op.register_sources(); ++k) {
                rows = std::max(rows, shape(k).first);
                cols = std::max(cols, shape(k).second);
            }
        }
        set_destination(rows, cols);
        return units(rows, cols);
    }
};

}  // namespace

void add(CacheCounts& sum, const CacheCounts& more) {
    sum.total += more.total;
    for (size_t a = 0; a < sum.arrays.size() && a < more.arrays.size(); ++a) sum.arrays[a] += more.arrays[a];
    sum.dirty_bytes += more.dirty_bytes;
}

CachedCount count_through_cache(const Program& program, const CachedCountOptions& options) {
    if (!program.cache) throw ToyError("internal: count_through_cache needs a program with a cache");
    if (options.heads < 1) throw ToyError(fmt::format("heads must be at least 1, not {}", options.heads));
    return Walk(program, options).run();
}

}  // namespace toysim
