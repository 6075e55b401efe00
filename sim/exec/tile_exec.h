// The executor of tile instructions: one template for the numeric and symbolic domains,
// included only by sim/exec/machine.cpp. Listening adds the event capture; a plain run is
// compiled without it.
#pragma once

#include <fmt/format.h>

#include "sim/exec/event.h"
#include "sim/exec/faults.h"
#include "sim/exec/links.h"
#include "sim/exec/parallel.h"
#include "sim/exec/state.h"
#include "sim/exec/symbolic.h"

namespace toysim {

// A rows×cols block of values: element (i, j) is data[i·rs + j·cs]. A transposed tile swaps
// the strides; a broadcast dimension has stride 0.
template <class V>
struct View {
    V* data;
    std::int64_t rows, cols, rs, cs;
    V& at(std::int64_t i, std::int64_t j) const { return data[i * rs + j * cs]; }
};

// The value a Memory row writes, by its semantics in the ISA table: a is the register's value,
// b the element's old one (read only by a row that accumulates).
template <class Domain, class V>
V stored_value(Op op, Domain& D, V a, [[maybe_unused]] V b) {
    switch (op) {
#define TOYSIM_STORED_Memory(NAME, SEM) \
    case Op::NAME: return SEM;
#define TOYSIM_STORED_Move(NAME, SEM)
#define TOYSIM_STORED_Compute(NAME, SEM)
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) TOYSIM_STORED_##CLASS(NAME, SEM)
        TOYSIM_OPCODES(X)
#undef X
#undef TOYSIM_STORED_Memory
#undef TOYSIM_STORED_Move
#undef TOYSIM_STORED_Compute
        default: return a;
    }
}

// A slice moved inside a parallel loop: every element is checked for a race first (the
// instruction faults before anything changes), then recorded as this iteration's.
template <bool Listening, class V>
void race_slice(const Program& p, MachineState<V>& s, Event<V>* ev, const MemRef& m, const SliceGeometry& g, AccessKind kind,
                std::int32_t pc, const std::int64_t* vars) {
    if (!m.race_tracked) return;  // nothing writes its array in a parallel loop: it cannot race
    for (std::int64_t i = 0; i < g.rows; ++i)
        for (std::int64_t j = 0; j < g.cols; ++j) {
            std::int64_t at = g.address + i * g.row_stride + j * g.col_stride;
            race_check(p, s, race_cell(s, m, at), at, pc, vars, kind);
        }
    for (std::int64_t i = 0; i < g.rows; ++i)
        for (std::int64_t j = 0; j < g.cols; ++j) {
            RaceCell& cell = race_cell(s, m, g.address + i * g.row_stride + j * g.col_stride);
            if constexpr (Listening) ev->race_old.push_back(cell);
            race_record(s, cell, pc, kind);
        }
}

// One tile instruction. Shapes follow numpy: element-wise operations broadcast a dimension of
// 1 (a column of row maxima against a tile); MAC/MAC_Z of two tiles is a matrix product;
// ROWMAX/ROWSUM reduce each row to one column. Returns the units of work (elements moved or
// produced, multiply-adds, or elements reduced), which the cost model charges.
template <class Domain, bool Listening>
std::uint64_t execute_tile(const Program& p, Domain& D, MachineState<typename Domain::Value>& s, std::vector<typename Domain::Value>& scratch_area,
                           Event<typename Domain::Value>* ev, std::int32_t pc, const std::int64_t* vars) {
    using V = typename Domain::Value;
    const TileInst& t = p.tile_insts[static_cast<size_t>(p.code[static_cast<size_t>(pc)].mem)];
    const OpInfo& op = info(t.op);
    auto source = [&](int k) -> View<V> {
        const TileOperand& a = t.args[static_cast<size_t>(k)];
        if (a.kind == TileOperand::Kind::Register) {
            std::int32_t r = resolve_register(p, pc, a.index, vars);
            bool shape_only = op.shape == OpShape::Fill;  // SET reads only the rows of its source: a scalar's is 1
            if (!shape_only && !s.written[static_cast<size_t>(r)]) fail_unwritten_register(p, pc, k, r, vars);
            return {&s.regs[static_cast<size_t>(r)], 1, 1, 0, 0};
        }
        const Tile& b = p.tiles[static_cast<size_t>(a.index)];
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
        return fmt::format("tile '{}'{}", p.tiles[static_cast<size_t>(a.index)].name, a.transposed ? ".T" : "");
    };
    const int dest = t.count - 1;
    // Gives the destination its new shape; it must fit the tile's registers. A listener is
    // told what it held before.
    auto destination = [&](std::int64_t rows, std::int64_t cols) -> View<V> {
        const TileOperand& d = t.args[static_cast<size_t>(dest)];
        if (d.kind == TileOperand::Kind::Register) {
            std::int32_t r = resolve_register(p, pc, d.index, vars);
            if (rows != 1 || cols != 1)
                fail_tile(p, pc, dest, fmt::format("{}: the result is {} but R{} holds one number", op.mnemonic, shape_text(rows, cols), r), vars);
            if constexpr (Listening) {
                ev->reg = r;
                ev->reg_old = s.regs[static_cast<size_t>(r)];
                ev->reg_was_written = s.written[static_cast<size_t>(r)];
            }
            s.written[static_cast<size_t>(r)] = 1;
            return {&s.regs[static_cast<size_t>(r)], 1, 1, 0, 0};
        }
        const Tile& b = p.tiles[static_cast<size_t>(d.index)];
        if (rows > b.rows || cols > b.cols)
            fail_tile(p, pc, dest, fmt::format("{}: the result is {} but tile '{}' holds at most {}", op.mnemonic,
                                                          shape_text(rows, cols), b.name, shape_text(b.rows, b.cols)), vars);
        if constexpr (Listening) {
            ev->tile = d.index;
            ev->old_rows = s.tile_rows[static_cast<size_t>(d.index)];
            ev->old_cols = s.tile_cols[static_cast<size_t>(d.index)];
            ev->rows = rows;
            ev->cols = cols;
            for (std::int64_t i = 0; i < rows; ++i)
                for (std::int64_t j = 0; j < cols; ++j) {
                    auto at = static_cast<size_t>(b.base + i * b.cols + j);
                    ev->tile_old.push_back(s.tiles[at]);
                    ev->tile_was_touched.push_back(s.tile_touched[at]);
                }
        }
        s.tile_rows[static_cast<size_t>(d.index)] = rows;
        s.tile_cols[static_cast<size_t>(d.index)] = cols;
        for (std::int64_t i = 0; i < rows; ++i) std::fill_n(s.tile_touched.begin() + b.base + i * b.cols, cols, std::uint8_t{1});
        return {s.tiles.data() + b.base, rows, cols, b.cols, 1};
    };
    auto same_tile = [&](int k, int other) {
        const TileOperand &a = t.args[static_cast<size_t>(k)], &b = t.args[static_cast<size_t>(other)];
        return a.kind == TileOperand::Kind::Tile && b.kind == TileOperand::Kind::Tile && a.index == b.index;
    };
    // Where a result that overwrites a source it still reads is built before it is copied in.
    auto scratch = [&](std::int64_t rows, std::int64_t cols) -> View<V> {
        scratch_area.resize(static_cast<size_t>(rows * cols));
        return {scratch_area.data(), rows, cols, cols, 1};
    };
    // The new values, for a listener.
    auto finish = [&](View<V> out, View<V> built) {
        if (built.data != out.data)
            for (std::int64_t i = 0; i < out.rows; ++i)
                for (std::int64_t j = 0; j < out.cols; ++j) out.at(i, j) = built.at(i, j);
        if constexpr (Listening) {
            if (ev->tile >= 0) {
                for (std::int64_t i = 0; i < out.rows; ++i)
                    for (std::int64_t j = 0; j < out.cols; ++j) ev->tile_new.push_back(out.at(i, j));
            } else {
                ev->reg_new = out.at(0, 0);
            }
        }
    };
    // Numpy broadcasting of a source to rows×cols: a dimension of 1 repeats (stride 0).
    auto broadcast = [](View<V>& v, std::int64_t rows, std::int64_t cols) {
        if ((v.rows != rows && v.rows != 1) || (v.cols != cols && v.cols != 1)) return false;
        if (v.rows == 1) v.rs = 0;
        if (v.cols == 1) v.cs = 0;
        return true;
    };

    if (op.shape == OpShape::Memory) {
        const MemRef& m = p.mems[static_cast<size_t>(t.mem)];
        SliceGeometry g = slice_geometry(p, pc, m, vars);
        if (t.column) {
            std::swap(g.rows, g.cols);
            std::swap(g.row_stride, g.col_stride);
        }
        const AccessKind kind = access_kind(t.op);
        if (p.devices) check_owner(p, s, pc, m, g.address, g.last(), kind != AccessKind::Read, vars);
        if constexpr (Listening) ev->accesses.push_back({m.array, kind, g.address, g.rows, g.cols, g.row_stride, g.col_stride});
        // Before anything changes: an element read must hold a value, and no access may race.
        if (reads_dram(t.op) && !m.always_present)
            for (std::int64_t i = 0; i < g.rows; ++i)
                for (std::int64_t j = 0; j < g.cols; ++j)
                    if (!s.present[static_cast<size_t>(g.address + i * g.row_stride + j * g.col_stride)]) fail_unwritten_element(p, pc, m, vars);
        if (t.op == Op::LOAD) {
            if (s.parallel.iteration != 0) race_slice<Listening>(p, s, ev, m, g, AccessKind::Read, pc, vars);
            View<V> out = destination(g.rows, g.cols);
            for (std::int64_t i = 0; i < g.rows; ++i)
                for (std::int64_t j = 0; j < g.cols; ++j) {
                    std::int64_t at = g.address + i * g.row_stride + j * g.col_stride;
                    ++s.reads[static_cast<size_t>(at)];
                    if constexpr (Listening && std::is_same_v<V, std::uint32_t>)
                        if (s.dram[static_cast<size_t>(at)] == kUnnamedInput) ev->named_inputs.push_back(at);
                    out.at(i, j) = D.load(s.dram[static_cast<size_t>(at)], at);
                }
            finish(out, out);
        } else {
            View<V> in = source(0);
            if (in.rows != g.rows || in.cols != g.cols)
                fail_tile(p, pc, 0, fmt::format("{}: {} is {} but the slice {} is {}", op.mnemonic, name_of(0), shape_text(in.rows, in.cols),
                                                slice_text(p, m, vars), shape_text(g.rows, g.cols)), vars);
            if (s.parallel.iteration != 0)
                race_slice<Listening>(p, s, ev, m, g, kind, pc, vars);
            for (std::int64_t i = 0; i < g.rows; ++i)
                for (std::int64_t j = 0; j < g.cols; ++j) {
                    auto at = static_cast<size_t>(g.address + i * g.row_stride + j * g.col_stride);
                    V v = in.at(i, j);
                    if (kind == AccessKind::Accumulate) {
                        ++s.reads[at];
                        v = stored_value(t.op, D, v, D.load(s.dram[at], static_cast<std::int64_t>(at)));
                    }
                    if constexpr (Listening) {
                        ev->dram_old.push_back(s.dram[at]);
                        ev->dram_was_present.push_back(s.present[at]);
                        ev->dram_new.push_back(v);
                    }
                    s.dram[at] = v;
                    s.present[at] = 1;
                    D.stored(v, static_cast<std::int64_t>(at));
                }
        }
        return static_cast<std::uint64_t>(g.rows * g.cols);
    }

    if (op.shape == OpShape::RowReduce) {
        View<V> src = source(0);
        View<V> out = destination(src.rows, 1);
        // Fold the row's semantics over each row: a is the running value, b the next element.
        auto fold = [&](auto step) {
            for (std::int64_t i = 0; i < src.rows; ++i) {
                V acc = src.at(i, 0);
                for (std::int64_t j = 1; j < src.cols; ++j) acc = step(acc, src.at(i, j));
                out.at(i, 0) = acc;  // row i is read in full before its result lands on it
            }
        };
        switch (t.op) {
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM)                                    \
    case Op::NAME:                                                                                         \
        if constexpr (OpShape::SHAPE == OpShape::RowReduce) fold([&]([[maybe_unused]] V a, [[maybe_unused]] V b) -> V { \
            [[maybe_unused]] V c = a;                                                                      \
            [[maybe_unused]] double imm = 0;                                                               \
            return SEM;                                                                                    \
        });                                                                                                \
        break;
            TOYSIM_OPCODES(X)
#undef X
        }
        finish(out, out);
        return static_cast<std::uint64_t>(src.rows * src.cols);
    }

    bool matmul = op.shape == OpShape::Product && t.args[0].kind == TileOperand::Kind::Tile &&
                  t.args[1].kind == TileOperand::Kind::Tile;
    if (matmul) {
        View<V> a = source(0), b = source(1);
        if (a.cols != b.rows)
            fail_tile(p, pc, 0, fmt::format("{}: {} is {} and {} is {}: a matrix product needs the first's columns to equal the "
                                            "second's rows", op.mnemonic, name_of(0), shape_text(a.rows, a.cols), name_of(1),
                                            shape_text(b.rows, b.cols)), vars);
        std::int64_t rows = a.rows, cols = b.cols, inner = a.cols;
        // A product with a third source (MAC) accumulates onto it; without (MAC_Z) starts at zero.
        const bool accumulates = op.register_sources() == 3;
        View<V> c{};
        if (accumulates) {
            c = source(2);
            if (!broadcast(c, rows, cols))
                fail_tile(p, pc, 2, fmt::format("{}: the product is {} but {} is {}", op.mnemonic, shape_text(rows, cols), name_of(2),
                                                shape_text(c.rows, c.cols)), vars);
        }
        View<V> out = destination(rows, cols);
        View<V> acc = same_tile(dest, 0) || same_tile(dest, 1) ? scratch(rows, cols) : out;
        // Row i of the result accumulates a(i, k)·row k of b for each k: contiguous rows.
        std::int64_t k0 = 0;
        if (accumulates) {
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
        if (op.shape == OpShape::Fill) break;  // the source only lends its rows
        rows = std::max(rows, in[k].rows);
        cols = std::max(cols, in[k].cols);
    }
    if (op.shape == OpShape::Fill) {
        const TileOperand& d = t.args[static_cast<size_t>(dest)];
        rows = in[0].rows;
        cols = d.kind == TileOperand::Kind::Tile ? p.tiles[static_cast<size_t>(d.index)].cols : 1;
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
        if (op.shape == OpShape::Mask) {  // the semantics above the diagonal, a copy on and below it
            for (std::int64_t i = 0; i < rows; ++i)
                for (std::int64_t j = 0; j < cols; ++j) {
                    V a = in[0].at(i, j);
                    built.at(i, j) = j <= i ? a : semantics(a, a, a);
                }
            return;
        }
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j) built.at(i, j) = semantics(in[0].at(i, j), in[1].at(i, j), in[2].at(i, j));
    };
    switch (t.op) {
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) \
    case Op::NAME: apply([&]([[maybe_unused]] V a, [[maybe_unused]] V b, [[maybe_unused]] V c) -> V { return SEM; }); break;
        TOYSIM_OPCODES(X)
#undef X
    }
    finish(out, built);
    return static_cast<std::uint64_t>(rows * cols);
}

}  // namespace toysim
