// Program's own functions (names, lookups, element names) and the entry points parse_file and
// compile(). The compiler itself is in compiler.h, fold.cpp, bind.cpp and lower.cpp.
#include <algorithm>
#include <fmt/format.h>

#include "sim/front/parser.h"
#include "sim/lower/compiler.h"

namespace toysim {

namespace {

// The opcode or array a counter is of: "MAC", "K", or "".
std::string_view counter_subject(const Program& p, const CounterRef& c) {
    switch (info(c.kind).scope) {
        case CounterScope::PerOpcode: return info(c.op).mnemonic;
        case CounterScope::PerArray: return p.arrays[static_cast<size_t>(c.array)].name;
        default: return {};
    }
}

}  // namespace

int MemRef::range_count() const { return static_cast<int>(std::count(is_range.begin(), is_range.end(), 1)); }

int Program::find_tile(std::string_view name) const {
    for (size_t i = 0; i < tiles.size(); ++i)
        if (tiles[i].name == name) return static_cast<int>(i);
    return -1;
}

Op Program::op_at(std::int32_t pc) const {
    const Inst& in = code[static_cast<size_t>(pc)];
    return in.code == Code::Tile ? tile_insts[static_cast<size_t>(in.mem)].op : static_cast<Op>(in.code);
}

std::int32_t Program::memref_at(std::int32_t pc) const {
    const Inst& in = code[static_cast<size_t>(pc)];
    if (in.code == Code::Tile) return tile_insts[static_cast<size_t>(in.mem)].mem;
    if (!is_instruction(in.code) || info(static_cast<Op>(in.code)).klass != OpClass::Memory) return -1;
    return in.mem;
}

std::string Program::register_file_text() const {
    int n = scalar_registers;
    if (tiles.empty()) return fmt::format("{} register{}: R0..R{}", n, n == 1 ? "" : "s", n - 1);
    std::string rest = n == 0 ? "no scalar registers remain" : n == 1 ? "R0 remains" : fmt::format("R0..R{} remain", n - 1);
    return fmt::format("the tiles take {} of {} registers; {}", tile_elements, registers, rest);
}

bool Program::uses(Op op) const {
    for (size_t pc = 0; pc < code.size(); ++pc)
        if (origin[pc] && origin[pc]->op == op) return true;
    return false;
}

std::string Program::counter_name(const CounterRef& c) const { return info(c.kind).name_for(counter_subject(*this, c)); }
std::string Program::counter_label(const CounterRef& c) const { return info(c.kind).label_for(counter_subject(*this, c)); }
std::string Program::counter_json(const CounterRef& c) const { return info(c.kind).json_for(counter_subject(*this, c)); }

int Program::find_array(std::string_view name) const {
    for (size_t i = 0; i < arrays.size(); ++i)
        if (arrays[i].name == name) return static_cast<int>(i);
    return -1;
}

std::vector<std::int64_t> Program::element_index(int array, std::int64_t offset) const {
    const ArrayInfo& a = arrays[static_cast<size_t>(array)];
    std::vector<std::int64_t> index;
    for (size_t d = 0; d < a.dims.size(); ++d) {
        index.push_back(offset / a.strides[d]);
        offset %= a.strides[d];
    }
    return index;
}

std::string Program::element_symbol(int array, std::int64_t offset) const {
    const ArrayInfo& a = arrays[static_cast<size_t>(array)];
    auto index = element_index(array, offset);
    bool short_form = index.size() <= 1 || std::all_of(a.dims.begin(), a.dims.end(), [](std::int64_t d) { return d <= 10; });
    if (!short_form) return element_ref(array, offset);
    std::string out = a.name;
    for (auto i : index) out += std::to_string(i);
    return out;
}

std::string Program::element_ref(int array, std::int64_t offset) const {
    std::string out = arrays[static_cast<size_t>(array)].name;
    for (auto i : element_index(array, offset)) out += fmt::format("[{}]", i);
    return out;
}

std::string Program::element_ref_at(std::int64_t address) const {
    const int array = array_of_address(address);
    return element_ref(array, address - arrays[static_cast<size_t>(array)].base);
}

std::int64_t Program::owner_of(int array, std::int64_t offset) const {
    const ArrayInfo& a = arrays[static_cast<size_t>(array)];
    if (a.split) {
        const auto k = static_cast<size_t>(a.split_dim);
        return offset / a.strides[k] % a.dims[k] / a.rows_per_device;
    }
    return a.role == ast::Role::Input ? -1 : 0;
}

int Program::array_of_address(std::int64_t address) const {
    for (size_t i = 0; i < arrays.size(); ++i)
        if (address >= arrays[i].base && address < arrays[i].base + arrays[i].size) return static_cast<int>(i);
    return -1;
}

ast::Program parse_file(const std::string& path) { return parse(SourceFile::read(path)); }

void refuse_devices(const Program& program, std::string_view what) {
    if (!program.devices) return;
    throw ToyError(program.devices_loc, fmt::format("{} does not model several devices yet: a program with 'devices' runs on the toy machine "
                                                    "(run, trace, step, view, cost's traffic formulas)",
                                                    what));
}

namespace {

// Which arrays race checking follows: those that some instruction inside a parallel loop
// writes or adds to. Only those can race (reads alone never do), so only they get cells.
void plan_race_checking(Program& p) {
    std::vector<bool> written(p.arrays.size(), false);
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        const std::int32_t mem = p.memref_at(static_cast<std::int32_t>(pc));
        if (mem < 0 || !writes_dram(p.op_at(static_cast<std::int32_t>(pc)))) continue;
        const auto& loops = p.enclosing_loops[pc];
        // Devices cannot race: each element is one device's, and only it touches the element.
        if (std::any_of(loops.begin(), loops.end(), [&](int l) { return p.loops[static_cast<size_t>(l)].parallel && !p.loops[static_cast<size_t>(l)].devices; }))
            written[static_cast<size_t>(p.mems[static_cast<size_t>(mem)].array)] = true;
    }
    for (size_t a = 0; a < p.arrays.size(); ++a)
        if (written[a]) {
            p.arrays[a].race_base = p.race_cells;
            p.race_cells += p.arrays[a].size;
        }
    for (MemRef& m : p.mems) {
        const ArrayInfo& a = p.arrays[static_cast<size_t>(m.array)];
        m.race_tracked = a.race_base >= 0;
        m.race_shift = a.base - a.race_base;
    }
}

// The cycles of one iteration of each parallel loop whose body is scalar instructions only, so
// that the time on the workers costs nothing to follow there.
void plan_iteration_cycles(Program& p) {
    for (LoopInfo& l : p.loops) {
        if (!l.parallel) continue;
        std::int64_t cycles = 0;
        for (std::int32_t pc = l.body.first; pc < l.body.second && cycles >= 0; ++pc) {
            const Code code = p.code[static_cast<size_t>(pc)].code;
            cycles = static_cast<int>(code) < kOpCount ? cycles + p.cycles[static_cast<size_t>(code)] : -1;
        }
        l.iteration_cycles = cycles;
    }
}

// Which instructions need no check while they run but the race check (Inst::unchecked), and
// which need that (Inst::race_checked). After plan_race_checking.
void plan_unchecked(Program& p) {
    std::vector<bool> in_parallel(p.code.size(), false);
    for (const LoopInfo& l : p.loops)
        if (l.parallel) std::fill(in_parallel.begin() + l.body.first, in_parallel.begin() + l.body.second, true);
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        Inst& in = p.code[pc];
        if (static_cast<int>(in.code) >= kOpCount) continue;  // tiles, loop control, the end
        // On several workers a parallel loop's instructions run interleaved: each is followed by
        // a choice of the next worker, which the fast path would skip.
        bool unchecked = !in.dynamic_registers && in.unproven_reads == 0 && !((p.workers > 1 || p.devices > 0) && in_parallel[pc]);
        if (info(static_cast<Op>(in.code)).klass == OpClass::Memory) {
            const MemRef& m = p.mems[static_cast<size_t>(in.mem)];
            unchecked = unchecked && m.bounds_proven && (m.always_present || !reads_dram(static_cast<Op>(in.code)));
            in.race_checked = in_parallel[pc] && m.race_tracked;
        }
        in.unchecked = unchecked;
    }
}

}  // namespace

Program compile(std::shared_ptr<const ast::Program> tree, const ParamSettings& settings) {
    Program p = detail::Compiler(std::move(tree), settings).take();
    if (p.has_parallel) {
        plan_race_checking(p);
        plan_iteration_cycles(p);
    }
    plan_unchecked(p);
    return p;
}

}  // namespace toysim

namespace toysim {

ProgramCache make_program_cache(std::string_view text, Loc where, std::string_view prefix) {
    ParsedCache parsed = parse_cache(text);
    if (!parsed.error.empty()) {
        Loc at = where;
        if (where.line != 0) {  // the word at fault, within the declaration's text
            at.col = where.col + static_cast<int>(parsed.error_at);
            at.len = std::max(1, static_cast<int>(parsed.error_length));
        }
        throw ToyError(at, fmt::format("{}{}", prefix, parsed.error));
    }
    return ProgramCache{parsed.config, std::string(text), where, 4};
}

CacheLayout cache_layout(const Program& program, std::int64_t heads, const std::vector<int>& element_bytes) {
    CacheLayout layout;
    const int all = program.cache ? program.cache->element_bytes : 4;
    for (size_t a = 0; a < program.arrays.size(); ++a) {
        const auto size = static_cast<std::uint64_t>(element_bytes.empty() ? all : element_bytes[a]);
        layout.base.push_back(layout.end);
        layout.element_bytes.push_back(size);
        layout.head_bytes.push_back(static_cast<std::uint64_t>(program.arrays[a].size) * size);
        const std::uint64_t bytes = layout.head_bytes.back() * static_cast<std::uint64_t>(heads);
        layout.end += (bytes + kCacheArrayAlignment - 1) / kCacheArrayAlignment * kCacheArrayAlignment;
    }
    return layout;
}

}  // namespace toysim
