#include "reference.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "text.h"

namespace toysim {

const std::vector<ReferenceFunction>& reference_functions() {
    static const std::vector<ReferenceFunction> table = {
        {"matmul", "matmul(a, b)", "matrix product: a is m×k, b is k×n"},
        {"softmax", "softmax(x)", "safe softmax of a vector, or of each row of a matrix"},
        {"attention", "attention(q, k, v)", "softmax(q·kᵀ)·v with row-wise softmax (scale folded into q)"},
        {"transpose", "transpose(a)", "the transpose of a matrix"},
        {"copy", "copy(x)", "the input itself"},
    };
    return table;
}

namespace {
[[noreturn]] void bad(Loc loc, const std::string& message) { throw ToyError(loc, message); }

std::string shape_text(const std::vector<std::int64_t>& s) {
    if (s.empty()) return "a scalar";
    return fmt::format("{}", fmt::join(s, "×"));
}

void softmax_rows(const double* x, double* out, std::int64_t rows, std::int64_t cols) {
    for (std::int64_t r = 0; r < rows; ++r) {
        const double* row = x + r * cols;
        double m = *std::max_element(row, row + cols);
        double s = 0;
        for (std::int64_t j = 0; j < cols; ++j) s += std::exp(row[j] - m);
        for (std::int64_t j = 0; j < cols; ++j) out[r * cols + j] = std::exp(row[j] - m) / s;
    }
}

void matmul(const double* a, const double* b, double* c, std::int64_t m, std::int64_t k, std::int64_t n) {
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double sum = 0;
            for (std::int64_t p = 0; p < k; ++p) sum += a[i * k + p] * b[p * n + j];
            c[i * n + j] = sum;
        }
}
}  // namespace

std::vector<std::int64_t> reference_shape(std::string_view name, const std::vector<std::vector<std::int64_t>>& s, Loc loc) {
    auto arity = [&](size_t n) {
        if (s.size() != n) bad(loc, fmt::format("{} takes {} argument{}, got {}", name, n, n == 1 ? "" : "s", s.size()));
    };
    auto matrix = [&](size_t i, std::string_view what) {
        if (s[i].size() != 2) bad(loc, fmt::format("{}: {} must be a matrix, but it is {}", name, what, shape_text(s[i])));
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
        arity(3);
        for (size_t i = 0; i < 3; ++i) matrix(i, i == 0 ? "q" : i == 1 ? "k" : "v");
        if (s[0][1] != s[1][1]) bad(loc, fmt::format("attention: q is {} but k is {}: their rows must have equal length", shape_text(s[0]), shape_text(s[1])));
        if (s[1][0] != s[2][0]) bad(loc, fmt::format("attention: k is {} but v is {}: they need as many rows", shape_text(s[1]), shape_text(s[2])));
        return {s[0][0], s[2][1]};
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
    std::int64_t size = 1;
    for (auto d : out.shape) size *= d;
    out.data.assign(static_cast<size_t>(size), 0.0);
    if (name == "matmul") {
        matmul(args[0].data.data(), args[1].data.data(), out.data.data(), shapes[0][0], shapes[0][1], shapes[1][1]);
    } else if (name == "softmax") {
        std::int64_t cols = shapes[0].back();
        softmax_rows(args[0].data.data(), out.data.data(), size / cols, cols);
    } else if (name == "attention") {
        std::int64_t n = shapes[0][0], d = shapes[0][1], m = shapes[1][0], dv = shapes[2][1];
        std::vector<double> kt(static_cast<size_t>(d * m)), s(static_cast<size_t>(n * m)), p(s.size());
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < d; ++j) kt[static_cast<size_t>(j * m + i)] = args[1].data[static_cast<size_t>(i * d + j)];
        matmul(args[0].data.data(), kt.data(), s.data(), n, d, m);
        softmax_rows(s.data(), p.data(), n, m);
        matmul(p.data(), args[2].data.data(), out.data.data(), n, m, dv);
    } else if (name == "transpose") {
        std::int64_t r = shapes[0][0], c = shapes[0][1];
        for (std::int64_t i = 0; i < r; ++i)
            for (std::int64_t j = 0; j < c; ++j) out.data[static_cast<size_t>(j * r + i)] = args[0].data[static_cast<size_t>(i * c + j)];
    } else {
        out.data = args[0].data;
    }
    return out;
}

}  // namespace toysim
