// The CUDA kernels as a library of their own, libtoysim_cuda.so, which toysim opens at its
// first GPU command (gpu/runtime/device_loader.cpp) rather than links.
//
// Why: the kernels are most of nvcc's work and half of a build's time on a small machine. The
// simulator, the course and the code generator need none of them, so `toysim` builds without
// waiting for nvcc and finds the kernels when they are built (the target toysim_cuda, part of
// a whole build, installed beside the package's binary).
//
// The library exports the four functions below with C names; everything else in it is hidden,
// so its query_device and launch (gpu/runtime/runtime.cu) never meet the loader's of the same names.
// Both sides are built from the same headers by the same compiler; a library left over from
// another build is refused by its layout (the sizes of what crosses between them) before any
// of it is called. Errors cross as values (CudaPluginError): the loader throws them again on
// its own side, so no exception's type has to match across the two.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpu/codegen/codegen.h"
#include "gpu/kernels/kernels.h"

namespace toysim::gpu {

inline constexpr const char* kCudaPluginFile = "libtoysim_cuda.so";

// A GpuError, or a GeneratedError (a generated kernel's fault, located at its instruction).
struct CudaPluginError {
    std::string message;
    bool generated = false;
    Loc loc;
};

// Changed whenever a type that crosses changes meaning without changing size.
inline constexpr int kCudaPluginVersion = 4;

struct CudaPluginLayout {
    int version = kCudaPluginVersion;
    std::size_t device_info = sizeof(DeviceInfo), launch_plan = sizeof(LaunchPlan), host_array = sizeof(HostArray),
                launch_result = sizeof(LaunchResult), stage_result = sizeof(StageResult), measured = sizeof(MeasuredTraffic),
                kernel_spec = sizeof(KernelSpec), stage_plan = sizeof(StagePlan), generated = sizeof(GeneratedProgram), error = sizeof(CudaPluginError),
                string = sizeof(std::string), vector = sizeof(std::vector<double>);
    bool operator==(const CudaPluginLayout&) const = default;
};

}  // namespace toysim::gpu

extern "C" {
// The layout the library was built with, into *out.
using ToysimCudaLayoutFn = void (*)(toysim::gpu::CudaPluginLayout* out);
// query_device: true and *out, or false and *error.
using ToysimCudaQueryFn = bool (*)(toysim::gpu::DeviceInfo* out, toysim::gpu::CudaPluginError* error);
// launch: true and *out (arrays downloaded into), or false and *error.
using ToysimCudaLaunchFn = bool (*)(const toysim::gpu::LaunchPlan* plan, std::vector<toysim::gpu::HostArray>* arrays,
                                    toysim::gpu::LaunchResult* out, toysim::gpu::CudaPluginError* error);
// plan_launch (no device): true and *out, or false and *error.
using ToysimCudaPlanFn = bool (*)(const toysim::gpu::LaunchPlan* plan, int shared_memory_limit, std::vector<toysim::gpu::StagePlan>* out,
                                  toysim::gpu::CudaPluginError* error);
}
