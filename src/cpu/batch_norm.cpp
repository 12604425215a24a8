// CPU batch_norm: statistics per channel over the batch and spatial
// positions, forward and backward. The sums follow norm_reduce.hpp (double,
// fixed order); channels-last data (inner == 1) is summed in
// batch_norm_nhwc.cpp. group_norm/layer_norm are in group_norm.cpp.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/half_convert.hpp"
#include "cpu/lane_sums.hpp"
#include "cpu/norm_reduce.hpp"
#include "cpu/simd.hpp"

namespace mixp {
namespace {

using namespace cpu::norm;

// Rows at least this long are summed in vector lanes and, for half types,
// staged in float (with_row); shorter ones are read in place, in order.
constexpr int64_t kStagedRow = 32;

// The K sums of one channel's row of `inner` elements: in the vectorised
// lanes of lane_sums.hpp (16: four chains of vector adds on AVX2, two on
// AVX-512, where 8 lanes waited on one add's latency) when the row is long
// enough to pay for the call, else in order. Either way the result depends
// on the shape alone.
template <int K, class F>
void row_sums(int64_t inner, F f, double *out) {
  if (inner < kStagedRow) {
    for (int k = 0; k < K; ++k) out[k] = 0.0;
    for (int64_t i = 0; i < inner; ++i) {
      double v[K];
      f(i, v);
      for (int k = 0; k < K; ++k) out[k] += v[k];
    }
    return;
  }
  cpu::run_kernel([&]() MIXP_KERNEL_BODY { cpu::lane_sums<K, F, 16>(inner, f, out); });
}

// Calls f(row) with the n elements at p as they are or, for half types and
// rows long enough to pay for the copy, widened (half_convert.hpp: the
// double sums vectorise better over floats, and f16 converts in hardware).
// Short rows read the halves in place. f reads its row with load<>.
template <class T, class F>
void with_row(const T *p, int64_t n, int slot, F &&f) {
  if constexpr (cpu::is_half_v<T>) {
    if (n >= kStagedRow) return f(widened(p, n, slot));
  }
  f(p);
}

// batch_norm's weight and bias, which are stat Views (backend.hpp).
template <class S>
S stat_param(const View *v, int64_t i, S dflt) {
  return v ? static_cast<const S *>(v->data)[i] : dflt;
}

template <class T>
acc_t<T> param(const View *v, int64_t i, acc_t<T> dflt) {
  return v ? load<T>(static_cast<const T *>(v->data)[i]) : dflt;
}

// ---- batch_norm ----------------------------------------------------------------

// Mean and variance per channel. Rows long enough to stage (with_row) are
// read once: each row's sum and centred square sum are formed while it sits
// in L1, and the rows are joined exactly as two passes would be, since
// sum (x - mu)^2 = sum over rows of [M2_row + n_row (mu_row - mu)^2]
// (Chan et al.). NHWC rows (inner == 1) are joined the same way in chunks
// (bn_stats_nhwc). Other short rows (tiny planes) take the mean first, then
// the squares, in two passes over x.
template <class T>
void bn_stats(const View &xv, int64_t outer, int64_t c, int64_t inner, double eps,
              const View &mv, const View &vv, const View &iv) {
  using S = stat_t<T>;
  const T *x = static_cast<const T *>(xv.data);
  const double m = double(outer * inner);
  std::vector<double> sum(static_cast<size_t>(c)), sq(static_cast<size_t>(c));
  auto centred_sq = [](int64_t n, const auto *row, double mu) {
    using R = elem_t<decltype(row)>;
    double s = 0.0;
    row_sums<1>(n, [&](int64_t i, double *v) {
      const double d = double(load<R>(row[i])) - mu;
      v[0] = d * d;
    }, &s);
    return s;
  };
  if (inner == 1) {
    bn_stats_nhwc(x, outer, c, sum.data(), sq.data());
  } else if (inner >= kStagedRow) {
    const int64_t rows = outer * c;
    std::vector<double> row_sum(static_cast<size_t>(rows)), row_m2(static_cast<size_t>(rows));
#pragma omp parallel for collapse(2) schedule(static) if (rows * inner > kChunk)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t r = o * c + ch;
        with_row(x + r * inner, inner, 0, [&](const auto *row) {
          using R = elem_t<decltype(row)>;
          double s = 0.0;
          row_sums<1>(inner, [&](int64_t i, double *v) { v[0] = double(load<R>(row[i])); }, &s);
          row_sum[size_t(r)] = s;
          row_m2[size_t(r)] = centred_sq(inner, row, s / double(inner));
        });
      }
    for (int64_t ch = 0; ch < c; ++ch) {
      double s = 0.0;
      for (int64_t o = 0; o < outer; ++o) s += row_sum[size_t(o * c + ch)];
      const double mu = s / m;
      double q = 0.0;
      for (int64_t o = 0; o < outer; ++o) {
        const size_t r = size_t(o * c + ch);
        const double d = row_sum[r] / double(inner) - mu;
        q += row_m2[r] + double(inner) * d * d;
      }
      sum[size_t(ch)] = mu;
      sq[size_t(ch)] = q;
    }
  } else {
    channel_sums<1>(outer, c, inner, [&](int64_t o, int64_t ch, double *acc) {
      with_row(x + (o * c + ch) * inner, inner, 0, [&](const auto *row) {
        using R = elem_t<decltype(row)>;
        double s = 0.0;
        row_sums<1>(inner, [&](int64_t i, double *v) { v[0] = double(load<R>(row[i])); }, &s);
        acc[0] += s;
      });
    }, sum.data());
    for (int64_t ch = 0; ch < c; ++ch) sum[size_t(ch)] /= m;
    channel_sums<1>(outer, c, inner, [&](int64_t o, int64_t ch, double *acc) {
      with_row(x + (o * c + ch) * inner, inner, 0,
               [&](const auto *row) { acc[0] += centred_sq(inner, row, sum[size_t(ch)]); });
    }, sq.data());
  }
  S *mean = stat_ptr<S>(mv), *var = stat_ptr<S>(vv), *invstd = stat_ptr<S>(iv);
  for (int64_t ch = 0; ch < c; ++ch) {
    const double v = sq[size_t(ch)] / m;
    mean[ch] = S(sum[size_t(ch)]);
    var[ch] = S(v);
    invstd[ch] = S(1.0 / std::sqrt(v + eps));
  }
}

// out[o, ch, i] = f(a[o, ch, i], b[o, ch, i], ch), f computing in acc_t<T>
// from per-channel coefficients computed once (b may be null: f gets 0).
// Rows of the same channel run as one loop; when inner == 1 (NHWC) a row
// is one sample's channels, so the loop stays contiguous either way.
template <class T, class F>
void per_channel_map(int64_t outer, int64_t c, int64_t inner, const T *a, const T *b, T *out, F f) {
  using A = acc_t<T>;
  using R = std::conditional_t<cpu::is_half_v<T>, float, T>;
  // Elements [base, base + n), element i of channel chan(i).
  auto row = [&](int64_t base, int64_t n, auto chan) {
    auto loop = [&](const R *ra, const R *rb, R *ro, int64_t len, int64_t first) {
      cpu::run_kernel([&]() MIXP_KERNEL_BODY {
        if (rb)
          for (int64_t i = 0; i < len; ++i) ro[i] = store<R>(f(load<R>(ra[i]), load<R>(rb[i]), chan(first + i)));
        else
          for (int64_t i = 0; i < len; ++i) ro[i] = store<R>(f(load<R>(ra[i]), A(0), chan(first + i)));
      });
    };
    if constexpr (cpu::is_half_v<T>) {  // float tiles (half_convert.hpp)
      alignas(64) float ta[cpu::kHalfTile], tb[cpu::kHalfTile];
      for (int64_t p = 0; p < n; p += cpu::kHalfTile) {
        const int64_t len = std::min(cpu::kHalfTile, n - p);
        cpu::widen(a + base + p, ta, len);
        if (b) cpu::widen(b + base + p, tb, len);
        loop(ta, b ? tb : nullptr, ta, len, p);
        cpu::narrow(ta, out + base + p, len);
      }
    } else {
      loop(a + base, b ? b + base : nullptr, out + base, n, 0);
    }
  };
  if (inner == 1 && c < cpu::kHalfTile) {
    // NHWC rows of few channels: a tile of whole rows per kernel call (for
    // f16 one widening and one rounding per tile, not per row of c
    // elements; bf16 converts with a shift and a rounding in the loop).
    const int64_t per = cpu::kHalfTile / c, blocks = (outer + per - 1) / per;
    auto rows = [&](const auto *ra, const auto *rb, auto *ro, int64_t count) {
      using E = elem_t<decltype(ra)>;
      cpu::run_kernel([&]() MIXP_KERNEL_BODY {
        for (int64_t r = 0; r < count; ++r) {
          const E *__restrict pa = ra + r * c;
          E *__restrict po = ro + r * c;
          if (rb)
            for (int64_t ch = 0; ch < c; ++ch) po[ch] = store<E>(f(load<E>(pa[ch]), load<E>(rb[r * c + ch]), ch));
          else
            for (int64_t ch = 0; ch < c; ++ch) po[ch] = store<E>(f(load<E>(pa[ch]), A(0), ch));
        }
      });
    };
#pragma omp parallel for schedule(static) if (outer * c > kChunk)
    for (int64_t bk = 0; bk < blocks; ++bk) {
      const int64_t o0 = bk * per, count = std::min(outer, o0 + per) - o0, base = o0 * c, n = count * c;
      if constexpr (std::is_same_v<T, f16>) {
        alignas(64) float ta[cpu::kHalfTile], tb[cpu::kHalfTile];
        cpu::widen(a + base, ta, n);
        if (b) cpu::widen(b + base, tb, n);
        rows(static_cast<const float *>(ta), b ? static_cast<const float *>(tb) : nullptr, ta, count);
        cpu::narrow(ta, out + base, n);
      } else {
        rows(a + base, b ? b + base : nullptr, out + base, count);
      }
    }
    return;
  }
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (outer * c > kChunk)
    for (int64_t o = 0; o < outer; ++o) row(o * c, c, [](int64_t i) { return i; });
    return;
  }
#pragma omp parallel for collapse(2) schedule(static) if (outer * c * inner > kChunk)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t ch = 0; ch < c; ++ch) row((o * c + ch) * inner, inner, [ch](int64_t) { return ch; });
}

template <class T>
void bn_forward(const View &xv, int64_t outer, int64_t c, int64_t inner, const View &mv,
                const View &iv, const View *wv, const View *bv, const View &yv) {
  using A = acc_t<T>;
  using S = stat_t<T>;
  const T *x = static_cast<const T *>(xv.data);
  T *y = static_cast<T *>(yv.data);
  const S *mean = stat_ptr<S>(mv), *invstd = stat_ptr<S>(iv);
  std::vector<A> mu(static_cast<size_t>(c)), alpha(static_cast<size_t>(c)), beta(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) {
    mu[size_t(ch)] = A(mean[ch]);
    alpha[size_t(ch)] = A(invstd[ch]) * stat_param<S>(wv, ch, S(1));
    beta[size_t(ch)] = stat_param<S>(bv, ch, S(0));
  }
  per_channel_map<T>(outer, c, inner, x, nullptr, y, [&](A xv, A, int64_t ch) {
    return (xv - mu[size_t(ch)]) * alpha[size_t(ch)] + beta[size_t(ch)];
  });
}

template <class T>
void bn_backward(const View &xv, const View &gyv, int64_t outer, int64_t c, int64_t inner,
                 const View &mv, const View &iv, const View *wv, bool batch_stats,
                 const View *gxv, const View *gwv, const View *gbv) {
  using A = acc_t<T>;
  using S = stat_t<T>;
  const T *x = static_cast<const T *>(xv.data);
  const T *gy = static_cast<const T *>(gyv.data);
  const S *mean = stat_ptr<S>(mv), *invstd = stat_ptr<S>(iv);
  const bool need_sums = gwv || gbv || (gxv && batch_stats);
  // sums[2ch] = sum gy, sums[2ch+1] = sum gy * (x - mean)
  std::vector<double> sums(size_t(2 * c), 0.0);
  if (need_sums && inner == 1)
    bn_backward_sums_nhwc(x, gy, outer, c, mean, sums.data());
  else if (need_sums)
    channel_sums<2>(outer, c, inner, [&](int64_t o, int64_t ch, double *acc) {
      const int64_t base = (o * c + ch) * inner;
      const double mu = double(mean[ch]);
      with_row(gy + base, inner, 0, [&](const auto *gr) {
        with_row(x + base, inner, 1, [&](const auto *xr) {
          using G = elem_t<decltype(gr)>;
          using X = elem_t<decltype(xr)>;
          double s[2] = {0.0, 0.0};
          row_sums<2>(inner, [&](int64_t i, double *v) {
            const double g = double(load<G>(gr[i]));
            v[0] = g;
            v[1] = g * (double(load<X>(xr[i])) - mu);
          }, s);
          acc[0] += s[0];
          acc[1] += s[1];
        });
      });
    }, sums.data());
  for (int64_t ch = 0; ch < c; ++ch) {
    if (gwv) static_cast<double *>(gwv->data)[ch] = sums[size_t(2 * ch + 1)] * double(invstd[ch]);
    if (gbv) static_cast<double *>(gbv->data)[ch] = sums[size_t(2 * ch)];
  }
  if (!gxv) return;
  T *gx = static_cast<T *>(gxv->data);
  const double m = double(outer * inner);
  // gx = w * invstd * (gy - mean(gy) - xhat * mean(gy * xhat)).
  std::vector<A> scale(static_cast<size_t>(c)), mu(static_cast<size_t>(c)),
      mg(static_cast<size_t>(c)), k(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) {
    const double is = double(invstd[ch]);
    const size_t u = size_t(ch);
    scale[u] = A(is * double(stat_param<S>(wv, ch, S(1))));
    mu[u] = A(mean[ch]);
    mg[u] = batch_stats ? A(sums[2 * u] / m) : A(0);
    k[u] = batch_stats ? A(sums[2 * u + 1] * is * is / m) : A(0);
  }
  per_channel_map<T>(outer, c, inner, gy, x, gx, [&](A g, A xv, int64_t ch) {
    const size_t u = size_t(ch);
    return scale[u] * (g - mg[u] - (xv - mu[u]) * k[u]);
  });
}

void check_bn_params(const char *kernel, const View &stat, std::initializer_list<const View *> params,
                     std::initializer_list<const View *> grads = {}) {
  if (!batch_norm_params_ok(stat, params, grads))
    fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": weight/bias not in the statistics' dtype or gw/gb not F64");
}

}  // namespace

void CpuBackend::batch_norm_stats(const View &x, int64_t outer, int64_t c, int64_t inner,
                                  double eps, const View &mean, const View &var,
                                  const View &invstd) {
  check_stats("batch_norm_stats", x, mean);
  dispatch_float(x.dtype, [&](auto tag) {
    bn_stats<decltype(tag)>(x, outer, c, inner, eps, mean, var, invstd);
  });
}

void CpuBackend::batch_norm_forward(const View &x, int64_t outer, int64_t c, int64_t inner,
                                    const View &mean, const View &invstd, const View *weight,
                                    const View *bias, const View &y) {
  check_stats("batch_norm_forward", x, mean);
  check_bn_params("batch_norm_forward", mean, {weight, bias});
  dispatch_float(x.dtype, [&](auto tag) {
    bn_forward<decltype(tag)>(x, outer, c, inner, mean, invstd, weight, bias, y);
  });
}

void CpuBackend::batch_norm_backward(const View &x, const View &gy, int64_t outer, int64_t c,
                                     int64_t inner, const View &mean, const View &invstd,
                                     const View *weight, bool batch_stats, const View *gx,
                                     const View *gw, const View *gb) {
  check_stats("batch_norm_backward", x, mean);
  check_bn_params("batch_norm_backward", mean, {weight}, {gw, gb});
  dispatch_float(x.dtype, [&](auto tag) {
    bn_backward<decltype(tag)>(x, gy, outer, c, inner, mean, invstd, weight, batch_stats, gx,
                               gw, gb);
  });
}

}  // namespace mixp
