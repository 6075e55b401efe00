// What a way of flushing the L2 leaves dirty in it: an experiment behind `--measure cold`.
//
// A "victim" buffer is written (dirty in the L2), then one of several flushes runs, then the
// measured launch reads a fresh buffer of 1.5× the L2 and writes nothing: every byte it makes
// DRAM write is a dirty line the flush left behind, evicted by its reads. The figures, per
// flush, are the in-process CUPTI Range Profiler's (the same measurement as `gpu run
// --measure cold`).
//
//   toysim_l2_probe [victim MiB]   (default 32)
//
// Not part of the suite: a tool for the measurement's method (gpu/README.md, "Cold L2").
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "gpu/l2_flush.cuh"
#include "gpu/profiler.h"

namespace {

void check(cudaError_t e, const char* what) { toysim::gpu::check_tool(e, "l2_probe", what); }

__global__ void write_through(uint4* p, std::size_t n, unsigned value) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
        p[i] = make_uint4(value, value, value, value);
}

// Drops each 128-byte line of the buffer from the L2 without writing it back.
__global__ void discard_lines(char* p, std::size_t lines) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < lines; i += std::size_t(gridDim.x) * blockDim.x)
        asm volatile("discard.global.L2 [%0], 128;" ::"l"(p + i * 128) : "memory");
}

// Reads with the evict-first policy: the lines it brings in go before others.
__global__ void read_evict_first(const uint4* p, std::size_t n, unsigned* sink) {
    unsigned x = 0;
    unsigned long long policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
        uint4 v;
        asm volatile("ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p + i), "l"(policy));
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) *sink = x;
}

// Every block reads the whole buffer (as every Q-tile block of FA2 reads a head's K and V),
// then writes `out_per_block` 16-byte words of its own.
__global__ void shared_read(const uint4* p, std::size_t n, uint4* out, std::size_t out_per_block) {
    unsigned x = 0;
    for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) {
        uint4 v = p[i];
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    for (std::size_t i = threadIdx.x; i < out_per_block; i += blockDim.x) out[blockIdx.x * out_per_block + i] = make_uint4(x, x, x, x);
}

struct Buffer {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    explicit Buffer(std::size_t b) : bytes(b) { check(cudaMalloc(&ptr, b), "cudaMalloc"); }
    ~Buffer() { cudaFree(ptr); }
    uint4* u4() const { return static_cast<uint4*>(ptr); }
    std::size_t n4() const { return bytes / 16; }
};

}  // namespace

int main(int argc, char** argv) {
    const std::size_t victim_mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 32;
    const cudaDeviceProp prop = toysim::gpu::open_device("l2_probe");
    const std::size_t l2 = static_cast<std::size_t>(prop.l2CacheSize);
    const unsigned grid = static_cast<unsigned>(4 * prop.multiProcessorCount);
    Buffer victim(victim_mib << 20), flush(2 * l2), flush2(2 * l2), probe(3 * l2 / 2), sink(16);
    check(cudaMemset(flush.ptr, 1, flush.bytes), "filling the flush buffer");
    check(cudaMemset(flush2.ptr, 2, flush2.bytes), "filling the second flush buffer");
    check(cudaMemset(probe.ptr, 3, probe.bytes), "filling the probe buffer");
    check(cudaDeviceSynchronize(), "sync");
    std::printf("device: %s, L2 %zu bytes, %d SMs; victim %zu MiB written before each flush; probe reads %zu MiB\n", prop.name, l2,
                prop.multiProcessorCount, victim_mib, probe.bytes >> 20);

    toysim::gpu::RangeProfiler profiler;
    if (!profiler.available()) {
        std::printf("skipped: %s\n", profiler.why_not().c_str());
        return 77;
    }
    auto dirty_victim = [&] { check(cudaMemset(victim.ptr, 0x5a, victim.bytes), "writing the victim"); };
    Buffer source(victim_mib << 20);
    check(cudaMemset(source.ptr, 4, source.bytes), "filling the copy source");
    auto copy_victim = [&] { check(cudaMemcpy(victim.ptr, source.ptr, victim.bytes, cudaMemcpyDeviceToDevice), "copying the victim"); };
    auto dirty_victim_kernel = [&] { write_through<<<grid, 512>>>(victim.u4(), victim.n4(), 7); };
    using toysim::gpu::read_through;
    auto read_flush = [&](const Buffer& b) { read_through<<<grid, 512>>>(b.u4(), b.n4(), static_cast<unsigned*>(sink.ptr)); };
    // toysim's flush itself (`gpu run --measure cold`).
    auto toysim_flush = [&] {
        check(toysim::gpu::flush_l2(flush.ptr, flush.bytes, static_cast<unsigned*>(sink.ptr), prop.multiProcessorCount, nullptr), "flush");
    };
    auto discard_flush = [&] { discard_lines<<<grid, 512>>>(static_cast<char*>(flush.ptr), flush.bytes / 128); };
    auto discard_victim = [&] { discard_lines<<<grid, 512>>>(static_cast<char*>(victim.ptr), victim.bytes / 128); };

    struct Scenario {
        const char* name;
        std::function<void()> prepare;
    };
    std::vector<Scenario> scenarios = {
        {"nothing written, no flush", [] {}},
        {"victim (memset), no flush", [&] { dirty_victim(); }},
        {"victim (memset), memset + read flush (toysim today)", [&] { dirty_victim(); toysim_flush(); }},
        {"victim (kernel), memset + read flush", [&] { dirty_victim_kernel(); toysim_flush(); }},
        {"victim (D2D memcpy), no flush", [&] { copy_victim(); }},
        {"victim (D2D memcpy), memset + read flush", [&] { copy_victim(); toysim_flush(); }},
        {"victim (D2D memcpy async), memset + read flush", [&] {
             check(cudaMemcpyAsync(victim.ptr, source.ptr, victim.bytes, cudaMemcpyDeviceToDevice, nullptr), "copying");
             toysim_flush();
         }},
        {"victim (memset), read flush", [&] { dirty_victim(); read_flush(flush); }},
        {"victim (memset), read flush of two buffers", [&] { dirty_victim(); read_flush(flush); read_flush(flush2); }},
        {"victim (memset), evict-first read flush", [&] {
             dirty_victim();
             read_evict_first<<<grid, 512>>>(flush.u4(), flush.n4(), static_cast<unsigned*>(sink.ptr));
         }},
        {"victim (memset), write-kernel flush + read flush", [&] {
             dirty_victim();
             write_through<<<grid, 512>>>(flush.u4(), flush.n4(), 9);
             read_flush(flush);
         }},
        {"victim (memset), memset + read flush + discard flush", [&] { dirty_victim(); toysim_flush(); discard_flush(); }},
        {"victim (memset), discard victim", [&] { dirty_victim(); discard_victim(); }},
    };
    std::printf("%-58s %14s %14s %14s\n", "flush", "DRAM read B", "DRAM write B", "L2 write B");
    for (const Scenario& s : scenarios) {
        auto prepare = [&] {
            s.prepare();
            check(cudaGetLastError(), s.name);
            check(cudaDeviceSynchronize(), s.name);
        };
        auto m = profiler.measure(prepare, [&] { read_flush(probe); });
        if (!m.available) {
            std::printf("%-58s not measured: %s\n", s.name, m.why_not.c_str());
            continue;
        }
        std::printf("%-58s %14.0f %14.0f %14.0f\n", s.name, m.dram_read_bytes, m.dram_write_bytes, m.l2_write_sectors * 32);
    }
    // The other way round: a launch that only writes (S MiB, each line once), after toysim's
    // flush; then the same followed, in the measurement, by the probe's reads, which write back
    // whatever the launch left dirty. A sane count has DRAM writes <= S for the first and = S for
    // the second.
    std::printf("\n%-58s %14s %14s %14s\n", "measured launch, after memset + read flush", "DRAM read B", "DRAM write B", "L2 write B");
    for (std::size_t mib : {8, 16, 32, 64}) {
        Buffer out(mib << 20);
        auto prepare = [&] {
            toysim_flush();
            check(cudaDeviceSynchronize(), "flush");
        };
        for (int then_probe = 0; then_probe < 2; ++then_probe) {
            auto m = profiler.measure(prepare, [&] {
                write_through<<<grid, 512>>>(out.u4(), out.n4(), 11);
                if (then_probe) read_flush(probe);
            });
            std::string name = "write " + std::to_string(mib) + " MiB" + (then_probe ? ", then the probe's reads" : "");
            if (!m.available) {
                std::printf("%-58s not measured: %s\n", name.c_str(), m.why_not.c_str());
                continue;
            }
            std::printf("%-58s %14.0f %14.0f %14.0f\n", name.c_str(), m.dram_read_bytes, m.dram_write_bytes, m.l2_write_sectors * 32);
        }
    }
    // Reads shared by every block, as FA2's K and V are: does a read make DRAM write?
    std::printf("\n%-58s %14s %14s %14s\n", "measured launch, after memset + read flush", "DRAM read B", "DRAM write B", "L2 write B");
    for (std::size_t mib : {4, 16, 32}) {
        Buffer in(mib << 20), out(std::size_t{4} << 20);
        check(cudaMemset(in.ptr, 5, in.bytes), "filling");
        const unsigned blocks = static_cast<unsigned>(prop.multiProcessorCount) * 2;
        const std::size_t per_block = out.n4() / blocks;
        auto prepare = [&] {
            toysim_flush();
            check(cudaDeviceSynchronize(), "flush");
        };
        auto m = profiler.measure(prepare, [&] { shared_read<<<blocks, 512>>>(in.u4(), in.n4(), out.u4(), per_block); });
        std::string name = std::to_string(blocks) + " blocks each read " + std::to_string(mib) + " MiB, write " +
                           std::to_string(per_block * 16 * blocks >> 10) + " KiB in all";
        if (!m.available) {
            std::printf("%-58s not measured: %s\n", name.c_str(), m.why_not.c_str());
            continue;
        }
        std::printf("%-58s %14.0f %14.0f %14.0f\n", name.c_str(), m.dram_read_bytes, m.dram_write_bytes, m.l2_write_sectors * 32);
    }
    return 0;
}
