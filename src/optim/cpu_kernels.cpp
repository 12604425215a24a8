// Fused optimizer updates on host memory: one pass over p (or its fp32
// master), g and the state, arithmetic in acc_t<T> (fp32 for the half types
// and F32, fp64 for F64), the parameter rounded once per step to its dtype.
// Each kernel first reads the skip flag and the step counter from memory,
// as a device kernel would, so the host never has to look at them.
#include <cmath>
#include <type_traits>

#include "core/error.hpp"
#include "core/fpenv.hpp"
#include "optim/optimizer_kernels.hpp"

namespace mixp::optim {
namespace {

// Below this many elements the OpenMP fork costs more than the update.
constexpr int64_t kParallelMin = 1 << 15;

// True when a scaler or a clip flagged this step as one to skip.
inline bool skipped(const float *found_inf) noexcept { return found_inf && *found_inf != 0.0f; }

// kMaster: p is read from and written to the fp32 master, g is fp32, and the
// parameter only receives the rounded result.
template <class T, bool kMaster>
void sgd_typed(const ParamArgs &pa, acc_t<T> *buf, const SgdArgs &a) {
  using A = acc_t<T>;
  using G = std::conditional_t<kMaster, float, T>;
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

template <class T, bool kMaster>
void adam_typed(const ParamArgs &pa, acc_t<T> *exp_avg, acc_t<T> *exp_avg_sq,
                const AdamArgs &a) {
  using A = acc_t<T>;
  using G = std::conditional_t<kMaster, float, T>;
  T *param = static_cast<T *>(pa.param);
  float *master = static_cast<float *>(pa.master);
  const G *grad = static_cast<const G *>(pa.grad);
  const int64_t n = pa.n;
  // Scalars are formed in double, as PyTorch forms them from Python floats,
  // and rounded once to the compute type.
  const double t = *pa.step + 1.0;
  const double bias_correction1 = 1.0 - std::pow(a.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(a.beta2, t);
  const double w1 = 1.0 - a.beta1;
  const A weight = A(w1), one_minus_weight = A(1.0 - w1);
  const bool lerp_low = std::fabs(w1) < 0.5;
  const A beta2 = A(a.beta2), one_minus_beta2 = A(1.0 - a.beta2);
  const A step_size = A(a.lr / bias_correction1);
  const A bc2_sqrt = A(std::sqrt(bias_correction2));
  const A eps = A(a.eps);
  const A wd = A(a.weight_decay);
  const A decay = A(1.0 - a.lr * a.weight_decay);
  const bool l2 = !a.decoupled && a.weight_decay != 0.0;
  const bool decoupled = a.decoupled && a.weight_decay != 0.0;
#pragma omp parallel if (n >= kParallelMin)
  {
  FlushDenormals ftz;  // per thread: MXCSR is thread state
#pragma omp for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    A p;
    if constexpr (kMaster) p = master[i]; else p = load<T>(param[i]);
    A g = load<G>(grad[i]);
    if (decoupled) p = p * decay;
    if (l2) g = g + wd * p;
    // torch.lerp's two-sided formula, which is exact at both ends.
    A m = exp_avg[i];
    m = lerp_low ? m + weight * (g - m) : g - (g - m) * one_minus_weight;
    A v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    A denom = std::sqrt(v) / bc2_sqrt + eps;
    const A r = p - step_size * (m / denom);
    if constexpr (kMaster) master[i] = r;
    param[i] = store<T>(r);
  }
  }
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
      f(tag, std::false_type{});
    } else if constexpr (std::is_same_v<acc_t<T>, float>) {
      f(tag, std::true_type{});
    } else {
      fail(MIXP_ERR_INTERNAL, "cpu ", kernel, ": an fp32 master for a ", dtype_name(pa.dtype),
           " parameter");
    }
  });
}

void sgd_cpu(const ParamArgs &pa, void *buf, const SgdArgs &a, const float *found_inf) {
  if (skipped(found_inf)) return;
  dispatch_param(pa, "sgd", [&](auto tag, auto master) {
    using T = decltype(tag);
    sgd_typed<T, decltype(master)::value>(pa, static_cast<acc_t<T> *>(buf), a);
  });
}

void adam_cpu(const ParamArgs &pa, void *exp_avg, void *exp_avg_sq, const AdamArgs &a,
              const float *found_inf) {
  if (skipped(found_inf)) return;
  dispatch_param(pa, "adam", [&](auto tag, auto master) {
    using T = decltype(tag);
    adam_typed<T, decltype(master)::value>(pa, static_cast<acc_t<T> *>(exp_avg),
                                           static_cast<acc_t<T> *>(exp_avg_sq), a);
  });
}

}  // namespace

const Kernels &cpu_kernels() noexcept {
  static const Kernels k{&sgd_cpu, &adam_cpu};
  return k;
}

}  // namespace mixp::optim
