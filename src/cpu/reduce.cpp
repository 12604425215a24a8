// CPU reductions and row-wise kernels: sum_rows, max_dim, (log_)softmax and
// its backward, softmax cross-entropy and its backward.
//
// Determinism: every result depends only on the data, never on the thread
// count. Row sums are taken in fixed blocks whose partial sums are added in
// block order, so splitting the work by rows or by blocks gives the same bits.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/host_device_math.hpp"
#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/half_convert.hpp"
#include "cpu/lane_sums.hpp"

namespace mixp {
namespace {

template <class A>
inline bool is_nan_val(A v) noexcept {
  if constexpr (std::is_floating_point_v<A>) {
    return std::isnan(v);
  } else {
    (void)v;
    return false;
  }
}

// Calls f(T{}) for every dtype (max_dim also serves integer tensors).
template <class F>
void dispatch_all(DType t, F &&f) {
  switch (t) {
    case MIXP_I32: f(int32_t{}); return;
    case MIXP_I64: f(int64_t{}); return;
    case MIXP_U8:
    case MIXP_BOOL: f(uint8_t{}); return;
    default: dispatch_float(t, f); return;
  }
}

void require_float_view(const View &v, const char *kernel, const char *arg) {
  if (!is_float(v.dtype))
    fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": ", arg, " has non-float dtype ", dtype_name(v.dtype));
}

// Below this many elements a loop runs on the calling thread: forking the
// team costs more than the work.
constexpr int64_t kParallelMin = 1 << 15;
// Block length of the fixed-order row sums.
constexpr int64_t kSumBlock = 4096;
// Inner positions handled together when the reduced axis is strided, so
// that every pass over the axis reads whole cache lines.
constexpr int64_t kChunk = 64;

template <class T>
double block_sum(const T *p, int64_t n) noexcept {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += double(load<T>(p[i]));
  return s;
}

template <class TI, class TO>
void sum_rows_impl(const TI *x, int64_t rows, int64_t cols, TO *out, double scale) {
  const int64_t nb = cols == 0 ? 0 : (cols + kSumBlock - 1) / kSumBlock;
  const bool big = rows * cols >= kParallelMin;
  if (nb > 1 && rows < 4 * int64_t(omp_get_max_threads())) {
    // Few long rows: split each row into blocks, then add the block sums in order.
    std::vector<double> partial(size_t(rows * nb));
#pragma omp parallel for schedule(static) if (big)
    for (int64_t t = 0; t < rows * nb; ++t) {
      int64_t r = t / nb, b = t % nb;
      int64_t start = b * kSumBlock, len = std::min(kSumBlock, cols - start);
      partial[size_t(t)] = block_sum(x + r * cols + start, len);
    }
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0.0;
      for (int64_t b = 0; b < nb; ++b) s += partial[size_t(r * nb + b)];
      out[r] = store_double<TO>(s * scale);
    }
    return;
  }
#pragma omp parallel for schedule(static) if (big)
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (int64_t b = 0; b < nb; ++b) {
      int64_t start = b * kSumBlock, len = std::min(kSumBlock, cols - start);
      s += block_sum(x + r * cols + start, len);
    }
    out[r] = store_double<TO>(s * scale);
  }
}

template <class T>
void max_dim_impl(const T *x, int64_t outer, int64_t n, int64_t inner, T *values,
                  int64_t *indices) {
  using A = acc_t<T>;
  const int64_t nch = (inner + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (outer * n * inner >= kParallelMin)
  for (int64_t t = 0; t < outer * nch; ++t) {
    const int64_t o = t / nch, i0 = (t % nch) * kChunk, w = std::min(kChunk, inner - i0);
    const T *xb = x + o * n * inner + i0;
    A best[kChunk];
    int64_t arg[kChunk];
    for (int64_t j = 0; j < w; ++j) {
      best[j] = load<T>(xb[j]);
      arg[j] = 0;
    }
    for (int64_t k = 1; k < n; ++k) {
      const T *row = xb + k * inner;
      for (int64_t j = 0; j < w; ++j) {
        A v = load<T>(row[j]);
        // NaN counts as the largest value (PyTorch): the first NaN wins.
        if (!is_nan_val(best[j]) && (v > best[j] || is_nan_val(v))) {
          best[j] = v;
          arg[j] = k;
        }
      }
    }
    for (int64_t j = 0; j < w; ++j) {
      const int64_t oi = o * inner + i0 + j;
      indices[oi] = arg[j];
      if (values) values[oi] = xb[arg[j] * inner + j];  // the element itself, bit for bit
    }
  }
}

// f16 rows are widened into a float buffer first and the results rounded
// back from one, through F16C (half_convert.hpp), instead of converting in
// software element by element, which made f16 softmax ~1.5x (forward) and
// ~2x (backward) the cost of bf16's. Bit for bit the same: the widening is
// exact, and a double result d is stored as f64_to_f16_bits(d) does it,
// rounded to odd in float and then to nearest even in f16 (a NaN as the
// quiet NaN of its sign).
template <class T>
constexpr bool kStageF16 = std::is_same_v<T, f16>;

// The float whose F16C rounding is f64_to_f16_bits(d); branch-free like
// it, so the loops storing it vectorise.
MIXP_KERNEL_BODY inline float f16_source(double d) noexcept {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  const float f = f64_to_f32_round_odd(d);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  const uint32_t quiet_nan = (uint32_t(u >> 32) & 0x80000000u) | 0x7fc00000u;
  b = d != d ? quiet_nan : b;
  float out;
  std::memcpy(&out, &b, 4);
  return out;
}

// Softmax over the last dim (inner == 1, attention's and the loss's case):
// each row is contiguous, so its max, exp and sum run along it in vectors;
// the sum in lanes (lane_sums.hpp) keeps it independent of the kernel
// version. The strided loops below would run one element wide here. Each
// exp is computed once: the sum's pass keeps them for the output's.
template <class T>
void softmax_rows(const T *x, int64_t rows, int64_t n, bool log, T *y) {
  using A = acc_t<T>;
  // Elements read as A and results written from double: through a float
  // buffer for f16 (kStageF16), in place otherwise.
  using Src = std::conditional_t<kStageF16<T>, float, T>;
#pragma omp parallel for schedule(static) if (rows * n >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    thread_local std::vector<A> exps;
    thread_local std::vector<float> staged;  // f16: the row, then the results
    if (!log && exps.size() < size_t(n)) exps.resize(size_t(n));
    if (kStageF16<T> && staged.size() < size_t(2 * n)) staged.resize(size_t(2 * n));
    const Src *xr;
    if constexpr (kStageF16<T>) {
      cpu::f16_to_f32(x + r * n, staged.data(), n);
      xr = staged.data();
    } else {
      xr = x + r * n;
    }
    float *out_f = kStageF16<T> ? staged.data() + n : nullptr;
    T *yr = y + r * n;
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
      A *__restrict er = exps.data();
      const Src *__restrict xs = xr;
      float *__restrict of = out_f;
      T *__restrict ys = yr;
      auto put = [&](int64_t k, double v) {
        if constexpr (kStageF16<T>) of[k] = f16_source(v);
        else ys[k] = store_double<T>(v);
      };
      // The row's max in 8 lanes, combined in order; any NaN makes it NaN.
      auto larger = [](A v, A m) { return (v > m || std::isunordered(v, v)) ? v : m; };
      A lane[8];
      for (int l = 0; l < 8; ++l) lane[l] = -std::numeric_limits<A>::infinity();
      int64_t k = 0;
      for (; k + 8 <= n; k += 8)
        for (int l = 0; l < 8; ++l) lane[l] = larger(load<Src>(xs[k + l]), lane[l]);
      for (int l = 0; k < n; ++k, ++l) lane[l] = larger(load<Src>(xs[k]), lane[l]);
      A mx = lane[0];
      for (int l = 1; l < 8; ++l) mx = larger(lane[l], mx);
      double sum = 0.0;
      if (log) {
        cpu::lane_sums<1>(n, [&](int64_t k, double *v) { v[0] = double(hd::exp(A(load<Src>(xs[k]) - mx))); }, &sum);
        const double lse = std::log(sum);
        for (int64_t k = 0; k < n; ++k) put(k, double(load<Src>(xs[k]) - mx) - lse);
      } else {
        cpu::lane_sums<1>(n, [&](int64_t k, double *v) {
          er[k] = hd::exp(A(load<Src>(xs[k]) - mx));
          v[0] = double(er[k]);
        }, &sum);
        const double inv = 1.0 / sum;
        for (int64_t k = 0; k < n; ++k) put(k, double(er[k]) * inv);
      }
    });
    if constexpr (kStageF16<T>) cpu::f32_to_f16(out_f, yr, n);
  }
}

template <class T>
void softmax_rows_backward(const T *y, const T *gy, int64_t rows, int64_t n, bool log, T *gx) {
  using Src = std::conditional_t<kStageF16<T>, float, T>;
#pragma omp parallel for schedule(static) if (rows * n >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    thread_local std::vector<float> staged;  // f16: y's row, gy's, the results
    const Src *yr, *gr;
    if constexpr (kStageF16<T>) {
      if (staged.size() < size_t(3 * n)) staged.resize(size_t(3 * n));
      cpu::f16_to_f32(y + r * n, staged.data(), n);
      cpu::f16_to_f32(gy + r * n, staged.data() + n, n);
      yr = staged.data();
      gr = staged.data() + n;
    } else {
      yr = y + r * n;
      gr = gy + r * n;
    }
    float *out_f = kStageF16<T> ? staged.data() + 2 * n : nullptr;
    T *gxr = gx + r * n;
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
      const Src *__restrict ys = yr, *__restrict gs = gr;
      float *__restrict of = out_f;
      T *__restrict gxs = gxr;
      auto put = [&](int64_t k, double v) {
        if constexpr (kStageF16<T>) of[k] = f16_source(v);
        else gxs[k] = store_double<T>(v);
      };
      // softmax: gx = y (gy - sum gy*y); log_softmax: gx = gy - exp(y) sum gy.
      double s = 0.0;
      if (log) {
        cpu::lane_sums<1>(n, [&](int64_t k, double *v) { v[0] = double(load<Src>(gs[k])); }, &s);
        for (int64_t k = 0; k < n; ++k)
          put(k, double(load<Src>(gs[k])) - std::exp(double(load<Src>(ys[k]))) * s);
        return;
      }
      cpu::lane_sums<1>(n, [&](int64_t k, double *v) { v[0] = double(load<Src>(gs[k])) * double(load<Src>(ys[k])); }, &s);
      for (int64_t k = 0; k < n; ++k) {
        const double yv = double(load<Src>(ys[k]));
        put(k, yv * (double(load<Src>(gs[k])) - s));
      }
    });
    if constexpr (kStageF16<T>) cpu::f32_to_f16(out_f, gxr, n);
  }
}

template <class T>
void softmax_impl(const T *x, int64_t outer, int64_t n, int64_t inner, bool log, T *y) {
  using A = acc_t<T>;
  const int64_t nch = (inner + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (outer * n * inner >= kParallelMin)
  for (int64_t t = 0; t < outer * nch; ++t) {
    const int64_t o = t / nch, i0 = (t % nch) * kChunk, w = std::min(kChunk, inner - i0);
    const T *xb = x + o * n * inner + i0;
    T *yb = y + o * n * inner + i0;
    A mx[kChunk];
    double sm[kChunk];
    for (int64_t j = 0; j < w; ++j) {
      mx[j] = -std::numeric_limits<A>::infinity();
      sm[j] = 0.0;
    }
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < w; ++j) {
        A v = load<T>(xb[k * inner + j]);
        if (v > mx[j] || std::isnan(v)) mx[j] = v;
      }
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < w; ++j) sm[j] += double(std::exp(load<T>(xb[k * inner + j]) - mx[j]));
    if (log) {
      for (int64_t j = 0; j < w; ++j) sm[j] = std::log(sm[j]);
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < w; ++j)
          yb[k * inner + j] = store_double<T>(double(load<T>(xb[k * inner + j]) - mx[j]) - sm[j]);
    } else {
      for (int64_t j = 0; j < w; ++j) sm[j] = 1.0 / sm[j];
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < w; ++j)
          yb[k * inner + j] =
              store_double<T>(double(std::exp(load<T>(xb[k * inner + j]) - mx[j])) * sm[j]);
    }
  }
}

template <class T>
void softmax_backward_impl(const T *y, const T *gy, int64_t outer, int64_t n, int64_t inner,
                           bool log, T *gx) {
  const int64_t nch = (inner + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (outer * n * inner >= kParallelMin)
  for (int64_t t = 0; t < outer * nch; ++t) {
    const int64_t o = t / nch, i0 = (t % nch) * kChunk, w = std::min(kChunk, inner - i0);
    const int64_t base = o * n * inner + i0;
    double s[kChunk];
    for (int64_t j = 0; j < w; ++j) s[j] = 0.0;
    // softmax: gx = y (gy - sum gy*y); log_softmax: gx = gy - exp(y) sum gy.
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < w; ++j) {
        const int64_t e = base + k * inner + j;
        double g = double(load<T>(gy[e]));
        s[j] += log ? g : g * double(load<T>(y[e]));
      }
    for (int64_t k = 0; k < n; ++k)
      for (int64_t j = 0; j < w; ++j) {
        const int64_t e = base + k * inner + j;
        double g = double(load<T>(gy[e])), yv = double(load<T>(y[e]));
        gx[e] = store_double<T>(log ? g - std::exp(yv) * s[j] : yv * (g - s[j]));
      }
  }
}

// max and log-sum-exp of one row of logits, in double.
template <class T>
void row_lse(const T *row, int64_t c, double *mx, double *sum) noexcept {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < c; ++k) {
    double v = double(load<T>(row[k]));
    if (v > m || std::isnan(v)) m = v;
  }
  double s = 0.0;
  for (int64_t k = 0; k < c; ++k) s += std::exp(double(load<T>(row[k])) - m);
  *mx = m;
  *sum = s;
}

template <class T, class L>
void cross_entropy_impl(const T *logits, const int64_t *target, int64_t n, int64_t c,
                        int64_t ignore_index, double eps, L *losses) {
#pragma omp parallel for schedule(static) if (n * c >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = target[i];
    if (t == ignore_index) {
      losses[i] = L(0);
      continue;
    }
    if (t < 0 || t >= c) {  // the op layer rejects these; never read past the row
      losses[i] = std::numeric_limits<L>::quiet_NaN();
      continue;
    }
    const T *row = logits + i * c;
    double m, s;
    row_lse(row, c, &m, &s);
    if (eps == 0.0) {
      losses[i] = L(std::log(s) + m - double(load<T>(row[t])));
    } else {
      // -log p_k = lse - x_k: (1 - e)(lse - x_t) + e (lse - mean_k x_k).
      double sum_x = 0.0;
      for (int64_t k = 0; k < c; ++k) sum_x += double(load<T>(row[k]));
      const double lse = std::log(s) + m;
      losses[i] = L((1.0 - eps) * (lse - double(load<T>(row[t]))) + eps * (lse - sum_x / double(c)));
    }
  }
}

template <class T, class R>
void cross_entropy_backward_impl(const T *logits, const int64_t *target, int64_t n, int64_t c,
                                 int64_t ignore_index, double eps, const R *row_scale, T *glogits) {
#pragma omp parallel for schedule(static) if (n * c >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = target[i];
    T *g = glogits + i * c;
    if (t == ignore_index || t < 0 || t >= c) {
      for (int64_t k = 0; k < c; ++k) g[k] = store_double<T>(0.0);
      continue;
    }
    const T *row = logits + i * c;
    double m, s;
    row_lse(row, c, &m, &s);
    const double rs = double(row_scale[i]), inv = 1.0 / s;
    // The smoothed target: (1 - e) on the class, e / c everywhere (e == 0:
    // exactly the one-hot).
    const double on = eps == 0.0 ? 1.0 : 1.0 - eps + eps / double(c), off = eps == 0.0 ? 0.0 : eps / double(c);
    for (int64_t k = 0; k < c; ++k) {
      double p = std::exp(double(load<T>(row[k])) - m) * inv;
      g[k] = store_double<T>(rs * (p - (k == t ? on : off)));
    }
  }
}

// Calls f(L{}) for the per-row loss buffers, which are F32, or F64 so that
// double-precision losses keep their precision.
template <class F>
void dispatch_loss(const View &v, const char *kernel, const char *arg, F &&f) {
  if (v.dtype == MIXP_F32) {
    f(float{});
  } else if (v.dtype == MIXP_F64) {
    f(double{});
  } else {
    fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": ", arg, " must be f32 or f64, not ",
         dtype_name(v.dtype));
  }
}

}  // namespace

void CpuBackend::sum_rows(const View &x, int64_t rows, int64_t cols, const View &out,
                          double scale) {
  require_float_view(x, "sum_rows", "x");
  require_float_view(out, "sum_rows", "out");
  dispatch_float(x.dtype, [&](auto ti) {
    using TI = decltype(ti);
    dispatch_float(out.dtype, [&](auto to) {
      using TO = decltype(to);
      sum_rows_impl(static_cast<const TI *>(x.data), rows, cols, static_cast<TO *>(out.data),
                    scale);
    });
  });
}

void CpuBackend::max_dim(const View &x, int64_t outer, int64_t n, int64_t inner,
                         const View *values, const View &indices) {
  if (indices.dtype != MIXP_I64) fail(MIXP_ERR_INTERNAL, "cpu max_dim: indices must be i64");
  if (n <= 0) fail(MIXP_ERR_INTERNAL, "cpu max_dim: the reduced axis is empty");
  dispatch_all(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    max_dim_impl(static_cast<const T *>(x.data), outer, n, inner,
                 values ? static_cast<T *>(values->data) : nullptr,
                 static_cast<int64_t *>(indices.data));
  });
}

void CpuBackend::softmax(const View &x, int64_t outer, int64_t n, int64_t inner, bool log,
                         const View &y) {
  require_float_view(x, "softmax", "x");
  dispatch_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (inner == 1) softmax_rows(static_cast<const T *>(x.data), outer, n, log, static_cast<T *>(y.data));
    else softmax_impl(static_cast<const T *>(x.data), outer, n, inner, log, static_cast<T *>(y.data));
  });
}

void CpuBackend::softmax_backward(const View &y, const View &gy, int64_t outer, int64_t n,
                                  int64_t inner, bool log, const View &gx) {
  require_float_view(y, "softmax_backward", "y");
  dispatch_float(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (inner == 1)
      softmax_rows_backward(static_cast<const T *>(y.data), static_cast<const T *>(gy.data), outer, n, log,
                            static_cast<T *>(gx.data));
    else
      softmax_backward_impl(static_cast<const T *>(y.data), static_cast<const T *>(gy.data), outer,
                            n, inner, log, static_cast<T *>(gx.data));
  });
}

void CpuBackend::cross_entropy(const View &logits, const View &target, int64_t n, int64_t c,
                               int64_t ignore_index, double label_smoothing, const View &losses) {
  require_float_view(logits, "cross_entropy", "logits");
  if (target.dtype != MIXP_I64) fail(MIXP_ERR_INTERNAL, "cpu cross_entropy: target must be i64");
  dispatch_float(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    dispatch_loss(losses, "cross_entropy", "losses", [&](auto ltag) {
      using L = decltype(ltag);
      cross_entropy_impl(static_cast<const T *>(logits.data),
                         static_cast<const int64_t *>(target.data), n, c, ignore_index,
                         label_smoothing, static_cast<L *>(losses.data));
    });
  });
}

void CpuBackend::cross_entropy_backward(const View &logits, const View &target, int64_t n,
                                        int64_t c, int64_t ignore_index, double label_smoothing,
                                        const View &row_scale, const View &glogits) {
  require_float_view(logits, "cross_entropy_backward", "logits");
  if (target.dtype != MIXP_I64)
    fail(MIXP_ERR_INTERNAL, "cpu cross_entropy_backward: target must be i64");
  dispatch_float(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    dispatch_loss(row_scale, "cross_entropy_backward", "row_scale", [&](auto rtag) {
      using R = decltype(rtag);
      cross_entropy_backward_impl(static_cast<const T *>(logits.data),
                                  static_cast<const int64_t *>(target.data), n, c, ignore_index,
                                  label_smoothing, static_cast<const R *>(row_scale.data),
                                  static_cast<T *>(glogits.data));
    });
  });
}

}  // namespace mixp
