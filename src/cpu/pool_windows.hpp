// The windows of the CPU pooling kernels (pool_forward.cpp,
// pool_backward.cpp): the input rectangle of each output cell and the
// divisor of its average, and the typed pointer to max pooling's indices.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backend/backend.hpp"

namespace mixp::cpu::pool {

// The input rectangle [h0, h1) x [w0, w1) of output cell (i, j), and the
// divisor of an average over it.
struct Window {
  int64_t h0, h1, w0, w1;
  double div;
};

inline int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return i * in / out; }
inline int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

inline Window window(const Pool2dGeom &g, int64_t i, int64_t j) {
  Window r;
  if (g.kind == PoolKind::AdaptiveAvg) {
    r.h0 = adaptive_start(i, g.h, g.oh);
    r.h1 = adaptive_end(i, g.h, g.oh);
    r.w0 = adaptive_start(j, g.w, g.ow);
    r.w1 = adaptive_end(j, g.w, g.ow);
    r.div = double((r.h1 - r.h0) * (r.w1 - r.w0));
    return r;
  }
  int64_t hs = i * g.stride_h - g.pad_h, ws = j * g.stride_w - g.pad_w;
  int64_t he = std::min(hs + g.kh, g.h + g.pad_h), we = std::min(ws + g.kw, g.w + g.pad_w);
  const double padded = double((he - hs) * (we - ws));
  r.h0 = std::max<int64_t>(hs, 0);
  r.w0 = std::max<int64_t>(ws, 0);
  r.h1 = std::min(he, g.h);
  r.w1 = std::min(we, g.w);
  r.div = g.count_include_pad ? padded : double((r.h1 - r.h0) * (r.w1 - r.w0));
  return r;
}

// A cell's window is the product of its row's and its column's, so both
// are computed once per call instead of once per output element.
struct Windows {
  std::vector<Window> rows, cols;
  explicit Windows(const Pool2dGeom &g) : rows(size_t(g.oh)), cols(size_t(g.ow)) {
    for (int64_t i = 0; i < g.oh; ++i) rows[size_t(i)] = window(g, i, 0);
    for (int64_t j = 0; j < g.ow; ++j) cols[size_t(j)] = window(g, 0, j);
  }
  Window at(const Pool2dGeom &g, int64_t i, int64_t j) const {
    const Window &r = rows[size_t(i)], &c = cols[size_t(j)];
    if (g.kind == PoolKind::AdaptiveAvg || !g.count_include_pad)
      return {r.h0, r.h1, c.w0, c.w1, double((r.h1 - r.h0) * (c.w1 - c.w0))};
    return window(g, i, j);  // the divisor counts padding: rare, keep the one definition
  }
};

// Calls f with the indices' pointer as the element type they hold (I32 or
// I64: pool_index_dtype), or a null int64_t pointer for the averages.
template <class P, class F>
void with_indices(const View *indices, F f) {
  using I32 = std::conditional_t<std::is_const_v<P>, const int32_t, int32_t>;
  using I64 = std::conditional_t<std::is_const_v<P>, const int64_t, int64_t>;
  if (indices && indices->dtype == MIXP_I32) f(static_cast<I32 *>(indices->data));
  else f(static_cast<I64 *>(indices ? indices->data : nullptr));
}

}  // namespace mixp::cpu::pool
