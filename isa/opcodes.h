// The toy machine's instruction set: the one table every other part reads.
//
// Each row: X(NAME, operand signature, operand names, meaning, cycles, class, semantics)
//   signature   one letter per operand, in source order (destination last, as in the seed):
//                 r = register read, R = register written, m = DRAM read, M = DRAM written
//   semantics   an expression over the source values a, b, c in value domain D
//               (numeric doubles or symbolic expressions); unused by LOAD/STORE, which
//               the executor handles as memory moves.
//   class       Memory (LOAD/STORE), Move (MOV) or Compute (counted in arithmetic intensity)
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
    X(DIV,   "rrR",  "Ra, Rb, Rd",     "Rd = Ra / Rb",         1, Compute, D.div(a, b))
