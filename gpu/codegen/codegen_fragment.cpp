// Tiles in registers, in the tensor cores' fragment layout: where a block kernel's tiles have
// one shape the generator can prove (every slice that fills them whole, never clipped) and are
// used only in ways the layout serves, they leave shared memory for the registers of the warps
// that own their rows, as FlashAttention-2 keeps S, P and O (and Triton chooses a layout per
// value). A product of such a tile by a tile in shared memory runs on mma.sync (wgmma on
// Hopper, where the tile in shared memory is in the 128-byte swizzle: codegen_hopper.cpp).
//
// The layout (m16n8k16's accumulator): a tile of R rows and C columns is R/128 blocks of 16
// rows per warp (warp w owns blocks w, w + 8, ...) by C/8 blocks of 8 columns; lane 4g + t
// holds rows g and g + 8 of its block, columns 2t and 2t + 1 of each column block. A [R][1]
// tile (a row statistic) holds rows g and g + 8, the same in the 4 lanes that share them. So:
//   - element-wise instructions, masks and fills are a thread's own registers;
//   - a row reduction is the thread's columns, then two shuffles within its 4 lanes;
//   - two adjacent column blocks of a result are, converted, the a operand of the next
//     product (k = 16): P feeds P·V without a trip through shared memory;
//   - LOAD and STORE move a thread's own elements between DRAM and its registers.
// Nothing about a tile in registers is checked at run time: its shape is proven here, and an
// instruction that could fault keeps its tiles in shared memory, where the checks are.
#include <fmt/format.h>

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/codegen_emit.h"
#include "sim/lower/disasm.h"

namespace toysim::gpu {

namespace {

using Shape2 = std::pair<std::int64_t, std::int64_t>;  // rows, columns
constexpr std::int64_t kUnknown = -1;

bool fits_broadcast(Shape2 s, Shape2 to) { return (s.first == to.first || s.first == 1) && (s.second == to.second || s.second == 1); }

}  // namespace

// The extents of a slice when they are numbers: constant widths, never clipped at the array's
// end, starts proven inside it. Otherwise nullopt (the slice is checked at run time).
std::optional<Shape2> KernelEmitter::static_slice(const TileInst& t, const std::vector<integer::Interval>& ranges) const {
    const MemRef& m = p_.mems[static_cast<size_t>(t.mem)];
    const ArrayInfo& a = p_.arrays[static_cast<size_t>(m.array)];
    std::vector<std::int64_t> extent;
    for (size_t d = 0; d < m.subscripts.size(); ++d) {
        const SliceDimension dim = slice_dimension(m, a, d, ranges.data());
        // (Unlike the run-time path, a start whose loop never runs proves nothing here.)
        if (!dim.start_inside || !(m.bounds_proven || (dim.start && !dim.start->empty()))) return std::nullopt;
        if (!m.is_range[d]) continue;
        if (!dim.width.is_constant() || dim.width.constant <= 0 || !dim.never_clipped) return std::nullopt;
        extent.push_back(dim.width.constant);
    }
    Shape2 s{1, 1};
    if (extent.size() == 2) s = {extent[0], extent[1]};
    else if (extent.size() == 1) s = {1, extent[0]};
    if (t.column) std::swap(s.first, s.second);
    return s;
}

// Which tiles of the kernel [first, last) live in registers (fragment_), and every tile's one
// shape where it has one (static_shape_).
void KernelEmitter::plan_fragments(std::int32_t first, std::int32_t last) {
    const size_t tiles = p_.tiles.size();
    fragment_.assign(tiles, false);
    static_shape_.assign(tiles, Shape2{kUnknown, kUnknown});
    if (per_thread_ || !tensor_cores_) return;

    // Each tile's shape, if every write gives it the same one and every read comes after a
    // write on every path. Walked in program order (there are no branches): what a loop that
    // may run zero times writes is not surely written after it, nor in its body before the
    // write (the first iteration).
    std::vector<integer::Interval> ranges = slot_range_;
    std::vector<bool> varies(tiles, false), written(tiles, false), surely(tiles, false);
    std::vector<std::pair<bool, std::vector<bool>>> open;  // per open loop: it always runs; what was surely written before it
    auto shape_of = [&](const TileOperand& a) -> std::optional<Shape2> {
        if (a.kind != TileOperand::Kind::Tile) return Shape2{1, 1};
        const size_t i = static_cast<size_t>(a.index);
        if (!surely[i]) varies[i] = true;  // maybe read before it is written: the run-time check stays
        if (!written[i] || varies[i]) return std::nullopt;
        Shape2 s = static_shape_[i];
        if (a.transposed) std::swap(s.first, s.second);
        return s;
    };
    auto write = [&](const TileOperand& d, std::optional<Shape2> s) {
        if (d.kind != TileOperand::Kind::Tile) return;
        const size_t i = static_cast<size_t>(d.index);
        const Tile& tile = p_.tiles[i];
        if (!s || s->first > tile.rows || s->second > tile.cols || (written[i] && static_shape_[i] != *s)) varies[i] = true;
        if (!written[i] && s) static_shape_[i] = *s;
        written[i] = surely[i] = true;
    };
    std::vector<std::int32_t> product_pcs;
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code == Code::LoopBegin) {
            const LoopInfo& l = p_.loops[static_cast<size_t>(in.loop)];
            auto lo = l.lo.range(ranges.data()), hi = l.hi.range(ranges.data());
            open.push_back({lo && hi && !lo->empty() && !hi->empty() && hi->lo > lo->hi, surely});
            ranges[static_cast<size_t>(l.slot)] = loop_values_of(l, ranges.data());
            continue;
        }
        if (in.code == Code::LoopEnd) {
            if (!open.back().first) surely = open.back().second;
            open.pop_back();
            continue;
        }
        if (in.code != Code::Tile) continue;
        const TileInst& t = p_.tile_insts[static_cast<size_t>(in.mem)];
        const OpInfo& op = info(t.op);
        const int dest = t.count - 1;
        const TileOperand& d = t.args[static_cast<size_t>(dest)];
        std::vector<std::optional<Shape2>> src;
        for (int k = 0; k < op.register_sources(); ++k) src.push_back(shape_of(t.args[static_cast<size_t>(k)]));
        auto known = [&] { return std::all_of(src.begin(), src.end(), [](const auto& s) { return s.has_value(); }); };
        switch (op.shape) {
            case OpShape::Memory:
                if (t.op == Op::LOAD) write(d, static_slice(t, ranges));
                else if (t.args[0].kind == TileOperand::Kind::Tile && (!src[0] || src[0] != static_slice(t, ranges)))
                    varies[static_cast<size_t>(t.args[0].index)] = true;  // a STORE that may fault
                break;
            case OpShape::Fill: write(d, src[0] ? std::optional<Shape2>(Shape2{src[0]->first, p_.tiles[static_cast<size_t>(d.index)].cols}) : std::nullopt); break;
            case OpShape::RowReduce: write(d, src[0] ? std::optional<Shape2>(Shape2{src[0]->first, 1}) : std::nullopt); break;
            case OpShape::Mask: write(d, src[0]); break;
            case OpShape::Product:
                if (known() && src[0]->second == src[1]->first && (src.size() < 3 || fits_broadcast(*src[2], {src[0]->first, src[1]->second})))
                    write(d, Shape2{src[0]->first, src[1]->second});
                else write(d, std::nullopt);
                product_pcs.push_back(pc);
                break;
            case OpShape::Elementwise: {
                std::optional<Shape2> out;
                if (known()) {
                    out = Shape2{1, 1};
                    for (const auto& s : src) out = Shape2{std::max(out->first, s->first), std::max(out->second, s->second)};
                    for (const auto& s : src)
                        if (!fits_broadcast(*s, *out)) out.reset();
                }
                write(d, out);
                break;
            }
        }
    }
    for (size_t i = 0; i < tiles; ++i)
        if (!written[i] || varies[i]) static_shape_[i] = {kUnknown, kUnknown};

    // Candidates: a proven shape the layout holds, and no other kernel's code wrote them.
    auto matrix = [&](size_t i) { auto [r, c] = static_shape_[i]; return r > 0 && r % fragment_rows() == 0 && c % 8 == 0; };
    auto column = [&](size_t i) { auto [r, c] = static_shape_[i]; return r > 0 && r % fragment_rows() == 0 && c == 1; };
    for (size_t i = 0; i < tiles; ++i) fragment_[i] = (matrix(i) || column(i)) && !(i < serial_writes_.tiles_written.size() && serial_writes_.tiles_written[i]);
    // A product's b (read by every warp, k along its rows or, transposed, its columns) and any
    // transposed operand stay in shared memory.
    for (std::int32_t pc : product_pcs) {
        const TileInst& t = p_.tile_insts[static_cast<size_t>(p_.code[static_cast<size_t>(pc)].mem)];
        for (int k = 0; k < t.count; ++k) {
            const TileOperand& a = t.args[static_cast<size_t>(k)];
            if (a.kind == TileOperand::Kind::Tile && (k == 1 || a.transposed)) fragment_[static_cast<size_t>(a.index)] = false;
        }
    }
    // Then drop, until none is left to drop, every tile an instruction uses in a way the layout
    // does not serve (or beside a tile that stays in shared memory).
    for (bool changed = true; changed;) {
        changed = false;
        for (std::int32_t pc = first; pc < last; ++pc) {
            if (p_.code[static_cast<size_t>(pc)].code != Code::Tile) continue;
            const TileInst& t = p_.tile_insts[static_cast<size_t>(p_.code[static_cast<size_t>(pc)].mem)];
            if (fragment_instruction(t) || !touches_fragment(t)) continue;
            for (int k = 0; k < t.count; ++k) {
                const TileOperand& a = t.args[static_cast<size_t>(k)];
                if (a.kind == TileOperand::Kind::Tile && fragment_[static_cast<size_t>(a.index)]) fragment_[static_cast<size_t>(a.index)] = false, changed = true;
            }
        }
    }
    // Worth it only for products on the tensor cores: otherwise the row-owned loops in shared
    // memory do as well.
    bool product = false;
    for (std::int32_t pc : product_pcs) {
        const TileInst& t = p_.tile_insts[static_cast<size_t>(p_.code[static_cast<size_t>(pc)].mem)];
        product = product || (touches_fragment(t) && fragment_instruction(t));
    }
    if (!product) fragment_.assign(tiles, false);

    // The b tiles of register products that only LOADs of T arrays fill: kept as T.
    stored_.assign(tiles, product);
    for (size_t i = 0; i < tiles; ++i)
        if (fragment_[i] || static_shape_[i].first < 0 || static_shape_[i].second % 8 != 0 ||
            (i < serial_writes_.tiles_written.size() && serial_writes_.tiles_written[i]))
            stored_[i] = false;
    for (std::int32_t pc = first; pc < last; ++pc) {
        if (p_.code[static_cast<size_t>(pc)].code != Code::Tile) continue;
        const TileInst& t = p_.tile_insts[static_cast<size_t>(p_.code[static_cast<size_t>(pc)].mem)];
        const bool register_product = info(t.op).shape == OpShape::Product && touches_fragment(t);
        const bool t_load = t.op == Op::LOAD && !fp32_arrays_[static_cast<size_t>(p_.mems[static_cast<size_t>(t.mem)].array)];
        for (int k = 0; k < t.count; ++k) {
            const TileOperand& a = t.args[static_cast<size_t>(k)];
            if (a.kind != TileOperand::Kind::Tile) continue;
            if (!((register_product && k == 1) || (t_load && k == 0))) stored_[static_cast<size_t>(a.index)] = false;
        }
    }
    if (product) keep_fragments_in_registers(first, last);
}

// A thread's floats of tile i in registers, as fragment_declaration declares them.
std::int64_t KernelEmitter::fragment_floats_of(size_t i) const {
    const auto [rows, cols] = static_shape_[i];
    return cols == 1 ? rows / fragment_rows() * 2 : rows / fragment_rows() * (cols / 8) * 4;
}

// The most floats of tiles in registers a thread holds at once in the kernel [first, last): the
// tiles live into or out of an instruction (read later, on some path, before being written
// again; a loop's end goes round to its body or on past it, and a loop may run no iteration).
// A tile an instruction reads for the last time is not counted beside the one it writes: the
// compiler reuses the one's registers for the other, element by element (S and P).
std::int64_t KernelEmitter::live_fragment_floats(std::int32_t first, std::int32_t last) const {
    const size_t tiles = fragment_.size(), n = static_cast<size_t>(last - first);
    std::vector<std::vector<bool>> use(n, std::vector<bool>(tiles, false)), def = use, live_in = use;
    std::vector<std::vector<size_t>> next(n);  // successors, as offsets from first (n: the kernel's end)
    std::vector<size_t> open;
    for (size_t k = 0; k < n; ++k) {
        const Inst& in = p_.code[static_cast<size_t>(first) + k];
        next[k].push_back(k + 1);
        if (in.code == Code::LoopBegin) open.push_back(k);
        if (in.code == Code::LoopEnd && !open.empty()) {
            next[open.back()].push_back(k + 1);  // no iteration
            next[k].push_back(open.back() + 1);  // the next iteration
            open.pop_back();
        }
        if (in.code != Code::Tile) continue;
        const TileInst& t = p_.tile_insts[static_cast<size_t>(in.mem)];
        const OpInfo& op = info(t.op);
        for (int a = 0; a < t.count; ++a) {
            const TileOperand& x = t.args[static_cast<size_t>(a)];
            if (x.kind != TileOperand::Kind::Tile || !fragment_[static_cast<size_t>(x.index)]) continue;
            const bool read = op.shape == OpShape::Memory ? t.op != Op::LOAD : a < t.count - 1 && op.shape != OpShape::Fill;
            (read ? use : def)[k][static_cast<size_t>(x.index)] = true;
        }
    }
    auto floats = [&](const std::vector<bool>& live) {
        std::int64_t sum = 0;
        for (size_t i = 0; i < tiles; ++i) sum += live[i] ? fragment_floats_of(i) : 0;
        return sum;
    };
    std::vector<std::vector<bool>> live_out = live_in;
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t k = n; k-- > 0;) {
            std::vector<bool> out(tiles, false), in(tiles, false);
            for (size_t s : next[k])
                for (size_t i = 0; s < n && i < tiles; ++i) out[i] = out[i] || live_in[s][i];
            for (size_t i = 0; i < tiles; ++i) in[i] = use[k][i] || (out[i] && !def[k][i]);
            if (in != live_in[k] || out != live_out[k]) live_in[k] = std::move(in), live_out[k] = std::move(out), changed = true;
        }
    }
    std::int64_t peak = 0;
    for (size_t k = 0; k < n; ++k) peak = std::max({peak, floats(live_in[k]), floats(live_out[k])});
    return peak;
}

// Where the tiles in registers would not fit a thread's registers at once, tiles that only
// LOADs of T arrays fill and only products read as their a (with a b kept as T) leave the
// registers for shared memory as T, read by ldmatrix at each product, the largest first:
// FlashAttention-2's Q at d = 128, as the hand-written v3 keeps it (and ptxas spills otherwise).
void KernelEmitter::keep_fragments_in_registers(std::int32_t first, std::int32_t last) {
    const size_t tiles = fragment_.size();
    shared_a_.assign(tiles, false);
    std::vector<bool> candidate(tiles, false);
    for (size_t i = 0; i < tiles; ++i) candidate[i] = fragment_[i] && static_shape_[i].second % 16 == 0;
    for (std::int32_t pc = first; pc < last; ++pc) {
        if (p_.code[static_cast<size_t>(pc)].code != Code::Tile) continue;
        const TileInst& t = p_.tile_insts[static_cast<size_t>(p_.code[static_cast<size_t>(pc)].mem)];
        const bool t_load = t.op == Op::LOAD && !fp32_arrays_[static_cast<size_t>(p_.mems[static_cast<size_t>(t.mem)].array)] &&
                            p_.mems[static_cast<size_t>(t.mem)].range_count() == 2 && !t.column;
        const bool a_of_product = info(t.op).shape == OpShape::Product && fragment_instruction(t) && is_stored(t.args[1].index);
        const bool fill = info(t.op).shape == OpShape::Fill && fragment_instruction(t);  // its source gives only its rows
        for (int k = 0; k < t.count; ++k) {
            const TileOperand& a = t.args[static_cast<size_t>(k)];
            const bool as_a = a_of_product && !a.transposed && a.index != t.args[static_cast<size_t>(t.count - 1)].index;
            if (a.kind == TileOperand::Kind::Tile && !(k == 0 && (t_load || as_a || fill))) candidate[static_cast<size_t>(a.index)] = false;
        }
    }
    std::int64_t& live = live_floats_;
    for (live = live_fragment_floats(first, last); live > kLiveFragmentFloats;) {
        size_t largest = tiles;
        for (size_t i = 0; i < tiles; ++i)
            if (candidate[i] && !shared_a_[i] && (largest == tiles || fragment_floats_of(i) > fragment_floats_of(largest))) largest = i;
        if (largest == tiles) break;
        shared_a_[largest] = stored_[largest] = true;
        fragment_[largest] = false;
        const std::int64_t before = live;
        live = live_fragment_floats(first, last);
        const Tile& tile = p_.tiles[largest];
        fragment_notes_.push_back({tile.loc, "", fmt::format("tile {} is read from shared memory at each product, not kept in registers: "
                                                              "a thread would hold {} floats of tiles in registers at once, more than the {} that "
                                                              "leave room for the rest without spilling ({} without it)",
                                                              tile.name, before, kLiveFragmentFloats, live)});
    }
    // What is left past the budget, ptxas spills: said at the largest tile in registers, which
    // smaller tiles (or more warps, each holding fewer rows) would shrink.
    if (live > kLiveFragmentFloats) {
        size_t largest = tiles;
        for (size_t i = 0; i < tiles; ++i)
            if (fragment_[i] && (largest == tiles || fragment_floats_of(i) > fragment_floats_of(largest))) largest = i;
        const Tile& tile = p_.tiles[largest];
        fragment_notes_.push_back({tile.loc, "", fmt::format("a thread holds {} floats of tiles in registers at once, more than the {} that leave room "
                                                              "for the rest: ptxas spills registers to local memory, traffic that no array counts "
                                                              "(the largest: tile {}, {} floats a thread; smaller tiles, or more warps, hold fewer)",
                                                              live, kLiveFragmentFloats, tile.name, fragment_floats_of(largest))});
    }
}

bool KernelEmitter::is_fragment(const TileOperand& a) const {
    return a.kind == TileOperand::Kind::Tile && !fragment_.empty() && fragment_[static_cast<size_t>(a.index)];
}

bool KernelEmitter::is_shared_a(const TileOperand& a) const {
    return a.kind == TileOperand::Kind::Tile && !shared_a_.empty() && shared_a_[static_cast<size_t>(a.index)];
}

bool KernelEmitter::touches_fragment(const TileInst& t) const {
    for (int k = 0; k < t.count; ++k)
        if (is_fragment(t.args[static_cast<size_t>(k)])) return true;
    return false;
}

// Whether the instruction runs on registers as a whole: every tile operand in registers (but
// a product's b, read from shared memory, and a fill's source, which gives only its rows),
// shapes the layout serves.
bool KernelEmitter::fragment_instruction(const TileInst& t) const {
    const OpInfo& op = info(t.op);
    const int dest = t.count - 1;
    const TileOperand& d = t.args[static_cast<size_t>(dest)];
    auto shape = [&](const TileOperand& a) { return static_shape_[static_cast<size_t>(a.index)]; };
    switch (op.shape) {
        case OpShape::Memory: {
            if (t.op == Op::STORE_ADD || !is_fragment(t.args[0])) return false;
            const MemRef& m = p_.mems[static_cast<size_t>(t.mem)];
            return m.range_count() == (shape(t.args[0]).second == 1 ? 1 : 2);
        }
        case OpShape::Fill: return is_fragment(d) && t.args[0].kind == TileOperand::Kind::Tile && shape(t.args[0]).first > 0;
        case OpShape::RowReduce: return is_fragment(d) && is_fragment(t.args[0]) && shape(t.args[0]).second > 1 && !t.args[0].transposed;
        case OpShape::Mask:  // of a matrix (a column's mask keeps the shared-memory loop)
            return is_fragment(d) && is_fragment(t.args[0]) && !t.args[0].transposed && shape(d) == shape(t.args[0]) && shape(d).second > 1;
        case OpShape::Product: {
            const TileOperand &a = t.args[0], &b = t.args[1];
            if (!(is_fragment(a) || is_shared_a(a)) || !is_fragment(d) || a.transposed || b.kind != TileOperand::Kind::Tile || is_fragment(b)) return false;
            const Shape2 bs = shape(b);
            const std::int64_t inner = shape(a).second, cols = b.transposed ? bs.first : bs.second;
            if (inner % 16 != 0 || (b.transposed ? bs.second : bs.first) != inner || shape(d) != Shape2{shape(a).first, cols}) return false;
            if (b.transposed && std::stoll(stride(b.index)) % 2 != 0) return false;  // its pairs read as float2
            return op.register_sources() < 3 || (is_fragment(t.args[2]) && !t.args[2].transposed && shape(t.args[2]) == shape(d));
        }
        case OpShape::Elementwise: {
            if (!is_fragment(d)) return false;
            for (int k = 0; k < op.register_sources(); ++k) {
                const TileOperand& a = t.args[static_cast<size_t>(k)];
                if (!is_fragment(a) || a.transposed) return false;
                const Shape2 s = shape(a);
                if (s != shape(d) && !(s.second == 1 && s.first == shape(d).first)) return false;
            }
            return true;
        }
    }
    return false;
}

std::int64_t KernelEmitter::fragment_floats() const {
    std::int64_t floats = 0;
    for (size_t t = 0; t < fragment_.size(); ++t) floats += fragment_[t] ? fragment_floats_of(t) : 0;
    return floats;
}

// A tile in registers as the kernel declares it.
std::string KernelEmitter::fragment_declaration(size_t tile) const {
    const Tile& t = p_.tiles[tile];
    const auto [rows, cols] = static_shape_[tile];
    const std::string& n = tile_name_[tile];
    if (cols == 1)
        return fmt::format("    float {}[{}][2];  // line {}: tile {}[{}][{}], {}×1: in registers, rows g and g+8 of each warp's 16-row blocks\n", n,
                           rows / fragment_rows(), t.loc.line, t.name, t.rows, t.cols, rows);
    return fmt::format("    float {}[{}][{}][4];  // line {}: tile {}[{}][{}], {}×{}: in registers, the tensor cores' fragments of each warp's rows\n", n,
                       rows / fragment_rows(), cols / 8, t.loc.line, t.name, t.rows, t.cols, rows, cols);
}

// The EXP at pc + 1 that takes the SUB at pc's result, both on tiles in registers of one shape:
// the two run as one, e^(a − b) (the prelude's fast_exp_diff), and the SUB's own result is still
// written (the compiler drops it where nothing reads it). nullptr where there is none.
const TileInst* KernelEmitter::exp_after_sub(std::int32_t pc, const TileInst& sub) const {
    if (sub.op != Op::SUB || static_cast<size_t>(pc + 1) >= p_.code.size()) return nullptr;
    const Inst& next = p_.code[static_cast<size_t>(pc + 1)];
    if (next.code != Code::Tile) return nullptr;
    const TileInst& e = p_.tile_insts[static_cast<size_t>(next.mem)];
    const TileOperand &from = e.args[0], &to = e.args[1], &result = sub.args[2];
    if (e.op != Op::EXP || from.kind != TileOperand::Kind::Tile || from.index != result.index || from.transposed) return nullptr;
    if (to.kind != TileOperand::Kind::Tile || !is_fragment(to) || !fragment_instruction(e)) return nullptr;
    if (static_shape_[static_cast<size_t>(to.index)] != static_shape_[static_cast<size_t>(result.index)]) return nullptr;
    return &e;
}

// An instruction on tiles in registers (fragment_instruction holds).
void KernelEmitter::fragment_tile(std::int32_t pc, const TileInst& t) {
    if (pc == fused_exp_pc_) {
        fused_exp_pc_ = -1;
        line("// (taken with the SUB before it: e^(a − b) in one exp2)");
        return;
    }
    const OpInfo& op = info(t.op);
    const int dest = t.count - 1;
    const TileOperand& d = t.args[static_cast<size_t>(dest)];
    const Shape2 ds = static_shape_[static_cast<size_t>(d.index)];
    const std::int64_t mt = ds.first / fragment_rows();
    const std::string& out = tile_name_[static_cast<size_t>(d.index)];
    auto name = [&](int k) -> const std::string& { return tile_name_[static_cast<size_t>(t.args[static_cast<size_t>(k)].index)]; };
    auto cols_of = [&](int k) { return static_shape_[static_cast<size_t>(t.args[static_cast<size_t>(k)].index)].second; };
    if (op.shape == OpShape::Product) {
        const std::int64_t inner = cols_of(0), nb = ds.second / 8;
        line(fmt::format("float acc[{}][{}][4];", mt, nb));
        if (op.register_sources() == 3) line(fmt::format("FRAG_FOR({}, {}) acc[mi][cb][e] = {}[mi][cb][e];", mt, nb, name(2)));
        else line(fmt::format("FRAG_FOR({}, {}) acc[mi][cb][e] = 0.f;", mt, nb));
        line(fragment_product(t, mt, nb, inner));
        line(fmt::format("FRAG_FOR({}, {}) {}[mi][cb][e] = acc[mi][cb][e];", mt, nb, out));
        return;
    }
    if (op.shape == OpShape::RowReduce) {
        line(fmt::format("frag_rowreduce({}, {}, [](float a, float b) {{ return {}; }});", out, name(0), device_semantics(t.op)));
        return;
    }
    // Element-wise, a mask, a fill: each thread its own elements; a [R][1] source is its row's value.
    const bool column = ds.second == 1;
    std::string reads;
    for (int k = 0; k < op.register_sources() && op.shape != OpShape::Fill; ++k) {
        const std::string at = column ? "[mi][h]" : cols_of(k) == 1 ? "[mi][e >> 1]" : "[mi][cb][e]";
        reads += fmt::format("{}{} = {}{}", k ? ", " : "const float ", char('a' + k), name(k), at);
    }
    std::string value = op.shape == OpShape::Fill ? fmt::format("D::constant({})", float_literal(t.imm)) : device_semantics(t.op);
    // Tiles in registers exist only in fp16 and bf16 runs (the tensor cores'): e^x there is the
    // prelude's fast_exp, one ex2.approx, as the hand-written kernels take it.
    if (t.op == Op::EXP) value = "fast_exp(a)";
    if (op.shape == OpShape::Mask) {
        reads += "; const int r_ = frag_row(mi, e >> 1), c_ = frag_col(cb, e)";
        value = fmt::format("c_ <= r_ ? a : {}", value);
    }
    const std::string loop = column ? fmt::format("ROWS_FOR({})", mt) : fmt::format("FRAG_FOR({}, {})", mt, ds.second / 8);
    const char* at = column ? "[mi][h]" : "[mi][cb][e]";
    std::string also;
    if (const TileInst* exp = exp_after_sub(pc, t)) {
        also = fmt::format(" {}{} = fast_exp_diff(a, b);", tile_name_[static_cast<size_t>(exp->args[1].index)], at);
        fused_exp_pc_ = pc + 1;
    }
    line(fmt::format("{} {{ {}{}{}{} = {};{} }}", loop, reads, reads.empty() ? "" : "; ", out, at, value, also));
}

// Why each product of the kernel [first, last) is not on the fastest path, a product of tiles
// in registers on mma.sync: the shapes it has (or that none is known before it runs), and
// which of the fragment layout's conditions its tiles miss. Products on the tensor cores from
// shared memory (wmma, tf32) ran 5 to 6 times slower than in registers on the H100 (fa2 at
// Br = 64 against 128, gpu/results/tune_grid_h100.md); on the CUDA cores, slower again.
std::vector<SlowPath> KernelEmitter::slow_products(std::int32_t first, std::int32_t last) const {
    std::vector<SlowPath> out;
    if (!tensor_cores_) return out;  // the module says why once (generate_cuda)
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code != Code::Tile) continue;
        const TileInst& t = p_.tile_insts[static_cast<size_t>(in.mem)];
        if (info(t.op).shape != OpShape::Product || fragment_instruction(t)) continue;
        const Loc loc = p_.origin[static_cast<size_t>(pc)]->loc;
        const std::string text = render_instruction(p_, pc);
        auto shape = [&](int k) -> std::optional<Shape2> {
            const TileOperand& a = t.args[static_cast<size_t>(k)];
            if (a.kind != TileOperand::Kind::Tile || static_shape_.empty()) return std::nullopt;
            Shape2 s = static_shape_[static_cast<size_t>(a.index)];
            if (s.first < 0) return std::nullopt;
            if (a.transposed) std::swap(s.first, s.second);
            return s;
        };
        const auto a = shape(0), b = shape(1);
        if (!a || !b) {
            out.push_back({loc, text, "its operands' shapes are known only when it runs (a slice that may be clipped at the array's end, or a tile "
                                "written at more than one shape): its tiles stay in shared memory, and it takes the tensor cores only when "
                                "they are whole 16 × 16 fragments"});
            continue;
        }
        const std::int64_t rows = a->first, inner = a->second, cols = b->second;
        const std::string product = fmt::format("a {} × {} by {} × {} product", rows, inner, inner, cols);
        if (rows % 16 != 0 || cols % 16 != 0 || inner % 8 != 0) {
            out.push_back({loc, text, fmt::format("{} is not whole 16 × 16 fragments (k a multiple of 8): it runs on the CUDA cores", product)});
            continue;
        }
        out.push_back({loc, text, rows % fragment_rows() != 0
                                ? fmt::format("{} runs on the tensor cores from shared memory (wmma, tf32): in registers on mma.sync, several "
                                              "times faster, its result needs rows a multiple of {} (a 16-row block for each of the {} warps)",
                                              product, fragment_rows(), block_threads_ / 32)
                                : fmt::format("{} runs on the tensor cores from shared memory (wmma, tf32): its tiles cannot stay in registers "
                                              "(one of them is transposed, is the b of a product, or is used in a way the fragment layout "
                                              "does not serve)",
                                              product)});
    }
    return out;
}

}  // namespace toysim::gpu
