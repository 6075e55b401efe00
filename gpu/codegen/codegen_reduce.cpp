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

}  // namespace

// The loop's split, or why it stays on one thread (the note `gpu run` prints at its line).
std::variant<KernelEmitter::SplitLoop, std::string> KernelEmitter::split_plan(std::int32_t loop_begin) const {
    const Inst& head = p_.code[static_cast<size_t>(loop_begin)];
    const std::int32_t end = head.jump;  // its LoopEnd
    const std::size_t nregs = static_cast<std::size_t>(layout_.registers());
    std::vector<int> writers(nregs, 0), readers(nregs, 0);
    std::vector<std::int32_t> folds(nregs, -1);  // the pc of the instruction that folds into it
    auto at = [&](std::int32_t pc) { return fmt::format("{} at line {}", info(p_.op_at(pc)).mnemonic, code_loc(p_, pc).line); };
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
            if (writers[r] > 0 && !written[r])
                return fmt::format("R{} is carried from one iteration to the next ({} reads it before the iteration writes it), not "
                                   "folded by one ADD, MUL or MAX of itself and nothing else, so its iterations must run in order",
                                   r, at(pc));
        }
        if (dst >= 0 && !accumulator[static_cast<std::size_t>(dst)] && !written[static_cast<std::size_t>(dst)]) {
            written[static_cast<std::size_t>(dst)] = true;
            plan.privates.push_back(dst);
        }
    }
    if (plan.accumulators.empty()) return std::string("it folds nothing into a register (a loop whose iterations are independent says so: `parallel for`)");
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
    comment_source(l.loc);
    line(fmt::format("{{  // its iterations split over the block's threads: a reduction into {}", folded));
    ++indent_;
    enter_loop(l, false);
    const std::string& v = slot_name_[static_cast<size_t>(l.slot)];
    // The bounds' names carry the loop's pc: no name of the program's can be one of them.
    const std::string lo = fmt::format("split{}_lo", loop_begin), hi = fmt::format("split{}_hi", loop_begin);
    line(fmt::format("const long long {} = {}, {} = {};", lo, affine(l.lo), hi, affine(l.hi)));
    for (const auto& [r, op] : plan.accumulators)
        line(fmt::format("const float R{0}_before = R[{0}];  R[{0}] = {1};  // this thread's part, from {2}'s identity", r, identity_of(op), info(op).mnemonic));
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
    if (!plan.privates.empty()) line(fmt::format("if (split{}_ran) {{{} }}", loop_begin, take));
    --indent_;
    line("}");
}

}  // namespace toysim::gpu
