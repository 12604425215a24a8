// The fixed-order reductions shared by the CPU normalisation kernels --
// batch_norm.cpp and batch_norm_nhwc.cpp (statistics per channel over the
// batch and spatial positions), group_norm.cpp (group_norm/layer_norm:
// statistics per sample and group) -- and the storage of their statistics.
//
// Every reduction accumulates in double. Per-channel sums are formed in
// partial sums over chunks whose boundaries depend on the shape alone, then
// added in chunk order, so the result is bitwise the same for any thread
// count. Variances are centred sums (the mean first, or per row and then
// joined: bn_stats), which stay accurate when the mean is large against the
// spread.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "cpu/half_convert.hpp"

namespace mixp::cpu::norm {

constexpr int64_t kChunk = 16384;  // elements per reduction work item
constexpr int64_t kChannelBlock = 64;

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

template <class P>
using elem_t = std::remove_cv_t<std::remove_pointer_t<P>>;

// Statistics live in F32 (F64 for F64 data); S is their storage type.
template <class S>
S *stat_ptr(const View &v) {
  return static_cast<S *>(v.data);
}

template <class T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

inline void check_stats(const char *kernel, const View &data, const View &stat) {
  const DType want = data.dtype == MIXP_F64 ? MIXP_F64 : MIXP_F32;
  if (!is_float(data.dtype) || stat.dtype != want)
    fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": data ", dtype_name(data.dtype),
         " with statistics ", dtype_name(stat.dtype));
}

// The NHWC (inner == 1) reductions of batch_norm (batch_norm_nhwc.cpp),
// instantiated for the float dtypes with their statistics' type S.
template <class T>
void bn_stats_nhwc(const T *x, int64_t outer, int64_t c, double *mean, double *m2);
template <class T, class S>
void bn_backward_sums_nhwc(const T *x, const T *gy, int64_t outer, int64_t c, const S *mean, double *sums);

}  // namespace mixp::cpu::norm
