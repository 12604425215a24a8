// CPU elementwise kernels: unary ops with their backward, and broadcasting
// binary ops. Every kernel is templated over the storage type and computes in
// acc_t<T> (fp32 for the half types, rounded back to nearest even; fp64 for
// F64), with the op as a compile-time functor so the contiguous inner loops
// vectorise.
//
// Which saved operand each unary backward reads (the op layer saves only
// that one and passes an empty View for the other):
//   reads y: Exp, Sqrt, Sigmoid, Tanh
//   reads x: Log, Relu, GeluErf, GeluTanh, Pow, RdivScalar, Hardswish, Hardsigmoid,
//            Silu
//   neither: Neg, AddScalar, MulScalar, RsubScalar
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/simd.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "core/error.hpp"

namespace mixp {
namespace {

// Elements per parallel work item: large enough that thread start-up is
// amortised, small enough that 2-16 threads all get work on mid-sized tensors.
constexpr int64_t kChunk = 16384;

int64_t num_chunks(int64_t n) noexcept { return (n + kChunk - 1) / kChunk; }

// ---- unary formulas ----------------------------------------------------------

template <class A>
struct GeluConst {
  static constexpr A kInvSqrt2 = A(0.70710678118654752440);
  static constexpr A kInvSqrt2Pi = A(0.39894228040143267794);
  static constexpr A kSqrt2OverPi = A(0.79788456080286535588);
  static constexpr A kCubic = A(0.044715);
};

template <class A>
inline A gelu_tanh_forward(A x) noexcept {
  using C = GeluConst<A>;
  A u = C::kSqrt2OverPi * (x + C::kCubic * x * x * x);
  return A(0.5) * x * (A(1) + std::tanh(u));
}

template <class A>
inline A gelu_tanh_derivative(A x) noexcept {
  using C = GeluConst<A>;
  A x2 = x * x;
  A t = std::tanh(C::kSqrt2OverPi * (x + C::kCubic * x2 * x));
  A du = C::kSqrt2OverPi * (A(1) + A(3) * C::kCubic * x2);
  return A(0.5) * (A(1) + t) + A(0.5) * x * (A(1) - t * t) * du;
}

template <class A>
inline A gelu_erf_derivative(A x) noexcept {
  using C = GeluConst<A>;
  A cdf = A(0.5) * (A(1) + std::erf(x * C::kInvSqrt2));
  return cdf + x * std::exp(A(-0.5) * x * x) * C::kInvSqrt2Pi;
}

template <class T, class F>
MIXP_KERNEL_CLONES void map_unary_chunk(const T *x, T *y, int64_t lo, int64_t hi, F f) {
  for (int64_t i = lo; i < hi; ++i) y[i] = store<T>(f(load<T>(x[i])));
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
  const int64_t n = yv.numel();
  const A sa = A(s);
  using C = GeluConst<A>;
  switch (op) {
    case UnaryOp::Neg: return map_unary(x, y, n, [](A v) { return -v; });
    case UnaryOp::Exp: return map_unary(x, y, n, [](A v) { return std::exp(v); });
    case UnaryOp::Log: return map_unary(x, y, n, [](A v) { return std::log(v); });
    case UnaryOp::Sqrt: return map_unary(x, y, n, [](A v) { return std::sqrt(v); });
    case UnaryOp::Relu:  // written so that NaN passes through, as in PyTorch
      return map_unary(x, y, n, [](A v) { return v < A(0) ? A(0) : v; });
    case UnaryOp::GeluErf:
      return map_unary(x, y, n, [](A v) {
        return A(0.5) * v * (A(1) + std::erf(v * C::kInvSqrt2));
      });
    case UnaryOp::GeluTanh: return map_unary(x, y, n, [](A v) { return gelu_tanh_forward(v); });
    case UnaryOp::Sigmoid:
      return map_unary(x, y, n, [](A v) { return A(1) / (A(1) + std::exp(-v)); });
    case UnaryOp::Tanh: return map_unary(x, y, n, [](A v) { return std::tanh(v); });
    case UnaryOp::Pow: return map_unary(x, y, n, [sa](A v) { return std::pow(v, sa); });
    case UnaryOp::AddScalar: return map_unary(x, y, n, [sa](A v) { return v + sa; });
    case UnaryOp::MulScalar: return map_unary(x, y, n, [sa](A v) { return v * sa; });
    case UnaryOp::RsubScalar: return map_unary(x, y, n, [sa](A v) { return sa - v; });
    case UnaryOp::RdivScalar: return map_unary(x, y, n, [sa](A v) { return sa / v; });
    // The kink branches are written so that NaN falls through to the
    // arithmetic and propagates.
    case UnaryOp::Hardswish:
      return map_unary(x, y, n, [](A v) {
        return v <= A(-3) ? A(0) : v >= A(3) ? v : v * (v + A(3)) / A(6);
      });
    case UnaryOp::Hardsigmoid:
      return map_unary(x, y, n, [](A v) {
        return v <= A(-3) ? A(0) : v >= A(3) ? A(1) : (v + A(3)) / A(6);
      });
    case UnaryOp::Silu:
      return map_unary(x, y, n, [](A v) { return v / (A(1) + std::exp(-v)); });
  }
  fail(MIXP_ERR_INTERNAL, "cpu unary: unknown op ", int(op));
}

// gx[i] = f(x[i], y[i], gy[i]); x or y may be null when the op does not read
// it (see the table at the top), so the loaders substitute 0 for a null one.
template <class T, class F>
MIXP_KERNEL_CLONES void map_unary_backward_chunk(const T *x, const T *y, const T *gy, T *gx, int64_t lo,
                                                 int64_t hi, F f) {
  using A = acc_t<T>;
  for (int64_t i = lo; i < hi; ++i) {
    A xv = x ? load<T>(x[i]) : A(0);
    A yv = y ? load<T>(y[i]) : A(0);
    gx[i] = store<T>(f(xv, yv, load<T>(gy[i])));
  }
}

template <class T, class F>
void map_unary_backward(const T *x, const T *y, const T *gy, T *gx, int64_t n, F f) {
  const int64_t chunks = num_chunks(n);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c)
    map_unary_backward_chunk(x, y, gy, gx, c * kChunk, std::min(n, (c + 1) * kChunk), f);
}

template <class T>
void unary_backward_typed(UnaryOp op, const View &xv, const View &yv, const View &gyv,
                          const View &gxv, double s) {
  using A = acc_t<T>;
  const T *x = static_cast<const T *>(xv.data);
  const T *y = static_cast<const T *>(yv.data);
  const T *gy = static_cast<const T *>(gyv.data);
  T *gx = static_cast<T *>(gxv.data);
  const int64_t n = gxv.numel();
  const A sa = A(s);
  auto need = [&](const T *p, const char *which) {
    if (!p && n > 0)
      fail(MIXP_ERR_INTERNAL, "cpu unary_backward: op ", int(op), " needs the saved ", which);
  };
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::RsubScalar:
      return map_unary_backward(x, y, gy, gx, n, [](A, A, A g) { return -g; });
    case UnaryOp::AddScalar:
      return map_unary_backward(x, y, gy, gx, n, [](A, A, A g) { return g; });
    case UnaryOp::MulScalar:
      return map_unary_backward(x, y, gy, gx, n, [sa](A, A, A g) { return g * sa; });
    case UnaryOp::Exp:
      need(y, "output");
      return map_unary_backward(x, y, gy, gx, n, [](A, A yy, A g) { return g * yy; });
    case UnaryOp::Sqrt:
      need(y, "output");
      return map_unary_backward(x, y, gy, gx, n, [](A, A yy, A g) { return g / (A(2) * yy); });
    case UnaryOp::Sigmoid:
      need(y, "output");
      return map_unary_backward(x, y, gy, gx, n,
                                [](A, A yy, A g) { return g * yy * (A(1) - yy); });
    case UnaryOp::Tanh:
      need(y, "output");
      return map_unary_backward(x, y, gy, gx, n,
                                [](A, A yy, A g) { return g * (A(1) - yy * yy); });
    case UnaryOp::Log:
      need(x, "input");
      return map_unary_backward(x, y, gy, gx, n, [](A xx, A, A g) { return g / xx; });
    case UnaryOp::Relu:
      need(x, "input");
      return map_unary_backward(x, y, gy, gx, n,
                                [](A xx, A, A g) { return xx > A(0) ? g : A(0); });
    case UnaryOp::GeluErf:
      need(x, "input");
      return map_unary_backward(x, y, gy, gx, n,
                                [](A xx, A, A g) { return g * gelu_erf_derivative(xx); });
    case UnaryOp::GeluTanh:
      need(x, "input");
      return map_unary_backward(x, y, gy, gx, n,
                                [](A xx, A, A g) { return g * gelu_tanh_derivative(xx); });
    case UnaryOp::Pow:
      need(x, "input");
      // x^0 is constant: its gradient is 0 even at x = 0, where s*x^(s-1)
      // would be 0*inf.
      if (s == 0.0) return map_unary_backward(x, y, gy, gx, n, [](A, A, A) { return A(0); });
      return map_unary_backward(x, y, gy, gx, n,
                                [sa](A xx, A, A g) { return g * sa * std::pow(xx, sa - A(1)); });
    case UnaryOp::RdivScalar:
      need(x, "input");
      return map_unary_backward(x, y, gy, gx, n,
                                [sa](A xx, A, A g) { return -g * sa / (xx * xx); });
    // At the kinks these take PyTorch's one-sided choices: hardswish's slope
    // is 0 below -3, (2x+3)/6 on [-3, 3] and 1 above; hardsigmoid's is 1/6
    // strictly inside (-3, 3) and 0 elsewhere.
    case UnaryOp::Hardswish:
      need(x, "input");
      return map_unary_backward(x, y, gy, gx, n, [](A xx, A, A g) {
        return xx < A(-3) ? A(0) : xx <= A(3) ? g * (A(2) * xx + A(3)) / A(6) : g;
      });
    case UnaryOp::Hardsigmoid:
      need(x, "input");
      return map_unary_backward(x, y, gy, gx, n, [](A xx, A, A g) {
        return (xx > A(-3) && xx < A(3)) ? g / A(6) : A(0);
      });
    case UnaryOp::Silu:
      need(x, "input");
      return map_unary_backward(x, y, gy, gx, n, [](A xx, A, A g) {
        const A sg = A(1) / (A(1) + std::exp(-xx));
        return g * sg * (A(1) + xx * (A(1) - sg));
      });
  }
  fail(MIXP_ERR_INTERNAL, "cpu unary_backward: unknown op ", int(op));
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
MIXP_KERNEL_CLONES void binary_run(const T *a, int64_t sa, const T *b, int64_t sb, T *out, int64_t len, F f) {
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
  switch (op) {
    case BinaryOp::Add: return binary_map<T>(a, b, out, [](A x, A y) { return x + y; });
    case BinaryOp::Sub: return binary_map<T>(a, b, out, [](A x, A y) { return x - y; });
    case BinaryOp::Mul: return binary_map<T>(a, b, out, [](A x, A y) { return x * y; });
    case BinaryOp::Div: return binary_map<T>(a, b, out, [](A x, A y) { return x / y; });
  }
  fail(MIXP_ERR_INTERNAL, "cpu binary: unknown op ", int(op));
}

void check_float(const char *kernel, const View &v) {
  if (!is_float(v.dtype))
    fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": dtype ", dtype_name(v.dtype), " is not float");
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const View &x, const View &y, double s) {
  check_float("unary", y);
  if (x.dtype != y.dtype || x.numel() != y.numel())
    fail(MIXP_ERR_INTERNAL, "cpu unary: x and y differ in dtype or numel");
  dispatch_float(y.dtype, [&](auto tag) { unary_typed<decltype(tag)>(op, x, y, s); });
}

void CpuBackend::unary_backward(UnaryOp op, const View &x, const View &y, const View &gy,
                                const View &gx, double s) {
  check_float("unary_backward", gx);
  if (gy.dtype != gx.dtype || gy.numel() != gx.numel())
    fail(MIXP_ERR_INTERNAL, "cpu unary_backward: gy and gx differ in dtype or numel");
  dispatch_float(gx.dtype, [&](auto tag) {
    unary_backward_typed<decltype(tag)>(op, x, y, gy, gx, s);
  });
}

void CpuBackend::binary(BinaryOp op, const View &a, const View &b, const View &out) {
  check_float("binary", out);
  if (a.dtype != out.dtype || b.dtype != out.dtype || a.ndim != out.ndim || b.ndim != out.ndim)
    fail(MIXP_ERR_INTERNAL, "cpu binary: operands do not match the output's dtype and rank");
  dispatch_float(out.dtype, [&](auto tag) { binary_typed<decltype(tag)>(op, a, b, out); });
}

}  // namespace mixp
