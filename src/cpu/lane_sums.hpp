// Deterministic sums that vectorise: K sums of f(i) over [0, n) in double,
// each kept in L (8 or 16) interleaved lanes and the lanes added in a fixed
// order. The result depends on n and L alone, not on the thread count or on
// which kernel version (simd.hpp) runs; call it inside a run_kernel body.
#pragma once
#include <cstdint>

#include "cpu/simd.hpp"

namespace mixp::cpu {

template <int K, class F, int L = 8>
MIXP_KERNEL_BODY inline void lane_sums(int64_t n, F f, double *out) {
  static_assert(L == 8 || L == 16, "the lanes are added in a tree of 8 or 16");
  double acc[K][L] = {};
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      double v[K];
      f(i + l, v);
      for (int k = 0; k < K; ++k) acc[k][l] += v[k];
    }
  for (int l = 0; i < n; ++i, ++l) {
    double v[K];
    f(i, v);
    for (int k = 0; k < K; ++k) acc[k][l] += v[k];
  }
  for (int k = 0; k < K; ++k) {
    if constexpr (L == 16)
      for (int l = 0; l < 8; ++l) acc[k][l] += acc[k][l + 8];
    out[k] = ((acc[k][0] + acc[k][1]) + (acc[k][2] + acc[k][3])) + ((acc[k][4] + acc[k][5]) + (acc[k][6] + acc[k][7]));
  }
}

}  // namespace mixp::cpu
