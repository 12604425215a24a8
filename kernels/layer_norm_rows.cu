// Layer norm's rows on CUDA (group_norm with one group and s == 1: rows of
// `len` contiguous elements, one weight and bias per column) with a warp per
// row held in registers: the row read once with 16-byte loads, warp shuffles
// instead of block barriers. norm.cu's block-per-row kernels read a row two
// or three times with 2-byte loads: GPT-2's 8192 x 768 bf16 layer norm took
// 37 us forward on an H200 (about 680 GB/s). The formulas, and double
// statistics, are those kernels' (and so the CPU's); only the order of the
// double sums differs.
//
// Taken for rows of at most kRowPacks packs per lane (1024 halves, 512
// floats, 256 doubles) that are whole packs and start 16-byte aligned;
// norm.cu runs the rest.
#include <initializer_list>
#include <type_traits>

#include "common.cuh"

namespace mixp::cuda {
namespace {

template <class T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

constexpr int kRowPacks = 4;
constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <class T>
__device__ __forceinline__ acc_t<T> column_or(const T *p, int64_t k, acc_t<T> dflt) {
  return p ? ld(p[k]) : dflt;
}

// The row's packs into p (lane's q-th pack: pack lane + 32 q); packs past
// the row are left alone, and every_element and store_row skip them.
template <class T>
__device__ __forceinline__ void load_row(const T *row, int64_t nv, int lane, Pack<T> (&p)[kRowPacks]) {
#pragma unroll
  for (int q = 0; q < kRowPacks; ++q) {
    const int64_t k = lane + 32 * q;
    if (k < nv) p[q] = reinterpret_cast<const Pack<T> *>(row)[k];
  }
}

// f(q, j, column) for element j of each of the lane's packs q in the row.
template <class T, class F>
__device__ __forceinline__ void every_element(int64_t nv, int lane, F &&f) {
#pragma unroll
  for (int q = 0; q < kRowPacks; ++q) {
    const int64_t k = lane + 32 * q;
    if (k >= nv) continue;
#pragma unroll
    for (int j = 0; j < kVec<T>; ++j) f(q, j, k * kVec<T> + j);
  }
}

// p's elements rewritten by f(q, j, column) (which may read them), each
// pack then stored to the row.
template <class T, class F>
__device__ __forceinline__ void store_row(T *row, int64_t nv, int lane, Pack<T> (&p)[kRowPacks], F &&f) {
  every_element<T>(nv, lane, [&](int q, int j, int64_t ch) { p[q].v[j] = f(q, j, ch); });
#pragma unroll
  for (int q = 0; q < kRowPacks; ++q)
    if (lane + 32 * q < nv) reinterpret_cast<Pack<T> *>(row)[lane + 32 * q] = p[q];
}

template <class T>
__global__ void ln_forward_rows_kernel(const T *x, int64_t rows, int64_t len, double eps, const T *w, const T *b,
                                       T *y, stat_t<T> *mean, stat_t<T> *rstd) {
  using A = acc_t<T>;
  using S = stat_t<T>;
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;  // the whole warp
  const int64_t nv = len / kVec<T>;
  Pack<T> p[kRowPacks];
  load_row(x + row * len, nv, lane, p);
  double sum = 0.0;
  every_element<T>(nv, lane, [&](int q, int j, int64_t) { sum += double(ld(p[q].v[j])); });
  const double mu = warp_sum(sum) / double(len);
  double sq = 0.0;
  every_element<T>(nv, lane, [&](int q, int j, int64_t) {
    const double d = double(ld(p[q].v[j])) - mu;
    sq += d * d;
  });
  const double is = 1.0 / sqrt(warp_sum(sq) / double(len) + eps);
  const S smu = S(mu), sis = S(is);
  if (lane == 0) {
    mean[row] = smu;
    rstd[row] = sis;
  }
  const A amu = A(smu), ais = A(sis);
  store_row(y + row * len, nv, lane, p, [&](int q, int j, int64_t ch) {
    return st<T>((ld(p[q].v[j]) - amu) * (column_or(w, ch, A(1)) * ais) + column_or(b, ch, A(0)));
  });
}

// gx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = gy * w.
template <class T>
__global__ void ln_gx_rows_kernel(const T *x, const T *gy, int64_t rows, int64_t len, const stat_t<T> *mean,
                                  const stat_t<T> *rstd, const T *w, T *gx) {
  using A = acc_t<T>;
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int64_t nv = len / kVec<T>;
  Pack<T> px[kRowPacks], pg[kRowPacks];
  load_row(x + row * len, nv, lane, px);
  load_row(gy + row * len, nv, lane, pg);
  const double mu = double(mean[row]), is = double(rstd[row]);
  double s1 = 0.0, s2 = 0.0;
  every_element<T>(nv, lane, [&](int q, int j, int64_t ch) {
    const double d = double(ld(pg[q].v[j])) * double(column_or(w, ch, A(1)));
    s1 += d;
    s2 += d * (double(ld(px[q].v[j])) - mu) * is;
  });
  const A m1 = A(warp_sum(s1) / double(len)), m2 = A(warp_sum(s2) / double(len)), amu = A(mu), ais = A(is);
  store_row(gx + row * len, nv, lane, pg, [&](int q, int j, int64_t ch) {
    const A xhat = (ld(px[q].v[j]) - amu) * ais;
    return st<T>(ais * (ld(pg[q].v[j]) * column_or(w, ch, A(1)) - m1 - xhat * m2));
  });
}

template <class T>
bool rows_fit(int64_t rows, int64_t len, std::initializer_list<const void *> rows_data) {
  constexpr int V = kVec<T>;
  if (rows < 1 || len < 1 || len % V != 0 || len / V > 32 * kRowPacks) return false;
  if ((rows + kWarpsPerBlock - 1) / kWarpsPerBlock > kMaxRowBlocks) return false;
  for (const void *p : rows_data)
    if (!aligned16(p)) return false;
  return true;
}

unsigned row_blocks(int64_t rows) { return unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock); }

}  // namespace

bool layer_norm_rows_forward(CudaBackend &be, int64_t rows, int64_t len, const View &x, const View *weight,
                             const View *bias, double eps, const View &y, const View &mean, const View &rstd) {
  bool ran = false;
  dispatch_float_dt(x.dtype, "layer_norm_rows_forward", [&](auto tag) {
    using T = decltype(tag);
    using S = stat_t<T>;
    if (!rows_fit<T>(rows, len, {x.data, y.data})) return;
    ln_forward_rows_kernel<T><<<row_blocks(rows), 32 * kWarpsPerBlock, 0, be.stream()>>>(
        static_cast<const T *>(x.data), rows, len, eps, weight ? static_cast<const T *>(weight->data) : nullptr,
        bias ? static_cast<const T *>(bias->data) : nullptr, static_cast<T *>(y.data),
        static_cast<S *>(mean.data), static_cast<S *>(rstd.data));
    MIXP_CUDA_LAUNCHED();
    ran = true;
  });
  return ran;
}

bool layer_norm_rows_gx(CudaBackend &be, int64_t rows, int64_t len, const View &x, const View &gy,
                        const View &mean, const View &rstd, const View *weight, const View &gx) {
  bool ran = false;
  dispatch_float_dt(x.dtype, "layer_norm_rows_gx", [&](auto tag) {
    using T = decltype(tag);
    using S = stat_t<T>;
    if (!rows_fit<T>(rows, len, {x.data, gy.data, gx.data})) return;
    ln_gx_rows_kernel<T><<<row_blocks(rows), 32 * kWarpsPerBlock, 0, be.stream()>>>(
        static_cast<const T *>(x.data), static_cast<const T *>(gy.data), rows, len,
        static_cast<const S *>(mean.data), static_cast<const S *>(rstd.data),
        weight ? static_cast<const T *>(weight->data) : nullptr, static_cast<T *>(gx.data));
    MIXP_CUDA_LAUNCHED();
    ran = true;
  });
  return ran;
}

}  // namespace mixp::cuda
