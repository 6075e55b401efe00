// A scalar grid whose iterations keep more registers than a thread holds, spread over lanes
// (gpu/codegen/codegen_lanes.cpp): which loops go to the lanes, and each reason a grid stays on
// a thread an iteration, at its line.
#include <catch2/catch.hpp>

#include <string>

#include "gpu/codegen/codegen.h"
#include "tests/support.h"

using namespace toysim;
using toysim::testing::build;
using toysim::testing::build_file;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A grid over rows of 32 with 300 registers (more than a thread holds) around `body`.
std::shared_ptr<const gpu::GeneratedProgram> rows(const std::string& body) {
    return gpu::generate_cuda(build("param n = 8\nregisters 300\ninput x[n][32]\noutput y[n][32]\nscratch z[n][32]\n"
                                    "parallel for i in 0..n {\n" + body + "}\n"),
                              gpu::DType::F32);
}

// The note of the grid at line 6, where it keeps a thread an iteration.
std::string note(const gpu::GeneratedProgram& g) {
    for (const gpu::SlowPath& s : g.slow_paths)
        if (s.loc.line == 6 && contains(s.why, "registers in one GPU thread")) return s.why;
    return "";
}

}  // namespace

TEST_CASE("codegen lanes: matmul_outer's tile of sums spreads over a warp an iteration", "[codegen][lanes]") {
    auto g = gpu::generate_cuda(build_file("programs/matmul_outer.toy", {{"n", 256}, {"t", 32}}), gpu::DType::F32);
    REQUIRE(g->kernels.size() == 1);
    const gpu::GeneratedKernel& k = g->kernels[0];
    CHECK(k.per_thread);
    CHECK(k.lanes == 32);
    CHECK(k.threads == 128);
    CHECK(contains(g->source, "    long long rest = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32;\n    const int lane = threadIdx.x % 32;\n"));
    // Lane j keeps column j of the tile (R[1 + t + i*t + j]) and B's element j (R[1 + j]), where lane 0 keeps its own.
    CHECK(contains(g->source, "const float a = R[0], b = R[rb - lane], c = R[rc - lane]; R[rd - lane] = D::add(c, D::mul(a, b));"));
    CHECK(contains(g->source, "        const long long j = 0 + lane + round17 * 32;\n"));
    // Every lane loads A's element (each reads it); lane 0 alone counts it.
    CHECK(contains(g->source, "if constexpr (kCount) if (lane == 0) reads_a += 1;\n                R[0] = to_float(a[8192*i0 + 256*i + k]);"));
    // The loops over i pick a lane's registers: unrolled, so each is a number.
    CHECK(contains(g->source, "#pragma unroll  // its variable picks a lane's register: a number once unrolled\n        for (long long i = 0; i < 32; ++i) {"));
    CHECK_FALSE(contains(g->source, "#pragma unroll  // its variable picks a lane's register: a number once unrolled\n    for (long long k"));
    for (const gpu::SlowPath& s : g->slow_paths) CHECK_FALSE(contains(s.why, "registers in one GPU thread"));
    // t = 16: 16 lanes, two iterations a warp; t = 64: 32 lanes of two rounds each.
    CHECK(gpu::generate_cuda(build_file("programs/matmul_outer.toy", {{"n", 64}, {"t", 16}}), gpu::DType::F32)->kernels[0].lanes == 16);
    auto wide = gpu::generate_cuda(build_file("programs/matmul_outer.toy", {{"n", 128}, {"t", 64}}), gpu::DType::F32);
    CHECK(wide->kernels[0].lanes == 32);
    CHECK(contains(wide->source, "round2 < 2; ++round2"));
    // t = 4: 21 registers, which a thread holds: a thread an iteration, as before.
    CHECK(gpu::generate_cuda(build_file("programs/matmul_outer.toy", {{"n", 64}, {"t", 4}}), gpu::DType::F32)->kernels[0].lanes == 1);
}

TEST_CASE("codegen lanes: a grid that names its lanes' registers elsewhere keeps a thread an iteration, and says why", "[codegen][lanes]") {
    const std::string load = "  for j in 0..32 {\n    LOAD x[i][j], R[1 + j]\n  }\n";
    const std::string add = "  for j in 0..32 {\n    ADD R[1 + j], R[1 + j], R[100 + j]\n  }\n";
    const std::string store = "  for j in 0..32 {\n    STORE R[100 + j], y[i][j]\n  }\n";
    // The accepted form: three loops over the row's registers.
    auto ok = rows(load + add + store);
    CHECK(ok->kernels[0].lanes == 32);
    CHECK(note(*ok).empty());
    // Each refusal, with its reason.
    CHECK(note(*rows(load + add + store + "  STORE R[100], y[i][0]\n")) ==
          "each iteration keeps its 300 registers in one GPU thread, more than it holds (ptxas spills them to local memory); its loops over "
          "registers stay on that thread: STORE at line 16 names R100, which a loop over registers gives to one thread, outside such a loop");
    CHECK(contains(note(*rows(load + "  for j in 0..16 {\n    ADD R[1 + 2*j], R[1 + 2*j], R[100 + j]\n  }\n")),
                   "ADD at line 11 names a register whose index has 2 times the loop's variable"));
    CHECK(contains(note(*rows(load + "  for j in 0..31 {\n    ADD R[2 + j], R[2 + j], R[2 + j]\n  }\n")),
                   "R2 is written by lanes 1 and 0 (ADD at line 11): its loops give it to different threads"));
    CHECK(contains(note(*rows(load + "  for j in 0..31 {\n    STORE R[2 + j], y[i][j]\n  }\n")), "STORE at line 11 reads R2, which its thread does not keep"));
    CHECK(contains(note(*rows(load + add + "  for j in 0..32 {\n    STORE R[100 + j], z[i][j]\n  }\n  LOAD z[i][0], R0\n")),
                   "it both reads and writes array z"));
    // A register outside the register file: the kernel stops there at run time, as a thread an iteration does.
    CHECK(contains(note(*rows("  for j in 0..32 {\n    LOAD x[i][j], R[290 + j]\n  }\n  for j in 0..32 {\n    STORE R[290 + j], y[i][j]\n  }\n")),
                   "LOAD at line 8 names a register outside the register file"));
    // Two lanes writing one element, whose order the program decides.
    CHECK(contains(note(*rows(load + add + store + "  for j in 0..32 {\n    STORE R[100 + j], y[i][0]\n  }\n")),
                   "array y is written by two instructions (STORE at line 14 and STORE at line 17): its lanes could write an element in another order"));
    CHECK(contains(note(*rows(load + add + "  for j in 0..32 {\n    STORE R[100 + j], y[i][0]\n  }\n")),
                   "STORE at line 14 may write one element in two iterations of the loop at line 13"));
    CHECK(contains(note(*rows(load + add + "  for k in 0..2 {\n    for j in 0..32 {\n      STORE R[100 + j], y[i][k + j]\n    }\n  }\n")),
                   "STORE at line 15 may write one element in two iterations of its loops"));
    CHECK(rows(load + add + "  for k in 0..2 {\n    for j in 0..16 {\n      STORE R[100 + j], y[i][16*k + j]\n    }\n  }\n")->kernels[0].lanes == 32);
    CHECK(contains(note(*rows("  LOAD x[i][0], R0\n  for j in 0..32 {\n    ADD R0, R0, R0\n  }\n  STORE R0, y[i][0]\n")),
                   "no loop names registers by R[expr] with the loop's variable at coefficient 1"));
}
