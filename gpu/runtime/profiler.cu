// The CUPTI Range Profiler behind RangeProfiler (profiler.h). The API sequence, after the
// CUPTI sample extras/CUPTI/samples/range_profiling and the headers' documentation:
//
//   once:  cuptiProfilerInitialize, cuptiProfilerDeviceSupported, cuptiDeviceGetChipName,
//          cuptiProfilerGetCounterAvailability (before any session is active),
//          cuptiProfilerHostInitialize + ConfigAddMetrics + GetConfigImage(Size) + GetNumOfPasses
//          (the config image: which counters, scheduled in how many passes),
//          cuptiRangeProfilerEnable on the current context.
//   first: one throwaway measurement of an empty kernel, which also picks the mode (Impl::measure
//          says why: CUPTI's first range finds about 20 MB of dirty lines in the L2);
//   each measurement: a fresh counter data image (GetCounterDataSize, CounterDataImageInitialize),
//          cuptiRangeProfilerSetConfig (auto range: one range per kernel; user replay: we
//          repeat the launch, after the caller's preparation, for as many passes as the metrics
//          need), then per pass Start, the launch, synchronize, Stop (until it says every pass
//          was submitted); DecodeData, GetCounterDataInfo, and
//          cuptiProfilerHostEvaluateToGpuValues for every range.
//          Not kernel replay: CUPTI saves and restores device memory between its passes, which
//          changes what the L2 holds. The five metrics take 2 passes on an H100; with kernel
//          replay, FA2 (n=4096, d=64, 16 heads, fp16, cold L2) read 16.2 MB from DRAM, less than
//          its inputs (25.2 MB); with user replay, 25.3 MB.
//
// TOYSIM_CUPTI_MODE=auto-user|user-user|auto-kernel forces a range/replay mode,
// TOYSIM_CUPTI_DEBUG=1 prints passes and per-range values to stderr, and
// TOYSIM_CUPTI_EXTRA=metric,metric,... adds metrics printed with them (experiments only).
//   at the end: cuptiRangeProfilerDisable, cuptiProfilerHostDeinitialize, cuptiProfilerDeInitialize.
//
// libcupti is opened with dlopen, so the binary does not need it to start. No fmt here (nvcc 13
// cannot compile fmt 9): messages are built with std::string.
#include "gpu/runtime/profiler.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(TOYSIM_HAS_CUPTI)
#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>
#include <dlfcn.h>
#endif

namespace toysim::gpu {

#if !defined(TOYSIM_HAS_CUPTI)

struct RangeProfiler::Impl {
    std::string why_not = "this build has no CUPTI (the CUDA toolkit it was built with had no CUPTI headers)";
};

RangeProfiler::RangeProfiler() : impl_(std::make_unique<Impl>()) {}
RangeProfiler::~RangeProfiler() = default;
bool RangeProfiler::available() const { return false; }
const std::string& RangeProfiler::why_not() const { return impl_->why_not; }
MeasuredTraffic RangeProfiler::measure(const std::function<void()>&, const std::function<void()>&) {
    MeasuredTraffic m;
    m.why_not = impl_->why_not;
    return m;
}

#else

namespace {

// The metrics, in MeasuredTraffic's order.
const char* const kMetrics[] = {
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "lts__t_sector_hit_rate.pct",
};
constexpr std::size_t kMetricCount = sizeof kMetrics / sizeof kMetrics[0];

// kMetrics, then TOYSIM_CUPTI_EXTRA's (experiments: printed with TOYSIM_CUPTI_DEBUG, not kept).
std::vector<std::string> metric_names() {
    std::vector<std::string> names(kMetrics, kMetrics + kMetricCount);
    if (const char* extra = std::getenv("TOYSIM_CUPTI_EXTRA")) {
        std::string list = extra;
        for (std::size_t at = 0; at <= list.size();) {
            std::size_t comma = list.find(',', at);
            if (comma == std::string::npos) comma = list.size();
            if (comma > at) names.push_back(list.substr(at, comma - at));
            at = comma + 1;
        }
    }
    return names;
}
constexpr std::size_t kMaxRanges = 16;  // kernels one measurement may hold

// The throwaway first measurement's kernel (RangeProfiler::Impl::measure says why).
__global__ void first_range() {}

// The CUPTI entry points, resolved from the library at run time.
#define TOYSIM_CUPTI_FUNCTIONS(X)                  \
    X(cuptiGetResultString)                        \
    X(cuptiProfilerInitialize)                     \
    X(cuptiProfilerDeInitialize)                   \
    X(cuptiProfilerDeviceSupported)                \
    X(cuptiDeviceGetChipName)                      \
    X(cuptiProfilerGetCounterAvailability)         \
    X(cuptiProfilerHostInitialize)                 \
    X(cuptiProfilerHostDeinitialize)               \
    X(cuptiProfilerHostConfigAddMetrics)           \
    X(cuptiProfilerHostGetConfigImageSize)         \
    X(cuptiProfilerHostGetConfigImage)             \
    X(cuptiProfilerHostGetNumOfPasses)             \
    X(cuptiProfilerHostEvaluateToGpuValues)        \
    X(cuptiRangeProfilerEnable)                    \
    X(cuptiRangeProfilerDisable)                   \
    X(cuptiRangeProfilerGetCounterDataSize)        \
    X(cuptiRangeProfilerCounterDataImageInitialize) \
    X(cuptiRangeProfilerSetConfig)                 \
    X(cuptiRangeProfilerStart)                     \
    X(cuptiRangeProfilerStop)                      \
    X(cuptiRangeProfilerPushRange)                 \
    X(cuptiRangeProfilerPopRange)                  \
    X(cuptiRangeProfilerDecodeData)                \
    X(cuptiRangeProfilerGetCounterDataInfo)

struct Cupti {
#define TOYSIM_CUPTI_POINTER(name) decltype(&::name) name = nullptr;
    TOYSIM_CUPTI_FUNCTIONS(TOYSIM_CUPTI_POINTER)
#undef TOYSIM_CUPTI_POINTER
};

// Thrown inside Impl, caught before it leaves the profiler: becomes why_not.
struct Unavailable {
    std::string why;
};

}  // namespace

struct RangeProfiler::Impl {
    void* library = nullptr;
    Cupti api;
    bool profiler_initialized = false;
    CUpti_Profiler_Host_Object* host = nullptr;
    CUpti_RangeProfiler_Object* object = nullptr;
    std::vector<std::uint8_t> config;
    std::vector<std::string> metric_names_;  // metric_names(), read once in start()
    std::vector<const char*> metrics;        // their C strings, as CUPTI takes them
    std::size_t passes = 0;
    std::string why_not;

    std::string error_text(CUptiResult status) const {
        const char* text = nullptr;
        if (api.cuptiGetResultString) api.cuptiGetResultString(status, &text);
        std::string out = text ? text : "CUPTI error " + std::to_string(static_cast<int>(status));
        if (status == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
            out = "no permission to read the GPU's performance counters (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES): run as root, "
                  "or load the driver with NVreg_RestrictProfilingToAdminUsers=0";
        return out;
    }
    void check(CUptiResult status, const char* what) const {
        if (status != CUPTI_SUCCESS) {
            if (status == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) throw Unavailable{error_text(status)};
            throw Unavailable{std::string("CUPTI ") + what + ": " + error_text(status)};
        }
    }

    void load() {
        std::vector<std::string> names = {"libcupti.so.13", "libcupti.so"};
#if defined(TOYSIM_CUPTI_LIBRARY_DIR)
        names.push_back(std::string(TOYSIM_CUPTI_LIBRARY_DIR) + "/libcupti.so.13");
        names.push_back(std::string(TOYSIM_CUPTI_LIBRARY_DIR) + "/libcupti.so");
#endif
        names.push_back("/usr/local/cuda/lib64/libcupti.so.13");
        names.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
        std::string first_error;
        for (const auto& name : names) {
            library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (library) break;
            if (first_error.empty()) {
                const char* e = dlerror();
                first_error = e ? e : name;
            }
        }
        if (!library) throw Unavailable{"cannot load CUPTI (" + first_error + "): add the CUDA toolkit's lib64 to LD_LIBRARY_PATH"};
#define TOYSIM_CUPTI_RESOLVE(name)                                                                    \
    api.name = reinterpret_cast<decltype(api.name)>(dlsym(library, #name));                           \
    if (!api.name) throw Unavailable{"the CUPTI library found has no " #name " (CUPTI older than CUDA 13?)"};
        TOYSIM_CUPTI_FUNCTIONS(TOYSIM_CUPTI_RESOLVE)
#undef TOYSIM_CUPTI_RESOLVE
    }

    static CUcontext current_context() {
        using GetCurrent = CUresult (*)(CUcontext*);
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found{};
        if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
            found != cudaDriverEntryPointSuccess || !fn) {
            cudaGetLastError();
            throw Unavailable{"cannot reach the CUDA driver's cuCtxGetCurrent"};
        }
        cudaFree(nullptr);  // the runtime makes the device's primary context current
        CUcontext ctx = nullptr;
        if (reinterpret_cast<GetCurrent>(fn)(&ctx) != CUDA_SUCCESS || !ctx) throw Unavailable{"no current CUDA context to profile"};
        return ctx;
    }

    void start() {
        load();
        int device = 0;
        if (cudaGetDevice(&device) != cudaSuccess) {
            cudaGetLastError();
            throw Unavailable{"no current CUDA device"};
        }
        CUcontext ctx = current_context();

        CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
        check(api.cuptiProfilerInitialize(&init), "initializing the profiler");
        profiler_initialized = true;

        CUpti_Profiler_DeviceSupported_Params supported{CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE};
        supported.cuDevice = device;
        supported.api = CUPTI_PROFILER_RANGE_PROFILING;
        check(api.cuptiProfilerDeviceSupported(&supported), "asking whether the device can be profiled");
        if (supported.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
            std::string why = "this GPU cannot be profiled by CUPTI";
            if (supported.architecture != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) why += ": its architecture is not supported";
            else if (supported.vGpu != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) why += ": a vGPU without profiling enabled";
            else if (supported.confidentialCompute != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) why += ": confidential computing is on";
            else if (supported.sli != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) why += ": SLI is on";
            else if (supported.cmp != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) why += ": a mining processor (CMP)";
            else if (supported.wsl != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) why += ": WSL";
            throw Unavailable{why};
        }

        CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
        chip.deviceIndex = static_cast<std::size_t>(device);
        check(api.cuptiDeviceGetChipName(&chip), "reading the chip's name");

        CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
        avail.ctx = ctx;
        check(api.cuptiProfilerGetCounterAvailability(&avail), "sizing the counter availability image");
        std::vector<std::uint8_t> availability(avail.counterAvailabilityImageSize);
        avail.pCounterAvailabilityImage = availability.data();
        check(api.cuptiProfilerGetCounterAvailability(&avail), "reading the counter availability image");

        CUpti_Profiler_Host_Initialize_Params host_init{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
        host_init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
        host_init.pChipName = chip.pChipName;
        host_init.pCounterAvailabilityImage = availability.data();
        check(api.cuptiProfilerHostInitialize(&host_init), "initializing the host side");
        host = host_init.pHostObject;

        metric_names_ = metric_names();
        for (const std::string& name : metric_names_) metrics.push_back(name.c_str());
        CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
        add.pHostObject = host;
        add.ppMetricNames = metrics.data();
        add.numMetrics = metrics.size();
        check(api.cuptiProfilerHostConfigAddMetrics(&add), (std::string("adding the metrics on chip ") + chip.pChipName).c_str());

        CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
        size.pHostObject = host;
        check(api.cuptiProfilerHostGetConfigImageSize(&size), "sizing the config image");
        config.resize(size.configImageSize);
        CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
        image.pHostObject = host;
        image.configImageSize = config.size();
        image.pConfigImage = config.data();
        check(api.cuptiProfilerHostGetConfigImage(&image), "building the config image");
        CUpti_Profiler_Host_GetNumOfPasses_Params npasses{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
        npasses.configImageSize = config.size();
        npasses.pConfigImage = config.data();
        check(api.cuptiProfilerHostGetNumOfPasses(&npasses), "counting the passes");
        passes = npasses.numOfPasses;

        CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
        enable.ctx = ctx;
        check(api.cuptiRangeProfilerEnable(&enable), "enabling the range profiler");
        object = enable.pRangeProfilerObject;
    }

    void stop() noexcept {
        if (object) {
            CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
            disable.pRangeProfilerObject = object;
            api.cuptiRangeProfilerDisable(&disable);
            object = nullptr;
        }
        if (host) {
            CUpti_Profiler_Host_Deinitialize_Params deinit{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
            deinit.pHostObject = host;
            api.cuptiProfilerHostDeinitialize(&deinit);
            host = nullptr;
        }
        if (profiler_initialized) {
            CUpti_Profiler_DeInitialize_Params deinit{CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
            api.cuptiProfilerDeInitialize(&deinit);
            profiler_initialized = false;
        }
        // The library stays loaded: CUPTI may have left callbacks in the driver.
    }

    // Range and replay modes, the first tried first. TOYSIM_CUPTI_MODE (auto-user, user-user,
    // auto-kernel) picks one, for experiments.
    struct Mode {
        const char* name;
        CUpti_ProfilerRange range;
        CUpti_ProfilerReplayMode replay;
    };
    static constexpr Mode kModes[] = {{"auto-user", CUPTI_AutoRange, CUPTI_UserReplay},
                                      {"user-user", CUPTI_UserRange, CUPTI_UserReplay},
                                      {"auto-kernel", CUPTI_AutoRange, CUPTI_KernelReplay}};
    int mode = -1;  // the one that worked, once one has
    bool debug = false;

    // The first measurement of a process finds about 20 MB of dirty lines in the L2 that no
    // preparation can evict: they appear after it, when CUPTI first starts a range, and the
    // measured launch writes them back (measured on the H100: a read at the start of the first
    // range wrote 20.4 MB to DRAM whatever the program, and the launch after it only its own;
    // in later measurements, nothing). So the first measurement is a throwaway of an empty
    // kernel, which also picks the mode; the caller's preparation then evicts those lines.
    MeasuredTraffic measure(const std::function<void()>& prepare, const std::function<void()>& enqueue) {
        if (mode < 0) choose_mode();
        return measure_with(kModes[mode], prepare, enqueue);
    }

    void choose_mode() {
        const char* want = std::getenv("TOYSIM_CUPTI_MODE");
        debug = std::getenv("TOYSIM_CUPTI_DEBUG") != nullptr;
        std::vector<int> order = {0, 1};  // kernel replay only when asked for
        if (want)
            for (int j = 0; j < 3; ++j)
                if (std::string(want) == kModes[j].name) order = {j};
        std::string first_error;
        for (int chosen : order) {
            try {
                measure_with(kModes[chosen], [] {}, [] { first_range<<<1, 32>>>(); });
                mode = chosen;
                return;
            } catch (const Unavailable& u) {
                if (debug) std::fprintf(stderr, "cupti: mode %s failed: %s\n", kModes[chosen].name, u.why.c_str());
                if (first_error.empty()) first_error = u.why;
            }
        }
        throw Unavailable{first_error};
    }

    MeasuredTraffic measure_with(const Mode& how, const std::function<void()>& prepare, const std::function<void()>& enqueue) {
        CUpti_RangeProfiler_GetCounterDataSize_Params size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
        size.pRangeProfilerObject = object;
        size.pMetricNames = metrics.data();
        size.numMetrics = metrics.size();
        size.maxNumOfRanges = kMaxRanges;
        size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(kMaxRanges);
        check(api.cuptiRangeProfilerGetCounterDataSize(&size), "sizing the counter data image");
        std::vector<std::uint8_t> data(size.counterDataSize);
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
        init.pRangeProfilerObject = object;
        init.counterDataSize = data.size();
        init.pCounterData = data.data();
        check(api.cuptiRangeProfilerCounterDataImageInitialize(&init), "initializing the counter data image");

        CUpti_RangeProfiler_SetConfig_Params set{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
        set.pRangeProfilerObject = object;
        set.configSize = config.size();
        set.pConfig = config.data();
        set.counterDataImageSize = data.size();
        set.pCounterDataImage = data.data();
        set.range = how.range;
        set.replayMode = how.replay;
        set.maxRangesPerPass = kMaxRanges;
        set.numNestingLevels = 1;
        set.minNestingLevel = 1;
        set.passIndex = 0;
        set.targetNestingLevel = 1;
        check(api.cuptiRangeProfilerSetConfig(&set), "configuring the range profiler");

        const bool user_range = how.range == CUPTI_UserRange;
        std::size_t pass = 0;
        for (bool all_submitted = false; !all_submitted; ++pass) {
            if (pass >= 16) throw Unavailable{"CUPTI wanted more than 16 passes for the metrics"};
            prepare();
            cudaError_t ready = cudaDeviceSynchronize();
            if (ready != cudaSuccess) throw GpuError(std::string("preparing a measured launch: ") + cudaGetErrorString(ready));
            CUpti_RangeProfiler_Start_Params start_params{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
            start_params.pRangeProfilerObject = object;
            check(api.cuptiRangeProfilerStart(&start_params), "starting the range profiler");
            CUpti_RangeProfiler_Stop_Params stop_params{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
            stop_params.pRangeProfilerObject = object;
            CUpti_RangeProfiler_PushRange_Params push{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
            push.pRangeProfilerObject = object;
            push.pRangeName = "stage";
            CUpti_RangeProfiler_PopRange_Params pop{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
            pop.pRangeProfilerObject = object;
            bool pushed = false;
            try {
                if (user_range) {
                    check(api.cuptiRangeProfilerPushRange(&push), "opening the range");
                    pushed = true;
                }
                enqueue();
                cudaError_t status = cudaDeviceSynchronize();
                if (status != cudaSuccess) throw GpuError(std::string("running a measured launch: ") + cudaGetErrorString(status));
            } catch (...) {
                if (pushed) api.cuptiRangeProfilerPopRange(&pop);
                api.cuptiRangeProfilerStop(&stop_params);
                throw;
            }
            if (pushed) check(api.cuptiRangeProfilerPopRange(&pop), "closing the range");
            check(api.cuptiRangeProfilerStop(&stop_params), "stopping the range profiler");
            all_submitted = stop_params.isAllPassSubmitted != 0;
        }
        if (debug) std::fprintf(stderr, "cupti: mode %s, %zu pass(es) run, config says %zu\n", how.name, pass, passes);

        CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
        decode.pRangeProfilerObject = object;
        check(api.cuptiRangeProfilerDecodeData(&decode), "decoding the counters");
        if (decode.numOfRangeDropped > 0) throw Unavailable{"CUPTI dropped " + std::to_string(decode.numOfRangeDropped) + " of the ranges"};

        CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
        info.pCounterDataImage = data.data();
        info.counterDataImageSize = data.size();
        check(api.cuptiRangeProfilerGetCounterDataInfo(&info), "counting the ranges");
        if (info.numTotalRanges == 0) throw Unavailable{"CUPTI recorded no kernel in the measured launch"};

        // One range per kernel; a stage is one kernel, but should it hold more, the counts add
        // up and the hit rate is weighted by each kernel's L2 sectors.
        MeasuredTraffic m;
        double hits = 0, sectors = 0;
        for (std::size_t r = 0; r < info.numTotalRanges; ++r) {
            std::vector<double> values(metrics.size());
            CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
            eval.pHostObject = host;
            eval.pCounterDataImage = data.data();
            eval.counterDataImageSize = data.size();
            eval.rangeIndex = r;
            eval.ppMetricNames = metrics.data();
            eval.numMetrics = metrics.size();
            eval.pMetricValues = values.data();
            check(api.cuptiProfilerHostEvaluateToGpuValues(&eval), "evaluating the metrics");
            if (debug)
                std::fprintf(stderr, "cupti: range %zu of %zu: dram read %.0f write %.0f, l2 read %.0f write %.0f sectors, hit %.2f%%\n", r,
                             info.numTotalRanges, values[0], values[1], values[2], values[3], values[4]);
            if (debug)
                for (std::size_t i = kMetricCount; i < metrics.size(); ++i) std::fprintf(stderr, "cupti:   %s = %.0f\n", metrics[i], values[i]);
            m.dram_read_bytes += values[0];
            m.dram_write_bytes += values[1];
            m.l2_read_sectors += values[2];
            m.l2_write_sectors += values[3];
            const double range_sectors = values[2] + values[3];
            hits += values[4] * range_sectors;
            sectors += range_sectors;
            if (info.numTotalRanges == 1) m.l2_hit_rate = values[4];
        }
        if (info.numTotalRanges > 1) m.l2_hit_rate = sectors > 0 ? hits / sectors : 0;
        m.available = true;
        return m;
    }
};

RangeProfiler::RangeProfiler() : impl_(std::make_unique<Impl>()) {
    try {
        impl_->start();
    } catch (const Unavailable& u) {
        impl_->why_not = u.why;
        impl_->stop();
    } catch (const std::exception& e) {
        impl_->why_not = std::string("CUPTI could not start: ") + e.what();
        impl_->stop();
    }
}

RangeProfiler::~RangeProfiler() { impl_->stop(); }

bool RangeProfiler::available() const { return impl_->why_not.empty() && impl_->object; }

const std::string& RangeProfiler::why_not() const { return impl_->why_not; }

MeasuredTraffic RangeProfiler::measure(const std::function<void()>& prepare, const std::function<void()>& enqueue) {
    MeasuredTraffic m;
    if (!available()) {
        m.why_not = impl_->why_not;
        return m;
    }
    try {
        return impl_->measure(prepare, enqueue);
    } catch (const Unavailable& u) {
        m.why_not = u.why;
    }
    return m;
}

#endif

}  // namespace toysim::gpu
