// gpu/codegen/codegen_reduce.cpp: serial scalar loops that fold loaded values into registers
// run split over a block's threads, and what keeps a loop on one thread. Running the kernels
// needs a GPU (tests/gpu/generated.sh checks every program's outputs and counts).
#include <catch2/catch.hpp>

#include <string>

#include "gpu/codegen/codegen.h"
#include "tests/support.h"

using namespace toysim;
using toysim::testing::build;
using toysim::testing::contains;
using toysim::testing::build_file;

namespace {

std::shared_ptr<const gpu::GeneratedProgram> generated_text(const std::string& body) {
    return gpu::generate_cuda(build("param n = 100\nregisters 4\ninput x[n]\noutput y[1]\n" + body, {}), gpu::DType::F32);
}

}  // namespace

TEST_CASE("codegen reduce: the 3-pass softmax's max and sum are split over a block per head", "[codegen][reduce]") {
    auto g = gpu::generate_cuda(build_file("programs/p4_softmax_3pass.toy", {{"n", 100000}}), gpu::DType::F32);
    REQUIRE(g->kernels.size() == 2);  // passes 1 and 2, then pass 3's parallel loop
    const gpu::GeneratedKernel& serial = g->kernels[0];
    CHECK(serial.grid.empty());
    CHECK(serial.per_thread);
    CHECK(serial.threads == 256);
    CHECK(contains(g->source, "serial code from line 27, one block (its reductions split over the threads) per head"));
    CHECK(contains(g->source, "{  // its iterations split over the block's threads: a reduction into R1 by MAX\n"));
    CHECK(contains(g->source, "{  // its iterations split over the block's threads: a reduction into R2 by ADD\n"));
    CHECK(contains(g->source, "for (long long i = split1_lo + threadIdx.x; i < split1_hi; i += blockDim.x) {"));
    CHECK(contains(g->source, "R[2] = D::add(R2_before, block_allreduce(R[2], [](float a, float b) { return D::add(a, b); }));"));
    // The loaded element (R0) lives on after the loop as the last iteration left it.
    CHECK(contains(g->source, "if (split1_ran && (split1_hi - 1 - split1_lo) % blockDim.x == threadIdx.x) { split1_last[0] = R[0]; }"));
    // Code outside the split loops runs on every thread alike; thread 0 alone counts it and
    // keeps worker 0's registers.
    CHECK(contains(g->source, "if constexpr (kCount) if (threadIdx.x == 0) reads_x += 1;\n        R[1] = to_float(x[0]);"));
    CHECK(contains(g->source, "if (threadIdx.x == 0) for (int r = 0; r < 3; r += 1) regfile[0 + r] = R[r];"));
    // Pass 3 is a parallel loop: a thread per element, as before.
    CHECK(g->kernels[1].threads == 128);
}

TEST_CASE("codegen reduce: the online softmax's running max and rescaled sum are split and merged", "[codegen][reduce]") {
    // p5's first pass: the max is read by the rescale (MOV r1, r3), and the sum is written by a
    // MUL and an ADD, so neither is one fold; together they are the online softmax's state.
    auto online = gpu::generate_cuda(build_file("programs/p5_online_softmax.toy", {{"n", 1000}}), gpu::DType::F32);
    CHECK(online->kernels[0].threads == 256);
    CHECK(online->slow_paths.empty());
    CHECK(contains(online->source, "{  // its iterations split over the block's threads: an online softmax's running max R1 and rescaled sum "
                                   "R2, merged as Flash-Decoding merges its splits\n"));
    CHECK(contains(online->source, "const float R1_before = R[1], R2_before = R[2];  R[1] = -INFINITY;  R[2] = 0.0f;"));
    CHECK(contains(online->source, "block_allreduce_online(R[1], R[2]);\n"));
    CHECK(contains(online->source, "{ float m = R1_before, s = R2_before;  online_merge(m, s, R[1], R[2]);  R[1] = m;  R[2] = s; }"));
    // R0 and R3 end the iteration as values of the running state: a thread's own, not handed on
    // (nothing reads them after the loop before writing them).
    CHECK(!contains(online->source, "_last["));
    CHECK(contains(online->compile_unit(), "__device__ __forceinline__ void online_merge(float& m, float& s, float m2, float s2) {"));

    // The same pass with other registers, in another order, operands swapped: what the body
    // computes is recognized, not how it is written.
    const std::string head = "param n = 100\nregisters 7\ninput x[n]\ninput w[n]\noutput y[2]\nLOAD x[0], R4\nSET 1, R4, R5\n";
    const std::string pass = "for i in 1..n {\n    LOAD x[i], R0\n    MAX R0, R4, R1\n    SUB R0, R1, R2\n    EXP R2, R2\n    SUB R4, R1, R3\n"
                             "    EXP R3, R3\n    MUL R3, R5, R5\n    ADD R2, R5, R5\n    MOV R1, R4\n}\n";
    const std::string stores = "STORE R4, y[0]\nSTORE R5, y[1]\n";
    auto generate = [](const std::string& text) { return gpu::generate_cuda(build(text, {}), gpu::DType::F32); };
    auto reordered = generate(head + pass + stores);
    CHECK(reordered->kernels[0].threads == 256);
    CHECK(contains(reordered->source, "an online softmax's running max R4 and rescaled sum R5"));
    CHECK(contains(reordered->source, "split2_last[0] = R[0];"));  // the loaded element lives on, as in any split loop
    // Each new term weighted (s' = s·e^(m − m') + w·e^(x − m')): the same merge.
    auto weighted = generate(head + std::string(pass).replace(pass.find("    ADD"), 0, "    LOAD w[i], R6\n    MUL R6, R2, R2\n") + stores);
    CHECK(contains(weighted->source, "an online softmax's running max R4 and rescaled sum R5"));
    // Rescaled the wrong way (e^(m' − m)): no merge holds, the pass stays in order.
    auto wrong = generate(head + std::string(pass).replace(pass.find("SUB R4, R1, R3"), 14, "SUB R1, R4, R3") + stores);
    CHECK(wrong->kernels[0].threads == 1);
    REQUIRE(wrong->slow_paths.size() == 1);
    CHECK(contains(wrong->slow_paths[0].why, "R4 is carried from one iteration to the next (MAX at line 10 reads it"));
    // A value of the running state read after the loop would be one thread's: refused, said.
    auto stale = generate(head + pass + stores + "STORE R3, y[0]\n");
    CHECK(stale->kernels[0].threads == 1);
    REQUIRE(stale->slow_paths.size() == 1);
    CHECK(stale->slow_paths[0].why ==
          "this serial loop runs on one GPU thread a head: R3 follows the running max R4 and sum R5 of an online softmax, and STORE at line 21 "
          "reads it after the loop: split over threads, it would hold one thread's value");
    // The element doubled 64 times before it joins the state: each value is one node, so this
    // is recognized at once (walked as a tree, it would be 2^64 paths).
    std::string doubled = pass;
    std::string adds;
    for (int k = 0; k < 64; ++k) adds += "    ADD R0, R0, R0\n";
    doubled.insert(doubled.find("    MAX"), adds);
    CHECK(contains(generate(head + doubled + stores)->source, "an online softmax's running max R4 and rescaled sum R5"));
    // Written again first, it may be: the split holds.
    CHECK(generate(head + pass + stores + "SET 0, R3, R3\nSTORE R3, y[0]\n")->kernels[0].threads == 256);
}

TEST_CASE("codegen reduce: a running state that is not one fold stays on one thread", "[codegen][reduce]") {
    // A register carried from one iteration to the next other than by the fold: the previous
    // element (R1) is read before the iteration writes it.
    auto carried = generated_text("LOAD x[0], R1\nSET 0, R2, R2\nfor i in 1..n {\n    LOAD x[i], R0\n    SUB R0, R1, R3\n    ADD R3, R2, R2\n"
                                  "    MOV R0, R1\n}\nSTORE R2, y[0]\n");
    CHECK(carried->kernels[0].threads == 1);
    // A store in the body, or an inner loop: the same.
    auto stores = generated_text("SET 0, R2, R2\nfor i in 0..n {\n    LOAD x[i], R0\n    ADD R0, R2, R2\n    STORE R2, y[0]\n}\n");
    CHECK(stores->kernels[0].threads == 1);
    REQUIRE(stores->slow_paths.size() == 1);
    CHECK(stores->slow_paths[0].why == "this serial loop runs on one GPU thread a head: it writes DRAM (STORE at line 9)");
    // The same sum without them is split, and the fold may sit anywhere in the body.
    auto sum = generated_text("SET 0, R2, R2\nfor i in 0..n {\n    LOAD x[i], R0\n    ADD R0, R2, R2\n    MUL R0, R0, R3\n}\nSTORE R2, y[0]\n"
                              "STORE R3, y[0]\n");
    CHECK(sum->kernels[0].threads == 256);
    CHECK(contains(sum->source, "a reduction into R2 by ADD"));
    // R3 is the body's own (written, never read there): the last iteration's value lives on.
    CHECK(contains(sum->source, "split1_last[0] = R[0]; split1_last[1] = R[3];"));
    CHECK(contains(sum->source, "if (threadIdx.x == 0) { store_to(&y[0], R[2]); }"));
}
