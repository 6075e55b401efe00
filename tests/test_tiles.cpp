// Tiles on small known values: matrix products with and without transposes, broadcasting,
// row reductions, SET, column slices, edge clipping, the cost model and the register budget.
#include <catch2/catch.hpp>

#include "sim/check/run.h"
#include "support.h"

using namespace toysim;
using toysim::testing::build;

namespace {

// The final values of `array` after running `text`.
std::vector<double> values_after(const std::string& text, const char* array, const ParamSettings& settings = {}) {
    Program p = build(text, settings);
    RunResult r = run(p);
    return r.array_values(p, p.find_array(array));
}

const char* const kTwoByTwo = R"(registers 64
tile a[2][2]
tile b[2][2]
tile c[2][2]
input  A[2][2] = [[1, 2], [3, 4]]
input  B[2][2] = [[5, 6], [7, 8]]
output C[2][2]
LOAD A[0..2][0..2], a
LOAD B[0..2][0..2], b
)";

std::string with(const std::string& instructions) { return std::string(kTwoByTwo) + instructions + "STORE c, C[0..2][0..2]\n"; }

}  // namespace

TEST_CASE("MAC_Z of two tiles is a matrix product, and .T transposes either source", "[tiles]") {
    // A·B = [[19, 22], [43, 50]]; A·Bᵀ = [[17, 23], [39, 53]]; Aᵀ·B = [[26, 30], [38, 44]].
    CHECK(values_after(with("MAC_Z a, b, c\n"), "C") == std::vector<double>{19, 22, 43, 50});
    CHECK(values_after(with("MAC_Z a, b.T, c\n"), "C") == std::vector<double>{17, 23, 39, 53});
    CHECK(values_after(with("MAC_Z a.T, b, c\n"), "C") == std::vector<double>{26, 30, 38, 44});
    // MAC adds the third operand; a result may overwrite a source it still reads.
    CHECK(values_after(with("MAC a, b, a, c\n"), "C") == std::vector<double>{20, 24, 46, 54});
    CHECK(values_after(with("MAC_Z a, b, a\nMOV a, c\n"), "C") == std::vector<double>{19, 22, 43, 50});
}

TEST_CASE("element-wise operations broadcast a column against a tile", "[tiles]") {
    // Row maxima of A are [2; 4]; A − rowmax = [[−1, 0], [−1, 0]]; row sums of B are [11; 15].
    CHECK(values_after(with("tile m[2][1]\nROWMAX a, m\nSUB a, m, c\n"), "C") == std::vector<double>{-1, 0, -1, 0});
    CHECK(values_after(with("tile s[2][1]\nROWSUM b, s\nDIV b, s, c\n"), "C") ==
          std::vector<double>{5.0 / 11, 6.0 / 11, 7.0 / 15, 8.0 / 15});
    // A 1-D tile is a row: it broadcasts down the rows.
    CHECK(values_after(with("tile row[2]\nLOAD A[1][0..2], row\nMUL b, row, c\n"), "C") == std::vector<double>{15, 24, 21, 32});
    // A scalar register is a 1×1 tile.
    CHECK(values_after(with("LOAD A[1][1], R0\nMUL a, R0, c\n"), "C") == std::vector<double>{4, 8, 12, 16});
}

TEST_CASE("SET fills the destination's columns, one row per row of its source", "[tiles]") {
    const char* text = R"(registers 64
tile q[4][3]
tile m[4][1]
input  Q[5][3]
output M[5]
for i in 0..2 {
    LOAD Q[i*4..i*4+4][0..3], q
    SET -2.5, q, m
    STORE m, M[i*4..i*4+4]
}
)";
    // The second Q tile has one row (5 = 4 + 1): m follows it, so the column slice matches.
    CHECK(values_after(text, "M") == std::vector<double>{-2.5, -2.5, -2.5, -2.5, -2.5});
}

TEST_CASE("edge tiles are clipped and only the elements moved are counted", "[tiles]") {
    const char* text = R"(param n = 10
param B = 4
let T = cdiv(n, B)
registers 2*B*3
tile x[B][3]
input  X[n][3]
output Y[n][3]
expect reads(X) = 3n
expect work(LOAD) = 3n
for i in 0..T {
    LOAD X[i*B..i*B+B][0..3], x
    STORE x, Y[i*B..i*B+B][0..3]
}
)";
    for (std::int64_t n : {1, 4, 10, 13}) {
        INFO("n = " << n);
        Program p = build(text, {{"n", n}});
        RunResult r = run(p);
        CHECK(r.expects_ok());
        CHECK(r.counters.dram_writes == static_cast<std::uint64_t>(3 * n));
        CHECK(r.counters.by_opcode[static_cast<size_t>(Op::LOAD)] == static_cast<std::uint64_t>((n + 3) / 4));
        // The cost model: one cycle per element moved, per instruction only for scalars.
        CHECK(r.counters.cycles == static_cast<std::uint64_t>(6 * n));
        // Registers used: the elements the tile really held (a short last tile adds none).
        CHECK(r.counters.peak_registers == static_cast<int>(3 * std::min<std::int64_t>(n, 4)));
    }
}

TEST_CASE("the cost of a tile instruction is its cost per unit times its work", "[tiles]") {
    Program p = build(with("cost MAC_Z = 3\nMAC_Z a, b, c\n"));
    RunResult r = run(p);
    // 2×2·2×2: 8 multiply-adds at 3 cycles; 8 elements loaded and 4 stored at 1 cycle each.
    CHECK(r.counters.work_by_opcode[static_cast<size_t>(Op::MAC_Z)] == 8);
    CHECK(r.counters.cycles == 8 * 3 + 8 + 4);
    CHECK(r.counters.instructions == 4);
}

TEST_CASE("tiles take the register file and scalar registers are what is left", "[tiles]") {
    Program p = build(R"(registers 10
tile a[2][4]
input  A[2][4]
output C[1]
LOAD A[0][0], R1
STORE R1, C[0]
)");
    CHECK(p.tile_elements == 8);
    CHECK(p.scalar_registers == 2);
    CHECK_THROWS_WITH(build(R"(registers 10
tile a[2][4]
input  A[2][4]
output C[1]
LOAD A[0][0], R2
)"),
                      Catch::Contains("register R2 is beyond the register file (the tiles take 8 of 10 registers; R0..R1 remain)"));
}

TEST_CASE("a tile MAC keeps all four register operands and its other fields", "[tiles]") {
    // TileInst once held three operands: MAC's fourth overwrote the slice index beside them.
    Program p = toysim::testing::build_file("programs/attention/fa2.toy");
    int macs = 0;
    for (const auto& t : p.tile_insts) {
        CHECK(t.count <= static_cast<int>(t.args.size()));
        if (t.op != Op::MAC) continue;
        ++macs;
        CHECK(t.count == 4);
        CHECK(t.mem == -1);  // a MAC moves no slice
    }
    CHECK(macs > 0);
}
