// Asynchronous copies in generated CUDA: a tile the program declares with `stages S` is a ring
// of S buffers in shared memory, which cp.async fills S − 1 iterations of its loop ahead of the
// one that reads it (the program's schedule, isa/README.md "Schedules"; fa2_v3_mma's K and V).
//
// The pipeline, for a loop whose body starts with the tile's LOAD:
//   before the loop: the copies of its first S − 1 iterations, a commit group each;
//   at the top of iteration j: the copy of iteration j + S − 1 (into the buffer iteration j − 1
//   read, which the barrier at the end of every iteration has freed), its commit, then a wait
//   for iteration j's group and a barrier;
//   where the LOAD stands: the tile is iteration j's buffer; its shape and counts as before.
// The program's order of DRAM reads changes (a copy runs ahead), not what it reads: a tile kept
// as the arrays' values is loaded only from arrays the program never writes (an array it both
// reads and writes stays fp32, fp32_arrays), so an early read reads the same values.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "gpu/codegen/codegen_emit.h"

namespace toysim::gpu {

// The prelude's asynchronous copies (after the tile loops: tile_load_stored is its fallback).
std::string stages_prelude() {
    return R"cuda(
// ---- asynchronous copies of staged tiles (gpu/codegen/codegen_stages.cpp) ----
// How far apart rows i and i + k are in a layout, where every row that far apart has one offset
// from the next (rows_keep_phase): the swizzle's rows 8 apart are 64 elements a row apart.
__device__ __forceinline__ bool rows_keep_phase(int, int) { return true; }
template <int kRows> __device__ __forceinline__ bool rows_keep_phase(Swizzle128<kRows>, int k) { return k % 8 == 0; }
__device__ __forceinline__ int rows_apart(int s, int k) { return k * s; }
template <int kRows> __device__ __forceinline__ int rows_apart(Swizzle128<kRows>, int k) { return k * 64; }
// A tile with `stages S` (asynchronous copies): tile_load_stored's pieces as cp.async copies of
// 16 bytes that write shared memory while the block computes. A thread's copies since the last
// commit are one group; cp_async_wait<N> returns when all but the N newest groups have landed
// (the thread's own: a barrier after it makes every thread's visible). Rows as load_pieces
// owns them (row i by warp i mod kWarps); where the pieces are not whole 16 bytes, the copy is
// synchronous (the barrier before the tile's use covers it as well).
// 16 bytes to shared memory's address dst (32 bits): asynchronous from sm_80, a plain copy before.
__device__ __forceinline__ void cp_async16_shared(unsigned dst, const void* src) {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(src));
#else
    const uint4 v = *reinterpret_cast<const uint4*>(src);
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};" :: "r"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
#endif
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src) { cp_async16_shared((unsigned)__cvta_generic_to_shared(dst), src); }
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;");
#endif
}
template <int kNewest>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" :: "n"(kNewest));
#endif
}
template <typename T, typename L>
__device__ __forceinline__ void tile_load_async(T* dst, L ds, const T* src, long long rs, long long cs, int rows, int cols) {
    constexpr int kVec = 16 / sizeof(T);
    if (cs == 1 && cols % kVec == 0 && rs % kVec == 0 && whole_pieces(ds, kVec) && reinterpret_cast<unsigned long long>(src) % 16 == 0) {
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = kWarps;
        const int pieces = cols / kVec;
        const int step = pieces > 0 && pieces <= 32 ? 32 / pieces * warps : 0;
        if (step > 0 && 32 % pieces == 0 && rows_keep_phase(ds, step)) {
            // The same copies as below, written so that the compiler sees their addresses step by
            // constants: a lane keeps one column (each pass of the warp covers 32 / pieces of its
            // rows, lane l the piece l % pieces of each), so its first copy's addresses are worked
            // out once, shared memory's as a 32-bit address, and each later pass adds a constant
            // (in the swizzle too: the passes step by a multiple of 8 rows, one phase). Worked out
            // for each copy, the division, the swizzle and the address conversion had been 22 of
            // generated fa2's 146 million instructions at n = 4096, d = 128 (Nsight Compute, H200).
            const int first = warp + lane / pieces * warps, j = lane % pieces * kVec;
            const unsigned to = (unsigned)__cvta_generic_to_shared(dst + tile_at(ds, first, j));
            const T* from = src + first * rs + j;
#pragma unroll
            for (int pass = 0; pass < (rows + step - 1) / step; ++pass)
                if (rows % step == 0 || first + pass * step < rows)
                    cp_async16_shared(to + (unsigned)(rows_apart(ds, pass * step) * sizeof(T)), from + pass * step * rs);
            return;
        }
        const int mine = rows > warp ? (rows - warp + warps - 1) / warps : 0, total = mine * pieces;
        for (int e = lane; e < total; e += 32) {
            const int t = e / pieces, i = warp + t * warps, j = (e - t * pieces) * kVec;
            cp_async16(dst + tile_at(ds, i, j), src + i * rs + j);
        }
        return;
    }
    tile_load_stored(dst, ds, src, rs, cs, rows, cols);
}
)cuda";
}

namespace {
SlowPath stage_note(const Tile& tile, const std::string& why) {
    return {tile.loc, "", fmt::format("tile {}: `stages {}` not applied, its LOADs wait: {}", tile.name, tile.stages, why)};
}
}  // namespace

int KernelEmitter::loaded_tile(std::int32_t pc) const {
    return p_.tile_insts[static_cast<size_t>(p_.code[static_cast<size_t>(pc)].mem)].args[0].index;
}

void KernelEmitter::plan_stages(std::int32_t first, std::int32_t last) {
    const size_t tiles = p_.tiles.size();
    stages_.assign(tiles, 0);
    stage_loop_.assign(tiles, -1);
    staged_heads_.clear();
    stage_notes_.clear();
    std::vector<std::vector<std::int32_t>> loads(tiles);  // the LOADs into each tile in this kernel
    std::vector<std::int32_t> head_load(tiles, -1);   // its LOAD where that opens a loop's body
    std::vector<int> head_loop(tiles, -1);
    std::vector<bool> used(tiles, false);
    for (std::int32_t pc = first; pc < last; ++pc) {
        const Inst& in = p_.code[static_cast<size_t>(pc)];
        if (in.code == Code::LoopBegin) {
            // The LOADs into tiles that open the body, before anything else runs in it.
            for (std::int32_t q = pc + 1; q < last && p_.code[static_cast<size_t>(q)].code == Code::Tile; ++q) {
                const TileInst& t = p_.tile_insts[static_cast<size_t>(p_.code[static_cast<size_t>(q)].mem)];
                if (t.op != Op::LOAD || t.args[0].kind != TileOperand::Kind::Tile) break;
                head_load[static_cast<size_t>(t.args[0].index)] = q;
                head_loop[static_cast<size_t>(t.args[0].index)] = in.loop;
            }
            continue;
        }
        if (in.code != Code::Tile) continue;
        const TileInst& t = p_.tile_insts[static_cast<size_t>(in.mem)];
        for (int k = 0; k < t.count; ++k)
            if (t.args[static_cast<size_t>(k)].kind == TileOperand::Kind::Tile) used[static_cast<size_t>(t.args[static_cast<size_t>(k)].index)] = true;
        if (t.op == Op::LOAD && t.args[0].kind == TileOperand::Kind::Tile) loads[static_cast<size_t>(t.args[0].index)].push_back(pc);
    }
    // Whether the tile's only LOAD in the loop it opens is that one: its other LOADs (fa2_causal's
    // diagonal tile, after the loop) are synchronous, into the buffer in hand, and none may run in
    // the staged loop, whose top overwrites a buffer.
    auto alone_in_loop = [&](size_t i) {
        const auto body = p_.loops[static_cast<size_t>(head_loop[i])].body;
        return std::count_if(loads[i].begin(), loads[i].end(), [&](std::int32_t pc) { return pc >= body.first && pc < body.second; }) == 1;
    };
    for (size_t i = 0; i < tiles; ++i) {
        const Tile& tile = p_.tiles[i];
        if (!used[i]) continue;
        const bool stored = is_stored(static_cast<int>(i)), at_head = head_load[i] >= 0 && alone_in_loop(i);
        if (tile.stages < 2) {
            if (stored && at_head)
                stage_notes_.push_back({tile.loc, "", fmt::format("tile {}: its LOAD waits for DRAM at every iteration: `in shared stages 2` after its "
                                                                  "shape would copy the next iteration's tile while this one computes (cp.async)",
                                                                  tile.name)});
            continue;
        }
        std::string why;
        if (!stored)
            why = "only a tile kept as the arrays' 16-bit values (a tensor-core product's b that only LOADs fill) is copied asynchronously";
        else if (head_load[i] < 0)
            why = "its LOAD must open a loop's body (the copy for a later iteration runs while this one computes)";
        else if (!at_head)
            why = "a second LOAD into it in the loop its first LOAD opens (the copies ahead take one a loop)";
        if (!why.empty()) {
            stage_notes_.push_back(stage_note(tile, why));
            continue;
        }
        stages_[i] = static_cast<int>(tile.stages);
        stage_loop_[i] = head_loop[i];
        staged_heads_[head_loop[i]].push_back(head_load[i]);
    }
    // One loop copies one number of iterations ahead: its staged tiles take the fewest stages
    // among them (a tile with more would have the copy ahead land in the buffer in use).
    for (auto& [loop, pcs] : staged_heads_) {
        std::sort(pcs.begin(), pcs.end());
        int depth = std::numeric_limits<int>::max();
        for (std::int32_t pc : pcs) depth = std::min(depth, stages_[static_cast<size_t>(loaded_tile(pc))]);
        for (std::int32_t pc : pcs) {
            const auto i = static_cast<size_t>(loaded_tile(pc));
            if (stages_[i] == depth) continue;
            stage_notes_.push_back({p_.tiles[i].loc, "", fmt::format("tile {}: `stages {}` taken as {}, the fewest of the staged tiles its loop loads "
                                                                     "(a loop copies them all the same iterations ahead)",
                                                                     p_.tiles[i].name, stages_[i], depth)});
            stages_[i] = depth;
        }
    }
}

void KernelEmitter::drop_stages(const std::string& why) {
    for (size_t i = 0; i < stages_.size(); ++i)
        if (stages_[i] > 1) stage_notes_.push_back(stage_note(p_.tiles[i], why));
    stages_.assign(stages_.size(), 0);
    staged_heads_.clear();
}

bool KernelEmitter::is_staged_load(std::int32_t pc) const {
    const TileInst& t = p_.tile_insts[static_cast<size_t>(p_.code[static_cast<size_t>(pc)].mem)];
    if (t.op != Op::LOAD || t.args[0].kind != TileOperand::Kind::Tile || !is_staged(t.args[0].index)) return false;
    const std::vector<std::int32_t>& heads = staged_heads_.at(stage_loop_[static_cast<size_t>(t.args[0].index)]);
    return std::find(heads.begin(), heads.end(), pc) != heads.end();
}

std::string KernelEmitter::stage_buffer(int tile) const {
    const auto t = static_cast<size_t>(tile);
    const LoopInfo& loop = p_.loops[static_cast<size_t>(stage_loop_[t])];
    const std::string& var = slot_name_[static_cast<size_t>(loop.slot)];
    const std::string iteration = loop.lo.is_constant() && loop.lo.constant == 0 ? var : fmt::format("({} - ({}))", var, affine(loop.lo));
    return fmt::format("reinterpret_cast<T*>({}_stages + ({} % {}) * {})", tile_name_[t], iteration, stages_[t], shared_floats_of(tile));
}

void KernelEmitter::open_staged_loop(const LoopInfo& l, const std::vector<std::int32_t>& loads) {
    const int stages = stages_[static_cast<size_t>(loaded_tile(loads.front()))];  // the loop's, every staged tile's (plan_stages)
    const std::string& var = slot_name_[static_cast<size_t>(l.slot)];
    // The copies of iteration `var` (in scope), a commit group.
    auto copies = [&](const std::string& guard) {
        line(fmt::format("if ({}) {{", guard));
        ++indent_;
        for (std::int32_t pc : loads) {
            line("{");
            ++indent_;
            slice(pc, p_.tile_insts[static_cast<size_t>(p_.code[static_cast<size_t>(pc)].mem)], SliceMode::Prefetch);
            --indent_;
            line("}");
        }
        --indent_;
        line("}");
        line("cp_async_commit();");
    };
    line(fmt::format("// The first {} iterations' copies of the staged tiles (stages {}), ahead of the loop.", stages - 1, stages));
    for (int s = 0; s + 1 < stages; ++s) {
        line("{");
        ++indent_;
        line(fmt::format("const long long {} = {} + {};", var, affine(l.lo), s));
        copies(fmt::format("{} < {}", var, affine(l.hi)));
        --indent_;
        line("}");
    }
    comment_source(l.loc);
    line(fmt::format("for (long long {0} = {1}; {0} < {2}; ++{0}) {{", var, affine(l.lo), affine(l.hi)));
    ++indent_;
    line(fmt::format("// Iteration {} + {}'s copies start; iteration {}'s have landed.", var, stages - 1, var));
    line("{");
    ++indent_;
    const std::string ahead = var + "_ahead_";
    line(fmt::format("const long long {} = {} + {};", ahead, var, stages - 1));
    line("{");
    ++indent_;
    line(fmt::format("const long long {} = {};", var, ahead));
    copies(fmt::format("{} < {}", var, affine(l.hi)));
    --indent_;
    line("}");
    --indent_;
    line("}");
    line(fmt::format("cp_async_wait<{}>();", stages - 1));
}

}  // namespace toysim::gpu
