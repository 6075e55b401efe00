// FlashAttention-2 forward in FP8 on Hopper: fa2_v4_wgmma (gpu/kernels/attention_hopper.cu) with
// e4m3 operands, the CUDA twin of programs/attention/fa2.toy at Br = Bc = 128, d = 128 (and of
// fa2_causal_heaviest_first.toy at B = 128), run with `--dtype e4m3`:
//
//   toysim gpu run programs/attention/fa2.toy --kernel fa2_fp8_wgmma
//       --set n=4096 --set d=128 --set Br=128 --set Bc=128 --heads 16 --dtype e4m3
//
// What changes from v4:
//  - Q, K and V are e4m3 (1 byte), each stored times a power of two of its own (the runtime picks
//    it so the tensor's largest value lands near e4m3's 448: StageArgs::descale has its inverse).
//    S = Q·Kᵀ and O += P̃·V run as wgmma m64n128k32 e4m3 → fp32: twice fp16's rate, half its bytes.
//  - P̃ is rounded to e4m3 for P̃·V, scaled by 2⁸ so that its small terms stay normal numbers
//    (e4m3's smallest normal is 2⁻⁶); ℓ sums the unrounded values with the same 2⁸, which the
//    final division cancels. The descales of Q and K fold into the softmax's exponent, V's into
//    the final 1/ℓ: no extra multiply in the loop.
//  - wgmma reads an 8-bit B operand only K-major, and V's rows are keys: the product P̃·V needs
//    Vᵀ. The producer warpgroup transposes each V tile in shared memory after TMA brings it
//    (FlashAttention-3 does the same), so the traffic stays fa2.toy's: V is read once per tile.
//  - The accumulator a thread holds (columns 2t, 2t+1 of each group of 8) is not the A fragment
//    an 8-bit wgmma reads (columns 4t..4t+3 of each group of 16). Rather than move values between
//    lanes, the transpose permutes V's keys to match: key position 16h + 4t + e of Vᵀ holds key
//    16h + 8⌊e/2⌋ + 2t + (e mod 2). P̃·V sums over keys, so any order both operands share is exact.
//  - O is written in fp16 (as FlashAttention-3's FP8 forward writes it), L in fp32.
//
// Traffic is fa2.toy's at Br = Bc = 128, exactly, in elements; in bytes, Q, K and V take 1 each.
//
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "gpu/kernels/hopper.cuh"

namespace toysim::gpu {

namespace {

using namespace hopper;

enum Fa2Array { kQ, kK, kV, kO, kL };

constexpr int kRows = 128, kCols = 128, kD = 128;  // Br, Bc, d: a row of e4m3 is one 128-byte swizzled row
constexpr int kThreads = 384;                       // producer + 2 consumers
constexpr int kMinBlocks = 1;
constexpr int kStages = 2;
// setmaxnreg: the producer gives registers back, the consumers take them. The block launches
// with 168 a thread (65536 / 384, in units of 8) and the consumers' increase waits until the
// block's own registers cover it: asking for more would wait forever (it did, at 64 + 2·224).
constexpr int kProducerRegisters = 64, kConsumerRegisters = 216;
static_assert(kProducerRegisters + 2 * kConsumerRegisters <= 3 * (65536 / kThreads / 8 * 8), "setmaxnreg.inc would wait forever");
constexpr int kTileBytes = kRows * kD;              // 16 KiB: a Q, K, V or Vᵀ tile
constexpr float kPScale = 8.f;                      // P̃ is e^(S − m)·2⁸ (log2 of it)
// Shared memory, every tile 1024-byte aligned: Q, then per stage K, V (as TMA wrote it) and Vᵀ.
struct Layout {
    static constexpr int q = 0;
    static constexpr int k = q + kTileBytes;
    static constexpr int v = k + kStages * kTileBytes;
    static constexpr int vt = v + kStages * kTileBytes;
    static constexpr int barriers = vt + kStages * kTileBytes;
    // q_full, then per stage k_full, v_full, vt_full, k_empty, vt_empty: 8 bytes each
    static constexpr int bytes = barriers + 8 * (1 + 5 * kStages) + 1024;
};

#ifdef TOYSIM_SM90A
// S (64×128, fp32) = Q·Kᵀ (+ S): A 64×32 and B 128×32, K-major e4m3 in shared memory.
__device__ __forceinline__ void wgmma_scores_e4m3(float (&s)[64], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(TOYSIM_WGMMA("m64n128k32", "e4m3", TOYSIM_ACC64, "%64, %65, p, 1, 1", "%66") : TOYSIM_F64(s) : "l"(a), "l"(b), "r"(accumulate));
}
// O (64×128, fp32) += P̃·V: P̃ 64×32 e4m3 from registers, Vᵀ 128×32 K-major in shared memory.
__device__ __forceinline__ void wgmma_values_e4m3(float (&o)[64], const uint32_t (&p)[4], uint64_t b) {
    asm volatile(TOYSIM_WGMMA("m64n128k32", "e4m3", TOYSIM_ACC64, "{%64, %65, %66, %67}, %68, p, 1, 1", "1")
                 : TOYSIM_F64(o)
                 : "r"(p[0]), "r"(p[1]), "r"(p[2]), "r"(p[3]), "l"(b));
}

// Four floats as e4m3, the first in the lowest byte.
__device__ __forceinline__ uint32_t pack4_e4m3(float a, float b, float c, float d) {
    const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
    const uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
    return lo | (hi << 16);
}

// The online softmax of one S tile as v4's, with S in stored units: `to_log2` = log2(e) times Q's
// and K's descales turns S into the exponent base 2. P̃ is computed in place of S (the next
// Q·Kᵀ overwrites it: no second 64-register array) and lands as the e4m3 A fragments of the four
// k-steps of P̃·V: register r of step x is row g + 8(r mod 2), Vᵀ positions 32x + 16⌊r/2⌋ + 4t..+3,
// which hold keys 32x + 16⌊r/2⌋ + {2t, 2t+1, 2t+8, 2t+9}: accumulator groups c = 4x + 2⌊r/2⌋ and c + 1.
__device__ __forceinline__ void softmax_tile_e4m3(float (&s)[64], RowState& st, float to_log2, float (&scale)[2], float (&sum)[2],
                                                  uint32_t (&p)[kCols / 32][4]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float mx = fmaxf(st.m[h], row_max(s, h));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        scale[h] = fast_exp2((st.m[h] - mx) * to_log2);
        st.m[h] = mx;
        const float bias = kPScale - mx * to_log2;
        sum[h] = 0.f;  // one chain: off the path to the next products, which wait for P̃, not ℓ
#pragma unroll
        for (int c = 0; c < kCols / 8; ++c) {
            s[4 * c + 2 * h] = fast_exp2(fmaf(s[4 * c + 2 * h], to_log2, bias));
            s[4 * c + 2 * h + 1] = fast_exp2(fmaf(s[4 * c + 2 * h + 1], to_log2, bias));
            sum[h] += s[4 * c + 2 * h] + s[4 * c + 2 * h + 1];
        }
    }
#pragma unroll
    for (int x = 0; x < kCols / 32; ++x)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int c = 4 * x + 2 * (r / 2), h = r % 2;
            p[x][r] = pack4_e4m3(s[4 * c + 2 * h], s[4 * c + 2 * h + 1], s[4 * (c + 1) + 2 * h], s[4 * (c + 1) + 2 * h + 1]);
        }
}

// Byte i of each of a, b, c, d, as the bytes of one word (a's lowest).
__device__ __forceinline__ uint32_t gather_byte(uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t i) {
    const uint32_t pick = i | ((4 + i) << 4);  // prmt: byte i of the first word, then of the second
    return __byte_perm(__byte_perm(a, b, pick), __byte_perm(c, d, pick), 0x5410);
}

// Vᵀ from V, one stage, by the producer warpgroup's 128 threads: both tiles 128 rows of 128
// bytes, 128-byte swizzled (16-byte chunk q of row r at chunk q ^ (r mod 8)); v and vt are
// shared-memory addresses (ld.shared and st.shared: generic ones cost 64-bit arithmetic and the
// generic path's latency). A thread takes 16 keys × 4 columns at a time: 16 conflict-free 4-byte
// reads (a warp reads whole key rows), then 4 rows of Vᵀ, 16 bytes each, in the permuted key
// order. Lane b writes its rows starting from row 4b + ⌊b/2⌋ mod 4, so the 8 lanes of a 16-byte
// store phase hit 8 distinct chunks.
__device__ __forceinline__ void transpose_v(uint32_t v, uint32_t vt, int tid) {
    const int lane = tid % 32, warp = tid / 32;
    const int b = lane;  // columns 4b..4b+3 of V: rows 4b..4b+3 of Vᵀ
    // Row r's columns 4b..4b+3 are at r·128 + ((b/4) ^ (r mod 8))·16 + (b mod 4)·4; r mod 8 is
    // k mod 8 for key 16a + k.
    uint32_t column[8];
#pragma unroll
    for (int c = 0; c < 8; ++c) column[c] = v + (((b / 4) ^ c) * 16) + (b % 4) * 4;
#pragma unroll 1  // one unit's 16 words at a time, in the producer's registers
    for (int u = 0; u < 2; ++u) {
        const int a = 2 * warp + u;  // keys 16a..16a+15
        uint32_t w[16];
#pragma unroll
        for (int k = 0; k < 16; ++k)
            asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(w[k]) : "r"(column[k % 8] + (16 * a + k) * 128) : "memory");
#pragma unroll
        for (int step = 0; step < 4; ++step) {
            const uint32_t i = uint32_t(step + b / 2) % 4;  // this lane's row of the four, this step
            // Position 4t + e (t = 0..3) of the 16 holds key 8⌊e/2⌋ + 2t + (e mod 2).
            const uint32_t x = gather_byte(w[0], w[1], w[8], w[9], i), y = gather_byte(w[2], w[3], w[10], w[11], i);
            const uint32_t z = gather_byte(w[4], w[5], w[12], w[13], i), q = gather_byte(w[6], w[7], w[14], w[15], i);
            const int row = 4 * b + int(i);
            asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(vt + row * 128 + ((a ^ (row % 8)) * 16)), "r"(x), "r"(y), "r"(z), "r"(q)
                         : "memory");
        }
    }
}
#endif  // TOYSIM_SM90A

template <bool kCount, bool kCausal>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    fa2_fp8_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map, const __grid_constant__ CUtensorMap v_map,
                   __half* __restrict__ O, float* __restrict__ L, int n, float q_descale, float k_descale, float v_descale,
                   unsigned long long* counts) {
#ifdef TOYSIM_SM90A
    extern __shared__ unsigned char shared_raw[];
    unsigned char* shared = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(shared_raw) + 1023) & ~uintptr_t(1023));
    const uint32_t base = smem_address(shared);
    const uint32_t q_tile = base + Layout::q;
    const uint32_t q_full = base + Layout::barriers;
    auto k_full = [&](int s) { return q_full + 8 * (1 + s); };
    auto v_full = [&](int s) { return q_full + 8 * (1 + kStages + s); };
    auto vt_full = [&](int s) { return q_full + 8 * (1 + 2 * kStages + s); };
    // K_j's stage is free once S_j is computed, Vᵀ_j's once P̃_j·V_j is: two barriers, so that
    // K_{j+2} is loaded while the consumers are still on tile j + 1, not after.
    auto k_empty = [&](int s) { return q_full + 8 * (1 + 3 * kStages + s); };
    auto vt_empty = [&](int s) { return q_full + 8 * (1 + 4 * kStages + s); };

    const int i = kCausal ? int(gridDim.x) - 1 - int(blockIdx.x) : int(blockIdx.x), head = blockIdx.y;
    const int row0 = i * kRows, br = min(kRows, n - row0);
    const int Tc = kCausal ? (row0 + br + kCols - 1) / kCols : (n + kCols - 1) / kCols;
    const int warpgroup = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        mbarrier_init(q_full, 1);
        for (int s = 0; s < kStages; ++s) {
            mbarrier_init(k_full(s), 1);
            mbarrier_init(v_full(s), 1);
            mbarrier_init(vt_full(s), 128);  // the producer's threads, each after its part of Vᵀ
            mbarrier_init(k_empty(s), 8);    // the 8 consumer warps
            mbarrier_init(vt_empty(s), 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (warpgroup == 0) {
        // The producer: thread 0 issues the copies; all 128 threads transpose V.
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegisters));
        const int tid = threadIdx.x;
        // K_j and V_j into stage j mod kStages: K once S_{j−2} is computed; V (as TMA writes it)
        // once this warpgroup has transposed V_{j−2}, which the loop's named barrier says.
        auto load = [&](int j) {
            const int s = j % kStages, bc = min(kCols, n - j * kCols);
            if (j >= kStages) mbarrier_wait(k_empty(s), (j / kStages - 1) & 1);
            mbarrier_expect_bytes(k_full(s), kTileBytes);
            tma_load(base + Layout::k + s * kTileBytes, &k_map, 0, j * kCols, head, k_full(s));
            count_tile<kCount>(counts, kK, kRead, (long long)bc * kD);
            mbarrier_expect_bytes(v_full(s), kTileBytes);
            tma_load(base + Layout::v + s * kTileBytes, &v_map, 0, j * kCols, head, v_full(s));
            count_tile<kCount>(counts, kV, kRead, (long long)bc * kD);
        };
        if (tid == 0) {
            mbarrier_expect_bytes(q_full, kTileBytes);
            tma_load(q_tile, &q_map, 0, row0, head, q_full);
            count_tile<kCount>(counts, kQ, kRead, (long long)br * kD);
            load(0);
        }
        for (int j = 0; j < Tc; ++j) {
            const int s = j % kStages;
            if (tid == 0 && j + 1 < Tc) load(j + 1);  // in flight while this tile is transposed
            mbarrier_wait(v_full(s), (j / kStages) & 1);
            if (j >= kStages) mbarrier_wait(vt_empty(s), (j / kStages - 1) & 1);  // P̃_{j−2}·V_{j−2} is done
            transpose_v(base + Layout::v + s * kTileBytes, base + Layout::vt + s * kTileBytes, tid);
            // Written through the generic proxy, read by wgmma through the async one.
            asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
            mbarrier_arrive(vt_full(s));
            // Every thread is done with this V stage before thread 0 loads tile j + 2 into it.
            asm volatile("bar.sync 3, 128;\n" ::: "memory");
        }
        if (tid == 0) {
            count_tile<kCount>(counts, kO, kWrite, (long long)br * kD);
            count_tile<kCount>(counts, kL, kWrite, br);
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegisters));
    const int consumer = warpgroup - 1, tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const int my_row = 64 * consumer + 16 * warp + g;
    const float to_log2 = kLog2e * q_descale * k_descale;
    auto q_desc = [&](int x) { return swizzled_descriptor(q_tile + 64 * consumer * 128 + x * 32, 16); };
    auto k_desc = [&](int s, int x) { return swizzled_descriptor(base + Layout::k + s * kTileBytes + x * 32, 16); };
    auto vt_desc = [&](int s, int x) { return swizzled_descriptor(base + Layout::vt + s * kTileBytes + x * 32, 16); };

    float o[kD / 2];
#pragma unroll
    for (int x = 0; x < kD / 2; ++x) o[x] = 0.f;
    RowState st;
    float s[64];
    uint32_t p[kCols / 32][4];
    float scale[2], sum[2];
    auto issue_scores = [&](int j) {
        const int stage = j % kStages;
        mbarrier_wait(k_full(stage), (j / kStages) & 1);
        hold(s);
        wgmma_fence();
#pragma unroll
        for (int x = 0; x < kD / 32; ++x) wgmma_scores_e4m3(s, q_desc(x), k_desc(stage, x), x > 0);
        wgmma_commit();
    };
    auto issue_values = [&](int j, uint32_t (&pj)[kCols / 32][4]) {
        mbarrier_wait(vt_full(j % kStages), (j / kStages) & 1);
        wgmma_fence();
#pragma unroll
        for (int x = 0; x < kCols / 32; ++x) wgmma_values_e4m3(o, pj[x], vt_desc(j % kStages, x));
        wgmma_commit();
    };
    auto masked_softmax = [&](int j, float (&to_scale)[2], float (&to_sum)[2], uint32_t (&to_p)[kCols / 32][4]) {
        const int col0 = j * kCols, bc = min(kCols, n - col0);
        if (bc < kCols || (kCausal && col0 + kCols - 1 > row0 + 64 * consumer + 16 * warp))
            mask_scores<kCausal, kCols>(s, kCausal ? col0 - row0 : 0, bc, my_row, t);
        softmax_tile_e4m3(s, st, to_log2, to_scale, to_sum, to_p);
    };
    auto release_k = [&](int j) {
        if (lane == 0) mbarrier_arrive(k_empty(j % kStages));
    };
    auto release_v = [&](int j) {
        if (lane == 0) mbarrier_arrive(vt_empty(j % kStages));
    };
    // Ping-pong between the consumers, as v4's (named barriers 1 and 2; 3 is the producer's).
    auto my_turn = [&] { asm volatile("bar.sync %0, 256;\n" ::"r"(1 + consumer) : "memory"); };
    auto their_turn = [&](bool last) {
        if (!(last && consumer == 1)) asm volatile("bar.arrive %0, 256;\n" ::"r"(2 - consumer) : "memory");
    };
    if (consumer == 1) their_turn(false);

    mbarrier_wait(q_full, 0);
    uint32_t p_other[kCols / 32][4];
    consume_tiles(
        Tc, p, p_other, my_turn, their_turn, issue_scores, issue_values,
        [&](int j) {
            hold(s);
            release_k(j);
        },
        [&](int j, uint32_t (&to_p)[kCols / 32][4]) { masked_softmax(j, scale, sum, to_p); },
        [&](int j) {
            hold(o);
            release_v(j);
        },
        [&](uint32_t (&p_new)[kCols / 32][4]) {
            rescale<kD>(o, st, scale, sum);
            hold(o);
            hold(p_new);
        });

    // O = diag(ℓ)⁻¹·O·descale(V), fp16; L = m·descale(Q)·descale(K) + ln(ℓ / 2⁸).
    write_rows<__half, kD>(O + ((long long)head * n + row0) * kD, L + (long long)head * n + row0, st, o, my_row, t, br, v_descale,
                           q_descale * k_descale, kPScale * 0.69314718055994531f);
#endif  // TOYSIM_SM90A
}

template <bool kCausal>
void launch_fp8(const StageArgs& args, const char* name) {
    if (args.dtype != DType::E4M3) throw GpuError(std::string(name) + " runs in e4m3 (--dtype e4m3)");
    require_tensor_core_launch(args, name);
    const int n = int(args.params[0]);
    with_counting(args, [&](auto counting) {
        constexpr bool kCount = decltype(counting)::value;
        auto* kernel = fa2_fp8_kernel<kCount, kCausal>;
        const long long bytes = Layout::bytes;
        require_shared_memory(reinterpret_cast<const void*>(kernel), bytes, args, name, "no smaller tile");
        note_launch(args, kernel, kThreads, bytes, kMinBlocks);
        if (args.plan_only) return;
        require_hopper(name);
        const CUtensorMap q = tensor_map(name, args.arrays[kQ], DType::E4M3, n, kD, args.heads, kRows);
        const CUtensorMap k = tensor_map(name, args.arrays[kK], DType::E4M3, n, kD, args.heads, kCols);
        const CUtensorMap v = tensor_map(name, args.arrays[kV], DType::E4M3, n, kD, args.heads, kCols);
        const dim3 grid(unsigned(cdiv(n, kRows)), unsigned(args.heads));
        kernel<<<grid, kThreads, bytes, args.stream>>>(q, k, v, static_cast<__half*>(args.arrays[kO]), static_cast<float*>(args.arrays[kL]), n,
                                                        args.descale[kQ], args.descale[kK], args.descale[kV], args.counts);
        check_launch(name);
    });
}

void launch_fa2_fp8(int, const StageArgs& args) { launch_fp8<false>(args, "fa2_fp8_wgmma"); }
void launch_fa2_causal_fp8(int, const StageArgs& args) { launch_fp8<true>(args, "fa2_causal_fp8_wgmma"); }

}  // namespace

extern const KernelEntry kAttentionFp8Kernels[] = {
    {"fa2_fp8_wgmma", launch_fa2_fp8},
    {"fa2_causal_fp8_wgmma", launch_fa2_causal_fp8},
};
extern const int kAttentionFp8KernelCount = sizeof(kAttentionFp8Kernels) / sizeof(kAttentionFp8Kernels[0]);

}  // namespace toysim::gpu
