// The loss scaler behind the opaque mixp_grad_scaler handle: PyTorch's
// GradScaler algorithm and per-optimizer state machine (READY -> UNSCALED ->
// STEPPED -> READY at update), extended with Paddle's
// decr_every_n_nan_or_inf, Apex/Megatron hysteresis and min/max bounds.
//
// Everything a step touches is device memory: the scale and the counters
// (F32 scale, I32 counters), the per-optimizer overflow flags, and the
// optimizer's own skip flag, which its kernels read. So scale(), unscale(),
// step() and update() queue work and never wait for it. What the flags do
// between unscale and update is the found-inf handshake
// (found_inf_handshake.hpp), which keeps the per-optimizer records.
#pragma once
#include <cstdint>
#include <memory>

#include "amp/found_inf_handshake.hpp"
#include "backend/backend.hpp"
#include "core/tensor.hpp"
#include "mixp/mixp.h"
#include "optim/optimizer.hpp"

struct mixp_grad_scaler {
  static constexpr uint32_t kMagic = 0x5343414cu;  // "SCAL"
  uint32_t magic = kMagic;

  mixp::SessionRef session;
  mixp_grad_scaler_options options{};  // validated; mode resolved (never AUTO)
  mixp::TensorPtr scale;               // F32 scalar
  mixp::TensorPtr growth_tracker;      // I32 scalar: clean steps in a row
  mixp::TensorPtr bad_count;           // I32 scalar: overflowing steps in a row
  mixp::TensorPtr hysteresis_left;     // I32 scalar: overflows still tolerated
  mixp::TensorPtr last_found_inf;      // F32 scalar summed by the last update; null before
  mixp::TensorPtr skipped;             // F64 scalar: updates that found an overflow
  mixp::amp::FoundInfHandshake handshake;  // the optimizers seen since the last update
  // options.below_one: warned once already; the low scale scale() refuses
  // to work under (0: none).
  bool low_scale_warned = false;
  double low_scale = 0.0;

  ~mixp_grad_scaler() { magic = 0; }

  bool disabled() const noexcept { return options.mode == MIXP_SCALER_DISABLED; }

  mixp::TensorPtr scale_loss(const mixp::TensorPtr &loss, const char *fn);
  void unscale(mixp::Optimizer &opt, const char *fn);
  void step(mixp::Optimizer &opt, const char *fn);
  void update(const char *fn);
  void update_to(double new_scale, const char *fn);

  double read_scale() const;
  double read_scale_if_watched() const;
  void note_scale(double v);
  int read_found_inf() const;
  int64_t read_growth_tracker() const;
  int64_t read_skipped() const;

  // Bytes of the serialised state (format: see grad_scaler.cpp).
  static constexpr size_t kStateBytes = 104;
  static size_t state_size() noexcept { return kStateBytes; }
  // Writes kStateBytes bytes.
  void save_state(unsigned char *buf) const;
  void load_state(const unsigned char *buf, size_t n, const char *fn);
  // load_state() in two halves, for callers that restore several objects
  // all-or-nothing: prepare validates everything (MIXP_ERR_STATE between
  // unscale()/step() and update(), MIXP_ERR_CORRUPT for bad bytes) and
  // allocates; commit only writes the validated values.
  struct LoadedState {
    mixp_grad_scaler_options options;
    float scale;
    int32_t growth, bad, hysteresis;
    mixp::TensorPtr last;
  };
  LoadedState prepare_load_state(const unsigned char *buf, size_t n, const char *fn) const;
  void commit_load_state(LoadedState &&st);

 private:
  void require_same_session(const mixp::Optimizer &opt, const char *fn) const;
  mixp::ScaleUpdate scale_update() const;
};

namespace mixp {

using GradScaler = mixp_grad_scaler;

// Validates a scaler handle from the C API (non-NULL, live magic).
GradScaler *check_grad_scaler(const mixp_grad_scaler *g, const char *fn,
                              const char *arg = "scaler");

namespace amp {
void default_scaler_options(mixp_grad_scaler_options &o) noexcept;
// Checks every field; `status` and `prefix` distinguish create()
// (INVALID_ARGUMENT, "options->", MIXP_SCALER_AUTO allowed) from
// load_state() (CORRUPT, "saved ").
void check_scaler_options(const mixp_grad_scaler_options &o, bool allow_auto, mixp_status status,
                          const char *prefix, const char *fn);

// One scalar of the scaler's state between host and device (a read waits).
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
}  // namespace amp

// Builds a scaler after validating the options (NULL = defaults) and
// resolving MIXP_SCALER_AUTO from the session's autocast state.
std::unique_ptr<GradScaler> make_grad_scaler(Session *s, const mixp_grad_scaler_options *o,
                                             const char *fn);

}  // namespace mixp
