// CUDA (log_)softmax over the middle axis of [outer, n, inner], its
// backward, and the fused softmax + cross-entropy: the forward takes the loss
// straight from the logits (max, log-sum-exp, pick) and the backward writes
// softmax - onehot, scaled per row, in the same kernel that computes the
// softmax, so no probability tensor is ever stored.
//
// Layout: with inner == 1 (the usual last-axis case) a block owns a row and
// reduces it with fixed trees; otherwise a thread owns an (outer, inner)
// column and walks the axis in order (coalesced across threads). Maxima and
// sums are taken in acc_t<T> (fp32 for F32/F16/BF16, double for F64).
#include "common.cuh"

namespace mixp::cuda {
namespace {

template <class A> __device__ __forceinline__ A neg_inf() { return A(-INFINITY); }

template <class T>
__global__ void softmax_row_kernel(const T *x, int64_t n, bool log_sm, T *y) {
  using A = acc_t<T>;
  const T *row = x + int64_t(blockIdx.x) * n;
  T *out = y + int64_t(blockIdx.x) * n;
  A m = neg_inf<A>();
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) m = nan_max(m, ld(row[k]));
  m = block_max(m);
  A s = A(0);
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) s += exp(ld(row[k]) - m);
  s = block_sum(s);
  if (log_sm) {
    const A ls = log(s);
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) out[k] = st<T>((ld(row[k]) - m) - ls);
  } else {
    const A inv = A(1) / s;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) out[k] = st<T>(exp(ld(row[k]) - m) * inv);
  }
}

template <class T>
__global__ void softmax_col_kernel(const T *x, int64_t outer, int64_t n, int64_t inner, bool log_sm,
                                   T *y) {
  using A = acc_t<T>;
  const int64_t total = outer * inner;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < total;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = p / inner, j = p - o * inner;
    const T *xb = x + o * n * inner + j;
    T *yb = y + o * n * inner + j;
    A m = neg_inf<A>();
    for (int64_t k = 0; k < n; ++k) m = nan_max(m, ld(xb[k * inner]));
    A s = A(0);
    for (int64_t k = 0; k < n; ++k) s += exp(ld(xb[k * inner]) - m);
    if (log_sm) {
      const A ls = log(s);
      for (int64_t k = 0; k < n; ++k) yb[k * inner] = st<T>((ld(xb[k * inner]) - m) - ls);
    } else {
      const A inv = A(1) / s;
      for (int64_t k = 0; k < n; ++k) yb[k * inner] = st<T>(exp(ld(xb[k * inner]) - m) * inv);
    }
  }
}

// softmax: gx = y (gy - sum gy*y); log_softmax: gx = gy - exp(y) sum gy.
template <class T>
__global__ void softmax_bwd_row_kernel(const T *y, const T *gy, int64_t n, bool log_sm, T *gx) {
  using A = acc_t<T>;
  const int64_t base = int64_t(blockIdx.x) * n;
  A s = A(0);
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const A g = ld(gy[base + k]);
    s += log_sm ? g : g * ld(y[base + k]);
  }
  s = block_sum(s);
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const A g = ld(gy[base + k]), yv = ld(y[base + k]);
    gx[base + k] = st<T>(log_sm ? g - exp(yv) * s : yv * (g - s));
  }
}

template <class T>
__global__ void softmax_bwd_col_kernel(const T *y, const T *gy, int64_t outer, int64_t n, int64_t inner,
                                       bool log_sm, T *gx) {
  using A = acc_t<T>;
  const int64_t total = outer * inner;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < total;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = p / inner, j = p - o * inner;
    const int64_t base = o * n * inner + j;
    A s = A(0);
    for (int64_t k = 0; k < n; ++k) {
      const A g = ld(gy[base + k * inner]);
      s += log_sm ? g : g * ld(y[base + k * inner]);
    }
    for (int64_t k = 0; k < n; ++k) {
      const int64_t e = base + k * inner;
      const A g = ld(gy[e]), yv = ld(y[e]);
      gx[e] = st<T>(log_sm ? g - exp(yv) * s : yv * (g - s));
    }
  }
}

// ---- cross-entropy -----------------------------------------------------------------

// Per-row loss buffers are F32, or F64 for F64 logits.
__device__ __forceinline__ double ld_loss(const void *p, int64_t i, bool f64) {
  return f64 ? static_cast<const double *>(p)[i] : double(static_cast<const float *>(p)[i]);
}
__device__ __forceinline__ void st_loss(void *p, int64_t i, bool f64, double v) {
  if (f64) static_cast<double *>(p)[i] = v;
  else static_cast<float *>(p)[i] = float(v);
}

// Where a row's 16-byte packs start: the elements before it are visited
// one by one, then whole packs, then the tail. Rows of an odd width
// (GPT-2's 50257 classes) start at every alignment.
template <class T>
__device__ __forceinline__ int64_t pack_head(const T *row, int64_t c) {
  const int64_t off = int64_t(reinterpret_cast<uintptr_t>(row) & 15u) / int64_t(sizeof(T));
  return min(c, off == 0 ? int64_t(0) : int64_t(kVec<T>) - off);
}

// f(k, x_k) for every element of the row, shared by the block's threads,
// read with 16-byte loads. With out, also out[k] = the value f returns,
// stored in packs where out has the row's alignment.
template <class T, class F>
__device__ __forceinline__ void row_visit(const T *row, T *out, int64_t c, F &&f) {
  using A = acc_t<T>;
  constexpr int V = kVec<T>;
  const int64_t head = pack_head(row, c), nv = (c - head) / V;
  auto one = [&](int64_t k) {
    const A r = f(k, ld(row[k]));
    if (out) out[k] = st<T>(r);
  };
  for (int64_t k = threadIdx.x; k < head; k += blockDim.x) one(k);
  const bool packed_out = out && aligned16(out + head);
  const Pack<T> *in = reinterpret_cast<const Pack<T> *>(row + head);
  for (int64_t p = threadIdx.x; p < nv; p += blockDim.x) {
    Pack<T> a = in[p];
    const int64_t k0 = head + p * V;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const A r = f(k0 + j, ld(a.v[j]));
      if (out && !packed_out) out[k0 + j] = st<T>(r);
      if (packed_out) a.v[j] = st<T>(r);
    }
    if (packed_out) reinterpret_cast<Pack<T> *>(out + head)[p] = a;
  }
  for (int64_t k = head + nv * V + threadIdx.x; k < c; k += blockDim.x) one(k);
}

// The row's max and sum of exp(x - max), and with `sum` the sum of x, in
// one pass (an online softmax: a thread rescales its running sum when its
// max grows; its sum then joins the block's at the block's max). GPT-2's
// 50257-wide rows were read twice with 2-byte loads: 1.3 ms of an H200 per
// forward at 8 x 1024 rows. A -inf logit adds nothing; a NaN makes the sum
// NaN, as in the two-pass form.
template <class T>
__device__ __forceinline__ void row_lse(const T *row, int64_t c, acc_t<T> *m_out, acc_t<T> *s_out,
                                        acc_t<T> *sum = nullptr) {
  using A = acc_t<T>;
  A m = neg_inf<A>(), s = A(0), sx = A(0);
  row_visit<T>(row, nullptr, c, [&](int64_t, A v) {
    if (v > m) {
      s = s * exp(m - v) + A(1);
      m = v;
    } else if (!(v == neg_inf<A>())) {
      s += exp(v - m);
    }
    sx += v;
    return v;
  });
  const A top = block_max(m);
  *s_out = block_sum(s == A(0) ? A(0) : s * exp(m - top));
  *m_out = top;
  if (sum) *sum = block_sum(sx);
}

template <class T>
__global__ void cross_entropy_kernel(const T *logits, const int64_t *target, int64_t c,
                                     int64_t ignore_index, double eps, void *losses, bool loss_f64) {
  using A = acc_t<T>;
  const int64_t i = blockIdx.x;
  const int64_t t = target[i];  // uniform over the block: whole blocks return together
  if (t == ignore_index) {
    if (threadIdx.x == 0) st_loss(losses, i, loss_f64, 0.0);
    return;
  }
  if (t < 0 || t >= c) {  // the op layer rejects these; never read past the row
    if (threadIdx.x == 0) st_loss(losses, i, loss_f64, __longlong_as_double(0x7ff8000000000000ll));
    return;
  }
  const T *row = logits + i * c;
  A m, s, sx;
  row_lse(row, c, &m, &s, eps == 0.0 ? nullptr : &sx);
  if (eps == 0.0) {
    if (threadIdx.x == 0) st_loss(losses, i, loss_f64, double(log(s) + m - ld(row[t])));
    return;
  }
  // Label smoothing: (1 - e)(lse - x_t) + e (lse - mean_k x_k).
  if (threadIdx.x == 0) {
    const double lse = double(log(s) + m);
    st_loss(losses, i, loss_f64,
            (1.0 - eps) * (lse - double(ld(row[t]))) + eps * (lse - double(sx) / double(c)));
  }
}

// glogits[i, :] = row_scale[i] * (softmax(logits[i]) - onehot(target[i])).
template <class T>
__global__ void cross_entropy_bwd_kernel(const T *logits, const int64_t *target, int64_t c,
                                         int64_t ignore_index, double eps, const void *row_scale,
                                         bool rs_f64, T *glogits) {
  using A = acc_t<T>;
  const int64_t i = blockIdx.x;
  const int64_t t = target[i];
  T *g = glogits + i * c;
  if (t == ignore_index || t < 0 || t >= c) {
    for (int64_t k = threadIdx.x; k < c; k += blockDim.x) g[k] = st<T>(A(0));
    return;
  }
  const T *row = logits + i * c;
  A m, s;
  row_lse(row, c, &m, &s);
  const A rs = A(ld_loss(row_scale, i, rs_f64)), inv = A(1) / s;
  // The smoothed target: (1 - e) on the class, e / c everywhere.
  const A on = eps == 0.0 ? A(1) : A(1.0 - eps + eps / double(c)), off = eps == 0.0 ? A(0) : A(eps / double(c));
  row_visit<T>(row, g, c, [&](int64_t k, A x) { return rs * (exp(x - m) * inv - (k == t ? on : off)); });
}

// Threads per row block: enough to cover short rows without idle warps.
int row_threads(int64_t n) { return n <= 64 ? 32 : n <= 256 ? 64 : n <= 1024 ? 128 : kThreads; }

bool loss_is_f64(const View &v, const char *kernel, const char *arg) {
  if (v.dtype != MIXP_F32 && v.dtype != MIXP_F64)
    fail(MIXP_ERR_INTERNAL, "cuda ", kernel, ": ", arg, " must be f32 or f64, got dtype ", int(v.dtype));
  return v.dtype == MIXP_F64;
}

}  // namespace

void CudaBackend::softmax(const View &x, int64_t outer, int64_t n, int64_t inner, bool log, const View &y) {
  if (outer * n * inner == 0) return;
  dispatch_float_dt(x.dtype, "softmax", [&](auto tag) {
    using T = decltype(tag);
    const T *px = static_cast<const T *>(x.data);
    T *py = static_cast<T *>(y.data);
    if (inner == 1)
      for_row_pieces(outer, [&](int64_t r0, unsigned rows) {
        softmax_row_kernel<T><<<rows, row_threads(n), 0, stream()>>>(px + r0 * n, n, log, py + r0 * n);
      });
    else
      softmax_col_kernel<T><<<grid_for(outer * inner), kThreads, 0, stream()>>>(px, outer, n, inner, log, py);
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::softmax_backward(const View &y, const View &gy, int64_t outer, int64_t n, int64_t inner,
                                   bool log, const View &gx) {
  if (outer * n * inner == 0) return;
  dispatch_float_dt(y.dtype, "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *py = static_cast<const T *>(y.data), *pg = static_cast<const T *>(gy.data);
    T *pgx = static_cast<T *>(gx.data);
    if (inner == 1)
      for_row_pieces(outer, [&](int64_t r0, unsigned rows) {
        softmax_bwd_row_kernel<T><<<rows, row_threads(n), 0, stream()>>>(py + r0 * n, pg + r0 * n, n, log,
                                                                          pgx + r0 * n);
      });
    else
      softmax_bwd_col_kernel<T><<<grid_for(outer * inner), kThreads, 0, stream()>>>(py, pg, outer, n, inner,
                                                                                    log, pgx);
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::cross_entropy(const View &logits, const View &target, int64_t n, int64_t c,
                                int64_t ignore_index, double label_smoothing, const View &losses) {
  if (target.dtype != MIXP_I64) fail(MIXP_ERR_INTERNAL, "cuda cross_entropy: target must be i64");
  const bool f64 = loss_is_f64(losses, "cross_entropy", "losses");
  if (n == 0) return;
  dispatch_float_dt(logits.dtype, "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    for_row_pieces(n, [&](int64_t r0, unsigned rows) {
      cross_entropy_kernel<T><<<rows, row_threads(c), 0, stream()>>>(
          static_cast<const T *>(logits.data) + r0 * c, static_cast<const int64_t *>(target.data) + r0, c,
          ignore_index, label_smoothing, static_cast<char *>(losses.data) + r0 * (f64 ? 8 : 4), f64);
    });
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::cross_entropy_backward(const View &logits, const View &target, int64_t n, int64_t c,
                                         int64_t ignore_index, double label_smoothing, const View &row_scale,
                                         const View &glogits) {
  if (target.dtype != MIXP_I64) fail(MIXP_ERR_INTERNAL, "cuda cross_entropy_backward: target must be i64");
  const bool f64 = loss_is_f64(row_scale, "cross_entropy_backward", "row_scale");
  if (n == 0 || c == 0) return;
  dispatch_float_dt(logits.dtype, "cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    for_row_pieces(n, [&](int64_t r0, unsigned rows) {
      cross_entropy_bwd_kernel<T><<<rows, row_threads(c), 0, stream()>>>(
          static_cast<const T *>(logits.data) + r0 * c, static_cast<const int64_t *>(target.data) + r0, c,
          ignore_index, label_smoothing, static_cast<const char *>(row_scale.data) + r0 * (f64 ? 8 : 4), f64,
          static_cast<T *>(glogits.data) + r0 * c);
    });
  });
  MIXP_CUDA_LAUNCHED();
}

}  // namespace mixp::cuda
