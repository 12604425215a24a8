// CPU normalisation kernels: batch_norm (statistics per channel over the
// batch and spatial positions) and group_norm/layer_norm (statistics per
// sample and group), forward and backward.
//
// Every reduction accumulates in double. Per-channel sums are formed in
// partial sums over chunks whose boundaries depend on the shape alone, then
// added in chunk order, so the result is bitwise the same for any thread
// count. Variances are centred sums (the mean first, or per row and then
// joined: bn_stats), which stay accurate when the mean is large against the
// spread.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/half_convert.hpp"
#include "backend/cpu/lane_sums.hpp"
#include "backend/cpu/simd.hpp"
#include "core/error.hpp"

namespace mixp {
namespace {

constexpr int64_t kChunk = 16384;  // elements per reduction work item
constexpr int64_t kChannelBlock = 64;
// Rows at least this long are summed in vector lanes and, for half types,
// staged in float (with_row); shorter ones are read in place, in order.
constexpr int64_t kStagedRow = 32;

// The fixed split of a [outer, c, inner] reduction into work items: blocks of
// outer rows times blocks of channels.
struct ChannelPlan {
  int64_t rows_per = 1, nchunks = 0, cblock = 1, ncblocks = 0;
  ChannelPlan(int64_t outer, int64_t c, int64_t inner) {
    cblock = std::max<int64_t>(1, std::min(c, kChannelBlock));
    rows_per = std::max<int64_t>(1, kChunk / std::max<int64_t>(1, cblock * inner));
    nchunks = (outer + rows_per - 1) / rows_per;
    ncblocks = (c + cblock - 1) / cblock;
  }
};

// out[ch * K + j] = sum over o, i of the K values f adds for row (o, ch):
// f(o, ch, acc) adds its row's contributions to acc[0..K).
template <int K, class F>
void channel_sums(int64_t outer, int64_t c, int64_t inner, F f, double *out) {
  const ChannelPlan p(outer, c, inner);
  std::vector<double> part(size_t(p.nchunks * c * K), 0.0);
  const int64_t items = p.nchunks * p.ncblocks;
#pragma omp parallel for schedule(static) if (items > 1)
  for (int64_t it = 0; it < items; ++it) {
    const int64_t k = it / p.ncblocks, cb = it % p.ncblocks;
    const int64_t o0 = k * p.rows_per, o1 = std::min(outer, o0 + p.rows_per);
    const int64_t c0 = cb * p.cblock, c1 = std::min(c, c0 + p.cblock);
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t ch = c0; ch < c1; ++ch) f(o, ch, &part[size_t((k * c + ch) * K)]);
  }
  for (int64_t ch = 0; ch < c; ++ch)
    for (int j = 0; j < K; ++j) {
      double s = 0.0;
      for (int64_t k = 0; k < p.nchunks; ++k) s += part[size_t((k * c + ch) * K + j)];
      out[ch * K + j] = s;
    }
}

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

// The n halves at p widened into this thread's float buffer `slot` (0 or
// 1), valid until the slot's next use.
template <class T>
const float *widened(const T *p, int64_t n, int slot) {
  thread_local std::vector<float> buf[2];
  std::vector<float> &v = buf[slot];
  if (v.size() < size_t(n)) v.resize(size_t(n));
  cpu::widen(p, v.data(), n);
  return v.data();
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

template <class P>
using elem_t = std::remove_cv_t<std::remove_pointer_t<P>>;

// Statistics live in F32 (F64 for F64 data); S is their storage type.
template <class S>
S *stat_ptr(const View &v) {
  return static_cast<S *>(v.data);
}

template <class T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

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

// NHWC (inner == 1): x is [outer, c], each row one sample's channels. The
// rows are split into fixed chunks of about kChunk elements (the result
// depends on the shape alone) and each chunk runs one loop per row across
// the channels, in vectors, instead of a call per element.
struct RowChunks {
  int64_t rows, count;
  RowChunks(int64_t outer, int64_t c)
      : rows(std::max<int64_t>(1, kChunk / std::max<int64_t>(1, c))), count((outer + rows - 1) / rows) {}
  int64_t begin(int64_t k) const { return k * rows; }
  int64_t end(int64_t k, int64_t outer) const { return std::min(outer, (k + 1) * rows); }
};

// n elements at p as the chunk loops read them: f16 widened into this
// thread's float buffer `slot` (0 or 1) in one call (F16C; the software
// conversion per element cost more than the sums), others in place (bf16
// widens with a shift inside the loops).
template <class T>
auto chunk_in_float(const T *p, int64_t n, int slot) {
  if constexpr (std::is_same_v<T, f16>) return widened(p, n, slot);
  else return p;
}

// The NHWC chunk loops of half data add in float, in runs of kFloatRows
// rows flushed into double: the sums of at most 64 values lose nothing that
// matters against a half's 8 or 11 bits, and float lanes are twice as many
// per vector with no conversion to double per element (the loops were
// compute-bound in double). F32 and F64 data add in double throughout.
constexpr int64_t kFloatRows = 64;
template <class T>
using chunk_acc_t = std::conditional_t<cpu::is_half_v<T>, float, double>;
// Rows per run of a chunk of `rows`: one run when adding in double.
template <class T>
int64_t run_rows(int64_t rows) {
  return cpu::is_half_v<T> ? kFloatRows : std::max<int64_t>(rows, 1);
}

// out[ch] = the sum over rows o in [o0, o1) of f(o, ch), for ch in [0, c).
// Whole vectors of 16 channels add into two accumulators held in registers,
// one for the even rows and one for the odd (two chains of adds, where a
// sum kept in out[] waited on a store and a load per row), joined at the
// end; other channel counts add row by row into out. The order is fixed by
// the shape either way, the same in every kernel version.
template <class Acc, class F>
MIXP_KERNEL_BODY inline void column_sums(int64_t o0, int64_t o1, int64_t c, F f, Acc *__restrict out) {
  constexpr int kL = 16;
  if (c % kL == 0) {
    for (int64_t c0 = 0; c0 < c; c0 += kL) {
      Acc even[kL], odd[kL];
#pragma omp simd
      for (int l = 0; l < kL; ++l) even[l] = odd[l] = 0;
      int64_t o = o0;
      for (; o + 2 <= o1; o += 2) {
#pragma omp simd
        for (int l = 0; l < kL; ++l) {
          even[l] += f(o, c0 + l);
          odd[l] += f(o + 1, c0 + l);
        }
      }
      if (o < o1) {
#pragma omp simd
        for (int l = 0; l < kL; ++l) even[l] += f(o, c0 + l);
      }
#pragma omp simd
      for (int l = 0; l < kL; ++l) out[c0 + l] = even[l] + odd[l];
    }
    return;
  }
  for (int64_t ch = 0; ch < c; ++ch) out[ch] = 0;
  for (int64_t o = o0; o < o1; ++o)
    for (int64_t ch = 0; ch < c; ++ch) out[ch] += f(o, ch);
}

// Per chunk k of NHWC x: sum[k][ch] and the chunk's centred square sum
// m2[k][ch] (centred on the chunk's own mean, with the chunk in cache),
// joined over the chunks as the staged rows of bn_stats are.
template <class T>
void bn_stats_nhwc(const T *x, int64_t outer, int64_t c, double *mean, double *m2) {
  using Acc = chunk_acc_t<T>;
  const RowChunks rc(outer, c);
  std::vector<double> sum(size_t(rc.count * c), 0.0), sq(size_t(rc.count * c), 0.0);
#pragma omp parallel if (rc.count > 1)
  {
    std::vector<Acc> run(static_cast<size_t>(c)), centre(static_cast<size_t>(c));
#pragma omp for schedule(static)
    for (int64_t k = 0; k < rc.count; ++k) {
      const int64_t o0 = rc.begin(k), o1 = rc.end(k, outer), rows = o1 - o0;
      double *__restrict s = sum.data() + k * c, *__restrict q = sq.data() + k * c;
      Acc *__restrict a = run.data(), *__restrict mu = centre.data();
      const auto *xk = chunk_in_float(x + o0 * c, rows * c, 0);
      using R = elem_t<decltype(xk)>;
      const int64_t span = run_rows<T>(rows);
      cpu::run_kernel([&]() MIXP_KERNEL_BODY {
        const R *__restrict xr = xk;
        for (int64_t r0 = 0; r0 < rows; r0 += span) {
          column_sums<Acc>(r0, std::min(rows, r0 + span), c,
                           [&](int64_t o, int64_t ch) MIXP_KERNEL_BODY { return Acc(load<R>(xr[o * c + ch])); }, a);
          for (int64_t ch = 0; ch < c; ++ch) s[ch] += double(a[ch]);
        }
        const double inv = 1.0 / double(rows);
        for (int64_t ch = 0; ch < c; ++ch) mu[ch] = Acc(s[ch] * inv);
        for (int64_t r0 = 0; r0 < rows; r0 += span) {
          column_sums<Acc>(r0, std::min(rows, r0 + span), c, [&](int64_t o, int64_t ch) MIXP_KERNEL_BODY {
            const Acc d = Acc(load<R>(xr[o * c + ch])) - mu[ch];
            return d * d;
          }, a);
          for (int64_t ch = 0; ch < c; ++ch) q[ch] += double(a[ch]);
        }
      });
    }
  }
  const double m = double(outer);
  for (int64_t ch = 0; ch < c; ++ch) {
    double t = 0.0;
    for (int64_t k = 0; k < rc.count; ++k) t += sum[size_t(k * c + ch)];
    const double mu = t / m;
    double q = 0.0;
    for (int64_t k = 0; k < rc.count; ++k) {
      const double n = double(rc.end(k, outer) - rc.begin(k));
      const double d = sum[size_t(k * c + ch)] / n - mu;
      q += sq[size_t(k * c + ch)] + n * d * d;
    }
    mean[ch] = mu;
    m2[ch] = q;
  }
}

// sums[2ch] = sum of gy, sums[2ch + 1] = sum of gy * (x - mean) over NHWC
// rows, in the chunks of RowChunks, joined in order.
template <class T, class S>
void bn_backward_sums_nhwc(const T *x, const T *gy, int64_t outer, int64_t c, const S *mean, double *sums) {
  using Acc = chunk_acc_t<T>;
  const RowChunks rc(outer, c);
  std::vector<Acc> mu(static_cast<size_t>(c));
  std::vector<double> sg(size_t(rc.count * c), 0.0), sgx(size_t(rc.count * c), 0.0);
  for (int64_t ch = 0; ch < c; ++ch) mu[size_t(ch)] = Acc(mean[ch]);
#pragma omp parallel if (rc.count > 1)
  {
    std::vector<Acc> run_g(static_cast<size_t>(c)), run_gx(static_cast<size_t>(c));
#pragma omp for schedule(static)
    for (int64_t k = 0; k < rc.count; ++k) {
      double *__restrict a = sg.data() + k * c, *__restrict b = sgx.data() + k * c;
      Acc *__restrict ra = run_g.data(), *__restrict rb = run_gx.data();
      const Acc *__restrict m = mu.data();
      const int64_t o0 = rc.begin(k), rows = rc.end(k, outer) - o0;
      const auto *xk = chunk_in_float(x + o0 * c, rows * c, 0);
      const auto *gk = chunk_in_float(gy + o0 * c, rows * c, 1);
      using R = elem_t<decltype(xk)>;
      const int64_t span = run_rows<T>(rows);
      cpu::run_kernel([&]() MIXP_KERNEL_BODY {
        const R *__restrict xr = xk, *__restrict gr = gk;
        for (int64_t r0 = 0; r0 < rows; r0 += span) {
          const int64_t r1 = std::min(rows, r0 + span);
          column_sums<Acc>(r0, r1, c,
                           [&](int64_t o, int64_t ch) MIXP_KERNEL_BODY { return Acc(load<R>(gr[o * c + ch])); }, ra);
          column_sums<Acc>(r0, r1, c, [&](int64_t o, int64_t ch) MIXP_KERNEL_BODY {
            return Acc(load<R>(gr[o * c + ch])) * (Acc(load<R>(xr[o * c + ch])) - m[ch]);
          }, rb);
          for (int64_t ch = 0; ch < c; ++ch) {
            a[ch] += double(ra[ch]);
            b[ch] += double(rb[ch]);
          }
        }
      });
    }
  }
  for (int64_t ch = 0; ch < c; ++ch) {
    double s0 = 0.0, s1 = 0.0;
    for (int64_t k = 0; k < rc.count; ++k) {
      s0 += sg[size_t(k * c + ch)];
      s1 += sgx[size_t(k * c + ch)];
    }
    sums[2 * ch] = s0;
    sums[2 * ch + 1] = s1;
  }
}

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

template <class T>
void gn_backward(const GroupNormGeom &g, const View &xv, const View &gyv, const View &mv,
                 const View &rv, const View *wv, const View *gxv, const View *gwv,
                 const View *gbv) {
  using A = acc_t<T>;
  using S = stat_t<T>;
  const T *x = static_cast<const T *>(xv.data);
  const T *gy = static_cast<const T *>(gyv.data);
  const S *mean = stat_ptr<S>(mv), *rstd = stat_ptr<S>(rv);
  const int64_t cpg = g.c / g.groups, len = cpg * g.s, rows = g.n * g.groups, inner = g.s;
  if (gxv) {
    T *gx = static_cast<T *>(gxv->data);
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
  if (!gwv && !gbv) return;
  // sums[2ch] = sum gy * xhat, sums[2ch+1] = sum gy, over samples and positions.
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

void check_stats(const char *kernel, const View &data, const View &stat) {
  const DType want = data.dtype == MIXP_F64 ? MIXP_F64 : MIXP_F32;
  if (!is_float(data.dtype) || stat.dtype != want)
    fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": data ", dtype_name(data.dtype),
         " with statistics ", dtype_name(stat.dtype));
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
