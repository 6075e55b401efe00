// Generated CUDA takes the program's schedule lines. `stages S` (gpu/codegen/codegen_stages.cpp):
// a tile kept as the arrays' values that a loop loads first thing is a ring of S buffers that
// cp.async fills S − 1 iterations ahead; where the generator cannot, it says why at the tile's
// line (the timing pass's view of them: tests/test_tune.cpp). `warps W`: a block of W warps where products may run on the tensor cores.
// Tiles in registers that would not fit beside each other: the largest that only products read as their a stays in shared memory.
// On Hopper (gpu/codegen/codegen_hopper.cpp): tiles kept as the arrays' 16-bit values in the 128-byte swizzle, products of tiles in
// registers by them as wgmma, the instructions a module issues defined once, the fence that makes threads' writes visible to
// wgmma, and where none of it applies (whether the kernels compute the simulator's results on a GPU: tests/gpu/generated.sh).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <regex>

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/nvrtc.h"
#include "tests/support.h"

using namespace toysim;
using namespace toysim::testing;

namespace {

size_t count_of(const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
    return n;
}

const char* const kV3 = "programs/attention/schedules/fa2_v3_mma.toy";

// A block that loads a K-like tile per iteration of a loop and multiplies by it on the tensor
// cores: `before` goes first in the loop's body, `after` after the loop; the tile has `stages`.
std::string staged_program(int stages, const std::string& before = "", const std::string& after = "", const std::string& k = "input") {
    return fmt::format("registers 65536\nparam n = 512\ntile a[128][64]\ntile k[64][64] in shared stages {}\ntile c[128][64]\n"
                       "input X[n][64]\n{} K[n][64]\noutput Y[n][64]\n"
                       "parallel for i in 0..n/128 {{\n    LOAD X[i*128..i*128+128][0..64], a\n    SET 0, a, c\n"
                       "    for j in 0..n/64 {{\n{}        LOAD K[j*64..j*64+64][0..64], k\n        MAC a, k.T, c, c\n    }}\n{}"
                       "    STORE c, Y[i*128..i*128+128][0..64]\n}}\n",
                       stages, k, before, after);
}

std::vector<std::string> stage_notes(const gpu::GeneratedProgram& g) {
    std::vector<std::string> out;
    for (const gpu::SlowPath& s : g.slow_paths)
        if (contains(s.why, "stages")) out.push_back(fmt::format("{}: {}", s.loc.line, s.why));
    return out;
}

std::shared_ptr<const gpu::GeneratedProgram> v3(std::int64_t d, std::int64_t bc, gpu::DType dtype = gpu::DType::F16) {
    return gpu::generate_cuda(build_file(kV3, {{"n", 4096}, {"d", d}, {"Br", 128}, {"Bc", bc}}), dtype);
}

}  // namespace

TEST_CASE("codegen stages: fa2_v3_mma's K and V are copied a tile ahead with cp.async", "[codegen]") {
    const ParamSettings shape = {{"n", 4096}, {"d", 64}, {"Br", 128}, {"Bc", 64}};
    auto g = gpu::generate_cuda(build_file(kV3, shape), gpu::DType::F16);
    REQUIRE(g->kernels.size() == 1);
    const gpu::GeneratedKernel& k = g->kernels[0];
    // Two buffers each of K and V as fp16 (64 rows of 64, in the swizzle): twice the shared
    // memory of one, and the 1,024 bytes that align it.
    CHECK(k.shared_bytes == 2 * 2 * 64 * 64 * 2 + 1024);
    CHECK(k.tile_stages == std::vector<int>{0, 0, 2, 2, 0, 0, 0, 0, 0, 0});  // q o k v s p m m_new l scale
    CHECK(stage_notes(*g).empty());
    const std::string& s = g->source;
    CHECK(contains(s, "float* const k_stages = smem + 0;  // line 28: tile k[64][64] as T, its arrays' values (the 128-byte swizzle, which wgmma "
                      "reads): 2 buffers of 2048 floats, copied asynchronously"));
    CHECK(contains(s, "T* v = reinterpret_cast<T*>(v_stages);"));
    // The prologue: iteration 0's copies, one commit group.
    CHECK(contains(s, "const long long j = 0 + 0;\n        if (j < 64) {"));
    // In the loop: iteration j + 1's copies, then the wait for iteration j's, then the tile is
    // that buffer where the LOAD stands (its shape and count as before), and the block meets.
    CHECK(count_of(s, "tile_load_async(reinterpret_cast<T*>(k_stages + (j % 2) * 2048), Swizzle128<64>{}, K + (4096*j), 64, 1, rows, cols);") == 2);
    CHECK(count_of(s, "cp_async_commit();") == 2);
    CHECK(contains(s, "const long long j_ahead_ = j + 1;"));
    CHECK(contains(s, "cp_async_wait<1>();\n        // line 75: LOAD K[j*Bc..j*Bc+Bc][0..d], k"));
    CHECK(contains(s, "k = reinterpret_cast<T*>(k_stages + (j % 2) * 2048);  // copied ahead (stages 2)\n"
                      "            k_rows = rows; k_cols = cols;\n            if constexpr (kCount) reads_K += rows * cols;"));
    CHECK_FALSE(contains(s, "tile_load_stored(k,"));
    // fa2.toy, the same instructions without the schedule: its loads wait, as before.
    auto plain = gpu::generate_cuda(build_file("programs/attention/fa2.toy", shape), gpu::DType::F16);
    CHECK(plain->kernels[0].tile_stages.empty());
    CHECK_FALSE(contains(plain->source, "cp_async"));
    CHECK(contains(plain->source, "tile_load_stored(k, Swizzle128<64>{}, K + (4096*j), 64, 1, rows, cols);"));
}

TEST_CASE("codegen stages: stages 3 copies two iterations ahead into three buffers", "[codegen]") {
    auto g = gpu::generate_cuda(build(staged_program(3)), gpu::DType::BF16);
    REQUIRE(g->kernels.size() == 1);
    CHECK(g->kernels[0].tile_stages.at(1) == 3);
    CHECK(stage_notes(*g).empty());
    const std::string& s = g->source;
    CHECK(contains(s, "const long long j = 0 + 0;"));
    CHECK(contains(s, "const long long j = 0 + 1;"));
    CHECK(contains(s, "const long long j_ahead_ = j + 2;"));
    CHECK(contains(s, "cp_async_wait<2>();"));
    CHECK(contains(s, "k = reinterpret_cast<T*>(k_stages + (j % 3) * 2048);  // copied ahead (stages 3)"));
    CHECK(count_of(s, "cp_async_commit();") == 3);
}

TEST_CASE("codegen stages: a loop's staged tiles are copied the same iterations ahead, the fewest stages among them", "[codegen]") {
    // K with 2 stages and V with 3 in fa2_v3_mma's loop: both 1 iteration ahead, in 2 buffers
    // each (a copy 2 ahead would land in K's buffer in use).
    std::string text = SourceFile::read(std::string(TOYSIM_SOURCE_DIR) + "/" + kV3)->text;
    text.replace(text.find("tile v[Bc][d] in shared stages 2"), 32, "tile v[Bc][d] in shared stages 3");
    auto g = gpu::generate_cuda(build(text, {{"n", 4096}, {"d", 64}, {"Br", 128}, {"Bc", 64}}), gpu::DType::F16);
    REQUIRE(g->kernels.size() == 1);
    CHECK(g->kernels[0].tile_stages.at(2) == 2);
    CHECK(g->kernels[0].tile_stages.at(3) == 2);
    CHECK(g->kernels[0].shared_bytes == 2 * 2 * 64 * 64 * 2 + 1024);
    CHECK(contains(g->source, "const long long j_ahead_ = j + 1;"));
    CHECK(contains(g->source, "cp_async_wait<1>();"));
    CHECK(contains(g->source, "v = reinterpret_cast<T*>(v_stages + (j % 2) * 2048);  // copied ahead (stages 2)"));
    CHECK(stage_notes(*g) == std::vector<std::string>{"29: tile v: `stages 3` taken as 2, the fewest of the staged tiles its loop loads (a loop "
                                                      "copies them all the same iterations ahead)"});
}

TEST_CASE("codegen stages: a stages line the generator cannot honour is said at the tile's line", "[codegen]") {
    auto notes = [](const std::string& text, gpu::DType dtype) { return stage_notes(*gpu::generate_cuda(build(text), dtype)); };
    // fp32: no tile is kept as 16-bit values (and no product runs on the tensor cores).
    CHECK(notes(staged_program(2), gpu::DType::F32) ==
          std::vector<std::string>{"4: tile k: `stages 2` not applied, its LOADs wait: only a tile kept as the arrays' 16-bit values (a "
                                   "tensor-core product's b that only LOADs fill) is copied asynchronously"});
    // Something else runs in the loop before the LOAD.
    CHECK(notes(staged_program(2, "        SET 0, a, c\n"), gpu::DType::F16) ==
          std::vector<std::string>{"4: tile k: `stages 2` not applied, its LOADs wait: its LOAD must open a loop's body (the copy for a "
                                   "later iteration runs while this one computes)"});
    // A second LOAD into the tile inside the loop its first LOAD opens.
    std::string twice = staged_program(2);
    twice.replace(twice.find("        MAC a, k.T, c, c\n"), 0, "        MAC a, k.T, c, c\n        LOAD K[0..64][0..64], k\n");
    CHECK(notes(twice, gpu::DType::F16) ==
          std::vector<std::string>{"4: tile k: `stages 2` not applied, its LOADs wait: a second LOAD into it in the loop its first LOAD opens (the "
                                   "copies ahead take one a loop)"});
    // An array the program writes as well stays fp32, so its tiles are not kept as its values.
    CHECK(notes(staged_program(2, "", "    STORE c, K[i*128..i*128+128][0..64]\n", "output"), gpu::DType::F16).at(0).find("only a tile kept as") !=
          std::string::npos);
    // Shared memory: d = 256 with 128-row K and V tiles, 2 stages each, and Q (which leaves the
    // registers for shared memory: beside O, S and P it would pass 224 floats a thread) is
    // 328,704 bytes with the 1,024 that align the swizzle (fa2_v3_mma with 8 warps). Without
    // the stages, 197,632: every tile stays in shared memory.
    std::string eight = SourceFile::read(std::string(TOYSIM_SOURCE_DIR) + "/" + kV3)->text;
    eight.replace(eight.find("\nwarps 4\n"), 9, "\nwarps 8\n");
    auto big = gpu::generate_cuda(build(eight, {{"n", 512}, {"d", 256}, {"Br", 128}, {"Bc", 128}}), gpu::DType::F16);
    CHECK(big->kernels.at(0).tile_stages.empty());
    CHECK(big->kernels.at(0).spill_floats == 0);
    CHECK(big->kernels.at(0).shared_bytes == 197632);
    const std::string budget = "with its stages the block's tiles need 328704 bytes of shared memory, more than a block may have (232448)";
    CHECK(stage_notes(*big) == std::vector<std::string>{"28: tile k: `stages 2` not applied, its LOADs wait: " + budget,
                                                        "29: tile v: `stages 2` not applied, its LOADs wait: " + budget});
    // gpu cuda prints them with the program's other reasons, at the tile's file:line:col.
    CliResult r = run_cli({"gpu", "cuda", kV3, "--set", "n=512", "--dtype", "fp32"});
    REQUIRE(r.code == 0);
    CHECK(contains(r.out, "//   programs/attention/schedules/fa2_v3_mma.toy:28:6: tile k: `stages 2` not applied, its LOADs wait: only a tile"));
}

TEST_CASE("codegen warps: fa2_v3_mma's 4 warps take 32 rows each on the tensor cores", "[codegen]") {
    const ParamSettings shape = {{"n", 4096}, {"d", 64}, {"Br", 128}, {"Bc", 64}};
    auto g = gpu::generate_cuda(build_file(kV3, shape), gpu::DType::F16);
    CHECK(g->block_threads == 128);
    REQUIRE(g->kernels.size() == 1);
    CHECK(g->kernels[0].threads == 128);
    // Two 16-row blocks of each fragment tile a warp: each K/V fragment feeds two products.
    CHECK(contains(g->source, "float q[2][8][4];  // line 26: tile q[128][64]"));
    CHECK(contains(g->source, "float m[2][2];"));
    // Past 168 floats a thread in registers: as many blocks an SM as leave 255 registers a thread.
    CHECK(g->kernels[0].min_blocks == 2);
    CHECK(contains(g->source, "__launch_bounds__(128, 2) k0_parallel_for_i("));
    CHECK(contains(g->compile_unit(), "constexpr int kWarps = 4;"));
    // fa2.toy (no warps line) and fp32 runs keep 8 warps of 16 rows.
    auto plain = gpu::generate_cuda(build_file("programs/attention/fa2.toy", {{"n", 4096}, {"d", 64}, {"Br", 128}, {"Bc", 64}}), gpu::DType::F16);
    CHECK(plain->block_threads == 256);
    CHECK(contains(plain->source, "float q[1][8][4];"));
    CHECK(contains(plain->compile_unit(), "constexpr int kWarps = 8;"));
    CHECK(gpu::generate_cuda(build_file(kV3, shape), gpu::DType::F32)->block_threads == 256);
}

TEST_CASE("codegen warps: too few warps for a product on the CUDA cores take more, said at the warps line", "[codegen]") {
    // A 64 × 64 result from k = 4 (not whole fragments: the CUDA cores), 8 × 8 a thread at most:
    // 64 threads. `warps 1` gives 32.
    const std::string text =
        "registers 16384\nwarps 1\nparam n = 128\ntile a[64][4]\ntile b[4][64]\ntile c[64][64]\ninput X[n][4]\ninput W[4][64]\n"
        "output Y[n][64]\nparallel for i in 0..n/64 {\n    LOAD X[i*64..i*64+64][0..4], a\n    LOAD W[0..4][0..64], b\n    MAC_Z a, b, c\n"
        "    STORE c, Y[i*64..i*64+64][0..64]\n}\n";
    auto g = gpu::generate_cuda(build(text), gpu::DType::F16);
    CHECK(g->block_threads == 64);
    REQUIRE_FALSE(g->slow_paths.empty());
    bool said = false;
    for (const gpu::SlowPath& s : g->slow_paths)
        if (s.loc.line == 2 && s.loc.col == 7)
            said = s.why == "`warps 1` is too few for a product on the CUDA cores (a thread holds at most 8 × 8 of its result): its kernels run 2 warps";
    CHECK(said);
    CHECK(gpu::generate_cuda(build(text), gpu::DType::F32)->block_threads == 256);
}

TEST_CASE("codegen stages: fa2_causal's diagonal tile after the staged loop loads into the buffer in hand", "[codegen]") {
    auto g = gpu::generate_cuda(build_file("programs/attention/schedules/fa2_causal_v3_mma.toy", {{"n", 384}, {"d", 64}, {"B", 128}}), gpu::DType::F16);
    REQUIRE(g->kernels.size() == 1);
    CHECK(g->kernels[0].tile_stages.at(2) == 2);  // k
    CHECK(g->kernels[0].tile_stages.at(3) == 2);  // v
    CHECK(stage_notes(*g).empty());
    const std::string& s = g->source;
    // In the loop over the tiles below the diagonal, copied ahead; the diagonal's, after it, waits.
    CHECK(contains(s, "k = reinterpret_cast<T*>(k_stages + (j % 2) * 4096);  // copied ahead (stages 2)"));
    const size_t diagonal = s.find("// line 93: LOAD K[(T-1-t)*B..(T-1-t)*B+B][0..d], k");
    REQUIRE(diagonal != std::string::npos);
    CHECK(s.find("tile_load_stored(k, Swizzle128<128>{}, K + (-8192*t + 16384), 64, 1, rows, cols);", diagonal) != std::string::npos);
}

TEST_CASE("codegen registers: a tile that only products read as their a leaves the registers where they would spill", "[codegen]") {
    auto generated = [](std::int64_t d, std::int64_t bc) {
        return gpu::generate_cuda(build_file(kV3, {{"n", 4096}, {"d", d}, {"Br", 128}, {"Bc", bc}}), gpu::DType::F16);
    };
    auto q_notes = [](const gpu::GeneratedProgram& g) {
        std::vector<std::string> out;
        for (const gpu::SlowPath& s : g.slow_paths)
            if (contains(s.why, "not kept in registers")) out.push_back(fmt::format("{}:{}: {}", s.loc.line, s.loc.col, s.why));
        return out;
    };
    const std::string note = "26:6: tile q is read from shared memory at each product, not kept in registers: a thread would hold {} floats "
                             "of tiles in registers at once, more than the 224 that leave room for the rest without spilling ({} without it)";
    // d = 64, Bc = 64: Q (64 floats a thread), O (64), S or P (64, S's registers becoming P's) and
    // the row statistics (4 each) hold 204 at once: all in registers.
    auto fits = generated(64, 64);
    CHECK(q_notes(*fits).empty());
    CHECK(fits->kernels.at(0).tiles_in_registers.at(0));
    CHECK(contains(fits->source, "frag_product_wgmma<T, true>(acc, q, k, Swizzle128<64>{});"));
    // d = 128: Q and O are 128 floats each, 332 at once; Q leaves (204 without it), kept as fp16 in
    // shared memory (in the swizzle, as K and V) and read at each 16-column step: by wgmma from
    // there on Hopper (ldmatrix elsewhere).
    auto wide = generated(128, 64);
    CHECK(q_notes(*wide) == std::vector<std::string>{fmt::format(fmt::runtime(note), 332, 204)});
    const gpu::GeneratedKernel& k = wide->kernels.at(0);
    CHECK_FALSE(k.tiles_in_registers.at(0));
    CHECK(k.tiles_stored.at(0));
    CHECK(k.register_floats == 128 + 64 + 64 + 4 * 4);  // O, S, P and m, m_new, ℓ, scale
    CHECK(k.shared_bytes == 128 * 128 * 2 + 2 * 2 * 64 * 128 * 2 + 1024);
    CHECK(contains(wide->source, "T* const q = reinterpret_cast<T*>(smem + 0);  // line 26: tile q[128][128] as T, its arrays' values (the 128-byte "
                                 "swizzle, which wgmma reads)"));
    CHECK(contains(wide->source, "frag_product_wgmma_ab<T, true, 2, 8, 8>(acc, q, Swizzle128<128>{}, k, Swizzle128<64>{});  // on the tensor cores: "
                                 "128×128 by 128×64, both from shared memory (wgmma on Hopper)"));
    // P·V keeps P in registers: only a tile that LOADs fill leaves them.
    CHECK(contains(wide->source, "frag_product_wgmma<T, false>(acc, p, v, Swizzle128<64>{});"));
    // d = 64, Bc = 128: S and P are 128 wide, 268 at once with Q.
    CHECK(q_notes(*generated(64, 128)) == std::vector<std::string>{fmt::format(fmt::runtime(note), 268, 204)});
    // d = 128, Bc = 128: O, S and P hold 268 floats at once even without Q, which ptxas would
    // spill: the program's 4 warps become 8, each holding 16 rows (198 floats), said at `warps`.
    auto doubled = generated(128, 128);
    CHECK(doubled->block_threads == 256);
    REQUIRE(doubled->slow_paths.size() == 1);
    const gpu::SlowPath& warps = doubled->slow_paths[0];
    CHECK(fmt::format("{}:{}: {}", warps.loc.line, warps.loc.col, warps.why) ==
          "23:7: `warps 4` would leave a thread 268 floats of tiles in registers at once, more than the 224 that leave room for the rest "
          "(ptxas would spill; 198 with twice the warps, each holding half the rows): its kernels run 8 warps");
    CHECK(doubled->kernels.at(0).live_register_floats == 198);
    CHECK(contains(doubled->compile_unit(), "constexpr int kWarps = 8;"));
    // Without a `warps` line (8 warps) the same 268 floats at Br = 256 stay: said at the largest tile.
    auto spills = gpu::generate_cuda(build_file("programs/attention/fa2.toy", {{"n", 4096}, {"d", 128}, {"Br", 256}, {"Bc", 128}}), gpu::DType::F16);
    std::vector<std::string> left;
    for (const gpu::SlowPath& s : spills->slow_paths)
        if (contains(s.why, "ptxas spills")) left.push_back(fmt::format("{}:{}: {}", s.loc.line, s.loc.col, s.why));
    CHECK(left == std::vector<std::string>{
          "37:6: a thread holds 268 floats of tiles in registers at once, more than the 224 that leave room for the rest: ptxas spills registers "
          "to local memory, traffic that no array counts (the largest: tile o, 128 floats a thread; smaller tiles, or more warps, hold fewer)"});
    // fp32 keeps every tile in shared memory as fp32: nothing to say.
    CHECK(q_notes(*gpu::generate_cuda(build_file(kV3, {{"n", 4096}, {"d", 128}, {"Br", 128}, {"Bc", 64}}), gpu::DType::F32)).empty());
    // The schedule's causal twin at d = 64: S is not live past the loop's exponent, so the
    // diagonal tile's S after the loop adds nothing.
    auto causal = gpu::generate_cuda(build_file("programs/attention/schedules/fa2_causal_v3_mma.toy", {{"n", 4096}, {"d", 64}, {"B", 128}}),
                                     gpu::DType::F16);
    REQUIRE(q_notes(*causal).size() == 1);
    CHECK(contains(q_notes(*causal)[0], "would hold 268 floats of tiles in registers at once"));
}

TEST_CASE("codegen hopper: K and V in the swizzle make both products of fa2 wgmma", "[codegen]") {
    auto g = v3(64, 64);
    const std::string& s = g->source;
    // S = Q·Kᵀ: a (Q) from registers, b K-major (K transposed); O += P·V: b N-major (V as it is).
    CHECK(contains(s, "frag_product_wgmma<T, true>(acc, q, k, Swizzle128<64>{});  // on the tensor cores: 128×64 by 64×64 (wgmma on Hopper)"));
    CHECK(contains(s, "frag_product_wgmma<T, false>(acc, p, v, Swizzle128<64>{});  // on the tensor cores: 128×64 by 64×64 (wgmma on Hopper)"));
    // Each instruction defined once, before the kernels: m64n64k16, 32 accumulators a thread.
    CHECK(count_of(s, "template <> struct WgmmaRS<") == 2);
    CHECK(contains(s, "template <> struct WgmmaRS<64, false> {  // m64n64k16, a from registers, b K-major\n"
                      "    static __device__ __forceinline__ void mma(float (&d)[8][4], const unsigned (&a)[4], unsigned long long b) {\n"
                      "#ifdef TOYSIM_WGMMA\n"
                      "        asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %37, 0;\\n\"\n"
                      "                     \"wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, "
                      "%13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, "
                      "0;\\n}\\n\"\n"
                      "                     : \"+f\"(d[0][0]), \"+f\"(d[0][1]), \"+f\"(d[0][2]), \"+f\"(d[0][3]), \"+f\"(d[1][0])"));
    CHECK(contains(s, "\"+f\"(d[7][3])\n                     : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(b), \"r\"(1));\n#endif\n"));
    CHECK(contains(s, "template <> struct WgmmaRS<64, true> {  // m64n64k16, a from registers, b N-major"));
    CHECK(s.find("template <> struct WgmmaRS<") < s.find("// ---- k0_parallel_for_i"));
    // bf16 runs issue the bf16 form.
    CHECK(contains(v3(64, 64, gpu::DType::BF16)->source, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"));
    // The tiles in the swizzle first, from a 1,024-byte boundary: 1,024 bytes more than they take.
    CHECK(contains(s, "    extern __shared__ __align__(1024) float smem_raw[];\n"));
    CHECK(contains(s, "float* const smem = smem_raw + ((1024u - ((unsigned)__cvta_generic_to_shared(smem_raw) & 1023u)) & 1023u) / 4;"));
    CHECK(g->kernels.at(0).shared_bytes == 2 * 2 * 64 * 64 * 2 + 1024);
    // What the copies wrote becomes visible to wgmma's reads (the async proxy) before the block
    // meets for the products; the loop's other barrier (after the products) needs no fence.
    const std::string loop = s.substr(s.find("// line 74: for j in 0..Tc {"));
    CHECK(contains(loop, "async_proxy_fence();  // what was written to tiles in the swizzle, for wgmma's reads\n        __syncthreads();\n"));
    CHECK(count_of(loop, "async_proxy_fence();") == 1);
    CHECK(count_of(loop, "__syncthreads();") == 2);
}

TEST_CASE("codegen hopper: an a that left the registers is read by wgmma from shared memory too", "[codegen]") {
    // d = 128: Q leaves the registers (O, S, P and Q would pass 224 floats a thread) for the
    // swizzle, and S = Q·Kᵀ reads both operands through descriptors.
    auto g = v3(128, 64);
    const std::string& s = g->source;
    CHECK(contains(s, "frag_product_wgmma_ab<T, true, 2, 8, 8>(acc, q, Swizzle128<128>{}, k, Swizzle128<64>{});"));
    CHECK(contains(s, "template <> struct WgmmaSS<64, false> {  // m64n64k16, a from shared memory, b K-major\n"
                      "    static __device__ __forceinline__ void mma(float (&d)[8][4], unsigned long long a, unsigned long long b) {"));
    CHECK(contains(s, "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, "
                      "%27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;"));
    CHECK(contains(s, "template <> struct WgmmaRS<128, true> {  // m64n128k16, a from registers, b N-major"));
    CHECK(g->kernels.at(0).shared_bytes == 128 * 128 * 2 + 2 * 2 * 64 * 128 * 2 + 1024);
}

TEST_CASE("codegen hopper: tiles keep padded rows and mma.sync where wgmma cannot serve", "[codegen]") {
    // Columns that are not whole 64-value swizzle rows (d = 32), a block of 2 warps (not a
    // warpgroup), fp32 (no tile kept as 16-bit values).
    auto narrow = gpu::generate_cuda(build_file(kV3, {{"n", 4096}, {"d", 32}, {"Br", 128}, {"Bc", 64}}), gpu::DType::F16);
    CHECK(contains(narrow->source, "frag_product_stored<T, true>(acc, q, k, 40);"));
    CHECK(contains(narrow->source, "    extern __shared__ __align__(128) float smem[];\n"));
    std::string two = SourceFile::read(std::string(TOYSIM_SOURCE_DIR) + "/" + kV3)->text;
    two.replace(two.find("\nwarps 4\n"), 9, "\nwarps 2\n");
    auto pair = gpu::generate_cuda(build(two, {{"n", 4096}, {"d", 64}, {"Br", 64}, {"Bc", 64}}), gpu::DType::F16);
    CHECK(pair->block_threads == 64);
    CHECK(contains(pair->source, "frag_product_stored<T, true>(acc, q, k, 72);"));
    // Said at the tiles' lines, for the student on a Hopper GPU.
    auto hopper_notes = [](const gpu::GeneratedProgram& g) {
        std::vector<std::string> out;
        for (const gpu::SlowPath& s : g.slow_paths)
            if (contains(s.why, "on Hopper")) out.push_back(fmt::format("{}:{}: {}", s.loc.line, s.loc.col, s.why));
        return out;
    };
    CHECK(hopper_notes(*narrow) ==
          std::vector<std::string>{"28:6: tile k: on Hopper its products run on mma.sync from padded rows, not on wgmma: its 64 × 32 is not whole rows "
                                   "of the 128-byte swizzle (columns a multiple of 64, rows of 8)",
                                   "29:6: tile v: on Hopper its products run on mma.sync from padded rows, not on wgmma: its 64 × 32 is not whole rows "
                                   "of the 128-byte swizzle (columns a multiple of 64, rows of 8)"});
    CHECK(hopper_notes(*pair).at(0) == "28:6: tile k: on Hopper its products run on mma.sync from padded rows, not on wgmma: the block's 2 warps are not "
                                       "whole warpgroups of 4");
    CHECK(hopper_notes(*v3(64, 64)).empty());
    for (const auto& g : {narrow, pair, v3(64, 64, gpu::DType::F32)}) {
        CHECK_FALSE(contains(g->source, "wgmma"));
        CHECK_FALSE(contains(g->source, "Swizzle128"));
        CHECK_FALSE(contains(g->source, "async_proxy_fence"));
    }
}

TEST_CASE("codegen hopper: the schedule's wgmma kernels compile for sm_90a without spilling", "[codegen][nvrtc]") {
    std::string why;
    if (!gpu::nvrtc_available(&why)) SKIP("no NVRTC: " << why);
    // ptxas's registers and local memory (gpu cuda --compile), at the schedule's shapes the
    // benchmark runs: d = 64 and 128 at Bc = 64.
    for (const char* d : {"64", "128"}) {
        INFO("d = " << d);
        CliResult r = run_cli({"gpu", "cuda", kV3, "--dtype", "fp16", "--set", "n=4096", "--set", std::string("d=") + d, "--set", "Br=128", "--set",
                               "Bc=64", "--compile"});
        INFO(r.err);
        REQUIRE(r.code == 0);
        CHECK(contains(r.out, "for sm_90a (Hopper: wgmma where the module has it)"));
        std::smatch m;
        REQUIRE(std::regex_search(r.out, m, std::regex(R"(// k0_parallel_for_i \(line 69\): (\d+) registers a thread, nothing in local memory\n)")));
        CHECK(std::stoi(m[1]) <= 255);
    }
    // Before Hopper the same module (tiles in the swizzle) compiles to ldmatrix + mma.sync.
    auto g = v3(128, 64);
    CHECK_FALSE(gpu::compile_generated(*g, 80).image.empty());
}

TEST_CASE("codegen: tiles kept as 16-bit values that shared memory cannot hold are refused at the largest one's line", "[codegen][cli]") {
    // fa2 at d = 256 with 256-row Q, K and V tiles in fp16: 394,240 bytes of them. ldmatrix and
    // wgmma read only shared memory, so they cannot go to global memory as fp32 tiles do.
    CliResult r = run_cli({"gpu", "cuda", "programs/attention/fa2.toy", "--set", "n=1024", "--set", "d=256", "--set", "Br=256", "--set", "Bc=256",
                           "--dtype", "fp16"});
    CHECK(r.code == 2);
    CHECK(contains(r.err, "programs/attention/fa2.toy:36:6: error: cannot generate CUDA for this kernel: its tiles kept in shared memory as the "
                          "arrays' 16-bit values (the tensor cores' operands, which ldmatrix and wgmma read only there) need 394240 bytes of it, more "
                          "than a block may have (232448); the largest is tile q[256][256]"));
    // In fp32 such tiles go to global memory (at d = 128, Br = Bc = 128: d = 256 products would not
    // fit the threads on the CUDA cores), said as a slow path.
    CliResult fp32 = run_cli({"gpu", "cuda", "programs/attention/fa2.toy", "--set", "n=1024", "--set", "d=128", "--set", "Br=128", "--set", "Bc=128"});
    CHECK(fp32.code == 0);
    CHECK(contains(fp32.out, "in global memory: shared memory is full"));
}
