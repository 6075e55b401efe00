// The run-time faults of a program, each a located error naming what went wrong and the loop
// variables in force. All cold: the executor calls them only on the way out.
#include "sim/exec/faults.h"
#include "sim/exec/parallel.h"
#include "sim/lower/disasm.h"

#include <fmt/format.h>

namespace toysim {

// " (i = 3, k = 1)": the loop variables in force at an instruction, for run-time errors.
std::string loop_context(const Program& p, std::int32_t pc, const std::int64_t* vars) {
    const auto& loops = p.enclosing_loops[static_cast<size_t>(pc)];
    if (loops.empty()) return "";
    std::string out = " (at ";
    for (size_t i = 0; i < loops.size(); ++i) {
        const LoopInfo& l = p.loops[static_cast<size_t>(loops[i])];
        out += fmt::format("{}{} = {}", i ? ", " : "", l.var, vars[l.slot]);
    }
    return out + ")";
}

Loc operand_loc(const Program& p, std::int32_t pc, int operand) {
    const ast::Instruction* in = p.origin[static_cast<size_t>(pc)];
    return in->operands[static_cast<size_t>(operand)].loc;
}

// Which source operand holds the idx-th register operand of an instruction.
int register_operand_position(const Program& p, std::int32_t pc, int reg_index) {
    const OpInfo& op = info(p.origin[static_cast<size_t>(pc)]->op);
    int seen = 0;
    for (int i = 0; i < op.operand_count(); ++i) {
        OperandKind k = op.operand(i);
        if (k == OperandKind::RegRead || k == OperandKind::RegWrite) {
            if (seen == reg_index) return i;
            ++seen;
        }
    }
    return 0;
}

int memory_operand_position(const Program& p, std::int32_t pc) {
    const OpInfo& op = info(p.origin[static_cast<size_t>(pc)]->op);
    for (int i = 0; i < op.operand_count(); ++i) {
        OperandKind k = op.operand(i);
        if (k == OperandKind::MemRead || k == OperandKind::MemWrite) return i;
    }
    return 0;
}

std::string subscript_text(const MemRef& m, const std::int64_t* vars) {
    std::string out;
    for (const auto& s : m.subscripts) {
        std::int64_t v;
        out += s.eval_checked(vars, v) ? fmt::format("[{}]", v) : "[(overflow)]";
    }
    return out;
}

void fail_bounds(const Program& p, std::int32_t pc, const MemRef& m, const std::int64_t* vars) {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(m.array)];
    std::string shape = a.dims.size() == 1 ? fmt::format("has {} element{} (index 0..{})", a.dims[0], a.dims[0] == 1 ? "" : "s", a.dims[0] - 1)
                                           : fmt::format("is {}", fmt::join(a.dims, "×"));
    throw ToyError(operand_loc(p, pc, memory_operand_position(p, pc)),
                   fmt::format("{}{} is out of bounds: {} {}{}", a.name, subscript_text(m, vars), a.name, shape, loop_context(p, pc, vars)));
}

void fail_unwritten_element(const Program& p, std::int32_t pc, const MemRef& m, const std::int64_t* vars) {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(m.array)];
    throw ToyError(operand_loc(p, pc, memory_operand_position(p, pc)),
                   fmt::format("{}{} is read before anything was stored there ({} is {} array{}){}", a.name, subscript_text(m, vars),
                               a.name, a.role == ast::Role::Output ? "an output" : "a scratch",
                               accumulates(p.op_at(pc)) ? fmt::format("; STORE_ADD adds to what is there: start it at a value, as in "
                                                                      "`{} {}[...] = 0`, or STORE to it first",
                                                                      a.role == ast::Role::Output ? "output" : "scratch", a.name)
                                                        : "",
                               loop_context(p, pc, vars)));
}

void fail_unwritten_register(const Program& p, std::int32_t pc, int reg_index, std::int32_t reg,
                                                               const std::int64_t* vars) {
    throw ToyError(operand_loc(p, pc, register_operand_position(p, pc, reg_index)),
                   fmt::format("R{} is read before it was ever written{}", reg, loop_context(p, pc, vars)));
}

void fail_step_limit(const Program& p, std::int32_t pc, std::uint64_t limit, const std::int64_t* vars) {
    throw ToyError(ErrorKind::StepLimit, p.origin[static_cast<size_t>(pc)]->loc,
                   fmt::format("step limit reached: {} instructions ran and the program has not finished{}", limit,
                               loop_context(p, pc, vars)));
}

void fail_register_range(const Program& p, std::int32_t pc, const DynamicRegister& d, std::int64_t r,
                                                           bool overflow, const std::int64_t* vars) {
    std::string which = overflow ? "register index overflows" : fmt::format("register index {} is out of range", r);
    throw ToyError(d.loc, fmt::format("{} for the register file ({}){}", which, p.register_file_text(), loop_context(p, pc, vars)));
}

// A tile instruction's fault, pointed at its reg_index-th register operand.
void fail_tile(const Program& p, std::int32_t pc, int reg_index, const std::string& message,
                                                  const std::int64_t* vars) {
    throw ToyError(operand_loc(p, pc, register_operand_position(p, pc, reg_index)), message + loop_context(p, pc, vars));
}

void fail_loop_bound(const Program& p, std::int32_t pc, const std::int64_t* vars) {
    const LoopInfo& l = p.loops[static_cast<size_t>(p.code[static_cast<size_t>(pc)].loop)];
    throw ToyError(l.loc, fmt::format("the bounds of loop '{}' overflow 64-bit integers{}", l.var, loop_context(p, pc, vars)));
}

void fail_empty_loops(const Program& p, std::int32_t pc, std::uint64_t limit, const std::int64_t* vars) {
    const LoopInfo& l = p.loops[static_cast<size_t>(p.code[static_cast<size_t>(pc)].loop)];
    throw ToyError(ErrorKind::StepLimit, l.loc,
                   fmt::format("step limit reached: loop '{}' was entered {} times without running once, and the program "
                               "has not finished{}",
                               l.var, limit, loop_context(p, pc, vars)));
}

std::string shape_text(std::int64_t rows, std::int64_t cols) { return fmt::format("{}×{}", rows, cols); }

std::string slice_text(const Program& p, const MemRef& m, const std::int64_t* vars) {
    std::string out = p.arrays[static_cast<size_t>(m.array)].name;
    for (size_t d = 0; d < m.subscripts.size(); ++d) {
        std::int64_t a = 0, b = 0;
        bool ok = m.subscripts[d].eval_checked(vars, a) && (!m.is_range[d] || m.ends[d].eval_checked(vars, b));
        if (!ok) out += "[(overflow)]";
        else out += m.is_range[d] ? fmt::format("[{}..{}]", a, b) : fmt::format("[{}]", a);
    }
    return out;
}

SliceGeometry slice_geometry(const Program& p, std::int32_t pc, const MemRef& m, const std::int64_t* vars) {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(m.array)];
    SliceGeometry g;
    std::int64_t extents[2] = {1, 1}, strides[2] = {0, 0};
    int ranges = 0;
    for (size_t d = 0; d < m.subscripts.size(); ++d) {
        std::int64_t start = 0, end = 0;
        if (!m.subscripts[d].eval_checked(vars, start) || start < 0 || start >= a.dims[d] ||
            (m.is_range[d] && !m.ends[d].eval_checked(vars, end)))
            throw ToyError(operand_loc(p, pc, memory_operand_position(p, pc)),
                           fmt::format("the slice {} starts outside {}: {} is {}{}", slice_text(p, m, vars), a.name, a.name,
                                       fmt::join(a.dims, "×"), loop_context(p, pc, vars)));
        g.address += start * a.strides[d];
        if (!m.is_range[d]) continue;
        if (end <= start)
            throw ToyError(operand_loc(p, pc, memory_operand_position(p, pc)),
                           fmt::format("the slice {} is empty: a range's end must be after its start{}", slice_text(p, m, vars),
                                       loop_context(p, pc, vars)));
        extents[ranges] = std::min(end, a.dims[d]) - start;  // the edge tile is clipped
        strides[ranges++] = a.strides[d];
    }
    g.address += a.base;
    if (ranges == 2) {
        g.rows = extents[0], g.row_stride = strides[0];
        g.cols = extents[1], g.col_stride = strides[1];
    } else if (ranges == 1) {
        g.cols = extents[0], g.col_stride = strides[0];
    }
    return g;
}


}  // namespace toysim

namespace toysim {

namespace {

// The grid (directly nested parallel loops) that encloses pc, outermost first.
std::vector<const LoopInfo*> grid_at(const Program& p, std::int32_t pc) {
    std::vector<const LoopInfo*> grid;
    for (int index : p.enclosing_loops[static_cast<size_t>(pc)]) {
        const LoopInfo& l = p.loops[static_cast<size_t>(index)];
        if (l.parallel) grid.push_back(&l);
    }
    return grid;
}

// The loop variables of the grid's `ordinal`-th iteration (counted from 0 where the grid
// began, with `start` the variables in force then), found by walking the grid in order.
bool grid_iteration(const std::vector<const LoopInfo*>& grid, size_t level, std::int64_t* vars, std::uint64_t& ordinal) {
    const LoopInfo& l = *grid[level];
    std::int64_t lo = 0, hi = 0;
    if (!l.lo.eval_checked(vars, lo) || !l.hi.eval_checked(vars, hi)) return false;
    for (std::int64_t v = lo; v < hi; ++v) {
        vars[l.slot] = v;
        if (level + 1 == grid.size()) {
            if (ordinal == 0) return true;
            --ordinal;
        } else if (grid_iteration(grid, level + 1, vars, ordinal)) {
            return true;
        }
    }
    return false;
}

std::string iteration_text(const std::vector<const LoopInfo*>& grid, const std::int64_t* vars) {
    std::string out;
    for (size_t i = 0; i < grid.size(); ++i) out += fmt::format("{}{} = {}", i ? ", " : "", grid[i]->var, vars[grid[i]->slot]);
    return out;
}

}  // namespace

void fail_race(const Program& p, const ParallelState& s, std::int32_t pc, std::int64_t at, AccessKind now, std::uint32_t other,
               std::int32_t other_pc, AccessKind then, const std::int64_t* vars) {
    std::vector<const LoopInfo*> grid = grid_at(p, pc);
    std::array<std::int64_t, kMaxLoopDepth> other_vars = s.grid_start_vars;
    std::uint64_t ordinal = other - s.first_iteration;
    std::string other_text = grid.empty() || !grid_iteration(grid, 0, other_vars.data(), ordinal) ? "another iteration"
                                                                                                   : "iteration " + iteration_text(grid, other_vars.data());
    const std::string element = p.element_ref_at(at);
    const LoopInfo& outer = grid.empty() ? p.loops.front() : *grid.front();
    const ast::Instruction* then_in = p.origin[static_cast<size_t>(other_pc)];
    auto verb = [](AccessKind a, bool present) {
        switch (a) {
            case AccessKind::Read: return present ? "reads" : "read";
            case AccessKind::Write: return present ? "writes" : "wrote";
            case AccessKind::Accumulate: break;
        }
        return present ? "adds to" : "added to";
    };
    throw ToyError(ErrorKind::Race, operand_loc(p, pc, memory_operand_position(p, pc)),
                   fmt::format("data race on {}: iteration {} of the parallel loop at line {} {} it here, and {} {} it at line {} "
                               "({}); iterations of a parallel loop may share an element only by all reading it or all adding "
                               "to it with STORE_ADD",
                               element, iteration_text(grid, vars), outer.loc.line, verb(now, true), other_text, verb(then, false),
                               then_in->loc.line, render_instruction(p, other_pc)));
}

}  // namespace toysim
