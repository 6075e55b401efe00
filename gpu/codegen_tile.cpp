// A tile instruction as block-cooperative code: shapes checked as the simulator checks them
// (a fault stops the block), then one of the prelude's tile loops, then the new shape.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gpu/codegen.h"
#include "gpu/codegen_emit.h"

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

// The register-blocking of a product: the smallest TM×TN that gives each of the block's
// threads at most one block of a result as large as the destination tile.
std::pair<int, int> product_blocking(std::int64_t rows, std::int64_t cols) {
    const std::pair<int, int> options[] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {4, 2}, {2, 4}, {4, 4}, {8, 4}, {4, 8}, {8, 8}};
    for (auto [tm, tn] : options)
        if (((rows + tm - 1) / tm) * ((cols + tn - 1) / tn) <= kBlockThreads) return {tm, tn};
    return {0, 0};
}

}  // namespace

// The operands as views, with their shapes; and the destination.
struct TileOperandCode {
    std::string view, rows, cols;
    int tile = -1;  // -1: a register
    bool transposed = false;
};

void KernelEmitter::slice(std::int32_t pc, const TileInst& t) {
    const MemRef& m = p_.mems[static_cast<size_t>(t.mem)];
    const ArrayInfo& a = p_.arrays[static_cast<size_t>(m.array)];
    const int fault_outside = int(DeviceFault::SliceOutside);
    std::vector<std::string> extent;
    std::vector<std::int64_t> bound;  // an upper bound on the extent, or -1
    std::vector<std::int64_t> strides;
    for (size_t d = 0; d < m.subscripts.size(); ++d) {
        const std::string start = affine(m.subscripts[d]);
        auto start_range = m.subscripts[d].range(slot_range_.data());
        const bool start_inside = m.bounds_proven || (start_range && (start_range->empty() || (start_range->lo >= 0 && start_range->hi < a.dims[d])));
        if (!start_inside) line(fmt::format("if ({0} < 0 || {0} >= {1}) FAULT({2}, {3});", "(" + start + ")", a.dims[d], pc, fault_outside));
        if (!m.is_range[d]) continue;
        const Affine width = minus(m.ends[d], m.subscripts[d]);
        auto end_range = m.ends[d].range(slot_range_.data());
        const bool never_clipped = end_range && !end_range->empty() && end_range->hi <= a.dims[d];
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
    const std::string stride_text = is_tile ? stride(reg_or_tile.index) : "0";
    if (t.op == Op::LOAD) {
        const std::int64_t cap_rows = is_tile ? p_.tiles[static_cast<size_t>(reg_or_tile.index)].rows : 1;
        const std::int64_t cap_cols = is_tile ? p_.tiles[static_cast<size_t>(reg_or_tile.index)].cols : 1;
        if (rows_bound < 0 || rows_bound > cap_rows || cols_bound < 0 || cols_bound > cap_cols)
            line(fmt::format("if (rows > {} || cols > {}) FAULT({}, {});", cap_rows, cap_cols, pc, int(DeviceFault::TileOverflow)));
        line(fmt::format("tile_load({}, {}, {}, {}, {}, rows, cols);", ptr, stride_text, at, rs, cs));
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
        slice(pc, t);
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
        const std::int64_t staged_k = (cap_rows * cap_cols + kBlockThreads - 1) / kBlockThreads;
        if (product) {
            const std::pair<int, int> blocking = product_blocking(cap_rows, cap_cols);
            const int tm = blocking.first, tn = blocking.second;  // (not a structured binding: clang 14's lambdas cannot capture one)
            if (tm == 0)
                throw ToyError(p_.origin[static_cast<size_t>(pc)]->loc,
                               fmt::format("cannot generate CUDA for this product: its result tile holds {}×{} elements, more than {} threads "
                                           "can hold in registers at 8×8 each", cap_rows, cap_cols, kBlockThreads));
            const std::string c_view = sources == 3 ? "src_c" : "View{nullptr, 0, 0}";
            const std::string has_c = sources == 3 ? "true" : "false";
            line(fmt::format("float* const out_ptr = {};", out));
            // 16-byte reads where the layout allows (a not transposed, strides of 4 floats;
            // b transposed, or b's rows read 4 columns at a time): the generic loop otherwise.
            const bool b_transposed = in[1].transposed;
            const bool fast = !in[0].transposed && std::stoll(stride(in[0].tile)) % 4 == 0 && std::stoll(stride(in[1].tile)) % 4 == 0 &&
                              (b_transposed || tn == 4);
            const bool aligned = std::stoll(stride(in[0].tile)) % 4 == 0 && std::stoll(stride(in[1].tile)) % 4 == 0;
            auto call = [&](bool staged) {
                std::string generic = fmt::format("tile_product<{}, {}, {}>(out_ptr, {}, src_a, src_b, {}, {}, rows, cols, inner);", tm, tn,
                                                  staged ? "true" : "false", os, c_view, has_c);
                std::string quick = fmt::format("tile_product4<{}, {}, {}, {}>(out_ptr, {}, {}, {}, {}, {}, {}, {}, rows, cols, inner);", tm, tn,
                                                staged ? "true" : "false", b_transposed ? "true" : "false", os, tile_name_[static_cast<size_t>(in[0].tile)],
                                                stride(in[0].tile), tile_name_[static_cast<size_t>(in[1].tile)], stride(in[1].tile), c_view, has_c);
                std::string cuda_cores = fast ? fmt::format("if (inner % 4 == 0{}) {} else {}", b_transposed ? "" : " && cols % 4 == 0", quick, generic)
                                              : generic;
                // The tensor cores, for whole fragments: not when the destination is also a or b
                // (staged), nor onto a c that is broadcast.
                const bool c_tile = sources < 3 || (in[2].tile >= 0 && !in[2].transposed && std::stoll(stride(in[2].tile)) % 4 == 0);
                if (!tensor_cores_ || staged || !dest_tile || !aligned || std::stoll(os) % 4 != 0 || !c_tile) return cuda_cores;
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
        if (dest_tile) line(fmt::format("{0}_rows = rows; {0}_cols = cols;", out));
    }
    --indent_;
    line("}");
}

}  // namespace toysim::gpu
