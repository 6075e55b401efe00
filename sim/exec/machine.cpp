#include "sim/exec/machine.h"

#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "sim/reference/reference.h"

namespace toysim {

namespace {

struct NumericDomain {
    using Value = double;
    static double add(double a, double b) { return a + b; }
    static double sub(double a, double b) { return a - b; }
    static double mul(double a, double b) { return a * b; }
    static double div(double a, double b) { return a / b; }
    static double max(double a, double b) { return a >= b ? a : b; }
    static double exp(double a) { return std::exp(a); }
    static double log(double a) { return std::log(a); }
    static double constant(double v) { return v; }
    static void stored(double, std::int64_t) {}
};

constexpr int register_reads(std::string_view signature) {
    int n = 0;
    for (char ch : signature) n += ch == 'r';
    return n;
}

// Reproducible uniform fill: splitmix64, 53-bit mantissa.
struct Random {
    std::uint64_t state;
    double next(double lo, double hi) {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        return lo + (hi - lo) * static_cast<double>(z >> 11) * 0x1.0p-53;
    }
};

std::vector<double> initial_values(const ArrayInfo& a) {
    std::vector<double> values(static_cast<size_t>(a.size));
    if (a.fill.kind == ast::Fill::Kind::Literal) return a.fill.values;
    if (a.fill.kind == ast::Fill::Kind::Constant) return std::vector<double>(values.size(), a.fill.values[0]);
    Random rng{a.fill.seed * 0x2545F4914F6CDD1DULL + 1};
    for (auto& v : values) v = rng.next(a.fill.lo, a.fill.hi);
    return values;
}

struct NoTrace {
    static constexpr bool enabled = false;
    void step(std::int32_t, std::int32_t, const std::int64_t*, double) {}
    template <class V>
    void tile_step(std::int32_t, const std::int64_t*, std::int32_t, std::int32_t, std::int64_t, std::int64_t, std::int64_t, const V*) {}
};

template <class Value>
struct Recorder {
    static constexpr bool enabled = true;
    std::vector<TraceStep>* steps;
    void step(std::int32_t pc, std::int32_t reg, const std::int64_t* vars, Value v) {
        TraceStep s;
        s.pc = pc;
        s.reg = reg;
        std::copy(vars, vars + kMaxLoopDepth, s.vars.begin());
        if constexpr (std::is_same_v<Value, double>)
            s.number = v;
        else
            s.symbol = v;
        steps->push_back(s);
    }
    // A tile instruction: the tile it wrote (or stored), as a rows×cols block of values.
    void tile_step(std::int32_t pc, const std::int64_t* vars, std::int32_t bank, std::int32_t reg, std::int64_t rows, std::int64_t cols,
                   std::int64_t row_stride, const Value* data) {
        TraceStep s;
        s.pc = pc;
        s.bank = bank;
        s.reg = reg;
        s.rows = static_cast<std::int32_t>(rows);
        s.cols = static_cast<std::int32_t>(cols);
        s.first = static_cast<std::uint32_t>(values->size());
        std::copy(vars, vars + kMaxLoopDepth, s.vars.begin());
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j) values->push_back(data[i * row_stride + j]);
        steps->push_back(s);
    }
    std::vector<Value>* values;
};

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

[[noreturn]] __attribute__((cold)) void fail_bounds(const Program& p, std::int32_t pc, const MemRef& m, const std::int64_t* vars) {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(m.array)];
    std::string shape = a.dims.size() == 1 ? fmt::format("has {} element{} (index 0..{})", a.dims[0], a.dims[0] == 1 ? "" : "s", a.dims[0] - 1)
                                           : fmt::format("is {}", fmt::join(a.dims, "×"));
    throw ToyError(operand_loc(p, pc, memory_operand_position(p, pc)),
                   fmt::format("{}{} is out of bounds: {} {}{}", a.name, subscript_text(m, vars), a.name, shape, loop_context(p, pc, vars)));
}

[[noreturn]] __attribute__((cold)) void fail_unwritten_element(const Program& p, std::int32_t pc, const MemRef& m, const std::int64_t* vars) {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(m.array)];
    throw ToyError(operand_loc(p, pc, memory_operand_position(p, pc)),
                   fmt::format("{}{} is read before anything was stored there ({} is {} array){}", a.name, subscript_text(m, vars),
                               a.name, a.role == ast::Role::Output ? "an output" : "a scratch", loop_context(p, pc, vars)));
}

[[noreturn]] __attribute__((cold)) void fail_unwritten_register(const Program& p, std::int32_t pc, int reg_index, std::int32_t reg,
                                                               const std::int64_t* vars) {
    throw ToyError(operand_loc(p, pc, register_operand_position(p, pc, reg_index)),
                   fmt::format("R{} is read before it was ever written{}", reg, loop_context(p, pc, vars)));
}

[[noreturn]] __attribute__((cold)) void fail_step_limit(const Program& p, std::int32_t pc, std::uint64_t limit, const std::int64_t* vars) {
    throw ToyError(p.origin[static_cast<size_t>(pc)]->loc,
                   fmt::format("step limit reached: {} instructions ran and the program has not finished{}; raise it with --max-steps",
                               limit, loop_context(p, pc, vars)));
}

[[noreturn]] __attribute__((cold)) void fail_register_range(const Program& p, std::int32_t pc, const DynamicRegister& d, std::int64_t r,
                                                           bool overflow, const std::int64_t* vars) {
    std::string which = overflow ? "register index overflows" : fmt::format("register index {} is out of range", r);
    throw ToyError(d.loc, fmt::format("{} for the register file ({}){}", which, p.register_file_text(), loop_context(p, pc, vars)));
}

// R[expr]: the register it names now, or a fault.
std::int32_t resolve_register(const Program& p, std::int32_t pc, std::int32_t index, const std::int64_t* vars) {
    if (index >= 0) return index;
    const DynamicRegister& d = p.dynamic_registers[static_cast<size_t>(-index - 1)];
    std::int64_t r = 0;
    bool fits = d.index.eval_checked(vars, r);
    if (!fits || r < 0 || r >= p.scalar_registers) fail_register_range(p, pc, d, r, !fits, vars);
    return static_cast<std::int32_t>(r);
}

// A tile instruction's fault, pointed at its reg_index-th register operand.
[[noreturn]] __attribute__((cold)) void fail_tile(const Program& p, std::int32_t pc, int reg_index, const std::string& message,
                                                  const std::int64_t* vars) {
    throw ToyError(operand_loc(p, pc, register_operand_position(p, pc, reg_index)), message + loop_context(p, pc, vars));
}

[[noreturn]] __attribute__((cold)) void fail_loop_bound(const Program& p, std::int32_t pc, const std::int64_t* vars) {
    const LoopInfo& l = p.loops[static_cast<size_t>(p.code[static_cast<size_t>(pc)].loop)];
    throw ToyError(l.loc, fmt::format("the bounds of loop '{}' overflow 64-bit integers{}", l.var, loop_context(p, pc, vars)));
}

[[noreturn]] __attribute__((cold)) void fail_empty_loops(const Program& p, std::int32_t pc, std::uint64_t limit, const std::int64_t* vars) {
    const LoopInfo& l = p.loops[static_cast<size_t>(p.code[static_cast<size_t>(pc)].loop)];
    throw ToyError(l.loc, fmt::format("step limit reached: loop '{}' was entered {} times without running once, and the program "
                                      "has not finished{}; raise it with --max-steps",
                                      l.var, limit, loop_context(p, pc, vars)));
}

template <class Value>
struct State {
    std::vector<Value> regs;
    std::vector<std::uint8_t> written;
    std::vector<Value> dram;
    std::vector<std::uint8_t> present;   // element holds a value (inputs, or stored since)
    std::vector<std::uint64_t> reads;    // per element
    std::vector<std::uint64_t> executed; // per code index
    std::vector<std::uint64_t> work;     // per code index: tile instructions' units of work
    std::vector<Value> tiles;            // every tile's registers
    std::vector<std::int64_t> tile_rows, tile_cols;  // each tile's current shape; 0 rows: never written
    std::vector<std::uint8_t> tile_touched;          // per tile register: ever written
    std::vector<Value> scratch;          // a product that overwrites one of its sources
};

// A rows×cols block of values: element (i, j) is data[i·rs + j·cs]. A transposed tile swaps
// the strides; a broadcast dimension has stride 0.
template <class V>
struct View {
    V* data;
    std::int64_t rows, cols, rs, cs;
    V& at(std::int64_t i, std::int64_t j) const { return data[i * rs + j * cs]; }
};

std::string shape_text(std::int64_t rows, std::int64_t cols) { return fmt::format("{}×{}", rows, cols); }

// The part of an array a slice covers now: up to two ranges (clipped at the array's edge).
struct SliceGeometry {
    std::int64_t address = 0;  // first element
    std::int64_t rows = 1, cols = 1, row_stride = 0, col_stride = 0;
};

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

// One tile instruction. Shapes follow numpy: element-wise operations broadcast a dimension of
// 1 (a column of row maxima against a tile); MAC/MAC_Z of two tiles is a matrix product;
// ROWMAX/ROWSUM reduce each row to one column. Returns the units of work (elements moved or
// produced, multiply-adds, or elements reduced), which the cost model charges.
template <class Domain, class Tracer>
std::uint64_t execute_tile(const Program& p, Domain& D, State<typename Domain::Value>& s, Tracer& tracer, std::int32_t pc,
                           const std::int64_t* vars) {
    using V = typename Domain::Value;
    const TileInst& t = p.tile_insts[static_cast<size_t>(p.code[static_cast<size_t>(pc)].mem)];
    const OpInfo& op = info(t.op);
    auto source = [&](int k) -> View<V> {
        const TileOperand& a = t.args[static_cast<size_t>(k)];
        if (a.kind == TileOperand::Kind::Register) {
            std::int32_t r = resolve_register(p, pc, a.index, vars);
            bool shape_only = t.op == Op::SET;  // SET reads only the rows of its source: a scalar's is 1
            if (!shape_only && !s.written[static_cast<size_t>(r)]) fail_unwritten_register(p, pc, k, r, vars);
            return {&s.regs[static_cast<size_t>(r)], 1, 1, 0, 0};
        }
        const Bank& b = p.banks[static_cast<size_t>(a.index)];
        std::int64_t rows = s.tile_rows[static_cast<size_t>(a.index)], cols = s.tile_cols[static_cast<size_t>(a.index)];
        if (rows == 0) fail_tile(p, pc, k, fmt::format("tile '{}' is read before it was ever written", b.name), vars);
        View<V> v{s.tiles.data() + b.base, rows, cols, b.cols, 1};
        if (a.transposed) {
            std::swap(v.rows, v.cols);
            std::swap(v.rs, v.cs);
        }
        return v;
    };
    auto name_of = [&](int k) {
        const TileOperand& a = t.args[static_cast<size_t>(k)];
        if (a.kind == TileOperand::Kind::Register) return fmt::format("R{}", resolve_register(p, pc, a.index, vars));
        return fmt::format("tile '{}'{}", p.banks[static_cast<size_t>(a.index)].name, a.transposed ? ".T" : "");
    };
    const int dest = t.count - 1;
    // Gives the destination its new shape; it must fit the tile's registers.
    auto destination = [&](std::int64_t rows, std::int64_t cols) -> View<V> {
        const TileOperand& d = t.args[static_cast<size_t>(dest)];
        if (d.kind == TileOperand::Kind::Register) {
            std::int32_t r = resolve_register(p, pc, d.index, vars);
            if (rows != 1 || cols != 1)
                fail_tile(p, pc, dest, fmt::format("{}: the result is {} but R{} holds one number", op.mnemonic, shape_text(rows, cols), r), vars);
            s.written[static_cast<size_t>(r)] = 1;
            return {&s.regs[static_cast<size_t>(r)], 1, 1, 0, 0};
        }
        const Bank& b = p.banks[static_cast<size_t>(d.index)];
        if (rows > b.rows || cols > b.cols)
            fail_tile(p, pc, dest, fmt::format("{}: the result is {} but tile '{}' holds at most {}", op.mnemonic,
                                                          shape_text(rows, cols), b.name, shape_text(b.rows, b.cols)), vars);
        s.tile_rows[static_cast<size_t>(d.index)] = rows;
        s.tile_cols[static_cast<size_t>(d.index)] = cols;
        for (std::int64_t i = 0; i < rows; ++i) std::fill_n(s.tile_touched.begin() + b.base + i * b.cols, cols, std::uint8_t{1});
        return {s.tiles.data() + b.base, rows, cols, b.cols, 1};
    };
    auto same_tile = [&](int k, int other) {
        const TileOperand &a = t.args[static_cast<size_t>(k)], &b = t.args[static_cast<size_t>(other)];
        return a.kind == TileOperand::Kind::Bank && b.kind == TileOperand::Kind::Bank && a.index == b.index;
    };
    // Where a result that overwrites a source it still reads is built before it is copied in.
    auto scratch = [&](std::int64_t rows, std::int64_t cols) -> View<V> {
        s.scratch.resize(static_cast<size_t>(rows * cols));
        return {s.scratch.data(), rows, cols, cols, 1};
    };
    // A trace row shows the block an instruction wrote, or for STORE the block it stored.
    auto record = [&](int k, View<V> v) {
        if constexpr (Tracer::enabled) {
            const TileOperand& a = t.args[static_cast<size_t>(k)];
            bool bank = a.kind == TileOperand::Kind::Bank;
            tracer.tile_step(pc, vars, bank ? a.index : -1, bank ? -1 : resolve_register(p, pc, a.index, vars), v.rows, v.cols, v.rs, v.data);
        }
    };
    auto finish = [&](View<V> out, View<V> built) {
        if (built.data != out.data)
            for (std::int64_t i = 0; i < out.rows; ++i)
                for (std::int64_t j = 0; j < out.cols; ++j) out.at(i, j) = built.at(i, j);
        record(dest, out);
    };
    // Numpy broadcasting of a source to rows×cols: a dimension of 1 repeats (stride 0).
    auto broadcast = [](View<V>& v, std::int64_t rows, std::int64_t cols) {
        if ((v.rows != rows && v.rows != 1) || (v.cols != cols && v.cols != 1)) return false;
        if (v.rows == 1) v.rs = 0;
        if (v.cols == 1) v.cs = 0;
        return true;
    };

    if (t.op == Op::LOAD || t.op == Op::STORE) {
        const MemRef& m = p.mems[static_cast<size_t>(t.mem)];
        SliceGeometry g = slice_geometry(p, pc, m, vars);
        if (t.column) {
            std::swap(g.rows, g.cols);
            std::swap(g.row_stride, g.col_stride);
        }
        if (t.op == Op::LOAD) {
            View<V> out = destination(g.rows, g.cols);
            for (std::int64_t i = 0; i < g.rows; ++i)
                for (std::int64_t j = 0; j < g.cols; ++j) {
                    std::int64_t at = g.address + i * g.row_stride + j * g.col_stride;
                    if (!m.always_present && !s.present[static_cast<size_t>(at)]) fail_unwritten_element(p, pc, m, vars);
                    ++s.reads[static_cast<size_t>(at)];
                    out.at(i, j) = s.dram[static_cast<size_t>(at)];
                }
            finish(out, out);
        } else {
            View<V> in = source(0);
            if (in.rows != g.rows || in.cols != g.cols)
                fail_tile(p, pc, 0, fmt::format("STORE: {} is {} but the slice {} is {}", name_of(0), shape_text(in.rows, in.cols),
                                                slice_text(p, m, vars), shape_text(g.rows, g.cols)), vars);
            for (std::int64_t i = 0; i < g.rows; ++i)
                for (std::int64_t j = 0; j < g.cols; ++j) {
                    std::int64_t at = g.address + i * g.row_stride + j * g.col_stride;
                    s.dram[static_cast<size_t>(at)] = in.at(i, j);
                    s.present[static_cast<size_t>(at)] = 1;
                    D.stored(in.at(i, j), at);
                }
            record(0, in);
        }
        return static_cast<std::uint64_t>(g.rows * g.cols);
    }

    if (t.op == Op::ROWMAX || t.op == Op::ROWSUM) {
        View<V> a = source(0);
        View<V> out = destination(a.rows, 1);
        for (std::int64_t i = 0; i < a.rows; ++i) {
            V acc = a.at(i, 0);
            for (std::int64_t j = 1; j < a.cols; ++j) acc = t.op == Op::ROWMAX ? D.max(acc, a.at(i, j)) : D.add(acc, a.at(i, j));
            out.at(i, 0) = acc;  // row i is read in full before its result lands on it
        }
        finish(out, out);
        return static_cast<std::uint64_t>(a.rows * a.cols);
    }

    bool matmul = (t.op == Op::MAC || t.op == Op::MAC_Z) && t.args[0].kind == TileOperand::Kind::Bank &&
                  t.args[1].kind == TileOperand::Kind::Bank;
    if (matmul) {
        View<V> a = source(0), b = source(1);
        if (a.cols != b.rows)
            fail_tile(p, pc, 0, fmt::format("{}: {} is {} and {} is {}: a matrix product needs the first's columns to equal the "
                                            "second's rows", op.mnemonic, name_of(0), shape_text(a.rows, a.cols), name_of(1),
                                            shape_text(b.rows, b.cols)), vars);
        std::int64_t rows = a.rows, cols = b.cols, inner = a.cols;
        View<V> c{};
        if (t.op == Op::MAC) {
            c = source(2);
            if (!broadcast(c, rows, cols))
                fail_tile(p, pc, 2, fmt::format("MAC: the product is {} but {} is {}", shape_text(rows, cols), name_of(2),
                                                shape_text(c.rows, c.cols)), vars);
        }
        View<V> out = destination(rows, cols);
        View<V> acc = same_tile(dest, 0) || same_tile(dest, 1) ? scratch(rows, cols) : out;
        // Row i of the result accumulates a(i, k)·row k of b for each k: contiguous rows.
        std::int64_t k0 = 0;
        if (t.op == Op::MAC) {
            for (std::int64_t i = 0; i < rows; ++i)
                for (std::int64_t j = 0; j < cols; ++j) acc.at(i, j) = c.at(i, j);
        } else {
            for (std::int64_t i = 0; i < rows; ++i)
                for (std::int64_t j = 0; j < cols; ++j) acc.at(i, j) = D.mul(a.at(i, 0), b.at(0, j));
            k0 = 1;
        }
        for (std::int64_t k = k0; k < inner; ++k)
            for (std::int64_t i = 0; i < rows; ++i) {
                V aik = a.at(i, k);
                V* row = &acc.at(i, 0);
                const V* brow = &b.at(k, 0);
                for (std::int64_t j = 0; j < cols; ++j) row[j] = D.add(row[j], D.mul(aik, brow[j * b.cs]));
            }
        finish(out, acc);
        return static_cast<std::uint64_t>(rows * cols * inner);
    }

    // Element-wise, with broadcasting: the row's semantics from the ISA table on each element.
    constexpr int kMaxSources = 3;
    int sources = op.register_sources();
    View<V> in[kMaxSources] = {};
    std::int64_t rows = 1, cols = 1;
    for (int k = 0; k < sources; ++k) {
        in[k] = source(k);
        if (t.op == Op::SET) break;  // the source only lends its rows
        rows = std::max(rows, in[k].rows);
        cols = std::max(cols, in[k].cols);
    }
    if (t.op == Op::SET) {
        const TileOperand& d = t.args[static_cast<size_t>(dest)];
        rows = in[0].rows;
        cols = d.kind == TileOperand::Kind::Bank ? p.banks[static_cast<size_t>(d.index)].cols : 1;
    } else {
        for (int k = 0; k < sources; ++k) {
            if (broadcast(in[k], rows, cols)) continue;
            std::string shapes;
            for (int q = 0; q < sources; ++q)
                shapes += fmt::format("{}{} is {}", q ? (q + 1 == sources ? " and " : ", ") : "", name_of(q), shape_text(in[q].rows, in[q].cols));
            fail_tile(p, pc, k, fmt::format("{}: {}: shapes broadcast only where they are equal or 1", op.mnemonic, shapes), vars);
        }
    }
    for (int k = sources; k < kMaxSources; ++k) in[k] = in[0];
    View<V> out = destination(rows, cols);
    bool overlap = false;  // a broadcast source that is also the destination would be overwritten as it is read
    for (int k = 0; k < sources; ++k)
        if (same_tile(dest, k) && (in[k].rs == 0 || in[k].cs == 0) && (rows > 1 || cols > 1)) overlap = true;
    View<V> built = overlap ? scratch(rows, cols) : out;
    [[maybe_unused]] double imm = t.imm;
    auto apply = [&](auto semantics) {
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j) built.at(i, j) = semantics(in[0].at(i, j), in[1].at(i, j), in[2].at(i, j));
    };
    switch (t.op) {
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SEM) \
    case Op::NAME: apply([&]([[maybe_unused]] V a, [[maybe_unused]] V b, [[maybe_unused]] V c) -> V { return SEM; }); break;
        TOYSIM_OPCODES(X)
#undef X
    }
    finish(out, built);
    return static_cast<std::uint64_t>(rows * cols);
}

template <class Domain, class Tracer>
void execute(const Program& p, Domain& dom, State<typename Domain::Value>& s, Tracer& tracer, std::uint64_t max_steps) {
    using V = typename Domain::Value;
    const Inst* code = p.code.data();
    const MemRef* mems = p.mems.data();
    V* regs = s.regs.data();
    std::uint8_t* written = s.written.data();
    V* dram = s.dram.data();
    std::uint8_t* present = s.present.data();
    std::uint64_t* reads = s.reads.data();
    std::uint64_t* executed = s.executed.data();
    std::uint64_t* work = s.work.data();
    std::int64_t vars[kMaxLoopDepth] = {};
    std::int64_t limit[kMaxLoopDepth] = {};
    std::uint64_t steps = 0;
    // Every loop body holds an instruction (the compiler checks), so each iteration runs one or
    // enters a nested loop; only entries into loops that run zero times make no progress.
    // Counting those against the same limit means no program spins forever.
    std::uint64_t empty_entries = 0;
    std::int32_t pc = 0;
    std::int32_t resolved[4];

    auto address = [&](const MemRef& m) {
        if (!m.bounds_proven) {
            const ArrayInfo& a = p.arrays[static_cast<size_t>(m.array)];
            for (size_t d = 0; d < m.subscripts.size(); ++d) {
                std::int64_t i;
                if (!m.subscripts[d].eval_checked(vars, i) || i < 0 || i >= a.dims[d]) fail_bounds(p, pc, m, vars);
            }
        }
        return m.address.eval(vars);  // in bounds, so no overflow
    };
    auto registers_of = [&](const Inst& in) -> const std::int32_t* {
        if (!in.dynamic_registers) return in.reg.data();
        for (int k = 0; k < in.reg_count; ++k) resolved[k] = resolve_register(p, pc, in.reg[static_cast<size_t>(k)], vars);
        return resolved;
    };
    auto read = [&](const Inst& in, const std::int32_t* R, int k) {
        if (((in.unproven_reads >> k) & 1) && !written[R[k]]) fail_unwritten_register(p, pc, k, R[k], vars);
        return regs[R[k]];
    };
    // Every ISA instruction: count it against the step limit and in its execution counter.
#define TOYSIM_STEP()                                                      \
    if (steps == max_steps) fail_step_limit(p, pc, max_steps, vars);       \
    ++steps;                                                               \
    ++executed[pc];                                                        \
    const std::int32_t* R = registers_of(in)

    for (;;) {
        const Inst& in = code[pc];
        switch (in.code) {
            case Code::LoopBegin: {
                const LoopInfo& l = p.loops[static_cast<size_t>(in.loop)];
                if (!l.lo.eval_checked(vars, vars[l.slot]) || !l.hi.eval_checked(vars, limit[l.slot])) fail_loop_bound(p, pc, vars);
                if (vars[l.slot] < limit[l.slot]) {
                    ++pc;
                } else {
                    if (++empty_entries > max_steps) fail_empty_loops(p, pc, max_steps, vars);
                    pc = in.jump + 1;
                }
                continue;
            }
            case Code::LoopEnd: {
                int slot = p.loops[static_cast<size_t>(in.loop)].slot;
                pc = ++vars[slot] < limit[slot] ? in.jump + 1 : pc + 1;
                continue;
            }
            case Code::Halt: return;
            case Code::Tile: {
                TOYSIM_STEP();
                (void)R;
                work[pc] += execute_tile(p, dom, s, tracer, pc, vars);
                break;
            }
            case Code::LOAD: {
                TOYSIM_STEP();
                const MemRef& m = mems[in.mem];
                std::int64_t at = address(m);
                if (!m.always_present && !present[at]) fail_unwritten_element(p, pc, m, vars);
                ++reads[at];
                regs[R[0]] = dram[at];
                written[R[0]] = 1;
                if constexpr (Tracer::enabled) tracer.step(pc, R[0], vars, dram[at]);
                break;
            }
            case Code::STORE: {
                TOYSIM_STEP();
                V v = read(in, R, 0);
                std::int64_t at = address(mems[in.mem]);
                dram[at] = v;
                present[at] = 1;
                dom.stored(v, at);
                if constexpr (Tracer::enabled) tracer.step(pc, -1, vars, v);
                break;
            }
            // Register-to-register instructions, one case per row of the ISA table: read the
            // sources (a, b, c), evaluate the row's semantics in the domain D, write Rd.
#define TOYSIM_ALU_Memory(NAME, SIG, SEM)
#define TOYSIM_ALU_Move(NAME, SIG, SEM) TOYSIM_ALU(NAME, SIG, SEM)
#define TOYSIM_ALU_Compute(NAME, SIG, SEM) TOYSIM_ALU(NAME, SIG, SEM)
#define TOYSIM_ALU(NAME, SIG, SEM)                                                \
    case Code::NAME: {                                                            \
        TOYSIM_STEP();                                                            \
        constexpr int sources = register_reads(SIG);                              \
        [[maybe_unused]] V a = read(in, R, 0);                                    \
        [[maybe_unused]] V b = sources > 1 ? read(in, R, 1) : a;                  \
        [[maybe_unused]] V c = sources > 2 ? read(in, R, 2) : a;                  \
        [[maybe_unused]] Domain& D = dom;                                         \
        [[maybe_unused]] double imm = 0;                                          \
        if constexpr (SIG[0] == 'i') imm = p.immediates[static_cast<size_t>(in.mem)]; \
        V result = SEM;                                                           \
        regs[R[sources]] = result;                                                \
        written[R[sources]] = 1;                                                  \
        if constexpr (Tracer::enabled) tracer.step(pc, R[sources], vars, result); \
        break;                                                                    \
    }
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SEM) TOYSIM_ALU_##CLASS(NAME, SIG, SEM)
            TOYSIM_OPCODES(X)
#undef X
#undef TOYSIM_ALU
#undef TOYSIM_ALU_Compute
#undef TOYSIM_ALU_Move
#undef TOYSIM_ALU_Memory
        }
        ++pc;
    }
#undef TOYSIM_STEP
}

template <class Value>
Counters tally(const Program& p, const State<Value>& s) {
    Counters c;
    c.arrays.resize(p.arrays.size());
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        const Inst& in = p.code[pc];
        if (in.code == Code::LoopBegin || in.code == Code::LoopEnd || in.code == Code::Halt) continue;
        bool tile = in.code == Code::Tile;
        Op op = p.op_at(static_cast<std::int32_t>(pc));
        std::uint64_t n = s.executed[pc];
        std::uint64_t units = tile ? s.work[pc] : n;  // a scalar instruction is one unit of work
        c.by_opcode[static_cast<size_t>(op)] += n;
        c.work_by_opcode[static_cast<size_t>(op)] += units;
        std::int32_t mem = tile ? p.tile_insts[static_cast<size_t>(in.mem)].mem : in.mem;
        if (op == Op::LOAD) c.arrays[static_cast<size_t>(p.mems[static_cast<size_t>(mem)].array)].reads += units;
        if (op == Op::STORE) c.arrays[static_cast<size_t>(p.mems[static_cast<size_t>(mem)].array)].writes += units;
    }
    for (const auto& row : all_ops()) {
        std::uint64_t units = c.work_by_opcode[static_cast<size_t>(row.op)];
        c.instructions += c.by_opcode[static_cast<size_t>(row.op)];
        c.cycles += units * static_cast<std::uint64_t>(p.cycles[static_cast<size_t>(row.op)]);
        if (row.klass == OpClass::Compute) c.compute_ops += units;
    }
    for (size_t a = 0; a < p.arrays.size(); ++a) {
        ArrayStats& st = c.arrays[a];
        c.dram_reads += st.reads;
        c.dram_writes += st.writes;
        const ArrayInfo& info = p.arrays[a];
        for (std::int64_t i = info.base; i < info.base + info.size; ++i) {
            std::uint64_t r = s.reads[static_cast<size_t>(i)];
            ++st.read_histogram[r];
            if (r) ++st.elements_read;
            st.max_reads = std::max(st.max_reads, r);
        }
    }
    for (auto w : s.written) c.peak_registers += w;
    for (auto w : s.tile_touched) c.peak_registers += w;
    return c;
}

template <class Value>
State<Value> fresh_state(const Program& p) {
    // The first array that does not fit is where the error points.
    if (p.dram_size > kMaxRunDram)
        for (const auto& a : p.arrays)
            if (a.base + a.size > kMaxRunDram)
                throw ToyError(a.loc, fmt::format("{} too large to run (at most {} elements in all); `toysim cost` counts it without running",
                                                  a.base == 0 ? fmt::format("array '{}' is", a.name) : "the arrays are", kMaxRunDram));
    State<Value> s;
    s.regs.assign(static_cast<size_t>(p.scalar_registers), Value{});
    s.written.assign(static_cast<size_t>(p.scalar_registers), 0);
    s.dram.assign(static_cast<size_t>(p.dram_size), Value{});
    s.present.assign(static_cast<size_t>(p.dram_size), 0);
    s.reads.assign(static_cast<size_t>(p.dram_size), 0);
    s.executed.assign(p.code.size(), 0);
    s.work.assign(p.code.size(), 0);
    s.tiles.assign(static_cast<size_t>(p.bank_elements), Value{});
    s.tile_rows.assign(p.banks.size(), 0);
    s.tile_cols.assign(p.banks.size(), 0);
    s.tile_touched.assign(static_cast<size_t>(p.bank_elements), 0);
    for (const auto& a : p.arrays)
        if (a.starts_filled()) std::fill(s.present.begin() + a.base, s.present.begin() + a.base + a.size, std::uint8_t{1});
    return s;
}

Tensor region(const Program& p, const State<double>& s, int array) {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(array)];
    Tensor t;
    t.shape = a.dims;
    t.data.assign(s.dram.begin() + a.base, s.dram.begin() + a.base + a.size);
    return t;
}

// In declaration order, so a reference fill finds its arguments already filled.
void load_inputs(const Program& p, State<double>& s) {
    for (const auto& a : p.arrays) {
        if (!a.starts_filled()) continue;
        std::vector<double> values;
        if (a.fill.kind == ast::Fill::Kind::Reference) {
            std::vector<Tensor> args;
            for (int arg : a.fill_args) args.push_back(region(p, s, arg));
            values = reference(a.fill.function, args).data;
        } else {
            values = initial_values(a);
        }
        std::copy(values.begin(), values.end(), s.dram.begin() + a.base);
    }
}

std::int64_t offset_of(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& prefix, std::int64_t& count) {
    std::int64_t offset = 0, stride = 1;
    count = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        if (d < prefix.size())
            offset += prefix[d] * stride;
        else
            count *= shape[d];
        stride *= shape[d];
    }
    return offset;
}

CheckResult evaluate(const Program& p, const State<double>& s, const CheckSpec& spec) {
    std::vector<Tensor> args;
    for (int a : spec.args) args.push_back(region(p, s, a));
    Tensor ref = reference(spec.function, args);
    const ArrayInfo& target = p.arrays[static_cast<size_t>(spec.target)];
    std::int64_t count = 0;
    std::int64_t out_at = target.base + offset_of(target.dims, spec.target_index, count);
    std::int64_t ref_count = 0;
    std::int64_t ref_at = offset_of(ref.shape, spec.reference_index, ref_count);
    CheckResult r;
    r.elements = count;
    r.ok = true;
    double peak = 0;
    for (std::int64_t i = 0; i < count; ++i) peak = std::max(peak, std::abs(ref.data[static_cast<size_t>(ref_at + i)]));
    for (std::int64_t i = 0; i < count; ++i) {
        std::int64_t at = out_at + i;
        double want = ref.data[static_cast<size_t>(ref_at + i)];
        auto name = [&] { return p.element_ref(spec.target, at - target.base); };
        if (!s.present[static_cast<size_t>(at)]) {
            if (r.ok) r.first_wrong = fmt::format("{} was never written", name());
            r.ok = false;
            r.max_abs_err = r.max_rel_err = INFINITY;
            continue;
        }
        double got = s.dram[static_cast<size_t>(at)];
        double err = std::abs(got - want);
        if (std::isnan(err)) err = INFINITY;
        double rel = want != 0 ? err / std::abs(want) : (err == 0 ? 0 : INFINITY);
        r.max_abs_err = std::max(r.max_abs_err, err);
        r.max_rel_err = std::max(r.max_rel_err, rel);
        // Relative to the element, or for elements near zero to a thousandth of the largest.
        if (!(err <= spec.tolerance * std::max(std::abs(want), 1e-3 * peak))) {
            if (r.ok) r.first_wrong = fmt::format("{} = {:.17g} but the reference is {:.17g}", name(), got, want);
            r.ok = false;
        }
    }
    return r;
}

}  // namespace

CounterValue Counters::value(const CounterRef& c) const {
    auto count = [](std::uint64_t n) { return CounterValue{n, 0, false}; };
    switch (c.kind) {
        case CounterKind::Cycles: return count(cycles);
        case CounterKind::Instructions: return count(instructions);
        case CounterKind::Opcode: return count(by_opcode[static_cast<size_t>(c.op)]);
        case CounterKind::Work: return count(work_by_opcode[static_cast<size_t>(c.op)]);
        case CounterKind::Reads: return count(dram_reads);
        case CounterKind::Writes: return count(dram_writes);
        case CounterKind::Traffic: return count(dram_reads + dram_writes);
        case CounterKind::ArrayReads: return count(arrays[static_cast<size_t>(c.array)].reads);
        case CounterKind::ArrayWrites: return count(arrays[static_cast<size_t>(c.array)].writes);
        case CounterKind::Registers: return count(static_cast<std::uint64_t>(peak_registers));
        case CounterKind::Compute: return count(compute_ops);
        case CounterKind::ArithmeticIntensity: return CounterValue{0, arithmetic_intensity(), true};
    }
    return {};
}

bool RunResult::checks_ok() const {
    for (const auto& c : checks)
        if (!c.ok) return false;
    return true;
}

std::vector<double> RunResult::array_values(const Program& p, int array) const {
    const ArrayInfo& a = p.arrays[static_cast<size_t>(array)];
    std::vector<double> out(static_cast<size_t>(a.size));
    for (std::int64_t i = 0; i < a.size; ++i) {
        auto at = static_cast<size_t>(a.base + i);
        out[static_cast<size_t>(i)] = present[at] ? dram[at] : NAN;
    }
    return out;
}

bool RunResult::expects_ok() const {
    for (const auto& e : expects)
        if (!e.ok) return false;
    return true;
}

RunResult run(const Program& p, const RunOptions& options) {
    auto state = fresh_state<double>(p);
    load_inputs(p, state);
    NumericDomain dom;
    NoTrace tracer;
    auto start = std::chrono::steady_clock::now();
    execute(p, dom, state, tracer, options.max_steps);
    auto stop = std::chrono::steady_clock::now();
    RunResult r;
    r.seconds = std::chrono::duration<double>(stop - start).count();
    r.counters = tally(p, state);
    for (const auto& spec : p.checks) r.checks.push_back(evaluate(p, state, spec));
    for (const auto& e : p.expects) {
        std::uint64_t actual = r.counters.value(e.counter).count;
        r.expects.push_back({actual, e.holds(actual)});
    }
    r.dram = std::move(state.dram);
    r.present = std::move(state.present);
    return r;
}

namespace {
// Runs with every step recorded; a fault ends the run and is kept with the rows before it.
template <class Domain>
void record(const Program& p, Domain& dom, State<typename Domain::Value>& state, Trace& t, const RunOptions& options) {
    Recorder<typename Domain::Value> recorder{&t.steps, nullptr};
    if constexpr (std::is_same_v<typename Domain::Value, double>)
        recorder.values = &t.tile_numbers;
    else
        recorder.values = &t.tile_symbols;
    try {
        execute(p, dom, state, recorder, options.max_steps);
    } catch (const ToyError& e) {
        t.error = e;
    }
    t.counters = tally(p, state);
    for (int r = 0; r < p.scalar_registers; ++r)
        if (state.written[static_cast<size_t>(r)]) t.registers_used.push_back(r);
}
}  // namespace

Trace trace(const Program& p, bool symbolic, const RunOptions& options) {
    Trace t;
    t.symbolic = symbolic;
    if (symbolic) {
        auto state = fresh_state<std::uint32_t>(p);
        for (size_t a = 0; a < p.arrays.size(); ++a) {
            const ArrayInfo& info = p.arrays[a];
            if (info.role != ast::Role::Input && info.fill.kind == ast::Fill::Kind::Constant) {
                std::uint32_t value = t.arena.constant(info.fill.values[0]);
                std::fill_n(state.dram.begin() + info.base, info.size, value);
            }
            if (info.role != ast::Role::Input) continue;
            for (std::int64_t i = 0; i < info.size; ++i)
                state.dram[static_cast<size_t>(info.base + i)] = t.arena.leaf(p.element_symbol(static_cast<int>(a), i));
        }
        SymbolicDomain dom{&t.arena};
        record(p, dom, state, t, options);
    } else {
        auto state = fresh_state<double>(p);
        load_inputs(p, state);
        NumericDomain dom;
        record(p, dom, state, t, options);
    }
    return t;
}

}  // namespace toysim
