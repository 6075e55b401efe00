// The compiler's internal state, shared by the files that implement it (not a public header):
//
//   fold.cpp   integer expressions: folding the AST into Affine forms and constants, with the
//              language's checked arithmetic (integer.h), and the ranges they can take
//   bind.cpp   declarations: parameters and settings, the register file and tiles, arrays and
//              their fills, checks and expectations
//   lower.cpp  the body: loops, instructions, register operands, memory operands and slices
//
// program.cpp has Program's own functions and the entry point compile().
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/lower/program.h"

namespace toysim::detail {

using integer::Interval;

class Compiler {
public:
    Compiler(std::shared_ptr<const ast::Program> tree, const ParamSettings& settings);
    Program take() { return std::move(p_); }

private:
    std::shared_ptr<const ast::Program> tree_;
    Program p_;
    std::map<std::string, std::int64_t, std::less<>> params_;
    std::vector<std::pair<std::string, int>> scope_;  // loop variables in scope, outermost first
    std::vector<Interval> ranges_;                   // per slot: every value the variable can take
    std::vector<int> open_loops_;
    bool in_devices_ = false;  // lowering the body of `on devices r { ... }`
    std::vector<bool> definitely_written_;  // per register, at the point being lowered
    // Inside a parallel loop's body, each iteration has registers and tiles of its own: a read
    // needs a write earlier in the same iteration. tile_written_ is definitely_written_ for
    // tiles (kept only there). After the loop, what its iterations wrote is "clobbered" (which
    // worker's value remains is not defined) until written again: the parallel loop's index.
    int parallel_depth_ = 0;
    std::vector<bool> tile_written_;
    std::vector<int> clobbered_, tile_clobbered_;  // per register / tile: -1, or a LoopInfo index
    std::vector<bool> written_inside_, tile_written_inside_;  // by some iteration of the open parallel loop
    const ast::Loop* grid_body_ = nullptr;  // the loop that is the whole body of the parallel loop being lowered
    void read_private(std::int32_t reg, int tile, Loc loc);
    int innermost_iteration_loop() const;
    void collect_writes(const std::vector<ast::Statement>& body, std::vector<bool>& regs, std::vector<bool>& tiles) const;
    void wrote_private(std::int32_t reg, int tile);
    // R[expr] inside a parallel iteration (dynamic.cpp): its writes not yet counted register by
    // register (the index, the loops open around it), and the straight runs of code (run_ moves
    // at every loop's start and end) with the R[expr] each wrote.
    struct DynamicWrite {
        Affine index;
        std::vector<int> loops;
        Loc loc;
    };
    std::vector<DynamicWrite> dynamic_writes_;
    int run_ = 0;
    std::vector<std::pair<int, Affine>> run_writes_;
    std::vector<bool> iteration_writes_;  // per register: some instruction of the open parallel loop may write it
    std::optional<Interval> registers_named(const Affine& index) const;
    void dynamic_write(const Affine& index, Loc loc);
    void dynamic_read(const Affine& index, Loc loc);
    void settle_dynamic_writes(int index);
    bool collect_dynamic_writes(const std::vector<ast::Statement>& body, std::vector<bool>& regs);

    // ---- integer expressions (fold.cpp) ----
    [[noreturn]] void unknown_name(const ast::Expr& e);
    Affine affine(const ast::Expr& e);
    std::int64_t call(const ast::Expr& e);
    static Affine scale(Affine a, std::int64_t k, Loc loc);
    static Affine combine(Affine a, const Affine& b, std::int64_t sign, Loc loc);
    std::int64_t constant(const ast::Expr& e, std::string_view what);
    // Every value the expression can take, given the loop variables' ranges; "everything"
    // when a bound overflows, so nothing is proven from a wrapped interval.
    Interval range(const Affine& a) const;

    // ---- declarations (bind.cpp) ----
    void bind_params(const ParamSettings& settings);
    void check_requires();
    void bind_machine();
    void bind_devices();
    void bind_tiles();
    static std::string bank_shape(const Tile& b);
    void bind_arrays();
    void bind_fill(const ast::Array& a, ArrayInfo& info);
    void bind_reference_fill(ArrayInfo& info);
    std::vector<std::int64_t> constant_index(const std::vector<ast::ExprPtr>& subs, std::vector<Loc>* locs = nullptr);
    int array_named(const std::string& name, Loc loc);
    static std::string index_text(const std::vector<std::int64_t>& index);
    void bind_checks();
    static std::string shape_text(const std::vector<std::int64_t>& shape);
    void bind_expects();

    // ---- the body (lower.cpp) ----
    int emit_plain(Code code);
    void lower_body(const std::vector<ast::Statement>& body);
    void lower_loop(const ast::Loop& l);
    static bool has_instructions(const std::vector<ast::Statement>& body);
    static std::string_view kind_name(ast::Operand::Kind k);
    bool names_tile(const ast::Operand& o) const;
    bool is_tile_instruction(const ast::Instruction& in) const;
    void check_operand_count(const ast::Instruction& in, const OpInfo& op);
    [[noreturn]] void wrong_operand(const ast::Operand& o, const OpInfo& op, int i, std::string_view want);
    void lower_transfer(const ast::Instruction& in, const OpInfo& op);
    void lower_tile_instruction(const ast::Instruction& in, const OpInfo& op);
    void check_slice_widths(const MemRef& m, const Tile& b, bool column, Loc loc);
    void lower_instruction(const ast::Instruction& in);
    static std::string operand_name(const OpInfo& op, int i);
    std::int32_t lower_register(const ast::Operand& o, Inst& inst);
    int lower_memory(const ast::Operand& o, bool write, const OpInfo& op);
};

}  // namespace toysim::detail
