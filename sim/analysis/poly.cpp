// Polynomials and integer expressions for the formulas (see poly.h), Formula's text and
// evaluation, and the legend of the lets a formula uses.
#include <algorithm>
#include <fmt/format.h>

#include "sim/analysis/poly.h"

namespace toysim {

namespace formula {

namespace {

[[noreturn]] void coefficient_overflow() { throw ToyError("a traffic formula's coefficient overflows 64 bits"); }

std::int64_t cadd(std::int64_t a, std::int64_t b) {
    auto v = integer::add(a, b);
    if (!v) coefficient_overflow();
    return *v;
}
std::int64_t cmul(std::int64_t a, std::int64_t b) {
    auto v = integer::mul(a, b);
    if (!v) coefficient_overflow();
    return *v;
}

// into += c·m, or into −= c·m (sign −1: a subtraction, so that −2^63 is subtracted exactly).
void accumulate(Poly& into, const Mono& m, std::int64_t c, std::int64_t sign = 1) {
    if (m.size() > kMaxFormulaDegree)
        throw ToyError(fmt::format("a traffic formula has a term of degree over {}", kMaxFormulaDegree));
    auto [it, fresh] = into.emplace(m, 0);
    if (sign == 1 || sign == -1) {
        auto v = sign > 0 ? integer::add(it->second, c) : integer::sub(it->second, c);
        if (!v) coefficient_overflow();
        it->second = *v;
    } else {
        it->second = cadd(it->second, cmul(c, sign));
    }
    if (it->second == 0) into.erase(it);
    if (into.size() > kMaxFormulaTerms) throw ToyError(fmt::format("a traffic formula has more than {} terms", kMaxFormulaTerms));
}

int height_of(const std::unique_ptr<Expr>& e) { return e ? e->height : 0; }

}  // namespace

Poly pconst(std::int64_t c) {
    Poly p;
    if (c) p[{}] = c;
    return p;
}
Poly patom(int id) { return Poly{{Mono{id}, 1}}; }
Poly padd(Poly a, const Poly& b, std::int64_t sign) {
    for (const auto& [m, c] : b) accumulate(a, m, c, sign);
    return a;
}
Poly pmul(const Poly& a, const Poly& b) {
    Poly out;
    for (const auto& [ma, ca] : a)
        for (const auto& [mb, cb] : b) {
            if (ma.size() + mb.size() > kMaxFormulaDegree)
                throw ToyError(fmt::format("a traffic formula has a term of degree over {}", kMaxFormulaDegree));
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
    e->height = 1 + std::max(height_of(l), height_of(r));
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
std::unique_ptr<Expr> make_balanced(char op, std::vector<std::unique_ptr<Expr>> items) {
    // Pairwise, level by level: a tree of height ⌈log2(items)⌉ over the items.
    while (items.size() > 1) {
        std::vector<std::unique_ptr<Expr>> next;
        for (size_t i = 0; i + 1 < items.size(); i += 2) next.push_back(make_binary(op, std::move(items[i]), std::move(items[i + 1])));
        if (items.size() % 2) next.push_back(std::move(items.back()));
        items = std::move(next);
    }
    return std::move(items.front());
}

int precedence(const Expr& e) {
    if (e.kind == Expr::Kind::Binary) return e.op == '+' || e.op == '-' ? 1 : 2;
    if (e.kind == Expr::Kind::Negate) return 3;
    return 4;
}

// The source expression in the formulas' notation: "j·Bc + Bc", "cdiv(n, Br)". With `math`,
// cdiv(a, b) is ⌈a/b⌉ and a/b (integer division) is ⌊a/b⌋.
std::string expr_text(const Expr& e, bool math) {
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
            return v ? integer::neg(*v) : std::nullopt;
        }
        case Expr::Kind::Call:
        case Expr::Kind::Binary: break;
    }
    auto l = eval_expr(*e.lhs, b), r = eval_expr(*e.rhs, b);
    if (!l || !r) return std::nullopt;
    return e.kind == Expr::Kind::Call ? integer::call(e.name, *l, *r) : integer::binary(e.op, *l, *r);
}

void names_in(const Expr& e, std::set<std::string>& out) {
    if (e.kind == Expr::Kind::Name) out.insert(e.name);
    if (e.lhs) names_in(*e.lhs, out);
    if (e.rhs) names_in(*e.rhs, out);
}

}  // namespace formula

using namespace formula;

// ---- public API ----

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
        std::optional<std::int64_t> v = t.coefficient;
        for (const auto& f : t.factors) {
            auto x = f.expr ? eval_expr(*f.expr, bindings) : lookup(bindings, f.text);
            v = x ? integer::mul(*v, *x) : std::nullopt;
            if (!v) return std::nullopt;
        }
        auto s = integer::add(sum, *v);
        if (!s) return std::nullopt;
        sum = *s;
    }
    return sum;
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
