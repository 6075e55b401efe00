// The parser's cursor over a file's tokens and its integer expressions (sim/front/parser.cpp):
// what every kind of statement reads with. Internal to the front end.
#pragma once

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <string>
#include <string_view>
#include <vector>

#include "sim/front/ast.h"
#include "sim/front/lexer.h"
#include "support/text.h"

namespace toysim::front {

using namespace ast;

// The span from a to b where both are on one line, else a.
inline Loc span(Loc a, Loc b) {
    if (a.line != b.line) return a;
    return Loc{a.line, a.col, b.col + b.len - a.col};
}

class TokenCursor {
protected:
    std::vector<Token> tokens_;  // the parser fills them first
    size_t pos_ = 0;
    int nesting_ = 0;  // expression levels open: parentheses, unary minus signs, calls

    // One more level of an expression, opened at `loc`: refused past kMaxExprDepth, so that
    // neither this parser nor any later walk over the tree recurses without bound.
    class Level {
    public:
        Level(TokenCursor& p, Loc loc) : p_(p) {
            if (++p_.nesting_ > kMaxExprDepth) too_deep(loc);
        }
        ~Level() { --p_.nesting_; }
        Level(const Level&) = delete;
        Level& operator=(const Level&) = delete;

    private:
        TokenCursor& p_;
    };
    [[noreturn]] static void too_deep(Loc loc) {
        throw ToyError(loc, fmt::format("expressions nest deeper than {} levels", kMaxExprDepth));
    }
    // The height of a node over these operands, refused past kMaxExprDepth at `loc` (its
    // operator): a chain 1+1+...+1 is as deep a tree as the same number of parentheses.
    static int height_over(Loc loc, const Expr& lhs, const Expr* rhs = nullptr) {
        int h = 1 + std::max(lhs.height, rhs ? rhs->height : 0);
        if (h > kMaxExprDepth) too_deep(loc);
        return h;
    }

    const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
    bool at(Tok kind) const { return peek().kind == kind; }
    bool at_punct(std::string_view p) const { return peek().kind == Tok::Punct && peek().text == p; }
    bool at_word(std::string_view w) const { return peek().kind == Tok::Ident && peek().text == w; }
    const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
    bool accept_newline() {
        if (!at(Tok::Newline)) return false;
        next();
        return true;
    }

    static std::string describe(const Token& t) {
        switch (t.kind) {
            case Tok::Newline: return "end of line";
            case Tok::End: return "end of file";
            default: return quoted_name(t.text);
        }
    }

    [[noreturn]] void fail(const Token& t, std::string_view what) {
        // Inside ( ) and [ ] newlines are not tokens, so an unclosed bracket would be blamed
        // on the next line: report it at the end of the line where the bracket is open.
        if (pos_ > 0 && &t == &peek() && t.kind != Tok::End) {
            const Token& before = tokens_[pos_ - 1];
            if (before.kind != Tok::Newline && t.loc.line > before.loc.line)
                throw ToyError(Loc{before.loc.line, before.loc.col + before.loc.len, 1},
                               fmt::format("expected {} before the end of the line", what));
        }
        throw ToyError(t.loc, fmt::format("expected {}, got {}", what, describe(t)));
    }

    const Token& expect_punct(std::string_view p) {
        if (!at_punct(p)) fail(peek(), quoted_name(p));
        return next();
    }
    const Token& expect_ident(std::string_view what) {
        if (!at(Tok::Ident)) fail(peek(), what);
        return next();
    }
    void end_of_statement() {
        if (at(Tok::End)) return;
        if (!at(Tok::Newline)) fail(peek(), "end of line");
        next();
    }

    // ---- integer expressions ----
    ExprPtr expr() {
        ExprPtr lhs = term();
        while (at_punct("+") || at_punct("-")) {
            const Token& op = next();
            lhs = binary(op, std::move(lhs), term());
        }
        return lhs;
    }
    ExprPtr term() {
        ExprPtr lhs = unary();
        while (at_punct("*") || at_punct("/") || at_punct("%")) {
            const Token& op = next();
            lhs = binary(op, std::move(lhs), unary());
        }
        return lhs;
    }
    ExprPtr unary() {
        if (at_punct("-")) {
            Loc loc = next().loc;
            Level level(*this, loc);
            auto e = std::make_unique<Expr>();
            e->kind = Expr::Kind::Negate;
            e->lhs = unary();
            e->height = height_over(loc, *e->lhs);
            e->loc = span(loc, e->lhs->loc);
            return e;
        }
        return primary();
    }
    ExprPtr primary() {
        const Token& t = peek();
        if (t.kind == Tok::Integer) {
            next();
            auto e = std::make_unique<Expr>();
            e->kind = Expr::Kind::Number;
            e->loc = t.loc;
            auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), e->value);
            if (ec != std::errc()) throw ToyError(t.loc, fmt::format("integer {} is too large", quoted_name(t.text)));
            // "3n" (no space) reads as 3 * n, the way the seed writes counts.
            const Token& after = peek();
            if (after.kind == Tok::Ident && after.loc.line == t.loc.line && after.loc.col == t.loc.col + t.loc.len) {
                next();
                auto name = std::make_unique<Expr>();
                name->kind = Expr::Kind::Name;
                name->name = std::string(after.text);
                name->loc = after.loc;
                auto product = std::make_unique<Expr>();
                product->kind = Expr::Kind::Binary;
                product->op = '*';
                product->height = 1;
                product->loc = span(t.loc, after.loc);
                product->lhs = std::move(e);
                product->rhs = std::move(name);
                return product;
            }
            return e;
        }
        if (t.kind == Tok::Ident) {
            next();
            auto e = std::make_unique<Expr>();
            e->kind = Expr::Kind::Name;
            e->name = std::string(t.text);
            e->loc = t.loc;
            if (at_punct("(")) return call(std::move(e));
            return e;
        }
        if (at_punct("(")) {
            Level level(*this, next().loc);
            ExprPtr inner = expr();
            expect_punct(")");
            return inner;
        }
        if (t.kind == Tok::Real) throw ToyError(t.loc, fmt::format("expected an integer, got {}", quoted_name(t.text)));
        fail(t, "an integer expression");
    }
    // cdiv(a, b), min(a, b), max(a, b): the compiler checks the name and that both are constant.
    ExprPtr call(ExprPtr name) {
        Level level(*this, name->loc);
        name->kind = Expr::Kind::Call;
        next();  // (
        name->lhs = expr();
        expect_punct(",");
        name->rhs = expr();
        const Token& close = expect_punct(")");
        name->height = height_over(name->loc, *name->lhs, name->rhs.get());
        name->loc = span(name->loc, close.loc);
        return name;
    }
    ExprPtr binary(const Token& op, ExprPtr lhs, ExprPtr rhs) {
        auto e = std::make_unique<Expr>();
        e->kind = Expr::Kind::Binary;
        e->op = op.text[0];
        e->height = height_over(op.loc, *lhs, rhs.get());
        e->loc = span(lhs->loc, rhs->loc);
        e->lhs = std::move(lhs);
        e->rhs = std::move(rhs);
        return e;
    }
};

}  // namespace toysim::front
