#include "disasm.h"

#include <fmt/format.h>

namespace toysim {

namespace {
std::string_view source_text(const Program& p, Loc loc) {
    std::string_view line = p.source->line(loc.line);
    size_t start = static_cast<size_t>(loc.col - 1);
    if (start >= line.size()) return {};
    return line.substr(start, static_cast<size_t>(loc.len));
}
}  // namespace

std::string render_instruction(const Program& p, std::int32_t pc, const std::int64_t* vars) {
    const Inst& in = p.code[static_cast<size_t>(pc)];
    const ast::Instruction* origin = p.origin[static_cast<size_t>(pc)];
    const OpInfo& op = info(origin->op);
    std::string out(op.mnemonic);
    int reg = 0;
    for (int i = 0; i < op.operand_count(); ++i) {
        out += i ? ", " : " ";
        OperandKind kind = op.operand(i);
        if (kind == OperandKind::MemRead || kind == OperandKind::MemWrite) {
            const MemRef& m = p.mems[static_cast<size_t>(in.mem)];
            if (!vars) {
                out += source_text(p, origin->operands[static_cast<size_t>(i)].loc);
                continue;
            }
            out += p.arrays[static_cast<size_t>(m.array)].name;
            for (const auto& s : m.subscripts) out += fmt::format("[{}]", s.eval(vars));
        } else {
            std::int32_t r = in.reg[static_cast<size_t>(reg++)];
            if (r >= 0)
                out += fmt::format("R{}", r);
            else if (vars)
                out += fmt::format("R{}", p.dynamic_registers[static_cast<size_t>(-r - 1)].index.eval(vars));
            else
                out += source_text(p, origin->operands[static_cast<size_t>(i)].loc);
        }
    }
    return out;
}

}  // namespace toysim
