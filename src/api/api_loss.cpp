// C ABI shims of the losses (ops/loss.cpp).
#include "api/api_common.hpp"
#include "core/options.hpp"
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

void mixp_cross_entropy_options_init(mixp_cross_entropy_options *options) {
  if (!options) return;
  *options = mixp_cross_entropy_options{};
  options->struct_size = sizeof(mixp_cross_entropy_options);
  options->reduction = MIXP_REDUCTION_MEAN;
  options->ignore_index = MIXP_IGNORE_INDEX_DEFAULT;
  options->label_smoothing = 0.0;
}

mixp_status mixp_cross_entropy_ex(const mixp_tensor *logits, const mixp_tensor *target,
                                  const mixp_cross_entropy_options *options, mixp_tensor **out) {
  const char *fn = "mixp_cross_entropy_ex";
  return guard(fn, [&] {
    check_out(out, fn);
    auto l_ = share(check_tensor(logits, fn, "logits"));
    auto t_ = share(check_tensor(target, fn, "target"));
    const mixp_cross_entropy_options o =
        read_options(options, mixp_cross_entropy_options_init, fn, "mixp_cross_entropy_options_init");
    auto r = reduction_arg(o.reduction, fn);
    if (!(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0))
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": label_smoothing = ", o.label_smoothing, " is outside [0, 1]");
    give(out, mixp::cross_entropy(l_, t_, r, o.ignore_index, o.label_smoothing, fn));
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
