// Part of the backend contract: the arguments of Backend::sgd_step and
// adam_step, the boundary between the optimizer logic (state, schedules,
// validation in optim/optimizer.cpp) and the fused per-element update
// kernels (cpu/optim.cpp, kernels/optim.cu). A kernel makes one pass
// over param (or its fp32 master), grad and the state buffers, computing in
// fp32 (fp64 for F64 parameters) and rounding the parameter to its dtype in
// place. Pointers are device memory of the session's backend; every array
// is contiguous with n elements.
#pragma once
#include <cstdint>
#include <type_traits>

#include "core/dtype.hpp"
#include "core/error.hpp"

namespace mixp::optim {

// One parameter as the kernels see it. With a master (multi-precision, for
// F16/BF16 parameters) the update reads and writes the fp32 master from an
// fp32 gradient and stores the rounded result into the half parameter;
// without one it reads the parameter itself and the gradient is in the
// parameter's dtype.
struct ParamArgs {
  DType dtype = MIXP_F32;  // the parameter's
  int64_t n = 0;
  void *param = nullptr;
  void *master = nullptr;      // F32 or null
  // The gradient: `dtype`, or (only with a master) F32 when grad_f32 is set
  // (decorate's master_grad). Half grads are widened inside the kernel.
  const void *grad = nullptr;
  bool grad_f32 = false;
  // Updates applied to this parameter so far (PyTorch's state['step']), an
  // F64 scalar in device memory: the kernel reads it (SGD's first step
  // initialises the momentum buffer, Adam's bias corrections) and increments
  // it when it updates, so the host never needs to know whether a step was
  // skipped.
  double *step = nullptr;
  // The optimizer state: SGD's momentum buffer in buf1 (null when momentum
  // == 0); Adam's exp_avg in buf1, exp_avg_sq in buf2. Stored as
  // state_dtype: F64 for F64 parameters, else F32 or BF16 (half the memory;
  // read widened, computed in fp32, stored rounded to nearest).
  void *buf1 = nullptr;
  void *buf2 = nullptr;
  DType state_dtype = MIXP_F32;
  // Stochastic rounding of the parameter write (only BF16 parameters without
  // a master): element i is rounded with stochastic_bits(seed, offset, i)
  // (stochastic_round.hpp); the caller reserves ceil(n / 4) Philox blocks
  // from offset on.
  bool stochastic = false;
  uint64_t seed = 0, offset = 0;
};

// torch.optim.SGD for one parameter, with everything resolved for this step:
//   d = g + weight_decay * p
//   if momentum != 0:
//     buf = (step == 0) ? d : momentum * buf + (1 - dampening) * d
//     d = nesterov ? d + momentum * buf : buf
//   p = p - lr * d
struct SgdArgs {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};

// torch.optim.Adam / AdamW for one parameter at its step t = step + 1:
//   AdamW: p = p * (1 - lr * weight_decay);  Adam: g = g + weight_decay * p
//   m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
//   p = p - (lr / bias_correction1) * m / (sqrt(v) / sqrt(bias_correction2) + eps)
// with bias_correction_k = 1 - beta_k^t, formed in double in the kernel.
struct AdamArgs {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  bool decoupled = false;  // AdamW
};

// Both steps take every parameter of an optimizer in one call (a list of
// ParamArgs, in any mix of dtypes), so that a backend can batch them: the
// CUDA backend covers the list with a few multi-tensor launches instead of
// two launches per parameter. Each parameter's update is independent of the
// others and the same as if it were passed alone.
//
// found_inf (an argument of both steps), when not null, is an F32 scalar in
// device memory: a non-zero value skips the whole update (parameters,
// masters, state and steps stay bit-identical), which is how a GradScaler or
// a non-finite clip norm skips a step without a host sync.

// The storage types of one parameter's update, the contract's rules in one
// place for every backend: given the parameter's storage type T (from the
// backend's own dtype dispatch), calls
//   f(T{}, G{}, S{}, std::bool_constant<master>{}, std::bool_constant<stochastic>{})
// with G the gradient's type (T, or float with a master and grad_f32) and S
// the state's (acc_t<T>, or bf16 for BF16 state). A master is fp32, so it
// pairs only with parameters that compute in fp32, as does BF16 state;
// stochastic rounding is for BF16 parameters without a master. Anything else
// is MIXP_ERR_INTERNAL naming `where` (e.g. "cpu adam"): the optimizer never
// asks for it.
template <class T, class F>
void with_param_types(DType dtype, bool master, bool grad_f32, DType state_dtype, bool stochastic,
                      const char *where, F &&f) {
  using A = acc_t<T>;
  auto with_state = [&](auto gtag, auto has_master) {
    constexpr bool kMaster = decltype(has_master)::value;
    auto with_rounding = [&](auto state) {
      if (!stochastic) {
        f(T{}, gtag, state, has_master, std::false_type{});
      } else if constexpr (std::is_same_v<T, bf16> && !kMaster) {
        f(T{}, gtag, state, has_master, std::true_type{});
      } else {
        fail(MIXP_ERR_INTERNAL, where, ": stochastic rounding of a ", dtype_name(dtype),
             kMaster ? " parameter with a master" : " parameter");
      }
    };
    if (state_dtype == (std::is_same_v<A, double> ? MIXP_F64 : MIXP_F32)) {
      with_rounding(A{});
    } else if constexpr (std::is_same_v<A, float>) {
      if (state_dtype != MIXP_BF16) fail(MIXP_ERR_INTERNAL, where, ": state dtype ", dtype_name(state_dtype));
      with_rounding(bf16{});
    } else {
      fail(MIXP_ERR_INTERNAL, where, ": state dtype ", dtype_name(state_dtype), " for a ", dtype_name(dtype),
           " parameter");
    }
  };
  if (!master) {
    with_state(T{}, std::false_type{});
  } else if constexpr (std::is_same_v<A, float>) {
    if (grad_f32) with_state(float{}, std::true_type{});
    else with_state(T{}, std::true_type{});
  } else {
    fail(MIXP_ERR_INTERNAL, where, ": an fp32 master for a ", dtype_name(dtype), " parameter");
  }
}

}  // namespace mixp::optim
