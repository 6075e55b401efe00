// Tiles in shared memory as fp32, for the kernels that run their products on the CUDA cores
// (attention_forward.cu, attention_backward.cu): the block size, row strides, and loads from
// global memory (storage T) that convert once and write the padding as zeros.
#pragma once

#include <cstdint>

#include "gpu/kernels/common.cuh"

namespace toysim::gpu {

constexpr int kBlockThreads = 256;  // a block of the CUDA-core kernels: 8 warps

__host__ __device__ constexpr int pad4(int k) { return (k + 3) / 4 * 4; }

// A shared-memory row holding a reduction dimension of `k` elements: padded to a multiple of
// 4 (the products read 4 elements at a time; the padding is zero) and to an odd number of
// fours, so that lanes reading consecutive rows at the same k hit different banks.
__host__ __device__ constexpr int row_stride(int k) {
    const int w = pad4(k);
    return (w / 4) % 2 == 0 ? w + 4 : w;
}

// Four consecutive elements as fp32 (4-element aligned).
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 load4(const __half* p) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
    const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
    return {a.x, a.y, b.x, b.y};
}
__device__ __forceinline__ float4 load4(const __nv_bfloat16* p) {
    const uint2 u = *reinterpret_cast<const uint2*>(p);
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
    const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
    return {a.x, a.y, b.x, b.y};
}

// Loads: global (storage T, row-major, rows `src_ld` apart) to shared memory (fp32). Only
// `rows`×`cols` elements exist (the program's clipped slice); the rest of the rows_alloc ×
// cols_alloc tile is written with zeros, so a product over the padded tile needs no bounds.
// Where rows allow (a multiple of 4 elements, aligned), a thread moves 4 consecutive
// elements at once: one 8- or 16-byte load, one conversion, a quarter of the index work.

// Every row of the slice starts on a 4-element boundary and holds a multiple of 4 elements.
template <typename T>
__device__ __forceinline__ bool by_fours(const T* src, long long src_ld, int cols) {
    return cols % 4 == 0 && src_ld % 4 == 0 && reinterpret_cast<std::uintptr_t>(src) % (4 * sizeof(T)) == 0;
}

// dst[r][c] = src[r][c]: consecutive threads read consecutive elements (or fours) of a row.
// cols_alloc is a multiple of 4 (a padded reduction length).
template <typename T>
__device__ void load_tile(float* dst, int dst_ld, const T* src, long long src_ld, int rows, int cols, int rows_alloc, int cols_alloc) {
    if (by_fours(src, src_ld, cols)) {
        const int fours = cols_alloc / 4;
        for (int e = threadIdx.x; e < rows_alloc * fours; e += kBlockThreads) {
            const int r = e / fours, c = (e - r * fours) * 4;
            *reinterpret_cast<float4*>(dst + r * dst_ld + c) =
                r < rows && c < cols ? load4(src + r * src_ld + c) : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        return;
    }
    for (int e = threadIdx.x; e < rows_alloc * cols_alloc; e += kBlockThreads) {
        const int r = e / cols_alloc, c = e % cols_alloc;
        dst[r * dst_ld + c] = r < rows && c < cols ? to_float(src[r * src_ld + c]) : 0.f;
    }
}

}  // namespace toysim::gpu
