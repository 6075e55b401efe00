// The device prelude of generated kernels (gpu/codegen/codegen.h): what every module starts with.
// The ISA's value operations come from isa/primitives.h, so a generated kernel computes what
// the simulator computes (on fp32 instead of doubles).
#include <string>

#include <fmt/format.h>

#include "gpu/codegen/codegen.h"
#include "gpu/codegen/codegen_emit.h"
#include "isa/primitives.h"

namespace toysim::gpu {

namespace {

// Its banners name this file and codegen_fragment.cpp by their paths before gpu/ had folders
// (gpu/codegen/ now), so that the generated modules stayed byte-identical through the move.
constexpr const char* kPrelude = R"cuda(// ---- toysim's device prelude (gpu/codegen_prelude.cpp) ----
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>

// Storage types; arithmetic is fp32.
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
__device__ __forceinline__ void store_to(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_to(__half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store_to(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
// STORE_ADD: DRAM[dst] += Rs, atomically.
__device__ __forceinline__ void atomic_add_to(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add_to(__half* p, float v) { atomicAdd(p, __float2half_rn(v)); }
__device__ __forceinline__ void atomic_add_to(__nv_bfloat16* p, float v) { atomicAdd(p, __float2bfloat16_rn(v)); }

// The type T when kFirst holds, else F (no <type_traits> under NVRTC).
template <bool kFirst, typename T, typename F> struct pick_type { using type = T; };
template <typename T, typename F> struct pick_type<false, T, F> { using type = F; };

// NaN propagates through max, whatever the operand order (as the simulator's max): from sm_80
// one max.NaN (IEEE fmax, fmaxf, would drop the NaN), before it two compares and two selects.
__device__ __forceinline__ float toysim_max(float a, float b) {
#if __CUDA_ARCH__ >= 800
    float y;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
    return y;
#else
    return a >= b ? a : (b > a ? b : a + b);
#endif
}

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif

// What the host passes a launch: the loop variables of the host loops around it (by nesting
// depth), and the extents of its grid's loops (the widest, where an inner loop's bounds move
// with an outer one) and their product.
struct HostVars {
    long long v[8];
    long long extent[8];
    long long total;
};

// A slice's end clipped to its array's extent (the edge tile).
__device__ __forceinline__ long long clip(long long end, long long extent) { return end < extent ? end : extent; }

// Stops the kernel at instruction `pc` with a fault code; the first fault is kept.
__device__ __forceinline__ void fault_at(int* fault, int pc, int code) {
    if (atomicCAS(fault, 0, pc + 1) == 0) fault[1] = code;
}

// Every thread's v folded by op (associative and commutative): each thread gets the total.
// For serial code's reduction loops split over a block (whole warps); it ends on a barrier,
// so its shared parts can be used again.
template <class Op>
__device__ float block_allreduce(float v, Op op) {
    __shared__ float parts[32];
    for (int lane = 16; lane > 0; lane >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, lane));
    if ((threadIdx.x & 31) == 0) parts[threadIdx.x >> 5] = v;
    __syncthreads();
    v = parts[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w) v = op(v, parts[w]);
    __syncthreads();
    return v;
}

// A tile (or a register) as a rows×cols view: element (i, j) is p[i·rs + j·cs]. A transposed
// tile swaps the strides; a broadcast dimension has stride 0.
struct View {
    const float* p;
    int rs, cs;
    __device__ __forceinline__ float at(int i, int j) const { return p[i * rs + j * cs]; }
};
// A source of shape rows×cols broadcast to out_rows×out_cols (numpy's rule), or false.
__device__ __forceinline__ bool broadcast(View& v, int rows, int cols, int out_rows, int out_cols) {
    if ((rows != out_rows && rows != 1) || (cols != out_cols && cols != 1)) return false;
    if (rows == 1) v.rs = 0;
    if (cols == 1) v.cs = 0;
    return true;
}

// ---- block-cooperative tile loops: every thread of the block calls them ----
//
// Row i of every tile belongs to warp i mod 8 (its lanes along the row) in every loop below
// but the staged ones, the tensor cores' and the register-file copies: so an instruction
// that reads row i of its sources to write row i of its destination needs no block barrier
// after one that wrote those rows, only the warp's (the generator places them: codegen_emit).

// Calls f(i, j) for every element of a rows×cols block: this warp's rows, its lanes along a
// row (consecutive words: coalesced in global memory, conflict-free in shared memory); rows
// shorter than a warp, the warp's rows and columns flattened over its lanes.
template <typename F>
__device__ __forceinline__ void for_each_element(int rows, int cols, F f) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = kWarps;
    if (cols >= 32) {
#pragma unroll 2
        for (int i = warp; i < rows; i += warps)
            for (int j = lane; j < cols; j += 32) f(i, j);
    } else if (cols == 1) {
        for (int i = warp + lane * warps; i < rows; i += 32 * warps) f(i, 0);
    } else {
        const int mine = rows > warp ? (rows - warp + warps - 1) / warps : 0;
        for (int e = lane; e < mine * cols; e += 32) {
            const int t = e / cols;
            f(warp + t * warps, e - t * cols);
        }
    }
}
// 4 elements of storage (16 bytes of fp32, 8 of fp16 or bf16) as a float4.
template <typename T> struct Four { using type = uint2; };
template <> struct Four<float> { using type = uint4; };
__device__ __forceinline__ float4 unpack4(const uint4& v, const float*) {
    return make_float4(__uint_as_float(v.x), __uint_as_float(v.y), __uint_as_float(v.z), __uint_as_float(v.w));
}
__device__ __forceinline__ float4 unpack4(const uint2& v, const __half*) {
    const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&v.x)), b = __half22float2(*reinterpret_cast<const __half2*>(&v.y));
    return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ float4 unpack4(const uint2& v, const __nv_bfloat16*) {
    const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v.x)), b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v.y));
    return make_float4(a.x, a.y, b.x, b.y);
}
// Rows of whole pieces of kVec elements (Piece: their bytes), row i by warp i mod 8, a piece
// a read, a lane's reads all in flight before it writes any (a load waits for DRAM or L2 once,
// not once per element): put(i, j, piece) writes the piece that starts at (i, j).
template <int kVec, typename Piece, typename T, typename Put>
__device__ __forceinline__ void load_pieces(const T* src, long long rs, int rows, int cols, Put put) {
    constexpr int kBatch = 4;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = kWarps;
    const int pieces = cols / kVec, mine = rows > warp ? (rows - warp + warps - 1) / warps : 0, total = mine * pieces;
    for (int e0 = lane; e0 < total; e0 += kBatch * 32) {
        Piece v[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
            const int e = e0 + u * 32, t = e / pieces;
            if (e < total) v[u] = *reinterpret_cast<const Piece*>(src + (warp + t * warps) * rs + (e - t * pieces) * kVec);
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
            const int e = e0 + u * 32, t = e / pieces;
            if (e < total) put(warp + t * warps, (e - t * pieces) * kVec, v[u]);
        }
    }
}
// Where a tile kept as T holds element (i, j): rows at a stride of s elements (padded), or in
// Hopper's 128-byte swizzle (Swizzle128<R>: the tile's 64-column parts one after another, each
// R rows of 128 bytes, the 16-byte piece p of row i at piece p ^ (i mod 8)), the layout wgmma
// reads through its descriptors (gpu/codegen/codegen_hopper.cpp). Both keep a 16-byte piece
// (8 values from a column that is a multiple of 8) whole: cp.async and ldmatrix read either.
template <int kRows> struct Swizzle128 {};
__device__ __forceinline__ int tile_at(int s, int i, int j) { return i * s + j; }
template <int kRows>
__device__ __forceinline__ int tile_at(Swizzle128<kRows>, int i, int j) { return (j >> 6) * (kRows * 64) + i * 64 + ((((j >> 3) & 7) ^ (i & 7)) << 3) + (j & 7); }
__device__ __forceinline__ bool whole_pieces(int s, int vec) { return s % vec == 0; }
template <int kRows> __device__ __forceinline__ bool whole_pieces(Swizzle128<kRows>, int) { return true; }
// LOAD slice, tile: element (i, j) of the slice at src[i·rs + j·cs]. Rows of whole pieces of 4
// elements (the common case: a tile of a row-major array) go a piece a read, a warp's pieces
// side by side in shared memory.
template <typename T>
__device__ __forceinline__ void tile_load(float* dst, int ds, const T* src, long long rs, long long cs, int rows, int cols) {
    using Piece = typename Four<T>::type;
    if (cs == 1 && cols % 4 == 0 && rs % 4 == 0 && ds % 4 == 0 && reinterpret_cast<unsigned long long>(src) % sizeof(Piece) == 0) {
        load_pieces<4, Piece>(src, rs, rows, cols, [&](int i, int j, const Piece& v) { *reinterpret_cast<float4*>(dst + i * ds + j) = unpack4(v, src); });
        return;
    }
    for_each_element(rows, cols, [&](int i, int j) { dst[i * ds + j] = to_float(src[i * rs + j * cs]); });
}
// The same for a tile kept as T (the arrays' storage type, no conversion): 16 bytes a piece.
template <typename T, typename L>
__device__ __forceinline__ void tile_load_stored(T* dst, L ds, const T* src, long long rs, long long cs, int rows, int cols) {
    constexpr int kVec = 16 / sizeof(T);
    if (cs == 1 && cols % kVec == 0 && rs % kVec == 0 && whole_pieces(ds, kVec) && reinterpret_cast<unsigned long long>(src) % 16 == 0) {
        load_pieces<kVec, uint4>(src, rs, rows, cols, [&](int i, int j, const uint4& v) { *reinterpret_cast<uint4*>(dst + tile_at(ds, i, j)) = v; });
        return;
    }
    for_each_element(rows, cols, [&](int i, int j) { dst[tile_at(ds, i, j)] = src[i * rs + j * cs]; });
}
// STORE tile, slice (accumulate: STORE_ADD, an atomic add per element).
template <bool kAccumulate, typename T>
__device__ __forceinline__ void tile_store(T* dst, long long rs, long long cs, View src, int rows, int cols) {
    for_each_element(rows, cols, [&](int i, int j) {
        if constexpr (kAccumulate) atomic_add_to(&dst[i * rs + j * cs], src.at(i, j));
        else dst[i * rs + j * cs] = from_float<T>(src.at(i, j));
    });
}
// out(i, j) = f(i, j) for every element: the element-wise rows. Rows of a warp's width or
// more go 4 of this warp's rows at a time, all read before any is written, so that a lane's
// reads are in flight together (a source may be out itself, read at the same element:
// reading first keeps that right).
template <typename F>
__device__ __forceinline__ void tile_map(float* out, int os, int rows, int cols, F f) {
    if (cols >= 32) {
        const int lane = threadIdx.x % 32, warps = kWarps;
        for (int i0 = threadIdx.x / 32; i0 < rows; i0 += 4 * warps)
            for (int j = lane; j < cols; j += 32) {
                float v[4];
#pragma unroll
                for (int u = 0; u < 4; ++u)
                    if (i0 + u * warps < rows) v[u] = f(i0 + u * warps, j);
#pragma unroll
                for (int u = 0; u < 4; ++u)
                    if (i0 + u * warps < rows) out[(i0 + u * warps) * os + j] = v[u];
            }
        return;
    }
    for_each_element(rows, cols, [&](int i, int j) { out[i * os + j] = f(i, j); });
}
// out(i, 0) = fold of f over row i of src: a warp per row.
template <typename F>
__device__ __forceinline__ void tile_rowreduce(float* out, int os, View src, int rows, int cols, F f) {
    const int lane = threadIdx.x % 32, warps = kWarps;
    if (cols >= 32) {  // every lane holds a column: a plain butterfly, 4 of this warp's rows at a time
        for (int i0 = threadIdx.x / 32; i0 < rows; i0 += 4 * warps) {
            float acc[4];
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                // Past the last row the warp still shuffles (every lane must), but reads nothing:
                // row rows-1 is another warp's, which may be writing it (only a warp barrier
                // came before).
                const int i = i0 + u * warps;
                acc[u] = 0.f;
                if (i < rows) {
                    acc[u] = src.at(i, lane);
                    for (int j = lane + 32; j < cols; j += 32) acc[u] = f(acc[u], src.at(i, j));
                }
            }
#pragma unroll
            for (int offset = 16; offset > 0; offset >>= 1)
#pragma unroll
                for (int u = 0; u < 4; ++u) acc[u] = f(acc[u], __shfl_xor_sync(0xffffffffu, acc[u], offset));
#pragma unroll
            for (int u = 0; u < 4; ++u)
                if (lane == 0 && i0 + u * warps < rows) out[(i0 + u * warps) * os] = acc[u];
        }
        return;
    }
    for (int i = threadIdx.x / 32; i < rows; i += warps) {
        bool has = lane < cols;
        float acc = has ? src.at(i, lane) : 0.f;
        for (int j = lane + 32; j < cols; j += 32) acc = f(acc, src.at(i, j));
        for (int offset = 16; offset > 0; offset >>= 1) {
            const float other = __shfl_xor_sync(0xffffffffu, acc, offset);
            const bool other_has = __shfl_xor_sync(0xffffffffu, has, offset);
            if (other_has) acc = has ? f(acc, other) : other;
            has = has || other_has;
        }
        if (lane == 0) out[i * os] = acc;
    }
}
// The same when the destination is also a source that another thread may still read (a
// broadcast or transposed operand): each thread keeps its K elements in registers until every
// thread has read what it needs. rows·cols <= K·blockDim.
template <int K, typename F>
__device__ __forceinline__ void tile_map_staged(float* out, int os, int rows, int cols, F f) {  // (its own order: K per thread)
    float v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int e = threadIdx.x + k * blockDim.x;
        if (e < rows * cols) v[k] = f(e / cols, e % cols);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int e = threadIdx.x + k * blockDim.x;
        if (e < rows * cols) out[(e / cols) * os + e % cols] = v[k];
    }
}
// Which rows of a product's result a call computes, and over which threads: the block's (every
// row, every thread: the staged products) or a warp's (its rows i = warp + 8t, its lanes).
struct Part {
    int first, step;      // rows first, first + step, ...
    int thread, threads;  // this thread among those that share them
    __device__ __forceinline__ int rows(int n) const { return n > first ? (n - first + step - 1) / step : 0; }
    __device__ __forceinline__ int row(int t) const { return first + t * step; }
};
__device__ __forceinline__ Part block_part() { return Part{0, 1, (int)threadIdx.x, (int)blockDim.x}; }
__device__ __forceinline__ Part warp_part() { return Part{(int)threadIdx.x / 32, kWarps, (int)threadIdx.x % 32, 32}; }
// A thread's TM×TN block of a product's result, row r at row(r) and column q at column(q),
// written where it falls inside rows×cols.
template <int TM, int TN, typename Row, typename Column>
__device__ __forceinline__ void write_block(float* out, int os, const float (&acc)[TM][TN], int rows, int cols, Row row, Column column) {
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int q = 0; q < TN; ++q) {
            const int i = row(r), j = column(q);
            if (i < rows && j < cols) out[i * os + j] = acc[r][q];
        }
}
// out = a·b (+ c), the part's rows: each thread a TM×TN block of them, its rows and columns
// strided across the part so that a warp reads consecutive shared-memory words. kStaged (the
// block's part): the destination is also a source; every thread has at most one block (the
// generator chose TM and TN so), and writes it only once every thread has read its operands.
template <int TM, int TN, bool kStaged>
__device__ __forceinline__ void tile_product(Part part, float* out, int os, View a, View b, View c, bool has_c, int rows, int cols, int inner) {
    const int nr = part.rows(rows), rt = (nr + TM - 1) / TM, ct = (cols + TN - 1) / TN;
    for (int m0 = 0; m0 < rt * ct; m0 += part.threads) {
        const int m = m0 + part.thread;
        const bool mine = m < rt * ct;
        const int ti = m / ct, tj = m - ti * ct;
        float acc[TM][TN];
#pragma unroll
        for (int r = 0; r < TM; ++r)
#pragma unroll
            for (int q = 0; q < TN; ++q) {
                const int i = part.row(ti + r * rt), j = tj + q * ct;
                acc[r][q] = mine && has_c && i < rows && j < cols ? c.at(i, j) : 0.f;
            }
        if (mine) {
            for (int k = 0; k < inner; ++k) {
                float av[TM], bv[TN];
#pragma unroll
                for (int r = 0; r < TM; ++r) av[r] = ti + r * rt < nr ? a.at(part.row(ti + r * rt), k) : 0.f;
#pragma unroll
                for (int q = 0; q < TN; ++q) bv[q] = tj + q * ct < cols ? b.at(k, tj + q * ct) : 0.f;
#pragma unroll
                for (int r = 0; r < TM; ++r)
#pragma unroll
                    for (int q = 0; q < TN; ++q) acc[r][q] += av[r] * bv[q];
            }
        }
        if constexpr (kStaged) __syncthreads();
        if (mine) write_block(out, os, acc, rows, cols, [&](int r) { return part.row(ti + r * rt); }, [&](int q) { return tj + q * ct; });
    }
}
// The same product reading shared memory 16 bytes at a time: 4 consecutive k of a's rows
// and, kBT (b is a tile transposed: b(k, j) = bt[j][k]), of bt's rows; otherwise 4
// consecutive columns of b's rows k..k+3 (TN = 4, each thread's columns contiguous). Needs
// inner (and, for !kBT, cols) a multiple of 4, and strides and tiles aligned to 4 floats.
template <int TM, int TN, bool kStaged, bool kBT>
__device__ __forceinline__ void tile_product4(Part part, float* out, int os, const float* a, int as, const float* b, int bs, View c, bool has_c,
                                              int rows, int cols, int inner) {
    static_assert(kBT || TN == 4, "b's rows are read 4 columns at a time");
    const int nr = part.rows(rows), rt = (nr + TM - 1) / TM, ct = (cols + TN - 1) / TN;
    for (int m0 = 0; m0 < rt * ct; m0 += part.threads) {
        const int m = m0 + part.thread;
        const bool mine = m < rt * ct;
        const int ti = m / ct, tj = m - ti * ct;
        int ii[TM], jj[TN];
#pragma unroll
        for (int r = 0; r < TM; ++r) ii[r] = part.row(min(ti + r * rt, nr - 1));
#pragma unroll
        for (int q = 0; q < TN; ++q) jj[q] = kBT ? min(tj + q * ct, cols - 1) : min(tj * TN, cols - TN) + q;
        float acc[TM][TN];
        // (!kBT: the thread's 4 columns are consecutive, 16 bytes of a row of c and of out.)
        const bool c_rows = !kBT && c.cs == 1 && c.rs % 4 == 0, out_rows = !kBT && os % 4 == 0;
#pragma unroll
        for (int r = 0; r < TM; ++r) {
            // A row or column past the part's end is clamped to its last (ii, jj), which another
            // thread owns and writes: nothing is read there (its sums are never written).
            if (!(ti + r * rt < nr)) {
#pragma unroll
                for (int q = 0; q < TN; ++q) acc[r][q] = 0.f;
                continue;
            }
            if (c_rows && mine && has_c) {
                const float4 v = *reinterpret_cast<const float4*>(c.p + ii[r] * c.rs + jj[0]);
                acc[r][0] = v.x, acc[r][1] = v.y, acc[r][2 % TN] = v.z, acc[r][3 % TN] = v.w;
                continue;
            }
#pragma unroll
            for (int q = 0; q < TN; ++q) acc[r][q] = mine && has_c && (!kBT || tj + q * ct < cols) ? c.at(ii[r], jj[q]) : 0.f;
        }
        if (mine) {
#pragma unroll 4
            for (int k = 0; k < inner; k += 4) {
                float4 av[TM];
#pragma unroll
                for (int r = 0; r < TM; ++r) av[r] = *reinterpret_cast<const float4*>(a + ii[r] * as + k);
                if constexpr (kBT) {
#pragma unroll
                    for (int q = 0; q < TN; ++q) {
                        const float4 bv = *reinterpret_cast<const float4*>(b + jj[q] * bs + k);
#pragma unroll
                        for (int r = 0; r < TM; ++r) {  // k, k+1, k+2, k+3 in turn, as the simulator sums
                            acc[r][q] += av[r].x * bv.x;
                            acc[r][q] += av[r].y * bv.y;
                            acc[r][q] += av[r].z * bv.z;
                            acc[r][q] += av[r].w * bv.w;
                        }
                    }
                } else {
                    const float4 b0 = *reinterpret_cast<const float4*>(b + (k + 0) * bs + jj[0]);
                    const float4 b1 = *reinterpret_cast<const float4*>(b + (k + 1) * bs + jj[0]);
                    const float4 b2 = *reinterpret_cast<const float4*>(b + (k + 2) * bs + jj[0]);
                    const float4 b3 = *reinterpret_cast<const float4*>(b + (k + 3) * bs + jj[0]);
#pragma unroll
                    for (int r = 0; r < TM; ++r) {  // k, k+1, k+2, k+3 in turn, as the simulator sums
                        const float4 bs4[4] = {b0, b1, b2, b3};
                        const float ak[4] = {av[r].x, av[r].y, av[r].z, av[r].w};
#pragma unroll
                        for (int u = 0; u < 4; ++u) {
                            acc[r][0] += ak[u] * bs4[u].x;
                            acc[r][1] += ak[u] * bs4[u].y;
                            acc[r][2] += ak[u] * bs4[u].z;
                            acc[r][3] += ak[u] * bs4[u].w;
                        }
                    }
                }
            }
        }
        if constexpr (kStaged) __syncthreads();
        if (mine && out_rows) {
#pragma unroll
            for (int r = 0; r < TM; ++r) {
                const int i = part.row(ti + r * rt);
                if (i < rows) *reinterpret_cast<float4*>(out + i * os + tj * TN) = make_float4(acc[r][0], acc[r][1], acc[r][2 % TN], acc[r][3 % TN]);
            }
        } else if (mine) {
            write_block(out, os, acc, rows, cols, [&](int r) { return part.row(ti + r * rt); }, [&](int q) { return kBT ? tj + q * ct : tj * TN + q; });
        }
    }
}
// out = a·b (+ c) on the tensor cores (sm_80 and later): a warp per 16×16 block of the
// result, from 16×8 and 8×16 fragments of the tiles rounded to tf32 (10 bits of mantissa, as
// fp16 has), summed in fp32. kAT, kBT: the operand is a tile transposed (read column-major).
// c, when not null, is where the sums start (the destination itself, for MAC onto it).
// tc_fits: the shapes are whole fragments (edge tiles take the CUDA-core loops).
__device__ __forceinline__ bool tc_fits(int rows, int cols, int inner) {
#if __CUDA_ARCH__ >= 800
    return rows % 16 == 0 && cols % 16 == 0 && inner % 8 == 0;
#else
    return false;
#endif
}
template <bool kAT, bool kBT>
__device__ __forceinline__ void tile_product_tc(float* out, int os, const float* a, int as, const float* b, int bs, const float* c, int cs, int rows,
                                                int cols, int inner) {
#if __CUDA_ARCH__ >= 800
    using namespace nvcuda;
    struct RowA { using type = wmma::row_major; };
    struct ColA { using type = wmma::col_major; };
    using LayoutA = typename pick_type<kAT, ColA, RowA>::type::type;
    using LayoutB = typename pick_type<kBT, ColA, RowA>::type::type;
    const int across = cols / 16, blocks = (rows / 16) * across;
    for (int t = threadIdx.x / 32; t < blocks; t += kWarps) {
        const int i0 = (t / across) * 16, j0 = (t % across) * 16;
        wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
        if (c) wmma::load_matrix_sync(acc, c + i0 * cs + j0, cs, wmma::mem_row_major);
        else wmma::fill_fragment(acc, 0.f);
        for (int k = 0; k < inner; k += 8) {
            wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, LayoutA> fa;
            wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, LayoutB> fb;
            wmma::load_matrix_sync(fa, kAT ? a + k * as + i0 : a + i0 * as + k, as);
            wmma::load_matrix_sync(fb, kBT ? b + j0 * bs + k : b + k * bs + j0, bs);
#pragma unroll
            for (int e = 0; e < fa.num_elements; ++e) fa.x[e] = wmma::__float_to_tf32(fa.x[e]);
#pragma unroll
            for (int e = 0; e < fb.num_elements; ++e) fb.x[e] = wmma::__float_to_tf32(fb.x[e]);
            wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(out + i0 * os + j0, acc, os, wmma::mem_row_major);
    }
#endif
}
// Worker 0's tile to or from the register file in global memory (between launches).
__device__ __forceinline__ void tile_copy(float* out, int os, const float* in, int is, int rows, int cols) {
    for (int e = threadIdx.x; e < rows * cols; e += blockDim.x) {
        const int i = e / cols, j = e - i * cols;
        out[i * os + j] = in[i * is + j];
    }
}

// ---- tiles in registers: the tensor cores' fragment layout (gpu/codegen_fragment.cpp) ----
// Warp w holds the 16-row blocks w, w + 8, ... of a tile; lane 4g + t holds rows g and g + 8
// of a block and, of each 8-column block, columns 2t and 2t + 1:
//   x[mi][cb][0..3] = (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1)
// (m16n8k16's accumulator), and a [rows][1] tile x[mi][0..1] = rows g, g + 8.
#define FRAG_FOR(MT, NB) _Pragma("unroll") for (int mi = 0; mi < (MT); ++mi) _Pragma("unroll") for (int cb = 0; cb < (NB); ++cb) _Pragma("unroll") for (int e = 0; e < 4; ++e)
#define ROWS_FOR(MT) _Pragma("unroll") for (int mi = 0; mi < (MT); ++mi) _Pragma("unroll") for (int h = 0; h < 2; ++h)
__device__ __forceinline__ int frag_row(int mi, int h) { return (mi * kWarps + (int)threadIdx.x / 32) * 16 + (int)(threadIdx.x % 32) / 4 + 8 * h; }
__device__ __forceinline__ int frag_col(int cb, int e) { return cb * 8 + 2 * (int)(threadIdx.x % 4) + (e & 1); }
template <typename S, int MT, int NB>
__device__ __forceinline__ void frag_load(float (&x)[MT][NB][4], const S* at, long long rs, long long cs) {
    FRAG_FOR(MT, NB) x[mi][cb][e] = to_float(at[frag_row(mi, e >> 1) * rs + frag_col(cb, e) * cs]);
}
template <typename S, int MT, int NB>
__device__ __forceinline__ void frag_store(S* at, long long rs, long long cs, const float (&x)[MT][NB][4]) {
    FRAG_FOR(MT, NB) store_to(&at[frag_row(mi, e >> 1) * rs + frag_col(cb, e) * cs], x[mi][cb][e]);
}
template <typename S, int MT>
__device__ __forceinline__ void frag_load_rows(float (&x)[MT][2], const S* at, long long rs) {
    ROWS_FOR(MT) x[mi][h] = to_float(at[frag_row(mi, h) * rs]);
}
// The 4 lanes that hold a row hold the same value: one of them writes it.
template <typename S, int MT>
__device__ __forceinline__ void frag_store_rows(S* at, long long rs, const float (&x)[MT][2]) {
    if (threadIdx.x % 4 == 0) ROWS_FOR(MT) store_to(&at[frag_row(mi, h) * rs], x[mi][h]);
}
// Each row folded by f: the thread's columns in order, then across the 4 lanes of the row.
template <int MT, int NB, typename F>
__device__ __forceinline__ void frag_rowreduce(float (&out)[MT][2], const float (&x)[MT][NB][4], F f) {
    ROWS_FOR(MT) {
        float acc = f(x[mi][0][2 * h], x[mi][0][2 * h + 1]);
#pragma unroll
        for (int cb = 1; cb < NB; ++cb) acc = f(f(acc, x[mi][cb][2 * h]), x[mi][cb][2 * h + 1]);
        acc = f(acc, __shfl_xor_sync(0xffffffffu, acc, 1));
        out[mi][h] = f(acc, __shfl_xor_sync(0xffffffffu, acc, 2));
    }
}
// e^x on tiles in registers (fp16 and bf16 runs): 2^(x·log₂e) by one ex2.approx.ftz, as the
// hand-written kernels take it, where expf takes about ten instructions. Its relative error is
// at most about 2^-22 + |x|·2^-24 (the product's rounding), below the 16-bit outputs' rounding
// (2^-11 at best); results under 2^-126 are 0 (flushed), as the arrays cannot hold them either.
__device__ __forceinline__ float fast_exp(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
    return y;
}
// e^(a − b) as one fused multiply-add and ex2: 2^(a·log2 e − b·log2 e), with b·log2 e worked out
// once per row by the compiler (b is a row's value), the exp2 softmax with the scale folded that
// the hand-written kernels take: a SUB whose result an EXP takes next (codegen_fragment.cpp).
__device__ __forceinline__ float fast_exp_diff(float a, float b) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(fmaf(a, 1.4426950408889634f, -b * 1.4426950408889634f)));
    return y;
}
// Two values as the tensor cores' operand type E (the arrays' storage type), in one register.
template <typename E> __device__ __forceinline__ unsigned pack2(float lo, float hi);
template <> __device__ __forceinline__ unsigned pack2<__half>(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
}
template <> __device__ __forceinline__ unsigned pack2<__nv_bfloat16>(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
}
template <typename E> __device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1);
template <> __device__ __forceinline__ void mma16816<__half>(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
template <> __device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
// m16n8k16's a operand for k block kb: a's column blocks 2kb and 2kb + 1, rounded to E.
template <typename E, int MT, int KA>
__device__ __forceinline__ void frag_a(unsigned (&af)[MT][4], const float (&a)[MT][KA][4], int kb) {
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
        af[mi][0] = pack2<E>(a[mi][2 * kb][0], a[mi][2 * kb][1]);          // row g, k = 2t, 2t + 1
        af[mi][1] = pack2<E>(a[mi][2 * kb][2], a[mi][2 * kb][3]);          // row g + 8
        af[mi][2] = pack2<E>(a[mi][2 * kb + 1][0], a[mi][2 * kb + 1][1]);  // row g, k = 2t + 8, 2t + 9
        af[mi][3] = pack2<E>(a[mi][2 * kb + 1][2], a[mi][2 * kb + 1][3]);  // row g + 8
    }
}
// Before sm_80, the same sums on the CUDA cores: each of a's rows gathered from the lanes
// that hold it, b(k, n) its element rounded to E.
template <typename E, int MT, int NB, int KA, typename B>
__device__ __forceinline__ void frag_product_cuda_cores(float (&acc)[MT][NB][4], const float (&a)[MT][KA][4], B b) {
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (int k = 0; k < KA * 8; ++k) {
        const int from = g * 4 + (k % 8) / 2;  // the lane holding column k of rows g, g + 8
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
            float row[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mine = 0.f;
#pragma unroll
                for (int cb = 0; cb < KA; ++cb) mine = cb == k / 8 ? a[mi][cb][2 * h + (k & 1)] : mine;
                row[h] = to_float(from_float<E>(__shfl_sync(0xffffffffu, mine, from)));
            }
#pragma unroll
            for (int nb = 0; nb < NB; ++nb)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[mi][nb][e] += row[e >> 1] * b(k, 8 * nb + 2 * t + (e & 1));
        }
    }
}
// acc += a·b on the tensor cores: a in registers (rows × 16·KA/2 columns; two adjacent
// column blocks of the accumulator layout are m16n8k16's a operand), b a tile in shared
// memory (row stride bs; kBT: b transposed, so b's pairs along k are adjacent floats). The
// operands are rounded to E, the sums are fp32.
template <typename E, bool kBT, int MT, int NB, int KA>
__device__ __forceinline__ void frag_product(float (&acc)[MT][NB][4], const float (&a)[MT][KA][4], const float* b, int bs) {
    static_assert(KA % 2 == 0, "k is a multiple of 16");
#if __CUDA_ARCH__ >= 800
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int kb = 0; kb < KA / 2; ++kb) {
        unsigned af[MT][4];
        frag_a<E>(af, a, kb);
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
            const int k = 16 * kb + 2 * t, n = 8 * nb + g;
            unsigned b0, b1;
            if (kBT) {
                const float2 lo = *reinterpret_cast<const float2*>(b + n * bs + k), hi = *reinterpret_cast<const float2*>(b + n * bs + k + 8);
                b0 = pack2<E>(lo.x, lo.y), b1 = pack2<E>(hi.x, hi.y);
            } else {
                b0 = pack2<E>(b[k * bs + n], b[(k + 1) * bs + n]), b1 = pack2<E>(b[(k + 8) * bs + n], b[(k + 9) * bs + n]);
            }
#pragma unroll
            for (int mi = 0; mi < MT; ++mi) mma16816<E>(acc[mi][nb], af[mi], b0, b1);
        }
    }
#else
    frag_product_cuda_cores<E>(acc, a, [&](int k, int n) { return to_float(from_float<E>(kBT ? b[n * bs + k] : b[k * bs + n])); });
#endif
}
// acc += a·b with b kept as E (tile_load_stored; layout bs: a row stride that is a multiple of 8, or the swizzle) and
// a's m16n8k16 operands for k block kb from a_of(af, kb): each b fragment pair comes from
// ldmatrix, 8×8 blocks of b's rows as they are (b transposed: its rows are n, and k runs along
// them) or transposed (k runs down them).
template <typename E, bool kBT, int MT, int NB, int KB, typename A, typename L>
__device__ __forceinline__ void frag_product_ldmatrix(float (&acc)[MT][NB][4], A a_of, const E* b, L bs) {
#if __CUDA_ARCH__ >= 800
    // Lane l names a row of 8×8 block l / 8: blocks (k, n) = (0, 0), (8, 0), (0, 8), (8, 8).
    const int lane = threadIdx.x % 32, quad = lane / 8;
    const int k_off = 8 * (quad % 2) + (kBT ? 0 : lane % 8), n_off = 8 * (quad / 2) + (kBT ? lane % 8 : 0);
#pragma unroll
    for (int kb = 0; kb < KB; ++kb) {
        unsigned af[MT][4];
        a_of(af, kb);
#pragma unroll
        for (int nb = 0; nb < NB; nb += 2) {
            const int k = 16 * kb + k_off, n = 8 * nb + (nb + 1 < NB ? n_off : n_off % 8);
            const unsigned at = (unsigned)__cvta_generic_to_shared(b + (kBT ? tile_at(bs, n, k) : tile_at(bs, k, n)));
            unsigned r0, r1, r2 = 0, r3 = 0;
            if (nb + 1 < NB) {
                if (kBT) asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(at));
                else asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(at));
            } else {
                if (kBT) asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(at));
                else asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(at));
            }
#pragma unroll
            for (int mi = 0; mi < MT; ++mi) {
                mma16816<E>(acc[mi][nb], af[mi], r0, r1);
                if (nb + 1 < NB) mma16816<E>(acc[mi][nb + 1], af[mi], r2, r3);
            }
        }
    }
#endif
}
// acc += a·b, a in registers and b kept as E (frag_product_ldmatrix).
template <typename E, bool kBT, int MT, int NB, int KA, typename L>
__device__ __forceinline__ void frag_product_stored(float (&acc)[MT][NB][4], const float (&a)[MT][KA][4], const E* b, L bs) {
    static_assert(KA % 2 == 0, "k is a multiple of 16");
#if __CUDA_ARCH__ >= 800
    frag_product_ldmatrix<E, kBT, MT, NB, KA / 2>(acc, [&](unsigned (&af)[MT][4], int kb) { frag_a<E>(af, a, kb); }, b, bs);
#else
    frag_product_cuda_cores<E>(acc, a, [&](int k, int n) { return to_float(b[kBT ? tile_at(bs, n, k) : tile_at(bs, k, n)]); });
#endif
}
// acc += a·b with a kept as E too (layout as, as b's; inner = 16·KB columns), read
// at each k block by ldmatrix for the warp's 16-row blocks rather than held in registers: where
// a tile such as FlashAttention's Q at d = 128 would not fit beside the others (v3 does the same).
template <typename E, bool kBT, int MT, int NB, int KB, typename LA, typename LB>
__device__ __forceinline__ void frag_product_stored_ab(float (&acc)[MT][NB][4], const E* a, LA as, const E* b, LB bs) {
#if __CUDA_ARCH__ >= 800
    // Lane l names row l % 16 of the block at column 8·(l / 16): 8×8 blocks (rows, k) = (0, 0),
    // (8, 0), (0, 8), (8, 8), m16n8k16's a0..a3.
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    frag_product_ldmatrix<E, kBT, MT, NB, KB>(acc, [&](unsigned (&af)[MT][4], int kb) {
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
            const unsigned at = (unsigned)__cvta_generic_to_shared(a + tile_at(as, (mi * kWarps + warp) * 16 + lane % 16, 16 * kb + 8 * (lane / 16)));
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];" : "=r"(af[mi][0]), "=r"(af[mi][1]), "=r"(af[mi][2]), "=r"(af[mi][3]) : "r"(at));
        }
    }, b, bs);
#else
    FRAG_FOR(MT, NB) {
        const int r = frag_row(mi, e >> 1), c = frag_col(cb, e);
        for (int k = 0; k < 16 * KB; ++k) acc[mi][cb][e] += to_float(a[tile_at(as, r, k)]) * to_float(b[kBT ? tile_at(bs, c, k) : tile_at(bs, k, c)]);
    }
#endif
}
)cuda";

// The ISA's primitives (isa/primitives.h) on fp32, as the semantics column of isa/opcodes.h
// names them (D.add(c, D.mul(a, b)) becomes D::add(c, D::mul(a, b))).
std::string primitives() {
    std::string out = "\n// The ISA's value operations (isa/primitives.h), on fp32.\nstruct D {\n";
    auto device_numeric = [](std::string text) {
        for (auto [from, to] : {std::pair{"std::exp(", "expf("}, std::pair{"std::log(", "logf("}}) {
            for (size_t at = text.find(from); at != std::string::npos; at = text.find(from)) text.replace(at, std::string(from).size(), to);
        }
        return text;
    };
#define X(KIND, METHOD, ARITY, NUMERIC, FORM, TEXT, PREFIX, BINDS)                                                          \
    out += std::string("    static __device__ __forceinline__ float " #METHOD) + (ARITY == 1 ? "(float a)" : "(float a, float b)") + \
           " { return " + device_numeric(#NUMERIC) + "; }\n";
    TOYSIM_PRIMITIVES(X)
#undef X
    out += "    static __device__ __forceinline__ float constant(float x) { return x; }\n};\n";
    return out;
}

}  // namespace

std::string device_prelude(int warps_per_block) {
    // The tile loops divide by the block's warps: a constant (a block kernel's threads) lets
    // the compiler shift instead.
    const std::string warps = fmt::format("\n// The warps of a block kernel (every tile loop runs in one).\nconstexpr int kWarps = {};\n", warps_per_block);
    const std::string text = kPrelude;
    const size_t at = text.find("// ---- block-cooperative tile loops");
    return text.substr(0, at) + warps + text.substr(at) + stages_prelude() + hopper_prelude() + primitives() + online_merge_prelude();
}

}  // namespace toysim::gpu
