// Attention forward on the GPU: the CUDA twins of three .toy programs, from the one that
// writes S and P to global memory to the one that keeps everything on chip.
//
//   attention_standard   programs/attention/standard_tiled.toy   three kernels: S = Q·Kᵀ, P = softmax(S), O = P·V
//   fa1_forward          programs/attention/fa1.toy              FlashAttention-1 order: j (K/V tiles) outside
//   fa2_forward          programs/attention/fa2.toy              FlashAttention-2 order: i (Q tiles) outside
//   fa2_causal           programs/attention/fa2_causal.toy       fa2 with a causal mask: K/V tiles up to the diagonal
//   fa2_causal_heaviest_first  ..._heaviest_first.toy            the same, the longest Q tiles first
//
// Each kernel has its program's loop order and tile sizes (Br, Bc are the program's
// parameters), so the global-memory traffic it counts per array equals the simulator's
// reads and writes exactly, times batch·heads, for any n (edge tiles clipped), any d ≤ 128
// and Br, Bc ≤ 128. Built into toysim (CMakeLists.txt, TOYSIM_CUDA); run with
//
//   toysim gpu run programs/attention/fa2.toy --set n=4096 --set d=64 --set Br=64 --set Bc=64 --heads 64 --dtype fp16
//
// which checks the output against the CPU reference, compares the counted traffic with the
// simulator's, and times the kernel. gpu/tools/bench_attention.py runs all three next to PyTorch.
//
// The three share their block-level products (section 2: S_ij = Q_i·K_jᵀ and P_ij·V_j,
// each lane a 4×4 patch of the result in registers, operands from shared memory) and their
// tile loads (section 3), so what separates their times is what they move through global
// memory and how they are ordered, not a better inner loop. Tensor cores (mma) replace
// section 2 in a later issue, for all three at once.
//
// What each step gained, on an H100 (CUDA cores, fp16, 262,144 tokens: n = 4096 with 64
// heads, Br = Bc = 64; median of 3 after a warm-up):
//   standard  13.1 ms  scores 5.6 + softmax 1.6 + pv 5.9. The softmax kernel runs at
//                      2.7 TB/s: it is the price of S and P in HBM, 4n² elements.
//   fa1       14.8 ms  no S or P in HBM, but O, m, ℓ round-trip once per K/V tile, and
//                      the K/V blocks of a Q tile merge one after another (tickets).
//   fa2       12.4 ms  5% under standard, 16% under fa1: the online softmax on chip
//                      costs less than HBM round trips. d = 128: standard 24.0, fa1 52.3,
//                      fa2 23.5 ms; Br = 128, d = 64: 12.7, 18.4, 12.0 ms; n = 16384: 52.3
//                      (standard) and 49.4 (fa2) ms. The margins are thin because on CUDA
//                      cores the two products take 85% of the time, bound by shared-memory
//                      bandwidth (about 22 TFLOP/s, a third of the H100's fp32 peak).
//
// Storage T is float, __half or __nv_bfloat16 (the run's dtype); shared memory and all
// arithmetic are fp32: a tile is converted once, as it is loaded, not in the inner loop.
// (Keeping tiles as T in shared memory and converting in the products halves their shared
// memory, but on an H100 the conversions cost more than that saves: 15% slower.)
#include <cuda/atomic>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/shared_tiles.cuh"

namespace toysim::gpu {

namespace {

// ---------------------------------------------------------------------------------------
// 1. Shapes shared by every kernel

constexpr int kThreads = kBlockThreads;  // one block: 8 warps
constexpr int kWarps = kThreads / 32;
constexpr int kPatch = 4;      // a lane's patch of a product: 4×4 elements in registers

// Blocks per SM the compiler must fit in registers (65536 of them): 3 for kernels with one
// patch of O per lane (at most 85 registers), fewer as O's patches take more.
template <int kOPatches>
constexpr int kMinBlocks = kOPatches == 1 ? 3 : kOPatches == 2 ? 2 : 1;

// Where array k of a kernel's catalog row is counted (its index in the row).
enum StandardArray { kStdQ, kStdK, kStdV, kStdS, kStdP, kStdO };
enum Fa1Array { kFa1Q, kFa1K, kFa1V, kFa1O, kFa1M, kFa1L };
enum Fa2Array { kFa2Q, kFa2K, kFa2V, kFa2O, kFa2L };

struct Dims {
    int n, d, Br, Bc;
    int Tr, Tc;  // ⌈n/Br⌉ Q tiles, ⌈n/Bc⌉ K/V tiles
};

// Carves a kernel's dynamic shared memory into its tiles, each on a 16-byte boundary. The
// launcher runs the same layout function on the host for the byte count, so the two agree.
struct Carve {
    long long bytes = 0;
    template <typename U>
    __host__ __device__ long long take(long long count) {
        const long long at = bytes;
        bytes += (count * (long long)sizeof(U) + 15) / 16 * 16;
        return at;
    }
};

// ---------------------------------------------------------------------------------------
// 2. Block-level products: C (M×N) += A (M×K) · Bᵀ, with A and B row-major in shared memory,
// K contiguous (B is N×K: K_j as loaded, or V_j transposed). Used by all three kernels.
//
// The rows of C belong to warps: warp w owns rows [w·⌈M/8⌉, (w+1)·⌈M/8⌉). Everything a
// row needs after the product (its max, its sum, its row of P̃·V) is then in one warp, so
// FlashAttention's softmax between the two products needs no barrier of the whole block:
// FlashAttention-2's "split Q across warps". A warp's rows and the N columns are cut into
// 4×4 patches, one per lane (a lane takes several when there are more than 32). A patch
// is strided, not contiguous: patch (pr, pc) owns rows first + pr + gm·a and columns
// pc + gn·b (a, b < 4, gm = ⌈rows/4⌉, gn = ⌈N/4⌉), so neighbouring lanes read
// neighbouring rows of B, which row_stride puts in different banks, and the lanes of a
// warp share few rows of A (broadcasts). Per four steps of k a lane loads 8 float4s and
// does 64 multiply-adds: shared-memory bandwidth, not the multiply-adds, bounds it (a
// 16-byte load by a warp takes four cycles of the SM's shared memory, broadcast or not).

constexpr int kNoRow = 1 << 30;  // a patch row past the warp's rows: never stored

struct PatchGrid {
    int M, N;
    int warp_rows;  // ⌈M/8⌉ rows per warp
    int gm, gn;     // patches down a warp's rows, and across
    int per_lane;   // patches per lane
};

__host__ __device__ constexpr int patches_per_lane(int M, int N) {
    const int gm = ((M + kWarps - 1) / kWarps + kPatch - 1) / kPatch, gn = (N + kPatch - 1) / kPatch;
    return (gm * gn + 31) / 32;
}

__device__ __forceinline__ PatchGrid patch_grid(int M, int N) {
    const int warp_rows = (M + kWarps - 1) / kWarps;
    return {M, N, warp_rows, (warp_rows + kPatch - 1) / kPatch, (N + kPatch - 1) / kPatch, patches_per_lane(M, N)};
}

// This warp's rows of a grid: [first, end).
struct WarpRows {
    int first, end;
};
__device__ __forceinline__ WarpRows warp_rows(const PatchGrid& g) {
    const int first = threadIdx.x / 32 * g.warp_rows;
    return {first, min(g.M, first + g.warp_rows)};
}

struct Patch {
    int row0, col0, row_step, col_step, row_end;
    bool live;  // has at least one row: a lane without one skips the product
    // Row a of the patch, or kNoRow when it belongs to the next warp or lies past M.
    __device__ int row(int a) const {
        const int r = row0 + row_step * a;
        return r < row_end ? r : kNoRow;
    }
    __device__ int col(int b) const { return col0 + col_step * b; }
};

// This lane's q-th patch (q < per_lane).
__device__ __forceinline__ Patch my_patch(const PatchGrid& g, int q) {
    const WarpRows w = warp_rows(g);
    const int t = threadIdx.x % 32 + 32 * q, pr = t / g.gn, pc = t % g.gn;
    return {w.first + pr, pc, g.gm, g.gn, w.end, pr < g.gm && w.first + pr < w.end};
}

// acc += A[rows of the patch][0..K) · B[cols of the patch][0..K)ᵀ, for a live patch. K is a
// multiple of 4 and both operands are zero from their real length up to K. Rows past the
// warp's (columns past N) read the patch's first row (column N − 1) instead: their results
// are never stored, no branch enters the inner loop, and a warp reads no other warp's rows.
__device__ __forceinline__ void patch_mac(float (&acc)[kPatch][kPatch], const float* A, int lda, const float* B, int ldb, int K,
                                          const PatchGrid& g, const Patch& pt) {
    const float* a_row[kPatch];
    const float* b_row[kPatch];
#pragma unroll
    for (int a = 0; a < kPatch; ++a) a_row[a] = A + (pt.row(a) == kNoRow ? pt.row0 : pt.row(a)) * lda;
#pragma unroll
    for (int b = 0; b < kPatch; ++b) b_row[b] = B + min(pt.col(b), g.N - 1) * ldb;
#pragma unroll 1
    for (int k = 0; k < K; k += 4) {
        float4 x[kPatch], y[kPatch];
#pragma unroll
        for (int a = 0; a < kPatch; ++a) x[a] = load4(a_row[a] + k);
#pragma unroll
        for (int b = 0; b < kPatch; ++b) y[b] = load4(b_row[b] + k);
#pragma unroll
        for (int a = 0; a < kPatch; ++a)
#pragma unroll
            for (int b = 0; b < kPatch; ++b) {
                acc[a][b] = fmaf(x[a].x, y[b].x, acc[a][b]);
                acc[a][b] = fmaf(x[a].y, y[b].y, acc[a][b]);
                acc[a][b] = fmaf(x[a].z, y[b].z, acc[a][b]);
                acc[a][b] = fmaf(x[a].w, y[b].w, acc[a][b]);
            }
    }
}

__device__ __forceinline__ void zero(float (&acc)[kPatch][kPatch]) {
#pragma unroll
    for (int a = 0; a < kPatch; ++a)
#pragma unroll
        for (int b = 0; b < kPatch; ++b) acc[a][b] = 0.f;
}

// A lane's share of an M×N result that stays in registers across K/V tiles (O_i): its
// patches 0, 1, ..., at most kPatches of them (a compile-time bound, so they are
// registers; the launcher picks the smallest that covers Br×d).
template <int kPatches>
struct PatchAccumulator {
    float acc[kPatches][kPatch][kPatch];
    __device__ void clear() {
#pragma unroll
        for (int q = 0; q < kPatches; ++q) zero(acc[q]);
    }
};

// S = A·Bᵀ for this warp's rows, written to s (fp32, row length lds) for rows < M and
// columns < N: the first product of every kernel but the standard scores kernel.
__device__ __forceinline__ void scores_to_shared(float* s, int lds, const float* q, const float* k, int ld, int K, const PatchGrid& g) {
    for (int t = 0; t < g.per_lane; ++t) {
        const Patch pt = my_patch(g, t);
        if (!pt.live) continue;
        float acc[kPatch][kPatch];
        zero(acc);
        patch_mac(acc, q, ld, k, ld, K, g, pt);
#pragma unroll
        for (int a = 0; a < kPatch; ++a)
#pragma unroll
            for (int b = 0; b < kPatch; ++b)
                if (pt.row(a) < g.M && pt.col(b) < g.N) s[pt.row(a) * lds + pt.col(b)] = acc[a][b];
    }
}

// ---------------------------------------------------------------------------------------
// 3. Tile loads: global (storage T) to shared memory (fp32), the padding written as zeros so
// the products above need no bounds: load_tile in shared_tiles.cuh (shared with the backward
// kernels) and, here, V_j transposed.

// dst[c][r] = src[r][c] for c < cols (V_j stored as d×Bc, so P·V has the same form as
// Q·Kᵀ). By fours: consecutive threads take consecutive rows r, so their stores to a row
// of dst are consecutive (no bank conflicts). Otherwise a warp covers 4 rows × 8 columns
// of src: 4 runs of 8 elements read, and its stores (8 rows of dst, dst_ld an odd number
// of fours apart, 4 columns) fall in 32 different banks.
template <typename T>
__device__ void load_tile_transposed(float* dst, int dst_ld, const T* src, long long src_ld, int rows, int cols, int rows_alloc) {
    if (by_fours(src, src_ld, cols)) {
        for (int e = threadIdx.x; e < rows_alloc * (cols / 4); e += kThreads) {
            const int c = e / rows_alloc * 4, r = e - c / 4 * rows_alloc;
            const float4 v = r < rows ? load4(src + r * src_ld + c) : make_float4(0.f, 0.f, 0.f, 0.f);
            dst[c * dst_ld + r] = v.x;
            dst[(c + 1) * dst_ld + r] = v.y;
            dst[(c + 2) * dst_ld + r] = v.z;
            dst[(c + 3) * dst_ld + r] = v.w;
        }
        return;
    }
    const int row_blocks = (rows_alloc + 3) / 4, col_blocks = (cols + 7) / 8;
    for (int e = threadIdx.x; e < row_blocks * col_blocks * 32; e += kThreads) {
        const int block = e / 32, lane = e % 32;
        const int r = block / col_blocks * 4 + lane / 8, c = block % col_blocks * 8 + lane % 8;
        if (r < rows_alloc && c < cols) dst[c * dst_ld + r] = r < rows ? to_float(src[r * src_ld + c]) : 0.f;
    }
}

// ---------------------------------------------------------------------------------------
// 4. Row reductions over a warp's rows of a Br×Bc tile of scores in shared memory: the
// warp's lanes split into groups, one group per row (as many rows at once as fit, at most
// 32), each group reduced with shuffles. Consecutive rows are row_stride apart, so the
// groups' reads fall in different banks.

struct RowGroups {
    int lanes;          // lanes per row
    int rows_per_pass;  // 32 / lanes
};

__device__ __forceinline__ RowGroups row_groups(const PatchGrid& g) {
    int rows = 1;
    while (rows < g.warp_rows && rows < 32) rows *= 2;
    return {32 / rows, rows};
}

__device__ __forceinline__ float group_max(float v, int lanes) {
    for (int off = lanes / 2; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

__device__ __forceinline__ float group_sum(float v, int lanes) {
    for (int off = lanes / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Calls f(r, lane_in_row, real) for this warp's rows r. Every lane calls it the same number
// of times (the shuffles inside f need the whole warp); real is false for a lane whose r
// is past the warp's rows, and f must not touch that row.
template <typename F>
__device__ __forceinline__ void for_my_rows(const PatchGrid& g, const RowGroups& rg, F&& f) {
    const WarpRows w = warp_rows(g);
    const int lane = threadIdx.x % 32;
    for (int base = w.first; base < w.end; base += rg.rows_per_pass) {
        const int r = base + lane / rg.lanes;
        f(r, lane % rg.lanes, r < w.end);
    }
}

// Row r of a tile of scores, in place: its max over the real columns c < bc, then
// row[c] = e^(row[c] − max(row max, floor)) for c < bc and 0 up to kc (P̃). Returns
// {row max, Σ P̃}, the same in every lane of the row's group.
__device__ __forceinline__ float2 exp_row(float* row, int bc, int kc, float floor, int lane, int lanes, bool real) {
    float mx = -INFINITY;
    if (real)
        for (int c = lane; c < bc; c += lanes) mx = fmaxf(mx, row[c]);
    mx = group_max(mx, lanes);
    const float base = fmaxf(mx, floor);
    float sum = 0.f;
    if (real)
        for (int c = lane; c < kc; c += lanes) {
            const float e = c < bc ? __expf(row[c] - base) : 0.f;  // columns past the edge: P̃ = 0
            row[c] = e;
            sum += e;
        }
    return {mx, group_sum(sum, lanes)};
}

// ---------------------------------------------------------------------------------------
// 5. attention_standard (standard_tiled.toy): three kernels, S and P through global memory.

// Kernel 1, S = Q·Kᵀ: one block per Br×Bc tile of S, which loads its Q_i and K_j (so Q is
// read Tc times and K Tr times) and stores its tile of S from the patches' registers.
__host__ __device__ Carve scores_layout(const Dims& dm, long long* q, long long* k) {
    Carve c;
    *q = c.take<float>((long long)dm.Br * row_stride(dm.d));
    *k = c.take<float>((long long)dm.Bc * row_stride(dm.d));
    return c;
}

template <typename T, bool kCount>
__global__ void __launch_bounds__(kThreads, kMinBlocks<1>) scores_kernel(const T* Q, const T* K, T* S, Dims dm, unsigned long long* counts) {
    extern __shared__ float4 shared_f4[];
    char* shared = reinterpret_cast<char*>(shared_f4);
    long long q_at, k_at;
    scores_layout(dm, &q_at, &k_at);
    float* q = reinterpret_cast<float*>(shared + q_at);  // [Br][ldd]  Q_i
    float* k = reinterpret_cast<float*>(shared + k_at);  // [Bc][ldd]  K_j

    const int i = blockIdx.x / dm.Tc, j = blockIdx.x % dm.Tc, head = blockIdx.y;
    const int row0 = i * dm.Br, col0 = j * dm.Bc;
    const int br = min(dm.Br, dm.n - row0), bc = min(dm.Bc, dm.n - col0);
    const long long nd = (long long)dm.n * dm.d;
    Q += head * nd + (long long)row0 * dm.d;
    K += head * nd + (long long)col0 * dm.d;
    S += head * (long long)dm.n * dm.n + (long long)row0 * dm.n + col0;

    const int ldd = row_stride(dm.d), kd = pad4(dm.d);
    load_tile(q, ldd, Q, dm.d, br, dm.d, dm.Br, kd);
    load_tile(k, ldd, K, dm.d, bc, dm.d, dm.Bc, kd);
    count_tile<kCount>(counts, kStdQ, kRead, (long long)br * dm.d);
    count_tile<kCount>(counts, kStdK, kRead, (long long)bc * dm.d);
    __syncthreads();

    const PatchGrid g = patch_grid(dm.Br, dm.Bc);
    for (int t = 0; t < g.per_lane; ++t) {
        const Patch pt = my_patch(g, t);
        if (!pt.live) continue;
        float acc[kPatch][kPatch];
        zero(acc);
        patch_mac(acc, q, ldd, k, ldd, kd, g, pt);
#pragma unroll
        for (int a = 0; a < kPatch; ++a)
#pragma unroll
            for (int b = 0; b < kPatch; ++b)
                if (pt.row(a) < br && pt.col(b) < bc) S[(long long)pt.row(a) * dm.n + pt.col(b)] = from_float<T>(acc[a][b]);
    }
    count_tile<kCount>(counts, kStdS, kWrite, (long long)br * bc);
}

// Kernel 2, P = softmax(S): one block per row, the whole row in shared memory (as T, as it
// came), then standard.toy's three passes over it (max, sum of exponentials, normalize):
// S is read once and P written once.
template <typename T, bool kCount>
__global__ void __launch_bounds__(kThreads) softmax_rows_kernel(const T* S, T* P, int n, unsigned long long* counts) {
    extern __shared__ float4 shared_f4[];
    T* row = reinterpret_cast<T*>(shared_f4);
    __shared__ float partial[kWarps];
    const long long offset = ((long long)blockIdx.y * n + blockIdx.x) * n;
    S += offset;
    P += offset;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    // The block's reduction: each warp with shuffles, then the warps' results.
    auto block_reduce = [&](float v, bool is_max) {
        for (int off = 16; off > 0; off /= 2) {
            const float other = __shfl_xor_sync(0xffffffffu, v, off);
            v = is_max ? fmaxf(v, other) : v + other;
        }
        if (lane == 0) partial[warp] = v;
        __syncthreads();
        float total = partial[0];
        for (int w = 1; w < kWarps; ++w) total = is_max ? fmaxf(total, partial[w]) : total + partial[w];
        __syncthreads();  // partial is reused by the next reduction
        return total;
    };

    float mx = -INFINITY;
    for (int c = threadIdx.x; c < n; c += kThreads) {
        row[c] = S[c];
        mx = fmaxf(mx, to_float(row[c]));
    }
    count_tile<kCount>(counts, kStdS, kRead, n);
    mx = block_reduce(mx, true);
    float sum = 0.f;
    for (int c = threadIdx.x; c < n; c += kThreads) sum += __expf(to_float(row[c]) - mx);
    const float inv = 1.f / block_reduce(sum, false);
    for (int c = threadIdx.x; c < n; c += kThreads) P[c] = from_float<T>(__expf(to_float(row[c]) - mx) * inv);
    count_tile<kCount>(counts, kStdP, kWrite, n);
}

// Kernel 3, O = P·V: one block per Q tile, O_i in the patches' registers while the tiles
// P_ij and V_j stream through shared memory; O_i is stored once. P is read once, V Tr times.
__host__ __device__ Carve pv_layout(const Dims& dm, long long* p, long long* vt) {
    Carve c;
    *p = c.take<float>((long long)dm.Br * row_stride(dm.Bc));
    *vt = c.take<float>((long long)dm.d * row_stride(dm.Bc));
    return c;
}

template <typename T, bool kCount, int kOPatches>
__global__ void __launch_bounds__(kThreads, kMinBlocks<kOPatches>) pv_kernel(const T* P, const T* V, T* O, Dims dm, unsigned long long* counts) {
    extern __shared__ float4 shared_f4[];
    char* shared = reinterpret_cast<char*>(shared_f4);
    long long p_at, vt_at;
    pv_layout(dm, &p_at, &vt_at);
    float* p = reinterpret_cast<float*>(shared + p_at);    // [Br][ldc]  P_ij
    float* vt = reinterpret_cast<float*>(shared + vt_at);  // [d][ldc]   V_jᵀ

    const int i = blockIdx.x, head = blockIdx.y;
    const int row0 = i * dm.Br, br = min(dm.Br, dm.n - row0);
    const long long nd = (long long)dm.n * dm.d;
    P += head * (long long)dm.n * dm.n + (long long)row0 * dm.n;
    V += head * nd;
    O += head * nd + (long long)row0 * dm.d;

    const int ldc = row_stride(dm.Bc);
    const PatchGrid g = patch_grid(dm.Br, dm.d);
    PatchAccumulator<kOPatches> o;
    o.clear();
    for (int j = 0; j < dm.Tc; ++j) {
        const int col0 = j * dm.Bc, bc = min(dm.Bc, dm.n - col0), kc = pad4(bc);
        __syncthreads();  // the previous tile's product is done with p and vt
        load_tile(p, ldc, P + col0, dm.n, br, bc, dm.Br, kc);
        load_tile_transposed(vt, ldc, V + (long long)col0 * dm.d, dm.d, bc, dm.d, kc);
        count_tile<kCount>(counts, kStdP, kRead, (long long)br * bc);
        count_tile<kCount>(counts, kStdV, kRead, (long long)bc * dm.d);
        __syncthreads();
#pragma unroll
        for (int t = 0; t < kOPatches; ++t) {
            const Patch pt = my_patch(g, t);
            if (t < g.per_lane && pt.live) patch_mac(o.acc[t], p, ldc, vt, ldc, kc, g, pt);
        }
    }
#pragma unroll
    for (int t = 0; t < kOPatches; ++t) {
        const Patch pt = my_patch(g, t);
        if (t >= g.per_lane || !pt.live) continue;
#pragma unroll
        for (int a = 0; a < kPatch; ++a)
#pragma unroll
            for (int b = 0; b < kPatch; ++b)
                if (pt.row(a) < br && pt.col(b) < dm.d) O[pt.row(a) * dm.d + pt.col(b)] = from_float<T>(o.acc[t][a][b]);
    }
    count_tile<kCount>(counts, kStdO, kWrite, (long long)br * dm.d);
}

// ---------------------------------------------------------------------------------------
// 6. fa1_forward (fa1.toy): the K/V loop outside, O_i, m_i, ℓ_i updated in global memory.
//
// The counts pin down the parallelisation. K and V are read once in all (n·d), so each
// K/V tile is loaded by one block, which keeps it while every Q tile streams past: one
// block per (j, head), looping over i as the program does. Q, O, m and ℓ are read for
// every (i, j) pair (n·d·Tc and n·Tc), which that order gives. But the blocks j = 0, 1, ...
// all update the same O_i, m_i, ℓ_i, a read-modify-write that must not interleave, and
// the program does them in order of j. So they are serialized, in j order, by a ticket per
// (head, Q tile) in global memory: block j waits until ticket(i) = j, merges its tile
// into O_i, m_i, ℓ_i, and sets ticket(i) = j + 1.
//
// Only the merge waits. S_ij = Q_i·K_jᵀ, its row max m̃, P̃ = e^(S − m̃), ℓ̃ and P̃·V_j need
// nothing from the other blocks (the program loads O, m, ℓ before them; the counts are
// the same), so block j computes them while block j − 1 merges, and the blocks of a head
// run as a pipeline: block j is about one Q tile behind block j − 1.
//
// A block may wait only on blocks that are already running, or it could wait forever for
// one the GPU has no room to start. So blocks do not take (j, head) from blockIdx, whose
// start order CUDA does not promise: each takes the next number from a global counter
// when it starts, in head-major order, and the block it waits on took a smaller number,
// so it has started. The tickets and the counter are scratch of the launch (not program
// arrays, not counted), zeroed before it.
struct Fa1Layout {
    long long k, vt, q, s, m_tile, l_tile, keep, add;
};

__host__ __device__ Carve fa1_layout(const Dims& dm, Fa1Layout* at) {
    Carve c;
    at->k = c.take<float>((long long)dm.Bc * row_stride(dm.d));   // K_j, for the whole block
    at->vt = c.take<float>((long long)dm.d * row_stride(dm.Bc));  // V_jᵀ, for the whole block
    at->q = c.take<float>((long long)dm.Br * row_stride(dm.d));   // Q_i
    at->s = c.take<float>((long long)dm.Br * row_stride(dm.Bc));  // S_ij, then P̃_ij
    at->m_tile = c.take<float>(dm.Br);  // m̃ = rowmax(S_ij)
    at->l_tile = c.take<float>(dm.Br);  // ℓ̃ = rowsum(P̃_ij)
    at->keep = c.take<float>(dm.Br);    // ℓ_i·e^(m_i − m_new)/ℓ_new: the old O_i's weight
    at->add = c.take<float>(dm.Br);     // e^(m̃ − m_new)/ℓ_new: P̃·V_j's weight
    return c;
}

template <typename T, bool kCount, int kOPatches>
__global__ void __launch_bounds__(kThreads, kMinBlocks<kOPatches>)
    fa1_kernel(const T* Q, const T* K, const T* V, T* O, float* m, float* l, Dims dm, unsigned* tickets, unsigned* next_block,
               unsigned long long* counts) {
    extern __shared__ float4 shared_f4[];
    char* shared = reinterpret_cast<char*>(shared_f4);
    Fa1Layout at;
    fa1_layout(dm, &at);
    float* k = reinterpret_cast<float*>(shared + at.k);
    float* vt = reinterpret_cast<float*>(shared + at.vt);
    float* q = reinterpret_cast<float*>(shared + at.q);
    float* s = reinterpret_cast<float*>(shared + at.s);
    float* m_tile = reinterpret_cast<float*>(shared + at.m_tile);
    float* l_tile = reinterpret_cast<float*>(shared + at.l_tile);
    float* keep = reinterpret_cast<float*>(shared + at.keep);
    float* add = reinterpret_cast<float*>(shared + at.add);

    __shared__ unsigned block_number;
    if (threadIdx.x == 0) block_number = atomicAdd(next_block, 1u);
    __syncthreads();
    const int head = block_number / dm.Tc, j = block_number % dm.Tc;
    const int col0 = j * dm.Bc, bc = min(dm.Bc, dm.n - col0);
    const long long nd = (long long)dm.n * dm.d;
    Q += head * nd;
    K += head * nd + (long long)col0 * dm.d;
    V += head * nd + (long long)col0 * dm.d;
    O += head * nd;
    m += (long long)head * dm.n;
    l += (long long)head * dm.n;
    tickets += (long long)head * dm.Tr;

    const int ldd = row_stride(dm.d), ldc = row_stride(dm.Bc), kd = pad4(dm.d), kc = pad4(bc);
    load_tile(k, ldd, K, dm.d, bc, dm.d, dm.Bc, kd);
    load_tile_transposed(vt, ldc, V, dm.d, bc, dm.d, kc);
    count_tile<kCount>(counts, kFa1K, kRead, (long long)bc * dm.d);
    count_tile<kCount>(counts, kFa1V, kRead, (long long)bc * dm.d);

    const PatchGrid gs = patch_grid(dm.Br, dm.Bc), go = patch_grid(dm.Br, dm.d);
    const RowGroups rg = row_groups(gs);
    for (int i = 0; i < dm.Tr; ++i) {
        const int row0 = i * dm.Br, br = min(dm.Br, dm.n - row0);
        // q is free: every warp has passed the barriers of the previous tile's merge since
        // its product last read q.
        load_tile(q, ldd, Q + (long long)row0 * dm.d, dm.d, br, dm.d, dm.Br, kd);
        count_tile<kCount>(counts, kFa1Q, kRead, (long long)br * dm.d);
        __syncthreads();

        // S = Q_i·K_jᵀ, then m̃ = rowmax(S), P̃ = e^(S − m̃), ℓ̃ = rowsum(P̃): this warp's rows
        scores_to_shared(s, ldc, q, k, ldd, kd, gs);
        __syncwarp();
        for_my_rows(gs, rg, [&](int r, int lane, bool real) {
            const float2 row = exp_row(s + r * ldc, bc, kc, -INFINITY, lane, rg.lanes, real);
            if (real && lane == 0) {
                m_tile[r] = row.x;
                l_tile[r] = row.y;
            }
        });
        __syncwarp();

        // P̃·V_j, this warp's rows, in registers until the merge
        PatchAccumulator<kOPatches> pv;
        pv.clear();
#pragma unroll
        for (int t = 0; t < kOPatches; ++t) {
            const Patch pt = my_patch(go, t);
            if (t < go.per_lane && pt.live) patch_mac(pv.acc[t], s, ldc, vt, ldc, kc, go, pt);
        }

        // The merge, in j order: wait for block j − 1 to have merged this Q tile.
        if (threadIdx.x == 0) {
            cuda::atomic_ref<unsigned, cuda::thread_scope_device> ticket(tickets[i]);
            while (ticket.load(cuda::memory_order_acquire) != unsigned(j)) __nanosleep(32);
        }
        __syncthreads();
        // m_new = max(m_i, m̃), ℓ_new = ℓ_i·e^(m_i − m_new) + ℓ̃·e^(m̃ − m_new). Loads bypass L1
        // (__ldcg): another SM wrote these values, and L1 is not coherent across SMs.
        for (int r = threadIdx.x; r < br; r += kThreads) {
            const float m_old = __ldcg(m + row0 + r), l_old = __ldcg(l + row0 + r);
            const float m_new = fmaxf(m_old, m_tile[r]);
            const float kept = l_old * __expf(m_old - m_new), scale = __expf(m_tile[r] - m_new);
            const float l_new = kept + l_tile[r] * scale;
            keep[r] = kept / l_new;
            add[r] = scale / l_new;
            m[row0 + r] = m_new;
            l[row0 + r] = l_new;
        }
        count_tile<kCount>(counts, kFa1M, kRead, br);
        count_tile<kCount>(counts, kFa1L, kRead, br);
        count_tile<kCount>(counts, kFa1M, kWrite, br);
        count_tile<kCount>(counts, kFa1L, kWrite, br);
        __syncthreads();
        // O_i = diag(ℓ_new)⁻¹·(diag(ℓ_i·e^(m_i − m_new))·O_i + e^(m̃ − m_new)·P̃·V_j), kept normalized
        T* o_tile = O + (long long)row0 * dm.d;
#pragma unroll
        for (int t = 0; t < kOPatches; ++t) {
            const Patch pt = my_patch(go, t);
            if (t >= go.per_lane || !pt.live) continue;
#pragma unroll
            for (int a = 0; a < kPatch; ++a)
#pragma unroll
                for (int b = 0; b < kPatch; ++b) {
                    const int r = pt.row(a), c = pt.col(b);
                    if (r < br && c < dm.d) {
                        T* o_at = o_tile + r * dm.d + c;
                        *o_at = from_float<T>(keep[r] * to_float(__ldcg(o_at)) + add[r] * pv.acc[t][a][b]);
                    }
                }
        }
        count_tile<kCount>(counts, kFa1O, kRead, (long long)br * dm.d);
        count_tile<kCount>(counts, kFa1O, kWrite, (long long)br * dm.d);
        // Publish: every thread's stores are visible device-wide before the ticket moves on.
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) {
            cuda::atomic_ref<unsigned, cuda::thread_scope_device> ticket(tickets[i]);
            ticket.store(unsigned(j + 1), cuda::memory_order_release);
        }
    }
}

// ---------------------------------------------------------------------------------------
// 7. fa2_forward (fa2.toy): the Q loop outside, O_i on chip until it is final.
//
// One block per (Q tile i, head): Q_i loaded once, m, ℓ and the unnormalized O_i (in the
// patches' registers) kept for the whole K/V loop, O_i normalized once and stored once with
// L = m + ln ℓ. Against fa1, no block waits for another and nothing of the running state
// touches global memory; against standard, S and P never leave the chip.
//
// Per K/V tile the block meets twice (K_j and V_j loaded; then free to load the next).
// Between, each warp works alone on its rows: S, the online softmax, P̃·V_j.
//
// When K_j and V_j side by side would leave room for fewer blocks per SM than one buffer
// holding K_j and then V_j, they share it (share_kv): V_j is loaded once every warp is done
// with K_j, which costs two more barriers per tile.
struct Fa2Layout {
    long long q, k, vt, s, m, l, scale;
};

__host__ __device__ Carve fa2_layout(const Dims& dm, bool share_kv, Fa2Layout* at) {
    Carve c;
    const long long k_elems = (long long)dm.Bc * row_stride(dm.d), vt_elems = (long long)dm.d * row_stride(dm.Bc);
    at->q = c.take<float>((long long)dm.Br * row_stride(dm.d));  // Q_i
    if (share_kv) {
        at->k = at->vt = c.take<float>(k_elems > vt_elems ? k_elems : vt_elems);  // K_j, then V_jᵀ
    } else {
        at->k = c.take<float>(k_elems);    // K_j
        at->vt = c.take<float>(vt_elems);  // V_jᵀ
    }
    at->s = c.take<float>((long long)dm.Br * row_stride(dm.Bc));  // S_ij, then P̃_ij
    at->m = c.take<float>(dm.Br);      // running max
    at->l = c.take<float>(dm.Br);      // running sum
    at->scale = c.take<float>(dm.Br);  // e^(m − m_new)
    return c;
}

// Causal (kCausal, fa2_causal.toy: Br = Bc = B): Q tile i reads the K/V tiles 0..i only, and
// on the diagonal tile i the scores of keys after their query (c > r) are −∞ before the
// softmax, as CAUSAL sets them. heaviest_first: block x takes Q tile Tr − 1 − x, as
// fa2_causal_heaviest_first.toy hands them out (the traffic is the same).
// fa2_kernel in fp32 with one patch of O needs more than the 85 registers of three blocks: at
// three it spilled 72 bytes a thread, and the spills' stores, through the L2, doubled what a cold
// launch wrote to DRAM (n = 4096, 16 heads: 16.2 MB written where O is 16.8 MB, 8.2 MB at two
// blocks) for 0.7% of its time (3.34 ms against 3.36 on an H100).
template <typename T, int kOPatches>
constexpr int kFa2MinBlocks = sizeof(T) == 4 && kOPatches == 1 ? 2 : kMinBlocks<kOPatches>;

template <typename T, bool kCount, int kOPatches, bool kCausal>
__global__ void __launch_bounds__(kThreads, kFa2MinBlocks<T, kOPatches>)
    fa2_kernel(const T* Q, const T* K, const T* V, T* O, float* L, Dims dm, bool share_kv, bool heaviest_first, unsigned long long* counts) {
    extern __shared__ float4 shared_f4[];
    char* shared = reinterpret_cast<char*>(shared_f4);
    Fa2Layout at;
    fa2_layout(dm, share_kv, &at);
    float* q = reinterpret_cast<float*>(shared + at.q);
    float* k = reinterpret_cast<float*>(shared + at.k);
    float* vt = reinterpret_cast<float*>(shared + at.vt);
    float* s = reinterpret_cast<float*>(shared + at.s);
    float* m = reinterpret_cast<float*>(shared + at.m);
    float* l = reinterpret_cast<float*>(shared + at.l);
    float* scale = reinterpret_cast<float*>(shared + at.scale);

    const int i = kCausal && heaviest_first ? dm.Tr - 1 - int(blockIdx.x) : int(blockIdx.x), head = blockIdx.y;
    const int row0 = i * dm.Br, br = min(dm.Br, dm.n - row0);
    const long long nd = (long long)dm.n * dm.d;
    Q += head * nd + (long long)row0 * dm.d;
    K += head * nd;
    V += head * nd;
    O += head * nd + (long long)row0 * dm.d;
    L += (long long)head * dm.n + row0;

    const int ldd = row_stride(dm.d), ldc = row_stride(dm.Bc), kd = pad4(dm.d);
    load_tile(q, ldd, Q, dm.d, br, dm.d, dm.Br, kd);
    count_tile<kCount>(counts, kFa2Q, kRead, (long long)br * dm.d);
    const int tiles = kCausal ? i + 1 : dm.Tc;  // causal: up to the diagonal tile
    for (int r = threadIdx.x; r < dm.Br; r += kThreads) {
        m[r] = -INFINITY;  // SET -inf, SET 0: on chip, no global traffic
        l[r] = 0.f;
    }

    const PatchGrid gs = patch_grid(dm.Br, dm.Bc), go = patch_grid(dm.Br, dm.d);
    const RowGroups rg = row_groups(gs);
    PatchAccumulator<kOPatches> o;
    o.clear();
    for (int j = 0; j < tiles; ++j) {
        const int col0 = j * dm.Bc, bc = min(dm.Bc, dm.n - col0), kc = pad4(bc);
        __syncthreads();  // every warp is done with the previous K_j and V_j
        load_tile(k, ldd, K + (long long)col0 * dm.d, dm.d, bc, dm.d, dm.Bc, kd);
        count_tile<kCount>(counts, kFa2K, kRead, (long long)bc * dm.d);
        if (!share_kv) {
            load_tile_transposed(vt, ldc, V + (long long)col0 * dm.d, dm.d, bc, dm.d, kc);
            count_tile<kCount>(counts, kFa2V, kRead, (long long)bc * dm.d);
        }
        __syncthreads();

        // S = Q_i·K_jᵀ, this warp's rows
        scores_to_shared(s, ldc, q, k, ldd, kd, gs);
        if (share_kv) {
            __syncthreads();  // every warp is done with K_j
            load_tile_transposed(vt, ldc, V + (long long)col0 * dm.d, dm.d, bc, dm.d, kc);
            count_tile<kCount>(counts, kFa2V, kRead, (long long)bc * dm.d);
            __syncthreads();
        }
        if (kCausal && j == i) {  // the diagonal tile (row0 = col0): key c after query r is masked
            __syncthreads();
            for (int e = threadIdx.x; e < br * bc; e += kThreads) {
                const int r = e / bc, c = e - r * bc;
                if (c > r) s[r * ldc + c] = -INFINITY;
            }
            __syncthreads();
        }
        __syncwarp();

        // m_new = max(m, rowmax(S)), P̃ = e^(S − m_new), ℓ = ℓ·e^(m − m_new) + rowsum(P̃)
        for_my_rows(gs, rg, [&](int r, int lane, bool real) {
            const float m_old = real ? m[r] : 0.f;
            const float2 row = exp_row(s + r * ldc, bc, kc, m_old, lane, rg.lanes, real);
            __syncwarp();  // every lane has read m[r] before lane 0 overwrites it
            if (real && lane == 0) {
                const float m_new = fmaxf(m_old, row.x), f = __expf(m_old - m_new);
                scale[r] = f;
                l[r] = l[r] * f + row.y;
                m[r] = m_new;
            }
        });
        __syncwarp();

        // O = O·e^(m − m_new) + P̃·V_j, this warp's rows
#pragma unroll
        for (int t = 0; t < kOPatches; ++t) {
            const Patch pt = my_patch(go, t);
            if (t >= go.per_lane || !pt.live) continue;
#pragma unroll
            for (int a = 0; a < kPatch; ++a) {
                const float f = scale[pt.row(a) == kNoRow ? pt.row0 : pt.row(a)];
#pragma unroll
                for (int b = 0; b < kPatch; ++b) o.acc[t][a][b] *= f;
            }
            patch_mac(o.acc[t], s, ldc, vt, ldc, kc, go, pt);
        }
    }

    // O = diag(ℓ)⁻¹·O, once (each warp reads only its own rows' ℓ); L = m + ln ℓ
#pragma unroll
    for (int t = 0; t < kOPatches; ++t) {
        const Patch pt = my_patch(go, t);
        if (t >= go.per_lane || !pt.live) continue;
#pragma unroll
        for (int a = 0; a < kPatch; ++a) {
            const int r = pt.row(a);
            if (r >= br) continue;
            const float inv = 1.f / l[r];
#pragma unroll
            for (int b = 0; b < kPatch; ++b)
                if (pt.col(b) < dm.d) O[r * dm.d + pt.col(b)] = from_float<T>(o.acc[t][a][b] * inv);
        }
    }
    count_tile<kCount>(counts, kFa2O, kWrite, (long long)br * dm.d);
    __syncthreads();
    for (int r = threadIdx.x; r < br; r += kThreads) L[r] = m[r] + logf(l[r]);
    count_tile<kCount>(counts, kFa2L, kWrite, br);
}

// ---------------------------------------------------------------------------------------
// 8. Launchers: parameters, shared memory (refused up front when it does not fit), the
// instantiation for the dtype, the counting variant and the number of O patches.

// The parameters n, d, Br, Bc; or, causal (n, d, B), square tiles Br = Bc = B.
Dims dims_of(const StageArgs& args, const char* kernel, bool square = false) {
    Dims dm{};
    dm.n = int(args.params[0]);
    dm.d = int(args.params[1]);
    dm.Br = int(args.params[2]);
    dm.Bc = int(args.params[square ? 2 : 3]);
    if (args.params[0] < 1 || args.params[0] > (1 << 30) || dm.d < 1 || dm.d > 128 || dm.Br < 1 || dm.Br > 128 || dm.Bc < 1 ||
        dm.Bc > 128)
        throw GpuError(std::string(kernel) + (square ? " takes n ≥ 1, 1 ≤ d ≤ 128 and 1 ≤ B ≤ 128" : " takes n ≥ 1, 1 ≤ d ≤ 128 and 1 ≤ Br, Bc ≤ 128"));
    if (args.heads < 1 || args.heads > 65535) throw GpuError(std::string(kernel) + " takes 1 to 65535 heads (the grid's y dimension)");
    dm.Tr = int(cdiv(dm.n, dm.Br));
    dm.Tc = int(cdiv(dm.n, dm.Bc));
    if ((long long)dm.Tr * dm.Tc > 0x7fffffffLL)
        throw GpuError(std::string(kernel) + ": " + std::to_string(dm.Tr) + "×" + std::to_string(dm.Tc) +
                       " tiles are more than a grid holds: raise Br or Bc");
    return dm;
}
Dims causal_dims_of(const StageArgs& args, const char* kernel) { return dims_of(args, kernel, true); }

// The smallest number of 4×4 patches per lane that covers a Br×d tile of O, rounded up to
// an instantiated one (1, 2 or 4: Br = d = 128 needs 4).
int o_patches(const Dims& dm) {
    const int per_lane = patches_per_lane(dm.Br, dm.d);
    return per_lane <= 1 ? 1 : per_lane <= 2 ? 2 : 4;
}

template <typename F>
void with_o_patches(int patches, F&& f) {
    switch (patches) {
        case 1: f(std::integral_constant<int, 1>{}); break;
        case 2: f(std::integral_constant<int, 2>{}); break;
        default: f(std::integral_constant<int, 4>{}); break;
    }
}

// Shared memory of each kernel, in bytes, from the same layout functions as the kernels.
long long scores_bytes(const Dims& dm) {
    long long q, k;
    return scores_layout(dm, &q, &k).bytes;
}
long long pv_bytes(const Dims& dm) {
    long long p, vt;
    return pv_layout(dm, &p, &vt).bytes;
}
long long fa1_bytes(const Dims& dm) {
    Fa1Layout at;
    return fa1_layout(dm, &at).bytes;
}
template <bool kShare>
long long fa2_bytes(const Dims& dm) {
    Fa2Layout at;
    return fa2_layout(dm, kShare, &at).bytes;
}

// Whether fa2's K_j and V_j share a buffer: when apart they leave room for fewer blocks
// per SM (its shared memory, less 1 KiB the system keeps per block), or for none (then the
// refusal's advice is about the smaller layout).
bool fa2_share_kv(const Dims& dm) {
    int device = 0, per_sm = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    auto blocks = [&](long long bytes) { return per_sm / (bytes + 1024); };
    const long long apart = blocks(fa2_bytes<false>(dm));
    return apart == 0 || blocks(fa2_bytes<true>(dm)) > apart;
}

// What to lower when a kernel's tiles do not fit: the largest Br (Bc) that fits with the
// other unchanged, when there is one.
std::string tile_advice(long long (*bytes)(const Dims&), const Dims& dm, int limit) {
    auto largest = [&](bool rows) {
        for (int t = rows ? dm.Br : dm.Bc; t >= 1; --t) {
            Dims smaller = dm;
            (rows ? smaller.Br : smaller.Bc) = t;
            if (bytes(smaller) <= limit) return t;
        }
        return 0;
    };
    const int br = largest(true), bc = largest(false);
    std::string out;
    if (br > 0) out += "lower Br to " + std::to_string(br) + " or less";
    if (bc > 0) out += std::string(out.empty() ? "lower " : ", or ") + "Bc to " + std::to_string(bc) + " or less";
    if (out.empty()) out = "lower Br and Bc";
    return out + " (shared memory holds fp32 tiles whatever the dtype)";
}

template <typename Kernel>
void require_tiles(Kernel* kernel, long long (*bytes)(const Dims&), const Dims& dm, const StageArgs& args, const char* name) {
    const long long need = bytes(dm);
    const std::string advice = need > args.shared_memory_limit ? tile_advice(bytes, dm, args.shared_memory_limit) : "";
    require_shared_memory(reinterpret_cast<const void*>(kernel), need, args, name, advice.c_str());
}

void launch_attention_standard(int stage, const StageArgs& args) {
    const Dims dm = dims_of(args, "attention_standard");
    with_dtype(args.dtype, [&](auto tag) {
        using T = decltype(tag);
        const T* Q = static_cast<const T*>(args.arrays[kStdQ]);
        const T* K = static_cast<const T*>(args.arrays[kStdK]);
        const T* V = static_cast<const T*>(args.arrays[kStdV]);
        T* S = static_cast<T*>(args.arrays[kStdS]);
        T* P = static_cast<T*>(args.arrays[kStdP]);
        T* O = static_cast<T*>(args.arrays[kStdO]);
        with_counting(args, [&](auto counting) {
            constexpr bool kCount = decltype(counting)::value;
            if (stage == 0) {
                auto* kernel = scores_kernel<T, kCount>;
                require_tiles(kernel, scores_bytes, dm, args, "attention_standard (scores)");
                note_launch(args, kernel, kThreads, scores_bytes(dm), kMinBlocks<1>);
                if (args.plan_only) return;
                const dim3 grid(unsigned(dm.Tr) * unsigned(dm.Tc), unsigned(args.heads));
                kernel<<<grid, kThreads, scores_bytes(dm), args.stream>>>(Q, K, S, dm, args.counts);
                check_launch("attention_standard (scores)");
            } else if (stage == 1) {
                auto* kernel = softmax_rows_kernel<T, kCount>;
                const long long bytes = (long long)dm.n * (long long)sizeof(T);
                const std::string advice = "one row of S (n elements) is kept in shared memory: lower n to " +
                                           std::to_string(args.shared_memory_limit / (long long)sizeof(T)) + " or less";
                require_shared_memory(reinterpret_cast<const void*>(kernel), bytes, args, "attention_standard (softmax)", advice.c_str());
                note_launch(args, kernel, kThreads, bytes, 0);
                if (args.plan_only) return;
                const dim3 grid(unsigned(dm.n), unsigned(args.heads));
                kernel<<<grid, kThreads, bytes, args.stream>>>(S, P, dm.n, args.counts);
                check_launch("attention_standard (softmax)");
            } else {
                with_o_patches(o_patches(dm), [&](auto patches) {
                    auto* kernel = pv_kernel<T, kCount, decltype(patches)::value>;
                    require_tiles(kernel, pv_bytes, dm, args, "attention_standard (pv)");
                    note_launch(args, kernel, kThreads, pv_bytes(dm), kMinBlocks<decltype(patches)::value>);
                    if (args.plan_only) return;
                    const dim3 grid(unsigned(dm.Tr), unsigned(args.heads));
                    kernel<<<grid, kThreads, pv_bytes(dm), args.stream>>>(P, V, O, dm, args.counts);
                    check_launch("attention_standard (pv)");
                });
            }
        });
    });
}

void launch_fa1_forward(int, const StageArgs& args) {
    const Dims dm = dims_of(args, "fa1_forward");
    with_dtype(args.dtype, [&](auto tag) {
        using T = decltype(tag);
        const T* Q = static_cast<const T*>(args.arrays[kFa1Q]);
        const T* K = static_cast<const T*>(args.arrays[kFa1K]);
        const T* V = static_cast<const T*>(args.arrays[kFa1V]);
        T* O = static_cast<T*>(args.arrays[kFa1O]);
        float* m = static_cast<float*>(args.arrays[kFa1M]);
        float* l = static_cast<float*>(args.arrays[kFa1L]);
        with_counting(args, [&](auto counting) {
            constexpr bool kCount = decltype(counting)::value;
            with_o_patches(o_patches(dm), [&](auto patches) {
                auto* kernel = fa1_kernel<T, kCount, decltype(patches)::value>;
                require_tiles(kernel, fa1_bytes, dm, args, "fa1_forward");
                note_launch(args, kernel, kThreads, fa1_bytes(dm), kMinBlocks<decltype(patches)::value>);
                if (args.plan_only) return;
                // The launch's scratch: one ticket per (head, Q tile), then the block counter.
                // Stream-ordered, so it costs no synchronization; zeroed for every launch.
                const size_t words = size_t(args.heads) * size_t(dm.Tr) + 1;
                unsigned* scratch = nullptr;
                cudaError_t status = cudaMallocAsync(reinterpret_cast<void**>(&scratch), words * sizeof(unsigned), args.stream);
                if (status != cudaSuccess) throw GpuError(std::string("fa1_forward: allocating its tickets: ") + cudaGetErrorString(status));
                status = cudaMemsetAsync(scratch, 0, words * sizeof(unsigned), args.stream);
                if (status != cudaSuccess) throw GpuError(std::string("fa1_forward: zeroing its tickets: ") + cudaGetErrorString(status));
                const dim3 grid(unsigned(dm.Tc), unsigned(args.heads));
                kernel<<<grid, kThreads, fa1_bytes(dm), args.stream>>>(Q, K, V, O, m, l, dm, scratch, scratch + words - 1, args.counts);
                check_launch("fa1_forward");
                status = cudaFreeAsync(scratch, args.stream);
                if (status != cudaSuccess) throw GpuError(std::string("fa1_forward: freeing its tickets: ") + cudaGetErrorString(status));
            });
        });
    });
}

// fa2_forward, and the causal kernels (Br = Bc = B) in either order of the Q tiles.
template <bool kCausal>
void launch_fa2(const StageArgs& args, const Dims& dm, const char* name, bool heaviest_first) {
    with_dtype(args.dtype, [&](auto tag) {
        using T = decltype(tag);
        const T* Q = static_cast<const T*>(args.arrays[kFa2Q]);
        const T* K = static_cast<const T*>(args.arrays[kFa2K]);
        const T* V = static_cast<const T*>(args.arrays[kFa2V]);
        T* O = static_cast<T*>(args.arrays[kFa2O]);
        float* L = static_cast<float*>(args.arrays[kFa2L]);
        with_counting(args, [&](auto counting) {
            constexpr bool kCount = decltype(counting)::value;
            with_o_patches(o_patches(dm), [&](auto patches) {
                auto* kernel = fa2_kernel<T, kCount, decltype(patches)::value, kCausal>;
                const bool share_kv = fa2_share_kv(dm);
                auto* bytes = share_kv ? fa2_bytes<true> : fa2_bytes<false>;
                require_tiles(kernel, bytes, dm, args, name);
                note_launch(args, kernel, kThreads, bytes(dm), kFa2MinBlocks<T, decltype(patches)::value>);
                if (args.plan_only) return;
                const dim3 grid(unsigned(dm.Tr), unsigned(args.heads));
                kernel<<<grid, kThreads, bytes(dm), args.stream>>>(Q, K, V, O, L, dm, share_kv, heaviest_first, args.counts);
                check_launch(name);
            });
        });
    });
}

void launch_fa2_forward(int, const StageArgs& args) { launch_fa2<false>(args, dims_of(args, "fa2_forward"), "fa2_forward", false); }
void launch_fa2_causal(int, const StageArgs& args) {
    launch_fa2<true>(args, causal_dims_of(args, "fa2_causal"), "fa2_causal", false);
}
void launch_fa2_causal_heaviest_first(int, const StageArgs& args) {
    launch_fa2<true>(args, causal_dims_of(args, "fa2_causal_heaviest_first"), "fa2_causal_heaviest_first", true);
}

}  // namespace

extern const KernelEntry kAttentionForwardKernels[] = {
    {"attention_standard", launch_attention_standard},
    {"fa1_forward", launch_fa1_forward},
    {"fa2_forward", launch_fa2_forward},
    {"fa2_causal", launch_fa2_causal},
    {"fa2_causal_heaviest_first", launch_fa2_causal_heaviest_first},
};
extern const int kAttentionForwardKernelCount = sizeof(kAttentionForwardKernels) / sizeof(kAttentionForwardKernels[0]);

}  // namespace toysim::gpu
