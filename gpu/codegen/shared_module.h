// One compiled module for several parameter sets of a program (issue 38, part 3: a sweep over n
// compiles once).
//
// The generator writes parameters as numbers, so that tile shapes and loop bounds are constants
// the compiler unrolls by. Across a sweep over n, though, the modules it writes are the same
// text but for a few integers: the heads' strides, the grid's bound, the trip count of the loop
// over K/V tiles. Where every module of a group is that (the same tokens, in the same order, with
// only integer literals differing, and the same launch facts), the group shares one module: each
// literal that differs is read from `toy_param[k]`, a __constant__ array the host fills before
// each member's launches, and NVRTC compiles the module once. A literal that is the same in every
// member stays a number, so what the generator unrolls by stays unrolled.
//
// The shared text is exact: put a member's values back in place of the toy_param[k] and it is
// that member's own source (comments aside), token for token. Where a differing literal is one
// the compiler needs as a constant (a template argument, an array's size), NVRTC refuses the
// shared text and each member compiles its own (compile_shared says why).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpu/codegen/nvrtc.h"

namespace toysim::gpu {

struct GeneratedProgram;

// The name of the __constant__ array a shared module reads its run-time values from.
inline constexpr const char* kSharedParameterArray = "toy_param";

struct SharedModule {
    std::string program_path;   // its members' ("fa2.toy")
    std::string kernels;        // the members' kernels, each differing literal as ((T)toy_param[k]), comments dropped
    std::string unit;           // what NVRTC compiles: the prelude, toy_param's declaration (where run_time_values > 0), the kernels
    int members = 0;            // how many modules it serves
    int run_time_values = 0;    // the literals read from toy_param
    // Compiled once for each architecture a member runs on (compile_shared).
    mutable std::mutex mutex;
    mutable std::map<int, NvrtcCompiled> compiled;
    mutable std::map<int, std::string> refused;  // NVRTC refused the shared text for this arch: its first log line
};

// A member's share: the module, and its values of toy_param (one per run-time value).
struct ModuleShare {
    std::shared_ptr<const SharedModule> module;
    std::vector<std::int64_t> values;
};

// Groups `modules` (null entries are skipped) into modules that can share: per module, its share,
// or nullopt where no other module of the list has its text up to integer literals and its
// launch facts. Modules already the same text share too (with no run-time values).
std::vector<std::optional<ModuleShare>> share_modules(const std::vector<const GeneratedProgram*>& modules);

// The member's source with toy_param[k] put back as its values, comments dropped: what the
// test compares with the member's own source (comments dropped too).
std::string instantiate_shared(const SharedModule& module, const std::vector<std::int64_t>& values);
// A source with its comments dropped (each comment becomes one space; newlines stay).
std::string without_comments(const std::string& source);

// The shared module compiled for sm_<arch> as compile_generated compiles a module: the first call
// for an arch compiles (or reads the disk cache), the others reuse the image (*reused = true).
// Where NVRTC refuses the shared text, nullopt and *why says why (the member then compiles its own).
struct SharedCompile {
    NvrtcCompiled compiled;
    bool reused = false;
};
std::optional<SharedCompile> compile_shared(const SharedModule& module, int arch, std::string* why);

}  // namespace toysim::gpu
