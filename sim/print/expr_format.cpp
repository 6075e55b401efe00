#include "sim/print/expr_format.h"

#include <algorithm>
#include <set>

#include "support/text.h"

namespace toysim {

namespace {
using K = ExprNode::Kind;

// What the primitive table (isa/primitives.h) says of a node's operation.
const PrimitiveInfo& op_of(K k) { return info(primitive_of(k)); }
bool atomic(const ExprNode& n) { return n.kind == K::Leaf || n.kind == K::Const; }
bool associative(K k) { return k != K::Leaf && k != K::Const && op_of(k).form == PrintForm::Chain; }
char prefix(K k) { return op_of(k).prefix; }

// A short name must not read as an array or one of its elements: "s" beside an array s,
// "m1" beside m[1] (whose element symbol is m1), whether or not the trace shows them.
bool names_array_data(const Program& program, const std::string& candidate) {
    if (program.find_array(candidate) >= 0) return true;
    for (const auto& a : program.arrays) {
        if (candidate.size() != a.name.size() + a.dims.size() || candidate.compare(0, a.name.size(), a.name) != 0) continue;
        bool element = true;
        for (size_t d = 0; d < a.dims.size(); ++d) {
            char digit = candidate[a.name.size() + d];
            element = element && digit >= '0' && digit <= '9' && digit - '0' < a.dims[d];
        }
        if (element) return true;
    }
    return false;
}

struct Uses {
    bool root = false, nested = false, spliced = false;
};
}  // namespace

ExprFormatter::ExprFormatter(const ExprArena& arena, const Program& program, const std::vector<std::uint32_t>& shown)
    : arena_(arena) {
    // Which nodes are reachable, and how they are used: as a cell, nested in another
    // operation, or spliced into a chain of the same associative operation (max(x0, x1, x2)).
    std::map<std::uint32_t, Uses> uses;
    std::vector<std::uint32_t> work;
    for (auto id : shown) {
        uses[id].root = true;
        work.push_back(id);
    }
    std::set<std::uint32_t> seen;
    while (!work.empty()) {
        std::uint32_t id = work.back();
        work.pop_back();
        if (!seen.insert(id).second) continue;
        const ExprNode& n = arena[id];
        if (atomic(n)) continue;
        int arity = op_of(n.kind).arity;
        for (int i = 0; i < arity; ++i) {
            std::uint32_t child = i ? n.b : n.a;
            bool splice = associative(n.kind) && arena[child].kind == n.kind;
            (splice ? uses[child].spliced : uses[child].nested) = true;
            work.push_back(child);
        }
    }
    // Values stored to DRAM are named after their element, whatever their width.
    std::set<std::string> taken(arena.leaf_names().begin(), arena.leaf_names().end());
    std::map<std::uint32_t, std::string> stored;
    for (auto id : seen) {
        const ExprNode& n = arena[id];
        if (atomic(n) || n.stored_at < 0) continue;
        int array = program.array_of_address(n.stored_at);
        stored[id] = program.element_symbol(array, n.stored_at - program.arrays[static_cast<size_t>(array)].base);
        taken.insert(stored[id]);
    }
    // Which other values get a short name depends on widths, and widths depend on the names
    // chosen ("m" or "m1"): iterate until the choice is stable (it settles in two or three
    // rounds; the bound only guards against a cycle).
    std::vector<std::uint32_t> abbreviated, previous;
    std::map<std::uint32_t, std::string> final_names;
    for (int round = 0; round < 8; ++round) {
        name_ = stored;
        abbreviated.clear();
        // In id order (children before parents): measure each value with the names decided so
        // far, using last round's name where there is one and a placeholder otherwise.
        for (auto id : seen) {
            const ExprNode& n = arena[id];
            text_[id] = expand(id);
            if (atomic(n) || name_.count(id)) continue;
            const Uses& u = uses[id];
            int width = display_width(text_[id]);
            if ((u.nested && (width > kNestedWidth || n.kind == K::Max)) || ((u.root || u.spliced) && width > kCellWidth)) {
                abbreviated.push_back(id);
                auto it = final_names.find(id);
                name_[id] = it != final_names.end() ? it->second : std::string(1, prefix(n.kind)) + "?";
            }
        }
        // Short names by operation, numbered in order of creation when a letter is used twice.
        final_names.clear();
        std::set<std::string> used = taken;
        std::map<char, int> per_prefix, counter;
        for (auto id : abbreviated) ++per_prefix[prefix(arena[id].kind)];
        for (auto id : abbreviated) {
            char p = prefix(arena[id].kind);
            std::string candidate(1, p);
            auto taken_now = [&](const std::string& c) { return used.count(c) || names_array_data(program, c); };
            if (per_prefix[p] > 1 || taken_now(candidate)) {
                do candidate = p + std::to_string(++counter[p]);
                while (taken_now(candidate));
            }
            used.insert(candidate);
            final_names[id] = candidate;
        }
        bool stable = abbreviated == previous;
        previous = abbreviated;
        if (stable) break;
    }
    name_ = stored;
    name_.insert(final_names.begin(), final_names.end());
    for (auto id : seen) text_[id] = expand(id);
}

std::string ExprFormatter::expand(std::uint32_t id) const {
    const ExprNode& n = arena_[id];
    if (n.kind == K::Leaf) return arena_.leaf_name(id);
    if (n.kind == K::Const) return format_number(n.value);
    auto operand = [&](std::uint32_t child, bool parens_for_sums, bool parens_for_products) {
        std::string t = ref(child);
        const ExprNode& c = arena_[child];
        if (name_.count(child) || atomic(c)) return t;
        bool sum = op_of(c.kind).binds == Binding::Sum;
        bool product = op_of(c.kind).binds == Binding::Product;
        if ((parens_for_sums && sum) || (parens_for_products && product)) return "(" + t + ")";
        return t;
    };
    // Associative chains print flat: unnamed operands of the same operation splice in.
    std::vector<std::string> parts;
    auto chain = [&](auto&& self, std::uint32_t child) -> void {
        if (arena_[child].kind == n.kind && !name_.count(child)) {
            self(self, arena_[child].a);
            self(self, arena_[child].b);
        } else {
            parts.push_back(op_of(n.kind).binds == Binding::Product ? operand(child, true, false) : ref(child));
        }
    };
    const PrimitiveInfo& op = op_of(n.kind);
    switch (op.form) {
        case PrintForm::Chain: {
            chain(chain, n.a);
            chain(chain, n.b);
            bool call = op.text.find_first_not_of(" +·*") != std::string_view::npos;  // max(a, b, c)
            std::string sep = call ? ", " : std::string(op.text);
            std::string t;
            for (size_t i = 0; i < parts.size(); ++i) t += (i ? sep : "") + parts[i];
            return call ? std::string(op.text) + "(" + t + ")" : t;
        }
        case PrintForm::Infix: {
            // a − (b + c); (a + b)/(c·d): a sum on the right of either, a product under a bar.
            bool bar = op.binds == Binding::Product;
            return (bar ? operand(n.a, true, false) : ref(n.a)) + std::string(op.text) + operand(n.b, true, bar);
        }
        case PrintForm::Power:
            return atomic(arena_[n.a]) || name_.count(n.a) ? std::string(op.text) + ref(n.a) : std::string(op.text) + "(" + ref(n.a) + ")";
        case PrintForm::Call: return std::string(op.text) + "(" + ref(n.a) + ")";
    }
    return "?";
}

std::string ExprFormatter::ref(std::uint32_t id) const {
    if (auto it = name_.find(id); it != name_.end()) return it->second;
    if (auto t = text_.find(id); t != text_.end()) return t->second;
    return expand(id);
}

std::string ExprFormatter::cell(std::uint32_t id) const { return ref(id); }

std::vector<std::pair<std::string, std::string>> ExprFormatter::legend() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [id, name] : name_) out.emplace_back(name, text_.at(id));
    return out;
}

}  // namespace toysim
