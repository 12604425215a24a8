// CUDA fused optimizer steps (backend/optimizer_args.hpp): SGD and
// Adam/AdamW over one parameter, reading or writing its fp32 master and
// rounding the half parameter once. The skip flag (found_inf) and the step
// counter (an F64 in device memory) are read on the device: a flagged step
// returns before touching anything, and a separate one-thread kernel
// advances the counter only for steps that ran, so the host never waits.
//
// Bitwise parity with the CPU kernels (src/backend/cpu/optim.cpp): every
// arithmetic operation is an explicit round-to-nearest intrinsic (never
// contracted into an FMA, as the CPU's ISO C++ mode never contracts), and
// subnormals are flushed to zero after every operation as the CPU does
// under FTZ|DAZ (core/fpenv.hpp). The per-step scalars use the device's
// pow(), which may differ from glibc's in the last bit of the double; that
// reaches the result only where it changes the rounding of lr/bias_correction.
#include <cfloat>

#include "common.cuh"
#include "backend/optimizer_args.hpp"

namespace mixp::cuda {
namespace {

// Flush-to-zero of one value (DAZ on inputs, FTZ on results).
__device__ __forceinline__ float fz(float x) { return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }
__device__ __forceinline__ double fz(double x) { return fabs(x) < DBL_MIN ? copysign(0.0, x) : x; }

__device__ __forceinline__ float add(float a, float b) { return fz(__fadd_rn(a, b)); }
__device__ __forceinline__ float sub(float a, float b) { return fz(__fsub_rn(a, b)); }
__device__ __forceinline__ float mul(float a, float b) { return fz(__fmul_rn(a, b)); }
__device__ __forceinline__ float dv(float a, float b) { return fz(__fdiv_rn(a, b)); }
__device__ __forceinline__ float sqr(float a) { return fz(__fsqrt_rn(a)); }
__device__ __forceinline__ double add(double a, double b) { return fz(__dadd_rn(a, b)); }
__device__ __forceinline__ double sub(double a, double b) { return fz(__dsub_rn(a, b)); }
__device__ __forceinline__ double mul(double a, double b) { return fz(__dmul_rn(a, b)); }
__device__ __forceinline__ double dv(double a, double b) { return fz(__ddiv_rn(a, b)); }
__device__ __forceinline__ double sqr(double a) { return fz(__dsqrt_rn(a)); }

__device__ __forceinline__ bool skipped(const float *found_inf) { return found_inf && *found_inf != 0.0f; }

// The master (when kMaster) or the parameter itself is the value updated;
// G is the gradient's storage type.
template <class T, class G, bool kMaster>
__global__ void sgd_kernel(T *param, float *master, const G *grad, acc_t<T> *buf, int64_t n, const double *step,
                           const float *found_inf, double lr_d, double mom_d, double damp_d, double wd_d,
                           bool nesterov) {
  using A = acc_t<T>;
  if (skipped(found_inf)) return;
  const bool init = *step == 0.0;
  const A lr = A(lr_d), mom = A(mom_d), damp1 = A(1.0 - damp_d), wd = A(wd_d);
  const bool use_momentum = mom_d != 0.0, has_wd = wd_d != 0.0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    A p;
    if constexpr (kMaster) p = fz(master[i]); else p = fz(ld(param[i]));
    A d = fz(A(ld(grad[i])));
    if (has_wd) d = add(d, mul(wd, p));
    if (use_momentum) {
      const A b = init ? d : add(mul(fz(buf[i]), mom), mul(damp1, d));
      buf[i] = b;
      d = nesterov ? add(d, mul(mom, b)) : b;
    }
    const A r = sub(p, mul(lr, d));
    if constexpr (kMaster) master[i] = r;
    param[i] = st<T>(r);
  }
}

template <class T, class G, bool kMaster>
__global__ void adam_kernel(T *param, float *master, const G *grad, acc_t<T> *exp_avg, acc_t<T> *exp_avg_sq,
                            int64_t n, const double *step, const float *found_inf, double lr_d, double beta1_d,
                            double beta2_d, double eps_d, double wd_d, bool decoupled_arg) {
  using A = acc_t<T>;
  if (skipped(found_inf)) return;
  // The per-step scalars, formed in double and rounded once (cpu_kernels.cpp).
  const double t = *step + 1.0;
  const double bc1 = 1.0 - pow(beta1_d, t), bc2 = 1.0 - pow(beta2_d, t);
  const double w1 = 1.0 - beta1_d;
  const bool lerp_low = fabs(w1) < 0.5;
  const bool l2 = !decoupled_arg && wd_d != 0.0, decoupled = decoupled_arg && wd_d != 0.0;
  const A weight = A(w1), one_minus_weight = A(1.0 - w1), beta2 = A(beta2_d), one_minus_beta2 = A(1.0 - beta2_d);
  const A step_size = A(lr_d / bc1), bc2_sqrt = A(sqrt(bc2)), eps = A(eps_d), wd = A(wd_d);
  const A decay = A(1.0 - lr_d * wd_d);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    A p;
    if constexpr (kMaster) p = fz(master[i]); else p = fz(ld(param[i]));
    A g = fz(A(ld(grad[i])));
    if (decoupled) p = mul(p, decay);
    if (l2) g = add(g, mul(wd, p));
    // torch.lerp's two-sided formula, exact at both ends.
    A m = fz(exp_avg[i]);
    m = lerp_low ? add(m, mul(weight, sub(g, m))) : sub(g, mul(sub(g, m), one_minus_weight));
    const A v = add(mul(fz(exp_avg_sq[i]), beta2), mul(mul(one_minus_beta2, g), g));
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    const A denom = add(dv(sqr(v), bc2_sqrt), eps);
    const A r = sub(p, mul(step_size, dv(m, denom)));
    if constexpr (kMaster) master[i] = r;
    param[i] = st<T>(r);
  }
}

__global__ void step_inc_kernel(double *step, const float *found_inf) {
  if (!skipped(found_inf)) *step += 1.0;
}

// Calls f(T{}, G{}, std::bool_constant<master>{}) for the parameter's
// storage types; a master is fp32 and pairs only with fp32-compute params.
template <class F>
void dispatch_param(const optim::ParamArgs &pa, const char *kernel, F &&f) {
  if (!pa.step) fail(MIXP_ERR_INTERNAL, "cuda ", kernel, ": the step counter is NULL");
  dispatch_float_dt(pa.dtype, kernel, [&](auto tag) {
    using T = decltype(tag);
    if (!pa.master) {
      f(tag, tag, std::false_type{});
    } else if constexpr (std::is_same_v<acc_t<T>, float>) {
      if (pa.grad_f32) f(tag, float{}, std::true_type{});
      else f(tag, tag, std::true_type{});
    } else {
      fail(MIXP_ERR_INTERNAL, "cuda ", kernel, ": an fp32 master for an F64 parameter");
    }
  });
}

}  // namespace

void CudaBackend::sgd_step(const optim::ParamArgs &pa, void *momentum_buf, const optim::SgdArgs &a,
                           const float *found_inf) {
  if (a.momentum != 0.0 && !momentum_buf && pa.n > 0)
    fail(MIXP_ERR_INTERNAL, "cuda sgd: momentum without a momentum buffer");
  dispatch_param(pa, "sgd", [&](auto tag, auto gtag, auto master) {
    using T = decltype(tag);
    using G = decltype(gtag);
    if (pa.n > 0) {
      sgd_kernel<T, G, decltype(master)::value><<<grid_for(pa.n), kThreads, 0, stream()>>>(
          static_cast<T *>(pa.param), static_cast<float *>(pa.master), static_cast<const G *>(pa.grad),
          static_cast<acc_t<T> *>(momentum_buf), pa.n, pa.step, found_inf, a.lr, a.momentum, a.dampening,
          a.weight_decay, a.nesterov);
      MIXP_CUDA_LAUNCHED();
    }
  });
  step_inc_kernel<<<1, 1, 0, stream()>>>(pa.step, found_inf);
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::adam_step(const optim::ParamArgs &pa, void *exp_avg, void *exp_avg_sq,
                            const optim::AdamArgs &a, const float *found_inf) {
  dispatch_param(pa, "adam", [&](auto tag, auto gtag, auto master) {
    using T = decltype(tag);
    using G = decltype(gtag);
    if (pa.n > 0) {
      adam_kernel<T, G, decltype(master)::value><<<grid_for(pa.n), kThreads, 0, stream()>>>(
          static_cast<T *>(pa.param), static_cast<float *>(pa.master), static_cast<const G *>(pa.grad),
          static_cast<acc_t<T> *>(exp_avg), static_cast<acc_t<T> *>(exp_avg_sq), pa.n, pa.step, found_inf, a.lr,
          a.beta1, a.beta2, a.eps, a.weight_decay, a.decoupled);
      MIXP_CUDA_LAUNCHED();
    }
  });
  step_inc_kernel<<<1, 1, 0, stream()>>>(pa.step, found_inf);
  MIXP_CUDA_LAUNCHED();
}

}  // namespace mixp::cuda
