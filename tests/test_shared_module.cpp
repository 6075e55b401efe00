// One module for a sweep's parameter sets (gpu/codegen/shared_module.h): which modules share,
// what they read at run time, and that the shared text is each member's own.
#include <catch2/catch.hpp>

#include <algorithm>

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/nvrtc.h"
#include "gpu/codegen/shared_module.h"
#include "tests/support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

std::shared_ptr<const gpu::GeneratedProgram> fa2(std::int64_t n, std::int64_t Br = 64, std::int64_t d = 64) {
    return gpu::generate_cuda(build_file("programs/attention/fa2.toy", {{"n", n}, {"d", d}, {"Br", Br}, {"Bc", 64}}), gpu::DType::F16);
}

// A module of `source` alone (no kernels): what share_modules compares is the text.
gpu::GeneratedProgram module_of(const std::string& source) {
    gpu::GeneratedProgram g;
    g.program_path = "hand.toy";
    g.source = source;
    return g;
}

}  // namespace

TEST_CASE("shared module: a sweep of fa2 over n shares one module that reads its sizes at run time", "[codegen][shared]") {
    const auto a = fa2(256), b = fa2(512), c = fa2(2048);
    const auto shares = gpu::share_modules({a.get(), b.get(), c.get()});
    REQUIRE(shares.size() == 3);
    for (const auto& s : shares) REQUIRE(s);
    CHECK(shares[0]->module == shares[1]->module);
    CHECK(shares[0]->module == shares[2]->module);
    const gpu::SharedModule& m = *shares[0]->module;
    CHECK(m.members == 3);
    CHECK(m.program_path == "fa2.toy");
    CHECK(m.unit.find("__constant__ long long toy_param[") != std::string::npos);
    for (const auto& s : shares) CHECK(s->values.size() == static_cast<std::size_t>(m.run_time_values));
    // Each member's values put back give its own source, token for token.
    CHECK(gpu::instantiate_shared(m, shares[0]->values) == gpu::without_comments(a->source));
    CHECK(gpu::instantiate_shared(m, shares[1]->values) == gpu::without_comments(b->source));
    CHECK(gpu::instantiate_shared(m, shares[2]->values) == gpu::without_comments(c->source));
    // What differs with n: a head's stride in Q, K, V, O (n·d, one value for the four) and in L
    // (n), and the number of tiles, Tr = Tc = n/64 (the grid's bound and the K/V loop's trip count).
    CHECK(m.run_time_values == 3);
    CHECK(shares[0]->values == std::vector<std::int64_t>{256 * 64, 256, 4});
    CHECK(shares[2]->values == std::vector<std::int64_t>{2048 * 64, 2048, 32});
    CHECK(m.unit.find("Q += head * ((int)toy_param[0]);") != std::string::npos);
    CHECK(m.unit.find("for (long long j = 0; j < ((int)toy_param[2]); ++j) {") != std::string::npos);
    // What the generator unrolls by stays a number: the tiles' shapes are the same in all three.
    CHECK(m.unit.find("__launch_bounds__(256, 2)") != std::string::npos);
}

TEST_CASE("shared module: modules of other tiles or other text each keep their own", "[codegen][shared]") {
    // Br = 128 tiles have other launch facts and other loops: no share with the Br = 64 ones.
    const auto a = fa2(256), b = fa2(512), other = fa2(512, 128);
    const auto shares = gpu::share_modules({a.get(), other.get(), b.get(), nullptr});
    REQUIRE(shares.size() == 4);
    CHECK(shares[0]);
    CHECK_FALSE(shares[1]);
    CHECK(shares[2]);
    CHECK_FALSE(shares[3]);
    CHECK(shares[0]->module->members == 2);
    // One module alone shares with nothing.
    CHECK_FALSE(gpu::share_modules({a.get()}).front());
}

TEST_CASE("shared module: only decimal integer literals outside directives are read at run time", "[codegen][shared]") {
    auto share = [](const std::string& x, const std::string& y) {
        const gpu::GeneratedProgram a = module_of(x), b = module_of(y);
        return gpu::share_modules({&a, &b});
    };
    auto body = [](const gpu::SharedModule& m) { return m.kernels; };
    {
        const auto s = share("x = h * 4096; y = 1.5f; // n = 4096\n", "x = h * 8192; y = 1.5f; // n = 8192\n");
        REQUIRE(s[0]);
        CHECK(s[0]->module->run_time_values == 1);
        CHECK(s[0]->values == std::vector<std::int64_t>{4096});
        CHECK(s[1]->values == std::vector<std::int64_t>{8192});
        CHECK(body(*s[0]->module) == "x = h * ((int)toy_param[0]); y = 1.5f;  \n");
        CHECK(gpu::instantiate_shared(*s[0]->module, s[1]->values) == "x = h * 8192; y = 1.5f;  \n");
    }
    // The literal's type is kept: unsigned, and past int's range, long.
    {
        const auto s = share("a = 16u + 5000000000;", "a = 32u + 6000000000;");
        REQUIRE(s[0]);
        CHECK(body(*s[0]->module) == "a = ((unsigned)toy_param[0]) + ((long)toy_param[1]);");
    }
    // Equal text shares too, with nothing read at run time.
    {
        const auto s = share("x = 7;", "x = 7;");
        REQUIRE(s[0]);
        CHECK(s[0]->module->run_time_values == 0);
        CHECK(s[0]->values.empty());
        CHECK(s[0]->module->unit.find("__constant__") == std::string::npos);  // nothing to read at run time
    }
    // A float, a hex or octal literal, a directive's number, a string, or other tokens: no share.
    CHECK_FALSE(share("y = 1.5f;", "y = 2.5f;")[0]);
    CHECK_FALSE(share("y = 1e3;", "y = 2e3;")[0]);
    CHECK_FALSE(share("y = 0x10;", "y = 0x20;")[0]);
    CHECK_FALSE(share("y = 010;", "y = 020;")[0]);
    CHECK_FALSE(share("#define T 4\nx = T;", "#define T 8\nx = T;")[0]);
    CHECK_FALSE(share("s = \"4\";", "s = \"8\";")[0]);
    CHECK_FALSE(share("x = a + 4;", "x = b + 4;")[0]);
    CHECK_FALSE(share("x = 4;", "x = 4; y = 1;")[0]);
    // Comments are not the module's text: a number in one differs freely, a // in a string is no comment.
    CHECK(gpu::without_comments("a /* b 1 */ c // d 2\ne \"// f\"") == "a   c  \ne \"// f\"");
}

TEST_CASE("shared module: NVRTC compiles it once for all its members", "[codegen][shared][nvrtc]") {
    std::string why;
    if (!gpu::nvrtc_available(&why)) SKIP("no NVRTC: " << why);
#ifdef TOYSIM_TEST_ASAN
    SKIP("NVRTC's compile is the same work in both builds and runs in Release");
#endif
    ScopedEnv no_cache("TOYSIM_NO_CACHE", "1");
    const auto a = fa2(256), b = fa2(512);
    const auto shares = gpu::share_modules({a.get(), b.get()});
    REQUIRE(shares[0]);
    std::string refused;
    const auto first = gpu::compile_shared(*shares[0]->module, gpu::kHopperArch, &refused);
    REQUIRE(first);
    CHECK(refused.empty());
    CHECK_FALSE(first->reused);
    CHECK(first->compiled.image.rfind("\x7f" "ELF", 0) == 0);
    const auto second = gpu::compile_shared(*shares[1]->module, gpu::kHopperArch, &refused);
    REQUIRE(second);
    CHECK(second->reused);
    CHECK(second->compiled.image == first->compiled.image);
    // Where a number that differs must be a constant (an array's size), NVRTC refuses the shared
    // text: said, and each member compiles its own.
    gpu::GeneratedProgram x = module_of("__global__ void k(float* p) { float t[4]; t[0] = 1; p[0] = t[0]; }\n");
    gpu::GeneratedProgram y = module_of("__global__ void k(float* p) { float t[8]; t[0] = 1; p[0] = t[0]; }\n");
    const auto bad = gpu::share_modules({&x, &y});
    REQUIRE(bad[0]);
    CHECK_FALSE(gpu::compile_shared(*bad[0]->module, gpu::kHopperArch, &refused));
    CHECK(refused.rfind("NVRTC refused the shared module: ", 0) == 0);
    std::string again;
    CHECK_FALSE(gpu::compile_shared(*bad[1]->module, gpu::kHopperArch, &again));
    CHECK(again == refused);
}
