// The GPU backend's plain-C++ side, which every build has: the `gpu` declaration, the catalog
// of kernels against the shipped programs, rounding to fp16/bf16, and what `toysim gpu` says
// where it cannot run. The kernels themselves are tested on a GPU by tests/gpu/test_kernels.cpp.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <set>

#include "gpu/runtime/diff.h"
#include "gpu/runtime/run.h"
#include "sim/print/diff_report.h"
#include "sim/print/gpu_report.h"
#include "support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

std::string error_of(const std::string& text) {
    try {
        gpu::program_kernel(build(text));
    } catch (const ToyError& e) {
        return fmt::format("{}:{}: {}", e.loc().line, e.loc().col, e.what());
    }
    return "no error";
}

constexpr const char* kSoftmax = "registers 3\nparam n = 4\n{}input x[n]\noutput out[n]\n"
                             "for i in 0..n {{\n  LOAD x[i], R0\n  STORE R0, out[i]\n}}\n";

}  // namespace

TEST_CASE("every kernel of the catalog is named by a shipped program whose arrays and parameters it takes", "[gpu]") {
    // A version of another kernel (fa2_v2_mma of fa2_forward) runs with that kernel's program
    // through --kernel: it must take that program's arrays and parameters too.
    std::set<std::string> named;
    for (const auto& path : shipped_programs()) {
        Program p = build_file(path);
        if (!p.tree->gpu_kernel) continue;
        INFO(path);
        const gpu::KernelSpec& own = gpu::program_kernel(p);  // throws on any mismatch
        for (const auto& v : gpu::kernel_catalog()) {
            if (&v != &own && v.version_of != own.name) continue;
            INFO(v.name);
            const gpu::KernelSpec& k = gpu::program_kernel(p, v.name);
            CHECK(&k == &v);
            named.insert(std::string(k.name));
            CHECK(k.arrays.size() == p.arrays.size());
            CHECK(std::filesystem::exists(std::string(TOYSIM_SOURCE_DIR) + "/" + std::string(k.source)));
        }
    }
    for (const auto& k : gpu::kernel_catalog()) {
        INFO(k.name);
        CHECK(named.count(std::string(k.name)) == 1);
    }
    CHECK(named.size() == gpu::kernel_catalog().size());
}

TEST_CASE("the gpu line names a kernel once and must match the program", "[gpu]") {
    CHECK(error_of(fmt::format(fmt::runtime(kSoftmax), "gpu softmax_online\n")) == "no error");
    CHECK(error_of(fmt::format(fmt::runtime(kSoftmax), "gpu softmax_onlin\n")) ==
          "3:5: no GPU kernel is named 'softmax_onlin'; did you mean 'softmax_online'? (kernels: matmul_inner, matmul_outer, softmax_3pass, "
          "softmax_online, attention_standard, fa1_forward, fa2_forward, fa2_backward, fa2_backward_no_d_trick, fa2_backward_mma, fa2_v1_wmma, fa2_v2_mma, "
          "fa2_v3_mma, fa2_causal, fa2_causal_heaviest_first, fa2_causal_v3_mma, fa2_v4_wgmma, fa2_causal_v4_wgmma, fa2_v5_wgmma, fa2_causal_v5_wgmma, fa2_fp8_wgmma, "
          "fa2_causal_fp8_wgmma)");
    CHECK(error_of(fmt::format(fmt::runtime(kSoftmax), "gpu matmul_inner\n")) == "3:5: kernel matmul_inner reads or writes an array a, which this program does not declare");
    CHECK(error_of(fmt::format(fmt::runtime(kSoftmax), "gpu softmax_3pass\nscratch t[n]\n")) ==
          "3:5: this program declares array 't', which kernel softmax_3pass does not take (it takes x, out)");
    CHECK(error_of(fmt::format(fmt::runtime(kSoftmax), "")).find("0:0: this program has no 'gpu' line") == 0);
    CHECK_THROWS_WITH(build(fmt::format(fmt::runtime(kSoftmax), "gpu softmax_3pass\ngpu softmax_online\n")),
                      "the program's GPU kernel is already declared ('softmax_3pass', at line 3)");
    CHECK_THROWS_WITH(build(fmt::format(fmt::runtime(kSoftmax), "gpu 12\n")), Catch::Contains("a kernel name, such as fa2_forward"));
}

TEST_CASE("the --kernel option runs a version of the program's kernel, and only one", "[gpu]") {
    Program fa2 = build_file("programs/attention/fa2.toy");
    CHECK(gpu::program_kernel(fa2, "fa2_v2_mma").name == "fa2_v2_mma");
    CHECK(gpu::program_kernel(fa2, "fa2_v1_wmma").version_of == "fa2_forward");
    CHECK(gpu::program_kernel(fa2, "fa2_forward").name == "fa2_forward");
    CHECK_THROWS_WITH(gpu::program_kernel(fa2, "fa2_v2_mm"), Catch::Contains("--kernel: no GPU kernel is named 'fa2_v2_mm'; did you mean 'fa2_v2_mma'?"));
    CHECK_THROWS_WITH(gpu::program_kernel(fa2, "fa1_forward"),
                      "--kernel fa1_forward: this program runs fa2_forward, whose other versions are fa2_v1_wmma, fa2_v2_mma, fa2_v3_mma, fa2_v4_wgmma, "
                      "fa2_v5_wgmma, fa2_fp8_wgmma");
    Program fa1 = build_file("programs/attention/fa1.toy");
    CHECK_THROWS_WITH(gpu::program_kernel(fa1, "fa2_v2_mma"), "--kernel fa2_v2_mma: this program runs fa1_forward, which has no other versions");
    for (const auto& k : gpu::kernel_catalog())
        if (!k.version_of.empty()) CHECK(gpu::find_kernel(k.version_of) != nullptr);
}

TEST_CASE("the tensor-core versions refuse the shapes they were not built for", "[gpu]") {
    auto refusal = [](std::string_view kernel, std::vector<std::int64_t> params) { return gpu::find_kernel(kernel)->refuse(params); };
    CHECK(refusal("fa2_v1_wmma", {100, 64, 64, 64}) == "");
    CHECK(refusal("fa2_v1_wmma", {100, 128, 64, 64}) == "");
    CHECK(refusal("fa2_v1_wmma", {100, 64, 128, 64}) == "fa2_v1_wmma takes Br = Bc = 64 (4 warps of 16 rows), not Br = 128, Bc = 64");
    CHECK(refusal("fa2_v2_mma", {100, 64, 128, 64}) == "");
    CHECK(refusal("fa2_v2_mma", {100, 128, 64, 32}) == "");
    CHECK(refusal("fa2_v2_mma", {100, 96, 64, 64}) == "fa2_v2_mma takes d = 64 or 128 (a row of Q, K, V is 4 or 8 fragments of 16), not d = 96");
    CHECK(refusal("fa2_v2_mma", {100, 64, 32, 64}) ==
          "fa2_v2_mma takes Br = 64 or 128 (4 or 8 warps of 16 rows) and Bc = 32 or 64, not Br = 32, Bc = 64");
    CHECK(refusal("fa2_v3_mma", {100, 128, 128, 32}) == "");
    CHECK(refusal("fa2_v3_mma", {100, 64, 64, 64}) == "fa2_v3_mma takes Br = 128 (4 warps of 32 rows) and Bc = 32 or 64, not Br = 64, Bc = 64");
    CHECK(refusal("fa2_v4_wgmma", {100, 64, 128, 128}) == "");
    CHECK(refusal("fa2_v4_wgmma", {100, 128, 128, 64}) ==
          "fa2_v4_wgmma takes Br = 128 (2 warpgroups of 64 rows) and Bc = 128, not Br = 128, Bc = 64");
    CHECK(refusal("fa2_v4_wgmma", {100, 32, 128, 128}) ==
          "fa2_v4_wgmma takes d = 64 or 128 (a row of Q, K, V is 4 or 8 fragments of 16), not d = 32");
    CHECK(refusal("fa2_causal_v4_wgmma", {100, 128, 128}) == "");
    CHECK(refusal("fa2_causal_v4_wgmma", {100, 128, 64}) == "fa2_causal_v4_wgmma takes B = 128 (2 warpgroups of 64 rows), not B = 64");
    CHECK(refusal("fa2_v5_wgmma", {100, 128, 128, 128}) == "");
    CHECK(refusal("fa2_v5_wgmma", {100, 64, 64, 128}) == "fa2_v5_wgmma takes Br = 128 (2 warpgroups of 64 rows) and Bc = 128, not Br = 64, Bc = 128");
    CHECK(refusal("fa2_causal_v5_wgmma", {100, 64, 64}) == "fa2_causal_v5_wgmma takes B = 128 (2 warpgroups of 64 rows), not B = 64");
    CHECK(refusal("fa2_fp8_wgmma", {100, 128, 128, 128}) == "");
    CHECK(refusal("fa2_fp8_wgmma", {100, 64, 128, 128}) ==
          "fa2_fp8_wgmma takes d = 128 (a row of e4m3 is one 128-byte swizzled row), not d = 64");
    CHECK(refusal("fa2_fp8_wgmma", {100, 128, 64, 128}) ==
          "fa2_fp8_wgmma takes Br = 128 (2 warpgroups of 64 rows) and Bc = 128, not Br = 64, Bc = 128");
    CHECK(refusal("fa2_causal_fp8_wgmma", {100, 128, 128}) == "");
    CHECK(refusal("fa2_causal_fp8_wgmma", {100, 128, 64}) == "fa2_causal_fp8_wgmma takes B = 128 (2 warpgroups of 64 rows), not B = 64");
    CHECK(refusal("fa2_backward_mma", {100, 64, 128, 128}) == "");
    CHECK(refusal("fa2_backward_mma", {100, 128, 64, 128}) == "");
    CHECK(refusal("fa2_backward_mma", {100, 128, 128, 64}) ==
          "fa2_backward_mma takes Bc = 64 or 128 (4 or 8 warps of 16 keys) and Br = 64, or Br = 128 at d = 64 (a warp's Sᵀ and dPᵀ "
          "are 16 keys × Br queries in registers), not Br = 128, Bc = 64 at d = 128");
    CHECK(refusal("fa2_backward_mma", {100, 64, 64, 32}) ==
          "fa2_backward_mma takes Bc = 64 or 128 (4 or 8 warps of 16 keys) and Br = 64, or Br = 128 at d = 64 (a warp's Sᵀ and dPᵀ "
          "are 16 keys × Br queries in registers), not Br = 64, Bc = 32 at d = 64");
}

TEST_CASE("values are rounded to fp16, bf16 and e4m3 as the device stores them", "[gpu]") {
    using gpu::DType;
    CHECK(gpu::round_to(DType::F16, 1.0) == 1.0);
    CHECK(gpu::round_to(DType::F16, 1.0 + 1.0 / 4096) == 1.0);            // below half an ulp (2^-10)
    CHECK(gpu::round_to(DType::F16, 1.0 + 3.0 / 2048) == 1.0 + 2.0 / 1024);  // 1.5 ulp rounds to even: 2 ulp
    CHECK(gpu::round_to(DType::F16, 65504.0) == 65504.0);
    CHECK(std::isinf(gpu::round_to(DType::F16, 70000.0)));
    CHECK(gpu::round_to(DType::F16, std::ldexp(1.0, -24)) == std::ldexp(1.0, -24));  // the smallest subnormal
    CHECK(gpu::round_to(DType::F16, std::ldexp(1.0, -26)) == 0.0);
    CHECK(gpu::round_to(DType::BF16, 1.0 + 1.0 / 256) == 1.0);  // half an ulp (2^-7), ties to even
    CHECK(gpu::round_to(DType::BF16, 3.0 + 1.0 / 64) == 3.0 + 1.0 / 64);
    CHECK(gpu::round_to(DType::BF16, -0.1) == -0.10009765625);
    CHECK(gpu::round_to(DType::F32, 0.1) == double(0.1f));
    // e4m3: 3 stored mantissa bits, normals from 2^-6, subnormals down to 2^-9, no infinity.
    CHECK(gpu::round_to(DType::E4M3, 0.1) == 0.1015625);                        // 13·2^-7
    CHECK(gpu::round_to(DType::E4M3, 1.0 + 1.0 / 16) == 1.0);                   // half an ulp (2^-3), ties to even
    CHECK(gpu::round_to(DType::E4M3, 448.0) == 448.0);
    CHECK(gpu::round_to(DType::E4M3, -1000.0) == -448.0);                      // saturates, as satfinite does
    CHECK(gpu::round_to(DType::E4M3, std::ldexp(1.0, -9)) == std::ldexp(1.0, -9));  // the smallest subnormal
    CHECK(gpu::round_to(DType::E4M3, std::ldexp(3.0, -11)) == std::ldexp(1.0, -9));
    CHECK(gpu::round_to(DType::E4M3, std::ldexp(1.0, -11)) == 0.0);
    // An e4m3 array's scale: the power of two that puts its largest |value| in (224, 448].
    CHECK(gpu::e4m3_scale({0.5, -1.0, 0.25}) == 256.0);
    CHECK(gpu::e4m3_scale({448.0}) == 1.0);
    CHECK(gpu::e4m3_scale({449.0}) == 0.5);
    CHECK(gpu::e4m3_scale({0.0, 0.0}) == 1.0);
    CHECK(gpu::dtype_bytes(DType::E4M3) == 1);
    CHECK(gpu::tolerance_for(DType::E4M3, 0.5) == 0.0630);
    CHECK(gpu::tolerance_for(DType::E4M3, 4.0) == 0.0630 * 4.0);
    CHECK(gpu::tolerance_for(DType::F16, 4.0) == 2e-2);
    CHECK(gpu::parse_dtype("e4m3") == DType::E4M3);
}

TEST_CASE("toysim gpu run refuses what no kernel runs, before looking for a GPU", "[gpu]") {
    auto r = run_cli({"gpu", "run", "programs/p1_c00.toy", "--kernel", "fa2_v2_mma"});
    CHECK(r.code == 2);
    CHECK(r.err.find("programs/p1_c00.toy: error: this program has no 'gpu' line naming a hand-written kernel (kernels: ") == 0);
    CHECK(r.err.find("); without --kernel, or with --kernel generated, it runs as CUDA generated from the program\n") != std::string::npos);
    r = run_cli({"gpu", "run", "programs/attention/fa2.toy", "--set", "d=256"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/attention/fa2.toy: error: --set d: kernel fa2_forward takes d up to 128, not 256 (d is the head dimension: a row of Q, K, V or O is "
                   "one thread block's width)\n");
    r = run_cli({"gpu", "run", "programs/matmul_outer.toy", "--set", "n=10", "--set", "t=4"});
    CHECK(r.code == 2);
    CHECK(r.err.find("matmul_outer needs n to be a multiple of t (n = 10, t = 4)") != std::string::npos);
    r = run_cli({"gpu", "run", "programs/p4_softmax_3pass.toy", "--dtype", "fp16"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/p4_softmax_3pass.toy: error: kernel softmax_3pass runs in fp32 only; fp16 and bf16 are for the attention kernels, e4m3 "
                   "for the FP8 ones (fa2_fp8_wgmma, fa2_causal_fp8_wgmma)\n");
    r = run_cli({"gpu", "run", "programs/p4_softmax_3pass.toy", "--dtype", "fp8"});
    CHECK(r.code == 2);
    CHECK(r.err.find("--dtype: fp8 not in {fp32,fp16,bf16,e4m3}") != std::string::npos);
    r = run_cli({"gpu", "run", "programs/p4_softmax_3pass.toy", "--dtype", "e4m3"});
    CHECK(r.code == 2);
    CHECK(r.err.find("kernel softmax_3pass runs in fp32 only") != std::string::npos);
    r = run_cli({"gpu", "run", "programs/attention/fa2.toy", "--dtype", "e4m3"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/attention/fa2.toy: error: kernel fa2_forward runs in fp32, fp16, bf16 only; e4m3 is for the FP8 kernels (fa2_fp8_wgmma, "
                   "fa2_causal_fp8_wgmma)\n");
    r = run_cli({"gpu", "run", "programs/p1_c00.toy", "--dtype", "e4m3"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/p1_c00.toy: error: generated CUDA runs in fp32, fp16 or bf16; e4m3 is for the FP8 kernels (fa2_fp8_wgmma, "
                   "fa2_causal_fp8_wgmma)\n");
    r = run_cli({"gpu", "run", "programs/attention/fa2.toy", "--kernel", "fa2_fp8_wgmma", "--dtype", "e4m3", "--set", "d=64"});
    CHECK(r.code == 2);
    CHECK(r.err.find("fa2_fp8_wgmma takes d = 128 (a row of e4m3 is one 128-byte swizzled row), not d = 64") != std::string::npos);
}

TEST_CASE("toysim gpu run --kernel runs a version of the program's kernel, refused before looking for a GPU", "[gpu]") {
    auto r = run_cli({"gpu", "run", "programs/attention/fa2.toy", "--kernel", "fa1_forward"});
    CHECK(r.code == 2);
    CHECK(r.err == "programs/attention/fa2.toy: error: --kernel fa1_forward: this program runs fa2_forward, whose other versions are "
                   "fa2_v1_wmma, fa2_v2_mma, fa2_v3_mma, fa2_v4_wgmma, fa2_v5_wgmma, fa2_fp8_wgmma\n");
    r = run_cli({"gpu", "run", "programs/attention/fa2.toy", "--kernel", "fa2_v2_mma", "--set", "d=64"});  // fp32 by default
    CHECK(r.code == 2);
    CHECK(r.err == "programs/attention/fa2.toy: error: kernel fa2_v2_mma runs on the tensor cores in fp16, bf16 only (--dtype)\n");
    r = run_cli({"gpu", "run", "programs/attention/fa2.toy", "--kernel", "fa2_v2_mma", "--dtype", "fp16"});  // fa2.toy's own d = 4
    CHECK(r.code == 2);
    CHECK(r.err.find("fa2_v2_mma takes d = 64 or 128 (a row of Q, K, V is 4 or 8 fragments of 16), not d = 4") != std::string::npos);
    r = run_cli({"gpu", "run", "programs/attention/fa2.toy", "--kernel", "fa2_v3_mma", "--set", "d=64", "--set", "Br=64", "--dtype", "bf16"});
    CHECK(r.code == 2);
    CHECK(r.err.find("fa2_v3_mma takes Br = 128 (4 warps of 32 rows) and Bc = 32 or 64, not Br = 64, Bc = 4") != std::string::npos);
}

TEST_CASE("toysim diff reads a committed FP8 run: bytes at each array's own size, and no time the model cannot give", "[gpu]") {
    // fa2_fp8_wgmma on the H200 (gpu/tools/bench_attention.py's cell at n = 4096, d = 128): Q, K
    // and V are 1 byte an element, O 2 (fp16), L 4; the machines have no e4m3 product rate.
    auto r = run_cli({"diff", "programs/attention/fa2.toy", "--gpu", "traces/gpu/fa2_fp8_wgmma.n4096.e4m3.json"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.out.find("fa2_fp8_wgmma; 64 heads; e4m3\n") != std::string::npos);
    CHECK(r.out.find("reads(Q)     33554432            33554432         33.55 MB") != std::string::npos);
    CHECK(r.out.find("writes(O)    33554432            33554432         67.11 MB") != std::string::npos);
    CHECK(r.out.find("writes(L)      262144              262144          1.05 MB") != std::string::npos);
    CHECK(r.out.find("no predicted time: the time model has no rate measured for e4m3 products (isa/machine.h has fp16's): its bytes are "
                     "predicted, its time is not\n") != std::string::npos);
}

TEST_CASE("toysim diff reads a committed run of a tensor-core version against fa2.toy", "[gpu]") {
    const std::vector<std::string> shape = {"--set", "n=4096", "--set", "d=64", "--set", "Br=128", "--set", "Bc=64"};
    std::vector<std::string> args = {"diff", "programs/attention/fa2.toy", "--gpu", "traces/gpu/fa2_v3_mma.n4096.fp16.cold.json"};
    args.insert(args.end(), shape.begin(), shape.end());
    auto r = run_cli(args);
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(r.out.find("fa2_v3_mma") != std::string::npos);
    args.push_back("--kernel");
    args.push_back("fa2_v2_mma");
    r = run_cli(args);
    CHECK(r.code == 2);
    CHECK(r.err.find("--kernel fa2_v2_mma: the GPU results in traces/gpu/fa2_v3_mma.n4096.fp16.cold.json are of kernel fa2_v3_mma") !=
          std::string::npos);
}

TEST_CASE("toysim diff --gpu FILE takes the saved run's parameters, heads and dtype, and refuses a contradiction", "[gpu]") {
    const std::string file = "traces/gpu/fa2.n4096.fp16.cold.json";
    auto r = run_cli({"diff", "programs/attention/fa2.toy", "--gpu", file});
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(r.out.find("programs/attention/fa2.toy (n = 4096, d = 64, Br = 64, Bc = 64), fa2_forward; 16 heads; fp16\n") == 0);
    // Naming the file's own values changes nothing.
    auto same = run_cli({"diff", "programs/attention/fa2.toy", "--gpu", file, "--set", "Br=64", "--heads", "16", "--dtype", "fp16"});
    CHECK(same.code == 0);
    CHECK(same.out == r.out);
    r = run_cli({"diff", "programs/attention/fa2.toy", "--gpu", file, "--set", "Br=32"});
    CHECK(r.code == 2);
    CHECK(r.err == "toysim: error: --set Br=32: the GPU results in " + file + " are for Br = 64 (leave --set Br out to take the file's value)\n");
    r = run_cli({"diff", "programs/attention/fa2.toy", "--gpu", file, "--heads", "4"});
    CHECK(r.code == 2);
    CHECK(r.err == "toysim: error: --heads 4: the GPU results in " + file + " are for 16 heads\n");
    r = run_cli({"diff", "programs/attention/fa2.toy", "--gpu", file, "--dtype", "fp32"});
    CHECK(r.code == 2);
    CHECK(r.err == "toysim: error: --dtype fp32: the GPU results in " + file + " are for fp16\n");
}

TEST_CASE("toysim gpu run without a usable GPU says why and exits 2", "[gpu]") {
    if (gpu::built_with_cuda()) {
        try {
            gpu::query_device();
            SUCCEED("a GPU is present: tests/gpu runs the kernels");
            return;
        } catch (const gpu::GpuError&) {
        }
    }
    auto r = run_cli({"gpu", "run", "programs/p5_online_softmax.toy"});
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    if (gpu::built_with_cuda())
        CHECK(r.err.find("toysim: error: no ") == 0);  // no CUDA device found / no usable CUDA device: ...
    else
        CHECK(r.err == "toysim: error: this build of toysim has no GPU support: rebuild with a CUDA toolkit (cmake -DTOYSIM_CUDA=ON, "
                       "README \"On a real GPU\")\n");
}

TEST_CASE("toysim gpu kernels lists the catalog", "[gpu]") {
    auto r = run_cli({"gpu", "kernels", "--format", "csv"});
    CHECK(r.code == 0);
    auto lines = split_lines(r.out);
    REQUIRE(lines.size() == gpu::kernel_catalog().size() + 2);  // the header, the catalog, then generated CUDA
    CHECK(lines[0] == "kernel,source,params,dtypes,what it does");
    CHECK(lines[7].find("fa2_forward,gpu/kernels/attention_forward.cu,\"n, d, Br, Bc\",\"fp32, fp16, bf16\",") == 0);
    CHECK(lines.back() == "generated,gpu/codegen.cpp,the program's,\"fp32, fp16, bf16\",\"CUDA generated from the program itself (toysim gpu cuda "
                          "FILE), compiled at run time with NVRTC\"");
}

TEST_CASE("the gpu run JSON carries the contract toysim diff reads", "[gpu]") {
    gpu::GpuRunResult r;
    r.kernel = gpu::find_kernel("fa2_forward");
    r.params = {{"n", 7}, {"d", 3}, {"Br", 3}, {"Bc", 2}};
    r.heads = 2;
    r.dtype = gpu::DType::F16;
    r.warmups = 3;
    r.device.name = "Test GPU";
    r.device.compute_major = 9;
    r.device.sm_count = 132;
    r.device.l2_bytes = 50 << 20;
    r.device.driver_version = 13000;
    r.device.runtime_version = 12080;
    gpu::StageResult stage;
    stage.name = "fa2_forward";
    stage.reads = {42, 168, 168, 0, 0};
    stage.writes = {0, 0, 0, 42, 14};
    stage.time.ms = {2.0f, 1.0f, 4.0f};
    r.launch.stages = {stage};
    r.launch.total.ms = {2.0f, 1.0f, 4.0f};
    for (size_t a = 0; a < 5; ++a) {
        gpu::ArrayTrafficRow row;
        row.array = std::string(r.kernel->arrays[a].name);
        row.element_bytes = a == 4 ? 4 : 2;
        row.counted_reads = row.simulated_reads = stage.reads[a];
        row.counted_writes = row.simulated_writes = stage.writes[a];
        r.traffic.push_back(row);
    }
    r.traffic[1].simulated_reads = 170;  // one array differs
    r.counted_bytes = 1000;
    r.flops = 4.0 * 7 * 7 * 3 * 2;
    gpu::ArrayCheckResult c;
    c.array = "O";
    c.expression = "attention(Q, K, V)";
    c.heads = c.heads_checked = 2;
    c.rows = c.rows_checked = 7;
    c.tolerance = 0.02;
    r.checks = {c};

    auto j = nlohmann::json::parse(format_gpu_run("programs/attention/fa2.toy", r, Format::Json));
    CHECK(j["program"] == "programs/attention/fa2.toy");
    CHECK(j["kernel"] == "fa2_forward");
    CHECK(j["params"]["Bc"] == 2);
    CHECK(j["heads"] == 2);
    CHECK(j["dtype"] == "fp16");
    CHECK(j["device"]["name"] == "Test GPU");
    CHECK(j["device"]["driver_version"] == "13.0");
    CHECK(j["device"]["runtime_version"] == "12.8");
    CHECK(j["device"]["l2_bytes"] == 52428800);
    CHECK(j["launches"][0]["stage"] == "fa2_forward");
    CHECK(j["launches"][0]["counted"]["K"]["read_bytes"] == 336);
    CHECK(j["launches"][0]["counted"]["L"]["write_bytes"] == 56);
    CHECK(j["launches"][0]["time_ms"]["median"] == 2.0);
    CHECK(j["traffic"]["K"]["simulated_reads"] == 170);
    CHECK(j["traffic"]["K"]["equal"] == false);
    CHECK(j["traffic"]["Q"]["equal"] == true);
    CHECK(j["traffic_equal"] == false);
    CHECK(j["time_ms"]["min"] == 1.0);
    CHECK(j["time_ms"]["max"] == 4.0);
    CHECK(j["time_ms"]["repeats"] == 3);
    CHECK(j["warmups"] == 3);
    CHECK(j["flops"] == 1176.0);
    CHECK(j["tflops"] == Approx(1176.0 / 2e-3 / 1e12));
    CHECK(j["gb_per_s"] == Approx(1000 / 2e-3 / 1e9));
    CHECK(j["check"]["passed"] == true);
    CHECK(j["check"]["arrays"][0]["rows_checked"] == 7);

    std::string table = format_gpu_run("programs/attention/fa2.toy", r, Format::Table);
    INFO(table);
    CHECK(table.find("\nreads(K)                  168                170  336 B  DIFFERENT\n") != std::string::npos);
    CHECK(table.find("counted traffic DIFFERS from the simulator's count\n") != std::string::npos);
    CHECK(table.find("O = attention(Q, K, V)  2 heads, every row") != std::string::npos);
}

TEST_CASE("measured traffic is printed as measured, or the one line that says why not", "[gpu]") {
    gpu::GpuRunResult r;
    r.kernel = gpu::find_kernel("softmax_online");
    r.params = {{"n", 1000}};
    gpu::StageResult stage;
    stage.name = "softmax_online";
    stage.reads = {2000, 0};
    stage.writes = {0, 1000};
    stage.time.ms = {1.0f};
    r.launch.stages = {stage};
    r.launch.total.ms = {1.0f};
    r.traffic = {{"x", 4, 2000, 0, 2000, 0}, {"out", 4, 0, 1000, 0, 1000}};

    auto launch0 = [&](Format f) { return format_gpu_run("p5.toy", r, f); };
    CHECK(nlohmann::json::parse(launch0(Format::Json))["launches"][0]["measured"].is_null());
    CHECK(launch0(Format::Table).find("hardware traffic") == std::string::npos);

    r.measure = gpu::L2State::Cold;
    r.launch.stages[0].measured.why_not = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: profiling needs root or NVreg_RestrictProfilingToAdminUsers=0";
    auto j = nlohmann::json::parse(launch0(Format::Json));
    CHECK(j["launches"][0]["measured"]["available"] == false);
    CHECK(j["launches"][0]["measured"]["l2"] == "cold");
    CHECK(j["launches"][0]["measured"].count("dram_read_bytes") == 0);  // never zeros as if measured
    CHECK(launch0(Format::Table).find("hardware traffic (cold L2): not measured: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES") != std::string::npos);

    auto& m = r.launch.stages[0].measured;
    m.available = true;
    m.dram_read_bytes = 4096;
    m.dram_write_bytes = 4000;
    m.l2_read_sectors = 250;
    m.l2_write_sectors = 125;
    m.l2_hit_rate = 50;
    j = nlohmann::json::parse(launch0(Format::Json));
    CHECK(j["launches"][0]["measured"]["dram_read_bytes"] == 4096.0);
    CHECK(j["launches"][0]["measured"]["l2_read_bytes"] == 8000.0);
    CHECK(j["launches"][0]["measured"]["l2_write_bytes"] == 4000.0);
    CHECK(j["launches"][0]["measured"]["l2_hit_rate"] == 50.0);
    std::string table = launch0(Format::Table);
    INFO(table);
    CHECK(table.find("\nsoftmax_online  0.01 MB  0.01 MB   0.00 MB    0.00 MB     0.00 MB        50.0%\n") != std::string::npos);
}

namespace {

// A measured fa2 run at n = 7 (Tr = 3), 2 heads, built by hand: the kernel counted what the
// simulator counts, and DRAM read each array once (its footprint) and wrote O and L once.
gpu::GpuRunResult measured_fa2_run() {
    gpu::GpuRunResult r;
    r.kernel = gpu::find_kernel("fa2_forward");
    r.params = {{"n", 7}, {"d", 3}, {"Br", 3}, {"Bc", 2}};
    r.heads = 2;
    r.measure = gpu::L2State::Cold;
    r.device.name = "Test GPU";
    r.device.l2_bytes = 50 << 20;
    gpu::StageResult stage;
    stage.name = "fa2_forward";
    stage.reads = {42, 126, 126, 0, 0};  // Q once, K and V Tr = 3 times, 2 heads
    stage.writes = {0, 0, 0, 42, 14};
    stage.time.ms = {1.0f};
    stage.measured.available = true;
    stage.measured.dram_read_bytes = 3 * 42 * 4;
    stage.measured.dram_write_bytes = 42 * 4 + 14 * 4;
    stage.measured.l2_read_sectors = 100;
    stage.measured.l2_write_sectors = 10;
    stage.measured.l2_hit_rate = 60;
    r.launch.stages = {stage};
    r.launch.total.ms = {1.0f};
    for (size_t a = 0; a < 5; ++a)
        r.traffic.push_back({std::string(r.kernel->arrays[a].name), a == 4 ? 4 : 4, stage.reads[a], stage.writes[a], stage.reads[a],
                             stage.writes[a]});

    return r;
}

}  // namespace

TEST_CASE("toysim diff reads a saved gpu run back and sets it against the simulator", "[gpu]") {
    Program p = build_file("programs/attention/fa2.toy", {{"n", 7}, {"d", 3}, {"Br", 3}, {"Bc", 2}});
    gpu::GpuRunResult r = measured_fa2_run();
    const gpu::StageResult& stage = r.launch.stages[0];
    // The JSON a gpu run writes reads back into the same figures.
    gpu::GpuRunResult back = parse_gpu_run(format_gpu_run("fa2.toy", r, Format::Json), "saved.json");
    CHECK(back.kernel == r.kernel);
    CHECK(back.heads == 2);
    CHECK(back.measure == gpu::L2State::Cold);
    REQUIRE(back.launch.stages.size() == 1);
    CHECK(back.launch.stages[0].reads == stage.reads);
    CHECK(back.launch.stages[0].writes == stage.writes);
    CHECK(back.launch.stages[0].measured.dram_read_bytes == 504);
    CHECK(back.launch.stages[0].measured.l2_read_sectors == 100);

    gpu::GpuDiff d = gpu::diff(p, back);
    REQUIRE(d.arrays.size() == 5);
    CHECK(d.arrays[1].simulated_reads == 126);  // reads(K) = n·d·Tr per head
    CHECK(d.arrays[1].counted_reads == 126);
    CHECK(!d.arrays[1].dram_read_bytes);        // the launch reads Q, K and V: a total
    CHECK(d.measured);
    CHECK(d.dram_bytes == 504 + 224);
    CHECK(d.simulated_bytes == (42 + 126 + 126 + 42 + 14) * 4);
    CHECK(d.aggregate_error == Approx((1400.0 - 728.0) / 728.0));
    REQUIRE(d.notes.size() == 2);
    CHECK(d.notes[0] == "fa2_forward: K and V (0.0 MB in all) fit in the 50 MiB L2, so their re-reads (3× each, 0.0 MB counted) hit L2: "
                        "DRAM read 0.0 MB in all");
    CHECK(d.notes[1] == "fa2_forward: O and L written, written back to DRAM once (0.0 MB)");

    CHECK_THROWS_WITH(gpu::diff(build_file("programs/attention/fa2.toy"), back),
                      "the GPU results are for n = 7, but the program has n = 8: use --set n=7");
    CHECK_THROWS_WITH(parse_gpu_run("[1, 2]", "x.json"), "x.json: not the JSON of a `toysim gpu run`: it does not parse as a JSON object");
}

TEST_CASE("a diff sweep prints one row per value and plots it as SVG", "[gpu]") {
    Program p = build_file("programs/attention/fa2.toy", {{"n", 7}, {"d", 3}, {"Br", 3}, {"Bc", 2}});
    std::vector<DiffSweepPoint> points;
    for (std::int64_t n : {7, 7}) {
        gpu::GpuRunResult r = measured_fa2_run();
        gpu::GpuDiff d = gpu::diff(p, r);
        points.push_back({n, r, d});
    }
    points[1].value = 70;  // the plot's second x
    std::string csv = format_diff_sweep("fa2.toy", "n", points, Format::Csv);
    // "Test GPU" has no cache preset: no prediction.
    CHECK(csv == "n,heads,simulated,counted,L2,DRAM,DRAM / simulated,DRAM reads / arrays read,DRAM read predicted,DRAM read measured,error\n"
                 "7,2,0.00 MB,0.00 MB,0.00 MB,0.00 MB,0.520,1.00×,-,0.00 MB,-\n"
                 "70,2,0.00 MB,0.00 MB,0.00 MB,0.00 MB,0.520,1.00×,-,0.00 MB,-\n");
    std::string svg = svg_diff_sweep("fa2.toy", "n", points);
    CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    CHECK(svg.find("fa2.toy on Test GPU, fp32, 2 heads") != std::string::npos);
    CHECK(std::count(svg.begin(), svg.end(), '\n') > 20);
    for (const char* series : {">simulated DRAM<", ">L2 (measured)<", ">DRAM (measured)<"}) CHECK(svg.find(series) != std::string::npos);
    CHECK(svg.find(">DRAM (predicted)<") == std::string::npos);  // no prediction: no curve
    CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
    // --plot-y time: the measured medians, and the predicted times where there are some.
    points[0].diff.stages.at(0).measured_seconds = 2e-3;
    points[1].diff.stages.at(0).measured_seconds = 4e-3;
    for (auto& point : points) {
        LaunchTime t;
        t.seconds = point.diff.stages[0].measured_seconds * 0.9;
        point.diff.stages[0].predicted_time = t;
    }
    const std::string timed = svg_diff_sweep_time("fa2.toy", "n", points);
    CHECK(timed.find("fa2.toy on Test GPU, fp32, 2 heads") != std::string::npos);
    for (const char* series : {">measured (median)<", ">predicted<", ">seconds"}) CHECK(timed.find(series) != std::string::npos);
    CHECK(timed.substr(timed.size() - 7) == "</svg>\n");
    // Runs of generated CUDA: the table ends with how their modules came, and each JSON row
    // says (the first run compiled the module the others shared).
    CHECK(format_diff_sweep("fa2.toy", "n", points, Format::Table).find("generated modules") == std::string::npos);
    for (std::size_t k = 0; k < points.size(); ++k) {
        gpu::GpuRunResult::ModuleCompile c;
        c.target = "sm_90a";
        c.seconds = k == 0 ? 1.31 : 3.5e-5;
        c.reused = k > 0;
        c.shared_by = 2;
        c.run_time_values = 4;
        points[k].gpu.compile = c;
    }
    const std::string table = format_diff_sweep("fa2.toy", "n", points, Format::Table);
    CHECK(table.substr(table.rfind('\n', table.size() - 2) + 1) ==
          "generated modules: 1 compiled by NVRTC (1.31 s), 0 from the disk cache, 1 reused; 2 of the 2 runs shared a module\n");
    const auto rows = nlohmann::json::parse(format_diff_sweep("fa2.toy", "n", points, Format::Json));
    CHECK(rows.at(1).at("compile").at("reused") == true);
    CHECK(rows.at(1).at("compile").at("shared_by") == 2);
    CHECK(rows.at(0).at("compile").at("reused") == false);
}
