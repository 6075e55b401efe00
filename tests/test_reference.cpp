// The reference functions a check compares against, on the seed's 4×4 worked example
// (seeds/001, "A Concrete Example: 4×4 Attention" and its gradients). Exact values come from the
// errata table of seeds/README.md, or were computed independently in double precision (plain
// Python); the seed's printed values, rounded by hand, must agree within ±0.01 except where the
// errata say they do not.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/reference/reference.h"

using toysim::Loc;
using toysim::reference;
using toysim::reference_shape;
using toysim::Tensor;
using toysim::ToyError;

namespace {

using Rows = std::vector<std::vector<double>>;

Tensor matrix(const Rows& rows) {
    Tensor t{{static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows[0].size())}, {}};
    for (const auto& r : rows) t.data.insert(t.data.end(), r.begin(), r.end());
    return t;
}

Tensor vector(const std::vector<double>& v) { return Tensor{{static_cast<std::int64_t>(v.size())}, v}; }

const Tensor Q = matrix({{1, 0, 1, 0}, {0, 1, 0, 1}, {1, 0, 0, 0}, {0, 1, 0, 0}});
const Tensor K = matrix({{1, 0, 0, 0}, {0, 1, 0, 0}, {1, 0, 1, 0}, {0, 1, 0, 1}});
const Tensor V = matrix({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}, {13, 14, 15, 16}});
const Tensor dO = matrix({{1, 1, 1, 1}, {0, 0, 0, 0}, {1, 1, 1, 1}, {0, 0, 0, 0}});

// Exact to the 4 decimals the errata print: an absolute margin only.
Approx exact(double v) { return Approx(v).epsilon(0).margin(5e-5); }
// The seed's printed, hand-rounded numbers.
Approx printed(double v) { return Approx(v).epsilon(0).margin(0.01); }

// Every element of a rows×cols result, against `expected` within `margin`.
void check_matrix(const Tensor& t, const Rows& expected, double margin) {
    REQUIRE(t.shape == std::vector<std::int64_t>{static_cast<std::int64_t>(expected.size()), static_cast<std::int64_t>(expected[0].size())});
    for (size_t i = 0; i < expected.size(); ++i)
        for (size_t j = 0; j < expected[i].size(); ++j) {
            INFO("element [" << i << "][" << j << "]");
            CHECK(t.data[i * expected[i].size() + j] == Approx(expected[i][j]).epsilon(0).margin(margin));
        }
}

void check_vector(const Tensor& t, const std::vector<double>& expected, double margin) {
    REQUIRE(t.shape == std::vector<std::int64_t>{static_cast<std::int64_t>(expected.size())});
    for (size_t i = 0; i < expected.size(); ++i) {
        INFO("element [" << i << "]");
        CHECK(t.data[i] == Approx(expected[i]).epsilon(0).margin(margin));
    }
}

}  // namespace

TEST_CASE("reference: scores of the seed's 4x4 example", "[reference]") {
    check_matrix(reference("scores", {Q, K}), {{1, 0, 2, 0}, {0, 1, 0, 2}, {1, 0, 1, 0}, {0, 1, 0, 1}}, 0);
}

TEST_CASE("reference: attention_rowmax, attention_rowsum and attention_lse", "[reference]") {
    // Row 0 of S is [1, 0, 2, 0]: m = 2, ℓ = e⁻¹ + e⁻² + 1 + e⁻²; row 2 is [1, 0, 1, 0]: m = 1, ℓ = 1 + e⁻¹ + 1 + e⁻¹.
    const double l0 = std::exp(-1.0) + 2 * std::exp(-2.0) + 1, l2 = 2 + 2 * std::exp(-1.0);
    const Tensor m = reference("attention_rowmax", {Q, K});
    const Tensor l = reference("attention_rowsum", {Q, K});
    const Tensor lse = reference("attention_lse", {Q, K});
    check_vector(m, {2, 2, 1, 1}, 0);
    check_vector(l, {l0, l0, l2, l2}, 1e-12);
    CHECK(l.data[0] == exact(1.6386));  // the errata's ℓ₀ after the last tile
    check_vector(lse, {2 + std::log(l0), 2 + std::log(l0), 1 + std::log(l2), 1 + std::log(l2)}, 1e-12);
    CHECK(lse.data[0] == exact(2.4938));
    CHECK(lse.data[2] == exact(2.0064));
    for (size_t i = 0; i < 4; ++i) CHECK(lse.data[i] == Approx(m.data[i] + std::log(l.data[i])).epsilon(0).margin(1e-12));
}

TEST_CASE("reference: attention output O of the seed's example", "[reference]") {
    const Tensor o = reference("attention", {Q, K, V});
    check_matrix(o, {{7.2039, 8.2039, 9.2039, 10.2039}, {9.8824, 10.8824, 11.8824, 12.8824}, {6.0758, 7.0758, 8.0758, 9.0758},
                     {7.9242, 8.9242, 9.9242, 10.9242}},
                 5e-5);
    check_matrix(o, {{7.20, 8.20, 9.20, 10.20}, {9.88, 10.88, 11.88, 12.88}, {6.08, 7.08, 8.08, 9.08}, {7.92, 8.92, 9.92, 10.92}}, 0.01);
}

TEST_CASE("reference: attention_delta is rowsum(dO ∘ O)", "[reference]") {
    const Tensor d = reference("attention_delta", {Q, K, V, dO});
    REQUIRE(d.shape == std::vector<std::int64_t>{4});
    CHECK(d.data[0] == exact(34.8155));
    CHECK(d.data[1] == 0);
    CHECK(d.data[2] == exact(30.3031));
    CHECK(d.data[3] == 0);
    CHECK(d.data[2] == printed(30.30));
    CHECK_FALSE(d.data[0] == printed(34.83));  // the seed's misprint, listed in the errata
}

TEST_CASE("reference: attention_dv is Pᵀ·dO", "[reference]") {
    const Tensor dv = reference("attention_dv", {Q, K, V, dO});
    check_matrix(dv, {{0.590, 0.590, 0.590, 0.590}, {0.217, 0.217, 0.217, 0.217}, {0.976, 0.976, 0.976, 0.976}, {0.217, 0.217, 0.217, 0.217}},
                 0.01);
    // Exact: P₀ⱼ + P₂ⱼ, from P₀ = [e, 1, e², 1]/(e + 2 + e²) and P₂ = [e, 1, e, 1]/(2e + 2).
    const double z0 = std::exp(1.0) + 2 + std::exp(2.0), z2 = 2 * std::exp(1.0) + 2;
    const std::vector<double> col = {std::exp(1.0) / z0 + std::exp(1.0) / z2, 1 / z0 + 1 / z2, std::exp(2.0) / z0 + std::exp(1.0) / z2, 1 / z0 + 1 / z2};
    for (size_t i = 0; i < 4; ++i)
        for (size_t j = 0; j < 4; ++j) CHECK(dv.data[i * 4 + j] == Approx(col[i]).epsilon(0).margin(1e-12));
    CHECK(col[0] == exact(0.5900));
    CHECK(col[2] == exact(0.9758));
}

TEST_CASE("reference: attention_dq is dS·K", "[reference]") {
    const Tensor dq = reference("attention_dq", {Q, K, V, dO});
    check_matrix(dq, {{-1.1868, 1.1868, 4.3847, 1.9149}, {0, 0, 0, 0}, {-3.1458, 3.1458, 4.2756, 3.7244}, {0, 0, 0, 0}}, 5e-5);
    check_matrix(dq, {{-1.19, 1.18, 4.38, 1.91}, {0, 0, 0, 0}, {-3.14, 3.14, 4.28, 3.72}, {0, 0, 0, 0}}, 0.01);
}

TEST_CASE("reference: attention_dk is dSᵀ·Q", "[reference]") {
    const Tensor dk = reference("attention_dk", {Q, K, V, dO});
    check_matrix(dk, {{-12.9928, 0, -5.5715, 0}, {-1.3067, 0, -0.7281, 0}, {8.6602, 0, 4.3847, 0}, {5.6393, 0, 1.9149, 0}}, 5e-5);
    check_matrix(dk, {{-12.99, 0, -5.57, 0}, {-1.31, 0, -0.73, 0}, {8.66, 0, 4.38, 0}, {5.64, 0, 1.91, 0}}, 0.01);
}

TEST_CASE("reference: attention gradients agree with finite differences on non-square shapes", "[reference]") {
    // n = 3 queries, m = 5 keys, d = 2, dv = 4: a transposition mistake cannot hide here.
    Tensor q = matrix({{0.3, -1.2}, {0.8, 0.1}, {-0.5, 0.7}});
    Tensor k = matrix({{1.1, 0.2}, {-0.4, 0.9}, {0.6, -0.8}, {0.0, 0.5}, {-1.3, -0.1}});
    Tensor v = matrix({{0.5, -1.0, 2.0, 0.3}, {1.5, 0.2, -0.7, 0.0}, {-0.6, 0.9, 0.4, 1.1}, {0.8, -0.3, 0.0, -1.4}, {0.1, 1.2, -0.9, 0.6}});
    const Tensor g = matrix({{0.2, -0.5, 1.0, 0.4}, {-1.1, 0.3, 0.0, 0.7}, {0.6, 0.9, -0.2, -0.8}});
    // loss = Σ dO ∘ attention(q, k, v): its gradient in an input, by central differences.
    auto loss = [&] {
        const Tensor o = reference("attention", {q, k, v});
        double sum = 0;
        for (size_t i = 0; i < o.data.size(); ++i) sum += g.data[i] * o.data[i];
        return sum;
    };
    auto numeric = [&](Tensor& x) {
        Tensor grad{x.shape, std::vector<double>(x.data.size())};
        const double h = 1e-5;
        for (size_t i = 0; i < x.data.size(); ++i) {
            const double keep = x.data[i];
            x.data[i] = keep + h;
            const double up = loss();
            x.data[i] = keep - h;
            grad.data[i] = (up - loss()) / (2 * h);
            x.data[i] = keep;
        }
        return grad;
    };
    auto agree = [](const Tensor& analytic, const Tensor& fd) {
        REQUIRE(analytic.shape == fd.shape);
        for (size_t i = 0; i < fd.data.size(); ++i) {
            INFO("element " << i);
            CHECK(analytic.data[i] == Approx(fd.data[i]).epsilon(0).margin(1e-7));
        }
    };
    agree(reference("attention_dq", {q, k, v, g}), numeric(q));
    agree(reference("attention_dk", {q, k, v, g}), numeric(k));
    agree(reference("attention_dv", {q, k, v, g}), numeric(v));
    CHECK(reference("attention_dq", {q, k, v, g}).shape == std::vector<std::int64_t>{3, 2});
    CHECK(reference("attention_dk", {q, k, v, g}).shape == std::vector<std::int64_t>{5, 2});
    CHECK(reference("attention_dv", {q, k, v, g}).shape == std::vector<std::int64_t>{5, 4});
    CHECK(reference("scores", {q, k}).shape == std::vector<std::int64_t>{3, 5});
}

// Grouped-query attention on 2 K/V heads of 4 query rows each (n = 2 positions of G = 2 heads).
// Head 0 is the seed's example, so its rows are the errata's O and L. Head 1 scores every key 0
// (k = 0): each query averages the rows of v = I, 1/4 each, and L = 0 + ln 4. Taking head 0's
// k or v for head 1 would give other numbers.
TEST_CASE("reference: gqa_attention and gqa_attention_lse, head by head", "[reference]") {
    auto heads = [](const Tensor& a, const Tensor& b) {
        Tensor t{{2, a.shape[0], a.shape[1]}, a.data};
        t.data.insert(t.data.end(), b.data.begin(), b.data.end());
        return t;
    };
    const Tensor zero = matrix({{0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}});
    const Tensor identity = matrix({{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}});
    const Tensor q = heads(Q, Q), k = heads(K, zero), v = heads(V, identity);
    const Tensor o = reference("gqa_attention", {q, k, v});
    const Tensor lse = reference("gqa_attention_lse", {q, k});
    REQUIRE(o.shape == std::vector<std::int64_t>{2, 4, 4});
    REQUIRE(lse.shape == std::vector<std::int64_t>{2, 4});
    const Rows head0 = {{7.2039, 8.2039, 9.2039, 10.2039}, {9.8824, 10.8824, 11.8824, 12.8824}, {6.0758, 7.0758, 8.0758, 9.0758},
                        {7.9242, 8.9242, 9.9242, 10.9242}};
    for (size_t i = 0; i < 4; ++i)
        for (size_t j = 0; j < 4; ++j) {
            INFO("row " << i << ", column " << j);
            CHECK(o.data[i * 4 + j] == exact(head0[i][j]));
            CHECK(o.data[16 + i * 4 + j] == Approx(0.25).epsilon(0).margin(1e-15));
        }
    const std::vector<double> lse0 = {2.4938, 2.4938, 2.0064, 2.0064};
    for (size_t i = 0; i < 4; ++i) {
        INFO("row " << i);
        CHECK(lse.data[i] == exact(lse0[i]));
        CHECK(lse.data[4 + i] == Approx(std::log(4.0)).epsilon(0).margin(1e-15));
    }
}

TEST_CASE("reference: gqa_attention's shape errors", "[reference]") {
    using Shapes = std::vector<std::vector<std::int64_t>>;
    CHECK_THROWS_WITH(reference_shape("gqa_attention", Shapes{{2, 8, 4}, {2, 4, 4}}, Loc{}), "gqa_attention takes 3 arguments, got 2");
    CHECK_THROWS_WITH(reference_shape("gqa_attention", Shapes{{8, 4}, {2, 4, 4}, {2, 4, 4}}, Loc{}),
                      "gqa_attention: q must have 3 dimensions (K/V heads × rows × columns), but it is 8×4");
    CHECK_THROWS_WITH(reference_shape("gqa_attention_lse", Shapes{{2, 8, 4}, {4, 4}}, Loc{}),
                      "gqa_attention_lse: k must have 3 dimensions (K/V heads × rows × columns), but it is 4×4");
    // Q laid out per query head (Hq = 4) against 2 K/V heads: the packed layout takes Q[Hkv][n·G][d].
    CHECK_THROWS_WITH(reference_shape("gqa_attention", Shapes{{4, 4, 4}, {2, 4, 4}, {2, 4, 4}}, Loc{}),
                      "gqa_attention: q is 4×4×4 but k is 2×4×4: they need as many K/V heads (q[h] holds the rows of every query head that "
                      "shares K/V head h)");
    CHECK_THROWS_WITH(reference_shape("gqa_attention", Shapes{{2, 8, 4}, {2, 4, 4}, {3, 4, 4}}, Loc{}),
                      "gqa_attention: q is 2×8×4 but v is 3×4×4: they need as many K/V heads (q[h] holds the rows of every query head that "
                      "shares K/V head h)");
    CHECK_THROWS_WITH(reference_shape("gqa_attention_lse", Shapes{{2, 8, 3}, {2, 4, 4}}, Loc{}),
                      "gqa_attention_lse: q is 2×8×3 but k is 2×4×4: their rows must have equal length");
    CHECK_THROWS_WITH(reference_shape("gqa_attention", Shapes{{2, 8, 4}, {2, 4, 4}, {2, 5, 4}}, Loc{}),
                      "gqa_attention: k is 2×4×4 but v is 2×5×4: they need as many rows");
    CHECK(reference_shape("gqa_attention", Shapes{{2, 8, 4}, {2, 5, 4}, {2, 5, 3}}, Loc{}) == std::vector<std::int64_t>{2, 8, 3});
    CHECK(reference_shape("gqa_attention_lse", Shapes{{2, 8, 4}, {2, 5, 4}}, Loc{}) == std::vector<std::int64_t>{2, 8});
    try {
        reference_shape("gqa_attention", Shapes{{4, 4, 4}, {2, 4, 4}, {2, 4, 4}}, Loc{3, 9, 11});
        FAIL("no error");
    } catch (const ToyError& e) {
        CHECK(e.loc().line == 3);
        CHECK(e.loc().col == 9);
    }
}

TEST_CASE("reference: mean and sample variance of a vector", "[reference]") {
    const Tensor x = vector({2, 4, 4, 4, 5, 5, 7, 9});  // mean 5, squared deviations sum to 32
    const Tensor mean = reference("mean", {x});
    const Tensor variance = reference("variance", {x});
    REQUIRE(mean.shape == std::vector<std::int64_t>{1});
    REQUIRE(variance.shape == std::vector<std::int64_t>{1});
    CHECK(mean.data[0] == Approx(5.0).epsilon(0).margin(1e-12));
    CHECK(variance.data[0] == Approx(32.0 / 7).epsilon(0).margin(1e-12));
    CHECK(reference("variance", {vector({1, 2})}).data == std::vector<double>{0.5});
    CHECK(reference("mean", {vector({-3})}).data == std::vector<double>{-3});
}

TEST_CASE("reference: shape errors name the function and the culprit", "[reference]") {
    using Shapes = std::vector<std::vector<std::int64_t>>;
    CHECK_THROWS_WITH(reference_shape("attention_dq", Shapes{{4, 4}, {4, 4}, {4, 4}}, Loc{}), "attention_dq takes 4 arguments, got 3");
    CHECK_THROWS_WITH(reference_shape("attention_dk", Shapes{{4, 4}, {4, 4}, {4, 4}, {4, 3}}, Loc{}),
                      "attention_dk: do is 4×3 but attention(q, k, v) is 4×4: they must have the same shape");
    CHECK_THROWS_WITH(reference_shape("scores", Shapes{{4, 3}, {4, 4}}, Loc{}), "scores: q is 4×3 but k is 4×4: their rows must have equal length");
    CHECK_THROWS_WITH(reference_shape("attention_dv", Shapes{{4, 4}, {4, 4}, {3, 4}, {4, 4}}, Loc{}),
                      "attention_dv: k is 4×4 but v is 3×4: they need as many rows");
    CHECK_THROWS_WITH(reference_shape("attention_lse", Shapes{{4}, {4, 4}}, Loc{}), "attention_lse: q must be a matrix, but it is 4");
    CHECK_THROWS_WITH(reference_shape("attention_rowsum", Shapes{{4, 4}}, Loc{}), "attention_rowsum takes 2 arguments, got 1");
    CHECK_THROWS_WITH(reference_shape("variance", Shapes{{1}}, Loc{}), "variance: the argument must have at least 2 elements, but it has 1");
    CHECK_THROWS_WITH(reference_shape("mean", Shapes{{2, 3}}, Loc{}), "mean: the argument must be a vector, but it is 2×3");
    CHECK_THROWS_WITH(reference_shape("mean", Shapes{{}}, Loc{}), "mean: the argument must be a vector, but it is a scalar");
    CHECK_THROWS_WITH(reference_shape("attention_lsee", Shapes{{4, 4}, {4, 4}}, Loc{}),
                      "unknown reference function 'attention_lsee'; did you mean 'attention_lse'?");
    // The error carries the check's location, and reference() validates as reference_shape does.
    try {
        reference_shape("attention_delta", Shapes{{4, 4}, {4, 4}, {4, 4}, {2, 4}}, Loc{7, 12, 15});
        FAIL("no error");
    } catch (const ToyError& e) {
        CHECK(e.loc().line == 7);
        CHECK(e.loc().col == 12);
    }
    CHECK_THROWS_AS(reference("attention_dq", {Q, K, V}), ToyError);
    CHECK_THROWS_AS(reference("variance", {vector({1})}), ToyError);
}
