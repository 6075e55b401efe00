// The table of GPU kernels: one row per kernel a program's `gpu NAME` line may name.
//
// A row lists the program parameters the kernel takes and the program arrays it reads and
// writes, by name: `toysim gpu run` matches them with the program's own (tests/test_gpu.cpp
// checks every shipped program against its row), so a kernel and its program cannot drift.
#include <algorithm>

#include <fmt/format.h>

#include "gpu/kernels/kernels.h"

namespace toysim::gpu {

std::string_view dtype_name(DType t) {
    switch (t) {
        case DType::F32: return "fp32";
        case DType::F16: return "fp16";
        case DType::BF16: return "bf16";
        case DType::E4M3: return "e4m3";
    }
    return "?";
}

std::string_view l2_state_name(L2State s) {
    switch (s) {
        case L2State::Off: return "off";
        case L2State::Cold: return "cold";
        case L2State::Warm: return "warm";
    }
    return "?";
}

int dtype_bytes(DType t) { return t == DType::F32 ? 4 : t == DType::E4M3 ? 1 : 2; }

std::optional<DType> parse_dtype(std::string_view text) {
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::E4M3})
        if (text == dtype_name(t)) return t;
    return std::nullopt;
}

namespace {
std::vector<float> sorted(const std::vector<float>& v) {
    std::vector<float> s = v;
    std::sort(s.begin(), s.end());
    return s;
}
}  // namespace

double Timing::median() const {
    if (ms.empty()) return 0;
    auto s = sorted(ms);
    size_t mid = s.size() / 2;
    return s.size() % 2 ? s[mid] : (double(s[mid - 1]) + double(s[mid])) / 2;
}
double Timing::min() const { return ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end()); }
double Timing::max() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }

int KernelSpec::find_array(std::string_view array) const {
    for (size_t k = 0; k < arrays.size(); ++k)
        if (arrays[k].name == array) return static_cast<int>(k);
    return -1;
}

namespace {

constexpr std::string_view kHeadDim = "d is the head dimension: a row of Q, K, V or O is one thread block's width";
constexpr std::string_view kTileRows = "a tile's rows are spread over the block's threads";

std::string refuse_matmul_outer(const std::vector<std::int64_t>& p) {
    if (p[0] % p[1] != 0)
        return fmt::format("matmul_outer needs n to be a multiple of t (n = {}, t = {}), as programs/matmul_outer.toy does", p[0], p[1]);
    return "";
}

double matmul_flops(const std::vector<std::int64_t>& p) { return 2.0 * double(p[0]) * double(p[0]) * double(p[0]); }
// Q·Kᵀ and P·V: 2·n²·d each (a multiply-add is two).
double forward_flops(const std::vector<std::int64_t>& p) { return 4.0 * double(p[0]) * double(p[0]) * double(p[1]); }
// S, dP, dV, dQ, dK: five n²·d products, the seeds' 10·n²·d (2.5 times the forward pass). The
// backward without the D trick computes S and dP twice (14·n²·d) but is credited the same
// useful work, so its TFLOP/s shows what the recomputation costs.
// The tensor-core versions of fa2_forward: d = 64 or 128, and the tile shapes they were built
// for (a warp owns 16 rows of the Q tile).
std::string refuse_head_dim(const char* name, const std::vector<std::int64_t>& p) {
    if (p[1] != 64 && p[1] != 128) return fmt::format("{} takes d = 64 or 128 (a row of Q, K, V is 4 or 8 fragments of 16), not d = {}", name, p[1]);
    return "";
}
std::string refuse_fa2_v1(const std::vector<std::int64_t>& p) {
    if (auto why = refuse_head_dim("fa2_v1_wmma", p); !why.empty()) return why;
    if (p[2] != 64 || p[3] != 64) return fmt::format("fa2_v1_wmma takes Br = Bc = 64 (4 warps of 16 rows), not Br = {}, Bc = {}", p[2], p[3]);
    return "";
}
std::string refuse_fa2_v2(const std::vector<std::int64_t>& p) {
    if (auto why = refuse_head_dim("fa2_v2_mma", p); !why.empty()) return why;
    if ((p[2] != 64 && p[2] != 128) || (p[3] != 32 && p[3] != 64))
        return fmt::format("fa2_v2_mma takes Br = 64 or 128 (4 or 8 warps of 16 rows) and Bc = 32 or 64, not Br = {}, Bc = {}", p[2], p[3]);
    return "";
}
std::string refuse_fa2_v3(const std::vector<std::int64_t>& p) {
    if (auto why = refuse_head_dim("fa2_v3_mma", p); !why.empty()) return why;
    if (p[2] != 128 || (p[3] != 32 && p[3] != 64))
        return fmt::format("fa2_v3_mma takes Br = 128 (4 warps of 32 rows) and Bc = 32 or 64, not Br = {}, Bc = {}", p[2], p[3]);
    return "";
}

// v4 and v5 (gpu/kernels/attention_hopper.cu): 128 × 128 tiles, d = 64 or 128.
std::string refuse_wgmma(const char* name, const std::vector<std::int64_t>& p) {
    if (auto why = refuse_head_dim(name, p); !why.empty()) return why;
    if (p[2] != 128 || p[3] != 128)
        return fmt::format("{} takes Br = 128 (2 warpgroups of 64 rows) and Bc = 128, not Br = {}, Bc = {}", name, p[2], p[3]);
    return "";
}
std::string refuse_causal_wgmma(const char* name, const std::vector<std::int64_t>& p) {
    if (auto why = refuse_head_dim(name, p); !why.empty()) return why;
    if (p[2] != 128) return fmt::format("{} takes B = 128 (2 warpgroups of 64 rows), not B = {}", name, p[2]);
    return "";
}
std::string refuse_fa2_v4(const std::vector<std::int64_t>& p) { return refuse_wgmma("fa2_v4_wgmma", p); }
std::string refuse_causal_v4(const std::vector<std::int64_t>& p) { return refuse_causal_wgmma("fa2_causal_v4_wgmma", p); }
std::string refuse_fa2_v5(const std::vector<std::int64_t>& p) { return refuse_wgmma("fa2_v5_wgmma", p); }
std::string refuse_causal_v5(const std::vector<std::int64_t>& p) { return refuse_causal_wgmma("fa2_causal_v5_wgmma", p); }

// The FP8 forward: a row of Q, K or V at d = 128 is one 128-byte swizzled row of e4m3.
std::string refuse_fp8_head_dim(const char* name, const std::vector<std::int64_t>& p) {
    if (p[1] != 128) return fmt::format("{} takes d = 128 (a row of e4m3 is one 128-byte swizzled row), not d = {}", name, p[1]);
    return "";
}
std::string refuse_fa2_fp8(const std::vector<std::int64_t>& p) {
    if (auto why = refuse_fp8_head_dim("fa2_fp8_wgmma", p); !why.empty()) return why;
    if (p[2] != 128 || p[3] != 128)
        return fmt::format("fa2_fp8_wgmma takes Br = 128 (2 warpgroups of 64 rows) and Bc = 128, not Br = {}, Bc = {}", p[2], p[3]);
    return "";
}
std::string refuse_causal_fp8(const std::vector<std::int64_t>& p) {
    if (auto why = refuse_fp8_head_dim("fa2_causal_fp8_wgmma", p); !why.empty()) return why;
    if (p[2] != 128) return fmt::format("fa2_causal_fp8_wgmma takes B = 128 (2 warpgroups of 64 rows), not B = {}", p[2]);
    return "";
}

double backward_flops(const std::vector<std::int64_t>& p) { return 10.0 * double(p[0]) * double(p[0]) * double(p[1]); }
// fa2_backward_mma: a warp owns 16 keys of the K/V tile; at d = 128 its Sᵀ and dPᵀ for 128
// queries would not fit in registers beside dK and dV.
std::string refuse_fa2_backward_mma(const std::vector<std::int64_t>& p) {
    if (auto why = refuse_head_dim("fa2_backward_mma", p); !why.empty()) return why;
    if ((p[3] != 64 && p[3] != 128) || (p[2] != 64 && !(p[2] == 128 && p[1] == 64)))
        return fmt::format("fa2_backward_mma takes Bc = 64 or 128 (4 or 8 warps of 16 keys) and Br = 64, or Br = 128 at d = 64 "
                           "(a warp's Sᵀ and dPᵀ are 16 keys × Br queries in registers), not Br = {}, Bc = {} at d = {}",
                           p[2], p[3], p[1]);
    return "";
}
// Causal: the two products over the n·(n+1)/2 query-key pairs a query sees (itself and the
// keys before it), 2·n·(n+1)·d; the work of the masked halves of the diagonal tiles is not
// counted, as FlashAttention's papers count causal attention.
double causal_flops(const std::vector<std::int64_t>& p) { return 2.0 * double(p[0]) * (double(p[0]) + 1) * double(p[1]); }
std::string refuse_causal_v3(const std::vector<std::int64_t>& p) {
    if (auto why = refuse_head_dim("fa2_causal_v3_mma", p); !why.empty()) return why;
    if (p[2] != 128) return fmt::format("fa2_causal_v3_mma takes B = 128 (v3's 4 warps of 32 rows), not B = {}", p[2]);
    return "";
}

std::vector<KernelParam> attention_params() {
    return {{"n"}, {"d", 128, kHeadDim}, {"Br", 128, kTileRows}, {"Bc", 128, kTileRows}};
}
// fa2_causal.toy's square tiles: B queries by B keys.
std::vector<KernelParam> causal_params() { return {{"n"}, {"d", 128, kHeadDim}, {"B", 128, kTileRows}}; }

// The storage types a kernel runs with.
const std::vector<DType> kFp32 = {DType::F32};
const std::vector<DType> kAllTypes = {DType::F32, DType::F16, DType::BF16};
const std::vector<DType> kHalf = {DType::F16, DType::BF16};

}  // namespace

std::string KernelSpec::dtypes_text() const {
    std::string out;
    for (DType t : dtypes) out += (out.empty() ? "" : ", ") + std::string(dtype_name(t));
    return out;
}

const std::vector<KernelSpec>& kernel_catalog() {
    static const std::vector<KernelSpec> catalog = {
        {"matmul_inner", "gpu/kernels/matmul.cu", "one output element per thread, both operands reloaded for every product (no reuse)",
         {{"n"}}, {{"a"}, {"b"}, {"c"}}, {"matmul_inner"}, kFp32, nullptr, matmul_flops},
        {"matmul_outer", "gpu/kernels/matmul.cu", "t×t output tiles, a column of A and a row of B in shared memory per k (outer products)",
         {{"n"}, {"t", 32, "one thread per output element of a t×t tile (at most 1024 threads)"}},
         {{"a"}, {"b"}, {"c"}}, {"matmul_outer"}, kFp32, refuse_matmul_outer, matmul_flops},
        {"softmax_3pass", "gpu/kernels/softmax.cu", "safe softmax in three passes over x: max, sum, normalize (Problem 4)",
         {{"n"}}, {{"x"}, {"out"}}, {"softmax_3pass"}},
        {"softmax_online", "gpu/kernels/softmax.cu", "online softmax: running max and sum in one pass, then normalize (Problem 5)",
         {{"n"}}, {{"x"}, {"out"}}, {"softmax_online"}},
        {"attention_standard", "gpu/kernels/attention_forward.cu", "S = Q·Kᵀ and P = softmax(S) materialized in global memory: three kernels",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"S"}, {"P"}, {"O"}}, {"scores", "softmax", "pv"}, kAllTypes, nullptr, forward_flops},
        {"fa1_forward", "gpu/kernels/attention_forward.cu", "FlashAttention-1 order: outer loop over K/V tiles, O, m, ℓ round-trip through global memory",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"m", true}, {"l", true}}, {"fa1_forward"}, kAllTypes, nullptr, forward_flops},
        {"fa2_forward", "gpu/kernels/attention_forward.cu", "FlashAttention-2 order: outer loop over Q tiles, O on chip, L written once",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_forward"}, kAllTypes, nullptr, forward_flops},
        {"fa2_backward", "gpu/kernels/attention_backward.cu", "FlashAttention-2 backward with D = rowsum(dO∘O) precomputed: K and V read once",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"dO"}, {"O"}, {"L", true}, {"D", true}, {"dQ", true}, {"dK"}, {"dV"}},
         {"delta", "fa2_backward"}, kAllTypes, nullptr, backward_flops},
        {"fa2_backward_no_d_trick", "gpu/kernels/attention_backward.cu", "FlashAttention-2 backward without the D trick: K and V read twice",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"dO"}, {"L", true}, {"D", true}, {"dQ", true}, {"dK"}, {"dV"}},
         {"delta", "fa2_backward"}, kAllTypes, nullptr, backward_flops},
        {"fa2_backward_mma", "gpu/kernels/attention_backward_tensor_core.cu",
         "FlashAttention-2 backward with mma.sync (fp16/bf16): dK, dV in registers, dQ by fp32 atomics, cp.async double buffering",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"dO"}, {"O"}, {"L", true}, {"D", true}, {"dQ", true}, {"dK"}, {"dV"}},
         {"delta", "fa2_backward_mma"}, kHalf, refuse_fa2_backward_mma, backward_flops, "fa2_backward", Products::WarpMma},
        {"fa2_v1_wmma", "gpu/kernels/attention_tensor_core.cu", "FlashAttention-2 order on tensor cores through WMMA (fp16/bf16): S, P and O in shared memory",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_v1_wmma"}, kHalf, refuse_fa2_v1, forward_flops, "fa2_forward", Products::WarpMma},
        {"fa2_v2_mma", "gpu/kernels/attention_tensor_core.cu", "FlashAttention-2 with mma.sync and ldmatrix: softmax in registers, cp.async double buffering",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_v2_mma"}, kHalf, refuse_fa2_v2, forward_flops, "fa2_forward", Products::WarpMma},
        {"fa2_v3_mma", "gpu/kernels/attention_tensor_core.cu", "v2 with 32 rows per warp (each K/V fragment feeds two mma) and an ex2 softmax",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_v3_mma"}, kHalf, refuse_fa2_v3, forward_flops, "fa2_forward", Products::WarpMma},
        {"fa2_causal", "gpu/kernels/attention_forward.cu", "fa2_forward with a causal mask: K/V tiles up to the diagonal, the diagonal tile masked",
         causal_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_causal"}, kAllTypes, nullptr, causal_flops},
        {"fa2_causal_heaviest_first", "gpu/kernels/attention_forward.cu", "fa2_causal with the longest Q tiles handed out first",
         causal_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_causal_heaviest_first"}, kAllTypes, nullptr, causal_flops},
        {"fa2_causal_v3_mma", "gpu/kernels/attention_tensor_core.cu", "fa2_v3_mma with a causal mask, the longest Q tiles first (B = 128)",
         causal_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_causal_v3_mma"}, kHalf, refuse_causal_v3, causal_flops,
         "fa2_causal_heaviest_first", Products::WarpMma},
        {"fa2_v4_wgmma", "gpu/kernels/attention_hopper.cu", "Hopper: wgmma from shared memory, TMA loads, a producer warpgroup, softmax overlapped with P·V",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_v4_wgmma"}, kHalf, refuse_fa2_v4, forward_flops, "fa2_forward", Products::Wgmma},
        {"fa2_causal_v4_wgmma", "gpu/kernels/attention_hopper.cu", "fa2_v4_wgmma with a causal mask, the longest Q tiles first (B = 128)",
         causal_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_causal_v4_wgmma"}, kHalf, refuse_causal_v4, causal_flops,
         "fa2_causal_heaviest_first", Products::Wgmma},
        {"fa2_v5_wgmma", "gpu/kernels/attention_hopper.cu", "v4 with K's and V's stages released apart (K_{j+1} loads a tile earlier) and the row maximum in 4 chains",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_v5_wgmma"}, kHalf, refuse_fa2_v5, forward_flops, "fa2_forward", Products::Wgmma},
        {"fa2_causal_v5_wgmma", "gpu/kernels/attention_hopper.cu", "fa2_v5_wgmma with a causal mask, the longest Q tiles first (B = 128)",
         causal_params(), {{"Q"}, {"K"}, {"V"}, {"O"}, {"L", true}}, {"fa2_causal_v5_wgmma"}, kHalf, refuse_causal_v5, causal_flops,
         "fa2_causal_heaviest_first", Products::Wgmma},
        {"fa2_fp8_wgmma", "gpu/kernels/attention_fp8.cu", "fa2_v4_wgmma in FP8: e4m3 Q, K, V and P̃ (V transposed in shared memory), fp16 O",
         attention_params(), {{"Q"}, {"K"}, {"V"}, {"O", false, true}, {"L", true}}, {"fa2_fp8_wgmma"}, {DType::E4M3}, refuse_fa2_fp8, forward_flops,
         "fa2_forward", Products::Wgmma},
        {"fa2_causal_fp8_wgmma", "gpu/kernels/attention_fp8.cu", "fa2_fp8_wgmma with a causal mask, the longest Q tiles first (B = 128)",
         causal_params(), {{"Q"}, {"K"}, {"V"}, {"O", false, true}, {"L", true}}, {"fa2_causal_fp8_wgmma"}, {DType::E4M3}, refuse_causal_fp8, causal_flops,
         "fa2_causal_heaviest_first", Products::Wgmma},
    };
    return catalog;
}

const KernelSpec* find_kernel(std::string_view name) {
    for (const auto& k : kernel_catalog())
        if (k.name == name) return &k;
    return nullptr;
}

}  // namespace toysim::gpu
