// What a program costs in DRAM traffic and work, found without running it.
//
// Four analyses of a compiled Program, none of which executes an instruction:
//
//  - count_traffic: the exact reads and writes of each array, in elements, that a full run
//    would count. It walks the loop structure and iterates only the loops whose variable
//    changes how much an instruction moves (a slice clipped at the array's edge, or the
//    bounds of a deeper loop); every other loop is a multiplicative trip count. FlashAttention
//    at n = 1,000,000 takes milliseconds.
//
//  - derive_formulas: the same figures in closed form over the parameters, from the source:
//    reads(K) = n·d·Tr. The standard tiling pattern `for j in 0..cdiv(n, Bc)` with the slice
//    K[j*Bc..j*Bc+Bc] collapses to the array's dimension n, exactly, even when Bc does not
//    divide n. What has no closed form here (triangular loops, other clipped ranges) gets an
//    estimate, marked inexact, with a note saying why.
//
//  - derive_time: `work` and `cycles` (the makespan on the program's workers) in closed form,
//    each instruction's units of work followed through the tile shapes its slices set, and per
//    parallel loop its iterations and one iteration's cycles.
//
//  - estimate_work: the instructions a run executes (exactly) and its units of work (exactly,
//    or an upper bound where tile shapes are only known as they run), for "this run would take
//    N minutes" before it starts.
//
// Neither checks bounds, register use or anything else a run checks: a program that would
// fault part-way is counted as if every instruction ran to the end. Run it to know it is
// correct; count it to know what it costs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/lower/program.h"

namespace toysim {

// ---- exact counts ----

struct ArrayTraffic {
    std::uint64_t reads = 0, writes = 0;  // elements, as run() counts them
};

// Per array (parallel to Program::arrays). Throws ToyError, at the instruction or loop, if a
// count or a value it needs overflows 64 bits. Bounds are not checked: an out-of-range access
// that a run would stop at is counted.
std::vector<ArrayTraffic> count_traffic(const Program& program);

// What a whole run executes, as run()'s counters would say if it runs to the end:
//  - instructions: every ISA instruction executed (loop control is not an instruction), the
//    same figure as Counters::instructions;
//  - units: units of work summed over every instruction (Counters::work_by_opcode summed):
//    one per scalar instruction, the elements moved for a tile LOAD or STORE (as count_traffic
//    counts them), and for other tile instructions an upper bound from the declared capacities
//    of their tiles (shapes are only known as the program runs).
// exact is false when any figure is only an upper bound: tile instructions other than LOAD
// and STORE, a count past 64 bits, or loops too many to walk (over ~2·10⁷ iterations in all;
// each loop then counts at its widest range). Never throws for size: figures saturate at
// UINT64_MAX.
struct WorkEstimate {
    std::uint64_t instructions = 0;
    std::uint64_t units = 0;
    bool exact = true;
};
WorkEstimate estimate_work(const Program& program);
// Each program's work (estimate_work); unless `force`, refuses (ErrorKind::TooLongToRun) runs
// that together would take more than ten minutes on the development machine, counting each
// only up to `max_steps_given` instructions, a step limit the user gave (0: none).
// (sim/analysis/run_length.cpp)
std::vector<WorkEstimate> refuse_long_runs(const std::vector<const Program*>& programs, std::uint64_t max_steps_given, bool force);

// ---- closed-form formulas ----

// One factor of a term: a parameter or let name, or an expression that is not a polynomial
// in them ("(n/t)", "cdiv(n, Bc)", "min(Bc, n)").
struct FormulaFactor {
    std::string text;
    std::shared_ptr<const ast::Expr> expr;  // null: `text` is a parameter or let name
};

struct FormulaTerm {
    std::int64_t coefficient = 0;
    std::vector<FormulaFactor> factors;  // empty: a constant term; a repeated factor is a power
};

// A sum of terms with like terms combined, highest degree first: "n·d·Tr", "2·n − 1", "0".
// Factors evaluate with the language's integer semantics (sim/lower/integer.h).
struct Formula {
    std::vector<FormulaTerm> terms;

    std::string text() const;
    // The value with every name bound (Program::params has the parameters and lets); nullopt
    // when a name is unbound, a division is by zero, or the arithmetic overflows.
    std::optional<std::int64_t> evaluate(const std::vector<std::pair<std::string, std::int64_t>>& bindings) const;
};

struct ArrayFormulas {
    Formula reads, writes;
    bool exact = true;  // false: an estimate (see note); count_traffic has the exact figure
    std::string note;   // why it is not exact, one clause per reason, "; "-separated
};

// Per array (parallel to Program::arrays). A loop's trip count is taken as HI − LO, so a
// formula is exact for parameters where no loop's range is reversed (LO > HI): the bound
// parameters are checked, and a loop that is reversed there makes its array's formula inexact.
// Throws ToyError, at the line being derived, when a coefficient overflows 64 bits or a formula
// grows past 4096 terms or degree 64.
std::vector<ArrayFormulas> derive_formulas(const Program& program);

// ---- time ----

// A grid of parallel loops (or one parallel loop) as `cost` times it: its iterations, and the
// cycles of one. The block scheduler hands N iterations of c cycles each to P workers in
// ⌈N/P⌉ rounds; where iterations differ, c is the heaviest (⌈N/P⌉·c is then an upper bound:
// the j-th iteration starts by ⌊j/P⌋·c).
struct GridTime {
    int loop = -1;             // Program::loops index of its outermost loop
    Formula iterations;
    Formula iteration_cycles;
    bool uniform = true;       // every iteration takes iteration_cycles (see note where not)
    std::string note;
};

// What a run's `work` and `cycles` come to, in closed form over the parameters: every
// instruction's units of work times its opcode's cycles, summed over its loops as the traffic
// formulas are (tile shapes followed from the slices that set them). `cycles` is the makespan
// on the program's `workers`: the serial part, plus ⌈N/P⌉·c for each grid.
struct TimeFormulas {
    Formula work, cycles;
    bool exact = true;         // false: an upper bound or an estimate (see note)
    std::string note;          // why, one clause per reason, "; "-separated
    std::vector<GridTime> grids;
    // Where the only reason is a grid's clipped last tiles: exact when each first divides its
    // second (Br divides n), as exact() says at given parameters.
    std::vector<std::pair<Formula, Formula>> exact_when;
    bool exact_at(const std::vector<std::pair<std::string, std::int64_t>>& bindings) const;
};
TimeFormulas derive_time(const Program& program);

// The lets a formula uses (directly, or through another let used), in declaration order.
struct LetLegend {
    std::string name;
    std::string definition;  // "cdiv(n, Br)"
    std::string math;        // "⌈n/Br⌉"; empty when it would only repeat the definition
    std::int64_t value = 0;  // at the program's parameters
};
std::vector<LetLegend> let_legend(const Program& program, const std::vector<ArrayFormulas>& formulas);
// One line per let: "Tr = cdiv(n, Br) = ⌈n/Br⌉ = 16".
std::string describe_lets(const Program& program, const std::vector<ArrayFormulas>& formulas);

}  // namespace toysim
