// The toy machine's instruction set: the one table every other part reads.
//
// Each row: X(NAME, operand signature, operand names, meaning, cycles, class, shape, unit, gpu, semantics)
//   signature   one letter per operand, in source order (destination last, as in the seed):
//                 r = register read, R = register written, m = DRAM read, M = DRAM written,
//                 i = immediate number (SET only), d = a device (@r+1: SEND and RECV, with `devices`)
//               A register operand is a scalar register (R3) or a tile (a named register bank,
//               see isa/README.md); the same row covers both: on tiles, MAC/MAC_Z are matrix
//               products and the other operations are element-wise with broadcasting.
//   shape       what it does to tiles: Memory (moves a slice), Elementwise (numpy broadcasting),
//               Product (MAC/MAC_Z of two tiles: a matrix product), RowReduce (each row to one
//               value, folding the semantics over the row), Fill (SET), Mask (element-wise
//               above the diagonal, element (i, j) with j > i; a copy on and below it)
//   unit        its unit of work, which its cycles are per
//   gpu         the GPU unit a named machine (isa/machine.h) runs it on: Memory (the L2 and
//               DRAM), Matrix (products: tensor cores or the CUDA cores' fused multiply-adds, as
//               the kernel's schedule says), Special (the special-function unit: ex2, lg2 and
//               rcp), Alu (fp32 add, multiply, max and moves on the CUDA cores)
//   semantics   an expression over the source values a, b, c in value domain D, made of the
//               primitives of isa/primitives.h (numeric doubles or symbolic expressions); for a
//               RowReduce, one fold step: a is the running value, b the next element. For a
//               Memory row, the value written: a is the register's, b the element's old value
//               (STORE_ADD reads it: one read and one write of each element).
//   cycles      the default cost per unit of work: one element moved or produced, one
//               multiply-add, or one element reduced; a scalar instruction is one unit, so
//               the seed's one cycle per instruction holds for scalar programs
//   class       Memory (LOAD/STORE), Move (MOV/SET) or Compute (counted in arithmetic intensity)
//
// SEND and RECV cost 0 cycles an element: the link moves the elements, and the device's clock
// pays only for what it waits for (`devices D ... link C latency L`; sim/exec/links.h).
//
// Adding an opcode is one row here; parser, executor, disassembler, CLI help and the
// language reference all read this table.
#pragma once

#define TOYSIM_OPCODES(X)                                                                                                  \
    X(LOAD,   "mR",   "src, Rd",        "Rd = DRAM[src]",                   1, Memory,  Memory,      "element moved", Memory, a)    \
    X(STORE,  "rM",   "Rs, dst",        "DRAM[dst] = Rs",                   1, Memory,  Memory,      "element moved", Memory, a)    \
    X(STORE_ADD, "rM", "Rs, dst",       "DRAM[dst] += Rs, atomically",      1, Memory,  Memory,      "element moved", Memory, D.add(b, a)) \
    X(MOV,    "rR",   "Rs, Rd",         "Rd = Rs",                          1, Move,    Elementwise, "element", Alu, a)          \
    X(MAC_Z,  "rrR",  "Ra, Rb, Rd",     "Rd = Ra × Rb",                     1, Compute, Product,     "multiply-add", Matrix, D.mul(a, b))            \
    X(MAC,    "rrrR", "Ra, Rb, Rc, Rd", "Rd = Ra × Rb + Rc",                1, Compute, Product,     "multiply-add", Matrix, D.add(c, D.mul(a, b)))  \
    X(MAX,    "rrR",  "Ra, Rb, Rd",     "Rd = max(Ra, Rb)",                 1, Compute, Elementwise, "element", Alu, D.max(a, b))  \
    X(SUB,    "rrR",  "Ra, Rb, Rd",     "Rd = Ra − Rb",                     1, Compute, Elementwise, "element", Alu, D.sub(a, b))  \
    X(EXP,    "rR",   "Ra, Rd",         "Rd = exp(Ra)",                     1, Compute, Elementwise, "element", Special, D.exp(a))     \
    X(ADD,    "rrR",  "Ra, Rb, Rd",     "Rd = Ra + Rb",                     1, Compute, Elementwise, "element", Alu, D.add(a, b))  \
    X(MUL,    "rrR",  "Ra, Rb, Rd",     "Rd = Ra × Rb",                     1, Compute, Elementwise, "element", Alu, D.mul(a, b))  \
    X(DIV,    "rrR",  "Ra, Rb, Rd",     "Rd = Ra / Rb",                     1, Compute, Elementwise, "element", Special, D.div(a, b))  \
    X(LOG,    "rR",   "Ra, Rd",         "Rd = ln(Ra)",                      1, Compute, Elementwise, "element", Special, D.log(a))     \
    X(ROWMAX, "rR",   "Ra, Rd",         "Rd = max of each row of Ra",       1, Compute, RowReduce,   "element reduced", Alu, D.max(a, b)) \
    X(ROWSUM, "rR",   "Ra, Rd",         "Rd = sum of each row of Ra",       1, Compute, RowReduce,   "element reduced", Alu, D.add(a, b)) \
    X(SET,    "irR",  "imm, Ra, Rd",    "Rd = imm, one row per row of Ra",  1, Move,    Fill,        "element", Alu, D.constant(imm)) \
    X(CAUSAL, "rR",   "Ra, Rd",         "Rd = Ra on and below the diagonal, −∞ above it", 1, Move, Mask, "element", Alu, D.constant(-INFINITY)) \
    X(SEND,   "md",   "src, @device",   "the link to the device carries DRAM[src] there; goes on at once", 0, Memory, Memory, "element sent", Memory, a) \
    X(RECV,   "dM",   "@device, dst",   "DRAM[dst] = what the device sent next on its link; waits for it", 0, Memory, Memory, "element received", Memory, a)
