// The count-only run through the cache (cached_count.h).
#include "sim/exec/cached_count.h"

#include <algorithm>
#include <fmt/format.h>
#include <functional>
#include <optional>
#include <queue>
#include <utility>

#include "sim/exec/dram_cache.h"
#include "sim/exec/faults.h"
#include "sim/exec/interleave.h"
#include "support/text.h"

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
    std::uint64_t iteration_turn = 0;  // the turn (Walk::turns_) in which its innermost loop's iteration began
    bool in_grid = false;              // a grid's worker (else a serial walker)
};

// What a walker did when asked for one instruction (or a run of iterations: Instruction too).
enum class Moved { Instruction, Halted, AtGrid, IterationDone, AtLaunch };

// What one iteration of a loop executes: its instructions, their cycles, and the cycles from
// its start to its last access.
struct IterationCost {
    std::uint64_t instructions = 0, cycles = 0, last_access = 0;
    std::array<std::uint64_t, kOpCount> by_opcode{};  // its instructions per opcode (scalars: a unit each)
};

// A loop whose iterations may be counted in runs: no grid's (a grid's iterations go to workers
// one by one), its body scalar instructions and inner loops without accesses or loops of their
// own whose bounds do not depend on this loop's variable (matmul_outer's row of MACs). Every
// iteration executes the same instructions, each one unit of work, so the same cycles.
struct LoopPlan {
    bool runs = false;
    IterationCost own;                   // its own instructions' (its inner loops aside)
    std::vector<std::int32_t> accesses;  // its LOADs' and STOREs' pcs, in order
    struct Inner {
        std::size_t loop;
        bool before_last_access;
    };
    std::vector<Inner> inner;
};

// One access of a loop's iteration, at the iteration a run starts after.
struct Stream {
    int array = 0;
    AccessKind kind = AccessKind::Read;
    std::int64_t element = 0, element_step = 0;  // its element, and how far the next iteration's is (modulo 2^64)
    std::uint64_t first = 0, last = 0;           // its first and last byte
    std::uint64_t step = 0;                      // bytes to the next iteration's (modulo 2^64)
    bool steady = false;                         // in the same sectors for the whole run
};

class Walk {
public:
    Walk(const Program& p, const CachedCountOptions& o)
        : p_(p), o_(o), workers_(o.workers ? o.workers : p.workers), config_(p.cache.value().config), sets_(config_.sets()) {
        cache_.emplace(p, o.heads, o.element_bytes);
        sums_ = tiles_holding_sums(p);
        launch_at_.assign(p.code.size(), false);
        if (o.cold_launches)
            for (size_t pc = 0; pc < p.code.size(); ++pc)
                if (p.code[pc].code == Code::LoopBegin && p.loops[static_cast<size_t>(p.code[pc].loop)].slot == 0) launch_at_[pc] = true;
        if (o.cold_launches)
            for (std::int32_t pc : o.launch_pcs)
                if (pc >= 0 && static_cast<size_t>(pc) < p.code.size()) launch_at_[static_cast<size_t>(pc)] = true;
        // A serial loop that holds a grid is the host's loop around launches, not serial work.
        holds_grid_.assign(p.loops.size(), false);
        for (size_t l = 0; l < p.loops.size(); ++l)
            for (std::int32_t pc = p.loops[l].body.first; pc < p.loops[l].body.second; ++pc)
                if (p.code[static_cast<size_t>(pc)].code == Code::LoopBegin && p.loops[static_cast<size_t>(p.code[static_cast<size_t>(pc)].loop)].parallel)
                    holds_grid_[l] = true;
        plans_.resize(p.loops.size());
        if (!o.element_walk)  // inner loops first: a plan reads its inner loops'
            for (size_t l = p.loops.size(); l-- > 0;) plans_[l] = plan_loop(p.loops[l]);
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
                    out.launch_work.push_back(std::exchange(launch_work_, {}));
                    retired_lookups_ += cache_->lookups();
                    cache_.emplace(p_, o_.heads, o_.element_bytes);
                    ++launch_;
                }
                for (Walker& w : serial) w.released = w.pc;
                continue;
            }
            run_grid(serial, static_cast<std::size_t>(p_.code[static_cast<size_t>(serial[0].pc)].loop));
        }
        out.launch_work.push_back(launch_work_);
        if (o_.cold_launches) {
            out.launches.push_back(cache_->counts());
            out.counts = out.launches.front();
            for (size_t k = 1; k < out.launches.size(); ++k) add(out.counts, out.launches[k]);
        } else {
            out.counts = cache_->counts();
        }
        out.instructions = instructions_;
        out.work = work();
        for (const Walker& w : serial) out.cycles = std::max(out.cycles, w.clock);
        return out;
    }

private:
    const Program& p_;
    const CachedCountOptions& o_;
    std::optional<DramCache> cache_;  // a new one for each launch (cold_launches)
    std::vector<bool> launch_at_;     // per pc: a launch begins at this loop
    std::int64_t workers_;
    std::vector<LoopPlan> plans_;  // per loop; none in an element walk
    std::vector<bool> holds_grid_;  // per loop: a parallel loop inside it
    std::size_t launch_ = 0;  // with cold_launches: which launch the walk is in
    LaunchWork launch_work_;  // the launch the walk is in
    double lane_factor_ = 1;  // the last product's: its lanes' issue ÷ its multiply-adds (lane_work)
    double active_warps_ = 0; // and the warps it gives patches to (InstructionWork::active_warps)
    double product_steps_ = 0;  // the last product's fragment steps a warp takes in turn (InstructionWork::product_steps)
    double scalar_steps_ = 0;   // or its steps on the CUDA cores (InstructionWork::scalar_product_steps)
    std::vector<bool> sums_;  // per tile: a product's destination (fp32 sums on a GPU)
    std::uint64_t instructions_ = 0;
    std::uint64_t steps_ = 0;            // instructions, loop steps and runs walked: with lookups, against max_work
    std::uint64_t retired_lookups_ = 0;  // cache lines looked up in launches before this one
    // While a walker steps in an interleave: the walker due next (its clock and index; none
    // while it runs alone), and the stepping walker's index.
    std::optional<std::pair<std::uint64_t, std::size_t>> due_next_;
    std::size_t stepping_ = 0;
    std::uint64_t turns_ = 0;  // walkers taken from the interleave's queue so far: a new number, another's accesses may have come
    std::vector<Stream> streams_;  // count_run's, kept to reuse their memory
    std::vector<std::pair<std::uint64_t, std::uint64_t>> pinned_;
    const CacheConfig& config_;
    const std::uint64_t sets_;

    std::uint64_t set_of(std::uint64_t line) const { return config_.index_key(line, sets_) % sets_; }

    std::uint64_t work() const { return steps_ + retired_lookups_ + cache_->lookups(); }

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
            ++turns_;
            Walker& w = walkers[k];
            stepping_ = k;
            if (ready.empty()) due_next_.reset();
            else due_next_ = ready.top();
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
        ++launch_work_.grids;
        launch_work_.heads = o_.heads;
        const auto body = p_.loops[inner].body;
        const Inst* code = p_.code.data();
        if (std::none_of(code + body.first, code + body.second, [](const Inst& in) { return in.code == Code::Tile; })) ++launch_work_.scalar_grids;
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
            ++launch_work_.blocks;
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
            w.in_grid = true;
            if (!hand_out(w)) break;
            workers.push_back(std::move(w));
        }
        interleave(workers, [&](Walker& w, std::size_t, Moved m) { return m == Moved::IterationDone && hand_out(w); });
        std::uint64_t end = start;
        for (const Walker& w : workers) {
            end = std::max(end, w.clock);
            launch_work_.busy_cycles += w.clock - start;  // a worker takes its iterations back to back
        }
        launch_work_.makespan_cycles += end - start;
        for (Walker& w : serial) {
            w.pc = lo.body.second + 1;  // past the grid's outermost LoopEnd
            w.clock = end;
            if (!workers.empty()) {  // worker 0 goes on with its tiles, as in the machine
                w.rows = workers[0].rows;
                w.cols = workers[0].cols;
            }
        }
    }

    // One more step (an instruction, a loop going round, a run of iterations): past max_work, WalkTooLong.
    void spend() {
        if (o_.max_work && work() >= o_.max_work)
            throw WalkTooLong(fmt::format("the walk through the cache reached its limit, {} units of work (instructions and runs of loop "
                                          "iterations walked, cache lines looked up: minutes of walking): lower the parameters or the heads",
                                          grouped(double(o_.max_work))));
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
                    if (enters && !w.in_grid && !l.parallel && !holds_grid_[static_cast<size_t>(in.loop)]) ++launch_work_.serial_loops;
                    const LoopPlan& plan = plans_[static_cast<size_t>(in.loop)];
                    if (enters && plan.runs && plan.accesses.empty())  // no access: only its time and instructions count
                        if (const auto cost = iteration_cost(w, plan)) {
                            spend();
                            count_iterations(w, *cost, iterations_left(w, l));
                            w.vars[static_cast<size_t>(l.slot)] = w.limit[static_cast<size_t>(l.slot)];
                            w.pc = in.jump + 1;
                            return Moved::Instruction;
                        }
                    w.pc = enters ? w.pc + 1 : in.jump + 1;
                    w.iteration_turn = turns_;
                    continue;
                }
                case Code::LoopEnd: {
                    const LoopInfo& l = p_.loops[static_cast<size_t>(in.loop)];
                    if (l.grid_inner) return Moved::IterationDone;
                    spend();  // a loop of no instructions still takes steps: bounded like them
                    const bool again = ++w.vars[static_cast<size_t>(l.slot)] < w.limit[static_cast<size_t>(l.slot)];
                    const LoopPlan& plan = plans_[static_cast<size_t>(in.loop)];
                    // A run counted: the heap decides who goes next, as after an instruction.
                    if (again && plan.runs && count_run(w, l, plan)) return Moved::Instruction;
                    w.pc = again ? in.jump + 1 : w.pc + 1;
                    w.iteration_turn = turns_;
                    continue;
                }
                case Code::Halt: return Moved::Halted;
                default: break;
            }
            if (launch_at_[static_cast<size_t>(w.pc)] && w.released != w.pc) return Moved::AtLaunch;  // serial code of its own
            spend();
            ++instructions_;
            const std::uint64_t shared_before = launch_work_.shared_elements, product_before = launch_work_.product_shared_elements,
                                sums_before = launch_work_.shared_sum_elements, async_before = launch_work_.async_loads;
            lane_factor_ = 1;
            active_warps_ = 0;
            product_steps_ = scalar_steps_ = 0;
            const std::uint64_t units = execute(w, in);
            const auto op = static_cast<size_t>(p_.op_at(w.pc));
            w.clock += units * static_cast<std::uint64_t>(p_.cycles[op]);
            ++launch_work_.instructions[op];
            launch_work_.work[op] += units;
            if (launch_work_.by_pc.empty()) launch_work_.by_pc.resize(p_.code.size());
            InstructionWork& each = launch_work_.by_pc[static_cast<size_t>(w.pc)];
            if (each.executions++ == 0) {  // what the instruction is: the same each time it runs
                each.op = static_cast<int>(op);
                each.async = launch_work_.async_loads != async_before;
                each.in_grid = w.in_grid;
                each.writes_shared = writes_shared(in);
                each.stored = loads_stored(in);
                if (in.code == Code::Tile) {
                    const TileInst& t = p_.tile_insts[static_cast<size_t>(in.mem)];
                    each.by_element = t.by_element;
                    each.thread_rows = t.thread_rows;
                    each.thread_cols = t.thread_cols;
                }
            }
            each.work += units;
            each.shared_elements += launch_work_.shared_elements - shared_before;
            each.product_shared_elements += launch_work_.product_shared_elements - product_before;
            each.shared_sum_elements += launch_work_.shared_sum_elements - sums_before;
            if (kOpShape[op] == OpShape::Product) {
                each.lane_work += static_cast<double>(units) * lane_factor_;
                each.active_warps += active_warps_;
                each.product_steps += product_steps_;
                each.scalar_product_steps += scalar_steps_;
                launch_work_.idle_lane_work += static_cast<double>(units) * (lane_factor_ - 1);
            }
            ++w.pc;
            return Moved::Instruction;
        }
    }

    LoopPlan plan_loop(const LoopInfo& l) const {
        LoopPlan plan;
        if (l.parallel || l.grid_outer || l.grid_inner) return plan;
        auto uses_this_loop = [&](const Affine& bound) {
            for (int t = 0; t < bound.terms; ++t)
                if (bound.var[static_cast<size_t>(t)] >= l.slot && bound.coef[static_cast<size_t>(t)] != 0) return true;
            return false;
        };
        for (std::int32_t pc = l.body.first; pc < l.body.second; ++pc) {
            const Inst& in = p_.code[static_cast<size_t>(pc)];
            if (in.code == Code::LoopBegin) {
                const auto k = static_cast<std::size_t>(in.loop);
                const LoopPlan& inner = plans_[k];
                if (!inner.runs || !inner.accesses.empty() || !inner.inner.empty() || uses_this_loop(p_.loops[k].lo) ||
                    uses_this_loop(p_.loops[k].hi))
                    return plan;
                plan.inner.push_back({k, false});
                pc = in.jump;  // on after its LoopEnd
                continue;
            }
            if (!is_instruction(in.code) || in.code == Code::Tile) return plan;  // a tile's shapes change its cycles
            if (in.code == Code::LOAD || in.code == Code::STORE || in.code == Code::STORE_ADD) {
                plan.accesses.push_back(pc);
                plan.own.last_access = plan.own.cycles;
                for (LoopPlan::Inner& inner : plan.inner) inner.before_last_access = true;
            }
            plan.own.cycles += static_cast<std::uint64_t>(p_.cycles[static_cast<size_t>(p_.op_at(pc))]);
            ++plan.own.instructions;
            ++plan.own.by_opcode[static_cast<size_t>(p_.op_at(pc))];
        }
        plan.runs = true;
        return plan;
    }

    // An iteration of a loop that runs, with its inner loops' trips as their bounds are now;
    // the inner loops' variables and ends are left as an iteration leaves them. None when an
    // inner loop's bound overflows (walking it reports that).
    std::optional<IterationCost> iteration_cost(Walker& w, const LoopPlan& plan) {
        IterationCost cost = plan.own;
        for (const LoopPlan::Inner& inner : plan.inner) {
            const LoopInfo& l = p_.loops[inner.loop];
            const auto slot = static_cast<size_t>(l.slot);
            std::int64_t lo = 0, hi = 0;
            if (!l.lo.eval_checked(w.vars.data(), lo) || !l.hi.eval_checked(w.vars.data(), hi)) return std::nullopt;
            const std::uint64_t trips = lo < hi ? static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) : 0;
            const IterationCost& each = plans_[inner.loop].own;
            cost.instructions += trips * each.instructions;
            cost.cycles += trips * each.cycles;
            for (size_t op = 0; op < each.by_opcode.size(); ++op) cost.by_opcode[op] += trips * each.by_opcode[op];
            if (inner.before_last_access) cost.last_access += trips * each.cycles;
            w.vars[slot] = std::max(lo, hi);
            w.limit[slot] = hi;
        }
        return cost;
    }

    // `count` iterations, as walking them would count them but for their accesses (the
    // caller's); modulo 2^64, as the clock adds up one instruction at a time.
    void count_iterations(Walker& w, const IterationCost& cost, std::uint64_t count) {
        w.clock += count * cost.cycles;
        instructions_ += count * cost.instructions;
        for (size_t op = 0; op < cost.by_opcode.size(); ++op) {
            launch_work_.instructions[op] += count * cost.by_opcode[op];
            launch_work_.work[op] += count * cost.by_opcode[op];
        }
    }

    // From the loop variable to the loop's end (which it is below), without overflow.
    static std::uint64_t iterations_left(const Walker& w, const LoopInfo& l) {
        const auto slot = static_cast<size_t>(l.slot);
        return static_cast<std::uint64_t>(w.limit[slot]) - static_cast<std::uint64_t>(w.vars[slot]);
    }

    // How many iterations from the walker's next one may be counted before another walker is
    // due: the last access of each must come before the earliest other walker's next
    // instruction in the machine's order (clock, then index). Accesses are all the cache sees,
    // so an instruction without one may pass it.
    std::uint64_t alone_for(const Walker& w, const IterationCost& cost) const {
        if (!due_next_) return std::numeric_limits<std::uint64_t>::max();
        const auto [clock, index] = *due_next_;
        if (clock == 0 && index < stepping_) return 0;
        const std::uint64_t latest = stepping_ < index ? clock : clock - 1;  // the last clock still this walker's turn
        if (w.clock > latest || latest - w.clock < cost.last_access) return 0;
        if (cost.cycles == 0) return std::numeric_limits<std::uint64_t>::max();
        return (latest - w.clock - cost.last_access) / cost.cycles + 1;
    }

    // After an iteration walked instruction by instruction, or the last of a run (w.vars holds
    // the next one), the iterations that follow it while some of its accesses stay in the same
    // sectors, counted at once: true when there were some. The walker is then at the loop's
    // end after the last of them, where the next run may start.
    //
    // Why that is exact. Call those accesses steady, their lines pinned, and the sets holding
    // a pinned line pinned sets; require that no set holds more pinned lines than it has ways,
    // and that the other accesses (moving) touch no pinned set, in the iteration just walked
    // and in each counted one. The LRU choice in a set depends only on the order of its lines'
    // last uses. In the walked iteration a pinned set saw only pinned lines, at most `ways`
    // of them, so none was evicted after its access (that takes `ways` lines used after it in
    // the set, and one more coming in): every steady access's sectors are present, dirty where
    // written, and the pinned lines are the newest of their sets, in the iteration's order.
    // Each later iteration of the run uses them again in that same order and brings nothing
    // into a pinned set, so its steady accesses are hits that leave that state exactly as it
    // was: they are counted as hits and not sent. Moving accesses touch other sets only, which
    // see the same accesses in the same order either way: they are sent as they come. The state
    // after a run is then the one walking it gives, so a run may start after a run.
    bool count_run(Walker& w, const LoopInfo& l, const LoopPlan& plan) {
        const auto slot = static_cast<size_t>(l.slot);
        const std::int64_t next = w.vars[slot];
        std::uint64_t run = iterations_left(w, l);
        // The walked iteration's accesses must have come with no other walker's among them.
        if (w.iteration_turn != turns_) return false;
        const auto cost = iteration_cost(w, plan);
        if (!cost) return false;
        run = std::min(run, alone_for(w, *cost));
        if (run == 0) return false;
        const std::uint64_t sector = config_.sector_bytes, line = config_.line_bytes;
        streams_.clear();
        for (std::int32_t pc : plan.accesses) {
            const MemRef& m = p_.mems[static_cast<size_t>(p_.code[static_cast<size_t>(pc)].mem)];
            Stream s;
            s.array = m.array;
            s.kind = access_kind(static_cast<Op>(p_.code[static_cast<size_t>(pc)].code));
            w.vars[slot] = next - 1;
            s.element = m.address.eval(w.vars.data());
            w.vars[slot] = next;
            s.element_step = static_cast<std::int64_t>(static_cast<std::uint64_t>(m.address.eval(w.vars.data())) - static_cast<std::uint64_t>(s.element));
            const std::uint64_t bytes = cache_->element_bytes(s.array);
            s.first = cache_->byte_address(s.array, s.element, w.head);
            s.last = s.first + bytes - 1;
            // An empty element, or one that wraps around the addresses: not worth proving anything about.
            if (bytes == 0 || s.last < s.first || s.last > std::numeric_limits<std::uint64_t>::max() - sector) return false;
            s.step = cache_->byte_address(s.array, m.address.eval(w.vars.data()), w.head) - s.first;
            // The iterations after this one whose first and last bytes stay in the same sectors.
            std::uint64_t same = std::numeric_limits<std::uint64_t>::max();
            if (s.step != 0) {
                const bool up = static_cast<std::int64_t>(s.step) > 0;
                const std::uint64_t room = up ? std::min(sector - 1 - s.first % sector, sector - 1 - s.last % sector)
                                              : std::min(s.first % sector, s.last % sector);
                same = room / (up ? s.step : 0 - s.step);
            }
            s.steady = same > 0;
            // A moving access that may stay in its next sector: one iteration, so that the
            // next run finds it steady.
            const bool settles = s.step != 0 && (static_cast<std::int64_t>(s.step) > 0 ? s.step : 0 - s.step) < sector;
            run = std::min(run, s.steady ? same : settles ? 1 : run);
            streams_.push_back(s);
        }
        // The pinned lines' sets, each with no more pinned lines than ways.
        std::vector<std::pair<std::uint64_t, std::uint64_t>>& pinned = pinned_;  // (set, line)
        pinned.clear();
        for (const Stream& s : streams_)
            if (s.steady)
                for (std::uint64_t k = s.first / line; k <= s.last / line; ++k) pinned.emplace_back(set_of(k), k);
        std::sort(pinned.begin(), pinned.end());
        pinned.erase(std::unique(pinned.begin(), pinned.end()), pinned.end());
        for (size_t k = 0, same_set = 0; k < pinned.size(); ++k) {
            same_set = k > 0 && pinned[k].first == pinned[k - 1].first ? same_set + 1 : 1;
            if (same_set > config_.ways) return false;
        }
        auto in_pinned_set = [&](std::uint64_t first, std::uint64_t last) {
            if (pinned.empty()) return false;
            for (std::uint64_t k = first / line; k <= last / line; ++k) {
                const std::uint64_t set = set_of(k);
                for (const auto& pin : pinned)
                    if (pin.first == set) return true;
            }
            return false;
        };
        auto moving_touch_pinned = [&](std::uint64_t iteration) {  // iteration: after the walked one
            for (const Stream& s : streams_)
                if (!s.steady && in_pinned_set(s.first + iteration * s.step, s.last + iteration * s.step)) return true;
            return false;
        };
        if (moving_touch_pinned(0)) return false;
        bool moving = false;
        for (const Stream& s : streams_) moving = moving || !s.steady;
        if (moving)
            for (std::uint64_t k = 1; k <= run; ++k) {
                if (moving_touch_pinned(k)) {  // this iteration is walked
                    run = k - 1;
                    break;
                }
                spend();  // each iteration whose accesses are sent is work
                for (const Stream& s : streams_)
                    if (!s.steady) {
                        const auto element = static_cast<std::int64_t>(static_cast<std::uint64_t>(s.element) + k * static_cast<std::uint64_t>(s.element_step));
                        cache_->access({s.array, s.kind, element}, w.head);
                    }
            }
        if (run == 0) return false;
        spend();
        for (const Stream& s : streams_)
            if (s.steady) {
                const std::uint64_t sectors = run * (s.last / sector - s.first / sector + 1);
                cache_->add_hits(s.array, reads_dram(s.kind) ? sectors : 0, writes_dram(s.kind) ? sectors : 0);
            }
        count_iterations(w, *cost, run);
        w.vars[slot] = static_cast<std::int64_t>(static_cast<std::uint64_t>(next) + run - 1);  // the last counted: the next run starts after it
        w.pc = l.body.second;
        w.iteration_turn = turns_;
        return true;
    }

    // A tile instruction whose result is a tile in shared memory (not `in registers`).
    bool writes_shared(const Inst& in) const {
        if (in.code != Code::Tile) return false;
        const TileInst& t = p_.tile_insts[static_cast<size_t>(in.mem)];
        const TileOperand& dest = t.args[static_cast<size_t>(t.count - 1)];
        return dest.kind == TileOperand::Kind::Tile && !p_.tiles[static_cast<size_t>(dest.index)].in_registers && t.op != Op::STORE &&
               t.op != Op::STORE_ADD;
    }

    bool loads_stored(const Inst& in) const {
        if (in.code != Code::Tile) return false;
        const TileInst& t = p_.tile_insts[static_cast<size_t>(in.mem)];
        const TileOperand& dest = t.args[static_cast<size_t>(t.count - 1)];
        return t.op == Op::LOAD && dest.kind == TileOperand::Kind::Tile && p_.tiles[static_cast<size_t>(dest.index)].stored;
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
        // Shared memory's elements, for the timing pass: what the instruction reads from and
        // writes to the tiles a GPU keeps there (not `in registers`).
        auto in_shared = [&](int k) {
            const TileOperand& a = t.args[static_cast<size_t>(k)];
            return a.kind == TileOperand::Kind::Tile && !p_.tiles[static_cast<size_t>(a.index)].in_registers;
        };
        auto shared = [&](int k, std::uint64_t elements) {
            if (!in_shared(k)) return;
            launch_work_.shared_elements += elements;
            if (sums_[static_cast<size_t>(t.args[static_cast<size_t>(k)].index)]) launch_work_.shared_sum_elements += elements;
        };
        const int last = t.count - 1;
        if (op.shape == OpShape::Memory) {
            const MemRef& m = p_.mems[static_cast<size_t>(t.mem)];
            SliceGeometry g = slice_geometry(p_, w.pc, m, w.vars.data());
            if (t.column) {
                std::swap(g.rows, g.cols);
                std::swap(g.row_stride, g.col_stride);
            }
            cache_->access({m.array, access_kind(t.op), g.address, g.rows, g.cols, g.row_stride, g.col_stride}, w.head);
            if (t.op == Op::LOAD) set_destination(g.rows, g.cols);
            // An asynchronous copy (cp.async, TMA) writes shared memory without the load path
            // (Nsight counts no store wavefronts for it): only a synchronous one's elements count.
            if (t.op == Op::LOAD && dest.kind == TileOperand::Kind::Tile && p_.tiles[static_cast<size_t>(dest.index)].stages > 1) {
                ++launch_work_.async_loads;
                launch_work_.async_elements += units(g.rows, g.cols);
            } else {
                shared(t.op == Op::LOAD ? last : 0, units(g.rows, g.cols));
            }
            return units(g.rows, g.cols);
        }
        if (op.shape == OpShape::RowReduce) {
            auto [rows, cols] = shape(0);
            set_destination(rows, 1);
            shared(0, units(rows, cols));
            shared(last, units(rows, 1));
            return units(rows, cols);
        }
        if (op.shape == OpShape::Product && t.args[0].kind == TileOperand::Kind::Tile && t.args[1].kind == TileOperand::Kind::Tile) {
            auto [rows, inner] = shape(0);
            std::int64_t cols = shape(1).second;
            set_destination(rows, cols);
            // The rows split over the worker's warps: each reads its rows of the left operand
            // once and all of the right operand.
            const std::uint64_t before = launch_work_.shared_elements;
            shared(0, units(rows, inner));
            shared(1, units(inner, cols, std::min<std::int64_t>(p_.warps, rows)));
            launch_work_.product_shared_elements += launch_work_.shared_elements - before;
            if (t.op == Op::MAC) shared(2, units(rows, cols));
            shared(last, units(rows, cols));
            // On the CUDA cores a lane takes a 4×4 patch of its warp's rows (the course's
            // kernels, attention_forward.cu): every lane of the warp issues a patch's 16
            // multiply-adds a step of k, for ⌈patches/32⌉ patches, whatever of them is real. With
            // fewer than 32 patches a warp the rest of its lanes idle (8 rows of 8 warps' 64 fill
            // all 32; 2 rows, 16 columns, 4), and with fewer than 4 rows a warp a patch's rows past
            // them are computed and dropped (2 rows: half of each patch). Nsight on the H200 (the
            // H100's SM), fa2_causal at B = 16, n = 4096, d = 64: 5.39·10⁹ FFMA warp instructions
            // for 0.54·10⁹ warps' worth of multiply-adds, the 10× this gives (16 and 4).
            const std::int64_t warps = std::max<std::int64_t>(p_.warps, 1);
            const auto patches_of = [](std::int64_t r, std::int64_t c) { return std::max<std::int64_t>(1, ((r + 3) / 4) * ((c + 3) / 4)); };
            // A 4×4 patch's 16 multiply-adds on all 32 lanes of ⌈patches/32⌉ warp turns, over
            // the `real` multiply-adds of the rows and columns they cover.
            const auto issued_over = [](std::int64_t patches, std::int64_t real) {
                return 32.0 * static_cast<double>((patches + 31) / 32) * 16.0 / static_cast<double>(std::max<std::int64_t>(1, real));
            };
            const std::int64_t warp_rows = (rows + warps - 1) / warps;
            const std::int64_t patches = patches_of(warp_rows, cols);  // a warp's
            if (p_.block_patches) {
                // `products cuda block`: the block's threads take the result's patches in turn, and
                // a warp without one waits at the barrier after (attention_backward.cu's block_product).
                const std::int64_t block_patches = patches_of(rows, cols);
                lane_factor_ = issued_over(block_patches, rows * cols);
                active_warps_ = static_cast<double>(std::min(warps, (block_patches + 31) / 32));
            } else {
                lane_factor_ = issued_over(patches, warp_rows * cols);
                active_warps_ = static_cast<double>((rows + warp_rows - 1) / std::max<std::int64_t>(warp_rows, 1));  // the warps with rows
            }
            // The steps the busiest warp takes one after another: on the tensor cores (whole
            // 16×16 fragments, k 8 at a time: wmma m16n16k8), the warps sharing the fragments;
            // else on the CUDA cores, a lane's patches, k one at a time.
            if (rows % 16 == 0 && cols % 16 == 0 && inner % 8 == 0) {
                const std::int64_t fragments = (rows / 16) * (cols / 16);
                product_steps_ = static_cast<double>(((fragments + warps - 1) / warps) * (inner / 8));
                scalar_steps_ = 0;
            } else {
                product_steps_ = 0;
                scalar_steps_ = static_cast<double>(((patches + 31) / 32) * inner);
            }
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
                shared(k, units(shape(k).first, shape(k).second));
            }
        }
        set_destination(rows, cols);
        shared(last, units(rows, cols));
        return units(rows, cols);
    }
};

}  // namespace

std::vector<bool> tiles_holding_sums(const Program& p) {
    std::vector<bool> sums(p.tiles.size(), false);
    for (const TileInst& t : p.tile_insts) {
        const TileOperand& dest = t.args[static_cast<size_t>(t.count - 1)];
        if (kOpShape[static_cast<size_t>(t.op)] == OpShape::Product && dest.kind == TileOperand::Kind::Tile) sums[static_cast<size_t>(dest.index)] = true;
    }
    return sums;
}

void add(CacheCounts& sum, const CacheCounts& more) {
    sum.total += more.total;
    for (size_t a = 0; a < sum.arrays.size() && a < more.arrays.size(); ++a) sum.arrays[a] += more.arrays[a];
    sum.dirty_bytes += more.dirty_bytes;
}

CachedCount count_through_cache(const Program& program, const CachedCountOptions& options) {
    if (!program.cache) throw ToyError("internal: count_through_cache needs a program with a cache");
    refuse_devices(program, "the count-only walk through a cache");
    if (options.heads < 1) throw ToyError(fmt::format("heads must be at least 1, not {}", options.heads));
    return Walk(program, options).run();
}

}  // namespace toysim
