// The executor's fast path: a plain run (no listener) of the instructions that need no check
// but, at most, the race check, and of the control of loops that are not parallel. The
// executor hands the machine to it whenever the next instruction has one, and takes it back at
// the first that has none (a tile, a checked access, a parallel loop, the end, a pause).
//
// Why a second loop: the general one keeps too many values live across its switch (events,
// workers, checks) for the compiler to hold the hot ones in registers, and reaches an address
// through its MemRef. Here each instruction is decoded once into a FastInst with its registers
// and its address's terms in place, and the loop holds little more than pc and the step count.
// On the 3-register matmul it halves the host instructions per simulated instruction
// (docs/counters.md, "Speed").
#pragma once

#include <cstdint>
#include <vector>

#include "sim/lower/program.h"

namespace toysim {

// What the fast path does at an instruction: an ALU row of the ISA (its Code's value), a LOAD
// or STORE whose address has 0 to 3 terms, any other access (race checked or not), STORE_ADD,
// the control of a loop that is not parallel (and the end of one that is, on one worker), or
// nothing (Exit: the general executor takes over).
enum class FastKind : std::uint8_t {
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) NAME,
    TOYSIM_OPCODES(X)
#undef X
    Load0, Load1, Load2, Load3,     // by the address's terms
    Store0, Store1, Store2, Store3,
    LoadAny, StoreAny, StoreAdd,    // any address, race checked inside a parallel loop
    LoopBegin,
    LoopEnd,
    ParallelEnd,                    // a parallel loop's end, on one worker
    Exit,
};

struct alignas(64) FastInst {
    FastKind kind = FastKind::Exit;
    bool race_checked = false;               // LoadAny, StoreAny, StoreAdd: Inst::race_checked
    std::uint8_t slot[3]{};                  // the address's loop slots
    std::uint8_t terms = 0;                  // the address's terms (kTermsInMemRef: more than 3, from the MemRef)
    // As Inst::reg. LoopEnd and ParallelEnd: its slot, then the jump back (bytes). A race-checked
    // access: reg[1] is its MemRef's race_shift.
    std::int32_t reg[kMaxRegisterOperands]{};
    std::int32_t pc = 0;                     // its index in the code
    std::int32_t mem = -1;                   // as Inst::mem; LoopBegin, LoopEnd, ParallelEnd: its LoopInfo
    std::int64_t constant = 0;               // the address: constant + Σ coef[t]·vars[slot[t]]
    std::int64_t coef[3]{};
    static constexpr std::uint8_t kTermsInMemRef = 0xff;
};
static_assert(sizeof(FastInst) == 64, "one instruction, one cache line");

// One FastInst per instruction of p.code.
std::vector<FastInst> decode_fast_path(const Program& p);

}  // namespace toysim
