// CPU elementwise kernels: unary ops with their backward, and broadcasting
// binary ops, evaluating the formulas of backend/elementwise_formulas.hpp.
// Every kernel is templated over the storage type and computes in acc_t<T>
// (fp32 for the half types, rounded back to nearest even; fp64 for F64),
// with the formula as a compile-time type so the contiguous inner loops
// vectorise. The op layer guarantees the Backend contract (float dtypes,
// matching operands), so nothing is re-checked here.
#include <algorithm>
#include <cstdint>

#include "backend/elementwise_formulas.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/half_convert.hpp"
#include "cpu/simd.hpp"

namespace mixp {
namespace {

// Elements per parallel work item: large enough that thread start-up is
// amortised, small enough that 2-16 threads all get work on mid-sized tensors.
constexpr int64_t kChunk = 16384;

int64_t num_chunks(int64_t n) noexcept { return (n + kChunk - 1) / kChunk; }

// ---- unary -------------------------------------------------------------------

template <class T, class F>
void map_unary_chunk(const T *x, T *y, int64_t lo, int64_t hi, F f) {
  if constexpr (std::is_same_v<T, f16>) {  // float tiles (half_convert.hpp)
    alignas(64) float t[cpu::kHalfTile];
    for (int64_t b = lo; b < hi; b += cpu::kHalfTile) {
      const int64_t n = std::min(cpu::kHalfTile, hi - b);
      cpu::f16_to_f32(x + b, t, n);
      map_unary_chunk(t, t, 0, n, f);
      cpu::f32_to_f16(t, y + b, n);
    }
  } else {
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
      for (int64_t i = lo; i < hi; ++i) y[i] = store<T>(f(load<T>(x[i])));
    });
  }
}

// Applies f(x) over n contiguous elements, in parallel chunks.
template <class T, class F>
void map_unary(const T *x, T *y, int64_t n, F f) {
  const int64_t chunks = num_chunks(n);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) map_unary_chunk(x, y, c * kChunk, std::min(n, (c + 1) * kChunk), f);
}

template <class T>
void unary_typed(UnaryOp op, const View &xv, const View &yv, double s) {
  using A = acc_t<T>;
  const T *x = static_cast<const T *>(xv.data);
  T *y = static_cast<T *>(yv.data);
  const A sa = A(s);
  with_unary_formula(op, [&](auto formula) {
    using F = decltype(formula);
    map_unary(x, y, yv.numel(), [sa](A v) { return F::forward(v, sa); });
  });
}

// gx[i] = f(x[i], y[i], gy[i]), reading only the saved value the formula
// names (core/ops.def); the other is passed as 0. The choice is a template
// argument so that the loop has no branch and vectorises.
template <Reads R, class T, class F>
void map_unary_backward_chunk(const T *saved, const T *gy, T *gx, int64_t lo, int64_t hi, F f) {
  if constexpr (std::is_same_v<T, f16>) {  // float tiles (half_convert.hpp)
    alignas(64) float ts[cpu::kHalfTile], tg[cpu::kHalfTile];
    for (int64_t b = lo; b < hi; b += cpu::kHalfTile) {
      const int64_t n = std::min(cpu::kHalfTile, hi - b);
      if (R != Reads::None) cpu::f16_to_f32(saved + b, ts, n);
      cpu::f16_to_f32(gy + b, tg, n);
      map_unary_backward_chunk<R>(ts, tg, tg, 0, n, f);
      cpu::f32_to_f16(tg, gx + b, n);
    }
  } else {
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
      using A = acc_t<T>;
      for (int64_t i = lo; i < hi; ++i) {
        const A s = R == Reads::None ? A(0) : load<T>(saved[i]);
        const A xv = R == Reads::Input ? s : A(0);
        const A yv = R == Reads::Output ? s : A(0);
        gx[i] = store<T>(f(xv, yv, load<T>(gy[i])));
      }
    });
  }
}

template <Reads R, class T, class F>
void map_unary_backward(const T *saved, const T *gy, T *gx, int64_t n, F f) {
  const int64_t chunks = num_chunks(n);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c)
    map_unary_backward_chunk<R>(saved, gy, gx, c * kChunk, std::min(n, (c + 1) * kChunk), f);
}

// The op layer saves only the forward value the formula reads and passes
// an empty View for the other (core/ops.def says which).
template <class T>
void unary_backward_typed(UnaryOp op, const View &xv, const View &yv, const View &gyv,
                          const View &gxv, double s) {
  using A = acc_t<T>;
  const T *gy = static_cast<const T *>(gyv.data);
  T *gx = static_cast<T *>(gxv.data);
  const A sa = A(s);
  with_unary_formula(op, [&](auto formula) {
    using F = decltype(formula);
    const T *saved = static_cast<const T *>(F::reads == Reads::Input ? xv.data : yv.data);
    map_unary_backward<F::reads>(saved, gy, gx, gxv.numel(),
                                 [sa](A xx, A yy, A g) { return F::backward(xx, yy, g, sa); });
  });
}

// ---- binary ------------------------------------------------------------------

// The broadcast geometry reduced to its essentials: size-1 dims dropped and
// neighbouring dims merged wherever both operands step through them as one
// (out is contiguous, so it always can). Same-shape contiguous operands
// collapse to one dim; a broadcast scalar becomes stride 0; a row vector
// over the last dim becomes [rows, cols] with strides {cols,1} and {0,1}.
struct Geometry {
  int ndim = 0;
  int64_t shape[MIXP_MAX_DIMS] = {};
  int64_t sa[MIXP_MAX_DIMS] = {};
  int64_t sb[MIXP_MAX_DIMS] = {};
};

Geometry coalesce(const View &a, const View &b, const View &out) {
  Geometry g;
  for (int d = 0; d < out.ndim; ++d) {
    if (out.shape[d] == 1) continue;
    if (g.ndim > 0) {
      const int k = g.ndim - 1;
      if (g.sa[k] == a.strides[d] * out.shape[d] && g.sb[k] == b.strides[d] * out.shape[d]) {
        g.shape[k] *= out.shape[d];
        g.sa[k] = a.strides[d];
        g.sb[k] = b.strides[d];
        continue;
      }
    }
    g.shape[g.ndim] = out.shape[d];
    g.sa[g.ndim] = a.strides[d];
    g.sb[g.ndim] = b.strides[d];
    ++g.ndim;
  }
  if (g.ndim == 0) {  // a single element
    g.ndim = 1;
    g.shape[0] = 1;
  }
  return g;
}

// out[0..len) = f(a[i*sa], b[i*sb]); the common stride patterns get their own
// loops so the compiler sees unit or zero strides and vectorises them.
template <class T, class F>
void binary_run(const T *a, int64_t sa, const T *b, int64_t sb, T *out, int64_t len, F f) {
  if constexpr (std::is_same_v<T, f16>) {  // float tiles (half_convert.hpp)
    if ((sa == 0 || sa == 1) && (sb == 0 || sb == 1)) {
      alignas(64) float ta[cpu::kHalfTile], tb[cpu::kHalfTile];
      for (int64_t p = 0; p < len; p += cpu::kHalfTile) {
        const int64_t n = std::min(cpu::kHalfTile, len - p);
        cpu::f16_to_f32(a + p * sa, ta, sa ? n : 1);
        cpu::f16_to_f32(b + p * sb, tb, sb ? n : 1);
        binary_run(ta, sa, tb, sb, ta, n, f);
        cpu::f32_to_f16(ta, out + p, n);
      }
      return;
    }
  }
  cpu::run_kernel([&]() MIXP_KERNEL_BODY {
    using A = acc_t<T>;
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < len; ++i) out[i] = store<T>(f(load<T>(a[i]), load<T>(b[i])));
    } else if (sa == 1 && sb == 0) {
      const A bv = load<T>(*b);
      for (int64_t i = 0; i < len; ++i) out[i] = store<T>(f(load<T>(a[i]), bv));
    } else if (sa == 0 && sb == 1) {
      const A av = load<T>(*a);
      for (int64_t i = 0; i < len; ++i) out[i] = store<T>(f(av, load<T>(b[i])));
    } else {
      for (int64_t i = 0; i < len; ++i)
        out[i] = store<T>(f(load<T>(a[i * sa]), load<T>(b[i * sb])));
    }
  });
}

// Walks the flat output range [lo, hi) of geometry g: the innermost dim is a
// run handed to binary_run, the outer dims advance like an odometer.
template <class T, class F>
void binary_range(const Geometry &g, const T *a, const T *b, T *out, int64_t lo, int64_t hi,
                  F f) {
  const int last = g.ndim - 1;
  const int64_t inner = g.shape[last];
  int64_t idx[MIXP_MAX_DIMS] = {};
  int64_t row = lo / inner, col = lo % inner;
  int64_t oa = col * g.sa[last], ob = col * g.sb[last];
  for (int d = last - 1; d >= 0; --d) {
    idx[d] = row % g.shape[d];
    row /= g.shape[d];
    oa += idx[d] * g.sa[d];
    ob += idx[d] * g.sb[d];
  }
  int64_t pos = lo;
  while (pos < hi) {
    const int64_t len = std::min(inner - col, hi - pos);
    binary_run(a + oa, g.sa[last], b + ob, g.sb[last], out + pos, len, f);
    pos += len;
    if (pos >= hi) break;
    // Back to the start of the row, then carry into the outer dims.
    oa -= col * g.sa[last];
    ob -= col * g.sb[last];
    col = 0;
    for (int d = last - 1; d >= 0; --d) {
      oa += g.sa[d];
      ob += g.sb[d];
      if (++idx[d] < g.shape[d]) break;
      oa -= idx[d] * g.sa[d];
      ob -= idx[d] * g.sb[d];
      idx[d] = 0;
    }
  }
}

template <class T, class F>
void binary_map(const View &av, const View &bv, const View &ov, F f) {
  const int64_t n = ov.numel();
  if (n == 0) return;
  const Geometry g = coalesce(av, bv, ov);
  const T *a = static_cast<const T *>(av.data);
  const T *b = static_cast<const T *>(bv.data);
  T *out = static_cast<T *>(ov.data);
  const int64_t chunks = num_chunks(n);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
    binary_range(g, a, b, out, lo, hi, f);
  }
}

template <class T>
void binary_typed(BinaryOp op, const View &a, const View &b, const View &out) {
  using A = acc_t<T>;
  with_binary_formula(op, [&](auto formula) {
    using F = decltype(formula);
    binary_map<T>(a, b, out, [](A x, A y) { return F::apply(x, y); });
  });
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const View &x, const View &y, double s) {
  dispatch_float(y.dtype, [&](auto tag) { unary_typed<decltype(tag)>(op, x, y, s); });
}

void CpuBackend::unary_backward(UnaryOp op, const View &x, const View &y, const View &gy,
                                const View &gx, double s) {
  dispatch_float(gx.dtype, [&](auto tag) {
    unary_backward_typed<decltype(tag)>(op, x, y, gy, gx, s);
  });
}

void CpuBackend::binary(BinaryOp op, const View &a, const View &b, const View &out) {
  dispatch_float(out.dtype, [&](auto tag) { binary_typed<decltype(tag)>(op, a, b, out); });
}

}  // namespace mixp
