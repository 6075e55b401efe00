// The tensor-core kernels' device helpers (sm_80 and later): cp.async copies, ldmatrix,
// mma.sync m16n8k16, packing pairs of fp16/bf16, ex2, and the XOR-swizzled tile layout that the
// forward versions (gpu/kernels/attention_tensor_core.cu), the backward (gpu/kernels/attention_backward_tensor_core.cu)
// and the Hopper versions (gpu/kernels/attention_hopper.cu) share.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace toysim::gpu {

inline constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ uint32_t smem_address(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// 16 bytes global → shared without stalling the thread; with `valid` false, zeros (rows past n).
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(valid ? 16 : 0));
}
// 4 bytes: L and D, whose rows start at any float (h·n + i·Br), so no 16-byte copies.
__device__ __forceinline__ void cp_async4(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst)), "l"(src), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Four 8×8 matrices of 16-bit elements; lane l addresses row l mod 8 of matrix l / 8. Register r
// of lane 4g + t: matrix r's (row g, columns 2t, 2t+1), or with .trans its (rows 2t, 2t+1, column g).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_address(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_address(p)));
}

// C (16×8, fp32) += A (16×16) · B (16×8).
template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (std::is_same_v<T, __half>) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}

// Two floats as a pair of T in one register, the first in the low half (the lower column).
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
    if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<const uint32_t*>(&h);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<const uint32_t*>(&h);
    }
}

template <typename T>
__device__ __forceinline__ float2 unpack2(uint32_t x) {
    if constexpr (std::is_same_v<T, __half>) return __half22float2(*reinterpret_cast<const __half2*>(&x));
    else return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&x));
}

__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// Element offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of kCols columns
// (kCols >= 64: at least 8 chunks a row).
template <int kCols>
__device__ __forceinline__ int swizzled(int row, int chunk) {
    return row * kCols + ((chunk ^ (row & 7)) << 3);
}

// rows × kD elements, row-major in global memory, into a swizzled tile; rows from `valid` on
// are zero-filled and their source is not read.
template <typename T, int kD, int kThreads>
__device__ __forceinline__ void load_tile_async(T* dst, const T* src, int rows, int valid) {
    constexpr int kChunks = kD / 8;
#pragma unroll
    for (int c = threadIdx.x; c < rows * kChunks; c += kThreads) {
        const int r = c / kChunks, x = c % kChunks;
        const bool real = r < valid;
        cp_async16(dst + swizzled<kD>(r, x), src + (real ? (long long)r * kD + x * 8 : 0), real);
    }
}

}  // namespace toysim::gpu
