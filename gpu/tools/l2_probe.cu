// What a way of flushing the L2 leaves dirty in it: an experiment behind `--measure cold`.
//
// A "victim" buffer is written (dirty in the L2), then one of several flushes runs, then the
// measured launches (the witness) read a fresh buffer twice the L2, twice, and write nothing:
// every byte they make DRAM write is a dirty line the flush left behind. The figures, per flush,
// are the in-process CUPTI Range Profiler's (the same measurement as `gpu run --measure cold`).
// A weaker witness, one read of 1.5x the L2, is shown beside it.
//
//   toysim_l2_probe [victim MiB]   (default 32)
//
// Then the other way round: what the L2 writes back while a launch runs (launches that only
// write, lines partly written), and how far later reads push dirty lines out
// (gpu/results/l2_writeback_h100.txt; gpu/README.md, "How far reads push dirty lines out").
//
// Not part of the suite: a tool for the measurement's method (gpu/README.md, "Cold L2").
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "gpu/runtime/l2_flush.cuh"
#include "gpu/runtime/profiler.h"

namespace {

void check(cudaError_t e, const char* what) { toysim::gpu::check_tool(e, "l2_probe", what); }

// Writes sector `k` (32 bytes) of every 128-byte line, then waits until `wait_ns` have passed on
// the global timer since it started.
__global__ void write_sector(uint4* p, std::size_t lines, int k, unsigned value, unsigned long long wait_ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < lines; i += std::size_t(gridDim.x) * blockDim.x) {
        p[i * 8 + 2 * k] = make_uint4(value, value, value, value);
        p[i * 8 + 2 * k + 1] = make_uint4(value, value, value, value);
    }
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < wait_ns);
}

// Drops each 128-byte line of the buffer from the L2 without writing it back.
__global__ void discard_lines(char* p, std::size_t lines) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < lines; i += std::size_t(gridDim.x) * blockDim.x)
        asm volatile("discard.global.L2 [%0], 128;" ::"l"(p + i * 128) : "memory");
}

__global__ void write_through(uint4* p, std::size_t n, unsigned value) {
    for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
        p[i] = make_uint4(value, value, value, value);
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

// FA2's stream without its reuse: each 16 KiB chunk of `out` is written after its three chunks
// of `in` (three times as large) were read, by blocks that take chunks in turn. Reads and writes
// interleave through the launch as Q, K, V and O do.
__global__ void read3_write1(const uint4* in, uint4* out, std::size_t out_n, unsigned* sink) {
    constexpr std::size_t kChunk = 1024;  // 16-byte words: 16 KiB
    unsigned x = 0;
    for (std::size_t c = blockIdx.x; c * kChunk < out_n; c += gridDim.x) {
        for (std::size_t i = threadIdx.x; i < 3 * kChunk; i += blockDim.x) {
            uint4 v = in[3 * c * kChunk + i];
            x ^= v.x ^ v.y ^ v.z ^ v.w;
        }
        for (std::size_t i = threadIdx.x; i < kChunk; i += blockDim.x) out[c * kChunk + i] = make_uint4(x, x, x, x);
    }
    if (x == 0x9e3779b9u) *sink = x;
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
    Buffer victim(victim_mib << 20), flush(2 * l2), probe(3 * l2 / 2), witness(2 * l2), sink(16);
    check(cudaMemset(flush.ptr, 1, flush.bytes), "filling the flush buffer");
    check(cudaMemset(probe.ptr, 3, probe.bytes), "filling the probe buffer");
    check(cudaMemset(witness.ptr, 6, witness.bytes), "filling the witness buffer");
    check(cudaDeviceSynchronize(), "sync");
    std::printf("device: %s, L2 %zu bytes, %d SMs; victim %zu MiB written before each flush; witness reads %zu MiB twice, "
                "weak witness %zu MiB once\n",
                prop.name, l2, prop.multiProcessorCount, victim_mib, witness.bytes >> 20, probe.bytes >> 20);

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
    auto after_flush = [&] {
        toysim_flush();
        check(cudaDeviceSynchronize(), "flush");
    };
    // One row of the launch tables: what a measured launch moved, or why it was not measured.
    auto print_launch = [](const std::string& name, const toysim::gpu::MeasuredTraffic& m) {
        if (!m.available)
            std::printf("%-58s not measured: %s\n", name.c_str(), m.why_not.c_str());
        else
            std::printf("%-58s %14.0f %14.0f %14.0f\n", name.c_str(), m.dram_read_bytes, m.dram_write_bytes, m.l2_write_sectors * 32);
    };
    auto discard_victim = [&] { discard_lines<<<grid, 512>>>(static_cast<char*>(victim.ptr), victim.bytes / 128); };
    // The victim written, then read back: dirty lines that have been hit.
    auto hot_victim = [&] {
        dirty_victim();
        read_flush(victim);
    };
    auto witness_reads = [&] {
        read_flush(witness);
        read_flush(witness);
    };

    struct Scenario {
        const char* name;
        std::function<void()> prepare;
    };
    std::vector<Scenario> scenarios = {
        {"nothing written, no flush", [] {}},
        {"victim (memset), no flush", [&] { dirty_victim(); }},
        {"victim (memset), flush: memset + read (toysim)", [&] { dirty_victim(); toysim_flush(); }},
        {"victim (memset), read of the flush buffer only", [&] { dirty_victim(); read_flush(flush); }},
        {"victim (kernel), flush", [&] { dirty_victim_kernel(); toysim_flush(); }},
        {"victim (D2D memcpy), flush", [&] { copy_victim(); toysim_flush(); }},
        {"victim written then read back, no flush", [&] { hot_victim(); }},
        {"victim written then read back, flush", [&] { hot_victim(); toysim_flush(); }},
        {"victim (memset), evict-first read of the flush buffer", [&] {
             dirty_victim();
             read_evict_first<<<grid, 512>>>(flush.u4(), flush.n4(), static_cast<unsigned*>(sink.ptr));
         }},
        {"victim (memset), discard victim", [&] { dirty_victim(); discard_victim(); }},
    };
    std::printf("%-54s %13s %13s %13s\n", "flush", "DRAM read B", "DRAM write B", "weak witness");
    for (const Scenario& s : scenarios) {
        auto prepare = [&] {
            s.prepare();
            check(cudaGetLastError(), s.name);
            check(cudaDeviceSynchronize(), s.name);
        };
        auto m = profiler.measure(prepare, witness_reads);
        auto weak = profiler.measure(prepare, [&] { read_flush(probe); });
        if (!m.available || !weak.available) {
            std::printf("%-54s not measured: %s\n", s.name, (m.available ? weak : m).why_not.c_str());
            continue;
        }
        std::printf("%-54s %13.0f %13.0f %13.0f\n", s.name, m.dram_read_bytes, m.dram_write_bytes, weak.dram_write_bytes);
    }
    // The other way round: a launch that only writes (S MiB, each line once), after toysim's
    // flush; then the same followed, in the measurement, by the witness's reads, which write back
    // whatever the launch left dirty. A sane count has DRAM writes <= S for the first and = S for
    // the second.
    std::printf("\n%-58s %14s %14s %14s\n", "measured launch, after toysim's flush", "DRAM read B", "DRAM write B", "L2 write B");
    for (std::size_t mib : {8, 16, 32, 64}) {
        Buffer out(mib << 20);
        for (int then_probe = 0; then_probe < 2; ++then_probe) {
            auto m = profiler.measure(after_flush, [&] {
                write_through<<<grid, 512>>>(out.u4(), out.n4(), 11);
                if (then_probe) witness_reads();
            });
            std::string name = "write " + std::to_string(mib) + " MiB" + (then_probe ? ", then the witness" : "");
            print_launch(name, m);
        }
    }
    // Reads shared by every block, as FA2's K and V are: does a read make DRAM write?
    std::printf("\n%-58s %14s %14s %14s\n", "measured launch, after toysim's flush", "DRAM read B", "DRAM write B", "L2 write B");
    for (std::size_t mib : {4, 16, 32}) {
        Buffer in(mib << 20), out(std::size_t{4} << 20);
        check(cudaMemset(in.ptr, 5, in.bytes), "filling");
        const unsigned blocks = static_cast<unsigned>(prop.multiProcessorCount) * 2;
        const std::size_t per_block = out.n4() / blocks;
        auto m = profiler.measure(after_flush, [&] { shared_read<<<blocks, 512>>>(in.u4(), in.n4(), out.u4(), per_block); });
        std::string name = std::to_string(blocks) + " blocks each read " + std::to_string(mib) + " MiB, write " +
                           std::to_string(per_block * 16 * blocks >> 10) + " KiB in all";
        print_launch(name, m);
    }
    // What a dirty line costs DRAM: 16 MiB of lines with some of their four sectors written (one
    // launch a sector), then the witness: a write-back moves the dirty sectors, not the line.
    // And dirty lines left to sit for 20 ms are not written back while nothing evicts them.
    std::printf("\n%-58s %14s %14s %14s\n", "16 MiB of lines, after toysim's flush", "DRAM read B", "DRAM write B", "L2 write B");
    {
        Buffer out(std::size_t{16} << 20);
        const std::size_t lines = out.bytes / 128;
        struct Pattern {
            std::string name;
            unsigned sectors;            // which sectors of each line are written (bits)
            unsigned long long wait_ns;  // the last launch waits this long after its stores
            bool witness;
        };
        const std::vector<Pattern> patterns = {
            {"sector 0 written, then the witness", 0x1, 0, true},
            {"sectors 0, 1 written, then the witness", 0x3, 0, true},
            {"sectors 0, 2 written, then the witness", 0x5, 0, true},
            {"sectors 0-3 written (4 launches), then the witness", 0xf, 0, true},
            {"sectors 0-3 written (4 launches)", 0xf, 0, false},
            {"sectors 0-3 written (4 launches), then 20 ms waited", 0xf, 20000000, false},
        };
        for (const Pattern& pat : patterns) {
            auto m = profiler.measure(after_flush, [&] {
                for (int k = 0; k < 4; ++k)
                    if (pat.sectors >> k & 1) write_sector<<<grid, 512>>>(out.u4(), lines, k, 19, pat.sectors >> (k + 1) ? 0 : pat.wait_ns);
                if (pat.witness) witness_reads();
            });
            print_launch(pat.name, m);
        }
    }
    // How long a dirty line outlives the reads after it (issue 34: the model's write-back depth).
    // 16 MiB written (after toysim's flush, not measured), then a measured launch that reads R
    // MiB it had not touched, spread over every SM: its DRAM writes are the dirty lines those
    // reads pushed out. Then the same with every block reading the same R MiB (K and V shared by
    // FA2's blocks), and a launch that does both at once: W MiB written as 3W MiB are read.
    std::printf("\n%-58s %14s %14s %14s\n", "16 MiB written, then a measured launch", "DRAM read B", "DRAM write B", "L2 write B");
    {
        Buffer dirty(std::size_t{16} << 20), fresh(std::size_t{64} << 20);
        check(cudaMemset(fresh.ptr, 8, fresh.bytes), "filling");
        auto write_dirty = [&] {  // before each measured launch, not measured
            after_flush();
            write_through<<<grid, 512>>>(dirty.u4(), dirty.n4(), 13);
            check(cudaDeviceSynchronize(), "writing 16 MiB");
        };
        for (std::size_t mib : {0, 4, 8, 12, 16, 20, 24, 28, 32, 40, 48, 64}) {
            auto m = profiler.measure(write_dirty, [&] { read_through<<<grid, 512>>>(fresh.u4(), (mib << 20) / 16, static_cast<unsigned*>(sink.ptr)); });
            print_launch("reads " + std::to_string(mib) + " MiB, each line by one thread", m);
        }
        const unsigned blocks = static_cast<unsigned>(prop.multiProcessorCount) * 2;
        for (std::size_t mib : {4, 8, 16, 24, 32}) {
            auto m = profiler.measure(write_dirty, [&] { shared_read<<<blocks, 512>>>(fresh.u4(), (mib << 20) / 16, dirty.u4(), 0); });
            print_launch("reads " + std::to_string(mib) + " MiB, each line by all " + std::to_string(blocks) + " blocks", m);
        }
    }
    std::printf("\n%-58s %14s %14s %14s\n", "measured launch, after toysim's flush", "DRAM read B", "DRAM write B", "L2 write B");
    for (std::size_t mib : {4, 8, 12, 16, 20, 24, 32}) {
        Buffer in(3 * (mib << 20)), out(mib << 20);
        check(cudaMemset(in.ptr, 9, in.bytes), "filling");
        auto m = profiler.measure(after_flush, [&] { read3_write1<<<grid, 256>>>(in.u4(), out.u4(), out.n4(), static_cast<unsigned*>(sink.ptr)); });
        print_launch("reads " + std::to_string(3 * mib) + " MiB, writes " + std::to_string(mib) + " MiB among them", m);
    }
    return 0;
}
