// The boundary between the simulator's C++ and the CUDA kernels: plain C++, no CUDA types, so
// every build (and CI, which has no GPU) compiles and tests what is on this side.
//
//   catalog.cpp    the table of kernels: what a program's `gpu NAME` line may name, with the
//                  parameters and arrays each kernel takes (always built)
//   runtime.cu     device query, buffers, the checked launch, counting and timing (CUDA builds,
//                  in the kernels' own library libtoysim_cuda.so: gpu/runtime/cuda_plugin.h)
//   device_loader.cpp  the same functions as toysim calls them: forwarded to that library,
//                  or "no GPU support" / "not built yet" (exit 2)
//   matmul.cu, softmax.cu, attention_forward.cu, attention_backward.cu,
//   attention_tensor_core.cu: the kernels
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace toysim::gpu {

// Storage type of the arrays on the device. Arithmetic is fp32 in every case, but for the FP8
// kernel's products (e4m3 in, fp32 sums). An e4m3 array is stored scaled by a power of two
// chosen for it (HostArray::scale), as FP8 training and FlashAttention-3's FP8 forward scale a
// tensor: its largest value near e4m3's largest, 448.
enum class DType : std::uint8_t { F32, F16, BF16, E4M3 };
std::string_view dtype_name(DType t);  // "fp32", "fp16", "bf16", "e4m3"
int dtype_bytes(DType t);
std::optional<DType> parse_dtype(std::string_view text);

// One array a kernel reads or writes: a program array of the same name.
struct KernelArray {
    std::string_view name;
    // Kept in fp32 whatever the run's dtype: row statistics (m, ℓ, L, D) and dQ, which the
    // backward pass accumulates with atomic adds from every column block, as FlashAttention-2 does.
    bool always_f32 = false;
    // fp16 in an e4m3 run: an output an FP8 kernel writes in 16 bits (FlashAttention-3's FP8
    // forward writes O so), where e4m3's 3-bit mantissa would lose what its products kept.
    bool f16_when_fp8 = false;
};

// A parameter the kernel takes from the program, with the largest value it supports.
struct KernelParam {
    std::string_view name;
    std::int64_t max = INT64_MAX;
    std::string_view why_max = {};  // "one thread per output element of a t×t tile"
};

// Where a kernel's tile products run: CUDA cores (fused multiply-adds), warp-level tensor-core
// instructions (WMMA or mma.sync, fp16/bf16 in, fp32 sums) or Hopper's warpgroup wgmma.
enum class Products { CudaCores, WarpMma, Wgmma };

struct KernelSpec {
    std::string_view name;     // what a program's `gpu` line names: "fa2_forward"
    std::string_view source;   // "gpu/kernels/attention_forward.cu"
    std::string_view summary;  // one line
    std::vector<KernelParam> params;   // in the order the launcher takes them
    std::vector<KernelArray> arrays;   // in the order of the launcher's pointers and counters
    std::vector<std::string_view> stages;  // one per kernel launch, in order
    // The storage types it runs with: fp32, plus fp16 and bf16 for the attention kernels; the
    // tensor-core versions take fp16 and bf16 only.
    std::vector<DType> dtypes = {DType::F32};
    // Parameter combinations the kernel refuses (beyond each one's max), or "".
    std::string (*refuse)(const std::vector<std::int64_t>& params) = nullptr;
    // Floating-point operations of one head, as the seeds count them (4·n²·d for attention
    // forward); null where the seeds count none (softmax): no TFLOP/s then.
    double (*flops)(const std::vector<std::int64_t>& params) = nullptr;
    // A faster version of another kernel (fa2_v2_mma of fa2_forward): it has no program of its
    // own but runs with that kernel's program, `toysim gpu run fa2.toy --kernel fa2_v2_mma`.
    std::string_view version_of = {};
    // Where its tile products run, as its code says: the time model (sim/timing/) takes the
    // matching unit's rate.
    Products products = Products::CudaCores;

    int find_array(std::string_view array) const;
    bool runs_in(DType t) const { return std::find(dtypes.begin(), dtypes.end(), t) != dtypes.end(); }
    std::string dtypes_text() const;  // "fp32, fp16, bf16"
    DType storage(int array, DType run) const {
        const KernelArray& a = arrays[static_cast<size_t>(array)];
        return a.always_f32 ? DType::F32 : run == DType::E4M3 && a.f16_when_fp8 ? DType::F16 : run;
    }
};

const std::vector<KernelSpec>& kernel_catalog();
const KernelSpec* find_kernel(std::string_view name);

// An error from the device side: no GPU, out of device memory, a launch that failed, shared
// memory a tile needs that this GPU does not have. The CLI prints it and exits 2.
struct GpuError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// ---- the device side: runtime.cu in libtoysim_cuda.so, reached through device_loader.cpp ----

bool built_with_cuda();

struct DeviceInfo {
    int ordinal = 0;
    std::string name;
    int compute_major = 0, compute_minor = 0;
    int sm_count = 0;
    std::int64_t l2_bytes = 0;
    std::int64_t global_memory_bytes = 0;
    std::int64_t shared_memory_per_block = 0;  // the opt-in maximum a kernel can ask for
    int sm_clock_mhz = 0;      // as the driver reports it (0 where it does not)
    int memory_clock_mhz = 0;
    int memory_bus_bits = 0;
    int driver_version = 0;    // 13000 = CUDA 13.0
    int runtime_version = 0;
};

// The first GPU; throws GpuError when there is none (or this build has no CUDA).
DeviceInfo query_device();

// One array of a launch, for all heads: heads × the program's elements, head-major.
struct HostArray {
    std::size_t elements = 0;     // on the device, all heads
    std::vector<double> values;   // in: what to upload (elements of them); out: what was downloaded
    bool upload = false;          // false: poisoned with NaN before the launch
    bool download = false;        // copy back after the checked launch
    bool restore = false;         // uploaded and written by the kernel: reset before every launch
    double scale = 1;             // e4m3: stored as value · scale (a power of two), values already rounded so
    // Download only these spans (elements, concatenated into values), not the whole array:
    // the rows a sampled check reads, when the array is too large to bring back.
    struct Span {
        std::size_t offset = 0, count = 0;
    };
    std::vector<Span> sample;
    // Or filled on the device before the launch, from arrays uploaded before it: a reference
    // (attention's O or its row statistic L) too costly for the CPU at these shapes
    // (gpu/runtime/reference_fill.cu). q is n × d, k m × d, v m × dv, each head's after the last.
    struct DeviceFill {
        enum class Kind : std::uint8_t { None, Attention, AttentionLse };
        Kind kind = Kind::None;
        bool causal = false;  // query i sees keys 0..i
        int q = -1, k = -1, v = -1;
        std::int64_t n = 0, m = 0, d = 0, dv = 0;
    };
    DeviceFill device_fill;
};

// The widest row a device fill takes (d and dv): a warp's lanes hold 8 elements each.
inline constexpr std::int64_t kDeviceFillMaxWidth = 256;

// Whether a launch's hardware traffic is measured (CUPTI), and from which L2 state.
enum class L2State : std::uint8_t {
    Off,   // not measured
    Cold,  // L2 flushed (a buffer twice its size written) just before the measured launch
    Warm,  // measured right after an identical launch: what the cache kept is still there
};

std::string_view l2_state_name(L2State s);  // "off", "cold", "warm"

// What the hardware counted for one stage's launch (CUPTI range profiler, in-process).
struct MeasuredTraffic {
    bool available = false;
    std::string why_not;             // one line when !available: permissions, device, build
    L2State l2 = L2State::Off;
    double dram_read_bytes = 0, dram_write_bytes = 0;    // dram__bytes_read.sum, dram__bytes_write.sum
    double l2_read_sectors = 0, l2_write_sectors = 0;    // lts__t_sectors_srcunit_tex_op_{read,write}.sum (32 B each)
    double l2_hit_rate = 0;                              // lts__t_sector_hit_rate.pct, 0..100
};

struct GeneratedProgram;  // gpu/codegen/codegen.h

struct LaunchPlan {
    const KernelSpec* kernel = nullptr;
    // A module generated from the program (gpu/codegen/codegen.h) and its compiled image: run instead
    // of a catalog kernel's launcher.
    const GeneratedProgram* generated = nullptr;
    const std::string* generated_image = nullptr;
    std::vector<std::int64_t> params;  // in kernel->params order
    std::int64_t heads = 1;            // batch × heads: the grid's extra dimension
    DType dtype = DType::F32;
    int warmups = 3;
    int repeats = 20;
    L2State measure = L2State::Off;  // also measure each stage's DRAM and L2 traffic
    // A module shared by several parameter sets (gpu/codegen/shared_module.h): this run's values
    // of its toy_param array, set once the module is loaded. Empty: the module is the run's own.
    std::vector<std::int64_t> generated_values;
};

// What one stage's launch asks of an SM, known from the launcher without a device: its block's
// threads, its dynamic shared memory, and the blocks an SM its __launch_bounds__ ask ptxas to fit
// (0: the kernel asks none). toysim's time model reads it (gpu::plan_stages) where a catalog
// kernel runs the program: the kernel's own tiles, not the schedule's estimate of them.
struct StagePlan {
    int threads = 0;
    std::int64_t shared_bytes = 0;
    int min_blocks = 0;
};

struct Timing {
    std::vector<float> ms;  // one per repeat
    double median() const;
    double min() const;
    double max() const;
};

struct StageResult {
    std::string_view name;
    std::vector<std::uint64_t> reads, writes;  // elements per array (kernel order), all heads
    Timing time;
    MeasuredTraffic measured;  // when LaunchPlan::measure is not Off
    int resident_blocks_per_sm = 0;  // the occupancy calculator's blocks of this launch per SM; 0: not known
};

struct LaunchResult {
    std::vector<StageResult> stages;
    Timing total;  // every stage, back to back
};

// Runs the plan: uploads `arrays` (one per kernel array), launches the timed variant once and
// downloads its outputs (the values the caller checks), launches the counting variant once
// for the per-array counts, then times warmups + repeats of the timed variant. Everything the
// device cannot do (shared memory, device memory) is refused before the first launch.
LaunchResult launch(const LaunchPlan& plan, std::vector<HostArray>& arrays);

// Each stage's StagePlan of a catalog kernel (plan.kernel; not a generated module), from its
// launchers run without launching: no device needed. Throws GpuError where the kernel refuses the
// parameters (a block's shared memory past `shared_memory_limit` included).
std::vector<StagePlan> plan_launch(const LaunchPlan& plan, int shared_memory_limit);
// plan_launch through the CUDA library (toysim's side, gpu/runtime/device_loader.cpp): nullopt
// where the library is not there to ask (a build without CUDA, or before it is built).
std::optional<std::vector<StagePlan>> plan_stages(const LaunchPlan& plan, int shared_memory_limit);

}  // namespace toysim::gpu
