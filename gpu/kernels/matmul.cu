// Matrix product c = a·b (n×n, fp32), the GPU twins of programs/matmul_inner.toy and
// programs/matmul_outer.toy: the same loop order and tile size, and the same global-memory
// traffic, counted per array (`toysim gpu run` sets the counts against the simulator's).
//
//   toysim gpu run programs/matmul_inner.toy --set n=1024
//   toysim gpu run programs/matmul_outer.toy --set n=1024 --set t=16
//   toysim gpu run programs/matmul_outer.toy --set n=256 --set t=4 --heads 64 --format json
//
// The CPU reference is the simulator's (`check c = matmul(a, b)` in each program), so this
// file holds only the kernels, from naive to tiled:
//
//   1. matmul_inner   one thread per c[i][j], every operand reloaded from global memory for
//                     every product: reads(a) = reads(b) = n³, writes(c) = n².
//   2. matmul_outer   one t×t thread block per t×t tile of c; for each k, a column of a and a
//                     row of b (t elements each) in shared memory, multiplied into the t×t
//                     partial sums (an outer product): reads(a) = reads(b) = n³/t.
//
// Batches: blockIdx.z is the head; head h's a starts at a + h·n·n (likewise b and c).
#include <cuda_runtime.h>

#include <string>

#include "gpu/kernels/common.cuh"

namespace toysim::gpu {

namespace {

enum MatmulArray : int { kA = 0, kB = 1, kC = 2 };  // catalog order

// Head h's n×n matrix. size_t: with heads, or n past 46340, an element's index passes 2^31.
__device__ __forceinline__ std::size_t head_offset(int n) { return std::size_t(blockIdx.z) * std::size_t(n) * std::size_t(n); }

// Grids put tiles along x and y (at most 65535) and heads along z (at most 65535).
void require_grid(long long tiles_per_side, const char* kernel_name, const char* advice) {
    if (tiles_per_side > 65535)
        throw GpuError(std::string(kernel_name) + " needs " + std::to_string(tiles_per_side) +
                       " thread blocks along a side of c; a grid allows 65535: " + advice);
}

// ---- 1. matmul_inner: the inner product, no reuse ----
//
// Problem 1's scheme for every output: thread (i, j) walks row i of a and column j of b,
// loading both operands of every product from global memory into registers (the
// simulator's R0 and R1) and accumulating in a third (R2). Nothing is shared: the n threads
// of a row of c each load that row of a themselves. (The hardware's L1 and L2 caches catch
// most of those repeats; the count is what the kernel asks of global memory, as the
// simulator's LOADs are.)
//
// Blocks are 16×16 threads, for a grid of any n; edge blocks own fewer outputs.
constexpr int kInnerBlock = 16;

template <bool kCount>
__global__ void matmul_inner_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n,
                                    unsigned long long* counts) {
    const std::size_t head = head_offset(n);
    a += head, b += head, c += head;

    // The block's traffic, counted once per block: each of its outputs loads n elements of a
    // and n of b and stores one element of c.
    const long long rows = min_ll(kInnerBlock, n - static_cast<long long>(blockIdx.y) * kInnerBlock);
    const long long cols = min_ll(kInnerBlock, n - static_cast<long long>(blockIdx.x) * kInnerBlock);
    count_tile<kCount>(counts, kA, kRead, rows * cols * n);
    count_tile<kCount>(counts, kB, kRead, rows * cols * n);
    count_tile<kCount>(counts, kC, kWrite, rows * cols);

    const int i = blockIdx.y * kInnerBlock + threadIdx.y;
    const int j = blockIdx.x * kInnerBlock + threadIdx.x;
    if (i >= n || j >= n) return;
    const float* a_row = a + std::size_t(i) * n;
    float sum = 0.0f;  // MAC_Z, then MAC
    for (int k = 0; k < n; ++k) sum += a_row[k] * b[std::size_t(k) * n + j];
    c[std::size_t(i) * n + j] = sum;
}

void launch_matmul_inner(const StageArgs& args) {
    const int n = static_cast<int>(args.params[0]);
    const long long tiles = cdiv(n, kInnerBlock);
    require_grid(tiles, "matmul_inner", "lower n");
    const dim3 block(kInnerBlock, kInnerBlock);
    with_counting(args, [&](auto counting) { note_launch(args, matmul_inner_kernel<decltype(counting)::value>, int(block.x * block.y), 0, 0); });
    if (args.plan_only) return;
    auto* a = static_cast<const float*>(args.arrays[kA]);
    auto* b = static_cast<const float*>(args.arrays[kB]);
    auto* c = static_cast<float*>(args.arrays[kC]);
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(tiles), static_cast<unsigned>(args.heads));
    with_counting(args, [&](auto counting) {
        matmul_inner_kernel<decltype(counting)::value><<<grid, block, 0, args.stream>>>(a, b, c, n, args.counts);
    });
    check_launch("matmul_inner");
}

// ---- 2. matmul_outer: t×t output tiles, operands shared through shared memory ----
//
// What changed from matmul_inner: the t×t threads of a block compute one t×t tile of c
// together, and an operand is loaded from global memory once per tile instead of once per
// product. For each k, the tile needs a column of a (a[i0..i0+t)[k], t elements) and a row
// of b (b[k][j0..j0+t), t elements); every one of its t² partial sums takes one element of
// each: c[i][j] += a[i][k]·b[k][j], an outer product of the column and the row. The threads
// bring the 2t elements into shared memory and each reads the two it needs from there.
//
// What it gained: loads divided by t. Each block loads 2t elements per k instead of 2t²,
// so reads(a) = reads(b) = (n/t)² tiles × n values of k × t = n³/t, as in the program:
// the partial sums stay in registers (the program's t² accumulator registers), and the
// operands are reused t times each from the block's shared memory (the program's 1 + t
// operand registers). t = 1 is the inner product again; t = n would load every input once.
//
// The k loop is taken t values at a time: the t columns a[i0..i0+t)[k0..k0+t) form a t×t
// block of a, and the t rows b[k0..k0+t)[j0..j0+t) a t×t block of b, so each thread loads
// one element of each (consecutive threads, consecutive addresses: coalesced) and one
// barrier pair serves t outer products instead of one. The same elements are loaded, so the
// counts are those of t separate columns and rows. n is a multiple of t (the catalog
// refuses other n, as the program does), so every chunk is whole.
//
// Measured on one H100 at n = 1024 (median of 20): matmul_inner 0.43 ms; matmul_outer
// t = 4: 1.64 ms, t = 8: 0.51 ms, t = 16: 0.36 ms, t = 32: 0.34 ms (6.4 TFLOP/s). The
// counted loads fall by t, the time does not follow them: the L1 and L2 caches already serve
// most of matmul_inner's repeated loads (the counts are requests, not DRAM traffic), and a
// t×t block is only t² threads, 16 at t = 4 (half a warp), with at most 32 blocks per SM, so
// small tiles leave most of the SM idle. The rest of the way to cuBLAS is more outputs per
// thread (a register tile) and tensor cores.
template <bool kCount>
__global__ void matmul_outer_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n, int t,
                                    unsigned long long* counts) {
    extern __shared__ float shared[];
    float* a_cols = shared;          // [t][t]: a_cols[i·t + kk] = a[i0 + i][k0 + kk]
    float* b_rows = shared + t * t;  // [t][t]: b_rows[kk·t + j] = b[k0 + kk][j0 + j]

    const std::size_t head = head_offset(n);
    a += head, b += head, c += head;
    const int i = threadIdx.y, j = threadIdx.x;  // this thread's element of the tile
    const std::size_t row = std::size_t(blockIdx.y) * t + i;  // of c and a
    const std::size_t col = std::size_t(blockIdx.x) * t + j;  // of c and b

    float sum = 0.0f;  // one of the tile's t² partial sums, in a register for the whole k loop
    for (int k0 = 0; k0 < n; k0 += t) {
        // t columns of a and t rows of b: t·t elements of each, one per thread.
        a_cols[i * t + j] = a[row * n + (k0 + j)];
        b_rows[i * t + j] = b[std::size_t(k0 + i) * n + col];
        count_tile<kCount>(counts, kA, kRead, static_cast<long long>(t) * t);
        count_tile<kCount>(counts, kB, kRead, static_cast<long long>(t) * t);
        __syncthreads();
        // t outer products: for each k, column k of the a tile times row k of the b tile.
        for (int kk = 0; kk < t; ++kk) sum += a_cols[i * t + kk] * b_rows[kk * t + j];
        __syncthreads();  // every thread is done with the chunk before the next overwrites it
    }
    c[row * n + col] = sum;
    count_tile<kCount>(counts, kC, kWrite, static_cast<long long>(t) * t);
}

void launch_matmul_outer(const StageArgs& args) {
    const int n = static_cast<int>(args.params[0]);
    const int t = static_cast<int>(args.params[1]);  // the catalog holds t <= 32 and n % t == 0
    const long long tiles = n / t;
    const long long shared_bytes = 2LL * t * t * static_cast<long long>(sizeof(float));
    require_grid(tiles, "matmul_outer", "raise t or lower n");
    with_counting(args, [&](auto counting) {
        require_shared_memory(reinterpret_cast<const void*>(&matmul_outer_kernel<decltype(counting)::value>), shared_bytes, args,
                              "matmul_outer", "lower t");
        note_launch(args, matmul_outer_kernel<decltype(counting)::value>, t * t, shared_bytes, 0);
    });
    if (args.plan_only) return;
    auto* a = static_cast<const float*>(args.arrays[kA]);
    auto* b = static_cast<const float*>(args.arrays[kB]);
    auto* c = static_cast<float*>(args.arrays[kC]);
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(tiles), static_cast<unsigned>(args.heads));
    const dim3 block(t, t);
    with_counting(args, [&](auto counting) {
        matmul_outer_kernel<decltype(counting)::value><<<grid, block, shared_bytes, args.stream>>>(a, b, c, n, t, args.counts);
    });
    check_launch("matmul_outer");
}

void launch_stage(const char* kernel, int stage, const StageArgs& args, void (*one_stage)(const StageArgs&)) {
    if (stage != 0) throw GpuError(std::string(kernel) + " has one stage, not stage " + std::to_string(stage));
    if (args.dtype != DType::F32) throw GpuError(std::string(kernel) + " runs in fp32 only");
    one_stage(args);
}

}  // namespace

extern const KernelEntry kMatmulKernels[] = {
    {"matmul_inner", [](int stage, const StageArgs& args) { launch_stage("matmul_inner", stage, args, launch_matmul_inner); }},
    {"matmul_outer", [](int stage, const StageArgs& args) { launch_stage("matmul_outer", stage, args, launch_matmul_outer); }},
};
extern const int kMatmulKernelCount = sizeof(kMatmulKernels) / sizeof(kMatmulKernels[0]);

}  // namespace toysim::gpu
