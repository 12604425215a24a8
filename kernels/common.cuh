// Device-side building blocks shared by the CUDA kernels: element loads and
// stores that round exactly like the CPU's mixp::store<T> (core/dtype.hpp),
// strided indexing of Views, dtype dispatch, launch helpers on the backend's
// stream, 128-bit packs for contiguous data, and fixed-shape block
// reductions (no float atomics, so every result is reproducible run to run).
//
// Storage types are the CPU's own (float, double, mixp::f16, mixp::bf16:
// plain 16-bit patterns), so a View's data pointer is cast the same way on
// both backends. Arithmetic is done in acc_t<T> (fp32 for the half types).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.hpp"
#include "core/fp8.hpp"
#include "cuda_backend.hpp"

namespace mixp::cuda {

// ---- conversions ------------------------------------------------------------
// The hardware conversions round to nearest even like the CPU's; only NaNs
// differ (the hardware returns a canonical NaN), so NaNs are rebuilt here
// with the CPU's sign and payload rules and casts stay bitwise identical.

__device__ __forceinline__ float f16_to_f32(uint16_t h) {
  const float f = __half2float(__ushort_as_half(h));
  if ((h & 0x7fffu) > 0x7c00u)  // NaN: sign and payload kept, quieted (as the CPU's F16C vcvtph2ps)
    return __uint_as_float((uint32_t(h & 0x8000u) << 16) | 0x7fc00000u | (uint32_t(h & 0x3ffu) << 13));
  return f;
}
__device__ __forceinline__ float bf16_to_f32(uint16_t h) { return __uint_as_float(uint32_t(h) << 16); }

__device__ __forceinline__ uint16_t f32_to_f16(float f) {
  const uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return uint16_t(((x >> 16) & 0x8000u) | 0x7e00u | ((x >> 13) & 0x3ffu));
  return __half_as_ushort(__float2half_rn(f));
}
__device__ __forceinline__ uint16_t f32_to_bf16(float f) {
  const uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}
// From double, rounded once (cvt.rn.f16.f64; cvt.rn.bf16.f64 on sm_90 and a
// round-to-odd float detour, also a single rounding, before).
__device__ __forceinline__ uint16_t f64_to_f16(double d) {
  const uint64_t u = uint64_t(__double_as_longlong(d));
  if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return uint16_t(((u >> 48) & 0x8000u) | 0x7e00u);
  return __half_as_ushort(__double2half(d));
}
__device__ __forceinline__ uint16_t f64_to_bf16(double d) {
  const uint64_t u = uint64_t(__double_as_longlong(d));
  if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) return uint16_t(((u >> 48) & 0x8000u) | 0x7fc0u);
  return __bfloat16_as_ushort(__double2bfloat16(d));
}
// float <-> double as x86 does it (cvtss2sd / cvtsd2ss): NaNs are quieted
// and keep the top of their payload.
__device__ __forceinline__ double f32_to_f64(float f) {
  const uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return __longlong_as_double(int64_t((uint64_t(x & 0x80000000u) << 32) | 0x7ff8000000000000ull |
                                        (uint64_t(x & 0x3fffffu) << 29)));
  return double(f);
}
__device__ __forceinline__ float f64_to_f32(double d) {
  const uint64_t u = uint64_t(__double_as_longlong(d));
  if ((u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull)
    return __uint_as_float(uint32_t((u >> 32) & 0x80000000u) | 0x7fc00000u | uint32_t((u >> 29) & 0x3fffffu));
  return float(d);
}

// ld(v): the value of one stored element in its compute type.
__device__ __forceinline__ float ld(float v) { return v; }
__device__ __forceinline__ double ld(double v) { return v; }
__device__ __forceinline__ float ld(f16 v) { return f16_to_f32(v.bits); }
__device__ __forceinline__ float ld(bf16 v) { return bf16_to_f32(v.bits); }

// st<T>(a): a compute-type value rounded to storage type T (the CPU's
// store<T>). st<T>(double) for a half T rounds once from double (the CPU's
// store_double<T>).
template <class T> __device__ __forceinline__ T st(acc_t<T> v);
template <> __device__ __forceinline__ float st<float>(float v) { return v; }
template <> __device__ __forceinline__ double st<double>(double v) { return v; }
template <> __device__ __forceinline__ f16 st<f16>(float v) { return f16{f32_to_f16(v)}; }
template <> __device__ __forceinline__ bf16 st<bf16>(float v) { return bf16{f32_to_bf16(v)}; }

template <class T> __device__ __forceinline__ T st_d(double v);
template <> __device__ __forceinline__ float st_d<float>(double v) { return f64_to_f32(v); }
template <> __device__ __forceinline__ double st_d<double>(double v) { return v; }
template <> __device__ __forceinline__ f16 st_d<f16>(double v) { return f16{f64_to_f16(v)}; }
template <> __device__ __forceinline__ bf16 st_d<bf16>(double v) { return bf16{f64_to_bf16(v)}; }

// Any element as double / any double into any dtype, with the CPU's rules
// (core/dtype.cpp: element_to_double, double_to_element): integers truncate
// toward zero and saturate, NaN -> 0, bool is v != 0.
__device__ __forceinline__ double ld_any(const void *p, DType t) {
  switch (t) {
    case MIXP_F32: return f32_to_f64(*static_cast<const float *>(p));
    case MIXP_F64: return *static_cast<const double *>(p);
    case MIXP_F16: return f32_to_f64(f16_to_f32(*static_cast<const uint16_t *>(p)));
    case MIXP_BF16: return f32_to_f64(bf16_to_f32(*static_cast<const uint16_t *>(p)));
    case MIXP_I32: return double(*static_cast<const int32_t *>(p));
    case MIXP_I64: return double(*static_cast<const int64_t *>(p));
    case MIXP_U8: return double(*static_cast<const uint8_t *>(p));
    case MIXP_BOOL: return *static_cast<const uint8_t *>(p) ? 1.0 : 0.0;
    // The fp8 conversions are the CPU's own (core/fp8.hpp, host and device).
    case MIXP_F8E4M3: return f32_to_f64(e4m3_bits_to_f32(*static_cast<const uint8_t *>(p)));
    case MIXP_F8E5M2: return f32_to_f64(e5m2_bits_to_f32(*static_cast<const uint8_t *>(p)));
  }
  return 0.0;
}

template <class I>
__device__ __forceinline__ I sat_int(double v, double lo, double hi) {
  if (isnan(v)) return I(0);
  v = trunc(v);
  if (v <= lo) return I(lo);
  if (v >= hi) return I(hi);
  return I(v);
}

__device__ __forceinline__ void st_any(double v, void *p, DType t) {
  switch (t) {
    case MIXP_F32: *static_cast<float *>(p) = f64_to_f32(v); return;
    case MIXP_F64: *static_cast<double *>(p) = v; return;
    case MIXP_F16: *static_cast<uint16_t *>(p) = f64_to_f16(v); return;
    case MIXP_BF16: *static_cast<uint16_t *>(p) = f64_to_bf16(v); return;
    case MIXP_I32: *static_cast<int32_t *>(p) = sat_int<int32_t>(v, -2147483648.0, 2147483647.0); return;
    case MIXP_I64:
      // 2^63 is the first double above INT64_MAX; the CPU saturates there too.
      *static_cast<int64_t *>(p) = isnan(v) ? 0
                                   : v <= -9223372036854775808.0 ? INT64_MIN
                                   : v >= 9223372036854775808.0  ? INT64_MAX
                                                                 : int64_t(trunc(v));
      return;
    case MIXP_U8: *static_cast<uint8_t *>(p) = sat_int<uint8_t>(v, 0.0, 255.0); return;
    case MIXP_BOOL: *static_cast<uint8_t *>(p) = v != 0.0 ? 1 : 0; return;
    case MIXP_F8E4M3: *static_cast<uint8_t *>(p) = f64_to_e4m3_bits(v); return;
    case MIXP_F8E5M2: *static_cast<uint8_t *>(p) = f64_to_e5m2_bits(v); return;
  }
}

// ---- strided indexing ---------------------------------------------------------

// Up to N operands walked over one shape; strides in elements. Passed to
// kernels by value (kernel parameter space).
template <int N>
struct Strided {
  int ndim = 0;
  int64_t shape[MIXP_MAX_DIMS] = {};
  int64_t st[N][MIXP_MAX_DIMS] = {};
};

// Element offsets of flat (row-major) index i in every operand.
template <int N>
__device__ __forceinline__ void offsets(const Strided<N> &g, int64_t i, int64_t *off) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    const int64_t s = g.shape[d];
    const int64_t q = i / s, r = i - q * s;
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += r * g.st[k][d];
    i = q;
  }
}

// Builds the walk of `shape` over the operands' strides, with size-1 dims
// dropped and dims that are contiguous in every operand merged (the CPU's
// collapse_dims), so a contiguous tensor becomes one dim. Returns numel.
template <int N>
int64_t make_strided(const View &shape_of, const View *const *ops, Strided<N> &g) {
  int64_t numel = 1;
  g.ndim = 0;
  for (int d = 0; d < shape_of.ndim; ++d) {
    const int64_t s = shape_of.shape[d];
    numel *= s;
    if (s == 1) continue;
    if (g.ndim > 0) {
      const int k = g.ndim - 1;
      bool merge = true;
      for (int o = 0; o < N; ++o) merge = merge && g.st[o][k] == ops[o]->strides[d] * s;
      if (merge) {
        g.shape[k] *= s;
        for (int o = 0; o < N; ++o) g.st[o][k] = ops[o]->strides[d];
        continue;
      }
    }
    g.shape[g.ndim] = s;
    for (int o = 0; o < N; ++o) g.st[o][g.ndim] = ops[o]->strides[d];
    ++g.ndim;
  }
  return numel;
}

// True when the walk is one unit-stride run in every operand (or a scalar).
template <int N>
bool is_flat(const Strided<N> &g) {
  if (g.ndim == 0) return true;
  if (g.ndim > 1) return false;
  for (int o = 0; o < N; ++o)
    if (g.st[o][0] != 1) return false;
  return true;
}

// ---- 128-bit packs ------------------------------------------------------------

// kVec<T> elements of T fill 16 bytes; a Pack is loaded and stored with one
// 128-bit instruction when its address is 16-byte aligned.
template <class T> constexpr int kVec = 16 / int(sizeof(T));
template <class T>
struct alignas(16) Pack {
  T v[kVec<T>];
};

__host__ __device__ inline bool aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// ---- dispatch -------------------------------------------------------------------

// Calls f(T{}) with the storage type of a float dtype; fails for others.
template <class F>
void dispatch_float_dt(DType t, const char *kernel, F &&f) {
  switch (t) {
    case MIXP_F32: f(float{}); return;
    case MIXP_F64: f(double{}); return;
    case MIXP_F16: f(f16{}); return;
    case MIXP_BF16: f(bf16{}); return;
    default: fail(MIXP_ERR_INTERNAL, "cuda ", kernel, ": dtype ", int(t), " is not float");
  }
}

// ---- launches -------------------------------------------------------------------

constexpr int kThreads = 256;
// Grid-stride kernels never need more blocks than this; a cap fixed by the
// size alone (not by the device) keeps every launch shape reproducible.
constexpr int64_t kMaxBlocks = 8192;

inline unsigned grid_for(int64_t work, int threads = kThreads) {
  int64_t b = (work + threads - 1) / threads;
  if (b < 1) b = 1;
  return unsigned(b < kMaxBlocks ? b : kMaxBlocks);
}

// Kernels with one block per row launch at most this many blocks at once
// (gridDim.x's limit); for_row_pieces cuts longer row ranges into launches
// of whole pieces, so a row count is never truncated by a cast. `multiple`
// keeps every piece's first row a multiple of it (rows that cycle through
// groups).
constexpr int64_t kMaxRowBlocks = INT32_MAX;
template <class F>
void for_row_pieces(int64_t rows, F &&launch, int64_t multiple = 1) {
  const int64_t step = kMaxRowBlocks / multiple * multiple;
  for (int64_t r0 = 0; r0 < rows; r0 += step)
    launch(r0, unsigned(rows - r0 < step ? rows - r0 : step));
}

// Checks that the launch just made was accepted (configuration errors are
// reported at once; faults inside a kernel surface at the next sync).
#define MIXP_CUDA_LAUNCHED() MIXP_CUDA_CHECK(cudaGetLastError())

// Scratch (stream-ordered device scratch) is in cuda_backend.hpp.

// ---- block reductions -------------------------------------------------------------

// Sum over the block in a fixed tree order (warp shuffles, then the warp
// sums in shared memory): the result depends only on the inputs and
// blockDim, never on timing. Every thread gets the total. blockDim.x must be
// a multiple of 32 and at most 1024.
template <class A>
__device__ __forceinline__ A block_sum(A v) {
  __shared__ A warp_sums[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();  // warp_sums may still be read by a previous call
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = lane < nwarps ? warp_sums[lane] : A(0);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Max over the block where NaN wins (the CPU's `v > m || isnan(v)`).
template <class A>
__device__ __forceinline__ A nan_max(A a, A b) {
  return (b > a || isnan(b)) && !isnan(a) ? b : a;
}
template <class A>
__device__ __forceinline__ A block_max(A v) {
  __shared__ A warp_max[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) warp_max[warp] = v;
  __syncthreads();
  v = lane < nwarps ? warp_max[lane] : warp_max[0];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace mixp::cuda
