// The GradScaler's options and creation, and its way through an iteration:
// scale(loss) -> [unscale(opt)] -> step(opt) -> update(), per optimizer
// READY -> UNSCALED -> STEPPED -> READY at update, as PyTorch's GradScaler.
//
// Each method here checks the call (session, stage: the errors of PyTorch's
// state machine) and hands the work to one level below it:
//   scale_loss  ops (the product is part of the graph: backward runs it);
//   unscale, step, update, update_to  the found-inf handshake
//               (found_inf_handshake.hpp: unscale -> found-inf -> step or
//               skip -> scale update, every flag in one place, backend
//               kernels only), under the op records the profiler shows.
// Nothing waits for the device but the reads (read_scale & co.) and
// below_one's watch of the scale. The state bytes are grad_scaler_state.cpp.
#include "core/options.hpp"
#include "amp/grad_scaler.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "autocast/autocast.hpp"
#include "autograd/node.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"
#include "ops/profile.hpp"

using mixp::Optimizer;
using mixp::Tensor;
using mixp::TensorPtr;
using mixp::amp::OptStage;

namespace mixp {
namespace {

constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

}  // namespace

namespace amp {

void check_scaler_options(const mixp_grad_scaler_options &o, bool allow_auto, mixp_status status,
                          const char *prefix, const char *fn) {
  const int mode = int(o.mode);
  if (mode < (allow_auto ? 0 : 1) || mode > 3)
    fail(status, fn, ": ", prefix, "mode is ", mode,
         allow_auto ? ", expected MIXP_SCALER_AUTO (0), DYNAMIC (1), STATIC (2) or DISABLED (3)"
                    : ", expected MIXP_SCALER_DYNAMIC (1), STATIC (2) or DISABLED (3)");
  if (!(o.growth_factor > 1.0) || !std::isfinite(o.growth_factor))
    fail(status, fn, ": ", prefix, "growth_factor must be finite and > 1, got ", o.growth_factor);
  if (!(o.backoff_factor > 0.0 && o.backoff_factor < 1.0))
    fail(status, fn, ": ", prefix, "backoff_factor must be in (0, 1), got ", o.backoff_factor);
  auto count = [&](int64_t v, const char *field) {
    if (v < 1 || v > kI32Max)
      fail(status, fn, ": ", prefix, field, " must be in [1, 2147483647], got ", v);
  };
  count(o.growth_interval, "growth_interval");
  count(o.decr_every_n_nan_or_inf, "decr_every_n_nan_or_inf");
  count(o.hysteresis, "hysteresis");
  if (!(o.min_scale >= 0.0) || !std::isfinite(o.min_scale))
    fail(status, fn, ": ", prefix, "min_scale must be finite and >= 0, got ", o.min_scale);
  if (!(o.max_scale > 0.0) || !(o.max_scale >= o.min_scale))
    fail(status, fn, ": ", prefix, "max_scale must be > 0 and >= min_scale (", o.min_scale,
         "), got ", o.max_scale);
  if (!std::isfinite(o.init_scale) || !(o.init_scale > 0.0) || o.init_scale < o.min_scale ||
      o.init_scale > o.max_scale || !std::isfinite(float(o.init_scale)))
    fail(status, fn, ": ", prefix, "init_scale must be finite (in fp32), > 0 and in [min_scale, ",
         "max_scale] = [", o.min_scale, ", ", o.max_scale, "], got ", o.init_scale);
}

void default_scaler_options(mixp_grad_scaler_options &o) noexcept {
  std::memset(&o, 0, sizeof o);
  o.struct_size = sizeof(mixp_grad_scaler_options);
  o.mode = MIXP_SCALER_AUTO;
  o.init_scale = 65536.0;
  o.growth_factor = 2.0;
  o.backoff_factor = 0.5;
  o.growth_interval = 2000;
  o.decr_every_n_nan_or_inf = 1;
  o.hysteresis = 1;
  o.min_scale = 0.0;
  o.max_scale = HUGE_VAL;
  o.below_one = MIXP_LOW_SCALE_IGNORE;
}

}  // namespace amp

GradScaler *check_grad_scaler(const mixp_grad_scaler *g, const char *fn, const char *arg) {
  if (!g) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (g->magic != GradScaler::kMagic)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg,
         " is not a live grad scaler handle (destroyed or not a mixp_grad_scaler)");
  return const_cast<GradScaler *>(g);
}

std::unique_ptr<GradScaler> make_grad_scaler(Session *s, const mixp_grad_scaler_options *opts,
                                             const char *fn) {
  mixp_grad_scaler_options o = read_options(opts, amp::default_scaler_options, fn,
                                            "mixp_grad_scaler_options_init");
  amp::check_scaler_options(o, true, MIXP_ERR_INVALID_ARGUMENT, "options->", fn);
  if (o.below_one != MIXP_LOW_SCALE_IGNORE && o.below_one != MIXP_LOW_SCALE_WARN && o.below_one != MIXP_LOW_SCALE_ERROR)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->below_one is ", int(o.below_one),
         ", expected MIXP_LOW_SCALE_IGNORE (0), _WARN (1) or _ERROR (2)");
  if (o.mode == MIXP_SCALER_AUTO) {
    mixp_dtype dt = MIXP_F32;
    const bool in_region = autocast::current_dtype(s, &dt);
    o.mode = in_region && dt == MIXP_BF16 ? MIXP_SCALER_DISABLED : MIXP_SCALER_DYNAMIC;
  }
  auto g = std::make_unique<GradScaler>();
  g->session = SessionRef::share(s);
  g->options = o;
  g->scale = full(s, MIXP_F32, Shape{}, o.init_scale);
  g->growth_tracker = zeros(s, MIXP_I32, Shape{});
  g->bad_count = zeros(s, MIXP_I32, Shape{});
  g->hysteresis_left = full(s, MIXP_I32, Shape{}, double(o.hysteresis));
  g->skipped = zeros(s, MIXP_F64, Shape{});
  return g;
}

}  // namespace mixp

// ---- the iteration ------------------------------------------------------------

void mixp_grad_scaler::require_same_session(const Optimizer &opt, const char *fn) const {
  if (opt.session.get() != session.get())
    mixp::fail(MIXP_ERR_DEVICE, fn, ": optimizer belongs to a different session than the scaler");
}

TensorPtr mixp_grad_scaler::scale_loss(const TensorPtr &loss, const char *fn) {
  using namespace mixp;
  if (loss->session.get() != session.get())
    fail(MIXP_ERR_DEVICE, fn, ": loss belongs to a different session than the scaler");
  if (!is_float(loss->dtype))
    fail(MIXP_ERR_DTYPE, fn, ": loss must be a float tensor, got ", dtype_name(loss->dtype));
  check_session(session.get(), fn, "the scaler's session");
  if (disabled()) return loss;
  if (low_scale > 0.0)
    fail(MIXP_ERR_NUMERIC, fn, ": the loss scale fell to ", low_scale,
         ", below 1: the gradients overflow fp16 even unscaled, so no fp16 loss scale fits; train in "
         "bf16, or find the ops with the numerics checker's fp16_overflow (the scaler was created with "
         "below_one = MIXP_LOW_SCALE_ERROR)");
  // One op of its own: the inner ops are then internal, so autocast (O2
  // would run the product in fp16, where 2^16 is Inf) and the numerics
  // checker leave them alone.
  OpScope scope(OpId::grad_scaler_scale, session.get());
  // PyTorch multiplies by the fp32 scale tensor and keeps the loss's dtype;
  // the product is formed in fp32 (F64 for F64) so that a half loss is
  // rounded once, and a scale above the fp16 range still applies.
  if (loss->dtype == MIXP_F64) return mul(loss, cast(scale, MIXP_F64));
  TensorPtr product = mul(cast(loss, MIXP_F32), scale);
  return cast(product, loss->dtype);
}

void mixp_grad_scaler::unscale(Optimizer &opt, const char *fn) {
  using namespace mixp;
  if (disabled()) return;
  require_same_session(opt, fn);
  Session *s = check_session(session.get(), fn, "the scaler's session");
  const OptStage stage = handshake.stage(opt);
  if (stage == OptStage::Unscaled)
    fail(MIXP_ERR_STATE, fn,
         ": unscale() has already been called on this optimizer since the last update()");
  if (stage == OptStage::Stepped) fail(MIXP_ERR_STATE, fn, ": unscale() is being called after step()");
  OpScope scope(OpId::grad_scaler_unscale, s);
  handshake.unscale(opt, *scale);
}

void mixp_grad_scaler::step(Optimizer &opt, const char *fn) {
  using namespace mixp;
  ProfileScope profiled(session.get(), "grad_scaler_step");
  if (disabled()) {
    opt.step(fn);
    return;
  }
  require_same_session(opt, fn);
  const OptStage stage = handshake.stage(opt);
  if (stage == OptStage::Stepped)
    fail(MIXP_ERR_STATE, fn, ": step() has already been called since the last update()");
  if (stage == OptStage::Ready) {
    // PyTorch's step() unscales first; the profile shows it as the unscale.
    Session *s = check_session(session.get(), fn, "the scaler's session");
    OpScope scope(OpId::grad_scaler_unscale, s);
    handshake.unscale(opt, *scale);
  }
  handshake.step(opt, fn);
}

void mixp_grad_scaler::update(const char *fn) {
  using namespace mixp;
  if (disabled()) return;
  Session *s = check_session(session.get(), fn, "the scaler's session");
  if (!handshake.pending())
    fail(MIXP_ERR_STATE, fn,
         ": no unscale() or step() was recorded since the last update() (nothing to update from)");
  const bool dynamic = options.mode == MIXP_SCALER_DYNAMIC;
  {
    OpScope scope(OpId::grad_scaler_update, s);
    const ScaleUpdate rule = scale_update();
    TensorPtr found = handshake.update(*s, dynamic ? &rule : nullptr, *skipped);
    // Kept in one tensor once there is one, so that the replays of a
    // captured step and eager steps between them report through it alike.
    if (last_found_inf) s->backend->copy(view_of(*found), view_of(*last_found_inf));
    else last_found_inf = std::move(found);
  }
  if (dynamic) note_scale(read_scale_if_watched());
}

// The dynamic update of this scaler's tensors under its options (found_inf
// is the handshake's to fill in).
mixp::ScaleUpdate mixp_grad_scaler::scale_update() const {
  using namespace mixp;
  ScaleUpdate u;
  u.scale = view_of(*scale);
  u.growth_tracker = view_of(*growth_tracker);
  u.bad_count = view_of(*bad_count);
  u.hysteresis_left = view_of(*hysteresis_left);
  u.rule.growth_factor = options.growth_factor;
  u.rule.backoff_factor = options.backoff_factor;
  u.rule.growth_interval = int32_t(options.growth_interval);
  u.rule.decr_every_n = int32_t(options.decr_every_n_nan_or_inf);
  u.rule.hysteresis = int32_t(options.hysteresis);
  u.rule.min_scale = options.min_scale;
  u.rule.max_scale = options.max_scale;
  return u;
}

void mixp_grad_scaler::update_to(double new_scale, const char *fn) {
  using namespace mixp;
  if (!std::isfinite(new_scale) || !(new_scale > 0.0) || !std::isfinite(float(new_scale)) ||
      float(new_scale) == 0.0f)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn,
         ": new_scale must be finite and > 0 (representable in fp32), got ", new_scale);
  if (disabled()) return;
  Session *s = check_session(session.get(), fn, "the scaler's session");
  if (handshake.pending()) {
    OpScope scope(OpId::grad_scaler_update, s);
    last_found_inf = handshake.finish(*s);
  }
  amp::write_scalar(*scale, float(new_scale));
  note_scale(double(float(new_scale)));
}

// ---- below_one: watching the scale ---------------------------------------------

// The scale when below_one asks to watch it (a read: one wait on a GPU), else
// 1 (never low).
double mixp_grad_scaler::read_scale_if_watched() const {
  return options.below_one == MIXP_LOW_SCALE_IGNORE ? 1.0 : read_scale();
}

// Acts on a new scale value for below_one: warns once, or arms scale()'s
// refusal while the scale stays below 1.
void mixp_grad_scaler::note_scale(double v) {
  const bool low = v < 1.0;
  if (low && options.below_one == MIXP_LOW_SCALE_WARN && !low_scale_warned) {
    low_scale_warned = true;
    session->log(MIXP_LOG_WARNING, mixp::str("grad scaler: the loss scale fell to ", v,
                                             ", below 1: the gradients overflow fp16 even unscaled, so no fp16 "
                                             "loss scale fits; train in bf16, or find the ops with the numerics "
                                             "checker's fp16_overflow"));
  }
  low_scale = low && options.below_one == MIXP_LOW_SCALE_ERROR ? v : 0.0;
}

// ---- reads (each waits for the device) -----------------------------------------

double mixp_grad_scaler::read_scale() const {
  using namespace mixp;
  return disabled() ? 1.0 : double(amp::read_scalar<float>(*scale));
}

int mixp_grad_scaler::read_found_inf() const {
  using namespace mixp;
  if (disabled() || !last_found_inf) return 0;
  return amp::read_scalar<float>(*last_found_inf) != 0.0f ? 1 : 0;
}

int64_t mixp_grad_scaler::read_skipped() const {
  using namespace mixp;
  return disabled() ? 0 : int64_t(amp::read_scalar<double>(*skipped));
}

int64_t mixp_grad_scaler::read_growth_tracker() const {
  using namespace mixp;
  return disabled() ? 0 : int64_t(amp::read_scalar<int32_t>(*growth_tracker));
}
