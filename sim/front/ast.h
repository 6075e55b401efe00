// The parsed form of a .toy program, before parameters are bound.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "isa/counters.h"
#include "isa/isa.h"
#include "support/diag.h"

namespace toysim {

// Loops nest at most this deep (the parser refuses deeper ones; the executor keeps one
// variable per level).
inline constexpr int kMaxLoopDepth = 8;

// An integer expression nests at most this deep: its tree is at most this tall (a number or a
// name is height 0, an operation one more than its tallest operand), and parentheses, unary
// minus signs and function calls open at most this many levels. The parser refuses more, so
// every walk over an Expr recurses at most this deep, and a long chain `1+1+...+1` is as
// bounded as 30,000 nested parentheses.
inline constexpr int kMaxExprDepth = 256;

}  // namespace toysim

namespace toysim::ast {

// Integer expression over numbers, parameters and loop variables: + - * / % and parentheses,
// and the functions cdiv(a, b) (ceiling division), min(a, b) and max(a, b) of constants.
struct Expr {
    enum class Kind { Number, Name, Binary, Negate, Call } kind = Kind::Number;
    std::int64_t value = 0;
    std::string name;  // Name; Call: the function
    char op = 0;
    std::unique_ptr<Expr> lhs, rhs;  // Call: the two arguments
    int height = 0;  // 0 for a number or a name, else 1 + the taller operand's (at most kMaxExprDepth)
    Loc loc;
};
using ExprPtr = std::unique_ptr<Expr>;

// A copy of an expression. Recursion as deep as the expression: at most kMaxExprDepth and a few
// (the parser's bound; the formulas' rewrites add a few levels).
inline ExprPtr clone(const Expr& e) {
    auto out = std::make_unique<Expr>();
    out->kind = e.kind;
    out->value = e.value;
    out->name = e.name;
    out->op = e.op;
    out->height = e.height;
    out->loc = e.loc;
    if (e.lhs) out->lhs = clone(*e.lhs);
    if (e.rhs) out->rhs = clone(*e.rhs);
    return out;
}

// A bare name (no subscripts) is a tile when a tile of that name is declared; the parser
// leaves that to the compiler, which knows the declarations.
struct Operand {
    enum class Kind { Register, IndexedRegister, Memory, Immediate, Device } kind = Kind::Register;
    int reg = 0;               // Register: R<reg>
    ExprPtr reg_index;         // IndexedRegister: R[expr]; Device: @expr, the device's number (modulo D)
    std::string array;         // Memory: array[sub][sub]... (or a tile's name)
    Loc array_loc;
    std::vector<ExprPtr> subscripts;
    std::vector<ExprPtr> subscript_ends;  // per subscript: the end of a range a..b, or null
    bool transposed = false;   // tile.T
    double immediate = 0;      // Immediate
    Loc loc;
};

struct Instruction {
    Op op;
    std::vector<Operand> operands;
    Loc loc;  // the mnemonic
};

struct Loop;
using Statement = std::variant<Instruction, std::unique_ptr<Loop>>;

struct Loop {
    // `parallel for`: the iterations are independent. Each runs on a worker of its own (its
    // own registers and tiles); they share DRAM, and the machine checks that no iteration
    // writes an element another one reads or writes (a data race).
    bool parallel = false;
    Loc parallel_loc;  // the word 'parallel'
    // `on devices r { ... }`: the body runs on every device (`devices D`), r its number 0..D−1,
    // all at once, each with its own registers, tiles and DRAM. A parallel loop from 0 to D
    // whose iterations are the devices: lo is 0 and hi a copy of the `devices` expression, or
    // null where the file declares no devices (a solution: its exercise's spec does).
    bool devices = false;
    std::string var;
    Loc var_loc;
    ExprPtr lo, hi;  // half-open: lo <= var < hi
    std::vector<Statement> body;
    Loc loc;
};

enum class Role { Input, Output, Scratch };

struct Fill {
    enum class Kind { Default, Literal, Random, Constant, Reference } kind = Kind::Default;
    std::vector<double> values;  // Literal, row-major; Constant: the one value
    // Reference: computed from inputs declared above, as a forward pass would have saved it:
    // input O[n][d] = attention(Q, K, V)
    std::string function;
    std::vector<std::pair<std::string, Loc>> args;
    std::uint64_t seed = 0;      // Random
    double lo = -1, hi = 1;      // Random: uniform in [lo, hi)
    Loc lo_loc, hi_loc;          // Random: where lo and hi are written (line 0 when not)
    Loc loc;
};

struct Array {
    Role role = Role::Input;
    std::string name;
    std::vector<ExprPtr> dims;
    // `split` (with `devices D`): the rows of its first dimension are spread over the devices,
    // D equal parts in order, each in its own device's DRAM; `split 1` its dimension 1 (from 0).
    bool split = false;
    int split_dim = 0;
    Loc split_loc;
    Fill fill;
    Loc loc;  // the name
};

struct Param {
    std::string name;
    ExprPtr value;
    bool derived = false;  // 'let': computed from the parameters above it, not settable
    Loc loc;
};

// tile NAME[rows][cols] (or [cols]): a named bank of registers, the SRAM of the tiled machine.
struct Tile {
    std::string name;
    std::vector<ExprPtr> dims;
    Loc loc;
    // `in registers` or `in shared` after the shape: where a GPU kernel keeps it (the toy
    // machine runs both alike; the timing pass counts shared memory's bytes). Default: shared.
    bool in_registers = false;
    // `stages S` after that: LOADs into it are asynchronous copies (cp.async, TMA), S of them in
    // flight, so their waits overlap the work between (the timing pass). Null: synchronous.
    ExprPtr stages;
};

// check TARGET = FUNCTION(ARG, ...) [within TOL]; TARGET and the reference may be indexed
// down to one element: check c[0][0] = matmul(a, b)[0][0]
struct Check {
    std::string target;
    Loc target_loc;
    std::vector<ExprPtr> target_index;
    std::string function;
    Loc function_loc;
    std::vector<std::pair<std::string, Loc>> args;
    std::vector<ExprPtr> reference_index;
    std::optional<double> tolerance;
    Loc tolerance_loc;
    Loc loc;
};

struct Cost {
    Op op;
    ExprPtr cycles;
    Loc loc;
};

// expect COUNTER = EXPR (or <= EXPR, >= EXPR), where COUNTER names a row of the counter table
// (isa/counters.h): cycles, instructions, reads, writes, registers, an opcode mnemonic,
// reads(ARRAY), writes(ARRAY), work(OPCODE), ...
struct Expect {
    std::string counter;
    Relation relation = Relation::Equal;
    std::string array;  // for reads(ARRAY) / writes(ARRAY)
    Loc array_loc;
    ExprPtr value;
    Loc loc;
};

// require EXPR = EXPR (or <=, >=): a condition on the parameters that the program needs
// (`require n % (S*Bc) = 0`): a setting that breaks it is refused at the line, before anything
// runs, as `toysim tune` drops such a point with the line's reason.
struct Require {
    ExprPtr lhs;
    Relation relation = Relation::Equal;
    ExprPtr rhs;
    Loc relation_loc;
    Loc loc;  // 'require' to the end of its right side
};

// test n = 1000 b = 4: one extra parameter set the program's own test runs it with.
struct TestCase {
    std::vector<std::pair<std::string, ExprPtr>> settings;
    Loc loc;
};

// gpu NAME: the CUDA kernel (gpu/kernels/kernels.h's catalog) that runs this program's algorithm on a
// real GPU with the same loop order and tile sizes; `toysim gpu run` reads it.
struct GpuKernel {
    std::string name;
    Loc loc;
};

// cache SETTINGS: a modeled cache (an L2) between the workers and DRAM, as `--cache` takes it:
// a preset ("h100"), settings ("size=1KiB line=64 sector=32 ways=2") or both (sim/exec/cache.h).
struct CacheDecl {
    std::string text;  // everything after `cache` on its line
    Loc loc;           // of that text
    Loc keyword;
};

// ---- exercise specs (exercise.toy; see programs/exercises/README.md) ----

// target COUNTER REL EXPR points N: the figure itself is an Expect in Program::expects (compiled
// and counted like one); this is what meeting it earns.
struct Target {
    std::int64_t points = 1;
    Loc loc;  // 'target'
};

// test visible|hidden [NAME = EXPR ...] [seed = N] [points N]: one graded test case.
struct ExerciseTest {
    bool hidden = false;
    std::vector<std::pair<std::string, ExprPtr>> settings;
    std::uint64_t seed = 0;  // the stream of every random (and default) input fill; 0 is `toysim run`'s
    std::int64_t points = 1;
    Loc loc;  // 'test'
};

// optimum COUNTER over NAME = V, V, ... [NAME = ...] [within P%] [points N]: the solution's
// choice of its lets NAME (its block sizes) against the best choice of the space for its own
// code: the grader runs the solution at every combination, keeps those whose checks pass and
// which meet every target (the budget), and the solution earns the points when its COUNTER is
// within P% of the least kept one's.
struct Optimum {
    std::string counter;  // cycles, instructions, reads or writes
    Loc counter_loc;
    std::vector<std::pair<std::string, std::vector<ExprPtr>>> space;
    std::vector<Loc> name_locs;
    std::int64_t within_percent = 0;
    std::int64_t points = 1;
    Loc loc;  // 'optimum'
};

struct Exercise {
    std::string title;
    Loc loc;                                  // 'exercise'
    std::vector<std::pair<Op, Loc>> allowed;  // empty: every opcode
    ExprPtr step_limit;                       // null: the default
    std::vector<Target> targets;              // parallel to Program::expects
    std::optional<Optimum> optimum;
    std::vector<ExerciseTest> tests;
};

struct Program {
    std::shared_ptr<const SourceFile> source;
    std::optional<Exercise> exercise;  // an exercise spec's own declarations (ParseMode::Exercise)
    std::optional<GpuKernel> gpu_kernel;
    std::optional<CacheDecl> cache;
    ExprPtr registers;
    ExprPtr workers;  // `workers P`: the machine's workers (null: 1)
    Loc workers_loc;
    // `devices D [ring] [link C] [latency L]`: D machines joined by links (null: one machine, no
    // links), in a ring (a link to each neighbour) or all to all; a link moves an element in C
    // cycles (null: 1) after L cycles of latency a transfer (null: 0).
    ExprPtr devices;
    Loc devices_loc;
    bool ring = false;
    ExprPtr link_cycles, link_latency;
    ExprPtr warps;    // `warps W`: on a GPU, the warps of a worker, over which a product's rows split (null: 4)
    std::string products;  // `products wgmma`: on a GPU, the unit tile products run on ("": CUDA cores)
    Loc products_loc;
    std::string product_patches;  // `products cuda block`: whose 4×4 patches a lane takes ("": a warp's rows')
    Loc product_patches_loc;
    std::vector<Param> params;  // and lets, in declaration order
    std::vector<Tile> tiles;
    std::vector<Array> arrays;
    std::vector<Check> checks;
    std::vector<Cost> costs;
    std::vector<Expect> expects;
    std::vector<Require> requires_;  // (requires is a C++20 keyword)
    std::vector<TestCase> tests;
    std::vector<Statement> body;
};

}  // namespace toysim::ast
