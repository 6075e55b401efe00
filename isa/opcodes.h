// The toy machine's instruction set: the one table every other part reads.
//
// Each row: X(NAME, operand signature, operand names, meaning, cycles, class, semantics)
//   signature   one letter per operand, in source order (destination last, as in the seed):
//                 r = register read, R = register written, m = DRAM read, M = DRAM written,
//                 i = immediate number (SET only)
//               A register operand is a scalar register (R3) or a tile (a named register bank,
//               see isa/README.md); the same row covers both: on tiles, MAC/MAC_Z are matrix
//               products and the other operations are element-wise with broadcasting.
//   semantics   an expression over the source values a, b, c in value domain D
//               (numeric doubles or symbolic expressions); unused by LOAD/STORE, which
//               the executor handles as memory moves.
//   cycles      the default cost per unit of work: one element moved or produced, one
//               multiply-add, or one element reduced; a scalar instruction is one unit, so
//               the seed's one cycle per instruction holds for scalar programs
//   class       Memory (LOAD/STORE), Move (MOV/SET) or Compute (counted in arithmetic intensity)
//
// Adding an opcode is one row here; parser, executor, disassembler, CLI help and the
// language reference all read this table.
#pragma once

#define TOYSIM_OPCODES(X)                                                                          \
    X(LOAD,  "mR",   "src, Rd",        "Rd = DRAM[src]",       1, Memory,  a)                     \
    X(STORE, "rM",   "Rs, dst",        "DRAM[dst] = Rs",       1, Memory,  a)                     \
    X(MOV,   "rR",   "Rs, Rd",         "Rd = Rs",              1, Move,    a)                     \
    X(MAC_Z, "rrR",  "Ra, Rb, Rd",     "Rd = Ra × Rb",         1, Compute, D.mul(a, b))           \
    X(MAC,   "rrrR", "Ra, Rb, Rc, Rd", "Rd = Ra × Rb + Rc",    1, Compute, D.add(c, D.mul(a, b))) \
    X(MAX,   "rrR",  "Ra, Rb, Rd",     "Rd = max(Ra, Rb)",     1, Compute, D.max(a, b))           \
    X(SUB,   "rrR",  "Ra, Rb, Rd",     "Rd = Ra − Rb",         1, Compute, D.sub(a, b))           \
    X(EXP,   "rR",   "Ra, Rd",         "Rd = exp(Ra)",         1, Compute, D.exp(a))              \
    X(ADD,   "rrR",  "Ra, Rb, Rd",     "Rd = Ra + Rb",         1, Compute, D.add(a, b))           \
    X(MUL,   "rrR",  "Ra, Rb, Rd",     "Rd = Ra × Rb",         1, Compute, D.mul(a, b))           \
    X(DIV,   "rrR",  "Ra, Rb, Rd",     "Rd = Ra / Rb",         1, Compute, D.div(a, b))           \
    X(LOG,   "rR",   "Ra, Rd",         "Rd = ln(Ra)",          1, Compute, D.log(a))              \
    X(ROWMAX, "rR",  "Ra, Rd",         "Rd = max of each row of Ra", 1, Compute, a)               \
    X(ROWSUM, "rR",  "Ra, Rd",         "Rd = sum of each row of Ra", 1, Compute, a)               \
    X(SET,   "irR",  "imm, Ra, Rd",    "Rd = imm, one row per row of Ra", 1, Move, D.constant(imm))
