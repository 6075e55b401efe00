// Opcode enum and per-opcode facts, generated from the table in opcodes.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "opcodes.h"

namespace toysim {

// What an instruction does to tiles (and so how the tile executor runs it).
enum class OpShape : std::uint8_t { Memory, Elementwise, Product, RowReduce, Fill, Mask };

enum class Op : std::uint8_t {
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) NAME,
    TOYSIM_OPCODES(X)
#undef X
};

// The shape of each opcode, for the executors' compile-time dispatch.
inline constexpr OpShape kOpShape[] = {
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) OpShape::SHAPE,
    TOYSIM_OPCODES(X)
#undef X
};

inline constexpr int kOpCount = 0
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) +1
    TOYSIM_OPCODES(X)
#undef X
    ;

// The most register operands any row has (MAC: Ra, Rb, Rc, Rd): what a compiled instruction
// must hold, taken from the table so a wider row cannot overrun it.
inline constexpr int kMaxRegisterOperands = [] {
    int most = 0;
    for (std::string_view sig : {
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) std::string_view(SIG),
             TOYSIM_OPCODES(X)
#undef X
         }) {
        int n = 0;
        for (char ch : sig) n += ch == 'r' || ch == 'R';
        most = n > most ? n : most;
    }
    return most;
}();

enum class OpClass : std::uint8_t { Memory, Move, Compute };

// The GPU unit a named machine (isa/machine.h) runs an opcode on (opcodes.h says which).
enum class GpuUnit : std::uint8_t { Memory, Matrix, Special, Alu };
inline constexpr GpuUnit kOpGpuUnit[] = {
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) GpuUnit::GPU,
    TOYSIM_OPCODES(X)
#undef X
};


// STORE_ADD reads the element it writes (DRAM[dst] += Rs): one read and one write of each.
inline constexpr bool accumulates(Op op) { return op == Op::STORE_ADD; }
// SEND reads its slice from the sender's DRAM, RECV writes its slice to the receiver's.
inline constexpr bool reads_dram(Op op) { return op == Op::LOAD || op == Op::SEND || accumulates(op); }
inline constexpr bool writes_dram(Op op) { return op == Op::STORE || op == Op::RECV || accumulates(op); }
// SEND and RECV: instructions between devices (`devices D`), over a link.
inline constexpr bool is_transfer(Op op) { return op == Op::SEND || op == Op::RECV; }

// How an instruction touches DRAM: events say it, and race checking keeps it per element.
// Accumulate: STORE_ADD, which reads each element and writes it back with the register added.
enum class AccessKind : std::uint8_t { Read, Write, Accumulate };
inline constexpr bool reads_dram(AccessKind k) { return k != AccessKind::Write; }
inline constexpr bool writes_dram(AccessKind k) { return k != AccessKind::Read; }
inline constexpr const char* access_kind_name(AccessKind k) {
    return k == AccessKind::Read ? "read" : k == AccessKind::Write ? "write" : "accumulate";
}
// A memory instruction's access (LOAD, STORE, STORE_ADD).
inline constexpr AccessKind access_kind(Op op) {
    return accumulates(op) ? AccessKind::Accumulate : writes_dram(op) ? AccessKind::Write : AccessKind::Read;
}

enum class OperandKind : std::uint8_t { RegRead, RegWrite, MemRead, MemWrite, Immediate, Device };

struct OpInfo {
    Op op;
    std::string_view mnemonic;
    std::string_view signature;  // one letter per operand: r R m M i d
    std::string_view operands;   // "Ra, Rb, Rd": names for help and errors
    std::string_view meaning;    // "Rd = Ra + Rb"
    int cycles;                  // the seed's default cost
    OpClass klass;
    OpShape shape;
    std::string_view unit;       // its unit of work: "element moved", "multiply-add", ...

    int operand_count() const { return static_cast<int>(signature.size()); }
    OperandKind operand(int i) const;
    // How many registers the instruction reads (sources come first, destination last).
    int register_sources() const;
};

const std::array<OpInfo, kOpCount>& all_ops();
const OpInfo& info(Op op);
std::optional<Op> find_op(std::string_view mnemonic);  // case-insensitive
// The mnemonic closest to `word` by edit distance, if any is plausibly meant.
std::optional<std::string_view> nearest_mnemonic(std::string_view word);

}  // namespace toysim
