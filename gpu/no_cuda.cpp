// The device side of a build without CUDA (TOYSIM_CUDA=OFF, or no toolkit found): every GPU
// command says so and exits 2. The catalog and the checks of programs against it still work.
#include "gpu/kernels.h"

namespace toysim::gpu {

namespace {
[[noreturn]] void no_gpu_support() {
    throw GpuError("this build of toysim has no GPU support: rebuild with a CUDA toolkit (cmake -DTOYSIM_CUDA=ON, README \"On a real GPU\")");
}
}  // namespace

bool built_with_cuda() { return false; }
DeviceInfo query_device() { no_gpu_support(); }
LaunchResult launch(const LaunchPlan&, std::vector<HostArray>&) { no_gpu_support(); }

}  // namespace toysim::gpu
