// batch_norm's per-channel sums over channels-last data (inner == 1), for
// batch_norm.cpp: the statistics (bn_stats_nhwc) and the backward sums
// (bn_backward_sums_nhwc). Each chunk of rows runs one loop per row across
// the channels, in vectors; partial sums are joined in chunk order, so the
// result depends on the shape alone (norm_reduce.hpp).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu/half_convert.hpp"
#include "cpu/norm_reduce.hpp"
#include "cpu/simd.hpp"

namespace mixp::cpu::norm {
namespace {

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

}  // namespace

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

template void bn_stats_nhwc<float>(const float *, int64_t, int64_t, double *, double *);
template void bn_stats_nhwc<double>(const double *, int64_t, int64_t, double *, double *);
template void bn_stats_nhwc<f16>(const f16 *, int64_t, int64_t, double *, double *);
template void bn_stats_nhwc<bf16>(const bf16 *, int64_t, int64_t, double *, double *);
template void bn_backward_sums_nhwc<float, float>(const float *, const float *, int64_t, int64_t, const float *,
                                                  double *);
template void bn_backward_sums_nhwc<double, double>(const double *, const double *, int64_t, int64_t,
                                                    const double *, double *);
template void bn_backward_sums_nhwc<f16, float>(const f16 *, const f16 *, int64_t, int64_t, const float *, double *);
template void bn_backward_sums_nhwc<bf16, float>(const bf16 *, const bf16 *, int64_t, int64_t, const float *,
                                                 double *);

}  // namespace mixp::cpu::norm
