// NaN/Inf counting for the numerics checker.
#include <cmath>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/strided.hpp"

namespace mixp {

void CpuBackend::count_nonfinite(const View &x, int64_t *nan_count, int64_t *inf_count) {
  int64_t shape[MIXP_MAX_DIMS], st0[MIXP_MAX_DIMS];
  for (int i = 0; i < x.ndim; ++i) {
    shape[i] = x.shape[i];
    st0[i] = x.strides[i];
  }
  int64_t *st[1] = {st0};
  const int nd = cpu::collapse_dims(x.ndim, shape, st, 1);
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) n *= shape[i];
  int64_t nans = 0, infs = 0;
  if (n > 0) {
    dispatch_float(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T *p = static_cast<const T *>(x.data);
      // Rows are summed serially: counts must not depend on the thread count.
      cpu::for_each_row<1>(nd, shape, st, false, [&](const int64_t *off, int64_t cnt, const int64_t *is) {
        for (int64_t i = 0; i < cnt; ++i) {
          const auto v = load<T>(p[off[0] + i * is[0]]);
          nans += std::isnan(v) ? 1 : 0;
          infs += std::isinf(v) ? 1 : 0;
        }
      });
    });
  }
  *nan_count = nans;
  *inf_count = infs;
}

}  // namespace mixp
