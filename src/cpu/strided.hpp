// Iteration over strided N-d views, shared by the CPU kernels: the shape is
// walked as rows of the innermost dimension, so kernels run a tight inner
// loop with constant strides and the rows can be split across threads.
#pragma once
#include <algorithm>
#include <cstdint>

#include "backend/backend.hpp"

namespace mixp::cpu {

// Collapses adjacent dimensions that are contiguous with each other in every
// operand (same for all), dropping size-1 dims; returns the new ndim.
// shape/strides arrays are edited in place; `nops` operands.
int collapse_dims(int ndim, int64_t *shape, int64_t *const *strides, int nops) noexcept;

// Calls fn(offsets[nops], inner_count, inner_strides[nops]) once per row of
// the innermost dimension. Rows are distributed over OpenMP threads when
// `parallel` (the callback must then be thread-safe). Offsets are in elements.
template <int N, class Fn>
void for_each_row(int ndim, const int64_t *shape, const int64_t *const *strides, bool parallel,
                  Fn &&fn) {
  if (ndim == 0) {
    int64_t off[N] = {};
    int64_t st[N] = {};
    fn(off, int64_t(1), st);
    return;
  }
  const int64_t inner = shape[ndim - 1];
  int64_t rows = 1;
  for (int d = 0; d < ndim - 1; ++d) rows *= shape[d];
  int64_t inner_st[N];
  for (int k = 0; k < N; ++k) inner_st[k] = strides[k][ndim - 1];
  // A contiguous tensor collapses to one row: split it into pieces, so that
  // it runs on every thread too (a cast of a 128x3136 activation ran on one).
  constexpr int64_t kPiece = 16384;
  if (parallel && rows == 1 && inner >= 2 * kPiece) {
    const int64_t pieces = (inner + kPiece - 1) / kPiece;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < pieces; ++p) {
      int64_t off[N];
      for (int k = 0; k < N; ++k) off[k] = p * kPiece * inner_st[k];
      int64_t st[N];
      for (int k = 0; k < N; ++k) st[k] = inner_st[k];
      fn(off, std::min(kPiece, inner - p * kPiece), st);
    }
    return;
  }
#pragma omp parallel for schedule(static) if (parallel && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off[N] = {};
    int64_t rem = r;
    for (int d = ndim - 2; d >= 0; --d) {
      const int64_t i = rem % shape[d];
      rem /= shape[d];
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
    int64_t st[N];
    for (int k = 0; k < N; ++k) st[k] = inner_st[k];
    fn(off, inner, st);
  }
}

// Threshold (elements) above which elementwise kernels use threads.
constexpr int64_t kParallelGrain = 32768;

}  // namespace mixp::cpu
