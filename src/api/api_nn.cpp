// C shims of the nn group: layer constructors and the generic module calls.
#include "api/api_common.hpp"
#include "nn/module.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_linear_create(mixp_session *session, int64_t in_features, int64_t out_features,
                               int bias, mixp_dtype dtype, mixp_module **out) {
  static const char *fn = "mixp_linear_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    if (bias != 0 && bias != 1)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": bias must be 0 or 1, got ", bias);
    *out = make_linear(s, in_features, out_features, bias == 1, dtype, fn).release();
  });
}

void mixp_module_destroy(mixp_module *module) {
  // A stale or foreign handle is left alone: freeing it would corrupt memory
  // and this function has no status to report it with.
  if (module && module->magic == Module::kMagic) delete module;
}

mixp_status mixp_module_forward(mixp_module *module, const mixp_tensor *x, mixp_tensor **out) {
  static const char *fn = "mixp_module_forward";
  return guard(fn, [&] {
    Module *m = check_module(module, fn);
    check_session(m->session(), fn, "the module's session");
    check_tensor(x, fn, "x");
    check_out(out, fn);
    give(out, m->forward(share(x)));
  });
}

int mixp_module_num_parameters(const mixp_module *module) {
  static const char *fn = "mixp_module_num_parameters";
  return guard_value(fn, -1, [&] { return int(check_module(module, fn)->num_parameters()); });
}

static size_t check_param_index(const Module *m, int index, const char *fn) {
  if (index < 0 || size_t(index) >= m->num_parameters())
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": index ", index, " is out of range [0, ",
         m->num_parameters(), ")");
  return size_t(index);
}

mixp_status mixp_module_parameter(const mixp_module *module, int index, mixp_tensor **out) {
  static const char *fn = "mixp_module_parameter";
  return guard(fn, [&] {
    Module *m = check_module(module, fn);
    size_t i = check_param_index(m, index, fn);
    check_out(out, fn);
    give(out, m->parameter(i));
  });
}

const char *mixp_module_parameter_name(const mixp_module *module, int index) {
  static const char *fn = "mixp_module_parameter_name";
  return guard_value(fn, static_cast<const char *>(nullptr), [&] {
    Module *m = check_module(module, fn);
    return m->parameter_name(check_param_index(m, index, fn)).c_str();
  });
}

mixp_status mixp_module_set_training(mixp_module *module, int training) {
  static const char *fn = "mixp_module_set_training";
  return guard(fn, [&] {
    Module *m = check_module(module, fn);
    if (training != 0 && training != 1)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": training must be 0 or 1, got ", training);
    m->set_training(training == 1);
  });
}

}  // extern "C"
