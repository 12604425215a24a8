// C ABI shims of the view operations (ops/view.cpp).
#include "api/api_common.hpp"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_reshape(const mixp_tensor *x, const int64_t *shape, int ndim, mixp_tensor **out) {
  const char *fn = "mixp_reshape";
  return guard(fn, [&] {
    check_out(out, fn);
    TensorPtr t = share(check_tensor(x, fn, "x"));
    if (ndim < 0 || ndim > MIXP_MAX_DIMS)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ndim must be in [0, ", MIXP_MAX_DIMS, "], got ", ndim);
    if (ndim > 0 && !shape) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": shape is NULL");
    give(out, reshape(t, Shape(shape, ndim)));
  });
}

mixp_status mixp_transpose(const mixp_tensor *x, int dim0, int dim1, mixp_tensor **out) {
  const char *fn = "mixp_transpose";
  return guard(fn, [&] {
    check_out(out, fn);
    give(out, transpose(share(check_tensor(x, fn, "x")), dim0, dim1));
  });
}

mixp_status mixp_permute(const mixp_tensor *x, const int *dims, int ndim, mixp_tensor **out) {
  const char *fn = "mixp_permute";
  return guard(fn, [&] {
    check_out(out, fn);
    TensorPtr t = share(check_tensor(x, fn, "x"));
    if (ndim > 0 && !dims) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dims is NULL");
    give(out, permute(t, dims, ndim));
  });
}

mixp_status mixp_slice(const mixp_tensor *x, int dim, int64_t start, int64_t end, int64_t step,
                       mixp_tensor **out) {
  const char *fn = "mixp_slice";
  return guard(fn, [&] {
    check_out(out, fn);
    give(out, slice(share(check_tensor(x, fn, "x")), dim, start, end, step));
  });
}

}  // extern "C"
