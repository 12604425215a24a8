// CUDA 2-D max/average/adaptive-average pooling, either layout, following
// src/cpu/pool_forward.cpp and pool_backward.cpp. The forward is a thread
// per output cell, the backward one per input element (both launched over
// rows, below). The backward is a gather instead of the CPU's scatter: a
// thread per input element visits the output cells whose windows cover it in
// (i, j) order and adds their shares in acc_t<T>, which is the order the
// CPU's per-plane buffer receives them, so results match the CPU bit for bit
// with no atomics.
#include <algorithm>
#include <cstdint>

#include "common.cuh"

namespace mixp::cuda {
namespace {

struct Window {
  int64_t h0, h1, w0, w1;
  double div;
};

__device__ __forceinline__ Window window(const Pool2dGeom &g, int64_t i, int64_t j) {
  Window r;
  if (g.kind == PoolKind::AdaptiveAvg) {
    r.h0 = i * g.h / g.oh;
    r.h1 = ((i + 1) * g.h + g.oh - 1) / g.oh;
    r.w0 = j * g.w / g.ow;
    r.w1 = ((j + 1) * g.w + g.ow - 1) / g.ow;
    r.div = double((r.h1 - r.h0) * (r.w1 - r.w0));
    return r;
  }
  const int64_t hs = i * g.stride_h - g.pad_h, ws = j * g.stride_w - g.pad_w;
  const int64_t he = min(hs + g.kh, g.h + g.pad_h), we = min(ws + g.kw, g.w + g.pad_w);
  const double padded = double((he - hs) * (we - ws));
  r.h0 = max(hs, int64_t(0));
  r.w0 = max(ws, int64_t(0));
  r.h1 = min(he, g.h);
  r.w1 = min(we, g.w);
  r.div = g.count_include_pad ? padded : double((r.h1 - r.h0) * (r.w1 - r.w0));
  return r;
}

// Element offset of (n, c, h, w) in a [N, C, H, W] or [N, H, W, C] tensor.
__device__ __forceinline__ int64_t at(bool nhwc, int64_t n, int64_t c, int64_t h, int64_t w, int64_t C, int64_t H,
                                      int64_t W) {
  return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

// The kernels run over rows: a row is (n, h) of an NHWC tensor (W * C
// contiguous elements, channel fastest) or (n, c, h) of an NCHW one (W
// elements). A block takes blockDim.y rows and blockDim.x-wide chunks of
// each; a row's coordinates are found once, an element's with one division
// in I (32 bits unless a row is longer) in NHWC and none in NCHW. A thread
// per flat element took six 64-bit divisions for its coordinates, and the
// backward of ResNet-50's stem max pool (205M elements) spent 5.5 ms of an
// H200 on little else.
struct Row {
  int64_t n, c, h;  // c: NCHW only
};

__device__ __forceinline__ Row row_at(bool nhwc, int64_t row, int64_t C, int64_t H) {
  Row r;
  r.h = row % H;
  const int64_t rest = row / H;
  r.n = nhwc ? rest : rest / C;
  r.c = nhwc ? 0 : rest % C;
  return r;
}

// Channel and column of element e of a row.
template <class I>
__device__ __forceinline__ void in_row(bool nhwc, const Row &r, I e, I C, int64_t *c, I *w) {
  if (nhwc) {
    *c = e % C;
    *w = e / C;
  } else {
    *c = r.c;
    *w = e;
  }
}

#define MIXP_POOL_ROWS(rows)                                                                      \
  for (int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; row < (rows);                \
       row += int64_t(gridDim.x) * blockDim.y)
#define MIXP_POOL_ROW_ELEMENTS(len)                                                               \
  for (I e = I(blockIdx.y) * I(blockDim.x) + I(threadIdx.x); e < (len); e += I(gridDim.y) * I(blockDim.x))

template <class T, class I>
__global__ void pool_forward_kernel(Pool2dGeom g, const T *x, T *y, int64_t *idx, int64_t rows, I len) {
  using A = acc_t<T>;
  MIXP_POOL_ROWS(rows) {
    const Row r = row_at(g.nhwc, row, g.c, g.oh);
    MIXP_POOL_ROW_ELEMENTS(len) {
      int64_t c;
      I j;
      in_row<I>(g.nhwc, r, e, I(g.c), &c, &j);
      const Window wd = window(g, r.h, j);
      const int64_t o = at(g.nhwc, r.n, c, r.h, j, g.c, g.oh, g.ow);
      if (g.kind == PoolKind::Max) {
        A m = A(-INFINITY);
        int64_t arg = wd.h0 * g.w + wd.w0;
        for (int64_t h = wd.h0; h < wd.h1; ++h)
          for (int64_t w = wd.w0; w < wd.w1; ++w) {
            const A v = ld(x[at(g.nhwc, r.n, c, h, w, g.c, g.h, g.w)]);
            if (v > m || (isnan(v) && !isnan(m))) m = v, arg = h * g.w + w;
          }
        y[o] = st<T>(m);
        idx[o] = arg;
      } else {
        A s = A(0);
        for (int64_t h = wd.h0; h < wd.h1; ++h)
          for (int64_t w = wd.w0; w < wd.w1; ++w) s += ld(x[at(g.nhwc, r.n, c, h, w, g.c, g.h, g.w)]);
        y[o] = st<T>(A(s / A(wd.div)));
      }
    }
  }
}

// The output rows (or columns) whose windows may cover input row h, in I.
template <class I>
__device__ __forceinline__ void covering(const Pool2dGeom &g, bool rows, I h, I *lo, I *hi) {
  const I in = I(rows ? g.h : g.w), out = I(rows ? g.oh : g.ow);
  if (g.kind == PoolKind::AdaptiveAvg) {  // products in 64 bits
    *lo = I(max(int64_t(0), int64_t(h) * out / in - 1));
    *hi = I(min(int64_t(out) - 1, ((int64_t(h) + 1) * out + in - 1) / in));
    return;
  }
  const I k = I(rows ? g.kh : g.kw), s = I(rows ? g.stride_h : g.stride_w), p = I(rows ? g.pad_h : g.pad_w);
  const I num = h + p - k + 1;
  *lo = num > 0 ? (num + s - 1) / s : I(0);
  *hi = min(I(out - 1), I((h + p) / s));
}

template <class T, class I>
__global__ void pool_backward_kernel(Pool2dGeom g, const T *gy, const int64_t *idx, T *gx, int64_t rows, I len) {
  using A = acc_t<T>;
  MIXP_POOL_ROWS(rows) {
    const Row r = row_at(g.nhwc, row, g.c, g.h);
    int64_t i0, i1;
    covering<int64_t>(g, true, r.h, &i0, &i1);
    MIXP_POOL_ROW_ELEMENTS(len) {
      int64_t c;
      I w, j0, j1;
      in_row<I>(g.nhwc, r, e, I(g.c), &c, &w);
      covering<I>(g, false, w, &j0, &j1);
      const int64_t mine = r.h * g.w + w;
      A acc = A(0);
      for (int64_t i = i0; i <= i1; ++i)
        for (I j = j0; j <= j1; ++j) {
          const int64_t o = at(g.nhwc, r.n, c, i, j, g.c, g.oh, g.ow);
          if (g.kind == PoolKind::Max) {
            if (idx[o] == mine) acc += ld(gy[o]);
            continue;
          }
          const Window wd = window(g, i, j);
          if (r.h >= wd.h0 && r.h < wd.h1 && w >= wd.w0 && w < wd.w1) acc += ld(gy[o]) / A(wd.div);
        }
      gx[at(g.nhwc, r.n, c, r.h, w, g.c, g.h, g.w)] = st<T>(acc);
    }
  }
}

#undef MIXP_POOL_ROWS
#undef MIXP_POOL_ROW_ELEMENTS

// Launches kernel over the rows of an [n, c, h, w] tensor in layout nhwc,
// with 32-bit element indices where a row and the column arithmetic
// (covering's w + pad - k + 1, the output width) stay far from 2^31.
template <class Launch>
void over_rows(const Pool2dGeom &g, int64_t n, int64_t c, int64_t h, int64_t w, Launch &&launch) {
  const bool nhwc = g.nhwc;
  const int64_t rows = nhwc ? n * h : n * c * h, len = nhwc ? w * c : w;
  unsigned tx = 32;
  while (tx < unsigned(kThreads) && int64_t(tx) < len) tx *= 2;
  const unsigned ty = unsigned(kThreads) / tx;
  const dim3 block(tx, ty);
  const dim3 grid(unsigned(std::min<int64_t>((rows + ty - 1) / ty, kMaxRowBlocks)),
                  unsigned(std::min<int64_t>((len + tx - 1) / tx, 65535)));
  const int64_t narrow = int64_t(1) << 30;
  if (len < narrow && g.w + g.pad_w + g.kw < narrow && g.ow < narrow) launch(grid, block, rows, int32_t(len));
  else launch(grid, block, rows, len);
}

}  // namespace

void CudaBackend::pool2d(const Pool2dGeom &g, const View &x, const View &y, const View *indices) {
  if (g.n * g.c * g.oh * g.ow == 0) return;
  if (g.kind == PoolKind::Max && !indices) fail(MIXP_ERR_INTERNAL, "cuda pool2d: max pooling needs an indices buffer");
  int64_t *idx = indices ? static_cast<int64_t *>(indices->data) : nullptr;
  dispatch_float_dt(x.dtype, "pool2d", [&](auto tag) {
    using T = decltype(tag);
    over_rows(g, g.n, g.c, g.oh, g.ow, [&](dim3 grid, dim3 block, int64_t rows, auto len) {
      pool_forward_kernel<T, decltype(len)><<<grid, block, 0, stream()>>>(
          g, static_cast<const T *>(x.data), static_cast<T *>(y.data), idx, rows, len);
    });
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::pool2d_backward(const Pool2dGeom &g, const View &gy, const View *indices, const View &gx) {
  if (g.n * g.c * g.h * g.w == 0) return;
  if (g.kind == PoolKind::Max && !indices) fail(MIXP_ERR_INTERNAL, "cuda pool2d_backward: max pooling needs its indices");
  const int64_t *idx = indices ? static_cast<const int64_t *>(indices->data) : nullptr;
  dispatch_float_dt(gy.dtype, "pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    over_rows(g, g.n, g.c, g.h, g.w, [&](dim3 grid, dim3 block, int64_t rows, auto len) {
      pool_backward_kernel<T, decltype(len)><<<grid, block, 0, stream()>>>(
          g, static_cast<const T *>(gy.data), idx, static_cast<T *>(gx.data), rows, len);
    });
  });
  MIXP_CUDA_LAUNCHED();
}

}  // namespace mixp::cuda
