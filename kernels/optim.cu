// CUDA fused optimizer steps (backend/optimizer_args.hpp): SGD and
// Adam/AdamW, reading or writing each parameter's fp32 master and rounding
// the half parameter once (stochastically where asked, stochastic_round.hpp);
// the state is F32 (F64 for F64 parameters) or BF16. The skip flag
// (found_inf) and the step counters (F64 in device memory) are read on the
// device: a flagged step returns before touching anything, and a separate
// small kernel advances the counters only for steps that ran, so the host
// never waits.
//
// Multi-tensor: the parameters go in tables of up to kTableParams (pointers
// in the kernel's parameter space), each parameter cut into chunks of
// kChunk elements, one block per chunk; a block finds its parameter from the
// table's first-block offsets and forms that parameter's per-step scalars
// once (its own step counter). A GPT-2's 148 parameters take 5 tables, 10
// launches, where one launch pair per parameter took 296. Within a chunk each
// thread takes 4 consecutive elements, loaded 16 (8 for halves) bytes at a
// time when every array of the parameter is aligned for it.
//
// Bitwise parity with the CPU kernels (src/cpu/optim.cpp): every
// arithmetic operation is an explicit round-to-nearest intrinsic (never
// contracted into an FMA, as the CPU's ISO C++ mode never contracts), and
// subnormals are flushed to zero after every operation as the CPU does
// under FTZ|DAZ (core/fpenv.hpp). The per-step scalars use the device's
// pow(), which may differ from glibc's in the last bit of the double; that
// reaches the result only where it changes the rounding of lr/bias_correction.
#include <cfloat>

#include "common.cuh"
#include "backend/optimizer_args.hpp"
#include "backend/stochastic_round.hpp"

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

constexpr int kThreadsOpt = 256;
constexpr int kPerThread = 4;
constexpr int64_t kChunk = int64_t(kThreadsOpt) * kPerThread * 16;
constexpr int kTableParams = 32;

// About 2.4 KB, inside the classic 4 KB kernel-parameter limit. Parameter k
// owns blocks [first_block[k], first_block[k + 1]).
struct Table {
  void *param[kTableParams];
  float *master[kTableParams];
  const void *grad[kTableParams];
  void *buf1[kTableParams];
  void *buf2[kTableParams];
  double *step[kTableParams];
  int64_t n[kTableParams];
  uint64_t seed[kTableParams], offset[kTableParams];  // stochastic rounding's stream
  int32_t first_block[kTableParams + 1];
  int32_t count;
};

// Four consecutive elements, one load or store when aligned to their size.
template <class X>
struct alignas(4 * sizeof(X)) Quad {
  X v[4];
};
template <class X>
__device__ __forceinline__ bool quad_aligned(const void *p) {
  return p == nullptr || (reinterpret_cast<uintptr_t>(p) % sizeof(Quad<X>)) == 0;
}

// The per-element updates: u.update(p, g, b1, b2, sc) returns the new value
// of p (the master, or the parameter) and rewrites the state b1/b2 in place;
// u.scalars(step) forms what depends on the parameter's step, once per block.
template <class A>
struct SgdUpdate {
  A lr, mom, damp1, wd;
  bool use_momentum, has_wd, nesterov;
  struct Scalars {
    bool init;
  };
  __device__ Scalars scalars(double step) const { return {step == 0.0}; }
  __device__ __forceinline__ A update(A p, A d, A &b1, A &, const Scalars &sc) const {
    if (has_wd) d = add(d, mul(wd, p));
    if (use_momentum) {
      const A b = sc.init ? d : add(mul(fz(b1), mom), mul(damp1, d));
      b1 = b;
      d = nesterov ? add(d, mul(mom, b)) : b;
    }
    return sub(p, mul(lr, d));
  }
};

template <class A>
struct AdamUpdate {
  double lr_d, beta1_d, beta2_d, eps_d, wd_d;
  bool decoupled_arg;
  struct Scalars {
    A weight, one_minus_weight, beta2, one_minus_beta2, step_size, bc2_sqrt, eps, wd, decay;
    bool lerp_low, l2, decoupled;
  };
  // Formed in double and rounded once, as the CPU kernel (cpu/optim.cpp).
  __device__ Scalars scalars(double step) const {
    const double t = step + 1.0;
    const double bc1 = 1.0 - pow(beta1_d, t), bc2 = 1.0 - pow(beta2_d, t);
    const double w1 = 1.0 - beta1_d;
    Scalars s;
    s.lerp_low = fabs(w1) < 0.5;
    s.l2 = !decoupled_arg && wd_d != 0.0;
    s.decoupled = decoupled_arg && wd_d != 0.0;
    s.weight = A(w1), s.one_minus_weight = A(1.0 - w1), s.beta2 = A(beta2_d), s.one_minus_beta2 = A(1.0 - beta2_d);
    s.step_size = A(lr_d / bc1), s.bc2_sqrt = A(sqrt(bc2)), s.eps = A(eps_d), s.wd = A(wd_d);
    s.decay = A(1.0 - lr_d * wd_d);
    return s;
  }
  __device__ __forceinline__ A update(A p, A g, A &b1, A &b2, const Scalars &s) const {
    if (s.decoupled) p = mul(p, s.decay);
    if (s.l2) g = add(g, mul(s.wd, p));
    // torch.lerp's two-sided formula, exact at both ends.
    A m = fz(b1);
    m = s.lerp_low ? add(m, mul(s.weight, sub(g, m))) : sub(g, mul(sub(g, m), s.one_minus_weight));
    const A v = add(mul(fz(b2), s.beta2), mul(mul(s.one_minus_beta2, g), g));
    b1 = m;
    b2 = v;
    const A denom = add(dv(sqr(v), s.bc2_sqrt), s.eps);
    return sub(p, mul(s.step_size, dv(m, denom)));
  }
};

// The parameter's new value r, element i, rounded to its storage type.
template <class T, bool kStochastic>
__device__ __forceinline__ T round_param(acc_t<T> r, uint64_t seed, uint64_t offset, int64_t i) {
  if constexpr (kStochastic) return T{bf16_bits_stochastic(r, stochastic_bits(seed, offset, uint64_t(i)))};
  else return st<T>(r);
}

// Elements [i, i + count) of one parameter, count <= 4; vec: one load per
// array (then count == 4). S is the state's storage type.
template <class T, class G, class S, bool kMaster, bool kStochastic, class U>
__device__ __forceinline__ void update_run(const U &u, const typename U::Scalars &sc, T *param, float *master,
                                           const G *grad, S *b1, S *b2, uint64_t seed, uint64_t offset,
                                           int64_t i, int count, bool vec) {
  using A = acc_t<T>;
  A p[4], g[4], s1[4] = {}, s2[4] = {};
  if (vec) {
    if constexpr (kMaster) {
      const Quad<float> q = *reinterpret_cast<const Quad<float> *>(master + i);
#pragma unroll
      for (int e = 0; e < 4; ++e) p[e] = fz(q.v[e]);
    } else {
      const Quad<T> q = *reinterpret_cast<const Quad<T> *>(param + i);
#pragma unroll
      for (int e = 0; e < 4; ++e) p[e] = fz(ld(q.v[e]));
    }
    const Quad<G> qg = *reinterpret_cast<const Quad<G> *>(grad + i);
#pragma unroll
    for (int e = 0; e < 4; ++e) g[e] = fz(A(ld(qg.v[e])));
    if (b1) {
      const Quad<S> q = *reinterpret_cast<const Quad<S> *>(b1 + i);
#pragma unroll
      for (int e = 0; e < 4; ++e) s1[e] = ld(q.v[e]);
    }
    if (b2) {
      const Quad<S> q = *reinterpret_cast<const Quad<S> *>(b2 + i);
#pragma unroll
      for (int e = 0; e < 4; ++e) s2[e] = ld(q.v[e]);
    }
  } else {
    for (int e = 0; e < count; ++e) {
      if constexpr (kMaster) p[e] = fz(master[i + e]); else p[e] = fz(ld(param[i + e]));
      g[e] = fz(A(ld(grad[i + e])));
      if (b1) s1[e] = ld(b1[i + e]);
      if (b2) s2[e] = ld(b2[i + e]);
    }
  }
  A r[4];
#pragma unroll
  for (int e = 0; e < 4; ++e)
    if (vec || e < count) r[e] = u.update(p[e], g[e], s1[e], s2[e], sc);
  if (vec) {
    if (b1) *reinterpret_cast<Quad<S> *>(b1 + i) = Quad<S>{{st<S>(s1[0]), st<S>(s1[1]), st<S>(s1[2]), st<S>(s1[3])}};
    if (b2) *reinterpret_cast<Quad<S> *>(b2 + i) = Quad<S>{{st<S>(s2[0]), st<S>(s2[1]), st<S>(s2[2]), st<S>(s2[3])}};
    if constexpr (kMaster) *reinterpret_cast<Quad<float> *>(master + i) = Quad<float>{{r[0], r[1], r[2], r[3]}};
    Quad<T> q;
#pragma unroll
    for (int e = 0; e < 4; ++e) q.v[e] = round_param<T, kStochastic>(r[e], seed, offset, i + e);
    *reinterpret_cast<Quad<T> *>(param + i) = q;
  } else {
    for (int e = 0; e < count; ++e) {
      if (b1) b1[i + e] = st<S>(s1[e]);
      if (b2) b2[i + e] = st<S>(s2[e]);
      if constexpr (kMaster) master[i + e] = r[e];
      param[i + e] = round_param<T, kStochastic>(r[e], seed, offset, i + e);
    }
  }
}

template <class T, class G, class S, bool kMaster, bool kStochastic, class U>
__global__ void __launch_bounds__(kThreadsOpt) multi_step_kernel(Table t, const float *found_inf, U u) {
  using A = acc_t<T>;
  if (skipped(found_inf)) return;
  int k = 0;  // the same for the whole block
  while (k + 1 < t.count && t.first_block[k + 1] <= int32_t(blockIdx.x)) ++k;
  __shared__ typename U::Scalars sc;
  if (threadIdx.x == 0) sc = u.scalars(*t.step[k]);
  __syncthreads();
  T *param = static_cast<T *>(t.param[k]);
  float *master = t.master[k];
  const G *grad = static_cast<const G *>(t.grad[k]);
  S *b1 = static_cast<S *>(t.buf1[k]), *b2 = static_cast<S *>(t.buf2[k]);
  const int64_t lo = int64_t(int32_t(blockIdx.x) - t.first_block[k]) * kChunk;
  const int64_t hi = min(t.n[k], lo + kChunk);
  // Chunk starts are multiples of kChunk, so the arrays' bases decide.
  const bool vec = quad_aligned<T>(param) && quad_aligned<float>(master) && quad_aligned<G>(grad) &&
                   quad_aligned<S>(b1) && quad_aligned<S>(b2);
  for (int64_t i = lo + int64_t(threadIdx.x) * kPerThread; i < hi; i += int64_t(blockDim.x) * kPerThread) {
    const int count = hi - i < kPerThread ? int(hi - i) : kPerThread;
    update_run<T, G, S, kMaster, kStochastic>(u, sc, param, master, grad, b1, b2, t.seed[k], t.offset[k], i,
                                              count, vec && count == kPerThread);
  }
}

__global__ void steps_inc_kernel(Table t, const float *found_inf) {
  if (!skipped(found_inf) && int(threadIdx.x) < t.count) *t.step[threadIdx.x] += 1.0;
}

// The storage types of one parameter, which every parameter of a table shares.
struct Kind {
  DType dtype, state_dtype;
  bool master, grad_f32, stochastic;
  bool same(const Kind &o) const {
    return dtype == o.dtype && state_dtype == o.state_dtype && master == o.master && grad_f32 == o.grad_f32 &&
           stochastic == o.stochastic;
  }
};

// Calls f(T{}, G{}, S{}, master, stochastic) for a kind (with_param_types:
// the contract's rules).
template <class F>
void dispatch_kind(const Kind &kind, const char *kernel, F &&f) {
  const std::string where = str("cuda ", kernel);
  dispatch_float_dt(kind.dtype, kernel, [&](auto tag) {
    using T = std::remove_cvref_t<decltype(tag)>;
    optim::with_param_types<T>(kind.dtype, kind.master, kind.grad_f32, kind.state_dtype, kind.stochastic,
                               where.c_str(), f);
  });
}

// Fills tables of consecutive parameters of one kind and calls
// launch(table, kind, blocks) for each, in parameter order.
template <class Launch>
void for_each_table(const optim::ParamArgs *params, int count, const char *kernel, Launch &&launch) {
  Table t{};
  Kind kind{};
  int64_t blocks = 0;
  auto flush = [&] {
    if (t.count == 0) return;
    t.first_block[t.count] = int32_t(blocks);
    launch(t, kind, blocks);
    t = Table{};
    blocks = 0;
  };
  for (int i = 0; i < count; ++i) {
    const optim::ParamArgs &pa = params[i];
    if (!pa.step) fail(MIXP_ERR_INTERNAL, "cuda ", kernel, ": the step counter is NULL");
    const Kind k{pa.dtype, pa.state_dtype, pa.master != nullptr, pa.master != nullptr && pa.grad_f32,
                 pa.stochastic};
    const int64_t chunks = (pa.n + kChunk - 1) / kChunk;
    if (t.count == kTableParams || (t.count > 0 && !k.same(kind)) || blocks + chunks > INT32_MAX) flush();
    if (chunks > INT32_MAX)
      fail(MIXP_ERR_UNSUPPORTED, "cuda ", kernel, ": a parameter of ", pa.n, " elements");
    kind = k;
    const int j = t.count++;
    t.param[j] = pa.param;
    t.master[j] = static_cast<float *>(pa.master);
    t.grad[j] = pa.grad;
    t.buf1[j] = pa.buf1;
    t.buf2[j] = pa.buf2;
    t.step[j] = pa.step;
    t.n[j] = pa.n;
    t.seed[j] = pa.seed;
    t.offset[j] = pa.offset;
    t.first_block[j] = int32_t(blocks);
    blocks += chunks;
  }
  flush();
}

// The whole step: per table, the update over every chunk (when any), then
// the step counters.
template <template <class> class Update, class Make>
void multi_step(CudaBackend &be, const optim::ParamArgs *params, int count, const char *kernel,
                const float *found_inf, Make &&make) {
  for_each_table(params, count, kernel, [&](const Table &t, const Kind &kind, int64_t blocks) {
    dispatch_kind(kind, kernel, [&](auto tag, auto gtag, auto state, auto master, auto stochastic) {
      using T = std::remove_cvref_t<decltype(tag)>;
      using G = std::remove_cvref_t<decltype(gtag)>;
      using S = std::remove_cvref_t<decltype(state)>;
      if (blocks > 0) {
        const Update<acc_t<T>> u = make(tag);
        multi_step_kernel<T, G, S, decltype(master)::value, decltype(stochastic)::value>
            <<<unsigned(blocks), kThreadsOpt, 0, be.stream()>>>(t, found_inf, u);
        MIXP_CUDA_LAUNCHED();
      }
    });
    steps_inc_kernel<<<1, kTableParams, 0, be.stream()>>>(t, found_inf);
    MIXP_CUDA_LAUNCHED();
  });
}

}  // namespace

void CudaBackend::sgd_step(const optim::ParamArgs *params, int count, const optim::SgdArgs &a,
                           const float *found_inf) {
  for (int i = 0; i < count; ++i)
    if (a.momentum != 0.0 && !params[i].buf1 && params[i].n > 0)
      fail(MIXP_ERR_INTERNAL, "cuda sgd: momentum without a momentum buffer");
  multi_step<SgdUpdate>(*this, params, count, "sgd", found_inf, [&](auto tag) {
    using A = acc_t<decltype(tag)>;
    return SgdUpdate<A>{A(a.lr), A(a.momentum), A(1.0 - a.dampening), A(a.weight_decay),
                        a.momentum != 0.0, a.weight_decay != 0.0, a.nesterov};
  });
}

void CudaBackend::adam_step(const optim::ParamArgs *params, int count, const optim::AdamArgs &a,
                            const float *found_inf) {
  multi_step<AdamUpdate>(*this, params, count, "adam", found_inf, [&](auto tag) {
    using A = acc_t<decltype(tag)>;
    return AdamUpdate<A>{a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.decoupled};
  });
}

}  // namespace mixp::cuda
