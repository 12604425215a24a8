// CPU group_norm and layer_norm (a group_norm of one group over [n, c]):
// statistics per sample and group, forward and backward. The sums follow
// norm_reduce.hpp (double, fixed order).
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/lane_sums.hpp"
#include "cpu/norm_reduce.hpp"
#include "cpu/simd.hpp"

namespace mixp {
namespace {

using namespace cpu::norm;

// ---- group_norm / layer_norm -------------------------------------------------------

// The affine weight or bias widened once per call (dflt where absent), so
// the row loops read a plain array.
template <class T>
std::vector<acc_t<T>> widened_param(const View *v, int64_t c, acc_t<T> dflt) {
  std::vector<acc_t<T>> out(size_t(c), dflt);
  if (v)
    for (int64_t ch = 0; ch < c; ++ch) out[size_t(ch)] = load<T>(static_cast<const T *>(v->data)[ch]);
  return out;
}

template <class T>
void gn_forward(const GroupNormGeom &g, const View &xv, const View *wv, const View *bv,
                double eps, const View &yv, const View &mv, const View &rv) {
  using A = acc_t<T>;
  using S = stat_t<T>;
  const T *x = static_cast<const T *>(xv.data);
  T *y = static_cast<T *>(yv.data);
  S *mean = stat_ptr<S>(mv), *rstd = stat_ptr<S>(rv);
  const int64_t cpg = g.c / g.groups, len = cpg * g.s, rows = g.n * g.groups, inner = g.s;
  const std::vector<A> wa = widened_param<T>(wv, g.c, A(1)), ba = widened_param<T>(bv, g.c, A(0));
#pragma omp parallel for schedule(static) if (rows * len > kChunk && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
      const T *__restrict xr = x + r * len;
      T *__restrict yr = y + r * len;
      double s;
      cpu::lane_sums<1>(len, [&](int64_t i, double *v) { v[0] = double(load<T>(xr[i])); }, &s);
      const double mu = len > 0 ? s / double(len) : 0.0;
      double sq;
      cpu::lane_sums<1>(len, [&](int64_t i, double *v) {
        const double d = double(load<T>(xr[i])) - mu;
        v[0] = d * d;
      }, &sq);
      const double is = 1.0 / std::sqrt((len > 0 ? sq / double(len) : 0.0) + eps);
      mean[r] = S(mu);
      rstd[r] = S(is);
      const A amu = A(mean[r]), ais = A(rstd[r]);
      const A *w = wa.data() + (r % g.groups) * cpg, *b = ba.data() + (r % g.groups) * cpg;
      if (inner == 1) {  // layer_norm: one channel per element
        for (int64_t i = 0; i < len; ++i) yr[i] = store<T>((load<T>(xr[i]) - amu) * (w[i] * ais) + b[i]);
        return;
      }
      for (int64_t cc = 0; cc < cpg; ++cc) {
        const A wc = w[cc] * ais, bc = b[cc];
        const int64_t base = cc * inner;
        for (int64_t i = 0; i < inner; ++i) yr[base + i] = store<T>((load<T>(xr[base + i]) - amu) * wc + bc);
      }
    });
  }
}

// layer_norm's weight and bias gradients: per channel (column of [n, c]),
// sum gy * xhat and sum gy over the rows, in row blocks of the size
// channel_sums would use, added in block order.
template <class T>
void ln_param_grads(const GroupNormGeom &g, const T *x, const T *gy, const stat_t<T> *mean,
                    const stat_t<T> *rstd, double *sum_gx, double *sum_g) {
  const int64_t c = g.c;
  const ChannelPlan plan(g.n, c, 1);
  std::vector<double> part(size_t(2 * plan.nchunks * c), 0.0);
#pragma omp parallel for schedule(static) if (plan.nchunks > 1)
  for (int64_t k = 0; k < plan.nchunks; ++k) {
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
      double *__restrict pgx = part.data() + 2 * k * c;
      double *__restrict pg = pgx + c;
      const int64_t o1 = std::min(g.n, (k + 1) * plan.rows_per);
      for (int64_t o = k * plan.rows_per; o < o1; ++o) {
        const double mu = double(mean[o]), is = double(rstd[o]);
        const T *xr = x + o * c, *gr = gy + o * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          const double gv = double(load<T>(gr[ch]));
          pgx[ch] += gv * (double(load<T>(xr[ch])) - mu) * is;
          pg[ch] += gv;
        }
      }
    });
  }
  for (int64_t ch = 0; ch < c; ++ch) {
    double a = 0.0, b = 0.0;
    for (int64_t k = 0; k < plan.nchunks; ++k) {
      a += part[size_t(2 * k * c + ch)];
      b += part[size_t((2 * k + 1) * c + ch)];
    }
    sum_gx[ch] = a;
    sum_g[ch] = b;
  }
}

// gx, one (sample, group) row per task.
template <class T, class S>
void gn_input_grad(const GroupNormGeom &g, const T *x, const T *gy, const S *mean, const S *rstd,
                   const View *wv, const View &gxv) {
  using A = acc_t<T>;
  const int64_t cpg = g.c / g.groups, len = cpg * g.s, rows = g.n * g.groups, inner = g.s;
  T *gx = static_cast<T *>(gxv.data);
  const std::vector<A> wa = widened_param<T>(wv, g.c, A(1));
#pragma omp parallel for schedule(static) if (rows * len > kChunk && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
      const A *w = wa.data() + (r % g.groups) * cpg;
      const T *__restrict xr = x + r * len, *__restrict gr = gy + r * len;
      T *__restrict gxr = gx + r * len;
      const double mu = double(mean[r]), is = double(rstd[r]);
      // With dxhat = gy * w: gx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
      // Two copies of each loop: layer_norm's (one channel per element)
      // must not divide per element to find the channel.
      double s12[2];
      if (inner == 1) {
        cpu::lane_sums<2>(len, [&](int64_t i, double *v) {
          const double d = double(load<T>(gr[i])) * double(w[i]);
          v[0] = d;
          v[1] = d * (double(load<T>(xr[i])) - mu) * is;
        }, s12);
      } else {
        s12[0] = s12[1] = 0.0;
        for (int64_t cc = 0; cc < cpg; ++cc) {
          const double wc = double(w[cc]);
          const T *xc = xr + cc * inner, *gc = gr + cc * inner;
          double part[2];
          cpu::lane_sums<2>(inner, [&](int64_t i, double *v) {
            const double d = double(load<T>(gc[i])) * wc;
            v[0] = d;
            v[1] = d * (double(load<T>(xc[i])) - mu) * is;
          }, part);
          s12[0] += part[0];
          s12[1] += part[1];
        }
      }
      const A m1 = A(s12[0] / double(len)), m2 = A(s12[1] / double(len)), amu = A(mu), ais = A(is);
      if (inner == 1) {
        for (int64_t i = 0; i < len; ++i) {
          const A xhat = (load<T>(xr[i]) - amu) * ais;
          gxr[i] = store<T>(ais * (load<T>(gr[i]) * w[i] - m1 - xhat * m2));
        }
        return;
      }
      for (int64_t cc = 0; cc < cpg; ++cc)
        for (int64_t i = cc * inner; i < (cc + 1) * inner; ++i) {
          const A xhat = (load<T>(xr[i]) - amu) * ais;
          gxr[i] = store<T>(ais * (load<T>(gr[i]) * w[cc] - m1 - xhat * m2));
        }
    });
  }
}

// gw and gb (either may be null): sums[2ch] = sum gy * xhat, sums[2ch+1] =
// sum gy, over samples and positions, accumulated in double.
template <class T, class S>
void gn_param_grads(const GroupNormGeom &g, const T *x, const T *gy, const S *mean, const S *rstd,
                    const View *gwv, const View *gbv) {
  const int64_t cpg = g.c / g.groups, inner = g.s;
  std::vector<double> sums(size_t(2 * g.c), 0.0);
  if (g.groups == 1 && inner == 1) {
    std::vector<double> sgx(size_t(g.c)), sg(size_t(g.c));
    ln_param_grads<T>(g, x, gy, mean, rstd, sgx.data(), sg.data());
    for (int64_t ch = 0; ch < g.c; ++ch) sums[size_t(2 * ch)] = sgx[size_t(ch)], sums[size_t(2 * ch + 1)] = sg[size_t(ch)];
  } else {
    std::vector<int64_t> group_of(static_cast<size_t>(g.c));
    for (int64_t ch = 0; ch < g.c; ++ch) group_of[size_t(ch)] = ch / cpg;
    channel_sums<2>(g.n, g.c, g.s, [&](int64_t o, int64_t ch, double *acc) {
      const int64_t r = o * g.groups + group_of[size_t(ch)];
      const double mu = double(mean[r]), is = double(rstd[r]);
      const int64_t base = (o * g.c + ch) * g.s;
      double sgx = 0.0, sg = 0.0;
      for (int64_t i = 0; i < g.s; ++i) {
        const double gv = double(load<T>(gy[base + i]));
        sgx += gv * (double(load<T>(x[base + i])) - mu) * is;
        sg += gv;
      }
      acc[0] += sgx;
      acc[1] += sg;
    }, sums.data());
  }
  for (int64_t ch = 0; ch < g.c; ++ch) {
    if (gwv) static_cast<T *>(gwv->data)[ch] = store_double<T>(sums[size_t(2 * ch)]);
    if (gbv) static_cast<T *>(gbv->data)[ch] = store_double<T>(sums[size_t(2 * ch + 1)]);
  }
}

template <class T>
void gn_backward(const GroupNormGeom &g, const View &xv, const View &gyv, const View &mv,
                 const View &rv, const View *wv, const View *gxv, const View *gwv,
                 const View *gbv) {
  using S = stat_t<T>;
  const T *x = static_cast<const T *>(xv.data);
  const T *gy = static_cast<const T *>(gyv.data);
  const S *mean = stat_ptr<S>(mv), *rstd = stat_ptr<S>(rv);
  if (gxv) gn_input_grad<T>(g, x, gy, mean, rstd, wv, *gxv);
  if (gwv || gbv) gn_param_grads<T>(g, x, gy, mean, rstd, gwv, gbv);
}

}  // namespace

void CpuBackend::group_norm_forward(const GroupNormGeom &g, const View &x, const View *weight,
                                    const View *bias, double eps, const View &y,
                                    const View &mean, const View &rstd) {
  check_stats("group_norm_forward", x, mean);
  if (g.groups < 1 || g.c % g.groups != 0)
    fail(MIXP_ERR_INTERNAL, "cpu group_norm_forward: ", g.c, " channels in ", g.groups, " groups");
  dispatch_float(x.dtype, [&](auto tag) {
    gn_forward<decltype(tag)>(g, x, weight, bias, eps, y, mean, rstd);
  });
}

void CpuBackend::group_norm_backward(const GroupNormGeom &g, const View &x, const View &gy,
                                     const View &mean, const View &rstd, const View *weight,
                                     const View *gx, const View *gw, const View *gb) {
  check_stats("group_norm_backward", x, mean);
  if (g.groups < 1 || g.c % g.groups != 0)
    fail(MIXP_ERR_INTERNAL, "cpu group_norm_backward: ", g.c, " channels in ", g.groups, " groups");
  dispatch_float(x.dtype, [&](auto tag) {
    gn_backward<decltype(tag)>(g, x, gy, mean, rstd, weight, gx, gw, gb);
  });
}

}  // namespace mixp
