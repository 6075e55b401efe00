#include "isa/isa.h"

#include <algorithm>
#include <cctype>

#include "support/text.h"

namespace toysim {

namespace {
constexpr std::array<OpInfo, kOpCount> kTable = {{
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) \
    {Op::NAME, #NAME, SIG, OPERANDS, MEANING, CYCLES, OpClass::CLASS, OpShape::SHAPE, UNIT},
    TOYSIM_OPCODES(X)
#undef X
}};
}  // namespace

OperandKind OpInfo::operand(int i) const {
    switch (signature[static_cast<size_t>(i)]) {
        case 'r': return OperandKind::RegRead;
        case 'R': return OperandKind::RegWrite;
        case 'm': return OperandKind::MemRead;
        case 'i': return OperandKind::Immediate;
        case 'd': return OperandKind::Device;
        default: return OperandKind::MemWrite;
    }
}

int OpInfo::register_sources() const {
    return static_cast<int>(std::count(signature.begin(), signature.end(), 'r'));
}

const std::array<OpInfo, kOpCount>& all_ops() { return kTable; }

const OpInfo& info(Op op) { return kTable[static_cast<size_t>(op)]; }

std::optional<Op> find_op(std::string_view mnemonic) {
    for (const auto& row : kTable)
        if (iequals(row.mnemonic, mnemonic)) return row.op;
    return std::nullopt;
}

std::optional<std::string_view> nearest_mnemonic(std::string_view word) {
    std::vector<std::string_view> names;
    for (const auto& row : kTable) names.push_back(row.mnemonic);
    return nearest(word, names);
}

}  // namespace toysim
