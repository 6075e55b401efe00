// What `gpu run` does around the launches it measures (runtime.cu), shared with the probes that
// measure it: the cold-L2 flush of `--measure cold` (l2_probe.cu checks it): a buffer twice the
// L2's size is written, then read back, so that the L2 holds nothing of the measured launch's
// arrays and nothing dirty (measured: at most 0.3 MB of dirty lines left, gpu/README.md "Cold
// L2"); and the hold before a timed repeat (machine_probe.cu times a stage with it).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace toysim::gpu {

// Reads every byte of a buffer (and writes one word no one reads): after the flush buffer is
// written, this evicts its dirty lines, so that a launch's DRAM writes are its own.
static __global__ void read_through(const uint4* p, std::size_t n, unsigned* sink) {
    unsigned x = 0;
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        uint4 v = p[i];
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) *sink = x;
}

// Enqueues the flush on `stream`: `buffer` (bytes a multiple of 16, twice the L2) written, then
// read by 4 blocks an SM. Returns the first error.
static inline cudaError_t flush_l2(void* buffer, std::size_t bytes, unsigned* sink, int sm_count, cudaStream_t stream) {
    cudaError_t status = cudaMemsetAsync(buffer, 0x5a, bytes, stream);
    if (status != cudaSuccess) return status;
    read_through<<<static_cast<unsigned>(4 * sm_count), 512, 0, stream>>>(static_cast<const uint4*>(buffer), bytes / 16, sink);
    return cudaGetLastError();
}

// Holds the stream for `ns` nanoseconds of the GPU's global timer. A timed repeat launches it
// before its first event, so that the GPU is busy while the host enqueues the stages: the first
// stage's time is then its kernel's, not the host's launch latency after an idle GPU (on the
// H100, fa2_backward's delta launch at n = 1024, 4 heads: 10.4 µs without it, 7.1 µs with it).
static __global__ void hold_stream(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    while (now - start < ns);
}
constexpr unsigned long long kHoldNanoseconds = 100'000;  // 100 µs: the host's launches of every stage take less

// For the L2 tools (l2_probe.cu, l2_capacity.cu): a CUDA failure ends the tool, saying what.
static inline void check_tool(cudaError_t e, const char* tool, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s: %s\n", tool, what, cudaGetErrorString(e));
        std::exit(1);
    }
}

// Device 0, made current: its properties.
static inline cudaDeviceProp open_device(const char* tool) {
    cudaDeviceProp prop{};
    check_tool(cudaGetDeviceProperties(&prop, 0), tool, "cudaGetDeviceProperties");
    check_tool(cudaSetDevice(0), tool, "cudaSetDevice");
    return prop;
}

}  // namespace toysim::gpu
