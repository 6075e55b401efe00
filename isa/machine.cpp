// The named machines (machine.h). Each value: the measured figure from the probe's committed
// output, the row it is on, and the published figure beside it.
#include "isa/machine.h"

#include <algorithm>

namespace toysim {

namespace {

constexpr MachineParamInfo kInfo[] = {
#define X(NAME, KEY, UNIT, MEANING) {KEY, UNIT, MEANING},
    TOYSIM_MACHINE_PARAMS(X)
#undef X
};

// One value of a machine: what was measured, the row of its probe's results and the figure on it
// that it is, and the published figure.
void set(MachineSpec& m, MachineParam p, double measured, std::string_view row, std::string_view figure, std::string_view published,
         std::string_view results = {}) {
    m.values[static_cast<size_t>(p)] = {measured, row, figure, published, results};
}

constexpr std::string_view kH100Results = "gpu/results/machine_h100.txt";
constexpr std::string_view kH200Results = "gpu/results/machine_h200.txt";

// Generated products on the CUDA cores (a + b · reads a multiply-add, each loop its own) and
// loads into fp32 tiles, measured on the H200 (gpu/tools/generated_probe.sh; the 4 × 4 patch
// checks each loop's a and b: -12.3% an element at a time, +4.4% 16 bytes at a time). `results`:
// the file the rows are on, where it is not the machine's own.
void generated_cuda_core_rows(MachineSpec& m, std::string_view results) {
    using P = MachineParam;
    set(m, P::GeneratedElementMacPs, 5.66, "generated element MAC", "5.66 ps/SM", "", results);
    set(m, P::GeneratedElementReadPs, 13.46, "generated element read", "13.46 ps/SM", "", results);
    set(m, P::GeneratedScalarMacPs, 2.74, "generated scalar MAC", "2.74 ps/SM", "", results);
    set(m, P::GeneratedScalarReadPs, 43.98, "generated scalar read", "43.98 ps/SM", "", results);
    set(m, P::GeneratedLoadRate, 29.27, "generated load", "29.27 G elements/s/SM", "", results);
}

MachineSpec h100() {
    MachineSpec m;
    m.name = "h100";
    m.device = "NVIDIA H100 80GB HBM3 (SXM5)";
    m.results = kH100Results;
    using P = MachineParam;
    set(m, P::Sms, 132, "SMs", "132", "132 (H100 SXM5)");
    set(m, P::ClockMhz, 1978, "SM clock under load", "1978 MHz", "1980 MHz max boost");
    // The MHz column of the tensor-core rows: the clock the SMs ran at under that load.
    set(m, P::MmaClockMhz, 1788, "mma.sync m16n8k16 fp16->fp32", "1788", "1830 MHz for the tensor peaks (whitepaper)");
    set(m, P::WgmmaClockMhz, 1827, "wgmma m64n256k16 fp16->fp32", "1827", "1830 MHz for the tensor peaks (whitepaper)");
    set(m, P::Fp32FlopsPerClock, 250.1, "FP32 FMA", "250.1 FLOP/clk/SM", "256 FLOP/clk/SM, 66.9 TFLOP/s (whitepaper)");
    set(m, P::SfuPerClock, 16, "SFU ex2.approx.ftz.f32", "16.00 /clk/SM", "16 /clk/SM (CUDA guide, cc 9.0)");
    // The tensor cores' figures are what the GPU gives as it runs them, its clock lowered under
    // their load (1788 MHz for mma.sync, 1827 for wgmma): per second, not per clock.
    set(m, P::MmaF16Tflops, 645, "mma.sync m16n8k16 fp16->fp32", "645 TFLOP/s", "989 TFLOP/s dense fp16 (whitepaper), which only wgmma reaches");
    set(m, P::MmaTf32Tflops, 322, "mma.sync m16n8k8 tf32->fp32", "322 TFLOP/s", "495 TFLOP/s dense tf32 (whitepaper)");
    set(m, P::WgmmaF16Tflops, 988, "wgmma m64n256k16 fp16->fp32", "988 TFLOP/s", "989 TFLOP/s dense fp16 (whitepaper)");
    set(m, P::SharedBytesPerClock, 128, "shared memory load", "128.0 B/clk/SM", "128 B/clk/SM (32 banks × 4 B)");
    set(m, P::L2BytesPerSecond, 7902, "L2 read (8 MiB, warm)", "median 7902", "");
    set(m, P::DramBytesPerSecond, 3072, "HBM read", "median 3072", "3352 GB/s (HBM3: 2619 MHz × 2 × 5120 bit)");
    set(m, P::DramLatency, 660, "global load, L2 miss (DRAM)", "660 cycles", "");
    // Reads of 1, 8 and 64 MiB in one launch, the L2 flushed, timed as a stage: 0.91, 1.11 and
    // 0.78 us beyond the empty kernel and the bytes at the HBM read's median (the pointer
    // chase's one load is 0.34 us; a launch's first bytes wait for its blocks to reach every SM
    // and its requests to queue, its last for the way back).
    set(m, P::DramStartupMicroseconds, 0.91, "DRAM stream start-up", "0.91 us", "");
    set(m, P::L2Latency, 272, "global load, L2 hit", "272 cycles", "");
    set(m, P::SharedLatency, 23, "shared memory load", "23 cycles", "");
    // One warp's dependent chains: what an instruction waits for the one before when no other
    // warp has work for its scheduler.
    set(m, P::AluLatency, 5.0, "FFMA", "5.0 cycles", "4 cycles (Hopper microbenchmarks, Luo et al. 2024)");
    set(m, P::SfuLatency, 17.0, "MUFU.EX2", "17.0 cycles", "");
    set(m, P::ShuffleLatency, 24.0, "shfl.sync", "24.0 cycles", "");
    set(m, P::MmaLatency, 24.0, "mma.sync m16n8k16 (latency)", "24.0 cycles", "");
    set(m, P::WgmmaLatency, 118.3, "wgmma m64n128k16 (latency)", "118.3 cycles", "");
    set(m, P::BarrierCycles, 21.3, "__syncthreads (4 warps)", "21.3 cycles", "");
    // Generated CUDA's own loops (gpu/tools/generated_probe.sh): what the code generator's
    // element loops and tf32 fragment products do a second on an SM, measured as generated CUDA
    // of a probe program, not as any kernel the model predicts.
    set(m, P::GeneratedElementRate, 21.17, "generated element-wise op", "21.17 G elements/s/SM", "");
    set(m, P::GeneratedMacRate, 161.4, "generated product (tf32 wmma)", "161.4 G MACs/s/SM", "");
    // A tile instruction on a 4 × 4 tile, fewer elements than the block's threads: the shape
    // checks, index arithmetic and barriers every thread runs whatever the tile's size.
    set(m, P::GeneratedInstructionNs, 22.3, "generated tile instruction", "22.3 ns/SM", "");
    // What a block waits for, one block an SM (nothing beside it to overlap): an instruction
    // start to its barrier's end, and a step of a product whose steps wait each for the one
    // before, on the tensor cores (16×16 fragments, k 8 at a time) and on the CUDA cores.
    set(m, P::GeneratedInstructionLatencyNs, 75.0, "generated instruction latency", "75.0 ns", "");
    set(m, P::GeneratedProductStepNs, 123.88, "generated product step", "123.88 ns", "");
    set(m, P::GeneratedScalarStepNs, 3.46, "generated scalar product step", "3.46 ns", "");
    set(m, P::GeneratedElementStepNs, 5.78, "generated element product step", "5.78 ns", "");
    // Tiles in the fragment layout (gpu/codegen/codegen_fragment.cpp): straight-line code on
    // registers, at the FP32 lanes' and mma.sync's own rates (119 additions a clock of an SM's
    // 128 lanes at 1978 MHz; 607 TFLOP/s over the GPU, near the mma_f16 row's 645).
    // Measured on the H200, whose SM is the H100's (the probe's other generated rows agree
    // within 1-4% on the two), since no H100 was lent after the probe gained them.
    generated_cuda_core_rows(m, kH200Results);
    set(m, P::GeneratedRegisterElementRate, 236.1, "generated op in registers", "236.1 G elements/s/SM", "");
    set(m, P::GeneratedRegisterMacRate, 2298.0, "generated product (mma.sync)", "2298.0 G MACs/s/SM", "");
    // A launch's own time as `toysim gpu run` times a stage: between two events around the
    // kernel, the GPU busy before them (the launch-to-launch gap row, 1.89 us, is only the gap
    // between two queued kernels).
    set(m, P::LaunchMicroseconds, 3.01, "empty kernel between events", "3.01 us", "");
    set(m, P::RegistersPerSm, 65536, "registers per SM", "65536", "64K (CUDA guide)");
    set(m, P::SharedPerSm, 233472, "shared memory per SM", "233472 B", "228 KB (CUDA guide)");
    set(m, P::SharedPerBlock, 232448, "shared memory per block", "232448 B", "227 KB (CUDA guide)");
    set(m, P::BlocksPerSm, 32, "threads, blocks per SM", "32", "32 (CUDA guide)");
    set(m, P::ThreadsPerSm, 2048, "threads, blocks per SM", "2048", "2048 (CUDA guide)");
    return m;
}

// The H200 (gpu/results/machine_h200.txt): the H100's GH100 chip with HBM3e and a 60 MiB L2. The
// same probe gives the same figures where the chip decides (SMs, the register file, shared
// memory, the pipes' rates per clock, most latencies): those come over from h100() with their
// rows, and the test reads each back from this machine's own file. What differs is measured
// here: the memory (4487 GB/s against 3072), the L2, the clocks under the tensor cores' load,
// and the launch.
MachineSpec h200() {
    MachineSpec m = h100();
    m.name = "h200";
    m.device = "NVIDIA H200 (SXM)";
    m.results = kH200Results;
    using P = MachineParam;
    set(m, P::ClockMhz, 1979, "SM clock under load", "1979 MHz", "1980 MHz max boost");
    set(m, P::MmaClockMhz, 1803, "mma.sync m16n8k16 fp16->fp32", "1803", "");
    set(m, P::WgmmaClockMhz, 1795, "wgmma m64n256k16 fp16->fp32", "1795", "");
    set(m, P::MmaF16Tflops, 650, "mma.sync m16n8k16 fp16->fp32", "650 TFLOP/s", "989 TFLOP/s dense fp16 (H200 datasheet, as the H100 SXM), which only wgmma reaches");
    set(m, P::MmaTf32Tflops, 325, "mma.sync m16n8k8 tf32->fp32", "325 TFLOP/s", "495 TFLOP/s dense tf32 (H200 datasheet)");
    set(m, P::WgmmaF16Tflops, 970, "wgmma m64n256k16 fp16->fp32", "970 TFLOP/s", "989 TFLOP/s dense fp16 (H200 datasheet)");
    set(m, P::L2BytesPerSecond, 9254, "L2 read (8 MiB, warm)", "median 9254", "");
    set(m, P::DramBytesPerSecond, 4487, "HBM read", "median 4487", "4.8 TB/s (H200 datasheet; HBM3e: 3201 MHz × 2 × 6016 bit = 4814 GB/s)");
    set(m, P::DramLatency, 633, "global load, L2 miss (DRAM)", "633 cycles", "");
    // Reads of 1, 8 and 64 MiB, as on the H100: 1.17, 1.39 and 1.72 us beyond the empty kernel
    // and the bytes at the HBM read's median; the median of the three.
    set(m, P::DramStartupMicroseconds, 1.39, "DRAM stream start-up", "1.39 us", "");
    set(m, P::L2Latency, 270, "global load, L2 hit", "270 cycles", "");
    set(m, P::AluLatency, 4.9, "FFMA", "4.9 cycles", "4 cycles (Hopper microbenchmarks, Luo et al. 2024)");
    set(m, P::SfuLatency, 17.1, "MUFU.EX2", "17.1 cycles", "");
    // The generated-code rows of the probe's last run (2026-11-29 12:16 UTC, the generator that
    // pads a row of 60 columns to 68: the tile instruction's 4 × 4 tiles are now 12 floats a
    // row, not 8, and it fell from 22.3 to 18.9 ns); its products into tiles in registers issue
    // wgmma on Hopper where their b is in the 128-byte swizzle (the probe's are): the h100 row
    // above is from before that, mma.sync's rate.
    set(m, P::GeneratedElementRate, 21.08, "generated element-wise op", "21.08 G elements/s/SM", "");
    set(m, P::GeneratedMacRate, 158.4, "generated product (tf32 wmma)", "158.4 G MACs/s/SM", "");
    set(m, P::GeneratedInstructionNs, 18.9, "generated tile instruction", "18.9 ns/SM", "");
    set(m, P::GeneratedInstructionLatencyNs, 75.3, "generated instruction latency", "75.3 ns", "");
    set(m, P::GeneratedProductStepNs, 124.07, "generated product step", "124.07 ns", "");
    set(m, P::GeneratedScalarStepNs, 3.45, "generated scalar product step", "3.45 ns", "");
    set(m, P::GeneratedElementStepNs, 5.88, "generated element product step", "5.88 ns", "");
    generated_cuda_core_rows(m, {});
    set(m, P::GeneratedRegisterElementRate, 235.6, "generated op in registers", "235.6 G elements/s/SM", "");
    set(m, P::GeneratedRegisterMacRate, 3292.4, "generated product (mma.sync)", "3292.4 G MACs/s/SM", "");
    set(m, P::LaunchMicroseconds, 2.78, "empty kernel between events", "2.78 us", "");
    return m;
}

}  // namespace

const MachineParamInfo& machine_param_info(MachineParam param) { return kInfo[static_cast<size_t>(param)]; }

const std::vector<MachineSpec>& machines() {
    static const std::vector<MachineSpec> all = {h100(), h200()};
    return all;
}

const MachineSpec* find_machine(std::string_view name) {
    const auto& all = machines();
    auto it = std::find_if(all.begin(), all.end(), [&](const MachineSpec& m) { return m.name == name; });
    return it == all.end() ? nullptr : &*it;
}

std::string machine_names() {
    std::string out;
    for (const MachineSpec& m : machines()) out += (out.empty() ? "" : ", ") + std::string(m.name);
    return out;
}

}  // namespace toysim
