#include "sim/exec/symbolic.h"

#include <algorithm>
#include <cmath>

namespace toysim {

namespace {
constexpr std::uint64_t kAfterLeaves = std::uint64_t{1} << 62;
}

std::uint32_t ExprArena::leaf(std::string name, std::uint64_t order) {
    leaf_names_.push_back(std::move(name));
    nodes_.push_back(ExprNode{ExprNode::Kind::Leaf, 0, 0, 0, static_cast<std::uint32_t>(leaf_names_.size() - 1)});
    nodes_.back().order = order;
    return static_cast<std::uint32_t>(nodes_.size() - 1);
}

std::uint32_t ExprArena::constant(double v) {
    nodes_.push_back(ExprNode{ExprNode::Kind::Const, 0, 0, v});
    nodes_.back().order = kAfterLeaves + nodes_.size();
    return static_cast<std::uint32_t>(nodes_.size() - 1);
}

std::uint32_t ExprArena::make(ExprNode::Kind kind, std::uint32_t a, std::uint32_t b) {
    using K = ExprNode::Kind;
    const ExprNode& x = nodes_[a];
    const ExprNode& y = nodes_[b];
    // Fold constants and the identities the seed's traces rely on (x − x = 0, e^0 = 1).
    bool unary = info(primitive_of(kind)).arity == 1;
    if (x.kind == K::Const && (unary || y.kind == K::Const)) return constant(evaluate(primitive_of(kind), x.value, y.value));
    if (kind == K::Sub && a == b) return constant(0);
    if (kind == K::Max && a == b) return a;
    // Symbols stand for finite numbers, so −∞ − x = −∞ and 0·x = 0: a running state that
    // starts empty (SET -inf, SET 0) drops out of the first update, as e^(−∞) = 0 says.
    if (kind == K::Sub && x.kind == K::Const && x.value == -INFINITY) return constant(-INFINITY);
    if (kind == K::Mul && ((x.kind == K::Const && x.value == 0) || (y.kind == K::Const && y.value == 0))) return constant(0);
    // −∞ is where a running max starts (SET -inf): max(−∞, x) = x.
    if (kind == K::Max && x.kind == K::Const && x.value == -INFINITY) return b;
    if (kind == K::Max && y.kind == K::Const && y.value == -INFINITY) return a;
    if (kind == K::Mul && x.kind == K::Const && x.value == 1) return b;
    if (kind == K::Mul && y.kind == K::Const && y.value == 1) return a;
    if (kind == K::Add && x.kind == K::Const && x.value == 0) return b;
    if (kind == K::Add && y.kind == K::Const && y.value == 0) return a;
    // Commutative operations list the running value first: the taller expression, then the
    // older one. So MAX R0, r1, r1 reads max(x0, x1, x2) and a MAC reads c + a·b, as the seed.
    if (kind == K::Add || kind == K::Mul || kind == K::Max) {
        auto key = [&](std::uint32_t id) { return std::pair{-static_cast<std::int64_t>(nodes_[id].height), nodes_[id].order}; };
        if (key(b) < key(a)) std::swap(a, b);
    }
    std::uint32_t height = 1 + std::max(nodes_[a].height, unary ? 0u : nodes_[b].height);
    nodes_.push_back(ExprNode{kind, a, b});
    nodes_.back().height = height;
    nodes_.back().order = kAfterLeaves + nodes_.size();
    return static_cast<std::uint32_t>(nodes_.size() - 1);
}

}  // namespace toysim
