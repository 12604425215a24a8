// Column sums of a row-major matrix: each thread owns a block of columns and
// walks all rows over it, so reads stay contiguous and the order of the
// additions (row by row, in double) does not depend on the thread count.
// The blocks are narrowed until every thread has one (a linear layer's bias
// gradient has a few hundred columns): each column's sum is still one
// thread's walk down the rows, so the width changes no bits.
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "cpu/cpu_backend.hpp"
#include "cpu/half_convert.hpp"
#include "cpu/simd.hpp"

namespace mixp {

namespace {

constexpr int64_t kColBlock = 512;
// Narrowest block: 16 columns, so that threads' outputs seldom share a cache
// line.
constexpr int64_t kMinColBlock = 16;

int64_t block_width(int64_t cols, int threads) {
  const int64_t per_thread = (cols + threads - 1) / threads;
  const int64_t w = (per_thread + kMinColBlock - 1) / kMinColBlock * kMinColBlock;
  return std::clamp(w, kMinColBlock, kColBlock);
}

template <class T>
void sum_cols_impl(const T *x, int64_t rows, int64_t cols, T *out, double scale) {
  const bool parallel = rows * cols >= 65536;
  const int64_t width = block_width(cols, parallel ? omp_get_max_threads() : 1);
  const int64_t nb = (cols + width - 1) / width;
#pragma omp parallel for schedule(static) if (parallel && nb > 1)
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t c0 = b * width, len = std::min(width, cols - c0);
    // Multi-versioned, so the double adds run vectorised; f16 rows are
    // widened through F16C into a float tile first (half_convert.hpp: the
    // software conversion cost ~3x the bf16 sums), same values.
    double acc[kColBlock];
    std::fill(acc, acc + len, 0.0);
    if constexpr (std::is_same_v<T, f16>) {
      alignas(64) float tile[kColBlock];
      for (int64_t r = 0; r < rows; ++r) {
        cpu::f16_to_f32(x + r * cols + c0, tile, len);
        cpu::run_kernel([&]() MIXP_KERNEL_BODY {
          for (int64_t j = 0; j < len; ++j) acc[j] += double(tile[j]);
        });
      }
    } else {
      cpu::run_kernel([&]() MIXP_KERNEL_BODY {
        for (int64_t r = 0; r < rows; ++r) {
          const T *row = x + r * cols + c0;
          for (int64_t j = 0; j < len; ++j) acc[j] += double(load<T>(row[j]));
        }
      });
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
