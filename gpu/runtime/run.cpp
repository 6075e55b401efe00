#include "gpu/runtime/run.h"

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/nvrtc.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <unistd.h>

#include <fmt/format.h>

#include "sim/analysis/cost.h"
#include "sim/analysis/races.h"
#include "sim/check/fill.h"
#include "sim/check/run.h"
#include "sim/reference/reference.h"
#include "support/parallel.h"
#include "support/text.h"

namespace toysim::gpu {

namespace {

[[noreturn]] void bad(Loc loc, const std::string& message) { throw ToyError(loc, message); }

std::string value_text(double v) { return fmt::format("{:.6g}", v); }

std::string kernel_names() {
    std::string out;
    for (const auto& k : kernel_catalog()) out += (out.empty() ? "" : ", ") + std::string(k.name);
    return out;
}

std::int64_t param_value(const Program& p, std::string_view name) {
    for (const auto& [n, v] : p.params)
        if (n == name) return v;
    return 0;
}

// Multiply-adds a reference function spends on one head, from its arguments' shapes: what
// decides between checking every row and sampling rows.
double reference_work(std::string_view function, const Shapes& s) {
    auto dim = [&](size_t arg, size_t k) { return arg < s.size() && k < s[arg].size() ? double(s[arg][k]) : 1.0; };
    auto size = [&](size_t arg) {
        double n = 1;
        for (auto v : s[arg]) n *= double(v);
        return n;
    };
    if (function == "matmul") return dim(0, 0) * dim(0, 1) * dim(1, 1);
    // Grouped-query attention: for each of the Hkv K/V heads, its q rows against its n keys.
    if (function.starts_with("gqa_attention")) return dim(0, 0) * dim(0, 1) * dim(1, 1) * (dim(0, 2) + (s.size() > 2 ? dim(2, 2) : 0.0));
    // Causal attention's reference computes every score of a row before the mask, as attention's does.
    if (function == "scores" || function.starts_with("attention") || function.starts_with("causal_attention")) {
        double forward = dim(0, 0) * dim(1, 0) * (dim(0, 1) + (s.size() > 2 ? dim(2, 1) : 0.0));
        bool backward = s.size() > 3;
        return backward ? 3 * forward : forward;
    }
    return s.empty() ? 1.0 : size(0);
}

// The arguments whose row r alone (with the whole of the others) gives row r of the result:
// such a check can compare sampled rows. Empty: it needs whole heads. Causal attention's row r
// also needs r itself (query r sees keys 0..r): the check passes the reference each sampled
// row's index (RowSample).
std::vector<size_t> row_arguments(std::string_view function, const Shapes& s) {
    if (function == "softmax") return s[0].size() == 2 ? std::vector<size_t>{0} : std::vector<size_t>{};
    if (function == "matmul" || function == "scores" || function == "attention" || function == "attention_rowmax" ||
        function == "attention_rowsum" || function == "attention_lse" || function == "causal_attention" ||
        function == "causal_attention_lse" || function == "gqa_attention" || function == "gqa_attention_lse")
        return {0};  // gqa_: q's rows within each K/V head (row_dimension 1)
    // D_i and dQ_i need row i of Q and of dO (and all of K and V); dK and dV need every row.
    if (function == "attention_delta" || function == "attention_dq") return {0, 3};
    return {};
}

constexpr double kRelativeFloor = 1e-2;

// A reference fill the device can compute (gpu/runtime/reference_fill.cu): attention's O and L,
// plain or causal, on matrices whose rows fit a warp's lanes. None: the CPU's.
// The rows a sampled check takes of `rows`: `wanted` of them (at least the first and the last,
// where there are two; at most `most`), the first and the last and evenly between.
std::vector<std::int64_t> evenly_spaced_rows(double wanted, std::int64_t rows, std::int64_t most) {
    const std::int64_t low = std::min<std::int64_t>(2, rows), high = std::min(most, rows);
    const auto r = static_cast<std::int64_t>(std::clamp(wanted, double(low), double(high)));
    std::vector<std::int64_t> out;
    for (std::int64_t i = 0; i < r; ++i) out.push_back(r == 1 ? 0 : i * (rows - 1) / (r - 1));
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

// Compares one head's results with its reference into `out`: its largest errors and its
// mismatches, the first described by `where` (the element's index among the head's).
void compare_head(ArrayCheckResult& out, const std::vector<double>& expected, const double* got, const std::function<std::string(std::size_t)>& where) {
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const double want = expected[i], have = got[i];
        const double abs_error = std::fabs(have - want);
        const double rel_error = abs_error / std::max(std::fabs(want), 1e-30);
        const bool ok = std::isfinite(have) ? abs_error <= out.tolerance * std::max(1.0, std::fabs(want)) : have == want;
        if (std::isfinite(abs_error)) {
            out.max_abs_error = std::max(out.max_abs_error, abs_error);
            // Relative error means little near zero (an output element of 1e-5 off by 1e-5): it is
            // taken where the reference is at least kRelativeFloor.
            if (std::fabs(want) >= kRelativeFloor) out.max_rel_error = std::max(out.max_rel_error, rel_error);
        }
        if (!ok && out.mismatches++ == 0) out.first_mismatch = fmt::format("{}: {} but the reference is {}", where(i), value_text(have), value_text(want));
    }
}

HostArray::DeviceFill device_fill_for(std::string_view function, const std::vector<int>& args, const Shapes& s) {
    using Kind = HostArray::DeviceFill::Kind;
    HostArray::DeviceFill f;
    const bool causal = function.starts_with("causal_");
    const std::string_view plain = causal ? function.substr(7) : function;
    const Kind kind = plain == "attention" ? Kind::Attention : plain == "attention_lse" ? Kind::AttentionLse : Kind::None;
    const std::size_t operands = kind == Kind::Attention ? 3 : 2;
    if (kind == Kind::None || args.size() != operands || std::any_of(s.begin(), s.end(), [](const auto& x) { return x.size() != 2; })) return f;
    const std::int64_t dv = kind == Kind::Attention ? s[2][1] : 0;
    if (s[0][1] > kDeviceFillMaxWidth || dv > kDeviceFillMaxWidth) return f;
    f = {kind, causal, args[0], args[1], kind == Kind::Attention ? args[2] : -1, s[0][0], s[1][0], s[0][1], dv};
    return f;
}

}  // namespace

double tolerance_for(DType t, double largest_e4m3) {
    switch (t) {
        case DType::F32: return 1e-4;
        case DType::F16: return 2e-2;
        case DType::BF16: return 6e-2;
        // Rounding P̃ to e4m3 moves each of O's terms by at most 2⁻⁴ of itself, so O by at most
        // 2⁻⁴ of the largest |V| (the reference holds Q, K and V rounded as the device does);
        // O's fp16 adds 2⁻¹¹: 0.0630 for |V| ≤ 1, and as much more as V's values are larger.
        case DType::E4M3: return 0.0630 * std::max(1.0, largest_e4m3);
    }
    return 1e-4;
}

namespace {

// The program's array behind each of the kernel's arrays, in the kernel's order.
std::vector<const ArrayInfo*> kernel_array_info(const Program& p, const KernelSpec& kernel) {
    std::vector<const ArrayInfo*> info(kernel.arrays.size());
    for (std::size_t k = 0; k < info.size(); ++k) info[k] = &p.arrays[static_cast<size_t>(p.find_array(kernel.arrays[k].name))];
    return info;
}

// The kernel's indices of program arrays (a check's or a fill's arguments), and their shapes.
std::vector<int> kernel_arrays(const Program& p, const KernelSpec& kernel, const std::vector<int>& program_arrays) {
    std::vector<int> out;
    for (int a : program_arrays) out.push_back(kernel.find_array(p.arrays[static_cast<size_t>(a)].name));
    return out;
}
Shapes shapes_of(const std::vector<const ArrayInfo*>& info, const std::vector<int>& arrays) {
    Shapes s;
    for (int a : arrays) s.push_back(info[static_cast<size_t>(a)]->dims);
    return s;
}

// An array as blocks of rows: the dimensions before `dim` are the blocks (K/V heads, for the
// gqa_ functions), dimension `dim` the rows, the rest a row.
struct RowBlocks {
    std::size_t blocks = 1, rows = 1, row = 1;
};
RowBlocks row_blocks(const ArrayInfo& a, std::size_t dim) {
    RowBlocks b;
    for (std::size_t k = 0; k < a.dims.size(); ++k) {
        const auto v = static_cast<std::size_t>(a.dims[k]);
        (k < dim ? b.blocks : k == dim ? b.rows : b.row) *= v;
    }
    return b;
}

}  // namespace

CheckSampling plan_checks(const Program& p, const KernelSpec& kernel, const GpuRunOptions& options) {
    const std::size_t heads = static_cast<std::size_t>(options.heads);
    const std::size_t narrays = kernel.arrays.size();
    const std::vector<const ArrayInfo*> info = kernel_array_info(p, kernel);
    auto is_input = [&](int k) { return info[static_cast<size_t>(k)]->role == ast::Role::Input; };
    CheckSampling out;
    std::vector<CheckPlan>& plans = out.checks;
    double work_all = 0, download = 0;
    for (const auto& c : p.checks) {
        if (!c.target_index.empty() || !c.reference_index.empty()) continue;  // element checks: the simulator's business
        CheckPlan plan{&c, kernel.find_array(p.arrays[static_cast<size_t>(c.target)].name), kernel_arrays(p, kernel, c.args), {}, false, 0};
        const Shapes s = shapes_of(info, plan.args);
        plan.row_args = row_arguments(c.function, s);
        plan.by_rows = !plan.row_args.empty();
        plan.row_dim = row_dimension(c.function);
        for (size_t i = 0; i < plan.args.size(); ++i)
            if (!is_input(plan.args[i]) && std::find(plan.row_args.begin(), plan.row_args.end(), i) == plan.row_args.end())
                plan.by_rows = false;  // a whole device result as an argument: whole heads
        plan.work_per_head = reference_work(c.function, s);
        work_all += plan.work_per_head * double(heads);
        download += double(info[static_cast<size_t>(plan.target)]->size);
        for (int a : plan.args)
            if (!is_input(a)) download += double(info[static_cast<size_t>(a)]->size);
        plans.push_back(std::move(plan));
    }
    // Which way each array comes back: 1 sampled rows, 2 whole heads. An array that a check on
    // rows and a check on whole heads both read makes every check one on whole heads.
    std::vector<int>& array_mode = out.download;
    array_mode.assign(narrays, 0);
    auto mark = [&](bool rows) {
        std::fill(array_mode.begin(), array_mode.end(), 0);
        for (const auto& plan : plans) {
            const int mode = rows && plan.by_rows ? 1 : 2;
            array_mode[static_cast<size_t>(plan.target)] |= mode;
            for (int a : plan.args)
                if (!is_input(a)) array_mode[static_cast<size_t>(a)] |= mode;
        }
        return std::none_of(array_mode.begin(), array_mode.end(), [](int m) { return m == 3; });
    };
    std::vector<std::int64_t>& sample_rows = out.rows;  // empty: every row
    out.heads_checked = heads;
    const bool fits = work_all <= options.check_budget && download * double(heads) <= double(kMaxReferenceElements);
    if (!fits) {
        // One sample for every check: where checks would cut rows from different dimensions,
        // all run on whole heads.
        for (const auto& plan : plans)
            if (plan.by_rows) out.row_dim = plan.row_dim;
        const bool one_dim = std::all_of(plans.begin(), plans.end(), [&](const CheckPlan& c) { return !c.by_rows || c.row_dim == out.row_dim; });
        if (!one_dim || !mark(true))
            for (auto& plan : plans) plan.by_rows = false;
        mark(true);
        double work_per_row = 0, work_per_head = 0;
        std::int64_t rows = INT64_MAX;  // the fewest rows of any sampled array: the indices fit them all
        for (const auto& plan : plans) {
            if (plan.by_rows) {
                const std::int64_t n = info[static_cast<size_t>(plan.target)]->dims[out.row_dim];
                rows = std::min(rows, n);
                work_per_row += plan.work_per_head / double(n);
            } else {
                work_per_head += std::max(plan.work_per_head, double(info[static_cast<size_t>(plan.target)]->size));
            }
        }
        // The budget, shared evenly between the two kinds when there are both.
        const double share = options.check_budget / ((work_per_row > 0 ? 1 : 0) + (work_per_head > 0 ? 1 : 0));
        if (work_per_row > 0) {
            // At least the first and the last row, where there are two.
            sample_rows = evenly_spaced_rows(share / (double(heads) * work_per_row), rows, rows);
        }
        if (work_per_head > 0) out.heads_checked = static_cast<std::size_t>(std::clamp(share / work_per_head, 1.0, double(heads)));
    } else {
        for (auto& plan : plans) plan.by_rows = false;  // everything, every row of every head
        mark(false);
    }
    return out;
}

double round_to(DType t, double value) {
    if (!std::isfinite(value) || value == 0) return value;
    if (t == DType::F32) return static_cast<float>(value);
    struct Format {
        int bits;          // significant bits, the implicit one included
        int min_exponent;  // of the smallest normal
        double largest;
    };
    const Format f = t == DType::F16 ? Format{11, -14, 65504.0} : t == DType::BF16 ? Format{8, -126, 3.3895313892515355e38} : Format{4, -6, 448.0};
    int e = 0;
    std::frexp(value, &e);  // value = m·2^e, 0.5 <= |m| < 1
    int quantum = std::max(e, f.min_exponent + 1) - f.bits;  // subnormals keep the smallest normal's quantum
    double rounded = std::ldexp(std::nearbyint(std::ldexp(value, -quantum)), quantum);
    // e4m3 has no infinity: the device's conversion saturates (satfinite) to ±448.
    if (std::fabs(rounded) > f.largest) return std::copysign(t == DType::E4M3 ? f.largest : std::numeric_limits<double>::infinity(), value);
    return rounded;
}

namespace {
// The largest finite |value| (0 for none): what sets an e4m3 array's scale and bounds its error.
double largest_magnitude(const std::vector<double>& values) {
    double largest = 0;
    for (double v : values)
        if (std::isfinite(v)) largest = std::max(largest, std::fabs(v));
    return largest;
}
}  // namespace

double e4m3_scale(const std::vector<double>& values) {
    const double largest = largest_magnitude(values);
    if (largest == 0) return 1;
    return std::ldexp(1.0, static_cast<int>(std::floor(std::log2(448.0 / largest))));
}

const KernelSpec& program_kernel(const Program& p, std::string_view version) {
    const auto& tree = *p.tree;
    if (!tree.gpu_kernel)
        throw ToyError(ErrorKind::Input, Loc{},
                       fmt::format("this program has no 'gpu' line naming a hand-written kernel (kernels: {}); without --kernel, or with "
                                   "--kernel generated, it runs as CUDA generated from the program",
                                   kernel_names()));
    const ast::GpuKernel& line = *tree.gpu_kernel;
    std::vector<std::string_view> names;
    for (const auto& row : kernel_catalog()) names.push_back(row.name);
    const KernelSpec* k = find_kernel(line.name);
    if (!k)
        bad(line.loc, fmt::format("no GPU kernel is named {}{} (kernels: {})", quoted_name(line.name), did_you_mean(line.name, names),
                                     kernel_names()));
    if (!version.empty() && version != k->name) {
        const KernelSpec* v = find_kernel(version);
        if (!v)
            throw ToyError(ErrorKind::Input, Loc{},
                           fmt::format("--kernel: no GPU kernel is named {}{} (kernels: {})", quoted_name(version), did_you_mean(version, names),
                                       kernel_names()));
        if (v->version_of != k->name) {
            std::string versions;
            for (const auto& row : kernel_catalog())
                if (row.version_of == k->name) versions += (versions.empty() ? "" : ", ") + std::string(row.name);
            throw ToyError(ErrorKind::Input, Loc{},
                           fmt::format("--kernel {}: this program runs {}{}", v->name, k->name,
                                       versions.empty() ? std::string(", which has no other versions")
                                                        : fmt::format(", whose other versions are {}", versions)));
        }
        k = v;
    }
    for (const auto& a : k->arrays)
        if (p.find_array(a.name) < 0)
            bad(line.loc, fmt::format("kernel {} reads or writes an array {}, which this program does not declare", k->name, a.name));
    for (const auto& a : p.arrays)
        if (k->find_array(a.name) < 0)
            bad(line.loc, fmt::format("this program declares array {}, which kernel {} does not take (it takes {})", quoted_name(a.name),
                                         k->name, [&] {
                                             std::string s;
                                             for (const auto& b : k->arrays) s += (s.empty() ? "" : ", ") + std::string(b.name);
                                             return s;
                                         }()));
    for (const auto& param : k->params) {
        bool found = std::any_of(p.params.begin(), p.params.end(), [&](const auto& q) { return q.first == param.name; });
        if (!found) bad(line.loc, fmt::format("kernel {} takes a parameter {}, which this program does not have", k->name, param.name));
    }
    return *k;
}

bool GpuRunResult::traffic_equal() const {
    return std::all_of(traffic.begin(), traffic.end(), [](const ArrayTrafficRow& r) { return r.equal(); });
}
bool GpuRunResult::check_passed() const {
    return std::all_of(checks.begin(), checks.end(), [](const ArrayCheckResult& c) { return c.passed(); });
}
std::optional<double> GpuRunResult::tflops() const {
    if (!flops || launch.total.ms.empty()) return std::nullopt;
    return *flops / (launch.total.median() * 1e-3) / 1e12;
}
double GpuRunResult::gigabytes_per_second() const {
    return launch.total.ms.empty() ? 0.0 : counted_bytes / (launch.total.median() * 1e-3) / 1e9;
}

bool runs_generated(const Program& p, std::string_view kernel) { return kernel == "generated" || (kernel.empty() && !p.tree->gpu_kernel); }

void refuse_races(const Program& p, bool force) {
    if (!p.has_parallel) return;
    const std::vector<RaceProof> proofs = prove_race_freedom(p);
    if (std::all_of(proofs.begin(), proofs.end(), [](const RaceProof& proof) { return proof.proven; })) return;
    RunResult checked;
    try {
        refuse_long_runs({&p}, 0, force);
        RunOptions execute_only;
        execute_only.grade = false;
        checked = run_to_verdict(p, execute_only);
    } catch (const ToyError& e) {
        if (e.kind() != ErrorKind::TooLongToRun && e.kind() != ErrorKind::TooLargeToRun) throw;
        const RaceProof& unproven = *std::find_if(proofs.begin(), proofs.end(), [](const RaceProof& proof) { return !proof.proven; });
        throw ToyError(e.kind(), e.loc(),
                       fmt::format("the parallel loop at line {} is not proven race-free from its subscripts, so the simulator "
                                   "checks every access before the GPU runs it; {}",
                                   p.loops[static_cast<size_t>(unproven.loop)].loc.line, e.what()));
    }
    if (checked.fault && checked.fault->kind() == ErrorKind::Race) throw *checked.fault;
}

// The kernels that run in e4m3, for a message: "fa2_fp8_wgmma, fa2_causal_fp8_wgmma".
std::string fp8_kernels() {
    std::string names;
    for (const auto& k : kernel_catalog())
        if (k.runs_in(DType::E4M3)) names += (names.empty() ? "" : ", ") + std::string(k.name);
    return names;
}

KernelChoice choose_kernel(const Program& p, const GpuRunOptions& options) {
    KernelChoice choice;
    const bool generated = runs_generated(p, options.kernel);
    if (generated && options.dtype == DType::E4M3)
        throw ToyError(ErrorKind::Input, Loc{}, fmt::format("generated CUDA runs in fp32, fp16 or bf16; e4m3 is for the FP8 kernels ({})", fp8_kernels()));
    if (generated)
        choice.generated = options.generated ? options.generated : generate_cuda(p, options.dtype, options.tensor_cores);
    const KernelSpec& kernel = choice.generated ? choice.generated->spec : program_kernel(p, options.kernel);
    const Loc at = p.tree->gpu_kernel ? p.tree->gpu_kernel->loc : Loc{};
    choice.kernel = &kernel;
    if (options.heads < 1 || options.heads > 65535)
        throw ToyError(ErrorKind::Input, Loc{}, fmt::format("--heads {} is out of range: 1 to 65535 (the grid's extra dimension)", options.heads));
    if (!kernel.runs_in(options.dtype))
        throw ToyError(ErrorKind::Input, Loc{},
                       kernel.runs_in(DType::F32) && kernel.dtypes.size() == 1
                           ? fmt::format("kernel {} runs in fp32 only; fp16 and bf16 are for the attention kernels, e4m3 for the FP8 ones ({})",
                                         kernel.name, fp8_kernels())
                       : options.dtype == DType::E4M3
                           ? fmt::format("kernel {} runs in {} only; e4m3 is for the FP8 kernels ({})", kernel.name, kernel.dtypes_text(), fp8_kernels())
                           : fmt::format("kernel {} runs on the tensor cores in {} only (--dtype)", kernel.name, kernel.dtypes_text()));

    if (choice.generated)  // compile-time constants of the module: shown, not passed
        for (const auto& param : p.tree->params)
            if (!param.derived) choice.params.emplace_back(param.name, param_value(p, param.name));
    for (const auto& param : kernel.params) {
        std::int64_t v = param_value(p, param.name);
        if (v < 1) throw ToyError(ErrorKind::Setting, Loc{}, fmt::format("kernel {} needs {} >= 1, not {}", kernel.name, param.name, v), std::string(param.name));
        if (v > param.max)
            throw ToyError(ErrorKind::Setting, Loc{},
                           fmt::format("kernel {} takes {} up to {}, not {} ({})", kernel.name, param.name, param.max, v, param.why_max),
                           std::string(param.name));
        choice.launch_params.push_back(v);
        choice.params.emplace_back(std::string(param.name), v);
    }
    if (kernel.refuse)
        if (std::string why = kernel.refuse(choice.launch_params); !why.empty()) throw ToyError(ErrorKind::Input, at, why);
    return choice;
}

std::vector<GpuRunOptions> share_generated(const std::vector<const Program*>& programs, const GpuRunOptions& options) {
    std::vector<GpuRunOptions> out(programs.size(), options);
    std::vector<const GeneratedProgram*> modules(programs.size(), nullptr);
    for (std::size_t k = 0; k < programs.size(); ++k) {
        if (!runs_generated(*programs[k], options.kernel)) continue;
        try {
            out[k].generated = generate_cuda(*programs[k], options.dtype, options.tensor_cores);
            modules[k] = out[k].generated.get();
        } catch (const ToyError&) {
            // gpu_run generates again and throws the same error, at this run's turn
        }
    }
    std::vector<std::optional<ModuleShare>> shares = share_modules(modules);
    for (std::size_t k = 0; k < programs.size(); ++k) out[k].share = std::move(shares[k]);
    return out;
}

GpuRunResult gpu_run(const Program& p, const GpuRunOptions& options) {
    refuse_races(p, options.force);
    KernelChoice choice = choose_kernel(p, options);
    GpuRunResult result;
    result.generated = choice.generated;
    const KernelSpec& kernel = *choice.kernel;
    result.kernel = &kernel;
    result.heads = options.heads;
    result.dtype = options.dtype;
    result.warmups = options.warmups;
    result.measure = options.measure;
    result.params = choice.params;
    const std::vector<std::int64_t>& params = choice.launch_params;

    // ---- host arrays, kernel order ----
    const std::size_t heads = static_cast<std::size_t>(options.heads);
    const std::size_t narrays = kernel.arrays.size();
    const std::vector<const ArrayInfo*> info = kernel_array_info(p, kernel);
    std::vector<HostArray> host(narrays);
    for (std::size_t k = 0; k < narrays; ++k) {
        host[k].elements = static_cast<std::size_t>(info[k]->size) * heads;
        // Elements past 2^31 per array would overflow the kernels' int row arithmetic in places;
        // the device's memory says no long before for everything else.
        if (host[k].elements > (std::size_t{1} << 40))
            throw ToyError(ErrorKind::TooLargeToRun, Loc{}, fmt::format("array {} would hold {} elements over {} heads: too large for a GPU run",
                                                                   info[k]->name, host[k].elements, heads));
    }
    // What the run needs, refused before anything is filled: the device's memory (every array,
    // and a pristine copy of each one the kernel updates in place), and the host's (the inputs
    // as doubles, and one array's staging for its upload).
    result.device = query_device();
    double device_bytes = 0, host_bytes = 0, largest_upload = 0;
    for (std::size_t k = 0; k < narrays; ++k) {
        const double stored = double(host[k].elements) * dtype_bytes(kernel.storage(static_cast<int>(k), options.dtype));
        const bool starts_filled = info[k]->starts_filled();
        device_bytes += stored * (starts_filled && info[k]->role != ast::Role::Input ? 2 : 1);
        if (starts_filled) {
            host_bytes += double(host[k].elements) * sizeof(double);
            largest_upload = std::max(largest_upload, stored);
        }
    }
    host_bytes += largest_upload;
    auto gib = [](double bytes) { return fmt::format("{:.2f} GiB", bytes / double(1ull << 30)); };
    if (device_bytes > double(result.device.global_memory_bytes))
        throw GpuError(fmt::format("{} at these parameters needs {} of device memory for {} head{}; {} has {}: lower n or --heads",
                                   kernel.name, gib(device_bytes), heads, heads == 1 ? "" : "s", result.device.name,
                                   gib(double(result.device.global_memory_bytes))));
    const double host_memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
    if (host_bytes > host_memory / 2)
        throw GpuError(fmt::format("{} at these parameters needs {} of host memory for its inputs (doubles, for the reference); this "
                                   "machine has {}, and a run may use half: lower n or --heads",
                                   kernel.name, gib(host_bytes), gib(host_memory)));

    auto head_tensor = [&](std::size_t k, std::size_t h) {
        const std::size_t size = static_cast<std::size_t>(info[k]->size);
        return Tensor{info[k]->dims, std::vector<double>(host[k].values.begin() + static_cast<std::ptrdiff_t>(h * size),
                                                         host[k].values.begin() + static_cast<std::ptrdiff_t>((h + 1) * size))};
    };

    // Fill in declaration order (a reference fill reads arrays declared above it).
    std::vector<std::size_t> order(narrays);
    for (std::size_t k = 0; k < narrays; ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return info[a]->base < info[b]->base; });
    for (std::size_t k : order) {
        const ArrayInfo& a = *info[k];
        HostArray& h = host[k];
        h.upload = a.starts_filled();
        h.restore = h.upload && a.role != ast::Role::Input;
        if (!h.upload) continue;
        const DType storage = kernel.storage(static_cast<int>(k), options.dtype);
        const std::size_t size = static_cast<std::size_t>(a.size);
        h.values.resize(h.elements);
        if (a.fill.kind == ast::Fill::Kind::Reference) {
            std::vector<int> args = kernel_arrays(p, kernel, a.fill_args);
            double work = reference_work(a.fill.function, shapes_of(info, args)) * double(heads);
            // Past the CPU's budget, an input's attention O and L are the device's (checked at
            // sampled rows after the launch): poisoned here, filled there once before the kernel
            // runs. Only an input: nothing writes it, so no launch needs it restored.
            if (work > options.check_budget && a.role == ast::Role::Input)
                h.device_fill = device_fill_for(a.fill.function, args, shapes_of(info, args));
            if (h.device_fill.kind != HostArray::DeviceFill::Kind::None) {
                h.upload = false;
                continue;
            }
            if (work > 10 * options.check_budget)
                throw ToyError(ErrorKind::Input, a.fill.loc,
                               fmt::format("filling {} = {}(...) for {} heads needs about {:.2g} multiply-adds on the CPU: lower --heads or n",
                                           a.name, a.fill.function, heads, work));
            // Each head's reference on a core of its own: most of a run's host time (a backward's O and
            // L, 10^10 multiply-adds at n = 4096); each head writes its own slice.
            for_each_index(heads, [&](std::size_t hd) {
                std::vector<Tensor> tensors;
                for (int arg : args) tensors.push_back(head_tensor(static_cast<size_t>(arg), hd));
                auto values = reference(a.fill.function, tensors).data;
                std::copy(values.begin(), values.end(), h.values.begin() + static_cast<std::ptrdiff_t>(hd * size));
            });
        } else {
            for (std::size_t hd = 0; hd < heads; ++hd) {
                double* out = h.values.data() + hd * size;
                switch (a.fill.kind) {
                    case ast::Fill::Kind::Literal: std::copy(a.fill.values.begin(), a.fill.values.end(), out); break;
                    case ast::Fill::Kind::Constant: std::fill_n(out, size, a.fill.values[0]); break;
                    default: random_fill(a.fill, hd, out, a.size);
                }
            }
        }
        // The reference sees exactly what the device holds: an e4m3 array's values times its
        // scale, rounded, over the scale.
        if (storage == DType::E4M3) h.scale = e4m3_scale(h.values);
        for (double& v : h.values) v = round_to(storage, v * h.scale) / h.scale;
    }

    // ---- what to check, and on how much ----
    // An input's values are the host's; everything else (outputs, scratch, even those that
    // start from a constant) is what the kernel left, downloaded.
    auto is_input = [&](int k) { return info[static_cast<size_t>(k)]->role == ast::Role::Input; };
    const CheckSampling sampling = plan_checks(p, kernel, options);
    const std::vector<CheckPlan>& plans = sampling.checks;
    const std::vector<int>& array_mode = sampling.download;
    const std::vector<std::int64_t>& sample_rows = sampling.rows;
    const std::size_t heads_checked = sampling.heads_checked;
    for (std::size_t k = 0; k < narrays; ++k) {
        if (!array_mode[k]) continue;
        HostArray& h = host[k];
        h.download = true;
        const std::size_t size = static_cast<std::size_t>(info[k]->size);
        if (array_mode[k] == 1) {
            const RowBlocks b = row_blocks(*info[k], sampling.row_dim);
            for (std::size_t hd = 0; hd < heads; ++hd)
                for (std::size_t block = 0; block < b.blocks; ++block)
                    for (auto r : sample_rows) h.sample.push_back({hd * size + (block * b.rows + static_cast<std::size_t>(r)) * b.row, b.row});
        } else if (heads_checked < heads) {
            h.sample.push_back({0, heads_checked * size});
        }
    }

    // An input filled on the device comes back whole: the checks read inputs from the host.
    for (HostArray& h : host)
        if (h.device_fill.kind != HostArray::DeviceFill::Kind::None) {
            h.download = true;
            h.sample.clear();
        }

    // ---- launch ----
    LaunchPlan plan{&kernel, nullptr, nullptr, params, options.heads, options.dtype, options.warmups, options.repeats, options.measure, {}};
    std::string image;
    if (result.generated) {
        const int arch = result.device.compute_major * 10 + result.device.compute_minor;
        const auto started = std::chrono::steady_clock::now();
        GpuRunResult::ModuleCompile how;
        std::optional<SharedCompile> shared;
        if (options.share) shared = compile_shared(*options.share->module, arch, &how.not_shared);
        NvrtcCompiled compiled = shared ? std::move(shared->compiled) : compile_generated(*result.generated, arch);
        how.target = compiled.target;
        how.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        how.from_cache = compiled.from_cache;
        if (shared) {
            how.shared_by = options.share->module->members;
            how.run_time_values = options.share->module->run_time_values;
            how.reused = shared->reused;
            plan.generated_values = options.share->values;  // none where the members' text is the same
        }
        result.compile = std::move(how);
        image = std::move(compiled.image);
        result.slow_paths = result.generated->slow_paths;
        for (const GeneratedKernel& k : result.generated->kernels)
            if (const auto used = cubin_resources(image, k.function); used && used->frame_bytes > 0)
                result.slow_paths.push_back({k.loc, "", fmt::format("its kernel keeps {} bytes a thread in local memory (ptxas: {} registers, spilled): "
                                                                    "traffic that no array counts; smaller tiles in registers spill less",
                                                                    used->frame_bytes, used->registers)});
        plan.generated = result.generated.get();
        plan.generated_image = &image;
    }
    try {
        result.launch = launch(plan, host);
    } catch (const GeneratedError& e) {
        throw ToyError(e.loc, e.what());
    }
    for (auto& stage : result.launch.stages)
        if (options.measure != L2State::Off && !stage.measured.available && stage.measured.why_not.empty())
            stage.measured.why_not = "this build of toysim cannot read hardware counters (no CUPTI)";

    // ---- counted traffic against the simulator's count-only pass ----
    std::vector<ArrayTraffic> simulated = count_traffic(p);
    for (std::size_t k = 0; k < narrays; ++k) {
        ArrayTrafficRow row;
        row.array = std::string(kernel.arrays[k].name);
        row.element_bytes = dtype_bytes(kernel.storage(static_cast<int>(k), options.dtype));
        for (const auto& stage : result.launch.stages) {
            row.counted_reads += stage.reads[k];
            row.counted_writes += stage.writes[k];
        }
        const ArrayTraffic& sim = simulated[static_cast<size_t>(p.find_array(row.array))];
        row.simulated_reads = sim.reads * heads;
        row.simulated_writes = sim.writes * heads;
        result.counted_bytes += double(row.counted_reads + row.counted_writes) * row.element_bytes;
        result.traffic.push_back(std::move(row));
    }
    if (kernel.flops) result.flops = kernel.flops(params) * double(heads);
    // A generated kernel does the work of the program's own (fa2.toy's: 4·n²·d per head).
    if (result.generated && p.tree->gpu_kernel)
        if (const KernelSpec* own = find_kernel(p.tree->gpu_kernel->name); own && own->flops) {
            std::vector<std::int64_t> own_params;
            for (const auto& param : own->params) own_params.push_back(param_value(p, param.name));
            result.flops = own->flops(own_params) * double(heads);
        }

    // ---- checks ----
    double largest_e4m3 = 0;  // of the arrays stored as e4m3 (their values are the host's, as rounded)
    for (std::size_t k = 0; k < narrays; ++k)
        if (kernel.storage(static_cast<int>(k), options.dtype) == DType::E4M3) largest_e4m3 = std::max(largest_e4m3, largest_magnitude(host[k].values));
    const double tolerance_floor = tolerance_for(options.dtype, largest_e4m3);
    for (const auto& plan : plans) {
        const CheckSpec& c = *plan.spec;
        const std::size_t target = static_cast<std::size_t>(plan.target);
        ArrayCheckResult out;
        out.array = std::string(kernel.arrays[target].name);
        out.expression = c.text.substr(c.text.find('=') + 2);
        out.heads = options.heads;
        const bool rows_sampled = plan.by_rows;
        const std::size_t row_dim = rows_sampled ? sampling.row_dim : 0;
        const RowBlocks tb = row_blocks(*info[target], row_dim);
        out.rows = static_cast<std::int64_t>(tb.rows);
        out.tolerance = std::max(c.tolerance, tolerance_floor);
        out.heads_checked = rows_sampled ? options.heads : static_cast<std::int64_t>(heads_checked);
        out.rows_checked = rows_sampled ? static_cast<std::int64_t>(sample_rows.size()) : out.rows;
        const std::size_t target_size = static_cast<std::size_t>(info[target]->size);
        const std::size_t target_row = tb.row;
        const std::size_t kept_rows = rows_sampled ? sample_rows.size() : tb.rows;  // rows a block of the target that came back
        // Each head's reference on its own thread, then compared in order (the first mismatch
        // reported is the first head's).
        std::vector<std::vector<double>> expected_of(static_cast<std::size_t>(out.heads_checked));
        for_each_index(expected_of.size(), [&](std::size_t hd) {
            std::vector<Tensor> args;
            for (size_t i = 0; i < plan.args.size(); ++i) {
                const std::size_t a = static_cast<std::size_t>(plan.args[i]);
                if (!rows_sampled || std::find(plan.row_args.begin(), plan.row_args.end(), i) == plan.row_args.end()) {
                    args.push_back(head_tensor(a, hd));  // whole heads: the first ones, where only those came back
                    continue;
                }
                // The sampled rows of each block: from the host copy (an input) or the download.
                const std::size_t size = static_cast<std::size_t>(info[a]->size);
                const RowBlocks b = row_blocks(*info[a], row_dim);
                Tensor t{info[a]->dims, {}};
                t.shape[row_dim] = static_cast<std::int64_t>(sample_rows.size());
                for (std::size_t block = 0; block < b.blocks; ++block)
                    for (std::size_t r = 0; r < sample_rows.size(); ++r) {
                        const double* src = is_input(static_cast<int>(a))
                                                 ? host[a].values.data() + hd * size + (block * b.rows + static_cast<std::size_t>(sample_rows[r])) * b.row
                                                 : host[a].values.data() + ((hd * b.blocks + block) * sample_rows.size() + r) * b.row;
                        t.data.insert(t.data.end(), src, src + b.row);
                    }
                args.push_back(std::move(t));
            }
            // Each sampled row's index goes along: a causal row's mask needs it.
            const RowSample sample = rows_sampled ? RowSample{plan.row_args, sample_rows, out.rows, row_dim} : RowSample{};
            expected_of[hd] = reference(c.function, args, sample).data;
        });
        for (std::size_t hd = 0; hd < expected_of.size(); ++hd) {
            const double* got = rows_sampled ? host[target].values.data() + hd * tb.blocks * sample_rows.size() * target_row
                                             : host[target].values.data() + hd * target_size;
            compare_head(out, expected_of[hd], got, [&](std::size_t i) {
                const std::size_t kept = i / target_row;  // the row among those that came back, block by block
                const std::int64_t row_index = rows_sampled ? sample_rows[kept % kept_rows] : static_cast<std::int64_t>(kept % kept_rows);
                const std::string block = tb.blocks > 1 ? fmt::format(", K/V head {}", kept / kept_rows) : "";
                return fmt::format("{} of head {}{}, row {}, element {}", out.array, hd, block, row_index, i % target_row);
            });
        }
        result.checks.push_back(std::move(out));
    }

    // ---- inputs filled on the device: sampled rows of every head against the CPU's reference ----
    for (std::size_t k = 0; k < narrays; ++k) {
        const HostArray::DeviceFill& f = host[k].device_fill;
        if (f.kind == HostArray::DeviceFill::Kind::None) continue;
        const ArrayInfo& a = *info[k];
        const std::vector<int> args = kernel_arrays(p, kernel, a.fill_args);
        ArrayCheckResult out;
        out.array = std::string(kernel.arrays[k].name);
        std::string names;
        for (int arg : args) names += (names.empty() ? "" : ", ") + std::string(kernel.arrays[static_cast<size_t>(arg)].name);
        out.expression = fmt::format("{}({}), filled on the device", a.fill.function, names);
        out.heads = out.heads_checked = options.heads;
        out.rows = f.n;
        out.tolerance = tolerance_floor;
        // 2 to 8 rows a head within the CPU's budget.
        const double per_row = double(f.m) * double(f.d + f.dv);
        const std::vector<std::int64_t> rows = evenly_spaced_rows(options.check_budget / (per_row * double(heads)), f.n, 8);
        out.rows_checked = static_cast<std::int64_t>(rows.size());
        const std::size_t width = f.kind == HostArray::DeviceFill::Kind::Attention ? static_cast<std::size_t>(f.dv) : 1;
        const std::vector<std::size_t> row_args{0};
        std::vector<std::vector<double>> expected_of(heads);
        for_each_index(heads, [&](std::size_t hd) {
            std::vector<Tensor> tensors;
            for (int arg : args) tensors.push_back(head_tensor(static_cast<size_t>(arg), hd));
            Tensor q{{static_cast<std::int64_t>(rows.size()), f.d}, {}};
            for (std::int64_t row : rows)
                q.data.insert(q.data.end(), tensors[0].data.begin() + row * f.d, tensors[0].data.begin() + (row + 1) * f.d);
            tensors[0] = std::move(q);
            expected_of[hd] = reference(a.fill.function, tensors, RowSample{row_args, rows, f.n, 0}).data;
        });
        for (std::size_t hd = 0; hd < heads; ++hd) {
            std::vector<double> got;
            for (std::int64_t row : rows) {
                const double* from = host[k].values.data() + hd * static_cast<std::size_t>(a.size) + static_cast<std::size_t>(row) * width;
                got.insert(got.end(), from, from + width);
            }
            compare_head(out, expected_of[hd], got.data(), [&](std::size_t i) {
                return fmt::format("{} of head {}, row {}, element {}", out.array, hd, rows[i / width], i % width);
            });
        }
        result.checks.push_back(std::move(out));
    }
    return result;
}

}  // namespace toysim::gpu
