// CPU memory, copies (with dtype conversion) and fills.
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/error.hpp"
#include "cpu/block_cache.hpp"
#include "cpu/convert_row.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/simd.hpp"
#include "cpu/strided.hpp"

namespace mixp {

void *CpuBackend::allocate(size_t nbytes) {
  void *p = blocks_->take(nbytes);
  if (!p) fail(MIXP_ERR_OUT_OF_MEMORY, "cpu: cannot allocate ", nbytes, " bytes");
  return p;
}

void CpuBackend::deallocate(void *p, size_t nbytes) noexcept { blocks_->give(p, nbytes); }

void CpuBackend::copy_from_host(void *dst, const void *src, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

void CpuBackend::copy_to_host(void *dst, const void *src, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

namespace {

// Other dtypes than float and integer-to-float go through the generic
// per-element path; float types through cpu::convert_row.

// Integers (a dropout mask, labels) into a float type: through double, as
// the generic path does, but in a loop the compiler can vectorise.
template <class S, class D>
void int_to_float_row(const S *s, int64_t ss, D *d, int64_t ds, int64_t n) {
  cpu::run_kernel([&]() MIXP_KERNEL_BODY {
    if constexpr (sizeof(S) == 1) {  // bytes are exact in fp32: round once from there, inline
      for (int64_t i = 0; i < n; ++i) d[i * ds] = store<D>(acc_t<D>(s[i * ss]));
    } else {
      for (int64_t i = 0; i < n; ++i) d[i * ds] = store_double<D>(double(s[i * ss]));
    }
  });
}

template <class S>
void int_to_float(const View &src, const View &dst, int ndim, const int64_t *shape, int64_t *const *st, bool par) {
  dispatch_float(dst.dtype, [&](auto dtag) {
    using D = decltype(dtag);
    const S *sp = static_cast<const S *>(src.data);
    D *dp = static_cast<D *>(dst.data);
    cpu::for_each_row<2>(ndim, shape, st, par, [&](const int64_t *off, int64_t n, const int64_t *is) {
      int_to_float_row<S, D>(sp + off[0], is[0], dp + off[1], is[1], n);
    });
  });
}

// Casts into and out of fp8 (and between its two formats): through f32
// (every fp8, f16 and bf16 value is exact there; f64 rounds once, directly);
// an fp8 copy moves bits, NaN payloads included.
template <class S, class D>
void convert_all(const View &src, const View &dst, int ndim, const int64_t *shape, int64_t *const *st,
                 bool par) {
  const S *sp = static_cast<const S *>(src.data);
  D *dp = static_cast<D *>(dst.data);
  cpu::for_each_row<2>(ndim, shape, st, par, [&](const int64_t *off, int64_t n, const int64_t *is) {
    cpu::convert_row<S, D>(sp + off[0], is[0], dp + off[1], is[1], n);
  });
}

template <class F>
void dispatch_float_or_fp8(DType t, F &&f) {
  if (is_fp8(t)) dispatch_fp8(t, f);
  else dispatch_float(t, f);
}

bool fp8_copy(const View &src, const View &dst, int ndim, const int64_t *shape, int64_t *const *st, bool par) {
  const bool sf = is_float(src.dtype) || is_fp8(src.dtype), df = is_float(dst.dtype) || is_fp8(dst.dtype);
  if (!sf || !df) return false;  // integers: the generic path
  dispatch_float_or_fp8(src.dtype, [&](auto stag) {
    dispatch_float_or_fp8(dst.dtype, [&](auto dtag) {
      convert_all<decltype(stag), decltype(dtag)>(src, dst, ndim, shape, st, par);
    });
  });
  return true;
}

bool fast_copy(const View &src, const View &dst, int ndim, const int64_t *shape, int64_t *const *st,
               bool par) {
  if (is_fp8(src.dtype) || is_fp8(dst.dtype)) return fp8_copy(src, dst, ndim, shape, st, par);
  if (!is_float(dst.dtype)) return false;
  switch (src.dtype) {
    case MIXP_U8:
    case MIXP_BOOL: int_to_float<uint8_t>(src, dst, ndim, shape, st, par); return true;
    case MIXP_I32: int_to_float<int32_t>(src, dst, ndim, shape, st, par); return true;
    case MIXP_I64: int_to_float<int64_t>(src, dst, ndim, shape, st, par); return true;
    default: break;
  }
  if (!is_float(src.dtype)) return false;
  dispatch_float(src.dtype, [&](auto stag) {
    dispatch_float(dst.dtype, [&](auto dtag) {
      convert_all<decltype(stag), decltype(dtag)>(src, dst, ndim, shape, st, par);
    });
  });
  return true;
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

void CpuBackend::causal_mask(const View &dst, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return;
  const size_t es = dtype_size(dst.dtype);
  alignas(8) unsigned char ninf[8];
  double_to_element(-std::numeric_limits<double>::infinity(), ninf, dst.dtype);
  char *base = static_cast<char *>(dst.data);
  // Row i: zeros up to column i, -inf after (+0.0 is all zero bits).
  for (int64_t i = 0; i < rows; ++i) {
    char *row = base + size_t(i) * size_t(cols) * es;
    const int64_t visible = i + 1 < cols ? i + 1 : cols;
    std::memset(row, 0, size_t(visible) * es);
    for (int64_t j = visible; j < cols; ++j) std::memcpy(row + size_t(j) * es, ninf, es);
  }
}

}  // namespace mixp
