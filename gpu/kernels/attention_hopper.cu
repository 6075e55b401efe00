// FlashAttention-2 forward on Hopper's own instructions: v4 of the tensor-core progression
// (gpu/kernels/attention_tensor_core.cu has v1 to v3), the CUDA twin of programs/attention/fa2.toy at
// Br = Bc = 128, and with the causal mask of fa2_causal_heaviest_first.toy at B = 128.
//
//   toysim gpu run programs/attention/fa2.toy --kernel fa2_v4_wgmma
//       --set n=4096 --set d=64 --set Br=128 --set Bc=128 --heads 64 --dtype fp16
//
// What changed from v3 (mma.sync, every warp loads its own operands with ldmatrix):
//  - wgmma: a warpgroup (4 warps) multiplies 64 rows at once, reading Q, K and V straight from
//    shared memory through descriptors (no ldmatrix, no operand registers), asynchronously: the
//    warps issue the product and go on until they wait for it.
//  - TMA: one thread asks the tensor memory accelerator for a whole tile
//    (cp.async.bulk.tensor with a tensor map), which also writes the 128-byte swizzle the
//    descriptors read and zero-fills the rows past n (no bounds code, no reads past n).
//  - Warp specialization: warpgroup 0 only loads (one thread of it issues the copies, with its
//    registers given back by setmaxnreg); warpgroups 1 and 2 only compute, 64 rows of the Q tile
//    each, with 240 registers. They meet through mbarriers: for each of the 2 K/V stages a "full"
//    barrier per tile (the copy's bytes arrived) and an "empty" one (both consumers are done).
//  - Overlap inside a warpgroup (FlashAttention-3's intra-warpgroup pipelining): S_{j+1} =
//    Q·K_{j+1}ᵀ and O += P̃_j·V_j are issued together, and the softmax of S_{j+1} runs while the
//    tensor cores do P̃_j·V_j.
//  - Ping-pong between the two consumers (FlashAttention-3's): they take turns issuing their
//    products, ordered by two named barriers, so one's softmax runs while the other's products
//    have the tensor cores (kV4PingPong).
//  - Ragged n: TMA's boxes are 3-D (column, row, head), so a box past a head's last row reads
//    zeros, not the next head's rows; the last K/V tile's missing columns are masked to −∞ and
//    the last Q tile's missing rows are computed on zeros and not stored.
//
// Traffic is fa2.toy's at Br = Bc = 128, exactly: Q once per Q tile, K and V once per (Q tile,
// K/V tile), O and L written once; TMA's zero fill of rows past n reads nothing and counts
// nothing. P̃ is rounded to the input type before P̃·V, ℓ sums the unrounded values, as v3.
//
// What it gained, on an H100 (one same-run benchmark, gpu/results/bench_attention_hopper_h100.md;
// fp16, BH·n = 262,144; TFLOP/s, (×) SDPA flash, [×] cuDNN):
//                  n = 4096, d = 64        n = 16384, d = 64       n = 4096, d = 128       n = 16384, d = 128
//   v3 fa2_v3_mma  286.9 (0.97×)           293.9 (0.95×)           280.0 (0.79×)           286.8 (0.82×)
//   v4 (this)      346.2 (1.17×) [0.75×]   377.3 (1.23×) [0.79×]   511.9 (1.44×) [0.80×]   527.9 (1.51×) [0.85×]
// bf16 is within 2% of fp16 in the same cells (346.8, 377.8, 514.6, 538.5, its own run). The
// causal version: 1.15–1.57× SDPA flash causal (gpu/results/bench_attention_causal_h100.md).
// Nsight Compute, on an H200 with ping-pong still off (n = 4096, 16 heads;
// gpu/results/ncu_versions_h200.md): v4 takes 0.84× (d = 64) and 0.57× (d = 128) of v3's time;
// sm__pipe_tensor_op_hmma_cycles_active reads 37% and 52% (v3: 45% and 43%); 0 shared-memory
// bank conflicts (v3: 81 k and 178 k: TMA writes and wgmma reads the swizzle, no thread touches
// a tile); 168 registers a thread at launch, 240 after setmaxnreg.
//
// Two findings along the way:
//  - ptxas serialized every wgmma (warning C7513, "non wgmma instructions defining input
//    registers") while tile j's P̃ was copied into the registers P̃_{j−1}·V_{j−1} was still
//    reading: the main loop now takes tiles two at a time and alternates two P̃ register sets.
//  - Ping-pong lost 17–25% while the wgmmas were serialized, and gained up to 8% once they were
//    not: see kV4PingPong.
// What was left to cuDNN (0.75–0.85×) was mostly in the loads: v5 (kV5, fa2_v5_wgmma) releases
// K's stage once S_j is computed and V's once P̃_j·V_j is, so K_{j+2} is in flight a whole tile
// before it is needed (v4 loaded K and V together after P̃_j·V_j, and every tile's first product
// waited for the copy), and takes each row's maximum over 4 chains. H200, one run
// (gpu/results/bench_attention_v5_h200.md), v4 → v5 TFLOP/s: 343.3 → 427.5 and 374.7 → 454.5 at
// d = 64 (n = 4096, 16384), 511.5 → 623.9 and 550.4 → 607.3 at d = 128: 0.96–1.03× cuDNN.
// Still open: 192-row tiles at d = 64 (three consumers), a persistent grid with the epilogue's
// stores overlapped.
//
#include <cmath>
#include <cstdint>
#include <string>

#include "gpu/kernels/hopper.cuh"

namespace toysim::gpu {

namespace {

using namespace hopper;

enum Fa2Array { kQ, kK, kV, kO, kL };

constexpr int kV4Rows = 128, kV4Cols = 128;   // Br, Bc: 2 consumer warpgroups of 64 rows
constexpr int kV4Threads = 384;               // producer + 2 consumers
constexpr int kV4MinBlocks = 1;               // __launch_bounds__'s, which the time model reads (note_launch)
constexpr int kV4Stages = 2;                  // K/V tiles in flight
// setmaxnreg: the producer gives registers back, the consumers take them; the block launches
// with 168 a thread (65536 / 384, in units of 8), and an increase the block's own registers do
// not cover waits forever (the FP8 kernel hung so at 64 + 2·224).
constexpr int kV4ProducerRegisters = 24, kV4ConsumerRegisters = 240;
static_assert(kV4ProducerRegisters + 2 * kV4ConsumerRegisters <= 3 * (65536 / kV4Threads / 8 * 8), "setmaxnreg.inc would wait forever");
// Whether the two consumers take turns on the tensor cores (FlashAttention-3's ping-pong: one
// issues its products while the other runs its softmax, ordered by two named barriers). Measured
// on an H200, v4 alone in fp16, one run after the other on one machine: while ptxas serialized
// the wgmmas it lost 17–25%; without that, off against on, 343.8 against 343.8 TFLOP/s at
// n = 4096, d = 64, 367.4 against 371.5 at 16384, and at d = 128 488.7 against 504.6 and 505.3
// against 545.0 (+3% and +8%). On: the figures of the header are with it.
[[maybe_unused]] constexpr bool kV4PingPong = true;  // read by device code only
constexpr int kSwizzleBytes = 128;            // a swizzled row: 64 elements of 2 bytes

// Shared memory, every tile 1024-byte aligned (the 128-byte swizzle repeats every 8 rows):
// each tile is stored as d/64 column halves of [rows][64], the layout TMA writes and wgmma reads.
template <int kD, bool kV5 = false>
struct V4Layout {
    static constexpr int kHalves = kD / 64;
    static constexpr int q_bytes = kHalves * kV4Rows * kSwizzleBytes;
    static constexpr int kv_bytes = kHalves * kV4Cols * kSwizzleBytes;  // one K or V stage
    static constexpr int q = 0;
    static constexpr int k = q + q_bytes;
    static constexpr int v = k + kV4Stages * kv_bytes;
    static constexpr int barriers = v + kV4Stages * kv_bytes;
    // q_full, k_full[2], v_full[2], empty[2] (v5: V's, and k_empty[2]): 8 bytes each
    static constexpr int bytes = barriers + 8 * (1 + (kV5 ? 4 : 3) * kV4Stages) + 1024;  // + slack to align the base
};

#ifdef TOYSIM_SM90A
// S (64×128, fp32) = A·B (+ S if accumulate): A 64×16 and B 128×16, both K-major in shared memory.
template <typename T>
__device__ __forceinline__ void wgmma_scores(float (&s)[64], uint64_t a, uint64_t b, int accumulate) {
#define TOYSIM_SCORES(TYPE) \
    asm volatile(TOYSIM_WGMMA("m64n128k16", TYPE, TOYSIM_ACC64, "%64, %65, p, 1, 1, 0, 0", "%66") : TOYSIM_F64(s) : "l"(a), "l"(b), "r"(accumulate))
    if constexpr (std::is_same_v<T, __half>) TOYSIM_SCORES("f16");
    else TOYSIM_SCORES("bf16");
#undef TOYSIM_SCORES
}

// O (64×kD, fp32) += P̃·V: P̃ 64×16 from registers (the accumulator layout, rounded to T), V
// 16×kD in shared memory, N-major (its rows are keys, d contiguous: the transposed B).
template <typename T, int kD>
__device__ __forceinline__ void wgmma_values(float (&o)[kD / 2], const uint32_t (&p)[4], uint64_t b) {
#define TOYSIM_VALUES(SHAPE, TYPE, ACC, OPERANDS, OUTPUTS) \
    asm volatile(TOYSIM_WGMMA(SHAPE, TYPE, ACC, OPERANDS, "1") : OUTPUTS : "r"(p[0]), "r"(p[1]), "r"(p[2]), "r"(p[3]), "l"(b))
    constexpr bool kHalf = std::is_same_v<T, __half>;
    if constexpr (kD == 64 && kHalf) TOYSIM_VALUES("m64n64k16", "f16", TOYSIM_ACC32, "{%32, %33, %34, %35}, %36, p, 1, 1, 1", TOYSIM_F32(o));
    else if constexpr (kD == 64) TOYSIM_VALUES("m64n64k16", "bf16", TOYSIM_ACC32, "{%32, %33, %34, %35}, %36, p, 1, 1, 1", TOYSIM_F32(o));
    else if constexpr (kHalf) TOYSIM_VALUES("m64n128k16", "f16", TOYSIM_ACC64, "{%64, %65, %66, %67}, %68, p, 1, 1, 1", TOYSIM_F64(o));
    else TOYSIM_VALUES("m64n128k16", "bf16", TOYSIM_ACC64, "{%64, %65, %66, %67}, %68, p, 1, 1, 1", TOYSIM_F64(o));
#undef TOYSIM_VALUES
}

// The online softmax of one S tile, in registers: the new row maxima, P̃ = e^(S − m_new) as the
// A fragments of P̃·V (8 of 16 columns), ℓ's new terms; returns e^(m_old − m_new) per row in
// `scale` for O and ℓ, which the caller applies once the previous P̃·V is done.
// kV5: the row maximum over 4 partial chains (row_max), v4's one chain of 32 otherwise.
template <typename T, bool kV5>
__device__ __forceinline__ void softmax_tile(const float (&s)[64], RowState& st, float (&scale)[2], float (&sum)[2], uint32_t (&p)[kV4Cols / 16][4]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float mx = st.m[h];
        if constexpr (kV5) {
            mx = fmaxf(mx, row_max(s, h));
        } else {
#pragma unroll
            for (int c = 0; c < kV4Cols / 8; ++c) mx = fmaxf(mx, fmaxf(s[4 * c + 2 * h], s[4 * c + 2 * h + 1]));
        }
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        scale[h] = fast_exp2((st.m[h] - mx) * kLog2e);
        st.m[h] = mx;
        sum[h] = 0.f;
    }
#pragma unroll
    for (int c = 0; c < kV4Cols / 8; ++c)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const float mk = st.m[h] * kLog2e;
            const float p0 = fast_exp2(fmaf(s[4 * c + 2 * h], kLog2e, -mk)), p1 = fast_exp2(fmaf(s[4 * c + 2 * h + 1], kLog2e, -mk));
            sum[h] += p0 + p1;
            p[c / 2][(c % 2) * 2 + h] = pack2<T>(p0, p1);
        }
}

#endif  // TOYSIM_SM90A

// kCausal: block x takes Q tile Tr − 1 − x (the longest first, as fa2_causal_heaviest_first.toy
// hands them out) and reads K/V tiles 0..i only, the diagonal one masked.
// kV5: fa2_v5_wgmma, v4 with K's and V's stages released apart and the row maximum in 4 chains.
template <typename T, bool kCount, int kD, bool kCausal, bool kV5>
__global__ void __launch_bounds__(kV4Threads, kV4MinBlocks)
    fa2_v4_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map, const __grid_constant__ CUtensorMap v_map,
                  T* __restrict__ O, float* __restrict__ L, int n, unsigned long long* counts) {
#ifdef TOYSIM_SM90A
    using Layout = V4Layout<kD, kV5>;
    constexpr int kHalves = Layout::kHalves;
    extern __shared__ unsigned char shared_raw[];
    // The 128-byte swizzle is a function of the address bits: tiles start on 1024 bytes.
    unsigned char* shared = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(shared_raw) + 1023) & ~uintptr_t(1023));
    const uint32_t base = smem_address(shared);
    const uint32_t q_tile = base + Layout::q, k_tiles = base + Layout::k, v_tiles = base + Layout::v;
    const uint32_t q_full = base + Layout::barriers;
    auto k_full = [&](int s) { return q_full + 8 * (1 + s); };
    auto v_full = [&](int s) { return q_full + 8 * (1 + kV4Stages + s); };
    auto empty = [&](int s) { return q_full + 8 * (1 + 2 * kV4Stages + s); };
    auto k_empty = [&](int s) { return q_full + 8 * (1 + 3 * kV4Stages + s); };  // v5 only

    const int i = kCausal ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x), head = blockIdx.y;
    const int row0 = i * kV4Rows, br = min(kV4Rows, n - row0);
    const int Tc = kCausal ? (row0 + br + kV4Cols - 1) / kV4Cols : (n + kV4Cols - 1) / kV4Cols;
    const int warpgroup = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        mbarrier_init(q_full, 1);
        for (int s = 0; s < kV4Stages; ++s) {
            mbarrier_init(k_full(s), 1);
            mbarrier_init(v_full(s), 1);
            mbarrier_init(empty(s), 8);  // the 8 consumer warps
            if constexpr (kV5) mbarrier_init(k_empty(s), 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (warpgroup == 0) {
        // The producer: its registers go to the consumers; one thread issues every copy.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kV4ProducerRegisters));
        if (threadIdx.x == 0) {
            constexpr uint32_t kTileBytes = kV4Cols * kD * sizeof(T);
            mbarrier_expect_bytes(q_full, kV4Rows * kD * sizeof(T));
            for (int h = 0; h < kHalves; ++h) tma_load(q_tile + h * kV4Rows * kSwizzleBytes, &q_map, 64 * h, row0, head, q_full);
            count_tile<kCount>(counts, kQ, kRead, (long long)br * kD);
            for (int j = 0; j < Tc; ++j) {
                const int s = j % kV4Stages, bc = min(kV4Cols, n - j * kV4Cols);
                // v4: K_j and V_j once P̃_{j−2}·V_{j−2} is done, both in one stage. v5: K_j once
                // S_{j−2} is, early in tile j − 1, so that it is there when tile j starts; V_j then.
                if (j >= kV4Stages) mbarrier_wait(kV5 ? k_empty(s) : empty(s), (j / kV4Stages - 1) & 1);
                const uint32_t k_at = k_tiles + s * Layout::kv_bytes, v_at = v_tiles + s * Layout::kv_bytes;
                mbarrier_expect_bytes(k_full(s), kTileBytes);
                for (int h = 0; h < kHalves; ++h) tma_load(k_at + h * kV4Cols * kSwizzleBytes, &k_map, 64 * h, j * kV4Cols, head, k_full(s));
                count_tile<kCount>(counts, kK, kRead, (long long)bc * kD);
                if (kV5 && j >= kV4Stages) mbarrier_wait(empty(s), (j / kV4Stages - 1) & 1);
                mbarrier_expect_bytes(v_full(s), kTileBytes);
                for (int h = 0; h < kHalves; ++h) tma_load(v_at + h * kV4Cols * kSwizzleBytes, &v_map, 64 * h, j * kV4Cols, head, v_full(s));
                count_tile<kCount>(counts, kV, kRead, (long long)bc * kD);
            }
            // The consumers write O and L once (counted here, by the block's thread 0).
            count_tile<kCount>(counts, kO, kWrite, (long long)br * kD);
            count_tile<kCount>(counts, kL, kWrite, br);
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kV4ConsumerRegisters));
    const int consumer = warpgroup - 1, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int my_row = 64 * consumer + 16 * warp + g;  // and my_row + 8, within the tile
    // Q's rows of this warpgroup; K_j; V_j: descriptors of k-step x (16 columns of d, or 16 keys).
    auto q_desc = [&](int x) { return swizzled_descriptor(q_tile + (x / 4) * kV4Rows * kSwizzleBytes + 64 * consumer * kSwizzleBytes + (x % 4) * 32, 16); };
    auto k_desc = [&](int s, int x) { return swizzled_descriptor(k_tiles + s * Layout::kv_bytes + (x / 4) * kV4Cols * kSwizzleBytes + (x % 4) * 32, 16); };
    auto v_desc = [&](int s, int x) { return swizzled_descriptor(v_tiles + s * Layout::kv_bytes + x * 16 * kSwizzleBytes, kV4Cols * kSwizzleBytes); };

    float o[kD / 2];
#pragma unroll
    for (int x = 0; x < kD / 2; ++x) o[x] = 0.f;
    RowState st;
    float s[64];
    uint32_t p[kV4Cols / 16][4];
    float scale[2], sum[2];
    // S_j = Q·K_jᵀ, issued (not waited for).
    auto issue_scores = [&](int j) {
        const int stage = j % kV4Stages;
        mbarrier_wait(k_full(stage), (j / kV4Stages) & 1);
        hold(s);
        wgmma_fence();
#pragma unroll
        for (int x = 0; x < kD / 16; ++x) wgmma_scores<T>(s, q_desc(x), k_desc(stage, x), x > 0);
        wgmma_commit();
    };
    // O += P̃_j·V_j, issued.
    auto issue_values = [&](int j, uint32_t (&pj)[kV4Cols / 16][4]) {
        mbarrier_wait(v_full(j % kV4Stages), (j / kV4Stages) & 1);
        wgmma_fence();
#pragma unroll
        for (int x = 0; x < kV4Cols / 16; ++x) wgmma_values<T, kD>(o, pj[x], v_desc(j % kV4Stages, x));
        wgmma_commit();
    };
    // The softmax of S_j, masked where the tile is ragged or crosses this warp's diagonal.
    auto masked_softmax = [&](int j, float (&to_scale)[2], float (&to_sum)[2], uint32_t (&to_p)[kV4Cols / 16][4]) {
        const int col0 = j * kV4Cols, bc = min(kV4Cols, n - col0);
        if (bc < kV4Cols || (kCausal && col0 + kV4Cols - 1 > row0 + 64 * consumer + 16 * warp))
            mask_scores<kCausal>(s, kCausal ? col0 - row0 : 0, bc, my_row, t);
        softmax_tile<T, kV5>(s, st, to_scale, to_sum, to_p);
    };
    auto release = [&](int j) {
        if (lane == 0) mbarrier_arrive(empty(j % kV4Stages));
    };

    // Ping-pong (consume_tiles): consumer 0 goes first.
    auto my_turn = [&] {
        if constexpr (kV4PingPong) asm volatile("bar.sync %0, 256;\n" ::"r"(1 + consumer) : "memory");
    };
    auto their_turn = [&](bool last) {
        if constexpr (kV4PingPong)
            if (!(last && consumer == 1)) asm volatile("bar.arrive %0, 256;\n" ::"r"(2 - consumer) : "memory");
    };
    if (consumer == 1) their_turn(false);

    mbarrier_wait(q_full, 0);
    uint32_t p_other[kV4Cols / 16][4];
    consume_tiles(
        Tc, p, p_other, my_turn, their_turn, issue_scores, issue_values,
        [&](int j) {
            hold(s);
            if constexpr (kV5)
                if (lane == 0) mbarrier_arrive(k_empty(j % kV4Stages));
        },
        [&](int j, uint32_t (&to_p)[kV4Cols / 16][4]) { masked_softmax(j, scale, sum, to_p); },
        [&](int j) {
            hold(o);
            release(j);
        },
        [&](uint32_t (&p_new)[kV4Cols / 16][4]) {
            rescale<kD>(o, st, scale, sum);
            hold(o);
            hold(p_new);
        });

    // O = diag(ℓ)⁻¹·O, written once; L = m + ln ℓ.
    write_rows<T, kD>(O + ((long long)head * n + row0) * kD, L + (long long)head * n + row0, st, o, my_row, t, br, 1.f, 1.f, 0.f);
#endif  // TOYSIM_SM90A
}

// ---- host: tensor maps and the launch ----

template <bool kCausal, bool kV5>
void launch_v4(const StageArgs& args, const char* name) {
    require_tensor_core_launch(args, name);
    const int n = int(args.params[0]);
    with_half_dtype(args.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_counting(args, [&](auto counting) {
            constexpr bool kCount = decltype(counting)::value;
            with_head_dim(int(args.params[1]), [&](auto dim) {
                constexpr int kD = decltype(dim)::value;
                auto* kernel = fa2_v4_kernel<T, kCount, kD, kCausal, kV5>;
                const long long bytes = V4Layout<kD, kV5>::bytes;
                require_shared_memory(reinterpret_cast<const void*>(kernel), bytes, args, name, "no smaller tile");
                note_launch(args, kernel, kV4Threads, bytes, kV4MinBlocks);
                if (args.plan_only) return;
                require_hopper(name);
                const CUtensorMap q = tensor_map(name, args.arrays[kQ], args.dtype, n, kD, args.heads, kV4Rows);
                const CUtensorMap k = tensor_map(name, args.arrays[kK], args.dtype, n, kD, args.heads, kV4Cols);
                const CUtensorMap v = tensor_map(name, args.arrays[kV], args.dtype, n, kD, args.heads, kV4Cols);
                const dim3 grid(unsigned(cdiv(n, kV4Rows)), unsigned(args.heads));
                kernel<<<grid, kV4Threads, bytes, args.stream>>>(q, k, v, static_cast<T*>(args.arrays[kO]), static_cast<float*>(args.arrays[kL]),
                                                                 n, args.counts);
                check_launch(name);
            });
        });
    });
}

void launch_fa2_v4(int, const StageArgs& args) { launch_v4<false, false>(args, "fa2_v4_wgmma"); }
void launch_fa2_causal_v4(int, const StageArgs& args) { launch_v4<true, false>(args, "fa2_causal_v4_wgmma"); }
void launch_fa2_v5(int, const StageArgs& args) { launch_v4<false, true>(args, "fa2_v5_wgmma"); }
void launch_fa2_causal_v5(int, const StageArgs& args) { launch_v4<true, true>(args, "fa2_causal_v5_wgmma"); }

}  // namespace

extern const KernelEntry kAttentionHopperKernels[] = {
    {"fa2_v4_wgmma", launch_fa2_v4},
    {"fa2_causal_v4_wgmma", launch_fa2_causal_v4},
    {"fa2_v5_wgmma", launch_fa2_v5},
    {"fa2_causal_v5_wgmma", launch_fa2_causal_v5},
};
extern const int kAttentionHopperKernelCount = sizeof(kAttentionHopperKernels) / sizeof(kAttentionHopperKernels[0]);

}  // namespace toysim::gpu
