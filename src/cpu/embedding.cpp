// CPU embedding kernels: a row gather, and its backward as a deterministic
// scatter-add. The backward groups the positions of each row with a stable
// counting sort, then sums every row's gradients in index order: no float
// atomics, and the same bits for any thread count.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"

namespace mixp {
namespace {

template <class T>
void embedding_backward_typed(const View &gyv, const int64_t *idx, int64_t n, int64_t padding_idx,
                              const View &gwv) {
  using A = acc_t<T>;
  const T *gy = static_cast<const T *>(gyv.data);
  T *gw = static_cast<T *>(gwv.data);
  const int64_t v = gwv.shape[0], d = gwv.shape[1];
  std::vector<int64_t> start(static_cast<size_t>(v + 1), 0), order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ++start[size_t(idx[i] + 1)];
  for (int64_t r = 0; r < v; ++r) start[size_t(r + 1)] += start[size_t(r)];
  {
    std::vector<int64_t> cursor(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n; ++i) order[size_t(cursor[size_t(idx[i])]++)] = i;
  }
#pragma omp parallel if (v * d > 16384)
  {
    std::vector<A> acc(static_cast<size_t>(d));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < v; ++r) {
      T *out = gw + r * d;
      const int64_t p0 = start[size_t(r)], p1 = start[size_t(r + 1)];
      if (r == padding_idx || p0 == p1) {
        for (int64_t j = 0; j < d; ++j) out[j] = store<T>(A(0));
        continue;
      }
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t p = p0; p < p1; ++p) {
        const T *row = gy + order[size_t(p)] * d;
        for (int64_t j = 0; j < d; ++j) acc[size_t(j)] += load<T>(row[j]);
      }
      for (int64_t j = 0; j < d; ++j) out[j] = store<T>(acc[size_t(j)]);
    }
  }
}

void check_geometry(const char *kernel, const View &table, const View &indices) {
  if (!is_float(table.dtype) || table.ndim != 2 || indices.dtype != MIXP_I64)
    fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": expected a 2-D float table and i64 indices");
}

}  // namespace

void CpuBackend::embedding(const View &weight, const View &indices, const View &out) {
  check_geometry("embedding", weight, indices);
  const int64_t n = indices.numel(), d = weight.shape[1];
  const size_t row_bytes = size_t(d) * dtype_size(weight.dtype);
  const int64_t *idx = static_cast<const int64_t *>(indices.data);
  const char *w = static_cast<const char *>(weight.data);
  char *o = static_cast<char *>(out.data);
#pragma omp parallel for schedule(static) if (n * d > 16384)
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(o + size_t(i) * row_bytes, w + size_t(idx[i]) * row_bytes, row_bytes);
}

void CpuBackend::embedding_backward(const View &gy, const View &indices, int64_t padding_idx,
                                    const View &gw) {
  check_geometry("embedding_backward", gw, indices);
  if (gy.dtype != gw.dtype)
    fail(MIXP_ERR_INTERNAL, "cpu embedding_backward: gy and gw differ in dtype");
  const int64_t *idx = static_cast<const int64_t *>(indices.data);
  const int64_t n = indices.numel();
  dispatch_float(gw.dtype, [&](auto tag) {
    embedding_backward_typed<decltype(tag)>(gy, idx, n, padding_idx, gw);
  });
}

}  // namespace mixp
