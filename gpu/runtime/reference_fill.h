// An input filled on the device from arrays already there (gpu/runtime/reference_fill.cu).
#pragma once

#include <cuda_runtime.h>

#include "gpu/kernels/kernels.h"

namespace toysim::gpu {

// `out` (each head's after the last, as `types`' storage) from `arrays` (device pointers by
// kernel array index) for `heads` heads, on `stream`.
void fill_on_device(const HostArray::DeviceFill& fill, void* out, DType tout, const void* const* arrays, const DType* types, long long heads,
                    cudaStream_t stream);

}  // namespace toysim::gpu
