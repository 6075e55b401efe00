#include "sim/reference/reference.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <fmt/format.h>

#include "support/text.h"

namespace toysim {

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
// statistics, P = softmax(S) and O = P·v. Causal: query i sees keys 0..i (S_ij = −∞ for j > i;
// q and k hold the same positions, n = m); with `rows` (sampled rows of q), row i of q is query
// rows[i], which sees keys 0..rows[i].
struct Forward {
    std::int64_t n = 0, d = 0, m = 0, dv = 0;
    Values s, p, o;
    RowStats stats;
};

Forward forward(const std::vector<Tensor>& args, bool causal, std::span<const std::int64_t> rows) {
    Forward f;
    f.n = args[0].shape[0], f.d = args[0].shape[1], f.m = args[1].shape[0];
    f.s = matmul(args[0].data.data(), transposed(args[1].data.data(), f.m, f.d).data(), f.n, f.d, f.m);
    if (causal)
        for (std::int64_t i = 0; i < f.n; ++i)
            for (std::int64_t j = (rows.empty() ? i : rows[static_cast<size_t>(i)]) + 1; j < f.m; ++j) f.s[at(i, f.m, j)] = -INFINITY;
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
Values attention_family(std::string_view name, const std::vector<Tensor>& args, bool causal = false,
                        std::span<const std::int64_t> rows = {}) {
    const Forward f = forward(args, causal, rows);
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

using Shape = std::vector<std::int64_t>;

void arity(std::string_view name, const Shapes& s, size_t n, Loc loc) {
    if (s.size() != n) bad(loc, fmt::format("{} takes {} argument{}, got {}", name, n, n == 1 ? "" : "s", s.size()));
}

void matrix(std::string_view name, const Shapes& s, size_t i, std::string_view what, Loc loc) {
    if (s[i].size() != 2) bad(loc, fmt::format("{}: {} must be a matrix, but it is {}", name, what, shape_text(s[i])));
}

// q, k[, v[, do]] of the attention family: q n×d, k m×d, v m×dv, do n×dv. With heads, each is
// H of those, one per K/V head (q H×n×d, k H×m×d, v H×m×dv), as the gqa_ functions take them.
void attention_args(std::string_view name, const Shapes& s, size_t count, Loc loc, bool heads = false) {
    static constexpr std::string_view what[] = {"q", "k", "v", "do"};
    arity(name, s, count, loc);
    const size_t r = heads ? 1 : 0;  // where the rows are: after the heads
    for (size_t i = 0; i < count; ++i) {
        if (!heads) matrix(name, s, i, what[i], loc);
        else if (s[i].size() != 3)
            bad(loc, fmt::format("{}: {} must have 3 dimensions (K/V heads × rows × columns), but it is {}", name, what[i],
                                 shape_text(s[i])));
    }
    for (size_t i = 1; heads && i < count; ++i)
        if (s[i][0] != s[0][0])
            bad(loc, fmt::format("{}: q is {} but {} is {}: they need as many K/V heads (q[h] holds the rows of every query head that "
                                 "shares K/V head h)",
                                 name, shape_text(s[0]), what[i], shape_text(s[i])));
    if (s[0][r + 1] != s[1][r + 1])
        bad(loc, fmt::format("{}: q is {} but k is {}: their rows must have equal length", name, shape_text(s[0]), shape_text(s[1])));
    if (count > 2 && s[1][r] != s[2][r])
        bad(loc, fmt::format("{}: k is {} but v is {}: they need as many rows", name, shape_text(s[1]), shape_text(s[2])));
    if (count > 3 && (s[3][0] != s[0][0] || s[3][1] != s[2][1]))
        bad(loc, fmt::format("{}: do is {} but attention(q, k, v) is {}×{}: they must have the same shape", name, shape_text(s[3]),
                             s[0][0], s[2][1]));
}

void vector_of_at_least(std::string_view name, const Shapes& s, std::int64_t least, Loc loc) {
    arity(name, s, 1, loc);
    if (s[0].size() != 1) bad(loc, fmt::format("{}: the argument must be a vector, but it is {}", name, shape_text(s[0])));
    if (s[0][0] < least)
        bad(loc, fmt::format("{}: the argument must have at least {} element{}, but it has {}", name, least, least == 1 ? "" : "s", s[0][0]));
}

std::int64_t saturating(std::initializer_list<std::int64_t> factors) {
    std::int64_t out = 1;
    for (auto x : factors)
        if (__builtin_mul_overflow(out, x, &out)) return INT64_MAX;
    return out;
}

std::int64_t saturating_sum(std::initializer_list<std::int64_t> terms) {
    std::int64_t total = 0;
    for (auto x : terms) total = total > INT64_MAX - x ? INT64_MAX : total + x;
    return total;
}

std::int64_t elements_of(const Shapes& s) {
    std::int64_t total = 0;
    for (const auto& shape : s) {
        std::int64_t n = 1;
        for (auto x : shape) n = saturating({n, x});
        total = saturating_sum({total, n});
    }
    return total;
}

// The attention family holds its arguments' copies and a few n×m matrices (S, P, dP, dS).
std::int64_t attention_footprint(const Shapes& s) { return saturating_sum({saturating({4, s[0][0], s[1][0]}), elements_of(s)}); }
std::int64_t twice_the_arguments(const Shapes& s) { return saturating({2, elements_of(s)}); }

std::vector<double> attention_values(const ReferenceFunction& f, const std::vector<Tensor>& args, std::span<const std::int64_t>) {
    return attention_family(f.name, args);
}

// causal_NAME: the attention function NAME with the causal mask, by each row's index.
std::vector<double> causal_values(const ReferenceFunction& f, const std::vector<Tensor>& args, std::span<const std::int64_t> rows) {
    return attention_family(f.name.substr(f.name.find('_') + 1), args, true, rows);
}

// Tensor t's block for head h: t is H×(the rest), the block is the rest.
Tensor head_of(const Tensor& t, std::int64_t h) {
    const std::vector<std::int64_t> rest(t.shape.begin() + 1, t.shape.end());
    const auto size = static_cast<std::ptrdiff_t>(t.data.size()) / t.shape[0];
    return Tensor{rest, Values(t.data.begin() + h * size, t.data.begin() + (h + 1) * size)};
}

// gqa_NAME: the attention function NAME once per K/V head h, of q[h], k[h] and v[h], the head
// results one after another. attention_args(..., heads) has checked the arguments.
std::vector<double> per_head_values(const ReferenceFunction& f, const std::vector<Tensor>& args, std::span<const std::int64_t>) {
    const std::string_view name = f.name.substr(f.name.find('_') + 1);
    Values out;
    for (std::int64_t h = 0; h < args[0].shape[0]; ++h) {
        std::vector<Tensor> head;
        for (const Tensor& a : args) head.push_back(head_of(a, h));
        const Values values = attention_family(name, head);
        out.insert(out.end(), values.begin(), values.end());
    }
    return out;
}

// One head at a time: its copies and temporaries, beside all the arguments and the result.
std::int64_t per_head_footprint(const Shapes& s) {
    Shapes head;
    for (const auto& shape : s) head.emplace_back(shape.begin() + 1, shape.end());
    const std::int64_t result = saturating({s[0][0], s[0][1], s.size() > 2 ? s[2][2] : 1});
    return saturating_sum({attention_footprint(head), elements_of(s), result});
}

#define TOYSIM_ATTENTION(NAME, SIGNATURE, MEANING, ARGS, RESULT)                                                        \
    {NAME, SIGNATURE, MEANING,                                                                                          \
     [](const ReferenceFunction& f, const Shapes& s, Loc loc) -> Shape { attention_args(f.name, s, ARGS, loc); return RESULT; }, \
     attention_values, attention_footprint}
// The same with the causal mask: query i sees keys 0..i, so q and k need as many rows.
#define TOYSIM_CAUSAL(NAME, SIGNATURE, MEANING, ARGS, RESULT)                                                             \
    {NAME, SIGNATURE, MEANING,                                                                                            \
     [](const ReferenceFunction& f, const Shapes& s, Loc loc) -> Shape {                                                  \
         attention_args(f.name, s, ARGS, loc);                                                                            \
         if (s[0][0] != s[1][0])                                                                                          \
             bad(loc, fmt::format("{}: q is {} but k is {}: causal attention needs as many queries as keys (query i sees " \
                                  "keys 0..i)", f.name, shape_text(s[0]), shape_text(s[1])));                             \
         return RESULT;                                                                                                   \
     },                                                                                                                   \
     causal_values, attention_footprint}
// The same on H K/V heads: q H×n×d, k H×m×d, v H×m×dv; the result is H of attention's.
#define TOYSIM_PER_HEAD(NAME, SIGNATURE, MEANING, ARGS, RESULT)                                                               \
    {NAME, SIGNATURE, MEANING,                                                                                                \
     [](const ReferenceFunction& f, const Shapes& s, Loc loc) -> Shape { attention_args(f.name, s, ARGS, loc, true); return RESULT; }, \
     per_head_values, per_head_footprint}

}  // namespace

// The reference functions: name, how it is written, what it computes, its shape rule, its
// evaluation and its memory. Adding a function is one row.
const std::vector<ReferenceFunction>& reference_functions() {
    static const std::vector<ReferenceFunction> table = {
        {"matmul", "matmul(a, b)", "matrix product: a is m×k, b is k×n",
         [](const ReferenceFunction& f, const Shapes& s, Loc loc) -> Shape {
             arity(f.name, s, 2, loc);
             matrix(f.name, s, 0, "the first argument", loc);
             matrix(f.name, s, 1, "the second argument", loc);
             if (s[0][1] != s[1][0]) bad(loc, fmt::format("matmul: inner dimensions differ ({} times {})", shape_text(s[0]), shape_text(s[1])));
             return {s[0][0], s[1][1]};
         },
         [](const ReferenceFunction&, const std::vector<Tensor>& a, std::span<const std::int64_t>) {
             return matmul(a[0].data.data(), a[1].data.data(), a[0].shape[0], a[0].shape[1], a[1].shape[1]);
         },
         [](const Shapes& s) { return saturating({2, s[0][0], s[1][1]}) + saturating({s[1][0], s[1][1]}); }},
        {"softmax", "softmax(x)", "safe softmax of a vector, or of each row of a matrix",
         [](const ReferenceFunction& f, const Shapes& s, Loc loc) -> Shape {
             arity(f.name, s, 1, loc);
             if (s[0].empty() || s[0].size() > 2) bad(loc, "softmax: the argument must be a vector or a matrix");
             return s[0];
         },
         [](const ReferenceFunction&, const std::vector<Tensor>& a, std::span<const std::int64_t>) {
             const std::int64_t cols = a[0].shape.back(), rows = a[0].shape.size() == 2 ? a[0].shape[0] : 1;
             return softmax_rows(a[0].data.data(), cols, row_stats(a[0].data.data(), rows, cols));
         },
         twice_the_arguments},
        TOYSIM_ATTENTION("attention", "attention(q, k, v)", "softmax(q·kᵀ)·v with row-wise softmax (scale folded into q)", 3,
                         (Shape{s[0][0], s[2][1]})),
        TOYSIM_ATTENTION("scores", "scores(q, k)", "S = q·kᵀ: q is n×d, k is m×d", 2, (Shape{s[0][0], s[1][0]})),
        TOYSIM_ATTENTION("attention_rowmax", "attention_rowmax(q, k)", "m_i = max_j S_ij of S = q·kᵀ, one per row (FlashAttention-1 keeps m)",
                         2, (Shape{s[0][0]})),
        TOYSIM_ATTENTION("attention_rowsum", "attention_rowsum(q, k)", "ℓ_i = Σ_j exp(S_ij − m_i), one per row (FlashAttention-1 keeps ℓ)",
                         2, (Shape{s[0][0]})),
        TOYSIM_ATTENTION("attention_lse", "attention_lse(q, k)", "L_i = m_i + ln ℓ_i, one per row (FlashAttention-2 keeps L)", 2,
                         (Shape{s[0][0]})),
        TOYSIM_CAUSAL("causal_attention", "causal_attention(q, k, v)",
                      "attention with the causal mask: query i sees keys 0..i (S_ij = −∞ for j > i); q and k are n×d", 3,
                      (Shape{s[0][0], s[2][1]})),
        TOYSIM_CAUSAL("causal_attention_lse", "causal_attention_lse(q, k)", "L_i = m_i + ln ℓ_i of causal attention's scores", 2,
                      (Shape{s[0][0]})),
        TOYSIM_PER_HEAD("gqa_attention", "gqa_attention(q, k, v)",
                        "grouped-query attention: attention(q[h], k[h], v[h]) for each K/V head h (q[h]: its query heads' rows)", 3,
                        (Shape{s[0][0], s[0][1], s[2][2]})),
        TOYSIM_PER_HEAD("gqa_attention_lse", "gqa_attention_lse(q, k)", "L = attention_lse(q[h], k[h]) for each K/V head h", 2,
                        (Shape{s[0][0], s[0][1]})),
        TOYSIM_ATTENTION("attention_delta", "attention_delta(q, k, v, do)", "D_i = Σ_j do_ij·O_ij with O = attention(q, k, v)", 4,
                         (Shape{s[0][0]})),
        TOYSIM_ATTENTION("attention_dv", "attention_dv(q, k, v, do)", "dV = Pᵀ·do with P = softmax(q·kᵀ): m×dv", 4, (Shape{s[1][0], s[2][1]})),
        TOYSIM_ATTENTION("attention_dp", "attention_dp(q, k, v, do)", "dP = do·vᵀ: n×m", 4, (Shape{s[0][0], s[1][0]})),
        TOYSIM_ATTENTION("attention_ds", "attention_ds(q, k, v, do)", "dS = P ∘ (dP − D): n×m", 4, (Shape{s[0][0], s[1][0]})),
        TOYSIM_ATTENTION("attention_dq", "attention_dq(q, k, v, do)", "dQ = dS·k with dS = P ∘ (do·vᵀ − D): n×d", 4, (Shape{s[0][0], s[0][1]})),
        TOYSIM_ATTENTION("attention_dk", "attention_dk(q, k, v, do)", "dK = dSᵀ·q with dS = P ∘ (do·vᵀ − D): m×d", 4, (Shape{s[1][0], s[0][1]})),
        {"transpose", "transpose(a)", "the transpose of a matrix",
         [](const ReferenceFunction& f, const Shapes& s, Loc loc) -> Shape {
             arity(f.name, s, 1, loc);
             matrix(f.name, s, 0, "the argument", loc);
             return {s[0][1], s[0][0]};
         },
         [](const ReferenceFunction&, const std::vector<Tensor>& a, std::span<const std::int64_t>) { return transposed(a[0].data.data(), a[0].shape[0], a[0].shape[1]); },
         twice_the_arguments},
        {"copy", "copy(x)", "the input itself",
         [](const ReferenceFunction& f, const Shapes& s, Loc loc) -> Shape {
             arity(f.name, s, 1, loc);
             return s[0];
         },
         [](const ReferenceFunction&, const std::vector<Tensor>& a, std::span<const std::int64_t>) { return a[0].data; }, twice_the_arguments},
        {"mean", "mean(x)", "the mean of a vector, as a vector of 1",
         [](const ReferenceFunction& f, const Shapes& s, Loc loc) -> Shape {
             vector_of_at_least(f.name, s, 1, loc);
             return {1};
         },
         [](const ReferenceFunction&, const std::vector<Tensor>& a, std::span<const std::int64_t>) { return Values{mean_of(a[0].data)}; }, twice_the_arguments},
        {"variance", "variance(x)", "the sample variance Σ(x − x̄)²/(N − 1) of a vector of N ≥ 2, as a vector of 1",
         [](const ReferenceFunction& f, const Shapes& s, Loc loc) -> Shape {
             vector_of_at_least(f.name, s, 2, loc);
             return {1};
         },
         [](const ReferenceFunction&, const std::vector<Tensor>& a, std::span<const std::int64_t>) { return Values{variance_of(a[0].data)}; }, twice_the_arguments},
    };
    return table;
}
#undef TOYSIM_ATTENTION
#undef TOYSIM_CAUSAL
#undef TOYSIM_PER_HEAD

const ReferenceFunction* find_reference(std::string_view name) {
    for (const auto& f : reference_functions())
        if (f.name == name) return &f;
    return nullptr;
}

std::vector<std::int64_t> reference_shape(std::string_view name, const Shapes& shapes, Loc loc) {
    const ReferenceFunction* f = find_reference(name);
    if (!f) {
        std::vector<std::string_view> names;
        for (const auto& row : reference_functions()) names.push_back(row.name);
        bad(loc, fmt::format("unknown reference function {}{}", quoted_name(name), did_you_mean(name, names)));
    }
    return f->shape(*f, shapes, loc);
}

std::int64_t reference_footprint(std::string_view name, const Shapes& shapes) {
    const ReferenceFunction* f = find_reference(name);
    return f ? f->footprint(shapes) : 0;
}

std::size_t row_dimension(std::string_view name) { return name.starts_with("gqa_") ? 1 : 0; }

Tensor reference(std::string_view name, const std::vector<Tensor>& args, const RowSample& sample) {
    Shapes shapes;
    for (const auto& a : args) shapes.push_back(a.shape);
    // A sample: the shape rule judges the full arguments, and the result has the sampled rows.
    const auto sampled = static_cast<std::int64_t>(sample.rows.size());
    if (sample.args.empty() != sample.rows.empty())
        bad(Loc{}, fmt::format("{}: a sample of rows needs both the rows and the arguments cut to them", name));
    if (!sample.rows.empty() && sample.dim != row_dimension(name))
        bad(Loc{}, fmt::format("{}: its rows are dimension {}, not {}", name, row_dimension(name) + 1, sample.dim + 1));
    for (std::size_t i : sample.args) {
        if (i >= shapes.size() || shapes[i].size() <= sample.dim || shapes[i][sample.dim] != sampled)
            bad(Loc{}, fmt::format("{}: argument {} should hold the {} sampled rows", name, i + 1, sampled));
        shapes[i][sample.dim] = sample.of;
    }
    for (std::int64_t r : sample.rows)
        if (r < 0 || r >= sample.of) bad(Loc{}, fmt::format("{}: sampled row {} is not one of the {} rows", name, r, sample.of));
    Tensor out;
    out.shape = reference_shape(name, shapes, Loc{});
    if (!sample.rows.empty() && out.shape.size() > sample.dim) out.shape[sample.dim] = sampled;
    const ReferenceFunction* f = find_reference(name);
    out.data = f->evaluate(*f, args, sample.rows);
    return out;
}

}  // namespace toysim
