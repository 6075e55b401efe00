#include "sim/step/session.h"

#include <algorithm>

#include "sim/check/fill.h"

namespace toysim {

namespace {

// A long move runs in chunks of at most this many steps, so an interrupt is seen within
// milliseconds.
constexpr std::uint64_t kChunk = std::uint64_t{1} << 22;

template <class T>
std::size_t bytes_of(const std::vector<T>& v) {
    return v.size() * sizeof(T);
}

template <class Value>
std::size_t context_bytes(const MachineState<Value>& s) {
    std::size_t n = bytes_of(s.contexts) + bytes_of(s.parallel.worker_iteration);
    for (const auto& c : s.contexts)
        n += bytes_of(c.regs) + bytes_of(c.written) + bytes_of(c.tiles) + bytes_of(c.tile_rows) + bytes_of(c.tile_cols) + bytes_of(c.tile_touched);
    return n;
}

template <class Value>
std::size_t state_bytes(const MachineState<Value>& s) {
    return sizeof(s) + bytes_of(s.regs) + bytes_of(s.written) + bytes_of(s.tiles) + bytes_of(s.tile_rows) + bytes_of(s.tile_cols) +
           bytes_of(s.tile_touched) + bytes_of(s.dram) + bytes_of(s.present) + bytes_of(s.reads) + bytes_of(s.executed) + bytes_of(s.work) +
           bytes_of(s.race) + bytes_of(s.race_sharers) + bytes_of(s.parallel.worker_free) + bytes_of(s.parallel.busy) + context_bytes(s);
}

template <class Value>
struct Capture final : EventSink<Value> {
    Event<Value>* out;
    explicit Capture(Event<Value>* o) : out(o) {}
    void on_event(const Event<Value>& e) override { *out = e; }
};

// Watches the events of a scan for breakpoints: the first hit (going forward) or the last one
// (going back), with each counter breakpoint's running value.
template <class Value>
struct Scanner final : EventSink<Value> {
    const Program& program;
    const std::vector<Breakpoint>& breakpoints;
    std::vector<std::uint64_t> counter;  // per breakpoint: its counter before the next event
    bool keep_last;
    std::uint64_t hit_step = 0;
    int hit = -1;
    Scanner(const Program& p, const std::vector<Breakpoint>& b, bool last) : program(p), breakpoints(b), counter(b.size()), keep_last(last) {}
    void start_counters(const Counters& c) {
        for (size_t i = 0; i < breakpoints.size(); ++i)
            if (breakpoints[i].kind == Breakpoint::Kind::Counter) counter[i] = c.value(breakpoints[i].counter).count;
    }
    bool has_counters() const {
        return std::any_of(breakpoints.begin(), breakpoints.end(), [](const Breakpoint& b) { return b.kind == Breakpoint::Kind::Counter; });
    }
    void on_event(const Event<Value>& e) override {
        bool looking = keep_last || hit < 0;
        for (size_t i = 0; i < breakpoints.size(); ++i) {
            const Breakpoint& bp = breakpoints[i];
            if (looking && stops_at(program, bp, e, counter[i])) {
                hit = static_cast<int>(i);
                hit_step = e.step;
                looking = keep_last;
                if (!keep_last) break;
            }
            if (bp.kind == Breakpoint::Kind::Counter) counter[i] += counter_delta(program, bp.counter, e);
        }
    }
};

}  // namespace

template <class Domain>
Session<Domain>::Session(const Program& p, Domain domain, ExprArena* arena, SessionLimits limits)
    : program_(&p), arena_(arena), limits_(limits), machine_(p, std::move(domain)) {
    if constexpr (std::is_same_v<Value, double>) fill_inputs(p, machine_.state());
    else fill_symbolic_inputs(p, machine_.state(), *arena_);
    // Through the loop control before the first instruction, so the machine stands at it (pc
    // and loop variables as it will run) like at every other pause.
    machine_.run_until(0, limits_.max_steps);
    if (machine_.halted()) end_ = 0;
    state_bytes_ = state_bytes(machine_.state());
    // Copying a checkpoint costs about as much as running state_bytes/16 steps: a shorter
    // interval would spend more time copying than it saves in replay.
    interval_ = std::max<std::uint64_t>(4096, state_bytes_ / 16);
    take_checkpoint();
}

template <class Domain>
void Session<Domain>::restore(const Checkpoint& c) {
    machine_.state() = c.state;
    if (arena_) arena_->rollback(c.mark);
    has_last_ = false;
}

template <class Domain>
void Session<Domain>::take_checkpoint() {
    if (!checkpoints_.empty() && checkpoints_.back().step >= position()) return;
    checkpoints_.push_back(Checkpoint{position(), machine_.state(), arena_ ? arena_->mark() : ExprArena::Mark{}});
    // Over budget: keep step 0 and every other one after it, and take them half as often.
    while (checkpoints_.size() > 2 && checkpoints_.size() * state_bytes_ > limits_.checkpoint_bytes) {
        std::vector<Checkpoint> kept;
        for (size_t i = 0; i < checkpoints_.size(); ++i)
            if (i % 2 == 0 || i + 1 == checkpoints_.size()) kept.push_back(std::move(checkpoints_[i]));
        checkpoints_ = std::move(kept);
        interval_ *= 2;
    }
}

template <class Domain>
std::uint64_t Session<Domain>::next_boundary() const {
    return checkpoints_.back().step + interval_;
}

template <class Domain>
void Session<Domain>::settle_after_fault(const ToyError& e) {
    const MachineState<Value>& s = machine_.state();
    // A fault inside an instruction comes after it was counted; the step limit and faults of
    // loop control come before any instruction starts.
    bool counted = e.kind() != ErrorKind::StepLimit && program_->origin[static_cast<size_t>(s.pc)] != nullptr;
    std::uint64_t completed = s.steps - (counted ? 1 : 0);
    fault_ = e;
    end_ = completed;
    auto cp = std::upper_bound(checkpoints_.begin(), checkpoints_.end(), completed, [](std::uint64_t v, const Checkpoint& c) { return v < c.step; });
    restore(*std::prev(cp));
    try {
        machine_.run_until(completed, limits_.max_steps);
    } catch (const ToyError&) {
        // Loop control that faults runs before the next instruction's pause: the machine
        // stands after the last completed instruction all the same.
    }
}

template <class Domain>
bool Session<Domain>::run_plain_to(std::uint64_t step) {
    while (position() < step) {
        if (end_ && position() >= *end_) return false;
        std::uint64_t stop = std::min({step, next_boundary(), position() + kChunk});
        try {
            machine_.run_until(stop, limits_.max_steps);
        } catch (const ToyError& e) {
            settle_after_fault(e);
            return false;
        }
        has_last_ = false;
        if (machine_.halted()) {
            end_ = position();
            return position() >= step;
        }
        if (position() == next_boundary()) take_checkpoint();
        if (position() < step && interrupted && interrupted()) return false;
    }
    return true;
}

template <class Domain>
void Session<Domain>::land(std::uint64_t step) {
    if (step == 0) {
        restore(checkpoints_.front());
        return;
    }
    std::uint64_t before = step - 1;
    auto cp = std::prev(std::upper_bound(checkpoints_.begin(), checkpoints_.end(), before,
                                         [](std::uint64_t v, const Checkpoint& c) { return v < c.step; }));
    if (before < position() || cp->step > position()) restore(*cp);
    auto saved = interrupted;
    interrupted = nullptr;  // landing is short and must not stop halfway
    run_plain_to(before);
    interrupted = saved;
    Capture<Value> capture(&last_);
    try {
        if (machine_.step(&capture, limits_.max_steps)) has_last_ = true;
        if (machine_.halted()) end_ = position();
    } catch (const ToyError& e) {
        settle_after_fault(e);
        // A fault in the step's instruction ends the run before it: land on the step before.
        // One in the loop control behind it (the last ready device finishing while another
        // waits: a deadlock) ends the run after it, and the capture holds the step.
        if (*end_ < step) land(*end_);
        else has_last_ = true;
    }
}

template <class Domain>
Stop Session<Domain>::at_end_reason() const {
    return Stop{fault_ ? Stop::Reason::Fault : Stop::Reason::End};
}

template <class Domain>
Stop Session<Domain>::go_to(std::uint64_t step) {
    if (step <= position() || (end_ && step > *end_ && position() == *end_)) {
        if (end_ && step > *end_) return at_end_reason();
        land(step);
        return Stop{step == 0 ? Stop::Reason::Start : Stop::Reason::Moved};
    }
    if (end_ && step > *end_) {
        land(*end_);
        return at_end_reason();
    }
    bool reached = run_plain_to(step - 1);
    bool interrupted_here = !reached && !(end_ && position() >= *end_);
    if (reached) {
        Capture<Value> capture(&last_);
        try {
            if (machine_.step(&capture, limits_.max_steps)) {
                has_last_ = true;
                if (machine_.halted()) end_ = position();
                return Stop{};
            }
            end_ = position();
        } catch (const ToyError& e) {
            settle_after_fault(e);
        }
    }
    land(position());
    return interrupted_here ? Stop{Stop::Reason::Interrupted} : at_end_reason();
}

template <class Domain>
Stop Session<Domain>::forward(std::uint64_t n) {
    std::uint64_t here = position();
    return go_to(n > kNoPause - 1 - here ? kNoPause - 1 : here + n);
}

template <class Domain>
Stop Session<Domain>::backward(std::uint64_t n) {
    return go_to(position() - std::min(n, position()));
}

template <class Domain>
Stop Session<Domain>::run_forward() {
    if (end_ && position() >= *end_) return at_end_reason();
    if (breakpoints_.empty()) return go_to(kNoPause - 1);
    Scanner<Value> scan(*program_, breakpoints_, false);
    if (scan.has_counters()) scan.start_counters(counters());
    for (;;) {
        std::uint64_t stop = std::min(next_boundary(), position() + kChunk);
        try {
            machine_.run_until(stop, limits_.max_steps, scan);
        } catch (const ToyError& e) {
            settle_after_fault(e);
            if (scan.hit >= 0 && scan.hit_step <= *end_) break;
            land(*end_);
            return at_end_reason();
        }
        has_last_ = false;
        if (scan.hit >= 0) break;
        if (machine_.halted()) {
            end_ = position();
            land(*end_);
            return at_end_reason();
        }
        if (position() == next_boundary()) take_checkpoint();
        if (interrupted && interrupted()) {
            land(position());
            return Stop{Stop::Reason::Interrupted};
        }
    }
    land(scan.hit_step);
    ++breakpoints_[static_cast<size_t>(scan.hit)].hits;
    return Stop{Stop::Reason::Breakpoint, scan.hit};
}

template <class Domain>
template <class Replay>
bool Session<Domain>::back_over_segments(std::uint64_t upper, Replay&& replay) {
    auto it = std::upper_bound(checkpoints_.begin(), checkpoints_.end(), upper, [](std::uint64_t v, const Checkpoint& c) { return v < c.step; });
    for (auto index = static_cast<std::ptrdiff_t>(it - checkpoints_.begin()) - 1; upper > 0 && index >= 0; --index) {
        const Checkpoint& c = checkpoints_[static_cast<size_t>(index)];
        if (c.step == upper) continue;
        restore(c);
        if (replay(upper, c.step)) return true;
        upper = c.step;
    }
    return false;
}

template <class Domain>
Stop Session<Domain>::run_backward() {
    if (position() == 0) return Stop{Stop::Reason::Start};
    // The latest step a breakpoint may stop at is the one before this.
    std::optional<Stop> stop;
    if (!breakpoints_.empty())
        back_over_segments(position() - 1, [&](std::uint64_t to, std::uint64_t from) {
            Scanner<Value> scan(*program_, breakpoints_, true);
            if (scan.has_counters()) scan.start_counters(counters());
            machine_.run_until(to, limits_.max_steps, scan);  // replays steps that ran before: no fault
            if (scan.hit >= 0) {
                land(scan.hit_step);
                ++breakpoints_[static_cast<size_t>(scan.hit)].hits;
                stop = Stop{Stop::Reason::Breakpoint, scan.hit};
            } else if (interrupted && interrupted()) {
                land(from);
                stop = Stop{Stop::Reason::Interrupted};
            }
            return stop.has_value();
        });
    if (stop) return *stop;
    land(0);
    return Stop{Stop::Reason::Start};
}

template <class Domain>
void Session<Domain>::exchange_worker_part(std::uint32_t worker) {
    auto& st = machine_.state();
    if (worker == st.parallel.worker || worker >= st.contexts.size()) return;
    // One exchange, undone by the same exchange: meanwhile W's place holds the running worker's.
    swap_context(st, st.contexts[worker]);
}

template <class Domain>
bool Session<Domain>::visit_all(EventSink<Value>& sink, std::uint64_t limit) {
    restore(checkpoints_.front());
    bool whole = true;
    while (!machine_.halted()) {
        if (position() >= limit) {
            whole = false;
            break;
        }
        try {
            machine_.run_until(std::min({limit, next_boundary(), position() + kChunk}), limits_.max_steps, sink);
        } catch (const ToyError& e) {
            settle_after_fault(e);
            break;
        }
        if (machine_.halted()) end_ = position();
        else if (position() == next_boundary()) take_checkpoint();
    }
    land(position());
    return whole;
}

template <class Domain>
int Session<Domain>::add_breakpoint(Breakpoint bp) {
    bp.number = next_breakpoint_++;
    breakpoints_.push_back(std::move(bp));
    return breakpoints_.back().number;
}

template <class Domain>
bool Session<Domain>::delete_breakpoint(int number) {
    auto it = std::find_if(breakpoints_.begin(), breakpoints_.end(), [&](const Breakpoint& b) { return b.number == number; });
    if (it == breakpoints_.end()) return false;
    breakpoints_.erase(it);
    return true;
}

template class Session<NumericDomain>;
template class Session<SymbolicDomain>;

std::optional<std::vector<std::uint32_t>> collect_shown_values(Session<SymbolicDomain>& session, std::uint64_t limit) {
    struct Collect final : EventSink<std::uint32_t> {
        std::vector<std::uint32_t> ids;
        void block(const std::vector<std::uint32_t>& values, std::int64_t rows, std::int64_t cols) {
            for (std::int64_t i = 0; i < std::min(rows, kShownBlock); ++i)
                for (std::int64_t j = 0; j < std::min(cols, kShownBlock); ++j)
                    if (static_cast<size_t>(i * cols + j) < values.size()) ids.push_back(values[static_cast<size_t>(i * cols + j)]);
        }
        void on_event(const Event<std::uint32_t>& e) override {
            if (e.reg >= 0) {
                ids.push_back(e.reg_new);
                if (e.reg_was_written) ids.push_back(e.reg_old);
            }
            if (e.tile >= 0) {
                block(e.tile_new, e.rows, e.cols);
                block(e.tile_old, e.rows, e.cols);
            }
            if (writes_dram(e.op) && !e.accesses.empty()) block(e.dram_new, e.accesses.front().rows, e.accesses.front().cols);
        }
    } collect;
    if (!session.visit_all(collect, limit)) return std::nullopt;
    return std::move(collect.ids);
}

}  // namespace toysim
