// FlashAttention backward on a GPU: the CUDA twins of programs/attention/fa2_backward_no_d_trick.toy
// and programs/attention/fa2_backward.toy, with the same loop order and the same tiles, so that
// what a kernel asks of global memory, counted per array, equals the simulator's LOADs and
// STOREs (times heads) for any n, d <= 128, Br, Bc <= 128.
//
// Build: with the rest of gpu/ (CMake, TOYSIM_CUDA), or alone to check it compiles:
//   nvcc -std=c++20 -arch=sm_90 -I. -c gpu/kernels/attention_backward.cu
// Run each version on the device, checked against the CPU reference (sim/reference) and with
// its counted traffic set against the simulator's:
//   toysim gpu run programs/attention/fa2_backward_no_d_trick.toy --set n=1024 --set d=64 --set Br=64 --set Bc=64
//   toysim gpu run programs/attention/fa2_backward.toy --set n=1024 --set d=64 --set Br=64 --set Bc=64
//
// Versions, as the programs go (times: H100, fp32, n = 1024, d = 64, Br = Bc = 64, 16 heads):
//   1. fa2_backward_no_d_trick: D_i = Σ_j rowsum(P_ij ∘ dP_ij) summed tile by tile in a first
//      pass over K and V, then the gradient pass: K and V are read twice, S and dP computed
//      twice. 0.48 ms + 0.72 ms = 1.20 ms.
//   2. fa2_backward: D = rowsum(dO ∘ O) from one pass over dO and O (the D trick), then the same
//      gradient pass: K and V are read once and the first pass's two n²·d products are gone.
//      0.013 ms + 0.73 ms = 0.75 ms, 14 TFLOP/s at the seeds' 10·n²·d.
//
// Both versions share the gradient pass (backward_kernel). One block per (K/V column block j,
// head) holds K_j, V_j and the accumulators dK_j, dV_j in shared memory and walks every Q tile
// i, as the programs' inner loop does; dQ_i is a read-modify-write of global memory from every
// column block, done with fp32 atomic adds as FlashAttention-2 does. Everything is CUDA cores
// and fp32 arithmetic; the storage type T is float, __half or __nv_bfloat16. Tensor cores are a
// later version.
//
// There is no softmax scale: the programs' seeds fold it into Q.
#include <cfloat>
#include <string>

#include "gpu/kernels/common.cuh"

namespace toysim::gpu {

namespace {

// ---- the block: 256 threads, seen as a 16×16 grid for the products ----

constexpr int kThreads = 256;
constexpr int kGrid = 16;  // threads along each side of the product grid
constexpr int kWarps = kThreads / 32;

// ---- where the tiles live in shared memory ----

// Every tile is fp32 whatever the storage type, so the products read one kind of number.
// Rows of d (K, V, dK, dV, Q, dO) and of Bc (P, dS) are padded to an odd stride: a product reads
// 16 consecutive rows of one column at once (K_j as Kᵀ, P as Pᵀ), and an odd stride puts those
// 16 elements in 16 different banks.
struct TileLayout {
    int ldd = 0, ldc = 0;  // row strides of the d-wide and the Bc-wide tiles, in floats
    // Offsets in floats; dk, dv only in the gradient pass, delta only there too.
    long long k = 0, v = 0, dk = 0, dv = 0, q = 0, dout = 0, p = 0, ds = 0, lse = 0, delta = 0, total = 0;

    __host__ __device__ TileLayout(int d, int Br, int Bc, bool gradients) : ldd(d | 1), ldc(Bc | 1) {
        long long at = 0;
        auto take = [&](long long floats) {
            long long here = at;
            at += floats;
            return here;
        };
        k = take(1ll * Bc * ldd);
        v = take(1ll * Bc * ldd);
        if (gradients) {
            dk = take(1ll * Bc * ldd);
            dv = take(1ll * Bc * ldd);
        }
        q = take(1ll * Br * ldd);
        dout = take(1ll * Br * ldd);
        p = take(1ll * Br * ldc);
        ds = take(1ll * Br * ldc);
        lse = take(Br);
        if (gradients) delta = take(Br);
        total = at;
    }
    long long bytes() const { return total * static_cast<long long>(sizeof(float)); }
};

// ---- which catalog array is which ----

// The two catalog rows list their arrays in different orders (and only fa2_backward has O), so
// the counters' indices are looked up by name in the row itself: a kernel cannot count into the
// wrong array if the row changes.
struct ArrayIndex {
    int Q = -1, K = -1, V = -1, dO = -1, O = -1, L = -1, D = -1, dQ = -1, dK = -1, dV = -1;
};

ArrayIndex array_index(const char* kernel) {
    const KernelSpec* spec = find_kernel(kernel);
    if (!spec) throw GpuError(std::string("internal: kernel ") + kernel + " is not in the catalog");
    auto at = [&](const char* name, bool required) {
        int k = spec->find_array(name);
        if (k < 0 && required) throw GpuError(std::string("internal: catalog row ") + kernel + " has no array " + name);
        return k;
    };
    ArrayIndex ix;
    ix.Q = at("Q", true);
    ix.K = at("K", true);
    ix.V = at("V", true);
    ix.dO = at("dO", true);
    ix.O = at("O", false);  // only the D trick reads O
    ix.L = at("L", true);
    ix.D = at("D", true);
    ix.dQ = at("dQ", true);
    ix.dK = at("dK", true);
    ix.dV = at("dV", true);
    // The kernels read L and D and add into dQ as float, whatever the run's dtype.
    for (int k : {ix.L, ix.D, ix.dQ})
        if (!spec->arrays[static_cast<size_t>(k)].always_f32)
            throw GpuError(std::string("internal: catalog row ") + kernel + " must keep " + std::string(spec->arrays[static_cast<size_t>(k)].name) + " in fp32");
    return ix;
}

// Everything a kernel gets: one head's arrays are found from blockIdx.y.
template <typename T>
struct BackwardArgs {
    const T* Q;
    const T* K;
    const T* V;
    const T* dO;
    const T* O;      // null without the D trick
    const float* L;  // L = m + ln ℓ from the forward pass
    float* D;
    float* dQ;  // fp32: accumulated by atomic adds from every column block
    T* dK;
    T* dV;
    unsigned long long* counts;  // null in the timed variant
    ArrayIndex ix;
    int n, d, Br, Bc;
};

// ---- moving tiles: global (T) to shared (fp32) and back ----

// rows × d elements starting at `src` (row-major, stride d) into a tile of stride ld.
template <typename T>
__device__ void load_tile(float* dst, int ld, const T* src, int rows, int d) {
    for (int e = threadIdx.x; e < rows * d; e += kThreads) {
        int r = e / d, c = e - r * d;
        dst[r * ld + c] = to_float(src[static_cast<long long>(r) * d + c]);
    }
}

template <typename T>
__device__ void store_tile(T* dst, const float* src, int ld, int rows, int d) {
    for (int e = threadIdx.x; e < rows * d; e += kThreads) {
        int r = e / d, c = e - r * d;
        dst[static_cast<long long>(r) * d + c] = from_float<T>(src[r * ld + c]);
    }
}

__device__ void load_vector(float* dst, const float* src, int rows) {
    for (int r = threadIdx.x; r < rows; r += kThreads) dst[r] = src[r];
}

__device__ void zero_tile(float* dst, int ld, int rows) {
    for (int e = threadIdx.x; e < rows * ld; e += kThreads) dst[e] = 0.0f;
}

// ---- block-level products on shared-memory tiles ----

// C = A·B with C M×N and K terms, every thread of the block taking part; each result goes to
// epilogue(r, c, value) exactly once, from one thread, so an epilogue that adds into a tile
// needs no atomics. A is M×K, read as A[r·lda + k], or, with kTransA, stored K×M and read as
// A[k·lda + r] (Pᵀ, dSᵀ); B is K×N, read as B[k·ldb + c], or, with kTransB, stored N×K (Kᵀ, Vᵀ).
//
// Register micro-tiling: thread (tx, ty) of the 16×16 grid computes an R×R block of C, rows
// ty + 16·i and columns tx + 16·j. Strided rather than contiguous, so that the 16 threads of a
// half-warp read 16 consecutive columns of B (or, transposed, 16 rows at the odd stride): no
// bank conflicts; the two rows of A a warp reads are broadcasts. Per term a thread loads 2·R
// numbers for R² multiply-adds: R = 8 does 4 times the arithmetic per load of R = 2.
// Rows and columns past M, N are clamped to the last one, so the inner loop has no branches;
// their results are dropped.
template <int R, bool kTransA, bool kTransB, typename Epilogue>
__device__ void block_product_tiled(const float* A, int lda, const float* B, int ldb, int M, int N, int K, Epilogue epilogue) {
    const int tx = static_cast<int>(threadIdx.x) % kGrid, ty = static_cast<int>(threadIdx.x) / kGrid;
    for (int r0 = 0; r0 < M; r0 += kGrid * R) {
        for (int c0 = 0; c0 < N; c0 += kGrid * R) {
            int a_at[R], b_at[R];  // where row i of A's part and column j of B's start
#pragma unroll
            for (int i = 0; i < R; ++i) {
                int r = min(r0 + ty + kGrid * i, M - 1), c = min(c0 + tx + kGrid * i, N - 1);
                a_at[i] = kTransA ? r : r * lda;
                b_at[i] = kTransB ? c * ldb : c;
            }
            float acc[R][R] = {};
#pragma unroll 4
            for (int k = 0; k < K; ++k) {
                float a[R], b[R];
#pragma unroll
                for (int i = 0; i < R; ++i) {
                    a[i] = kTransA ? A[k * lda + a_at[i]] : A[a_at[i] + k];
                    b[i] = kTransB ? B[b_at[i] + k] : B[k * ldb + b_at[i]];
                }
#pragma unroll
                for (int i = 0; i < R; ++i)
#pragma unroll
                    for (int j = 0; j < R; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
#pragma unroll
            for (int i = 0; i < R; ++i)
#pragma unroll
                for (int j = 0; j < R; ++j) {
                    int r = r0 + ty + kGrid * i, c = c0 + tx + kGrid * j;
                    if (r < M && c < N) epilogue(r, c, acc[i][j]);
                }
        }
    }
}

// The micro-tile that covers an M×N result in the fewest issue cycles per thread: passes over C
// times (2·R shared-memory loads + R²/4 for the multiply-adds, which an SM issues four times as
// fast as loads). 128×128 takes R = 8 in one pass, 64×64 R = 4, 32×32 R = 2, and a 16-wide strip
// R = 1 rather than an 8×8 micro-tile that would compute seven rows in eight for nothing.
__device__ __forceinline__ int micro_tile(int M, int N) {
    int best = 1;
    float best_cost = FLT_MAX;
    for (int R = 1; R <= 8; R *= 2) {
        float passes = float(cdiv(M, kGrid * R) * cdiv(N, kGrid * R));
        float cost = passes * (2.0f * R + 0.25f * R * R);
        if (cost < best_cost) best = R, best_cost = cost;
    }
    return best;
}

// C = A·B for any M, N <= 128 (the block decides R once, the same in every thread).
template <bool kTransA, bool kTransB, typename Epilogue>
__device__ void block_product(const float* A, int lda, const float* B, int ldb, int M, int N, int K, Epilogue epilogue) {
    switch (micro_tile(M, N)) {
        case 8: block_product_tiled<8, kTransA, kTransB>(A, lda, B, ldb, M, N, K, epilogue); break;
        case 4: block_product_tiled<4, kTransA, kTransB>(A, lda, B, ldb, M, N, K, epilogue); break;
        case 2: block_product_tiled<2, kTransA, kTransB>(A, lda, B, ldb, M, N, K, epilogue); break;
        default: block_product_tiled<1, kTransA, kTransB>(A, lda, B, ldb, M, N, K, epilogue); break;
    }
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

// One block per (column block j, head): where K_j starts and how many rows it has, and one
// head's arrays.
struct ColumnBlock {
    int col0, cols;
    long long head_matrix, head_vector;  // h·n·d, h·n
};

template <typename T>
__device__ ColumnBlock column_block(const BackwardArgs<T>& a) {
    ColumnBlock b;
    b.col0 = static_cast<int>(blockIdx.x) * a.Bc;
    b.cols = min(a.Bc, a.n - b.col0);
    b.head_matrix = static_cast<long long>(blockIdx.y) * a.n * a.d;
    b.head_vector = static_cast<long long>(blockIdx.y) * a.n;
    return b;
}

// ---- version 1, first pass: D summed from P and dP (programs/attention/fa2_backward_no_d_trick.toy) ----

// D_i = Σ_j P_ij·dP_ij needs a whole row of P and dP, so D takes a pass of its own over K and
// V: block j recomputes P = e^(S − L) and dP = dO·Vᵀ for every Q tile and adds its part of each
// row's sum into D by an atomic add (the program's LOAD D, ADD, STORE D: one read and one write
// of D_i per tile). D starts at 0, the program's fill.
template <typename T, bool kCount>
__global__ void __launch_bounds__(kThreads) delta_from_p_kernel(BackwardArgs<T> a) {
    extern __shared__ float smem[];
    const TileLayout t(a.d, a.Br, a.Bc, false);
    float *k = smem + t.k, *v = smem + t.v, *q = smem + t.q, *dout = smem + t.dout, *p = smem + t.p, *pdp = smem + t.ds,
          *lse = smem + t.lse;
    const ColumnBlock b = column_block(a);
    const int d = a.d, ldd = t.ldd, ldc = t.ldc, lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;

    load_tile(k, ldd, a.K + b.head_matrix + static_cast<long long>(b.col0) * d, b.cols, d);
    load_tile(v, ldd, a.V + b.head_matrix + static_cast<long long>(b.col0) * d, b.cols, d);
    count_tile<kCount>(a.counts, a.ix.K, kRead, 1ll * b.cols * d);
    count_tile<kCount>(a.counts, a.ix.V, kRead, 1ll * b.cols * d);

    for (int row0 = 0; row0 < a.n; row0 += a.Br) {
        const int rows = min(a.Br, a.n - row0);
        __syncthreads();  // the previous tile's readers are done with q, dout, p, pdp
        load_tile(q, ldd, a.Q + b.head_matrix + static_cast<long long>(row0) * d, rows, d);
        load_tile(dout, ldd, a.dO + b.head_matrix + static_cast<long long>(row0) * d, rows, d);
        load_vector(lse, a.L + b.head_vector + row0, rows);
        count_tile<kCount>(a.counts, a.ix.Q, kRead, 1ll * rows * d);
        count_tile<kCount>(a.counts, a.ix.dO, kRead, 1ll * rows * d);
        count_tile<kCount>(a.counts, a.ix.L, kRead, rows);
        __syncthreads();

        // P = e^(S − L), S = Q_i·K_jᵀ
        block_product<false, true>(q, ldd, k, ldd, rows, b.cols, d, [&](int r, int c, float s) { p[r * ldc + c] = expf(s - lse[r]); });
        __syncthreads();
        // P ∘ dP, dP = dO_i·V_jᵀ
        block_product<false, true>(dout, ldd, v, ldd, rows, b.cols, d,
                                   [&](int r, int c, float dp) { pdp[r * ldc + c] = p[r * ldc + c] * dp; });
        __syncthreads();
        // D_i += rowsum(P ∘ dP): a warp per row
        for (int r = warp; r < rows; r += kWarps) {
            float part = 0.0f;
            for (int c = lane; c < b.cols; c += 32) part += pdp[r * ldc + c];
            part = warp_sum(part);
            if (lane == 0) atomicAdd(&a.D[b.head_vector + row0 + r], part);
        }
        count_tile<kCount>(a.counts, a.ix.D, kRead, rows);
        count_tile<kCount>(a.counts, a.ix.D, kWrite, rows);
    }
}

// ---- version 2, first pass: the D trick (programs/attention/fa2_backward.toy) ----

// What changed: D_i = Σ_j P_ij·dP_ij = Σ_j P_ij·(dO_i·V_j) = dO_i·(Σ_j P_ij·V_j) = dO_i·O_i, so D
// is rowsum(dO ∘ O), from one pass over dO and O that needs no P. What it gained: the first
// pass over K and V and its two n²·d products are gone. This pass moves 2·n·d + n elements
// (dO, O in; D out) where version 1's moved 2·n·d + 2·n·d·Tc + 3·n·Tc (K, V; Q, dO per column
// block; L, and D read and written per tile). One block per Q tile of Br rows (the program's
// loop), a warp per row, kDeltaRows rows of a warp at once: the program loads the whole tile
// before it multiplies, and so does this, near enough: a warp's loads of its rows are in flight
// together (the pointers are __restrict__, so none waits for the last row's store of D). A row
// at a time, every warp waited for DRAM twice a row, 16 times in all at Br = d = 64: 14.2 µs
// for n = 1024 and 4 heads, 10.4 µs this way (medians of 20 on the H100; loading every element
// into registers first, fully unrolled, measured no faster: 12.3 µs).
constexpr int kDeltaRows = 4;
template <typename T, bool kCount>
__global__ void __launch_bounds__(kThreads) delta_kernel(BackwardArgs<T> a) {
    const int row0 = static_cast<int>(blockIdx.x) * a.Br, rows = min(a.Br, a.n - row0), d = a.d;
    const long long head_matrix = static_cast<long long>(blockIdx.y) * a.n * d, head_vector = static_cast<long long>(blockIdx.y) * a.n;
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const T* __restrict__ O = a.O + head_matrix + static_cast<long long>(row0) * d;
    const T* __restrict__ dO = a.dO + head_matrix + static_cast<long long>(row0) * d;
    float* __restrict__ D = a.D + head_vector + row0;
    count_tile<kCount>(a.counts, a.ix.O, kRead, 1ll * rows * d);
    count_tile<kCount>(a.counts, a.ix.dO, kRead, 1ll * rows * d);
    count_tile<kCount>(a.counts, a.ix.D, kWrite, rows);
    for (int r0 = warp; r0 < rows; r0 += kDeltaRows * kWarps) {
        float sum[kDeltaRows] = {};
#pragma unroll 4
        for (int c = lane; c < d; c += 32)
#pragma unroll
            for (int k = 0; k < kDeltaRows; ++k) {
                const int r = r0 + k * kWarps;
                if (r < rows) sum[k] += to_float(dO[static_cast<long long>(r) * d + c]) * to_float(O[static_cast<long long>(r) * d + c]);
            }
#pragma unroll
        for (int k = 0; k < kDeltaRows; ++k) {
            const int r = r0 + k * kWarps;
            const float total = warp_sum(sum[k]);
            if (lane == 0 && r < rows) D[r] = total;
        }
    }
}

// ---- the gradient pass, both versions ----

// One block per (column block j, head), the programs' second loop nest: K_j, V_j read once,
// dK_j, dV_j accumulated in shared memory over every Q tile i and written once. Per tile:
//   P = e^(S − L)          S = Q_i·K_jᵀ, with the forward pass's L: no max, no sum, no division
//   dV_j += Pᵀ·dO_i
//   dS = P ∘ (dP − D_i)    dP = dO_i·V_jᵀ
//   dQ_i += dS·K_j         atomic adds to the fp32 dQ: other column blocks update the same rows
//   dK_j += dSᵀ·Q_i
// Products that neither read the other's result nor write what the other reads run back to
// back without a barrier: dV and dP, then dQ and dK.
template <typename T, bool kCount>
__global__ void __launch_bounds__(kThreads) backward_kernel(BackwardArgs<T> a) {
    extern __shared__ float smem[];
    const TileLayout t(a.d, a.Br, a.Bc, true);
    float *k = smem + t.k, *v = smem + t.v, *dk = smem + t.dk, *dv = smem + t.dv, *q = smem + t.q, *dout = smem + t.dout,
          *p = smem + t.p, *ds = smem + t.ds, *lse = smem + t.lse, *delta = smem + t.delta;
    const ColumnBlock b = column_block(a);
    const int d = a.d, ldd = t.ldd, ldc = t.ldc;

    load_tile(k, ldd, a.K + b.head_matrix + static_cast<long long>(b.col0) * d, b.cols, d);
    load_tile(v, ldd, a.V + b.head_matrix + static_cast<long long>(b.col0) * d, b.cols, d);
    count_tile<kCount>(a.counts, a.ix.K, kRead, 1ll * b.cols * d);
    count_tile<kCount>(a.counts, a.ix.V, kRead, 1ll * b.cols * d);
    zero_tile(dk, ldd, b.cols);
    zero_tile(dv, ldd, b.cols);

    for (int row0 = 0; row0 < a.n; row0 += a.Br) {
        const int rows = min(a.Br, a.n - row0);
        __syncthreads();  // the previous tile's readers are done with q, dout, p, ds
        load_tile(q, ldd, a.Q + b.head_matrix + static_cast<long long>(row0) * d, rows, d);
        load_tile(dout, ldd, a.dO + b.head_matrix + static_cast<long long>(row0) * d, rows, d);
        load_vector(lse, a.L + b.head_vector + row0, rows);
        load_vector(delta, a.D + b.head_vector + row0, rows);
        count_tile<kCount>(a.counts, a.ix.Q, kRead, 1ll * rows * d);
        count_tile<kCount>(a.counts, a.ix.dO, kRead, 1ll * rows * d);
        count_tile<kCount>(a.counts, a.ix.L, kRead, rows);
        count_tile<kCount>(a.counts, a.ix.D, kRead, rows);
        __syncthreads();

        block_product<false, true>(q, ldd, k, ldd, rows, b.cols, d, [&](int r, int c, float s) { p[r * ldc + c] = expf(s - lse[r]); });
        __syncthreads();
        block_product<true, false>(p, ldc, dout, ldd, b.cols, d, rows, [&](int r, int c, float x) { dv[r * ldd + c] += x; });
        block_product<false, true>(dout, ldd, v, ldd, rows, b.cols, d,
                                   [&](int r, int c, float dp) { ds[r * ldc + c] = p[r * ldc + c] * (dp - delta[r]); });
        __syncthreads();
        float* dq = a.dQ + b.head_matrix + static_cast<long long>(row0) * d;
        block_product<false, false>(ds, ldc, k, ldd, rows, d, b.cols, [&](int r, int c, float x) { atomicAdd(&dq[r * d + c], x); });
        count_tile<kCount>(a.counts, a.ix.dQ, kRead, 1ll * rows * d);  // the program's LOAD dQ_i ...
        count_tile<kCount>(a.counts, a.ix.dQ, kWrite, 1ll * rows * d);  // ... and STORE dQ_i
        block_product<true, false>(ds, ldc, q, ldd, b.cols, d, rows, [&](int r, int c, float x) { dk[r * ldd + c] += x; });
    }
    __syncthreads();
    store_tile(a.dK + b.head_matrix + static_cast<long long>(b.col0) * d, dk, ldd, b.cols, d);
    store_tile(a.dV + b.head_matrix + static_cast<long long>(b.col0) * d, dv, ldd, b.cols, d);
    count_tile<kCount>(a.counts, a.ix.dK, kWrite, 1ll * b.cols * d);
    count_tile<kCount>(a.counts, a.ix.dV, kWrite, 1ll * b.cols * d);
}

// ---- launchers ----

template <typename T>
BackwardArgs<T> backward_args(const StageArgs& s, const ArrayIndex& ix) {
    auto in = [&](int k) { return k < 0 ? nullptr : static_cast<const T*>(s.arrays[k]); };
    auto out = [&](int k) { return static_cast<T*>(s.arrays[k]); };
    auto f32 = [&](int k) { return static_cast<float*>(s.arrays[k]); };
    return BackwardArgs<T>{in(ix.Q),   in(ix.K),     in(ix.V),    in(ix.dO),  in(ix.O),
                           f32(ix.L),  f32(ix.D),    f32(ix.dQ),  out(ix.dK), out(ix.dV),
                           s.counts,   ix,           static_cast<int>(s.params[0]), static_cast<int>(s.params[1]),
                           static_cast<int>(s.params[2]), static_cast<int>(s.params[3])};
}

// What a block holds, for the refusal: which parameter to lower.
constexpr const char* kGradientTiles =
    "lower Bc, Br or d: a block holds K_j, V_j, dK_j, dV_j (Bc×d), Q_i, dO_i (Br×d) and P, dS (Br×Bc), all fp32";
constexpr const char* kDeltaTiles = "lower Bc, Br or d: a block holds K_j, V_j (Bc×d), Q_i, dO_i (Br×d) and P, P∘dP (Br×Bc), all fp32";

// A kernel over column blocks (the gradient pass, or version 1's D pass): one block per
// (j, head), shared memory sized from Br, Bc, d and refused up front when the device has less.
template <typename T, typename Kernel>
void launch_over_columns(Kernel kernel, bool gradients, const StageArgs& s, const BackwardArgs<T>& a, const char* name) {
    const long long bytes = TileLayout(a.d, a.Br, a.Bc, gradients).bytes();
    require_shared_memory(reinterpret_cast<const void*>(kernel), bytes, s, name, gradients ? kGradientTiles : kDeltaTiles);
    if (s.plan_only) return;
    dim3 grid(static_cast<unsigned>(cdiv(a.n, a.Bc)), static_cast<unsigned>(s.heads));
    note_residency(s, kernel, kThreads, static_cast<size_t>(bytes));
    kernel<<<grid, kThreads, static_cast<size_t>(bytes), s.stream>>>(a);
    check_launch(name);
}

// The D trick's pass: one block per Q tile and head.
template <typename T, bool kCount>
void launch_delta(const StageArgs& s, const BackwardArgs<T>& a) {
    if (s.plan_only) return;
    dim3 grid(static_cast<unsigned>(cdiv(a.n, a.Br)), static_cast<unsigned>(s.heads));
    note_residency(s, delta_kernel<T, kCount>, kThreads, 0);
    delta_kernel<T, kCount><<<grid, kThreads, 0, s.stream>>>(a);
    check_launch("fa2_backward (delta)");
}

// fa2_backward: stage 0 "delta" (D = rowsum(dO ∘ O)), stage 1 "fa2_backward".
void launch_fa2_backward(int stage, const StageArgs& s) {
    const ArrayIndex ix = array_index("fa2_backward");
    with_dtype(s.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_counting(s, [&](auto counting) {
            constexpr bool kCount = decltype(counting)::value;
            const BackwardArgs<T> a = backward_args<T>(s, ix);
            if (stage == 0) launch_delta<T, kCount>(s, a);
            else launch_over_columns<T>(backward_kernel<T, kCount>, true, s, a, "fa2_backward");
        });
    });
}

// fa2_backward_no_d_trick: stage 0 "delta" (D summed from P and dP over K/V tiles), stage 1
// "fa2_backward" (the same gradient pass).
void launch_fa2_backward_no_d_trick(int stage, const StageArgs& s) {
    const ArrayIndex ix = array_index("fa2_backward_no_d_trick");
    with_dtype(s.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_counting(s, [&](auto counting) {
            constexpr bool kCount = decltype(counting)::value;
            const BackwardArgs<T> a = backward_args<T>(s, ix);
            if (stage == 0) launch_over_columns<T>(delta_from_p_kernel<T, kCount>, false, s, a, "fa2_backward_no_d_trick (delta)");
            else launch_over_columns<T>(backward_kernel<T, kCount>, true, s, a, "fa2_backward_no_d_trick");
        });
    });
}

}  // namespace

// Stage "delta" for a version of fa2_backward (fa2_backward_mma, gpu/kernels/attention_backward_tensor_core.cu):
// the same D = rowsum(dO ∘ O) pass, counted into the arrays of that version's catalog row.
void launch_fa2_backward_delta(const StageArgs& s, const char* kernel) {
    const ArrayIndex ix = array_index(kernel);
    with_dtype(s.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_counting(s, [&](auto counting) { launch_delta<T, decltype(counting)::value>(s, backward_args<T>(s, ix)); });
    });
}

extern const KernelEntry kAttentionBackwardKernels[] = {
    {"fa2_backward_no_d_trick", launch_fa2_backward_no_d_trick},
    {"fa2_backward", launch_fa2_backward},
};
extern const int kAttentionBackwardKernelCount = sizeof(kAttentionBackwardKernels) / sizeof(kAttentionBackwardKernels[0]);

}  // namespace toysim::gpu
