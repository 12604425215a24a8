#include "core/sizes.hpp"

#include "core/error.hpp"

namespace mixp {
namespace {

// "fn: " for messages of a named public function; nothing below the API,
// where the shim that catches the error adds its own name.
std::string who(const char *fn) { return fn && *fn ? std::string(fn) + ": " : std::string(); }

}  // namespace

int64_t size_mul(int64_t a, int64_t b, const char *fn, const char *what) {
  int64_t r = 0;
  if (!mul_fits(a, b, &r) || r > kMaxElements)
    fail(MIXP_ERR_INVALID_ARGUMENT, who(fn), what, " (", a, " x ", b,
         ") is too large (at most 2^62 elements)");
  return r;
}

int64_t size_add(int64_t a, int64_t b, const char *fn, const char *what) {
  int64_t r = 0;
  if (!add_fits(a, b, &r) || r > kMaxElements)
    fail(MIXP_ERR_INVALID_ARGUMENT, who(fn), what, " (", a, " + ", b,
         ") is too large (at most 2^62)");
  return r;
}

int64_t size_numel(const int64_t *dims, int ndim, const char *fn, const char *what) {
  int64_t n = 1;
  bool zero = false;
  for (int i = 0; i < ndim; ++i) {
    if (dims[i] < 0)
      fail(MIXP_ERR_INVALID_ARGUMENT, who(fn), what, " ", shape_str(dims, ndim), " has a negative extent");
    zero |= dims[i] == 0;
  }
  // Zero extents aside, the product must fit too: code that walks a shape
  // multiplies leading or trailing extents of it, and with [0, 2^62, 2^62]
  // those products would overflow although the tensor is empty.
  for (int i = 0; i < ndim; ++i)
    if (dims[i] != 0 && (!mul_fits(n, dims[i], &n) || n > kMaxElements))
      fail(MIXP_ERR_INVALID_ARGUMENT, who(fn), what, " ", shape_str(dims, ndim),
           zero ? " has extents whose product exceeds 2^62" : " has too many elements (at most 2^62)");
  return zero ? 0 : n;
}

size_t size_bytes(int64_t numel, DType dtype, const char *fn, const char *what) {
  int64_t b = 0;
  if (numel < 0 || !mul_fits(numel, int64_t(dtype_size(dtype)), &b) || b > int64_t(PTRDIFF_MAX))
    fail(MIXP_ERR_INVALID_ARGUMENT, who(fn), what, " of ", numel, " ", dtype_name(dtype),
         " elements is too large (at most PTRDIFF_MAX bytes)");
  return size_t(b);
}

int64_t window_positions(int64_t in, int64_t pad, int64_t kernel, int64_t dilation, int64_t &stride,
                         const char *fn, const char *axis) {
  int64_t padded = 0, span = 0;
  if (!mul_fits(pad, 2, &padded) || !add_fits(padded, in, &padded) || padded > kMaxElements)
    fail(MIXP_ERR_INVALID_ARGUMENT, who(fn), "the padded input along ", axis, " (", in, " + 2 x ", pad,
         ") is too large (at most 2^62)");
  if (!mul_fits(kernel - 1, dilation, &span) || !add_fits(span, 1, &span) || span > kMaxElements)
    fail(MIXP_ERR_INVALID_ARGUMENT, who(fn), "the dilated kernel along ", axis, " (dilation ", dilation,
         " x (", kernel, " - 1) + 1) is too large (at most 2^62)");
  if (padded < span)
    fail(MIXP_ERR_SHAPE, who(fn), "the kernel along ", axis, " (", span,
         " with dilation) is larger than the padded input (", padded, ")");
  const int64_t positions = (padded - span) / stride + 1;
  if (positions == 1) stride = padded - span + 1;
  return positions;
}

}  // namespace mixp
