// The exported face of libtoysim_cuda.so (gpu/runtime/cuda_plugin.h): the layout check, the device
// side's two calls and the launch plan, with every error caught and handed back as text.
#include "gpu/runtime/cuda_plugin.h"

#include <exception>

#define TOYSIM_CUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

template <class F>
bool guarded(toysim::gpu::CudaPluginError* error, F f) {
    try {
        f();
        return true;
    } catch (const toysim::gpu::GeneratedError& e) {
        *error = {e.what(), true, e.loc};
    } catch (const std::exception& e) {
        *error = {e.what(), false, {}};
    } catch (...) {
        *error = {"internal: the CUDA kernels' library threw an unknown exception", false, {}};
    }
    return false;
}

}  // namespace

TOYSIM_CUDA_EXPORT void toysim_cuda_layout(toysim::gpu::CudaPluginLayout* out) { *out = toysim::gpu::CudaPluginLayout{}; }

TOYSIM_CUDA_EXPORT bool toysim_cuda_query_device(toysim::gpu::DeviceInfo* out, toysim::gpu::CudaPluginError* error) {
    return guarded(error, [&] { *out = toysim::gpu::query_device(); });
}

TOYSIM_CUDA_EXPORT bool toysim_cuda_launch(const toysim::gpu::LaunchPlan* plan, std::vector<toysim::gpu::HostArray>* arrays,
                                           toysim::gpu::LaunchResult* out, toysim::gpu::CudaPluginError* error) {
    return guarded(error, [&] { *out = toysim::gpu::launch(*plan, *arrays); });
}

TOYSIM_CUDA_EXPORT bool toysim_cuda_plan(const toysim::gpu::LaunchPlan* plan, int shared_memory_limit, std::vector<toysim::gpu::StagePlan>* out,
                                         toysim::gpu::CudaPluginError* error) {
    return guarded(error, [&] { *out = toysim::gpu::plan_launch(*plan, shared_memory_limit); });
}
