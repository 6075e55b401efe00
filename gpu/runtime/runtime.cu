// The host side of a GPU run: the device, its buffers, the checked launch, the counted launch
// and the timed launches. Kernels live in the operation files; this file only finds them by
// name (KernelEntry tables) and runs their stages.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/kernels/common.cuh"
#include "gpu/runtime/generated_launch.cuh"
#include "gpu/runtime/l2_flush.cuh"
#include "gpu/runtime/profiler.h"
#include "gpu/runtime/reference_fill.h"

namespace toysim::gpu {

extern const KernelEntry kMatmulKernels[];
extern const int kMatmulKernelCount;
extern const KernelEntry kSoftmaxKernels[];
extern const int kSoftmaxKernelCount;
extern const KernelEntry kAttentionForwardKernels[];
extern const int kAttentionForwardKernelCount;
extern const KernelEntry kAttentionBackwardKernels[];
extern const int kAttentionBackwardKernelCount;
extern const KernelEntry kAttentionTensorCoreKernels[];
extern const int kAttentionTensorCoreKernelCount;
extern const KernelEntry kAttentionBackwardTensorCoreKernels[];
extern const int kAttentionBackwardTensorCoreKernelCount;
extern const KernelEntry kAttentionHopperKernels[];
extern const int kAttentionHopperKernelCount;
extern const KernelEntry kAttentionFp8Kernels[];
extern const int kAttentionFp8KernelCount;

namespace {

StageLauncher find_launcher(std::string_view name) {
    struct Table {
        const KernelEntry* entries;
        int count;
    };
    const Table tables[] = {{kMatmulKernels, kMatmulKernelCount},
                            {kSoftmaxKernels, kSoftmaxKernelCount},
                            {kAttentionForwardKernels, kAttentionForwardKernelCount},
                            {kAttentionBackwardKernels, kAttentionBackwardKernelCount},
                            {kAttentionTensorCoreKernels, kAttentionTensorCoreKernelCount},
                            {kAttentionBackwardTensorCoreKernels, kAttentionBackwardTensorCoreKernelCount},
                            {kAttentionHopperKernels, kAttentionHopperKernelCount},
                            {kAttentionFp8Kernels, kAttentionFp8KernelCount}};
    for (const auto& t : tables)
        for (int k = 0; k < t.count; ++k)
            if (name == t.entries[k].name) return t.entries[k].launch;
    throw GpuError("kernel '" + std::string(name) + "' is in the catalog but no kernel file defines it");
}

// A device buffer freed when it goes out of scope, so an exception part-way leaks nothing.
struct DeviceBuffer {
    void* ptr = nullptr;
    std::size_t bytes = 0;
    DeviceBuffer() = default;
    explicit DeviceBuffer(std::size_t n) : bytes(n) { cuda_check(cudaMalloc(&ptr, n == 0 ? 1 : n), "allocating device memory"); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept : ptr(o.ptr), bytes(o.bytes) { o.ptr = nullptr; }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        std::swap(ptr, o.ptr);
        std::swap(bytes, o.bytes);
        return *this;
    }
    ~DeviceBuffer() {
        if (ptr) cudaFree(ptr);
    }
};

struct Event {
    cudaEvent_t e = nullptr;
    Event() { cuda_check(cudaEventCreate(&e), "creating an event"); }
    Event(const Event&) = delete;
    Event(Event&& o) noexcept : e(o.e) { o.e = nullptr; }
    ~Event() {
        if (e) cudaEventDestroy(e);
    }
};

struct Stream {
    cudaStream_t s = nullptr;
    Stream() { cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating a stream"); }
    ~Stream() {
        if (s) cudaStreamDestroy(s);
    }
};

// Host values (doubles) to the storage type, and back; an e4m3 array is stored times its scale.
std::vector<unsigned char> encode(const std::vector<double>& values, DType t, bool poison, std::size_t elements, double scale) {
    std::vector<unsigned char> out(elements * static_cast<std::size_t>(dtype_bytes(t)));
    for (std::size_t i = 0; i < elements; ++i) {
        float v = poison ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(values[i]);
        switch (t) {
            case DType::F32: reinterpret_cast<float*>(out.data())[i] = v; break;
            case DType::F16: reinterpret_cast<__half*>(out.data())[i] = __float2half_rn(v); break;
            case DType::BF16: reinterpret_cast<__nv_bfloat16*>(out.data())[i] = __float2bfloat16_rn(v); break;
            case DType::E4M3: out[i] = __nv_cvt_float_to_fp8(static_cast<float>(poison ? v : values[i] * scale), __NV_SATFINITE, __NV_E4M3); break;
        }
    }
    return out;
}

void decode(const unsigned char* in, DType t, std::size_t elements, double* out, double scale) {
    for (std::size_t i = 0; i < elements; ++i) {
        switch (t) {
            case DType::F32: out[i] = reinterpret_cast<const float*>(in)[i]; break;
            case DType::F16: out[i] = __half2float(reinterpret_cast<const __half*>(in)[i]); break;
            case DType::BF16: out[i] = __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(in)[i]); break;
            case DType::E4M3: out[i] = double(__half2float(__half(__nv_cvt_fp8_to_halfraw(in[i], __NV_E4M3)))) / scale; break;
        }
    }
}

// No fmt in .cu files: nvcc 13 cannot compile fmt 9's compile-time format checks.
std::string gib(double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / double(1ull << 30));
    return text;
}

}  // namespace

bool built_with_cuda() { return true; }

void cuda_check(cudaError_t status, const char* what) {
    if (status != cudaSuccess) throw GpuError(std::string(what) + ": " + cudaGetErrorString(status) + " (" + cudaGetErrorName(status) + ")");
}

DeviceInfo query_device() {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0)
        throw GpuError(status == cudaSuccess ? "no CUDA device found"
                                             : std::string("no usable CUDA device: ") + cudaGetErrorString(status));
    DeviceInfo info;
    cudaDeviceProp prop{};
    cuda_check(cudaGetDeviceProperties(&prop, 0), "reading the device's properties");
    info.name = prop.name;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    info.sm_count = prop.multiProcessorCount;
    info.l2_bytes = prop.l2CacheSize;
    info.global_memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
    info.shared_memory_per_block = static_cast<std::int64_t>(prop.sharedMemPerBlockOptin);
    info.memory_bus_bits = prop.memoryBusWidth;
    // Clocks are attributes since CUDA 13 removed them from cudaDeviceProp; kHz.
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess) info.sm_clock_mhz = khz / 1000;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, 0) == cudaSuccess) info.memory_clock_mhz = khz / 1000;
    cudaGetLastError();  // an attribute this driver lacks is not an error of the run
    cudaDriverGetVersion(&info.driver_version);
    cudaRuntimeGetVersion(&info.runtime_version);
    return info;
}

void require_shared_memory(const void* kernel, long long bytes, const StageArgs& args, const char* kernel_name, const char* advice) {
    if (bytes > args.shared_memory_limit)
        throw GpuError(std::string(kernel_name) + " needs " + std::to_string(bytes) + " bytes of shared memory per block; this GPU allows " +
                       std::to_string(args.shared_memory_limit) + ": " + advice);
    if (!args.plan_only && bytes > 48 * 1024)
        cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
                   "asking for shared memory");
}

void check_launch(const char* kernel_name) {
    cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) throw GpuError(std::string("launching ") + kernel_name + ": " + cudaGetErrorString(status));
}

namespace {

// Each stage's hardware traffic, into result.stages[s].measured. Cold: a buffer twice the L2's
// size is written then read just before the launch, so that the L2 holds nothing of the
// launch's arrays and nothing dirty. Warm: the stage runs once, unmeasured, just before.
template <typename Restore>
void measure_stages(L2State l2, const DeviceInfo& device, cudaStream_t stream, int nstages, Restore& restore, const AnyStageLauncher& launcher,
                    const StageArgs& args, LaunchResult& result) {
    RangeProfiler profiler;
    DeviceBuffer flush;
    DeviceBuffer sink;
    if (profiler.available() && l2 == L2State::Cold) {
        const std::size_t flush_bytes = (2 * static_cast<std::size_t>(device.l2_bytes) + 15) / 16 * 16;
        flush = DeviceBuffer(flush_bytes);
        sink = DeviceBuffer(sizeof(unsigned));
    }
    for (int s = 0; s < nstages; ++s) {
        MeasuredTraffic& m = result.stages[static_cast<size_t>(s)].measured;
        if (!profiler.available()) {
            m = MeasuredTraffic{};
            m.why_not = profiler.why_not();
            m.l2 = l2;
            continue;
        }
        auto prepare = [&] {
            restore();
            if (l2 == L2State::Cold) {
                cuda_check(flush_l2(flush.ptr, flush.bytes, static_cast<unsigned*>(sink.ptr), device.sm_count, stream), "flushing the L2");
            } else {
                launcher(s, args);  // the warm-up launch: what it leaves in the L2 is what the measured one finds
                restore();
            }
        };
        m = profiler.measure(prepare, [&] { launcher(s, args); });
        m.l2 = l2;
    }
}

}  // namespace

std::vector<StagePlan> plan_launch(const LaunchPlan& plan, int shared_memory_limit) {
    if (!plan.kernel || plan.generated) throw GpuError("internal: plan_launch plans a catalog kernel's launch");
    const KernelSpec& spec = *plan.kernel;
    const StageLauncher launcher = find_launcher(spec.name);
    // The launchers return before touching an array or the device where plan_only is set.
    const std::vector<void*> pointers(spec.arrays.size(), nullptr);
    std::vector<StagePlan> stages(spec.stages.size());
    StageArgs args{pointers.data(), plan.params.data(), plan.heads, plan.dtype, nullptr, nullptr, shared_memory_limit, true};
    for (std::size_t s = 0; s < stages.size(); ++s) {
        args.plan = &stages[s];
        launcher(static_cast<int>(s), args);
    }
    return stages;
}

LaunchResult launch(const LaunchPlan& plan, std::vector<HostArray>& host) {
    const KernelSpec& spec = *plan.kernel;
    const std::size_t narrays = spec.arrays.size();
    if (host.size() != narrays) throw GpuError("internal: one host array per kernel array expected");
    DeviceInfo device = query_device();
    cuda_check(cudaSetDevice(0), "selecting the device");
    std::shared_ptr<GeneratedRunner> generated;
    AnyStageLauncher launcher;
    if (plan.generated) {
        generated = make_generated_runner(*plan.generated, *plan.generated_image, plan.heads, plan.generated_values);
        launcher = [runner = generated.get()](int s, const StageArgs& a) { run_generated_stage(*runner, s, a); };
    } else {
        launcher = find_launcher(spec.name);
    }

    // Device memory, refused up front when it does not fit: the arrays, a pristine copy of
    // every array that is restored before each timed launch, and the counters.
    std::size_t need = 0;
    std::vector<std::size_t> bytes(narrays);
    for (std::size_t k = 0; k < narrays; ++k) {
        bytes[k] = host[k].elements * static_cast<std::size_t>(dtype_bytes(spec.storage(static_cast<int>(k), plan.dtype)));
        need += bytes[k] * (host[k].restore ? 2 : 1);
    }
    std::size_t free_bytes = 0, total_bytes = 0;
    cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "reading free device memory");
    if (need > free_bytes)
        throw GpuError(std::string(spec.name) + " at these parameters needs " + gib(double(need)) + " of device memory; " +
                       gib(double(free_bytes)) + " of " + gib(double(total_bytes)) + " are free: lower n or --heads");

    Stream stream;
    std::vector<DeviceBuffer> buffers, pristine(narrays);
    std::vector<void*> pointers(narrays);
    for (std::size_t k = 0; k < narrays; ++k) {
        buffers.emplace_back(bytes[k]);
        pointers[k] = buffers[k].ptr;
    }
    DeviceBuffer counts(2 * narrays * sizeof(unsigned long long));

    std::vector<float> descale(narrays);
    for (std::size_t k = 0; k < narrays; ++k) descale[k] = static_cast<float>(1.0 / host[k].scale);
    StageArgs args{pointers.data(), plan.params.data(), plan.heads, plan.dtype, nullptr, stream.s,
                   static_cast<int>(device.shared_memory_per_block), true, descale.data()};
    const int nstages = static_cast<int>(spec.stages.size());
    for (int s = 0; s < nstages; ++s) launcher(s, args);  // plan only: refuse before any launch
    args.plan_only = false;

    auto upload_all = [&] {
        for (std::size_t k = 0; k < narrays; ++k) {
            DType t = spec.storage(static_cast<int>(k), plan.dtype);
            auto data = encode(host[k].values, t, !host[k].upload, host[k].elements, host[k].scale);
            cuda_check(cudaMemcpy(pointers[k], data.data(), bytes[k], cudaMemcpyHostToDevice), "uploading an array");
            if (host[k].restore) {
                pristine[k] = DeviceBuffer(bytes[k]);
                cuda_check(cudaMemcpy(pristine[k].ptr, pointers[k], bytes[k], cudaMemcpyDeviceToDevice), "copying an array");
            }
        }
    };
    auto restore = [&] {
        for (std::size_t k = 0; k < narrays; ++k)
            if (host[k].restore)
                cuda_check(cudaMemcpyAsync(pointers[k], pristine[k].ptr, bytes[k], cudaMemcpyDeviceToDevice, stream.s), "restoring an array");
    };
    auto run_stages = [&](const std::vector<cudaEvent_t>* marks) {
        for (int s = 0; s < nstages; ++s) {
            if (marks) cuda_check(cudaEventRecord((*marks)[static_cast<size_t>(s)], stream.s), "recording an event");
            launcher(s, args);
        }
        if (marks) cuda_check(cudaEventRecord((*marks)[static_cast<size_t>(nstages)], stream.s), "recording an event");
    };

    // 1. The checked launch: the timed variant, from freshly uploaded (or poisoned) arrays. Each
    // stage also says how many of its blocks an SM holds at once. Inputs filled on the device
    // are filled first, once: no launch writes an input.
    upload_all();
    std::vector<DType> types(narrays);
    for (std::size_t k = 0; k < narrays; ++k) types[k] = spec.storage(static_cast<int>(k), plan.dtype);
    for (std::size_t k = 0; k < narrays; ++k)
        if (host[k].device_fill.kind != HostArray::DeviceFill::Kind::None)
            fill_on_device(host[k].device_fill, pointers[k], types[k], pointers.data(), types.data(), plan.heads, stream.s);
    std::vector<int> residency(static_cast<size_t>(nstages), 0);
    for (int s = 0; s < nstages; ++s) {
        args.resident_blocks = &residency[static_cast<size_t>(s)];
        launcher(s, args);
    }
    args.resident_blocks = nullptr;
    cuda_check(cudaStreamSynchronize(stream.s), "running the kernel");
    if (generated) check_generated_fault(*generated);
    for (std::size_t k = 0; k < narrays; ++k) {
        if (!host[k].download) continue;
        DType t = spec.storage(static_cast<int>(k), plan.dtype);
        const std::size_t width = static_cast<std::size_t>(dtype_bytes(t));
        std::vector<unsigned char> staging;
        if (host[k].sample.empty()) {
            host[k].values.assign(host[k].elements, 0.0);
            staging.resize(bytes[k]);
            cuda_check(cudaMemcpy(staging.data(), pointers[k], bytes[k], cudaMemcpyDeviceToHost), "downloading an array");
            decode(staging.data(), t, host[k].elements, host[k].values.data(), host[k].scale);
        } else {
            std::size_t total = 0;
            for (const auto& span : host[k].sample) total += span.count;
            host[k].values.assign(total, 0.0);
            std::size_t at = 0;
            for (const auto& span : host[k].sample) {
                staging.resize(span.count * width);
                cuda_check(cudaMemcpy(staging.data(), static_cast<unsigned char*>(pointers[k]) + span.offset * width, span.count * width,
                                      cudaMemcpyDeviceToHost),
                           "downloading rows of an array");
                decode(staging.data(), t, span.count, host[k].values.data() + at, host[k].scale);
                at += span.count;
            }
        }
    }

    // 2. The counted launch: same arrays (restored), the counting variant.
    LaunchResult result;
    restore();
    cuda_check(cudaMemsetAsync(counts.ptr, 0, counts.bytes, stream.s), "clearing the counters");
    std::vector<std::vector<unsigned long long>> per_stage(static_cast<size_t>(nstages),
                                                           std::vector<unsigned long long>(2 * narrays));
    args.counts = static_cast<unsigned long long*>(counts.ptr);
    for (int s = 0; s < nstages; ++s) {
        cuda_check(cudaMemsetAsync(counts.ptr, 0, counts.bytes, stream.s), "clearing the counters");
        launcher(s, args);
        cuda_check(cudaMemcpyAsync(per_stage[static_cast<size_t>(s)].data(), counts.ptr, counts.bytes, cudaMemcpyDeviceToHost, stream.s),
                   "reading the counters");
        cuda_check(cudaStreamSynchronize(stream.s), "running the counting variant");
    }
    args.counts = nullptr;
    for (int s = 0; s < nstages; ++s) {
        StageResult stage;
        stage.name = spec.stages[static_cast<size_t>(s)];
        stage.resident_blocks_per_sm = residency[static_cast<size_t>(s)];
        for (std::size_t k = 0; k < narrays; ++k) {
            stage.reads.push_back(per_stage[static_cast<size_t>(s)][2 * k]);
            stage.writes.push_back(per_stage[static_cast<size_t>(s)][2 * k + 1]);
        }
        result.stages.push_back(std::move(stage));
    }

    // 3. Measured launches (CUPTI), when asked: each stage alone, from restored arrays and the
    // L2 state asked for. The profiler is gone before the timed launches, which run unprofiled.
    if (plan.measure != L2State::Off) measure_stages(plan.measure, device, stream.s, nstages, restore, launcher, args, result);

    // 4. Timed launches: warm-ups, then repeats, each from restored arrays (the restore is
    // outside the events), one event between stages.
    std::vector<Event> events(static_cast<size_t>(nstages) + 1);
    std::vector<cudaEvent_t> marks;
    for (auto& e : events) marks.push_back(e.e);
    for (int w = 0; w < plan.warmups; ++w) {
        restore();
        run_stages(nullptr);
    }
    for (int r = 0; r < plan.repeats; ++r) {
        restore();
        hold_stream<<<1, 1, 0, stream.s>>>(kHoldNanoseconds);
        cuda_check(cudaGetLastError(), "holding the stream");
        run_stages(&marks);
        cuda_check(cudaEventSynchronize(marks.back()), "timing the kernel");
        for (int s = 0; s < nstages; ++s) {
            float ms = 0;
            cuda_check(cudaEventElapsedTime(&ms, marks[static_cast<size_t>(s)], marks[static_cast<size_t>(s) + 1]), "reading an event");
            result.stages[static_cast<size_t>(s)].time.ms.push_back(ms);
        }
        float total = 0;
        cuda_check(cudaEventElapsedTime(&total, marks.front(), marks.back()), "reading an event");
        result.total.ms.push_back(total);
    }
    cuda_check(cudaStreamSynchronize(stream.s), "finishing");
    return result;
}

}  // namespace toysim::gpu
