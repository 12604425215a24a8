// The dynamic loss-scale update (PyTorch's _amp_update_scale_ with Paddle's
// decr_every_n_nan_or_inf and Apex's hysteresis), written once and compiled
// for the host (CPU backend) and the device (the CUDA backend's one-thread
// kernel), so both backends follow the same state machine bit for bit:
//   if found_inf != 0:
//     growth_tracker = 0; bad_count += 1
//     if hysteresis > 1 and hysteresis_left > 0: hysteresis_left -= 1
//     if hysteresis > 1 and hysteresis_left > 0: keep the scale      (Apex/Megatron)
//     elif bad_count >= decr_every_n:                                  (Paddle)
//       scale = max(fp32(scale * backoff), min_scale); bad_count = 0
//   else:
//     bad_count = 0; hysteresis_left = hysteresis; growth_tracker += 1
//     if growth_tracker == growth_interval:
//       new = fp32(scale * growth); if isfinite(new): scale = min(new, max_scale)
//       growth_tracker = 0
// With hysteresis = decr_every_n = 1 and no bounds this is exactly PyTorch's
// _amp_update_scale_ (products formed in double and rounded once to fp32).
#pragma once
#include <cstdint>

#include "backend/host_device_math.hpp"

namespace mixp {

struct LossScaleRule {
  double growth_factor = 2.0, backoff_factor = 0.5;
  int32_t growth_interval = 2000, decr_every_n = 1, hysteresis = 1;
  double min_scale = 0.0, max_scale = 0.0;
};

struct LossScaleState {
  float scale;
  int32_t growth_tracker, bad_count, hysteresis_left;
};

// One update after a step; `found_inf` non-zero (NaN included, as in
// PyTorch's `if (*found_inf)`) means the step overflowed.
MIXP_HOST_DEVICE inline void update_loss_scale(LossScaleState &st, float found_inf,
                                                   const LossScaleRule &r) {
  if (found_inf != 0.0f) {
    st.growth_tracker = 0;
    if (st.bad_count < INT32_MAX) ++st.bad_count;
    // Apex lets the tracker run negative; stopping at 0 behaves the same.
    if (r.hysteresis > 1 && st.hysteresis_left > 0) --st.hysteresis_left;
    const bool held = r.hysteresis > 1 && st.hysteresis_left > 0;
    if (!held && st.bad_count >= r.decr_every_n) {
      const float backed = float(double(st.scale) * r.backoff_factor);
      const float lo = float(r.min_scale);
      st.scale = backed < lo ? lo : backed;
      st.bad_count = 0;
    }
  } else {
    st.bad_count = 0;
    st.hysteresis_left = r.hysteresis;
    const int32_t successful = st.growth_tracker + 1;
    if (successful >= r.growth_interval) {
      const float grown = float(double(st.scale) * r.growth_factor);
      // Never grow past the fp32 range (PyTorch) nor past max_scale.
      if (hd::isfinite(grown)) st.scale = float(r.max_scale < double(grown) ? r.max_scale : double(grown));
      st.growth_tracker = 0;
    } else {
      st.growth_tracker = successful;
    }
  }
}

}  // namespace mixp
