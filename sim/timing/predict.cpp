// The timing pass (predict.h).
#include "sim/timing/predict.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "support/diag.h"

namespace toysim {

namespace {

// An H100 SM's four schedulers each issue one warp instruction a clock (NVIDIA H100
// whitepaper, "SM architecture"); the FMA probe's 250.1 FLOP/clk/SM (gpu/results/
// machine_h100.txt) is 3.9 of them.
constexpr double kIssuePerClock = 4;

constexpr std::string_view kBoundKeys[] = {
#define X(NAME, KEY, MEANING) KEY,
    TOYSIM_TIME_BOUNDS(X)
#undef X
};
constexpr std::string_view kBoundMeanings[] = {
#define X(NAME, KEY, MEANING) MEANING,
    TOYSIM_TIME_BOUNDS(X)
#undef X
};

// Multiply-adds per second per SM where the products run.
double product_rate(const MachineSpec& m, ProductUnit unit) {
    switch (unit) {
        case ProductUnit::CudaCores: break;
        case ProductUnit::MmaF16: return m.macs_per_second_per_sm(MachineParam::MmaF16Tflops);
        case ProductUnit::MmaTf32: return m.macs_per_second_per_sm(MachineParam::MmaTf32Tflops);
        case ProductUnit::WgmmaF16: return m.macs_per_second_per_sm(MachineParam::WgmmaF16Tflops);
    }
    return m.alu_per_clock() * m.clock_hz();  // one fused multiply-add each, at the CUDA cores' clock
}

}  // namespace

std::string_view product_unit_name(ProductUnit unit) {
    switch (unit) {
        case ProductUnit::CudaCores: return "CUDA cores";
        case ProductUnit::MmaF16: return "tensor cores (mma.sync, fp16)";
        case ProductUnit::MmaTf32: return "tensor cores (mma.sync, tf32)";
        case ProductUnit::WgmmaF16: return "tensor cores (wgmma, fp16)";
    }
    return "";
}

std::string_view time_bound_key(TimeBound bound) { return kBoundKeys[static_cast<size_t>(bound)]; }
std::string_view time_bound_meaning(TimeBound bound) { return kBoundMeanings[static_cast<size_t>(bound)]; }

LaunchTime predict_launch(const MachineSpec& m, const LaunchWork& work, const CacheCounts& counts, const LaunchShape& shape) {
    LaunchTime t;
    // The clock the SMs run at: lower while the tensor cores are busy (the probe's MHz column),
    // which slows every other unit of a tensor-core kernel with them.
    const double clock = shape.products == ProductUnit::WgmmaF16                                     ? m[MachineParam::WgmmaClockMhz] * 1e6
                         : shape.products == ProductUnit::MmaF16 || shape.products == ProductUnit::MmaTf32 ? m[MachineParam::MmaClockMhz] * 1e6
                                                                                                          : m.clock_hz();
    const double sms = m[MachineParam::Sms];
    const double blocks = static_cast<double>(std::max<std::uint64_t>(shape.blocks, 1));
    const auto busiest = static_cast<std::uint64_t>(std::ceil(blocks / sms));
    t.busiest_sm_blocks = busiest;
    const double share = static_cast<double>(busiest) / blocks;  // of the launch's work, on the busiest SM

    std::array<double, 4> unit_work{};  // per GpuUnit
    std::array<double, 4> unit_instructions{};
    for (int op = 0; op < kOpCount; ++op) {
        unit_work[static_cast<size_t>(kOpGpuUnit[op])] += static_cast<double>(work.work[static_cast<size_t>(op)]);
        unit_instructions[static_cast<size_t>(kOpGpuUnit[op])] += static_cast<double>(work.instructions[static_cast<size_t>(op)]);
    }
    auto at = [&](GpuUnit u) { return unit_work[static_cast<size_t>(u)]; };
    t.flops = 2 * at(GpuUnit::Matrix);
    auto& each = t.each;
    auto set = [&](TimeBound b, double seconds) { each[static_cast<size_t>(b)] = seconds; };
    // wgmma reads its operands from shared memory itself, not through the loads' path.
    const std::uint64_t shared_elements =
        work.shared_elements - (shape.products == ProductUnit::WgmmaF16 ? work.product_shared_elements : 0);
    const double shared_bytes = static_cast<double>(shared_elements) * shape.tile_element_bytes;
    t.shared_bytes = shared_bytes;
    // Each unit's time for the whole launch's work on one SM: the busiest SM takes its share
    // of it (the throughput bounds), and a block 1/B of it (its chain, below).
    const double matrix_seconds = at(GpuUnit::Matrix) / product_rate(m, shape.products);
    const double special_seconds = at(GpuUnit::Special) / m[MachineParam::SfuPerClock] / clock;
    const double alu_seconds = at(GpuUnit::Alu) / m.alu_per_clock() / clock;
    const double shared_seconds = shared_bytes / (m[MachineParam::SharedBytesPerClock] * clock);
    set(TimeBound::Matrix, share * matrix_seconds);
    set(TimeBound::Special, share * special_seconds);
    set(TimeBound::Alu, share * alu_seconds);
    set(TimeBound::Shared, share * shared_seconds);

    // Warp instructions, at the SM's issue rate.
    const double nonproduct_shared = static_cast<double>(work.shared_elements - work.product_shared_elements);
    double product_instructions = 0;
    switch (shape.products) {
        case ProductUnit::CudaCores:  // an FFMA a lane, and 2 of a 4×4 patch's 8 loads a lane for its 16 multiply-adds where operands are shared
            product_instructions = at(GpuUnit::Matrix) / 32 * (1 + (work.product_shared_elements > 0 ? 0.5 : 0.0));
            break;
        case ProductUnit::MmaF16:
        case ProductUnit::MmaTf32: product_instructions = at(GpuUnit::Matrix) / 2048 + static_cast<double>(work.product_shared_elements) / 256; break;
        case ProductUnit::WgmmaF16: product_instructions = at(GpuUnit::Matrix) / (64.0 * 256 * 16 / 4); break;
    }
    const double memory_bytes = at(GpuUnit::Memory) * shape.tile_element_bytes;
    const double warp_instructions =
        (at(GpuUnit::Alu) + at(GpuUnit::Special) + nonproduct_shared) / 32 + product_instructions + memory_bytes / 512;
    const double issue_rate = kIssuePerClock * clock;
    set(TimeBound::Issue, share * warp_instructions / issue_rate);

    // The L2 sees every sector the program's LOADs and STOREs touch; DRAM what the cache model
    // says misses and is written back.
    const CacheStats& c = counts.total;
    const double sector = shape.sector_bytes;
    const double l2_bytes = static_cast<double>(c.hits() + c.misses()) * sector;
    const double dram_bytes = static_cast<double>(c.dram_read_bytes + c.dram_write_bytes);
    set(TimeBound::L2, l2_bytes / m.bytes_per_second(MachineParam::L2BytesPerSecond));
    set(TimeBound::Dram, dram_bytes / m.bytes_per_second(MachineParam::DramBytesPerSecond));

    // A block's chain: its instructions one after another: each memory instruction's wait
    // (hits at the L2's latency, the rest at DRAM's) and its bytes at one SM's share of the
    // L2's bandwidth, then each unit's work at the whole SM's rate and its shared-memory bytes
    // at the SM's bandwidth. R resident blocks run their chains side by side.
    const double accesses = static_cast<double>(c.hits() + c.misses());
    const double hit_share = accesses > 0 ? static_cast<double>(c.hits()) / accesses : 0;
    const double wait = hit_share * m[MachineParam::L2Latency] + (1 - hit_share) * m[MachineParam::DramLatency];
    const double sm_bytes_per_second = m.bytes_per_second(MachineParam::L2BytesPerSecond) / sms;
    // Copies into tiles with stages are asynchronous: they run while the block computes, so
    // the chain takes the longer of the two; the other loads and stores wait in line.
    const double memory_instructions = unit_instructions[static_cast<size_t>(GpuUnit::Memory)];
    const double async_loads = static_cast<double>(work.async_loads);
    const double async_bytes = std::min(l2_bytes, static_cast<double>(work.async_elements) * shape.tile_element_bytes);
    const double sync_memory = (memory_instructions - async_loads) * wait / clock + (l2_bytes - async_bytes) / sm_bytes_per_second;
    const double async_memory = async_loads * wait / clock + async_bytes / sm_bytes_per_second;
    const double compute_chain = matrix_seconds + special_seconds + alu_seconds + shared_seconds;
    const double chain = (sync_memory + std::max(compute_chain, async_memory)) / blocks;
    // The busiest worker runs `rounds` average blocks in turn: the toy machine's makespan of the
    // grid on the GPU's resident blocks (R per SM × S), which sees blocks of unequal work (a
    // causal mask) where ⌈⌈B/S⌉/R⌉ would not.
    const double resident = static_cast<double>(std::max<std::int64_t>(shape.resident_per_sm, 1));
    double rounds = std::ceil(static_cast<double>(busiest) / resident);
    if (work.busy_cycles > 0) rounds = std::max(rounds, static_cast<double>(work.makespan_cycles) * blocks / static_cast<double>(work.busy_cycles));
    set(TimeBound::Chain, rounds * chain);

    const auto slowest = std::max_element(each.begin(), each.end());
    t.bound = static_cast<TimeBound>(slowest - each.begin());
    t.launch_seconds = m[MachineParam::LaunchMicroseconds] * 1e-6;
    t.seconds = *slowest + t.launch_seconds;
    return t;
}

TimeBound runner_up(const LaunchTime& time) {
    int next = -1;
    for (int b = 0; b < kTimeBoundCount; ++b)
        if (b != static_cast<int>(time.bound) && (next < 0 || time.each[static_cast<size_t>(b)] > time.each[static_cast<size_t>(next)])) next = b;
    return static_cast<TimeBound>(next);
}

ProductUnit product_unit_of(const Program& program) {
    if (program.products == "mma") return ProductUnit::MmaF16;
    if (program.products == "mma_tf32") return ProductUnit::MmaTf32;
    if (program.products == "wgmma") return ProductUnit::WgmmaF16;
    return ProductUnit::CudaCores;
}

Occupancy occupancy(const Program& p, const MachineSpec& m, int element_bytes) {
    Occupancy o;
    o.threads = 32 * p.warps;
    // A product's destination holds fp32 sums; every other tile the storage type.
    std::vector<bool> sums(p.tiles.size(), false);
    for (const TileInst& t : p.tile_insts) {
        const TileOperand& dest = t.args[static_cast<size_t>(t.count - 1)];
        if (kOpShape[static_cast<size_t>(t.op)] == OpShape::Product && dest.kind == TileOperand::Kind::Tile) sums[static_cast<size_t>(dest.index)] = true;
    }
    std::int64_t register_bytes = 0;
    for (size_t k = 0; k < p.tiles.size(); ++k) {
        const Tile& t = p.tiles[k];
        const std::int64_t bytes = t.rows * t.cols * (sums[k] ? 4 : element_bytes);
        if (t.in_registers) register_bytes += bytes;
        else o.shared_bytes += bytes * t.stages;
    }
    o.registers_per_thread = 32 + (register_bytes / 4 + o.threads - 1) / o.threads;
    const auto at = [&](MachineParam q) { return static_cast<std::int64_t>(m[q]); };
    if (o.shared_bytes > at(MachineParam::SharedPerBlock))
        throw ToyError(fmt::format("a block's tiles in shared memory need {} bytes; an SM of machine {} gives a block at most {}", o.shared_bytes,
                                   m.name, at(MachineParam::SharedPerBlock)));
    if (o.registers_per_thread > 255)
        throw ToyError(fmt::format("a block's tiles in registers need {} registers a thread over {} threads (warps {}); a thread has at most 255",
                                   o.registers_per_thread, o.threads, p.warps));
    const std::pair<std::int64_t, const char*> limits[] = {
        {at(MachineParam::BlocksPerSm), "blocks"},
        {at(MachineParam::ThreadsPerSm) / o.threads, "threads"},
        {o.shared_bytes > 0 ? at(MachineParam::SharedPerSm) / o.shared_bytes : at(MachineParam::BlocksPerSm), "shared memory"},
        {at(MachineParam::RegistersPerSm) / (o.threads * o.registers_per_thread), "registers"},
    };
    o.resident = limits[0].first;
    o.limit = limits[0].second;
    for (const auto& [count, what] : limits)
        if (count < o.resident) {
            o.resident = count;
            o.limit = what;
        }
    return o;
}

ProgramTime predict_program(const Program& program, const MachineSpec& m, std::int64_t heads) {
    ProgramTime out;
    Program p = program;
    if (!p.cache) p.cache = make_program_cache(std::string(m.name), Loc{});
    out.products = product_unit_of(p);
    out.occupancy = occupancy(p, m, p.cache->element_bytes);
    CachedCountOptions walk;
    walk.heads = heads;
    walk.cold_launches = true;
    walk.workers = out.occupancy.resident * static_cast<std::int64_t>(m[MachineParam::Sms]);
    const CachedCount counted = count_through_cache(p, walk);
    for (size_t k = 0; k < counted.launches.size(); ++k) {
        LaunchShape shape;
        shape.blocks = counted.launch_work[k].blocks;
        shape.resident_per_sm = out.occupancy.resident;
        shape.products = out.products;
        shape.sector_bytes = p.cache->config.sector_bytes;
        shape.tile_element_bytes = p.cache->element_bytes;
        out.has_grid.push_back(shape.blocks > 0);
        out.launches.push_back(predict_launch(m, counted.launch_work[k], counted.launches[k], shape));
        if (shape.blocks > 0) out.seconds += out.launches.back().seconds;
    }
    return out;
}

}  // namespace toysim
