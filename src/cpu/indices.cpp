// CPU index kernels: validation of class targets / embedding indices (the
// host reads them in place, so a bad one fails the call before anything is
// written) and the scatter that routes max's gradient to its argmax.
#include <cstring>

#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"

namespace mixp {

void CpuBackend::check_indices(const IndexCheck &chk, const View &indices, const View *inv_count) {
  if (indices.dtype != MIXP_I64) fail(MIXP_ERR_INTERNAL, "cpu check_indices: indices must be i64");
  if (inv_count && inv_count->dtype != MIXP_F64)
    fail(MIXP_ERR_INTERNAL, "cpu check_indices: inv_count must be f64");
  const int64_t n = indices.numel();
  const int64_t *idx = static_cast<const int64_t *>(indices.data);
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = idx[i];
    if (chk.has_ignore && t == chk.ignore) continue;
    if (t < 0 || t >= chk.limit)
      fail(MIXP_ERR_INVALID_ARGUMENT, chk.fn, ": ", chk.what, "[", i, "] = ", t,
           " is out of range [0, ", chk.limit, ")", chk.note);
    ++count;
  }
  if (inv_count) *static_cast<double *>(inv_count->data) = 1.0 / double(count);
}

void CpuBackend::scatter_dim(const View &src, const View &indices, int64_t outer, int64_t n,
                             int64_t inner, const View &dst) {
  if (indices.dtype != MIXP_I64 || src.dtype != dst.dtype)
    fail(MIXP_ERR_INTERNAL, "cpu scatter_dim: expected i64 indices and one dtype");
  const size_t es = dtype_size(src.dtype);
  const int64_t *idx = static_cast<const int64_t *>(indices.data);
  const unsigned char *s = static_cast<const unsigned char *>(src.data);
  unsigned char *d = static_cast<unsigned char *>(dst.data);
  std::memset(d, 0, size_t(outer * n * inner) * es);  // zero bits are +0.0 in every float type
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t from = o * inner + i, k = idx[from];
      if (k < 0 || k >= n) continue;
      std::memcpy(d + size_t((o * n + k) * inner + i) * es, s + size_t(from) * es, es);
    }
}

}  // namespace mixp
