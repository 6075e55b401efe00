// A .toy program bound to parameter values and lowered to flat code the executor runs.
//
// Loops stay loops: LoopBegin/LoopEnd pseudo-instructions jump over the body, so the code
// size is the source size, whatever the trip counts. Every subscript is affine in the loop
// variables once parameters are bound, so an address is a constant plus a few products.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "isa/cache_config.h"
#include "sim/front/ast.h"
#include "sim/lower/integer.h"

namespace toysim {

// kMaxLoopDepth (sim/front/ast.h): loops nest at most 8 deep.
// Elements of DRAM a run may allocate. A numeric run holds 17 bytes per element (the value, a
// present flag and a read count: kStateBytesPerElement in sim/exec/state.h), so the limit is
// 1.07 GiB of machine state; measured peak at the limit: docs/counters.md, "Speed".
inline constexpr std::int64_t kMaxRunDram = std::int64_t{1} << 26;
// `warps W` takes 1 to 32 (a block of at most 1024 threads); without it, 4.
inline constexpr std::int64_t kMaxWarps = 32, kDefaultWarps = 4;
// `workers P` takes 1 to this many (a GPU has at most a few hundred SMs).
inline constexpr std::int64_t kMaxWorkers = 1024;
// `devices D` takes 1 to this many (a host holds 8 GPUs; a rack's NVLink domain 72).
inline constexpr std::int64_t kMaxDevices = 64;

struct Affine {
    std::int64_t constant = 0;
    int terms = 0;
    std::array<std::uint8_t, kMaxLoopDepth> var{};   // loop slot (nesting depth)
    std::array<std::int64_t, kMaxLoopDepth> coef{};

    // The value, computed modulo 2^64: exact whenever the true value is a 64-bit integer (an
    // address whose subscripts are in bounds, say), even if a partial sum is not. Never
    // undefined behaviour; for values nothing proved small, use eval_checked.
    // Always inlined: the executor's hottest arithmetic, and a call costs as much as the sum.
    [[gnu::always_inline]] std::int64_t eval(const std::int64_t* vars) const {
        auto v = static_cast<std::uint64_t>(constant);
        auto term = [&](int t) { return static_cast<std::uint64_t>(coef[t]) * static_cast<std::uint64_t>(vars[var[t]]); };
        // Most addresses have one to three terms: unrolled, the executor's hottest arithmetic.
        switch (terms) {
            case 0: break;
            case 1: v += term(0); break;
            case 2: v += term(0) + term(1); break;
            case 3: v += term(0) + term(1) + term(2); break;
            default:
                for (int t = 0; t < terms; ++t) v += term(t);
        }
        return static_cast<std::int64_t>(v);
    }
    // The same with overflow detection: false when a product or a partial sum overflows.
    bool eval_checked(const std::int64_t* vars, std::int64_t& out) const {
        std::int64_t v = constant;
        for (int t = 0; t < terms; ++t) {
            auto product = integer::mul(coef[t], vars[var[t]]);
            auto sum = product ? integer::add(v, *product) : std::nullopt;
            if (!sum) return false;
            v = *sum;
        }
        out = v;
        return true;
    }
    // Every value it takes while each loop variable k ranges over vars[k] (the slots it uses
    // must be there): empty when some variable's range is empty (the code never runs), nullopt
    // when a bound overflows 64 bits.
    std::optional<integer::Interval> range(const integer::Interval* vars) const {
        integer::Interval out = integer::Interval::point(constant);
        for (int t = 0; t < terms; ++t) {
            const integer::Interval& r = vars[var[t]];
            if (r.empty()) return integer::Interval{};
            auto term = integer::scale(r, coef[t]);
            auto sum = term ? integer::add(out, *term) : std::nullopt;
            if (!sum) return std::nullopt;
            out = *sum;
        }
        return out;
    }
    // The coefficient of loop slot `slot` (0 when it is not used).
    std::int64_t coefficient(int slot) const {
        for (int t = 0; t < terms; ++t)
            if (var[t] == slot) return coef[t];
        return 0;
    }
    bool is_constant() const { return terms == 0; }
};

struct ArrayInfo {
    std::string name;
    ast::Role role;
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> strides;
    std::int64_t base = 0;  // first flat DRAM address
    std::int64_t size = 1;
    // Where its elements' cells start in the race table (sim/exec/parallel.h), or -1: no
    // iteration of a parallel loop writes or adds to it, so its accesses cannot race.
    std::int64_t race_base = -1;
    ast::Fill fill;
    std::vector<int> fill_args;  // Reference fill: the arrays it is computed from
    Loc loc;
    // `split [K]` (with `devices D`): device k holds indices k·rows_per_device ..
    // (k+1)·rows_per_device − 1 of its dimension split_dim (0: its rows). An array that is not
    // split is device 0's, but for an input, which every device holds a copy of.
    bool split = false;
    int split_dim = 0;
    std::int64_t rows_per_device = 0;
    // Every element holds a value before the program runs: an input, or a constant start (= 0).
    bool starts_filled() const { return role == ast::Role::Input || fill.kind == ast::Fill::Kind::Constant; }
    // Its first element as the language writes it: "x" (a scalar), "x[0]", "x[0][0]", ...
    std::string first_element() const {
        std::string out = name;
        for (size_t d = 0; d < dims.size(); ++d) out += "[0]";
        return out;
    }
    // "has no dimensions (a scalar)", "has 1 dimension", "has 2 dimensions"
    std::string dimensions_text() const {
        if (dims.empty()) return "has no dimensions (a scalar)";
        return "has " + std::to_string(dims.size()) + (dims.size() == 1 ? " dimension" : " dimensions");
    }
};

struct MemRef {
    int array = -1;
    std::vector<Affine> subscripts;  // one per dimension; for a range a..b, its start a
    Affine address;                  // absolute flat DRAM address (of the first element)
    bool bounds_proven = false;      // every reachable subscript is in range: skip the check
    bool always_present = false;     // an input (or constant-filled) array: every element holds a value
    // Tile slices: per dimension, whether it is a range, and the range's end b. An end past
    // the array is clipped to it (the edge tile), so only the elements really there move.
    std::vector<std::uint8_t> is_range;
    std::vector<Affine> ends;
    // Its array's race_base >= 0: the element at address a has the race cell a − race_shift.
    bool race_tracked = false;
    std::int64_t race_shift = 0;
    int range_count() const;
};

// A named register bank (a tile): part of the register file, which is the SRAM.
struct Tile {
    std::string name;
    int rank = 2;                      // as declared: [cols] is a row vector, [rows][cols] a matrix
    std::int64_t rows = 1, cols = 1;   // capacity; the current shape is set by what is written
    std::int64_t base = 0;             // first element in the tile storage
    Loc loc;
    bool in_registers = false;         // `in registers`: on a GPU, in the warps' registers, not shared memory
    std::int64_t stages = 1;           // `stages S`: LOADs into it are asynchronous copies, S in flight (1: synchronous)
    // Generated CUDA (gpu::as_generated): kept in shared memory as the arrays' storage type, so
    // that a LOAD into it moves 16 bytes a read (else 4 elements a read).
    bool stored = false;
};

// A register operand of a tile instruction: a tile, or a scalar register (a 1×1 tile).
struct TileOperand {
    enum class Kind : std::uint8_t { Tile, Register } kind = Kind::Tile;
    std::int32_t index = 0;  // bank; or register, -1-k for dynamic register entry k
    bool transposed = false; // tile.T (MAC / MAC_Z sources)
};

struct TileInst {
    Op op;
    int count = 0;                    // register operands, in source order (destination last)
    std::array<TileOperand, kMaxRegisterOperands> args;  // sized by the ISA table's widest row
    std::int32_t mem = -1;            // the slice MemRef (LOAD / STORE)
    bool column = false;              // a one-range slice that is a column tile's rows
    double imm = 0;                   // SET
    // Generated CUDA (gpu::as_generated): a product whose loop on the CUDA cores reads its
    // operands an element at a time (else 16 bytes at a time).
    bool by_element = false;
    // And the results a thread of it computes, rows × columns (0: not generated CUDA).
    int thread_rows = 0, thread_cols = 0;
};

// Internal codes beyond the ISA's opcodes: loop control and the end of the program.
enum class Code : std::uint8_t {
#define X(NAME, SIG, OPERANDS, MEANING, CYCLES, CLASS, SHAPE, UNIT, GPU, SEM) NAME,
    TOYSIM_OPCODES(X)
#undef X
    LoopBegin,
    LoopEnd,
    Halt,
    Tile,  // an instruction on tiles or slices: Inst::mem indexes Program::tile_insts
};

// Loop control and the end are not instructions: they cost nothing and count nowhere.
inline bool is_instruction(Code code) { return code != Code::LoopBegin && code != Code::LoopEnd && code != Code::Halt; }

struct Inst {
    Code code;
    bool dynamic_registers : 1 = false;  // some register operand is R[expr]
    // Needs none of the executor's checks but the race check: no dynamic register, no
    // unproven read, and a memory operand (if any) proven in bounds and holding a value where
    // it is read. A plain run takes the fast path for it (sim/exec/fast_path.h; plan_unchecked
    // in program.cpp).
    bool unchecked : 1 = false;
    // A LOAD, STORE or STORE_ADD inside a parallel loop on an array race checking follows.
    bool race_checked : 1 = false;
    std::uint8_t reg_count = 0;
    // Bit k: register operand k might be read before any write reaches it, so the executor
    // checks it. Reads the compiler proves safe (definite assignment) skip the check.
    std::uint8_t unproven_reads = 0;
    std::array<std::int32_t, kMaxRegisterOperands> reg{};  // register operands in source order; -1-k: dynamic entry k
    std::int32_t mem = -1;              // MemRef index (LOAD/STORE); Tile: TileInst; SET: immediate
    std::int32_t loop = -1;             // LoopInfo index (LoopBegin/LoopEnd)
    std::int32_t jump = -1;             // LoopBegin: its LoopEnd; LoopEnd: its LoopBegin; SEND, RECV: Program::device_operands index
};
static_assert(sizeof(Inst) == 32, "the executor indexes code by a shift: keep an instruction 32 bytes");

struct LoopInfo {
    int slot;  // nesting depth: index into the loop variable array
    Affine lo, hi;
    std::string var;
    Loc loc;
    // `parallel for`. Directly nested parallel loops form a grid, whose iterations are the
    // tuples of their variables: grid_outer marks its outermost loop, grid_inner its innermost
    // (both, for a grid of one loop).
    bool parallel = false;
    bool grid_outer = false, grid_inner = false;
    // `on devices r { ... }`: a parallel loop over 0..D whose iteration k runs on device k.
    bool devices = false;
    std::pair<std::int32_t, std::int32_t> body{0, 0};  // its body's code: pcs first..last + 1
    // A parallel loop whose body is scalar instructions only: the cycles of one iteration (each
    // runs every instruction once); -1 otherwise.
    std::int64_t iteration_cycles = -1;
};

struct DynamicRegister {
    Affine index;
    Loc loc;
};

struct CheckSpec {
    int target = -1;                          // array
    std::vector<std::int64_t> target_index;   // a prefix of its dimensions
    std::string function;
    std::vector<int> args;                    // arrays
    std::vector<std::int64_t> reference_index;
    double tolerance = 1e-9;                  // relative, with the same absolute floor
    std::string text;                         // "c[0][0] = matmul(a, b)[0][0]"
    Loc loc;
};

// One counter of a run: a row of the counter table (isa/counters.h) with its opcode or array.
struct CounterRef {
    CounterKind kind = CounterKind::Cycles;
    Op op = Op::LOAD;  // PerOpcode counters
    int array = -1;    // PerArray counters: index into Program::arrays
    bool operator==(const CounterRef&) const = default;
};

struct ExpectSpec {
    CounterRef counter;
    Relation relation = Relation::Equal;
    std::int64_t value = 0;
    std::string text;   // the counter's name: "reads(x)"
    Loc loc;
    bool holds(std::uint64_t actual) const {
        if (value < 0) return relation == Relation::AtLeast;
        auto v = static_cast<std::uint64_t>(value);
        return relation == Relation::Equal ? actual == v : relation == Relation::AtMost ? actual <= v : actual >= v;
    }
};

// The modeled cache between the workers and DRAM (`cache` in the program, or --cache), and
// the byte layout of DRAM it sees: every array row-major, in declaration order, each starting
// on a kCacheArrayAlignment boundary (as cudaMalloc aligns each of a GPU run's arrays), at
// element_bytes bytes an element (--dtype: 4 for fp32, 2 for fp16 and bf16).
inline constexpr std::int64_t kCacheArrayAlignment = 256;
struct ProgramCache {
    CacheConfig config;
    std::string text;       // as written: "h100", "size=1KiB line=64 ways=2"
    Loc loc;                // the declaration's text (no line: --cache)
    int element_bytes = 4;
};
// The cache `text` describes (parse_cache); a bad one is a ToyError at `where` (narrowed to the
// word at fault when `where` has a line), the message prefixed by `prefix` ("--cache: ").
ProgramCache make_program_cache(std::string_view text, Loc where, std::string_view prefix = {});
// Where each array's bytes are in the cache's layout (parallel to Program::arrays): with
// `heads` copies of the problem, an array holds every head's elements, head after head (as a
// GPU run's arrays do), and starts on a kCacheArrayAlignment boundary. Element sizes are per
// array (a GPU run keeps row statistics in fp32 whatever its dtype); empty: the cache's.
struct Program;
struct CacheLayout {
    std::vector<std::uint64_t> base;           // first byte
    std::vector<std::uint64_t> element_bytes;
    std::vector<std::uint64_t> head_bytes;     // one head's elements
    std::uint64_t end = 0;                     // past the last array
};
CacheLayout cache_layout(const Program& program, std::int64_t heads = 1, const std::vector<int>& element_bytes = {});

struct Program {
    std::shared_ptr<const SourceFile> source;
    std::shared_ptr<const ast::Program> tree;
    std::vector<std::pair<std::string, std::int64_t>> params;  // in declaration order (lets too)
    int registers = 0;           // the register file (SRAM) in elements: tiles and scalar registers
    std::int64_t workers = 1;    // `workers P`: each with its own register file; DRAM is shared
    // `devices D`: D machines, each a worker with its own DRAM, joined by links (0: no devices
    // declared, one machine). The machine runs the devices as D interleaved workers (workers = D).
    std::int64_t devices = 0;
    Loc devices_loc;
    bool ring = false;                 // a link from each device to its two neighbours only (else every pair)
    std::int64_t link_cycles = 1;      // cycles a link takes an element
    std::int64_t link_latency = 0;     // cycles from a transfer's last element leaving to its arrival
    std::vector<Affine> device_operands;  // SEND's and RECV's @device, taken modulo D
    std::optional<ProgramCache> cache;  // `cache ...` or --cache: none, DRAM is the only memory
    Loc workers_loc;             // where `workers` is declared (none: the default, 1)
    // `warps W`: on a GPU, the warps a worker's products split their rows over, each reading
    // all of the right operand (the timing pass counts those reads); the machine ignores it.
    std::int64_t warps = kDefaultWarps;
    bool warps_declared = false;  // the program says `warps` (generated CUDA takes it; else 8)
    // `products UNIT`: on a GPU, what tile products run on: "cuda" (the CUDA cores, the
    // default), "mma" (mma.sync or WMMA, fp16/bf16), "mma_tf32" or "wgmma".
    std::string products = "cuda";
    // `products cuda block`: a lane takes 4×4 patches of the block's whole result, patch t the
    // block's thread t (gpu/kernels/attention_backward.cu's block_product), where by default
    // (`warp`) it takes patches of its warp's rows (attention_forward.cu's patch_mac).
    bool block_patches = false;
    bool has_parallel = false;   // some loop is `parallel for`
    std::int64_t race_cells = 0; // the race table's size: the elements of the arrays with a race_base
    int scalar_registers = 0;    // R0.. : what the tiles leave
    std::vector<Tile> tiles;
    std::int64_t tile_elements = 0;
    std::vector<TileInst> tile_insts;
    std::vector<double> immediates;  // SET on scalar registers
    std::vector<ArrayInfo> arrays;
    std::int64_t dram_size = 0;
    std::vector<Inst> code;
    std::vector<const ast::Instruction*> origin;    // per code index; null for loop control
    std::vector<std::vector<int>> enclosing_loops;  // per code index, outermost first
    std::vector<MemRef> mems;
    std::vector<LoopInfo> loops;
    std::vector<DynamicRegister> dynamic_registers;
    std::array<int, kOpCount> cycles{};
    std::vector<CheckSpec> checks;
    std::vector<ExpectSpec> expects;

    int find_array(std::string_view name) const;
    // "reads(K)", "LOAD", "cycles": the counter's name in expect lines, CSV and JSON keys.
    std::string counter_name(const CounterRef& counter) const;
    std::string counter_label(const CounterRef& counter) const;
    std::string counter_json(const CounterRef& counter) const;  // pointer under "counters"
    int find_tile(std::string_view name) const;
    bool has_tiles() const { return !tiles.empty() || !tile_insts.empty(); }
    bool uses(Op op) const;  // some instruction of the program is this opcode
    // "3 registers: R0..R2", or with tiles "the tiles take 96 of 100 registers; R0..R3 remain".
    std::string register_file_text() const;
    // The op an instruction executes (ISA instructions only, not loop control).
    Op op_at(std::int32_t pc) const;
    // The MemRef of the instruction at pc, a LOAD, STORE or STORE_ADD of a scalar or a slice;
    // -1 for any other instruction or loop control.
    std::int32_t memref_at(std::int32_t pc) const;
    // "a01" / "x3" (the seed's symbol style), or "a[1][10]" when an index has two digits.
    std::string element_symbol(int array, std::int64_t offset) const;
    // "a[0][1]": how instructions and errors name an element.
    std::string element_ref(int array, std::int64_t offset) const;
    // The same for a flat DRAM address inside some array.
    std::string element_ref_at(std::int64_t address) const;
    std::vector<std::int64_t> element_index(int array, std::int64_t offset) const;
    int array_of_address(std::int64_t address) const;
    // The device whose DRAM holds the element at `offset` of the array, or -1 when every device
    // holds it (an input that is not split). Only with devices.
    std::int64_t owner_of(int array, std::int64_t offset) const;
};

// What does not model several devices yet (a cache, the GPU, the time model) refuses a program
// with `devices`, at that line: "`WHAT` does not model several devices yet ...". No-op without.
void refuse_devices(const Program& program, std::string_view what);

using ParamSettings = std::vector<std::pair<std::string, std::int64_t>>;

ast::Program parse_file(const std::string& path);  // reads and parses; throws ToyError
// Binds parameters (defaults overridden by `settings`) and lowers the program.
Program compile(std::shared_ptr<const ast::Program> tree, const ParamSettings& settings = {});
// Parses "n=1024" (as given to --set); throws ToyError.
std::pair<std::string, std::int64_t> parse_setting(std::string_view text);
// Every "NAME=V" (--set) parsed, in order; throws ToyError.
ParamSettings settings_from(const std::vector<std::string>& sets);
// NAME=V1,V2,... lists (sweep's --set, diff's --sweep): every combination of the values, the
// first list varying slowest.
std::vector<ParamSettings> sweep_settings(const std::vector<std::string>& sets);
// The parameter sets the program's own test runs: the defaults, then each `test` line.
std::vector<ParamSettings> test_settings(const ast::Program& tree);

}  // namespace toysim
