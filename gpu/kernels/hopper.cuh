// What the Hopper kernels share (sm_90a: fa2_v4_wgmma in attention_hopper.cu, the FP8 forward in
// attention_fp8.cu): the PTX of mbarriers, TMA copies and wgmma, the layout of a wgmma accumulator
// a consumer thread holds, the online-softmax row state, and on the host the tensor maps TMA reads.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (the encoder comes from the driver at run time)

#include <cmath>
#include <cstdint>
#include <string>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/mma.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TOYSIM_SM90A 1
#endif

namespace toysim::gpu::hopper {

// ---- PTX: mbarriers, TMA, wgmma (sm_90a only; elsewhere the kernel body is empty) ----

#ifdef TOYSIM_SM90A
__device__ __forceinline__ void mbarrier_init(uint32_t bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbarrier_expect_bytes(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint32_t bar) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory"); }
// Waits until the barrier's phase `parity` has completed.
__device__ __forceinline__ void mbarrier_wait(uint32_t bar, uint32_t parity) {
    uint32_t done = 0;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}
// A box of the tensor map at coordinates (column, row, head) into shared memory; its bytes
// complete a transaction of `bar`.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int column, int row, int head, uint32_t bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
        "l"(reinterpret_cast<uint64_t>(map)), "r"(column), "r"(row), "r"(head), "r"(bar)
        : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Orders register uses around an asynchronous product: this empty statement uses and redefines
// the registers, so the compiler reads an accumulator only after the wait that completes it, and
// computes P̃ and the rescaled O before the products that read them are issued.
template <int kCount>
__device__ __forceinline__ void hold(float (&r)[kCount]) {
#pragma unroll
    for (int i = 0; i < kCount; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int kRows, int kCols>
__device__ __forceinline__ void hold(uint32_t (&r)[kRows][kCols]) {
#pragma unroll
    for (int i = 0; i < kRows; ++i)
#pragma unroll
        for (int j = 0; j < kCols; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}
#endif

#define TOYSIM_F8(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define TOYSIM_F32(d) TOYSIM_F8(d, 0), TOYSIM_F8(d, 8), TOYSIM_F8(d, 16), TOYSIM_F8(d, 24)
#define TOYSIM_F64(d) TOYSIM_F32(d), TOYSIM_F8(d, 32), TOYSIM_F8(d, 40), TOYSIM_F8(d, 48), TOYSIM_F8(d, 56)
#define TOYSIM_ACC32                                                                                                                      \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, " \
    "%28, %29, %30, %31}"
#define TOYSIM_ACC64                                                                                                                      \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, " \
    "%28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, " \
    "%54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"

#ifdef TOYSIM_SM90A
// A wgmma shared-memory descriptor for a 128-byte-swizzled tile: start address, the leading
// byte offset (for an N-major B: from one 64-column half to the next), the stride byte offset
// 1024 (from one 8-row group to the next) and the swizzle mode (1: 128 bytes) in bits 62-63.
__device__ __forceinline__ uint64_t swizzled_descriptor(uint32_t address, uint32_t leading_bytes) {
    return uint64_t((address & 0x3FFFF) >> 4) | (uint64_t(leading_bytes >> 4) << 16) | (uint64_t(1024 >> 4) << 32) | (1ull << 62);
}

// The wgmma statements, fp16 or bf16 (TYPE), scale-d set by a predicate (accumulate or not).
#define TOYSIM_WGMMA(SHAPE, TYPE, ACC, OPERANDS, PREDICATE) \
    "{\n.reg .pred p;\nsetp.ne.b32 p, " PREDICATE ", 0;\nwgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE " " ACC ", " OPERANDS ";\n}\n"


// One consumer thread's rows: the accumulator of a 64×N wgmma gives lane 4g + t of warp w rows
// 16w + g and 16w + g + 8 (h = 0, 1), columns 8c + 2t and 8c + 2t + 1 at s[4c + 2h], s[4c + 2h + 1].
struct RowState {
    float m[2] = {-INFINITY, -INFINITY};
    float l[2] = {0.f, 0.f};  // this lane's part of ℓ; the quad's parts are summed at the end
};

// −∞ where a column is past n (the last, ragged K/V tile) or, causal, after the row's query.
template <bool kCausal, int kCols = 128>
__device__ __forceinline__ void mask_scores(float (&s)[64], int col0, int cols, int row, int t) {
#pragma unroll
    for (int c = 0; c < kCols / 8; ++c)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int col = 8 * c + 2 * t + (e & 1);
            if (col >= cols || (kCausal && col0 + col > row + 8 * (e >> 1))) s[4 * c + e] = -INFINITY;
        }
}

template <int kD>
__device__ __forceinline__ void rescale(float (&o)[kD / 2], RowState& st, const float (&scale)[2], const float (&sum)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) st.l[h] = st.l[h] * scale[h] + sum[h];
#pragma unroll
    for (int c = 0; c < kD / 8; ++c) {
        o[4 * c] *= scale[0];
        o[4 * c + 1] *= scale[0];
        o[4 * c + 2] *= scale[1];
        o[4 * c + 3] *= scale[1];
    }
}

// The largest of this thread's 32 scores of row h of a 64×128 accumulator (s[4c + 2h] and
// s[4c + 2h + 1]), over 4 partial maxima: chains of 8 dependent instructions, not one of 32. A
// consumer warp has no other warp of its warpgroup to hide the chain behind, and P̃ waits for it.
__device__ __forceinline__ float row_max(const float (&s)[64], int h) {
    float part[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) part[e] = fmaxf(s[4 * e + 2 * h], s[4 * e + 2 * h + 1]);
#pragma unroll
    for (int c = 4; c < 16; ++c) part[c % 4] = fmaxf(part[c % 4], fmaxf(s[4 * c + 2 * h], s[4 * c + 2 * h + 1]));
    return fmaxf(fmaxf(part[0], part[1]), fmaxf(part[2], part[3]));
}

// The consumers' schedule over a Q tile's Tc K/V tiles, which v4 and the FP8 kernel share; each
// kernel says what a step does in its own types:
//   my_turn(), their_turn(last)   ping-pong: named barrier 1 + c is consumer c's turn, the other
//                                 consumer opens it once its own products are issued;
//   issue_scores(j)               S_j = Q·K_jᵀ, issued (not waited for);
//   issue_values(j, p)            O += P̃_j·V_j from the register set p, issued;
//   scores_done(j)                S_j is in registers (K_j's stage may be released);
//   softmax(j, p)                 the masked online softmax of S_j, P̃_j into p;
//   values_done(j)                P̃_j·V_j is done: O is free, V_j's stage may be released;
//   rescale(p)                    O and ℓ rescaled; O and p held final (hold()).
// S_j and P̃_{j−1}·V_{j−1} are issued together, and the softmax of S_j runs while the tensor
// cores do P̃_{j−1}·V_{j−1} (FlashAttention-3's intra-warpgroup overlap). Tile j's P̃ goes to one
// of two register sets while P̃_{j−1}·V_{j−1} reads the other: nothing a wgmma in flight reads is
// written (ptxas would serialize the wgmmas otherwise), hence the tiles two at a time. Each
// consumer takes Tc + 1 turns; the second skips its last opening, which nobody waits for.
template <typename Frag, typename MyTurn, typename TheirTurn, typename IssueScores, typename IssueValues, typename ScoresDone, typename Softmax,
          typename ValuesDone, typename Rescale>
__device__ __forceinline__ void consume_tiles(int Tc, Frag& p, Frag& p_other, MyTurn&& my_turn, TheirTurn&& their_turn, IssueScores&& issue_scores,
                                              IssueValues&& issue_values, ScoresDone&& scores_done, Softmax&& softmax, ValuesDone&& values_done,
                                              Rescale&& rescale) {
    my_turn();
    issue_scores(0);
    their_turn(false);
    wgmma_wait<0>();
    scores_done(0);
    softmax(0, p);
    rescale(p);
    auto step = [&](int j, Frag& p_prev, Frag& p_new) {
        my_turn();
        issue_scores(j);              // S_j on the tensor cores ...
        issue_values(j - 1, p_prev);  // ... then P̃_{j−1}·V_{j−1} behind it
        their_turn(false);
        wgmma_wait<1>();  // S_j is done; P̃_{j−1}·V_{j−1} may still run
        scores_done(j);
        softmax(j, p_new);  // ... while the tensor cores do that
        wgmma_wait<0>();    // P̃_{j−1}·V_{j−1} is done: O is free
        values_done(j - 1);
        rescale(p_new);
    };
    auto last_values = [&](Frag& p_last) {
        my_turn();
        issue_values(Tc - 1, p_last);
        their_turn(true);
        wgmma_wait<0>();
        values_done(Tc - 1);
    };
    int j = 1;
    for (; j + 1 < Tc; j += 2) {
        step(j, p, p_other);
        step(j + 1, p_other, p);
    }
    if (j < Tc) {  // one tile left after the pairs: its P̃ lands in p_other
        step(j, p, p_other);
        last_values(p_other);
    } else {
        last_values(p);
    }
}

// The epilogue: this thread's two rows of O = diag(ℓ)⁻¹·O·o_scale, written once as T, and
// L = m·m_scale + ln ℓ − ln_offset (ℓ summed over the quad first); rows past br are not stored.
// O and L point at the tile's first row.
template <typename T, int kD>
__device__ __forceinline__ void write_rows(T* O, float* L, const RowState& st, const float (&o)[kD / 2], int my_row, int t, int br, float o_scale,
                                           float m_scale, float ln_offset) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float l = st.l[h];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const int r = my_row + 8 * h;
        if (r < br) {
            const float inv = o_scale / l;
#pragma unroll
            for (int c = 0; c < kD / 8; ++c)
                *reinterpret_cast<uint32_t*>(O + (long long)r * kD + 8 * c + 2 * t) = pack2<T>(o[4 * c + 2 * h] * inv, o[4 * c + 2 * h + 1] * inv);
            if (t == 0) L[r] = st.m[h] * m_scale + logf(l) - ln_offset;
        }
    }
}
#endif  // TOYSIM_SM90A

// ---- host ----

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// The driver's cuTensorMapEncodeTiled, found at run time (the build links no libcuda).
inline EncodeTiled tensor_map_encoder(const char* name) {
    static EncodeTiled encode = [name] {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found{};
        cuda_check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found), "finding cuTensorMapEncodeTiled");
        if (!fn || found != cudaDriverEntryPointSuccess) throw GpuError(std::string("this driver has no cuTensorMapEncodeTiled (TMA): ") + name + " needs CUDA 12 or later");
        return reinterpret_cast<EncodeTiled>(fn);
    }();
    return encode;
}

// Q, K or V of every head, [heads][n][d] of `dtype`, as a 3-D tensor read in boxes of one
// 128-byte swizzled row (64 columns of fp16 or bf16, 128 of e4m3) × `rows` rows of one head;
// rows past n read as zeros.
inline CUtensorMap tensor_map(const char* name, const void* array, DType dtype, int n, int d, long long heads, int rows) {
    CUtensorMap map{};
    const cuuint64_t bytes = cuuint64_t(dtype_bytes(dtype));
    const cuuint64_t dims[3] = {cuuint64_t(d), cuuint64_t(n), cuuint64_t(heads)};
    const cuuint64_t strides[2] = {cuuint64_t(d) * bytes, cuuint64_t(n) * d * bytes};  // bytes, of dims 1 and 2
    const cuuint32_t box[3] = {cuuint32_t(128 / bytes), cuuint32_t(rows), 1};
    const cuuint32_t element_strides[3] = {1, 1, 1};
    const CUtensorMapDataType type = dtype == DType::E4M3 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                     : dtype == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                            : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    const CUresult status = tensor_map_encoder(name)(&map, type, 3, const_cast<void*>(array), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                     CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (status != CUDA_SUCCESS) throw GpuError(std::string(name) + ": cuTensorMapEncodeTiled failed (error " + std::to_string(int(status)) + ")");
    return map;
}

inline void require_hopper(const char* name) {
    int device = 0, major = 0, minor = 0;
    cuda_check(cudaGetDevice(&device), "querying the device");
    cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "querying the device");
    cuda_check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "querying the device");
    if (major != 9 || minor != 0)
        throw GpuError(std::string(name) + " runs on Hopper (sm_90: wgmma, TMA, setmaxnreg); this GPU is sm_" + std::to_string(10 * major + minor) +
                       ": use fa2_v3_mma");
}

}  // namespace toysim::gpu::hopper
