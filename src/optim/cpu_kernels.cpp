// Fused optimizer updates on host memory: one pass over p, g and the state,
// arithmetic in acc_t<T> (fp32 for the half types and F32, fp64 for F64),
// the parameter rounded once per step to its dtype.
#include <cmath>

#include "core/fpenv.hpp"
#include "optim/optimizer_kernels.hpp"

namespace mixp::optim {
namespace {

// Below this many elements the OpenMP fork costs more than the update.
constexpr int64_t kParallelMin = 1 << 15;

template <class T>
void sgd_typed(int64_t n, T *param, const T *grad, acc_t<T> *buf, const SgdArgs &a) {
  using A = acc_t<T>;
  const A lr = A(a.lr), mom = A(a.momentum), damp1 = A(1.0 - a.dampening), wd = A(a.weight_decay);
  const bool use_momentum = a.momentum != 0.0, has_wd = a.weight_decay != 0.0;
  const bool nesterov = a.nesterov, init = a.init_buffer;
#pragma omp parallel if (n >= kParallelMin)
  {
  FlushDenormals ftz;  // per thread: MXCSR is thread state
#pragma omp for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    A p = load<T>(param[i]);
    A d = load<T>(grad[i]);
    if (has_wd) d = d + wd * p;
    if (use_momentum) {
      A b = init ? d : buf[i] * mom + damp1 * d;
      buf[i] = b;
      d = nesterov ? d + mom * b : b;
    }
    param[i] = store<T>(p - lr * d);
  }
  }
}

template <class T>
void adam_typed(int64_t n, T *param, const T *grad, acc_t<T> *exp_avg, acc_t<T> *exp_avg_sq,
                const AdamArgs &a) {
  using A = acc_t<T>;
  // Scalars are formed in double, as PyTorch forms them from Python floats,
  // and rounded once to the compute type.
  const double w1 = 1.0 - a.beta1;
  const A weight = A(w1), one_minus_weight = A(1.0 - w1);
  const bool lerp_low = std::fabs(w1) < 0.5;
  const A beta2 = A(a.beta2), one_minus_beta2 = A(1.0 - a.beta2);
  const A step_size = A(a.lr / a.bias_correction1);
  const A bc2_sqrt = A(std::sqrt(a.bias_correction2));
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
    A p = load<T>(param[i]);
    A g = load<T>(grad[i]);
    if (decoupled) p = p * decay;
    if (l2) g = g + wd * p;
    // torch.lerp's two-sided formula, which is exact at both ends.
    A m = exp_avg[i];
    m = lerp_low ? m + weight * (g - m) : g - (g - m) * one_minus_weight;
    A v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g;
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    A denom = std::sqrt(v) / bc2_sqrt + eps;
    param[i] = store<T>(p - step_size * (m / denom));
  }
  }
}

void sgd_cpu(DType dtype, int64_t n, void *param, const void *grad, void *buf,
             const SgdArgs &a) {
  dispatch_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    sgd_typed<T>(n, static_cast<T *>(param), static_cast<const T *>(grad),
                 static_cast<acc_t<T> *>(buf), a);
  });
}

void adam_cpu(DType dtype, int64_t n, void *param, const void *grad, void *exp_avg,
              void *exp_avg_sq, const AdamArgs &a) {
  dispatch_float(dtype, [&](auto tag) {
    using T = decltype(tag);
    adam_typed<T>(n, static_cast<T *>(param), static_cast<const T *>(grad),
                  static_cast<acc_t<T> *>(exp_avg), static_cast<acc_t<T> *>(exp_avg_sq), a);
  });
}

}  // namespace

const Kernels &cpu_kernels() noexcept {
  static const Kernels k{&sgd_cpu, &adam_cpu};
  return k;
}

}  // namespace mixp::optim
