// The optimizer behind the opaque mixp_optimizer handle: SGD, Adam and AdamW
// with PyTorch's algorithms, per-parameter state created lazily on the first
// step that sees a gradient, and the learning-rate schedules. The update
// itself runs through the fused kernels of the backend (backend/optimizer_args.hpp).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/options.hpp"
#include "core/tensor.hpp"
#include "mixp/mixp.h"

namespace mixp::optim {

// The caller's options struct at any released size (core/options.hpp: 0.3's
// ended before state_dtype); a missing field reads as its default.
mixp_optimizer_options read_options(const mixp_optimizer_options *o, const char *fn);

// The dtype of the state kept for a parameter of dtype `param` under `o`:
// F64 for F64 parameters, else o.state_dtype (F32 or BF16; also with an
// fp32 master, which holds the parameter, not the moments).
DType state_dtype_for(const mixp_optimizer_options &o, DType param) noexcept;

// Validates every field mixp_lr_schedule_value() reads (struct_size, lr,
// schedule, warmup_steps, total_steps, min_lr); messages name `fn` and the
// field.
void check_schedule_options(const mixp_optimizer_options &o, const char *fn);
// Validates the whole options struct for mixp_optimizer_create().
void check_options(const mixp_optimizer_options &o, const char *fn);

// The learning rate of 0-based step `step` under the schedule of `o` with
// base rate `base_lr`:
//   constant:      base_lr
//   warmup-cosine: base_lr * step / warmup_steps           for step < warmup_steps
//                  min_lr + (base_lr - min_lr) * (1 + cos(pi * (step - warmup_steps)
//                           / (total_steps - warmup_steps))) / 2   up to total_steps
//                  min_lr                                   from total_steps on
double schedule_lr(const mixp_optimizer_options &o, double base_lr, int64_t step) noexcept;

// Fills o with the defaults of torch.optim for `kind`.
void default_options(mixp_optimizer_options &o, mixp_optimizer_kind kind) noexcept;

}  // namespace mixp::optim

struct mixp_optimizer {
  static constexpr uint32_t kMagic = 0x4f505449u;  // "OPTI"
  uint32_t magic = kMagic;

  // One parameter and its state. Buffers are null until the first step that
  // finds a gradient for the parameter.
  struct Slot {
    mixp::TensorPtr param;
    // The fp32 master of a half parameter (multi-precision, set by O2
    // decorate): contiguous, updated by the kernel, rounded into param.
    mixp::TensorPtr master;
    mixp::TensorPtr buf1;  // SGD momentum_buffer, Adam exp_avg
    mixp::TensorPtr buf2;  // Adam exp_avg_sq
    // Updates applied to this parameter (Adam's state['step']): an F64
    // scalar in device memory that only the kernels advance, so a step
    // skipped on the device leaves it alone without the host knowing.
    mixp::TensorPtr step;
  };

  mixp::SessionRef session;
  mixp_optimizer_options options{};  // validated copy; options.lr is the base lr
  std::vector<Slot> slots;
  // Calls of step(), skipped ones included: it drives the LR schedule, as
  // PyTorch's scheduler.step() runs whether or not the scaler skipped.
  int64_t step_count = 0;
  // The skip flag (F32 scalar, device memory): set by a GradScaler's unscale
  // and by a non-finite clip norm, read by the kernels of the next step(),
  // which then leave everything untouched, and reset to 0 by that step().
  mixp::TensorPtr found_inf;
  // Identity for weak references (a GradScaler's per-optimizer records): a
  // record holds a weak_ptr to it, so a destroyed optimizer is recognised as
  // gone even if a new one is allocated at the same address.
  std::shared_ptr<const int> identity = std::make_shared<const int>(0);
  // Data parallelism (src/dist/): reduces an F32 scalar of this session with
  // MAX over the ranks, in place. Set by mixp_dist_average_gradients; empty
  // in a single process (or once the communicator is gone).
  std::function<void(mixp::Tensor &)> agree_max;
  // found_inf has been agreed on since it was last written (by a scaler's
  // unscale or a clip), so it is not reduced twice before one step.
  bool skip_agreed = false;

  ~mixp_optimizer() { magic = 0; }

  double current_lr() const noexcept {
    return mixp::optim::schedule_lr(options, options.lr, step_count);
  }
  // Updates every parameter that has a gradient, then advances step_count
  // and clears found_inf. Either all parameters are updated or (on error)
  // none is; when found_inf is set on the device, the kernels skip and every
  // parameter, master and state buffer stays bit-identical.
  void step(const char *fn);
  // What every step does on the host once its update is queued: step_count
  // (the schedule's clock) and the session's numerics step advance.
  void advance() noexcept;
  // Makes found_inf the same on every rank (MAX) before a step reads it, so
  // that every rank skips the same steps. No-op without agree_max.
  void agree_on_skip();
  void zero_grad() noexcept;
  // True once any parameter has state (a step has seen its gradient).
  bool has_state() const noexcept;
  // The indices of the parameters whose gradient holds NaN or Inf (waits
  // for the device).
  std::vector<int> nonfinite_grads() const;
  // Per parameter, the fraction of its gradient's elements that are zero or
  // below `smallest_normal` in magnitude (NaN without a gradient); waits for
  // the device.
  std::vector<double> grad_underflow(double smallest_normal) const;
  // The gradients of the parameters that have one, made contiguous (in
  // place, replacing a strided .grad by a contiguous copy) so that the
  // multi-tensor kernels can run over them.
  std::vector<mixp::TensorPtr> contiguous_grads();
};

namespace mixp {

using Optimizer = mixp_optimizer;

// Validates a handle from the C API (non-NULL, live magic).
Optimizer *check_optimizer(const mixp_optimizer *o, const char *fn,
                           const char *arg = "optimizer");

// Builds an optimizer after validating options and parameters (see
// mixp_optimizer_create for the rules and status codes).
std::unique_ptr<Optimizer> make_optimizer(Session *s, mixp_tensor *const *params, int n,
                                          const mixp_optimizer_options &options,
                                          const char *fn);

}  // namespace mixp
