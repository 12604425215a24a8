// C shims for reductions, softmax, losses, dropout and cat.
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

mixp_reduction reduction_arg(mixp_reduction r, const char *fn) {
  if (r != MIXP_REDUCTION_MEAN && r != MIXP_REDUCTION_SUM && r != MIXP_REDUCTION_NONE)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": reduction = ", int(r),
         " is not a mixp_reduction (0 mean, 1 sum, 2 none)");
  return r;
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

mixp_status mixp_softmax(const mixp_tensor *x, int dim, mixp_tensor **out) {
  return guard("mixp_softmax", [&] {
    check_out(out, "mixp_softmax");
    auto x_ = share(check_tensor(x, "mixp_softmax", "x"));
    give(out, mixp::softmax(x_, dim, false));
  });
}

mixp_status mixp_log_softmax(const mixp_tensor *x, int dim, mixp_tensor **out) {
  return guard("mixp_log_softmax", [&] {
    check_out(out, "mixp_log_softmax");
    auto x_ = share(check_tensor(x, "mixp_log_softmax", "x"));
    give(out, mixp::softmax(x_, dim, true));
  });
}

mixp_status mixp_cross_entropy(const mixp_tensor *logits, const mixp_tensor *target,
                               mixp_reduction reduction, int64_t ignore_index,
                               mixp_tensor **out) {
  return guard("mixp_cross_entropy", [&] {
    check_out(out, "mixp_cross_entropy");
    auto l_ = share(check_tensor(logits, "mixp_cross_entropy", "logits"));
    auto t_ = share(check_tensor(target, "mixp_cross_entropy", "target"));
    auto r = reduction_arg(reduction, "mixp_cross_entropy");
    give(out, mixp::cross_entropy(l_, t_, r, ignore_index));
  });
}

mixp_status mixp_mse_loss(const mixp_tensor *a, const mixp_tensor *b, mixp_reduction reduction,
                          mixp_tensor **out) {
  return guard("mixp_mse_loss", [&] {
    check_out(out, "mixp_mse_loss");
    auto a_ = share(check_tensor(a, "mixp_mse_loss", "a"));
    auto b_ = share(check_tensor(b, "mixp_mse_loss", "b"));
    auto r = reduction_arg(reduction, "mixp_mse_loss");
    give(out, mixp::mse_loss(a_, b_, r));
  });
}

mixp_status mixp_dropout(const mixp_tensor *x, double p, int training, mixp_tensor **out) {
  return guard("mixp_dropout", [&] {
    check_out(out, "mixp_dropout");
    auto x_ = share(check_tensor(x, "mixp_dropout", "x"));
    give(out, mixp::dropout(x_, p, training != 0));
  });
}

mixp_status mixp_cat(const mixp_tensor *const *tensors, int n, int dim, mixp_tensor **out) {
  return guard("mixp_cat", [&] {
    check_out(out, "mixp_cat");
    if (!tensors) fail(MIXP_ERR_INVALID_ARGUMENT, "mixp_cat: tensors is NULL");
    if (n < 1) fail(MIXP_ERR_INVALID_ARGUMENT, "mixp_cat: n = ", n, " but at least 1 tensor is needed");
    std::vector<TensorPtr> xs;
    xs.reserve(size_t(n));
    for (int i = 0; i < n; ++i) {
      const std::string arg = str("tensors[", i, "]");
      xs.push_back(share(check_tensor(tensors[i], "mixp_cat", arg.c_str())));
    }
    give(out, mixp::cat(xs, dim));
  });
}

}  // extern "C"
