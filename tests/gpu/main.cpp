// The GPU tests' runner: with no usable GPU (or a build without CUDA) it says so and exits 77,
// which ctest reports as "skipped" (SKIP_RETURN_CODE), never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>

#include "gpu/kernels/kernels.h"

int main(int argc, char* argv[]) {
    try {
        toysim::gpu::DeviceInfo d = toysim::gpu::query_device();
        std::cout << "GPU: " << d.name << " (compute " << d.compute_major << "." << d.compute_minor << ", " << d.sm_count << " SMs)\n";
    } catch (const toysim::gpu::GpuError& e) {
        std::cout << "skipped: " << e.what() << "\n";
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
