#include "cpu/strided.hpp"

namespace mixp::cpu {

int collapse_dims(int ndim, int64_t *shape, int64_t *const *strides, int nops) noexcept {
  // Drop size-1 dims (their stride is irrelevant).
  int n = 0;
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 1) continue;
    shape[n] = shape[d];
    for (int k = 0; k < nops; ++k) strides[k][n] = strides[k][d];
    ++n;
  }
  if (n == 0) return 0;
  // Merge dim d into d+1 when, for every operand, stride[d] == stride[d+1]*shape[d+1].
  int out = 0;
  for (int d = 1; d < n; ++d) {
    bool mergeable = true;
    for (int k = 0; k < nops; ++k)
      if (strides[k][out] != strides[k][d] * shape[d]) mergeable = false;
    if (mergeable) {
      shape[out] *= shape[d];
      for (int k = 0; k < nops; ++k) strides[k][out] = strides[k][d];
    } else {
      ++out;
      shape[out] = shape[d];
      for (int k = 0; k < nops; ++k) strides[k][out] = strides[k][d];
    }
  }
  return out + 1;
}

}  // namespace mixp::cpu
