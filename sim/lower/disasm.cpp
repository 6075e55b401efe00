#include "sim/lower/disasm.h"

#include <fmt/format.h>

namespace toysim {

namespace {
std::string_view source_text(const Program& p, Loc loc) {
    std::string_view line = p.source->line(loc.line);
    size_t start = static_cast<size_t>(loc.col - 1);
    if (start >= line.size()) return {};
    return line.substr(start, static_cast<size_t>(loc.len));
}

// An evaluated subscript or register index: "(overflow)" where it is not a 64-bit integer.
std::string value_text(const Affine& a, const std::int64_t* vars) {
    std::int64_t v = 0;
    return a.eval_checked(vars, v) ? std::to_string(v) : "(overflow)";
}

std::string register_text(const Program& p, std::int32_t r, const std::int64_t* vars) {
    if (r >= 0) return fmt::format("R{}", r);
    return fmt::format("R{}", value_text(p.dynamic_registers[static_cast<size_t>(-r - 1)].index, vars));
}
}  // namespace

// With loop variables, subscripts and register indices are evaluated ("LOAD x[3], R0",
// "LOAD K[2..4][0..4], k"); without, operands are shown as written in the source.
std::string render_instruction(const Program& p, std::int32_t pc, const std::int64_t* vars) {
    const Inst& in = p.code[static_cast<size_t>(pc)];
    const ast::Instruction* origin = p.origin[static_cast<size_t>(pc)];
    const OpInfo& op = info(origin->op);
    const TileInst* tile = in.code == Code::Tile ? &p.tile_insts[static_cast<size_t>(in.mem)] : nullptr;
    std::string out(op.mnemonic);
    int reg = 0;
    for (int i = 0; i < op.operand_count(); ++i) {
        out += i ? ", " : " ";
        OperandKind kind = op.operand(i);
        const ast::Operand& written = origin->operands[static_cast<size_t>(i)];
        if (!vars || kind == OperandKind::Immediate) {
            out += source_text(p, written.loc);
        } else if (kind == OperandKind::MemRead || kind == OperandKind::MemWrite) {
            const MemRef& m = p.mems[static_cast<size_t>(tile ? tile->mem : in.mem)];
            out += p.arrays[static_cast<size_t>(m.array)].name;
            for (size_t d = 0; d < m.subscripts.size(); ++d)
                out += m.is_range[d] ? fmt::format("[{}..{}]", value_text(m.subscripts[d], vars), value_text(m.ends[d], vars))
                                     : fmt::format("[{}]", value_text(m.subscripts[d], vars));
        } else if (kind == OperandKind::Device) {  // "@1": the device, modulo D
            std::int64_t v = 0;
            const Affine& device = p.device_operands[static_cast<size_t>(in.jump)];
            out += device.eval_checked(vars, v) ? fmt::format("@{}", (v % p.devices + p.devices) % p.devices) : "@(overflow)";
        } else if (tile) {
            const TileOperand& a = tile->args[static_cast<size_t>(reg++)];
            out += a.kind == TileOperand::Kind::Tile ? p.tiles[static_cast<size_t>(a.index)].name + (a.transposed ? ".T" : "")
                                                     : register_text(p, a.index, vars);
        } else {
            out += register_text(p, in.reg[static_cast<size_t>(reg++)], vars);
        }
    }
    return out;
}

}  // namespace toysim
