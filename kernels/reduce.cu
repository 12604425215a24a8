// CUDA reductions: row sums, column sums, max along an axis (with the first
// index), and the NaN/Inf count of the numerics checker.
//
// Determinism: every launch shape is a function of the tensor shape alone,
// partial sums are combined by fixed trees or in chunk order, and no float
// atomics are used, so results are bitwise reproducible run to run. Sums of
// F32/F16/BF16 accumulate in fp32, of F64 in double (the CPU sums in double,
// so F32 results agree to fp32 rounding, not bit for bit).
#include <algorithm>
#include <type_traits>

#include "common.cuh"

namespace mixp::cuda {
namespace {

// Row sums: one block per row, or, for a few long rows, fixed chunks of a
// row summed first and then added in chunk order.
constexpr int64_t kRowChunk = 16384;

__device__ __forceinline__ void st_float_any(double v, void *out, int64_t i, DType dt) {
  switch (dt) {
    case MIXP_F64: static_cast<double *>(out)[i] = v; return;
    case MIXP_F32: static_cast<float *>(out)[i] = f64_to_f32(v); return;
    case MIXP_F16: static_cast<uint16_t *>(out)[i] = f64_to_f16(v); return;
    default: static_cast<uint16_t *>(out)[i] = f64_to_bf16(v); return;
  }
}

// partial[r * nchunks + c] = sum of chunk c of row r (chunk = whole row when
// nchunks == 1); with `out` set the block writes scale * sum to out[r].
template <class T>
__global__ void row_sum_kernel(const T *x, int64_t cols, int64_t chunk, int64_t nchunks,
                               acc_t<T> *partial, void *out, DType out_dt, double scale) {
  using A = acc_t<T>;
  const int64_t r = blockIdx.x, c = blockIdx.y;
  const int64_t lo = c * chunk, hi = lo + chunk < cols ? lo + chunk : cols;
  const T *row = x + r * cols;
  A s = A(0);
  for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) s += ld(row[i]);
  s = block_sum(s);
  if (threadIdx.x == 0) {
    if (out) st_float_any(double(s) * scale, out, r, out_dt);
    else partial[r * nchunks + c] = s;
  }
}

// out[r] = scale * sum of the row's chunk sums, in chunk order.
template <class A>
__global__ void row_sum_finish_kernel(const A *partial, int64_t rows, int64_t nchunks, void *out,
                                      DType out_dt, double scale) {
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows;
       r += int64_t(gridDim.x) * blockDim.x) {
    A s = A(0);
    for (int64_t c = 0; c < nchunks; ++c) s += partial[r * nchunks + c];
    st_float_any(double(s) * scale, out, r, out_dt);
  }
}

// Column sums: a thread per column over a band of rows, the bands' partial
// sums then added in band order (one band when rows are few). The band
// depends on the shape alone, so the result depends on nothing else. It is
// short enough for the grid to fill a large GPU -- at least kColBlocks
// blocks: GPT-2's 8192 x 768 bias gradient runs as 258 blocks of 96 rows,
// not 24 of 1024 -- but never under kColMinBand rows, whose partials would
// cost more to add than they save.
constexpr int64_t kColMinBand = 64, kColMaxBand = 1024, kColBlocks = 256;

int64_t col_band(int64_t rows, int64_t col_blocks) {
  const int64_t want_bands = (kColBlocks + col_blocks - 1) / col_blocks;
  const int64_t band = std::clamp((rows + want_bands - 1) / want_bands, kColMinBand, kColMaxBand);
  return std::max(band, (rows + 65534) / 65535);  // gridDim.y <= 65535
}

template <class T>
__global__ void col_sum_kernel(const T *x, int64_t rows, int64_t cols, int64_t band,
                               acc_t<T> *partial, T *out, double scale) {
  using A = acc_t<T>;
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  const int64_t r0 = int64_t(blockIdx.y) * band;
  const int64_t r1 = r0 + band < rows ? r0 + band : rows;
  A s = A(0);
  for (int64_t r = r0; r < r1; ++r) s += ld(x[r * cols + col]);
  if (out) out[col] = st_d<T>(double(s) * scale);
  else partial[int64_t(blockIdx.y) * cols + col] = s;
}

template <class T>
__global__ void col_sum_finish_kernel(const acc_t<T> *partial, int64_t nbands, int64_t cols, T *out,
                                      double scale) {
  using A = acc_t<T>;
  const int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= cols) return;
  A s = A(0);
  for (int64_t b = 0; b < nbands; ++b) s += partial[b * cols + col];
  out[col] = st_d<T>(double(s) * scale);
}

// ---- max_dim ---------------------------------------------------------------------

template <class T> __device__ __forceinline__ auto ldv(T v) { return ld(v); }
template <> __device__ __forceinline__ auto ldv<int32_t>(int32_t v) { return v; }
template <> __device__ __forceinline__ auto ldv<int64_t>(int64_t v) { return v; }
template <> __device__ __forceinline__ auto ldv<uint8_t>(uint8_t v) { return v; }

template <class V>
__device__ __forceinline__ bool is_nan_v(V v) {
  if constexpr (std::is_floating_point_v<V>) return isnan(v);
  else return false;
}

// Whether candidate (v, i) beats the current best (b, j): NaN is the largest
// value and the first maximum wins, as the CPU's sequential scan decides.
template <class V>
__device__ __forceinline__ bool beats(V v, int64_t i, V b, int64_t j) {
  const bool vn = is_nan_v(v), bn = is_nan_v(b);
  if (vn || bn) return vn && (!bn || i < j);
  return v > b || (v == b && i < j);
}

// One thread per (outer, inner) position, scanning the axis in order.
template <class T>
__global__ void max_dim_kernel(const T *x, int64_t outer, int64_t n, int64_t inner, T *values,
                               int64_t *indices) {
  const int64_t total = outer * inner;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < total;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = p / inner, j = p - o * inner;
    const T *base = x + o * n * inner + j;
    auto best = ldv(base[0]);
    int64_t arg = 0;
    for (int64_t k = 1; k < n; ++k) {
      const auto v = ldv(base[k * inner]);
      if (!is_nan_v(best) && (v > best || is_nan_v(v))) {
        best = v;
        arg = k;
      }
    }
    indices[p] = arg;
    if (values) values[p] = base[arg * inner];  // the element itself, bit for bit
  }
}

// Long rows with inner == 1: a block per row, then a fixed tree over the
// threads' (value, index) candidates.
template <class T>
__global__ void max_row_kernel(const T *x, int64_t n, T *values, int64_t *indices) {
  using V = decltype(ldv(T{}));
  __shared__ V sv[kThreads];
  __shared__ int64_t si[kThreads];
  const T *row = x + int64_t(blockIdx.x) * n;
  V best = ldv(row[0]);
  int64_t arg = 0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const V v = ldv(row[k]);
    if (beats(v, k, best, arg)) {
      best = v;
      arg = k;
    }
  }
  sv[threadIdx.x] = best;
  si[threadIdx.x] = arg;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (int(threadIdx.x) < w && beats(sv[threadIdx.x + w], si[threadIdx.x + w], sv[threadIdx.x], si[threadIdx.x])) {
      sv[threadIdx.x] = sv[threadIdx.x + w];
      si[threadIdx.x] = si[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    indices[blockIdx.x] = si[0];
    if (values) values[blockIdx.x] = row[si[0]];
  }
}

template <class F>
void dispatch_all(DType t, F &&f) {
  switch (t) {
    case MIXP_I32: f(int32_t{}); return;
    case MIXP_I64: f(int64_t{}); return;
    case MIXP_U8:
    case MIXP_BOOL: f(uint8_t{}); return;
    default: dispatch_float_dt(t, "max_dim", f); return;
  }
}

// ---- count_values ---------------------------------------------------------------

// counts: nan, inf, zero, tiny, huge (Backend::count_values).
template <class T>
__global__ void count_values_kernel(const T *x, Strided<1> g, int64_t n, acc_t<T> tiny_below, acc_t<T> huge_from,
                                    unsigned long long *counts) {
  using A = acc_t<T>;
  unsigned long long c[5] = {0, 0, 0, 0, 0};
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t off[1];
    offsets(g, i, off);
    const A a = fabs(ld(x[off[0]]));
    c[0] += isnan(a) ? 1 : 0;
    c[1] += isinf(a) ? 1 : 0;
    c[2] += a == A(0) ? 1 : 0;
    c[3] += (a > A(0) && a < tiny_below) ? 1 : 0;
    c[4] += (a >= huge_from && !isinf(a)) ? 1 : 0;
  }
#pragma unroll
  for (int k = 0; k < 5; ++k) {
    const unsigned long long total = block_sum(c[k]);
    // Integer additions commute exactly, so the atomics keep the count exact.
    if (threadIdx.x == 0 && total) atomicAdd(&counts[k], total);
  }
}

}  // namespace

void CudaBackend::sum_rows(const View &x, int64_t rows, int64_t cols, const View &out, double scale) {
  if (rows == 0) return;
  dispatch_float_dt(out.dtype, "sum_rows", [](auto) {});  // out must be float too
  dispatch_float_dt(x.dtype, "sum_rows", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T *px = static_cast<const T *>(x.data);
    if (cols <= kRowChunk || rows >= 1024) {
      const size_t out_es = dtype_size(out.dtype);
      for_row_pieces(rows, [&](int64_t r0, unsigned nr) {
        row_sum_kernel<T><<<dim3(nr, 1), kThreads, 0, stream()>>>(
            px + r0 * cols, cols, cols, 1, nullptr, static_cast<char *>(out.data) + size_t(r0) * out_es,
            out.dtype, scale);
      });
      MIXP_CUDA_LAUNCHED();
      return;
    }
    // gridDim.y is at most 65535: longer rows get longer chunks.
    const int64_t chunk = std::max(kRowChunk, (cols + 65534) / 65535);
    const int64_t nchunks = (cols + chunk - 1) / chunk;
    Scratch partial(*this, size_t(rows * nchunks) * sizeof(A));
    row_sum_kernel<T><<<dim3(unsigned(rows), unsigned(nchunks)), kThreads, 0, stream()>>>(
        px, cols, chunk, nchunks, partial.as<A>(), nullptr, out.dtype, scale);
    MIXP_CUDA_LAUNCHED();
    row_sum_finish_kernel<A><<<grid_for(rows), kThreads, 0, stream()>>>(partial.as<A>(), rows, nchunks,
                                                                         out.data, out.dtype, scale);
    MIXP_CUDA_LAUNCHED();
  });
}

void CudaBackend::sum_cols(const View &x, int64_t rows, int64_t cols, const View &out, double scale) {
  if (cols == 0) return;
  dispatch_float_dt(x.dtype, "sum_cols", [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T *px = static_cast<const T *>(x.data);
    T *po = static_cast<T *>(out.data);
    const unsigned gx = unsigned((cols + kThreads - 1) / kThreads);
    const int64_t band = col_band(rows, gx);
    const int64_t nbands = rows > band ? (rows + band - 1) / band : 1;
    if (nbands == 1) {
      col_sum_kernel<T><<<dim3(gx, 1), kThreads, 0, stream()>>>(px, rows, cols, rows, nullptr, po, scale);
      MIXP_CUDA_LAUNCHED();
      return;
    }
    Scratch partial(*this, size_t(nbands * cols) * sizeof(A));
    col_sum_kernel<T><<<dim3(gx, unsigned(nbands)), kThreads, 0, stream()>>>(px, rows, cols, band,
                                                                             partial.as<A>(), nullptr, scale);
    MIXP_CUDA_LAUNCHED();
    col_sum_finish_kernel<T><<<gx, kThreads, 0, stream()>>>(partial.as<A>(), nbands, cols, po, scale);
    MIXP_CUDA_LAUNCHED();
  });
}

void CudaBackend::max_dim(const View &x, int64_t outer, int64_t n, int64_t inner, const View *values,
                          const View &indices) {
  if (indices.dtype != MIXP_I64) fail(MIXP_ERR_INTERNAL, "cuda max_dim: indices must be i64");
  if (n <= 0) fail(MIXP_ERR_INTERNAL, "cuda max_dim: the reduced axis is empty");
  if (outer * inner == 0) return;
  dispatch_all(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T *px = static_cast<const T *>(x.data);
    T *pv = values ? static_cast<T *>(values->data) : nullptr;
    int64_t *pi = static_cast<int64_t *>(indices.data);
    if (inner == 1 && n >= 1024)
      for_row_pieces(outer, [&](int64_t r0, unsigned rows) {
        max_row_kernel<T><<<rows, kThreads, 0, stream()>>>(px + r0 * n, n, pv ? pv + r0 : nullptr, pi + r0);
      });
    else
      max_dim_kernel<T><<<grid_for(outer * inner), kThreads, 0, stream()>>>(px, outer, n, inner, pv, pi);
    MIXP_CUDA_LAUNCHED();
  });
}

void CudaBackend::count_values(const View &x, double tiny_below, double huge_from, ValueCounts *out) {
  Strided<1> g;
  const View *ops[1] = {&x};
  const int64_t n = make_strided<1>(x, ops, g);
  unsigned long long host[5] = {0, 0, 0, 0, 0};
  if (n > 0) {
    Scratch counts(*this, sizeof host);
    MIXP_CUDA_CHECK(cudaMemsetAsync(counts.p, 0, sizeof host, stream()));
    dispatch_float_dt(x.dtype, "count_values", [&](auto tag) {
      using T = decltype(tag);
      using A = acc_t<T>;
      count_values_kernel<T><<<grid_for(n), kThreads, 0, stream()>>>(
          static_cast<const T *>(x.data), g, n, A(tiny_below), A(huge_from), counts.as<unsigned long long>());
    });
    MIXP_CUDA_LAUNCHED();
    MIXP_CUDA_CHECK(cudaMemcpyAsync(host, counts.p, sizeof(host), cudaMemcpyDeviceToHost, stream()));
    // The counts are the caller's to read now: this is the one sync here.
    MIXP_CUDA_CHECK(cudaStreamSynchronize(stream()));
    note_host_sync();
    raise_deferred_index_error();
  }
  out->nan = int64_t(host[0]);
  out->inf = int64_t(host[1]);
  out->zero = int64_t(host[2]);
  out->tiny = int64_t(host[3]);
  out->huge = int64_t(host[4]);
}

}  // namespace mixp::cuda
