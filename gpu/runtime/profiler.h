// Hardware memory traffic of one launch, read in-process with the CUPTI Range Profiler
// (CUDA 13): DRAM bytes read and written, L2 sectors the SMs read and wrote, the L2 hit rate.
//
// CUPTI is loaded at run time (dlopen), not linked: a machine without libcupti, without the
// permission to read performance counters (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), or with a
// GPU the profiler does not know still runs everything else; the measurement then says why
// not, in one line, and never reports zeros as measured. A build without the CUPTI headers
// compiles this to a profiler that is never available.
//
// Only runtime.cu uses this; it includes no CUDA or CUPTI header.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "gpu/kernels/kernels.h"

namespace toysim::gpu {

class RangeProfiler {
public:
    // Loads CUPTI, checks the device (0, the current one), builds the configuration for the
    // five metrics and enables range profiling on the current context. Never throws: a failure
    // leaves available() false and why_not() saying why.
    RangeProfiler();
    ~RangeProfiler();  // disables range profiling: later launches run unprofiled
    RangeProfiler(const RangeProfiler&) = delete;
    RangeProfiler& operator=(const RangeProfiler&) = delete;

    bool available() const;
    const std::string& why_not() const;

    // Measures the kernels that `enqueue` launches on the current context, one range per kernel
    // (memsets and allocations are not kernels and are not measured), and waits for them.
    // `prepare` runs before every pass, outside the measurement: it sets up the arrays and the
    // L2 state, and the profiler waits for it before it starts counting. Should the metrics
    // need more than one pass, the launch is repeated (prepare, then enqueue) until every pass
    // has run, so each pass starts from the same state. Returns available = false with the
    // reason on any CUPTI failure; an exception thrown by `prepare` or `enqueue` (a failed
    // launch) is passed on after the profiler is stopped. `l2` is left for the caller to set.
    MeasuredTraffic measure(const std::function<void()>& prepare, const std::function<void()>& enqueue);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace toysim::gpu
