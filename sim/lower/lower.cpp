// The body: loops, instructions and their operands lowered to the flat code of program.h.
// Register operands (R3, R[expr], tiles), memory operands (affine subscripts, with bounds
// proven where the loop ranges allow) and tile slices, and which register reads are proven
// written (definite assignment).
#include <fmt/format.h>

#include "support/text.h"

#include "sim/lower/compiler.h"

namespace toysim::detail {

int Compiler::emit_plain(Code code) {
    p_.code.push_back(Inst{code});
    p_.origin.push_back(nullptr);
    p_.enclosing_loops.push_back(open_loops_);
    return static_cast<int>(p_.code.size()) - 1;
}

void Compiler::lower_body(const std::vector<ast::Statement>& body) {
    for (const auto& s : body) {
        if (auto* in = std::get_if<ast::Instruction>(&s))
            lower_instruction(*in);
        else
            lower_loop(*std::get<std::unique_ptr<ast::Loop>>(s));
    }
}

void Compiler::lower_loop(const ast::Loop& l) {
    if (static_cast<int>(scope_.size()) >= kMaxLoopDepth)
        throw ToyError(l.loc, fmt::format("loops may nest at most {} deep", kMaxLoopDepth));
    if (params_.count(l.var)) throw ToyError(l.var_loc, fmt::format("loop variable {} hides the parameter of that name", quoted_name(l.var)));
    for (const auto& [name, slot] : scope_)
        if (name == l.var) throw ToyError(l.var_loc, fmt::format("loop variable {} is already used by an enclosing loop", quoted_name(l.var)));
    if (!has_instructions(l.body))
        throw ToyError(l.loc, "this loop contains no instructions: it would only spin (loops cost nothing and show nothing)");
    if (l.devices) {
        if (!p_.devices) throw ToyError(l.loc, "'on devices' runs its body on every device: declare 'devices D' above it");
        if (!open_loops_.empty()) throw ToyError(l.loc, "'on devices' is a block of the program's top level, not inside a loop");
    } else if (l.parallel && in_devices_) {
        throw ToyError(l.parallel_loc, "a parallel loop inside 'on devices': each device is one worker here (a device's workers are not modeled yet)");
    }
    LoopInfo info{static_cast<int>(scope_.size()), affine(*l.lo), l.hi ? affine(*l.hi) : Affine{p_.devices}, l.var, l.loc};
    info.devices = l.devices;
    // A parallel loop directly inside another (the whole of its body) adds a dimension to the
    // other's grid; anywhere else inside one it would be parallelism within one worker.
    const LoopInfo* outer = open_loops_.empty() ? nullptr : &p_.loops[static_cast<size_t>(open_loops_.back())];
    bool extends_grid = false;
    if (l.parallel) {
        extends_grid = outer && outer->parallel && outer->grid_inner && grid_body_ == &l;
        if (parallel_depth_ > 0 && !extends_grid)
            throw ToyError(l.parallel_loc, "a parallel loop inside an iteration of another parallel loop: make it the whole body of the "
                                           "outer loop (the two form a grid of iterations), or drop 'parallel'");
        info.parallel = true;
        info.grid_inner = true;
        info.grid_outer = !extends_grid;
        if (extends_grid) p_.loops[static_cast<size_t>(open_loops_.back())].grid_inner = false;
        p_.has_parallel = true;
    }
    // The values the variable takes (an overflowing bound gives "everything": nothing is then
    // proven from it, and the run checks each bound as it evaluates it).
    Interval lo = range(info.lo), hi = range(info.hi);
    int index = static_cast<int>(p_.loops.size());
    p_.loops.push_back(info);
    int begin = emit_plain(Code::LoopBegin);
    p_.code[static_cast<size_t>(begin)].loop = index;
    scope_.emplace_back(l.var, info.slot);
    ranges_.resize(scope_.size());
    ranges_[static_cast<size_t>(info.slot)] = integer::loop_values(lo, hi);
    open_loops_.push_back(index);
    // A write inside the body is definite after the loop only if the body surely runs.
    std::vector<bool> written_before = definitely_written_;
    std::vector<bool> tiles_before = tile_written_;
    const bool starts_iteration = l.parallel && !extends_grid;
    if (starts_iteration) {
        // Each iteration's worker starts with a copy of the registers and tiles as the loop
        // found them. What the body never writes stays that value on every worker and may be
        // read anywhere in it; what the body writes holds, on a worker that ran an iteration
        // before, that iteration's value: readable only after this iteration writes it.
        std::vector<bool> regs_written(definitely_written_.size()), tiles_written(tile_written_.size());
        collect_writes(l.body, regs_written, tiles_written);
        // And what R[expr] may write. A bad expression is reported where lowering reaches it, in
        // order; here it only makes every register one the loop may write.
        const std::size_t depth = scope_.size();
        bool bounded = false;
        try {
            bounded = collect_dynamic_writes(l.body, regs_written);
        } catch (const ToyError&) {
        }
        scope_.resize(depth);
        ranges_.resize(depth);
        if (!bounded) std::fill(regs_written.begin(), regs_written.end(), true);
        iteration_writes_ = regs_written;
        for (size_t r = 0; r < regs_written.size(); ++r)
            if (regs_written[r]) definitely_written_[r] = false;
        for (size_t t = 0; t < tiles_written.size(); ++t)
            if (tiles_written[t]) tile_written_[t] = false;
        ++parallel_depth_;
    }
    if (l.parallel && l.body.size() == 1) {
        auto* inner = std::get_if<std::unique_ptr<ast::Loop>>(&l.body.front());
        grid_body_ = inner ? inner->get() : nullptr;
    }
    ++run_;  // a new run of code: what the last one wrote by R[expr] is no longer "the same register"
    run_writes_.clear();
    in_devices_ = in_devices_ || l.devices;
    lower_body(l.body);
    if (l.devices) in_devices_ = false;
    ++run_;
    run_writes_.clear();
    if (starts_iteration) {
        --parallel_depth_;
        // After the loop, a register or tile its iterations wrote holds whichever worker's value:
        // clobbered until written again. The rest is as before the loop.
        for (size_t r = 0; r < definitely_written_.size(); ++r)
            if (definitely_written_[r] || written_inside_[r]) clobbered_[r] = index;
        for (size_t t = 0; t < tile_written_.size(); ++t)
            if (tile_written_[t] || tile_written_inside_[t]) tile_clobbered_[t] = index;
        definitely_written_ = std::move(written_before);
        tile_written_ = std::move(tiles_before);
        for (size_t r = 0; r < definitely_written_.size(); ++r)
            if (clobbered_[r] == index) definitely_written_[r] = false;
        for (size_t t = 0; t < tile_written_.size(); ++t)
            if (tile_clobbered_[t] == index) tile_written_[t] = false;
        if (parallel_depth_ == 0) {
            std::fill(written_inside_.begin(), written_inside_.end(), false);
            std::fill(tile_written_inside_.begin(), tile_written_inside_.end(), false);
            dynamic_writes_.clear();
            run_writes_.clear();
        }
    } else {
        bool surely_runs = lo.empty() || hi.empty() || lo.hi < hi.lo;  // (empty: this code is never reached)
        if (!surely_runs) {
            definitely_written_ = std::move(written_before);
            tile_written_ = std::move(tiles_before);
        }
        // A serial loop: the R[expr] writes it holds may now be counted.
        if (!l.parallel) settle_dynamic_writes(index);
    }
    open_loops_.pop_back();
    scope_.pop_back();
    int end = emit_plain(Code::LoopEnd);
    p_.code[static_cast<size_t>(end)].loop = index;
    p_.code[static_cast<size_t>(end)].jump = begin;
    p_.code[static_cast<size_t>(begin)].jump = end;
    p_.loops[static_cast<size_t>(index)].body = {begin + 1, end};
}

// Every named register and tile some instruction of `body` writes.
void Compiler::collect_writes(const std::vector<ast::Statement>& body, std::vector<bool>& regs, std::vector<bool>& tiles) const {
    for (const auto& st : body) {
        if (const auto* loop = std::get_if<std::unique_ptr<ast::Loop>>(&st)) {
            collect_writes((*loop)->body, regs, tiles);
            continue;
        }
        const auto& in = std::get<ast::Instruction>(st);
        const OpInfo& op = info(in.op);
        for (int i = 0; i < op.operand_count() && i < static_cast<int>(in.operands.size()); ++i) {
            if (op.operand(i) != OperandKind::RegWrite) continue;
            const ast::Operand& o = in.operands[static_cast<size_t>(i)];
            if (o.kind == ast::Operand::Kind::Register && o.reg >= 0 && o.reg < static_cast<int>(regs.size())) regs[static_cast<size_t>(o.reg)] = true;
            if (names_tile(o)) tiles[static_cast<size_t>(p_.find_tile(o.array))] = true;
        }
    }
}

// A register (reg >= 0) or tile (tile >= 0) read here: inside a parallel iteration it must have
// been written earlier in the same iteration; after a parallel loop, not left by its iterations.
void Compiler::read_private(std::int32_t reg, int tile, Loc loc) {
    const std::string name = reg >= 0 ? fmt::format("R{}", reg) : fmt::format("tile '{}'", p_.tiles[static_cast<size_t>(tile)].name);
    bool written = reg >= 0 ? definitely_written_[static_cast<size_t>(reg)] : tile_written_[static_cast<size_t>(tile)];
    if (parallel_depth_ > 0 && !written) {
        const LoopInfo& l = p_.loops[static_cast<size_t>(innermost_iteration_loop())];
        throw ToyError(loc, fmt::format("{} is read before this iteration of the parallel loop over {} (line {}) surely writes it: each "
                                        "iteration runs on a worker of its own, which may have run another iteration before, so "
                                        "inside the loop a register or tile the loop writes is read only after the iteration writes it",
                                        name, l.var, l.loc.line));
    }
    int clobbered = reg >= 0 ? clobbered_[static_cast<size_t>(reg)] : tile_clobbered_[static_cast<size_t>(tile)];
    if (!written && clobbered >= 0) {
        const LoopInfo& l = p_.loops[static_cast<size_t>(clobbered)];
        throw ToyError(loc, fmt::format("{} was written by the iterations of the parallel loop over {} (line {}): after that loop it "
                                        "holds whichever worker's value, so write it again before reading it",
                                        name, l.var, l.loc.line));
    }
}

void Compiler::wrote_private(std::int32_t reg, int tile) {
    if (reg >= 0) {
        clobbered_[static_cast<size_t>(reg)] = -1;
        if (parallel_depth_ > 0) written_inside_[static_cast<size_t>(reg)] = true;
    }
    if (tile >= 0) {
        tile_written_[static_cast<size_t>(tile)] = true;
        tile_clobbered_[static_cast<size_t>(tile)] = -1;
        if (parallel_depth_ > 0) tile_written_inside_[static_cast<size_t>(tile)] = true;
    }
}

int Compiler::innermost_iteration_loop() const {
    for (auto it = open_loops_.rbegin(); it != open_loops_.rend(); ++it)
        if (p_.loops[static_cast<size_t>(*it)].grid_outer) return *it;
    return open_loops_.back();
}

bool Compiler::has_instructions(const std::vector<ast::Statement>& body) {
    for (const auto& s : body)
        if (std::holds_alternative<ast::Instruction>(s) || has_instructions(std::get<std::unique_ptr<ast::Loop>>(s)->body)) return true;
    return false;
}

std::string_view Compiler::kind_name(ast::Operand::Kind k) {
    return k == ast::Operand::Kind::Memory ? "a DRAM element" : k == ast::Operand::Kind::Immediate ? "a number"
           : k == ast::Operand::Kind::Device                               ? "a device"
                                                                           : "a register";
}

bool Compiler::names_tile(const ast::Operand& o) const {
    return o.kind == ast::Operand::Kind::Memory && o.subscripts.empty() && p_.find_tile(o.array) >= 0;
}

// A tile instruction names a tile or moves a slice (a range a..b in a subscript).
bool Compiler::is_tile_instruction(const ast::Instruction& in) const {
    for (const auto& o : in.operands) {
        if (names_tile(o)) return true;
        for (const auto& end : o.subscript_ends)
            if (end) return true;
    }
    return false;
}

void Compiler::check_operand_count(const ast::Instruction& in, const OpInfo& op) {
    if (static_cast<int>(in.operands.size()) == op.operand_count()) return;
    Loc loc = in.operands.size() > static_cast<size_t>(op.operand_count()) ? in.operands[static_cast<size_t>(op.operand_count())].loc : in.loc;
    throw ToyError(loc, fmt::format("{} takes {} operand{} ({}), got {}", op.mnemonic, op.operand_count(),
                                    op.operand_count() == 1 ? "" : "s", op.operands, in.operands.size()));
}

void Compiler::wrong_operand(const ast::Operand& o, const OpInfo& op, int i, std::string_view want) {
    std::string got = o.kind == ast::Operand::Kind::Memory && o.subscripts.empty() && p_.find_array(o.array) < 0 && p_.find_tile(o.array) < 0
                          ? quoted_name(o.array)
                      : names_tile(o) ? fmt::format("tile {}", quoted_name(o.array))
                                      : std::string(kind_name(o.kind));
    throw ToyError(o.loc, fmt::format("operand {} of {} ({}) must be {}, got {}", i + 1, op.mnemonic, operand_name(op, i), want, got));
}

void Compiler::lower_tile_instruction(const ast::Instruction& in, const OpInfo& op) {
    TileInst t;
    t.op = in.op;
    int slice_ranges = -1;
    Loc slice_loc;
    for (int i = 0; i < op.operand_count(); ++i) {
        const ast::Operand& o = in.operands[static_cast<size_t>(i)];
        OperandKind want = op.operand(i);
        if (want == OperandKind::Immediate) {
            if (o.kind != ast::Operand::Kind::Immediate) wrong_operand(o, op, i, "a number such as 0 or -inf");
            t.imm = o.immediate;
            continue;
        }
        if (want == OperandKind::MemRead || want == OperandKind::MemWrite) {
            if (o.kind != ast::Operand::Kind::Memory || names_tile(o)) wrong_operand(o, op, i, "a DRAM slice such as x[i*B..i*B+B]");
            t.mem = lower_memory(o, want == OperandKind::MemWrite, op);
            slice_ranges = p_.mems[static_cast<size_t>(t.mem)].range_count();
            slice_loc = o.loc;
            continue;
        }
        TileOperand arg;
        if (names_tile(o)) {
            arg.kind = TileOperand::Kind::Tile;
            arg.index = p_.find_tile(o.array);
        } else if (o.kind == ast::Operand::Kind::Register || o.kind == ast::Operand::Kind::IndexedRegister) {
            Inst scratch{};
            arg.kind = TileOperand::Kind::Register;
            arg.index = lower_register(o, scratch);
        } else {
            wrong_operand(o, op, i, "a tile or a register");
        }
        if (arg.kind == TileOperand::Kind::Register && arg.index < 0) {
            const Affine& index = p_.dynamic_registers[static_cast<size_t>(-arg.index - 1)].index;
            if (want == OperandKind::RegRead) dynamic_read(index, o.loc);
            else dynamic_write(index, o.loc);
        }
        {
            std::int32_t reg = arg.kind == TileOperand::Kind::Register ? arg.index : -1;
            int tile = arg.kind == TileOperand::Kind::Tile ? arg.index : -1;
            if (reg >= 0 || tile >= 0) {
                if (want == OperandKind::RegRead) read_private(reg, tile, o.loc);
                else wrote_private(reg, tile);
            }
        }
        if (o.transposed) {
            bool matmul_source = info(in.op).shape == OpShape::Product && i < 2;
            if (!matmul_source) throw ToyError(o.loc, "a transposed tile (.T) is a source of MAC or MAC_Z, a matrix product");
            arg.transposed = true;
        }
        t.args[static_cast<size_t>(t.count++)] = arg;
    }
    // A slice's ranges are the tile's dimensions: Q[i*Br..i*Br+Br][0..d] fills a Br×d tile.
    if (t.mem >= 0) {
        const TileOperand& other = t.args[0];
        if (other.kind == TileOperand::Kind::Register && slice_ranges > 0)
            throw ToyError(slice_loc, fmt::format("{} of a slice needs a tile, not a scalar register", op.mnemonic));
        if (other.kind == TileOperand::Kind::Tile) {
            const Tile& b = p_.tiles[static_cast<size_t>(other.index)];
            // One range into a column tile (Br×1): the slice is that column, as L[i*Br..i*Br+Br]
            // is stored from the column of row statistics.
            t.column = slice_ranges == 1 && b.rank == 2 && b.cols == 1;
            if (slice_ranges != 0 && slice_ranges != b.rank && !t.column)
                throw ToyError(slice_loc, fmt::format("the slice has {} range{} but tile '{}' has {} dimension{}", slice_ranges,
                                                      slice_ranges == 1 ? "" : "s", b.name, b.rank, b.rank == 1 ? "" : "s"));
            check_slice_widths(p_.mems[static_cast<size_t>(t.mem)], b, t.column, slice_loc);
        }
    }
    p_.tile_insts.push_back(t);
    Inst inst{Code::Tile};
    inst.mem = static_cast<std::int32_t>(p_.tile_insts.size()) - 1;
    int at = emit_plain(inst.code);
    p_.code[static_cast<size_t>(at)] = inst;
    p_.origin[static_cast<size_t>(at)] = &in;
}

// A range whose width is known now must fit the tile; widths that vary are checked as they run.
void Compiler::check_slice_widths(const MemRef& m, const Tile& b, bool column, Loc loc) {
    std::vector<std::int64_t> capacity = column ? std::vector<std::int64_t>{b.rows}
                                         : b.rank == 2 ? std::vector<std::int64_t>{b.rows, b.cols}
                                                       : std::vector<std::int64_t>{b.cols};
    size_t k = 0;
    for (size_t d = 0; d < m.subscripts.size(); ++d) {
        if (!m.is_range[d]) continue;
        Affine width = combine(m.ends[d], m.subscripts[d], -1, loc);
        if (width.is_constant()) {
            if (width.constant < 1) throw ToyError(loc, fmt::format("range {} of the slice is empty (its end is not after its start)", k + 1));
            if (k < capacity.size() && width.constant > capacity[k])
                throw ToyError(loc, fmt::format("range {} of the slice spans {} elements but tile '{}' holds {} in that dimension",
                                                k + 1, width.constant, b.name, capacity[k]));
        }
        ++k;
    }
}

// SEND src, @device and RECV @device, dst: a DRAM element or slice, and a device's number
// (affine in the loop variables, taken modulo D when it runs).
void Compiler::lower_transfer(const ast::Instruction& in, const OpInfo& op) {
    if (!in_devices_)
        throw ToyError(in.loc, fmt::format("{} moves data between devices: it belongs inside 'on devices r {{ ... }}'{}", op.mnemonic,
                                           p_.devices ? "" : " (and the program declares 'devices D')"));
    Inst inst{static_cast<Code>(in.op)};
    for (int i = 0; i < op.operand_count(); ++i) {
        const ast::Operand& o = in.operands[static_cast<size_t>(i)];
        OperandKind want = op.operand(i);
        if (want == OperandKind::Device) {
            if (o.kind != ast::Operand::Kind::Device) wrong_operand(o, op, i, "a device such as @r+1");
            p_.device_operands.push_back(affine(*o.reg_index));
            inst.jump = static_cast<std::int32_t>(p_.device_operands.size()) - 1;
            continue;
        }
        if (o.kind != ast::Operand::Kind::Memory || names_tile(o)) wrong_operand(o, op, i, "a DRAM element or slice such as K[r*N..r*N+N][0..d]");
        if (o.transposed) throw ToyError(o.loc, "a transposed tile (.T) is a source of MAC or MAC_Z, a matrix product");
        inst.mem = lower_memory(o, want == OperandKind::MemWrite, op);
    }
    int at = emit_plain(inst.code);
    p_.code[static_cast<size_t>(at)] = inst;
    p_.origin[static_cast<size_t>(at)] = &in;
}

void Compiler::lower_instruction(const ast::Instruction& in) {
    const OpInfo& op = info(in.op);
    check_operand_count(in, op);
    if (p_.devices && !in_devices_)
        throw ToyError(in.loc, "with 'devices', instructions run on the devices: put this one inside 'on devices r { ... }'");
    if (is_transfer(in.op)) return lower_transfer(in, op);
    for (const auto& o : in.operands)
        if (o.kind == ast::Operand::Kind::Device) throw ToyError(o.loc, fmt::format("{} takes no device: only SEND and RECV do", op.mnemonic));
    if (is_tile_instruction(in)) return lower_tile_instruction(in, op);
    Inst inst{static_cast<Code>(in.op)};
    for (int i = 0; i < op.operand_count(); ++i) {
        const ast::Operand& o = in.operands[static_cast<size_t>(i)];
        OperandKind want = op.operand(i);
        if (want == OperandKind::Immediate) {
            if (o.kind != ast::Operand::Kind::Immediate) wrong_operand(o, op, i, "a number such as 0 or -inf");
            p_.immediates.push_back(o.immediate);
            inst.mem = static_cast<std::int32_t>(p_.immediates.size()) - 1;
            continue;
        }
        if (o.transposed) throw ToyError(o.loc, "a transposed tile (.T) is a source of MAC or MAC_Z, a matrix product");
        bool want_mem = want == OperandKind::MemRead || want == OperandKind::MemWrite;
        bool is_mem = o.kind == ast::Operand::Kind::Memory;
        // (An unknown bare word where a register belongs is most likely a misspelt register.)
        if (want_mem != is_mem || o.kind == ast::Operand::Kind::Immediate)
            wrong_operand(o, op, i, want_mem ? "a DRAM element such as x[i]" : "a register such as R0");
        if (is_mem) {
            inst.mem = lower_memory(o, want == OperandKind::MemWrite, op);
            continue;
        }
        std::int32_t r = lower_register(o, inst);
        // SET's middle operand only lends its rows, and a scalar's shape is always 1×1.
        bool shape_only = info(in.op).shape == OpShape::Fill && i == 1;
        if (r < 0) {
            const Affine& index = p_.dynamic_registers[static_cast<size_t>(-r - 1)].index;
            if (want == OperandKind::RegWrite) dynamic_write(index, o.loc);
            else if (!shape_only) dynamic_read(index, o.loc);
        }
        if (want == OperandKind::RegRead && !shape_only && r >= 0) read_private(r, -1, o.loc);
        if (want == OperandKind::RegWrite && r >= 0) wrote_private(r, -1);
        bool proven = shape_only || (r >= 0 && definitely_written_[static_cast<size_t>(r)]);
        if (want == OperandKind::RegRead && !proven) inst.unproven_reads |= static_cast<std::uint8_t>(1u << inst.reg_count);
        if (want == OperandKind::RegWrite && r >= 0) definitely_written_[static_cast<size_t>(r)] = true;
        inst.reg[inst.reg_count++] = r;
    }
    int at = emit_plain(inst.code);
    p_.code[static_cast<size_t>(at)] = inst;
    p_.origin[static_cast<size_t>(at)] = &in;
}

std::string Compiler::operand_name(const OpInfo& op, int i) {
    std::string_view names = op.operands;
    for (int k = 0; k < i; ++k) names = names.substr(names.find(", ") + 2);
    return std::string(names.substr(0, names.find(',')));
}

std::int32_t Compiler::lower_register(const ast::Operand& o, Inst& inst) {
    if (o.kind == ast::Operand::Kind::Register) {
        if (o.reg >= p_.scalar_registers)
            throw ToyError(o.loc, fmt::format("register R{} is beyond the register file ({})", o.reg, p_.register_file_text()));
        return o.reg;
    }
    DynamicRegister d{affine(*o.reg_index), o.loc};
    Interval r = range(d.index);
    if (r.lo <= r.hi && r.lo >= 0 && r.hi < p_.scalar_registers && d.index.is_constant()) return static_cast<std::int32_t>(r.lo);
    inst.dynamic_registers = true;
    p_.dynamic_registers.push_back(d);
    return -static_cast<std::int32_t>(p_.dynamic_registers.size());
}

int Compiler::lower_memory(const ast::Operand& o, bool write, const OpInfo& op) {
    int array = array_named(o.array, o.array_loc);
    const ArrayInfo& a = p_.arrays[static_cast<size_t>(array)];
    if (o.subscripts.size() != a.dims.size())
        throw ToyError(o.loc, fmt::format("array {} has {} dimension{}, but {} subscript{} given", quoted_name(a.name), a.dims.size(),
                                          a.dims.size() == 1 ? "" : "s", o.subscripts.size(),
                                          o.subscripts.size() == 1 ? " is" : "s are"));
    if (write && a.role == ast::Role::Input)
        throw ToyError(o.array_loc, fmt::format("{} cannot write to input array '{}'; declare an output or scratch array", op.mnemonic, a.name));
    MemRef m;
    m.array = array;
    m.address.constant = a.base;
    m.bounds_proven = true;
    m.always_present = a.starts_filled();
    for (size_t d = 0; d < a.dims.size(); ++d) {
        Affine s = affine(*o.subscripts[d]);
        Interval r = range(s);
        if (r.lo <= r.hi && (r.lo < 0 || r.hi >= a.dims[d])) m.bounds_proven = false;
        m.address = combine(m.address, scale(s, a.strides[d], o.loc), 1, o.loc);
        m.subscripts.push_back(s);
        bool ranged = d < o.subscript_ends.size() && o.subscript_ends[d];
        m.is_range.push_back(ranged);
        m.ends.push_back(ranged ? affine(*o.subscript_ends[d]) : Affine{});
        if (ranged) m.bounds_proven = false;  // slices are checked and clipped as they run
    }
    p_.mems.push_back(std::move(m));
    return static_cast<int>(p_.mems.size()) - 1;
}

}  // namespace toysim::detail
