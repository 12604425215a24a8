// CPU memory, copies (with dtype conversion) and fills.
#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/strided.hpp"
#include "core/error.hpp"

namespace mixp {

void *CpuBackend::allocate(size_t nbytes) {
  // 64-byte alignment: full cache lines and AVX-512 vectors for the kernels.
  const size_t rounded = (nbytes + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded ? rounded : 64);
  if (!p) fail(MIXP_ERR_OUT_OF_MEMORY, "cpu: cannot allocate ", nbytes, " bytes");
  return p;
}

void CpuBackend::deallocate(void *p, size_t) noexcept { std::free(p); }

void CpuBackend::copy_from_host(void *dst, const void *src, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

void CpuBackend::copy_to_host(void *dst, const void *src, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

namespace {

// Typed conversion for the pairs on hot paths (AMP casts, contiguous copies);
// everything else goes through double, which is exact for every source type
// and rounds once into the destination.
template <class S, class D>
void convert_row(const S *s, int64_t ss, D *d, int64_t ds, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i * ds] = store<D>(acc_t<D>(load<S>(s[i * ss])));
}

template <class S, class D>
bool typed_copy(const View &src, const View &dst, int ndim, const int64_t *shape,
                int64_t *const *st, bool par) {
  const S *sp = static_cast<const S *>(src.data);
  D *dp = static_cast<D *>(dst.data);
  cpu::for_each_row<2>(ndim, shape, st, par, [&](const int64_t *off, int64_t n, const int64_t *is) {
    convert_row<S, D>(sp + off[0], is[0], dp + off[1], is[1], n);
  });
  return true;
}

bool fast_copy(const View &src, const View &dst, int ndim, const int64_t *shape,
               int64_t *const *st, bool par) {
  const DType a = src.dtype, b = dst.dtype;
  if (a == MIXP_F32 && b == MIXP_BF16) return typed_copy<float, bf16>(src, dst, ndim, shape, st, par);
  if (a == MIXP_BF16 && b == MIXP_F32) return typed_copy<bf16, float>(src, dst, ndim, shape, st, par);
  if (a == MIXP_F32 && b == MIXP_F16) return typed_copy<float, f16>(src, dst, ndim, shape, st, par);
  if (a == MIXP_F16 && b == MIXP_F32) return typed_copy<f16, float>(src, dst, ndim, shape, st, par);
  if (a == MIXP_F32 && b == MIXP_F32) return typed_copy<float, float>(src, dst, ndim, shape, st, par);
  if (a == MIXP_F64 && b == MIXP_F64) return typed_copy<double, double>(src, dst, ndim, shape, st, par);
  if (a == MIXP_F32 && b == MIXP_F64) return typed_copy<float, double>(src, dst, ndim, shape, st, par);
  if (a == MIXP_F64 && b == MIXP_F32) {
    // double->float conversion in hardware rounds to nearest even.
    return typed_copy<double, float>(src, dst, ndim, shape, st, par);
  }
  return false;
}

}  // namespace

void CpuBackend::copy(const View &src, const View &dst) {
  int64_t shape[MIXP_MAX_DIMS], ss[MIXP_MAX_DIMS], ds[MIXP_MAX_DIMS];
  const int nd0 = dst.ndim;
  for (int i = 0; i < nd0; ++i) {
    shape[i] = dst.shape[i];
    ss[i] = src.strides[i];
    ds[i] = dst.strides[i];
  }
  int64_t *st[2] = {ss, ds};
  const int nd = cpu::collapse_dims(nd0, shape, st, 2);
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) n *= shape[i];
  if (n == 0) return;
  const bool par = n >= cpu::kParallelGrain;
  const size_t es = dtype_size(src.dtype);
  if (src.dtype == dst.dtype && nd <= 1 && (nd == 0 || (ss[0] == 1 && ds[0] == 1))) {
    std::memcpy(dst.data, src.data, size_t(n) * es);
    return;
  }
  if (fast_copy(src, dst, nd, shape, st, par)) return;
  const size_t ed = dtype_size(dst.dtype);
  const char *sp = static_cast<const char *>(src.data);
  char *dp = static_cast<char *>(dst.data);
  const DType sd = src.dtype, dd = dst.dtype;
  cpu::for_each_row<2>(nd, shape, st, par, [&](const int64_t *off, int64_t cnt, const int64_t *is) {
    for (int64_t i = 0; i < cnt; ++i) {
      const double v = element_to_double(sp + (off[0] + i * is[0]) * int64_t(es), sd);
      double_to_element(v, dp + (off[1] + i * is[1]) * int64_t(ed), dd);
    }
  });
}

void CpuBackend::fill(const View &dst, double value) {
  const size_t es = dtype_size(dst.dtype);
  alignas(8) unsigned char pattern[8];
  double_to_element(value, pattern, dst.dtype);
  int64_t shape[MIXP_MAX_DIMS], ds[MIXP_MAX_DIMS];
  for (int i = 0; i < dst.ndim; ++i) {
    shape[i] = dst.shape[i];
    ds[i] = dst.strides[i];
  }
  int64_t *st[1] = {ds};
  const int nd = cpu::collapse_dims(dst.ndim, shape, st, 1);
  int64_t n = 1;
  for (int i = 0; i < nd; ++i) n *= shape[i];
  if (n == 0) return;
  char *dp = static_cast<char *>(dst.data);
  bool zero = true;
  for (size_t i = 0; i < es; ++i) zero = zero && pattern[i] == 0;
  if (zero && (nd == 0 || (nd == 1 && ds[0] == 1))) {
    std::memset(dp, 0, size_t(n) * es);
    return;
  }
  cpu::for_each_row<1>(nd, shape, st, n >= cpu::kParallelGrain,
                       [&](const int64_t *off, int64_t cnt, const int64_t *is) {
                         for (int64_t i = 0; i < cnt; ++i)
                           std::memcpy(dp + (off[0] + i * is[0]) * int64_t(es), pattern, es);
                       });
}

}  // namespace mixp
