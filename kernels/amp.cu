// CUDA kernels of loss scaling and clipping, with no host synchronisation:
// the scalars (found_inf, inv_scale, the norm, the clip coefficient, the
// scaler's state) stay in device memory and are read by the kernels.
//
// Multi-tensor apply: the gradients are cut into fixed chunks of kChunk
// elements; a table of tensor pointers/sizes/dtypes and a block -> (tensor,
// chunk) map travels in the kernel's parameter space, so one launch covers
// up to kTableBlocks chunks of up to kTableTensors tensors of any mix of
// dtypes, and a list of any length costs a few launches and no copies.
//
// Determinism: the non-finite test is an OR (__syncthreads_or, then a plain
// store of 1.0f, which any order leaves the same), and the norm is summed
// per chunk in double and the chunk sums are added by one block in chunk
// order.
#include <algorithm>

#include "backend/loss_scale_rule.hpp"
#include "common.cuh"

namespace mixp::cuda {
namespace {

constexpr int64_t kChunk = 65536;
constexpr int kMtaThreads = 512;
constexpr int kTableTensors = 64;
constexpr int kTableBlocks = 256;

// About 2.8 KB, inside the classic 4 KB kernel-parameter limit.
struct Table {
  void *ptr[kTableTensors];
  int64_t n[kTableTensors];
  int32_t dtype[kTableTensors];
  uint16_t block_tensor[kTableBlocks];
  int32_t block_chunk[kTableBlocks];
};

// Calls launch(table, nblocks, first_global_chunk) for consecutive groups of
// chunks, in tensor order then chunk order. The global chunk number of
// block b is first_global_chunk + b.
template <class Launch>
void for_each_table(const View *grads, int n, Launch &&launch) {
  Table t{};
  int nt = 0, nb = 0;
  int64_t first = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t numel = grads[i].numel();
    if (numel == 0) continue;
    t.ptr[nt] = grads[i].data;
    t.n[nt] = numel;
    t.dtype[nt] = int32_t(grads[i].dtype);
    ++nt;
    const int64_t chunks = (numel + kChunk - 1) / kChunk;
    for (int64_t c = 0; c < chunks; ++c) {
      t.block_tensor[nb] = uint16_t(nt - 1);
      t.block_chunk[nb] = int32_t(c);
      ++nb;
      const bool last_chunk = c == chunks - 1;
      if (nb == kTableBlocks || (last_chunk && nt == kTableTensors)) {
        launch(t, nb, first);
        first += nb;
        nb = 0;
        if (last_chunk) {
          nt = 0;
        } else {  // the tensor goes on in the next table, as its entry 0
          t.ptr[0] = t.ptr[nt - 1];
          t.n[0] = t.n[nt - 1];
          t.dtype[0] = t.dtype[nt - 1];
          nt = 1;
        }
      }
    }
  }
  if (nb > 0) launch(t, nb, first);
}

int64_t total_chunks(const View *grads, int n) {
  int64_t c = 0;
  for (int i = 0; i < n; ++i) c += (grads[i].numel() + kChunk - 1) / kChunk;
  return c;
}

// The [lo, hi) range of this block's chunk and its tensor entry.
struct ChunkRef {
  void *p;
  int64_t lo, hi;
  DType dt;
};
__device__ __forceinline__ ChunkRef chunk_of(const Table &t) {
  const int ti = t.block_tensor[blockIdx.x];
  const int64_t lo = int64_t(t.block_chunk[blockIdx.x]) * kChunk;
  return ChunkRef{t.ptr[ti], lo, min(t.n[ti], lo + kChunk), DType(t.dtype[ti])};
}

// p[i] = p[i] * f (when multiply) for i in [lo, hi); returns whether this
// thread saw a non-finite value before scaling. 128-bit packs when aligned
// (chunk starts are multiples of kChunk, so the base address decides).
template <class T>
__device__ bool check_scale(T *p, int64_t lo, int64_t hi, acc_t<T> f, bool multiply) {
  using A = acc_t<T>;
  constexpr int V = kVec<T>;
  bool bad = false;
  int64_t i = lo;
  if (aligned16(p)) {
    const int64_t nv = (hi - lo) / V;
    Pack<T> *pp = reinterpret_cast<Pack<T> *>(p + lo);
    for (int64_t k = threadIdx.x; k < nv; k += blockDim.x) {
      Pack<T> v = pp[k];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const A a = ld(v.v[e]);
        bad |= !isfinite(a);
        v.v[e] = st<T>(a * f);
      }
      if (multiply) pp[k] = v;
    }
    i = lo + nv * V;
  }
  for (int64_t k = i + threadIdx.x; k < hi; k += blockDim.x) {
    const A a = ld(p[k]);
    bad |= !isfinite(a);
    if (multiply) p[k] = st<T>(a * f);
  }
  return bad;
}

__device__ bool check_scale_any(const ChunkRef &c, float f, bool multiply) {
  switch (c.dt) {
    case MIXP_F32: return check_scale(static_cast<float *>(c.p), c.lo, c.hi, f, multiply);
    case MIXP_F64: return check_scale(static_cast<double *>(c.p), c.lo, c.hi, double(f), multiply);
    case MIXP_F16: return check_scale(static_cast<f16 *>(c.p), c.lo, c.hi, f, multiply);
    default: return check_scale(static_cast<bf16 *>(c.p), c.lo, c.hi, f, multiply);
  }
}

__global__ void __launch_bounds__(kMtaThreads) unscale_kernel(Table t, float *found_inf, const float *inv_scale) {
  const float inv = *inv_scale;
  const bool bad = check_scale_any(chunk_of(t), inv, inv != 1.0f);
  if (__syncthreads_or(bad) && threadIdx.x == 0) *found_inf = 1.0f;
}

__global__ void __launch_bounds__(kMtaThreads) scale_kernel(Table t, const float *coef) {
  const float c = *coef;
  if (c == 1.0f) return;
  check_scale_any(chunk_of(t), c, true);
}

template <class T>
__device__ double sum_sq(const T *p, int64_t lo, int64_t hi) {
  double s = 0.0;
  for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x) {
    const double v = double(ld(p[k]));
    s += v * v;
  }
  return s;
}

__global__ void __launch_bounds__(kMtaThreads) norm_partial_kernel(Table t, int64_t first, double *partial) {
  const ChunkRef c = chunk_of(t);
  double s;
  switch (c.dt) {
    case MIXP_F32: s = sum_sq(static_cast<const float *>(c.p), c.lo, c.hi); break;
    case MIXP_F64: s = sum_sq(static_cast<const double *>(c.p), c.lo, c.hi); break;
    case MIXP_F16: s = sum_sq(static_cast<const f16 *>(c.p), c.lo, c.hi); break;
    default: s = sum_sq(static_cast<const bf16 *>(c.p), c.lo, c.hi); break;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) partial[first + blockIdx.x] = s;
}

// One block adds the chunk sums: thread k takes chunks k, k+T, ... in order,
// then a fixed tree.
__global__ void norm_finish_kernel(const double *partial, int64_t nchunks, void *out, bool out_f64) {
  double s = 0.0;
  for (int64_t k = threadIdx.x; k < nchunks; k += blockDim.x) s += partial[k];
  s = block_sum(s);
  if (threadIdx.x == 0) {
    if (out_f64) *static_cast<double *>(out) = s;
    else *static_cast<float *>(out) = f64_to_f32(s);
  }
}

__global__ void clip_coefficient_kernel(const void *norm_sq, DType nd, double max_norm, float *total_norm,
                                        float *coef, float *found_inf) {
  const float norm = f64_to_f32(sqrt(ld_any(norm_sq, nd)));
  *total_norm = norm;
  if (!isfinite(norm)) {
    *found_inf = 1.0f;
    *coef = 1.0f;
    return;
  }
  // torch.nn.utils.clip_grad_norm_: max_norm / (total_norm + 1e-6) in fp32, clamped to 1.
  const float c = float(max_norm) / (norm + 1e-6f);
  *coef = c < 1.0f ? c : 1.0f;  // std::min(1.0f, c)
}

// The CPU's state machine (src/cpu/amp.cpp), line for line.
__global__ void update_scale_kernel(float *scale_p, int32_t *growth_p, int32_t *bad_p, int32_t *hyst_p,
                                    const float *found_inf, LossScaleRule rule) {
  LossScaleState st{*scale_p, *growth_p, *bad_p, *hyst_p};
  update_loss_scale(st, *found_inf, rule);
  *scale_p = st.scale;
  *growth_p = st.growth_tracker;
  *bad_p = st.bad_count;
  *hyst_p = st.hysteresis_left;
}

}  // namespace

void CudaBackend::non_finite_check_and_unscale(const View *grads, int n, const View &found_inf,
                                               const View &inv_scale) {
  float *fi = static_cast<float *>(found_inf.data);
  const float *inv = static_cast<const float *>(inv_scale.data);
  for_each_table(grads, n, [&](const Table &t, int nb, int64_t) {
    unscale_kernel<<<unsigned(nb), kMtaThreads, 0, stream()>>>(t, fi, inv);
    MIXP_CUDA_LAUNCHED();
  });
}

void CudaBackend::update_scale(const ScaleUpdate &u) {
  update_scale_kernel<<<1, 1, 0, stream()>>>(
      static_cast<float *>(u.scale.data), static_cast<int32_t *>(u.growth_tracker.data),
      static_cast<int32_t *>(u.bad_count.data), static_cast<int32_t *>(u.hysteresis_left.data),
      static_cast<const float *>(u.found_inf.data), u.rule);
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::grad_norm_sq(const View *grads, int n, const View &out) {
  const int64_t nchunks = total_chunks(grads, n);
  Scratch partial(*this, size_t(std::max<int64_t>(nchunks, 1)) * sizeof(double));
  double *pp = partial.as<double>();
  for_each_table(grads, n, [&](const Table &t, int nb, int64_t first) {
    norm_partial_kernel<<<unsigned(nb), kMtaThreads, 0, stream()>>>(t, first, pp);
    MIXP_CUDA_LAUNCHED();
  });
  norm_finish_kernel<<<1, 1024, 0, stream()>>>(pp, nchunks, out.data, out.dtype == MIXP_F64);
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::clip_coefficient(const View &norm_sq, double max_norm, const View &total_norm,
                                   const View &coef, const View &found_inf) {
  clip_coefficient_kernel<<<1, 1, 0, stream()>>>(norm_sq.data, norm_sq.dtype, max_norm,
                                                 static_cast<float *>(total_norm.data),
                                                 static_cast<float *>(coef.data), static_cast<float *>(found_inf.data));
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::scale_grads(const View *grads, int n, const View &coef) {
  const float *c = static_cast<const float *>(coef.data);
  for_each_table(grads, n, [&](const Table &t, int nb, int64_t) {
    scale_kernel<<<unsigned(nb), kMtaThreads, 0, stream()>>>(t, c);
    MIXP_CUDA_LAUNCHED();
  });
}

}  // namespace mixp::cuda
