// The value operations the machine computes with: the one table the numeric domain, the
// symbolic domain (its expression nodes and their constant folding) and the printer of
// symbolic values read. An ISA row (opcodes.h) names its primitive in its semantics.
//
// Each row: X(Kind, method, arity, numeric, form, text, prefix, binds)
//   method   the domain's function: D.add(a, b)
//   numeric  the value on doubles a (and b)
//   form     how a symbolic value prints (sim/print/expr_format.cpp):
//              Chain     an associative operation printed flat: a + b + c, a·b·c, max(a, b, c)
//              Infix     a − b, a/b (operands in parentheses where a sum or product would misread)
//              Power     e^x, e^(x − m)
//              Call      ln(x)
//   text     the separator (Chain, Infix) or the function (Power, Call; Chain with "max" wraps)
//   prefix   the letter a long value of this operation is abbreviated by (s1, m2, e1)
//   binds    how tightly it binds when printed inside another: Sum (a + b, a − b), Product
//            (a·b, a/b) or Atom (a call or a power, never parenthesized)
//
// Adding a primitive is one row here (and, to use it, a row in opcodes.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

// NaN propagates through max, whatever the operand order (IEEE fmax would drop it).
inline double toysim_max(double a, double b) { return a >= b ? a : (b > a ? b : a + b); }

#define TOYSIM_PRIMITIVES(X)                                           \
    X(Add, add, 2, a + b, Chain, " + ", 's', Sum)                       \
    X(Sub, sub, 2, a - b, Infix, " − ", 'd', Sum)                       \
    X(Mul, mul, 2, a * b, Chain, "·", 'p', Product)                     \
    X(Div, div, 2, a / b, Infix, "/", 'q', Product)                     \
    X(Max, max, 2, toysim_max(a, b), Chain, "max", 'm', Atom)           \
    X(Exp, exp, 1, std::exp(a), Power, "e^", 'e', Atom)                 \
    X(Log, log, 1, std::log(a), Call, "ln", 'e', Atom)

namespace toysim {

enum class Primitive : std::uint8_t {
#define X(KIND, METHOD, ARITY, NUMERIC, FORM, TEXT, PREFIX, BINDS) KIND,
    TOYSIM_PRIMITIVES(X)
#undef X
};

enum class PrintForm : std::uint8_t { Chain, Infix, Power, Call };
enum class Binding : std::uint8_t { Sum, Product, Atom };

struct PrimitiveInfo {
    Primitive kind;
    std::string_view name;
    int arity;
    PrintForm form;
    std::string_view text;
    char prefix;
    Binding binds;
};

inline constexpr PrimitiveInfo kPrimitives[] = {
#define X(KIND, METHOD, ARITY, NUMERIC, FORM, TEXT, PREFIX, BINDS) {Primitive::KIND, #METHOD, ARITY, PrintForm::FORM, TEXT, PREFIX, Binding::BINDS},
    TOYSIM_PRIMITIVES(X)
#undef X
};

inline constexpr const PrimitiveInfo& info(Primitive p) { return kPrimitives[static_cast<int>(p)]; }

// The primitive on numbers.
inline double evaluate(Primitive p, double a, [[maybe_unused]] double b = 0) {
    switch (p) {
#define X(KIND, METHOD, ARITY, NUMERIC, FORM, TEXT, PREFIX, BINDS) \
    case Primitive::KIND: return NUMERIC;
        TOYSIM_PRIMITIVES(X)
#undef X
    }
    return NAN;
}

}  // namespace toysim
