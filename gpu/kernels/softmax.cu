// Softmax of a row x of length n (fp32), the GPU twins of programs/p4_softmax_3pass.toy and
// programs/p5_online_softmax.toy: the same passes over x, and the same global-memory
// traffic, counted per array (`toysim gpu run` sets the counts against the simulator's).
//
//   toysim gpu run programs/p4_softmax_3pass.toy --set n=100000 --heads 64
//   toysim gpu run programs/p5_online_softmax.toy --set n=100000 --heads 64
//   toysim gpu run programs/p5_online_softmax.toy --set n=1000000 --format json
//
// The CPU reference is the simulator's (`check out = softmax(x)`), so this file holds only
// the kernels, one version per program:
//
//   1. softmax_3pass    max pass, sum pass, normalize pass: reads(x) = 3n, writes(out) = n.
//   2. softmax_online   running max and rescaled sum in one pass, then normalize:
//                       reads(x) = 2n, writes(out) = n. One pass over x saved.
//
// One thread block per row, for a row of any length (n = 1 to 10⁶ and past): the block's
// threads stride over the row, each keeping its own partial statistic in a register (the
// program's r1, r2), and a block-level reduction combines the partials once per pass. Row h
// (batch × heads: blockIdx.x) starts at x + h·n. Softmax is bound by memory, not arithmetic:
// the passes over x are the cost, which is the lesson of the two programs.
//
// One block per row keeps a row's reductions inside one block (no second launch, no atomics
// on the statistics), at a price where rows are few: one row of 10⁶ runs on one of an
// H100's 132 SMs, 0.52 ms (online) for 12 MB, about 23 GB/s. Many rows fill the GPU: 4096
// rows of 4096 move their counted 268 MB in 0.098 ms (3-pass), most of it from L2.
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "gpu/kernels/common.cuh"

namespace toysim::gpu {

namespace {

enum SoftmaxArray : int { kX = 0, kOut = 1 };  // catalog order

constexpr int kMaxThreads = 1024;
constexpr unsigned kFullWarp = 0xffffffffu;

// Threads per block: one per element for short rows (whole warps), 1024 for long ones.
int block_threads(long long n) { return static_cast<int>(min_ll(kMaxThreads, cdiv(n, 32) * 32)); }

// ---- block-level reductions: within each warp by shuffles, then across the warps ----
//
// A warp combines its 32 values in five shuffle steps (no shared memory); lane 0 of each warp
// leaves the warp's result in shared memory, and the first warp combines those. Every thread
// gets the block's result. `combine` is max, +, or the online (m, s) merge below.

template <typename T, typename Combine>
__device__ T warp_reduce(T v, Combine combine) {
    for (int offset = 16; offset > 0; offset /= 2) v = combine(v, T::shuffle_down(v, offset));
    return v;
}

template <typename T, typename Combine>
__device__ T block_reduce(T v, T identity, Combine combine) {
    __shared__ T partial[kMaxThreads / 32];
    __shared__ T result;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = cdiv(blockDim.x, 32);
    v = warp_reduce(v, combine);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? partial[lane] : identity;
        v = warp_reduce(v, combine);
        if (lane == 0) result = v;
    }
    __syncthreads();
    return result;  // a later reduction overwrites `result` only after a __syncthreads that follows this read
}

// One float, as block_reduce's T.
struct Scalar {
    float v;
    static __device__ Scalar shuffle_down(Scalar a, int offset) { return {__shfl_down_sync(kFullWarp, a.v, offset)}; }
};

// ---- 1. softmax_3pass: max, sum, normalize ----
//
// Problem 4 on many threads. Pass 1 finds m = max x_i; pass 2 sums e^(x_i − m); pass 3
// recomputes each e^(x_i − m) and divides by the sum. Subtracting m first keeps every
// exponential at most 1 (the "safe" softmax). Each pass reads all of x: 3n reads. The
// exponentials are never stored, recomputed in pass 3 instead (compute traded for traffic).
template <bool kCount>
__global__ void softmax_3pass_kernel(const float* __restrict__ x, float* __restrict__ out, long long n, unsigned long long* counts) {
    x += blockIdx.x * n;
    out += blockIdx.x * n;

    // Pass 1: the row's max (the program's r1).
    float m = -INFINITY;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, x[i]);
    count_tile<kCount>(counts, kX, kRead, n);
    m = block_reduce(Scalar{m}, Scalar{-INFINITY}, [](Scalar a, Scalar b) { return Scalar{fmaxf(a.v, b.v)}; }).v;

    // Pass 2: the sum of exponentials (r2).
    float s = 0.0f;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) s += expf(x[i] - m);
    count_tile<kCount>(counts, kX, kRead, n);
    s = block_reduce(Scalar{s}, Scalar{0.0f}, [](Scalar a, Scalar b) { return Scalar{a.v + b.v}; }).v;

    // Pass 3: normalize.
    for (long long i = threadIdx.x; i < n; i += blockDim.x) out[i] = expf(x[i] - m) / s;
    count_tile<kCount>(counts, kX, kRead, n);
    count_tile<kCount>(counts, kOut, kWrite, n);
}

// ---- 2. softmax_online: one pass for max and sum, then normalize ----
//
// What changed from softmax_3pass: passes 1 and 2 are one pass. Each thread keeps a running
// max m and a sum s of e^(x_i − m) for the m it has so far; when a larger x_i raises the max
// to m', the terms summed so far are rescaled by e^(m − m') <= 1:
//     m' = max(m, x_i),   s' = s·e^(m − m') + e^(x_i − m')
// What it gained: one pass over x fewer, 2n reads instead of 3n, so 3n elements moved
// instead of 4n (reads and writes): a quarter less traffic, and a quarter less time where the
// rows are larger than the 50 MB L2 cache (16 rows of 10⁶ on one H100: 1.24 ms → 0.91 ms).
// Where x fits in L2, the passes after the first read from the cache and the two versions
// take about the same time (4096 rows of 4096: 0.098 ms and 0.104 ms): counted traffic is
// what the kernel asks for, not what reaches DRAM.
//
// The same rule merges two threads' partials (m1, s1) and (m2, s2): each sum is rescaled to
// the larger max, m = max(m1, m2), s = s1·e^(m1 − m) + s2·e^(m2 − m). The merge is
// associative, so the block reduction combines partials in any order: it is the step the
// online softmax adds to a parallel reduction, and FlashAttention's rescaling of O.
struct MaxSum {
    float m, s;  // a running max, and Σ e^(x_i − m) over the elements seen
    static __device__ MaxSum shuffle_down(MaxSum a, int offset) {
        return {__shfl_down_sync(kFullWarp, a.m, offset), __shfl_down_sync(kFullWarp, a.s, offset)};
    }
};

// An empty partial (no elements yet) is (−∞, 0); merging with it changes nothing. The test
// keeps e^(−∞ − (−∞)) = NaN out of a merge of two empty partials.
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.0f};
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

template <bool kCount>
__global__ void softmax_online_kernel(const float* __restrict__ x, float* __restrict__ out, long long n, unsigned long long* counts) {
    x += blockIdx.x * n;
    out += blockIdx.x * n;

    // Pass 1: running max (r1) and rescaled sum (r2) together. The update is merge(ms, (x_i, 1))
    // with one exponential instead of two: of e^(m − m') and e^(x_i − m'), one is e^0 = 1.
    MaxSum ms{-INFINITY, 0.0f};
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        const float xi = x[i];
        if (xi > ms.m) {
            ms.s = ms.s * expf(ms.m - xi) + 1.0f;  // a new max x_i: rescale the sum, add e^0
            ms.m = xi;
        } else if (xi != -INFINITY) {
            ms.s += expf(xi - ms.m);  // the max stays: add e^(x_i − m); a masked −∞ adds 0
        }
    }
    count_tile<kCount>(counts, kX, kRead, n);
    ms = block_reduce(ms, MaxSum{-INFINITY, 0.0f}, [](MaxSum a, MaxSum b) { return merge(a, b); });

    // Pass 2: normalize, as pass 3 of softmax_3pass.
    for (long long i = threadIdx.x; i < n; i += blockDim.x) out[i] = expf(x[i] - ms.m) / ms.s;
    count_tile<kCount>(counts, kX, kRead, n);
    count_tile<kCount>(counts, kOut, kWrite, n);
}

// ---- launchers ----

using SoftmaxKernel = void (*)(const float*, float*, long long, unsigned long long*);

// Both versions launch alike: one block per row, `timed` or `counting` the two variants.
void launch_softmax(const char* name, int stage, const StageArgs& args, SoftmaxKernel timed, SoftmaxKernel counting) {
    if (stage != 0) throw GpuError(std::string(name) + " has one stage, not stage " + std::to_string(stage));
    if (args.dtype != DType::F32) throw GpuError(std::string(name) + " runs in fp32 only");
    const long long n = args.params[0];
    const dim3 grid(static_cast<unsigned>(args.heads)), block(static_cast<unsigned>(block_threads(n)));
    note_launch(args, timed, int(block.x), 0, 0);
    if (args.plan_only) return;
    auto* x = static_cast<const float*>(args.arrays[kX]);
    auto* out = static_cast<float*>(args.arrays[kOut]);
    if (args.counts) counting<<<grid, block, 0, args.stream>>>(x, out, n, args.counts);
    else timed<<<grid, block, 0, args.stream>>>(x, out, n, nullptr);
    check_launch(name);
}

}  // namespace

extern const KernelEntry kSoftmaxKernels[] = {
    {"softmax_3pass",
     [](int stage, const StageArgs& args) {
         launch_softmax("softmax_3pass", stage, args, softmax_3pass_kernel<false>, softmax_3pass_kernel<true>);
     }},
    {"softmax_online",
     [](int stage, const StageArgs& args) {
         launch_softmax("softmax_online", stage, args, softmax_online_kernel<false>, softmax_online_kernel<true>);
     }},
};
extern const int kSoftmaxKernelCount = sizeof(kSoftmaxKernels) / sizeof(kSoftmaxKernels[0]);

}  // namespace toysim::gpu
