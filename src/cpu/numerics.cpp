// Element counts by kind (NaN, Inf, zero, tiny, huge) for the numerics
// checker and the underflow statistics. The checker runs after every op, so
// this is one vectorised pass (branch-free counts), split over the threads
// for large tensors; integer counts add up exactly in any order.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/cpu_backend.hpp"
#include "cpu/simd.hpp"
#include "cpu/strided.hpp"

namespace mixp {

namespace {

// Below this many elements one thread counts (the fork costs more).
constexpr int64_t kParallelCount = 1 << 16;

// Counts elements [0, n) of p into c: nan, inf, zero, tiny, huge. Unit
// stride (a runtime stride keeps GCC from vectorising); int32 counts per
// block of 2^20, which vectorise better than int64 ones.
template <class T>
MIXP_KERNEL_BODY inline void count_run(const T *__restrict p, int64_t n, acc_t<T> tiny_below, acc_t<T> huge_from,
                                        int64_t *c) {
  using A = acc_t<T>;
  const A inf = std::numeric_limits<A>::infinity();
  for (int64_t b = 0; b < n; b += int64_t(1) << 20) {
    const int32_t m = int32_t(std::min<int64_t>(n - b, int64_t(1) << 20));
    const T *q = p + b;
    int32_t nan = 0, infs = 0, zero = 0, tiny = 0, huge = 0;
#pragma omp simd reduction(+ : nan, infs, zero, tiny, huge)
    for (int32_t i = 0; i < m; ++i) {
      const A a = std::fabs(load<T>(q[i]));
      nan += a != a;
      infs += a == inf;
      zero += a == A(0);
      tiny += (a > A(0)) & (a < tiny_below);
      huge += (a >= huge_from) & (a < inf);
    }
    c[0] += nan, c[1] += infs, c[2] += zero, c[3] += tiny, c[4] += huge;
  }
}

// A strided run (rare: the checker mostly sees fresh contiguous outputs).
template <class T>
inline void count_strided(const T *p, int64_t n, int64_t s, acc_t<T> tiny_below, acc_t<T> huge_from, int64_t *c) {
  using A = acc_t<T>;
  const A inf = std::numeric_limits<A>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const A a = std::fabs(load<T>(p[i * s]));
    c[0] += a != a;
    c[1] += a == inf;
    c[2] += a == A(0);
    c[3] += (a > A(0)) & (a < tiny_below);
    c[4] += (a >= huge_from) & (a < inf);
  }
}

}  // namespace

void CpuBackend::count_values(const View &x, double tiny_below, double huge_from, ValueCounts *out) {
  int64_t shape[MIXP_MAX_DIMS], st0[MIXP_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) {
    shape[i] = x.shape[i];
    st0[i] = x.strides[i];
  }
  int64_t *st[1] = {st0};
  const int nd = cpu::collapse_dims(x.ndim, shape, st, 1);
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) n *= shape[i];
  int64_t c[5] = {0, 0, 0, 0, 0};
  if (n > 0) {
    dispatch_float(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      const T *p = static_cast<const T *>(x.data);
      // The thresholds in the compute type (the ones used, 2^-14, 2^-126,
      // 65520, are exact there).
      const A tb = A(tiny_below), hf = A(huge_from);
      if (nd <= 1 && (nd == 0 || st0[0] == 1)) {
        if (n < kParallelCount) {
          cpu::run_kernel([&]() MIXP_KERNEL_BODY { count_run<T>(p, n, tb, hf, c); });
        } else {
#pragma omp parallel
          {
            const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
            const int64_t chunk = (n + nt - 1) / nt, b = std::min(n, t * chunk), e = std::min(n, b + chunk);
            int64_t mine[5] = {0, 0, 0, 0, 0};
            cpu::run_kernel([&]() MIXP_KERNEL_BODY { count_run<T>(p + b, e - b, tb, hf, mine); });
#pragma omp critical
            for (int k = 0; k < 5; ++k) c[k] += mine[k];
          }
        }
      } else {
        cpu::for_each_row<1>(nd, shape, st, false, [&](const int64_t *off, int64_t cnt, const int64_t *is) {
          if (is[0] == 1)
            cpu::run_kernel([&]() MIXP_KERNEL_BODY { count_run<T>(p + off[0], cnt, tb, hf, c); });
          else
            count_strided<T>(p + off[0], cnt, is[0], tb, hf, c);
        });
      }
    });
  }
  out->nan = c[0];
  out->inf = c[1];
  out->zero = c[2];
  out->tiny = c[3];
  out->huge = c[4];
}

}  // namespace mixp
