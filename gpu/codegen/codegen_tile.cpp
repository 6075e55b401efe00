// A tile instruction as block-cooperative code: shapes checked as the simulator checks them
// (a fault stops the block), then one of the prelude's tile loops, then the new shape.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/codegen_emit.h"

namespace toysim::gpu {

namespace {


// The difference of two affine forms (an end minus a start: a slice's width).
Affine minus(const Affine& a, const Affine& b) {
    Affine out = a;
    out.constant -= b.constant;
    for (int t = 0; t < b.terms; ++t) {
        int found = -1;
        for (int u = 0; u < out.terms; ++u)
            if (out.var[static_cast<size_t>(u)] == b.var[static_cast<size_t>(t)]) found = u;
        if (found < 0) {
            if (out.terms == kMaxLoopDepth) return a;  // cannot happen: one term per loop slot
            out.var[static_cast<size_t>(out.terms)] = b.var[static_cast<size_t>(t)];
            out.coef[static_cast<size_t>(out.terms++)] = -b.coef[static_cast<size_t>(t)];
        } else {
            out.coef[static_cast<size_t>(found)] -= b.coef[static_cast<size_t>(t)];
        }
    }
    // Drop the terms that cancelled.
    int kept = 0;
    for (int t = 0; t < out.terms; ++t)
        if (out.coef[static_cast<size_t>(t)] != 0) {
            out.var[static_cast<size_t>(kept)] = out.var[static_cast<size_t>(t)];
            out.coef[static_cast<size_t>(kept++)] = out.coef[static_cast<size_t>(t)];
        }
    out.terms = kept;
    return out;
}

}  // namespace

// The register-blocking of a product: the smallest TM×TN that gives each of `threads` threads
// at most one block of a result of rows×cols.
std::pair<int, int> product_blocking(std::int64_t rows, std::int64_t cols, int threads) {
    const std::pair<int, int> options[] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 2}, {2, 4}, {4, 4}, {8, 4}, {4, 8}, {8, 8}};
    for (auto [tm, tn] : options)
        if (((rows + tm - 1) / tm) * ((cols + tn - 1) / tn) <= threads) return {tm, tn};
    return {0, 0};
}

SliceDimension slice_dimension(const MemRef& m, const ArrayInfo& a, size_t d, const integer::Interval* ranges) {
    SliceDimension out;
    out.start = m.subscripts[d].range(ranges);
    out.start_inside = m.bounds_proven || (out.start && (out.start->empty() || (out.start->lo >= 0 && out.start->hi < a.dims[d])));
    out.width = minus(m.ends[d], m.subscripts[d]);
    auto end = m.ends[d].range(ranges);
    out.never_clipped = end && !end->empty() && end->hi <= a.dims[d];
    return out;
}

// The operands as views, with their shapes; and the destination.
struct TileOperandCode {
    std::string view, rows, cols;
    int tile = -1;  // -1: a register
    bool transposed = false;
};

// A product the tensor cores may take (whole fragments, checked at run time): tiles for a, b
// and the destination, strides of 4 floats, and a c that is a tile read as it is.
bool KernelEmitter::tensor_core_product(const TileInst& t) const {
    if (!tensor_cores_ || info(t.op).shape != OpShape::Product) return false;
    const int sources = info(t.op).register_sources();
    for (int k = 0; k < t.count; ++k) {
        const TileOperand& a = t.args[static_cast<size_t>(k)];
        if (a.kind != TileOperand::Kind::Tile || std::stoll(stride(a.index)) % 4 != 0) return false;
        if (k == 2 && sources == 3 && a.transposed) return false;
    }
    return true;
}

// What the instruction at pc touches, and how (codegen_emit.h's Access). The prelude's loops
// give row i of every tile to warp i mod 8, so an operand read or written row by row (row i
// of the result from row i of it) is a `rows` access; a product's b, a transposed operand,
// the scalar registers, and every operand of a product on the tensor cores or staged (whose
// threads take other rows) are read or written by the whole block.
std::vector<Access> KernelEmitter::accesses(std::int32_t pc) const {
    std::vector<Access> out;
    const Inst& in = p_.code[static_cast<size_t>(pc)];
    const size_t registers = p_.tiles.size();
    if (in.code != Code::Tile) {
        for (char ch : info(p_.op_at(pc)).signature) {
            if (ch == 'r') out.push_back({registers, false, false});
            if (ch == 'R') out.push_back({registers, true, false});
        }
        return out;
    }
    const TileInst& t = p_.tile_insts[static_cast<size_t>(in.mem)];
    if (touches_fragment(t)) {
        // On registers: only a product's b (in shared memory, read by every warp) is shared, and
        // its a where it is kept there too (read by its warp's rows, written by the row loops').
        if (info(t.op).shape == OpShape::Product) {
            out.push_back({static_cast<size_t>(t.args[1].index), false, false});
            if (is_shared_a(t.args[0])) out.push_back({static_cast<size_t>(t.args[0].index), false, false});
        }
        return out;
    }
    const OpInfo& op = info(t.op);
    const int dest = t.count - 1;
    auto tile_of = [&](int k) { const TileOperand& a = t.args[static_cast<size_t>(k)]; return a.kind == TileOperand::Kind::Tile ? a.index : -1; };
    if (op.shape == OpShape::Memory) {
        const int tile = tile_of(0);
        const bool write = t.op == Op::LOAD;
        out.push_back(tile < 0 ? Access{registers, write, false} : Access{static_cast<size_t>(tile), write, true});
        return out;
    }
    const bool product = op.shape == OpShape::Product && tile_of(0) >= 0 && tile_of(1) >= 0;
    bool whole_block = false;
    if (product) {
        const bool aliased = tile_of(dest) >= 0 && (tile_of(dest) == tile_of(0) || tile_of(dest) == tile_of(1));
        whole_block = tensor_core_product(t) || t.args[0].transposed || aliased;
    }
    for (int k = 0; k < op.register_sources() && op.shape != OpShape::Fill; ++k) {
        const int tile = tile_of(k);
        if (tile < 0) out.push_back({registers, false, false});
        else out.push_back({static_cast<size_t>(tile), false, !whole_block && !t.args[static_cast<size_t>(k)].transposed && !(product && k == 1)});
    }
    const int d = tile_of(dest);
    out.push_back(d < 0 ? Access{registers, true, false} : Access{static_cast<size_t>(d), true, !whole_block});
    return out;
}

void KernelEmitter::slice(std::int32_t pc, const TileInst& t, SliceMode mode) {
    const MemRef& m = p_.mems[static_cast<size_t>(t.mem)];
    const ArrayInfo& a = p_.arrays[static_cast<size_t>(m.array)];
    const int fault_outside = int(DeviceFault::SliceOutside);
    std::vector<std::string> extent;
    std::vector<std::int64_t> bound;  // an upper bound on the extent, or -1
    std::vector<std::int64_t> strides;
    for (size_t d = 0; d < m.subscripts.size(); ++d) {
        const std::string start = affine(m.subscripts[d]);
        const SliceDimension dim = slice_dimension(m, a, d, slot_range_.data());
        if (!dim.start_inside) line(fmt::format("if ({0} < 0 || {0} >= {1}) FAULT({2}, {3});", "(" + start + ")", a.dims[d], pc, fault_outside));
        if (!m.is_range[d]) continue;
        const Affine& width = dim.width;
        const bool never_clipped = dim.never_clipped;
        std::string e;
        if (width.is_constant()) {
            if (width.constant <= 0) line(fmt::format("FAULT({}, {});  // an empty slice", pc, fault_outside));
            e = never_clipped ? std::to_string(width.constant) : fmt::format("(int)(clip({}, {}) - ({}))", affine(m.ends[d]), a.dims[d], start);
            bound.push_back(width.constant);
        } else {
            line(fmt::format("if ({} <= {}) FAULT({}, {});  // an empty slice", "(" + affine(m.ends[d]) + ")", "(" + start + ")", pc, fault_outside));
            e = never_clipped ? fmt::format("(int)({})", affine(width)) : fmt::format("(int)(clip({}, {}) - ({}))", affine(m.ends[d]), a.dims[d], start);
            bound.push_back(-1);
        }
        extent.push_back(e);
        strides.push_back(a.strides[d]);
    }
    // As slice_geometry (sim/exec/faults.cpp): two ranges are rows and columns; one range is a
    // row (or, into a column tile, a column).
    std::string rows = "1", cols = "1";
    long long rs = 0, cs = 0;
    std::int64_t rows_bound = 1, cols_bound = 1;
    if (extent.size() == 2) {
        rows = extent[0], rs = strides[0], rows_bound = bound[0];
        cols = extent[1], cs = strides[1], cols_bound = bound[1];
    } else if (extent.size() == 1) {
        cols = extent[0], cs = strides[0], cols_bound = bound[0];
    }
    if (t.column) {
        std::swap(rows, cols);
        std::swap(rs, cs);
        std::swap(rows_bound, cols_bound);
    }
    line(fmt::format("const int rows = {}, cols = {};", rows, cols));
    Affine offset = m.address;
    offset.constant -= a.base;
    const std::string& array = array_name_[static_cast<size_t>(m.array)];
    const std::string at = offset.is_constant() && offset.constant == 0 ? array : fmt::format("{} + ({})", array, affine(offset));
    const TileOperand& reg_or_tile = t.args[0];
    const bool is_tile = reg_or_tile.kind == TileOperand::Kind::Tile;
    const std::string ptr = is_tile ? tile_name_[static_cast<size_t>(reg_or_tile.index)] : "&" + reg(pc, reg_or_tile.index, "ra");
    const std::string stride_text = is_tile ? layout(reg_or_tile.index) : "0";  // a row stride, or the swizzle
    if (is_fragment(reg_or_tile)) {
        // A tile in registers: each thread moves its own elements (the shape is proven).
        const bool column = static_shape_[static_cast<size_t>(reg_or_tile.index)].second == 1;
        const std::string strides = column ? std::to_string(rs) : fmt::format("{}, {}", rs, cs);
        if (t.op == Op::LOAD) line(fmt::format("frag_load{}({}, {}, {});", column ? "_rows" : "", ptr, at, strides));
        else line(fmt::format("frag_store{}({}, {}, {});", column ? "_rows" : "", at, strides, ptr));
        count(m.array, t.op != Op::LOAD, "rows * cols");
        return;
    }
    if (t.op == Op::LOAD) {
        const std::int64_t cap_rows = is_tile ? p_.tiles[static_cast<size_t>(reg_or_tile.index)].rows : 1;
        const std::int64_t cap_cols = is_tile ? p_.tiles[static_cast<size_t>(reg_or_tile.index)].cols : 1;
        if (rows_bound < 0 || rows_bound > cap_rows || cols_bound < 0 || cols_bound > cap_cols)
            line(fmt::format("if (rows > {} || cols > {}) FAULT({}, {});", cap_rows, cap_cols, pc, int(DeviceFault::TileOverflow)));
        if (mode == SliceMode::Prefetch) {
            line(fmt::format("tile_load_async({}, {}, {}, {}, {}, rows, cols);", stage_buffer(reg_or_tile.index), stride_text, at, rs, cs));
            return;
        }
        if (mode == SliceMode::Consume)
            line(fmt::format("{} = {};  // copied ahead (stages {})", ptr, stage_buffer(reg_or_tile.index), stages_[static_cast<size_t>(reg_or_tile.index)]));
        else
            line(fmt::format("{}({}, {}, {}, {}, {}, rows, cols);", is_tile && is_stored(reg_or_tile.index) ? "tile_load_stored" : "tile_load", ptr,
                             stride_text, at, rs, cs));
        if (is_tile) line(fmt::format("{0}_rows = rows; {0}_cols = cols;", ptr));
        count(m.array, false, "rows * cols");
        return;
    }
    // STORE / STORE_ADD: the register's shape must be the slice's.
    if (is_tile) {
        line(fmt::format("if ({0}_rows == 0) FAULT({1}, {2});", ptr, pc, int(DeviceFault::TileUnwritten)));
        line(fmt::format("if ({0}_rows != rows || {0}_cols != cols) FAULT({1}, {2});", ptr, pc, int(DeviceFault::Shape)));
    } else {
        line(fmt::format("if (rows != 1 || cols != 1) FAULT({}, {});", pc, int(DeviceFault::Shape)));
    }
    line(fmt::format("tile_store<{}>({}, {}, {}, View{{{}, {}, 1}}, rows, cols);", accumulates(t.op) ? "true" : "false", at, rs, cs, ptr,
                     is_tile ? stride_text : "0"));
    if (accumulates(t.op)) count(m.array, false, "rows * cols");
    count(m.array, true, "rows * cols");
}

void KernelEmitter::tile(std::int32_t pc) {
    const TileInst& t = p_.tile_insts[static_cast<size_t>(p_.code[static_cast<size_t>(pc)].mem)];
    const OpInfo& op = info(t.op);
    line("{");
    ++indent_;
    if (op.shape == OpShape::Memory) {
        // A staged LOAD: copied ahead (open_staged_loop), here only taken up.
        slice(pc, t, is_staged_load(pc) ? SliceMode::Consume : SliceMode::Load);
    } else if (touches_fragment(t)) {
        fragment_tile(pc, t);
    } else {
        const char* view_names[] = {"src_a", "src_b", "src_c"};
        const char* reg_names[] = {"ra", "rb", "rc", "rd"};
        const int dest = t.count - 1;
        const int sources = op.register_sources();
        std::vector<TileOperandCode> in;
        std::string unwritten;
        for (int k = 0; k < sources; ++k) {
            const TileOperand& a = t.args[static_cast<size_t>(k)];
            TileOperandCode c;
            c.transposed = a.transposed;
            if (a.kind == TileOperand::Kind::Register) {
                c.view = fmt::format("View{{&{}, 0, 0}}", reg(pc, a.index, reg_names[k]));
                c.rows = c.cols = "1";
            } else {
                c.tile = a.index;
                const std::string& n = tile_name_[static_cast<size_t>(a.index)];
                c.view = a.transposed ? fmt::format("View{{{}, 1, {}}}", n, stride(a.index)) : fmt::format("View{{{}, {}, 1}}", n, stride(a.index));
                c.rows = a.transposed ? n + "_cols" : n + "_rows";
                c.cols = a.transposed ? n + "_rows" : n + "_cols";
                unwritten += fmt::format("{}{}_rows == 0", unwritten.empty() ? "" : " || ", n);
            }
            line(fmt::format("View {} = {};", view_names[k], c.view));
            in.push_back(c);
        }
        if (!unwritten.empty()) line(fmt::format("if ({}) FAULT({}, {});", unwritten, pc, int(DeviceFault::TileUnwritten)));
        // The destination.
        const TileOperand& d = t.args[static_cast<size_t>(dest)];
        const bool dest_tile = d.kind == TileOperand::Kind::Tile;
        const std::string out = dest_tile ? tile_name_[static_cast<size_t>(d.index)] : "&" + reg(pc, d.index, reg_names[dest]);
        const std::string os = dest_tile ? stride(d.index) : "0";
        const std::int64_t cap_rows = dest_tile ? p_.tiles[static_cast<size_t>(d.index)].rows : 1;
        const std::int64_t cap_cols = dest_tile ? p_.tiles[static_cast<size_t>(d.index)].cols : 1;
        auto aliased = [&](int k) { return dest_tile && in[static_cast<size_t>(k)].tile == d.index; };
        const bool product = op.shape == OpShape::Product && in.size() >= 2 && in[0].tile >= 0 && in[1].tile >= 0;
        const int shape_fault = int(DeviceFault::Shape);
        if (product) {
            line(fmt::format("if ({} != {}) FAULT({}, {});  // a product needs a's columns = b's rows", in[0].cols, in[1].rows, pc, shape_fault));
            line(fmt::format("const int rows = {}, cols = {}, inner = {};", in[0].rows, in[1].cols, in[0].cols));
            if (sources == 3) line(fmt::format("if (!broadcast(src_c, {}, {}, rows, cols)) FAULT({}, {});", in[2].rows, in[2].cols, pc, shape_fault));
        } else if (op.shape == OpShape::Fill) {
            line(fmt::format("const int rows = {}, cols = {};  // the source's rows, the destination's columns", in[0].rows, cap_cols));
        } else if (op.shape == OpShape::RowReduce) {
            line(fmt::format("const int rows = {}, cols = 1;", in[0].rows));
        } else {
            std::string rows = in[0].rows, cols = in[0].cols;
            for (int k = 1; k < sources; ++k) {
                rows = fmt::format("max({}, {})", rows, in[static_cast<size_t>(k)].rows);
                cols = fmt::format("max({}, {})", cols, in[static_cast<size_t>(k)].cols);
            }
            line(fmt::format("const int rows = {}, cols = {};", rows, cols));
            if (op.shape == OpShape::Elementwise || op.shape == OpShape::Product) {
                std::string fits;
                for (int k = 0; k < sources; ++k)
                    fits += fmt::format("{}!broadcast({}, {}, {}, rows, cols)", k ? " || " : "", view_names[k], in[static_cast<size_t>(k)].rows,
                                        in[static_cast<size_t>(k)].cols);
                if (sources > 1) line(fmt::format("if ({}) FAULT({}, {});", fits, pc, shape_fault));
            }
        }
        line(fmt::format("if (rows > {} || cols > {}) FAULT({}, {});", cap_rows, cap_cols, pc, int(DeviceFault::TileOverflow)));
        // A destination that is also a source another thread may still read is written only
        // once every thread has read (staged): a transposed or broadcast operand, a product's.
        std::string in_place = "true";
        for (int k = 0; k < sources; ++k) {
            if (!aliased(k)) continue;
            const auto& c = in[static_cast<size_t>(k)];
            if (product && k < 2) in_place = "false";
            else if (c.transposed) in_place = "false";
            else if (sources == 1 && op.shape != OpShape::RowReduce) continue;  // its own shape: element (i, j) reads (i, j)
            else if (in_place != "false") in_place = fmt::format("{}rows == {} && cols == {}", in_place == "true" ? "" : in_place + " && ", c.rows, c.cols);
        }
        if (op.shape == OpShape::Fill) in_place = "true";
        // The warps write their own rows (codegen_emit's barriers count on it); where a source's
        // one row is broadcast to every row, or the write is staged, the whole block takes part,
        // between barriers of its own.
        const bool whole_block = product && (tensor_core_product(t) || in[0].transposed || aliased(0) || aliased(1));
        std::string spread = in_place == "true" ? "" : in_place == "false" ? "true" : "!(" + in_place + ")";
        const bool broadcasts = product ? sources == 3 : sources > 1 && op.shape != OpShape::RowReduce && op.shape != OpShape::Fill;
        for (int k = product ? 2 : 0; broadcasts && !whole_block && k < sources && spread != "true"; ++k) {
            const auto& c = in[static_cast<size_t>(k)];
            if (c.tile < 0 || c.transposed || aliased(k)) continue;  // (an aliased source's broadcast is a staged write)
            spread += fmt::format("{}({} == 1 && rows > 1)", spread.empty() ? "" : " || ", c.rows);
        }
        if (whole_block) spread.clear();
        if (spread == "true") {
            line("__syncthreads();  // the whole block: a staged write");
        } else if (!spread.empty()) {
            line(fmt::format("const bool spread = {};  // a row broadcast to every row, or a staged write: the whole block", spread));
            line("if (spread) __syncthreads();");
        }
        const std::int64_t staged_k = (cap_rows * cap_cols + block_threads_ - 1) / block_threads_;
        if (product) {
            const std::pair<int, int> blocking = product_blocking(cap_rows, cap_cols, block_threads_);
            if (blocking.first == 0)
                throw ProductTooWide(p_.origin[static_cast<size_t>(pc)]->loc,
                               fmt::format("cannot generate CUDA for this product: its result tile holds {}×{} elements, more than {} threads "
                                           "can hold in registers at 8×8 each", cap_rows, cap_cols, block_threads_));
            const std::string c_view = sources == 3 ? "src_c" : "View{nullptr, 0, 0}";
            const std::string has_c = sources == 3 ? "true" : "false";
            line(fmt::format("float* const out_ptr = {};", out));
            // 16-byte reads where the layout allows (a not transposed, strides of 4 floats;
            // b transposed, or b's rows read 4 columns at a time): the generic loop otherwise.
            const bool b_transposed = in[1].transposed;
            const bool aligned = std::stoll(stride(in[0].tile)) % 4 == 0 && std::stoll(stride(in[1].tile)) % 4 == 0;
            // A warp's rows (rows i = warp + 8t: an eighth of the result, over 32 lanes), or
            // the whole block's (staged, or on the tensor cores' side of a branch).
            const std::pair<int, int> warp_blocking = [&] {
                const std::pair<int, int> b = product_blocking((cap_rows + block_threads_ / 32 - 1) / (block_threads_ / 32), cap_cols, 32);
                return b.first == 0 ? std::pair<int, int>{8, 4} : b;  // more rounds of 8×4
            }();
            // tile_product4 where a thread's columns are read 16 bytes at a time: b transposed
            // (its rows), or 4 consecutive columns of b's rows.
            const auto reads_16_bytes = [&](int tn) { return !in[0].transposed && aligned && (b_transposed || tn == 4); };
            // A thread's rows and columns of the result: the block's blocking where the whole
            // block runs the product (staged, or beside the tensor cores), else a warp's.
            const auto thread_blocking = [&](bool staged) { return staged || whole_block ? blocking : warp_blocking; };
            auto call = [&](bool staged) {
                const bool by_block = staged || whole_block;
                const auto [tm, tn] = thread_blocking(staged);
                const char* part = by_block ? "block_part()" : "warp_part()";
                const bool fast = reads_16_bytes(tn);
                std::string generic = fmt::format("tile_product<{}, {}, {}>({}, out_ptr, {}, src_a, src_b, {}, {}, rows, cols, inner);", tm, tn,
                                                  staged ? "true" : "false", part, os, c_view, has_c);
                std::string quick = fmt::format("tile_product4<{}, {}, {}, {}>({}, out_ptr, {}, {}, {}, {}, {}, {}, {}, rows, cols, inner);", tm, tn,
                                                staged ? "true" : "false", b_transposed ? "true" : "false", part, os,
                                                tile_name_[static_cast<size_t>(in[0].tile)], stride(in[0].tile),
                                                tile_name_[static_cast<size_t>(in[1].tile)], stride(in[1].tile), c_view, has_c);
                std::string cuda_cores = fast ? fmt::format("if (inner % 4 == 0{}) {} else {}", b_transposed ? "" : " && cols % 4 == 0", quick, generic)
                                              : generic;
                // The tensor cores, for whole fragments: not when the destination is also a or b
                // (staged), nor onto a c that is broadcast.
                if (staged || !tensor_core_product(t)) return cuda_cores;
                const std::string c_ptr = sources == 3 ? tile_name_[static_cast<size_t>(in[2].tile)] : "nullptr";
                const std::string c_stride = sources == 3 ? stride(in[2].tile) : "0";
                std::string fits = "tc_fits(rows, cols, inner)";
                if (sources == 3) fits += fmt::format(" && {} == rows && {} == cols", in[2].rows, in[2].cols);
                std::string tc = fmt::format("tile_product_tc<{}, {}>(out_ptr, {}, {}, {}, {}, {}, {}, {}, rows, cols, inner);",
                                             in[0].transposed ? "true" : "false", b_transposed ? "true" : "false", os,
                                             tile_name_[static_cast<size_t>(in[0].tile)], stride(in[0].tile), tile_name_[static_cast<size_t>(in[1].tile)],
                                             stride(in[1].tile), c_ptr, c_stride);
                return fmt::format("if ({}) {} else {}", fits, tc, cuda_cores);
            };
            // The loop the tiles' full shapes take on the CUDA cores (the unstaged one where the
            // generated code decides at run time), for the time model's steps of k.
            if (in[0].tile >= 0 && in[1].tile >= 0) {
                const auto [tm, tn] = thread_blocking(in_place == "false");
                const std::int64_t inner = p_.tiles[static_cast<size_t>(in[0].tile)].cols;
                const bool by_element = !reads_16_bytes(tn) || inner % 4 != 0 || (!b_transposed && cap_cols % 4 != 0);
                thread_blockings_.push_back({pc, tm, tn, by_element});
            }
            if (in_place == "true" || in_place == "false") {
                line(call(in_place == "false"));
            } else {
                line(fmt::format("if ({}) {{", in_place));
                line("    " + call(false));
                line("} else {");
                line("    " + call(true));
                line("}");
            }
        } else if (op.shape == OpShape::RowReduce) {
            line(fmt::format("tile_rowreduce({}, {}, src_a, rows, {}, [](float a, float b) {{ return {}; }});", out, os, in[0].cols, device_semantics(t.op)));
        } else {
            std::string value = device_semantics(t.op);
            std::string reads;
            for (int k = 0; k < sources && op.shape != OpShape::Fill; ++k)
                reads += fmt::format("{}{} = {}.at(r_, c_)", k ? ", " : "const float ", char('a' + k), view_names[k]);
            if (op.shape == OpShape::Fill) {
                value = fmt::format("D::constant({})", float_literal(t.imm));
            }
            if (op.shape == OpShape::Mask) value = fmt::format("c_ <= r_ ? a : {}", value);  // on and below the diagonal: a copy
            line(fmt::format("auto f = [=](int r_, int c_) {{ {}{}return {}; }};", reads, reads.empty() ? "" : "; ", value));
            if (in_place == "true") line(fmt::format("tile_map({}, {}, rows, cols, f);", out, os));
            else if (in_place == "false") line(fmt::format("tile_map_staged<{}>({}, {}, rows, cols, f);", staged_k, out, os));
            else line(fmt::format("if ({}) tile_map({}, {}, rows, cols, f); else tile_map_staged<{}>({}, {}, rows, cols, f);", in_place, out, os, staged_k, out, os));
        }
        if (spread == "true") line("__syncthreads();");
        else if (!spread.empty()) line("if (spread) __syncthreads();");
        if (dest_tile) line(fmt::format("{0}_rows = rows; {0}_cols = cols;", out));
    }
    --indent_;
    line("}");
}

}  // namespace toysim::gpu
