// Deterministic sums that vectorise: K sums of f(i) over [0, n) in double,
// each kept in 8 interleaved lanes and the lanes added in a fixed order. The
// result depends on n alone, not on the thread count or on which kernel
// version (simd.hpp) runs; call it inside a run_kernel body.
#pragma once
#include <cstdint>

#include "backend/cpu/simd.hpp"

namespace mixp::cpu {

template <int K, class F>
MIXP_KERNEL_BODY inline void lane_sums(int64_t n, F f, double *out) {
  double acc[K][8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) {
      double v[K];
      f(i + l, v);
      for (int k = 0; k < K; ++k) acc[k][l] += v[k];
    }
  for (int l = 0; i < n; ++i, ++l) {
    double v[K];
    f(i, v);
    for (int k = 0; k < K; ++k) acc[k][l] += v[k];
  }
  for (int k = 0; k < K; ++k)
    out[k] = ((acc[k][0] + acc[k][1]) + (acc[k][2] + acc[k][3])) + ((acc[k][4] + acc[k][5]) + (acc[k][6] + acc[k][7]));
}

}  // namespace mixp::cpu
