// Internal to sim/analysis (not a public header): the polynomials the formulas are built from,
// and the integer expressions they print and evaluate. poly.cpp implements these, Formula's
// text and evaluation, and the let legend; formula.cpp derives the formulas.
//
// Limits keep every formula small and every walk over an expression shallow, whatever the
// program: a polynomial has at most kMaxFormulaTerms terms of degree at most kMaxFormulaDegree,
// and an expression built here is at most kMaxExprDepth + a few tall (source expressions are at
// most kMaxExprDepth: the parser refuses taller ones). Past a limit, or when a coefficient
// overflows 64 bits, these functions throw a ToyError without a location; the derivation gives
// it the location of the source line it was working on.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/analysis/cost.h"

namespace toysim::formula {

using ast::Expr;
using Bindings = std::vector<std::pair<std::string, std::int64_t>>;

inline constexpr std::size_t kMaxFormulaTerms = 4096;
inline constexpr std::size_t kMaxFormulaDegree = 64;

// ---- polynomials over atoms (ids), with 64-bit coefficients ----

using Mono = std::vector<int>;  // atom ids, sorted; a repeated id is a power
using Poly = std::map<Mono, std::int64_t>;

Poly pconst(std::int64_t c);
Poly patom(int id);
Poly padd(Poly a, const Poly& b, std::int64_t sign = 1);
Poly pmul(const Poly& a, const Poly& b);
std::optional<std::int64_t> constant_of(const Poly& p);
Poly substitute(const Poly& p, int id, const Poly& q);  // p with atom `id` replaced by q

// ---- expressions: building, copying, printing, evaluating ----

std::unique_ptr<Expr> make_number(std::int64_t v);
std::unique_ptr<Expr> make_name(const std::string& name);
std::unique_ptr<Expr> make_binary(char op, std::unique_ptr<Expr> l, std::unique_ptr<Expr> r);
std::unique_ptr<Expr> make_call(const std::string& fn, std::unique_ptr<Expr> l, std::unique_ptr<Expr> r);
// op over the items (at least one), as a balanced tree: a long sum stays shallow.
std::unique_ptr<Expr> make_balanced(char op, std::vector<std::unique_ptr<Expr>> items);
using ast::clone;  // (sim/front/ast.h)

// The source expression in the formulas' notation: "j·Bc + Bc", "cdiv(n, Br)". With `math`,
// cdiv(a, b) is ⌈a/b⌉ and a/b (integer division) is ⌊a/b⌋.
std::string expr_text(const Expr& e, bool math = false);
std::optional<std::int64_t> lookup(const Bindings& b, const std::string& name);
// The value with the language's integer semantics (integer.h); nullopt when a name is unbound,
// a division is by zero or the arithmetic overflows.
std::optional<std::int64_t> eval_expr(const Expr& e, const Bindings& b);
void names_in(const Expr& e, std::set<std::string>& out);

}  // namespace toysim::formula
