#include "core/options.hpp"
#include "amp/grad_scaler.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "autocast/autocast.hpp"
#include "autograd/node.hpp"
#include "backend/backend.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"
#include "ops/profile.hpp"

using mixp::Optimizer;
using mixp::Tensor;
using mixp::TensorPtr;

namespace mixp {
namespace {

constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

// Checks every field; `status` and `prefix` distinguish create()
// (INVALID_ARGUMENT, "options->") from load_state() (CORRUPT, "saved ").
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

template <class T>
T read_scalar(const Tensor &t) {
  T v{};
  t.session->backend->copy_to_host(&v, t.data(), sizeof v);
  return v;
}

template <class T>
void write_scalar(const Tensor &t, T v) {
  t.session->backend->copy_from_host(t.data(), &v, sizeof v);
}

// ---- little-endian serialisation ------------------------------------------
// Version 1 layout (104 bytes): "MXGS", u32 version, u32 payload bytes (88),
// i32 mode, f64 init_scale, growth_factor, backoff_factor, i64
// growth_interval, decr_every_n_nan_or_inf, hysteresis, f64 min_scale,
// max_scale, f32 scale, i32 growth_tracker, bad_count, hysteresis_left,
// last_found_inf (0/1), then u32 FNV-1a of every byte before it.
constexpr unsigned char kStateMagic[4] = {'M', 'X', 'G', 'S'};
constexpr uint32_t kStateVersion = 1;
constexpr size_t kHeaderBytes = 12;
constexpr size_t kPayloadBytes = 88;
constexpr size_t kStateBytes = kHeaderBytes + kPayloadBytes + 4;
static_assert(kStateBytes == mixp_grad_scaler::kStateBytes);

uint32_t fnv1a(const unsigned char *p, size_t n) noexcept {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

class Writer {
 public:
  explicit Writer(unsigned char *p) : p_(p) {}
  void u32(uint32_t v) { put(v, 4); }
  void i32(int32_t v) { put(uint32_t(v), 4); }
  void i64(int64_t v) { put(uint64_t(v), 8); }
  void f32(float v) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    put(b, 4);
  }
  void f64(double v) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    put(b, 8);
  }
  size_t pos() const noexcept { return pos_; }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) p_[pos_++] = (unsigned char)(v >> (8 * i));
  }
  unsigned char *p_;
  size_t pos_ = 0;
};

class Reader {
 public:
  explicit Reader(const unsigned char *p) : p_(p) {}
  uint32_t u32() { return uint32_t(get(4)); }
  int32_t i32() { return int32_t(uint32_t(get(4))); }
  int64_t i64() { return int64_t(get(8)); }
  float f32() {
    uint32_t b = uint32_t(get(4));
    float v;
    std::memcpy(&v, &b, 4);
    return v;
  }
  double f64() {
    uint64_t b = get(8);
    double v;
    std::memcpy(&v, &b, 8);
    return v;
  }
  void skip(size_t n) { pos_ += n; }

 private:
  uint64_t get(int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(p_[pos_++]) << (8 * i);
    return v;
  }
  const unsigned char *p_;
  size_t pos_ = 0;
};

}  // namespace

namespace amp {
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
  check_scaler_options(o, true, MIXP_ERR_INVALID_ARGUMENT, "options->", fn);
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

// ---- the scaler ---------------------------------------------------------------

mixp_grad_scaler::Record *mixp_grad_scaler::find(const Optimizer &opt) noexcept {
  for (Record &r : records) {
    std::shared_ptr<const int> id = r.id.lock();
    if (id && id.get() == opt.identity.get()) return &r;
  }
  return nullptr;
}

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
  Record *r = find(opt);
  if (r && r->stage == Stage::Unscaled)
    fail(MIXP_ERR_STATE, fn,
         ": unscale() has already been called on this optimizer since the last update()");
  if (r && r->stage == Stage::Stepped)
    fail(MIXP_ERR_STATE, fn, ": unscale() is being called after step()");

  // Everything that allocates first, so that a failure changes nothing.
  TensorPtr found, inv;
  std::vector<TensorPtr> grads;
  {
    OpScope scope(OpId::grad_scaler_unscale, s);
    NoGradGuard no_grad(s);
    found = zeros(s, MIXP_F32, Shape{});
    // PyTorch: scale.double().reciprocal().float(), on the device.
    inv = cast(unary(UnaryOp::RdivScalar, cast(scale, MIXP_F64), 1.0), MIXP_F32);
    grads = opt.contiguous_grads();
  }
  if (!r) {
    records.push_back(Record{});
    r = &records.back();
    r->id = opt.identity;
  }
  std::vector<View> views;
  views.reserve(grads.size());
  for (const TensorPtr &g : grads) views.push_back(view_of(*g));
  apply_threads(s);
  Backend &be = *s->backend;
  be.non_finite_check_and_unscale(views.data(), int(views.size()), view_of(*found),
                                  view_of(*inv));
  // The optimizer's kernels read its own flag: add ours into it.
  const View flag = view_of(*opt.found_inf);
  be.binary(BinaryOp::Add, flag, view_of(*found), flag);
  opt.skip_agreed = false;
  r->stage = Stage::Unscaled;
  r->flag = opt.found_inf;
  r->found_inf = std::move(found);
}

void mixp_grad_scaler::step(Optimizer &opt, const char *fn) {
  using namespace mixp;
  ProfileScope profiled(session.get(), "grad_scaler_step");
  if (disabled()) {
    opt.step(fn);
    return;
  }
  require_same_session(opt, fn);
  Record *r = find(opt);
  if (r && r->stage == Stage::Stepped)
    fail(MIXP_ERR_STATE, fn, ": step() has already been called since the last update()");
  if (!r || r->stage == Stage::Ready) {
    unscale(opt, fn);
    r = find(opt);
  }
  // The optimizer's step clears its flag: keep what it held (the unscale's
  // finding plus a non-finite clip norm) for update().
  TensorPtr snapshot = zeros(session.get(), MIXP_F32, Shape{});
  // Data parallel: what update() sees is what every rank stepped on.
  opt.agree_on_skip();
  session->backend->copy(view_of(*opt.found_inf), view_of(*snapshot));
  opt.step(fn);
  r->found_inf = std::move(snapshot);
  r->stage = Stage::Stepped;
}

TensorPtr mixp_grad_scaler::finish_iteration() {
  using namespace mixp;
  Session *s = session.get();
  TensorPtr sum;
  {
    OpScope scope(OpId::grad_scaler_update, s);
    NoGradGuard no_grad(s);
    for (const Record &r : records) {
      TensorPtr f = r.found_inf;
      // Unscaled but never stepped through the scaler: the optimizer's flag
      // may hold a clip finding too (or was consumed by a plain step, in
      // which case ours still holds the unscale's).
      if (r.stage == Stage::Unscaled) f = add(f, r.flag);
      sum = sum ? add(sum, f) : clone(f);
    }
    if (!sum) sum = zeros(s, MIXP_F32, Shape{});
  }
  for (const Record &r : records)
    if (r.stage == Stage::Unscaled) s->backend->fill(view_of(*r.flag), 0.0);
  records.clear();
  return sum;
}

void mixp_grad_scaler::update(const char *fn) {
  using namespace mixp;
  if (disabled()) return;
  Session *s = check_session(session.get(), fn, "the scaler's session");
  if (records.empty())
    fail(MIXP_ERR_STATE, fn,
         ": no unscale() or step() was recorded since the last update() (nothing to update from)");
  TensorPtr sum = finish_iteration();
  if (options.mode == MIXP_SCALER_DYNAMIC) {
    ScaleUpdate u;
    u.scale = view_of(*scale);
    u.growth_tracker = view_of(*growth_tracker);
    u.bad_count = view_of(*bad_count);
    u.hysteresis_left = view_of(*hysteresis_left);
    u.found_inf = view_of(*sum);
    u.rule.growth_factor = options.growth_factor;
    u.rule.backoff_factor = options.backoff_factor;
    u.rule.growth_interval = int32_t(options.growth_interval);
    u.rule.decr_every_n = int32_t(options.decr_every_n_nan_or_inf);
    u.rule.hysteresis = int32_t(options.hysteresis);
    u.rule.min_scale = options.min_scale;
    u.rule.max_scale = options.max_scale;
    s->backend->update_scale(u);
  }
  count_skipped(*s, *sum);
  last_found_inf = std::move(sum);
  if (options.mode == MIXP_SCALER_DYNAMIC) note_scale(read_scale_if_watched());
}

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

// skipped += (found != 0), on the device: `found` sums the optimizers' 0/1
// flags, a small integer, so 1 - relu(1 - found) is exactly that indicator.
// Backend calls, not ops: no autograd, no op statistics, no wait.
void mixp_grad_scaler::count_skipped(mixp::Session &s, const mixp::Tensor &found) {
  using namespace mixp;
  Backend &be = *s.backend;
  TensorPtr ind = empty(&s, MIXP_F64, Shape{});
  const View v = view_of(*ind);
  be.copy(view_of(found), v);
  be.unary(UnaryOp::RsubScalar, v, v, 1.0);
  be.unary(UnaryOp::Relu, v, v, 0.0);
  be.unary(UnaryOp::RsubScalar, v, v, 1.0);
  be.binary(BinaryOp::Add, view_of(*skipped), v, view_of(*skipped));
}

void mixp_grad_scaler::update_to(double new_scale, const char *fn) {
  using namespace mixp;
  if (!std::isfinite(new_scale) || !(new_scale > 0.0) || !std::isfinite(float(new_scale)) ||
      float(new_scale) == 0.0f)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn,
         ": new_scale must be finite and > 0 (representable in fp32), got ", new_scale);
  if (disabled()) return;
  check_session(session.get(), fn, "the scaler's session");
  if (!records.empty()) last_found_inf = finish_iteration();
  write_scalar(*scale, float(new_scale));
  note_scale(double(float(new_scale)));
}

double mixp_grad_scaler::read_scale() const {
  using namespace mixp;
  return disabled() ? 1.0 : double(read_scalar<float>(*scale));
}

int mixp_grad_scaler::read_found_inf() const {
  using namespace mixp;
  if (disabled() || !last_found_inf) return 0;
  return read_scalar<float>(*last_found_inf) != 0.0f ? 1 : 0;
}

int64_t mixp_grad_scaler::read_skipped() const {
  using namespace mixp;
  return disabled() ? 0 : int64_t(read_scalar<double>(*skipped));
}

int64_t mixp_grad_scaler::read_growth_tracker() const {
  using namespace mixp;
  return disabled() ? 0 : int64_t(read_scalar<int32_t>(*growth_tracker));
}

void mixp_grad_scaler::save_state(unsigned char *buf) const {
  using namespace mixp;
  std::memcpy(buf, kStateMagic, 4);
  Writer body(buf + 4);
  body.u32(kStateVersion);
  body.u32(uint32_t(kPayloadBytes));
  body.i32(int32_t(options.mode));
  body.f64(options.init_scale);
  body.f64(options.growth_factor);
  body.f64(options.backoff_factor);
  body.i64(options.growth_interval);
  body.i64(options.decr_every_n_nan_or_inf);
  body.i64(options.hysteresis);
  body.f64(options.min_scale);
  body.f64(options.max_scale);
  body.f32(read_scalar<float>(*scale));
  body.i32(read_scalar<int32_t>(*growth_tracker));
  body.i32(read_scalar<int32_t>(*bad_count));
  body.i32(read_scalar<int32_t>(*hysteresis_left));
  body.i32(last_found_inf && read_scalar<float>(*last_found_inf) != 0.0f ? 1 : 0);
  const size_t end = 4 + body.pos();
  Writer tail(buf + end);
  tail.u32(fnv1a(buf, end));
}

mixp_grad_scaler::LoadedState mixp_grad_scaler::prepare_load_state(const unsigned char *buf,
                                                                   size_t n,
                                                                   const char *fn) const {
  using namespace mixp;
  if (!records.empty())
    fail(MIXP_ERR_STATE, fn,
         ": load_state() called between unscale()/step() and update(); finish the step first");
  if (n < kHeaderBytes)
    fail(MIXP_ERR_CORRUPT, fn, ": state is truncated: ", n, " bytes, expected ", kStateBytes);
  if (std::memcmp(buf, kStateMagic, 4) != 0)
    fail(MIXP_ERR_CORRUPT, fn, ": state has a bad magic (not a mixp grad scaler state)");
  Reader r(buf + 4);
  const uint32_t version = r.u32();
  if (version != kStateVersion)
    fail(MIXP_ERR_CORRUPT, fn, ": state has unsupported version ", version, " (this library reads ",
         kStateVersion, ")");
  const uint32_t payload = r.u32();
  if (payload != kPayloadBytes || n != kStateBytes)
    fail(MIXP_ERR_CORRUPT, fn, ": state is truncated or has trailing bytes: ", n,
         " bytes with payload ", payload, ", expected ", kStateBytes, " with payload ",
         kPayloadBytes);
  Reader tail(buf + kStateBytes - 4);
  if (tail.u32() != fnv1a(buf, kStateBytes - 4))
    fail(MIXP_ERR_CORRUPT, fn, ": state checksum mismatch (the bytes were altered)");

  mixp_grad_scaler_options o;
  amp::default_scaler_options(o);
  o.mode = mixp_scaler_mode(r.i32());
  o.init_scale = r.f64();
  o.growth_factor = r.f64();
  o.backoff_factor = r.f64();
  o.growth_interval = r.i64();
  o.decr_every_n_nan_or_inf = r.i64();
  o.hysteresis = r.i64();
  o.min_scale = r.f64();
  o.max_scale = r.f64();
  const float sc = r.f32();
  const int32_t growth = r.i32(), bad = r.i32(), hyst = r.i32(), found = r.i32();
  check_scaler_options(o, false, MIXP_ERR_CORRUPT, "saved ", fn);
  // Whatever the scaler can reach must load: a run of overflows backs the
  // scale off to 0 when min_scale is 0 (PyTorch saves and loads that too).
  if (!std::isfinite(sc) || !(sc >= 0.0f))
    fail(MIXP_ERR_CORRUPT, fn, ": saved scale must be finite and >= 0, got ", sc);
  if (growth < 0 || growth >= o.growth_interval)
    fail(MIXP_ERR_CORRUPT, fn, ": saved growth_tracker ", growth, " is outside [0, ",
         o.growth_interval, ")");
  if (bad < 0 || bad >= o.decr_every_n_nan_or_inf)
    fail(MIXP_ERR_CORRUPT, fn, ": saved bad_count ", bad, " is outside [0, ",
         o.decr_every_n_nan_or_inf, ")");
  if (hyst < 0 || hyst > o.hysteresis)
    fail(MIXP_ERR_CORRUPT, fn, ": saved hysteresis_left ", hyst, " is outside [0, ",
         o.hysteresis, "]");
  if (found != 0 && found != 1)
    fail(MIXP_ERR_CORRUPT, fn, ": saved found_inf must be 0 or 1, got ", found);

  // The allocation happens here so that the commit cannot fail.
  return LoadedState{o, sc, growth, bad, hyst, full(session.get(), MIXP_F32, Shape{}, double(found))};
}

void mixp_grad_scaler::commit_load_state(LoadedState &&st) {
  using namespace mixp;
  const mixp_low_scale_action watch = options.below_one;  // the scaler's own, not saved
  options = st.options;
  options.below_one = watch;
  write_scalar(*scale, st.scale);
  if (options.mode == MIXP_SCALER_DYNAMIC) note_scale(double(st.scale));
  write_scalar(*growth_tracker, st.growth);
  write_scalar(*bad_count, st.bad);
  write_scalar(*hysteresis_left, st.hysteresis);
  last_found_inf = std::move(st.last);
}

void mixp_grad_scaler::load_state(const unsigned char *buf, size_t n, const char *fn) {
  commit_load_state(prepare_load_state(buf, n, fn));
}
