// The cold-L2 flush of `gpu run --measure cold` (runtime.cu), shared with the probe that checks
// it (l2_probe.cu): a buffer twice the L2's size is written, then read back, so that the L2
// holds nothing of the measured launch's arrays and nothing dirty (measured: at most 0.3 MB
// of dirty lines left, gpu/README.md "Cold L2").
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
