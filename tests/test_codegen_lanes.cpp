// A scalar grid whose iterations keep more registers than a thread holds, spread over lanes
// (gpu/codegen/codegen_lanes.cpp): which loops go to the lanes, and each reason a grid stays on
// a thread an iteration, at its line.
#include <catch2/catch.hpp>

#include <string>

#include "gpu/codegen/codegen.h"
#include "tests/support.h"

using namespace toysim;
using toysim::testing::build;
using toysim::testing::contains;
using toysim::testing::build_file;

namespace {

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

TEST_CASE("codegen lanes: matmul_outer's tile of sums spreads over a block an iteration", "[codegen][lanes]") {
    auto g = gpu::generate_cuda(build_file("programs/matmul_outer.toy", {{"n", 256}, {"t", 32}}), gpu::DType::F32);
    REQUIRE(g->kernels.size() == 1);
    const gpu::GeneratedKernel& k = g->kernels[0];
    CHECK(k.per_thread);
    // Lanes 32 × 32: lane (y, x) runs the loops' iteration i = y, j = x, and keeps c's partial sum (i, j).
    CHECK(k.lanes == 1024);
    CHECK(k.threads == 1024);
    CHECK(contains(g->source, "    long long rest = (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 1024;\n"
                              "    const int lane_x = threadIdx.x % 32, lane_y = threadIdx.x / 32 % 32;\n"));
    CHECK(contains(g->source, "            const long long i = 0 + lane_y + round15 * 32;\n"));
    CHECK(contains(g->source, "                const long long j = 0 + lane_x + round17 * 32;\n"));
    // Each lane's registers where lane (0, 0) keeps its own: numbers once the rounds unroll.
    CHECK(contains(g->source, "const float a = R[0], b = R[(0 + round17 * 32) + 1], c = R[32*(0 + round15 * 32) + (0 + round17 * 32) + 33]; "
                              "R[32*(0 + round15 * 32) + (0 + round17 * 32) + 33] = D::add(c, D::mul(a, b));"));
    // Every lane of a row loads A's element (R0, each row's own), lane_x 0 alone counts it; B's
    // row is loaded by every row of lanes, counted by lane_y 0.
    CHECK(contains(g->source, "if constexpr (kCount) if (lane_x == 0) reads_a += 1;\n                R[0] = to_float(a[8192*i0 + 256*i + k]);"));
    CHECK(contains(g->source, "if constexpr (kCount) if (lane_y == 0) reads_b += 1;\n                R[(0 + round12 * 32) + 1] = to_float(b[256*k + 32*j0 + j]);"));
    CHECK(contains(g->source, "if constexpr (kCount) writes_c += 1;"));
    CHECK_FALSE(contains(g->source, "#pragma unroll  // its variable picks"));  // k picks no register
    for (const gpu::SlowPath& s : g->slow_paths) CHECK_FALSE(contains(s.why, "registers in one GPU thread"));
    // t = 16: 16 × 16 lanes; t = 64: 32 × 32 lanes of two rounds each.
    CHECK(gpu::generate_cuda(build_file("programs/matmul_outer.toy", {{"n", 64}, {"t", 16}}), gpu::DType::F32)->kernels[0].lanes == 256);
    auto wide = gpu::generate_cuda(build_file("programs/matmul_outer.toy", {{"n", 128}, {"t", 64}}), gpu::DType::F32);
    CHECK(wide->kernels[0].lanes == 1024);
    CHECK(contains(wide->source, "round5 < 2; ++round5) {  // i's iterations over the 32 lanes of lane_y"));
    // More tiles, fewer lanes: as few as give the grid 65,536 threads (kLaneThreads), each lane
    // keeping several partial sums (rounds). n = 1024: 1,024 tiles on 8 × 8 lanes, four rounds
    // each way; n = 2048: 4,096 tiles on 4 × 4.
    auto big = gpu::generate_cuda(build_file("programs/matmul_outer.toy", {{"n", 1024}, {"t", 32}}), gpu::DType::F32);
    CHECK(big->kernels[0].lanes == 64);
    CHECK(big->kernels[0].threads == 128);
    CHECK(contains(big->source, "const int lane_x = threadIdx.x % 8, lane_y = threadIdx.x / 8 % 8;"));
    CHECK(contains(big->source, "round15 < 4; ++round15) {  // i's iterations over the 8 lanes of lane_y"));
    CHECK(gpu::generate_cuda(build_file("programs/matmul_outer.toy", {{"n", 2048}, {"t", 32}}), gpu::DType::F32)->kernels[0].lanes == 16);
    {
        // TOYSIM_LANES forces a shape (gpu/tools/lanes_shape.sh measures them all).
        testing::ScopedEnv forced("TOYSIM_LANES", "16x8");
        CHECK(gpu::generate_cuda(build_file("programs/matmul_outer.toy", {{"n", 1024}, {"t", 32}}), gpu::DType::F32)->kernels[0].lanes == 128);
    }
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
                   "R2 is written by lane_x 1 and by lane_x 0 (ADD at line 11): its loops give it to different threads"));
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

TEST_CASE("codegen lanes: a register private to a row loop's iterations, and where it is not", "[codegen][lanes]") {
    // Rows of an outer product: the loops over i and j both go to lanes (16 × 16), R0 each row's own.
    auto outer = [](const std::string& row_body, const std::string& after) {
        return gpu::generate_cuda(build("param n = 4\nregisters 300\ninput x[n][16]\ninput w[16]\noutput y[n][256]\noutput s[n]\n"
                                        "parallel for r in 0..n {\n"
                                        "  for j in 0..16 {\n    LOAD w[j], R[1 + j]\n  }\n"
                                        "  for i in 0..16 {\n" + row_body + "  }\n"
                                        "  for i in 0..16 {\n    for j in 0..16 {\n      STORE R[20 + 16*i + j], y[r][16*i + j]\n    }\n  }\n" + after + "}\n"),
                                  gpu::DType::F32);
    };
    const std::string load = "    LOAD x[r][i], R0\n";
    const std::string product = "    for j in 0..16 {\n      MAC_Z R0, R[1 + j], R[20 + 16*i + j]\n    }\n";
    auto g = outer(load + product, "");
    CHECK(g->kernels[0].lanes == 256);
    CHECK(contains(g->source, "const int lane_x = threadIdx.x % 16, lane_y = threadIdx.x / 16 % 16;"));
    // R0 named after the rows: not each row's own; the rows stay in order on each lane, j over 16 lanes.
    auto after = outer(load + product, "  STORE R0, s[r]\n");
    CHECK(after->kernels[0].lanes == 16);
    // Read before the row writes it (the previous row's R0, the first row's from before the
    // rows): not each row's own either.
    auto before = gpu::generate_cuda(build("param n = 4\nregisters 300\ninput x[n][16]\ninput w[16]\noutput y[n][256]\n"
                                           "parallel for r in 0..n {\n"
                                           "  for j in 0..16 {\n    LOAD w[j], R[1 + j]\n  }\n"
                                           "  LOAD x[r][0], R0\n"
                                           "  for i in 0..16 {\n" + product + load + "  }\n"
                                           "  for i in 0..16 {\n    for j in 0..16 {\n      STORE R[20 + 16*i + j], y[r][16*i + j]\n    }\n  }\n}\n"),
                                     gpu::DType::F32);
    CHECK(before->kernels[0].lanes == 16);
    // A second row loop that reads R0 before its row writes it (the first loop's last row's).
    CHECK(outer(load + product, "  for i in 0..16 {\n    for j in 0..16 {\n      MAC R0, R[1 + j], R[20 + 16*i + j], R[20 + 16*i + j]\n    }\n"
                                "    LOAD x[r][i], R0\n  }\n")
              ->kernels[0]
              .lanes == 16);
}

