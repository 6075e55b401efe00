// gpu/codegen/codegen.h: CUDA generated from a program. What the generator decides (kernels, stages,
// host loops, where tiles live, which arrays stay fp32), the text it writes, the programs it
// refuses, and that every shipped program and exercise solution compiles with NVRTC (the
// compiler `toysim gpu run` uses; skipped where the toolkit's libnvrtc is missing). Running
// the kernels needs a GPU: tests/gpu/generated.sh.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/nvrtc.h"
#include "sim/grade/grade.h"
#include "sim/print/gpu_report.h"
#include "tests/support.h"

using namespace toysim;
using namespace toysim::testing;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<const gpu::GeneratedProgram> generated(const std::string& path, const ParamSettings& settings = {},
                                                       gpu::DType dtype = gpu::DType::F32) {
    return gpu::generate_cuda(build_file(path, settings), dtype);
}

// Every exercise's reference solution inside its spec, at the spec's defaults.
std::vector<std::pair<std::string, Program>> exercise_solutions() {
    std::vector<std::pair<std::string, Program>> out;
    const fs::path root = fs::path(TOYSIM_SOURCE_DIR) / "programs/exercises";
    std::vector<fs::path> folders;
    for (const auto& e : fs::directory_iterator(root))
        if (fs::exists(e.path() / "exercise.toy")) folders.push_back(e.path());
    std::sort(folders.begin(), folders.end());
    for (const auto& f : folders) {
        auto tree = grade::solution_program(SourceFile::read((f / "exercise.toy").string()), SourceFile::read((f / "solution.toy").string()));
        out.emplace_back(f.filename().string(), compile(tree));
    }
    return out;
}

}  // namespace

TEST_CASE("codegen: fa2 is one grid kernel, a block per Q tile, under its .toy lines", "[codegen]") {
    auto g = generated("programs/attention/fa2.toy", {{"n", 7}, {"d", 3}, {"Br", 3}, {"Bc", 2}});
    REQUIRE(g->kernels.size() == 1);
    REQUIRE(g->stages.size() == 1);
    CHECK(g->stages[0].name == "parallel for i (line 79)");
    CHECK(g->kernels[0].function == "k0_parallel_for_i");
    CHECK_FALSE(g->kernels[0].per_thread);
    CHECK(g->kernels[0].threads == 256);
    CHECK(g->kernels[0].grid.size() == 1);
    // Every instruction under the line it came from; the edge tile clipped at n = 7.
    CHECK(contains(g->source, "// line 80: LOAD Q[i*Br..i*Br+Br][0..d], q\n"));
    CHECK(contains(g->source, "const int rows = (int)(clip(3*i + 3, 7) - (3*i)), cols = 3;"));
    CHECK(contains(g->source, "// line 98: MAC p, v, o, o             # O = O·e^(m − m_new) + P̃·V_j\n"));
    CHECK(contains(g->source, "if constexpr (kCount) reads_K += rows * cols;"));
    CHECK(contains(g->source, "extern \"C\" __global__ void __launch_bounds__(256, 2) k0_parallel_for_i_count("));
    // The ISA table's semantics, verbatim.
    CHECK(contains(g->source, "return D::exp(a);"));
    CHECK(contains(gpu::device_prelude(), "static __device__ __forceinline__ float max(float a, float b) { return toysim_max(a, b); }"));
    // The catalog row: every array, one stage.
    REQUIRE(g->spec.arrays.size() == 5);
    CHECK(g->spec.arrays[4].name == "L");
    CHECK(g->spec.stages.size() == 1);
}

namespace {
// The text between two markers of a generated source.
std::string between(const std::string& text, const std::string& from, const std::string& to) {
    const size_t a = text.find(from);
    const size_t b = text.find(to, a == std::string::npos ? 0 : a);
    return a == std::string::npos || b == std::string::npos ? std::string() : text.substr(a, b - a);
}
size_t count_of(const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
    return n;
}
// Lines that are exactly `line` but for their indentation.
size_t lines_of(const std::string& text, const std::string& line) {
    std::istringstream in(text);
    size_t n = 0;
    for (std::string l; std::getline(in, l);) n += l.substr(std::min(l.find_first_not_of(' '), l.size())) == line;
    return n;
}
}  // namespace

TEST_CASE("codegen: generated CUDA refuses e4m3, which only the FP8 kernels take", "[codegen]") {
    CHECK_THROWS_WITH(generated("programs/attention/fa2.toy", {}, gpu::DType::E4M3), "generated CUDA runs in fp32, fp16 or bf16, not e4m3");
}

TEST_CASE("codegen: row-by-row instructions wait for the warp, and the block meets twice per K/V tile of fa2", "[codegen]") {
    // Row i of every tile is warp i mod 8's: the online softmax between the two products reads
    // and writes only its own rows (a __syncwarp between them); K_j and V_j, which every warp
    // reads whole, need the block: once loaded, and before the next tile overwrites them.
    auto g = generated("programs/attention/fa2.toy", {{"n", 256}, {"d", 64}, {"Br", 64}, {"Bc", 64}});
    const std::string body = between(g->source, "// line 84: for j in 0..Tc {", "// line 101: DIV o, l, o");
    REQUIRE_FALSE(body.empty());
    CHECK(lines_of(body, "__syncthreads();") == 2);
    CHECK(count_of(body, "__syncwarp();") == 8);
    CHECK(contains(body, "tile_product4<4, 4, false, true>(warp_part(), out_ptr, 68, q, 68, k, 68,"));
    // A source whose one row may be broadcast to every row (m_new here, when a tile has one
    // row), or a destination written staged, takes the whole block between two barriers.
    CHECK(contains(body, "const bool spread = (m_rows == 1 && rows > 1) || (m_new_rows == 1 && rows > 1);"));
    CHECK(count_of(body, "if (spread) __syncthreads();") == 2 * count_of(body, "const bool spread ="));
    // A product on the tensor cores is the whole block's: the rows it writes are not the warps'.
    auto tc = generated("programs/attention/fa2.toy", {{"n", 256}, {"d", 64}, {"Br", 64}, {"Bc", 64}}, gpu::DType::F16);
    const std::string tc_body = between(tc->source, "// line 84: for j in 0..Tc {", "// line 101: DIV o, l, o");
    CHECK(lines_of(tc_body, "__syncthreads();") == 4);
    CHECK(contains(tc_body, "tile_product_tc<false, true>("));
}

TEST_CASE("codegen: a serial loop around a grid is a loop on the host", "[codegen]") {
    // fa1.toy: for j { LOAD K, V (worker 0); parallel for i { ... } }.
    auto g = generated("programs/attention/fa1.toy", {}, gpu::DType::F16);
    REQUIRE(g->stages.size() == 1);
    CHECK(g->stages[0].name == "for j (line 72)");
    REQUIRE(g->stages[0].steps.size() == 1);
    const gpu::GeneratedStep& loop = g->stages[0].steps[0];
    REQUIRE(loop.loop);
    CHECK(loop.loop->var == "j");
    REQUIRE(loop.body.size() == 2);  // the serial loads, then the grid
    CHECK(g->kernels[static_cast<size_t>(loop.body[0].kernel)].grid.empty());
    CHECK(g->kernels[static_cast<size_t>(loop.body[1].kernel)].grid.size() == 1);
    // The grid reads worker 0's k and v from the register file; the serial kernel keeps them there.
    CHECK(contains(g->source, "const long long j = host.v[0];  // line 72: the host's loop"));
    // k's rows of 4 columns are 12 floats apart in shared memory (3 pieces of 16 bytes: an odd
    // count, so 8 rows read 16 bytes at a time hit 8 different groups of banks); 4 in the file.
    CHECK(contains(g->source, "tile_copy(k, 12, regfile + 0, 4, k_rows, k_cols);"));
    CHECK(contains(g->source, "tile_copy(regfile + 0, 4, k, 12, k_rows, k_cols);"));
    // Tiles named as arrays get a suffix; the running state O, m, ℓ stays in fp32.
    CHECK(contains(g->source, "float* const m_tile = smem +"));
    CHECK(contains(g->source, "but O, m, l (read and written: a running state) as fp32"));
    CHECK(g->spec.arrays[3].always_f32);  // O
    CHECK_FALSE(g->spec.arrays[0].always_f32);  // Q
}

TEST_CASE("codegen: standard_tiled is three grids, and a scalar grid runs a thread per iteration", "[codegen]") {
    auto g = generated("programs/attention/standard_tiled.toy");
    REQUIRE(g->stages.size() == 3);
    CHECK(g->kernels.size() == 3);
    auto s = gpu::generate_cuda(build("registers 2\nparam n = 8\ninput x[n]\noutput y[n]\n"
                                      "parallel for i in 0..n {\n    LOAD x[i], R0\n    ADD R0, R0, R1\n    STORE R1, y[i]\n}\n"),
                                gpu::DType::F32);
    REQUIRE(s->kernels.size() == 1);
    CHECK(s->kernels[0].per_thread);
    CHECK(s->kernels[0].threads == 128);
    CHECK(contains(s->source, "const float a = R[0], b = R[0]; R[1] = D::add(a, b);"));
    CHECK(contains(s->source, "store_to(&y[i], R[1]);"));
    // Serial code: one thread per head.
    auto p1 = generated("programs/p1_c00.toy");
    REQUIRE(p1->kernels.size() == 1);
    CHECK(p1->kernels[0].per_thread);
    CHECK(p1->kernels[0].threads == 1);
    CHECK(p1->stages[0].name.rfind("serial (line", 0) == 0);
}

TEST_CASE("codegen: tiles shared memory cannot hold go to global memory", "[codegen]") {
    // fa2_gqa at G = 4, Br = 64: four 256×64 tiles (q, o, s, p), 272 KiB of them with their padding.
    auto g = generated("programs/attention/fa2_gqa.toy", {{"n", 256}, {"d", 64}, {"Br", 64}, {"Bc", 64}, {"G", 4}, {"Hkv", 2}});
    bool spilled = false;
    for (const auto& k : g->kernels) {
        CHECK(k.shared_bytes <= 227 * 1024);
        spilled = spilled || k.spill_floats > 0;
    }
    CHECK(spilled);
    CHECK(contains(g->source, "in global memory: shared memory is full"));
    // Said at the largest tile's line, with the bytes that no array counts.
    std::vector<std::string> said;
    for (const gpu::SlowPath& s : g->slow_paths)
        if (contains(s.why, "global memory")) said.push_back(fmt::format("{}:{}: {}", s.loc.line, s.loc.col, s.why));
    CHECK(said == std::vector<std::string>{"54:6: the block's tiles need more shared memory than a block may have: 139264 bytes of them live in global "
                                           "memory, traffic that no array counts (the largest tile: q[256][64])"});
}

TEST_CASE("codegen: a product whose result no block can hold in registers is a located error", "[codegen]") {
    const std::string text = "registers 1000000\ntile a[512][4]\ntile b[4][512]\ntile c[512][512]\ninput A[512][4]\ninput B[4][512]\n"
                             "LOAD A[0..512][0..4], a\nLOAD B[0..4][0..512], b\nMAC_Z a, b, c\n";
    Program p = build(text);
    try {
        gpu::generate_cuda(p, gpu::DType::F32);
        FAIL("no error");
    } catch (const ToyError& e) {
        CHECK(e.loc().line == 9);
        CHECK(std::string(e.what()) ==
              "cannot generate CUDA for this product: its result tile holds 512×512 elements, more than 256 threads can hold in registers at 8×8 each");
    }
}

TEST_CASE("codegen: toysim gpu cuda prints the module, and --exercise reads a solution in its spec", "[codegen]") {
    auto r = run_cli({"gpu", "cuda", std::string(TOYSIM_SOURCE_DIR) + "/programs/p2_matmul_inner_3reg.toy"});
    CHECK(r.code == 0);
    CHECK(contains(r.out, "// p2_matmul_inner_3reg.toy, as CUDA: generated by `toysim gpu cuda` (gpu/codegen.cpp)."));
    CHECK_FALSE(contains(r.out, "toysim's device prelude"));
    auto with_prelude = run_cli({"gpu", "cuda", std::string(TOYSIM_SOURCE_DIR) + "/programs/p2_matmul_inner_3reg.toy", "--prelude"});
    CHECK(contains(with_prelude.out, "// ---- toysim's device prelude (gpu/codegen_prelude.cpp) ----"));
    const std::string folder = std::string(TOYSIM_SOURCE_DIR) + "/programs/exercises/fa2_forward";
    auto ex = run_cli({"gpu", "cuda", folder + "/solution.toy", "--exercise", folder});
    CHECK(ex.code == 0);
    CHECK(contains(ex.out, "// solution.toy, as CUDA"));
    auto bad = run_cli({"gpu", "cuda", folder + "/solution.toy"});  // a solution alone lacks the spec's names
    CHECK(bad.code == 2);
}

TEST_CASE("codegen: fp16 and bf16 products of whole fragments take the tensor cores, unless told not to", "[codegen]") {
    const ParamSettings shape = {{"n", 256}, {"d", 64}, {"Br", 64}, {"Bc", 64}};
    auto half = generated("programs/attention/fa2.toy", shape, gpu::DType::F16);
    CHECK(half->tensor_cores);
    // Q·Kᵀ from nothing; P·V onto O (the destination itself), when its shape is the product's.
    CHECK(contains(half->source, "if (tc_fits(rows, cols, inner)) tile_product_tc<false, true>(out_ptr, 68, q, 68, k, 68, nullptr, 0, rows, cols, inner);"));
    CHECK(contains(half->source, "if (tc_fits(rows, cols, inner) && o_rows == rows && o_cols == cols) tile_product_tc<false, false>(out_ptr, 68, p, 68, v, 68, o, 68"));
    auto plain = gpu::generate_cuda(build_file("programs/attention/fa2.toy", shape), gpu::DType::F16, false);
    CHECK_FALSE(plain->tensor_cores);
    CHECK_FALSE(contains(plain->source, "tile_product_tc<"));
    auto fp32 = generated("programs/attention/fa2.toy", shape, gpu::DType::F32);
    CHECK_FALSE(contains(fp32->source, "tile_product_tc<"));  // fp32 runs keep fp32 products
}

TEST_CASE("codegen: tiles of a proven shape live in registers as the tensor cores' fragments", "[codegen]") {
    // fa2 with 128-row Q tiles in fp16: a 16-row block per warp. Q, O, S, P and the row
    // statistics go to registers; K and V, the products' b, stay in shared memory as fp16.
    const ParamSettings shape = {{"n", 512}, {"d", 64}, {"Br", 128}, {"Bc", 64}};
    auto g = generated("programs/attention/fa2.toy", shape, gpu::DType::F16);
    for (const char* tile : {"float q[1][8][4];", "float o[1][8][4];", "float s[1][8][4];", "float p[1][8][4];", "float m[1][2];",
                             "float m_new[1][2];", "float l[1][2];", "float scale[1][2];"})
        CHECK(contains(g->source, tile));
    // K and V as fp16 in Hopper's 128-byte swizzle (64 columns: one swizzle atom a row), from
    // a 1,024-byte boundary; their products are wgmma on Hopper (test_codegen_hopper.cpp).
    CHECK(contains(g->source, "T* const k = reinterpret_cast<T*>(smem + 0);  // line 38: tile k[64][64] as T, its arrays' values (the 128-byte swizzle, which wgmma reads)"));
    CHECK(contains(g->source, "T* const v = reinterpret_cast<T*>(smem + 2048);"));
    REQUIRE(g->kernels.size() == 1);
    CHECK(g->kernels[0].shared_bytes == 2 * 64 * 64 * 2 + 1024);  // K and V as fp16, nothing else, and the alignment
    const std::string loop = between(g->source, "// line 84: for j in 0..Tc {", "// line 101: DIV o, l, o");
    CHECK(contains(loop, "tile_load_stored(k, Swizzle128<64>{}, K + (4096*j), 64, 1, rows, cols);"));
    CHECK(contains(loop, "frag_product_wgmma<T, true>(acc, q, k, Swizzle128<64>{});  // on the tensor cores: 128×64 by 64×64 (wgmma on Hopper)"));
    CHECK(contains(loop, "frag_product_wgmma<T, false>(acc, p, v, Swizzle128<64>{});"));
    // At d = 32 (half a swizzle atom a row) they keep padded rows, read by ldmatrix.
    auto narrow = generated("programs/attention/fa2.toy", {{"n", 512}, {"d", 32}, {"Br", 128}, {"Bc", 64}}, gpu::DType::F16);
    CHECK(contains(narrow->source, "T* const k = reinterpret_cast<T*>(smem + 0);  // line 38: tile k[64][32] as T, its arrays' values (row stride 40)"));
    CHECK(contains(narrow->source, "frag_product_stored<T, true>(acc, q, k, 40);  // on the tensor cores: 128×32 by 32×64"));
    CHECK(narrow->kernels[0].shared_bytes == 2 * 64 * 40 * 2);
    CHECK(contains(loop, "frag_rowreduce(m_new, s, [](float a, float b) { return D::max(a, b); });"));
    // S − m_new and its e^x run as one: an FMA and an ex2 (fast_exp_diff), the EXP's line saying so.
    CHECK(contains(loop, "FRAG_FOR(1, 8) { const float a = s[mi][cb][e], b = m_new[mi][e >> 1]; s[mi][cb][e] = D::sub(a, b); p[mi][cb][e] = fast_exp_diff(a, b); }"));
    CHECK(contains(loop, "EXP s, p                   # P̃ = e^(S − m_new)\n        {\n            // (taken with the SUB before it: e^(a − b) in one exp2)\n        }"));
    CHECK(contains(loop, "ROWS_FOR(1) { const float a = m[mi][h], b = m_new[mi][h]; scale[mi][h] = D::sub(a, b); scale[mi][h] = fast_exp_diff(a, b); }"));
    CHECK_FALSE(contains(loop, "fast_exp(a)"));
    {
        // Not where the EXP is not the next instruction or takes another tile: SUB s, then SUB
        // of scale, EXP s, EXP scale (the same values, each e^x on its own).
        std::string text = SourceFile::read(std::string(TOYSIM_SOURCE_DIR) + "/programs/attention/fa2.toy")->text;
        const std::string exp_s = "        EXP s, p                   # P̃ = e^(S − m_new)\n", sub_m = "        SUB m, m_new, scale\n";
        REQUIRE(contains(text, exp_s + sub_m));
        text.replace(text.find(exp_s + sub_m), exp_s.size() + sub_m.size(), sub_m + exp_s);
        auto apart = gpu::generate_cuda(build(text, {{"n", 256}, {"d", 64}, {"Br", 128}, {"Bc", 64}}), gpu::DType::F16);
        CHECK_FALSE(contains(apart->source, "fast_exp_diff(a, b)"));
        CHECK(contains(apart->source, "FRAG_FOR(1, 8) { const float a = s[mi][cb][e]; p[mi][cb][e] = fast_exp(a); }"));
        CHECK(contains(apart->source, "ROWS_FOR(1) { const float a = scale[mi][h]; scale[mi][h] = fast_exp(a); }"));
    }
    // Only K and V are shared: the block meets after loading them and before the next loads.
    CHECK(lines_of(loop, "__syncthreads();") == 2);
    CHECK(lines_of(loop, "__syncwarp();") == 0);
    // LOAD and STORE of registers count what they move, as every slice does.
    CHECK(contains(g->source, "frag_load(q, Q + (8192*i), 64, 1);\n        if constexpr (kCount) reads_Q += rows * cols;"));
    CHECK(contains(g->source, "frag_store_rows(L + (128*i), 1, l);\n        if constexpr (kCount) writes_L += rows * cols;"));
    // The mask of the diagonal tile, on the registers' own rows and columns.
    auto causal = generated("programs/attention/fa2_causal.toy", {{"n", 256}, {"d", 64}, {"B", 128}}, gpu::DType::BF16);
    CHECK(contains(causal->source, "const int r_ = frag_row(mi, e >> 1), c_ = frag_col(cb, e); s[mi][cb][e] = c_ <= r_ ? a : "));

    // Not in registers: fp32 runs, no tensor cores, tiles of rows the warps cannot split in
    // 16-row blocks (64-row Q tiles), and a tile whose shape is known only at run time (the
    // last of a clipped slice), with what depends on it: the run-time checks stay.
    CHECK_FALSE(contains(generated("programs/attention/fa2.toy", shape, gpu::DType::F32)->source, "in registers"));
    CHECK_FALSE(contains(gpu::generate_cuda(build_file("programs/attention/fa2.toy", shape), gpu::DType::F16, false)->source, "in registers"));
    CHECK_FALSE(contains(generated("programs/attention/fa2.toy", {{"n", 512}, {"d", 64}, {"Br", 64}, {"Bc", 64}}, gpu::DType::F16)->source,
                         "in registers"));
    auto product = [](int n) {
        return fmt::format("registers 8192\nparam n = {}\ntile a[128][16]\ntile b[16][16]\ntile c[128][16]\ninput X[n][16]\ninput W[16][16]\n"
                           "output Y[n][16]\nparallel for i in 0..cdiv(n, 128) {{\n    LOAD X[i*128..i*128+128][0..16], a\n"
                           "    LOAD W[0..16][0..16], b\n    MAC_Z a, b, c\n    STORE c, Y[i*128..i*128+128][0..16]\n}}\n", n);
    };
    auto whole = gpu::generate_cuda(build(product(256)), gpu::DType::F16);
    CHECK(contains(whole->source, "float a[1][2][4];"));
    CHECK(contains(whole->source, "float c[1][2][4];"));
    CHECK(contains(whole->source, "frag_product_stored<T, false>(acc, a, b, 24);"));
    auto clipped = gpu::generate_cuda(build(product(200)), gpu::DType::F16);
    CHECK_FALSE(contains(clipped->source, "in registers"));
    CHECK(contains(clipped->source, "if (c_rows == 0) FAULT("));
}

TEST_CASE("codegen: toysim diff reads a saved run of generated CUDA back against its program", "[codegen]") {
    const std::string fa2 = std::string(TOYSIM_SOURCE_DIR) + "/programs/attention/fa2.toy";
    gpu::GpuRunResult r;
    r.generated = gpu::generate_cuda(build_file("programs/attention/fa2.toy", {{"n", 7}, {"d", 3}, {"Br", 3}, {"Bc", 2}}), gpu::DType::F16);
    r.kernel = &r.generated->spec;
    r.params = {{"n", 7}, {"d", 3}, {"Br", 3}, {"Bc", 2}, {"P", 1}};  // what gpu run records: every parameter
    r.heads = 2;
    r.dtype = gpu::DType::F16;
    r.device.name = "Test GPU";
    r.device.sm_count = 132;
    r.device.l2_bytes = 50 << 20;
    gpu::StageResult stage;
    stage.name = r.kernel->stages[0];
    stage.reads = {42, 126, 126, 0, 0};  // Q, K, V, O, L: n·d, n·d·Tr, n·d·Tr × 2 heads
    stage.writes = {0, 0, 0, 42, 14};
    stage.time.ms = {1.0f};
    r.launch.stages = {stage};
    r.launch.total.ms = {1.0f};
    for (size_t a = 0; a < 5; ++a)
        r.traffic.push_back({std::string(r.kernel->arrays[a].name), 2, stage.reads[a], stage.writes[a], stage.reads[a], stage.writes[a]});
    // How its module was compiled, as gpu run records it (target, NVRTC's seconds, the cache).
    r.compile = gpu::GpuRunResult::ModuleCompile{};
    r.compile->target = "sm_90a";
    r.compile->seconds = 0.84;
    CHECK(contains(format_gpu_run("fa2.toy", r, Format::Table), "the module for sm_90a: compiled by NVRTC in 0.84 s\n"));
    {
        // A run of a sweep whose module an earlier run compiled (share_generated).
        gpu::GpuRunResult shared = r;
        shared.compile->seconds = 0.001;
        shared.compile->shared_by = 4;
        shared.compile->run_time_values = 2;
        shared.compile->reused = true;
        CHECK(contains(format_gpu_run("fa2.toy", shared, Format::Table),
                       "the module for sm_90a: reused (0.00 s): an earlier run compiled it, shared by 4 runs (2 integers read at run time)\n"));
        const gpu::GpuRunResult back = parse_gpu_run(format_gpu_run("fa2.toy", shared, Format::Json), "saved.json",
                                                     [&](const auto&, gpu::DType) { return r.generated; });
        REQUIRE(back.compile);
        CHECK(back.compile->shared_by == 4);
        CHECK(back.compile->run_time_values == 2);
        CHECK(back.compile->reused);
    }
    const std::string saved = format_gpu_run("fa2.toy", r, Format::Json);
    CHECK(contains(saved, "\"compile\": {"));
    CHECK(contains(saved, "\"target\": \"sm_90a\""));
    const gpu::GpuRunResult back = parse_gpu_run(saved, "saved.json", [&](const auto&, gpu::DType) { return r.generated; });
    REQUIRE(back.compile);
    CHECK(back.compile->target == "sm_90a");
    CHECK(back.compile->seconds == 0.84);
    CHECK_FALSE(back.compile->from_cache);
    const fs::path file = fs::temp_directory_path() / "toysim-test-generated-run.json";
    {
        std::ofstream out(file);
        out << saved;
    }
    auto d = run_cli({"diff", fa2, "--gpu", file.string(), "--format", "csv"});
    INFO(d.err);
    CHECK(d.code == 0);
    CHECK(contains(d.out, "reads(K),126,126,"));  // simulated × heads, counted
    CHECK(contains(d.out, "parallel for i (line 79)"));
    // Another program's parameters disagree with the file's, named.
    auto other = run_cli({"diff", fa2, "--gpu", file.string(), "--set", "n=8"});
    CHECK(other.code == 2);
    CHECK(contains(other.err, "--set n=8: the GPU results in"));
    // Without the program (a bare read), a generated run says so.
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    CHECK_THROWS_WITH(parse_gpu_run(text.str(), "saved.json"),
                      "saved.json: not the JSON of a `toysim gpu run`: it is a run of generated CUDA, which only its program can read back");
    fs::remove(file);
}

TEST_CASE("codegen: every shipped program and exercise solution compiles with NVRTC", "[codegen][nvrtc]") {
    std::string why;
    if (!gpu::nvrtc_available(&why)) SKIP("no NVRTC: " << why);
    ScopedEnv no_cache("TOYSIM_NO_CACHE", "1");
    auto compile_module = [&](const std::string& name, const Program& p, gpu::DType dtype) {
        INFO(name << " (" << gpu::dtype_name(dtype) << ")");
        auto g = gpu::generate_cuda(p, dtype);
        // Under the sanitizers every module is still generated (the generator is what they
        // check); NVRTC's compile of it is the same work in both builds and runs in Release.
#ifdef TOYSIM_TEST_ASAN
        CHECK(g->compile_unit().find("__global__") != std::string::npos);
        return;
#endif
        try {
            gpu::NvrtcCompiled c = gpu::compile_generated(*g, gpu::kHopperArch);
            CHECK(c.image.rfind("\x7f" "ELF", 0) == 0);
        } catch (const gpu::GpuError& e) {
            FAIL(e.what());
        }
    };
    int modules = 0;
    for (const auto& path : shipped_programs()) {
        if (build_file(path).devices) continue;  // one GPU: a program with devices is refused (test_devices.cpp)
        // At its defaults in fp32, at its last test line (ragged edges, as a rule) in bf16.
        compile_module(path, build_file(path), gpu::DType::F32);
        auto tests = test_settings(*build_file(path).tree);
        compile_module(path, build_file(path, tests.back()), gpu::DType::BF16);
        modules += 2;
    }
    for (const auto& [name, program] : exercise_solutions()) {
        if (program.devices) continue;  // one GPU: refused (test_devices.cpp)
        compile_module(name, program, gpu::DType::F16);
        ++modules;
    }
    // Tiles in registers (fragments) and b tiles as T: 128-row tiles in fp16 and bf16.
    const std::pair<const char*, ParamSettings> fragments[] = {
        {"programs/attention/fa2.toy", {{"n", 256}, {"d", 64}, {"Br", 128}, {"Bc", 64}}},
        {"programs/attention/fa2.toy", {{"n", 512}, {"d", 16}, {"Br", 256}, {"Bc", 16}}},
        {"programs/attention/fa2_causal.toy", {{"n", 256}, {"d", 32}, {"B", 128}}},
        {"programs/attention/fa2_gqa.toy", {{"n", 256}, {"d", 64}, {"Br", 128}, {"Bc", 64}}},
        {"programs/attention/standard_tiled.toy", {{"n", 256}, {"d", 64}, {"Br", 128}, {"Bc", 64}}},
        // K and V copied ahead (`stages 2`, cp.async), the last tile ragged.
        {"programs/attention/schedules/fa2_v3_mma.toy", {{"n", 1000}, {"d", 64}, {"Br", 128}, {"Bc", 64}}}};
    for (const auto& [path, settings] : fragments)
        for (gpu::DType dtype : {gpu::DType::F16, gpu::DType::BF16}) {
            compile_module(path, build_file(path, settings), dtype);
            ++modules;
        }
    // Beside tiles in registers: a row statistic masked (CAUSAL of a column keeps shared memory).
    compile_module("a masked column", build("registers 8192\nparam n = 256\ntile a[128][16]\ntile b[16][16]\ntile c[128][16]\n"
                                            "tile mx[128][1]\ninput X[n][16]\ninput W[16][16]\noutput Y[n][16]\noutput Z[n]\n"
                                            "parallel for i in 0..cdiv(n, 128) {\n    LOAD X[i*128..i*128+128][0..16], a\n"
                                            "    LOAD W[0..16][0..16], b\n    MAC_Z a, b, c\n    ROWMAX c, mx\n    CAUSAL mx, mx\n"
                                            "    STORE c, Y[i*128..i*128+128][0..16]\n    STORE mx, Z[i*128..i*128+128]\n}\n"),
                   gpu::DType::F16);
    ++modules;
    CHECK(modules >= 72);
}

TEST_CASE("codegen: gpu cuda --compile says what ptxas gave each kernel and what it spilled", "[codegen][nvrtc][cli]") {
    std::string why;
    if (!gpu::nvrtc_available(&why)) SKIP("no NVRTC: " << why);
    auto compiled = [](const std::string& d, const std::string& br, const std::string& bc) {
        CliResult r = run_cli({"gpu", "cuda", "programs/attention/fa2.toy", "--dtype", "fp16", "--set", "n=4096", "--set", "d=" + d, "--set", "Br=" + br,
                               "--set", "Bc=" + bc, "--compile"});
        INFO(r.err);
        REQUIRE(r.code == 0);
        return r.out;
    };
    const std::regex clean(R"(// k0_parallel_for_i \(line 79\): (\d+) registers a thread, nothing in local memory\n)");
    std::smatch m;
    // fa2 with 128-row tiles keeps Q, O, S and P in registers (the fragment layout). Up to 168
    // floats a thread the kernel asks for two blocks an SM (128 registers); past that for one
    // (255), where ptxas spills nothing.
    for (const char* d : {"64", "128"})
        for (const char* bc : {"16", "32", "64", "128"}) {
            INFO("d = " << d << ", Bc = " << bc);
            const std::string out = compiled(d, "128", bc);
            const bool two = std::string(d) == "64" ? std::stoi(bc) <= 64 : std::stoi(bc) <= 32;  // 72 to 168 floats
            CHECK(contains(out, two ? "__launch_bounds__(256, 2) k0_parallel_for_i(" : "__launch_bounds__(256, 1) k0_parallel_for_i("));
            if (two) continue;
            REQUIRE(std::regex_search(out, m, clean));
            CHECK(std::stoi(m[1]) <= 255);
        }
    // 256-row tiles at d = 128, Bc = 64 would hold 332 floats a thread at once: Q leaves the
    // registers for shared memory (read at each product: by wgmma on Hopper), and nothing spills.
    const std::string q_shared = compiled("128", "256", "64");
    CHECK(contains(q_shared, "//   programs/attention/fa2.toy:36:6: tile q is read from shared memory at each product, not kept in registers: a "
                             "thread would hold 332 floats of tiles in registers at once, more than the 224 that leave room for the rest without "
                             "spilling (204 without it)\n"));
    CHECK(contains(q_shared, "frag_product_wgmma_ab<T, true, 2, 8, 8>(acc, q, Swizzle128<256>{}, k, Swizzle128<64>{});"));
    REQUIRE(std::regex_search(q_shared, m, clean));
    // At Bc = 128, O, S and P hold 272 floats at once even without Q: more than 255 registers, spilled.
    const std::string spilled = compiled("128", "256", "128");
    REQUIRE(std::regex_search(spilled, m, std::regex(R"(// k0_parallel_for_i \(line 79\): (\d+) registers a thread, (\d+) bytes a thread in local memory \(spilled registers\)\n)")));
    CHECK(std::stoi(m[1]) == 255);
    CHECK(std::stoi(m[2]) > 0);
    // At Br = 64 every tile is in shared memory.
    const std::string shared = compiled("128", "64", "64");
    REQUIRE(std::regex_search(shared, m, clean));
    CHECK(std::stoi(m[1]) <= 128);
    // tune --kernel generated says which points spill, whose local memory its time leaves out.
    CliResult r = run_cli({"tune", "programs/attention/fa2.toy", "--set", "n=1024", "--set", "d=128", "--vary", "Br=128,256", "--vary", "Bc=128",
                           "--kernel", "generated", "--heads", "4", "--dtype", "fp16"});
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(std::regex_search(r.out, std::regex(R"(\nRegisters ptxas spills to local memory, bytes a thread \(not in the predicted time\): Br=256 Bc=128 \d+\n)")));
}

TEST_CASE("codegen: what kept each product off the fast path is said at its line", "[codegen][cli]") {
    auto slow = [](const std::vector<std::string>& sets, const std::string& dtype) {
        CliResult r = [&] {
            std::vector<std::string> args{"gpu", "cuda", "programs/attention/fa2.toy", "--dtype", dtype};
            for (const auto& s : sets) args.insert(args.end(), {"--set", s});
            return run_cli(args);
        }();
        INFO(r.err);
        REQUIRE(r.code == 0);
        const auto at = r.out.find("// why it is not faster");
        return at == std::string::npos ? std::string() : r.out.substr(at);
    };
    // 128-row tiles in fp16: every product on mma.sync from registers; what the program's schedule
    // could add (it has no `stages` and no `warps` line; schedules/fa2_v3_mma.toy has both).
    CHECK(slow({"n=4096", "d=64", "Br=128", "Bc=64"}, "fp16") ==
          "// why it is not faster (what the code generator could not do here):\n"
          "//   programs/attention/fa2.toy:38:6: tile k: its LOAD waits for DRAM at every iteration: `in shared stages 2` after its shape would "
          "copy the next iteration's tile while this one computes (cp.async)\n"
          "//   programs/attention/fa2.toy:39:6: tile v: its LOAD waits for DRAM at every iteration: `in shared stages 2` after its shape would "
          "copy the next iteration's tile while this one computes (cp.async)\n"
          "//   programs/attention/fa2.toy:79:10: 8 warps of 16 rows a tile (no `warps` line): `warps 4` would give each warp 32 rows, so that "
          "each fragment of a product's right operand read from shared memory feeds two products\n");
    // With the schedule's lines, nothing to say.
    CliResult v3 = run_cli({"gpu", "cuda", "programs/attention/schedules/fa2_v3_mma.toy", "--dtype", "fp16", "--set", "n=4096", "--set", "d=64", "--set",
                            "Br=128", "--set", "Bc=64"});
    REQUIRE(v3.code == 0);
    CHECK_FALSE(contains(v3.out, "// why it is not faster"));
    // 64 rows: the tensor cores, but from shared memory.
    CHECK(slow({"n=4096", "d=64", "Br=64", "Bc=64"}, "fp16") ==
          "// why it is not faster (what the code generator could not do here):\n"
          "//   programs/attention/fa2.toy:87:9: MAC_Z q, k.T, s: a 64 × 64 by 64 × 64 product runs on the tensor cores from shared memory (wmma, "
          "tf32): in registers on mma.sync, several times faster, its result needs rows a multiple of 128 (a 16-row block for each of the 8 "
          "warps)\n"
          "//   programs/attention/fa2.toy:98:9: MAC p, v, o, o: a 64 × 64 by 64 × 64 product runs on the tensor cores from shared memory (wmma, "
          "tf32): in registers on mma.sync, several times faster, its result needs rows a multiple of 128 (a 16-row block for each of the 8 "
          "warps)\n");
    // The program's own tiny tiles: not whole fragments.
    const std::string tiny = slow({}, "bf16");
    CHECK(tiny.find("fa2.toy:87:9: MAC_Z q, k.T, s: a 2 × 4 by 4 × 4 product is not whole 16 × 16 fragments (k a multiple of 8): it runs on the "
                    "CUDA cores\n") != std::string::npos);
    // fp32: said once, at the first product.
    CHECK(slow({"n=4096", "d=64", "Br=128", "Bc=64"}, "fp32") ==
          "// why it is not faster (what the code generator could not do here):\n"
          "//   programs/attention/fa2.toy:87:9: MAC_Z q, k.T, s: fp32: every product runs on the CUDA cores (the tensor cores take fp16 and bf16: "
          "--dtype)\n");
    // Ragged tiles (n = 100, Br = 32): the shapes are known only when it runs.
    CHECK(slow({"n=100", "d=64", "Br=32", "Bc=32"}, "fp16").find("its operands' shapes are known only when it runs") != std::string::npos);
}
