// The device side as toysim sees it: built_with_cuda, query_device, launch and plan_stages, forwarded to the
// CUDA kernels' library (gpu/runtime/cuda_plugin.h), opened at the first call that needs it. In a build
// without a CUDA toolkit, or before the library is built, every GPU command says so and exits
// 2; the catalog, the code generator and the checks of programs against kernels work either way.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gpu/runtime/cuda_plugin.h"

namespace toysim::gpu {

namespace {

namespace fs = std::filesystem;

struct Plugin {
    ToysimCudaQueryFn query = nullptr;
    ToysimCudaLaunchFn launch = nullptr;
    ToysimCudaPlanFn plan = nullptr;
};

#ifdef TOYSIM_HAS_CUDA
// Where the library may be, in order: $TOYSIM_CUDA_LIBRARY; beside the binary this code is in
// (the build folder's toysim); where an installed toysim's package puts it, relative to the
// binary; the build folder this was configured in (its tests, the Python module).
std::vector<fs::path> plugin_candidates() {
    std::vector<fs::path> paths;
    if (const char* given = std::getenv("TOYSIM_CUDA_LIBRARY"); given && *given) return {fs::path(given)};
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&plugin_candidates), &self) && self.dli_fname) {
        std::error_code ec;
        fs::path binary = fs::canonical(fs::path(self.dli_fname), ec);
        if (ec) binary = fs::path(self.dli_fname);  // as the loader named it
        paths.push_back(binary.parent_path() / kCudaPluginFile);
        paths.push_back(binary.parent_path() / TOYSIM_INSTALLED_CUDA_LIBRARY);
    }
    paths.push_back(fs::path(TOYSIM_BUILD_DIR) / kCudaPluginFile);
    return paths;
}

template <class Fn>
Fn symbol(void* library, const char* name, const fs::path& path) {
    void* found = dlsym(library, name);
    if (!found) throw GpuError(fmt::format("{} has no {}: it is not toysim's CUDA library", path.string(), name));
    return reinterpret_cast<Fn>(found);
}

Plugin open_plugin() {
    const std::vector<fs::path> candidates = plugin_candidates();
    for (const fs::path& path : candidates) {
        std::error_code ec;
        if (!fs::is_regular_file(path, ec)) continue;
        // Loaded once for the process's life: the stage names it returns point into it.
        void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!library) throw GpuError(fmt::format("cannot load the CUDA kernels ({})", dlerror()));
        CudaPluginLayout theirs;
        symbol<ToysimCudaLayoutFn>(library, "toysim_cuda_layout", path)(&theirs);
        if (!(theirs == CudaPluginLayout{}))
            throw GpuError(fmt::format("{} is from another build of toysim: rebuild it (cmake --build {} --target toysim_cuda)", path.string(),
                                       TOYSIM_BUILD_DIR));
        return {symbol<ToysimCudaQueryFn>(library, "toysim_cuda_query_device", path), symbol<ToysimCudaLaunchFn>(library, "toysim_cuda_launch", path),
                symbol<ToysimCudaPlanFn>(library, "toysim_cuda_plan", path)};
    }
    throw GpuError(fmt::format("the CUDA kernels are not built yet: `cmake --build {} --target toysim_cuda` builds them (51 s on a 2-core "
                               "machine; the quick start's `--target toysim` leaves them out)",
                               TOYSIM_BUILD_DIR));
}

const Plugin& plugin() {
    // Opened once; a failure is said again at every call rather than cached half-open.
    static std::mutex lock;
    static Plugin opened;
    std::lock_guard<std::mutex> hold(lock);
    if (!opened.query) opened = open_plugin();
    return opened;
}

[[noreturn]] void rethrow(const CudaPluginError& e) {
    if (e.generated) throw GeneratedError(e.loc, e.message);
    throw GpuError(e.message);
}
#endif

}  // namespace

#ifdef TOYSIM_HAS_CUDA
bool built_with_cuda() { return true; }

DeviceInfo query_device() {
    DeviceInfo out;
    CudaPluginError error;
    if (!plugin().query(&out, &error)) rethrow(error);
    return out;
}

LaunchResult launch(const LaunchPlan& plan, std::vector<HostArray>& arrays) {
    LaunchResult out;
    CudaPluginError error;
    if (!plugin().launch(&plan, &arrays, &out, &error)) rethrow(error);
    return out;
}

std::optional<std::vector<StagePlan>> plan_stages(const LaunchPlan& plan, int shared_memory_limit) {
    const Plugin* opened = nullptr;
    try {
        opened = &plugin();
    } catch (const GpuError&) {
        return std::nullopt;  // the library is not built (or is another build's): nothing to read
    }
    std::vector<StagePlan> out;
    CudaPluginError error;
    if (!opened->plan(&plan, shared_memory_limit, &out, &error)) rethrow(error);
    return out;
}
#else
namespace {
[[noreturn]] void no_gpu_support() {
    throw GpuError("this build of toysim has no GPU support: rebuild with a CUDA toolkit (cmake -DTOYSIM_CUDA=ON, README \"On a real GPU\")");
}
}  // namespace

bool built_with_cuda() { return false; }
DeviceInfo query_device() { no_gpu_support(); }
LaunchResult launch(const LaunchPlan&, std::vector<HostArray>&) { no_gpu_support(); }
std::optional<std::vector<StagePlan>> plan_stages(const LaunchPlan&, int) { return std::nullopt; }
#endif

}  // namespace toysim::gpu
