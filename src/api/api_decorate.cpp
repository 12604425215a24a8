// C shims of O2 decoration (amp/decorate.cpp).
#include "amp/decorate.hpp"
#include "api/api_common.hpp"
#include "api/options_init.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_decorate_options_init_sized(mixp_decorate_options *options, size_t size) {
  static const mixp_decorate_options defaults = defaults_of<mixp_decorate_options>(amp::default_decorate_options);
  return init_options_sized(options, size, defaults, "mixp_decorate_options_init_sized");
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
