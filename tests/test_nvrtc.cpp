// gpu/codegen/nvrtc.h: CUDA C++ compiled at run time to a cubin with NVRTC, and the disk cache of the
// images. NVRTC needs no GPU, only the toolkit's libnvrtc; without it every test here is skipped.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <unistd.h>

#include "gpu/codegen/nvrtc.h"
#include "tests/support.h"

using namespace toysim;
using toysim::testing::ScopedEnv;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system's temporary directory, removed with what is in it.
struct TempDir {
    fs::path path;
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "toysim-nvrtc-XXXXXX").string();
        if (!mkdtemp(pattern.data())) FAIL("mkdtemp failed for " << pattern);
        path = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

constexpr const char* kHalfKernel = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void scale(const __half* x, __nv_bfloat16* y, float s, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(__half2float(x[i]) * s);
}
)";

bool is_elf(const std::string& image) { return image.size() > 4 && image.compare(0, 4, "\x7f" "ELF") == 0; }

}  // namespace

TEST_CASE("nvrtc: a kernel with __half and __nv_bfloat16 compiles to an sm_90 cubin", "[nvrtc]") {
    std::string why;
    if (!gpu::nvrtc_available(&why)) SKIP(why);
    CHECK(why.empty());
    CHECK(std::regex_match(gpu::nvrtc_version(), std::regex(R"(\d+\.\d+)")));

    ScopedEnv no_cache("TOYSIM_NO_CACHE", "1");
    const gpu::NvrtcCompiled c = gpu::nvrtc_compile(kHalfKernel, "scale.cu", 90, {"-std=c++17", "-lineinfo"});
    CHECK(is_elf(c.image));
    CHECK_FALSE(c.from_cache);
    CHECK(c.cache_file.empty());  // TOYSIM_NO_CACHE=1: no cache at all
}

TEST_CASE("nvrtc: the second compile of a source comes from the disk cache, the same bytes", "[nvrtc]") {
    std::string why;
    if (!gpu::nvrtc_available(&why)) SKIP(why);
    TempDir dir;
    ScopedEnv cache_home("XDG_CACHE_HOME", dir.path.string());
    ScopedEnv no_cache("TOYSIM_NO_CACHE", std::nullopt);

    const gpu::NvrtcCompiled first = gpu::nvrtc_compile(kHalfKernel, "scale.cu", 90, {"-std=c++17"});
    CHECK_FALSE(first.from_cache);
    REQUIRE(is_elf(first.image));
    const fs::path file = first.cache_file;
    CHECK(file.parent_path() == dir.path / "toysim");
    CHECK(std::regex_match(file.filename().string(), std::regex("[0-9a-f]{16}\\.cubin")));
    CHECK(fs::exists(file));
    int files = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(file.parent_path())) ++files;
    CHECK(files == 1);  // the temporary file was renamed, not left beside it

    const gpu::NvrtcCompiled second = gpu::nvrtc_compile(kHalfKernel, "scale.cu", 90, {"-std=c++17"});
    CHECK(second.from_cache);
    CHECK(second.cache_file == first.cache_file);
    CHECK(second.image == first.image);

    // Other options, another architecture: another file.
    const gpu::NvrtcCompiled other = gpu::nvrtc_compile(kHalfKernel, "scale.cu", 80, {"-std=c++17"});
    CHECK_FALSE(other.from_cache);
    CHECK(other.cache_file != first.cache_file);
}

TEST_CASE("nvrtc: a cache file that is not a cubin, or a cache it cannot write, is ignored", "[nvrtc]") {
    std::string why;
    if (!gpu::nvrtc_available(&why)) SKIP(why);
    TempDir dir;
    ScopedEnv no_cache("TOYSIM_NO_CACHE", std::nullopt);
    {
        ScopedEnv cache_home("XDG_CACHE_HOME", dir.path.string());
        const gpu::NvrtcCompiled first = gpu::nvrtc_compile(kHalfKernel, "scale.cu", 90, {});
        std::ofstream(first.cache_file, std::ios::binary | std::ios::trunc) << "garbage";
        const gpu::NvrtcCompiled again = gpu::nvrtc_compile(kHalfKernel, "scale.cu", 90, {});
        CHECK_FALSE(again.from_cache);
        CHECK(again.image == first.image);
        CHECK(gpu::nvrtc_compile(kHalfKernel, "scale.cu", 90, {}).from_cache);  // rewritten
    }
    {
        // XDG_CACHE_HOME is a file: no directory can be made under it.
        const fs::path blocker = dir.path / "not-a-directory";
        std::ofstream(blocker) << "x";
        ScopedEnv cache_home("XDG_CACHE_HOME", blocker.string());
        const gpu::NvrtcCompiled c = gpu::nvrtc_compile(kHalfKernel, "scale.cu", 90, {});
        CHECK(is_elf(c.image));
        CHECK_FALSE(c.from_cache);
        CHECK_FALSE(fs::exists(c.cache_file));
    }
}

TEST_CASE("nvrtc: a syntax error throws NvrtcCompileError with NVRTC's log", "[nvrtc]") {
    std::string why;
    if (!gpu::nvrtc_available(&why)) SKIP(why);
    ScopedEnv no_cache("TOYSIM_NO_CACHE", "1");
    const std::string bad = "extern \"C\" __global__ void k(float* x) {\n    x[0] = 1.0f\n}\n";
    try {
        gpu::nvrtc_compile(bad, "bad.cu", 90, {});
        FAIL("no error");
    } catch (const gpu::NvrtcCompileError& e) {
        CAPTURE(e.log);
        CHECK(e.log.find("error") != std::string::npos);
        CHECK(e.log.find("bad.cu(3)") != std::string::npos);  // the line after the missing ';'
        CHECK(std::string(e.what()).rfind("NVRTC could not compile bad.cu:\n", 0) == 0);
        CHECK(std::string(e.what()).find(e.log) != std::string::npos);
    }
    // An option NVRTC does not know: an NvrtcCompileError too, a GpuError to the CLI.
    CHECK_THROWS_AS(gpu::nvrtc_compile(bad, "bad.cu", 90, {"--no-such-option"}), gpu::GpuError);
}

TEST_CASE("nvrtc: ptxas's registers and stack frame are read from the cubin", "[nvrtc]") {
    std::string why;
    if (!gpu::nvrtc_available(&why)) SKIP(why);
    ScopedEnv no_cache("TOYSIM_NO_CACHE", "1");
    // `spill` writes and reads a local array at indices known only at run time: ptxas must keep
    // it in local memory (a frame of its 1024 bytes); `scale` needs none.
    const std::string source = std::string(kHalfKernel) + R"(
extern "C" __global__ void spill(float* y, int k) {
    float a[256];
    for (int i = 0; i < 256; ++i) a[(i * k) & 255] = y[i * blockDim.x + threadIdx.x];
    y[threadIdx.x] = a[k & 255] + a[(k >> 3) & 255];
}
)";
    const gpu::NvrtcCompiled c = gpu::nvrtc_compile(source, "resources.cu", 90, {"-std=c++17"});
    const auto scale = gpu::cubin_resources(c.image, "scale");
    REQUIRE(scale);
    CHECK(scale->registers >= 4);
    CHECK(scale->registers <= 32);
    CHECK(scale->frame_bytes == 0);
    const auto spill = gpu::cubin_resources(c.image, "spill");
    REQUIRE(spill);
    CHECK(spill->frame_bytes >= 1024);
    CHECK_FALSE(gpu::cubin_resources(c.image, "no_such_kernel"));
    // A truncated or damaged image gives the answer or none, and is never read past its end
    // (the sanitizer build would stop).
    for (std::size_t size = 0; size < c.image.size(); size += 61) {
        const auto cut = gpu::cubin_resources(c.image.substr(0, size), "scale");
        if (cut) CHECK(cut->registers == scale->registers);
    }
    CHECK_FALSE(gpu::cubin_resources(c.image.substr(0, 63), "scale"));
    std::string damaged = c.image;
    for (std::size_t at = 64; at < damaged.size(); at += 97) damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
    (void)gpu::cubin_resources(damaged, "scale");
    CHECK_FALSE(gpu::cubin_resources("\x7f" "ELF", "scale"));
    CHECK_FALSE(gpu::cubin_resources(std::string(200, '\xff'), "scale"));
}
