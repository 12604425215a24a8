// CUDA elementwise kernels: copy (with dtype casts, any strides), fill,
// unary ops and their backward, broadcasting binary ops. The formulas are
// the CPU's (backend/elementwise_formulas.hpp, compiled for the device)
// evaluated with the device's libm in acc_t<T>; casts round exactly like
// the CPU (common.cuh).
//
// Compile-time cost is kept low by passing the op as a runtime value (one
// kernel per dtype, a uniform switch per element) instead of one kernel per
// (op, dtype) pair; the ops are memory bound, so the switch is free.
#include <type_traits>

#include "backend/elementwise_formulas.hpp"
#include "common.cuh"

namespace mixp::cuda {
namespace {

// ---- copy ------------------------------------------------------------------------

template <class S, class D>
__device__ __forceinline__ D cvt(S s) {
  if constexpr (std::is_same_v<S, double>) return st_d<D>(s);
  else if constexpr (std::is_same_v<D, double>) return f32_to_f64(ld(s));
  else return st<D>(ld(s));
}

// Contiguous float -> float casts, 4 elements per step (a 128-bit access on
// the wider side when aligned).
template <class S, class D>
__global__ void cast_flat_kernel(const S *__restrict__ src, D *__restrict__ dst, int64_t n) {
  struct alignas(4 * sizeof(S)) VS { S v[4]; };
  struct alignas(4 * sizeof(D)) VD { D v[4]; };
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if ((reinterpret_cast<uintptr_t>(src) % sizeof(VS)) == 0 && (reinterpret_cast<uintptr_t>(dst) % sizeof(VD)) == 0) {
    const int64_t nv = n / 4;
    for (int64_t i = first; i < nv; i += stride) {
      const VS a = reinterpret_cast<const VS *>(src)[i];
      VD b;
#pragma unroll
      for (int k = 0; k < 4; ++k) b.v[k] = cvt<S, D>(a.v[k]);
      reinterpret_cast<VD *>(dst)[i] = b;
    }
    done = nv * 4;
  }
  for (int64_t i = done + first; i < n; i += stride) dst[i] = cvt<S, D>(src[i]);
}

// One element of any dtype into any dtype, as the CPU's copy does it: float
// pairs through the float path (so NaN payloads survive f16 -> f16), the rest
// through double with truncation and saturation.
__device__ __forceinline__ int elem_size_dev(DType t) {
  switch (t) {
    case MIXP_F32: case MIXP_I32: return 4;
    case MIXP_F16: case MIXP_BF16: return 2;
    case MIXP_F64: case MIXP_I64: return 8;
    default: return 1;
  }
}

// A float type narrower than f64 (fp8 included), exactly, as f32.
__device__ __forceinline__ float ld_narrow(const char *s, DType sd) {
  const uint8_t b = *reinterpret_cast<const uint8_t *>(s);
  switch (sd) {
    case MIXP_F32: return *reinterpret_cast<const float *>(s);
    case MIXP_F16: return f16_to_f32(*reinterpret_cast<const uint16_t *>(s));
    case MIXP_BF16: return bf16_to_f32(*reinterpret_cast<const uint16_t *>(s));
    case MIXP_F8E4M3: return e4m3_bits_to_f32(b);
    default: return e5m2_bits_to_f32(b);
  }
}

__device__ __forceinline__ void cvt_any(const char *s, DType sd, char *d, DType dd) {
  const bool sf = sd == MIXP_F32 || sd == MIXP_F16 || sd == MIXP_BF16 || sd == MIXP_F8E4M3 || sd == MIXP_F8E5M2;
  const bool df = dd == MIXP_F32 || dd == MIXP_F16 || dd == MIXP_BF16 || dd == MIXP_F64 || dd == MIXP_F8E4M3 ||
                  dd == MIXP_F8E5M2;
  if (sd == dd) {  // a copy moves bits (strided fp8 copies land here)
    for (int k = 0; k < elem_size_dev(sd); ++k) d[k] = s[k];
    return;
  }
  if (sf && df) {
    const float f = ld_narrow(s, sd);
    switch (dd) {
      case MIXP_F32: *reinterpret_cast<float *>(d) = f; return;
      case MIXP_F16: *reinterpret_cast<uint16_t *>(d) = f32_to_f16(f); return;
      case MIXP_BF16: *reinterpret_cast<uint16_t *>(d) = f32_to_bf16(f); return;
      case MIXP_F8E4M3: *reinterpret_cast<uint8_t *>(d) = f32_to_e4m3_bits(f); return;
      case MIXP_F8E5M2: *reinterpret_cast<uint8_t *>(d) = f32_to_e5m2_bits(f); return;
      default: *reinterpret_cast<double *>(d) = f32_to_f64(f); return;
    }
  }
  st_any(ld_any(s, sd), d, dd);
}

__global__ void copy_strided_kernel(const char *src, DType sd, int ses, char *dst, DType dd, int des,
                                    Strided<2> g, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[2];
    offsets(g, i, off);
    cvt_any(src + off[0] * ses, sd, dst + off[1] * des, dd);
  }
}

bool is_float_dt(DType t) { return t == MIXP_F32 || t == MIXP_F64 || t == MIXP_F16 || t == MIXP_BF16; }

size_t elem_size(DType t) {
  switch (t) {
    case MIXP_F32: case MIXP_I32: return 4;
    case MIXP_F16: case MIXP_BF16: return 2;
    case MIXP_F64: case MIXP_I64: return 8;
    default: return 1;
  }
}

// ---- fill ------------------------------------------------------------------------

__global__ void fill_kernel(char *dst, DType dd, int des, Strided<1> g, int64_t n, double value) {
  // Every thread rounds the value the same way, so no host-side pattern
  // (and no dependency on libmixp's internal converters) is needed.
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[1];
    offsets(g, i, off);
    st_any(value, dst + off[0] * des, dd);
  }
}

// dst[i, j] = j <= i ? 0 : -inf over a contiguous [rows, cols] tensor.
template <class T>
__global__ void causal_mask_kernel(T *dst, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = k / cols, j = k - i * cols;
    dst[k] = st<T>(j <= i ? acc_t<T>(0) : -acc_t<T>(INFINITY));
  }
}

// ---- unary -----------------------------------------------------------------------

template <class A>
__device__ __forceinline__ A unary_f(UnaryOp op, A v, A s) {
  return with_unary_formula(op, [&](auto f) { return decltype(f)::forward(v, s); });
}

// gx from whichever of x (input) and y (output) the op reads (the other is 0).
template <class A>
__device__ __forceinline__ A unary_grad(UnaryOp op, A x, A y, A g, A s) {
  return with_unary_formula(op, [&](auto f) { return decltype(f)::backward(x, y, g, s); });
}

template <class T>
__global__ void unary_kernel(UnaryOp op, const T *__restrict__ x, T *__restrict__ y, int64_t n,
                             acc_t<T> s) {
  constexpr int V = kVec<T>;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if (aligned16(x) && aligned16(y)) {
    const int64_t nv = n / V;
    for (int64_t i = first; i < nv; i += stride) {
      Pack<T> a = reinterpret_cast<const Pack<T> *>(x)[i];
#pragma unroll
      for (int k = 0; k < V; ++k) a.v[k] = st<T>(unary_f(op, ld(a.v[k]), s));
      reinterpret_cast<Pack<T> *>(y)[i] = a;
    }
    done = nv * V;
  }
  for (int64_t i = done + first; i < n; i += stride) y[i] = st<T>(unary_f(op, ld(x[i]), s));
}

// x or y is null when the op does not read it; 0 stands in for it.
template <class T>
__global__ void unary_backward_kernel(UnaryOp op, const T *x, const T *y, const T *__restrict__ gy,
                                      T *__restrict__ gx, int64_t n, acc_t<T> s) {
  using A = acc_t<T>;
  constexpr int V = kVec<T>;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if ((!x || aligned16(x)) && (!y || aligned16(y)) && aligned16(gy) && aligned16(gx)) {
    const int64_t nv = n / V;
    for (int64_t i = first; i < nv; i += stride) {
      Pack<T> px{}, py{};
      if (x) px = reinterpret_cast<const Pack<T> *>(x)[i];
      if (y) py = reinterpret_cast<const Pack<T> *>(y)[i];
      Pack<T> g = reinterpret_cast<const Pack<T> *>(gy)[i];
#pragma unroll
      for (int k = 0; k < V; ++k)
        g.v[k] = st<T>(unary_grad(op, x ? ld(px.v[k]) : A(0), y ? ld(py.v[k]) : A(0), ld(g.v[k]), s));
      reinterpret_cast<Pack<T> *>(gx)[i] = g;
    }
    done = nv * V;
  }
  for (int64_t i = done + first; i < n; i += stride)
    gx[i] = st<T>(unary_grad(op, x ? ld(x[i]) : A(0), y ? ld(y[i]) : A(0), ld(gy[i]), s));
}

// ---- binary ----------------------------------------------------------------------

template <class A>
__device__ __forceinline__ A binary_f(BinaryOp op, A a, A b) {
  return with_binary_formula(op, [&](auto f) { return decltype(f)::apply(a, b); });
}

template <class T>
__global__ void binary_flat_kernel(BinaryOp op, const T *__restrict__ a, const T *__restrict__ b,
                                   T *__restrict__ out, int64_t n) {
  constexpr int V = kVec<T>;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t done = 0;
  if (aligned16(a) && aligned16(b) && aligned16(out)) {
    const int64_t nv = n / V;
    for (int64_t i = first; i < nv; i += stride) {
      const Pack<T> pb = reinterpret_cast<const Pack<T> *>(b)[i];
      Pack<T> pa = reinterpret_cast<const Pack<T> *>(a)[i];
#pragma unroll
      for (int k = 0; k < V; ++k) pa.v[k] = st<T>(binary_f(op, ld(pa.v[k]), ld(pb.v[k])));
      reinterpret_cast<Pack<T> *>(out)[i] = pa;
    }
    done = nv * V;
  }
  for (int64_t i = done + first; i < n; i += stride) out[i] = st<T>(binary_f(op, ld(a[i]), ld(b[i])));
}

// Broadcasting: a and b are walked with their (possibly 0) strides over the
// contiguous output.
template <class T>
__global__ void binary_strided_kernel(BinaryOp op, const T *a, const T *b, T *__restrict__ out,
                                      Strided<2> g, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[2];
    offsets(g, i, off);
    out[i] = st<T>(binary_f(op, ld(a[off[0]]), ld(b[off[1]])));
  }
}

// Work items for a kernel that handles `per_thread` elements per thread.
unsigned grid_elems(int64_t n, int per_thread) { return grid_for((n + per_thread - 1) / per_thread); }

}  // namespace

void CudaBackend::copy(const View &src, const View &dst) {
  if (src.ndim != dst.ndim)
    fail(MIXP_ERR_INTERNAL, "cuda copy: src has ", src.ndim, " dims, dst ", dst.ndim);
  Strided<2> g;
  const View *ops[2] = {&src, &dst};
  const int64_t n = make_strided<2>(dst, ops, g);
  if (n == 0) return;
  const size_t ss = elem_size(src.dtype), ds = elem_size(dst.dtype);
  if (is_flat(g)) {
    if (src.dtype == dst.dtype) {
      MIXP_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, size_t(n) * ss, cudaMemcpyDeviceToDevice, stream()));
      return;
    }
    if (is_float_dt(src.dtype) && is_float_dt(dst.dtype)) {
      dispatch_float_dt(src.dtype, "copy", [&](auto stag) {
        dispatch_float_dt(dst.dtype, "copy", [&](auto dtag) {
          using S = decltype(stag);
          using D = decltype(dtag);
          cast_flat_kernel<S, D><<<grid_elems(n, 4), kThreads, 0, stream()>>>(
              static_cast<const S *>(src.data), static_cast<D *>(dst.data), n);
        });
      });
      MIXP_CUDA_LAUNCHED();
      return;
    }
  }
  copy_strided_kernel<<<grid_for(n), kThreads, 0, stream()>>>(
      static_cast<const char *>(src.data), src.dtype, int(ss), static_cast<char *>(dst.data), dst.dtype,
      int(ds), g, n);
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::fill(const View &dst, double value) {
  Strided<1> g;
  const View *ops[1] = {&dst};
  const int64_t n = make_strided<1>(dst, ops, g);
  if (n == 0) return;
  const size_t es = elem_size(dst.dtype);
  // +0.0 (not -0.0) is all zero bits in every dtype.
  if (is_flat(g) && value == 0.0 && !signbit(value)) {
    MIXP_CUDA_CHECK(cudaMemsetAsync(dst.data, 0, size_t(n) * es, stream()));
    return;
  }
  fill_kernel<<<grid_for(n), kThreads, 0, stream()>>>(static_cast<char *>(dst.data), dst.dtype, int(es),
                                                       g, n, value);
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::causal_mask(const View &dst, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return;
  dispatch_float_dt(dst.dtype, "causal_mask", [&](auto tag) {
    using T = decltype(tag);
    causal_mask_kernel<T><<<grid_for(rows * cols), kThreads, 0, stream()>>>(
        static_cast<T *>(dst.data), rows, cols);
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::unary(UnaryOp op, const View &x, const View &y, double s) {
  require_known(op);
  const int64_t n = y.numel();
  if (n == 0) return;
  dispatch_float_dt(y.dtype, "unary", [&](auto tag) {
    using T = decltype(tag);
    unary_kernel<T><<<grid_elems(n, kVec<T>), kThreads, 0, stream()>>>(
        op, static_cast<const T *>(x.data), static_cast<T *>(y.data), n, acc_t<T>(s));
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::unary_backward(UnaryOp op, const View &x, const View &y, const View &gy,
                                 const View &gx, double s) {
  require_known(op);
  const int64_t n = gx.numel();
  if (n == 0) return;
  const bool reads_x = unary_reads(op) == Reads::Input, reads_y = unary_reads(op) == Reads::Output;
  dispatch_float_dt(gx.dtype, "unary_backward", [&](auto tag) {
    using T = decltype(tag);
    unary_backward_kernel<T><<<grid_elems(n, kVec<T>), kThreads, 0, stream()>>>(
        op, reads_x ? static_cast<const T *>(x.data) : nullptr, reads_y ? static_cast<const T *>(y.data) : nullptr,
        static_cast<const T *>(gy.data), static_cast<T *>(gx.data), n, acc_t<T>(s));
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::binary(BinaryOp op, const View &a, const View &b, const View &out) {
  require_known(op);
  Strided<2> g;
  const View *ops[2] = {&a, &b};
  const int64_t n = make_strided<2>(out, ops, g);
  if (n == 0) return;
  dispatch_float_dt(out.dtype, "binary", [&](auto tag) {
    using T = decltype(tag);
    const T *pa = static_cast<const T *>(a.data), *pb = static_cast<const T *>(b.data);
    T *po = static_cast<T *>(out.data);
    if (is_flat(g))
      binary_flat_kernel<T><<<grid_elems(n, kVec<T>), kThreads, 0, stream()>>>(op, pa, pb, po, n);
    else
      binary_strided_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(op, pa, pb, po, g, n);
  });
  MIXP_CUDA_LAUNCHED();
}

}  // namespace mixp::cuda
