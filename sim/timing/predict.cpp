// The timing pass (predict.h).
#include "sim/timing/predict.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>
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
constexpr std::string_view kPartKeys[] = {
#define X(NAME, KEY, MEANING) KEY,
    TOYSIM_CHAIN_PARTS(X)
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

// A CUDA-core product's lanes each hold a kLanePatch × kLanePatch patch of the result and read
// 2·kLanePatch operands from shared memory a step of the inner dimension: the course's kernels
// (gpu/kernels/attention_forward.cu, kPatch) and generated code (tile_product4<4, 4>) alike.
constexpr double kLanePatch = 4;
// The instructions of the course's patch loop (attention_forward.cu's patch_mac, attention_backward.cu's
// block_product): 4 steps of k, each operand's 4 rows of the patch a 16-byte load, 4·4·4 FFMAs.
constexpr double kPatchLoopInstructions = 2 * kLanePatch + kLanePatch * kLanePatch * kLanePatch;

// A thread loads 4 consecutive elements at a time: a CUDA-core product's lanes their fp32
// operands (a float4: the course's kernels' load4; the tiles are fp32 on chip, so nothing is
// converted in the inner loop), and a block's threads a tile from global memory (load_tile).
constexpr double kElementsPerLoad = 4;
// Generated CUDA's tile loads (gpu/codegen/codegen_prelude.cpp, load_pieces' kBatch): a lane's
// 4 loads of 4 elements all in flight before it writes any.
constexpr double kGeneratedLoadBatch = 4;

// Elements a product's lanes read from shared memory for `macs` multiply-adds, of which the
// tile-level count is `product_shared` (each operand once per warp, cached_count.cpp): on the
// CUDA cores each lane reads its patch's operands itself, 2p elements a step of the inner
// dimension for p² multiply-adds; mma.sync's ldmatrix reads the tile-level count; wgmma reads
// through the tensor cores' own path, not the load path.
double product_shared_elements(double macs, double product_shared, const LaunchShape& shape) {
    if (product_shared <= 0) return 0;
    switch (shape.products) {
        case ProductUnit::CudaCores: return macs * 2.0 / kLanePatch;
        case ProductUnit::MmaF16:
        case ProductUnit::MmaTf32: return product_shared;
        case ProductUnit::WgmmaF16: return 0;
    }
    return 0;
}

// Warp instructions for `work` units on `unit` (the issue bound in predict.h): a lane's
// element-wise op 1/32 of one; a CUDA-core multiply-add 1/32, and its operand loads
// (kElementsPerLoad a load); an mma.sync 2048 multiply-adds and an
// ldmatrix a lane's 8 elements; a wgmma a warpgroup's 64×256×16 over its 4 warps; a global
// load or store 16 bytes a lane. `product_shared`: the tile-level shared-memory elements a
// product reads (its other shared elements are the caller's, 1/32 each); `lane_work`: a
// CUDA-core product's multiply-adds as its lanes issue them (InstructionWork::lane_work).
double warp_instructions_of(GpuUnit unit, double work, double product_shared, const LaunchShape& shape, double lane_work = -1) {
    switch (unit) {
        case GpuUnit::Memory: return work * shape.tile_element_bytes / 512;
        case GpuUnit::Special:
        case GpuUnit::Alu: return work / 32;
        case GpuUnit::Matrix: break;
    }
    const double operands = product_shared_elements(work, product_shared, shape);
    switch (shape.products) {
        case ProductUnit::CudaCores: {
            // A warp whose rows leave lanes without a patch issues for them too (lane_work);
            // generated code's loops are measured as a whole (GeneratedMacRate).
            const double idle = lane_work > work && work > 0 && !shape.generated ? lane_work / work : 1.0;
            return (work + operands / kElementsPerLoad) * idle / 32;
        }
        case ProductUnit::MmaF16:
        case ProductUnit::MmaTf32: return work / 2048 + operands / 256;
        case ProductUnit::WgmmaF16: return work / (64.0 * 256 * 16 / 4);
    }
    return 0;
}

// Bytes through shared memory's load path: the elements instructions read and write there
// (`shared`, of which `product_shared` a product's operands, tile-level), with a product's
// operands as its lanes read them (product_shared_elements).
double shared_bytes_of(double macs, double shared, double product_shared, double sums, const LaunchShape& shape) {
    const double widened = std::max(0, 4 - shape.shared_bytes());  // a sum's element is fp32
    return (shared - product_shared + product_shared_elements(macs, product_shared, shape)) * shape.shared_bytes() + sums * widened;
}

// The chain bound (see predict.h), with its parts into `parts`.
double chain_seconds(const MachineSpec& m, const LaunchWork& work, const CacheCounts& counts, const LaunchShape& shape, double clock,
                     std::uint64_t busiest, std::array<double, kChainPartCount>& parts) {
    const double sms = m[MachineParam::Sms];
    const double blocks = static_cast<double>(std::max<std::uint64_t>(shape.blocks, 1));
    const double resident = static_cast<double>(std::max<std::int64_t>(shape.resident_per_sm, 1));
    // Blocks an SM runs side by side, in step, and the share of its four schedulers (and the
    // units each has a quarter of) their warps reach.
    const double together = std::min(resident, static_cast<double>(busiest));
    const double reach = std::min(1.0, together * std::max(shape.warps, 1) / 4.0);
    const CacheStats& c = counts.total;
    const double accesses = static_cast<double>(c.hits() + c.misses());
    const double hit_share = accesses > 0 ? static_cast<double>(c.hits()) / accesses : 0;
    const double cycle = 1 / clock;
    // Memory: a load waits the latency (the L2's for the share the cache model says hits, DRAM's
    // for the rest); its bytes move at the SM's share of the L2's bandwidth and, of what misses,
    // of DRAM's.
    const double memory_wait = (hit_share * m[MachineParam::L2Latency] + (1 - hit_share) * m[MachineParam::DramLatency]) * cycle;
    const double l2_share = m.bytes_per_second(MachineParam::L2BytesPerSecond) / sms;
    const double dram_share = m.bytes_per_second(MachineParam::DramBytesPerSecond) / sms;
    // The L2 moves whole sectors: a launch whose accesses touch more sector bytes than they
    // use moves each load's bytes × that ratio.
    double memory_units = 0;
    for (int op = 0; op < kOpCount; ++op)
        if (kOpGpuUnit[op] == GpuUnit::Memory) memory_units += static_cast<double>(work.work[static_cast<size_t>(op)]);
    const double sector_bytes = accesses * shape.sector_bytes;
    const double moved = memory_units > 0 ? std::max(1.0, sector_bytes / (memory_units * shape.tile_element_bytes)) : 1.0;
    const bool tensor = shape.products != ProductUnit::CudaCores;
    const double product_latency = shape.products == ProductUnit::WgmmaF16 ? m[MachineParam::WgmmaLatency]
                                   : tensor                                 ? m[MachineParam::MmaLatency]
                                                                            : m[MachineParam::AluLatency];
    // A warp alone in the course's patch loop issues its 4 steps of k (8 16-byte loads, 64 FFMAs)
    // and then waits for the next loads: 72 instructions in 72 + a shared-memory load's latency
    // clocks, where no other warp on its scheduler fills them.
    const double warp_issue = kPatchLoopInstructions / (kPatchLoopInstructions + m[MachineParam::SharedLatency]);
    // A row's sums sit on a quad of lanes in the tensor cores' fragment layout (PTX ISA, mma
    // m16n8k16), on up to a warp's 32 lanes otherwise: 2 or 5 shuffle steps.
    const double reduce_steps = tensor ? 2 : 5;
    // Each line's time split in two: the units' busy time (the work of `together` blocks in
    // step) and the latencies its blocks wait.
    struct Split {
        double busy = 0, wait = 0;
    };
    Split sync, compute, copies;
    std::array<Split, kChainPartCount> split{};
    // An instruction's totals (scaled to the blocks that run it) and what it is (`facts`: whether
    // it is an asynchronous copy, writes shared memory, loads a tile kept as stored, reads an
    // element at a time, and a thread's results).
    auto phase = [&](int op, double executions, double units, double shared, double product_shared, double sums, double lanes,
                     double product_steps, double scalar_steps, double active_warps, const InstructionWork& facts) {
        if (executions <= 0) return;
        const bool async = facts.async, writes_shared = facts.writes_shared, stored = facts.stored, by_element = facts.by_element;
        const int thread_rows = facts.thread_rows, thread_cols = facts.thread_cols;
        const double w = units / executions, sh = shared / executions, psh = product_shared / executions, lw = lanes / executions;
        const GpuUnit unit = kOpGpuUnit[op];
        // A product on the CUDA cores in the course's kernels issues from the warps it gives
        // patches to (warp_issue of a clock each, below).
        const double patch_warps = active_warps > 0 ? active_warps / executions : std::max(shape.warps, 1);
        const double unit_reach = unit == GpuUnit::Matrix && shape.products == ProductUnit::CudaCores && !shape.generated
                                      ? std::min(1.0, together * patch_warps * warp_issue / 4.0)
                                      : reach;
        // The work of `together` blocks in step, on the units their warps reach: its warp
        // instructions, with a load or store for each element it reads or writes in shared
        // memory beyond a product's operands (as the issue bound counts them).
        double busy = together * (warp_instructions_of(unit, w, psh, shape, lw) + (sh - psh) / 32) / (kIssuePerClock * clock * unit_reach);
        const double shared_bytes = shared_bytes_of(unit == GpuUnit::Matrix ? w : 0, sh, psh, sums / executions, shape);
        busy = std::max(busy, together * shared_bytes / (m[MachineParam::SharedBytesPerClock] * clock));
        // Generated CUDA: a tile instruction in shared memory is a loop of the block's threads
        // over its elements, with the shape checks and index arithmetic every thread does
        // whatever their number (GeneratedInstructionNs, on an SM's issue slots); one on tiles
        // in registers (the fragment layout: its destination is not in shared memory) is
        // straight-line code at the rates measured there.
        const bool in_shared = writes_shared || (unit == GpuUnit::Memory && sh > 0);
        const auto generated_rate = [&](MachineParam shared_rate, MachineParam register_rate) {
            return m[in_shared ? shared_rate : register_rate] * 1e9;
        };
        double latency = 0;
        switch (unit) {
            case GpuUnit::Memory: {
                const double bytes = together * w * shape.tile_element_bytes * moved;
                busy = std::max({busy, bytes / l2_share, bytes * (1 - hit_share) / dram_share});
                // Generated CUDA converts each element it loads into a fp32 tile (a tile kept as
                // the storage type is a copy, not measured apart) at the rate the probe's loads
                // from L1 and the L2 ran at.
                if (shape.generated && op == static_cast<int>(Op::LOAD) && sh > 0 && !async && !stored)
                    busy = std::max(busy, together * w / (m[MachineParam::GeneratedLoadRate] * 1e9));
                // A load waits; a store does not. A block's threads load a tile into shared memory
                // 4 elements a thread at a time, each round stored before the next is loaded (a
                // load does not pass a store to memory it may alias): ⌈elements / 4T⌉ waits in
                // turn. Asynchronous copies are all in flight at once: one wait.
                // Generated CUDA keeps kGeneratedLoadBatch such loads of a lane in flight, each of
                // 16 bytes into a tile kept as the storage type (tile_load_stored).
                const double per_load = stored ? 16.0 / std::max(shape.tile_element_bytes, 1) : kElementsPerLoad;
                if (op == static_cast<int>(Op::LOAD))
                    latency = memory_wait * (sh > 0 && !async ? std::ceil(w / (per_load * (shape.generated ? kGeneratedLoadBatch : 1) * 32 *
                                                                                std::max(shape.warps, 1)))
                                                              : 1.0);
                break;
            }
            case GpuUnit::Matrix:
                busy = std::max(busy, together * w / (product_rate(m, shape.products) * unit_reach));
                if (shape.generated) busy = std::max(busy, together * w / (generated_rate(MachineParam::GeneratedMacRate, MachineParam::GeneratedRegisterMacRate) * reach));
                // Generated CUDA on the CUDA cores: a multiply-add costs an SM its loop's share
                // and its reads from shared memory: a thread's tm × tn results read tm elements
                // of a and tn of b a step of k (a quarter as many reads 16 bytes at a time).
                if (shape.generated && in_shared && scalar_steps > 0 && thread_rows > 0 && thread_cols > 0) {
                    const double reads = (1.0 / thread_rows + 1.0 / thread_cols) / (by_element ? 1 : 4);
                    const double picoseconds = by_element ? m[MachineParam::GeneratedElementMacPs] + reads * m[MachineParam::GeneratedElementReadPs]
                                                          : m[MachineParam::GeneratedScalarMacPs] + reads * m[MachineParam::GeneratedScalarReadPs];
                    busy = std::max(busy, together * w * picoseconds * 1e-12);
                }
                latency = product_latency * cycle;
                break;
            case GpuUnit::Special:
                busy = std::max(busy, together * w / (m[MachineParam::SfuPerClock] * clock * reach));
                if (shape.generated)
                    busy = std::max(busy, together * w / (generated_rate(MachineParam::GeneratedElementRate, MachineParam::GeneratedRegisterElementRate) * reach));
                latency = m[MachineParam::SfuLatency] * cycle;
                break;
            case GpuUnit::Alu:
                busy = std::max(busy, together * w / (m.alu_per_clock() * clock * reach));
                if (shape.generated)
                    busy = std::max(busy, together * w / (generated_rate(MachineParam::GeneratedElementRate, MachineParam::GeneratedRegisterElementRate) * reach));
                latency = (m[MachineParam::AluLatency] +
                           (kOpShape[static_cast<size_t>(op)] == OpShape::RowReduce ? reduce_steps * m[MachineParam::ShuffleLatency] : 0)) *
                          cycle;
                break;
        }
        const bool loads_shared = op == static_cast<int>(Op::LOAD) && sh > 0;
        if (writes_shared || loads_shared) latency += m[MachineParam::BarrierCycles] * cycle;
        if (shape.generated && in_shared) busy += together * m[MachineParam::GeneratedInstructionNs] * 1e-9;
        // Generated CUDA's loops in shared memory take as long as the probe's did with one
        // block an SM (the instruction, its barrier, a product's fragment steps in turn: its
        // own work included), or the `together` blocks' work where that is longer: each
        // block's wait is the other blocks' work.
        if (shape.generated && in_shared && unit != GpuUnit::Memory)
            latency = std::max(0.0, (m[MachineParam::GeneratedInstructionLatencyNs] +
                                     (product_steps * m[MachineParam::GeneratedProductStepNs] +
                                      scalar_steps * m[by_element ? MachineParam::GeneratedElementStepNs : MachineParam::GeneratedScalarStepNs]) /
                                         executions) *
                                            1e-9 -
                                        busy);
        auto add = [&](Split& to, ChainPart busy_part, ChainPart wait_part) {
            to.busy += executions * busy;
            to.wait += executions * latency;
            split[static_cast<size_t>(busy_part)].busy += executions * busy;
            split[static_cast<size_t>(wait_part)].wait += executions * latency;
        };
        if (async) add(copies, ChainPart::Copies, ChainPart::Copies);
        else if (unit == GpuUnit::Memory) add(sync, ChainPart::Memory, ChainPart::Memory);
        else
            add(compute, unit == GpuUnit::Matrix ? ChainPart::Products : unit == GpuUnit::Special ? ChainPart::Special : ChainPart::Alu,
                ChainPart::Waits);
    };
    std::array<std::uint64_t, kOpCount> executions{};  // per opcode, what by_pc holds
    for (std::size_t pc = 0; pc < work.by_pc.size(); ++pc) {
        const InstructionWork& i = work.by_pc[pc];
        if (i.executions == 0) continue;
        const int op = i.op;
        executions[static_cast<size_t>(op)] += i.executions;
        // A launch's serial code (a tile loaded before its grid) runs in every block of the grid
        // on a GPU, whose blocks share no shared memory: each head's once for each of its blocks.
        const double copies_of =
            i.in_grid || work.grids == 0 ? 1.0 : blocks / static_cast<double>(work.grids) / static_cast<double>(std::max<std::int64_t>(work.heads, 1));
        phase(op, copies_of * static_cast<double>(i.executions), copies_of * static_cast<double>(i.work),
              copies_of * static_cast<double>(i.shared_elements), copies_of * static_cast<double>(i.product_shared_elements),
              copies_of * static_cast<double>(i.shared_sum_elements), copies_of * i.lane_work, copies_of * i.product_steps,
              copies_of * i.scalar_product_steps, copies_of * i.active_warps, i);
    }
    // The scalar instructions counted in runs: one instruction, one unit each.
    for (int op = 0; op < kOpCount; ++op) {
        const double rest = static_cast<double>(work.instructions[static_cast<size_t>(op)] - executions[static_cast<size_t>(op)]);
        if (rest > 0) phase(op, rest, rest, 0, 0, 0, rest, 0, 0, 0, InstructionWork{});
    }
    // The busiest SM runs ⌈B/S⌉ average blocks, `together` at a time: its units are busy for
    // ⌈B/S⌉/R rounds' work, and it waits ⌈⌈B/S⌉/R⌉ rounds' latencies (a last, partial round
    // shares the units among fewer blocks, but waits as long). Where blocks are unequal (a
    // causal mask), the toy machine's makespan of the grid on the GPU's R·S resident blocks
    // says how many average blocks the busiest runs in turn: where that is more than equal
    // blocks would take (⌈B/(R·S)⌉), both grow by as much.
    // Generated CUDA's blocks are latency-bound, not issue-bound: their last, partial round takes
    // a whole round, work and waits alike. Nsight Compute, generated flash_decoding at d = 128
    // (n = 4096, 64 heads): 16.0 cycles between a warp's instructions on the H100, 13.6-15.5 and
    // 0.39-0.49 instructions issued a cycle per scheduler on the H200 (same SM), 55-60% of the
    // stalls at barriers and global loads; Bc = 64 (3 blocks an SM, 2.6 rounds) runs 1.07-1.11x
    // Bc = 32's time (4 an SM, 2 rounds) with 0.84x its instructions (docs/gpu.md, "Choosing tiles";
    // traces/gpu/ncu/flash_decoding_generated.*.h200.*).
    double work_rounds = static_cast<double>(busiest) / together;
    double wait_rounds = std::ceil(work_rounds);
    if (shape.generated) work_rounds = wait_rounds;
    if (work.busy_cycles > 0) {
        const double in_turn = static_cast<double>(work.makespan_cycles) * blocks / static_cast<double>(work.busy_cycles);
        const double imbalance = std::max(1.0, in_turn / std::ceil(blocks / (resident * sms)));
        work_rounds *= imbalance;
        wait_rounds *= imbalance;
    }
    auto on_busiest = [&](const Split& x) { return (x.busy * work_rounds + x.wait * wait_rounds) / blocks; };
    for (std::size_t p = 0; p < parts.size(); ++p) parts[p] = on_busiest(split[p]);
    // Copies with stages run while the block computes; the other loads and stores wait in line.
    return on_busiest(sync) + std::max(on_busiest(compute), on_busiest(copies));
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

std::string_view chain_part_key(ChainPart part) { return kPartKeys[static_cast<size_t>(part)]; }
std::string_view time_bound_key(TimeBound bound) { return kBoundKeys[static_cast<size_t>(bound)]; }

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
    const double shared_bytes = shared_bytes_of(at(GpuUnit::Matrix), static_cast<double>(work.shared_elements),
                                                static_cast<double>(work.product_shared_elements), static_cast<double>(work.shared_sum_elements), shape);
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

    // Warp instructions, at the SM's issue rate; a CUDA-core product's idle lanes issue too.
    double warp_instructions = static_cast<double>(work.shared_elements - work.product_shared_elements) / 32;
    for (GpuUnit u : {GpuUnit::Memory, GpuUnit::Matrix, GpuUnit::Special, GpuUnit::Alu})
        warp_instructions += warp_instructions_of(u, at(u), u == GpuUnit::Matrix ? static_cast<double>(work.product_shared_elements) : 0, shape,
                                                  u == GpuUnit::Matrix ? at(u) + work.idle_lane_work : -1);
    set(TimeBound::Issue, share * warp_instructions / (kIssuePerClock * clock));

    // The L2 sees every sector the program's LOADs and STOREs touch; DRAM what the cache model
    // says misses and is written back.
    const CacheStats& c = counts.total;
    const double sector = shape.sector_bytes;
    const double l2_bytes = static_cast<double>(c.hits() + c.misses()) * sector;
    const double dram_bytes = static_cast<double>(c.dram_read_bytes + c.dram_write_bytes);
    // Bytes stream at the bandwidth after a start-up: DRAM's as the probe measured a short read's
    // (its time less the empty kernel's and its bytes'), the L2's its pointer chase's latency.
    // A launch that moves little takes its start-up, not its bytes.
    if (l2_bytes > 0) set(TimeBound::L2, m[MachineParam::L2Latency] / clock + l2_bytes / m.bytes_per_second(MachineParam::L2BytesPerSecond));
    if (dram_bytes > 0)
        set(TimeBound::Dram, m[MachineParam::DramStartupMicroseconds] * 1e-6 + dram_bytes / m.bytes_per_second(MachineParam::DramBytesPerSecond));

    set(TimeBound::Chain, chain_seconds(m, work, counts, shape, clock, busiest, t.chain));
    const auto slowest = std::max_element(each.begin(), each.end());
    t.bound = static_cast<TimeBound>(slowest - each.begin());
    // Each grid the launch reaches is a kernel launch of its own (a host loop around a grid
    // launches it every iteration), all heads in one.
    t.launch_seconds = m[MachineParam::LaunchMicroseconds] * 1e-6 * static_cast<double>(std::max<std::uint64_t>(work.grids, 1));
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

namespace {

// The schedule's tiles: those in shared memory (× their stages) in bytes, and the registers a
// thread of `threads` needs for those in registers, plus 32 for addresses, indices and loop state.
std::pair<std::int64_t, std::int64_t> schedule_tiles(const Program& p, int element_bytes, std::int64_t threads) {
    // A product's destination holds fp32 sums; every other tile its element on chip.
    const std::vector<bool> sums = tiles_holding_sums(p);
    const int on_chip_bytes = on_chip_element_bytes(product_unit_of(p), element_bytes);
    std::int64_t register_bytes = 0, shared_bytes = 0;
    for (size_t k = 0; k < p.tiles.size(); ++k) {
        const Tile& t = p.tiles[k];
        const std::int64_t bytes = t.rows * t.cols * (sums[k] ? 4 : on_chip_bytes);
        if (t.in_registers) register_bytes += bytes;
        else shared_bytes += bytes * t.stages;
    }
    return {shared_bytes, 32 + (register_bytes / 4 + threads - 1) / threads};
}

// The blocks an SM holds, and the limit that stops one more, for a block as `o` describes it.
void resident_blocks(Occupancy& o, const MachineSpec& m) {
    const auto at = [&](MachineParam q) { return static_cast<std::int64_t>(m[q]); };
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
}

}  // namespace

Occupancy occupancy(const Program& p, const MachineSpec& m, int element_bytes) {
    Occupancy o;
    o.threads = 32 * p.warps;
    std::tie(o.shared_bytes, o.registers_per_thread) = schedule_tiles(p, element_bytes, o.threads);
    const auto at = [&](MachineParam q) { return static_cast<std::int64_t>(m[q]); };
    if (o.shared_bytes > at(MachineParam::SharedPerBlock))
        throw ToyError(fmt::format("a block's tiles in shared memory need {} bytes; an SM of machine {} gives a block at most {}", o.shared_bytes,
                                   m.name, at(MachineParam::SharedPerBlock)));
    if (o.registers_per_thread > 255)
        throw ToyError(fmt::format("a block's tiles in registers need {} registers a thread over {} threads (warps {}); a thread has at most 255",
                                   o.registers_per_thread, o.threads, p.warps));
    resident_blocks(o, m);
    return o;
}

std::int64_t launch_bounds_registers(const MachineSpec& m, int min_blocks, std::int64_t threads) {
    const std::int64_t allocated_threads = (std::max<std::int64_t>(threads, 1) + 31) / 32 * 32;
    const std::int64_t budget = static_cast<std::int64_t>(m[MachineParam::RegistersPerSm]) / (std::max(min_blocks, 1) * allocated_threads) / 8 * 8;
    return std::clamp<std::int64_t>(budget, 1, 255);
}

Occupancy kernel_occupancy(const KernelBlock& block, const Program& p, const MachineSpec& m, int element_bytes) {
    Occupancy o;
    o.threads = std::max(block.threads, 1);
    o.shared_bytes = block.shared_bytes;
    o.registers_per_thread = block.min_blocks > 0 ? launch_bounds_registers(m, block.min_blocks, o.threads)
                                                  : std::clamp<std::int64_t>(schedule_tiles(p, element_bytes, o.threads).second, 1, 255);
    resident_blocks(o, m);
    o.resident = std::max<std::int64_t>(o.resident, 1);
    return o;
}

Program on_machine_cache(const Program& program, const MachineSpec& machine) {
    refuse_devices(program, "the time model of a named machine");
    Program on_machine = program;
    if (!on_machine.cache) on_machine.cache = make_program_cache(std::string(machine.name), Loc{});
    return on_machine;
}

Untimed untimed(const LaunchWork& work) {
    if (work.blocks == 0) return Untimed::NoGrid;
    if (work.serial_loops > 0) return Untimed::SerialLoops;
    if (work.scalar_grids > 0) return Untimed::ScalarGrid;
    return Untimed::Timed;
}

std::string_view untimed_tag(Untimed why) {
    switch (why) {
        case Untimed::Timed: return "";
        case Untimed::NoGrid: return "no parallel loop";
        case Untimed::SerialLoops: return "serial loops beside its grid";
        case Untimed::ScalarGrid: return "a grid of scalar code";
    }
    return "";
}

std::string_view untimed_reason(Untimed why) {
    switch (why) {
        case Untimed::Timed: return "";
        case Untimed::NoGrid: return "has no parallel loop: its time on the GPU depends on threads it does not describe";
        case Untimed::SerialLoops:
            return "runs serial loops beside its parallel loop: their time on the GPU depends on threads it does not describe";
        case Untimed::ScalarGrid:
            // matmul_inner at n = 1024, timed so: 291 ms against the 0.428 ms the H100 measured.
            return "runs scalar code in its parallel loop: a GPU runs each iteration as a thread, 32 to a warp, and the model times an "
                   "iteration as a block of a tile program, which would be hundreds of times too slow";
    }
    return "";
}

std::string ProgramTime::first_untimed() const {
    for (std::size_t k = 0; k < untimed.size(); ++k)
        if (untimed[k] != Untimed::Timed) return fmt::format("launch {} {}", k + 1, untimed_reason(untimed[k]));
    return "";
}

ProgramTime predict_program(const Program& program, const MachineSpec& m, std::int64_t heads, const GeneratedLaunches* generated,
                            const std::vector<Occupancy>* kernel) {
    ProgramTime out;
    const Program p = on_machine_cache(program, m);
    out.products = generated ? generated->products : product_unit_of(p);
    const auto sms = static_cast<std::int64_t>(m[MachineParam::Sms]);
    // Each launch's blocks an SM: the schedule's occupancy, or the generated launch's own.
    const auto resident = [&](std::size_t k) {
        if (generated) return generated->resident.at(std::min(k, generated->resident.size() - 1));
        if (kernel && !kernel->empty()) return kernel->at(std::min(k, kernel->size() - 1)).resident;
        return out.occupancy.resident;
    };
    if (generated) {
        if (generated->threads.empty() || generated->resident.size() != generated->threads.size())
            throw std::logic_error("predict_program: a generated launch without its threads and resident blocks");
        out.occupancy.threads = generated->threads.front();
        out.occupancy.resident = *std::max_element(generated->resident.begin(), generated->resident.end());
        out.occupancy.limit = "generated";
        out.spilled_bytes = generated->spilled_bytes;
        if (!generated->registers.empty() && generated->registers.front() > 0) {
            out.occupancy.registers_per_thread = generated->registers.front();
            out.occupancy.limit = generated->registers_from_compiler ? "generated (registers: ptxas's)" : "generated (registers estimated)";
        }
    } else if (kernel && !kernel->empty()) {
        out.occupancy = kernel->front();
    } else {
        out.occupancy = occupancy(p, m, p.cache->element_bytes);
    }
    CachedCountOptions& walk = out.walk;
    walk.heads = heads;
    walk.cold_launches = true;
    walk.workers = out.occupancy.resident * sms;
    if (generated) {
        for (std::int64_t r : generated->resident) walk.launch_workers.push_back(r * sms);
        walk.launch_pcs = generated->launch_pcs;
    } else if (kernel) {
        for (const Occupancy& launch : *kernel) walk.launch_workers.push_back(launch.resident * sms);
    }
    out.counted = count_through_cache(p, walk);
    const CachedCount& counted = out.counted;
    for (size_t k = 0; k < counted.launches.size(); ++k) {
        LaunchShape shape;
        shape.blocks = counted.launch_work[k].blocks;
        shape.resident_per_sm = resident(k);
        shape.products = out.products;
        shape.sector_bytes = p.cache->config.sector_bytes;
        shape.tile_element_bytes = p.cache->element_bytes;
        shape.warps = p.warps;
        if (generated) {
            run_as_generated(shape, generated->threads.at(std::min(k, generated->threads.size() - 1)));
            // Serial code (no parallel loop) runs as one block a head (gpu/codegen/): a grid of
            // `heads` blocks, each the whole of it, one after another (flash_decoding's merge).
            if (shape.blocks == 0) shape.blocks = static_cast<std::uint64_t>(heads);
        }
        Untimed why = untimed(counted.launch_work[k]);
        if (generated && why == Untimed::NoGrid) why = Untimed::Timed;  // its serial code as `heads` blocks, above
        out.untimed.push_back(why);
        out.launches.push_back(predict_launch(m, counted.launch_work[k], counted.launches[k], shape));
        if (why == Untimed::Timed) out.seconds += out.launches.back().seconds;
    }
    return out;
}

}  // namespace toysim
