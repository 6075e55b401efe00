// Integer expressions: the AST folded into Affine forms (a constant plus constant multiples of
// loop variables) and constants, with the language's checked arithmetic (integer.h), and the
// ranges they can take. Every overflow and division by zero is an error at the expression.
#include <fmt/format.h>

#include "sim/lower/compiler.h"
#include "support/text.h"

namespace toysim::detail {

using ast::Expr;

namespace {

std::int64_t checked(std::optional<std::int64_t> v, Loc loc) {
    if (!v) throw ToyError(loc, "integer overflow in this expression");
    return *v;
}

}  // namespace

void Compiler::unknown_name(const Expr& e) {
    std::vector<std::string_view> names;
    for (auto& [name, v] : params_) names.push_back(name);
    for (auto& [name, slot] : scope_) names.push_back(name);
    std::string hint = did_you_mean(e.name, names);
    if (p_.find_array(e.name) >= 0)
        throw ToyError(e.loc, fmt::format("{} is an array, not a number: use it with subscripts in an instruction", quoted_name(e.name)));
    for (const auto& p : tree_->params)
        if (p.name == e.name)
            throw ToyError(e.loc, fmt::format("parameter '{}' is used before its value is known: a default may use only "
                                              "parameters declared above it", e.name));
    throw ToyError(e.loc, fmt::format("unknown name {}{}", quoted_name(e.name), hint));
}

// The tree is at most kMaxExprDepth tall (the parser refuses taller ones), and so is this
// recursion.
Affine Compiler::affine(const Expr& e) {
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
            out.constant = checked(integer::binary(e.op, l.constant, r.constant), e.loc);  // / floors, % follows it
            return out;
        }
    }
}

std::int64_t Compiler::call(const Expr& e) {
    if (!integer::is_function(e.name))
        throw ToyError(e.loc, fmt::format("unknown function {}{} (there are cdiv, min and max)", quoted_name(e.name),
                                          did_you_mean(e.name, {"cdiv", "min", "max"})));
    std::int64_t a = constant(*e.lhs, fmt::format("an argument of {}", e.name));
    std::int64_t b = constant(*e.rhs, fmt::format("an argument of {}", e.name));
    if (e.name == "cdiv" && b == 0) throw ToyError(e.rhs->loc, "division by zero");
    return checked(integer::call(e.name, a, b), e.loc);
}

Affine Compiler::scale(Affine a, std::int64_t k, Loc loc) {
    a.constant = checked(integer::mul(a.constant, k), loc);
    for (int t = 0; t < a.terms; ++t) a.coef[t] = checked(integer::mul(a.coef[t], k), loc);
    return a;
}

// a + b (sign 1) or a − b (sign −1): a − b is a subtraction, so −2^63 − (−2^63) is 0, not an
// overflow of −(−2^63).
Affine Compiler::combine(Affine a, const Affine& b, std::int64_t sign, Loc loc) {
    auto plus = [&](std::int64_t x, std::int64_t y) { return checked(sign < 0 ? integer::sub(x, y) : integer::add(x, y), loc); };
    a.constant = plus(a.constant, b.constant);
    for (int t = 0; t < b.terms; ++t) {
        int found = -1;
        for (int u = 0; u < a.terms; ++u)
            if (a.var[u] == b.var[t]) found = u;
        if (found < 0) {
            found = a.terms++;
            a.var[found] = b.var[t];
            a.coef[found] = 0;
        }
        a.coef[found] = plus(a.coef[found], b.coef[t]);
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

std::int64_t Compiler::constant(const Expr& e, std::string_view what) {
    Affine a = affine(e);
    if (!a.is_constant()) throw ToyError(e.loc, fmt::format("{} cannot depend on a loop variable", what));
    return a.constant;
}

Interval Compiler::range(const Affine& a) const {
    auto r = a.range(ranges_.data());
    return r ? *r : Interval::everything();
}

}  // namespace toysim::detail
