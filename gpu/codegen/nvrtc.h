// Run-time compilation of CUDA C++ to a cubin with NVRTC, the CUDA Toolkit's compiler library.
// Plain C++, no CUDA headers: libnvrtc is opened with dlopen when first needed (as profiler.cu
// opens CUPTI), so toysim starts, and this file builds, on a machine without it.
//
// Compiled images are kept on disk, in $XDG_CACHE_HOME/toysim (else $HOME/.cache/toysim), one
// file per source, options, architecture and NVRTC version; TOYSIM_NO_CACHE=1 turns that off.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpu/kernels/kernels.h"

namespace toysim::gpu {

struct NvrtcCompiled {
    std::string image;        // the cubin bytes (binary)
    std::string log;          // NVRTC's program log (may be empty)
    bool from_cache = false;  // the image came from the disk cache
    std::string cache_file;   // where it is (or would be) cached; empty when caching is off
    std::string target;       // what it was compiled for: "sm_90a"
};

// Compilation failed: what() is "NVRTC could not compile <name>:" and, on the next lines, the
// log (or, where the log is empty, NVRTC's error after the colon: "NVRTC_ERROR_INVALID_OPTION");
// `log` is the raw log.
struct NvrtcCompileError : GpuError {
    std::string log;
    NvrtcCompileError(const std::string& name, std::string log, const std::string& reason = {});
};

// Whether the environment variable `name` is set, to anything but "" and "0" (TOYSIM_NO_CACHE,
// TOYSIM_NO_WGMMA).
bool env_flag(const char* name);

// Whether libnvrtc can be opened (and has every function used here); when not, *why says why
// in one line, naming the paths tried.
bool nvrtc_available(std::string* why = nullptr);

// "13.0", or "" when NVRTC is unavailable.
std::string nvrtc_version();

// Compiles CUDA C++ `source` (called `name` in the log: "fa2.cu") to a cubin for sm_<arch>
// (arch = 90 for sm_90; arch_specific: sm_90a, whose features such as wgmma run only on that
// compute capability), with the caller's extra options ("-std=c++17", "-lineinfo").
// Throws GpuError when NVRTC is missing or fails outside compilation, NvrtcCompileError when
// the source does not compile. Reads the image from the disk cache when it is there; a cache
// that cannot be read or written is ignored.
NvrtcCompiled nvrtc_compile(const std::string& source, const std::string& name, int arch,
                            const std::vector<std::string>& options, bool arch_specific = false);

// What ptxas gave kernel `function`, read from the cubin's .nv.info section (what cuobjdump
// --dump-resource-usage prints): a thread's registers (EIATTR_REGCOUNT) and its stack frame in
// local memory (EIATTR_FRAME_SIZE: registers spilled, arrays it could not keep in registers).
// nullopt where the image has no register count for the function.
struct CubinResources {
    int registers = 0;
    int frame_bytes = 0;
};
std::optional<CubinResources> cubin_resources(const std::string& image, const std::string& function);

}  // namespace toysim::gpu
