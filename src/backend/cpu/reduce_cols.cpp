// Column sums of a row-major matrix: each thread owns a block of columns and
// walks all rows over it, so reads stay contiguous and the order of the
// additions (row by row, in double) does not depend on the thread count.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"

namespace mixp {

namespace {

constexpr int64_t kColBlock = 512;

template <class T>
void sum_cols_impl(const T *x, int64_t rows, int64_t cols, T *out, double scale) {
  const int64_t nb = (cols + kColBlock - 1) / kColBlock;
#pragma omp parallel for schedule(static) if (rows * cols >= 65536 && nb > 1)
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t c0 = b * kColBlock, len = std::min(kColBlock, cols - c0);
    double acc[kColBlock];
    std::fill(acc, acc + len, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      const T *row = x + r * cols + c0;
      for (int64_t j = 0; j < len; ++j) acc[j] += double(load<T>(row[j]));
    }
    for (int64_t j = 0; j < len; ++j) out[c0 + j] = store_double<T>(acc[j] * scale);
  }
}

}  // namespace

void CpuBackend::sum_cols(const View &x, int64_t rows, int64_t cols, const View &out, double scale) {
  dispatch_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    sum_cols_impl(static_cast<const T *>(x.data), rows, cols, static_cast<T *>(out.data), scale);
  });
}

}  // namespace mixp
