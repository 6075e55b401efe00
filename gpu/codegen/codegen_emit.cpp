// One kernel of a generated module: its shared memory, its grid, then the program's
// instructions in order, each under a comment with the .toy line it came from.
#include "gpu/codegen/codegen_emit.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "gpu/codegen/codegen.h"
#include "support/diag.h"

namespace toysim::gpu {

namespace {

// The most shared memory a block can have on the GPUs toysim targets (an H100: 227 KiB).
constexpr std::int64_t kSharedMemoryBudget = 227 * 1024;
constexpr const char* kSpillPerBlockMarker = "@SPILL@";

}  // namespace

std::string device_semantics(Op op) {
    std::string text;
    switch (op) {
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) \
    case Op::NAME: text = #SEM; break;
        TOYSIM_OPCODES(X)
#undef X
    }
    for (size_t at = text.find("D."); at != std::string::npos; at = text.find("D.", at)) text.replace(at, 2, "D::");
    return text;
}

std::string float_literal(double v) {
    if (std::isnan(v)) return "NAN";
    if (std::isinf(v)) return v < 0 ? "-INFINITY" : "INFINITY";
    return fmt::format("(float){}", v);
}

namespace {

// Names the generated code uses itself, and C++'s and CUDA's, which a program's names must not take.
const std::set<std::string>& reserved_names() {
    static const std::set<std::string> names = {
        "rows", "cols", "inner", "head", "host", "counts", "regfile", "spill", "fault", "smem", "R", "D", "T", "View", "rest", "out_ptr",
        "f", "src_a", "src_b", "src_c", "r_", "c_", "in_place", "min", "max", "exp", "log", "atomicAdd", "threadIdx", "blockIdx",
        "blockDim", "gridDim", "warpSize", "auto", "bool", "break", "case", "catch", "char", "class", "const", "continue", "default",
        "delete", "do", "double", "else", "enum", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long",
        "namespace", "new", "operator", "private", "protected", "public", "register", "return", "short", "signed", "sizeof", "static",
        "struct", "switch", "template", "this", "throw", "true", "try", "typedef", "typename", "union", "unsigned", "using",
        "virtual", "void", "volatile", "while", "and", "or", "not", "xor", "asm", "half", "float2", "int2"};
    return names;
}
std::string safe_name(const std::string& name) { return reserved_names().count(name) ? name + "_" : name; }

}  // namespace

// ---- footprints and the register file ----

Loc code_loc(const Program& p, std::int32_t pc) {
    const Inst& in = p.code[static_cast<size_t>(pc)];
    if (in.loop >= 0) return p.loops[static_cast<size_t>(in.loop)].loc;
    const ast::Instruction* origin = p.origin[static_cast<size_t>(pc)];
    return origin ? origin->loc : Loc{};
}

std::string instruction_at(const Program& p, std::int32_t pc) { return fmt::format("{} at line {}", info(p.op_at(pc)).mnemonic, code_loc(p, pc).line); }

integer::Interval loop_values_of(const LoopInfo& l, const integer::Interval* ranges) {
    auto lo = l.lo.range(ranges), hi = l.hi.range(ranges);
    return lo && hi ? integer::loop_values(*lo, *hi) : integer::Interval::everything();
}

void Footprint::add(const Footprint& o) {
    tiles_read.resize(std::max(tiles_read.size(), o.tiles_read.size()));
    tiles_written.resize(std::max(tiles_written.size(), o.tiles_written.size()));
    for (size_t t = 0; t < o.tiles_read.size(); ++t) tiles_read[t] = tiles_read[t] || o.tiles_read[t];
    for (size_t t = 0; t < o.tiles_written.size(); ++t) tiles_written[t] = tiles_written[t] || o.tiles_written[t];
    registers_read = registers_read || o.registers_read;
    registers_written = registers_written || o.registers_written;
}

std::vector<bool> fp32_arrays(const Program& p) {
    std::vector<bool> read(p.arrays.size(), false), written(p.arrays.size(), false);
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        if (!is_instruction(p.code[pc].code)) continue;
        const std::int32_t m = p.memref_at(static_cast<std::int32_t>(pc));
        if (m < 0) continue;
        const Op op = p.op_at(static_cast<std::int32_t>(pc));
        const size_t a = static_cast<size_t>(p.mems[static_cast<size_t>(m)].array);
        if (reads_dram(op)) read[a] = true;
        if (writes_dram(op)) written[a] = true;
    }
    std::vector<bool> out(p.arrays.size());
    for (size_t a = 0; a < out.size(); ++a) out[a] = read[a] && written[a];
    return out;
}

Footprint footprint(const Program& p, std::int32_t first, std::int32_t last) {
    Footprint f;
    f.tiles_read.assign(p.tiles.size(), false);
    f.tiles_written.assign(p.tiles.size(), false);
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p.code[static_cast<size_t>(pc)];
        if (!is_instruction(in.code)) continue;
        if (in.code != Code::Tile) {
            const OpInfo& op = info(p.op_at(pc));
            for (char ch : op.signature) {
                if (ch == 'r') f.registers_read = true;
                if (ch == 'R') f.registers_written = true;
            }
            continue;
        }
        const TileInst& t = p.tile_insts[static_cast<size_t>(in.mem)];
        for (int k = 0; k < t.count; ++k) {
            const TileOperand& a = t.args[static_cast<size_t>(k)];
            const bool written = k == t.count - 1 && t.op != Op::STORE && t.op != Op::STORE_ADD;
            if (a.kind == TileOperand::Kind::Register) (written ? f.registers_written : f.registers_read) = true;
            else (written ? f.tiles_written : f.tiles_read)[static_cast<size_t>(a.index)] = true;
        }
    }
    return f;
}

RegisterFileLayout::RegisterFileLayout(const Program& p) {
    for (const Tile& t : p.tiles) {
        tile_offset_.push_back(total_);
        total_ += t.rows * t.cols;
    }
    for (size_t t = 0; t < p.tiles.size(); ++t) {
        shape_offset_.push_back(total_);
        total_ += 2;
    }
    register_offset_ = total_;
    registers_ = std::max(1, p.scalar_registers);
    total_ += registers_;
}

// ---- the kernel ----

void KernelEmitter::line(const std::string& text) { body_ += std::string(static_cast<size_t>(indent_) * 4, ' ') + text + "\n"; }

void KernelEmitter::comment_source(Loc loc) {
    std::string text = p_.source && loc.line > 0 ? std::string(p_.source->line(loc.line)) : std::string();
    text.erase(0, std::min(text.size(), text.find_first_not_of(" \t")));
    line(fmt::format("// line {}: {}", loc.line, text));
}

std::string KernelEmitter::affine(const Affine& a) const {
    std::string out;
    for (int t = 0; t < a.terms; ++t) {
        const std::int64_t c = a.coef[static_cast<size_t>(t)];
        const std::string& v = slot_name_[a.var[static_cast<size_t>(t)]];
        std::string term = c == 1 || c == -1 ? v : fmt::format("{}*{}", c < 0 ? -c : c, v);
        out += out.empty() ? (c < 0 ? "-" + term : term) : (c < 0 ? " - " : " + ") + term;
    }
    if (a.constant != 0 || out.empty())
        out += out.empty() ? fmt::format("{}", a.constant) : fmt::format(" {} {}", a.constant < 0 ? "-" : "+", a.constant < 0 ? -a.constant : a.constant);
    return out;
}

std::int64_t KernelEmitter::shared_floats_of(int tile) const {
    const std::int64_t elements = p_.tiles[static_cast<size_t>(tile)].rows * std::stoll(stride(tile));
    return ((is_stored(tile) ? (elements + 1) / 2 : elements) + 7) / 8 * 8;
}

std::string KernelEmitter::stride(int tile) const {
    const std::int64_t cols = p_.tiles[static_cast<size_t>(tile)].cols;
    // A tile kept as T (16 bits): rows of 16-byte pieces, padded by one piece, so that the 8
    // rows an ldmatrix reads are 8 different groups of 4 banks; in the swizzle, not padded
    // (layout() names the swizzle; the pieces of 8 rows are in 8 different groups already).
    if (is_swizzled(tile)) return std::to_string(cols);
    if (is_stored(tile)) return std::to_string((cols + 7) / 8 * 8 + 8);
    // Rows of a multiple of 4 columns are padded to an odd number of 16-byte pieces (by 4
    // floats, or by 8 where 4 would make it even: 60 columns padded by 4 are 64, and every row
    // starts in the same bank): 16-byte reads along a row stay aligned, and 8 threads reading 16
    // bytes of 8 consecutive rows (a transposed operand of a product) hit 8 different groups of
    // 4 banks. Other even rows are padded by 1 (an odd stride: a warp reading a column hits 32
    // banks).
    if (cols % 4 == 0) return std::to_string(cols % 8 == 0 ? cols + 4 : cols + 8);
    return std::to_string(cols > 1 && cols % 2 == 0 ? cols + 1 : cols);
}

// A register operand as an lvalue; a dynamic one R[expr] is checked against the file.
std::string KernelEmitter::reg(std::int32_t pc, std::int32_t index, const char* local) {
    if (index >= 0) return fmt::format("R[{}]", index);
    const Affine& at = p_.dynamic_registers[static_cast<size_t>(-1 - index)].index;
    line(fmt::format("const long long {} = {};", local, affine(at)));
    line(fmt::format("if ({0} < 0 || {0} >= {1}) FAULT({2}, {3});", local, layout_.registers(), pc, int(DeviceFault::RegisterOutside)));
    // A lane loop's register of its lane: kept where lane (0, 0) keeps its own (codegen_lanes.cpp),
    // the index with each lane loop's variable as lane (0, 0) has it (no lane in it: a number
    // once the rounds unroll, which ptxas keeps in a register).
    std::vector<std::pair<int, std::string>> saved;  // the lane loops' own names, put back after
    for (const OpenLaneLoop& lane : open_lanes_)
        if (lane.slot >= 0 && at.coefficient(lane.slot) != 0)
            saved.emplace_back(lane.slot, std::exchange(slot_name_[static_cast<size_t>(lane.slot)], lane.lane_free));
    const std::string place = saved.empty() ? std::string(local) : affine(at);
    for (auto& [slot, name] : saved) slot_name_[static_cast<size_t>(slot)] = std::move(name);
    return fmt::format("R[{}]", place);
}

void KernelEmitter::count(int array, bool write, const std::string& elements) {
    (write ? counted_writes_ : counted_reads_)[static_cast<size_t>(array)] = true;
    // Serial code that every thread runs alike is counted once, by thread 0.
    const std::string guard = redundant_guard();
    line(fmt::format("if constexpr (kCount) {}{}_{} += {};", guard.empty() ? "" : "if (" + guard + ") ", write ? "writes" : "reads",
                     array_name_[static_cast<size_t>(array)], elements));
}

void KernelEmitter::enter_loop(const LoopInfo& l, bool emit_for, bool unroll) {
    std::string name = safe_name(l.var);
    slot_name_[static_cast<size_t>(l.slot)] = name;
    slot_range_[static_cast<size_t>(l.slot)] = loop_values_of(l, slot_range_.data());
    if (emit_for) {
        comment_source(l.loc);
        if (unroll) line("#pragma unroll  // its variable picks a lane's register: a number once unrolled");
        line(fmt::format("for (long long {0} = {1}; {0} < {2}; ++{0}) {{", name, affine(l.lo), affine(l.hi)));
        ++indent_;
    }
}

namespace {
constexpr unsigned char kReadRows = 1, kWriteRows = 2, kReadAny = 4, kWriteAny = 8;
}

KernelEmitter::Sync KernelEmitter::needed(const std::vector<Access>& next) const {
    Sync s = Sync::None;
    for (const Access& a : next) {
        const unsigned char b = block_[a.slot], w = warp_[a.slot];
        const bool block = a.rows ? (a.write ? b & (kReadAny | kWriteAny) : b & kWriteAny) : (a.write ? b != 0 : b & (kWriteRows | kWriteAny));
        if (block) return Sync::Block;
        if (a.rows && (a.write ? w != 0 : (w & kWriteRows) != 0)) s = Sync::Warp;
    }
    return s;
}

void KernelEmitter::sync(Sync s) {
    auto any = [](const std::vector<unsigned char>& v) { return std::find_if(v.begin(), v.end(), [](unsigned char f) { return f != 0; }) != v.end(); };
    if (s == Sync::Block) {
        // What was written to a tile in the swizzle, wgmma reads through the async proxy.
        bool swizzled_written = false;
        for (size_t t = 0; t < swizzled_.size(); ++t) swizzled_written = swizzled_written || (swizzled_[t] && (block_[t] & (kWriteRows | kWriteAny)));
        if (any(block_) && !per_thread_) {
            if (swizzled_written) line("async_proxy_fence();  // what was written to tiles in the swizzle, for wgmma's reads");
            line("__syncthreads();");
        }
        std::fill(block_.begin(), block_.end(), 0);
        std::fill(warp_.begin(), warp_.end(), 0);
    } else if (s == Sync::Warp) {
        if (any(warp_) && !per_thread_) line("__syncwarp();");
        std::fill(warp_.begin(), warp_.end(), 0);
    }
}

void KernelEmitter::note(const std::vector<Access>& done) {
    for (const Access& a : done) {
        block_[a.slot] |= a.rows ? (a.write ? kWriteRows : kReadRows) : (a.write ? kWriteAny : kReadAny);
        if (a.rows) warp_[a.slot] |= a.write ? kWriteRows : kReadRows;
    }
}

std::vector<Access> KernelEmitter::accesses(std::int32_t first, std::int32_t last) const {
    std::vector<Access> out;
    for (std::int32_t pc = first; pc < last; ++pc)
        if (is_instruction(p_.code[static_cast<size_t>(pc)].code)) {
            const std::vector<Access> more = accesses(pc);
            out.insert(out.end(), more.begin(), more.end());
        }
    return out;
}

void KernelEmitter::instruction(std::int32_t pc) {
    if (p_.code[static_cast<size_t>(pc)].code == Code::Tile) {
        const std::vector<Access> mine = accesses(pc);
        sync(needed(mine));
        note(mine);
    } else {
        barrier();  // scalar code runs on thread 0 and is followed by its own barrier
    }
    comment_source(p_.origin[static_cast<size_t>(pc)]->loc);
    if (p_.code[static_cast<size_t>(pc)].code == Code::Tile) tile(pc);
    else scalar(pc);
}

// A scalar instruction: one thread's registers (a thread per iteration), or thread 0's on
// the block's shared registers, with every thread checking (faults stop the whole block).
void KernelEmitter::scalar(std::int32_t pc) {
    const Inst& in = p_.code[static_cast<size_t>(pc)];
    const Op op = p_.op_at(pc);
    const OpInfo& o = info(op);
    std::vector<std::string> regs;
    line("{");
    ++indent_;
    const char* locals[] = {"ra", "rb", "rc", "rd"};
    for (int k = 0; k < in.reg_count; ++k) regs.push_back(reg(pc, in.reg[static_cast<size_t>(k)], locals[k]));
    std::string effect;
    if (o.shape == OpShape::Memory) {
        const MemRef& m = p_.mems[static_cast<size_t>(in.mem)];
        const ArrayInfo& a = p_.arrays[static_cast<size_t>(m.array)];
        if (!m.bounds_proven)
            for (size_t d = 0; d < m.subscripts.size(); ++d)
                line(fmt::format("if ({0} < 0 || {0} >= {1}) FAULT({2}, {3});", "(" + affine(m.subscripts[d]) + ")", a.dims[d], pc,
                                 int(DeviceFault::SliceOutside)));
        Affine offset = m.address;
        offset.constant -= a.base;
        const std::string element = fmt::format("{}[{}]", array_name_[static_cast<size_t>(m.array)], affine(offset));
        if (op == Op::LOAD) effect = fmt::format("{} = to_float({});", regs.back(), element);
        else if (accumulates(op)) effect = fmt::format("atomic_add_to(&{}, {});", element, regs.front());
        else effect = fmt::format("store_to(&{}, {});", element, regs.front());
        if (reads_dram(op)) count(m.array, false, "1");
        if (writes_dram(op)) count(m.array, true, "1");
    } else {
        // The row's semantics on the sources a, b, c (a reduction of one element, or a mask on
        // the diagonal, is its source).
        std::string value = o.shape == OpShape::RowReduce || o.shape == OpShape::Mask ? "a" : device_semantics(op);
        if (op == Op::SET) value = fmt::format("D::constant({})", float_literal(p_.immediates[static_cast<size_t>(in.mem)]));
        std::string sources;
        const int nsources = op == Op::SET ? 0 : o.register_sources();
        for (int k = 0; k < nsources; ++k) sources += fmt::format("{}{} = {}", k ? ", " : "const float ", char('a' + k), regs[static_cast<size_t>(k)]);
        effect = (sources.empty() ? "" : sources + "; ") + regs.back() + " = " + value + ";";
    }
    // A block's scalar code is thread 0's; code that several threads run alike (serial code
    // with split loops, a grid's lanes) writes DRAM from one of them (redundant_guard).
    const std::string guard = per_thread_ ? redundant_guard() : "threadIdx.x == 0";
    const bool thread0 = !per_thread_ || (!guard.empty() && writes_dram(op));
    line(thread0 ? "if (" + guard + ") { " + effect + " }" : effect);
    --indent_;
    line("}");
    if (!per_thread_) line("__syncthreads();");
}

EmittedKernel KernelEmitter::emit(const Shape& shape, const Footprint& serial_writes, const Footprint& read_later) {
    EmittedKernel out;
    const Footprint mine = footprint(p_, shape.first, shape.last);
    per_thread_ = true;
    for (std::int32_t pc = shape.first; pc < shape.last; ++pc)
        if (p_.code[static_cast<size_t>(pc)].code == Code::Tile) per_thread_ = false;
    // Serial scalar code runs on one thread, or on a block where loops reduce (codegen_reduce.cpp).
    split_loops_.clear();
    split_notes_.clear();
    if (per_thread_ && shape.grid.empty()) plan_split_loops(shape.first, shape.last);
    redundant_ = !split_loops_.empty();
    lanes_ = lanes_x_ = lanes_y_ = 1;
    lane_loops_.clear();
    unrolled_loops_.clear();
    open_lanes_[0] = open_lanes_[1] = OpenLaneLoop{};
    lane_notes_.clear();
    threads_ = per_thread_ ? (shape.grid.empty() ? (redundant_ ? kBlockThreads : 1) : kThreadsPerBlock) : block_threads_;
    out.per_thread = per_thread_;
    out.threads = threads_;
    slot_name_.assign(kMaxLoopDepth, "?");
    slot_range_.assign(kMaxLoopDepth, integer::Interval::point(0));
    counted_reads_.assign(p_.arrays.size(), false);
    counted_writes_.assign(p_.arrays.size(), false);
    array_name_.clear();
    tile_name_.clear();
    for (const auto& a : p_.arrays) array_name_.push_back(safe_name(a.name));
    // A tile named as an array (fa1.toy's m and l) becomes m_tile (or m_tile2, ... where the
    // program has an m_tile of its own).
    std::set<std::string> taken(array_name_.begin(), array_name_.end());
    for (const auto& t : p_.tiles) taken.insert(safe_name(t.name));
    for (const auto& t : p_.tiles) {
        std::string name = safe_name(t.name);
        if (std::find(array_name_.begin(), array_name_.end(), name) != array_name_.end()) {
            name = t.name + "_tile";
            for (int k = 2; taken.count(name); ++k) name = fmt::format("{}_tile{}", t.name, k);
            taken.insert(name);
        }
        tile_name_.push_back(name);
    }

    // The body first: it says which counters the kernel keeps.
    indent_ = 1;
    body_.clear();
    block_.assign(p_.tiles.size() + 1, 0);
    warp_.assign(p_.tiles.size() + 1, 0);
    // A loop's body, against what is pending where it starts and where it goes round again
    // (everything it does may come next); after it, what it left or (no iteration) what was
    // pending before it.
    struct Open { std::vector<Access> body; std::vector<unsigned char> block, warp; };
    std::vector<Open> open;
    for (int l : shape.host_loops) enter_loop(p_.loops[static_cast<size_t>(l)], false);
    for (const LoopInfo& l : shape.grid) enter_loop(l, false);
    // Tiles in registers: in a grid's blocks (serial code keeps worker 0's register file).
    serial_writes_ = serial_writes;
    fragment_.clear();
    stored_.clear();
    shared_a_.clear();
    fragment_notes_.clear();
    live_floats_ = 0;
    thread_blockings_.clear();
    stages_.clear();
    staged_heads_.clear();
    stage_notes_.clear();
    swizzled_.clear();
    wgmma_.clear();
    // A head's iterations of the grid, where its bounds are numbers (0: not known here).
    std::int64_t iterations = 1;
    for (const LoopInfo& l : shape.grid) {
        const integer::Interval r = slot_range_[static_cast<size_t>(l.slot)];
        const bool known = !r.empty() && r.lo > integer::kMin && r.hi < integer::kMax && r.hi - r.lo < (std::int64_t{1} << 40);
        iterations = known && iterations <= (std::int64_t{1} << 40) / (r.hi - r.lo + 1) ? iterations * (r.hi - r.lo + 1) : 0;
    }
    if (per_thread_ && !shape.grid.empty() && layout_.registers() > kLiveFragmentFloats)
        if (const std::string why = plan_lanes(shape.first, shape.last, iterations); !why.empty())
            lane_notes_.push_back({shape.grid.front().loc, "", fmt::format("each iteration keeps its {} registers in one GPU thread, more than it "
                                                                           "holds (ptxas spills them to local memory); its loops over registers "
                                                                           "stay on that thread: {}", layout_.registers(), why)});
    if (lanes_ > threads_) threads_ = lanes_;  // a block an iteration, at most 1,024 threads
    out.threads = threads_;
    if (!shape.serial && !shape.grid.empty()) {
        plan_fragments(shape.first, shape.last);
        plan_stages(shape.first, shape.last);
        plan_swizzle();
    }
    const bool fragments = std::find(fragment_.begin(), fragment_.end(), true) != fragment_.end();
    // Shared memory: the tiles this kernel touches (a staged tile a buffer a stage), then the
    // scalar registers. Each tile starts on 32 bytes (8 floats), for the products' 16-byte reads
    // and the tensor cores' fragment loads.
    std::vector<bool> used(p_.tiles.size(), false);
    for (size_t t = 0; t < p_.tiles.size(); ++t) used[t] = (mine.tiles_read[t] || mine.tiles_written[t]) && !(fragments && fragment_[t]);
    const bool uses_registers = mine.registers_read || mine.registers_written;
    auto tile_floats = [&](size_t t) { return shared_floats_of(static_cast<int>(t)); };
    auto copies_of = [&](size_t t) -> std::int64_t { return is_staged(static_cast<int>(t)) ? stages_[t] : 1; };
    // The swizzle repeats every 1,024 bytes: its tiles start on such a boundary, the first at
    // the block's shared memory aligned up (up to 1,024 bytes more), the others after it (each
    // takes whole 1,024 bytes: rows of 8, columns of 64).
    const bool swizzle = std::find(swizzled_.begin(), swizzled_.end(), true) != swizzled_.end();
    auto total_floats = [&] {
        std::int64_t sum = (uses_registers && !per_thread_ ? layout_.registers() : 0) + (swizzle ? 256 : 0);
        for (size_t t = 0; t < p_.tiles.size(); ++t) sum += used[t] ? tile_floats(t) * copies_of(t) : 0;
        return sum;
    };
    std::int64_t shared_floats = total_floats();
    if (!staged_heads_.empty() && shared_floats * 4 > kSharedMemoryBudget) {
        drop_stages(fmt::format("with its stages the block's tiles need {} bytes of shared memory, more than a block may have ({})", shared_floats * 4,
                                kSharedMemoryBudget));
        shared_floats = total_floats();
    }
    // Where the tiles do not all fit the largest shared memory a block can have (an H100's),
    // the largest go to global memory instead (a slice per block, cached in L1 and L2) until
    // the rest fits (staged tiles never do: their stages were dropped above). A tile kept as T
    // stays: ldmatrix and wgmma read only shared memory.
    std::vector<bool> spill(p_.tiles.size(), false);
    while (!per_thread_ && shared_floats * 4 > kSharedMemoryBudget) {
        size_t largest = p_.tiles.size(), stored = p_.tiles.size();
        for (size_t t = 0; t < p_.tiles.size(); ++t) {
            if (!used[t] || spill[t]) continue;
            if (is_stored(static_cast<int>(t))) {
                if (stored == p_.tiles.size() || tile_floats(t) > tile_floats(stored)) stored = t;
            } else if (largest == p_.tiles.size() || tile_floats(t) > tile_floats(largest)) {
                largest = t;
            }
        }
        if (largest == p_.tiles.size()) {
            if (stored == p_.tiles.size()) break;
            const Tile& tile = p_.tiles[stored];
            throw ToyError(tile.loc, fmt::format("cannot generate CUDA for this kernel: its tiles kept in shared memory as the arrays' 16-bit values "
                                                 "(the tensor cores' operands, which ldmatrix and wgmma read only there) need {} bytes of it, more "
                                                 "than a block may have ({}); the largest is tile {}[{}][{}]",
                                                 shared_floats * 4, kSharedMemoryBudget, tile.name, tile.rows, tile.cols));
        }
        spill[largest] = true;
        shared_floats -= tile_floats(largest);
    }
    const std::string grid_and_host = [&] {
        std::string text;
        for (int l : shape.host_loops) {
            const LoopInfo& loop = p_.loops[static_cast<size_t>(l)];
            text += fmt::format("    const long long {} = host.v[{}];  // line {}: the host's loop\n", slot_name_[static_cast<size_t>(loop.slot)],
                                loop.slot, loop.loc.line);
        }
        if (shape.grid.empty()) return text;
        if (lanes_ > 1)
            text += fmt::format("    // This thread's iteration of the grid ({0} threads an iteration, its lanes ({1} × {2}): they share its loops over registers).\n"
                                "    long long rest = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / {0};\n"
                                "    const int lane_x = threadIdx.x % {1}, lane_y = threadIdx.x / {1} % {2};\n    if (rest >= host.total) return;\n",
                                lanes_, lanes_x_, lanes_y_);
        else
            text += per_thread_ ? "    // This thread's iteration of the grid (a thread per iteration).\n"
                                  "    long long rest = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n    if (rest >= host.total) return;\n"
                                : "    // This block's iteration of the grid (a block per iteration).\n    long long rest = blockIdx.x;\n";
        // The innermost loop varies fastest, as the simulator hands out iterations.
        const size_t n = shape.grid.size();
        for (size_t k = n; k-- > 1;)
            text += fmt::format("    const long long offset{0} = rest % host.extent[{0}];\n    rest /= host.extent[{0}];\n", k);
        for (size_t k = 0; k < n; ++k) {
            const LoopInfo& l = shape.grid[k];
            const std::string offset = k == 0 ? std::string("rest") : fmt::format("offset{}", k);
            text += fmt::format("    const long long {} = {};  // line {}: parallel for {}\n", slot_name_[static_cast<size_t>(l.slot)],
                                l.lo.is_constant() && l.lo.constant == 0 ? offset : affine(l.lo) + " + " + offset, l.loc.line, l.var);
            text += fmt::format("    if ({} >= {}) return;\n", slot_name_[static_cast<size_t>(l.slot)], affine(l.hi));
        }
        return text;
    }();
    for (std::int32_t pc = shape.first; pc < shape.last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code == Code::LoopBegin && split_loops_.count(pc)) {
            split_loop(pc);
            pc = in.jump;  // on past its LoopEnd
        } else if (in.code == Code::LoopBegin && lane_loops_.count(pc)) {
            open.push_back(Open{{}, block_, warp_});  // scalar code: no tiles to wait for
            open_lane_loop(pc);
        } else if (in.code == Code::LoopBegin) {
            std::int32_t end = pc + 1;
            for (int depth = 1; end < shape.last; ++end) {
                const Code c = p_.code[static_cast<size_t>(end)].code;
                depth += c == Code::LoopBegin ? 1 : c == Code::LoopEnd ? -1 : 0;
                if (depth == 0) break;
            }
            Open o{accesses(pc + 1, end), {}, {}};
            sync(needed(o.body));
            o.block = block_, o.warp = warp_;
            open.push_back(std::move(o));
            const auto staged = staged_heads_.find(in.loop);
            enter_loop(p_.loops[static_cast<size_t>(in.loop)], staged == staged_heads_.end(), unrolled_loops_.count(in.loop) > 0);
            if (staged != staged_heads_.end()) open_staged_loop(p_.loops[static_cast<size_t>(in.loop)], staged->second);
        } else if (in.code == Code::LoopEnd) {
            const Open o = std::move(open.back());
            open.pop_back();
            sync(needed(o.body));  // the next iteration
            for (size_t k = 0; k < block_.size(); ++k) block_[k] |= o.block[k], warp_[k] |= o.warp[k];
            --indent_;
            line("}");
            for (OpenLaneLoop& lane : open_lanes_)
                if (pc == lane.end) lane = OpenLaneLoop{};
        } else if (is_instruction(in.code)) {
            instruction(pc);
        }
    }

    std::string head;
    std::int64_t floats = 0, spilled = 0;
    if (!per_thread_ && swizzle)
        head += "    extern __shared__ __align__(1024) float smem_raw[];\n"
                "    // The tiles in the swizzle first, from a 1,024-byte boundary (the swizzle's period).\n"
                "    float* const smem = smem_raw + ((1024u - ((unsigned)__cvta_generic_to_shared(smem_raw) & 1023u)) & 1023u) / 4;\n";
    else if (!per_thread_)
        head += "    extern __shared__ __align__(128) float smem[];\n";
    std::vector<size_t> order;  // the tiles in the swizzle, then the others
    for (size_t t = 0; t < p_.tiles.size(); ++t)
        if (is_swizzled(static_cast<int>(t))) order.push_back(t);
    for (size_t t = 0; t < p_.tiles.size(); ++t)
        if (!is_swizzled(static_cast<int>(t))) order.push_back(t);
    for (size_t t : order) {
        if (!used[t]) continue;
        const Tile& tile = p_.tiles[t];
        const std::int64_t bytes = tile_floats(t) * 4;
        if (spill[t]) {
            head += fmt::format("    float* const {} = spill + ((long long)blockIdx.y * gridDim.x + blockIdx.x) * {} + {};  // line {}: tile {}[{}][{}] "
                                "(row stride {}), in global memory: shared memory is full\n",
                                tile_name_[t], kSpillPerBlockMarker, spilled, tile.loc.line, tile.name, tile.rows, tile.cols, stride(static_cast<int>(t)));
            spilled += bytes / 4;
        } else if (is_staged(static_cast<int>(t))) {
            head += fmt::format("    float* const {}_stages = smem + {};  // line {}: tile {}[{}][{}] as T, its arrays' values ({}): {} buffers of {} "
                                "floats, copied asynchronously\n",
                                tile_name_[t], floats, tile.loc.line, tile.name, tile.rows, tile.cols, layout_note(static_cast<int>(t)), stages_[t], bytes / 4);
            head += fmt::format("    T* {0} = reinterpret_cast<T*>({0}_stages);  // the buffer of the iteration in hand\n", tile_name_[t]);
            floats += bytes / 4 * stages_[t];
        } else if (is_stored(static_cast<int>(t))) {
            head += fmt::format("    T* const {} = reinterpret_cast<T*>(smem + {});  // line {}: tile {}[{}][{}] as T, its arrays' values ({})\n",
                                tile_name_[t], floats, tile.loc.line, tile.name, tile.rows, tile.cols, layout_note(static_cast<int>(t)));
            floats += bytes / 4;
        } else {
            head += fmt::format("    float* const {} = smem + {};  // line {}: tile {}[{}][{}] (row stride {})\n", tile_name_[t], floats,
                                tile.loc.line, tile.name, tile.rows, tile.cols, stride(static_cast<int>(t)));
            floats += bytes / 4;
        }
        head += fmt::format("    int {0}_rows = 0, {0}_cols = 0;  // its shape: what was last written to it\n", tile_name_[t]);
        if (bytes > out.largest_tile_bytes) {
            out.largest_tile_bytes = bytes;
            out.largest_tile = fmt::format("{}[{}][{}]", tile.name, tile.rows, tile.cols);
            out.largest_tile_loc = tile.loc;
        }
    }
    for (size_t t = 0; fragments && t < p_.tiles.size(); ++t)
        if (fragment_[t]) head += fragment_declaration(t);
    for (size_t at = head.find(kSpillPerBlockMarker); at != std::string::npos; at = head.find(kSpillPerBlockMarker))
        head.replace(at, std::string(kSpillPerBlockMarker).size(), std::to_string(spilled));
    out.spill_floats = spilled;
    if (std::find(stored_.begin(), stored_.end(), true) != stored_.end()) out.tiles_stored = stored_;
    out.thread_blockings = thread_blockings_;
    if (!staged_heads_.empty()) out.tile_stages = stages_;
    // A block kernel asks for as many blocks an SM as leave a thread 128 registers (65,536 an
    // SM): 2 of 256 threads, 4 of 128 (a program's `warps 4`).
    if (!per_thread_) out.min_blocks = static_cast<int>(std::max(1, 65536 / (128 * threads_)));
    if (fragments) {
        out.tiles_in_registers = fragment_;
        out.register_floats = fragment_floats();
        out.live_register_floats = live_floats_;
        // Two blocks an SM leave a thread 128 registers; one leaves 255. fa2 at Br = 128 (its
        // fragments O, Q, S, P and 4 row statistics) on the H100, n = 4096, 16 heads, fp16, the
        // same run (gpu/tools/fragment_blocks.sh): up to 168 floats two blocks are faster even
        // where ptxas spills a little (d = 128, Bc = 16: 152 floats, 56 bytes, 1.26 ms against
        // 2.00 at one block; Bc = 32: 168, 184 bytes, 1.01 against 1.31; d = 64, Bc = 64: 136, 16
        // bytes, 0.49 against 0.70); at 200 and more one block is, spilling nothing (d = 128,
        // Bc = 64: 0.93 against 0.96 with 272 bytes spilled; Bc = 128, 264 floats: 0.85 against
        // 1.16 with 568; d = 64, Bc = 128: 0.485 either way).
        // The same a thread at any block size: 128 registers (255 past 168 floats), as many
        // blocks an SM as leave a thread that many.
        const std::int64_t registers = out.register_floats > kTwoBlockFragmentFloats ? 255 : 128;
        out.min_blocks = static_cast<int>(std::max<std::int64_t>(1, 65536 / (registers * threads_)));
    }
    if (!shape.serial && !shape.grid.empty() && !per_thread_) out.slow_paths = slow_products(shape.first, shape.last);
    out.slow_paths.insert(out.slow_paths.end(), fragment_notes_.begin(), fragment_notes_.end());
    out.slow_paths.insert(out.slow_paths.end(), stage_notes_.begin(), stage_notes_.end());
    out.slow_paths.insert(out.slow_paths.end(), split_notes_.begin(), split_notes_.end());
    out.slow_paths.insert(out.slow_paths.end(), lane_notes_.begin(), lane_notes_.end());
    out.lanes = lanes_;
    if (spilled > 0)
        out.slow_paths.push_back({out.largest_tile_loc, "", fmt::format("the block's tiles need more shared memory than a block may have: {} bytes of "
                                                                    "them live in global memory, traffic that no array counts (the largest "
                                                                    "tile: {})",
                                                                    spilled * 4, out.largest_tile)});
    if (uses_registers) {
        if (per_thread_) head += fmt::format("    float R[{}];  // the scalar registers\n", layout_.registers());
        else head += fmt::format("    float* const R = smem + {};  // the scalar registers\n", floats);
        if (!per_thread_) floats += layout_.registers();
    }
    out.shared_bytes = floats * 4 + (swizzle ? 1024 : 0);
    out.wgmma.assign(wgmma_.begin(), wgmma_.end());
    head += "    const long long head = blockIdx.y;  // each head's arrays follow the previous head's\n";
    for (size_t a = 0; a < p_.arrays.size(); ++a)
        if (counted_reads_[a] || counted_writes_[a]) head += fmt::format("    {} += head * {};\n", array_name_[a], p_.arrays[a].size);
    const size_t regfile_at = head.size();  // where `regfile += ...` goes, if the kernel uses it
    std::string counters;
    for (size_t a = 0; a < p_.arrays.size(); ++a) {
        if (counted_reads_[a]) counters += fmt::format("{}reads_{} = 0", counters.empty() ? "" : ", ", array_name_[a]);
        if (counted_writes_[a]) counters += fmt::format("{}writes_{} = 0", counters.empty() ? "" : ", ", array_name_[a]);
    }
    if (!counters.empty()) head += "    unsigned long long " + counters + ";  // elements moved (the counting variant)\n";
    head += grid_and_host;

    // Worker 0's register file: what serial code before this launch left, for the tiles and
    // registers this code reads; serial code keeps what it writes, for the code after it.
    std::string load, save;
    for (size_t t = 0; t < p_.tiles.size(); ++t) {
        const std::string& n = tile_name_[t];
        const int ti = static_cast<int>(t);
        if (mine.tiles_read[t] && t < serial_writes.tiles_written.size() && serial_writes.tiles_written[t]) {
            load += fmt::format("    {0}_rows = (int)regfile[{1}];\n    {0}_cols = (int)regfile[{2}];\n", n, layout_.shape_offset(ti), layout_.shape_offset(ti) + 1);
            load += fmt::format("    tile_copy({0}, {1}, regfile + {2}, {3}, {0}_rows, {0}_cols);\n", n, stride(ti), layout_.tile_offset(ti), p_.tiles[t].cols);
        }
        if (shape.serial && mine.tiles_written[t] && t < read_later.tiles_read.size() && read_later.tiles_read[t]) {
            save += fmt::format("    tile_copy(regfile + {1}, {2}, {0}, {3}, {0}_rows, {0}_cols);\n", n, layout_.tile_offset(ti), p_.tiles[t].cols, stride(ti));
            save += fmt::format("    if (threadIdx.x == 0) {{ regfile[{1}] = (float){0}_rows; regfile[{2}] = (float){0}_cols; }}\n", n, layout_.shape_offset(ti),
                                layout_.shape_offset(ti) + 1);
        }
    }
    const std::string all_registers = fmt::format("for (int r = {}; r < {}; r += {})", per_thread_ ? "0" : "threadIdx.x", layout_.registers(),
                                                  per_thread_ ? "1" : "blockDim.x");
    if (mine.registers_read && serial_writes.registers_written)
        load += fmt::format("    {} R[r] = regfile[{} + r];\n", all_registers, layout_.register_offset());
    if (shape.serial && mine.registers_written && read_later.registers_read)
        save += fmt::format("    {}{} regfile[{} + r] = R[r];\n", redundant_ ? "if (threadIdx.x == 0) " : "", all_registers, layout_.register_offset());
    if (!load.empty() || !save.empty()) head.insert(regfile_at, fmt::format("    regfile += head * {};\n", layout_.regfile_floats()));
    if (!load.empty()) {
        head += "    // Worker 0's registers, as the serial code before this launch left them.\n" + load;
        if (!per_thread_) head += "    __syncthreads();\n";
    }

    // The variants: timed (kCount = false, no counting code) and counting.
    std::string params;
    for (size_t a = 0; a < p_.arrays.size(); ++a) params += fmt::format("{}* __restrict__ {}, ", fp32_arrays_[a] ? "float" : "T", array_name_[a]);
    params += "unsigned long long* counts, float* regfile, float* spill, int* fault, HostVars host";
    std::string args;
    for (size_t a = 0; a < p_.arrays.size(); ++a) args += array_name_[a] + ", ";
    args += "counts, regfile, spill, fault, host";
    std::string& s = out.source;
    const Loc where = shape.grid.empty() ? code_loc(p_, shape.first) : shape.grid.front().loc;
    s += fmt::format("\n// ---- {}: {} ----\n", shape.function,
                     shape.grid.empty() ? fmt::format("serial code from line {}, one {} per head", where.line,
                                                      redundant_ ? "block (its reductions split over the threads)" : per_thread_ ? "thread" : "block")
                                        : fmt::format("the grid at line {}, one {} per iteration", where.line, per_thread_ ? "thread" : "block"));
    s += fmt::format("template <bool kCount>\n__device__ __forceinline__ void {}_body({}) {{\n", shape.function, params);
    s += head + body_;
    if (!save.empty()) s += "    // Worker 0 keeps its registers for the code after this launch.\n" + (per_thread_ ? "" : std::string("    __syncthreads();\n")) + save;
    if (!counters.empty()) {
        s += per_thread_ ? "    if constexpr (kCount) {\n" : "    if constexpr (kCount) if (threadIdx.x == 0) {\n";
        for (size_t a = 0; a < p_.arrays.size(); ++a) {
            if (counted_reads_[a]) s += fmt::format("        if (reads_{0}) atomicAdd(&counts[{1}], reads_{0});\n", array_name_[a], 2 * a);
            if (counted_writes_[a]) s += fmt::format("        if (writes_{0}) atomicAdd(&counts[{1}], writes_{0});\n", array_name_[a], 2 * a + 1);
        }
        s += "    }\n";
    }
    s += "}\n";
    for (bool counting : {false, true})
        // (A block kernel: two blocks an SM where its tiles in registers allow, KernelLaunchFacts::min_blocks.)
        s += fmt::format("extern \"C\" __global__ void __launch_bounds__({}) {}{}({}) {{ {}_body<{}>({}); }}\n",
                         per_thread_ ? std::to_string(std::max(threads_, 32)) : fmt::format("{}, {}", threads_, out.min_blocks),
                         shape.function, counting ? "_count" : "", params, shape.function, counting ? "true" : "false", args);
    return out;
}

}  // namespace toysim::gpu
