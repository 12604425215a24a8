// CUDA normalisation kernels: batch_norm (per-channel statistics over
// [outer, c, inner]) and group_norm/layer_norm (per (sample, group) rows of
// [n, c, s]), forward and backward, following src/cpu/batch_norm.cpp (and
// batch_norm_nhwc.cpp) and src/cpu/group_norm.cpp.
//
// Statistics accumulate in double (the backend contract). Per-channel sums
// are split into (channel, slab of outer rows) blocks whose partial sums are
// added in slab order by a second kernel: the split depends on the shape
// alone, so results are reproducible run to run. Variances take two passes
// (mean first), as on the CPU.
#include <algorithm>
#include <initializer_list>
#include <type_traits>

#include "common.cuh"

namespace mixp::cuda {
namespace {

template <class T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

constexpr int64_t kSlab = 16384;  // elements per partial-sum block

// What a per-channel pass sums over each (o, ch, i) element.
enum class ChanSum : int {
  X,          // [x]
  SqDev,      // [(x - dmean[ch])^2]            dmean: double per channel
  GyDev,      // [gy, gy * (x - mean[ch])]      mean: stat per channel
  GyXhatGrp,  // [gy * (x - mean[r]) * rstd[r], gy]  r = o * groups + ch / cpg
};

struct SlabPlan {
  int64_t rows_per = 1, nslabs = 1;
  SlabPlan(int64_t outer, int64_t inner) {
    rows_per = std::max<int64_t>(1, kSlab / std::max<int64_t>(1, inner));
    // gridDim.y is at most 65535.
    rows_per = std::max(rows_per, (outer + 65534) / 65535);
    nslabs = std::max<int64_t>(1, (outer + rows_per - 1) / rows_per);
  }
};

// Adds what `mode` sums over element e = (o * c + ch) * inner + i.
template <class T>
__device__ __forceinline__ void chan_accumulate(ChanSum mode, const T *x, const T *gy, int64_t e, int64_t o,
                                                int64_t ch, const double *dmean, const stat_t<T> *mean,
                                                const stat_t<T> *rstd, int64_t groups, int64_t cpg,
                                                double &s0, double &s1) {
  const double xv = double(ld(x[e]));
  switch (mode) {
    case ChanSum::X: s0 += xv; break;
    case ChanSum::SqDev: {
      const double d = xv - dmean[ch];
      s0 += d * d;
      break;
    }
    case ChanSum::GyDev: {
      const double g = double(ld(gy[e]));
      s0 += g;
      s1 += g * (xv - double(mean[ch]));
      break;
    }
    case ChanSum::GyXhatGrp: {
      const int64_t r = o * groups + ch / cpg;
      const double g = double(ld(gy[e]));
      s0 += g * (xv - double(mean[r])) * double(rstd[r]);
      s1 += g;
      break;
    }
  }
}

// partial[(slab * c + ch) * 2 + j]; grid (c, nslabs): a block per channel.
template <class T>
__global__ void chan_partial_kernel(ChanSum mode, const T *x, const T *gy, int64_t outer, int64_t c, int64_t inner,
                                    int64_t rows_per, const double *dmean, const stat_t<T> *mean,
                                    const stat_t<T> *rstd, int64_t groups, int64_t cpg, double *partial) {
  const int64_t ch = blockIdx.x, slab = blockIdx.y;
  const int64_t o0 = slab * rows_per, o1 = min(outer, o0 + rows_per);
  const int64_t count = (o1 - o0) * inner;
  double s0 = 0.0, s1 = 0.0;
  for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
    const int64_t o = o0 + k / inner, i = k % inner;
    chan_accumulate(mode, x, gy, (o * c + ch) * inner + i, o, ch, dmean, mean, rstd, groups, cpg, s0, s1);
  }
  s0 = block_sum(s0);
  s1 = block_sum(s1);
  if (threadIdx.x == 0) {
    partial[(slab * c + ch) * 2] = s0;
    partial[(slab * c + ch) * 2 + 1] = s1;
  }
}

// The same partials when inner == 1 (layer norm's weight and bias
// gradients, 2-D batch norm): a block per block of channels and band of
// rows, a thread per channel, so a warp reads consecutive channels of a row
// (a block per channel would read them 'c' elements apart). Each thread
// walks its band's rows one dependent load after another, so the bands are
// short and many: with 128-row bands GPT-2's layer norm (8192 x 768) ran
// 192 blocks on a 132-SM H200 and its backward took 166 us; 32-row bands
// give 768. Bands widen only to keep the partials under kColPartials
// channel-bands (16 MiB) and the grid's y under 65535.
constexpr int64_t kColRows = 32;
constexpr int64_t kColPartials = int64_t(1) << 20;

int64_t col_rows_per(int64_t outer, int64_t c) {
  const int64_t by_grid = (outer + 65534) / 65535;
  const int64_t by_scratch = (outer * std::max<int64_t>(c, 1) + kColPartials - 1) / kColPartials;
  return std::max({kColRows, by_grid, by_scratch});
}

template <class T>
__global__ void chan_col_partial_kernel(ChanSum mode, const T *x, const T *gy, int64_t outer, int64_t c,
                                        int64_t rows_per, const double *dmean, const stat_t<T> *mean,
                                        const stat_t<T> *rstd, int64_t groups, int64_t cpg, double *partial) {
  const int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, slab = blockIdx.y;
  if (ch >= c) return;
  const int64_t o1 = min(outer, (slab + 1) * rows_per);
  double s0 = 0.0, s1 = 0.0;
  for (int64_t o = slab * rows_per; o < o1; ++o)
    chan_accumulate(mode, x, gy, o * c + ch, o, ch, dmean, mean, rstd, groups, cpg, s0, s1);
  partial[(slab * c + ch) * 2] = s0;
  partial[(slab * c + ch) * 2 + 1] = s1;
}

// sums[ch * 2 + j] = the slabs' partials added in slab order.
__global__ void chan_finish_kernel(const double *partial, int64_t nslabs, int64_t c, double *sums) {
  for (int64_t q = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; q < 2 * c; q += int64_t(gridDim.x) * blockDim.x) {
    double s = 0.0;
    for (int64_t k = 0; k < nslabs; ++k) s += partial[k * 2 * c + q];
    sums[q] = s;
  }
}

// Per-channel sums into `sums` (2 doubles per channel, device scratch).
template <class T>
void channel_sums(CudaBackend &be, ChanSum mode, const T *x, const T *gy, int64_t outer, int64_t c,
                  int64_t inner, const double *dmean, const stat_t<T> *mean, const stat_t<T> *rstd,
                  int64_t groups, int64_t cpg, double *sums) {
  const cudaStream_t st = be.stream();
  if (inner == 1) {
    const int64_t rows_per = col_rows_per(outer, c);
    const int64_t nslabs = std::max<int64_t>(1, (outer + rows_per - 1) / rows_per);
    Scratch partial(be, size_t(nslabs * c * 2) * sizeof(double));
    const dim3 grid(unsigned((c + kThreads - 1) / kThreads), unsigned(nslabs));
    chan_col_partial_kernel<T><<<grid, kThreads, 0, st>>>(
        mode, x, gy, outer, c, rows_per, dmean, mean, rstd, groups, cpg, partial.as<double>());
    MIXP_CUDA_LAUNCHED();
    chan_finish_kernel<<<grid_for(2 * c), kThreads, 0, st>>>(partial.as<double>(), nslabs, c, sums);
    MIXP_CUDA_LAUNCHED();
    return;
  }
  const SlabPlan p(outer, inner);
  if (c > kMaxRowBlocks)
    fail(MIXP_ERR_UNSUPPORTED, "cuda batch/group norm: ", c, " channels exceed one launch's ", kMaxRowBlocks,
         " blocks");
  Scratch partial(be, size_t(p.nslabs * c * 2) * sizeof(double));
  chan_partial_kernel<T><<<dim3(unsigned(c), unsigned(p.nslabs)), kThreads, 0, st>>>(
      mode, x, gy, outer, c, inner, p.rows_per, dmean, mean, rstd, groups, cpg, partial.as<double>());
  MIXP_CUDA_LAUNCHED();
  chan_finish_kernel<<<grid_for(2 * c), kThreads, 0, st>>>(partial.as<double>(), p.nslabs, c, sums);
  MIXP_CUDA_LAUNCHED();
}

template <class T>
__device__ __forceinline__ acc_t<T> param_or(const T *p, int64_t i, acc_t<T> dflt) {
  return p ? ld(p[i]) : dflt;
}

// batch_norm's weight and bias are stat Views (backend.hpp).
template <class S>
__device__ __forceinline__ S stat_param_or(const S *p, int64_t i, S dflt) {
  return p ? p[i] : dflt;
}

// ---- batch_norm -------------------------------------------------------------------

__global__ void bn_mean_kernel(double *sums, int64_t c, double m) {
  for (int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; ch < c; ch += int64_t(gridDim.x) * blockDim.x)
    sums[ch * 2 + 1] = sums[ch * 2] / m;  // slot 1 holds the exact (double) mean
}

template <class S>
__global__ void bn_stats_finish_kernel(const double *mean_sums, const double *sq_sums, int64_t c, double m,
                                       double eps, S *mean, S *var, S *invstd) {
  for (int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; ch < c; ch += int64_t(gridDim.x) * blockDim.x) {
    const double v = sq_sums[ch * 2] / m;
    mean[ch] = S(mean_sums[ch * 2 + 1]);
    var[ch] = S(v);
    invstd[ch] = S(1.0 / sqrt(v + eps));
  }
}

template <class T>
__global__ void bn_forward_kernel(const T *x, int64_t n, int64_t c, int64_t inner, const stat_t<T> *mean,
                                  const stat_t<T> *invstd, const stat_t<T> *w, const stat_t<T> *b, T *y) {
  using A = acc_t<T>;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = (e / inner) % c;
    const A alpha = A(invstd[ch]) * A(stat_param_or(w, ch, stat_t<T>(1)));
    y[e] = st<T>((ld(x[e]) - A(mean[ch])) * alpha + A(stat_param_or(b, ch, stat_t<T>(0))));
  }
}

// Per-channel backward coefficients: coef[ch*4 + 0..3] = scale, mu, mg, k,
// and the weight/bias gradients.
template <class T>
__global__ void bn_coef_kernel(const double *sums, int64_t c, double m, const stat_t<T> *mean,
                               const stat_t<T> *invstd, const stat_t<T> *w, bool batch_stats, acc_t<T> *coef,
                               double *gw, double *gb) {
  using A = acc_t<T>;
  for (int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; ch < c; ch += int64_t(gridDim.x) * blockDim.x) {
    const double is = double(invstd[ch]);
    if (gw) gw[ch] = sums[2 * ch + 1] * is;
    if (gb) gb[ch] = sums[2 * ch];
    if (coef) {
      coef[ch * 4] = A(is * double(stat_param_or(w, ch, stat_t<T>(1))));
      coef[ch * 4 + 1] = A(mean[ch]);
      coef[ch * 4 + 2] = batch_stats ? A(sums[2 * ch] / m) : A(0);
      coef[ch * 4 + 3] = batch_stats ? A(sums[2 * ch + 1] * is * is / m) : A(0);
    }
  }
}

// gx = scale * (gy - mg - (x - mu) * k)
template <class T>
__global__ void bn_gx_kernel(const T *x, const T *gy, int64_t n, int64_t c, int64_t inner, const acc_t<T> *coef,
                             T *gx) {
  using A = acc_t<T>;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = (e / inner) % c;
    const A *k = coef + ch * 4;
    gx[e] = st<T>(k[0] * (ld(gy[e]) - k[2] - (ld(x[e]) - k[1]) * k[3]));
  }
}

// ---- group_norm -------------------------------------------------------------------

// One block per (sample, group) row of len = cpg * s contiguous elements.
template <class T>
__global__ void gn_forward_kernel(const T *x, int64_t groups, int64_t cpg, int64_t s, double eps, const T *w,
                                  const T *b, T *y, stat_t<T> *mean, stat_t<T> *rstd) {
  using A = acc_t<T>;
  using S = stat_t<T>;
  const int64_t r = blockIdx.x, len = cpg * s;
  const T *xr = x + r * len;
  T *yr = y + r * len;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) sum += double(ld(xr[i]));
  sum = block_sum(sum);
  const double mu = len > 0 ? sum / double(len) : 0.0;
  double sq = 0.0;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    const double d = double(ld(xr[i])) - mu;
    sq += d * d;
  }
  sq = block_sum(sq);
  const double is = 1.0 / sqrt((len > 0 ? sq / double(len) : 0.0) + eps);
  const S smu = S(mu), sis = S(is);
  if (threadIdx.x == 0) {
    mean[r] = smu;
    rstd[r] = sis;
  }
  const A amu = A(smu), ais = A(sis);
  const int64_t ch0 = (r % groups) * cpg;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    const int64_t ch = ch0 + i / s;
    const A wv = param_or(w, ch, A(1)) * ais;
    yr[i] = st<T>((ld(xr[i]) - amu) * wv + param_or(b, ch, A(0)));
  }
}

// gx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = gy * w.
template <class T>
__global__ void gn_gx_kernel(const T *x, const T *gy, int64_t groups, int64_t cpg, int64_t s, const stat_t<T> *mean,
                             const stat_t<T> *rstd, const T *w, T *gx) {
  using A = acc_t<T>;
  const int64_t r = blockIdx.x, len = cpg * s;
  const int64_t ch0 = (r % groups) * cpg;
  const double mu = double(mean[r]), is = double(rstd[r]);
  double s1 = 0.0, s2 = 0.0;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    const double d = double(ld(gy[r * len + i])) * double(param_or(w, ch0 + i / s, A(1)));
    s1 += d;
    s2 += d * (double(ld(x[r * len + i])) - mu) * is;
  }
  s1 = block_sum(s1);
  s2 = block_sum(s2);
  const A m1 = A(s1 / double(len)), m2 = A(s2 / double(len)), amu = A(mu), ais = A(is);
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    const int64_t e = r * len + i;
    const A xhat = (ld(x[e]) - amu) * ais;
    gx[e] = st<T>(ais * (ld(gy[e]) * param_or(w, ch0 + i / s, A(1)) - m1 - xhat * m2));
  }
}

template <class T>
__global__ void gn_params_kernel(const double *sums, int64_t c, T *gw, T *gb) {
  for (int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; ch < c; ch += int64_t(gridDim.x) * blockDim.x) {
    if (gw) gw[ch] = st_d<T>(sums[2 * ch]);
    if (gb) gb[ch] = st_d<T>(sums[2 * ch + 1]);
  }
}

void check_stats(const char *kernel, const View &data, const View &stat) {
  const DType want = data.dtype == MIXP_F64 ? MIXP_F64 : MIXP_F32;
  if (stat.dtype != want)
    fail(MIXP_ERR_INTERNAL, "cuda ", kernel, ": data dtype ", int(data.dtype), " with statistics dtype ",
         int(stat.dtype));
}

void check_bn_params(const char *kernel, const View &stat, std::initializer_list<const View *> params,
                     std::initializer_list<const View *> grads = {}) {
  if (!batch_norm_params_ok(stat, params, grads))
    fail(MIXP_ERR_INTERNAL, "cuda ", kernel, ": weight/bias not in the statistics' dtype or gw/gb not F64");
}

template <class T> const T *opt(const View *v) { return v ? static_cast<const T *>(v->data) : nullptr; }
template <class T> T *opt_out(const View *v) { return v ? static_cast<T *>(v->data) : nullptr; }

// Row threads for a block-per-row kernel.
int rows_threads(int64_t len) { return len <= 256 ? 64 : len <= 2048 ? 128 : kThreads; }

}  // namespace

void CudaBackend::batch_norm_stats(const View &x, int64_t outer, int64_t c, int64_t inner, double eps,
                                   const View &mean, const View &var, const View &invstd) {
  check_stats("batch_norm_stats", x, mean);
  if (c == 0) return;
  dispatch_float_dt(x.dtype, "batch_norm_stats", [&](auto tag) {
    using T = decltype(tag);
    using S = stat_t<T>;
    const T *px = static_cast<const T *>(x.data);
    const double m = double(outer * inner);
    Scratch sums(*this, size_t(4 * c) * sizeof(double));
    double *msum = sums.as<double>(), *sqsum = msum + 2 * c;
    channel_sums<T>(*this, ChanSum::X, px, nullptr, outer, c, inner, nullptr, nullptr, nullptr, 1, 1, msum);
    bn_mean_kernel<<<grid_for(c), kThreads, 0, stream()>>>(msum, c, m);
    MIXP_CUDA_LAUNCHED();
    // The exact means (slot 1 of each pair) centre the second pass.
    Scratch dmean(*this, size_t(c) * sizeof(double));
    MIXP_CUDA_CHECK(cudaMemcpy2DAsync(dmean.p, sizeof(double), msum + 1, 2 * sizeof(double), sizeof(double),
                                      size_t(c), cudaMemcpyDeviceToDevice, stream()));
    channel_sums<T>(*this, ChanSum::SqDev, px, nullptr, outer, c, inner, dmean.as<double>(), nullptr, nullptr,
                    1, 1, sqsum);
    bn_stats_finish_kernel<S><<<grid_for(c), kThreads, 0, stream()>>>(
        msum, sqsum, c, m, eps, static_cast<S *>(mean.data), static_cast<S *>(var.data),
        static_cast<S *>(invstd.data));
    MIXP_CUDA_LAUNCHED();
  });
}

void CudaBackend::batch_norm_forward(const View &x, int64_t outer, int64_t c, int64_t inner, const View &mean,
                                     const View &invstd, const View *weight, const View *bias, const View &y) {
  check_stats("batch_norm_forward", x, mean);
  check_bn_params("batch_norm_forward", mean, {weight, bias});
  const int64_t n = outer * c * inner;
  if (n == 0) return;
  dispatch_float_dt(x.dtype, "batch_norm_forward", [&](auto tag) {
    using T = decltype(tag);
    using S = stat_t<T>;
    bn_forward_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(
        static_cast<const T *>(x.data), n, c, inner, static_cast<const S *>(mean.data),
        static_cast<const S *>(invstd.data), opt<S>(weight), opt<S>(bias), static_cast<T *>(y.data));
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::batch_norm_backward(const View &x, const View &gy, int64_t outer, int64_t c, int64_t inner,
                                      const View &mean, const View &invstd, const View *weight, bool batch_stats,
                                      const View *gx, const View *gw, const View *gb) {
  check_stats("batch_norm_backward", x, mean);
  check_bn_params("batch_norm_backward", mean, {weight}, {gw, gb});
  if (c == 0) return;
  dispatch_float_dt(x.dtype, "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    using S = stat_t<T>;
    using A = acc_t<T>;
    const T *px = static_cast<const T *>(x.data), *pg = static_cast<const T *>(gy.data);
    const S *pm = static_cast<const S *>(mean.data), *pi = static_cast<const S *>(invstd.data);
    const bool need_sums = gw || gb || (gx && batch_stats);
    Scratch sums(*this, size_t(2 * c) * sizeof(double));
    if (need_sums)
      channel_sums<T>(*this, ChanSum::GyDev, px, pg, outer, c, inner, nullptr, pm, nullptr, 1, 1,
                      sums.as<double>());
    else
      MIXP_CUDA_CHECK(cudaMemsetAsync(sums.p, 0, size_t(2 * c) * sizeof(double), stream()));
    Scratch coef(*this, gx ? size_t(4 * c) * sizeof(A) : 0);
    const double m = double(outer * inner);
    bn_coef_kernel<T><<<grid_for(c), kThreads, 0, stream()>>>(sums.as<double>(), c, m, pm, pi, opt<S>(weight),
                                                              batch_stats, coef.as<A>(), opt_out<double>(gw),
                                                              opt_out<double>(gb));
    MIXP_CUDA_LAUNCHED();
    const int64_t n = outer * c * inner;
    if (gx && n > 0) {
      bn_gx_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(px, pg, n, c, inner, coef.as<A>(),
                                                              static_cast<T *>(gx->data));
      MIXP_CUDA_LAUNCHED();
    }
  });
}

void CudaBackend::group_norm_forward(const GroupNormGeom &g, const View &x, const View *weight, const View *bias,
                                     double eps, const View &y, const View &mean, const View &rstd) {
  check_stats("group_norm_forward", x, mean);
  if (g.groups < 1 || g.c % g.groups != 0)
    fail(MIXP_ERR_INTERNAL, "cuda group_norm_forward: ", g.c, " channels in ", g.groups, " groups");
  const int64_t rows = g.n * g.groups, cpg = g.c / g.groups;
  if (rows == 0) return;
  if (g.groups == 1 && g.s == 1 && layer_norm_rows_forward(*this, rows, g.c, x, weight, bias, eps, y, mean, rstd))
    return;
  dispatch_float_dt(x.dtype, "group_norm_forward", [&](auto tag) {
    using T = decltype(tag);
    using S = stat_t<T>;
    const int64_t len = cpg * g.s;
    // Pieces start at a multiple of groups: the kernels find a row's group as r % groups.
    for_row_pieces(rows, [&](int64_t r0, unsigned nr) {
      gn_forward_kernel<T><<<nr, rows_threads(len), 0, stream()>>>(
          static_cast<const T *>(x.data) + r0 * len, g.groups, cpg, g.s, eps, opt<T>(weight), opt<T>(bias),
          static_cast<T *>(y.data) + r0 * len, static_cast<S *>(mean.data) + r0, static_cast<S *>(rstd.data) + r0);
    }, g.groups);
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::group_norm_backward(const GroupNormGeom &g, const View &x, const View &gy, const View &mean,
                                      const View &rstd, const View *weight, const View *gx, const View *gw,
                                      const View *gb) {
  check_stats("group_norm_backward", x, mean);
  if (g.groups < 1 || g.c % g.groups != 0)
    fail(MIXP_ERR_INTERNAL, "cuda group_norm_backward: ", g.c, " channels in ", g.groups, " groups");
  const int64_t rows = g.n * g.groups, cpg = g.c / g.groups;
  dispatch_float_dt(x.dtype, "group_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    using S = stat_t<T>;
    const T *px = static_cast<const T *>(x.data), *pg = static_cast<const T *>(gy.data);
    const S *pm = static_cast<const S *>(mean.data), *pr = static_cast<const S *>(rstd.data);
    const bool rows_kernel = gx && rows > 0 && g.groups == 1 && g.s == 1 &&
                             layer_norm_rows_gx(*this, rows, g.c, x, gy, mean, rstd, weight, *gx);
    if (gx && rows > 0 && !rows_kernel) {
      const int64_t len = cpg * g.s;
      for_row_pieces(rows, [&](int64_t r0, unsigned nr) {
        gn_gx_kernel<T><<<nr, rows_threads(len), 0, stream()>>>(px + r0 * len, pg + r0 * len, g.groups, cpg, g.s,
                                                                 pm + r0, pr + r0, opt<T>(weight),
                                                                 static_cast<T *>(gx->data) + r0 * len);
      }, g.groups);
      MIXP_CUDA_LAUNCHED();
    }
    if ((gw || gb) && g.c > 0) {
      Scratch sums(*this, size_t(2 * g.c) * sizeof(double));
      if (g.n > 0 && g.s > 0)
        channel_sums<T>(*this, ChanSum::GyXhatGrp, px, pg, g.n, g.c, g.s, nullptr, pm, pr, g.groups, cpg,
                        sums.as<double>());
      else
        MIXP_CUDA_CHECK(cudaMemsetAsync(sums.p, 0, size_t(2 * g.c) * sizeof(double), stream()));
      gn_params_kernel<T><<<grid_for(g.c), kThreads, 0, stream()>>>(sums.as<double>(), g.c, opt_out<T>(gw),
                                                                    opt_out<T>(gb));
      MIXP_CUDA_LAUNCHED();
    }
  });
}

}  // namespace mixp::cuda
