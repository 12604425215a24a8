// C shims of the amp_scaler group's loss scaler (mixp_grad_scaler_*).
#include <cstring>

#include "amp/grad_scaler.hpp"
#include "api/api_common.hpp"
#include "api/options_init.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_grad_scaler_options_init_sized(mixp_grad_scaler_options *options, size_t size) {
  static const mixp_grad_scaler_options defaults =
      defaults_of<mixp_grad_scaler_options>(amp::default_scaler_options);
  return init_options_sized(options, size, defaults, "mixp_grad_scaler_options_init_sized");
}

mixp_status mixp_grad_scaler_create(mixp_session *session, const mixp_grad_scaler_options *options,
                                    mixp_grad_scaler **out) {
  static const char *fn = "mixp_grad_scaler_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    *out = make_grad_scaler(s, options, fn).release();
  });
}

void mixp_grad_scaler_destroy(mixp_grad_scaler *scaler) {
  // A stale or foreign handle is left alone: there is no status to report it.
  if (scaler && scaler->magic == GradScaler::kMagic) delete scaler;
}

mixp_status mixp_grad_scaler_scale(mixp_grad_scaler *scaler, const mixp_tensor *loss,
                                   mixp_tensor **out) {
  static const char *fn = "mixp_grad_scaler_scale";
  return guard(fn, [&] {
    GradScaler *g = check_grad_scaler(scaler, fn);
    check_tensor(loss, fn, "loss");
    check_out(out, fn);
    give(out, g->scale_loss(share(loss), fn));
  });
}

mixp_status mixp_grad_scaler_unscale(mixp_grad_scaler *scaler, mixp_optimizer *optimizer) {
  static const char *fn = "mixp_grad_scaler_unscale";
  return guard(fn, [&] {
    GradScaler *g = check_grad_scaler(scaler, fn);
    g->unscale(*check_optimizer(optimizer, fn), fn);
  });
}

mixp_status mixp_grad_scaler_step(mixp_grad_scaler *scaler, mixp_optimizer *optimizer) {
  static const char *fn = "mixp_grad_scaler_step";
  return guard(fn, [&] {
    GradScaler *g = check_grad_scaler(scaler, fn);
    g->step(*check_optimizer(optimizer, fn), fn);
  });
}

mixp_status mixp_grad_scaler_update(mixp_grad_scaler *scaler) {
  static const char *fn = "mixp_grad_scaler_update";
  return guard(fn, [&] { check_grad_scaler(scaler, fn)->update(fn); });
}

mixp_status mixp_grad_scaler_update_to(mixp_grad_scaler *scaler, double new_scale) {
  static const char *fn = "mixp_grad_scaler_update_to";
  return guard(fn, [&] { check_grad_scaler(scaler, fn)->update_to(new_scale, fn); });
}

mixp_status mixp_grad_scaler_get_scale(const mixp_grad_scaler *scaler, double *scale) {
  static const char *fn = "mixp_grad_scaler_get_scale";
  return guard(fn, [&] {
    const GradScaler *g = check_grad_scaler(scaler, fn);
    check_out(scale, fn, "scale");
    *scale = g->read_scale();
  });
}

mixp_status mixp_grad_scaler_found_inf(const mixp_grad_scaler *scaler, int *found_inf) {
  static const char *fn = "mixp_grad_scaler_found_inf";
  return guard(fn, [&] {
    const GradScaler *g = check_grad_scaler(scaler, fn);
    check_out(found_inf, fn, "found_inf");
    *found_inf = g->read_found_inf();
  });
}

mixp_status mixp_grad_scaler_growth_tracker(const mixp_grad_scaler *scaler,
                                            int64_t *growth_tracker) {
  static const char *fn = "mixp_grad_scaler_growth_tracker";
  return guard(fn, [&] {
    const GradScaler *g = check_grad_scaler(scaler, fn);
    check_out(growth_tracker, fn, "growth_tracker");
    *growth_tracker = g->read_growth_tracker();
  });
}

mixp_status mixp_grad_scaler_skipped_steps(const mixp_grad_scaler *scaler, int64_t *count) {
  static const char *fn = "mixp_grad_scaler_skipped_steps";
  return guard(fn, [&] {
    const GradScaler *g = check_grad_scaler(scaler, fn);
    check_out(count, fn, "count");
    *count = g->read_skipped();
  });
}

mixp_scaler_mode mixp_grad_scaler_mode(const mixp_grad_scaler *scaler) {
  static const char *fn = "mixp_grad_scaler_mode";
  return guard_value(fn, MIXP_SCALER_AUTO,
                     [&] { return check_grad_scaler(scaler, fn)->options.mode; });
}

mixp_status mixp_grad_scaler_state_size(const mixp_grad_scaler *scaler, size_t *size) {
  static const char *fn = "mixp_grad_scaler_state_size";
  return guard(fn, [&] {
    check_grad_scaler(scaler, fn);
    check_out(size, fn, "size");
    *size = GradScaler::state_size();
  });
}

mixp_status mixp_grad_scaler_save_state(const mixp_grad_scaler *scaler, void *buf,
                                        size_t capacity, size_t *written) {
  static const char *fn = "mixp_grad_scaler_save_state";
  return guard(fn, [&] {
    const GradScaler *g = check_grad_scaler(scaler, fn);
    check_out(buf, fn, "buf");
    check_out(written, fn, "written");
    const size_t need = GradScaler::state_size();
    if (capacity < need)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": capacity is ", capacity, " bytes, the state needs ",
           need, " (see mixp_grad_scaler_state_size)");
    // Serialised aside first, so that a failed read leaves buf untouched.
    unsigned char tmp[GradScaler::kStateBytes];
    g->save_state(tmp);
    std::memcpy(buf, tmp, need);
    *written = need;
  });
}

mixp_status mixp_grad_scaler_load_state(mixp_grad_scaler *scaler, const void *buf, size_t n) {
  static const char *fn = "mixp_grad_scaler_load_state";
  return guard(fn, [&] {
    GradScaler *g = check_grad_scaler(scaler, fn);
    if (!buf) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": buf is NULL");
    g->load_state(static_cast<const unsigned char *>(buf), n, fn);
  });
}

}  // extern "C"
