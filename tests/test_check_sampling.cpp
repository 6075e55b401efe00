// What `toysim gpu run` compares with the CPU reference when checking everything would take too
// long: sampled rows of every head (gpu::plan_checks), causal attention's included. A causal
// row's mask needs the row's index, which the check passes on (RowSample): a sampled row r must
// be row r of the full reference exactly. The device is not needed: these are the host's choices.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gpu/codegen/codegen.h"
#include "gpu/runtime/run.h"
#include "sim/reference/reference.h"
#include "support.h"

using namespace toysim;
using toysim::testing::build_file;

namespace {

Program attention(const std::string& program, const ParamSettings& settings) {
    return build_file("programs/attention/" + program, settings);
}

// What gpu run would check: the plans point into p's checks.
gpu::CheckSampling sampling(const Program& p, std::int64_t heads, const std::string& kernel = {},
                            double budget = gpu::GpuRunOptions{}.check_budget) {
    gpu::GpuRunOptions options;
    options.heads = heads;
    options.kernel = kernel;
    options.check_budget = budget;
    return gpu::plan_checks(p, gpu::program_kernel(p, kernel), options);
}

bool sampled(const gpu::CheckSampling& s) {
    for (const auto& c : s.checks)
        if (!c.by_rows) return false;
    return !s.checks.empty() && !s.rows.empty();
}

Tensor random_matrix(std::int64_t rows, std::int64_t cols, std::mt19937& rng) {
    std::uniform_real_distribution<double> u(-2, 2);
    Tensor t{{rows, cols}, std::vector<double>(static_cast<size_t>(rows * cols))};
    for (double& x : t.data) x = u(rng);
    return t;
}

// Rows `rows` of t, as the check cuts a row argument.
Tensor cut(const Tensor& t, const std::vector<std::int64_t>& rows) {
    const auto row = static_cast<std::ptrdiff_t>(t.data.size()) / t.shape[0];
    Tensor out{t.shape, {}};
    out.shape[0] = static_cast<std::int64_t>(rows.size());
    for (auto r : rows) out.data.insert(out.data.end(), t.data.begin() + r * row, t.data.begin() + (r + 1) * row);
    return out;
}

// Each check of `program` at a small n, on the rows its sampler picks under a small budget,
// against the same rows of the full reference: equal to the last bit.
void sampled_rows_are_the_full_rows(const std::string& program, const ParamSettings& settings, std::int64_t n, std::int64_t d) {
    // Each row costs the two checks 3·n·d multiply-adds on one head: a budget of 7 rows.
    const Program p = attention(program, settings);
    const gpu::CheckSampling s = sampling(p, 1, {}, 7.0 * 3 * double(n * d));
    REQUIRE(sampled(s));
    REQUIRE(s.rows.size() == 7);
    REQUIRE(s.rows.front() == 0);
    REQUIRE(s.rows.back() == n - 1);
    std::mt19937 rng(20240611);
    const Tensor q = random_matrix(n, d, rng), k = random_matrix(n, d, rng), v = random_matrix(n, d, rng);
    REQUIRE(s.checks.size() == 2);
    for (const auto& check : s.checks) {
        const std::string& function = check.spec->function;
        INFO(program << ": " << check.spec->text);
        REQUIRE(check.row_args == std::vector<std::size_t>{0});  // q
        std::vector<Tensor> whole{q, k}, cut_args{cut(q, s.rows), k};
        if (check.args.size() == 3) {
            whole.push_back(v);
            cut_args.push_back(v);
        }
        const Tensor full = reference(function, whole);
        const Tensor rows = reference(function, cut_args, RowSample{check.row_args, s.rows, n});
        const auto width = static_cast<size_t>(full.data.size()) / static_cast<size_t>(n);
        std::vector<std::int64_t> shape = full.shape;
        shape[0] = static_cast<std::int64_t>(s.rows.size());
        REQUIRE(rows.shape == shape);
        for (size_t i = 0; i < s.rows.size(); ++i) {
            INFO("sampled row " << i << " = row " << s.rows[i]);
            const auto r = static_cast<size_t>(s.rows[i]);
            CHECK(std::vector<double>(rows.data.begin() + static_cast<std::ptrdiff_t>(i * width),
                                      rows.data.begin() + static_cast<std::ptrdiff_t>((i + 1) * width)) ==
                  std::vector<double>(full.data.begin() + static_cast<std::ptrdiff_t>(r * width),
                                      full.data.begin() + static_cast<std::ptrdiff_t>((r + 1) * width)));
        }
    }
}

}  // namespace

TEST_CASE("check sampling: causal attention's sampled reference rows are the full reference's rows", "[check_sampling]") {
    sampled_rows_are_the_full_rows("fa2_causal.toy", {{"n", 48}, {"d", 8}, {"B", 8}}, 48, 8);
    sampled_rows_are_the_full_rows("fa2_causal_heaviest_first.toy", {{"n", 48}, {"d", 8}, {"B", 8}}, 48, 8);
    // The same design as attention's, which needs no index.
    sampled_rows_are_the_full_rows("fa2.toy", {{"n", 48}, {"d", 8}, {"Br", 8}, {"Bc", 8}}, 48, 8);
}

TEST_CASE("check sampling: a causal row's mask comes from its index, not its place in the sample", "[check_sampling]") {
    std::mt19937 rng(7);
    const std::int64_t n = 12, d = 4;
    const Tensor q = random_matrix(n, d, rng), k = random_matrix(n, d, rng), v = random_matrix(n, d, rng);
    const std::vector<std::int64_t> rows{3, 4, 10};
    const std::vector<std::size_t> q_only{0};
    const Tensor full = reference("causal_attention", {q, k, v});
    const Tensor sample = reference("causal_attention", {cut(q, rows), k, v}, RowSample{q_only, rows, n});
    // Rows 0..2 of the full result see keys 0..2: the sample's rows see 0..3, 0..4 and 0..10.
    for (size_t i = 0; i < rows.size(); ++i)
        for (std::int64_t j = 0; j < d; ++j) {
            CHECK(sample.data[i * d + static_cast<size_t>(j)] == full.data[static_cast<size_t>(rows[i] * d + j)]);
            CHECK(sample.data[i * d + static_cast<size_t>(j)] != full.data[i * d + static_cast<size_t>(j)]);
        }
    // Without the indices a cut q is refused (q and k must hold the same positions), and so are
    // indices that do not fit the rows, or that the cut arguments do not hold.
    CHECK_THROWS_AS(reference("causal_attention", {cut(q, rows), k, v}), ToyError);
    const std::vector<std::int64_t> past_the_end{3, 4, 12}, two{3, 4};
    CHECK_THROWS_AS(reference("causal_attention", {cut(q, rows), k, v}, RowSample{q_only, past_the_end, n}), ToyError);
    CHECK_THROWS_AS(reference("causal_attention", {cut(q, rows), k, v}, RowSample{q_only, two, n}), ToyError);
}

TEST_CASE("check sampling: gpu run samples causal attention's rows wherever it samples attention's", "[check_sampling]") {
    const std::int64_t d = 64, heads = 64;
    bool some_full = false, some_sampled = false;
    for (std::int64_t n : {64, 256, 512, 1024, 4096}) {
        INFO("n = " << n);
        const Program fa2 = attention("fa2.toy", {{"n", n}, {"d", d}, {"Br", 64}, {"Bc", 64}});
        const gpu::CheckSampling full = sampling(fa2, heads);
        const bool attention_sampled = sampled(full);
        (attention_sampled ? some_sampled : some_full) = true;
        for (const char* program : {"fa2_causal.toy", "fa2_causal_heaviest_first.toy"}) {
            INFO(program);
            const Program p = attention(program, {{"n", n}, {"d", d}, {"B", 64}});
            const gpu::CheckSampling causal = sampling(p, heads);
            CHECK(sampled(causal) == attention_sampled);
            CHECK(causal.rows == full.rows);  // the same work per row, so the same rows
            if (!attention_sampled) {
                CHECK(causal.rows.empty());
                CHECK(causal.heads_checked == static_cast<std::size_t>(heads));
                continue;
            }
            CHECK(causal.rows.size() < static_cast<std::size_t>(n));
            for (const auto& check : causal.checks) CHECK(check.row_args == std::vector<std::size_t>{0});
            for (int mode : causal.download) CHECK(mode != 2);  // nothing comes back whole
        }
    }
    CHECK(some_full);
    CHECK(some_sampled);

    // The run that took tens of minutes in the reference: fa2_causal_v3_mma at n = 16384, d = 128,
    // 64 heads, now a few hundred rows of each head.
    const Program heaviest_first = attention("fa2_causal_heaviest_first.toy", {{"n", 16384}, {"d", 128}, {"B", 128}});
    const gpu::CheckSampling big = sampling(heaviest_first, heads, "fa2_causal_v3_mma");
    REQUIRE(sampled(big));
    CHECK(big.rows.size() >= 2);
    CHECK(big.rows.size() < 1000);
    CHECK(big.rows.front() == 0);
    CHECK(big.rows.back() == 16383);
}

TEST_CASE("check sampling: grouped-query attention samples rows within each K/V head", "[check_sampling][gqa]") {
    // fa2_gqa.toy's Q, O and L are K/V heads × packed rows (× d): the rows are dimension 2, and
    // each K/V head's rows are cut to the same sample. Before, gqa checked whole heads (at n =
    // 16384, G = 4, 2.7·10¹¹ multiply-adds on the CPU for one).
    const std::int64_t n = 24, d = 4, g = 3, hkv = 2, rows = n * g;
    const Program p = attention("fa2_gqa.toy", {{"n", n}, {"d", d}, {"Br", 4}, {"Bc", 8}, {"G", g}, {"Hkv", hkv}});
    // Each packed row costs the two checks 3·n·d multiply-adds in each K/V head: 5 rows' worth.
    gpu::GpuRunOptions options;  // fa2_gqa has no hand-written twin: the generated module's arrays
    options.check_budget = 5.0 * 3 * double(n * d * hkv);
    const auto generated = gpu::generate_cuda(p, gpu::DType::F16);
    const gpu::CheckSampling s = gpu::plan_checks(p, generated->spec, options);
    REQUIRE(sampled(s));
    CHECK(s.row_dim == 1);
    CHECK(s.rows == std::vector<std::int64_t>{0, 17, 35, 53, 71});
    std::mt19937 rng(11);
    auto heads_of = [&](std::int64_t r) {  // hkv × r × d, each head a random matrix
        Tensor t{{hkv, r, d}, {}};
        for (std::int64_t h = 0; h < hkv; ++h) {
            const Tensor m = random_matrix(r, d, rng);
            t.data.insert(t.data.end(), m.data.begin(), m.data.end());
        }
        return t;
    };
    const Tensor q = heads_of(rows), k = heads_of(n), v = heads_of(n);
    Tensor q_cut{{hkv, static_cast<std::int64_t>(s.rows.size()), d}, {}};
    for (std::int64_t h = 0; h < hkv; ++h)
        for (auto r : s.rows) {
            const auto at = q.data.begin() + static_cast<std::ptrdiff_t>((h * rows + r) * d);
            q_cut.data.insert(q_cut.data.end(), at, at + d);
        }
    for (const auto& check : s.checks) {
        INFO(check.spec->text);
        const std::string& function = check.spec->function;
        const bool with_v = check.args.size() == 3;
        const Tensor full = reference(function, with_v ? std::vector<Tensor>{q, k, v} : std::vector<Tensor>{q, k});
        const Tensor cut_rows = reference(function, with_v ? std::vector<Tensor>{q_cut, k, v} : std::vector<Tensor>{q_cut, k},
                                          RowSample{check.row_args, s.rows, rows, 1});
        const std::int64_t width = with_v ? d : 1;
        REQUIRE(cut_rows.shape[1] == static_cast<std::int64_t>(s.rows.size()));
        for (std::int64_t h = 0; h < hkv; ++h)
            for (size_t i = 0; i < s.rows.size(); ++i)
                for (std::int64_t c = 0; c < width; ++c)
                    CHECK(cut_rows.data[static_cast<size_t>((h * static_cast<std::int64_t>(s.rows.size()) + static_cast<std::int64_t>(i)) * width + c)] ==
                          full.data[static_cast<size_t>((h * rows + s.rows[i]) * width + c)]);
        // Rows of dimension 1 are not rows of dimension 0: the cut is refused there.
        CHECK_THROWS_AS(reference(function, with_v ? std::vector<Tensor>{q_cut, k, v} : std::vector<Tensor>{q_cut, k},
                                  RowSample{check.row_args, s.rows, rows, 0}),
                        ToyError);
    }
}
