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
//      twice. 0.236 ms + 0.549 ms = 0.785 ms.
//   2. fa2_backward: D = rowsum(dO ∘ O) from one pass over dO and O (the D trick), then the same
//      gradient pass: K and V are read once and the first pass's two n²·d products are gone.
//      0.0066 ms + 0.555 ms = 0.561 ms, 19.1 TFLOP/s at the seeds' 10·n²·d.
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
#include <cstdint>
#include <type_traits>
#include <string>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/shared_tiles.cuh"

namespace toysim::gpu {

namespace {

// ---- the block: 256 threads ----

constexpr int kThreads = kBlockThreads;
constexpr int kWarps = kThreads / 32;
// Two blocks an SM for the passes over a block's tiles (at most 128 registers a thread): what
// ptxas gave them unasked (99 to 120 on sm_90), said so that the time model reads it (note_launch).
// The D pass (delta_kernel, 32 to 41 registers) asks nothing: the model estimates its registers.
constexpr int kGradientMinBlocks = 2;

// ---- where the tiles live in shared memory ----

// Every tile is fp32 whatever the storage type, so the products read one kind of number, 16
// bytes at a time. Rows of d (K, V, dK, dV, Q, dO) and of Bc (P, dS) are padded to a multiple
// of 4 elements and to an odd number of fours (row_stride): a product reads 16 consecutive
// rows at the same column at once (K_j in Q·K_jᵀ), and that stride puts them in different
// banks. Tiles have ⌈rows/4⌉·4 rows, the products' reach.
struct TileLayout {
    int ldd = 0, ldc = 0;  // row strides of the d-wide and the Bc-wide tiles, in floats
    // Offsets in floats, all multiples of 4; dk, dv only in the gradient pass, delta only there too.
    long long k = 0, v = 0, dk = 0, dv = 0, q = 0, dout = 0, p = 0, ds = 0, lse = 0, delta = 0, total = 0;

    __host__ __device__ TileLayout(int d, int Br, int Bc, bool gradients) : ldd(row_stride(d)), ldc(row_stride(Bc)) {
        long long at = 0;
        auto take = [&](long long floats) {
            long long here = at;
            at += (floats + 3) / 4 * 4;
            return here;
        };
        const int br = pad4(Br), bc = pad4(Bc);
        k = take(1ll * bc * ldd);
        v = take(1ll * bc * ldd);
        if (gradients) {
            dk = take(1ll * bc * ldd);
            dv = take(1ll * bc * ldd);
        }
        q = take(1ll * br * ldd);
        dout = take(1ll * br * ldd);
        p = take(1ll * br * ldc);
        ds = take(1ll * br * ldc);
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

// rows × d elements starting at `src` (row-major, stride d) into a tile of stride ld, and
// zeros up to ⌈rows/4⌉·4 rows and ⌈d/4⌉·4 columns: the terms a product reads past the slice.
template <typename T>
__device__ void load_rows(float* dst, int ld, const T* src, int rows, int d) {
    load_tile(dst, ld, src, d, rows, d, pad4(rows), pad4(d));
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
// The forward kernels' convention (attention_forward.cu, section 2), which the h100 machine's
// CUDA-core product is measured on (docs/gpu.md): a thread owns 4×4 patches of C in registers
// and, per four terms, loads each operand as four 16-byte words from shared memory, 8 loads for
// 64 multiply-adds. An operand stored with its terms contiguous (A; B with kTransB) gives
// four terms of one patch row in a load, and its patch rows are strided (row pr + gm·a), so
// neighbouring lanes read neighbouring rows, in different banks by the row stride. An operand
// stored the other way (Pᵀ, dSᵀ; dO, Q and K_j as B) gives one term of four neighbouring rows
// in a load, so its patch rows are neighbours (row 4·pr + a). The version before, a 16×16
// grid of threads loading one number at a time (8 loads for 16 multiply-adds at 4×4), took
// 104.4 M warp instructions and 0.356 ms where this takes 72.0 M and 0.272 ms (n = 1024,
// d = 64, 4 heads, fp16; Nsight Compute, and medians of 20 on the H100). A product with fewer
// patches than threads (S at Br = Bc = 32: 64) leaves threads idle; splitting its terms
// among lanes, summed by shuffles, measured no faster (d = 128, Br = Bc = 32: 0.229 against
// 0.241 ms; d = 32, Br = Bc = 64: 0.776 against 0.742).
//
// Reach: rows and columns of C up to ⌈M/4⌉·4 and ⌈N/4⌉·4, terms up to ⌈K/4⌉·4, all inside the
// tiles (TileLayout). Past the real K both operands hold zeros (the loads write them, the
// epilogues of P and dS too), so the extra terms add nothing; results past M, N are dropped.
template <bool kTransA, bool kTransB, typename Epilogue>
__device__ void block_product(const float* A, int lda, const float* B, int ldb, int M, int N, int K, Epilogue epilogue) {
    const int gm = (M + 3) / 4, gn = (N + 3) / 4, terms = pad4(K);
    for (int patch = static_cast<int>(threadIdx.x); patch < gm * gn; patch += kThreads) {
        const int pr = patch / gn, pc = patch % gn;
        auto row = [&](int a) { return kTransA ? 4 * pr + a : pr + gm * a; };
        auto col = [&](int b) { return kTransB ? pc + gn * b : 4 * pc + b; };
        float acc[4][4] = {};
#pragma unroll 2
        for (int k = 0; k < terms; k += 4) {
            float x[4][4], y[4][4];  // x[a][t] = A(row a, k + t), y[b][t] = B(k + t, col b)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const float4 u = kTransA ? load4(A + (k + i) * lda + 4 * pr) : load4(A + row(i) * lda + k);
                const float4 w = kTransB ? load4(B + col(i) * ldb + k) : load4(B + (k + i) * ldb + 4 * pc);
                const float uu[4] = {u.x, u.y, u.z, u.w}, ww[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    if (kTransA) x[j][i] = uu[j];
                    else x[i][j] = uu[j];
                    if (kTransB) y[i][j] = ww[j];
                    else y[j][i] = ww[j];
                }
            }
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
                for (int b = 0; b < 4; ++b)
#pragma unroll
                    for (int t = 0; t < 4; ++t) acc[a][b] = fmaf(x[a][t], y[b][t], acc[a][b]);
        }
#pragma unroll
        for (int a = 0; a < 4; ++a)
#pragma unroll
            for (int b = 0; b < 4; ++b)
                if (row(a) < M && col(b) < N) epilogue(row(a), col(b), acc[a][b]);
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
__global__ void __launch_bounds__(kThreads, kGradientMinBlocks) delta_from_p_kernel(BackwardArgs<T> a) {
    extern __shared__ __align__(16) float smem[];
    const TileLayout t(a.d, a.Br, a.Bc, false);
    float *k = smem + t.k, *v = smem + t.v, *q = smem + t.q, *dout = smem + t.dout, *p = smem + t.p, *pdp = smem + t.ds,
          *lse = smem + t.lse;
    const ColumnBlock b = column_block(a);
    const int d = a.d, ldd = t.ldd, ldc = t.ldc, lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;

    load_rows(k, ldd, a.K + b.head_matrix + static_cast<long long>(b.col0) * d, b.cols, d);
    load_rows(v, ldd, a.V + b.head_matrix + static_cast<long long>(b.col0) * d, b.cols, d);
    count_tile<kCount>(a.counts, a.ix.K, kRead, 1ll * b.cols * d);
    count_tile<kCount>(a.counts, a.ix.V, kRead, 1ll * b.cols * d);

    for (int row0 = 0; row0 < a.n; row0 += a.Br) {
        const int rows = min(a.Br, a.n - row0);
        __syncthreads();  // the previous tile's readers are done with q, dout, p, pdp
        load_rows(q, ldd, a.Q + b.head_matrix + static_cast<long long>(row0) * d, rows, d);
        load_rows(dout, ldd, a.dO + b.head_matrix + static_cast<long long>(row0) * d, rows, d);
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
// block; L, and D read and written per tile).
//
// One block per Q tile of Br rows (the program's loop). The program loads the whole tile before
// it multiplies, and so does this: a lane reads 16 bytes of O and of dO at once (8 halves or 4
// floats), a row takes the fewest lanes that cover it (8 at d = 64 in fp16, so a warp reads 4
// rows with one instruction), and a thread's loads for kDeltaRows rows are in flight together
// (the pointers are __restrict__, so none waits for a store of D). Nsight Compute on the H100,
// n = 4096, d = 64, Br = 128, 8 heads: the version before, a warp per row and a 2-byte element a
// lane, executed 2.41 M warp instructions, 21 cycles apart in each warp (79% of them waiting
// for a load), 20.4 µs between events where the model predicts 5.7.
constexpr int kDeltaRows = 4;

// Two halves (or bfloat16s) in a 32-bit word, as floats.
__device__ __forceinline__ float2 word_to_float2(unsigned w, __half) { return __half22float2(*reinterpret_cast<const __half2*>(&w)); }
__device__ __forceinline__ float2 word_to_float2(unsigned w, __nv_bfloat16) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
}

// x·y over kVector consecutive elements: 16 bytes (aligned), or one element.
template <int kVector, typename T>
__device__ __forceinline__ float dot_vector(const T* __restrict__ x, const T* __restrict__ y) {
    if constexpr (kVector == 1) {
        return to_float(*x) * to_float(*y);
    } else if constexpr (std::is_same_v<T, float>) {
        const float4 a = *reinterpret_cast<const float4*>(x), b = *reinterpret_cast<const float4*>(y);
        return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    } else {
        const uint4 a = *reinterpret_cast<const uint4*>(x), b = *reinterpret_cast<const uint4*>(y);
        const unsigned aw[4] = {a.x, a.y, a.z, a.w}, bw[4] = {b.x, b.y, b.z, b.w};
        float sum = 0.0f;
#pragma unroll
        for (int w = 0; w < 4; ++w) {
            const float2 af = word_to_float2(aw[w], T{}), bf = word_to_float2(bw[w], T{});
            sum += af.x * bf.x + af.y * bf.y;
        }
        return sum;
    }
}

// D[r] = Σ_c O[r][c]·dO[r][c] for r < rows (rows of d elements, d a multiple of kVector).
template <int kVector, typename T>
__device__ void row_dots(const T* __restrict__ O, const T* __restrict__ dO, float* __restrict__ D, int rows, int d) {
    const int per_row = d / kVector;
    int lanes = 1;  // lanes a row takes: a power of two, so that a row's lanes sit in one warp
    while (lanes < per_row && lanes < 32) lanes *= 2;
    const int groups = kThreads / lanes, group = static_cast<int>(threadIdx.x) / lanes, lane = static_cast<int>(threadIdx.x) % lanes;
    // Every thread runs every iteration (the bounds are the block's), so the shuffles below
    // always have all 32 lanes.
    for (int base = 0; base < rows; base += groups * kDeltaRows) {
        float sum[kDeltaRows] = {};
        for (int c0 = 0; c0 < per_row; c0 += lanes) {
            const int c = (c0 + lane) * kVector;
#pragma unroll
            for (int k = 0; k < kDeltaRows; ++k) {
                const int r = base + group + k * groups;
                if (r < rows && c < d) sum[k] += dot_vector<kVector>(O + r * d + c, dO + r * d + c);
            }
        }
#pragma unroll
        for (int k = 0; k < kDeltaRows; ++k) {
            float total = sum[k];
            for (int offset = lanes / 2; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset);
            const int r = base + group + k * groups;
            if (lane == 0 && r < rows) D[r] = total;
        }
    }
}

template <typename T, bool kCount>
__global__ void __launch_bounds__(kThreads) delta_kernel(BackwardArgs<T> a) {
    const int row0 = static_cast<int>(blockIdx.x) * a.Br, rows = min(a.Br, a.n - row0), d = a.d;
    const long long head_matrix = static_cast<long long>(blockIdx.y) * a.n * d, head_vector = static_cast<long long>(blockIdx.y) * a.n;
    const T* O = a.O + head_matrix + static_cast<long long>(row0) * d;
    const T* dO = a.dO + head_matrix + static_cast<long long>(row0) * d;
    count_tile<kCount>(a.counts, a.ix.O, kRead, 1ll * rows * d);
    count_tile<kCount>(a.counts, a.ix.dO, kRead, 1ll * rows * d);
    count_tile<kCount>(a.counts, a.ix.D, kWrite, rows);
    constexpr int kVector = 16 / sizeof(T);
    // Rows of a multiple of 16 bytes start 16-byte aligned (the arrays do: cudaMalloc).
    const bool vectors = d % kVector == 0 && (reinterpret_cast<std::uintptr_t>(O) | reinterpret_cast<std::uintptr_t>(dO)) % 16 == 0;
    if (vectors) row_dots<kVector>(O, dO, a.D + head_vector + row0, rows, d);
    else row_dots<1>(O, dO, a.D + head_vector + row0, rows, d);
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
__global__ void __launch_bounds__(kThreads, kGradientMinBlocks) backward_kernel(BackwardArgs<T> a) {
    extern __shared__ __align__(16) float smem[];
    const TileLayout t(a.d, a.Br, a.Bc, true);
    float *k = smem + t.k, *v = smem + t.v, *dk = smem + t.dk, *dv = smem + t.dv, *q = smem + t.q, *dout = smem + t.dout,
          *p = smem + t.p, *ds = smem + t.ds, *lse = smem + t.lse, *delta = smem + t.delta;
    const ColumnBlock b = column_block(a);
    const int d = a.d, ldd = t.ldd, ldc = t.ldc;

    load_rows(k, ldd, a.K + b.head_matrix + static_cast<long long>(b.col0) * d, b.cols, d);
    load_rows(v, ldd, a.V + b.head_matrix + static_cast<long long>(b.col0) * d, b.cols, d);
    count_tile<kCount>(a.counts, a.ix.K, kRead, 1ll * b.cols * d);
    count_tile<kCount>(a.counts, a.ix.V, kRead, 1ll * b.cols * d);
    zero_tile(dk, ldd, b.cols);
    zero_tile(dv, ldd, b.cols);

    for (int row0 = 0; row0 < a.n; row0 += a.Br) {
        const int rows = min(a.Br, a.n - row0);
        __syncthreads();  // the previous tile's readers are done with q, dout, p, ds
        load_rows(q, ldd, a.Q + b.head_matrix + static_cast<long long>(row0) * d, rows, d);
        load_rows(dout, ldd, a.dO + b.head_matrix + static_cast<long long>(row0) * d, rows, d);
        load_vector(lse, a.L + b.head_vector + row0, rows);
        load_vector(delta, a.D + b.head_vector + row0, rows);
        count_tile<kCount>(a.counts, a.ix.Q, kRead, 1ll * rows * d);
        count_tile<kCount>(a.counts, a.ix.dO, kRead, 1ll * rows * d);
        count_tile<kCount>(a.counts, a.ix.L, kRead, rows);
        count_tile<kCount>(a.counts, a.ix.D, kRead, rows);
        __syncthreads();

        // P and dS to their padded size, zeros past the tile: the terms dV, dQ and dK read past it.
        const int rows4 = pad4(rows), cols4 = pad4(b.cols);
        block_product<false, true>(q, ldd, k, ldd, rows4, cols4, d, [&](int r, int c, float s) {
            p[r * ldc + c] = r < rows && c < b.cols ? expf(s - lse[r]) : 0.0f;
        });
        __syncthreads();
        block_product<true, false>(p, ldc, dout, ldd, b.cols, d, rows, [&](int r, int c, float x) { dv[r * ldd + c] += x; });
        block_product<false, true>(dout, ldd, v, ldd, rows4, cols4, d, [&](int r, int c, float dp) {
            ds[r * ldc + c] = r < rows && c < b.cols ? p[r * ldc + c] * (dp - delta[r]) : 0.0f;
        });
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
    note_launch(s, kernel, kThreads, static_cast<size_t>(bytes), kGradientMinBlocks);
    if (s.plan_only) return;
    dim3 grid(static_cast<unsigned>(cdiv(a.n, a.Bc)), static_cast<unsigned>(s.heads));
    kernel<<<grid, kThreads, static_cast<size_t>(bytes), s.stream>>>(a);
    check_launch(name);
}

// The D trick's pass: one block per Q tile and head.
template <typename T, bool kCount>
void launch_delta(const StageArgs& s, const BackwardArgs<T>& a) {
    note_launch(s, delta_kernel<T, kCount>, kThreads, 0, 0);
    if (s.plan_only) return;
    dim3 grid(static_cast<unsigned>(cdiv(a.n, a.Br)), static_cast<unsigned>(s.heads));
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
