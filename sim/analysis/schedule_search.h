// The instruction-level search of `toysim tune --schedule`: the fewest cycles in which a small
// straight-line program's products can be computed with R registers, on the seeds' machine (one
// cycle an instruction, seed 004).
//
// What the program computes is read from it, not from its order: each stored output is a sum of
// products of loaded elements (c00 = a00·b00 + a01·b10). The search then looks for the shortest
// sequence of LOAD, MAC_Z, MAC and STORE that stores every output's sum, each sum built in one
// register from its first product (MAC_Z) by adding the others (MAC), in any order and any
// register. It does not spill a partial sum to DRAM, keep two partial sums of one output, or
// compute a product twice.
//
// The search is iterative deepening on a bound that never overestimates (each product left is a
// MAC, each output left a STORE, each element a product still needs and no register holds a
// LOAD), with a table of the states already reached at a cost; programs that differ only in
// which register holds what are one state. The first program it finds is the shortest: every
// shorter one was ruled out, bound by bound.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "isa/isa.h"
#include "sim/lower/program.h"

namespace toysim {

struct ScheduleProblem {
    std::vector<std::int64_t> elements;  // DRAM addresses of the values the products multiply
    struct Output {
        std::int64_t address = 0;                // where its sum is stored
        std::vector<std::array<int, 2>> terms;   // its products, as element indices
    };
    std::vector<Output> outputs;
};

// What the program computes, or a ToyError at the instruction the search cannot take: a loop,
// a tile, an opcode other than LOAD, MAC_Z, MAC and STORE, a product of a sum, a value stored
// that is not a sum of products, an output stored twice or also loaded, more than 64 products in one sum.
ScheduleProblem schedule_problem(const Program& program);

struct ScheduleStep {
    Op op = Op::LOAD;
    std::array<int, 4> regs{};  // register operands in source order (destination last)
    int count = 0;
    std::int64_t address = -1;  // LOAD's source, STORE's destination
};

struct ScheduleSearch {
    bool found = false;              // false: the state limit was reached first
    std::vector<ScheduleStep> steps; // the shortest program (found)
    int lower_bound = 0;             // the bound at the start: no program is shorter
    int bound_reached = 0;           // no program of this many instructions or fewer stores every output (found: the program's length)
    std::uint64_t states = 0;        // states expanded over every bound
};

// The shortest program with `registers` registers, or not found within `max_states` expanded
// states. A problem that needs more registers than given (a product needs its two operands and
// a sum) is not found at any bound: the search says so by a ToyError before it starts.
ScheduleSearch search_schedule(const ScheduleProblem& problem, int registers, std::uint64_t max_states);

}  // namespace toysim
