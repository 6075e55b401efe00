// Static cost analysis: exact traffic counts from the loop structure, and closed-form formulas
// from the source. See cost.h.
#include "sim/analysis/cost.h"

#include <algorithm>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <set>

namespace toysim {

namespace {

using ast::Expr;
using Bindings = std::vector<std::pair<std::string, std::int64_t>>;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

// ============================================================================================
// Count-only: per memory instruction, iterate only the loops that change what it moves.
// ============================================================================================

using i128 = __int128;

constexpr i128 kHuge = static_cast<i128>(1) << 100;  // beyond any array: "could be anything"

i128 clamp_huge(i128 v) { return std::clamp(v, -kHuge, kHuge); }

struct Interval {
    i128 lo, hi;  // inclusive
};

// Every value the affine expression can take when each loop variable ranges over its interval.
// Values are clamped to ±2^100, which keeps the arithmetic in range and only loosens a bound
// that no array dimension could meet anyway.
Interval interval_of(const Affine& a, const std::vector<Interval>& vars) {
    Interval out{a.constant, a.constant};
    for (int t = 0; t < a.terms; ++t) {
        const Interval& r = vars[a.var[t]];
        i128 x = clamp_huge(static_cast<i128>(a.coef[t]) * clamp_huge(r.lo));
        i128 y = clamp_huge(static_cast<i128>(a.coef[t]) * clamp_huge(r.hi));
        out.lo = clamp_huge(out.lo + std::min(x, y));
        out.hi = clamp_huge(out.hi + std::max(x, y));
    }
    return out;
}

void mark_vars(const Affine& a, std::vector<bool>& relevant) {
    for (int t = 0; t < a.terms; ++t)
        if (a.coef[t] != 0 && a.var[t] < relevant.size()) relevant[a.var[t]] = true;
}

// end − start, when no loop variable is left in it.
std::optional<i128> constant_width(const Affine& start, const Affine& end) {
    std::array<i128, kMaxLoopDepth> coef{};
    for (int t = 0; t < end.terms; ++t) coef[end.var[t]] += end.coef[t];
    for (int t = 0; t < start.terms; ++t) coef[start.var[t]] -= start.coef[t];
    for (i128 c : coef)
        if (c != 0) return std::nullopt;
    return static_cast<i128>(end.constant) - start.constant;
}

class InstructionCounter {
public:
    InstructionCounter(const Program& p, const MemRef& m, const std::vector<int>& enclosing) : p_(p), m_(m) {
        for (int l : enclosing) chain_.push_back(&p.loops[static_cast<size_t>(l)]);
    }

    std::uint64_t count() {
        const ArrayInfo& a = p_.arrays[static_cast<size_t>(m_.array)];
        size_t depth = chain_.size();
        // Every value each loop variable can take; a loop that can never run means the
        // instruction never executes.
        std::vector<Interval> vars(kMaxLoopDepth, Interval{0, 0});
        for (size_t k = 0; k < depth; ++k) {
            const LoopInfo& l = *chain_[k];
            if (static_cast<size_t>(l.slot) != k) throw ToyError("count_traffic: loop slots do not follow nesting depth");
            Interval lo = interval_of(l.lo, vars), hi = interval_of(l.hi, vars);
            i128 first = std::max(lo.lo, static_cast<i128>(std::numeric_limits<std::int64_t>::min()));
            i128 last = std::min(hi.hi - 1, static_cast<i128>(std::numeric_limits<std::int64_t>::max()));
            if (first > last) return 0;
            vars[k] = Interval{first, last};
        }
        // Which loops must be iterated: those a varying slice extent or a loop bound reads.
        relevant_.assign(depth, false);
        for (const LoopInfo* l : chain_) {
            mark_vars(l->lo, relevant_);
            mark_vars(l->hi, relevant_);
        }
        constant_extent_ = 1;
        for (size_t d = 0; d < m_.subscripts.size(); ++d) {
            if (!m_.is_range[d]) continue;
            auto width = constant_width(m_.subscripts[d], m_.ends[d]);
            if (width && interval_of(m_.ends[d], vars).hi <= a.dims[d]) {
                // Never clipped, and always the same width: no iteration needed.
                constant_extent_ = mul(constant_extent_, static_cast<std::uint64_t>(std::max<i128>(*width, 0)));
                continue;
            }
            variable_dims_.push_back(d);
            mark_vars(m_.subscripts[d], relevant_);
            mark_vars(m_.ends[d], relevant_);
        }
        if (constant_extent_ == 0) return 0;
        skip_.assign(m_.subscripts.size(), false);
        find_sliding_dims();
        return walk(0);
    }

private:
    const Program& p_;
    const MemRef& m_;
    std::vector<const LoopInfo*> chain_;
    std::vector<bool> relevant_;
    std::vector<size_t> variable_dims_;
    std::vector<bool> skip_;  // per dimension: summed in closed form by an enclosing level
    // Per loop level: the one clipped dimension whose sum over this loop has a closed form
    // (see find_sliding_dims), or -1.
    std::vector<int> sliding_;
    std::uint64_t constant_extent_ = 1;
    std::int64_t vars_[kMaxLoopDepth] = {};

    static std::int64_t coefficient(const Affine& a, size_t slot) {
        std::int64_t c = 0;
        for (int t = 0; t < a.terms; ++t)
            if (a.var[t] == slot) c += a.coef[t];
        return c;
    }
    static bool mentions_deeper(const Affine& a, size_t slot) {
        for (int t = 0; t < a.terms; ++t)
            if (a.var[t] > slot && a.coef[t] != 0) return true;
        return false;
    }

    // A level whose variable v only slides one range of constant width W forward (start and
    // end both v·a + ..., a > 0), with nothing deeper depending on v: the range is whole up to
    // some v, then clipped for fewer than W/a + 1 values, then past the edge. Its sum over v is
    // then arithmetic, and the deeper levels need walking once, not once per v. This keeps the
    // tiled loop of a causal (triangular) attention at n = 10⁶ in milliseconds.
    void find_sliding_dims() {
        sliding_.assign(chain_.size(), -1);
        for (size_t k = 0; k < chain_.size(); ++k) {
            if (!relevant_[k]) continue;
            bool bounds = false;
            for (size_t j = k + 1; j < chain_.size(); ++j)
                bounds = bounds || coefficient(chain_[j]->lo, k) != 0 || coefficient(chain_[j]->hi, k) != 0;
            if (bounds) continue;
            int found = -1, uses = 0;
            for (size_t d : variable_dims_)
                if (coefficient(m_.subscripts[d], k) != 0 || coefficient(m_.ends[d], k) != 0) {
                    ++uses;
                    found = static_cast<int>(d);
                }
            if (uses != 1) continue;
            const Affine& start = m_.subscripts[static_cast<size_t>(found)];
            const Affine& end = m_.ends[static_cast<size_t>(found)];
            if (mentions_deeper(start, k) || mentions_deeper(end, k) || !constant_width(start, end) || coefficient(end, k) <= 0)
                continue;
            sliding_[k] = found;
        }
    }

    static i128 floor_div128(i128 a, i128 b) {
        i128 q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return q;
    }
    i128 mul128(i128 a, i128 b) const {
        i128 v;
        if (__builtin_mul_overflow(a, b, &v)) overflow();
        return v;
    }

    // Σ over v in [lo, hi) of the clipped extent of dimension d, which slides with level k.
    std::uint64_t sliding_sum(size_t k, size_t d, std::int64_t lo, std::int64_t hi) {
        const Affine& start = m_.subscripts[d];
        const Affine& end = m_.ends[d];
        vars_[k] = 0;
        i128 s0 = value(start), e0 = value(end), a = coefficient(end, k);
        i128 dim = p_.arrays[static_cast<size_t>(m_.array)].dims[d], width = e0 - s0;
        i128 last = static_cast<i128>(hi) - 1;
        // Whole: e0 + a·v <= dim.
        i128 whole_to = std::min(last, floor_div128(dim - e0, a));
        i128 sum = 0;
        if (whole_to >= lo) sum = mul128(whole_to - lo + 1, std::max<i128>(width, 0));
        // Clipped: past the edge but starting inside it (s0 + a·v < dim); dim − s0 − a·v each.
        i128 from = std::max(static_cast<i128>(lo), whole_to + 1);
        i128 to = std::min(last, floor_div128(dim - 1 - s0, a));
        if (from <= to) {
            i128 count = to - from + 1;
            sum += mul128(count, dim - s0) - mul128(a, mul128(from + to, count) / 2);
        }
        // Beyond that the slice starts past the array: nothing (a run stops with an error there).
        if (sum < 0 || sum > static_cast<i128>(std::numeric_limits<std::uint64_t>::max())) overflow();
        return static_cast<std::uint64_t>(sum);
    }

    [[noreturn]] void overflow() const {
        throw ToyError(fmt::format("the traffic of array '{}' overflows 64 bits",
                                   p_.arrays[static_cast<size_t>(m_.array)].name));
    }
    std::uint64_t mul(std::uint64_t a, std::uint64_t b) const {
        std::uint64_t v;
        if (__builtin_mul_overflow(a, b, &v)) overflow();
        return v;
    }
    std::uint64_t add(std::uint64_t a, std::uint64_t b) const {
        std::uint64_t v;
        if (__builtin_add_overflow(a, b, &v)) overflow();
        return v;
    }
    std::int64_t value(const Affine& a) const {
        std::int64_t v;
        if (!a.eval_checked(vars_, v)) overflow();
        return v;
    }

    // Elements moved by one execution, with the relevant loop variables set.
    std::uint64_t extent() const {
        std::uint64_t n = constant_extent_;
        const ArrayInfo& a = p_.arrays[static_cast<size_t>(m_.array)];
        for (size_t d : variable_dims_) {
            if (skip_[d]) continue;
            std::int64_t start = value(m_.subscripts[d]), end = value(m_.ends[d]);
            i128 e = static_cast<i128>(std::min(end, a.dims[d])) - start;  // the edge tile is clipped
            n = mul(n, e > 0 ? static_cast<std::uint64_t>(e) : 0);
        }
        return n;
    }

    std::uint64_t walk(size_t k) {
        if (k == chain_.size()) return extent();
        const LoopInfo& l = *chain_[k];
        std::int64_t lo = value(l.lo), hi = value(l.hi);
        if (hi <= lo) return 0;
        if (!relevant_[k]) {
            auto trip = static_cast<std::uint64_t>(static_cast<i128>(hi) - lo);
            std::uint64_t inner = walk(k + 1);
            return inner == 0 ? 0 : mul(trip, inner);
        }
        if (int d = sliding_[k]; d >= 0) {
            skip_[static_cast<size_t>(d)] = true;
            std::uint64_t inner = walk(k + 1);  // nothing deeper reads v
            skip_[static_cast<size_t>(d)] = false;
            return inner == 0 ? 0 : mul(inner, sliding_sum(k, static_cast<size_t>(d), lo, hi));
        }
        std::uint64_t sum = 0;
        for (std::int64_t v = lo; v < hi; ++v) {
            vars_[k] = v;
            sum = add(sum, walk(k + 1));
        }
        return sum;
    }
};

// ============================================================================================
// Formulas: polynomials over atoms (parameters, lets, loop variables, and expressions that are
// not polynomials, such as cdiv(n, Bc) or n/t), with integer coefficients.
// ============================================================================================

using Mono = std::vector<int>;  // atom ids, sorted; a repeated id is a power
using Poly = std::map<Mono, std::int64_t>;

[[noreturn]] void coefficient_overflow() { throw ToyError("a traffic formula's coefficient overflows 64 bits"); }

std::int64_t cadd(std::int64_t a, std::int64_t b) {
    std::int64_t v;
    if (__builtin_add_overflow(a, b, &v)) coefficient_overflow();
    return v;
}
std::int64_t cmul(std::int64_t a, std::int64_t b) {
    std::int64_t v;
    if (__builtin_mul_overflow(a, b, &v)) coefficient_overflow();
    return v;
}

Poly pconst(std::int64_t c) {
    Poly p;
    if (c) p[{}] = c;
    return p;
}
Poly patom(int id) { return Poly{{Mono{id}, 1}}; }
void accumulate(Poly& into, const Mono& m, std::int64_t c) {
    auto [it, fresh] = into.emplace(m, 0);
    it->second = cadd(it->second, c);
    if (it->second == 0) into.erase(it);
}
Poly padd(Poly a, const Poly& b, std::int64_t sign = 1) {
    for (const auto& [m, c] : b) accumulate(a, m, cmul(c, sign));
    return a;
}
Poly pmul(const Poly& a, const Poly& b) {
    Poly out;
    for (const auto& [ma, ca] : a)
        for (const auto& [mb, cb] : b) {
            Mono m;
            std::merge(ma.begin(), ma.end(), mb.begin(), mb.end(), std::back_inserter(m));
            accumulate(out, m, cmul(ca, cb));
        }
    return out;
}
std::optional<std::int64_t> constant_of(const Poly& p) {
    if (p.empty()) return 0;
    if (p.size() == 1 && p.begin()->first.empty()) return p.begin()->second;
    return std::nullopt;
}
// p with atom `id` replaced by q.
Poly substitute(const Poly& p, int id, const Poly& q) {
    Poly out;
    for (const auto& [m, c] : p) {
        Mono rest;
        int power = 0;
        for (int a : m) {
            if (a == id) ++power;
            else rest.push_back(a);
        }
        Poly term{{rest, c}};
        for (int k = 0; k < power; ++k) term = pmul(term, q);
        out = padd(std::move(out), term);
    }
    return out;
}

// ---- expressions: building, copying, printing, evaluating ----

std::unique_ptr<Expr> make_number(std::int64_t v) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::Number;
    e->value = v;
    return e;
}
std::unique_ptr<Expr> make_name(const std::string& name) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::Name;
    e->name = name;
    return e;
}
std::unique_ptr<Expr> make_binary(char op, std::unique_ptr<Expr> l, std::unique_ptr<Expr> r) {
    auto e = std::make_unique<Expr>();
    e->kind = Expr::Kind::Binary;
    e->op = op;
    e->lhs = std::move(l);
    e->rhs = std::move(r);
    return e;
}
std::unique_ptr<Expr> make_call(const std::string& fn, std::unique_ptr<Expr> l, std::unique_ptr<Expr> r) {
    auto e = make_binary(0, std::move(l), std::move(r));
    e->kind = Expr::Kind::Call;
    e->name = fn;
    return e;
}
std::unique_ptr<Expr> clone(const Expr& e) {
    auto out = std::make_unique<Expr>();
    out->kind = e.kind;
    out->value = e.value;
    out->name = e.name;
    out->op = e.op;
    out->loc = e.loc;
    if (e.lhs) out->lhs = clone(*e.lhs);
    if (e.rhs) out->rhs = clone(*e.rhs);
    return out;
}

int precedence(const Expr& e) {
    if (e.kind == Expr::Kind::Binary) return e.op == '+' || e.op == '-' ? 1 : 2;
    if (e.kind == Expr::Kind::Negate) return 3;
    return 4;
}

// The source expression in the formulas' notation: "j·Bc + Bc", "cdiv(n, Br)". With `math`,
// cdiv(a, b) is ⌈a/b⌉ and a/b (integer division) is ⌊a/b⌋.
std::string expr_text(const Expr& e, bool math = false) {
    auto wrap = [&](const Expr& sub, int min_prec) {
        std::string s = expr_text(sub, math);
        return precedence(sub) < min_prec ? "(" + s + ")" : s;
    };
    switch (e.kind) {
        case Expr::Kind::Number: return std::to_string(e.value);
        case Expr::Kind::Name: return e.name;
        case Expr::Kind::Negate: return "−" + wrap(*e.lhs, 3);
        case Expr::Kind::Call:
            if (math && e.name == "cdiv") return "⌈" + wrap(*e.lhs, 2) + "/" + wrap(*e.rhs, 3) + "⌉";
            return e.name + "(" + expr_text(*e.lhs, math) + ", " + expr_text(*e.rhs, math) + ")";
        case Expr::Kind::Binary: break;
    }
    if (math && e.op == '/') return "⌊" + wrap(*e.lhs, 2) + "/" + wrap(*e.rhs, 3) + "⌋";
    int p = precedence(e);
    std::string op = e.op == '+' ? " + " : e.op == '-' ? " − " : e.op == '*' ? "·" : e.op == '/' ? "/" : " % ";
    return wrap(*e.lhs, p) + op + wrap(*e.rhs, p + 1);
}

std::optional<std::int64_t> lookup(const Bindings& b, const std::string& name) {
    for (const auto& [k, v] : b)
        if (k == name) return v;
    return std::nullopt;
}

std::optional<std::int64_t> eval_expr(const Expr& e, const Bindings& b) {
    switch (e.kind) {
        case Expr::Kind::Number: return e.value;
        case Expr::Kind::Name: return lookup(b, e.name);
        case Expr::Kind::Negate: {
            auto v = eval_expr(*e.lhs, b);
            if (!v || *v == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
            return -*v;
        }
        case Expr::Kind::Call:
        case Expr::Kind::Binary: break;
    }
    auto l = eval_expr(*e.lhs, b), r = eval_expr(*e.rhs, b);
    if (!l || !r) return std::nullopt;
    std::int64_t v;
    if (e.kind == Expr::Kind::Call) {
        if (e.name == "min") return std::min(*l, *r);
        if (e.name == "max") return std::max(*l, *r);
        if (e.name != "cdiv" || *r == 0 || *l == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
        if (*r == -1) return -*l;
        return -floor_div(-*l, *r);
    }
    switch (e.op) {
        case '+': return __builtin_add_overflow(*l, *r, &v) ? std::nullopt : std::optional(v);
        case '-': return __builtin_sub_overflow(*l, *r, &v) ? std::nullopt : std::optional(v);
        case '*': return __builtin_mul_overflow(*l, *r, &v) ? std::nullopt : std::optional(v);
        default: break;
    }
    if (*r == 0 || (*r == -1 && *l == std::numeric_limits<std::int64_t>::min())) return std::nullopt;
    std::int64_t q = floor_div(*l, *r);
    return e.op == '/' ? q : *l - q * *r;
}

void names_in(const Expr& e, std::set<std::string>& out) {
    if (e.kind == Expr::Kind::Name) out.insert(e.name);
    if (e.lhs) names_in(*e.lhs, out);
    if (e.rhs) names_in(*e.rhs, out);
}

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

private:
    struct Level {
        std::string var;
        int atom;
        Poly lo, hi;
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

    std::unique_ptr<Expr> poly_expr(const Poly& p) const {
        std::unique_ptr<Expr> sum;
        for (const auto& [m, c] : p) {
            std::unique_ptr<Expr> term = make_number(c);
            for (int id : m) term = make_binary('*', std::move(term), atom_expr(id));
            sum = sum ? make_binary('+', std::move(sum), std::move(term)) : std::move(term);
        }
        return sum ? std::move(sum) : make_number(0);
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
    void walk(const std::vector<ast::Statement>& body) {
        for (const auto& s : body) {
            if (auto* in = std::get_if<ast::Instruction>(&s)) {
                instruction(*in);
                continue;
            }
            const ast::Loop& l = *std::get<std::unique_ptr<ast::Loop>>(s);
            Poly lo = to_poly(*l.lo, scope_), hi = to_poly(*l.hi, scope_);  // may add atoms: before the variable's
            Level level{l.var, static_cast<int>(atoms_.size()), std::move(lo), std::move(hi)};
            atoms_.push_back(Atom{Atom::Kind::Var, l.var, nullptr, {}, {}});
            scope_.push_back(std::move(level));
            walk(l.body);
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
        const Inst& inst = p_.code[static_cast<size_t>(pc)];
        int mem = inst.code == Code::Tile ? p_.tile_insts[static_cast<size_t>(inst.mem)].mem : inst.mem;
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
        Poly& total = write ? writes_[static_cast<size_t>(array)] : reads_[static_cast<size_t>(array)];
        total = padd(std::move(total), term);
    }

    // The elements range d of the operand spans, summed over its loops where the tiling
    // pattern collapses them (those loops are then `consumed`).
    Poly extent(const ast::Operand& o, size_t d, const ast::Array& decl, int array, const std::string& what,
                std::vector<bool>& consumed) {
        Poly start = to_poly(*o.subscripts[d], scope_), end = to_poly(*o.subscript_ends[d], scope_);
        Poly dim = to_poly(*decl.dims[d], {});
        Poly width = padd(end, start, -1);
        std::string range = fmt::format("{}..{}", expr_text(*o.subscripts[d]), expr_text(*o.subscript_ends[d]));
        if (has_var(width)) {
            bool proven = true;
            std::string vars = vars_in(width);
            Poly w = largest(width, proven);
            note(array, fmt::format("{}: the width of the range {} depends on loop variable {}; the formula counts its largest "
                                    "width {}{}",
                                    what, range, vars, poly_text(w), proven ? " (an upper bound)" : " (an estimate)"));
            return w;
        }
        // Never past the array's edge: the full width, every time.
        bool proven = true;
        Poly last = largest(end, proven);
        auto room = constant_of(padd(expand(dim), expand(last), -1));
        if (proven && room && *room >= 0) return width;
        if (!has_var(start) && !has_var(end)) {
            // The same slice every time, perhaps clipped: min(end, D) − start, exactly.
            if (room && *room < 0) return padd(dim, start, -1);
            return padd(patom(opaque("min", end, dim)), start, -1);
        }
        if (auto tiles = tiling(start, width, dim, consumed)) return *tiles;
        note(array, fmt::format("{}: the range {} may be clipped at the edge of {} (dimension {}); the formula counts its full "
                                "width {} (an upper bound)",
                                what, range, decl.name, expr_text(*decl.dims[d]), poly_text(width)));
        return width;
    }

    // The standard tiling pattern: v*W..v*W + W with `for v in LO..cdiv(D, W)`. Over the loop the
    // tiles cover D exactly once, the last one clipped: trip × extent = D (LO = 0), or
    // max(0, D − LO·W) for a peeled loop. With `for v in LO..D/W` no tile is clipped.
    std::optional<Poly> tiling(const Poly& start, const Poly& width, const Poly& dim, std::vector<bool>& consumed) {
        int k = -1;
        for (size_t i = 0; i < scope_.size(); ++i)
            if (mentions(start, scope_[i].atom)) {
                if (k >= 0) return std::nullopt;  // two loop variables
                k = static_cast<int>(i);
            }
        if (k < 0 || consumed[static_cast<size_t>(k)]) return std::nullopt;
        const Level& l = scope_[static_cast<size_t>(k)];
        if (padd(start, pmul(width, patom(l.atom)), -1) != Poly{}) return std::nullopt;
        if (has_var(l.lo) || has_var(l.hi)) return std::nullopt;
        for (size_t i = static_cast<size_t>(k) + 1; i < scope_.size(); ++i)
            if (mentions(scope_[i].lo, l.atom) || mentions(scope_[i].hi, l.atom)) return std::nullopt;
        Cover cover = covering(l.hi, dim, width);
        if (cover == Cover::Floor) return width;  // whole tiles only: never clipped
        if (cover != Cover::Ceil) return std::nullopt;
        consumed[static_cast<size_t>(k)] = true;
        if (l.lo.empty()) return dim;
        return patom(opaque("max", Poly{}, padd(dim, pmul(l.lo, width), -1)));
    }
};

}  // namespace

// ---- public API ----

std::vector<ArrayTraffic> count_traffic(const Program& p) {
    std::vector<ArrayTraffic> out(p.arrays.size());
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        const Inst& in = p.code[pc];
        Op op;
        int mem;
        if (in.code == Code::Tile) {
            const TileInst& t = p.tile_insts[static_cast<size_t>(in.mem)];
            op = t.op;
            mem = t.mem;
        } else if (in.code == Code::LOAD || in.code == Code::STORE) {
            op = static_cast<Op>(in.code);
            mem = in.mem;
        } else {
            continue;
        }
        if ((op != Op::LOAD && op != Op::STORE) || mem < 0) continue;
        const MemRef& m = p.mems[static_cast<size_t>(mem)];
        std::uint64_t n = InstructionCounter(p, m, p.enclosing_loops[pc]).count();
        std::uint64_t& total = op == Op::LOAD ? out[static_cast<size_t>(m.array)].reads : out[static_cast<size_t>(m.array)].writes;
        if (__builtin_add_overflow(total, n, &total))
            throw ToyError(fmt::format("the traffic of array '{}' overflows 64 bits", p.arrays[static_cast<size_t>(m.array)].name));
    }
    return out;
}

std::string Formula::text() const {
    if (terms.empty()) return "0";
    std::string out;
    for (const auto& t : terms) {
        bool negative = t.coefficient < 0;
        auto magnitude = negative ? 0 - static_cast<std::uint64_t>(t.coefficient) : static_cast<std::uint64_t>(t.coefficient);
        std::string body;
        for (const auto& f : t.factors) body += (body.empty() ? "" : "·") + f.text;
        std::string term = body.empty() ? std::to_string(magnitude) : magnitude == 1 ? body : fmt::format("{}·{}", magnitude, body);
        if (out.empty()) out = (negative ? "−" : "") + term;
        else out += (negative ? " − " : " + ") + term;
    }
    return out;
}

std::optional<std::int64_t> Formula::evaluate(const std::vector<std::pair<std::string, std::int64_t>>& bindings) const {
    std::int64_t sum = 0;
    for (const auto& t : terms) {
        std::int64_t v = t.coefficient;
        for (const auto& f : t.factors) {
            auto x = f.expr ? eval_expr(*f.expr, bindings) : lookup(bindings, f.text);
            if (!x || __builtin_mul_overflow(v, *x, &v)) return std::nullopt;
        }
        if (__builtin_add_overflow(sum, v, &sum)) return std::nullopt;
    }
    return sum;
}

std::vector<ArrayFormulas> derive_formulas(const Program& p) {
    if (!p.tree) throw ToyError("derive_formulas: the program has no source tree");
    return Deriver(p).derive();
}

std::vector<LetLegend> let_legend(const Program& p, const std::vector<ArrayFormulas>& formulas) {
    std::set<std::string> used;
    for (const auto& f : formulas)
        for (const Formula* x : {&f.reads, &f.writes})
            for (const auto& t : x->terms)
                for (const auto& factor : t.factors) {
                    if (factor.expr) names_in(*factor.expr, used);
                    else used.insert(factor.text);
                }
    // A let used makes the lets its definition uses relevant too (later lets use earlier ones).
    const auto& params = p.tree->params;
    for (auto it = params.rbegin(); it != params.rend(); ++it)
        if (it->derived && used.count(it->name)) names_in(*it->value, used);
    std::vector<LetLegend> out;
    for (const auto& param : params) {
        if (!param.derived || !used.count(param.name)) continue;
        LetLegend l;
        l.name = param.name;
        l.definition = expr_text(*param.value);
        l.math = expr_text(*param.value, true);
        if (l.math == l.definition) l.math.clear();
        for (const auto& [name, value] : p.params)
            if (name == param.name) l.value = value;
        out.push_back(std::move(l));
    }
    return out;
}

std::string describe_lets(const Program& p, const std::vector<ArrayFormulas>& formulas) {
    std::string out;
    for (const auto& l : let_legend(p, formulas))
        out += fmt::format("{} = {}{} = {}\n", l.name, l.definition, l.math.empty() ? "" : " = " + l.math, l.value);
    return out;
}

}  // namespace toysim
