// The machine a performance model of this GPU needs, measured on the GPU the probe runs on:
// clocks, memory bandwidths (HBM, L2, shared memory), the arithmetic pipes (FP32 FMA, SFU,
// tensor cores through mma.sync and through Hopper's wgmma), latencies and launch costs. One
// aligned table; every figure in it is measured here, none assumed. The published column comes
// from NVIDIA (the H100 whitepaper, the CUDA programming guide) or ../shared/anchors; blank
// where NVIDIA publishes nothing.
//
//   toysim_machine_probe > gpu/results/machine_h100.txt      (about 10 s on an H100)
//
// How every throughput is measured: the kernel's thread 0 of each block stamps clock64() and
// %smid at its start and, after a barrier, at its end. An SM's span is its last end less its
// first start, in that SM's own cycles, so "per SM per clock" is the work an SM did over its
// span: a ratio of counts, whatever the clock ran at. GB/s and TFLOP/s divide the work by the
// cudaEvent time of the launch, and the MHz column is the mean span over that time: the clock
// the SMs actually ran at under that load. Each figure is the best of several launches after a
// warm-up launch (which also absorbs the driver's compile of the sm_90a PTX).
//
// Built for sm_90a only (TOYSIM_HOPPER_ARCHITECTURES): wgmma exists nowhere else. A build
// without the sm_90a feature set leaves the wgmma kernel empty, and its row says so.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpu/runtime/l2_flush.cuh"  // open_device, flush_l2
#include "gpu/tools/probe.cuh"        // Stamp, Probe, row

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PROBE_SM90A 1
#endif

namespace {

using namespace toysim::probe;


// ---- FP32 FMA: 8 independent chains a thread. One chain a thread would measure the FMA's
// latency (4 cycles), not the pipe: 8 chains times 16 warps a sub-partition keep it full. The
// kernel also gives the clock under load (row 1): every SM busy, nothing waiting on memory. ----
constexpr int kFmaChains = 8;
__global__ __launch_bounds__(1024, 2) void fma_kernel(float* out, int iters, float b, float c, Stamp* st) {
    stamp_begin(st);
    float a[kFmaChains];
#pragma unroll
    for (int k = 0; k < kFmaChains; ++k) a[k] = threadIdx.x * 1e-3f + k;
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int u = 0; u < 16; ++u)
#pragma unroll
            for (int k = 0; k < kFmaChains; ++k) a[k] = fmaf(a[k], b, c);
    float s = 0;
#pragma unroll
    for (int k = 0; k < kFmaChains; ++k) s += a[k];
    if (s == 1234.5f) out[threadIdx.x] = s;  // never true: keeps the chains alive
    stamp_end(st);
}

// ---- SFU: ex2.approx (MUFU.EX2), 8 chains a thread as above. x -> 2^-x stays in (0.5, 1].
// kExpf: __expf(-x), which the compiler makes a multiply by -log2(e) and the same MUFU.EX2. ----
__device__ __forceinline__ float ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
template <bool kExpf>
__global__ __launch_bounds__(1024, 2) void sfu_kernel(float* out, int iters, Stamp* st) {
    stamp_begin(st);
    float x[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) x[k] = (threadIdx.x & 7) * 0.1f + k * 0.01f;
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int u = 0; u < 8; ++u)
#pragma unroll
            for (int k = 0; k < 8; ++k) x[k] = kExpf ? __expf(-x[k]) : ex2(-x[k]);
    float s = 0;
#pragma unroll
    for (int k = 0; k < 8; ++k) s += x[k];
    if (s == 1234.5f) out[threadIdx.x] = s;
    stamp_end(st);
}

// ---- A product on the CUDA cores, as the course's kernels run it (gpu/kernels/attention_forward.cu,
// patch_mac; generated code's tile_product4<4, 4> is the same loop): a block of 8 warps makes a
// 64x64 fp32 result, each lane a 4x4 patch of it (rows 8w + pr + 2a, columns pc + 16b), from A
// and B 64x64 fp32 row-major in shared memory with the kernels' padded row (68 floats). Per 4
// steps of k a lane loads 8 float4s and does 64 FFMAs, the loop not unrolled (as there). What
// it measures is the unit `products cuda` names: multiply-adds an SM does a clock with 1, 2 or 3
// such blocks on it, shared-memory loads, their latency and the FFMAs together. ----
constexpr int kPatchRow = 68, kPatchThreads = 256;
constexpr int kPatchSharedBytes = 2 * 64 * kPatchRow * 4;
__global__ __launch_bounds__(kPatchThreads) void patch_product_kernel(float* out, int iters, Stamp* st) {
    extern __shared__ float4 patch_shared[];
    float* A = reinterpret_cast<float*>(patch_shared);
    const float* B = A + 64 * kPatchRow;
    for (int e = threadIdx.x; e < 2 * 64 * kPatchRow; e += kPatchThreads) A[e] = static_cast<float>(e % 7) * 0.01f;  // B follows A
    __syncthreads();
    stamp_begin(st);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, pr = lane / 16, pc = lane % 16;
    const float* a_row[4];
    const float* b_row[4];
#pragma unroll
    for (int a = 0; a < 4; ++a) a_row[a] = A + (8 * warp + pr + 2 * a) * kPatchRow;
#pragma unroll
    for (int b = 0; b < 4; ++b) b_row[b] = B + (pc + 16 * b) * kPatchRow;
    float acc[4][4] = {};
    for (int i = 0; i < iters; ++i) {
#pragma unroll 1
        for (int k = 0; k < 64; k += 4) {
            float4 x[4], y[4];
#pragma unroll
            for (int a = 0; a < 4; ++a) x[a] = *reinterpret_cast<const float4*>(a_row[a] + k);
#pragma unroll
            for (int b = 0; b < 4; ++b) y[b] = *reinterpret_cast<const float4*>(b_row[b] + k);
#pragma unroll
            for (int a = 0; a < 4; ++a)
#pragma unroll
                for (int b = 0; b < 4; ++b) {
                    acc[a][b] = fmaf(x[a].x, y[b].x, acc[a][b]);
                    acc[a][b] = fmaf(x[a].y, y[b].y, acc[a][b]);
                    acc[a][b] = fmaf(x[a].z, y[b].z, acc[a][b]);
                    acc[a][b] = fmaf(x[a].w, y[b].w, acc[a][b]);
                }
        }
    }
    float s = 0;
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) s += acc[a][b];
    if (s == 1234.5f) out[threadIdx.x] = s;  // never true: keeps the products alive
    stamp_end(st);
}

// ---- Shared memory: 128-bit loads (ld.shared.v4), each warp reading 512 contiguous bytes, the
// widest access a warp makes and conflict-free: 4 wavefronts of 128 bytes, the banks' width. 8
// independent loads a thread an iteration, ld.volatile: ptxas hoists plain loads of an address the
// loop never writes out of it (asm volatile stops only the front end), which read 4x the banks'
// limit. The xor (two LOP3s a load) is cheap beside the 4 cycles of the load. One block of 32 warps an SM:
// 64 would cap a thread at 32 registers, and the 8 loads' 32 would spill. ----
__global__ __launch_bounds__(1024, 1) void smem_kernel(unsigned* out, int iters, Stamp* st) {
    __shared__ uint4 buf[2048];  // 32 KiB
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) buf[i] = make_uint4(i, 3 * i, 5 * i, 7 * i);
    __syncthreads();
    stamp_begin(st);
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(buf)) + (warp & 7) * 512 + lane * 16;
    unsigned x = 0;
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            unsigned v0, v1, v2, v3;
            asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3) : "r"(base + k * 4096));
            x ^= v0 ^ v1 ^ v2 ^ v3;
        }
    if (x == 0x9e3779b9u) out[threadIdx.x] = x;
    stamp_end(st);
}

// ---- HBM: 128-bit loads and stores (the widest a thread makes: fewest instructions a byte),
// 4 independent ones in flight a thread, 2048 threads an SM: enough bytes in flight to cover
// DRAM's latency. Grid-stride, so every SM streams to the end. ----
constexpr int kMemThreads = 512;
__global__ __launch_bounds__(kMemThreads, 4) void hbm_read(const uint4* __restrict__ p, std::size_t n, unsigned* sink, Stamp* st) {
    stamp_begin(st);
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    unsigned x = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
        x ^= a.x ^ a.w ^ b.x ^ b.w ^ c.x ^ c.w ^ d.x ^ d.w ^ a.y ^ a.z ^ b.y ^ b.z ^ c.y ^ c.z ^ d.y ^ d.z;
    }
    for (; i < n; i += stride) x ^= p[i].x;
    if (x == 0x9e3779b9u) *sink = x;
    stamp_end(st);
}
__global__ __launch_bounds__(kMemThreads, 4) void hbm_write(uint4* __restrict__ p, std::size_t n, unsigned v, Stamp* st) {
    stamp_begin(st);
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    const uint4 w = make_uint4(v, v, v, v);
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += stride) p[i] = w;
    stamp_end(st);
}
__global__ __launch_bounds__(kMemThreads, 4) void hbm_copy(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n, Stamp* st) {
    stamp_begin(st);
    const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
    std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a, dst[i + stride] = b, dst[i + 2 * stride] = c, dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
    stamp_end(st);
}

// ---- L2: the HBM read's loads, but ld.global.cg (cached in the L2 only: no L1 hit can inflate
// the figure) over a buffer a sixth of the L2, read over and over. n is a power of two; thread t
// reads t + k*T (mod n), T the grid's threads, so that neighbouring lanes read neighbouring
// 16 bytes (whole 128-byte lines a warp) and the 8 loads of an iteration are independent. ----
__global__ __launch_bounds__(kMemThreads, 4) void l2_read(const uint4* p, unsigned mask, int iters, unsigned* sink, Stamp* st) {
    stamp_begin(st);
    const unsigned T = gridDim.x * blockDim.x;
    unsigned idx = blockIdx.x * blockDim.x + threadIdx.x, x = 0;
    for (int i = 0; i < iters; ++i, idx += 8 * T)
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            unsigned v0, v1, v2, v3;
            asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                         : "l"(p + ((idx + k * T) & mask)));
            x ^= v0 ^ v1 ^ v2 ^ v3;
        }
    if (x == 0x9e3779b9u) *sink = x;
    stamp_end(st);
}

// ---- mma.sync (warp-level tensor cores): operands in registers, never reloaded, so nothing but
// the tensor pipe is measured. 8 independent accumulators a warp: one would measure the mma's
// latency. Kind 0: m16n8k16 fp16, 1: m16n8k16 bf16, 2: m16n8k8 tf32, all accumulating in fp32. ----
constexpr int kMmaChains = 8;
template <int kKind>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#define PROBE_MMA(SHAPE_TYPES)                                                                                        \
    asm("mma.sync.aligned." SHAPE_TYPES " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"          \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                                            \
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
    if constexpr (kKind == 0) PROBE_MMA("m16n8k16.row.col.f32.f16.f16.f32");
    else if constexpr (kKind == 1) PROBE_MMA("m16n8k16.row.col.f32.bf16.bf16.f32");
    else PROBE_MMA("m16n8k8.row.col.f32.tf32.tf32.f32");
#undef PROBE_MMA
}
// Operands: small values that vary by lane (zeros would flatter the tensor cores' power draw).
__device__ __forceinline__ uint32_t operand(int kind, unsigned i) {
    const float v = static_cast<float>(static_cast<int>((i * 2654435761u) >> 28) - 8) * 0.0625f;
    if (kind == 0) return __half_as_ushort(__float2half(v)) | (unsigned(__half_as_ushort(__float2half(-v))) << 16);
    if (kind == 1) return __bfloat16_as_ushort(__float2bfloat16(v)) | (unsigned(__bfloat16_as_ushort(__float2bfloat16(-v))) << 16);
    return __float_as_uint(v);
}
template <int kKind>
__global__ void mma_kernel(float* out, int iters, Stamp* st) {
    stamp_begin(st);
    uint32_t a[4], b[2];
#pragma unroll
    for (int r = 0; r < 4; ++r) a[r] = operand(kKind, threadIdx.x * 8 + r);
    b[0] = operand(kKind, threadIdx.x * 8 + 5), b[1] = operand(kKind, threadIdx.x * 8 + 6);
    float d[kMmaChains][4] = {};
    for (int i = 0; i < iters; ++i)
#pragma unroll
        for (int c = 0; c < kMmaChains; ++c) mma<kKind>(d[c], a, b);
    float s = 0;
#pragma unroll
    for (int c = 0; c < kMmaChains; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
    if (s == 1234.5f) out[threadIdx.x] = s;
    stamp_end(st);
}

// ---- wgmma (Hopper, sm_90a): a warpgroup (4 warps) multiplies A (64x16) by B (Nx16), both read
// by the tensor cores from shared memory through descriptors, into fp32 accumulators in
// registers. Each warpgroup issues 8 wgmmas into one accumulator (same shape: ordered without
// fences), commits and waits for them; two warpgroups a block, one block an SM, so that one
// warpgroup's wait is covered by the other's products. ----
constexpr int kWgmmaGroups = 2, kWgmmaPerGroup = 8;
#define PROBE_F8(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define PROBE_F32(d, i) PROBE_F8(d, i), PROBE_F8(d, i + 8), PROBE_F8(d, i + 16), PROBE_F8(d, i + 24)
#define PROBE_REGS_0_63                                                                                                                      \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, "     \
    "%29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, " \
    "%57, %58, %59, %60, %61, %62, %63"
#define PROBE_ACC64 "{" PROBE_REGS_0_63 "}"
#define PROBE_ACC128                                                                                                                               \
    "{" PROBE_REGS_0_63 ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, " \
    "%87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"

#ifdef PROBE_SM90A
// A descriptor of a K-major tile without swizzle: 8x8 "core matrices" (8 rows of 16 bytes, 128
// contiguous bytes); the next 8 columns of K 128 bytes on (leading byte offset), the next 8 rows
// 256 bytes on (stride byte offset). Bits: address>>4 [0,14), LBO>>4 [16,30), SBO>>4 [32,46).
__device__ __forceinline__ uint64_t tile_descriptor(const void* tile) {
    const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
    return uint64_t((address & 0x3FFFF) >> 4) | (uint64_t(128 >> 4) << 16) | (uint64_t(256 >> 4) << 32);
}
template <int kN>
__device__ __forceinline__ void wgmma(float (&d)[kN / 2], uint64_t a, uint64_t b) {
    // scale-d 1 (accumulate), scale-a and scale-b 1, both operands K-major (no transpose)
    if constexpr (kN == 128)
        asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " PROBE_ACC64 ", %64, %65, 1, 1, 1, 0, 0;\n"
                     : PROBE_F32(d, 0), PROBE_F32(d, 32)
                     : "l"(a), "l"(b));
    else
        asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " PROBE_ACC128 ", %128, %129, 1, 1, 1, 0, 0;\n"
                     : PROBE_F32(d, 0), PROBE_F32(d, 32), PROBE_F32(d, 64), PROBE_F32(d, 96)
                     : "l"(a), "l"(b));
}
#endif

template <int kN>
__global__ __launch_bounds__(128 * kWgmmaGroups, 1) void wgmma_kernel(float* out, int iters, int* built, Stamp* st) {
#ifdef PROBE_SM90A
    __shared__ __align__(128) __half a_tiles[kWgmmaGroups][64 * 16];
    __shared__ __align__(128) __half b_tile[kN * 16];
    for (int i = threadIdx.x; i < kWgmmaGroups * 64 * 16; i += blockDim.x) (&a_tiles[0][0])[i] = __float2half(((i * 37) % 17 - 8) * 0.0625f);
    for (int i = threadIdx.x; i < kN * 16; i += blockDim.x) b_tile[i] = __float2half(((i * 53) % 13 - 6) * 0.0625f);
    // Ordinary stores, read next by the tensor cores (the async proxy): fence, then the barrier.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    stamp_begin(st);
    const uint64_t a = tile_descriptor(a_tiles[threadIdx.x / 128]), b = tile_descriptor(b_tile);
    float d[kN / 2] = {};
    for (int i = 0; i < iters; ++i) {
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int k = 0; k < kWgmmaPerGroup; ++k) wgmma<kN>(d, a, b);
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    }
    float s = 0;
#pragma unroll
    for (int r = 0; r < kN / 2; ++r) s += d[r];
    if (s == 1234.5f) out[threadIdx.x] = s;
    if (threadIdx.x == 0 && blockIdx.x == 0) *built = 1;
    stamp_end(st);
#else
    stamp_begin(st);
    stamp_end(st);
#endif
}

// ---- Latency: one thread follows a chain of pointers, each load's address the previous load's
// value, so no two loads overlap: cycles a step is the load's latency. ld.global.cg skips the
// L1, so a warmed chain that fits the L2 measures an L2 hit. ----
__global__ void chase_global(const unsigned long long* start, int warm, int steps, unsigned long long* out) {
    unsigned long long p = reinterpret_cast<unsigned long long>(start);
    for (int i = 0; i < warm; ++i) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p)::"memory");
    const unsigned long long c0 = clock64(), g0 = global_ns();
    for (int i = 0; i < steps; ++i) asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p)::"memory");
    const unsigned long long c1 = clock64(), g1 = global_ns();
    out[0] = c1 - c0, out[1] = g1 - g0, out[2] = p;
}
// Each node (one every `stride` words) holds the address of the node `next` names.
__global__ void link_nodes(unsigned long long* base, const unsigned* next, unsigned n, unsigned stride) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        base[std::size_t(i) * stride] = reinterpret_cast<unsigned long long>(base + std::size_t(next[i]) * stride);
}
// The same in shared memory: each word holds the shared address of the next one (33 words on:
// another bank each step), so a step is one ld.shared and nothing else.
__global__ void chase_shared(int steps, unsigned long long* out) {
    __shared__ unsigned s[1024];
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(s));
    for (int i = 0; i < 1024; ++i) s[i] = base + 4 * ((i + 33) % 1024);
    __syncwarp();
    unsigned a = base;
    const unsigned long long c0 = clock64(), g0 = global_ns();
    for (int i = 0; i < steps; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(a)::"memory");
    const unsigned long long c1 = clock64(), g1 = global_ns();
    out[0] = c1 - c0, out[1] = g1 - g0, out[2] = a;
}

// ---- Latency of the units: one warp (a block of 4 for the barrier) runs a chain in which each
// instruction needs the one before's result, so cycles a step is that instruction's latency:
// what a dependent instruction waits when no other warp has work for the scheduler. ----
enum Chain { kChainFma, kChainEx2, kChainShfl, kChainMma, kChainBarrier, kChainWgmma };
template <int kKind>
__global__ void chain_kernel(int steps, unsigned long long* out) {
    float x = threadIdx.x * 1e-3f - 1.0f;
    unsigned u = threadIdx.x;
    uint32_t a[4], b[2];
#pragma unroll
    for (int r = 0; r < 4; ++r) a[r] = operand(0, threadIdx.x * 8 + r);
    b[0] = operand(0, threadIdx.x * 8 + 5), b[1] = operand(0, threadIdx.x * 8 + 6);
    float d[4] = {};
#ifdef PROBE_SM90A
    __shared__ __align__(128) __half a_tile[64 * 16];
    __shared__ __align__(128) __half b_tile[128 * 16];
    float acc[64] = {};
    if constexpr (kKind == kChainWgmma) {
        for (int i = threadIdx.x; i < 64 * 16; i += blockDim.x) a_tile[i] = __float2half(((i * 37) % 17 - 8) * 0.0625f);
        for (int i = threadIdx.x; i < 128 * 16; i += blockDim.x) b_tile[i] = __float2half(((i * 53) % 13 - 6) * 0.0625f);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
#endif
    __syncthreads();
    const unsigned long long c0 = clock64();
#pragma unroll 8
    for (int i = 0; i < steps; ++i) {
        if constexpr (kKind == kChainFma) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(0.999f), "f"(1e-3f));
        else if constexpr (kKind == kChainEx2) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x));
        else if constexpr (kKind == kChainShfl) asm volatile("shfl.sync.bfly.b32 %0, %0, 1, 0x1f, 0xffffffff;" : "+r"(u));
        else if constexpr (kKind == kChainMma) mma<0>(d, a, b);
        else if constexpr (kKind == kChainBarrier) __syncthreads();
#ifdef PROBE_SM90A
        else {
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
            wgmma<128>(acc, tile_descriptor(a_tile), tile_descriptor(b_tile));
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        }
#endif
    }
    const unsigned long long c1 = clock64();
    float s = x + float(u) + d[0] + d[1] + d[2] + d[3];
#ifdef PROBE_SM90A
#pragma unroll
    for (int r = 0; r < 64; ++r) s += acc[r];
#endif
    if (threadIdx.x == 0) out[0] = c1 - c0, out[1] = s == 1234.5f;
}

// ---- Launches: an empty kernel, and one that spins a fixed time and notes when it ran, so that
// the idle time between two queued kernels can be read off the GPU's own timer. ----
__global__ void empty_kernel() {}
__global__ void spin_kernel(unsigned long long* times, int i, unsigned long long ns) {
    const unsigned long long t0 = global_ns();
    unsigned long long t = t0;
    while (t - t0 < ns) t = global_ns();
    times[2 * i] = t0, times[2 * i + 1] = t;
}

// ---- the host side: timing and the table ----


// A single cycle through n nodes in random order (Sattolo's algorithm): next[i] is i's successor.
std::vector<unsigned> random_cycle(unsigned n, unsigned seed) {
    std::vector<unsigned> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::mt19937 rng(seed);
    for (unsigned i = n - 1; i > 0; --i) std::swap(order[i], order[std::uniform_int_distribution<unsigned>(0, i - 1)(rng)]);
    std::vector<unsigned> next(n);
    for (unsigned i = 0; i < n; ++i) next[order[i]] = order[(i + 1) % n];
    return next;
}

}  // namespace

int main() {
    Probe p;
    p.prop = toysim::gpu::open_device("machine_probe");
    const cudaDeviceProp& prop = p.prop;
    p.sms = prop.multiProcessorCount;
    const unsigned sms = static_cast<unsigned>(p.sms);
    check(cudaMalloc(&p.stamps, 64 * sms * sizeof(Stamp)), "cudaMalloc");
    check(cudaMalloc(&p.out, 4096 * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&p.sink, 64), "cudaMalloc");
    check(cudaEventCreate(&p.e0), "event");
    check(cudaEventCreate(&p.e1), "event");
    int clock_khz = 0, mem_khz = 0, driver = 0, runtime = 0;
    check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0), "attribute");
    check(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0), "attribute");
    cudaDriverGetVersion(&driver), cudaRuntimeGetVersion(&runtime);

    char date[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    std::printf("# toysim_machine_probe: %s, %d SMs, compute capability %d.%d, driver %d, runtime %d, %s\n", prop.name, p.sms, prop.major,
                prop.minor, driver, runtime, date);
    std::printf("# measured: the figure, best of several launches after a warm-up (HBM and L2: best and median).\n");
    std::printf("# per SM per clk: the work an SM did over its own clock64() span, averaged over the SMs (a ratio of counts, whatever the clock).\n");
    std::printf("# MHz: the SMs' mean clock64() span over the launch's cudaEvent time: the clock they ran at under that load.\n");
    std::printf("# published: NVIDIA's figure (H100 whitepaper, CUDA C++ programming guide) or ../shared/anchors/published_h100.md; blank: none.\n\n");
    row("quantity", "measured", "per SM per clk", "MHz", "how", "published");

    // ---- 1. the device ----
    section("device");
    const int fma_threads = 1024, fma_blocks = 2 * p.sms;
    auto fma = [&](int iters) { return [&p, iters, fma_blocks, fma_threads] { fma_kernel<<<fma_blocks, fma_threads>>>(p.out, iters, 0.999999f, 1e-6f, p.stamps); }; };
    const std::vector<Launch> long_fma = p.time(fma(100000), fma_blocks, 3);  // ~0.1 s each: the median
    const Launch& clk = long_fma[1];
    row("name", prop.name, "", "", "cudaDeviceProp", "H100 SXM (anchors)");
    row("SMs", fmt("%d", p.sms), "", "", "cudaDeviceProp", "132 (anchors)");
    row("SM clock under load", fmt("%.0f MHz", clk.mhz()), "", fmt("%.0f", clk.mhz()),
        fmt("0.1 s of FMA chains on every SM, clock64/event; max %d (driver)", clock_khz / 1000), "1980 max boost, 1830 for tensor peaks (whitepaper)");
    const double mem_gbs = 2.0 * mem_khz * 1e3 * (prop.memoryBusWidth / 8) / 1e9;
    row("memory clock, bus", fmt("%d MHz, %d bit", mem_khz / 1000, prop.memoryBusWidth), "", "",
        fmt("cudaDeviceProp; x2 (DDR) x bus = %.0f GB/s", mem_gbs), "HBM3, 3.35 TB/s (anchors)");
    row("registers per SM", fmt("%d x 32 bit", prop.regsPerMultiprocessor), "", "", "cudaDeviceProp", "64K (CUDA guide)");
    row("shared memory per SM", fmt("%zu B", prop.sharedMemPerMultiprocessor), "", "", "cudaDeviceProp", "228 KB (CUDA guide)");
    row("shared memory per block", fmt("%zu B", prop.sharedMemPerBlockOptin), "", "", "cudaDeviceProp, opt-in maximum", "227 KB (CUDA guide)");
    row("threads, blocks per SM", fmt("%d, %d", prop.maxThreadsPerMultiProcessor, prop.maxBlocksPerMultiProcessor), "", "", "cudaDeviceProp",
        "2048, 32 (CUDA guide)");
    row("L2", fmt("%d B", prop.l2CacheSize), "", "", "cudaDeviceProp", "50 MB, two partitions (anchors)");

    // ---- 2. HBM ----
    section("memory bandwidth");
    const std::size_t big = std::size_t{4} << 30, half = big / 2;
    void *a = nullptr, *b = nullptr;
    check(cudaMalloc(&a, big), "cudaMalloc 4 GiB");
    check(cudaMalloc(&b, half), "cudaMalloc 2 GiB");
    check(cudaMemset(a, 1, big), "memset");
    check(cudaMemset(b, 2, half), "memset");
    const unsigned mem_blocks = 4 * sms;
    auto bandwidth_row = [&](const char* name, const std::vector<Launch>& runs, double bytes, const char* how, const char* published) {
        const Launch& best = runs[0];
        const double per_clk = bytes / best.mean_span;
        row(name, fmt("%.0f GB/s (median %.0f)", bytes / best.ms / 1e6, bytes / runs[runs.size() / 2].ms / 1e6),
            fmt("%.0f B/clk GPU, %.1f/SM", per_clk, per_clk / best.sms), fmt("%.0f", best.mhz()), how, published);
    };
    auto u4 = [](void* v) { return static_cast<uint4*>(v); };
    const std::vector<Launch> hbm_reads = p.time([&] { hbm_read<<<mem_blocks, kMemThreads>>>(u4(a), big / 16, p.sink, p.stamps); }, mem_blocks, 7);
    const double hbm_read_median = double(big) / hbm_reads[hbm_reads.size() / 2].ms / 1e6;  // GB/s
    bandwidth_row("HBM read", hbm_reads, double(big), "4 GiB, 128-bit loads, 4 in flight/thread, 2048 threads/SM", "3352 GB/s (anchors: 3.35 TB/s)");
    bandwidth_row("HBM write", p.time([&] { hbm_write<<<mem_blocks, kMemThreads>>>(u4(a), big / 16, 7u, p.stamps); }, mem_blocks, 7), double(big),
                  "4 GiB, 128-bit stores, 2048 threads/SM", "3352 GB/s (anchors)");
    bandwidth_row("HBM copy (read + write)", p.time([&] { hbm_copy<<<mem_blocks, kMemThreads>>>(u4(b), u4(a), half / 16, p.stamps); }, mem_blocks, 7),
                  2.0 * double(half), "2 GiB to 2 GiB, bytes read + written counted", "3352 GB/s (anchors)");

    // ---- 3. L2 ----
    const std::size_t l2_bytes = std::size_t{8} << 20;
    const int l2_iters = 1000;
    const double l2_moved = double(l2_iters) * 8 * 16 * mem_blocks * kMemThreads;
    bandwidth_row("L2 read (8 MiB, warm)",
                  p.time([&] { l2_read<<<mem_blocks, kMemThreads>>>(u4(b), unsigned(l2_bytes / 16 - 1), l2_iters, p.sink, p.stamps); }, mem_blocks, 5),
                  l2_moved, "8 MiB read over and over, ld.global.cg.v4, 8 in flight/thread", "");

    // ---- 4. shared memory ----
    const int smem_iters = 20000;
    {
        const auto runs = p.time([&] { smem_kernel<<<sms, 1024>>>(p.sink, smem_iters, p.stamps); }, sms, 3);
        const double per_block = double(smem_iters) * 8 * 16 * 1024;
        const Launch& best = runs[0];
        row("shared memory load", fmt("%.0f GB/s (GPU)", per_block * sms / best.ms / 1e6), fmt("%.1f B/clk/SM", best.per_sm_clk(per_block)),
            fmt("%.0f", best.mhz()), "ld.volatile.shared.v4, 512 contiguous B a warp, 8 in flight, 32 warps/SM",
            "128 B/clk/SM (CUDA guide: 32 banks x 4 B)");
    }

    // ---- 5, 6. FP32 and SFU ----
    section("arithmetic (CUDA cores, SFU)");
    {
        const int iters = 20000;
        const auto runs = p.time(fma(iters), fma_blocks, 3);
        const double per_block = 2.0 * iters * 16 * kFmaChains * fma_threads;
        const Launch& best = runs[0];
        row("FP32 FMA", fmt("%.1f TFLOP/s", per_block * fma_blocks / best.ms / 1e9), fmt("%.1f FLOP/clk/SM", best.per_sm_clk(per_block)),
            fmt("%.0f", best.mhz()), "8 independent FMA chains/thread, 64 warps/SM", "256 FLOP/clk/SM, 66.9 TFLOP/s (whitepaper)");
    }
    {
        const int iters = 4000;
        const double per_block = double(iters) * 64 * 1024;
        const auto ex2_runs = p.time([&] { sfu_kernel<false><<<2 * sms, 1024>>>(p.out, iters, p.stamps); }, 2 * sms, 3);
        const auto exp_runs = p.time([&] { sfu_kernel<true><<<2 * sms, 1024>>>(p.out, iters, p.stamps); }, 2 * sms, 3);
        row("SFU ex2.approx.ftz.f32", fmt("%.0f G/s", per_block * 2 * sms / ex2_runs[0].ms / 1e6), fmt("%.2f /clk/SM", ex2_runs[0].per_sm_clk(per_block)),
            fmt("%.0f", ex2_runs[0].mhz()), "SASS: MUFU.EX2 alone; 8 chains/thread, 64 warps/SM", "16 /clk/SM (CUDA guide, cc 9.0)");
        row("__expf", fmt("%.0f G/s", per_block * 2 * sms / exp_runs[0].ms / 1e6), fmt("%.2f /clk/SM", exp_runs[0].per_sm_clk(per_block)),
            fmt("%.0f", exp_runs[0].mhz()), "SASS: 3 FMUL + FSETP (denormal range) + MUFU.EX2 a result", "");
    }

    {
        // The blocks each SM holds at once: 1, 2 or 3 (launched R to an SM; the stamps count what
        // each SM ran).
        check(cudaFuncSetAttribute(patch_product_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kPatchSharedBytes), "attribute");
        const int iters = 2000;
        const double per_block = 64.0 * 64 * 64 * iters;
        for (int resident : {1, 2, 3}) {
            const unsigned blocks = sms * static_cast<unsigned>(resident);
            const auto runs = p.time([&] { patch_product_kernel<<<blocks, kPatchThreads, kPatchSharedBytes>>>(p.out, iters, p.stamps); }, blocks, 3);
            row(fmt("CUDA-core product, %d block%s/SM", resident, resident > 1 ? "s" : ""), fmt("%.0f G MAC/s", per_block * blocks / runs[0].ms / 1e6),
                fmt("%.1f MAC/clk/SM", runs[0].per_sm_clk(per_block)), fmt("%.0f", runs[0].mhz()),
                "8 warps/block; fp32 A, B 64x64 in smem; 8 LDS.128 + 64 FFMA / 4 k", "64 MAC/clk/SM: 2 B a MAC at 128 B/clk");
        }
    }

    // ---- 7. mma.sync ----
    section("tensor cores");
    auto mma_row = [&](const char* name, int kind, double flop_per_mma, const char* published) {
        const int iters = 20000;
        double best_rate = 0, best_tflops = 0, best_mhz = 0;
        int best_warps = 0;
        std::string tried;
        for (int warps : {4, 8, 16}) {
            auto launch = [&] {
                if (kind == 0) mma_kernel<0><<<sms, warps * 32>>>(p.out, iters, p.stamps);
                else if (kind == 1) mma_kernel<1><<<sms, warps * 32>>>(p.out, iters, p.stamps);
                else mma_kernel<2><<<sms, warps * 32>>>(p.out, iters, p.stamps);
            };
            const auto runs = p.time(launch, sms, 3);
            const double per_block = flop_per_mma * iters * kMmaChains * warps;
            const double rate = runs[0].per_sm_clk(per_block);
            tried += fmt("%s%d: %.0f", tried.empty() ? "" : ", ", warps, rate);
            if (rate > best_rate) best_rate = rate, best_tflops = per_block * sms / runs[0].ms / 1e9, best_mhz = runs[0].mhz(), best_warps = warps;
        }
        row(name, fmt("%.0f TFLOP/s (%d warps/SM)", best_tflops, best_warps), fmt("%.0f FLOP/clk/SM", best_rate), fmt("%.0f", best_mhz),
            fmt("regs only, 8 accumulators/warp; warps/SM %s", tried.c_str()), published);
    };
    mma_row("mma.sync m16n8k16 fp16->fp32", 0, 2.0 * 16 * 8 * 16, "4096 FLOP/clk/SM, 989 TFLOP/s dense (whitepaper, anchors)");
    mma_row("mma.sync m16n8k16 bf16->fp32", 1, 2.0 * 16 * 8 * 16, "4096 FLOP/clk/SM, 989 TFLOP/s dense (whitepaper, anchors)");
    mma_row("mma.sync m16n8k8 tf32->fp32", 2, 2.0 * 16 * 8 * 8, "2048 FLOP/clk/SM, 495 TFLOP/s dense (whitepaper)");

    // ---- 8. wgmma ----
    bool have_sm90a = false;
    {
        int* built = nullptr;
        check(cudaMalloc(&built, sizeof(int)), "cudaMalloc");
        check(cudaMemset(built, 0, sizeof(int)), "memset");
        const int iters = 4000;
        const unsigned threads = 128 * kWgmmaGroups;
        const auto n128 = p.time([&] { wgmma_kernel<128><<<sms, threads>>>(p.out, iters, built, p.stamps); }, sms, 3);
        const auto n256 = p.time([&] { wgmma_kernel<256><<<sms, threads>>>(p.out, iters, built, p.stamps); }, sms, 3);
        int was_built = 0;
        check(cudaMemcpy(&was_built, built, sizeof(int), cudaMemcpyDeviceToHost), "built");
        have_sm90a = was_built != 0;
        const char* published = "4096 FLOP/clk/SM, 989 TFLOP/s dense (whitepaper, anchors)";
        if (!was_built) {
            row("wgmma fp16->fp32, smem x smem", "not measured", "", "", "this build has no sm_90a code (TOYSIM_HOPPER_ARCHITECTURES)", published);
        } else {
            const double per_block128 = 2.0 * 64 * 128 * 16 * kWgmmaPerGroup * iters * kWgmmaGroups, per_block256 = 2 * per_block128;
            const double rate128 = n128[0].per_sm_clk(per_block128), rate256 = n256[0].per_sm_clk(per_block256);
            const bool wide = rate256 >= rate128;
            const Launch& best = wide ? n256[0] : n128[0];
            row(fmt("wgmma m64n%dk16 fp16->fp32", wide ? 256 : 128), fmt("%.0f TFLOP/s", (wide ? per_block256 : per_block128) * sms / best.ms / 1e9),
                fmt("%.0f FLOP/clk/SM", std::max(rate128, rate256)), fmt("%.0f", best.mhz()),
                fmt("A, B in smem; 2 warpgroups/SM, 8 a commit; n128: %.0f, n256: %.0f", rate128, rate256), published);
        }
        cudaFree(built);
    }

    // ---- 9. latencies ----
    section("latency (one thread, pointer chase)");
    {
        unsigned long long* result = nullptr;
        unsigned* next_dev = nullptr;
        check(cudaMalloc(&result, 3 * sizeof(unsigned long long)), "cudaMalloc");
        unsigned long long got[3];
        // DRAM: 1 Mi nodes 256 B apart (256 MiB, five times the L2) in one random cycle, the L2
        // flushed first (toysim's flush), 8192 steps: every step a line no one touched since.
        const unsigned dram_nodes = 1u << 20, dram_stride = 32, l2_nodes = 1u << 14, l2_stride = 16;
        const int steps = 8192;
        auto* chain = static_cast<unsigned long long*>(a);
        auto link = [&](unsigned long long* base, unsigned n, unsigned stride, unsigned seed) {
            const std::vector<unsigned> next = random_cycle(n, seed);
            check(cudaMemcpy(next_dev, next.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice), "chain");
            link_nodes<<<4 * sms, 256>>>(base, next_dev, n, stride);
            check(cudaDeviceSynchronize(), "link");
        };
        check(cudaMalloc(&next_dev, dram_nodes * sizeof(unsigned)), "cudaMalloc");
        auto report = [&](const char* name, const char* how) {
            check(cudaMemcpy(got, result, sizeof got, cudaMemcpyDeviceToHost), "chase");
            row(name, fmt("%.0f cycles, %.0f ns", double(got[0]) / steps, double(got[1]) / steps), "", fmt("%.0f", 1e3 * double(got[0]) / double(got[1])),
                how, "");
        };
        link(chain, dram_nodes, dram_stride, 1);
        check(toysim::gpu::flush_l2(b, 2 * std::size_t(prop.l2CacheSize), p.sink, p.sms, nullptr), "flush");
        chase_global<<<1, 1>>>(chain, 0, steps, result);
        check(cudaDeviceSynchronize(), "chase");
        report("global load, L2 miss (DRAM)", "random 256-B nodes over 256 MiB, L2 flushed, ld.global.cg");
        // L2: 16 Ki nodes 128 B apart (2 MiB), one lap to warm them, then the timed steps.
        auto* small = chain + (std::size_t{512} << 20) / 8;
        link(small, l2_nodes, l2_stride, 2);
        chase_global<<<1, 1>>>(small, l2_nodes, steps, result);
        check(cudaDeviceSynchronize(), "chase");
        report("global load, L2 hit", "random 128-B nodes over 2 MiB, warmed, ld.global.cg");
        chase_shared<<<1, 1>>>(steps, result);
        check(cudaDeviceSynchronize(), "chase");
        report("shared memory load", "ld.shared.u32 of the address of the next word");
        cudaFree(next_dev);
        cudaFree(result);
    }

    section("latency (one warp, dependent chain)");
    {
        unsigned long long* result = nullptr;
        check(cudaMalloc(&result, 2 * sizeof(unsigned long long)), "cudaMalloc");
        const int steps = 4096;
        auto chain_row = [&](const char* name, auto kernel, unsigned threads, const char* how, const char* published) {
            kernel<<<1, threads>>>(steps, result);  // warm-up: the code in the instruction cache
            check(cudaDeviceSynchronize(), "chain");
            kernel<<<1, threads>>>(steps, result);
            check(cudaDeviceSynchronize(), "chain");
            unsigned long long got[2];
            check(cudaMemcpy(got, result, sizeof got, cudaMemcpyDeviceToHost), "chain");
            row(name, fmt("%.1f cycles", double(got[0]) / steps), "", "", how, published);
        };
        chain_row("FFMA", chain_kernel<kChainFma>, 32, "fma.rn.f32 x = x*b + c, 4096 in a chain", "4 cycles (Hopper microbenchmarks, Luo et al. 2024)");
        chain_row("MUFU.EX2", chain_kernel<kChainEx2>, 32, "ex2.approx.ftz.f32 x = 2^x, 4096 in a chain", "");
        chain_row("shfl.sync", chain_kernel<kChainShfl>, 32, "shfl.sync.bfly of the previous result", "");
        chain_row("mma.sync m16n8k16 (latency)", chain_kernel<kChainMma>, 32, "fp16->fp32, one accumulator: each mma waits for the last", "");
        chain_row("__syncthreads (4 warps)", chain_kernel<kChainBarrier>, 128, "bar.sync 0, a block of 128 threads, nothing between", "");
        if (have_sm90a)
            chain_row("wgmma m64n128k16 (latency)", chain_kernel<kChainWgmma>, 128, "one warpgroup: fence, wgmma, commit, wait 0; A, B in smem", "");
        cudaFree(result);
    }

    // ---- launches ----
    section("kernel launch (one stream)");
    {
        const int n = 10000;
        for (int i = 0; i < 100; ++i) empty_kernel<<<1, 32>>>();
        check(cudaDeviceSynchronize(), "empty");
        const auto h0 = std::chrono::steady_clock::now();
        check(cudaEventRecord(p.e0), "event");
        for (int i = 0; i < n; ++i) empty_kernel<<<1, 32>>>();
        const auto h1 = std::chrono::steady_clock::now();
        check(cudaEventRecord(p.e1), "event");
        check(cudaEventSynchronize(p.e1), "empty");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, p.e0, p.e1), "elapsed");
        const double host_us = std::chrono::duration<double, std::micro>(h1 - h0).count() / n;
        row("empty kernel, back to back", fmt("%.2f us/launch", 1e3 * ms / n), "", "", fmt("10000 launches <<<1,32>>>, events; host enqueue %.2f us", host_us), "");
        std::vector<double> round;
        for (int i = 0; i < 200; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            empty_kernel<<<1, 32>>>();
            check(cudaStreamSynchronize(nullptr), "sync");
            round.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(round.begin(), round.end());
        row("launch + synchronize", fmt("%.2f us", round[round.size() / 2]), "", "", "median of 200 launch + cudaStreamSynchronize", "");
        // The gap: kernels of 20 us each, queued faster than they run, each noting its start and
        // end on the global timer; the gap is the next one's start less this one's end.
        const int spins = 1000;
        unsigned long long* times = nullptr;
        check(cudaMalloc(&times, 2 * spins * sizeof(unsigned long long)), "cudaMalloc");
        for (int i = 0; i < spins; ++i) spin_kernel<<<1, 32>>>(times, i, 20000);
        check(cudaDeviceSynchronize(), "spin");
        std::vector<unsigned long long> t(2 * spins);
        check(cudaMemcpy(t.data(), times, t.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost), "times");
        double gap = 0;
        for (int i = 10; i + 1 < spins; ++i) gap += double(t[2 * (i + 1)] - t[2 * i + 1]);
        gap /= spins - 11;
        row("launch-to-launch gap", fmt("%.2f us", gap / 1e3), "", "", "end of one queued 20-us kernel to start of the next, globaltimer", "");
        // A stage as `toysim gpu run` times it (gpu/runtime/runtime.cu): the GPU held busy (its
        // hold_stream) while the host enqueues an event, an empty kernel and an event; the time
        // between the two events.
        // The median of `reps` such stages, µs; `before` runs ahead of the hold, outside the events.
        auto between_events = [&](int reps, auto&& before, auto&& launch) {
            std::vector<float> us;
            for (int i = 0; i < reps; ++i) {
                before();
                toysim::gpu::hold_stream<<<1, 1>>>(toysim::gpu::kHoldNanoseconds);
                check(cudaEventRecord(p.e0), "event");
                launch();
                check(cudaEventRecord(p.e1), "event");
                check(cudaEventSynchronize(p.e1), "staged");
                float ms = 0;
                check(cudaEventElapsedTime(&ms, p.e0, p.e1), "elapsed");
                us.push_back(1e3f * ms);
            }
            std::sort(us.begin(), us.end());
            return double(us[us.size() / 2]);
        };
        const double empty_us = between_events(200, [] {}, [] { empty_kernel<<<1, 32>>>(); });
        row("empty kernel between events", fmt("%.2f us", empty_us), "", "", "held GPU; event, <<<1,32>>>, event: a stage as gpu run times it; median of 200", "");
        // A short launch that reads from DRAM, timed the same way, the L2 flushed before each:
        // what it takes beyond the empty kernel and its bytes at the HBM read's median bandwidth
        // is the time before DRAM streams at that rate (its requests' first round trip under
        // load, the grid's blocks reaching every SM, the last bytes' way back).
        std::vector<double> startups;
        for (const std::size_t mib : {1, 8, 64}) {
            const double us = between_events(
                50, [&] { check(toysim::gpu::flush_l2(b, 2 * std::size_t(prop.l2CacheSize), p.sink, p.sms, nullptr), "flush"); },
                [&] { hbm_read<<<mem_blocks, kMemThreads>>>(u4(a), (mib << 20) / 16, p.sink, p.stamps); });
            const double stream_us = double(mib << 20) / hbm_read_median / 1e3;
            startups.push_back(us - empty_us - stream_us);
            row(fmt("HBM read of %zu MiB between events", mib), fmt("%.2f us", us), "", "",
                fmt("held GPU, L2 flushed; the HBM read's kernel; median of 50; less %.2f us (empty) and %.2f us (bytes at %.0f GB/s): %.2f us", empty_us,
                    stream_us, hbm_read_median, startups.back()),
                "");
        }
        std::sort(startups.begin(), startups.end());
        row("DRAM stream start-up", fmt("%.2f us", startups[1]), "", "", "the median of the three rows above: a launch's DRAM time less its bytes at the bandwidth", "");
        cudaFree(times);
    }
    cudaFree(a), cudaFree(b);
    return 0;
}
