// C ABI shims of the losses (ops/loss.cpp).
#include "api/api_common.hpp"
#include "ops/ops.hpp"

using namespace mixp;

namespace {

mixp_reduction reduction_arg(mixp_reduction r, const char *fn) {
  if (r != MIXP_REDUCTION_MEAN && r != MIXP_REDUCTION_SUM && r != MIXP_REDUCTION_NONE)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": reduction = ", int(r),
         " is not a mixp_reduction (0 mean, 1 sum, 2 none)");
  return r;
}

}  // namespace

extern "C" {

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

}  // extern "C"
