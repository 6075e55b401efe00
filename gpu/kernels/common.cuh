// What every kernel file shares: how a stage is launched, element types, and the counting
// of global-memory traffic that makes a kernel's figures comparable with the simulator's.
//
// Counting. Each kernel is a template on `bool kCount`. The timed variant (kCount = false)
// has no counting code at all: `count_tile` compiles to nothing. The counting variant adds,
// once per tile a block moves, the tile's element count to a per-array counter: one atomic
// add per tile per block, by thread 0, never one per element. The count is what the kernel
// asks of global memory (the simulator's LOADs and STOREs), not what reaches DRAM: caches
// are the next issue's subject (CUPTI).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

#include "gpu/kernels/kernels.h"

namespace toysim::gpu {

// ---- stages ----

// Everything a stage's launcher gets. Pointers and parameters follow the kernel's catalog row
// (catalog.cpp): arrays[k] is KernelSpec::arrays[k], stored as DType `dtype` unless the row
// says always_f32.
struct StageArgs {
    void* const* arrays;
    const std::int64_t* params;
    std::int64_t heads;
    DType dtype;
    unsigned long long* counts;  // null: the timed variant; else reads at [2k], writes at [2k + 1]
    cudaStream_t stream;
    int shared_memory_limit;     // bytes a block may opt in to on this device
    bool plan_only;              // check what the launch needs (shared memory) and launch nothing
    const float* descale;        // per array: 1 / HostArray::scale (an e4m3 array's value is its stored one times this)
    int* resident_blocks = nullptr;  // where a timed launch says how many of its blocks one SM holds at once
    StagePlan* plan = nullptr;       // where a planned launch (plan_only) says what it asks of an SM
};

// Every launcher calls this once it has refused what the device cannot run and before it
// returns for plan_only: the block's threads, its dynamic shared memory and the blocks an SM
// its __launch_bounds__ ask for (0: none), into args.plan (plan_launch: the time model's
// occupancy, no device); and before a timed launch, how many blocks of `kernel` one SM runs at
// once (the occupancy calculator's answer) into args.resident_blocks, which the modeled L2's
// prediction runs as that many × SMs workers (toysim diff).
template <class Kernel>
void note_launch(const StageArgs& args, Kernel* kernel, int threads_per_block, std::size_t shared_bytes, int min_blocks) {
    if (args.plan) *args.plan = {threads_per_block, static_cast<std::int64_t>(shared_bytes), min_blocks};
    if (args.plan_only || !args.resident_blocks || args.counts) return;
    int blocks = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads_per_block, shared_bytes) == cudaSuccess)
        *args.resident_blocks = blocks;
}

// A kernel file's entry point: launches stage `stage` (KernelSpec::stages) of kernel `name`.
// Throws GpuError for what this device cannot run (say, the shared memory a tile needs).
using StageLauncher = void (*)(int stage, const StageArgs& args);
// A catalog kernel's launcher, or a generated module's stages (runtime.cu).
using AnyStageLauncher = std::function<void(int stage, const StageArgs& args)>;

// One per kernel file, found by runtime.cu by kernel name.
struct KernelEntry {
    const char* name;
    StageLauncher launch;
};

// ---- counting ----

enum Access : int { kRead = 0, kWrite = 1 };

// Adds a tile's elements to array `array`'s read or write counter: call it from every thread
// of the block (only thread 0 adds), once per tile the block loads or stores.
template <bool kCount>
__device__ __forceinline__ void count_tile(unsigned long long* counts, int array, Access access, long long elements) {
    if constexpr (kCount) {
        if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0 && elements > 0)
            atomicAdd(&counts[2 * array + access], static_cast<unsigned long long>(elements));
    }
}

// ---- element types: storage T, arithmetic in float ----

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Calls f(T{}) with T the storage type of `t`, so a launcher writes its dispatch once:
//   with_dtype(args.dtype, [&](auto tag) { using T = decltype(tag); ... });
template <typename F>
void with_dtype(DType t, F&& f) {
    switch (t) {
        case DType::F32: f(float{}); break;
        case DType::F16: f(__half{}); break;
        case DType::BF16: f(__nv_bfloat16{}); break;
        case DType::E4M3: throw GpuError("with_dtype: e4m3 runs only in the FP8 kernels (the catalog says which)");
    }
}

// Calls f(std::bool_constant<...>{}) for the counting or the timed variant.
template <typename F>
void with_counting(const StageArgs& args, F&& f) {
    if (args.counts) f(std::true_type{});
    else f(std::false_type{});
}

// ---- the tensor-core versions' launches (fp16/bf16, d = 64 or 128) ----

// Throws GpuError naming `kernel` for what no tensor-core version takes: n outside 1..2^30,
// fp32 storage, or more heads than a grid's y dimension.
inline void require_tensor_core_launch(const StageArgs& args, const char* kernel) {
    if (args.params[0] < 1 || args.params[0] > (1 << 30)) throw GpuError(std::string(kernel) + " takes 1 ≤ n ≤ 2^30");
    if (args.dtype == DType::F32) throw GpuError(std::string(kernel) + " runs on the tensor cores: fp16 or bf16 (--dtype)");
    if (args.heads < 1 || args.heads > 65535) throw GpuError(std::string(kernel) + " takes 1 to 65535 heads (the grid's y dimension)");
}

// Calls f(T{}) for fp16 or bf16 (require_tensor_core_launch refused fp32).
template <typename F>
void with_half_dtype(DType t, F&& f) {
    if (t == DType::BF16) f(__nv_bfloat16{});
    else f(__half{});
}

// Calls f(std::integral_constant<int, d>{}) for d = 64 or 128 (the catalog refused others).
template <typename F>
void with_head_dim(int d, F&& f) {
    if (d == 64) f(std::integral_constant<int, 64>{});
    else f(std::integral_constant<int, 128>{});
}

__host__ __device__ constexpr long long cdiv(long long a, long long b) { return (a + b - 1) / b; }
__host__ __device__ constexpr long long min_ll(long long a, long long b) { return a < b ? a : b; }

// Throws GpuError naming the kernel when its tiles need more shared memory than this device
// gives a block; otherwise opts the kernel in to `bytes` of dynamic shared memory.
void require_shared_memory(const void* kernel, long long bytes, const StageArgs& args, const char* kernel_name, const char* advice);

// Throws GpuError naming `what` with the CUDA error's text when `status` is not success.
void cuda_check(cudaError_t status, const char* what);

// Throws GpuError with the CUDA error's text if the last launch failed.
void check_launch(const char* kernel_name);

}  // namespace toysim::gpu
