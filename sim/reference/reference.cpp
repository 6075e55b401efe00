#include "sim/reference/reference.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <fmt/format.h>

#include "sim/support/text.h"

namespace toysim {

const std::vector<ReferenceFunction>& reference_functions() {
    static const std::vector<ReferenceFunction> table = {
        {"matmul", "matmul(a, b)", "matrix product: a is m×k, b is k×n"},
        {"softmax", "softmax(x)", "safe softmax of a vector, or of each row of a matrix"},
        {"attention", "attention(q, k, v)", "softmax(q·kᵀ)·v with row-wise softmax (scale folded into q)"},
        {"scores", "scores(q, k)", "S = q·kᵀ: q is n×d, k is m×d"},
        {"attention_rowmax", "attention_rowmax(q, k)", "m_i = max_j S_ij of S = q·kᵀ, one per row (FlashAttention-1 keeps m)"},
        {"attention_rowsum", "attention_rowsum(q, k)", "ℓ_i = Σ_j exp(S_ij − m_i), one per row (FlashAttention-1 keeps ℓ)"},
        {"attention_lse", "attention_lse(q, k)", "L_i = m_i + ln ℓ_i, one per row (FlashAttention-2 keeps L)"},
        {"attention_delta", "attention_delta(q, k, v, do)", "D_i = Σ_j do_ij·O_ij with O = attention(q, k, v)"},
        {"attention_dv", "attention_dv(q, k, v, do)", "dV = Pᵀ·do with P = softmax(q·kᵀ): m×dv"},
        {"attention_dp", "attention_dp(q, k, v, do)", "dP = do·vᵀ: n×m"},
        {"attention_ds", "attention_ds(q, k, v, do)", "dS = P ∘ (dP − D): n×m"},
        {"attention_dq", "attention_dq(q, k, v, do)", "dQ = dS·k with dS = P ∘ (do·vᵀ − D): n×d"},
        {"attention_dk", "attention_dk(q, k, v, do)", "dK = dSᵀ·q with dS = P ∘ (do·vᵀ − D): m×d"},
        {"transpose", "transpose(a)", "the transpose of a matrix"},
        {"copy", "copy(x)", "the input itself"},
        {"mean", "mean(x)", "the mean of a vector, as a vector of 1"},
        {"variance", "variance(x)", "the sample variance Σ(x − x̄)²/(N − 1) of a vector of N ≥ 2, as a vector of 1"},
    };
    return table;
}

namespace {
using Values = std::vector<double>;

[[noreturn]] void bad(Loc loc, const std::string& message) { throw ToyError(loc, message); }

std::string shape_text(const std::vector<std::int64_t>& s) {
    if (s.empty()) return "a scalar";
    return fmt::format("{}", fmt::join(s, "×"));
}

size_t at(std::int64_t row, std::int64_t cols, std::int64_t col) { return static_cast<size_t>(row * cols + col); }

// Per row of a rows×cols matrix: m_i = max_j x_ij and ℓ_i = Σ_j exp(x_ij − m_i).
struct RowStats {
    Values max, sum;
};

RowStats row_stats(const double* x, std::int64_t rows, std::int64_t cols) {
    RowStats st{Values(static_cast<size_t>(rows)), Values(static_cast<size_t>(rows), 0.0)};
    for (std::int64_t r = 0; r < rows; ++r) {
        const double* row = x + r * cols;
        const auto i = static_cast<size_t>(r);
        st.max[i] = *std::max_element(row, row + cols);
        for (std::int64_t j = 0; j < cols; ++j) st.sum[i] += std::exp(row[j] - st.max[i]);
    }
    return st;
}

// Safe softmax of each row, from the rows' statistics.
Values softmax_rows(const double* x, std::int64_t cols, const RowStats& st) {
    const auto rows = static_cast<std::int64_t>(st.max.size());
    Values out(static_cast<size_t>(rows * cols));
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t j = 0; j < cols; ++j)
            out[at(r, cols, j)] = std::exp(x[r * cols + j] - st.max[static_cast<size_t>(r)]) / st.sum[static_cast<size_t>(r)];
    return out;
}

// c = a·b for a m×k, b k×n.
Values transposed(const double* a, std::int64_t rows, std::int64_t cols);

// Each element sums its products in order of p; b is transposed first so that both factors
// are read along contiguous rows (the same sums, without striding through b).
Values matmul(const double* a, const double* b, std::int64_t m, std::int64_t k, std::int64_t n) {
    Values c(static_cast<size_t>(m * n));
    const Values bt = transposed(b, k, n);
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            const double* row = a + i * k;
            const double* col = bt.data() + j * k;
            double sum = 0;
            for (std::int64_t p = 0; p < k; ++p) sum += row[p] * col[p];
            c[at(i, n, j)] = sum;
        }
    return c;
}

Values transposed(const double* a, std::int64_t rows, std::int64_t cols) {
    Values t(static_cast<size_t>(rows * cols));
    for (std::int64_t i = 0; i < rows; ++i)
        for (std::int64_t j = 0; j < cols; ++j) t[at(j, rows, i)] = a[i * cols + j];
    return t;
}

double mean_of(const Values& x) {
    double sum = 0;
    for (double e : x) sum += e;
    return sum / static_cast<double>(x.size());
}

double variance_of(const Values& x) {
    const double mu = mean_of(x);
    double sum = 0;
    for (double e : x) sum += (e - mu) * (e - mu);
    return sum / static_cast<double>(x.size() - 1);
}

// Attention's forward pass for q (n×d), k (m×d) and, when given, v (m×dv): S = q·kᵀ, its row
// statistics, P = softmax(S) and O = P·v.
struct Forward {
    std::int64_t n = 0, d = 0, m = 0, dv = 0;
    Values s, p, o;
    RowStats stats;
};

Forward forward(const std::vector<Tensor>& args) {
    Forward f;
    f.n = args[0].shape[0], f.d = args[0].shape[1], f.m = args[1].shape[0];
    f.s = matmul(args[0].data.data(), transposed(args[1].data.data(), f.m, f.d).data(), f.n, f.d, f.m);
    f.stats = row_stats(f.s.data(), f.n, f.m);
    f.p = softmax_rows(f.s.data(), f.m, f.stats);
    if (args.size() > 2) {
        f.dv = args[2].shape[1];
        f.o = matmul(f.p.data(), args[2].data.data(), f.n, f.m, f.dv);
    }
    return f;
}

// D_i = Σ_j dO_ij·O_ij.
Values delta(const Forward& f, const double* dout) {
    Values d(static_cast<size_t>(f.n), 0.0);
    for (std::int64_t i = 0; i < f.n; ++i)
        for (std::int64_t j = 0; j < f.dv; ++j) d[static_cast<size_t>(i)] += dout[i * f.dv + j] * f.o[at(i, f.dv, j)];
    return d;
}

Values probabilities_grad(const Forward& f, const double* v, const double* dout) {
    return matmul(dout, transposed(v, f.m, f.dv).data(), f.n, f.dv, f.m);
}

// The scores' gradient dS = P ∘ (dP − D), with dP = dO·vᵀ and D broadcast along each row.
Values scores_grad(const Forward& f, const double* v, const double* dout) {
    const Values dp = probabilities_grad(f, v, dout);
    const Values d = delta(f, dout);
    Values ds(dp.size());
    for (std::int64_t i = 0; i < f.n; ++i)
        for (std::int64_t j = 0; j < f.m; ++j) ds[at(i, f.m, j)] = f.p[at(i, f.m, j)] * (dp[at(i, f.m, j)] - d[static_cast<size_t>(i)]);
    return ds;
}

// scores, attention and the attention_* functions; reference_shape has checked the arguments.
Values attention_family(std::string_view name, const std::vector<Tensor>& args) {
    const Forward f = forward(args);
    if (name == "scores") return f.s;
    if (name == "attention_rowmax") return f.stats.max;
    if (name == "attention_rowsum") return f.stats.sum;
    if (name == "attention_lse") {
        Values lse(f.stats.max.size());
        for (size_t i = 0; i < lse.size(); ++i) lse[i] = f.stats.max[i] + std::log(f.stats.sum[i]);
        return lse;
    }
    if (name == "attention") return f.o;
    const double* q = args[0].data.data();
    const double* k = args[1].data.data();
    const double* dout = args[3].data.data();
    if (name == "attention_delta") return delta(f, dout);
    if (name == "attention_dv") return matmul(transposed(f.p.data(), f.n, f.m).data(), dout, f.m, f.n, f.dv);
    if (name == "attention_dp") return probabilities_grad(f, args[2].data.data(), dout);
    const Values ds = scores_grad(f, args[2].data.data(), dout);
    if (name == "attention_ds") return ds;
    if (name == "attention_dq") return matmul(ds.data(), k, f.n, f.m, f.d);
    return matmul(transposed(ds.data(), f.n, f.m).data(), q, f.m, f.n, f.d);  // attention_dk
}

// The attention family's functions of (q, k) and of (q, k, v, do).
constexpr std::string_view kOfScores[] = {"scores", "attention_rowmax", "attention_rowsum", "attention_lse"};
constexpr std::string_view kGradients[] = {"attention_delta", "attention_dv", "attention_dp", "attention_ds", "attention_dq", "attention_dk"};

bool is_one_of(std::string_view name, std::span<const std::string_view> names) { return std::ranges::find(names, name) != names.end(); }
}  // namespace

std::vector<std::int64_t> reference_shape(std::string_view name, const std::vector<std::vector<std::int64_t>>& s, Loc loc) {
    auto arity = [&](size_t n) {
        if (s.size() != n) bad(loc, fmt::format("{} takes {} argument{}, got {}", name, n, n == 1 ? "" : "s", s.size()));
    };
    auto matrix = [&](size_t i, std::string_view what) {
        if (s[i].size() != 2) bad(loc, fmt::format("{}: {} must be a matrix, but it is {}", name, what, shape_text(s[i])));
    };
    // q, k[, v[, do]] of the attention family: q n×d, k m×d, v m×dv, do n×dv.
    auto attention_args = [&](size_t count) {
        static constexpr std::string_view what[] = {"q", "k", "v", "do"};
        arity(count);
        for (size_t i = 0; i < count; ++i) matrix(i, what[i]);
        if (s[0][1] != s[1][1])
            bad(loc, fmt::format("{}: q is {} but k is {}: their rows must have equal length", name, shape_text(s[0]), shape_text(s[1])));
        if (count > 2 && s[1][0] != s[2][0])
            bad(loc, fmt::format("{}: k is {} but v is {}: they need as many rows", name, shape_text(s[1]), shape_text(s[2])));
        if (count > 3 && (s[3][0] != s[0][0] || s[3][1] != s[2][1]))
            bad(loc, fmt::format("{}: do is {} but attention(q, k, v) is {}×{}: they must have the same shape", name, shape_text(s[3]),
                                 s[0][0], s[2][1]));
    };
    if (name == "matmul") {
        arity(2);
        matrix(0, "the first argument");
        matrix(1, "the second argument");
        if (s[0][1] != s[1][0])
            bad(loc, fmt::format("matmul: inner dimensions differ ({} times {})", shape_text(s[0]), shape_text(s[1])));
        return {s[0][0], s[1][1]};
    }
    if (name == "softmax") {
        arity(1);
        if (s[0].empty() || s[0].size() > 2) bad(loc, "softmax: the argument must be a vector or a matrix");
        return s[0];
    }
    if (name == "attention") {
        attention_args(3);
        return {s[0][0], s[2][1]};
    }
    if (is_one_of(name, kOfScores)) {
        attention_args(2);
        if (name == "scores") return {s[0][0], s[1][0]};
        return {s[0][0]};
    }
    if (is_one_of(name, kGradients)) {
        attention_args(4);
        if (name == "attention_delta") return {s[0][0]};
        if (name == "attention_dv") return {s[1][0], s[2][1]};
        if (name == "attention_dp" || name == "attention_ds") return {s[0][0], s[1][0]};
        if (name == "attention_dq") return {s[0][0], s[0][1]};
        return {s[1][0], s[0][1]};  // attention_dk
    }
    if (name == "mean" || name == "variance") {
        arity(1);
        if (s[0].size() != 1) bad(loc, fmt::format("{}: the argument must be a vector, but it is {}", name, shape_text(s[0])));
        const std::int64_t least = name == "mean" ? 1 : 2;
        if (s[0][0] < least)
            bad(loc, fmt::format("{}: the argument must have at least {} element{}, but it has {}", name, least, least == 1 ? "" : "s", s[0][0]));
        return {1};
    }
    if (name == "transpose") {
        arity(1);
        matrix(0, "the argument");
        return {s[0][1], s[0][0]};
    }
    if (name == "copy") {
        arity(1);
        return s[0];
    }
    std::vector<std::string_view> names;
    for (const auto& f : reference_functions()) names.push_back(f.name);
    bad(loc, fmt::format("unknown reference function '{}'{}", name, did_you_mean(name, names)));
}

Tensor reference(std::string_view name, const std::vector<Tensor>& args) {
    std::vector<std::vector<std::int64_t>> shapes;
    for (const auto& a : args) shapes.push_back(a.shape);
    Tensor out;
    out.shape = reference_shape(name, shapes, Loc{});
    if (name == "matmul") {
        out.data = matmul(args[0].data.data(), args[1].data.data(), shapes[0][0], shapes[0][1], shapes[1][1]);
    } else if (name == "softmax") {
        const std::int64_t cols = shapes[0].back(), rows = shapes[0].size() == 2 ? shapes[0][0] : 1;
        out.data = softmax_rows(args[0].data.data(), cols, row_stats(args[0].data.data(), rows, cols));
    } else if (name == "attention" || is_one_of(name, kOfScores) || is_one_of(name, kGradients)) {
        out.data = attention_family(name, args);
    } else if (name == "mean") {
        out.data = {mean_of(args[0].data)};
    } else if (name == "variance") {
        out.data = {variance_of(args[0].data)};
    } else if (name == "transpose") {
        out.data = transposed(args[0].data.data(), shapes[0][0], shapes[0][1]);
    } else {
        out.data = args[0].data;
    }
    return out;
}

}  // namespace toysim
