// C shims of the amp_scaler group's O2 decoration and gradient clipping.
#include "amp/decorate.hpp"
#include "api/api_common.hpp"
#include "optim/clip.hpp"

using namespace mixp;

extern "C" {

void mixp_decorate_options_init(mixp_decorate_options *options) {
  if (options) amp::default_decorate_options(*options);
}

mixp_status mixp_amp_decorate(mixp_module *model, mixp_optimizer *optimizer,
                              const mixp_decorate_options *options) {
  static const char *fn = "mixp_amp_decorate";
  return guard(fn, [&] {
    Module *m = check_module(model, fn, "model");
    Optimizer *o = optimizer ? check_optimizer(optimizer, fn) : nullptr;
    amp::decorate(*m, o, options, fn);
  });
}

mixp_status mixp_clip_grad_norm(mixp_optimizer *optimizer, double max_norm,
                                mixp_tensor **total_norm) {
  static const char *fn = "mixp_clip_grad_norm";
  return guard(fn, [&] {
    Optimizer *o = check_optimizer(optimizer, fn);
    TensorPtr norm = optim::clip_grad_norm(*o, max_norm, fn);
    if (total_norm) give(total_norm, std::move(norm));
  });
}

}  // extern "C"
