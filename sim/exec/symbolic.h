// The symbolic value domain: registers hold expressions over element names (a00, x1), built
// in an arena. Nodes are created in program order, so a node's id tells which came first.
// Commutative operations list the accumulated operand first (the taller expression, then the
// older one), which is how the seed writes running sums: s·e^(m − m') + e^(x − m').
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/primitives.h"
#include "sim/lower/program.h"

namespace toysim {

struct ExprNode {
    // A leaf (an input element), a constant, or one of the primitives (isa/primitives.h).
    enum class Kind : std::uint8_t {
        Leaf,
        Const,
#define X(KIND, METHOD, ARITY, NUMERIC, FORM, TEXT, PREFIX, BINDS) KIND,
        TOYSIM_PRIMITIVES(X)
#undef X
    } kind;
    std::uint32_t a = 0, b = 0;     // operands (node ids)
    double value = 0;               // Const
    std::uint32_t leaf = 0;         // Leaf: index into leaf names
    std::int64_t stored_at = -1;    // first DRAM address this value was stored to
    std::uint32_t height = 1;       // longest path to a leaf: how much has been accumulated
    std::uint64_t order = 0;        // "older": leaves by address, then other nodes by creation
};

// The primitive of a node that is not a leaf or a constant.
inline Primitive primitive_of(ExprNode::Kind k) { return static_cast<Primitive>(static_cast<int>(k) - 2); }

class ExprArena {
public:
    // `order` ranks leaves among themselves and before every other node when a commutative
    // operation orders its operands (the DRAM address: a00 before b00 whatever was read first).
    std::uint32_t leaf(std::string name, std::uint64_t order = 0);
    std::uint32_t constant(double v);
    std::uint32_t make(ExprNode::Kind kind, std::uint32_t a, std::uint32_t b = 0);

    const ExprNode& operator[](std::uint32_t id) const { return nodes_[id]; }
    const std::string& leaf_name(std::uint32_t id) const { return leaf_names_[nodes_[id].leaf]; }
    const std::vector<std::string>& leaf_names() const { return leaf_names_; }
    void mark_stored(std::uint32_t id, std::int64_t address) {
        if (nodes_[id].stored_at >= 0 || nodes_[id].kind == ExprNode::Kind::Leaf) return;
        nodes_[id].stored_at = address;
        stored_.push_back(id);
    }
    size_t size() const { return nodes_.size(); }

    // How far the arena has grown. A stepper that goes back to a checkpoint rolls the arena
    // back to the checkpoint's mark, so running forward again makes the same nodes with the
    // same ids: values keep their names however often a step is replayed.
    struct Mark {
        size_t nodes = 0, leaves = 0, stored = 0;
    };
    Mark mark() const { return {nodes_.size(), leaf_names_.size(), stored_.size()}; }
    void rollback(const Mark& m) {
        for (size_t i = m.stored; i < stored_.size(); ++i)
            if (stored_[i] < m.nodes) nodes_[stored_[i]].stored_at = -1;
        stored_.resize(m.stored);
        nodes_.resize(m.nodes);
        leaf_names_.resize(m.leaves);
    }

private:
    std::vector<ExprNode> nodes_;
    std::vector<std::string> leaf_names_;
    std::vector<std::uint32_t> stored_;  // nodes marked stored, in order, so rollback can unmark them
};

// An input element that no LOAD has read yet: its named value is made on first read, so a
// trace's memory follows what it reads, not the size of the inputs.
inline constexpr std::uint32_t kUnnamedInput = 0xFFFFFFFFu;

struct SymbolicDomain {
    using Value = std::uint32_t;
    ExprArena* arena;
    const Program* program;  // names input elements (a01, x3) when they are first read
    Value load(Value& cell, std::int64_t address) {
        if (cell == kUnnamedInput) {
            int array = program->array_of_address(address);
            std::int64_t offset = address - program->arrays[static_cast<size_t>(array)].base;
            cell = arena->leaf(program->element_symbol(array, offset), static_cast<std::uint64_t>(address));
        }
        return cell;
    }
    // One method per primitive: D.add(a, b), D.exp(a).
#define X(KIND, METHOD, ARITY, NUMERIC, FORM, TEXT, PREFIX, BINDS) \
    Value METHOD(Value a, Value b = 0) { return arena->make(ExprNode::Kind::KIND, a, b); }
    TOYSIM_PRIMITIVES(X)
#undef X
    Value constant(double v) { return arena->constant(v); }
    void stored(Value v, std::int64_t address) { arena->mark_stored(v, address); }
};

}  // namespace toysim
