#include "sim/print/expr_format.h"

#include <algorithm>
#include <set>

#include "sim/support/text.h"

namespace toysim {

namespace {
using K = ExprNode::Kind;

bool associative(K k) { return k == K::Add || k == K::Mul || k == K::Max; }
bool atomic(const ExprNode& n) { return n.kind == K::Leaf || n.kind == K::Const; }

char prefix(K k) {
    switch (k) {
        case K::Max: return 'm';
        case K::Add: return 's';
        case K::Mul: return 'p';
        case K::Div: return 'q';
        case K::Sub: return 'd';
        default: return 'e';
    }
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
        int arity = n.kind == K::Exp || n.kind == K::Log ? 1 : 2;
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
            if (per_prefix[p] > 1 || used.count(candidate)) {
                do candidate = p + std::to_string(++counter[p]);
                while (used.count(candidate));
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
        bool sum = c.kind == K::Add || c.kind == K::Sub;
        bool product = c.kind == K::Mul || c.kind == K::Div;
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
            parts.push_back(n.kind == K::Mul ? operand(child, true, false) : ref(child));
        }
    };
    switch (n.kind) {
        case K::Add:
        case K::Mul:
        case K::Max: {
            chain(chain, n.a);
            chain(chain, n.b);
            std::string sep = n.kind == K::Add ? " + " : n.kind == K::Mul ? "·" : ", ";
            std::string t;
            for (size_t i = 0; i < parts.size(); ++i) t += (i ? sep : "") + parts[i];
            return n.kind == K::Max ? "max(" + t + ")" : t;
        }
        case K::Sub: return ref(n.a) + " − " + operand(n.b, true, false);
        case K::Div: return operand(n.a, true, false) + "/" + operand(n.b, true, true);
        case K::Exp: return atomic(arena_[n.a]) || name_.count(n.a) ? "e^" + ref(n.a) : "e^(" + ref(n.a) + ")";
        case K::Log: return "ln(" + ref(n.a) + ")";
        default: return "?";
    }
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
