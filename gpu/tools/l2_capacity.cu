// How much of the L2 a kernel sees: the calibration behind the modeled L2 (issue "A modeled
// L2"), measured with the in-process CUPTI Range Profiler.
//
// For each footprint F, after toysim's cold flush, one launch reads F bytes (the warm pass,
// outside the measurement) and a second launch reads the same F bytes again, measured. Its DRAM
// reads divided by what it asked for is the fraction that missed: 0 while F fits, 1 for a
// cyclic stream under LRU once it does not, something between under another policy. Patterns:
//   dense      every byte, grid-stride over 4 blocks an SM (the whole footprint, in order);
//   lines/2    every other 128-byte line, whole (half the lines over the same span);
//   sector     the first 32-byte sector of every line (every tag, a quarter of the data);
//   one block  the dense read by a single block of 1024 threads: one stream, in order.
//
//   toysim_l2_capacity [max MiB] [step MiB]   (defaults 96 and 4; finer around the knee)
//
// Set conflicts: `toysim_l2_capacity strided` reads K whole lines S bytes apart, twice, the
// second time measured, for S a power of two from 4 KiB to 128 MiB and the multiples of
// 3,276,800 B (the H100's 50 MiB over 16 ways of 128-byte lines: where lines share a set under
// modulo indexing), K from 16 to 256. Under modulo indexing, K lines at such a stride share one
// set and miss once K passes the ways; "missed" is the second read's DRAM bytes over K × 128.
// (Background DRAM traffic adds a few hundred bytes to any measurement: 0.01-0.1 here.)

#include <cuda_runtime.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "gpu/runtime/l2_flush.cuh"
#include "gpu/runtime/profiler.h"

namespace {

void check(cudaError_t e, const char* what) { toysim::gpu::check_tool(e, "l2_capacity", what); }

// The first `words` 16-byte words of every `stride`-th 128-byte line of the first `lines`.
__global__ void read_lines(const uint4* p, std::size_t lines, std::size_t stride, unsigned words, unsigned* sink) {
    unsigned x = 0;
    const std::size_t n = (lines / stride) * words;
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        uint4 v = p[(i / words) * stride * 8 + i % words];
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) *sink = x;
}

// A pass measured as the second of two: toysim's cold flush, the pass once (not measured), then
// the pass again, measured. Its DRAM reads are what the first pass did not leave in the L2.
toysim::gpu::MeasuredTraffic measure_second_pass(toysim::gpu::RangeProfiler& profiler, const cudaDeviceProp& prop, void* flush,
                                                 unsigned* sink, const std::function<void()>& pass) {
    auto prepare = [&] {
        check(toysim::gpu::flush_l2(flush, 2 * static_cast<std::size_t>(prop.l2CacheSize), sink, prop.multiProcessorCount, nullptr),
              "flush");
        pass();
        check(cudaGetLastError(), "warm pass");
        check(cudaDeviceSynchronize(), "warm pass");
    };
    return profiler.measure(prepare, pass);
}

}  // namespace

// The strided measurement (see the top): one row per stride, one column per K.
static int strided(const cudaDeviceProp& prop, toysim::gpu::RangeProfiler& profiler, void* flush, unsigned* sink) {
    const std::size_t span = std::size_t{4} << 30;
    void* data = nullptr;
    check(cudaMalloc(&data, span), "cudaMalloc data");
    check(cudaMemset(data, 3, span), "filling");
    check(cudaDeviceSynchronize(), "sync");
    const std::size_t ks[] = {16, 32, 64, 128, 256};
    std::vector<std::size_t> strides;
    for (std::size_t s = 4096; s <= (std::size_t{128} << 20); s *= 2) strides.push_back(s);
    for (std::size_t m : {1, 2, 3, 4, 8}) strides.push_back(m * 1638400);
    std::sort(strides.begin(), strides.end());
    strides.erase(std::unique(strides.begin(), strides.end()), strides.end());
    std::printf("missed fraction of the second read of K lines S bytes apart\n%12s", "S \\ K");
    for (std::size_t k : ks) std::printf(" %7zu", k);
    std::printf("\n");
    for (std::size_t stride : strides) {
        std::printf("%12zu", stride);
        for (std::size_t k : ks) {
            if (k * stride > span) {
                std::printf(" %7s", "-");
                continue;
            }
            // read_lines takes strides in lines: S is a whole number of 128-byte lines here.
            auto m = measure_second_pass(profiler, prop, flush, sink, [&] {
                read_lines<<<1, 256>>>(static_cast<const uint4*>(data), k * (stride / 128), stride / 128, 8, sink);
            });
            if (!m.available) {
                std::printf("\nnot measured: %s\n", m.why_not.c_str());
                return 1;
            }
            std::printf(" %7.3f", m.dram_read_bytes / (128.0 * static_cast<double>(k)));
        }
        std::printf("\n");
    }
    return 0;
}

int main(int argc, char** argv) {
    const bool set_conflicts = argc > 1 && std::string(argv[1]) == "strided";
    const std::size_t max_mib = argc > 1 && !set_conflicts ? std::strtoull(argv[1], nullptr, 10) : 96;
    const std::size_t step_mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4;
    const cudaDeviceProp prop = toysim::gpu::open_device("l2_capacity");
    const std::size_t l2 = static_cast<std::size_t>(prop.l2CacheSize);
    const unsigned grid = static_cast<unsigned>(4 * prop.multiProcessorCount);
    void* flush = nullptr;
    unsigned* sink = nullptr;
    check(cudaMalloc(&flush, 2 * l2), "cudaMalloc flush");
    check(cudaMalloc(&sink, 16), "cudaMalloc sink");
    std::printf("device: %s, L2 %zu bytes (%.1f MiB), %d SMs, persisting L2 max %d bytes\n", prop.name, l2, l2 / 1048576.0,
                prop.multiProcessorCount, prop.persistingL2CacheMaxSize);
    toysim::gpu::RangeProfiler profiler;
    if (!profiler.available()) {
        std::printf("skipped: %s\n", profiler.why_not().c_str());
        return 77;
    }
    if (set_conflicts) return strided(prop, profiler, flush, sink);
    void* data = nullptr;
    check(cudaMalloc(&data, max_mib << 20), "cudaMalloc data");
    check(cudaMemset(data, 3, max_mib << 20), "filling");
    check(cudaDeviceSynchronize(), "sync");
    // Footprints: every step, and every MiB from 20 to 60 (the knee).
    std::vector<std::size_t> footprints;
    for (std::size_t mib = step_mib; mib <= max_mib; mib += step_mib) footprints.push_back(mib);
    for (std::size_t mib = 20; mib <= 60 && mib <= max_mib; ++mib)
        if (mib % step_mib) footprints.push_back(mib);
    std::sort(footprints.begin(), footprints.end());

    struct Pattern {
        const char* name;
        std::size_t stride;  // lines
        unsigned words;      // 16-byte words of each line read
        unsigned blocks, threads;
    };
    const Pattern patterns[] = {
        {"dense", 1, 8, grid, 512}, {"lines/2", 2, 8, grid, 512}, {"sector", 1, 2, grid, 512}, {"one block", 1, 8, 1, 1024}};
    std::printf("%8s %-10s %14s %14s %10s\n", "MiB", "pattern", "read B", "DRAM read B", "missed");
    for (std::size_t mib : footprints) {
        const std::size_t lines = (mib << 20) / 128;
        for (const Pattern& pat : patterns) {
            auto m = measure_second_pass(profiler, prop, flush, sink, [&] {
                read_lines<<<pat.blocks, pat.threads>>>(static_cast<const uint4*>(data), lines, pat.stride, pat.words, sink);
            });
            const double requested = static_cast<double>(lines / pat.stride) * pat.words * 16.0;
            if (!m.available) {
                std::printf("%8zu %-10s not measured: %s\n", mib, pat.name, m.why_not.c_str());
                continue;
            }
            std::printf("%8zu %-10s %14.0f %14.0f %10.3f\n", mib, pat.name, requested, m.dram_read_bytes, m.dram_read_bytes / requested);
        }
    }
    return 0;
}
