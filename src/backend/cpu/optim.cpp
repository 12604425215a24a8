// The CPU backend's optimizer steps (Backend::sgd_step/adam_step), fused
// updates on host memory, parameter by parameter: one pass over p (or its fp32
// master), g and the state, arithmetic in acc_t<T> (fp32 for the half types
// and F32, fp64 for F64), the parameter rounded once per step to its dtype.
// Each kernel first reads the skip flag and the step counter from memory,
// as a device kernel would, so the host never has to look at them.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/optimizer_args.hpp"
#include "core/error.hpp"
#include "core/fpenv.hpp"
#include "backend/cpu/simd.hpp"

namespace mixp {
namespace optim {
namespace {

// Below this many elements the OpenMP fork costs more than the update.
constexpr int64_t kParallelMin = 1 << 15;

// True when a scaler or a clip flagged this step as one to skip.
inline bool skipped(const float *found_inf) noexcept { return found_inf && *found_inf != 0.0f; }

// kMaster: p is read from and written to the fp32 master, g is fp32, and the
// parameter only receives the rounded result.
template <class T, bool kMaster, bool kGradF32>
void sgd_typed(const ParamArgs &pa, acc_t<T> *buf, const SgdArgs &a) {
  using A = acc_t<T>;
  using G = std::conditional_t<kGradF32, float, T>;
  T *param = static_cast<T *>(pa.param);
  float *master = static_cast<float *>(pa.master);
  const G *grad = static_cast<const G *>(pa.grad);
  const int64_t n = pa.n;
  const A lr = A(a.lr), mom = A(a.momentum), damp1 = A(1.0 - a.dampening), wd = A(a.weight_decay);
  const bool use_momentum = a.momentum != 0.0, has_wd = a.weight_decay != 0.0;
  const bool nesterov = a.nesterov, init = *pa.step == 0.0;
#pragma omp parallel if (n >= kParallelMin)
  {
  FlushDenormals ftz;  // per thread: MXCSR is thread state
#pragma omp for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    A p;
    if constexpr (kMaster) p = master[i]; else p = load<T>(param[i]);
    A d = load<G>(grad[i]);
    if (has_wd) d = d + wd * p;
    if (use_momentum) {
      A b = init ? d : buf[i] * mom + damp1 * d;
      buf[i] = b;
      d = nesterov ? d + mom * b : b;
    }
    const A r = p - lr * d;
    if constexpr (kMaster) master[i] = r;
    param[i] = store<T>(r);
  }
  }
  *pa.step += 1.0;
}

// The per-element Adam update. The options that are fixed for the whole
// step are template parameters, so the loop has no branches and vectorises
// (measured: about 6x faster than with runtime tests in the loop).
template <class T, bool kMaster, bool kGradF32, bool kDecoupled, bool kL2, bool kLerpLow>
struct AdamLoop {
  using A = acc_t<T>;
  using G = std::conditional_t<kGradF32, float, T>;
  A weight, one_minus_weight, beta2, one_minus_beta2, step_size, bc2_sqrt, eps, wd, decay;

  void run(int64_t begin, int64_t end, T *__restrict param, float *__restrict master,
           const G *__restrict grad, A *__restrict exp_avg, A *__restrict exp_avg_sq) const {
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
#pragma omp simd
      for (int64_t i = begin; i < end; ++i) {
        A p;
        if constexpr (kMaster) p = master[i]; else p = load<T>(param[i]);
        A g = load<G>(grad[i]);
        if constexpr (kDecoupled) p = p * decay;
        if constexpr (kL2) g = g + wd * p;
        // torch.lerp's two-sided formula, which is exact at both ends.
        A m = exp_avg[i];
        if constexpr (kLerpLow) m = m + weight * (g - m); else m = g - (g - m) * one_minus_weight;
        const A v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g;
        exp_avg[i] = m;
        exp_avg_sq[i] = v;
        const A denom = std::sqrt(v) / bc2_sqrt + eps;
        const A r = p - step_size * (m / denom);
        if constexpr (kMaster) master[i] = r;
        param[i] = store<T>(r);
      }
    });
  }
};

template <class Loop, class T>
void adam_run(const ParamArgs &pa, acc_t<T> *exp_avg, acc_t<T> *exp_avg_sq, const Loop &loop) {
  using G = typename Loop::G;
  T *param = static_cast<T *>(pa.param);
  float *master = static_cast<float *>(pa.master);
  const G *grad = static_cast<const G *>(pa.grad);
  const int64_t n = pa.n;
  // Static contiguous chunks: each element is independent, so results do
  // not depend on the thread count.
#pragma omp parallel if (n >= kParallelMin)
  {
    FlushDenormals ftz;  // per thread: MXCSR is thread state
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t b = std::min(n, t * chunk), e = std::min(n, b + chunk);
    loop.run(b, e, param, master, grad, exp_avg, exp_avg_sq);
  }
}

template <class T, bool kMaster, bool kGradF32>
void adam_typed(const ParamArgs &pa, acc_t<T> *exp_avg, acc_t<T> *exp_avg_sq,
                const AdamArgs &a) {
  using A = acc_t<T>;
  // Scalars are formed in double, as PyTorch forms them from Python floats,
  // and rounded once to the compute type.
  const double t = *pa.step + 1.0;
  const double bias_correction1 = 1.0 - std::pow(a.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(a.beta2, t);
  const double w1 = 1.0 - a.beta1;
  const bool lerp_low = std::fabs(w1) < 0.5;
  const bool l2 = !a.decoupled && a.weight_decay != 0.0;
  const bool decoupled = a.decoupled && a.weight_decay != 0.0;
  auto go = [&](auto dec, auto l2c, auto low) {
    AdamLoop<T, kMaster, kGradF32, decltype(dec)::value, decltype(l2c)::value, decltype(low)::value> loop{
        A(w1), A(1.0 - w1), A(a.beta2), A(1.0 - a.beta2), A(a.lr / bias_correction1),
        A(std::sqrt(bias_correction2)), A(a.eps), A(a.weight_decay), A(1.0 - a.lr * a.weight_decay)};
    adam_run<decltype(loop), T>(pa, exp_avg, exp_avg_sq, loop);
  };
  auto with_low = [&](auto dec, auto l2c) {
    if (lerp_low) go(dec, l2c, std::true_type{});
    else go(dec, l2c, std::false_type{});
  };
  if (decoupled) with_low(std::true_type{}, std::false_type{});
  else if (l2) with_low(std::false_type{}, std::true_type{});
  else with_low(std::false_type{}, std::false_type{});
  *pa.step += 1.0;
}

// Calls f(T{}, std::bool_constant<master>{}). A master is fp32, so it only
// pairs with parameters that compute in fp32.
template <class F>
void dispatch_param(const ParamArgs &pa, const char *kernel, F &&f) {
  if (!pa.step) fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": the step counter is NULL");
  dispatch_float(pa.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (!pa.master) {
      f(tag, std::false_type{}, std::is_same<T, float>{});
    } else if constexpr (std::is_same_v<acc_t<T>, float>) {
      if (pa.grad_f32) f(tag, std::true_type{}, std::true_type{});
      else f(tag, std::true_type{}, std::is_same<T, float>{});
    } else {
      fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": an fp32 master for a ", dtype_name(pa.dtype),
           " parameter");
    }
  });
}

}  // namespace
}  // namespace optim

// One parameter after another: each update is already parallel over its
// elements, and on the CPU there are no launches to save.
void CpuBackend::sgd_step(const optim::ParamArgs *params, int count, const optim::SgdArgs &a,
                          const float *found_inf) {
  using namespace optim;
  if (skipped(found_inf)) return;
  for (int i = 0; i < count; ++i) {
    const ParamArgs &pa = params[i];
    dispatch_param(pa, "sgd", [&](auto tag, auto master, auto gf32) {
      using T = decltype(tag);
      sgd_typed<T, decltype(master)::value, decltype(gf32)::value>(pa, static_cast<acc_t<T> *>(pa.buf1), a);
    });
  }
}

void CpuBackend::adam_step(const optim::ParamArgs *params, int count, const optim::AdamArgs &a,
                           const float *found_inf) {
  using namespace optim;
  if (skipped(found_inf)) return;
  for (int i = 0; i < count; ++i) {
    const ParamArgs &pa = params[i];
    dispatch_param(pa, "adam", [&](auto tag, auto master, auto gf32) {
      using T = decltype(tag);
      adam_typed<T, decltype(master)::value, decltype(gf32)::value>(pa, static_cast<acc_t<T> *>(pa.buf1),
                                                                    static_cast<acc_t<T> *>(pa.buf2), a);
    });
  }
}

}  // namespace mixp
