// The GradScaler's state bytes: mixp_grad_scaler_save_state and _load_state,
// and the scaler's part of a training-state file (src/state/). The options
// are checked as create() checks them (check_scaler_options), the counters
// against the ranges the scaler itself can reach.
#include "amp/grad_scaler.hpp"

#include <cmath>
#include <cstring>

#include "core/error.hpp"

using mixp::amp::read_scalar;
using mixp::amp::write_scalar;

namespace mixp {
namespace {

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
}  // namespace mixp

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
  if (handshake.pending())
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
  amp::check_scaler_options(o, false, MIXP_ERR_CORRUPT, "saved ", fn);
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
