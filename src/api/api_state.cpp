// C shims of the state group: training-state files and weight import.
#include <cstring>

#include "api/api_common.hpp"
#include "api/options_init.hpp"
#include "state/state.hpp"

using namespace mixp;

namespace {

void check_path(const char *path, const char *fn) {
  if (!path) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": path is NULL");
  if (!*path) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": path is empty");
}

}  // namespace

extern "C" {

mixp_status mixp_state_spec_init_sized(mixp_state_spec *spec, size_t size) {
  static const mixp_state_spec defaults = defaults_of<mixp_state_spec>(state::default_spec);
  return init_options_sized(spec, size, defaults, "mixp_state_spec_init_sized", "spec");
}

mixp_status mixp_state_save(mixp_session *session, const char *path, const mixp_state_spec *spec) {
  static const char *fn = "mixp_state_save";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_path(path, fn);
    state::save(state::check_spec(s, spec, fn), path, fn);
  });
}

mixp_status mixp_state_load(mixp_session *session, const char *path, const mixp_state_spec *spec,
                            int64_t *step) {
  static const char *fn = "mixp_state_load";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_path(path, fn);
    int64_t st = state::load(state::check_spec(s, spec, fn), path, fn);
    if (step) *step = st;
  });
}

mixp_status mixp_state_read_metadata(const char *path, const char *key, char *buf, size_t capacity,
                                     size_t *length) {
  static const char *fn = "mixp_state_read_metadata";
  return guard(fn, [&] {
    check_path(path, fn);
    if (!key) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": key is NULL");
    check_out(length, fn, "length");
    if (!buf && capacity)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": buf is NULL but capacity is ", capacity);
    std::string v = state::read_metadata(path, key, fn);
    *length = v.size();
    if (!buf) return;
    if (capacity < v.size() + 1)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": capacity ", capacity, " is too small for the ",
           v.size(), "-byte value of '", key, "' and its NUL");
    std::memcpy(buf, v.c_str(), v.size() + 1);
  });
}

mixp_status mixp_module_load_safetensors(mixp_module *module, mixp_optimizer *optimizer,
                                         const char *path, int strict) {
  static const char *fn = "mixp_module_load_safetensors";
  return guard(fn, [&] {
    Module *m = check_module(module, fn);
    Session *s = check_session(m->session(), fn, "the module's session");
    Optimizer *opt = optimizer ? check_optimizer(optimizer, fn) : nullptr;
    if (opt && opt->session.get() != s)
      fail(MIXP_ERR_DEVICE, fn, ": optimizer belongs to a different session than the module");
    check_path(path, fn);
    if (strict != 0 && strict != 1)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": strict must be 0 or 1, got ", strict);
    state::load_module_weights(*m, opt, path, strict != 0, fn);
  });
}

}  // extern "C"
