// Binding parameters and lowering the AST to the flat code of program.h.
#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <limits>
#include <set>

#include "sim/front/parser.h"
#include "sim/lower/program.h"
#include "sim/reference/reference.h"
#include "sim/support/text.h"

namespace toysim {

namespace {

using ast::Expr;

// DRAM a program may declare: far more than a run can hold, so `toysim cost` can count
// programs at any size; run() refuses more than kMaxRunDram (program.h).
constexpr std::int64_t kMaxDram = std::int64_t{1} << 44;
constexpr std::int64_t kMaxRegisters = 1 << 20;

std::int64_t mul_checked(std::int64_t a, std::int64_t b, Loc loc) {
    std::int64_t v;
    if (__builtin_mul_overflow(a, b, &v)) throw ToyError(loc, "integer overflow in this expression");
    return v;
}

std::int64_t add_checked(std::int64_t a, std::int64_t b, Loc loc) {
    std::int64_t v;
    if (__builtin_add_overflow(a, b, &v)) throw ToyError(loc, "integer overflow in this expression");
    return v;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

struct Interval {
    std::int64_t lo, hi;  // inclusive; lo > hi means empty
};

class Compiler {
public:
    Compiler(std::shared_ptr<const ast::Program> tree, const ParamSettings& settings) : tree_(std::move(tree)) {
        p_.source = tree_->source;
        p_.tree = tree_;
        bind_params(settings);
        bind_machine();
        bind_arrays();
        lower_body(tree_->body);
        emit_plain(Code::Halt);
        bind_checks();
        bind_expects();
    }
    Program take() { return std::move(p_); }

private:
    std::shared_ptr<const ast::Program> tree_;
    Program p_;
    std::map<std::string, std::int64_t, std::less<>> params_;
    std::vector<std::pair<std::string, int>> scope_;  // loop variables in scope, outermost first
    std::vector<Interval> ranges_;                   // per slot: every value the variable can take
    std::vector<int> open_loops_;
    std::vector<bool> definitely_written_;  // per register, at the point being lowered

    // ---- integer expressions ----
    [[noreturn]] void unknown_name(const Expr& e) {
        std::vector<std::string_view> names;
        for (auto& [name, v] : params_) names.push_back(name);
        for (auto& [name, slot] : scope_) names.push_back(name);
        std::string hint = did_you_mean(e.name, names);
        if (p_.find_array(e.name) >= 0)
            throw ToyError(e.loc, fmt::format("'{}' is an array, not a number: use it with subscripts in an instruction", e.name));
        for (const auto& p : tree_->params)
            if (p.name == e.name)
                throw ToyError(e.loc, fmt::format("parameter '{}' is used before its value is known: a default may use only "
                                                  "parameters declared above it", e.name));
        throw ToyError(e.loc, fmt::format("unknown name '{}'{}", e.name, hint));
    }

    Affine affine(const Expr& e) {
        Affine out;
        switch (e.kind) {
            case Expr::Kind::Number: out.constant = e.value; return out;
            case Expr::Kind::Name: {
                if (auto it = params_.find(e.name); it != params_.end()) {
                    out.constant = it->second;
                    return out;
                }
                for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
                    if (it->first == e.name) {
                        out.terms = 1;
                        out.var[0] = static_cast<std::uint8_t>(it->second);
                        out.coef[0] = 1;
                        return out;
                    }
                unknown_name(e);
            }
            case Expr::Kind::Negate: return scale(affine(*e.lhs), -1, e.loc);
            case Expr::Kind::Call: out.constant = call(e); return out;
            case Expr::Kind::Binary: break;
        }
        Affine l = affine(*e.lhs), r = affine(*e.rhs);
        switch (e.op) {
            case '+': return combine(l, r, 1, e.loc);
            case '-': return combine(l, r, -1, e.loc);
            case '*':
                if (l.is_constant()) return scale(r, l.constant, e.loc);
                if (r.is_constant()) return scale(l, r.constant, e.loc);
                throw ToyError(e.loc, "subscripts must be affine: a product of two loop variables is not allowed");
            default: {
                if (!l.is_constant() || !r.is_constant())
                    throw ToyError(e.loc, fmt::format("subscripts must be affine: '{}' cannot take a loop variable", e.op));
                if (r.constant == 0) throw ToyError(e.rhs->loc, "division by zero");
                out.constant = e.op == '/' ? floor_div(l.constant, r.constant)
                                           : l.constant - floor_div(l.constant, r.constant) * r.constant;
                return out;
            }
        }
    }

    std::int64_t call(const Expr& e) {
        if (e.name != "cdiv" && e.name != "min" && e.name != "max")
            throw ToyError(e.loc, fmt::format("unknown function '{}'{} (there are cdiv, min and max)", e.name,
                                              did_you_mean(e.name, {"cdiv", "min", "max"})));
        std::int64_t a = constant(*e.lhs, fmt::format("an argument of {}", e.name));
        std::int64_t b = constant(*e.rhs, fmt::format("an argument of {}", e.name));
        if (e.name == "min") return std::min(a, b);
        if (e.name == "max") return std::max(a, b);
        if (b == 0) throw ToyError(e.rhs->loc, "division by zero");
        return -floor_div(-a, b);  // ceiling: the number of tiles of size b that cover a
    }

    static Affine scale(Affine a, std::int64_t k, Loc loc) {
        a.constant = mul_checked(a.constant, k, loc);
        for (int t = 0; t < a.terms; ++t) a.coef[t] = mul_checked(a.coef[t], k, loc);
        return a;
    }
    static Affine combine(Affine a, const Affine& b, std::int64_t sign, Loc loc) {
        a.constant = add_checked(a.constant, mul_checked(sign, b.constant, loc), loc);
        for (int t = 0; t < b.terms; ++t) {
            int found = -1;
            for (int u = 0; u < a.terms; ++u)
                if (a.var[u] == b.var[t]) found = u;
            if (found < 0) {
                found = a.terms++;
                a.var[found] = b.var[t];
                a.coef[found] = 0;
            }
            a.coef[found] = add_checked(a.coef[found], mul_checked(sign, b.coef[t], loc), loc);
        }
        // Drop terms that cancelled (i - i) so constancy is recognized.
        int kept = 0;
        for (int u = 0; u < a.terms; ++u)
            if (a.coef[u] != 0) {
                a.var[kept] = a.var[u];
                a.coef[kept++] = a.coef[u];
            }
        a.terms = kept;
        return a;
    }

    std::int64_t constant(const Expr& e, std::string_view what) {
        Affine a = affine(e);
        if (!a.is_constant()) throw ToyError(e.loc, fmt::format("{} cannot depend on a loop variable", what));
        return a.constant;
    }

    // Every value the expression can take, given the loop variables' ranges; "anything" when
    // the arithmetic could overflow, so nothing is proven from a wrapped interval.
    Interval range(const Affine& a) const {
        constexpr Interval anything{std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
        Interval out{a.constant, a.constant};
        for (int t = 0; t < a.terms; ++t) {
            const Interval& r = ranges_[a.var[t]];
            if (r.lo > r.hi) return {1, 0};  // unreachable: the loop never runs
            std::int64_t x, y;
            if (__builtin_mul_overflow(a.coef[t], r.lo, &x) || __builtin_mul_overflow(a.coef[t], r.hi, &y)) return anything;
            if (__builtin_add_overflow(out.lo, std::min(x, y), &out.lo) || __builtin_add_overflow(out.hi, std::max(x, y), &out.hi))
                return anything;
        }
        return out;
    }

    // ---- declarations ----
    void bind_params(const ParamSettings& settings) {
        std::set<std::string, std::less<>> given;
        for (const auto& setting : settings) {
            const std::string& name = setting.first;
            auto it = std::find_if(tree_->params.begin(), tree_->params.end(), [&](const ast::Param& p) { return p.name == name; });
            if (it != tree_->params.end() && it->derived)
                throw ToyError(fmt::format("--set {}: '{}' is derived from the parameters (let {} = ...) and cannot be set", name,
                                           name, name));
            if (it == tree_->params.end()) {
                std::vector<std::string_view> names;
                std::string list;
                for (const auto& p : tree_->params) {
                    if (p.derived) continue;
                    names.push_back(p.name);
                    list += (list.empty() ? "" : ", ") + p.name;
                }
                std::string hint = did_you_mean(name, names);
                throw ToyError(fmt::format("--set {}: unknown parameter '{}'{} (this program's parameters: {})", name, name, hint,
                                           list.empty() ? "none" : list));
            }
            given.insert(name);
        }
        for (const auto& p : tree_->params) {
            if (params_.count(p.name)) throw ToyError(p.loc, fmt::format("parameter '{}' is declared twice", p.name));
            std::int64_t value = constant(*p.value, "a parameter");
            for (const auto& [name, v] : settings)
                if (name == p.name) value = v;
            params_[p.name] = value;
            p_.params.emplace_back(p.name, value);
        }
    }

    void bind_machine() {
        if (!tree_->registers)
            throw ToyError("the program does not say how many registers the machine has: add 'registers N'");
        std::int64_t n = constant(*tree_->registers, "the register count");
        if (n < 1 || n > kMaxRegisters)
            throw ToyError(tree_->registers->loc, fmt::format("the register file must have 1 to {} registers, not {}", kMaxRegisters, n));
        p_.registers = static_cast<int>(n);
        bind_tiles();
        definitely_written_.assign(static_cast<size_t>(p_.scalar_registers), false);
        for (const auto& row : all_ops()) p_.cycles[static_cast<size_t>(row.op)] = row.cycles;
        for (const auto& cost : tree_->costs) {
            std::int64_t c = constant(*cost.cycles, "a cycle cost");
            if (c < 0 || c > 1'000'000) throw ToyError(cost.cycles->loc, fmt::format("cycle cost must be 0 to 1000000, not {}", c));
            p_.cycles[static_cast<size_t>(cost.op)] = static_cast<int>(c);
        }
    }

    // Tiles take the register file's elements in declaration order; the scalar registers
    // R0.. are what is left. A program whose tiles do not fit is refused here.
    void bind_tiles() {
        for (const auto& t : tree_->tiles) {
            if (p_.find_bank(t.name) >= 0) throw ToyError(t.loc, fmt::format("tile '{}' is declared twice", t.name));
            if (params_.count(t.name)) throw ToyError(t.loc, fmt::format("'{}' is already a parameter", t.name));
            if (t.dims.size() > 2) throw ToyError(t.dims[2]->loc, "tiles have one or two dimensions");
            Bank b;
            b.name = t.name;
            b.loc = t.loc;
            b.rank = static_cast<int>(t.dims.size());
            std::vector<std::int64_t> dims;
            for (const auto& d : t.dims) {
                std::int64_t extent = constant(*d, "a tile dimension");
                if (extent < 1 || extent > kMaxRegisters)
                    throw ToyError(d->loc, fmt::format("tile dimension must be 1 to {}, not {}", kMaxRegisters, extent));
                dims.push_back(extent);
            }
            b.rows = b.rank == 2 ? dims[0] : 1;
            b.cols = dims.back();
            b.base = p_.bank_elements;
            p_.bank_elements += b.rows * b.cols;
            if (p_.bank_elements > p_.registers) {
                std::string list;
                for (const auto& other : p_.banks) list += fmt::format("{} {}, ", other.name, bank_shape(other));
                throw ToyError(t.loc, fmt::format("tile '{}' does not fit in the register file: the tiles need {} registers ({}{} {}) "
                                                  "but the machine has {} (registers {})",
                                                  t.name, p_.bank_elements, list, t.name, bank_shape(b), p_.registers, p_.registers));
            }
            p_.banks.push_back(std::move(b));
        }
        p_.scalar_registers = static_cast<int>(p_.registers - p_.bank_elements);
    }

    static std::string bank_shape(const Bank& b) {
        return b.rank == 2 ? fmt::format("{}×{}", b.rows, b.cols) : fmt::format("{}", b.cols);
    }

    void bind_arrays() {
        std::uint64_t seed_counter = 0;
        for (const auto& a : tree_->arrays) {
            ++seed_counter;
            if (p_.find_array(a.name) >= 0) throw ToyError(a.loc, fmt::format("array '{}' is declared twice", a.name));
            if (params_.count(a.name)) throw ToyError(a.loc, fmt::format("'{}' is already a parameter", a.name));
            if (a.dims.size() > 4) throw ToyError(a.loc, "arrays have at most 4 dimensions");
            ArrayInfo info;
            info.name = a.name;
            info.role = a.role;
            info.loc = a.loc;
            info.fill = a.fill;
            if (info.fill.kind == ast::Fill::Kind::Default) {
                info.fill.kind = ast::Fill::Kind::Random;
                info.fill.seed = seed_counter;  // each array its own stream, reproducibly
            }
            for (const auto& d : a.dims) {
                std::int64_t extent = constant(*d, "an array dimension");
                if (extent < 1) throw ToyError(d->loc, fmt::format("array dimension must be at least 1, not {}", extent));
                if (extent > kMaxDram || info.size * extent > kMaxDram)
                    throw ToyError(d->loc, fmt::format("array '{}' is too large (at most {} elements in all)", a.name, kMaxDram));
                info.dims.push_back(extent);
                info.size *= extent;
            }
            info.strides.assign(info.dims.size(), 1);
            for (int i = static_cast<int>(info.dims.size()) - 2; i >= 0; --i)
                info.strides[static_cast<size_t>(i)] = info.strides[static_cast<size_t>(i) + 1] * info.dims[static_cast<size_t>(i) + 1];
            info.base = p_.dram_size;
            if (p_.dram_size + info.size > kMaxDram)
                throw ToyError(a.loc, fmt::format("the arrays are too large (at most {} elements in all)", kMaxDram));
            p_.dram_size += info.size;
            if (info.fill.kind == ast::Fill::Kind::Reference) bind_reference_fill(info);
            if (info.fill.kind == ast::Fill::Kind::Literal && static_cast<std::int64_t>(info.fill.values.size()) != info.size)
                throw ToyError(info.fill.loc, fmt::format("array '{}' has {} elements but {} values are given", a.name, info.size,
                                                          info.fill.values.size()));
            p_.arrays.push_back(std::move(info));
        }
    }

    // input O[n][d] = attention(Q, K, V): the arguments are inputs declared above, and the
    // reference's shape must be the array's.
    void bind_reference_fill(ArrayInfo& info) {
        std::vector<std::vector<std::int64_t>> shapes;
        for (const auto& [name, loc] : info.fill.args) {
            int a = array_named(name, loc);
            if (p_.arrays[static_cast<size_t>(a)].role != ast::Role::Input)
                throw ToyError(loc, fmt::format("'{}' is not an input; an input's values are computed only from inputs", name));
            info.fill_args.push_back(a);
            shapes.push_back(p_.arrays[static_cast<size_t>(a)].dims);
        }
        auto shape = reference_shape(info.fill.function, shapes, info.fill.loc);
        if (shape != info.dims)
            throw ToyError(info.fill.loc, fmt::format("{}(...) is {} but '{}' is {}", info.fill.function, shape_text(shape), info.name,
                                                      shape_text(info.dims)));
    }

    // ---- the body ----
    int emit_plain(Code code) {
        p_.code.push_back(Inst{code});
        p_.origin.push_back(nullptr);
        p_.enclosing_loops.push_back(open_loops_);
        return static_cast<int>(p_.code.size()) - 1;
    }

    void lower_body(const std::vector<ast::Statement>& body) {
        for (const auto& s : body) {
            if (auto* in = std::get_if<ast::Instruction>(&s))
                lower_instruction(*in);
            else
                lower_loop(*std::get<std::unique_ptr<ast::Loop>>(s));
        }
    }

    void lower_loop(const ast::Loop& l) {
        if (static_cast<int>(scope_.size()) >= kMaxLoopDepth)
            throw ToyError(l.loc, fmt::format("loops may nest at most {} deep", kMaxLoopDepth));
        if (params_.count(l.var)) throw ToyError(l.var_loc, fmt::format("loop variable '{}' hides the parameter of that name", l.var));
        for (const auto& [name, slot] : scope_)
            if (name == l.var) throw ToyError(l.var_loc, fmt::format("loop variable '{}' is already used by an enclosing loop", l.var));
        if (!has_instructions(l.body))
            throw ToyError(l.loc, "this loop contains no instructions: it would only spin (loops cost nothing and show nothing)");
        LoopInfo info{static_cast<int>(scope_.size()), affine(*l.lo), affine(*l.hi), l.var, l.loc};
        Interval lo = range(info.lo), hi = range(info.hi);
        int index = static_cast<int>(p_.loops.size());
        p_.loops.push_back(info);
        int begin = emit_plain(Code::LoopBegin);
        p_.code[static_cast<size_t>(begin)].loop = index;
        scope_.emplace_back(l.var, info.slot);
        ranges_.resize(scope_.size());
        ranges_[static_cast<size_t>(info.slot)] = (lo.lo > lo.hi || hi.lo > hi.hi) ? Interval{1, 0} : Interval{lo.lo, hi.hi - 1};
        open_loops_.push_back(index);
        // A write inside the body is definite after the loop only if the body surely runs.
        std::vector<bool> written_before = definitely_written_;
        lower_body(l.body);
        if (!(lo.hi < hi.lo)) definitely_written_ = std::move(written_before);
        open_loops_.pop_back();
        scope_.pop_back();
        int end = emit_plain(Code::LoopEnd);
        p_.code[static_cast<size_t>(end)].loop = index;
        p_.code[static_cast<size_t>(end)].jump = begin;
        p_.code[static_cast<size_t>(begin)].jump = end;
    }

    static bool has_instructions(const std::vector<ast::Statement>& body) {
        for (const auto& s : body)
            if (std::holds_alternative<ast::Instruction>(s) || has_instructions(std::get<std::unique_ptr<ast::Loop>>(s)->body)) return true;
        return false;
    }

    static std::string_view kind_name(ast::Operand::Kind k) {
        return k == ast::Operand::Kind::Memory ? "a DRAM element" : k == ast::Operand::Kind::Immediate ? "a number" : "a register";
    }

    bool names_tile(const ast::Operand& o) const {
        return o.kind == ast::Operand::Kind::Memory && o.subscripts.empty() && p_.find_bank(o.array) >= 0;
    }

    // A tile instruction names a tile or moves a slice (a range a..b in a subscript).
    bool is_tile_instruction(const ast::Instruction& in) const {
        for (const auto& o : in.operands) {
            if (names_tile(o)) return true;
            for (const auto& end : o.subscript_ends)
                if (end) return true;
        }
        return false;
    }

    void check_operand_count(const ast::Instruction& in, const OpInfo& op) {
        if (static_cast<int>(in.operands.size()) == op.operand_count()) return;
        Loc loc = in.operands.size() > static_cast<size_t>(op.operand_count()) ? in.operands[static_cast<size_t>(op.operand_count())].loc : in.loc;
        throw ToyError(loc, fmt::format("{} takes {} operand{} ({}), got {}", op.mnemonic, op.operand_count(),
                                        op.operand_count() == 1 ? "" : "s", op.operands, in.operands.size()));
    }

    [[noreturn]] void wrong_operand(const ast::Operand& o, const OpInfo& op, int i, std::string_view want) {
        std::string got = o.kind == ast::Operand::Kind::Memory && o.subscripts.empty() && p_.find_array(o.array) < 0 && p_.find_bank(o.array) < 0
                              ? fmt::format("'{}'", o.array)
                          : names_tile(o) ? fmt::format("tile '{}'", o.array)
                                          : std::string(kind_name(o.kind));
        throw ToyError(o.loc, fmt::format("operand {} of {} ({}) must be {}, got {}", i + 1, op.mnemonic, operand_name(op, i), want, got));
    }

    void lower_tile_instruction(const ast::Instruction& in, const OpInfo& op) {
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
                arg.kind = TileOperand::Kind::Bank;
                arg.index = p_.find_bank(o.array);
            } else if (o.kind == ast::Operand::Kind::Register || o.kind == ast::Operand::Kind::IndexedRegister) {
                Inst scratch{};
                arg.kind = TileOperand::Kind::Register;
                arg.index = lower_register(o, scratch);
            } else {
                wrong_operand(o, op, i, "a tile or a register");
            }
            if (o.transposed) {
                bool matmul_source = (in.op == Op::MAC || in.op == Op::MAC_Z) && i < 2;
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
            if (other.kind == TileOperand::Kind::Bank) {
                const Bank& b = p_.banks[static_cast<size_t>(other.index)];
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
    void check_slice_widths(const MemRef& m, const Bank& b, bool column, Loc loc) {
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

    void lower_instruction(const ast::Instruction& in) {
        const OpInfo& op = info(in.op);
        check_operand_count(in, op);
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
            bool shape_only = in.op == Op::SET && i == 1;
            bool proven = shape_only || (r >= 0 && definitely_written_[static_cast<size_t>(r)]);
            if (want == OperandKind::RegRead && !proven) inst.unproven_reads |= static_cast<std::uint8_t>(1u << inst.reg_count);
            if (want == OperandKind::RegWrite && r >= 0) definitely_written_[static_cast<size_t>(r)] = true;
            inst.reg[inst.reg_count++] = r;
        }
        int at = emit_plain(inst.code);
        p_.code[static_cast<size_t>(at)] = inst;
        p_.origin[static_cast<size_t>(at)] = &in;
    }

    static std::string operand_name(const OpInfo& op, int i) {
        std::string_view names = op.operands;
        for (int k = 0; k < i; ++k) names = names.substr(names.find(", ") + 2);
        return std::string(names.substr(0, names.find(',')));
    }

    std::int32_t lower_register(const ast::Operand& o, Inst& inst) {
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

    int lower_memory(const ast::Operand& o, bool write, const OpInfo& op) {
        int array = array_named(o.array, o.array_loc);
        const ArrayInfo& a = p_.arrays[static_cast<size_t>(array)];
        if (o.subscripts.size() != a.dims.size())
            throw ToyError(o.loc, fmt::format("array '{}' has {} dimension{}, but {} subscript{} given", a.name, a.dims.size(),
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

    // ---- checks and expectations ----
    std::vector<std::int64_t> constant_index(const std::vector<ast::ExprPtr>& subs, std::vector<Loc>* locs = nullptr) {
        std::vector<std::int64_t> out;
        for (const auto& s : subs) {
            out.push_back(constant(*s, "a check index"));
            if (locs) locs->push_back(s->loc);
        }
        return out;
    }

    int array_named(const std::string& name, Loc loc) {
        int a = p_.find_array(name);
        if (a < 0) {
            std::vector<std::string_view> names;
            for (const auto& arr : p_.arrays) names.push_back(arr.name);
            throw ToyError(loc, fmt::format("unknown array '{}'{}", name, did_you_mean(name, names)));
        }
        return a;
    }

    static std::string index_text(const std::vector<std::int64_t>& index) {
        std::string out;
        for (auto i : index) out += fmt::format("[{}]", i);
        return out;
    }

    void bind_checks() {
        for (const auto& c : tree_->checks) {
            CheckSpec spec;
            spec.loc = c.loc;
            spec.target = array_named(c.target, c.target_loc);
            if (p_.arrays[static_cast<size_t>(spec.target)].role == ast::Role::Input)
                throw ToyError(c.target_loc, fmt::format("'{}' is an input; a check compares an output with a reference", c.target));
            std::vector<Loc> target_locs, reference_locs;
            spec.target_index = constant_index(c.target_index, &target_locs);
            spec.function = c.function;
            std::vector<std::string> arg_names;
            for (const auto& [name, loc] : c.args) {
                spec.args.push_back(array_named(name, loc));
                arg_names.push_back(name);
            }
            spec.reference_index = constant_index(c.reference_index, &reference_locs);
            if (c.tolerance) spec.tolerance = *c.tolerance;
            spec.text = fmt::format("{}{} = {}({}){}", c.target, index_text(spec.target_index), c.function,
                                    fmt::join(arg_names, ", "), index_text(spec.reference_index));
            // Shapes are validated now, so a bad check is an error before anything runs.
            std::vector<std::vector<std::int64_t>> shapes;
            for (int a : spec.args) shapes.push_back(p_.arrays[static_cast<size_t>(a)].dims);
            std::vector<std::int64_t> ref_shape = reference_shape(spec.function, shapes, c.function_loc);
            auto sub = [&](std::vector<std::int64_t> shape, const std::vector<std::int64_t>& index, const std::vector<Loc>& locs,
                           std::string_view what) {
                if (index.size() > shape.size())
                    throw ToyError(locs[shape.size()], fmt::format("{} has {} dimension{}; too many indices", what, shape.size(),
                                                                   shape.size() == 1 ? "" : "s"));
                for (size_t d = 0; d < index.size(); ++d)
                    if (index[d] < 0 || index[d] >= shape[d])
                        throw ToyError(locs[d], fmt::format("index {} is out of range for {}: dimension {} has {} entries (0..{})",
                                                            index[d], what, d + 1, shape[d], shape[d] - 1));
                return std::vector<std::int64_t>(shape.begin() + static_cast<long>(index.size()), shape.end());
            };
            auto lhs = sub(p_.arrays[static_cast<size_t>(spec.target)].dims, spec.target_index, target_locs, c.target);
            auto rhs = sub(ref_shape, spec.reference_index, reference_locs, c.function + "(...)");
            auto one = [](const std::vector<std::int64_t>& s) { return s.empty() || s == std::vector<std::int64_t>{1}; };
            if (lhs != rhs && !(one(lhs) && one(rhs)))
                throw ToyError(c.loc, fmt::format("the two sides differ in shape: {} is {}, but the reference is {}",
                                                  c.target + index_text(spec.target_index), shape_text(lhs), shape_text(rhs)));
            p_.checks.push_back(std::move(spec));
        }
    }

    static std::string shape_text(const std::vector<std::int64_t>& shape) {
        if (shape.empty()) return "one element";
        return fmt::format("{}", fmt::join(shape, "×"));
    }

    void bind_expects() {
        for (const auto& e : tree_->expects) {
            ExpectSpec spec;
            spec.loc = e.loc;
            spec.relation = e.relation;
            auto name = parse_counter_name(e.counter, e.array);
            if (!name) {
                if (e.counter == "work") throw ToyError(e.array.empty() ? e.loc : e.array_loc, "work takes an opcode: work(MAC)");
                if (!e.array.empty() && (parse_counter_name(e.counter, "") || find_op(e.counter)))
                    throw ToyError(e.loc, "only reads(ARRAY), writes(ARRAY) and work(OPCODE) take an argument");
                std::vector<std::string> spelled;
                for (const auto& row : all_counters())
                    if (row.scope == CounterScope::Run || row.name == "{}" || row.name.find('(') != std::string_view::npos)
                        spelled.push_back(std::string(row.name.substr(0, row.name.find('('))));
                std::vector<std::string_view> names;
                for (const auto& n : spelled)
                    if (n != "{}") names.push_back(n);
                for (const auto& row : all_ops()) names.push_back(row.mnemonic);
                throw ToyError(e.loc, fmt::format("unknown counter '{}'{}", e.counter, did_you_mean(e.counter, names)));
            }
            spec.counter.kind = name->kind;
            if (info(name->kind).scope == CounterScope::PerOpcode) spec.counter.op = *find_op(name->subject);
            if (info(name->kind).scope == CounterScope::PerArray) spec.counter.array = array_named(e.array, e.array_loc);
            spec.value = constant(*e.value, "an expected figure");
            spec.text = p_.counter_name(spec.counter);
            p_.expects.push_back(std::move(spec));
        }
    }
};

// The opcode or array a counter is of: "MAC", "K", or "".
std::string_view counter_subject(const Program& p, const CounterRef& c) {
    switch (info(c.kind).scope) {
        case CounterScope::PerOpcode: return info(c.op).mnemonic;
        case CounterScope::PerArray: return p.arrays[static_cast<size_t>(c.array)].name;
        default: return {};
    }
}

}  // namespace

int MemRef::range_count() const { return static_cast<int>(std::count(is_range.begin(), is_range.end(), 1)); }

int Program::find_bank(std::string_view name) const {
    for (size_t i = 0; i < banks.size(); ++i)
        if (banks[i].name == name) return static_cast<int>(i);
    return -1;
}

Op Program::op_at(std::int32_t pc) const {
    const Inst& in = code[static_cast<size_t>(pc)];
    return in.code == Code::Tile ? tile_insts[static_cast<size_t>(in.mem)].op : static_cast<Op>(in.code);
}

std::string Program::register_file_text() const {
    int n = scalar_registers;
    if (banks.empty()) return fmt::format("{} register{}: R0..R{}", n, n == 1 ? "" : "s", n - 1);
    std::string rest = n == 0 ? "no scalar registers remain" : n == 1 ? "R0 remains" : fmt::format("R0..R{} remain", n - 1);
    return fmt::format("the tiles take {} of {} registers; {}", bank_elements, registers, rest);
}

bool Program::uses(Op op) const {
    for (size_t pc = 0; pc < code.size(); ++pc)
        if (origin[pc] && origin[pc]->op == op) return true;
    return false;
}

std::string Program::counter_name(const CounterRef& c) const { return info(c.kind).name_for(counter_subject(*this, c)); }
std::string Program::counter_label(const CounterRef& c) const { return info(c.kind).label_for(counter_subject(*this, c)); }
std::string Program::counter_json(const CounterRef& c) const { return info(c.kind).json_for(counter_subject(*this, c)); }

int Program::find_array(std::string_view name) const {
    for (size_t i = 0; i < arrays.size(); ++i)
        if (arrays[i].name == name) return static_cast<int>(i);
    return -1;
}

std::vector<std::int64_t> Program::element_index(int array, std::int64_t offset) const {
    const ArrayInfo& a = arrays[static_cast<size_t>(array)];
    std::vector<std::int64_t> index;
    for (size_t d = 0; d < a.dims.size(); ++d) {
        index.push_back(offset / a.strides[d]);
        offset %= a.strides[d];
    }
    return index;
}

std::string Program::element_symbol(int array, std::int64_t offset) const {
    const ArrayInfo& a = arrays[static_cast<size_t>(array)];
    auto index = element_index(array, offset);
    bool short_form = index.size() <= 1 || std::all_of(a.dims.begin(), a.dims.end(), [](std::int64_t d) { return d <= 10; });
    if (!short_form) return element_ref(array, offset);
    std::string out = a.name;
    for (auto i : index) out += std::to_string(i);
    return out;
}

std::string Program::element_ref(int array, std::int64_t offset) const {
    std::string out = arrays[static_cast<size_t>(array)].name;
    for (auto i : element_index(array, offset)) out += fmt::format("[{}]", i);
    return out;
}

int Program::array_of_address(std::int64_t address) const {
    for (size_t i = 0; i < arrays.size(); ++i)
        if (address >= arrays[i].base && address < arrays[i].base + arrays[i].size) return static_cast<int>(i);
    return -1;
}

ast::Program parse_file(const std::string& path) { return parse(SourceFile::read(path)); }

Program compile(std::shared_ptr<const ast::Program> tree, const ParamSettings& settings) {
    return Compiler(std::move(tree), settings).take();
}

std::pair<std::string, std::int64_t> parse_setting(std::string_view text) {
    auto eq = text.find('=');
    std::string name(text.substr(0, eq));
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (eq == std::string_view::npos || name.empty())
        throw ToyError(fmt::format("--set {}: expected NAME=INTEGER, e.g. --set n=1024", text));
    std::string value(text.substr(eq + 1));
    std::int64_t v = 0;
    const char* first = value.data();
    const char* last = value.data() + value.size();
    while (first < last && *first == ' ') ++first;
    while (last > first && last[-1] == ' ') --last;
    auto [end, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::result_out_of_range)
        throw ToyError(fmt::format("--set {}: '{}' is too large (parameters are 64-bit integers)", text, value));
    if (ec != std::errc() || end != last || first == last)
        throw ToyError(fmt::format("--set {}: '{}' is not an integer", text, value));
    return {name, v};
}

std::vector<ParamSettings> test_settings(const ast::Program& tree) {
    std::vector<ParamSettings> out{{}};
    for (const auto& t : tree.tests) {
        ParamSettings s;
        for (const auto& [name, e] : t.settings) {
            if (e->kind != ast::Expr::Kind::Number && !(e->kind == ast::Expr::Kind::Negate && e->lhs->kind == ast::Expr::Kind::Number))
                throw ToyError(e->loc, "a test setting is a plain integer");
            s.emplace_back(name, e->kind == ast::Expr::Kind::Number ? e->value : -e->lhs->value);
        }
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace toysim
