// Reductions in serial scalar code: a loop that folds loaded values into registers (softmax's
// max and sum, a dot product) split over a block's threads.
//
// The simulator runs serial code on worker 0, one instruction after another; a kernel that
// does the same on one GPU thread per head walks p4_softmax_3pass's 100,000 elements at tens of
// nanoseconds each. A loop qualifies when its iterations could run in any order but for the
// registers it folds into: its body is scalar instructions only (no inner loop, no tile), LOADs
// whose bounds are proven (no fault to stop a thread half way) and no STOREs; each register the
// body writes is either an accumulator (written only by one ADD, MUL or MAX of itself and another
// register, read nowhere else in the body) or written before it is read in the iteration
// (a private value, such as the loaded element). Each thread then folds its iterations from the
// op's identity, the block combines the threads' parts, and the register before the loop is
// folded with the total: the same reduction in another order (sums round differently, as any
// parallel sum does). The iteration counts, and so the DRAM counts, are the program's.
//
// The online softmax's first pass carries two registers at once, a running max m and a sum s of
// terms scaled by e^(−m) that is rescaled by e^(m − m') whenever the max grows: no single fold,
// but the pair has a merge (Flash-Decoding merges its splits with it). The body is recognized by
// what it computes, not by how it is written: run symbolically from the registers' values at
// the start of an iteration, it must leave m' = max(m, x) and s' = s·e^(m − m') + e^(y − m')
// (the new term possibly times a g), where x, y and g depend on nothing carried.
#include <array>
#include <bit>
#include <map>
#include <optional>
#include <tuple>
#include <variant>

#include <fmt/format.h>

#include "gpu/codegen/codegen_emit.h"

namespace toysim::gpu {

namespace {

// The register an instruction writes, or -1 (a STORE's register is a source).
std::int32_t written_register(const Inst& in, const OpInfo& o) {
    return in.reg_count > o.register_sources() ? in.reg[static_cast<size_t>(in.reg_count - 1)] : -1;
}

const char* identity_of(Op op) { return op == Op::ADD ? "-0.0f" : op == Op::MUL ? "1.0f" : "-INFINITY"; }
const char* method_of(Op op) { return op == Op::ADD ? "add" : op == Op::MUL ? "mul" : "max"; }

// What a loop body of scalar instructions leaves in each register, as an expression of the
// values the registers held when the iteration began (Start), the elements it loads and its
// constants: the body's meaning, whatever registers and order it computes it with.
class BodyValues {
public:
    struct Node {
        enum class Kind : std::uint8_t { Start, Loaded, Constant, Apply } kind = Kind::Start;
        std::int32_t id = -1;  // Start: the register; Loaded: the LOAD's pc
        double value = 0;      // Constant
        Op op{};               // Apply
        std::array<int, 3> args{-1, -1, -1};
    };

    BodyValues(const Program& p, std::int32_t first, std::int32_t last, std::size_t registers) : final_(registers) {
        for (std::size_t r = 0; r < registers; ++r) final_[r] = add({Node::Kind::Start, static_cast<std::int32_t>(r)});
        for (std::int32_t pc = first; pc < last; ++pc) {
            const Inst& in = p.code[static_cast<size_t>(pc)];
            if (!is_instruction(in.code)) continue;
            const Op op = p.op_at(pc);
            const OpInfo& o = info(op);
            const std::int32_t dst = written_register(in, o);
            if (dst < 0) continue;
            Node n;
            if (op == Op::LOAD) n = {Node::Kind::Loaded, pc};
            else if (op == Op::SET) n = {Node::Kind::Constant, -1, p.immediates[static_cast<size_t>(in.mem)]};
            else if (op == Op::MOV || o.shape == OpShape::RowReduce || o.shape == OpShape::Mask) {
                final_[static_cast<size_t>(dst)] = final_[static_cast<size_t>(in.reg[0])];  // on one element, its source
                continue;
            } else {
                n = {Node::Kind::Apply, -1, 0, op};
                for (int k = 0; k < o.register_sources(); ++k) n.args[static_cast<size_t>(k)] = final_[static_cast<size_t>(in.reg[static_cast<size_t>(k)])];
            }
            final_[static_cast<size_t>(dst)] = add(n);
        }
    }
    int final_of(std::int32_t r) const { return final_[static_cast<size_t>(r)]; }
    const Node& at(int e) const { return nodes_[static_cast<size_t>(e)]; }
    bool is_start(int e, std::int32_t r) const { return at(e).kind == Node::Kind::Start && at(e).id == r; }
    // e is op applied to its arguments.
    bool is(int e, Op op) const { return at(e).kind == Node::Kind::Apply && at(e).op == op; }
    std::array<int, 2> operands(int e) const { return {at(e).args[0], at(e).args[1]}; }
    // Per node: whether it reads the start value of some register in `carried`. One pass: a
    // node's arguments come before it.
    std::vector<bool> following(const std::vector<bool>& carried) const {
        std::vector<bool> out(nodes_.size(), false);
        for (std::size_t e = 0; e < nodes_.size(); ++e) {
            const Node& n = nodes_[e];
            if (n.kind == Node::Kind::Start) out[e] = carried[static_cast<size_t>(n.id)];
            for (int a : n.args) out[e] = out[e] || (a >= 0 && out[static_cast<size_t>(a)]);
        }
        return out;
    }

private:
    std::vector<Node> nodes_;
    std::vector<int> final_;
    // Nodes are interned: the same value is the same node, so equal expressions compare by
    // index (a body that doubles a register 60 times is 60 nodes, not a tree of 2^60).
    std::map<std::tuple<int, std::int32_t, std::uint64_t, int, int, int, int>, int> interned_;
    int add(const Node& n) {
        const auto key = std::tuple{int(n.kind), n.id, std::bit_cast<std::uint64_t>(n.value), int(n.op), n.args[0], n.args[1], n.args[2]};
        const auto [it, fresh] = interned_.emplace(key, static_cast<int>(nodes_.size()));
        if (fresh) nodes_.push_back(n);
        return it->second;
    }
};

// The online softmax's pair in a body whose written registers are `written`: the registers of
// its running max and its rescaled sum, or nullopt.
std::optional<std::pair<std::int32_t, std::int32_t>> online_pair(const BodyValues& v, const std::vector<bool>& written) {
    const std::vector<bool> follows_state = v.following(written);
    auto free_of_state = [&](int e) { return !follows_state[static_cast<size_t>(e)]; };
    // e is op(a, b) or op(b, a) with a matching `first` and b matching `second`.
    auto either = [&](int e, Op op, auto&& first, auto&& second) {
        if (!v.is(e, op)) return false;
        auto [a, b] = v.operands(e);
        return (first(a) && second(b)) || (first(b) && second(a));
    };
    for (std::int32_t m = 0; m < static_cast<std::int32_t>(written.size()); ++m) {
        if (!written[static_cast<size_t>(m)]) continue;
        const int top = v.final_of(m);  // m' = max(m, x)
        if (!either(top, Op::MAX, [&](int a) { return v.is_start(a, m); }, free_of_state)) continue;
        // e^(z − m'), z as `z_ok` says
        auto scaled_by_top = [&](int e, auto&& z_ok) {
            if (!v.is(e, Op::EXP) || !v.is(v.at(e).args[0], Op::SUB)) return false;
            auto [z, t] = v.operands(v.at(e).args[0]);
            return z_ok(z) && t == top;
        };
        auto rescale = [&](int e) { return scaled_by_top(e, [&](int z) { return v.is_start(z, m); }); };
        auto term = [&](int e) {
            auto fresh = [&](int f) { return scaled_by_top(f, free_of_state); };
            return fresh(e) || either(e, Op::MUL, fresh, free_of_state);
        };
        for (std::int32_t s = 0; s < static_cast<std::int32_t>(written.size()); ++s) {
            if (s == m || !written[static_cast<size_t>(s)]) continue;
            auto old_sum = [&](int e) { return either(e, Op::MUL, [&](int a) { return v.is_start(a, s); }, rescale); };
            if (either(v.final_of(s), Op::ADD, old_sum, term)) return std::pair{m, s};
        }
    }
    return std::nullopt;
}

// The instruction after the loop ending at `loop_end` that may read register r before anything
// writes it again, as "MOV at line 40", or "" when none can: a write at the top level, or in a
// parallel loop (whose iterations must write it before reading it, and after which it is
// written again before any read), settles it; one in a serial loop that may not run does not.
std::string read_after(const Program& p, std::int32_t loop_end, std::int32_t r) {
    std::vector<bool> open;  // the loops open since the scan began: parallel or not
    for (std::int32_t pc = loop_end + 1; pc < static_cast<std::int32_t>(p.code.size()); ++pc) {
        const Inst& in = p.code[static_cast<size_t>(pc)];
        if (in.code == Code::LoopBegin) open.push_back(p.loops[static_cast<size_t>(in.loop)].parallel);
        if (in.code == Code::LoopEnd && !open.empty()) open.pop_back();
        if (!is_instruction(in.code)) continue;
        const auto at = [&] { return instruction_at(p, pc); };
        if (in.code == Code::Tile) {  // a register operand of a tile instruction: read, to be safe
            const TileInst& t = p.tile_insts[static_cast<size_t>(in.mem)];
            for (int k = 0; k < t.count; ++k)
                if (t.args[static_cast<size_t>(k)].kind == TileOperand::Kind::Register && (t.args[static_cast<size_t>(k)].index == r || t.args[static_cast<size_t>(k)].index < 0))
                    return at();
            continue;
        }
        const OpInfo& o = info(p.op_at(pc));
        const int sources = p.op_at(pc) == Op::SET ? 0 : o.register_sources();  // SET's register only lends its shape
        for (int k = 0; k < sources && k < in.reg_count; ++k)
            if (in.reg[static_cast<size_t>(k)] == r || in.reg[static_cast<size_t>(k)] < 0) return at();
        if (written_register(in, o) == r && (open.empty() || open.front())) return "";
    }
    return "";
}

}  // namespace

// The loop's split, or why it stays on one thread (the note `gpu run` prints at its line).
std::variant<KernelEmitter::SplitLoop, std::string> KernelEmitter::split_plan(std::int32_t loop_begin) const {
    const Inst& head = p_.code[static_cast<size_t>(loop_begin)];
    const std::int32_t end = head.jump;  // its LoopEnd
    const std::size_t nregs = static_cast<std::size_t>(layout_.registers());
    std::vector<int> writers(nregs, 0), readers(nregs, 0);
    std::vector<std::int32_t> folds(nregs, -1);  // the pc of the instruction that folds into it
    auto at = [&](std::int32_t pc) { return instruction_at(p_, pc); };
    for (std::int32_t pc = loop_begin + 1; pc < end; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code == Code::LoopBegin) return fmt::format("its body holds a loop (line {}); only a loop of scalar instructions that fold into registers is split, "
                               "and one whose iterations are independent says so (`parallel for`)",
                               code_loc(p_, pc).line);
        if (!is_instruction(in.code)) continue;
        if (in.code == Code::Tile) return fmt::format("its body holds a tile instruction ({})", at(pc));
        const Op op = p_.op_at(pc);
        const OpInfo& o = info(op);
        if (o.shape == OpShape::Memory && op != Op::LOAD) return fmt::format("it writes DRAM ({})", at(pc));
        if (o.shape == OpShape::Memory && !p_.mems[static_cast<size_t>(in.mem)].bounds_proven)
            return fmt::format("a LOAD's element is not proven inside its array ({}): a thread could stop half way", at(pc));
        for (int k = 0; k < in.reg_count; ++k)
            if (in.reg[static_cast<size_t>(k)] < 0) return fmt::format("it names a register by R[expr] ({})", at(pc));
        const std::int32_t dst = written_register(in, o);
        if (dst >= 0) ++writers[static_cast<size_t>(dst)];
        for (int k = 0; k < in.reg_count; ++k)
            if (in.reg[static_cast<size_t>(k)] != dst || k != in.reg_count - 1) ++readers[static_cast<size_t>(in.reg[static_cast<size_t>(k)])];
        if ((op == Op::ADD || op == Op::MUL || op == Op::MAX) && dst >= 0 && (in.reg[0] == dst) != (in.reg[1] == dst))
            folds[static_cast<size_t>(dst)] = pc;
    }
    SplitLoop plan;
    std::vector<bool> accumulator(nregs, false), written(nregs, false);
    for (std::size_t r = 0; r < nregs; ++r)
        if (folds[r] >= 0 && writers[r] == 1 && readers[r] == 1) {
            accumulator[r] = true;
            plan.accumulators.push_back({static_cast<std::int32_t>(r), p_.op_at(folds[r])});
        }
    // Every other register the body reads: written earlier in the iteration, or never in the body.
    for (std::int32_t pc = loop_begin + 1; pc < end; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (!is_instruction(in.code)) continue;
        const OpInfo& o = info(p_.op_at(pc));
        const std::int32_t dst = written_register(in, o);
        for (int k = 0; k < in.reg_count; ++k) {
            const auto r = static_cast<std::size_t>(in.reg[static_cast<size_t>(k)]);
            if ((static_cast<std::int32_t>(r) == dst && k == in.reg_count - 1) || accumulator[r]) continue;
            if (writers[r] > 0 && !written[r]) {
                const std::string carried =
                    fmt::format("R{} is carried from one iteration to the next ({} reads it before the iteration writes it), not "
                                "folded by one ADD, MUL or MAX of itself and nothing else, so its iterations must run in order",
                                r, at(pc));
                return online_plan(loop_begin, writers, carried);
            }
        }
        if (dst >= 0 && !accumulator[static_cast<std::size_t>(dst)] && !written[static_cast<std::size_t>(dst)]) {
            written[static_cast<std::size_t>(dst)] = true;
            plan.privates.push_back(dst);
        }
    }
    if (plan.accumulators.empty()) return std::string("it folds nothing into a register (a loop whose iterations are independent says so: `parallel for`)");
    return plan;
}

std::string online_merge_prelude() {
    return R"cuda(
// The online softmax's state, (m, s): a running max and a sum of terms scaled by e^(-m).
// (m2, s2) merged into it, as Flash-Decoding merges its splits: the larger max, and each sum
// rescaled to it. (-inf, 0), a thread that had no iteration, is the empty state: it leaves the
// other as it is. Symmetric to the bit (add and mul commute), so every lane of a butterfly
// ends with the same state.
__device__ __forceinline__ void online_merge(float& m, float& s, float m2, float s2) {
    if (m2 == -INFINITY && s2 == 0.0f) return;
    if (m == -INFINITY && s == 0.0f) { m = m2; s = s2; return; }
    const float top = D::max(m, m2);
    s = D::add(D::mul(s, D::exp(D::sub(m, top))), D::mul(s2, D::exp(D::sub(m2, top))));
    m = top;
}
// Every thread's state merged (block_allreduce for the pair): each thread gets the block's.
__device__ void block_allreduce_online(float& m, float& s) {
    __shared__ float parts_m[32], parts_s[32];
    for (int lane = 16; lane > 0; lane >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, lane), s2 = __shfl_xor_sync(0xffffffffu, s, lane);
        online_merge(m, s, m2, s2);
    }
    if ((threadIdx.x & 31) == 0) { parts_m[threadIdx.x >> 5] = m; parts_s[threadIdx.x >> 5] = s; }
    __syncthreads();
    m = parts_m[0], s = parts_s[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w) online_merge(m, s, parts_m[w], parts_s[w]);
    __syncthreads();
}
)cuda";
}

// The loop as an online softmax's first pass (online_pair), or `carried`: why it stays serial.
// `writers`: per register, the body's instructions that write it (split_plan's count).
std::variant<KernelEmitter::SplitLoop, std::string> KernelEmitter::online_plan(std::int32_t loop_begin, const std::vector<int>& writers,
                                                                              const std::string& carried) const {
    const std::int32_t end = p_.code[static_cast<size_t>(loop_begin)].jump;
    const std::size_t nregs = writers.size();
    const BodyValues values(p_, loop_begin + 1, end, nregs);
    std::vector<bool> written(nregs, false);
    for (std::size_t r = 0; r < nregs; ++r) written[r] = writers[r] > 0;
    const auto pair = online_pair(values, written);
    if (!pair) return carried;
    SplitLoop plan;
    plan.online_max = pair->first;
    plan.online_sum = pair->second;
    std::vector<bool> state(nregs, false), others(written);
    state[static_cast<size_t>(plan.online_max)] = state[static_cast<size_t>(plan.online_sum)] = true;
    others[static_cast<size_t>(plan.online_max)] = others[static_cast<size_t>(plan.online_sum)] = false;
    const std::vector<bool> follows_others = values.following(others), follows_state = values.following(state);
    for (std::int32_t r = 0; r < static_cast<std::int32_t>(nregs); ++r) {
        if (!others[static_cast<size_t>(r)]) continue;
        const auto value = static_cast<size_t>(values.final_of(r));
        // Carried itself (a third running value): its iterations must run in order after all.
        if (follows_others[value]) return carried;
        if (!follows_state[value]) {
            plan.privates.push_back(r);  // the loaded element, say: the last iteration's lives on
            continue;
        }
        // Computed from the running state (the rescale e^(m − m'), say): each thread's own, so it
        // must not be read after the loop.
        const std::string reader = read_after(p_, end, r);
        if (!reader.empty())
            return fmt::format("R{} follows the running max R{} and sum R{} of an online softmax, and {} reads it after the loop: split "
                               "over threads, it would hold one thread's value",
                               r, plan.online_max, plan.online_sum, reader);
    }
    return plan;
}

void KernelEmitter::plan_split_loops(std::int32_t first, std::int32_t last) {
    split_loops_.clear();
    split_notes_.clear();
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code != Code::LoopBegin) continue;
        auto plan = split_plan(pc);
        if (auto* split = std::get_if<SplitLoop>(&plan)) split_loops_.emplace(pc, std::move(*split));
        else
            split_notes_.push_back({p_.loops[static_cast<size_t>(in.loop)].loc, "",
                                    "this serial loop runs on one GPU thread a head: " + std::get<std::string>(plan)});
        pc = in.jump;  // top-level loops only: on past its LoopEnd
    }
}

void KernelEmitter::split_loop(std::int32_t loop_begin) {
    const Inst& head = p_.code[static_cast<size_t>(loop_begin)];
    const LoopInfo& l = p_.loops[static_cast<size_t>(head.loop)];
    const SplitLoop& plan = split_loops_.at(loop_begin);
    std::string folded;
    for (const auto& [r, op] : plan.accumulators) folded += fmt::format("{}R{} by {}", folded.empty() ? "" : ", ", r, info(op).mnemonic);
    if (plan.online_max >= 0)
        folded = fmt::format("an online softmax's running max R{} and rescaled sum R{}, merged as Flash-Decoding merges its splits",
                             plan.online_max, plan.online_sum);
    else
        folded = "a reduction into " + folded;
    comment_source(l.loc);
    line(fmt::format("{{  // its iterations split over the block's threads: {}", folded));
    ++indent_;
    enter_loop(l, false);
    const std::string& v = slot_name_[static_cast<size_t>(l.slot)];
    // The bounds' names carry the loop's pc: no name of the program's can be one of them.
    const std::string lo = fmt::format("split{}_lo", loop_begin), hi = fmt::format("split{}_hi", loop_begin);
    line(fmt::format("const long long {} = {}, {} = {};", lo, affine(l.lo), hi, affine(l.hi)));
    for (const auto& [r, op] : plan.accumulators)
        line(fmt::format("const float R{0}_before = R[{0}];  R[{0}] = {1};  // this thread's part, from {2}'s identity", r, identity_of(op), info(op).mnemonic));
    if (plan.online_max >= 0)
        line(fmt::format("const float R{0}_before = R[{0}], R{1}_before = R[{1}];  R[{0}] = -INFINITY;  R[{1}] = 0.0f;  // this thread's part, "
                         "from the empty state",
                         plan.online_max, plan.online_sum));
    line(fmt::format("for (long long {0} = {1} + threadIdx.x; {0} < {2}; {0} += blockDim.x) {{", v, lo, hi));
    ++indent_;
    in_split_ = true;
    for (std::int32_t pc = loop_begin + 1; pc < head.jump; ++pc) instruction(pc);
    in_split_ = false;
    --indent_;
    line("}");
    // What the body wrote lives on as the last iteration left it: its thread hands it over.
    // block_allreduce's barriers (there is an accumulator) order these writes and reads.
    const std::string last = fmt::format("split{}_last", loop_begin);
    std::string keep, take;
    for (std::size_t k = 0; k < plan.privates.size(); ++k) {
        keep += fmt::format(" {}[{}] = R[{}];", last, k, plan.privates[k]);
        take += fmt::format(" R[{}] = {}[{}];", plan.privates[k], last, k);
    }
    if (!plan.privates.empty()) {
        line(fmt::format("__shared__ float {}[{}];  // the last iteration's registers", last, plan.privates.size()));
        line(fmt::format("const bool split{0}_ran = {1} > {2};", loop_begin, hi, lo));
        line(fmt::format("if (split{0}_ran && ({1} - 1 - {2}) % blockDim.x == threadIdx.x) {{{3} }}", loop_begin, hi, lo, keep));
    }
    for (const auto& [r, op] : plan.accumulators)
        line(fmt::format("R[{0}] = D::{1}(R{0}_before, block_allreduce(R[{0}], [](float a, float b) {{ return D::{1}(a, b); }}));", r, method_of(op)));
    if (plan.online_max >= 0) {
        line(fmt::format("block_allreduce_online(R[{}], R[{}]);", plan.online_max, plan.online_sum));
        line(fmt::format("{{ float m = R{0}_before, s = R{1}_before;  online_merge(m, s, R[{0}], R[{1}]);  R[{0}] = m;  R[{1}] = s; }}",
                         plan.online_max, plan.online_sum));
    }
    if (!plan.privates.empty()) line(fmt::format("if (split{}_ran) {{{} }}", loop_begin, take));
    --indent_;
    line("}");
}

}  // namespace toysim::gpu
