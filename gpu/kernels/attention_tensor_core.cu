// FlashAttention-2 forward on the tensor cores: numbered versions, each a step from the last,
// all the CUDA twins of programs/attention/fa2.toy at that version's tile shape.
//
//   fa2_forward       gpu/kernels/attention_forward.cu  v0: CUDA cores, fp32 tiles in shared memory
//   fa2_v1_wmma       this file                 v1: tensor cores through WMMA
//   fa2_v2_mma        this file                 v2: mma.sync + ldmatrix, softmax in registers,
//                                                   cp.async double buffering, swizzled tiles
//   fa2_v3_mma        this file                 v3: 32 rows a warp (a K/V fragment feeds two
//                                                   mma), ex2 softmax
//   fa2_v4_wgmma      gpu/kernels/attention_hopper.cu   v4: wgmma from shared memory, TMA, a producer
//                                                   warpgroup, softmax overlapped with P·V (sm_90a)
//
// Every version keeps fa2.toy's loop order (one block per Q tile × head; K/V tiles stream
// past; O normalized once and written once; L = m + ln ℓ written once), so its counted
// global-memory traffic equals the simulator's for fa2.toy at the same B_r, B_c, times the
// heads: Q read once per Q tile, K and V once per (Q tile, K/V tile), O and L written once.
// A version runs with fa2.toy's arrays and parameters through --kernel:
//
//   toysim gpu run programs/attention/fa2.toy --kernel fa2_v2_mma
//       --set n=4096 --set d=64 --set Br=128 --set Bc=64 --heads 64 --dtype fp16
//
// which checks O and L against the CPU reference and the counts against count_traffic.
// Inputs are fp16 or bf16, products accumulate in fp32 (P is rounded to the input type before
// P·V, as in FlashAttention-2). d is 64 or 128; n is anything (the last K/V tile's missing
// columns are masked to −∞, the last Q tile's missing rows are computed on zeros and not
// stored). No 1/√d scale: fa2.toy has none (fold it into Q).
//
// What each step gained, on an H100 (fp16, n = 4096, 64 heads, one same-run benchmark beside
// SDPA flash at 292.8 and cuDNN at 460.9 TFLOP/s at d = 64, 349.5 and 622.4 at d = 128;
// gpu/README.md has the table and the Nsight Compute figures behind it):
//   v0 fa2_forward   22.2 TFLOP/s (d = 64)   23.4 (d = 128)   CUDA cores
//   v1 fa2_v1_wmma   56.9                    60.4             tensor pipe 9% busy: S, P̃, O
//                                                             round-trip through shared memory
//   v2 fa2_v2_mma   231.1 (0.79× flash)     242.1 (0.69×)     tensor pipe 36%, no bank conflicts
//   v3 fa2_v3_mma   286.3 (0.98× flash)     296.7 (0.85×)     tensor pipe 45%
//
// Needs sm_80 or later (mma.sync with bf16, cp.async, ldmatrix): every architecture the
// default build lists (80, 90). Hopper's wgmma, TMA and warp specialization are v4, in
// gpu/kernels/attention_hopper.cu (sm_90a only).
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/mma.cuh"

namespace toysim::gpu {

namespace {

enum Fa2Array { kQ, kK, kV, kO, kL };

struct Shape {
    int n, d, Br, Bc, Tr, Tc;
};

// The parameters n, d, Br, Bc; or, causal (n, d, B), square tiles Br = Bc = B.
Shape shape_of(const StageArgs& args, const char* kernel, bool square = false) {
    Shape s{};
    s.n = int(args.params[0]);
    s.d = int(args.params[1]);
    s.Br = int(args.params[2]);
    s.Bc = int(args.params[square ? 2 : 3]);
    require_tensor_core_launch(args, kernel);
    s.Tr = int(cdiv(s.n, s.Br));
    s.Tc = int(cdiv(s.n, s.Bc));
    return s;
}

// ---------------------------------------------------------------------------------------
// v1: tensor cores through WMMA.
//
// What changed from v0 (fa2_forward): the tiles stay in the input type (fp16/bf16) in shared
// memory, and both products run as 16×16×16 WMMA fragments with fp32 accumulators. Each of
// the 4 warps owns 16 rows of the 64-row Q tile (FlashAttention-2's "split Q across warps"),
// so between the products a warp touches only its own rows and no block barrier is needed.
// WMMA fragments hide which element a lane holds, so everything row-wise goes through shared
// memory: S is stored (fp32), the warp's lanes take its rows' max and sum (2 lanes per row)
// and write P̃ (input type) and rescale their rows of O, which lives in shared memory (fp32)
// and is loaded into accumulator fragments, updated by P̃·V, and stored back, tile after tile.
// What it gained: 2.5× over v0 (56.9 against 22.2 TFLOP/s at n = 4096, d = 64, fp16).
// What it leaves: the tensor pipe is busy 9% of the time. S, P̃ and O make a shared-memory
// round trip per tile (70 M bank conflicts at that shape: two lanes a row walk padded fp32
// rows), and loads are synchronous (the SM waits for each K/V tile).

namespace wmma = nvcuda::wmma;

constexpr int kV1Warps = 4, kV1Threads = 32 * kV1Warps, kV1Br = 16 * kV1Warps, kV1Bc = 64;

// Row strides (elements), padded so that WMMA's 32-byte alignment holds at every 16th row
// and rows start in different banks.
template <int kD> constexpr int kV1Ld = kD + 8;         // Q, K, V (input type)
constexpr int kV1LdS = kV1Bc + 4;                       // S (fp32)
constexpr int kV1LdP = kV1Bc + 8;                       // P̃ (input type)
template <int kD> constexpr int kV1LdO = kD + 4;        // O (fp32)

template <typename T, int kD>
struct V1Layout {
    static constexpr long long q = 0;
    static constexpr long long k = q + (long long)kV1Br * kV1Ld<kD> * sizeof(T);
    static constexpr long long v = k + (long long)kV1Bc * kV1Ld<kD> * sizeof(T);
    static constexpr long long s = v + (long long)kV1Bc * kV1Ld<kD> * sizeof(T);
    static constexpr long long p = s + (long long)kV1Br * kV1LdS * sizeof(float);
    static constexpr long long o = p + (long long)kV1Br * kV1LdP * sizeof(T);
    static constexpr long long m = o + (long long)kV1Br * kV1LdO<kD> * sizeof(float);
    static constexpr long long l = m + kV1Br * sizeof(float);
    static constexpr long long bytes = l + kV1Br * sizeof(float);
};

// rows × kD elements of a row-major global tile into shared memory (stride ld), 16 bytes per
// thread per step; rows from `valid` on are zero (past n: never read from global memory).
template <typename T, int kD, int kThreads>
__device__ __forceinline__ void load_rows(T* dst, int ld, const T* src, int rows, int valid) {
    constexpr int kChunks = kD / 8;  // 16-byte chunks per row
    for (int c = threadIdx.x; c < rows * kChunks; c += kThreads) {
        const int r = c / kChunks, x = c % kChunks * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (r < valid) v = *reinterpret_cast<const uint4*>(src + (long long)r * kD + x);
        *reinterpret_cast<uint4*>(dst + r * ld + x) = v;
    }
}

template <typename T, bool kCount, int kD>
__global__ void __launch_bounds__(kV1Threads) fa2_v1_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                                                           T* __restrict__ O, float* __restrict__ L, int n, unsigned long long* counts) {
    using Layout = V1Layout<T, kD>;
    extern __shared__ __align__(128) unsigned char shared[];
    T* q = reinterpret_cast<T*>(shared + Layout::q);
    T* k = reinterpret_cast<T*>(shared + Layout::k);
    T* v = reinterpret_cast<T*>(shared + Layout::v);
    float* s = reinterpret_cast<float*>(shared + Layout::s);
    T* p = reinterpret_cast<T*>(shared + Layout::p);
    float* o = reinterpret_cast<float*>(shared + Layout::o);
    float* m = reinterpret_cast<float*>(shared + Layout::m);
    float* l = reinterpret_cast<float*>(shared + Layout::l);
    constexpr int ld = kV1Ld<kD>, ldo = kV1LdO<kD>;

    const int i = blockIdx.x, head = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = i * kV1Br, br = min(kV1Br, n - row0);
    const long long nd = (long long)n * kD;
    Q += head * nd + (long long)row0 * kD;
    K += head * nd;
    V += head * nd;
    O += head * nd + (long long)row0 * kD;
    L += (long long)head * n + row0;

    load_rows<T, kD, kV1Threads>(q, ld, Q, kV1Br, br);
    count_tile<kCount>(counts, kQ, kRead, (long long)br * kD);
    for (int x = threadIdx.x; x < kV1Br * ldo; x += kV1Threads) o[x] = 0.f;  // SET 0, q, o: on chip
    for (int r = threadIdx.x; r < kV1Br; r += kV1Threads) {
        m[r] = -INFINITY;
        l[r] = 0.f;
    }

    // This warp's 16 rows, and this lane's row of them and half of its columns (2 lanes a row).
    const int wr = warp * 16, my_row = wr + lane / 2, half = lane % 2;
    for (int j = 0; j < (n + kV1Bc - 1) / kV1Bc; ++j) {
        const int col0 = j * kV1Bc, bc = min(kV1Bc, n - col0);
        __syncthreads();  // every warp is done with the previous K_j and V_j
        load_rows<T, kD, kV1Threads>(k, ld, K + (long long)col0 * kD, kV1Bc, bc);
        count_tile<kCount>(counts, kK, kRead, (long long)bc * kD);
        load_rows<T, kD, kV1Threads>(v, ld, V + (long long)col0 * kD, kV1Bc, bc);
        count_tile<kCount>(counts, kV, kRead, (long long)bc * kD);
        __syncthreads();

        // S = Q_i·K_jᵀ, this warp's 16 rows: Kᵀ is K read column-major.
#pragma unroll
        for (int c = 0; c < kV1Bc; c += 16) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::fill_fragment(acc, 0.f);
#pragma unroll
            for (int x = 0; x < kD; x += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
                wmma::load_matrix_sync(a, q + wr * ld + x, ld);
                wmma::load_matrix_sync(b, k + c * ld + x, ld);
                wmma::mma_sync(acc, a, b, acc);
            }
            wmma::store_matrix_sync(s + wr * kV1LdS + c, acc, kV1LdS, wmma::mem_row_major);
        }
        __syncwarp();

        // m_new = max(m, rowmax(S)), P̃ = e^(S − m_new), ℓ = ℓ·e^(m − m_new) + rowsum(P̃),
        // O = O·e^(m − m_new): a lane takes half of its row's columns; columns past n are −∞.
        {
            const float* srow = s + my_row * kV1LdS;
            float mx = -INFINITY;
            for (int c = half; c < bc; c += 2) mx = fmaxf(mx, srow[c]);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            const float m_old = m[my_row], m_new = fmaxf(m_old, mx), f = __expf(m_old - m_new);
            float sum = 0.f;
            T* prow = p + my_row * kV1LdP;
            for (int c = half; c < kV1Bc; c += 2) {
                const float e = c < bc ? __expf(srow[c] - m_new) : 0.f;
                const T pe = from_float<T>(e);
                sum += to_float(pe);  // ℓ sums what P̃·V multiplies
                prow[c] = pe;
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            float* orow = o + my_row * ldo;
            for (int c = half; c < kD; c += 2) orow[c] *= f;
            __syncwarp();  // both lanes of the row have read m before it changes
            if (half == 0) {
                l[my_row] = l[my_row] * f + sum;
                m[my_row] = m_new;
            }
        }
        __syncwarp();

        // O = O·e^(m − m_new) + P̃·V_j, this warp's 16 rows, accumulated through shared memory.
#pragma unroll
        for (int c = 0; c < kD; c += 16) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
            wmma::load_matrix_sync(acc, o + wr * ldo + c, ldo, wmma::mem_row_major);
#pragma unroll
            for (int x = 0; x < kV1Bc; x += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
                wmma::load_matrix_sync(a, p + wr * kV1LdP + x, kV1LdP);
                wmma::load_matrix_sync(b, v + x * ld + c, ld);
                wmma::mma_sync(acc, a, b, acc);
            }
            wmma::store_matrix_sync(o + wr * ldo + c, acc, ldo, wmma::mem_row_major);
        }
    }
    __syncthreads();

    // O = diag(ℓ)⁻¹·O, written once, 2 elements per lane per step; L = m + ln ℓ.
    for (int x = threadIdx.x; x < br * kD / 2; x += kV1Threads) {
        const int r = x / (kD / 2), c = x % (kD / 2) * 2;
        const float inv = 1.f / l[r];
        T pair[2] = {from_float<T>(o[r * ldo + c] * inv), from_float<T>(o[r * ldo + c + 1] * inv)};
        *reinterpret_cast<uint32_t*>(O + (long long)r * kD + c) = *reinterpret_cast<const uint32_t*>(pair);
    }
    count_tile<kCount>(counts, kO, kWrite, (long long)br * kD);
    for (int r = threadIdx.x; r < br; r += kV1Threads) L[r] = m[r] + logf(l[r]);
    count_tile<kCount>(counts, kL, kWrite, br);
}

// ---------------------------------------------------------------------------------------
// v2: mma.sync m16n8k16 with ldmatrix, the softmax in registers, cp.async double buffering,
// swizzled shared memory.
//
// What changed from v1:
//  - PTX mma.sync.m16n8k16 instead of WMMA: the fragment layout is documented (lane = 4g + t
//    holds rows g and g + 8, columns 2t and 2t + 1 of each 16×8 accumulator), so the online
//    softmax runs on the accumulators in registers: a row's max and sum are the lane's own
//    values and two shuffles across its quad. S, P̃ and O never touch shared memory: the S
//    accumulators, rounded to the input type, are already P̃'s A fragments for P̃·V
//    (FlashAttention-2's register reuse), and O stays in registers for all K/V tiles. ℓ is
//    kept per lane (a quad's partial sums) and reduced once, at the end.
//  - Q's fragments are loaded once into registers; K and V fragments come from shared memory
//    through ldmatrix (V's transposed by ldmatrix.trans): one instruction fills four 8×8
//    fragments.
//  - K_{j+1} and V_{j+1} are copied with cp.async into a second buffer while tile j is
//    computed (double buffering), so the loads hide behind the math.
//  - Tiles are unpadded in shared memory, 16-byte chunks XOR-swizzled by row (chunk c of row r
//    lives at c ^ (r mod 8)): the 8 rows an ldmatrix reads, and the 8 chunks a quarter-warp's
//    cp.async writes, fall in 8 different bank groups. No conflicts, and no padding to waste.
//  - B_r = 16 per warp with 4 or 8 warps (64 or 128 rows), B_c = 32 or 64: the larger Q tile
//    reads K and V from global memory half as often (fa2.toy's reads(K) = n·d·⌈n/B_r⌉).
// What it gained: 4.1× over v1 (231.1 TFLOP/s at n = 4096, d = 64, 128 × 64; 0.79× SDPA
// flash): the tensor pipe is busy 36%, shared-memory conflicts fall from 70 M to 157 k.

template <int kWarps, int kD>
constexpr int kV2MinBlocks = (kD == 64 ? 2 : 1) * (8 / kWarps);

template <typename T, int kD, int kBr, int kBc>
struct V2Layout {
    static constexpr long long q = 0;
    static constexpr long long k = q + (long long)kBr * kD * sizeof(T);        // two buffers
    static constexpr long long v = k + 2LL * kBc * kD * sizeof(T);             // two buffers
    static constexpr long long bytes = v + 2LL * kBc * kD * sizeof(T);
};

template <typename T, bool kCount, int kD, int kBr, int kBc>
__global__ void __launch_bounds__(kBr * 2, kV2MinBlocks<kBr / 16, kD>)
    fa2_v2_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, T* __restrict__ O, float* __restrict__ L,
                  int n, unsigned long long* counts) {
    constexpr int kWarps = kBr / 16, kThreads = 32 * kWarps;
    using Layout = V2Layout<T, kD, kBr, kBc>;
    extern __shared__ __align__(128) unsigned char shared[];
    T* q = reinterpret_cast<T*>(shared + Layout::q);
    T* kbuf = reinterpret_cast<T*>(shared + Layout::k);
    T* vbuf = reinterpret_cast<T*>(shared + Layout::v);

    const int i = blockIdx.x, head = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;  // the accumulator rows g, g + 8 and columns 2t, 2t + 1
    const int row0 = i * kBr, br = min(kBr, n - row0);
    const int Tc = (n + kBc - 1) / kBc;
    const long long nd = (long long)n * kD;
    Q += head * nd + (long long)row0 * kD;
    K += head * nd;
    V += head * nd;
    O += head * nd + (long long)row0 * kD;
    L += (long long)head * n + row0;

    // Prologue: Q_i and the first K/V tile, one cp.async group.
    load_tile_async<T, kD, kThreads>(q, Q, kBr, br);
    count_tile<kCount>(counts, kQ, kRead, (long long)br * kD);
    {
        const int bc = min(kBc, n);
        load_tile_async<T, kD, kThreads>(kbuf, K, kBc, bc);
        count_tile<kCount>(counts, kK, kRead, (long long)bc * kD);
        load_tile_async<T, kD, kThreads>(vbuf, V, kBc, bc);
        count_tile<kCount>(counts, kV, kRead, (long long)bc * kD);
    }
    cp_async_commit();

    uint32_t qf[kD / 16][4];      // Q_i's A fragments, this warp's 16 rows
    float o[kD / 8][4];           // O_i, unnormalized
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};  // rows g and g + 8 (ℓ: this lane's part)
#pragma unroll
    for (int x = 0; x < kD / 8; ++x) o[x][0] = o[x][1] = o[x][2] = o[x][3] = 0.f;

    for (int j = 0; j < Tc; ++j) {
        const int col0 = j * kBc, bc = min(kBc, n - col0);
        const T* k = kbuf + (j % 2) * kBc * kD;
        const T* v = vbuf + (j % 2) * kBc * kD;
        if (j + 1 < Tc) {  // K_{j+1}, V_{j+1} into the other buffers, while this tile computes
            const int next = col0 + kBc, bn = min(kBc, n - next);
            load_tile_async<T, kD, kThreads>(kbuf + ((j + 1) % 2) * kBc * kD, K + (long long)next * kD, kBc, bn);
            count_tile<kCount>(counts, kK, kRead, (long long)bn * kD);
            load_tile_async<T, kD, kThreads>(vbuf + ((j + 1) % 2) * kBc * kD, V + (long long)next * kD, kBc, bn);
            count_tile<kCount>(counts, kV, kRead, (long long)bn * kD);
            cp_async_commit();
            cp_async_wait<1>();  // tile j (and Q) have landed; j + 1 may still be in flight
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();  // ... for every thread's copies
        if (j == 0) {
#pragma unroll
            for (int x = 0; x < kD / 16; ++x)
                ldmatrix_x4(qf[x], q + swizzled<kD>(warp * 16 + lane % 16, 2 * x + lane / 16));
        }

        // S = Q_i·K_jᵀ: kBc/8 accumulators of 16×8. K's rows are B's columns, so K_j read
        // row by row (no transpose) gives B's fragments.
        float s[kBc / 8][4];
#pragma unroll
        for (int x = 0; x < kBc / 8; ++x) s[x][0] = s[x][1] = s[x][2] = s[x][3] = 0.f;
#pragma unroll
        for (int x = 0; x < kD / 16; ++x)
#pragma unroll
            for (int c = 0; c < kBc / 8; c += 2) {
                uint32_t b[4];
                ldmatrix_x4(b, k + swizzled<kD>(8 * (c + lane / 16) + lane % 8, 2 * x + (lane / 8) % 2));
                mma16816<T>(s[c], qf[x], b[0], b[1]);
                mma16816<T>(s[c + 1], qf[x], b[2], b[3]);
            }
        if (bc < kBc) {  // the last K/V tile is ragged: its missing columns are −∞
#pragma unroll
            for (int c = 0; c < kBc / 8; ++c)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    if (8 * c + 2 * t + e >= bc) s[c][e] = s[c][2 + e] = -INFINITY;
        }

        // The online softmax, in registers: row h of the lane is g + 8h, its values s[c][2h + e].
        float scale[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = m[h];
#pragma unroll
            for (int c = 0; c < kBc / 8; ++c) mx = fmaxf(mx, fmaxf(s[c][2 * h], s[c][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the quad shares the row
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            scale[h] = exp2f((m[h] - mx) * kLog2e);  // e^(m − m_new); 0 on the first tile
            m[h] = mx;
        }

        // P̃ = e^(S − m_new), rounded to T: the A fragments of P̃·V, 16 columns each.
        uint32_t pf[kBc / 16][4];
        float sum[2] = {0.f, 0.f};
#pragma unroll
        for (int c = 0; c < kBc / 8; ++c)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float mk = m[h] * kLog2e;
                const uint32_t pair = pack2<T>(exp2f(fmaf(s[c][2 * h], kLog2e, -mk)), exp2f(fmaf(s[c][2 * h + 1], kLog2e, -mk)));
                const float2 rounded = unpack2<T>(pair);
                sum[h] += rounded.x + rounded.y;  // ℓ sums what P̃·V multiplies
                pf[c / 2][(c % 2) * 2 + h] = pair;
            }
#pragma unroll
        for (int h = 0; h < 2; ++h) l[h] = l[h] * scale[h] + sum[h];
#pragma unroll
        for (int x = 0; x < kD / 8; ++x) {
            o[x][0] *= scale[0];
            o[x][1] *= scale[0];
            o[x][2] *= scale[1];
            o[x][3] *= scale[1];
        }

        // O += P̃·V_j: V's rows are B's rows, so ldmatrix.trans gives B's fragments.
#pragma unroll
        for (int x = 0; x < kBc / 16; ++x)
#pragma unroll
            for (int c = 0; c < kD / 8; c += 2) {
                uint32_t b[4];
                ldmatrix_x4_trans(b, v + swizzled<kD>(16 * x + lane % 16, c + lane / 16));
                mma16816<T>(o[c], pf[x], b[0], b[1]);
                mma16816<T>(o[c + 1], pf[x], b[2], b[3]);
            }
        __syncthreads();  // every warp is done with buffer j % 2 before tile j + 2 lands in it
    }

    // O = diag(ℓ)⁻¹·O, written once; L = m + ln ℓ (ℓ summed over the quad first).
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        const int r = warp * 16 + g + 8 * h;
        if (r < br) {
            const float inv = 1.f / l[h];
#pragma unroll
            for (int x = 0; x < kD / 8; ++x)
                *reinterpret_cast<uint32_t*>(O + (long long)r * kD + 8 * x + 2 * t) = pack2<T>(o[x][2 * h] * inv, o[x][2 * h + 1] * inv);
            if (t == 0) L[r] = m[h] + logf(l[h]);
        }
    }
    count_tile<kCount>(counts, kO, kWrite, (long long)br * kD);
    count_tile<kCount>(counts, kL, kWrite, br);
}

// ---------------------------------------------------------------------------------------
// v3: 32 rows per warp, and a leaner softmax.
//
// What changed from v2: a warp owns two 16-row slices of the Q tile (B_r = 128 with 4 warps,
// FlashAttention-2's own shape), so every K and V fragment an ldmatrix brings in feeds two
// mma instructions instead of one: half the shared-memory reads per flop, and half the
// barrier participants. At d = 128 the Q fragments no longer fit beside 2 × 16 × 128 of O in
// registers: they are read from shared memory (ldmatrix) at each 16-column step of Q·Kᵀ, one
// instruction per 8 mma. The softmax loses instructions: e^x is one ex2.approx.ftz (the
// scale by log₂e folded into one fma), and ℓ sums P̃ in fp32 before rounding (as
// FlashAttention-2 does) instead of converting the rounded P̃ back.
// What it gained: 1.24× over v2 (286.3 TFLOP/s at n = 4096, d = 64; 0.98× SDPA flash; 296.7,
// 0.85×, at d = 128): the tensor pipe is busy 45% with half the warps resident (241
// registers a thread at d = 64, 255 at d = 128 with 48 bytes spilled at B_c = 64).


constexpr int kV3Warps = 4, kV3Threads = 32 * kV3Warps, kV3Slices = 2;  // a warp: 2 slices of 16 rows

template <typename T, int kD, int kBr, int kBc>
using V3Layout = V2Layout<T, kD, kBr, kBc>;

template <int kD>
constexpr int kV3MinBlocks = kD == 64 ? 2 : 1;  // __launch_bounds__'s, which the time model reads (note_launch)

// kCausal (fa2_causal_v3_mma, fa2_causal_heaviest_first.toy with B = 128): Q tile i reads keys
// up to its last row only, kBc at a time (the same rows as the program's B×B tiles 0..i), and
// where a K/V tile reaches past a row, key c after query r is −∞ before the softmax; block x
// takes Q tile Tr − 1 − x, the longest first, as the program hands them out.
template <typename T, bool kCount, int kD, int kBc, bool kCausal = false>
__global__ void __launch_bounds__(kV3Threads, kV3MinBlocks<kD>)
    fa2_v3_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, T* __restrict__ O, float* __restrict__ L,
                  int n, unsigned long long* counts) {
    constexpr int kBr = 16 * kV3Slices * kV3Warps, kThreads = kV3Threads, kM = kV3Slices;
    constexpr bool kQInRegisters = kD == 64;
    using Layout = V3Layout<T, kD, kBr, kBc>;
    extern __shared__ __align__(128) unsigned char shared[];
    T* q = reinterpret_cast<T*>(shared + Layout::q);
    T* kbuf = reinterpret_cast<T*>(shared + Layout::k);
    T* vbuf = reinterpret_cast<T*>(shared + Layout::v);

    const int i = kCausal ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x), head = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int row0 = i * kBr, br = min(kBr, n - row0);
    const int Tc = kCausal ? (row0 + br + kBc - 1) / kBc : (n + kBc - 1) / kBc;
    const long long nd = (long long)n * kD;
    Q += head * nd + (long long)row0 * kD;
    K += head * nd;
    V += head * nd;
    O += head * nd + (long long)row0 * kD;
    L += (long long)head * n + row0;

    load_tile_async<T, kD, kThreads>(q, Q, kBr, br);
    count_tile<kCount>(counts, kQ, kRead, (long long)br * kD);
    {
        const int bc = min(kBc, n);
        load_tile_async<T, kD, kThreads>(kbuf, K, kBc, bc);
        count_tile<kCount>(counts, kK, kRead, (long long)bc * kD);
        load_tile_async<T, kD, kThreads>(vbuf, V, kBc, bc);
        count_tile<kCount>(counts, kV, kRead, (long long)bc * kD);
    }
    cp_async_commit();

    // Slice a of this warp is rows 16·(a·4 + warp) .. + 15 of the tile.
    uint32_t qf[kM][kQInRegisters ? kD / 16 : 1][4];
    float o[kM][kD / 8][4];
    float m[kM][2], l[kM][2];
#pragma unroll
    for (int a = 0; a < kM; ++a) {
        m[a][0] = m[a][1] = -INFINITY;
        l[a][0] = l[a][1] = 0.f;
#pragma unroll
        for (int x = 0; x < kD / 8; ++x) o[a][x][0] = o[a][x][1] = o[a][x][2] = o[a][x][3] = 0.f;
    }
    auto slice_row = [&](int a) { return 16 * (a * kV3Warps + warp); };

    for (int j = 0; j < Tc; ++j) {
        const int col0 = j * kBc, bc = min(kBc, n - col0);
        const T* k = kbuf + (j % 2) * kBc * kD;
        const T* v = vbuf + (j % 2) * kBc * kD;
        if (j + 1 < Tc) {
            const int next = col0 + kBc, bn = min(kBc, n - next);
            load_tile_async<T, kD, kThreads>(kbuf + ((j + 1) % 2) * kBc * kD, K + (long long)next * kD, kBc, bn);
            count_tile<kCount>(counts, kK, kRead, (long long)bn * kD);
            load_tile_async<T, kD, kThreads>(vbuf + ((j + 1) % 2) * kBc * kD, V + (long long)next * kD, kBc, bn);
            count_tile<kCount>(counts, kV, kRead, (long long)bn * kD);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        if constexpr (kQInRegisters) {
            if (j == 0) {
#pragma unroll
                for (int a = 0; a < kM; ++a)
#pragma unroll
                    for (int x = 0; x < kD / 16; ++x)
                        ldmatrix_x4(qf[a][x], q + swizzled<kD>(slice_row(a) + lane % 16, 2 * x + lane / 16));
            }
        }

        // S = Q_i·K_jᵀ for both slices: one ldmatrix of K feeds 2 × 2 mma.
        float s[kM][kBc / 8][4];
#pragma unroll
        for (int a = 0; a < kM; ++a)
#pragma unroll
            for (int x = 0; x < kBc / 8; ++x) s[a][x][0] = s[a][x][1] = s[a][x][2] = s[a][x][3] = 0.f;
#pragma unroll
        for (int x = 0; x < kD / 16; ++x) {
            uint32_t qx[kM][4];
#pragma unroll
            for (int a = 0; a < kM; ++a) {
                if constexpr (kQInRegisters) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) qx[a][e] = qf[a][x][e];
                } else {
                    ldmatrix_x4(qx[a], q + swizzled<kD>(slice_row(a) + lane % 16, 2 * x + lane / 16));
                }
            }
#pragma unroll
            for (int c = 0; c < kBc / 8; c += 2) {
                uint32_t b[4];
                ldmatrix_x4(b, k + swizzled<kD>(8 * (c + lane / 16) + lane % 8, 2 * x + (lane / 8) % 2));
#pragma unroll
                for (int a = 0; a < kM; ++a) {
                    mma16816<T>(s[a][c], qx[a], b[0], b[1]);
                    mma16816<T>(s[a][c + 1], qx[a], b[2], b[3]);
                }
            }
        }
        // −∞ for the columns past a ragged last tile and, causal, where the tile reaches past a
        // row, for the keys after their query.
        if (bc < kBc || (kCausal && col0 + kBc - 1 > row0)) {
#pragma unroll
            for (int a = 0; a < kM; ++a)
#pragma unroll
                for (int c = 0; c < kBc / 8; ++c)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int col = 8 * c + 2 * t + (e & 1);
                        if (col >= bc || (kCausal && col0 + col > row0 + slice_row(a) + g + 8 * (e >> 1))) s[a][c][e] = -INFINITY;
                    }
        }

        // The online softmax in registers, as v2, with ex2 and an fp32 ℓ.
        uint32_t pf[kM][kBc / 16][4];
#pragma unroll
        for (int a = 0; a < kM; ++a) {
            float scale[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mx = m[a][h];
#pragma unroll
                for (int c = 0; c < kBc / 8; ++c) mx = fmaxf(mx, fmaxf(s[a][c][2 * h], s[a][c][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                scale[h] = fast_exp2((m[a][h] - mx) * kLog2e);
                m[a][h] = mx;
            }
            float sum[2] = {0.f, 0.f};
#pragma unroll
            for (int c = 0; c < kBc / 8; ++c)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float mk = m[a][h] * kLog2e;
                    const float p0 = fast_exp2(fmaf(s[a][c][2 * h], kLog2e, -mk)), p1 = fast_exp2(fmaf(s[a][c][2 * h + 1], kLog2e, -mk));
                    sum[h] += p0 + p1;
                    pf[a][c / 2][(c % 2) * 2 + h] = pack2<T>(p0, p1);
                }
#pragma unroll
            for (int h = 0; h < 2; ++h) l[a][h] = l[a][h] * scale[h] + sum[h];
#pragma unroll
            for (int x = 0; x < kD / 8; ++x) {
                o[a][x][0] *= scale[0];
                o[a][x][1] *= scale[0];
                o[a][x][2] *= scale[1];
                o[a][x][3] *= scale[1];
            }
        }

        // O += P̃·V_j for both slices: one ldmatrix.trans of V feeds 2 × 2 mma.
#pragma unroll
        for (int x = 0; x < kBc / 16; ++x)
#pragma unroll
            for (int c = 0; c < kD / 8; c += 2) {
                uint32_t b[4];
                ldmatrix_x4_trans(b, v + swizzled<kD>(16 * x + lane % 16, c + lane / 16));
#pragma unroll
                for (int a = 0; a < kM; ++a) {
                    mma16816<T>(o[a][c], pf[a][x], b[0], b[1]);
                    mma16816<T>(o[a][c + 1], pf[a][x], b[2], b[3]);
                }
            }
        __syncthreads();
    }

#pragma unroll
    for (int a = 0; a < kM; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = l[a][h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const int r = slice_row(a) + g + 8 * h;
            if (r < br) {
                const float inv = 1.f / sum;
#pragma unroll
                for (int x = 0; x < kD / 8; ++x)
                    *reinterpret_cast<uint32_t*>(O + (long long)r * kD + 8 * x + 2 * t) = pack2<T>(o[a][x][2 * h] * inv, o[a][x][2 * h + 1] * inv);
                if (t == 0) L[r] = m[a][h] + logf(sum);
            }
        }
    count_tile<kCount>(counts, kO, kWrite, (long long)br * kD);
    count_tile<kCount>(counts, kL, kWrite, br);
}

// ---------------------------------------------------------------------------------------
// Launchers.

void launch_fa2_v1(int, const StageArgs& args) {
    const Shape sh = shape_of(args, "fa2_v1_wmma");
    with_half_dtype(args.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_counting(args, [&](auto counting) {
            constexpr bool kCount = decltype(counting)::value;
            with_head_dim(sh.d, [&](auto dim) {
                constexpr int kD = decltype(dim)::value;
                auto* kernel = fa2_v1_kernel<T, kCount, kD>;
                const long long bytes = V1Layout<T, kD>::bytes;
                require_shared_memory(reinterpret_cast<const void*>(kernel), bytes, args, "fa2_v1_wmma", "v1 needs Br = Bc = 64");
                note_launch(args, kernel, kV1Threads, bytes, 0);
                if (args.plan_only) return;
                const dim3 grid(unsigned(sh.Tr), unsigned(args.heads));
                kernel<<<grid, kV1Threads, bytes, args.stream>>>(static_cast<const T*>(args.arrays[kQ]), static_cast<const T*>(args.arrays[kK]),
                                                                 static_cast<const T*>(args.arrays[kV]), static_cast<T*>(args.arrays[kO]),
                                                                 static_cast<float*>(args.arrays[kL]), sh.n, args.counts);
                check_launch("fa2_v1_wmma");
            });
        });
    });
}

void launch_fa2_v2(int, const StageArgs& args) {
    const Shape sh = shape_of(args, "fa2_v2_mma");
    with_half_dtype(args.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_counting(args, [&](auto counting) {
            constexpr bool kCount = decltype(counting)::value;
            with_head_dim(sh.d, [&](auto dim) {
                constexpr int kD = decltype(dim)::value;
                auto go = [&](auto rows, auto cols) {
                    constexpr int kBr = decltype(rows)::value, kBc = decltype(cols)::value;
                    auto* kernel = fa2_v2_kernel<T, kCount, kD, kBr, kBc>;
                    const long long bytes = V2Layout<T, kD, kBr, kBc>::bytes;
                    require_shared_memory(reinterpret_cast<const void*>(kernel), bytes, args, "fa2_v2_mma", "lower Br or Bc");
                    note_launch(args, kernel, 2 * kBr, bytes, kV2MinBlocks<kBr / 16, kD>);
                    if (args.plan_only) return;
                    const dim3 grid(unsigned(sh.Tr), unsigned(args.heads));
                    kernel<<<grid, 2 * kBr, bytes, args.stream>>>(static_cast<const T*>(args.arrays[kQ]), static_cast<const T*>(args.arrays[kK]),
                                                                  static_cast<const T*>(args.arrays[kV]), static_cast<T*>(args.arrays[kO]),
                                                                  static_cast<float*>(args.arrays[kL]), sh.n, args.counts);
                    check_launch("fa2_v2_mma");
                };
                auto cols = [&](auto rows) {
                    if (sh.Bc == 32) go(rows, std::integral_constant<int, 32>{});
                    else go(rows, std::integral_constant<int, 64>{});
                };
                if (sh.Br == 64) cols(std::integral_constant<int, 64>{});
                else cols(std::integral_constant<int, 128>{});
            });
        });
    });
}

// v3, and v3 with the causal mask: B = 128 (the v3 block's 128 rows), K and V 64 keys at a time.
template <bool kCausal>
void launch_v3(const StageArgs& args, const Shape& sh, const char* name) {
    with_half_dtype(args.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_counting(args, [&](auto counting) {
            constexpr bool kCount = decltype(counting)::value;
            with_head_dim(sh.d, [&](auto dim) {
                constexpr int kD = decltype(dim)::value;
                auto go = [&](auto cols) {
                    constexpr int kBc = decltype(cols)::value;
                    auto* kernel = fa2_v3_kernel<T, kCount, kD, kBc, kCausal>;
                    const long long bytes = V3Layout<T, kD, 128, kBc>::bytes;
                    require_shared_memory(reinterpret_cast<const void*>(kernel), bytes, args, name, kCausal ? "no smaller tile" : "lower Bc");
                    note_launch(args, kernel, kV3Threads, bytes, kV3MinBlocks<kD>);
                    if (args.plan_only) return;
                    const dim3 grid(unsigned(sh.Tr), unsigned(args.heads));
                    kernel<<<grid, kV3Threads, bytes, args.stream>>>(static_cast<const T*>(args.arrays[kQ]), static_cast<const T*>(args.arrays[kK]),
                                                                     static_cast<const T*>(args.arrays[kV]), static_cast<T*>(args.arrays[kO]),
                                                                     static_cast<float*>(args.arrays[kL]), sh.n, args.counts);
                    check_launch(name);
                };
                if constexpr (kCausal) go(std::integral_constant<int, 64>{});
                else if (sh.Bc == 32) go(std::integral_constant<int, 32>{});
                else go(std::integral_constant<int, 64>{});
            });
        });
    });
}

void launch_fa2_v3(int, const StageArgs& args) { launch_v3<false>(args, shape_of(args, "fa2_v3_mma"), "fa2_v3_mma"); }
void launch_fa2_causal_v3(int, const StageArgs& args) {
    launch_v3<true>(args, shape_of(args, "fa2_causal_v3_mma", true), "fa2_causal_v3_mma");
}

}  // namespace

extern const KernelEntry kAttentionTensorCoreKernels[] = {
    {"fa2_v1_wmma", launch_fa2_v1},
    {"fa2_v2_mma", launch_fa2_v2},
    {"fa2_v3_mma", launch_fa2_v3},
    {"fa2_causal_v3_mma", launch_fa2_causal_v3},
};
extern const int kAttentionTensorCoreKernelCount = sizeof(kAttentionTensorCoreKernels) / sizeof(kAttentionTensorCoreKernels[0]);

}  // namespace toysim::gpu
