// C shims of the optim group: optimizers, learning-rate schedules and gradient
// clipping (optim/).
#include <cmath>
#include <vector>

#include "api/api_common.hpp"
#include "api/options_init.hpp"
#include "optim/clip.hpp"
#include "optim/optimizer.hpp"

using namespace mixp;

namespace {

// An array out-parameter with its room: `count` must be writable, capacity
// >= 0, and `array` (named `name`) non-NULL when there is room.
void check_array_out(const void *array, const char *name, int capacity, const int *count, const char *fn) {
  check_out(count, fn, "count");
  if (capacity < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": capacity = ", capacity, " is negative");
  if (capacity > 0 && !array) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", name, " is NULL with capacity ", capacity);
}

}  // namespace

extern "C" {

mixp_status mixp_optimizer_options_init_sized(mixp_optimizer_options *options, size_t size,
                                              mixp_optimizer_kind kind) {
  mixp_optimizer_options defaults;
  optim::default_options(defaults, kind);
  return init_options_sized(options, size, defaults, "mixp_optimizer_options_init_sized");
}

mixp_status mixp_optimizer_create(mixp_session *session, mixp_tensor *const *params, int n,
                                  const mixp_optimizer_options *options, mixp_optimizer **out) {
  static const char *fn = "mixp_optimizer_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    const mixp_optimizer_options o = optim::read_options(options, fn);
    *out = make_optimizer(s, params, n, o, fn).release();
  });
}

void mixp_optimizer_destroy(mixp_optimizer *optimizer) {
  // A stale or foreign handle is left alone: there is no status to report it.
  if (optimizer && optimizer->magic == Optimizer::kMagic) delete optimizer;
}

mixp_status mixp_optimizer_step(mixp_optimizer *optimizer) {
  static const char *fn = "mixp_optimizer_step";
  return guard(fn, [&] {
    Optimizer *o = check_optimizer(optimizer, fn);
    // An update inside a checkpoint region would change what its replay reads.
    if (o->session->checkpoint)
      fail(MIXP_ERR_STATE, fn, ": a checkpoint region is open on the optimizer's session; call "
           "mixp_checkpoint_end first");
    o->step(fn);
  });
}

mixp_status mixp_optimizer_zero_grad(mixp_optimizer *optimizer) {
  static const char *fn = "mixp_optimizer_zero_grad";
  return guard(fn, [&] { check_optimizer(optimizer, fn)->zero_grad(); });
}

mixp_status mixp_optimizer_get_lr(const mixp_optimizer *optimizer, double *lr) {
  static const char *fn = "mixp_optimizer_get_lr";
  return guard(fn, [&] {
    const Optimizer *o = check_optimizer(optimizer, fn);
    check_out(lr, fn, "lr");
    *lr = o->current_lr();
  });
}

mixp_status mixp_optimizer_set_lr(mixp_optimizer *optimizer, double lr) {
  static const char *fn = "mixp_optimizer_set_lr";
  return guard(fn, [&] {
    Optimizer *o = check_optimizer(optimizer, fn);
    if (!std::isfinite(lr) || lr < 0.0)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": lr must be finite and >= 0, got ", lr);
    o->options.lr = lr;
  });
}

int64_t mixp_optimizer_step_count(const mixp_optimizer *optimizer) {
  static const char *fn = "mixp_optimizer_step_count";
  return guard_value(fn, int64_t(-1),
                     [&] { return check_optimizer(optimizer, fn)->step_count; });
}

mixp_status mixp_optimizer_nonfinite_grads(const mixp_optimizer *optimizer, int *indices, int capacity,
                                           int *count) {
  static const char *fn = "mixp_optimizer_nonfinite_grads";
  return guard(fn, [&] {
    const Optimizer *o = check_optimizer(optimizer, fn);
    check_array_out(indices, "indices", capacity, count, fn);
    const std::vector<int> found = o->nonfinite_grads();
    for (size_t i = 0; i < found.size() && i < size_t(capacity); ++i) indices[i] = found[i];
    *count = int(found.size());
  });
}

mixp_status mixp_optimizer_grad_underflow(const mixp_optimizer *optimizer, mixp_dtype low, double *fractions,
                                          int capacity, int *count) {
  static const char *fn = "mixp_optimizer_grad_underflow";
  return guard(fn, [&] {
    const Optimizer *o = check_optimizer(optimizer, fn);
    check_array_out(fractions, "fractions", capacity, count, fn);
    double smallest_normal = 0;
    switch (low) {
      case MIXP_F16: smallest_normal = 0x1p-14; break;
      case MIXP_BF16: case MIXP_F32: smallest_normal = 0x1p-126; break;
      default:
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": low is ", int(low), ", expected MIXP_F16, MIXP_BF16 or MIXP_F32");
    }
    const std::vector<double> f = o->grad_underflow(smallest_normal);
    for (size_t i = 0; i < f.size() && i < size_t(capacity); ++i) fractions[i] = f[i];
    *count = int(f.size());
  });
}

mixp_status mixp_lr_schedule_value(const mixp_optimizer_options *options, int64_t step,
                                   double *lr) {
  static const char *fn = "mixp_lr_schedule_value";
  return guard(fn, [&] {
    const mixp_optimizer_options o = optim::read_options(options, fn);
    optim::check_schedule_options(o, fn);
    if (step < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": step must be >= 0, got ", step);
    check_out(lr, fn, "lr");
    *lr = optim::schedule_lr(o, o.lr, step);
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
