// Formulas: the traffic of each array in closed form over the parameters, derived from the
// source. Polynomials over atoms (parameters, lets, loop variables, and expressions that are
// not polynomials, such as cdiv(n, Bc) or n/t), with integer coefficients (poly.h). See cost.h.
#include <algorithm>
#include <fmt/format.h>

#include "sim/analysis/poly.h"

namespace toysim {

namespace {

using namespace formula;

// ---- the derivation ----

struct Atom {
    enum class Kind { Param, Let, Var, Opaque } kind;
    std::string text;                        // as a factor: "n", "(n/t)", "cdiv(n, Bc)"
    std::shared_ptr<const Expr> expr;        // Opaque: what evaluates it
    std::string fn;                          // Opaque: cdiv, min, max, / or %
    std::vector<Poly> args;                  // Opaque: its two arguments
};

class Deriver {
public:
    explicit Deriver(const Program& p) : p_(p), tree_(*p.tree) {
        // Atom ids order a term's factors: parameters as declared, then lets, then the rest.
        for (int pass = 0; pass < 2; ++pass)
            for (const auto& param : tree_.params)
                if (param.derived == (pass == 1) && !named_.count(param.name)) {
                    named_[param.name] = static_cast<int>(atoms_.size());
                    atoms_.push_back(Atom{pass ? Atom::Kind::Let : Atom::Kind::Param, param.name, nullptr, {}, {}});
                }
        for (size_t pc = 0; pc < p.origin.size(); ++pc)
            if (p.origin[pc]) pc_of_[p.origin[pc]] = static_cast<int>(pc);
        reads_.resize(p.arrays.size());
        writes_.resize(p.arrays.size());
        notes_.resize(p.arrays.size());
    }

    std::vector<ArrayFormulas> derive() {
        walk(tree_.body);
        std::vector<ArrayFormulas> out(p_.arrays.size());
        for (size_t a = 0; a < out.size(); ++a) {
            out[a].reads = formula(reads_[a]);
            out[a].writes = formula(writes_[a]);
            out[a].exact = notes_[a].empty();
            for (const auto& note : notes_[a]) out[a].note += (out[a].note.empty() ? "" : "; ") + note;
        }
        return out;
    }

    TimeFormulas derive_time() {
        timing_ = true;
        shapes_.assign(p_.tiles.size(), Shape{});
        walk(tree_.body);
        TimeFormulas out;
        out.work = formula(work_);
        out.cycles = formula(makespan_);
        out.exact = time_notes_.empty();
        for (const auto& note : time_notes_) out.note += (out.note.empty() ? "" : "; ") + note;
        out.grids = std::move(grids_);
        if (!other_inexact_) out.exact_when = std::move(exact_when_);
        return out;
    }

private:
    struct Level {
        std::string var;
        int atom;
        Poly lo, hi;
        bool grid = false;  // a loop of the running grid: its iterations are the grid's, not summed
    };

    const Program& p_;
    const ast::Program& tree_;
    std::vector<Atom> atoms_;
    std::map<std::string, int> named_, opaque_;
    std::map<int, Poly> let_definitions_;
    std::vector<Level> scope_;
    std::map<const ast::Instruction*, int> pc_of_;
    std::vector<Poly> reads_, writes_;
    std::vector<std::vector<std::string>> notes_;

    // ---- time (derive_time) ----
    // How far a tile or a slice reaches along one dimension: `width`, or where the slice is
    // the standard tiling pattern along loop variable `clip` (an atom), min(width, dim − v·width),
    // which sums over that loop to `dim` (or max(0, dim − lo·width) from lo).
    struct Extent {
        Poly width;
        int clip = -1;
        Poly dim{}, lo{};
    };
    struct Shape {
        Extent rows{pconst(1)}, cols{pconst(1)};
        bool known = false;  // written before, in the walk's order
    };
    bool timing_ = false;
    bool grid_body_is_loop_ = false;  // the loop being entered is the only statement of a grid loop
    std::vector<Shape> shapes_;     // per tile
    int grid_begin_ = -1;           // the running grid's outermost level in scope_ (-1: none)
    // The running grid's iterations, and each instruction's cycles in one iteration, still to be
    // summed over the loops around the grid.
    Poly grid_iterations_;
    struct PendingTerm {
        Poly term;
        std::vector<Extent> factors;
        std::string what;
    };
    std::vector<PendingTerm> grid_terms_;
    std::vector<std::string> grid_notes_;
    Poly work_, makespan_;
    std::vector<std::string> time_notes_;
    std::vector<GridTime> grids_;
    std::vector<std::pair<Formula, Formula>> exact_when_;
    std::vector<std::string> divides_keys_;
    bool other_inexact_ = false;

    // ---- polynomials from expressions ----
    Poly to_poly(const Expr& e, const std::vector<Level>& scope) {
        switch (e.kind) {
            case Expr::Kind::Number: return pconst(e.value);
            case Expr::Kind::Name: {
                for (auto it = scope.rbegin(); it != scope.rend(); ++it)
                    if (it->var == e.name) return patom(it->atom);
                if (auto it = named_.find(e.name); it != named_.end()) return patom(it->second);
                // Not a parameter (the compiler would have refused it): keep it as a name.
                named_[e.name] = static_cast<int>(atoms_.size());
                atoms_.push_back(Atom{Atom::Kind::Param, e.name, nullptr, {}, {}});
                return patom(named_[e.name]);
            }
            case Expr::Kind::Negate: return padd(Poly{}, to_poly(*e.lhs, scope), -1);
            case Expr::Kind::Call:
            case Expr::Kind::Binary: break;
        }
        Poly l = to_poly(*e.lhs, scope), r = to_poly(*e.rhs, scope);
        if (e.kind == Expr::Kind::Binary && e.op != '/' && e.op != '%') {
            if (e.op == '*') return pmul(l, r);
            return padd(std::move(l), r, e.op == '+' ? 1 : -1);
        }
        std::string fn = e.kind == Expr::Kind::Call ? e.name : std::string(1, e.op);
        auto lc = constant_of(l), rc = constant_of(r);
        if (lc && rc) {  // fold a constant: 8/2, cdiv(10, 4)
            auto lhs = make_number(*lc), rhs = make_number(*rc);
            auto folded = e.kind == Expr::Kind::Call ? make_call(fn, std::move(lhs), std::move(rhs))
                                                     : make_binary(e.op, std::move(lhs), std::move(rhs));
            if (auto v = eval_expr(*folded, {})) return pconst(*v);
        }
        return patom(opaque(fn, std::move(l), std::move(r)));
    }

    int opaque(const std::string& fn, Poly a, Poly b) {
        std::string text;
        if (fn == "/" || fn == "%")
            text = fmt::format("({}{}{})", operand_text(a, false), fn == "/" ? "/" : " % ", operand_text(b, true));
        else
            text = fmt::format("{}({}, {})", fn, poly_text(a), poly_text(b));
        if (auto it = opaque_.find(text); it != opaque_.end()) return it->second;
        std::shared_ptr<const Expr> expr = fn.size() == 1 ? make_binary(fn[0], poly_expr(a), poly_expr(b))
                                                          : make_call(fn, poly_expr(a), poly_expr(b));
        // Every walk over a formula's expressions (evaluate, the let legend) stays shallow.
        if (expr->height > kMaxExprDepth + 32)
            throw ToyError(fmt::format("a traffic formula nests deeper than {} levels", kMaxExprDepth));
        int id = static_cast<int>(atoms_.size());
        atoms_.push_back(Atom{Atom::Kind::Opaque, text, std::move(expr), fn, {std::move(a), std::move(b)}});
        opaque_[text] = id;
        return id;
    }

    std::string operand_text(const Poly& p, bool divisor) {
        std::string t = poly_text(p);
        if (p.empty()) return t;
        if (p.size() == 1) {
            const auto& [m, c] = *p.begin();
            if (!divisor && c > 0) return t;
            if (divisor && ((m.size() == 1 && c == 1) || (m.empty() && c > 0))) return t;
        }
        return fmt::format("({})", t);
    }

    std::unique_ptr<Expr> atom_expr(int id) const {
        const Atom& a = atoms_[static_cast<size_t>(id)];
        return a.kind == Atom::Kind::Opaque ? clone(*a.expr) : make_name(a.text);
    }

    // Balanced sums of balanced products: as shallow as the polynomial allows.
    std::unique_ptr<Expr> poly_expr(const Poly& p) const {
        std::vector<std::unique_ptr<Expr>> terms;
        for (const auto& [m, c] : p) {
            std::vector<std::unique_ptr<Expr>> factors;
            if (c != 1 || m.empty()) factors.push_back(make_number(c));  // 1·x is x: no deeper than the source
            for (int id : m) factors.push_back(atom_expr(id));
            terms.push_back(make_balanced('*', std::move(factors)));
        }
        return terms.empty() ? make_number(0) : make_balanced('+', std::move(terms));
    }

    Formula formula(const Poly& p) const {
        std::vector<std::pair<Mono, std::int64_t>> terms(p.begin(), p.end());
        std::stable_sort(terms.begin(), terms.end(), [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
        Formula f;
        for (const auto& [m, c] : terms) {
            FormulaTerm t{c, {}};
            for (int id : m) {
                const Atom& a = atoms_[static_cast<size_t>(id)];
                t.factors.push_back(FormulaFactor{a.text, a.kind == Atom::Kind::Opaque ? a.expr : nullptr});
            }
            f.terms.push_back(std::move(t));
        }
        return f;
    }
    std::string poly_text(const Poly& p) const { return formula(p).text(); }

    // ---- what the polynomials say ----
    bool is_var(int id) const { return atoms_[static_cast<size_t>(id)].kind == Atom::Kind::Var; }
    bool has_var(const Poly& p) const {
        for (const auto& [m, c] : p)
            for (int id : m)
                if (is_var(id)) return true;
        return false;
    }
    bool mentions(const Poly& p, int id) const {
        for (const auto& [m, c] : p)
            if (std::find(m.begin(), m.end(), id) != m.end()) return true;
        return false;
    }
    // +1 / −1 when p grows / shrinks with atom id (every term with it is a constant multiple
    // of it alone), 0 when that is not known.
    int slope_sign(const Poly& p, int id) const {
        int sign = 0;
        for (const auto& [m, c] : p) {
            if (std::find(m.begin(), m.end(), id) == m.end()) continue;
            if (m.size() != 1) return 0;
            int s = c > 0 ? 1 : -1;
            if (sign && s != sign) return 0;
            sign = s;
        }
        return sign;
    }
    // The largest value p takes over the loops in scope (loop variables replaced, innermost
    // first, by their last or first value); `proven` is cleared when that is only an estimate.
    Poly largest(Poly p, bool& proven) const {
        for (size_t k = scope_.size(); k-- > 0;) {
            const Level& l = scope_[k];
            if (!mentions(p, l.atom)) continue;
            int s = slope_sign(p, l.atom);
            if (s == 0) proven = false;
            p = substitute(p, l.atom, s < 0 ? l.lo : padd(l.hi, pconst(1), -1));
        }
        return p;
    }
    const Poly& let_definition(int id) {
        auto it = let_definitions_.find(id);
        if (it != let_definitions_.end()) return it->second;
        Poly def = patom(id);
        for (const auto& param : tree_.params)
            if (param.derived && param.name == atoms_[static_cast<size_t>(id)].text) def = to_poly(*param.value, {});
        return let_definitions_[id] = def;
    }
    // Lets replaced by their definitions, so that `Tr` and `cdiv(n, Br)` compare equal.
    Poly expand(Poly p) {
        for (int guard = 0; guard < 32; ++guard) {
            int let = -1;
            for (const auto& [m, c] : p)
                for (int id : m)
                    if (atoms_[static_cast<size_t>(id)].kind == Atom::Kind::Let && let < 0) let = id;
            if (let < 0) break;
            Poly def = let_definition(let);
            if (def == patom(let)) break;
            p = substitute(p, let, def);
        }
        return p;
    }
    bool same(const Poly& a, const Poly& b) { return expand(a) == expand(b); }

    enum class Cover { None, Ceil, Floor };
    // Whether a loop's end is cdiv(D, W) (the tiles that cover D) or D/W (the whole tiles),
    // literally or through lets.
    Cover covering(Poly hi, const Poly& dim, const Poly& width) {
        for (int guard = 0; guard < 32; ++guard) {
            if (hi.size() != 1 || hi.begin()->second != 1 || hi.begin()->first.size() != 1) return Cover::None;
            int id = hi.begin()->first[0];
            const Atom& a = atoms_[static_cast<size_t>(id)];
            if (a.kind == Atom::Kind::Let) {
                Poly def = let_definition(id);
                if (def == hi) return Cover::None;
                hi = def;
                continue;
            }
            if (a.kind != Atom::Kind::Opaque || (a.fn != "cdiv" && a.fn != "/")) return Cover::None;
            if (!same(a.args[0], dim) || !same(a.args[1], width)) return Cover::None;
            return a.fn == "cdiv" ? Cover::Ceil : Cover::Floor;
        }
        return Cover::None;
    }

    // ---- the walk ----
    // A formula that cannot be built (a coefficient past 64 bits, too many terms) is an error
    // at the line being derived: the loop or the instruction.
    template <class F>
    static auto located(Loc loc, F&& f) {
        try {
            return f();
        } catch (const ToyError& e) {
            if (e.loc().line != 0) throw;
            throw ToyError(loc, e.what());
        }
    }

    void walk(const std::vector<ast::Statement>& body) {
        for (const auto& s : body) {
            if (auto* in = std::get_if<ast::Instruction>(&s)) {
                located(in->loc, [&] { instruction(*in); });
                continue;
            }
            const ast::Loop& l = *std::get<std::unique_ptr<ast::Loop>>(s);
            // May add atoms: before the variable's.
            Poly lo = located(l.loc, [&] { return to_poly(*l.lo, scope_); });
            Poly hi = located(l.loc, [&] { return to_poly(l.hi ? *l.hi : *tree_.devices, scope_); });  // (on devices in a solution: the spec's D)
            Level level{l.var, static_cast<int>(atoms_.size()), std::move(lo), std::move(hi)};
            atoms_.push_back(Atom{Atom::Kind::Var, l.var, nullptr, {}, {}});
            // A grid: a parallel loop and the parallel loops directly nested in it (as the
            // compiler forms them).
            const bool opens_grid = timing_ && l.parallel && grid_begin_ < 0;
            const bool in_grid = timing_ && l.parallel && grid_begin_ >= 0 && scope_.back().grid && grid_body_is_loop_;
            if (opens_grid) grid_begin_ = static_cast<int>(scope_.size());
            level.grid = opens_grid || in_grid;
            grid_body_is_loop_ = level.grid && l.body.size() == 1 && std::holds_alternative<std::unique_ptr<ast::Loop>>(l.body[0]);
            scope_.push_back(std::move(level));
            if (opens_grid) grid_iterations_ = pconst(1);
            if (scope_.back().grid)
                grid_iterations_ = pmul(grid_iterations_, located(l.loc, [&] { return trip_of(scope_.size() - 1); }));
            walk(l.body);
            if (opens_grid) located(l.loc, [&] { close_grid(l); });
            scope_.pop_back();
        }
    }

    void note(int array, std::string text) {
        auto& notes = notes_[static_cast<size_t>(array)];
        if (std::find(notes.begin(), notes.end(), text) == notes.end()) notes.push_back(std::move(text));
    }

    std::string vars_in(const Poly& p) const {
        std::string out;
        for (const auto& l : scope_)
            if (mentions(p, l.atom)) out += (out.empty() ? "" : ", ") + l.var;
        return out;
    }

    void instruction(const ast::Instruction& in) {
        auto found = pc_of_.find(&in);
        if (found == pc_of_.end()) return;
        int pc = found->second;
        if (timing_) return time_instruction(in, pc);
        const OpInfo& op = info(in.op);
        int position = -1;
        bool write = false;
        for (int i = 0; i < op.operand_count(); ++i) {
            OperandKind k = op.operand(i);
            if (k == OperandKind::MemRead || k == OperandKind::MemWrite) {
                position = i;
                write = k == OperandKind::MemWrite;
            }
        }
        if (position < 0 || static_cast<size_t>(position) >= in.operands.size()) return;
        const std::int32_t mem = p_.memref_at(static_cast<std::int32_t>(pc));
        if (mem < 0) return;
        int array = p_.mems[static_cast<size_t>(mem)].array;
        const ast::Operand& o = in.operands[static_cast<size_t>(position)];
        const ast::Array& decl = tree_.arrays[static_cast<size_t>(array)];
        std::string what = fmt::format("{}({})", write ? "writes" : "reads", decl.name);

        Poly term = pconst(1);
        std::vector<bool> consumed(scope_.size(), false);
        for (size_t d = 0; d < o.subscripts.size() && d < decl.dims.size(); ++d) {
            if (d >= o.subscript_ends.size() || !o.subscript_ends[d]) continue;  // one index: one element
            term = pmul(term, extent(o, d, decl, array, what, consumed));
        }
        for (size_t k = 0; k < scope_.size(); ++k) {
            if (consumed[k]) continue;
            Poly trip = padd(scope_[k].hi, scope_[k].lo, -1);
            if (has_var(trip)) {
                bool proven = true;
                std::string vars = vars_in(trip);
                trip = largest(trip, proven);
                note(array, fmt::format("{}: the bounds of loop {} depend on loop variable {}; the formula counts every pass "
                                        "at its largest trip count{}",
                                        what, scope_[k].var, vars, proven ? " (an upper bound)" : " (an estimate)"));
            }
            term = pmul(term, trip);
        }
        // A loop whose range is reversed at these parameters runs no iterations, but HI − LO
        // would count it negative.
        for (int l : p_.enclosing_loops[static_cast<size_t>(pc)]) {
            const LoopInfo& loop = p_.loops[static_cast<size_t>(l)];
            if (loop.lo.is_constant() && loop.hi.is_constant() && loop.hi.constant < loop.lo.constant)
                note(array, fmt::format("{}: loop {} runs {}..{} at these parameters, no iterations, which the formula counts "
                                        "as a negative trip count", what, loop.var, loop.lo.constant, loop.hi.constant));
        }
        // STORE_ADD reads what it writes: its term counts on both sides.
        if (reads_dram(in.op)) reads_[static_cast<size_t>(array)] = padd(std::move(reads_[static_cast<size_t>(array)]), term);
        if (writes_dram(in.op)) writes_[static_cast<size_t>(array)] = padd(std::move(writes_[static_cast<size_t>(array)]), term);
    }

    // The elements range d of the operand spans, summed over its loops where the tiling
    // pattern collapses them (those loops are then `consumed`).
    // How range d of a slice reaches in one execution, before either analysis words a note or
    // sums it: the traffic formulas (extent) and the time formulas (slice_extent) share it.
    struct Reach {
        enum class Kind {
            Exact,      // `width` every time
            VarWidth,   // the width depends on loop variables: `width` is its largest (`proven`: an upper bound)
            Tiled,      // the tiling pattern v*W..v*W + W over `for v in LO..cdiv(D, W)` (or D/W): loop `level`
            Clipped,    // may be clipped at the array's edge: `width` is the full width
        } kind = Kind::Exact;
        Poly width, dim;
        bool proven = true;
        size_t level = 0;
        Cover cover = Cover::None;
    };
    Reach reach(const ast::Operand& o, size_t d, const ast::Array& decl) {
        Poly start = to_poly(*o.subscripts[d], scope_), end = to_poly(*o.subscript_ends[d], scope_);
        Reach r;
        r.dim = to_poly(*decl.dims[d], {});
        r.width = padd(end, start, -1);
        if (has_var(r.width)) {
            r.kind = Reach::Kind::VarWidth;
            r.width = largest(r.width, r.proven);
            return r;
        }
        // Never past the array's edge: the full width, every time.
        bool proven = true;
        Poly last = largest(end, proven);
        auto room = constant_of(padd(expand(r.dim), expand(last), -1));
        if (proven && room && *room >= 0) return r;
        if (!has_var(start) && !has_var(end)) {
            // The same slice every time, perhaps clipped: min(end, D) − start, exactly.
            r.width = room && *room < 0 ? padd(r.dim, start, -1) : padd(patom(opaque("min", end, r.dim)), start, -1);
            return r;
        }
        r.kind = Reach::Kind::Clipped;
        for (size_t k = 0; k < scope_.size(); ++k) {
            const Level& l = scope_[k];
            if (!mentions(start, l.atom)) continue;
            // One loop variable, v·W exactly, over a loop whose bounds are parameters only.
            if (padd(start, pmul(r.width, patom(l.atom)), -1) != Poly{} || has_var(l.lo) || has_var(l.hi)) break;
            r.cover = covering(l.hi, r.dim, r.width);
            if (r.cover != Cover::None) r.kind = Reach::Kind::Tiled, r.level = k;
            break;
        }
        return r;
    }
    // What the tiles of a loop from `lo` cover of dimension `dim`, width `width` each: dim, or
    // max(0, dim − lo·width) for a peeled loop.
    Poly covered(const Poly& dim, const Poly& lo, const Poly& width) {
        if (lo.empty()) return dim;
        return patom(opaque("max", Poly{}, padd(dim, pmul(lo, width), -1)));
    }

    // The elements range d of the operand spans, summed over its loops where the tiling
    // pattern collapses them (those loops are then `consumed`).
    Poly extent(const ast::Operand& o, size_t d, const ast::Array& decl, int array, const std::string& what,
                std::vector<bool>& consumed) {
        Reach r = reach(o, d, decl);
        std::string range = fmt::format("{}..{}", expr_text(*o.subscripts[d]), expr_text(*o.subscript_ends[d]));
        if (r.kind == Reach::Kind::VarWidth) {
            std::string vars = vars_in(padd(to_poly(*o.subscript_ends[d], scope_), to_poly(*o.subscripts[d], scope_), -1));
            note(array, fmt::format("{}: the width of the range {} depends on loop variable {}; the formula counts its largest "
                                    "width {}{}",
                                    what, range, vars, poly_text(r.width), r.proven ? " (an upper bound)" : " (an estimate)"));
            return r.width;
        }
        if (r.kind == Reach::Kind::Exact) return r.width;
        // Over the tiles of a loop, once per loop, and only if no deeper loop's bounds move with it.
        bool collapses = r.kind == Reach::Kind::Tiled && !consumed[r.level];
        for (size_t i = r.level + 1; collapses && i < scope_.size(); ++i)
            if (mentions(scope_[i].lo, scope_[r.level].atom) || mentions(scope_[i].hi, scope_[r.level].atom)) collapses = false;
        if (collapses && r.cover == Cover::Floor) return r.width;  // whole tiles only: never clipped
        if (collapses) {
            consumed[r.level] = true;
            return covered(r.dim, scope_[r.level].lo, r.width);
        }
        note(array, fmt::format("{}: the range {} may be clipped at the edge of {} (dimension {}); the formula counts its full "
                                "width {} (an upper bound)",
                                what, range, decl.name, expr_text(*decl.dims[d]), poly_text(r.width)));
        return r.width;
    }

    // ---- time ----
    // Why the totals are not exact; `divisibility`: only until a tile width divides the
    // dimension it tiles (exact_when_).
    void time_note(std::string text, bool divisibility = false) {
        if (!divisibility) other_inexact_ = true;
        if (std::find(time_notes_.begin(), time_notes_.end(), text) == time_notes_.end()) time_notes_.push_back(std::move(text));
    }

    // A loop's trip count, HI − LO; where it depends on an enclosing loop's variable, its largest.
    Poly trip_of(size_t k) {
        Poly trip = padd(scope_[k].hi, scope_[k].lo, -1);
        if (!has_var(trip)) return trip;
        bool proven = true;
        std::string vars = vars_in(trip);
        trip = largest(trip, proven);
        const std::string why = fmt::format("the bounds of loop {} depend on loop variable {}; every pass counts at its largest trip count{}",
                                            scope_[k].var, vars, proven ? " (an upper bound)" : " (an estimate)");
        time_note(why);
        if (grid_begin_ >= 0) grid_note(why);
        return trip;
    }

    // How far range d of a slice reaches in one execution, for the time formulas.
    Extent slice_extent(const ast::Operand& o, size_t d, const ast::Array& decl) {
        Reach r = reach(o, d, decl);
        switch (r.kind) {
            case Reach::Kind::Exact: return Extent{r.width};
            case Reach::Kind::VarWidth:
                time_note(fmt::format("the width of a slice of {} depends on loop variable {}; counted at its largest, {}{}", decl.name,
                                      vars_in(padd(to_poly(*o.subscript_ends[d], scope_), to_poly(*o.subscripts[d], scope_), -1)),
                                      poly_text(r.width), r.proven ? " (an upper bound)" : " (an estimate)"));
                return Extent{r.width};
            case Reach::Kind::Tiled:
                if (r.cover == Cover::Floor) return Extent{r.width};
                return Extent{r.width, scope_[r.level].atom, r.dim, scope_[r.level].lo};
            case Reach::Kind::Clipped: break;
        }
        const std::string why = fmt::format("a slice of {} may be clipped at its edge; counted at its full width {} (an upper bound)",
                                            decl.name, poly_text(r.width));
        time_note(why);
        if (grid_begin_ >= 0) grid_note(why);
        return Extent{r.width};
    }

    // The shape an operand of a tile instruction has: a tile's as last written (transposed for
    // .T), a scalar register's 1×1.
    Shape operand_shape(const TileOperand& a, const std::string& what) {
        if (a.kind == TileOperand::Kind::Register) return Shape{Extent{pconst(1)}, Extent{pconst(1)}, true};
        const Tile& t = p_.tiles[static_cast<size_t>(a.index)];
        Shape sh = shapes_[static_cast<size_t>(a.index)];
        if (!sh.known) {
            time_note(fmt::format("{}: tile {} is read before the program text writes it; counted at its capacity (an upper bound)", what,
                                  t.name));
            sh = capacity(a.index);
        }
        if (a.transposed) std::swap(sh.rows, sh.cols);
        return sh;
    }

    // A tile's capacity as declared, over the parameters: [cols] is a row, [rows][cols] a matrix.
    Shape capacity(std::int32_t index) {
        const Tile& t = p_.tiles[static_cast<size_t>(index)];
        Shape sh{Extent{pconst(t.rows)}, Extent{pconst(t.cols)}, true};
        for (const ast::Tile& decl : tree_.tiles)
            if (decl.name == t.name && !decl.dims.empty()) {
                sh.cols = Extent{to_poly(*decl.dims.back(), {})};
                if (decl.dims.size() == 2) sh.rows = Extent{to_poly(*decl.dims[0], {})};
            }
        return sh;
    }

    static bool same_extent(const Extent& a, const Extent& b) { return a.clip == b.clip && a.width == b.width; }
    static bool is_one(const Extent& e) { return e.clip < 0 && e.width == pconst(1); }

    // Broadcasting along one dimension: equal extents, or one of them 1.
    Extent broadcast(const Extent& a, const Extent& b, const std::string& what) {
        if (is_one(a)) return b;
        if (is_one(b) || same_extent(a, b)) return a;
        time_note(fmt::format("{}: operands whose shapes are not known to be equal; counted at the larger capacity (an estimate)", what));
        return Extent{patom(opaque("max", a.width, b.width))};
    }

    void time_instruction(const ast::Instruction& in, int pc) {
        const Inst& inst = p_.code[static_cast<size_t>(pc)];
        const OpInfo& op = info(in.op);
        const std::string what = fmt::format("{} (line {})", op.mnemonic, in.loc.line);
        std::vector<Extent> factors;  // the units of work: their product
        if (inst.code == Code::Tile) {
            const TileInst& t = p_.tile_insts[static_cast<size_t>(inst.mem)];
            const TileOperand& dest = t.args[static_cast<size_t>(t.count - 1)];
            Shape out;
            if (op.shape == OpShape::Memory) {
                const MemRef& m = p_.mems[static_cast<size_t>(t.mem)];
                const ast::Array& decl = tree_.arrays[static_cast<size_t>(m.array)];
                const ast::Operand* slice = nullptr;
                for (int i = 0; i < op.operand_count() && static_cast<size_t>(i) < in.operands.size(); ++i)
                    if (op.operand(i) == OperandKind::MemRead || op.operand(i) == OperandKind::MemWrite) slice = &in.operands[static_cast<size_t>(i)];
                std::vector<Extent> ranges;
                for (size_t d = 0; slice && d < slice->subscripts.size() && d < decl.dims.size(); ++d)
                    if (d < slice->subscript_ends.size() && slice->subscript_ends[d]) ranges.push_back(slice_extent(*slice, d, decl));
                out = Shape{Extent{pconst(1)}, Extent{pconst(1)}, true};
                if (ranges.size() == 2) out.rows = ranges[0], out.cols = ranges[1];
                if (ranges.size() == 1) out.cols = ranges[0];
                if (t.column) std::swap(out.rows, out.cols);
                factors = {out.rows, out.cols};
                if (in.op != Op::LOAD) out.known = false;  // a STORE writes no tile
            } else if (op.shape == OpShape::RowReduce) {
                Shape src = operand_shape(t.args[0], what);
                factors = {src.rows, src.cols};
                out = Shape{src.rows, Extent{pconst(1)}, true};
            } else if (op.shape == OpShape::Product && t.args[0].kind == TileOperand::Kind::Tile &&
                       t.args[1].kind == TileOperand::Kind::Tile) {
                Shape a = operand_shape(t.args[0], what), b = operand_shape(t.args[1], what);
                factors = {a.rows, b.cols, a.cols};
                out = Shape{a.rows, b.cols, true};
            } else if (op.shape == OpShape::Fill) {
                Shape src = operand_shape(t.args[0], what);
                Extent cols = dest.kind == TileOperand::Kind::Tile ? capacity(dest.index).cols : Extent{pconst(1)};
                out = Shape{src.rows, cols, true};
                factors = {out.rows, out.cols};
            } else {
                out = operand_shape(t.args[0], what);
                for (int k = 1; k < op.register_sources(); ++k) {
                    Shape other = operand_shape(t.args[static_cast<size_t>(k)], what);
                    out.rows = broadcast(out.rows, other.rows, what);
                    out.cols = broadcast(out.cols, other.cols, what);
                }
                factors = {out.rows, out.cols};
            }
            if (out.known && dest.kind == TileOperand::Kind::Tile) shapes_[static_cast<size_t>(dest.index)] = out;
        }
        // Summed over the loops around it, innermost first, down to the running grid's (whose
        // iterations are counted once); the grid sums the rest when it closes.
        const std::int64_t cycles = p_.cycles[static_cast<size_t>(in.op)];
        if (grid_begin_ < 0) {
            Poly term = sum_over_loops(pconst(cycles), factors, 0, what);
            work_ = padd(std::move(work_), term);
            makespan_ = padd(std::move(makespan_), std::move(term));
            return;
        }
        Poly term = sum_over_loops(pconst(cycles), factors, static_cast<size_t>(grid_begin_), what);
        grid_terms_.push_back({std::move(term), std::move(factors), what});
    }

    // coef × Π factors summed over the loops scope_[floor..]: a factor that is a tile of a loop
    // (the tiling pattern) sums to the dimension the tiles cover, where it is the only one;
    // otherwise each loop multiplies by its trip count. A grid's loops are not summed: each
    // iteration counts once, with full tiles. What floor leaves (tiles of loops below it) stays
    // in `factors` for the caller; with floor 0 the product is taken.
    Poly sum_over_loops(Poly term, std::vector<Extent>& factors, size_t floor, const std::string& what) {
        for (size_t k = scope_.size(); k-- > floor;) {
            const Level& l = scope_[k];
            std::vector<size_t> clipped;
            for (size_t f = 0; f < factors.size(); ++f)
                if (factors[f].clip == l.atom) clipped.push_back(f);
            if (l.grid) {
                for (size_t f : clipped) {
                    const std::string why = fmt::format("the last iteration of loop {} has clipped tiles unless {} divides {}; every "
                                                        "iteration counts full ones (an upper bound)",
                                                        l.var, poly_text(factors[f].width), poly_text(factors[f].dim));
                    time_note(why, true);
                    grid_note(why);
                    const std::string key = poly_text(factors[f].width) + "|" + poly_text(factors[f].dim);
                    if (std::find(divides_keys_.begin(), divides_keys_.end(), key) == divides_keys_.end()) {
                        divides_keys_.push_back(key);
                        exact_when_.push_back({formula(factors[f].width), formula(factors[f].dim)});
                    }
                    factors[f].clip = -1;
                }
                continue;
            }
            if (clipped.size() == 1) {  // the tiles of the loop cover the dimension once
                Extent& e = factors[clipped[0]];
                e.width = covered(e.dim, e.lo, e.width);
                e.clip = -1;
                continue;
            }
            if (clipped.size() > 1)
                time_note(fmt::format("{}: two operands are tiles of loop {}; each counts full (an upper bound)", what, l.var));
            for (size_t f : clipped) factors[f].clip = -1;
            term = pmul(term, trip_of(k));
        }
        if (floor > 0) return term;
        for (Extent& e : factors) {
            if (e.clip >= 0)
                time_note(fmt::format("{}: a tile from the last pass of loop {} counts full (an upper bound)", what,
                                      atoms_[static_cast<size_t>(e.clip)].text));
            term = pmul(term, e.width);
        }
        factors.clear();
        return term;
    }

    void grid_note(std::string text) {
        if (std::find(grid_notes_.begin(), grid_notes_.end(), text) == grid_notes_.end()) grid_notes_.push_back(std::move(text));
    }

    // The end of a grid: its iterations on the workers, summed over the loops around it.
    void close_grid(const ast::Loop& l) {
        GridTime g;
        for (size_t i = 0; i < p_.loops.size(); ++i)
            if (p_.loops[i].loc.line == l.loc.line && p_.loops[i].loc.col == l.loc.col) g.loop = static_cast<int>(i);
        const Poly iterations = grid_iterations_;
        grid_begin_ = -1;
        Poly workers = tree_.workers ? to_poly(*tree_.workers, {}) : pconst(1);
        // `on devices`: D iterations on D devices, one round (the links' waits are not in it).
        Poly rounds = l.devices ? pconst(1) : workers == pconst(1) ? iterations : patom(opaque("cdiv", iterations, workers));
        // One iteration, as the grid shows it: tiles of the loops around it count full. Within a
        // pass of those loops every iteration is alike, so the sums below stay exact.
        Poly one;
        for (PendingTerm& t : grid_terms_) {
            Poly shown = t.term;
            for (const Extent& e : t.factors) {
                if (e.clip >= 0)
                    grid_note(fmt::format("an iteration's cycles depend on loop {}, whose last tile is clipped unless {} divides {}; "
                                          "shown with full tiles", atoms_[static_cast<size_t>(e.clip)].text, poly_text(e.width),
                                          poly_text(e.dim)));
                shown = pmul(shown, e.width);
            }
            one = padd(std::move(one), shown);
            Poly total = sum_over_loops(t.term, t.factors, 0, t.what);
            work_ = padd(std::move(work_), pmul(total, iterations));
            makespan_ = padd(std::move(makespan_), pmul(total, rounds));
        }
        g.iterations = formula(iterations);
        g.iteration_cycles = formula(one);
        g.uniform = grid_notes_.empty();
        for (const auto& note : grid_notes_) g.note += (g.note.empty() ? "" : "; ") + note;
        grids_.push_back(std::move(g));
        grid_terms_.clear();
        grid_notes_.clear();
    }

};

}  // namespace

std::vector<ArrayFormulas> derive_formulas(const Program& p) {
    if (!p.tree) throw ToyError("derive_formulas: the program has no source tree");
    return Deriver(p).derive();
}

bool TimeFormulas::exact_at(const std::vector<std::pair<std::string, std::int64_t>>& bindings) const {
    if (exact) return true;
    if (exact_when.empty()) return false;
    for (const auto& [width, dim] : exact_when) {
        auto w = width.evaluate(bindings), d = dim.evaluate(bindings);
        if (!w || !d || *w <= 0 || *d % *w != 0) return false;
    }
    return true;
}

TimeFormulas derive_time(const Program& p) {
    if (!p.tree) throw ToyError("derive_time: the program has no source tree");
    return Deriver(p).derive_time();
}

}  // namespace toysim
