// C ABI shims of the reductions (ops/reduce.cpp).
#include <string>
#include <vector>

#include "api/api_common.hpp"
#include "mixp/mixp.h"
#include "ops/ops.hpp"

using namespace mixp;

namespace {

std::vector<int> dims_arg(const int *dims, int ndims, const char *fn) {
  if (ndims < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ndims = ", ndims, " is negative");
  if (ndims > 0 && !dims)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": dims is NULL but ndims = ", ndims);
  if (ndims > MIXP_MAX_DIMS)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ndims = ", ndims, " exceeds MIXP_MAX_DIMS (",
         MIXP_MAX_DIMS, ")");
  return std::vector<int>(dims, dims + ndims);
}

}  // namespace

extern "C" {

mixp_status mixp_sum(const mixp_tensor *x, const int *dims, int ndims, int keepdim,
                     mixp_tensor **out) {
  return guard("mixp_sum", [&] {
    check_out(out, "mixp_sum");
    auto x_ = share(check_tensor(x, "mixp_sum", "x"));
    auto d = dims_arg(dims, ndims, "mixp_sum");
    give(out, mixp::sum(x_, d, keepdim != 0));
  });
}

mixp_status mixp_mean(const mixp_tensor *x, const int *dims, int ndims, int keepdim,
                      mixp_tensor **out) {
  return guard("mixp_mean", [&] {
    check_out(out, "mixp_mean");
    auto x_ = share(check_tensor(x, "mixp_mean", "x"));
    auto d = dims_arg(dims, ndims, "mixp_mean");
    give(out, mixp::mean(x_, d, keepdim != 0));
  });
}

mixp_status mixp_max(const mixp_tensor *x, int dim, int keepdim, mixp_tensor **values,
                     mixp_tensor **indices) {
  return guard("mixp_max", [&] {
    check_out(values, "mixp_max", "values");
    auto x_ = share(check_tensor(x, "mixp_max", "x"));
    TensorPtr v, i;
    mixp::max(x_, dim, keepdim != 0, &v, indices ? &i : nullptr);
    give(values, v);
    if (indices) give(indices, i);
  });
}

mixp_status mixp_argmax(const mixp_tensor *x, int dim, int keepdim, mixp_tensor **out) {
  return guard("mixp_argmax", [&] {
    check_out(out, "mixp_argmax");
    auto x_ = share(check_tensor(x, "mixp_argmax", "x"));
    give(out, mixp::argmax(x_, dim, keepdim != 0));
  });
}

}  // extern "C"
