// C ABI shims of the losses (ops/loss.cpp).
#include "api/api_common.hpp"
#include "api/options_init.hpp"
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

mixp_status mixp_cross_entropy_options_init_sized(mixp_cross_entropy_options *options, size_t size) {
  static const mixp_cross_entropy_options defaults =
      defaults_of<mixp_cross_entropy_options>([](mixp_cross_entropy_options &d) {
        d.struct_size = sizeof d;
        d.reduction = MIXP_REDUCTION_MEAN;
        d.ignore_index = MIXP_IGNORE_INDEX_DEFAULT;
        d.label_smoothing = 0.0;
      });
  return init_options_sized(options, size, defaults, "mixp_cross_entropy_options_init_sized");
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
