// C ABI shims of the normalisation operations (ops/norm.cpp).
#include "api/api_common.hpp"
#include "mixp/mixp.h"
#include "ops/ops.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_batch_norm(const mixp_tensor *x, const mixp_tensor *weight,
                            const mixp_tensor *bias, mixp_tensor *running_mean,
                            mixp_tensor *running_var, int training, double momentum, double eps,
                            mixp_layout layout, mixp_tensor **out) {
  static const char *fn = "mixp_batch_norm";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    auto w_ = optional_tensor(weight, fn, "weight");
    auto b_ = optional_tensor(bias, fn, "bias");
    auto rm_ = optional_tensor(running_mean, fn, "running_mean");
    auto rv_ = optional_tensor(running_var, fn, "running_var");
    check_flag(training, fn, "training");
    give(out, mixp::batch_norm(x_, w_, b_, rm_, rv_, training == 1, momentum, eps, layout));
  });
}

mixp_status mixp_layer_norm(const mixp_tensor *x, int normalized_ndim, const mixp_tensor *weight,
                            const mixp_tensor *bias, double eps, mixp_tensor **out) {
  static const char *fn = "mixp_layer_norm";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    auto w_ = optional_tensor(weight, fn, "weight");
    auto b_ = optional_tensor(bias, fn, "bias");
    give(out, mixp::layer_norm(x_, normalized_ndim, w_, b_, eps));
  });
}

mixp_status mixp_group_norm(const mixp_tensor *x, int64_t groups, const mixp_tensor *weight,
                            const mixp_tensor *bias, double eps, mixp_tensor **out) {
  static const char *fn = "mixp_group_norm";
  return guard(fn, [&] {
    check_out(out, fn);
    auto x_ = share(check_tensor(x, fn, "x"));
    auto w_ = optional_tensor(weight, fn, "weight");
    auto b_ = optional_tensor(bias, fn, "bias");
    give(out, mixp::group_norm(x_, groups, w_, b_, eps));
  });
}

}  // extern "C"
