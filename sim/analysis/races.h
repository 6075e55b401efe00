// Race freedom from the subscripts alone: what `toysim cost` (which runs nothing) can say about
// a program's parallel loops.
//
// A run checks every access exactly (sim/exec/parallel.h). Without running, two accesses of one
// parallel loop are proven never to meet in two iterations when, for each variable of the loop
// (or grid), some dimension of the array moves with that variable by a stride a, with no other
// grid variable in it, and everything else in that dimension (the slice's extent, inner loops,
// a constant offset) spans less than |a|: two iterations that differ in that variable then
// touch that dimension at indices at least |a| apart minus the span, which never meet. This is
// what `O[i*Br .. i*Br + Br]` in a loop over i is, and what FA1's outer loop over j is not
// (O's subscripts do not contain j).
//
// Sound, not complete: "proven" means no run of the program can race there; "not proven" means
// this test cannot tell, and a run decides (it names the element and both iterations if so).
#pragma once

#include <string>
#include <vector>

#include "sim/lower/program.h"

namespace toysim {

// One access to DRAM inside a parallel loop's iteration.
struct ParallelAccess {
    std::int32_t pc = -1;
    Op op = Op::LOAD;
    AccessKind kind = AccessKind::Read;
    int array = -1;
};

// One parallel loop or grid (its outermost loop), and what the test found.
struct RaceProof {
    int loop = -1;                  // Program::loops index of its outermost loop
    std::vector<std::string> vars;  // the grid's variables, outermost first
    bool proven = false;
    // Not proven: the first pair of accesses the test could not keep apart (`first` may be
    // `second`, one access meeting itself in two iterations), and the grid variable no
    // subscript of the array separates.
    ParallelAccess first, second;
    std::string unseparated_var;
    // Proven: the arrays that iterations write (each at elements of its own), and those they
    // only add to with STORE_ADD (shared elements allowed: adds commute).
    std::vector<int> written_arrays, added_arrays;
    // `on devices`: race-free whatever the subscripts, since each device touches only its own
    // elements (which a run checks, access by access).
    bool devices = false;
};

// One per parallel loop or grid, in program order.
std::vector<RaceProof> prove_race_freedom(const Program& program);

// "proven race-free from the subscripts: each iteration writes elements of O and L of its own"
// or "not proven race-free: the STORE at 31:9 and the LOAD at 27:9 may meet in an element of O
// from two values of j (no subscript of O moves with j alone); `toysim run` checks every access".
std::string describe_race_proof(const Program& program, const RaceProof& proof);

}  // namespace toysim
