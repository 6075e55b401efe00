// The code generator's inside (gpu/codegen/codegen.cpp lays out the module; this writes a kernel).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "gpu/codegen/codegen.h"
#include "sim/lower/program.h"

namespace toysim::gpu {

inline constexpr int kBlockThreads = 256;    // a block per iteration, unless the program says `warps`: its threads share the tile loops
// The most floats a thread's tiles in registers hold in a kernel of two blocks an SM (KernelLaunchFacts::min_blocks).
inline constexpr std::int64_t kTwoBlockFragmentFloats = 168;
// The most floats of tiles in registers a thread may hold at once (live_fragment_floats) before
// tiles that can leave them for shared memory do: 255 registers less about 32 for the rest
// (addresses, loop counters, a product's operands in flight). Measured with ptxas (sm_90, nvcc
// 13.0): fa2_v3_mma.toy at d = 64, Bc = 64 holds 204 floats at once in 232 registers, spilling
// nothing; at d = 128 it holds 332 (Q's 128 beside O's) and spilled 36 to 1,024 bytes a thread.
inline constexpr std::int64_t kLiveFragmentFloats = 224;
inline constexpr int kThreadsPerBlock = 128;  // a thread per iteration: iterations per block

// The semantics column of the ISA table (isa/opcodes.h) with the domain's methods as the
// prelude's struct D has them: D.add(c, D.mul(a, b)) -> D::add(c, D::mul(a, b)).
std::string device_semantics(Op op);
// A float constant as CUDA source: "(float)0.5", "-INFINITY", "NAN".
std::string float_literal(double v);

// A CUDA-core product's register blocking: the smallest TM×TN (up to 8×8) that gives each of
// `threads` threads at most one block of a rows×cols result; {0, 0} where none does.
std::pair<int, int> product_blocking(std::int64_t rows, std::int64_t cols, int threads);

// A product on the CUDA cores whose result the block's threads cannot hold (product_blocking):
// generate_cuda tries more warps where the program chose its own.
struct ProductTooWide : ToyError {
    using ToyError::ToyError;
};

// Where the code at pc is written: an instruction's line, or its loop's.
Loc code_loc(const Program& p, std::int32_t pc);
// An instruction as the generator's notes name it: "MAC at line 63".
std::string instruction_at(const Program& p, std::int32_t pc);
// The values loop `l`'s variable takes, its bounds' variables ranging over `ranges` (by slot):
// everything where a bound overflows.
integer::Interval loop_values_of(const LoopInfo& l, const integer::Interval* ranges);

// The arrays a generated module keeps in fp32 whatever the run's dtype: those the program both
// reads and writes (a running state such as FA1's m and ℓ, or a STORE_ADD target), which a
// 16-bit round trip per update would wear down, as the hand-written kernels keep theirs.
std::vector<bool> fp32_arrays(const Program& p);

// The tiles and scalar registers a piece of code reads and writes.
struct Footprint {
    std::vector<bool> tiles_read, tiles_written;
    bool registers_read = false, registers_written = false;
    void add(const Footprint& other);
};
Footprint footprint(const Program& p, std::int32_t first, std::int32_t last);

// Worker 0's register file in global memory, per head: each tile's capacity (dense), its
// shape (two floats), then the scalar registers.
class RegisterFileLayout {
public:
    explicit RegisterFileLayout(const Program& p);
    std::int64_t tile_offset(int tile) const { return tile_offset_[static_cast<size_t>(tile)]; }
    std::int64_t shape_offset(int tile) const { return shape_offset_[static_cast<size_t>(tile)]; }
    std::int64_t register_offset() const { return register_offset_; }
    std::int64_t registers() const { return registers_; }
    std::int64_t regfile_floats() const { return total_; }

private:
    std::vector<std::int64_t> tile_offset_, shape_offset_;
    std::int64_t register_offset_ = 0, registers_ = 1, total_ = 0;
};

// How a tile instruction touches a tile (slot: the tile's index) or the scalar registers
// (slot: the number of tiles). `rows`: row i only by warp i mod 8, as the prelude's row-owned
// loops do; otherwise by any thread of the block.
struct Access {
    size_t slot;
    bool write, rows;
};

// One dimension of a slice over the loop variables' ranges (codegen_tile.cpp): its start's
// range, whether the start is inside the array wherever the code runs, its width (end −
// start) and whether its end never passes the array's (no clipping).
struct SliceDimension {
    std::optional<integer::Interval> start;
    bool start_inside = false;
    Affine width;
    bool never_clipped = false;
};
SliceDimension slice_dimension(const MemRef& m, const ArrayInfo& a, size_t d, const integer::Interval* ranges);

// A wgmma instruction a kernel issues (m64nNk16): the module defines one specialization each
// (codegen_hopper.cpp).
struct WgmmaShape {
    int n = 0;
    bool trans_b = false;   // b N-major: a tile read as it is (its rows are k)
    bool a_shared = false;  // a from shared memory (a descriptor), else from registers
    auto operator<=>(const WgmmaShape&) const = default;
};
std::string hopper_prelude();
std::string stages_prelude();  // cp.async and tile_load_async (codegen_stages.cpp): after the tile loops
std::string online_merge_prelude();  // online_merge, block_allreduce_online (codegen_reduce.cpp): after D
std::string wgmma_instruction(const WgmmaShape& shape, DType dtype);

struct EmittedKernel : KernelLaunchFacts {
    std::string source;
    std::vector<WgmmaShape> wgmma;  // the wgmma instructions its products issue on Hopper
};

class KernelEmitter {
public:
    struct Shape {
        std::string function;
        std::int32_t first = 0, last = 0;  // the body's pcs
        std::vector<LoopInfo> grid;        // outermost first; empty: serial code
        std::vector<int> host_loops;       // loops the host runs around the launch (indices)
        bool serial = false;               // worker 0's code: it keeps its register file
    };
    KernelEmitter(const Program& p, const RegisterFileLayout& layout, const std::vector<bool>& fp32_arrays, bool tensor_cores,
                  int block_threads = kBlockThreads)
        : p_(p), layout_(layout), fp32_arrays_(fp32_arrays), tensor_cores_(tensor_cores), block_threads_(block_threads) {}
    // serial_writes: what worker 0 may have left in the register file before this launch;
    // read_later: what code after it (or anywhere, in a host loop) reads, which serial code keeps.
    EmittedKernel emit(const Shape& shape, const Footprint& serial_writes, const Footprint& read_later);

private:
    const Program& p_;
    const RegisterFileLayout& layout_;
    const std::vector<bool>& fp32_arrays_;  // kept in fp32 whatever the run's dtype
    bool tensor_cores_;                      // products of whole fragments on the tensor cores
    int block_threads_;                      // a block kernel's threads (GeneratedProgram::block_threads)
    // The rows of one 16-row block for each warp: a tile in registers has a multiple of them.
    std::int64_t fragment_rows() const { return 16 * block_threads_ / 32; }
    bool per_thread_ = false;
    int threads_ = 256;
    int indent_ = 1;
    std::string body_;
    std::vector<std::string> slot_name_;      // loop variable names by slot
    std::vector<integer::Interval> slot_range_;
    std::vector<bool> counted_reads_, counted_writes_;
    std::vector<std::string> array_name_, tile_name_;

    // Tiles in registers, in the tensor cores' fragment layout (gpu/codegen/codegen_fragment.cpp):
    // per tile, whether it lives there, and its one shape where the generator proves it.
    std::vector<bool> fragment_;
    // Tiles that are only a register product's b and only filled by LOADs of arrays stored as
    // T: kept in shared memory as T (no rounding: the array's own values), read by ldmatrix.
    std::vector<bool> stored_;
    std::vector<KernelLaunchFacts::ThreadBlocking> thread_blockings_;  // KernelLaunchFacts::thread_blockings
    // Tiles whose LOADs are asynchronous copies (codegen_stages.cpp): per tile, its stages (0:
    // none); per loop (its index in p_.loops), the pcs of the staged LOADs at the head of its body.
    std::vector<int> stages_, stage_loop_;
    std::map<int, std::vector<std::int32_t>> staged_heads_;
    std::vector<SlowPath> stage_notes_;  // each `stages` the kernel cannot honour, and why
    bool is_staged(int tile) const { return !stages_.empty() && stages_[static_cast<size_t>(tile)] > 1; }
    void plan_stages(std::int32_t first, std::int32_t last);
    int loaded_tile(std::int32_t pc) const;  // a tile LOAD's destination
    bool is_staged_load(std::int32_t pc) const;  // a LOAD at a staged loop's head (a staged tile's others wait)
    void drop_stages(const std::string& why);
    std::string stage_buffer(int tile) const;  // its buffer for the iteration in scope
    void open_staged_loop(const LoopInfo& loop, const std::vector<std::int32_t>& loads);
    bool is_stored(int tile) const { return !stored_.empty() && stored_[static_cast<size_t>(tile)]; }
    // Tiles kept as T in Hopper's 128-byte swizzle, which wgmma reads (codegen_hopper.cpp), and
    // the wgmma instructions the kernel's products issue.
    std::vector<bool> swizzled_;
    std::set<WgmmaShape> wgmma_;
    bool is_swizzled(int tile) const { return !swizzled_.empty() && swizzled_[static_cast<size_t>(tile)]; }
    void plan_swizzle();
    // The instruction a product of tiles in registers (fragment_instruction) is, as CUDA, with
    // the wgmma it issues recorded: wgmma where its b is in the swizzle, else mma.sync.
    std::string fragment_product(const struct TileInst& t, std::int64_t mt, std::int64_t nb, std::int64_t inner);
    // A tile's layout as the prelude's functions take it: its row stride, or Swizzle128<rows>{}.
    std::string layout(int tile) const;
    std::string layout_note(int tile) const;  // as the tile's declaration says it: "row stride 72", "the 128-byte swizzle ..."
    // Tiles of the fragment layout's shapes kept as T in shared memory instead, read as products'
    // a by ldmatrix (keep_fragments_in_registers), and why each is.
    std::vector<bool> shared_a_;
    std::vector<SlowPath> fragment_notes_;
    std::int64_t live_floats_ = 0;  // what live_fragment_floats gives after those moves (KernelLaunchFacts::live_register_floats)
    bool is_shared_a(const struct TileOperand& a) const;
    void keep_fragments_in_registers(std::int32_t first, std::int32_t last);
    std::int64_t live_fragment_floats(std::int32_t first, std::int32_t last) const;
    std::int64_t fragment_floats_of(size_t tile) const;
    std::vector<std::pair<std::int64_t, std::int64_t>> static_shape_;
    Footprint serial_writes_;
    void plan_fragments(std::int32_t first, std::int32_t last);
    std::optional<std::pair<std::int64_t, std::int64_t>> static_slice(const struct TileInst& t, const std::vector<integer::Interval>& ranges) const;
    bool is_fragment(const struct TileOperand& a) const;
    bool touches_fragment(const struct TileInst& t) const;
    bool fragment_instruction(const struct TileInst& t) const;
    std::string fragment_declaration(size_t tile) const;
    std::int64_t fragment_floats() const;  // a thread's floats of every tile in registers
    void fragment_tile(std::int32_t pc, const struct TileInst& t);
    const struct TileInst* exp_after_sub(std::int32_t pc, const struct TileInst& sub) const;
    std::int32_t fused_exp_pc_ = -1;  // an EXP emitted with the SUB before it (exp_after_sub)
    std::vector<SlowPath> slow_products(std::int32_t first, std::int32_t last) const;

    // Serial scalar code (a kernel of one thread per head) whose loops reduce into registers
    // (codegen_reduce.cpp): such a kernel runs on a block, every thread running the serial code
    // alike (thread 0 alone stores and counts), and each reduction loop's iterations are split
    // over the threads, their partial results combined.
    struct SplitLoop {
        std::vector<std::pair<std::int32_t, Op>> accumulators;  // a register and the op that folds into it
        std::vector<std::int32_t> privates;  // registers the body writes before reading: the last iteration's values live on
        // An online softmax's state, folded together: a running max and a sum of terms scaled by
        // e^(−max), each rescaled as the max grows (-1: none). Merged as Flash-Decoding merges its
        // splits; the body's other registers that follow the state are not read after the loop.
        std::int32_t online_max = -1, online_sum = -1;
    };
    std::map<std::int32_t, SplitLoop> split_loops_;  // by LoopBegin pc
    bool redundant_ = false;  // every thread runs the serial code (a kernel with split loops)
    bool in_split_ = false;   // emitting a split loop's body: each thread its own iterations
    std::vector<SlowPath> split_notes_;  // the serial loops that stay on one thread, and why
    std::variant<SplitLoop, std::string> split_plan(std::int32_t loop_begin) const;
    std::variant<SplitLoop, std::string> online_plan(std::int32_t loop_begin, const std::vector<int>& writers, const std::string& carried) const;
    void plan_split_loops(std::int32_t first, std::int32_t last);
    void split_loop(std::int32_t loop_begin);

    // A scalar grid whose iterations keep more registers than a thread holds (matmul_outer's
    // t×t partial sums), with loops over those registers whose iterations are independent
    // (codegen_lanes.cpp): each iteration of the grid runs on lanes_x_ × lanes_y_ threads,
    // which run its other code alike (the lanes at 0 alone store and count) and share those
    // loops' iterations, each lane keeping the registers of its own.
    int lanes_ = 1, lanes_x_ = 1, lanes_y_ = 1;
    std::map<std::int32_t, int> lane_loops_;  // by LoopBegin pc: 0, over lane_x (innermost); 1, over lane_y (around x loops)
    std::set<int> unrolled_loops_;            // loops (indices) whose variable picks a lane's register: unrolled
    struct OpenLaneLoop {
        std::int32_t end = -1;  // its LoopEnd
        int slot = -1;          // its variable's slot; -1: none open
        std::string lane_free;  // its variable as lane 0 has it: "(0 + round5 * 32)"
    };
    OpenLaneLoop open_lanes_[2];              // the x and y lane loops being emitted
    std::vector<SlowPath> lane_notes_;        // why a grid with too many registers keeps a thread an iteration
    // iterations: a head's iterations of the grid (0: not known when generating).
    std::string plan_lanes(std::int32_t first, std::int32_t last, std::int64_t iterations);  // "" where lanes_ > 1 now, else why not
    std::string try_lanes(std::int32_t first, std::int32_t last, bool two_dimensions, std::int64_t iterations);
    std::string lane_memory_order(std::int32_t first, std::int32_t last, const std::set<std::int32_t>& x_loops, const std::set<std::int32_t>& y_loops) const;
    void open_lane_loop(std::int32_t loop_begin);
    // The loop variables' values inside `loops` (LoopBegin pcs, outermost first), around the grid's.
    std::vector<integer::Interval> ranges_inside(const std::vector<std::int32_t>& loops) const;
    // Where code runs on several threads alike (serial code with split loops, a grid's lanes
    // outside a dimension's loops): the condition of the one thread that stores and counts; "" elsewhere.
    std::string redundant_guard() const;

    // Barriers: how tile instructions touched each slot since the last __syncthreads()
    // (block_) and, row by row, since the last __syncwarp() (warp_); an instruction that would
    // race with them waits first: for the block where another warp may be involved, for the
    // warp where only its own rows are.
    enum class Sync { None, Warp, Block };
    std::vector<unsigned char> block_, warp_;
    Sync needed(const std::vector<Access>& next) const;
    void sync(Sync s);
    void note(const std::vector<Access>& done);
    void barrier() { sync(Sync::Block); }
    std::vector<Access> accesses(std::int32_t pc) const;
    std::vector<Access> accesses(std::int32_t first, std::int32_t last) const;
    bool tensor_core_product(const struct TileInst& t) const;

    void line(const std::string& text);
    void comment_source(Loc loc);
    std::string affine(const Affine& a) const;
    std::string reg(std::int32_t pc, std::int32_t index, const char* local);
    std::string stride(int tile) const;
    // The floats of shared memory a tile takes (one buffer): its rows at stride(), halved where it
    // is kept as 16-bit values, from a 32-byte boundary.
    std::int64_t shared_floats_of(int tile) const;
    void enter_loop(const LoopInfo& l, bool emit_for, bool unroll = false);
    void instruction(std::int32_t pc);
    void scalar(std::int32_t pc);
    void tile(std::int32_t pc);
    // A LOAD as written (Load); its copy alone into a stage's buffer, ahead of its iteration
    // (Prefetch); or, where it stands, what it says of the tile without the copy (Consume).
    enum class SliceMode { Load, Prefetch, Consume };
    void slice(std::int32_t pc, const struct TileInst& t, SliceMode mode = SliceMode::Load);
    void count(int array, bool write, const std::string& elements);
};

}  // namespace toysim::gpu
