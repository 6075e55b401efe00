// Decoding for the fast path (fast_path.h).
#include "sim/exec/fast_path.h"

namespace toysim {

// An ALU row decodes to the FastKind of its Code's value: the two enums start with the ISA table.
static_assert(static_cast<int>(FastKind::Load0) == static_cast<int>(Code::LoopBegin), "FastKind's first values are the opcodes");

std::vector<FastInst> decode_fast_path(const Program& p) {
    std::vector<FastInst> out(p.code.size());
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        const Inst& in = p.code[pc];
        FastInst& f = out[pc];
        std::copy(in.reg.begin(), in.reg.end(), f.reg);
        f.pc = static_cast<std::int32_t>(pc);
        f.mem = in.mem;
        if (in.code == Code::LoopBegin || in.code == Code::LoopEnd) {
            const LoopInfo& l = p.loops[static_cast<size_t>(in.loop)];
            // A parallel loop begins in the general executor; on one worker it may end here.
            if (l.parallel && (in.code == Code::LoopBegin || p.workers > 1 || l.devices)) continue;
            f.kind = in.code == Code::LoopBegin ? FastKind::LoopBegin : l.parallel ? FastKind::ParallelEnd : FastKind::LoopEnd;
            f.mem = in.loop;
            f.reg[0] = l.slot;
            // From a LoopEnd to its body's first instruction, in bytes (the fast path's jump).
            f.reg[1] = (in.code == Code::LoopEnd ? in.jump + 1 - static_cast<std::int32_t>(pc) : 0) * static_cast<std::int32_t>(sizeof(FastInst));
            continue;
        }
        if (!is_instruction(in.code) || in.code == Code::Tile || !in.unchecked) continue;
        const Op op = static_cast<Op>(in.code);
        f.race_checked = in.race_checked;
        if (info(op).klass != OpClass::Memory) {
            f.kind = static_cast<FastKind>(in.code);
            continue;
        }
        const MemRef& m = p.mems[static_cast<size_t>(in.mem)];
        const Affine& a = m.address;
        f.terms = static_cast<std::uint8_t>(a.terms <= 3 ? a.terms : FastInst::kTermsInMemRef);
        if (a.terms <= 3) {
            f.constant = a.constant;
            for (int t = 0; t < a.terms; ++t) {
                f.slot[t] = a.var[static_cast<size_t>(t)];
                f.coef[t] = a.coef[static_cast<size_t>(t)];
            }
        }
        if (in.race_checked) f.reg[1] = static_cast<std::int32_t>(m.race_shift);  // below kMaxRunDram
        if (op == Op::STORE_ADD || in.race_checked || a.terms > 3) {
            f.kind = op == Op::LOAD ? FastKind::LoadAny : op == Op::STORE ? FastKind::StoreAny : FastKind::StoreAdd;
            continue;
        }
        const int base = static_cast<int>(op == Op::LOAD ? FastKind::Load0 : FastKind::Store0);
        f.kind = static_cast<FastKind>(base + a.terms);
    }
    return out;
}

}  // namespace toysim
