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

#include "backend/optimizer_args.hpp"
#include "backend/stochastic_round.hpp"
#include "core/error.hpp"
#include "core/fpenv.hpp"
#include "core/philox.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/half_convert.hpp"
#include "cpu/simd.hpp"

namespace mixp {
namespace optim {
namespace {

// Below this many elements the OpenMP fork costs more than the update.
constexpr int64_t kParallelMin = 1 << 15;

// True when a scaler or a clip flagged this step as one to skip.
inline bool skipped(const float *found_inf) noexcept { return found_inf && *found_inf != 0.0f; }

// The storage types of one parameter's update: T the parameter, G its
// gradient, S its state; kMaster: p is read from and written to the fp32
// master (g is then fp32 or T) and the parameter only receives the rounded
// result; kStochastic: that rounding is stochastic (BF16 only).
template <class T_, class G_, class S_, bool kMaster_, bool kStochastic_>
struct Types {
  using T = T_;
  using A = acc_t<T>;
  using S = S_;
  using G = G_;
  static constexpr bool kMaster = kMaster_, kStochastic = kStochastic_;
};

// The parameter's new value r rounded to its storage type; `word` is the
// element's stochastic-rounding word (unused otherwise).
template <class P>
inline typename P::T round_param(typename P::A r, uint32_t word) noexcept {
  if constexpr (P::kStochastic) return bf16{bf16_bits_stochastic(r, word)};
  else return store<typename P::T>(r);
}

// Elements per tile of stochastic-rounding words: the words are drawn a
// Philox block (4 words) at a time into a small buffer first, a loop that
// vectorises, instead of a block per element inside the update loop (which
// measured 3x slower for the whole MLP step).
constexpr int64_t kWordTile = 512;

MIXP_KERNEL_BODY inline void fill_words(uint64_t seed, uint64_t offset, int64_t first_block, int64_t blocks,
                                         uint32_t *__restrict out) {
  for (int64_t q = 0; q < blocks; ++q) {
    const Philox4 r = philox4x32_10(offset + uint64_t(first_block + q), 2, seed);
    for (int k = 0; k < 4; ++k) out[4 * q + k] = r.v[k];
  }
}

// Runs body(b, e, words) over [begin, end) in order: one call without
// words, or tiles with words[i - b] the word of element i (stochastic_bits's).
template <bool kStochastic, class Body>
void over_tiles(const ParamArgs &pa, int64_t begin, int64_t end, Body &&body) {
  if constexpr (!kStochastic) {
    body(begin, end, static_cast<const uint32_t *>(nullptr));
  } else {
    alignas(64) uint32_t words[kWordTile + 4];
    for (int64_t b = begin; b < end; b += kWordTile) {
      const int64_t e = std::min(end, b + kWordTile);
      const int64_t q0 = b / 4, q1 = (e + 3) / 4;
      cpu::run_kernel([&]() MIXP_KERNEL_BODY { fill_words(pa.seed, pa.offset, q0, q1 - q0, words); });
      body(b, e, words + (b - 4 * q0));
    }
  }
}

// This thread's static share of [0, n): results never depend on the split,
// since every element is updated on its own.
inline void thread_share(int64_t n, int64_t &b, int64_t &e) noexcept {
  const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
  const int64_t chunk = (n + nt - 1) / nt;
  b = std::min(n, t * chunk);
  e = std::min(n, b + chunk);
}

// The per-element SGD update; like AdamLoop below, the options fixed for
// the whole step are template parameters so that the loop has no branches
// and runs vectorised in the multi-versioned kernels.
template <class P, bool kWd, bool kMomentum, bool kNesterov, bool kInit>
struct SgdLoop {
  using T = typename P::T;
  using A = typename P::A;
  using S = typename P::S;
  A lr, mom, damp1, wd;

  // Elements [0, n) of the arrays given; words[i]: element i's
  // stochastic-rounding word (kStochastic only). PT and GT are the storage
  // of param and grad: T and G, or float tiles of them (f16).
  template <class PT, class GT>
  void run(int64_t n, const uint32_t *__restrict words, PT *__restrict param, float *__restrict master,
           const GT *__restrict grad, S *__restrict buf) const {
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
      for (int64_t i = 0; i < n; ++i) {
        A p;
        if constexpr (P::kMaster) p = master[i]; else p = load<PT>(param[i]);
        A d = load<GT>(grad[i]);
        if constexpr (kWd) d = d + wd * p;
        if constexpr (kMomentum) {
          A m;
          if constexpr (kInit) m = d; else m = load<S>(buf[i]) * mom + damp1 * d;
          buf[i] = store<S>(m);
          if constexpr (kNesterov) d = d + mom * m; else d = m;
        }
        const A r = p - lr * d;
        if constexpr (P::kMaster) master[i] = r;
        if constexpr (P::kStochastic) param[i] = round_param<P>(r, words[i]);
        else param[i] = store<PT>(r);
      }
    });
  }
};

// p + b, or null for an absent array (SGD without momentum has no buffer).
template <class E>
E *offset(E *p, int64_t b) noexcept {
  return p ? p + b : nullptr;
}

// Runs loop over this thread's share [begin, end) of the parameter: f16
// through float tiles of the parameter and gradient (half_convert.hpp; f16
// is never rounded stochastically), other types directly, in tiles of
// stochastic-rounding words where asked. `state` are the optimizer's state
// arrays, passed on after the gradient, each offset like the parameter.
template <class P, class Loop, class... State>
void run_share(const ParamArgs &pa, const Loop &loop, int64_t begin, int64_t end, State *...state) {
  using G = typename P::G;
  typename P::T *param = static_cast<typename P::T *>(pa.param);
  float *master = static_cast<float *>(pa.master);
  const G *grad = static_cast<const G *>(pa.grad);
  if constexpr (std::is_same_v<typename P::T, f16>) {
    alignas(64) float tp[cpu::kHalfTile], tg[cpu::kHalfTile];
    for (int64_t b = begin; b < end; b += cpu::kHalfTile) {
      const int64_t k = std::min(cpu::kHalfTile, end - b);
      if constexpr (!P::kMaster) cpu::f16_to_f32(param + b, tp, k);
      float *mb = offset(master, b);
      if constexpr (std::is_same_v<G, f16>) {
        cpu::f16_to_f32(grad + b, tg, k);
        loop.run(k, nullptr, tp, mb, tg, offset(state, b)...);
      } else {
        loop.run(k, nullptr, tp, mb, grad + b, offset(state, b)...);
      }
      cpu::f32_to_f16(tp, param + b, k);
    }
  } else {
    over_tiles<P::kStochastic>(pa, begin, end, [&](int64_t b, int64_t e, const uint32_t *words) {
      loop.run(e - b, words, param + b, offset(master, b), grad + b, offset(state, b)...);
    });
  }
}

// Calls f(std::bool_constant<on>{}).
template <class F>
void with_flag(bool on, F &&f) {
  if (on) f(std::true_type{});
  else f(std::false_type{});
}

// Runs loop over the whole parameter, each thread on its share (run_share)
// with denormals flushed.
template <class P, class Loop, class... State>
void run_parallel(const ParamArgs &pa, const Loop &loop, State *...state) {
#pragma omp parallel if (pa.n >= kParallelMin)
  {
    FlushDenormals ftz;  // per thread: MXCSR is thread state
    int64_t begin, end;
    thread_share(pa.n, begin, end);
    run_share<P>(pa, loop, begin, end, state...);
  }
}

template <class P>
void sgd_typed(const ParamArgs &pa, const SgdArgs &a) {
  using A = typename P::A;
  using S = typename P::S;
  S *buf = static_cast<S *>(pa.buf1);
  const bool use_momentum = a.momentum != 0.0, has_wd = a.weight_decay != 0.0;
  with_flag(has_wd, [&](auto wd) {
    with_flag(use_momentum, [&](auto momentum) {
      with_flag(use_momentum && a.nesterov, [&](auto nesterov) {
        with_flag(use_momentum && *pa.step == 0.0, [&](auto init) {
          const SgdLoop<P, decltype(wd)::value, decltype(momentum)::value, decltype(nesterov)::value,
                        decltype(init)::value>
              loop{A(a.lr), A(a.momentum), A(1.0 - a.dampening), A(a.weight_decay)};
          run_parallel<P>(pa, loop, buf);
        });
      });
    });
  });
  *pa.step += 1.0;
}

// The per-element Adam update. The options that are fixed for the whole
// step are template parameters, so the loop has no branches and vectorises
// (measured: about 6x faster than with runtime tests in the loop).
template <class P, bool kDecoupled, bool kL2, bool kLerpLow>
struct AdamLoop {
  using T = typename P::T;
  using A = typename P::A;
  using S = typename P::S;
  using G = typename P::G;
  A weight, one_minus_weight, beta2, one_minus_beta2, step_size, bc2_sqrt, eps, wd, decay;

  // Updates elements [0, n) of the arrays given; words[i]: element i's
  // stochastic-rounding word (kStochastic only). PT and GT are the storage
  // of param and grad: T and G, or float tiles of them (run_share).
  template <class PT, class GT>
  void run(int64_t n, const uint32_t *__restrict words, PT *__restrict param, float *__restrict master,
           const GT *__restrict grad, S *__restrict exp_avg, S *__restrict exp_avg_sq) const {
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) {
        A p;
        if constexpr (P::kMaster) p = master[i]; else p = load<PT>(param[i]);
        A g = load<GT>(grad[i]);
        if constexpr (kDecoupled) p = p * decay;
        if constexpr (kL2) g = g + wd * p;
        // torch.lerp's two-sided formula, which is exact at both ends.
        A m = load<S>(exp_avg[i]);
        if constexpr (kLerpLow) m = m + weight * (g - m); else m = g - (g - m) * one_minus_weight;
        const A v = load<S>(exp_avg_sq[i]) * beta2 + one_minus_beta2 * g * g;
        exp_avg[i] = store<S>(m);
        exp_avg_sq[i] = store<S>(v);
        const A denom = std::sqrt(v) / bc2_sqrt + eps;
        const A r = p - step_size * (m / denom);
        if constexpr (P::kMaster) master[i] = r;
        if constexpr (P::kStochastic) param[i] = round_param<P>(r, words[i]);
        else param[i] = store<PT>(r);
      }
    });
  }
};

template <class P>
void adam_typed(const ParamArgs &pa, const AdamArgs &a) {
  using A = typename P::A;
  // Scalars are formed in double, as PyTorch forms them from Python floats,
  // and rounded once to the compute type.
  const double t = *pa.step + 1.0;
  const double bias_correction1 = 1.0 - std::pow(a.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(a.beta2, t);
  const double w1 = 1.0 - a.beta1;
  const bool lerp_low = std::fabs(w1) < 0.5;
  const bool l2 = !a.decoupled && a.weight_decay != 0.0;
  const bool decoupled = a.decoupled && a.weight_decay != 0.0;
  using S = typename P::S;
  with_flag(decoupled, [&](auto dec) {
    with_flag(l2, [&](auto l2c) {
      with_flag(lerp_low, [&](auto low) {
        const AdamLoop<P, decltype(dec)::value, decltype(l2c)::value, decltype(low)::value> loop{
            A(w1), A(1.0 - w1), A(a.beta2), A(1.0 - a.beta2), A(a.lr / bias_correction1),
            A(std::sqrt(bias_correction2)), A(a.eps), A(a.weight_decay), A(1.0 - a.lr * a.weight_decay)};
        run_parallel<P>(pa, loop, static_cast<S *>(pa.buf1), static_cast<S *>(pa.buf2));
      });
    });
  });
  *pa.step += 1.0;
}

// Calls f(Types<...>{}) for the parameter's storage types (with_param_types:
// the contract's rules); `kernel` names it in errors ("cpu adam").
template <class F>
void dispatch_param(const ParamArgs &pa, const char *kernel, F &&f) {
  if (!pa.step) fail(MIXP_ERR_INTERNAL, kernel, ": the step counter is NULL");
  dispatch_float(pa.dtype, [&](auto tag) {
    using T = std::remove_cvref_t<decltype(tag)>;
    with_param_types<T>(pa.dtype, pa.master != nullptr, pa.grad_f32, pa.state_dtype, pa.stochastic, kernel,
                        [&](auto, auto gtag, auto state, auto master, auto stochastic) {
                          f(Types<T, std::remove_cvref_t<decltype(gtag)>, std::remove_cvref_t<decltype(state)>,
                                  decltype(master)::value, decltype(stochastic)::value>{});
                        });
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
    dispatch_param(pa, "cpu sgd", [&](auto types) { sgd_typed<decltype(types)>(pa, a); });
  }
}

void CpuBackend::adam_step(const optim::ParamArgs *params, int count, const optim::AdamArgs &a,
                           const float *found_inf) {
  using namespace optim;
  if (skipped(found_inf)) return;
  for (int i = 0; i < count; ++i) {
    const ParamArgs &pa = params[i];
    dispatch_param(pa, "cpu adam", [&](auto types) { adam_typed<decltype(types)>(pa, a); });
  }
}

}  // namespace mixp
