// Inputs a program computes from others (`input O[n][d] = attention(Q, K, V)`, `input L[n] =
// attention_lse(Q, K)`) filled on the device where the CPU would take too long: a backward's O
// and L at n = 16384 and 16 heads are 3.5·10^11 multiply-adds, half an hour of one core. The
// values are the reference's, not a kernel's under test: fp32 sums with the online softmax's
// rescale, one warp a query row, its lanes across d. gpu_run checks sampled rows against the
// CPU's double-precision reference, as it checks a kernel's results.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/kernels.h"
#include "gpu/runtime/reference_fill.h"

namespace toysim::gpu {

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kLaneElements = static_cast<int>(kDeviceFillMaxWidth / 32);

__device__ __forceinline__ float load(const void* base, DType t, long long i) {
    switch (t) {
        case DType::F16: return __half2float(static_cast<const __half*>(base)[i]);
        case DType::BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
        default: return static_cast<const float*>(base)[i];
    }
}

__device__ __forceinline__ void store(void* base, DType t, long long i, float v) {
    switch (t) {
        case DType::F16: static_cast<__half*>(base)[i] = __float2half_rn(v); break;
        case DType::BF16: static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(v); break;
        default: static_cast<float*>(base)[i] = v;
    }
}

struct FillArgs {
    const void *q, *k, *v;
    void* out;
    DType tq, tk, tv, tout;
    int n, m, d, dv;
    bool causal, lse;
};

// One warp a row of one head (blockIdx.y): the scores against every key it sees, one at a
// time, summed across the lanes; the running max, sum and output rescaled as each arrives.
__global__ void __launch_bounds__(kWarpsPerBlock * 32) attention_fill(FillArgs a) {
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const long long row = static_cast<long long>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
    if (row >= a.n) return;
    const long long head = blockIdx.y;
    const long long q0 = (head * a.n + row) * a.d, k0 = head * a.m * a.d, v0 = head * a.m * a.dv;
    float q[kLaneElements], o[kLaneElements];
    for (int t = 0; t < kLaneElements; ++t) {
        const int e = lane + 32 * t;
        q[t] = e < a.d ? load(a.q, a.tq, q0 + e) : 0.f;
        o[t] = 0.f;
    }
    float running_max = -INFINITY, sum = 0.f;
    const long long keys = a.causal ? (row + 1 < a.m ? row + 1 : a.m) : a.m;
    for (long long j = 0; j < keys; ++j) {
        float s = 0.f;
        for (int t = 0; t < kLaneElements; ++t) {
            const int e = lane + 32 * t;
            if (e < a.d) s = fmaf(q[t], load(a.k, a.tk, k0 + j * a.d + e), s);
        }
        for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffffu, s, offset);
        const float next_max = fmaxf(running_max, s);
        const float rescale = expf(running_max - next_max), p = expf(s - next_max);
        sum = sum * rescale + p;
        running_max = next_max;
        if (!a.lse)
            for (int t = 0; t < kLaneElements; ++t) {
                const int e = lane + 32 * t;
                if (e < a.dv) o[t] = fmaf(p, load(a.v, a.tv, v0 + j * a.dv + e), o[t] * rescale);
            }
    }
    if (a.lse) {
        if (lane == 0) store(a.out, a.tout, head * a.n + row, running_max + logf(sum));
        return;
    }
    for (int t = 0; t < kLaneElements; ++t) {
        const int e = lane + 32 * t;
        if (e < a.dv) store(a.out, a.tout, (head * a.n + row) * a.dv + e, o[t] / sum);
    }
}

}  // namespace

void fill_on_device(const HostArray::DeviceFill& fill, void* out, DType tout, const void* const* arrays, const DType* types, long long heads,
                    cudaStream_t stream) {
    const bool lse = fill.kind == HostArray::DeviceFill::Kind::AttentionLse;
    // Its loads read fp32, fp16 and bf16 (no kernel that runs in e4m3 takes an input filled so).
    for (DType t : {tout, types[fill.q], types[fill.k], lse ? DType::F32 : types[fill.v]})
        if (t == DType::E4M3) throw GpuError("an input filled on the device is fp32, fp16 or bf16, not e4m3");
    FillArgs a{arrays[fill.q], arrays[fill.k], lse ? nullptr : arrays[fill.v], out, types[fill.q], types[fill.k],
               lse ? DType::F32 : types[fill.v], tout, static_cast<int>(fill.n), static_cast<int>(fill.m), static_cast<int>(fill.d),
               static_cast<int>(fill.dv), fill.causal, lse};
    const dim3 grid(static_cast<unsigned>((fill.n + kWarpsPerBlock - 1) / kWarpsPerBlock), static_cast<unsigned>(heads));
    attention_fill<<<grid, kWarpsPerBlock * 32, 0, stream>>>(a);
    cuda_check(cudaGetLastError(), "filling an input on the device");
}

}  // namespace toysim::gpu
