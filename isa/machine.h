// A named machine (`--machine h100`): the units of a GPU, their rates and latencies, from which
// the timing pass (sim/timing/) predicts a launch's time. Like the cache presets
// (cache_config.h), it describes a machine and runs nothing.
//
// The seeds' machine (the default) has no entry: one cycle per unit of work, every figure the
// course works by hand. A named machine leaves those cycles alone and adds a prediction in
// seconds beside them.
//
// Every value is a measurement of this project's own microbenchmark
// (gpu/tools/machine_probe.cu, its output committed under gpu/results/), with the published
// figure beside it where there is one; the model reads the measured one. No value is fitted to
// a kernel.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace toysim {

// Each parameter: its key, its unit, and what it is. The order is the listing's.
#define TOYSIM_MACHINE_PARAMS(X)                                                                                                    \
    X(Sms, "sms", "", "streaming multiprocessors (SMs)")                                                                          \
    X(ClockMhz, "clock", "MHz", "SM clock while a kernel runs on the CUDA cores")                                                   \
    X(MmaClockMhz, "mma_clock", "MHz", "SM clock while mma.sync keeps the tensor cores busy (lower: power)")                         \
    X(WgmmaClockMhz, "wgmma_clock", "MHz", "SM clock while wgmma keeps the tensor cores busy")                                     \
    X(Fp32FlopsPerClock, "fp32", "FLOP/clk/SM", "fp32 FLOP per clock per SM on the CUDA cores (a fused multiply-add is 2)")         \
    X(SfuPerClock, "sfu", "/clk/SM", "special-function results (ex2, lg2, rcp) per clock per SM")                                   \
    X(MmaF16Tflops, "mma_f16", "TFLOP/s", "mma.sync m16n8k16, fp16 or bf16 in, fp32 sums: the whole GPU as it runs them")       \
    X(MmaTf32Tflops, "mma_tf32", "TFLOP/s", "mma.sync m16n8k8, tf32 in, fp32 sums: the whole GPU as it runs them")              \
    X(WgmmaF16Tflops, "wgmma_f16", "TFLOP/s", "wgmma from shared memory, fp16 in, fp32 sums: the whole GPU as it runs them")      \
    X(SharedBytesPerClock, "shared", "B/clk/SM", "shared-memory bytes loaded per clock per SM")                                     \
    X(L2BytesPerSecond, "l2", "GB/s", "L2 read bandwidth, whole GPU")                                                               \
    X(DramBytesPerSecond, "dram", "GB/s", "DRAM (HBM) read bandwidth, whole GPU")                                                   \
    X(DramLatency, "dram_latency", "cycles", "a load that misses the L2, one thread, pointer chase")                                \
    X(DramStartupMicroseconds, "dram_startup", "µs", "a launch's DRAM time beyond its bytes at the bandwidth: a short read's, less the empty kernel's") \
    X(L2Latency, "l2_latency", "cycles", "a load that hits the L2")                                                                 \
    X(SharedLatency, "shared_latency", "cycles", "a shared-memory load")                                                            \
    X(AluLatency, "alu_latency", "cycles", "an fp32 fused multiply-add that needs the one before's result")                        \
    X(SfuLatency, "sfu_latency", "cycles", "an ex2 on the special-function unit that needs the one before's result")              \
    X(ShuffleLatency, "shuffle_latency", "cycles", "a warp shuffle (shfl.sync) that needs the one before's result")                 \
    X(MmaLatency, "mma_latency", "cycles", "an mma.sync m16n8k16 that adds to the one before's sums")                              \
    X(WgmmaLatency, "wgmma_latency", "cycles", "a wgmma m64n128k16 from issue to its wait's end")                                 \
    X(BarrierCycles, "barrier", "cycles", "a block's barrier (__syncthreads, 4 warps) with nothing to wait for")                     \
    X(GeneratedElementRate, "generated_elementwise", "G/s/SM", "elements of element-wise tile instructions generated CUDA does a second, per SM") \
    X(GeneratedMacRate, "generated_mac", "G/s/SM", "multiply-adds of tile products generated CUDA does a second, per SM (tf32 tensor cores)") \
    X(GeneratedInstructionNs, "generated_instruction", "ns", "an SM's time for a block's tile instruction in generated CUDA's shared memory, beyond its elements") \
    X(GeneratedInstructionLatencyNs, "generated_instruction_latency", "ns", "a block's tile instruction in generated CUDA's shared memory, start to its barrier's end, one block an SM") \
    X(GeneratedProductStepNs, "generated_product_step", "ns", "a step of a generated product in shared memory (wmma m16n16k8, tf32) that waits for the one before") \
    X(GeneratedScalarStepNs, "generated_scalar_step", "ns", "a step of k of a generated product on the CUDA cores, read 16 bytes at a time, that waits for the one before") \
    X(GeneratedElementStepNs, "generated_element_step", "ns", "a step of k of a generated product on the CUDA cores, read an element at a time, that waits for the one before") \
    X(GeneratedElementMacPs, "generated_element_mac", "ps/SM", "an SM's time for a multiply-add of a generated product on the CUDA cores whose loop reads an element at a time, beyond its reads") \
    X(GeneratedElementReadPs, "generated_element_read", "ps/SM", "an SM's time for a read of 4 bytes from shared memory in that loop") \
    X(GeneratedScalarMacPs, "generated_scalar_mac", "ps/SM", "an SM's time for a multiply-add of a generated product on the CUDA cores whose loop reads 16 bytes at a time, beyond its reads") \
    X(GeneratedScalarReadPs, "generated_scalar_read", "ps/SM", "an SM's time for a read of 16 bytes from shared memory in that loop") \
    X(GeneratedLoadRate, "generated_load", "G/s/SM", "elements generated CUDA loads into tiles in shared memory, each converted to fp32, a second, per SM (the bytes from L1 or the L2)") \
    X(GeneratedRegisterElementRate, "generated_elementwise_registers", "G/s/SM", "elements of element-wise instructions on tiles generated CUDA keeps in registers, a second, per SM") \
    X(GeneratedRegisterMacRate, "generated_mma", "G/s/SM", "multiply-adds of products into tiles generated CUDA keeps in registers (mma.sync, fp16), a second, per SM") \
    X(LaunchMicroseconds, "launch", "µs", "a launch's own time: an empty kernel between two events, as a run times a stage")            \
    X(RegistersPerSm, "registers", "/SM", "32-bit registers per SM")                                                                \
    X(SharedPerSm, "shared_per_sm", "B", "shared memory per SM")                                                                    \
    X(SharedPerBlock, "shared_per_block", "B", "shared memory one block may have (opt-in)")                                         \
    X(BlocksPerSm, "blocks_per_sm", "", "resident blocks per SM, at most")                                                          \
    X(ThreadsPerSm, "threads_per_sm", "", "resident threads per SM, at most")

enum class MachineParam {
#define X(NAME, KEY, UNIT, MEANING) NAME,
    TOYSIM_MACHINE_PARAMS(X)
#undef X
};

inline constexpr int kMachineParamCount = 0
#define X(NAME, KEY, UNIT, MEANING) +1
    TOYSIM_MACHINE_PARAMS(X)
#undef X
    ;

struct MachineParamInfo {
    std::string_view key, unit, meaning;
};
const MachineParamInfo& machine_param_info(MachineParam param);

// One parameter's value on a machine, and where it comes from: the row of the probe's results
// file (its first column) and the figure on that row the value is (its first number; a test
// reads each back from the file).
struct MachineValue {
    double measured = 0;          // in the listing's unit (GB/s, µs, MHz, ...)
    std::string_view row;         // "HBM read"
    std::string_view figure;      // "median 3072"
    std::string_view published;   // the published figure, with its source; "" where none
    // The probe's output the row is on where it is not the machine's own (MachineSpec::results):
    // a figure of the SM measured on another machine with the same SM.
    std::string_view results = {};
};

struct MachineSpec {
    std::string_view name;     // "h100"
    std::string_view device;   // "NVIDIA H100 80GB HBM3 (SXM5)"
    std::string_view results;  // the probe's output, under gpu/results/
    std::array<MachineValue, kMachineParamCount> values{};

    double operator[](MachineParam p) const { return values[static_cast<size_t>(p)].measured; }
    double clock_hz() const { return (*this)[MachineParam::ClockMhz] * 1e6; }
    // fp32 instructions (add, multiply, max, fused multiply-add) per clock per SM.
    double alu_per_clock() const { return (*this)[MachineParam::Fp32FlopsPerClock] / 2; }
    // TFLOP/s in the listing (tensor cores: measured at the clock they run at, lower than
    // ClockMhz under their load); multiply-adds per second per SM here.
    double macs_per_second_per_sm(MachineParam p) const { return (*this)[p] * 1e12 / 2 / (*this)[MachineParam::Sms]; }
    // GB/s and µs in the listing; bytes per second and seconds here.
    double bytes_per_second(MachineParam p) const { return (*this)[p] * 1e9; }
};

// The named machines, and one by name (null: none of that name).
const std::vector<MachineSpec>& machines();
const MachineSpec* find_machine(std::string_view name);
// "h100" (the names, for messages).
std::string machine_names();

}  // namespace toysim
