// C shims of O2 decoration (amp/decorate.cpp).
#include "amp/decorate.hpp"
#include "api/api_common.hpp"

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

}  // extern "C"
