// Declarations: parameters and --set values, the register file and its tiles, arrays (extents,
// strides, DRAM layout) and their fills, checks and expectations. Also parse_setting,
// test_settings and sweep_settings, which read parameter settings.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <fmt/format.h>
#include <set>

#include "sim/lower/compiler.h"
#include "sim/reference/reference.h"
#include "support/text.h"

namespace toysim {

namespace detail {

namespace {

// DRAM a program may declare: far more than a run can hold, so `toysim cost` can count
// programs at any size; run() refuses more than kMaxRunDram (program.h).
constexpr std::int64_t kMaxDram = std::int64_t{1} << 44;
constexpr std::int64_t kMaxRegisters = 1 << 20;

}  // namespace

Compiler::Compiler(std::shared_ptr<const ast::Program> tree, const ParamSettings& settings) : tree_(std::move(tree)) {
    p_.source = tree_->source;
    p_.tree = tree_;
    bind_params(settings);
    check_requires();
    bind_machine();
    bind_arrays();
    lower_body(tree_->body);
    emit_plain(Code::Halt);
    bind_checks();
    bind_expects();
}

// ---- parameters ----

// A bad setting is ErrorKind::Setting with the parameter's name as its subject: the command
// line says which flag gave it ("--set n: ...").
void Compiler::bind_params(const ParamSettings& settings) {
    std::set<std::string, std::less<>> given;
    for (const auto& setting : settings) {
        const std::string& name = setting.first;
        auto it = std::find_if(tree_->params.begin(), tree_->params.end(), [&](const ast::Param& p) { return p.name == name; });
        if (it != tree_->params.end() && it->derived)
            throw ToyError(ErrorKind::Setting, Loc{},
                           fmt::format("{} is derived from the parameters (let {} = ...) and cannot be set", quoted_name(name), name),
                           name);
        if (it == tree_->params.end()) {
            std::vector<std::string_view> names;
            std::string list;
            for (const auto& p : tree_->params) {
                if (p.derived) continue;
                names.push_back(p.name);
                list += (list.empty() ? "" : ", ") + p.name;
            }
            std::string hint = did_you_mean(name, names);
            throw ToyError(ErrorKind::Setting, Loc{},
                           fmt::format("unknown parameter {}{} (this program's parameters: {})", quoted_name(name), hint,
                                       list.empty() ? "none" : list),
                           name);
        }
        given.insert(name);
    }
    for (const auto& p : tree_->params) {
        if (params_.count(p.name)) throw ToyError(p.loc, fmt::format("parameter {} is declared twice", quoted_name(p.name)));
        std::int64_t value = constant(*p.value, "a parameter");
        for (const auto& [name, v] : settings)
            if (name == p.name) value = v;
        params_[p.name] = value;
        p_.params.emplace_back(p.name, value);
    }
}

// Each `require` line against the parameters as set: the first that fails is the error, at its
// line, with both sides' values and the settings that made them.
void Compiler::check_requires() {
    for (const ast::Require& r : tree_->requires_) {
        const std::int64_t lhs = constant(*r.lhs, "a requirement");
        const std::int64_t rhs = constant(*r.rhs, "a requirement");
        const bool holds = r.relation == Relation::Equal ? lhs == rhs : r.relation == Relation::AtMost ? lhs <= rhs : lhs >= rhs;
        if (holds) continue;
        // Each side as written: the line's text from 'require' to the relation, and from it on.
        const std::string_view line = tree_->source ? tree_->source->line(r.loc.line) : std::string_view{};
        const auto cut = [&](int from, int to) {  // 1-based columns [from, to)
            if (from < 1 || to <= from || static_cast<std::size_t>(to - 1) > line.size()) return std::string("the expression");
            std::string_view t = line.substr(static_cast<std::size_t>(from - 1), static_cast<std::size_t>(to - from));
            while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
            while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
            return std::string(t);
        };
        const int relation_end = r.relation_loc.col + r.relation_loc.len;
        const std::string lhs_text = cut(r.loc.col + 7, r.relation_loc.col), rhs_text = cut(relation_end, r.loc.col + r.loc.len);
        std::string settings;
        for (const auto& p : tree_->params)
            if (!p.derived) settings += fmt::format("{}{} = {}", settings.empty() ? "" : ", ", p.name, params_.at(p.name));
        // A side written as a number says its value itself.
        std::string values;
        for (const auto& [side, value] : {std::pair{lhs_text, lhs}, std::pair{rhs_text, rhs}})
            if (side != std::to_string(value)) values += fmt::format("{}{} is {}", values.empty() ? "" : " and ", side, value);
        throw ToyError(r.loc, fmt::format("the program requires {} {} {}, but here {} ({})", lhs_text, relation_text(r.relation), rhs_text, values, settings));
    }
}

// ---- the register file ----

void Compiler::bind_machine() {
    if (!tree_->registers)
        throw ToyError("the program does not say how many registers the machine has: add 'registers N'");
    std::int64_t n = constant(*tree_->registers, "the register count");
    if (n < 1 || n > kMaxRegisters)
        throw ToyError(tree_->registers->loc, fmt::format("the register file must have 1 to {} registers, not {}", kMaxRegisters, n));
    p_.registers = static_cast<int>(n);
    if (tree_->workers) {
        std::int64_t w = constant(*tree_->workers, "the number of workers");
        if (w < 1 || w > kMaxWorkers)
            throw ToyError(tree_->workers->loc, fmt::format("the machine must have 1 to {} workers, not {}", kMaxWorkers, w));
        p_.workers = w;
        p_.workers_loc = tree_->workers->loc;
    }
    if (tree_->devices) bind_devices();
    if (tree_->warps) {
        std::int64_t w = constant(*tree_->warps, "the number of warps");
        if (w < 1 || w > kMaxWarps) throw ToyError(tree_->warps->loc, fmt::format("a worker has 1 to {} warps, not {}", kMaxWarps, w));
        p_.warps = w;
        p_.warps_declared = true;
    }
    if (!tree_->products.empty()) {
        const std::string& unit = tree_->products;
        if (unit != "cuda" && unit != "mma" && unit != "mma_tf32" && unit != "wgmma")
            throw ToyError(tree_->products_loc, fmt::format("products run on cuda (cores), mma, mma_tf32 or wgmma, not {}", quoted_name(unit)));
        p_.products = unit;
    }
    if (!tree_->product_patches.empty()) {
        const std::string& patches = tree_->product_patches;
        if (patches != "warp" && patches != "block")
            throw ToyError(tree_->product_patches_loc,
                           fmt::format("a lane's patches are of its warp's rows (warp) or of the block's result (block), not {}", quoted_name(patches)));
        if (p_.products != "cuda")
            throw ToyError(tree_->product_patches_loc, fmt::format("warp or block says how the CUDA cores' lanes split a product, not {}'s", p_.products));
        p_.block_patches = patches == "block";
    }
    if (tree_->cache) {
        p_.cache = make_program_cache(tree_->cache->text, tree_->cache->loc);
        refuse_devices(p_, "a modeled cache");
    }
    bind_tiles();
    definitely_written_.assign(static_cast<size_t>(p_.scalar_registers), false);
    clobbered_.assign(static_cast<size_t>(p_.scalar_registers), -1);
    tile_written_.assign(p_.tiles.size(), false);
    tile_clobbered_.assign(p_.tiles.size(), -1);
    written_inside_.assign(static_cast<size_t>(p_.scalar_registers), false);
    tile_written_inside_.assign(p_.tiles.size(), false);
    for (const auto& row : all_ops()) p_.cycles[static_cast<size_t>(row.op)] = row.cycles;
    for (const auto& cost : tree_->costs) {
        std::int64_t c = constant(*cost.cycles, "a cycle cost");
        if (c < 0 || c > 1'000'000) throw ToyError(cost.cycles->loc, fmt::format("cycle cost must be 0 to 1000000, not {}", c));
        p_.cycles[static_cast<size_t>(cost.op)] = static_cast<int>(c);
    }
}

// Tiles take the register file's elements in declaration order; the scalar registers
// R0.. are what is left. A program whose tiles do not fit is refused here. (Each extent is at
// most 2^20 and the running total at most the register count, so nothing here overflows.)
void Compiler::bind_tiles() {
    for (const auto& t : tree_->tiles) {
        if (p_.find_tile(t.name) >= 0) throw ToyError(t.loc, fmt::format("tile {} is declared twice", quoted_name(t.name)));
        if (params_.count(t.name)) throw ToyError(t.loc, fmt::format("{} is already a parameter", quoted_name(t.name)));
        if (t.dims.size() > 2) throw ToyError(t.dims[2]->loc, "tiles have one or two dimensions");
        Tile b;
        b.name = t.name;
        b.loc = t.loc;
        b.in_registers = t.in_registers;
        if (t.stages) {
            b.stages = constant(*t.stages, "a tile's stages");
            if (b.stages < 1 || b.stages > 8) throw ToyError(t.stages->loc, fmt::format("a tile has 1 to 8 stages, not {}", b.stages));
            if (b.in_registers && b.stages > 1)
                throw ToyError(t.stages->loc, "asynchronous copies (stages) fill shared memory: the tile is in registers");
        }
        b.rank = static_cast<int>(t.dims.size());
        std::vector<std::int64_t> dims;
        for (const auto& d : t.dims) {
            std::int64_t extent = constant(*d, "a tile dimension");
            if (extent < 1 || extent > kMaxRegisters)
                throw ToyError(d->loc, fmt::format("tile dimension must be 1 to {}, not {}", kMaxRegisters, extent));
            dims.push_back(extent);
        }
        b.rows = b.rank == 2 ? dims[0] : 1;
        b.cols = dims.back();
        b.base = p_.tile_elements;
        p_.tile_elements += b.rows * b.cols;
        if (p_.tile_elements > p_.registers) {
            std::string list;
            for (const auto& other : p_.tiles) list += fmt::format("{} {}, ", other.name, bank_shape(other));
            throw ToyError(t.loc, fmt::format("tile '{}' does not fit in the register file: the tiles need {} registers ({}{} {}) "
                                              "but the machine has {} (registers {})",
                                              t.name, p_.tile_elements, list, t.name, bank_shape(b), p_.registers, p_.registers));
        }
        p_.tiles.push_back(std::move(b));
    }
    p_.scalar_registers = static_cast<int>(p_.registers - p_.tile_elements);
}

// `devices D [ring] [link C] [latency L]`: the machine runs the devices as D workers, each
// with its own DRAM (sim/exec/links.h).
void Compiler::bind_devices() {
    const ast::Program& t = *tree_;
    if (t.workers)
        throw ToyError(t.workers_loc, "with 'devices', each device is one worker: drop 'workers' (a device's workers are not modeled yet)");
    std::int64_t d = constant(*t.devices, "the number of devices");
    if (d < 1 || d > kMaxDevices) throw ToyError(t.devices->loc, fmt::format("the machine must have 1 to {} devices, not {}", kMaxDevices, d));
    p_.devices = d;
    p_.workers = d;
    p_.devices_loc = t.devices_loc;
    p_.workers_loc = t.devices_loc;
    p_.ring = t.ring;
    // Both at most 2^20: a transfer's time (cycles × elements + latency) stays far from 2^63.
    constexpr std::int64_t kMaxLinkFigure = std::int64_t{1} << 20;
    if (t.link_cycles) {
        p_.link_cycles = constant(*t.link_cycles, "the link's cycles an element");
        if (p_.link_cycles < 0 || p_.link_cycles > kMaxLinkFigure)
            throw ToyError(t.link_cycles->loc, fmt::format("a link takes 0 to {} cycles an element, not {}", kMaxLinkFigure, p_.link_cycles));
    }
    if (t.link_latency) {
        p_.link_latency = constant(*t.link_latency, "the link's latency");
        if (p_.link_latency < 0 || p_.link_latency > kMaxLinkFigure)
            throw ToyError(t.link_latency->loc, fmt::format("a link's latency is 0 to {} cycles, not {}", kMaxLinkFigure, p_.link_latency));
    }
}

std::string Compiler::bank_shape(const Tile& b) {
    return b.rank == 2 ? fmt::format("{}×{}", b.rows, b.cols) : fmt::format("{}", b.cols);
}

// ---- arrays ----

// Extents multiply with checked arithmetic: the product of the extents (the size), every
// stride (a suffix of that product) and the total DRAM are at most kMaxDram, so addresses and
// strides never wrap.
void Compiler::bind_arrays() {
    std::uint64_t seed_counter = 0;
    for (const auto& a : tree_->arrays) {
        ++seed_counter;
        if (p_.find_array(a.name) >= 0) throw ToyError(a.loc, fmt::format("array {} is declared twice", quoted_name(a.name)));
        if (params_.count(a.name)) throw ToyError(a.loc, fmt::format("{} is already a parameter", quoted_name(a.name)));
        if (a.dims.size() > 4) throw ToyError(a.loc, "arrays have at most 4 dimensions");
        ArrayInfo info;
        info.name = a.name;
        info.role = a.role;
        info.loc = a.loc;
        info.fill = a.fill;
        if (info.fill.kind == ast::Fill::Kind::Default) {
            info.fill.kind = ast::Fill::Kind::Random;
            info.fill.seed = seed_counter;  // each array its own stream, reproducibly
        }
        for (const auto& d : a.dims) {
            std::int64_t extent = constant(*d, "an array dimension");
            if (extent < 1) throw ToyError(d->loc, fmt::format("array dimension must be at least 1, not {}", extent));
            auto size = integer::mul(info.size, extent);
            if (!size || *size > kMaxDram)
                throw ToyError(d->loc, fmt::format("array {} is too large (at most {} elements in all)", quoted_name(a.name), kMaxDram));
            info.dims.push_back(extent);
            info.size = *size;
        }
        if (a.split) {
            if (!tree_->devices) throw ToyError(a.split_loc, "'split' spreads an array's rows over the devices: declare 'devices D' first");
            if (info.dims.empty()) throw ToyError(a.split_loc, fmt::format("{} has no rows to split: it is one element", quoted_name(a.name)));
            const auto k = static_cast<size_t>(a.split_dim);
            if (k >= info.dims.size())
                throw ToyError(a.split_loc, fmt::format("{} {}, counted from 0: there is no dimension {} to split", quoted_name(a.name),
                                                        info.dimensions_text(), k));
            const std::string what = k == 0 ? "rows" : fmt::format("indices of dimension {}", k);
            if (info.dims[k] % p_.devices != 0)
                throw ToyError(a.split_loc, fmt::format("'split' gives each of the {} devices an equal part of the {} {} of {}: {} is not a multiple of {}",
                                                        p_.devices, info.dims[k], what, quoted_name(a.name), info.dims[k], p_.devices));
            info.split = true;
            info.split_dim = a.split_dim;
            info.rows_per_device = info.dims[k] / p_.devices;
        }
        info.strides.assign(info.dims.size(), 1);
        for (int i = static_cast<int>(info.dims.size()) - 2; i >= 0; --i)  // each at most size: no overflow
            info.strides[static_cast<size_t>(i)] = info.strides[static_cast<size_t>(i) + 1] * info.dims[static_cast<size_t>(i) + 1];
        info.base = p_.dram_size;
        if (p_.dram_size + info.size > kMaxDram)  // both at most kMaxDram = 2^44: no overflow
            throw ToyError(a.loc, fmt::format("the arrays are too large (at most {} elements in all)", kMaxDram));
        p_.dram_size += info.size;
        bind_fill(a, info);
        p_.arrays.push_back(std::move(info));
    }
}

// Random ranges must be finite, and so must their width (the generator computes lo + (hi −
// lo)·u). Literal and constant fills may be ±inf: a running max starts at -inf, and an input
// may hold -inf as a mask. NaN cannot be written.
void Compiler::bind_fill(const ast::Array& a, ArrayInfo& info) {
    const ast::Fill& f = info.fill;
    if (f.kind == ast::Fill::Kind::Random) {
        if (!std::isfinite(f.lo) || !std::isfinite(f.hi))
            throw ToyError(!std::isfinite(f.lo) ? f.lo_loc : f.hi_loc,
                           fmt::format("random(seed, lo, hi) needs finite bounds, not {}", !std::isfinite(f.lo) ? f.lo : f.hi));
        if (!std::isfinite(f.hi - f.lo))
            throw ToyError(f.loc, fmt::format("random(seed, lo, hi) needs a range whose width hi − lo is a finite number; "
                                              "{} − ({}) overflows a double", f.hi, f.lo));
    }
    if (f.kind == ast::Fill::Kind::Reference) bind_reference_fill(info);
    if (f.kind == ast::Fill::Kind::Literal && static_cast<std::int64_t>(f.values.size()) != info.size)
        throw ToyError(f.loc, fmt::format("array {} has {} elements but {} values are given", quoted_name(a.name), info.size, f.values.size()));
}

// input O[n][d] = attention(Q, K, V): the arguments are inputs declared above, and the
// reference's shape must be the array's.
void Compiler::bind_reference_fill(ArrayInfo& info) {
    std::vector<std::vector<std::int64_t>> shapes;
    for (const auto& [name, loc] : info.fill.args) {
        int a = array_named(name, loc);
        if (p_.arrays[static_cast<size_t>(a)].role != ast::Role::Input)
            throw ToyError(loc, fmt::format("{} is not an input; an input's values are computed only from inputs", quoted_name(name)));
        info.fill_args.push_back(a);
        shapes.push_back(p_.arrays[static_cast<size_t>(a)].dims);
    }
    auto shape = reference_shape(info.fill.function, shapes, info.fill.loc);
    if (shape != info.dims)
        throw ToyError(info.fill.loc, fmt::format("{}(...) is {} but '{}' is {}", info.fill.function, shape_text(shape), info.name,
                                                  shape_text(info.dims)));
}

// ---- checks and expectations ----

std::vector<std::int64_t> Compiler::constant_index(const std::vector<ast::ExprPtr>& subs, std::vector<Loc>* locs) {
    std::vector<std::int64_t> out;
    for (const auto& s : subs) {
        out.push_back(constant(*s, "a check index"));
        if (locs) locs->push_back(s->loc);
    }
    return out;
}

int Compiler::array_named(const std::string& name, Loc loc) {
    int a = p_.find_array(name);
    if (a < 0) {
        std::vector<std::string_view> names;
        for (const auto& arr : p_.arrays) names.push_back(arr.name);
        throw ToyError(loc, fmt::format("unknown array {}{}", quoted_name(name), did_you_mean(name, names)));
    }
    return a;
}

std::string Compiler::index_text(const std::vector<std::int64_t>& index) {
    std::string out;
    for (auto i : index) out += fmt::format("[{}]", i);
    return out;
}

void Compiler::bind_checks() {
    for (const auto& c : tree_->checks) {
        CheckSpec spec;
        spec.loc = c.loc;
        spec.target = array_named(c.target, c.target_loc);
        if (p_.arrays[static_cast<size_t>(spec.target)].role == ast::Role::Input)
            throw ToyError(c.target_loc, fmt::format("{} is an input; a check compares an output with a reference", quoted_name(c.target)));
        std::vector<Loc> target_locs, reference_locs;
        spec.target_index = constant_index(c.target_index, &target_locs);
        spec.function = c.function;
        std::vector<std::string> arg_names;
        for (const auto& [name, loc] : c.args) {
            spec.args.push_back(array_named(name, loc));
            arg_names.push_back(name);
        }
        spec.reference_index = constant_index(c.reference_index, &reference_locs);
        if (c.tolerance) {
            // A negative tolerance fails every element, and inf passes any value (NaN included).
            if (!std::isfinite(*c.tolerance) || *c.tolerance < 0)
                throw ToyError(c.tolerance_loc, fmt::format("a check's tolerance is a finite number of at least 0, not {}", *c.tolerance));
            spec.tolerance = *c.tolerance;
        }
        spec.text = fmt::format("{}{} = {}({}){}", c.target, index_text(spec.target_index), c.function,
                                fmt::join(arg_names, ", "), index_text(spec.reference_index));
        // Shapes are validated now, so a bad check is an error before anything runs.
        std::vector<std::vector<std::int64_t>> shapes;
        for (int a : spec.args) shapes.push_back(p_.arrays[static_cast<size_t>(a)].dims);
        std::vector<std::int64_t> ref_shape = reference_shape(spec.function, shapes, c.function_loc);
        auto sub = [&](std::vector<std::int64_t> shape, const std::vector<std::int64_t>& index, const std::vector<Loc>& locs,
                       std::string_view what) {
            if (index.size() > shape.size())
                throw ToyError(locs[shape.size()], fmt::format("{} has {} dimension{}; too many indices", what, shape.size(),
                                                               shape.size() == 1 ? "" : "s"));
            for (size_t d = 0; d < index.size(); ++d)
                if (index[d] < 0 || index[d] >= shape[d])
                    throw ToyError(locs[d], fmt::format("index {} is out of range for {}: dimension {} has {} entries (0..{})",
                                                        index[d], what, d + 1, shape[d], shape[d] - 1));
            return std::vector<std::int64_t>(shape.begin() + static_cast<long>(index.size()), shape.end());
        };
        auto lhs = sub(p_.arrays[static_cast<size_t>(spec.target)].dims, spec.target_index, target_locs, c.target);
        auto rhs = sub(ref_shape, spec.reference_index, reference_locs, c.function + "(...)");
        auto one = [](const std::vector<std::int64_t>& s) { return s.empty() || s == std::vector<std::int64_t>{1}; };
        if (lhs != rhs && !(one(lhs) && one(rhs)))
            throw ToyError(c.loc, fmt::format("the two sides differ in shape: {} is {}, but the reference is {}",
                                              c.target + index_text(spec.target_index), shape_text(lhs), shape_text(rhs)));
        p_.checks.push_back(std::move(spec));
    }
}

std::string Compiler::shape_text(const std::vector<std::int64_t>& shape) {
    if (shape.empty()) return "one element";
    return fmt::format("{}", fmt::join(shape, "×"));
}

void Compiler::bind_expects() {
    for (const auto& e : tree_->expects) {
        ExpectSpec spec;
        spec.loc = e.loc;
        spec.relation = e.relation;
        auto name = parse_counter_name(e.counter, e.array);
        if (!name) {
            if (e.counter == "work") throw ToyError(e.array.empty() ? e.loc : e.array_loc, "work takes an opcode: work(MAC)");
            if (!e.array.empty() && (parse_counter_name(e.counter, "") || find_op(e.counter)))
                throw ToyError(e.loc, "only reads(ARRAY), writes(ARRAY), work(OPCODE) and the cache's l2_hits(ARRAY), l2_misses(ARRAY), "
                                      "dram_bytes_read(ARRAY) and dram_bytes_written(ARRAY) take an argument");
            std::vector<std::string> spelled;
            for (const auto& row : all_counters())
                if (row.scope == CounterScope::Run || row.name == "{}" || row.name.find('(') != std::string_view::npos)
                    spelled.push_back(std::string(row.name.substr(0, row.name.find('('))));
            std::vector<std::string_view> names;
            for (const auto& n : spelled)
                if (n != "{}") names.push_back(n);
            for (const auto& row : all_ops()) names.push_back(row.mnemonic);
            throw ToyError(e.loc, fmt::format("unknown counter {}{}", quoted_name(e.counter), did_you_mean(e.counter, names)));
        }
        spec.counter.kind = name->kind;
        if (is_cache_counter(name->kind) && !tree_->cache)
            throw ToyError(e.loc, fmt::format("{} is counted by a modeled cache, and this program declares none: add a `cache` line "
                                              "(cache h100, or cache size=1KiB line=64 ways=2)",
                                              info(name->kind).name_for(e.array)));
        if (is_link_counter(name->kind) && !tree_->devices)
            throw ToyError(e.loc, fmt::format("{} is counted on the links between devices, and this program declares none: add a "
                                              "`devices D` line",
                                              info(name->kind).name_for(e.array)));
        if (info(name->kind).scope == CounterScope::PerOpcode) spec.counter.op = *find_op(name->subject);
        if (info(name->kind).scope == CounterScope::PerArray) spec.counter.array = array_named(e.array, e.array_loc);
        spec.value = constant(*e.value, "an expected figure");
        spec.text = p_.counter_name(spec.counter);
        p_.expects.push_back(std::move(spec));
    }
}

}  // namespace detail

// ---- parameter settings ----

// "n=1024", as given to --set. A bad one is ErrorKind::Setting with the whole text as its
// subject: the command line prefixes "--set TEXT: ".
std::pair<std::string, std::int64_t> parse_setting(std::string_view text) {
    auto eq = text.find('=');
    std::string name(text.substr(0, eq));
    while (!name.empty() && name.back() == ' ') name.pop_back();
    if (eq == std::string_view::npos || name.empty())
        throw ToyError(ErrorKind::Setting, Loc{}, "expected NAME=INTEGER, e.g. --set n=1024", std::string(text));
    std::string value(text.substr(eq + 1));
    std::int64_t v = 0;
    const char* first = value.data();
    const char* last = value.data() + value.size();
    while (first < last && *first == ' ') ++first;
    while (last > first && last[-1] == ' ') --last;
    auto [end, ec] = std::from_chars(first, last, v);
    if (ec == std::errc::result_out_of_range)
        throw ToyError(ErrorKind::Setting, Loc{}, fmt::format("{} is too large (parameters are 64-bit integers)", quoted_name(value)),
                       std::string(text));
    if (ec != std::errc() || end != last || first == last)
        throw ToyError(ErrorKind::Setting, Loc{}, fmt::format("{} is not an integer", quoted_name(value)), std::string(text));
    return {name, v};
}

std::vector<ParamSettings> test_settings(const ast::Program& tree) {
    std::vector<ParamSettings> out{{}};
    for (const auto& t : tree.tests) {
        ParamSettings s;
        for (const auto& [name, e] : t.settings) {
            if (e->kind != ast::Expr::Kind::Number && !(e->kind == ast::Expr::Kind::Negate && e->lhs->kind == ast::Expr::Kind::Number))
                throw ToyError(e->loc, "a test setting is a plain integer");
            s.emplace_back(name, e->kind == ast::Expr::Kind::Number ? e->value : -e->lhs->value);
        }
        out.push_back(std::move(s));
    }
    return out;
}

ParamSettings settings_from(const std::vector<std::string>& sets) {
    ParamSettings out;
    for (const auto& s : sets) out.push_back(parse_setting(s));
    return out;
}

std::vector<ParamSettings> sweep_settings(const std::vector<std::string>& sets) {
    std::vector<ParamSettings> combos{{}};
    for (const auto& s : sets) {
        auto eq = s.find('=');
        std::string name = s.substr(0, eq);
        std::vector<std::int64_t> values;
        if (eq != std::string::npos) {
            std::string list = s.substr(eq + 1);
            for (size_t start = 0;;) {
                size_t comma = list.find(',', start);
                values.push_back(parse_setting(name + "=" + list.substr(start, comma - start)).second);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
        } else {
            parse_setting(s);  // throws the usual message
        }
        std::vector<ParamSettings> next;
        for (const auto& c : combos)
            for (auto v : values) {
                ParamSettings more = c;
                more.emplace_back(name, v);
                next.push_back(std::move(more));
            }
        combos = std::move(next);
    }
    return combos;
}

}  // namespace toysim
