// Hopper's tensor-core instruction in generated CUDA: wgmma, which a warpgroup (4 warps) issues
// for 64 rows at once, reading its b (and a, where a lives in shared memory) straight from
// shared memory through descriptors, with no ldmatrix and no operand registers.
//
// Where the generator uses it (KernelEmitter::plan_swizzle, codegen_fragment.cpp): a tile kept
// as the arrays' 16-bit values (a product's b, or an a that left the registers) whose shape is
// whole 128-byte swizzle atoms (columns a multiple of 64, rows of 8) is stored in the 128-byte
// swizzle, the layout wgmma's descriptors read; a product of a tile in registers (or such an a)
// by such a b, in a block of whole warpgroups, is a wgmma. Nothing else changes: the fragment
// layout of a block of 4·W warps already gives warp w rows 16·(w mod 4) of each 64-row block
// of its warpgroup, the rows wgmma's accumulator gives it, element for element (codegen
// _fragment.cpp's layout is m16n8k16's accumulator, which is m64nNk16's per warp).
//
// The choice is the device's: the prelude's frag_product_wgmma is wgmma where the module is
// compiled for sm_90a (compile_generated asks for it on compute capability 9.0) and ldmatrix +
// mma.sync elsewhere, which read the swizzle as well (tile_at). The products are synchronous,
// as every instruction of a generated kernel is: issued, committed, waited for.
#include <fmt/format.h>

#include "gpu/codegen/codegen_emit.h"

namespace toysim::gpu {

namespace {

constexpr const char* kHopperPrelude = R"cuda(
// ---- Hopper: wgmma (gpu/codegen/codegen_hopper.cpp) ----
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TOYSIM_WGMMA 1
#endif
// The wgmma instructions of a module, one specialization each (m64nNk16, the arrays' type),
// written by the generator after this prelude: a from registers (WgmmaRS) or from shared memory
// (WgmmaSS); kTransB: b is N-major (its rows are k: a tile read as it is, not transposed).
template <int N, bool kTransB> struct WgmmaRS;
template <int N, bool kTransB> struct WgmmaSS;
// What threads wrote to shared memory (st.shared, cp.async) becomes visible to wgmma's reads
// (the async proxy) by this fence, before the barrier that orders them.
__device__ __forceinline__ void async_proxy_fence() {
#ifdef TOYSIM_WGMMA
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
#ifdef TOYSIM_WGMMA
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
// An empty statement that uses and redefines registers: the compiler computes them before the
// products are issued and reads the accumulators only after the wait that completes them.
__device__ __forceinline__ void hold(float& x) { asm volatile("" : "+f"(x)::"memory"); }
__device__ __forceinline__ void hold(unsigned& x) { asm volatile("" : "+r"(x)::"memory"); }
template <typename X, int N>
__device__ __forceinline__ void hold(X (&x)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) hold(x[i]);
}
// A descriptor of 128-byte-swizzled shared memory at `at`: the leading byte offset (from one
// 64-column part to the next, for an N-major operand), the stride byte offset 1,024 (from one
// 8-row group to the next) and the swizzle mode (1: 128 bytes) in bits 62-63.
__device__ __forceinline__ unsigned long long wgmma_descriptor(const void* at, unsigned leading_bytes) {
    const unsigned address = (unsigned)__cvta_generic_to_shared(at);
    return (unsigned long long)((address & 0x3FFFF) >> 4) | ((unsigned long long)(leading_bytes >> 4) << 16) | (1024ull >> 4 << 32) | (1ull << 62);
}
// b's k block kb (16 values of k) in Swizzle128<kRows>: b transposed (its rows are n, k along
// them: K-major), 16 columns of a 64-column part; else (its rows are k: N-major) 16 rows, the
// parts kRows·128 bytes apart.
template <bool kBT, int kRows, typename E>
__device__ __forceinline__ unsigned long long b_descriptor(const E* b, int kb) {
    return kBT ? wgmma_descriptor(b + (kb / 4) * kRows * 64 + (kb % 4) * 16, 16) : wgmma_descriptor(b + kb * 16 * 64, kRows * 128);
}
#endif
// acc += a·b: a in registers (the fragment layout), b in the swizzle. Each warpgroup issues, for
// each of its 64-row blocks mi, the 16·KA/2-long sum as KA/2 wgmmas of k = 16.
template <typename E, bool kBT, int MT, int NB, int KA, int kRowsB>
__device__ __forceinline__ void frag_product_wgmma(float (&acc)[MT][NB][4], const float (&a)[MT][KA][4], const E* b, Swizzle128<kRowsB> bl) {
#ifdef TOYSIM_WGMMA
    static_assert(kWarps % 4 == 0, "whole warpgroups");
    unsigned af[KA / 2][MT][4];
#pragma unroll
    for (int kb = 0; kb < KA / 2; ++kb) frag_a<E>(af[kb], a, kb);
    hold(af);
    hold(acc);
    wgmma_fence();
#pragma unroll
    for (int mi = 0; mi < MT; ++mi)
#pragma unroll
        for (int kb = 0; kb < KA / 2; ++kb) WgmmaRS<8 * NB, !kBT>::mma(acc[mi], af[kb][mi], b_descriptor<kBT, kRowsB>(b, kb));
    wgmma_commit();
    wgmma_wait_all();
    hold(acc);
#else
    frag_product_stored<E, kBT>(acc, a, b, bl);
#endif
}
// acc += a·b, a in the swizzle too (a tile that left the registers): the warpgroup's 64 rows of
// block mi start at row 16·(mi·kWarps + 4·warpgroup), as the fragment layout has them.
template <typename E, bool kBT, int MT, int NB, int KB, int kRowsA, int kRowsB>
__device__ __forceinline__ void frag_product_wgmma_ab(float (&acc)[MT][NB][4], const E* a, Swizzle128<kRowsA> al, const E* b, Swizzle128<kRowsB> bl) {
#ifdef TOYSIM_WGMMA
    static_assert(kWarps % 4 == 0, "whole warpgroups");
    const int warpgroup = threadIdx.x / 128;
    hold(acc);
    wgmma_fence();
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
        const E* rows = a + (mi * kWarps + 4 * warpgroup) * 16 * 64;
#pragma unroll
        for (int kb = 0; kb < KB; ++kb)
            WgmmaSS<8 * NB, !kBT>::mma(acc[mi], wgmma_descriptor(rows + (kb / 4) * kRowsA * 64 + (kb % 4) * 16, 16), b_descriptor<kBT, kRowsB>(b, kb));
    }
    wgmma_commit();
    wgmma_wait_all();
    hold(acc);
#else
    frag_product_stored_ab<E, kBT, MT, NB, KB>(acc, a, al, b, bl);
#endif
}
)cuda";

}  // namespace

std::string hopper_prelude() { return kHopperPrelude; }

// A tile kept as T goes in the swizzle where its shape, as every instruction has it, is whole
// atoms of the 128-byte swizzle (8 rows of 64 values) and the block is whole warpgroups.
// Where a tile kept as T is not, its products stay on mma.sync even on Hopper: said at its line.
void KernelEmitter::plan_swizzle() {
    swizzled_.assign(p_.tiles.size(), false);
    for (size_t i = 0; i < p_.tiles.size(); ++i) {
        if (!is_stored(static_cast<int>(i))) continue;
        const Tile& tile = p_.tiles[i];
        const auto [rows, cols] = static_shape_[i];
        std::string why;
        if (block_threads_ % 128 != 0)
            why = fmt::format("the block's {} warps are not whole warpgroups of 4", block_threads_ / 32);
        else if (rows != tile.rows || cols != tile.cols)
            why = fmt::format("its slices ({} × {}) do not fill it ({} × {})", rows, cols, tile.rows, tile.cols);
        else if (cols % 64 != 0 || rows % 8 != 0)
            why = fmt::format("its {} × {} is not whole rows of the 128-byte swizzle (columns a multiple of 64, rows of 8)", rows, cols);
        swizzled_[i] = why.empty();
        if (!why.empty())
            fragment_notes_.push_back({tile.loc, "", fmt::format("tile {}: on Hopper its products run on mma.sync from padded rows, not on wgmma: {}", tile.name, why)});
    }
}

std::string KernelEmitter::layout(int tile) const {
    return is_swizzled(tile) ? fmt::format("Swizzle128<{}>{{}}", p_.tiles[static_cast<size_t>(tile)].rows) : stride(tile);
}

std::string KernelEmitter::layout_note(int tile) const {
    return is_swizzled(tile) ? "the 128-byte swizzle, which wgmma reads" : "row stride " + stride(tile);
}

std::string KernelEmitter::fragment_product(const TileInst& t, std::int64_t mt, std::int64_t nb, std::int64_t inner) {
    const TileOperand &a = t.args[0], &b = t.args[1];
    const std::string& a_name = tile_name_[static_cast<size_t>(a.index)];
    const std::string& b_name = tile_name_[static_cast<size_t>(b.index)];
    const char* bt = b.transposed ? "true" : "false";
    const std::int64_t rows = static_shape_[static_cast<size_t>(a.index)].first, cols = nb * 8;
    const std::string shapes = fmt::format("{}×{} by {}×{}", rows, inner, inner, cols);
    // wgmma takes N up to 256; b is read as it is (N-major) or transposed (K-major).
    const bool wgmma = is_swizzled(b.index) && cols <= 256 && (is_fragment(a) || is_swizzled(a.index));
    if (wgmma) wgmma_.insert(WgmmaShape{static_cast<int>(cols), !b.transposed, is_shared_a(a)});
    if (is_shared_a(a))
        return fmt::format("{}<T, {}, {}, {}, {}>(acc, {}, {}, {}, {});  // on the tensor cores: {}, both from shared memory{}",
                           wgmma ? "frag_product_wgmma_ab" : "frag_product_stored_ab", bt, mt, nb, inner / 16, a_name, layout(a.index), b_name,
                           layout(b.index), shapes, wgmma ? " (wgmma on Hopper)" : "");
    const char* function = wgmma ? "frag_product_wgmma" : is_stored(b.index) ? "frag_product_stored" : "frag_product";
    return fmt::format("{}<T, {}>(acc, {}, {}, {});  // on the tensor cores: {}{}", function, bt, a_name, b_name, layout(b.index),
                       shapes, wgmma ? " (wgmma on Hopper)" : "");
}

std::string wgmma_instruction(const WgmmaShape& shape, DType dtype) {
    const int n = shape.n, floats = n / 2;
    const char* type = dtype == DType::BF16 ? "bf16" : "f16";
    std::string acc, outputs;
    for (int i = 0; i < floats; ++i) {
        acc += fmt::format("{}%{}", i ? ", " : "", i);
        outputs += fmt::format("{}\"+f\"(d[{}][{}])", i ? ", " : "", i / 4, i % 4);
    }
    const int at = floats;
    std::string a_operand, inputs, trans;
    if (shape.a_shared) {
        a_operand = fmt::format("%{}", at);
        inputs = "\"l\"(a), \"l\"(b), \"r\"(1)";
        trans = fmt::format("%{}, p, 1, 1, 0, {}", at + 1, shape.trans_b ? 1 : 0);
    } else {
        a_operand = fmt::format("{{%{}, %{}, %{}, %{}}}", at, at + 1, at + 2, at + 3);
        inputs = "\"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b), \"r\"(1)";
        trans = fmt::format("%{}, p, 1, 1, {}", at + 4, shape.trans_b ? 1 : 0);
    }
    const int predicate = at + (shape.a_shared ? 2 : 5);
    return fmt::format(
        "template <> struct Wgmma{0}<{1}, {2}> {{  // m64n{1}k16, a from {3}, b {4}\n"
        "    static __device__ __forceinline__ void mma(float (&d)[{5}][4], {6}, unsigned long long b) {{\n"
        "#ifdef TOYSIM_WGMMA\n"
        "        asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{7}, 0;\\n\"\n"
        "                     \"wgmma.mma_async.sync.aligned.m64n{1}k16.f32.{8}.{8} {{{9}}}, {10}, {11};\\n}}\\n\"\n"
        "                     : {12}\n"
        "                     : {13});\n"
        "#endif\n"
        "    }}\n"
        "}};\n",
        shape.a_shared ? "SS" : "RS", n, shape.trans_b ? "true" : "false", shape.a_shared ? "shared memory" : "registers",
        shape.trans_b ? "N-major" : "K-major", n / 8, shape.a_shared ? "unsigned long long a" : "const unsigned (&a)[4]", predicate, type, acc,
        a_operand, trans, outputs, inputs);
}

}  // namespace toysim::gpu
