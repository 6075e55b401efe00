// FlashAttention-2 backward on the tensor cores: fa2_backward_mma, a version of fa2_backward
// (gpu/kernels/attention_backward.cu) that runs with programs/attention/fa2_backward.toy:
//
//   toysim gpu run programs/attention/fa2_backward.toy --kernel fa2_backward_mma
//       --set n=4096 --set d=64 --set Br=64 --set Bc=128 --heads 64 --dtype fp16
//
// which checks D, dQ, dK and dV against the CPU reference and the counts against the
// simulator's for fa2_backward.toy at the same Br, Bc, times the heads.
//
// What changed from fa2_backward (CUDA cores, every tile fp32 in shared memory): the five
// products run as mma.sync m16n8k16 with fp32 accumulators on fp16 or bf16 tiles, and what
// FlashAttention-2's backward keeps in registers is kept in registers here:
//
//   - One block per (K/V tile j, head), Bc = 64 or 128 keys: 4 or 8 warps, each owning 16 key
//     rows of K_j, V_j. A warp's dK_j and dV_j rows (16 × d each) are mma accumulators held
//     across every Q tile i, stored once at the end: no shared-memory accumulators, no
//     barrier between a warp's products.
//   - The products are computed transposed, keys as rows: Sᵀ = K_j·Q_iᵀ and dPᵀ = V_j·dO_iᵀ
//     put a warp's 16 keys in the accumulator's rows, so Pᵀ = e^(Sᵀ − L) (ex2, log₂e folded
//     into one fma) and dSᵀ = Pᵀ∘(dPᵀ − D) are formed in registers and repacked, without any
//     shuffle, as the A fragments of dV += Pᵀ·dO_i and dK += dSᵀ·Q_i (their B fragments are
//     dO_i and Q_i through ldmatrix.trans).
//   - dQ_i += dS·K_j needs every warp's dS: dSᵀ is written to shared memory (as T, swizzled),
//     and after one barrier ldmatrix.trans reads it back as dS's A fragments; each warp then
//     owns 16 rows × 64 columns of dQ_i at a time and adds them into global memory with fp32
//     atomic adds (RED), as FlashAttention-2 does. The program's STORE_ADD is counted as it is
//     in fa2_backward: a read and a write of each of dQ_i's elements per (i, j).
//   - Q_i, dO_i, L_i and D_i are double-buffered with cp.async: tile i + 1 loads while tile i
//     computes. Tiles are swizzled (16-byte chunk c of row r at c ^ (r mod 8)), so ldmatrix
//     and the dSᵀ stores hit 32 distinct banks.
//   - P is rounded to T before dV += Pᵀ·dO (as FlashAttention-2 does), dS is formed from the
//     fp32 P and rounded to T for dK and dQ.
//
// The D pre-pass (stage "delta", D = rowsum(dO∘O)) is fa2_backward's own kernel, counted into
// this row's arrays: it moves 2·n·d + n elements against the gradient pass's n·d·(4·Tc + 4) and
// was not worth a second version.
//
// Loop order and traffic are fa2_backward.toy's: K_j and V_j read once per block, Q_i, dO_i,
// L_i, D_i once per (j, i), dQ_i read and written once per (j, i), dK_j and dV_j written once.
// Any n: the ragged last K/V tile's missing keys and the ragged last Q tile's missing queries
// are zero-filled by cp.async (nothing is read past n) and their P is set to 0; nothing past n
// is written. No softmax scale: the program has none (fold it into Q).
//
// Tile shapes: Bc = 64 or 128 (4 or 8 warps); Br = 64, or 128 at d = 64 (at d = 128 a warp's
// Sᵀ and dPᵀ for 128 queries, 2 × 64 fp32 registers, would not fit beside dK and dV's 128).
// Bc = 128 is the fast one: it halves the dQ atomics per product and every SM holds 8 warps
// either way (Bc = 64: two blocks of 4). Registers: 223 to 255 a thread, no spills (sm_90).
//
// What it gained, on an H100 (fp16, one run, gpu/tools/bench_attention.py --backward beside SDPA's
// flash backward at the same shape; BH is capped by what toysim fills O and L for on the CPU,
// 9 heads at n = 4096, d = 64 and 4 at d = 128):
//   fa2_backward (CUDA cores, fp32)   14 TFLOP/s at n = 1024, d = 64 (gpu/kernels/attention_backward.cu)
//   fa2_backward_mma, n = 2048        d = 64, 37 heads: 156.3 (0.82× flash)   d = 128, 18 heads: 137.2 (0.84×)
//   fa2_backward_mma, n = 4096        d = 64,  9 heads: 130.9 (0.82× flash)   d = 128,  4 heads: 179.2 (0.84×)
// On an H200 (one run, gpu/README.md): 155.8 against SDPA flash's 155.2 at n = 2048, d = 64
// (1.00×); 129.8 against 163.5 at n = 4096, d = 64, 9 heads (0.79×); 179.1 against 197.4 at
// n = 4096, d = 128, 4 heads (0.91×, another run). Nsight Compute there (n = 4096, fp16;
// gpu/results/ncu_versions_h200.md): the tensor pipe busy 28% (d = 64, 128 × 128, 8 heads) and
// 30% (d = 128, 64 × 128, 4 heads), no shared-memory bank conflicts, 253 and 255 registers,
// 12.5% of the warps an SM can hold.
// Tiles at n = 2048 (d = 64, 16 heads / d = 128, 8 heads): Bc = 128 155 and 166 TFLOP/s, Bc = 64
// 115 and 117; Br = 64 and 128 the same at d = 64. Not here yet: red.global.add.v2/v4.f32 for
// dQ on sm_90 (half or a quarter of the atomics), K_j and V_j's A fragments kept in registers
// at d = 64, and two Q tiles in flight per warp.
// Needs sm_80 or later (mma.sync with bf16, cp.async, ldmatrix).
#include <cstdint>
#include <string>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/mma.cuh"

namespace toysim::gpu {

// Stage "delta" of fa2_backward (gpu/kernels/attention_backward.cu), counted into catalog row `kernel`.
void launch_fa2_backward_delta(const StageArgs& args, const char* kernel);

namespace {

constexpr const char* kName = "fa2_backward_mma";

template <int kThreads>
__device__ __forceinline__ void load_vector_async(float* dst, const float* src, int rows, int valid) {
    for (int r = threadIdx.x; r < rows; r += kThreads) cp_async4(dst + r, src + (r < valid ? r : 0), r < valid);
}

// ---- the gradient pass ----

// Which catalog array is which, looked up by name in this kernel's row.
struct Arrays {
    int Q, K, V, dO, L, D, dQ, dK, dV;
};

template <typename T>
struct Args {
    const T* __restrict__ Q;
    const T* __restrict__ K;
    const T* __restrict__ V;
    const T* __restrict__ dO;
    const float* __restrict__ L;
    const float* __restrict__ D;
    float* dQ;  // fp32, added into by every K/V tile's block
    T* __restrict__ dK;
    T* __restrict__ dV;
    int n;
    unsigned long long* counts;  // null in the timed variant
    Arrays ix;
};

// Shared memory, in bytes: K_j, V_j; Q_i, dO_i (two buffers each); dSᵀ (Bc × Br); L_i, D_i
// (two buffers each, fp32).
template <typename T, int kD, int kBr, int kBc>
struct Layout {
    static constexpr long long k = 0;
    static constexpr long long v = k + (long long)kBc * kD * sizeof(T);
    static constexpr long long q = v + (long long)kBc * kD * sizeof(T);
    static constexpr long long dout = q + 2LL * kBr * kD * sizeof(T);
    static constexpr long long ds = dout + 2LL * kBr * kD * sizeof(T);
    static constexpr long long lse = ds + (long long)kBc * kBr * sizeof(T);
    static constexpr long long delta = lse + 2LL * kBr * sizeof(float);
    static constexpr long long bytes = delta + 2LL * kBr * sizeof(float);
};

// dQ_i is computed in units of 16 rows × 64 columns (32 accumulators a thread), handed out to
// the warps in turn: 4 or 8 warps cover Br·d/1024 = 4 to 16 units.
constexpr int kDqCols = 64;

template <int kBc>
constexpr int kMinBlocks = kBc == 64 ? 2 : 1;  // __launch_bounds__'s, which the time model reads (note_launch)

template <typename T, bool kCount, int kD, int kBr, int kBc>
__global__ void __launch_bounds__(2 * kBc, kMinBlocks<kBc>) fa2_backward_mma_kernel(Args<T> a) {
    constexpr int kWarps = kBc / 16, kThreads = 32 * kWarps;
    constexpr int kRowGroups = kBr / 16, kUnits = kRowGroups * (kD / kDqCols);
    using L = Layout<T, kD, kBr, kBc>;
    extern __shared__ __align__(128) unsigned char shared[];
    T* k = reinterpret_cast<T*>(shared + L::k);
    T* v = reinterpret_cast<T*>(shared + L::v);
    T* qbuf = reinterpret_cast<T*>(shared + L::q);
    T* dobuf = reinterpret_cast<T*>(shared + L::dout);
    T* ds = reinterpret_cast<T*>(shared + L::ds);
    float* lbuf = reinterpret_cast<float*>(shared + L::lse);
    float* dbuf = reinterpret_cast<float*>(shared + L::delta);

    const int n = a.n, head = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;  // accumulator rows g, g + 8 and columns 2t, 2t + 1
    const int col0 = int(blockIdx.x) * kBc, bc = min(kBc, n - col0);
    const int key0 = 16 * warp;  // this warp's keys: rows key0 .. key0 + 15 of the K/V tile
    const int Tr = (n + kBr - 1) / kBr;
    const long long nd = (long long)n * kD;
    const T* Q = a.Q + head * nd;
    const T* dO = a.dO + head * nd;
    const float* Lh = a.L + (long long)head * n;
    const float* Dh = a.D + (long long)head * n;
    float* dQ = a.dQ + head * nd;

    // Prologue: K_j, V_j, and Q_0, dO_0, L_0, D_0 into buffer 0, one cp.async group.
    load_tile_async<T, kD, kThreads>(k, a.K + head * nd + (long long)col0 * kD, kBc, bc);
    load_tile_async<T, kD, kThreads>(v, a.V + head * nd + (long long)col0 * kD, kBc, bc);
    count_tile<kCount>(a.counts, a.ix.K, kRead, (long long)bc * kD);
    count_tile<kCount>(a.counts, a.ix.V, kRead, (long long)bc * kD);
    auto load_q_tile = [&](int i) {
        const int row0 = i * kBr, br = min(kBr, n - row0), b = i % 2;
        load_tile_async<T, kD, kThreads>(qbuf + b * kBr * kD, Q + (long long)row0 * kD, kBr, br);
        load_tile_async<T, kD, kThreads>(dobuf + b * kBr * kD, dO + (long long)row0 * kD, kBr, br);
        load_vector_async<kThreads>(lbuf + b * kBr, Lh + row0, kBr, br);
        load_vector_async<kThreads>(dbuf + b * kBr, Dh + row0, kBr, br);
        count_tile<kCount>(a.counts, a.ix.Q, kRead, (long long)br * kD);
        count_tile<kCount>(a.counts, a.ix.dO, kRead, (long long)br * kD);
        count_tile<kCount>(a.counts, a.ix.L, kRead, br);
        count_tile<kCount>(a.counts, a.ix.D, kRead, br);
        cp_async_commit();
    };
    load_q_tile(0);

    float dk[kD / 8][4], dv[kD / 8][4];  // this warp's 16 rows of dK_j and dV_j, over every Q tile
#pragma unroll
    for (int x = 0; x < kD / 8; ++x)
#pragma unroll
        for (int e = 0; e < 4; ++e) dk[x][e] = dv[x][e] = 0.f;

    for (int i = 0; i < Tr; ++i) {
        const int row0 = i * kBr, br = min(kBr, n - row0);
        const T* q = qbuf + (i % 2) * kBr * kD;
        const T* dout = dobuf + (i % 2) * kBr * kD;
        const float* lse = lbuf + (i % 2) * kBr;
        const float* delta = dbuf + (i % 2) * kBr;
        // Tile i + 1 into the other buffers, which every warp finished reading before the
        // previous tile's dQ barrier.
        if (i + 1 < Tr) {
            load_q_tile(i + 1);
            cp_async_wait<1>();  // tile i (and K_j, V_j) have landed; i + 1 may be in flight
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();  // ... for every thread's copies

        // Sᵀ = K_j·Q_iᵀ and dPᵀ = V_j·dO_iᵀ, this warp's 16 keys × Br queries each: K and V
        // rows are A's rows (ldmatrix), Q and dO rows B's columns (ldmatrix, no transpose).
        float s[kBr / 8][4], dp[kBr / 8][4];
#pragma unroll
        for (int c = 0; c < kBr / 8; ++c)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[c][e] = dp[c][e] = 0.f;
#pragma unroll
        for (int x = 0; x < kD / 16; ++x) {
            uint32_t kf[4], vf[4];
            ldmatrix_x4(kf, k + swizzled<kD>(key0 + lane % 16, 2 * x + lane / 16));
            ldmatrix_x4(vf, v + swizzled<kD>(key0 + lane % 16, 2 * x + lane / 16));
#pragma unroll
            for (int c = 0; c < kBr / 8; c += 2) {
                const int at = swizzled<kD>(8 * (c + lane / 16) + lane % 8, 2 * x + (lane / 8) % 2);
                uint32_t b[4];
                ldmatrix_x4(b, q + at);
                mma16816<T>(s[c], kf, b[0], b[1]);
                mma16816<T>(s[c + 1], kf, b[2], b[3]);
                ldmatrix_x4(b, dout + at);
                mma16816<T>(dp[c], vf, b[0], b[1]);
                mma16816<T>(dp[c + 1], vf, b[2], b[3]);
            }
        }

        // Pᵀ = e^(Sᵀ − L) and dSᵀ = Pᵀ∘(dPᵀ − D): element e of s[c] is key key0 + g + 8·(e/2),
        // query 8c + 2t + e mod 2, so L and D are per column. Keys past the ragged last K/V
        // tile and queries past the ragged last Q tile get P = 0 (their inputs are zeros, but
        // e^(0 − L) is not). Repacked, the accumulators are the A fragments of Pᵀ·dO_i and
        // dSᵀ·Q_i (16 queries each); dSᵀ also goes to shared memory for dS·K_j.
        uint32_t pf[kBr / 16][4], dsf[kBr / 16][4];
        const bool ragged = br < kBr || bc < kBc;
#pragma unroll
        for (int c = 0; c < kBr / 8; ++c) {
            const float2 l = *reinterpret_cast<const float2*>(lse + 8 * c + 2 * t);
            const float2 dd = *reinterpret_cast<const float2*>(delta + 8 * c + 2 * t);
            const float l0 = l.x * kLog2e, l1 = l.y * kLog2e;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float p0 = fast_exp2(fmaf(s[c][2 * h], kLog2e, -l0)), p1 = fast_exp2(fmaf(s[c][2 * h + 1], kLog2e, -l1));
                if (ragged) {
                    const int key = key0 + g + 8 * h, query = 8 * c + 2 * t;
                    if (key >= bc || query >= br) p0 = 0.f;
                    if (key >= bc || query + 1 >= br) p1 = 0.f;
                }
                const float ds0 = p0 * (dp[c][2 * h] - dd.x), ds1 = p1 * (dp[c][2 * h + 1] - dd.y);
                pf[c / 2][(c % 2) * 2 + h] = pack2<T>(p0, p1);
                const uint32_t pair = pack2<T>(ds0, ds1);
                dsf[c / 2][(c % 2) * 2 + h] = pair;
                *reinterpret_cast<uint32_t*>(ds + swizzled<kBr>(key0 + g + 8 * h, c) + 2 * t) = pair;
            }
        }

        // dV_j += Pᵀ·dO_i and dK_j += dSᵀ·Q_i: dO's and Q's rows are B's rows (k = queries),
        // so ldmatrix.trans gives B's fragments.
#pragma unroll
        for (int x = 0; x < kBr / 16; ++x)
#pragma unroll
            for (int c = 0; c < kD / 8; c += 2) {
                const int at = swizzled<kD>(16 * x + lane % 16, c + lane / 16);
                uint32_t b[4];
                ldmatrix_x4_trans(b, dout + at);
                mma16816<T>(dv[c], pf[x], b[0], b[1]);
                mma16816<T>(dv[c + 1], pf[x], b[2], b[3]);
                ldmatrix_x4_trans(b, q + at);
                mma16816<T>(dk[c], dsf[x], b[0], b[1]);
                mma16816<T>(dk[c + 1], dsf[x], b[2], b[3]);
            }
        __syncthreads();  // every warp's dSᵀ is in shared memory

        // dQ_i += dS·K_j, 16 queries × 64 columns a unit: dS's A fragments are dSᵀ read with
        // ldmatrix.trans (stored rows are keys, A's k), K_j's rows are B's rows (k = keys).
        // Added into global memory by RED (the atomicAdd's result is unused): every K/V tile's
        // block adds into the same dQ_i.
#pragma unroll 1
        for (int unit = warp; unit < kUnits; unit += kWarps) {
            const int rg = unit % kRowGroups, cb = (unit / kRowGroups) * kDqCols;
            float acc[kDqCols / 8][4];
#pragma unroll
            for (int c = 0; c < kDqCols / 8; ++c) acc[c][0] = acc[c][1] = acc[c][2] = acc[c][3] = 0.f;
#pragma unroll
            for (int x = 0; x < kBc / 16; ++x) {
                uint32_t af[4];
                ldmatrix_x4_trans(af, ds + swizzled<kBr>(16 * x + 8 * (lane / 16) + lane % 8, 2 * rg + (lane / 8) % 2));
#pragma unroll
                for (int c = 0; c < kDqCols / 8; c += 2) {
                    uint32_t b[4];
                    ldmatrix_x4_trans(b, k + swizzled<kD>(16 * x + lane % 16, cb / 8 + c + lane / 16));
                    mma16816<T>(acc[c], af, b[0], b[1]);
                    mma16816<T>(acc[c + 1], af, b[2], b[3]);
                }
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = 16 * rg + g + 8 * h;
                if (r < br) {
                    float* to = dQ + (long long)(row0 + r) * kD + cb + 2 * t;
#pragma unroll
                    for (int c = 0; c < kDqCols / 8; ++c) {
                        atomicAdd(to + 8 * c, acc[c][2 * h]);
                        atomicAdd(to + 8 * c + 1, acc[c][2 * h + 1]);
                    }
                }
            }
        }
        count_tile<kCount>(a.counts, a.ix.dQ, kRead, (long long)br * kD);   // the program's STORE_ADD: a read ...
        count_tile<kCount>(a.counts, a.ix.dQ, kWrite, (long long)br * kD);  // ... and a write of dQ_i
        // No barrier here: the next tile's loads go to the buffers this one finished with
        // before the barrier above, and its dSᵀ stores come after its own first barrier,
        // which every warp reaches only once its dQ units are done.
    }

    // dK_j, dV_j: written once, this warp's rows that are keys of the tile.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int key = key0 + g + 8 * h;
        if (key < bc) {
            const long long at = head * nd + (long long)(col0 + key) * kD + 2 * t;
#pragma unroll
            for (int c = 0; c < kD / 8; ++c) {
                *reinterpret_cast<uint32_t*>(a.dK + at + 8 * c) = pack2<T>(dk[c][2 * h], dk[c][2 * h + 1]);
                *reinterpret_cast<uint32_t*>(a.dV + at + 8 * c) = pack2<T>(dv[c][2 * h], dv[c][2 * h + 1]);
            }
        }
    }
    count_tile<kCount>(a.counts, a.ix.dK, kWrite, (long long)bc * kD);
    count_tile<kCount>(a.counts, a.ix.dV, kWrite, (long long)bc * kD);
}

// ---- launcher ----

Arrays arrays_of(const KernelSpec& spec) {
    auto at = [&](const char* name) {
        const int k = spec.find_array(name);
        if (k < 0) throw GpuError(std::string("internal: catalog row ") + kName + " has no array " + name);
        return k;
    };
    Arrays ix{at("Q"), at("K"), at("V"), at("dO"), at("L"), at("D"), at("dQ"), at("dK"), at("dV")};
    for (int k : {ix.L, ix.D, ix.dQ})
        if (!spec.arrays[size_t(k)].always_f32) throw GpuError(std::string("internal: catalog row ") + kName + " must keep L, D and dQ in fp32");
    return ix;
}

template <typename F>
void with_tiles(int d, int Br, int Bc, F&& f) {
    using I64 = std::integral_constant<int, 64>;
    using I128 = std::integral_constant<int, 128>;
    if (d == 64) {
        if (Br == 64) Bc == 64 ? f(I64{}, I64{}, I64{}) : f(I64{}, I64{}, I128{});
        else Bc == 64 ? f(I64{}, I128{}, I64{}) : f(I64{}, I128{}, I128{});
    } else {
        Bc == 64 ? f(I128{}, I64{}, I64{}) : f(I128{}, I64{}, I128{});
    }
}

// Stage 0 "delta": fa2_backward's D = rowsum(dO∘O). Stage 1 "fa2_backward_mma": the gradient pass.
void launch_fa2_backward_mma(int stage, const StageArgs& args) {
    if (stage == 0) {
        launch_fa2_backward_delta(args, kName);
        return;
    }
    const KernelSpec* spec = find_kernel(kName);
    if (!spec) throw GpuError(std::string("internal: kernel ") + kName + " is not in the catalog");
    const std::vector<std::int64_t> params(args.params, args.params + spec->params.size());
    // The shapes the catalog row refuses (the CLI refuses them first; this is for any other caller).
    if (std::string why = spec->refuse(params); !why.empty()) throw GpuError(why);
    require_tensor_core_launch(args, kName);
    const int n = int(params[0]);
    const Arrays ix = arrays_of(*spec);

    with_half_dtype(args.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_counting(args, [&](auto counting) {
            constexpr bool kCount = decltype(counting)::value;
            with_tiles(int(params[1]), int(params[2]), int(params[3]), [&](auto dim, auto rows, auto cols) {
                constexpr int kD = decltype(dim)::value, kBr = decltype(rows)::value, kBc = decltype(cols)::value;
                auto* kernel = fa2_backward_mma_kernel<T, kCount, kD, kBr, kBc>;
                const long long bytes = Layout<T, kD, kBr, kBc>::bytes;
                require_shared_memory(reinterpret_cast<const void*>(kernel), bytes, args, kName, "lower Br or Bc");
                note_launch(args, kernel, 2 * kBc, bytes, kMinBlocks<kBc>);
                if (args.plan_only) return;
                const Args<T> a{static_cast<const T*>(args.arrays[ix.Q]), static_cast<const T*>(args.arrays[ix.K]),
                                static_cast<const T*>(args.arrays[ix.V]), static_cast<const T*>(args.arrays[ix.dO]),
                                static_cast<const float*>(args.arrays[ix.L]), static_cast<const float*>(args.arrays[ix.D]),
                                static_cast<float*>(args.arrays[ix.dQ]), static_cast<T*>(args.arrays[ix.dK]),
                                static_cast<T*>(args.arrays[ix.dV]), n, args.counts, ix};
                const dim3 grid(unsigned(cdiv(n, kBc)), unsigned(args.heads));
                kernel<<<grid, 2 * kBc, bytes, args.stream>>>(a);
                check_launch(kName);
            });
        });
    });
}

}  // namespace

extern const KernelEntry kAttentionBackwardTensorCoreKernels[] = {
    {"fa2_backward_mma", launch_fa2_backward_mma},
};
extern const int kAttentionBackwardTensorCoreKernelCount = sizeof(kAttentionBackwardTensorCoreKernels) / sizeof(kAttentionBackwardTensorCoreKernels[0]);

}  // namespace toysim::gpu
