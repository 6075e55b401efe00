// What the probes (gpu/tools/*.cu) share: per-block stamps of the SM and its clock, timing of a
// launch from them (work an SM does a clock, whatever the clock ran at), and the table's rows.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gpu/runtime/l2_flush.cuh"  // check_tool

namespace toysim::probe {

inline void check(cudaError_t e, const char* what) { toysim::gpu::check_tool(e, "machine_probe", what); }

// ---- per-block stamps: the SM, and its cycle counter at the block's start and end ----

struct Stamp {
    unsigned long long start, end;
    unsigned sm, pad;
};
__device__ __forceinline__ void stamp_begin(Stamp* s) {
    if (threadIdx.x == 0) {
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        s[blockIdx.x].sm = sm;
        s[blockIdx.x].start = clock64();
    }
}
__device__ __forceinline__ void stamp_end(Stamp* s) {
    __syncthreads();
    if (threadIdx.x == 0) s[blockIdx.x].end = clock64();
}
__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <class... Args>
inline std::string fmt(const char* format, Args... args) {
    char text[256];
    std::snprintf(text, sizeof text, format, args...);
    return text;
}

// One launch: its event time, and per SM the span and the number of blocks it ran.
struct Launch {
    float ms = 0;
    int sms = 0;
    double mean_span = 0;         // cycles, mean over the SMs that ran blocks
    double blocks_per_cycle = 0;  // mean over SMs of blocks / span
    double mhz() const { return mean_span / (ms * 1e3); }
    // Work a block did -> work an SM did a cycle (mean over SMs), and for the whole GPU.
    double per_sm_clk(double per_block) const { return per_block * blocks_per_cycle; }
};

struct Probe {
    cudaDeviceProp prop{};
    int sms = 0;
    Stamp* stamps = nullptr;
    float* out = nullptr;
    unsigned* sink = nullptr;
    cudaEvent_t e0{}, e1{};

    // A warm-up launch, then `reps` timed ones, fastest first.
    template <class F>
    std::vector<Launch> time(F&& launch, unsigned blocks, int reps) {
        launch();
        check(cudaGetLastError(), "launch");
        check(cudaDeviceSynchronize(), "warm-up");
        std::vector<Launch> runs;
        std::vector<Stamp> host(blocks);
        for (int r = 0; r < reps; ++r) {
            check(cudaEventRecord(e0), "event");
            launch();
            check(cudaEventRecord(e1), "event");
            check(cudaEventSynchronize(e1), "run");
            Launch l;
            check(cudaEventElapsedTime(&l.ms, e0, e1), "elapsed");
            check(cudaMemcpy(host.data(), stamps, blocks * sizeof(Stamp), cudaMemcpyDeviceToHost), "stamps");
            std::vector<unsigned long long> first(1024, ~0ull), last(1024, 0);
            std::vector<int> count(1024, 0);
            for (const Stamp& s : host) {
                first[s.sm] = std::min(first[s.sm], s.start), last[s.sm] = std::max(last[s.sm], s.end);
                ++count[s.sm];
            }
            double spans = 0;
            for (int sm = 0; sm < 1024; ++sm)
                if (count[sm] > 0) {
                    const double span = double(last[sm] - first[sm]);
                    ++l.sms, spans += span, l.blocks_per_cycle += count[sm] / span;
                }
            l.mean_span = spans / l.sms, l.blocks_per_cycle /= l.sms;
            runs.push_back(l);
        }
        std::sort(runs.begin(), runs.end(), [](const Launch& x, const Launch& y) { return x.ms < y.ms; });
        return runs;
    }
};

inline void row(const std::string& quantity, const std::string& measured, const std::string& per_clk, const std::string& mhz, const std::string& how,
         const std::string& published) {
    std::printf("%-30s %-30s %-24s %5s  %-70s %s\n", quantity.c_str(), measured.c_str(), per_clk.c_str(), mhz.c_str(), how.c_str(),
                published.c_str());
}
inline void section(const char* name) { std::printf("\n-- %s\n", name); }

}  // namespace toysim::probe
