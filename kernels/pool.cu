// CUDA 2-D max/average/adaptive-average pooling, either layout, following
// src/cpu/pool_forward.cpp and pool_backward.cpp. The forward is a thread
// per output cell. The backward is a gather instead of the CPU's scatter: a
// thread per input element visits the output cells whose windows cover it in
// (i, j) order and adds their shares in acc_t<T>, which is the order the
// CPU's per-plane buffer receives them, so results match the CPU bit for bit
// with no atomics.
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

// Splits a flat index of a [N, C, H, W] (or NHWC) tensor into coordinates.
__device__ __forceinline__ void coords(bool nhwc, int64_t e, int64_t C, int64_t H, int64_t W, int64_t *n,
                                       int64_t *c, int64_t *h, int64_t *w) {
  if (nhwc) {
    *c = e % C; e /= C;
    *w = e % W; e /= W;
    *h = e % H; *n = e / H;
  } else {
    *w = e % W; e /= W;
    *h = e % H; e /= H;
    *c = e % C; *n = e / C;
  }
}

template <class T>
__global__ void pool_forward_kernel(Pool2dGeom g, const T *x, T *y, int64_t *idx, int64_t total) {
  using A = acc_t<T>;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < total; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, i, j;
    coords(g.nhwc, o, g.c, g.oh, g.ow, &n, &c, &i, &j);
    const Window wd = window(g, i, j);
    if (g.kind == PoolKind::Max) {
      A m = A(-INFINITY);
      int64_t arg = wd.h0 * g.w + wd.w0;
      for (int64_t h = wd.h0; h < wd.h1; ++h)
        for (int64_t w = wd.w0; w < wd.w1; ++w) {
          const A v = ld(x[at(g.nhwc, n, c, h, w, g.c, g.h, g.w)]);
          if (v > m || (isnan(v) && !isnan(m))) m = v, arg = h * g.w + w;
        }
      y[o] = st<T>(m);
      idx[o] = arg;
    } else {
      A s = A(0);
      for (int64_t h = wd.h0; h < wd.h1; ++h)
        for (int64_t w = wd.w0; w < wd.w1; ++w) s += ld(x[at(g.nhwc, n, c, h, w, g.c, g.h, g.w)]);
      y[o] = st<T>(A(s / A(wd.div)));
    }
  }
}

// The output rows (or columns) whose windows may cover input row h.
__device__ __forceinline__ void covering(const Pool2dGeom &g, bool rows, int64_t h, int64_t *lo, int64_t *hi) {
  const int64_t in = rows ? g.h : g.w, out = rows ? g.oh : g.ow;
  if (g.kind == PoolKind::AdaptiveAvg) {
    *lo = max(int64_t(0), h * out / in - 1);
    *hi = min(out - 1, ((h + 1) * out + in - 1) / in);
    return;
  }
  const int64_t k = rows ? g.kh : g.kw, s = rows ? g.stride_h : g.stride_w, p = rows ? g.pad_h : g.pad_w;
  const int64_t num = h + p - k + 1;
  *lo = num > 0 ? (num + s - 1) / s : 0;
  *hi = min(out - 1, (h + p) / s);
}

template <class T>
__global__ void pool_backward_kernel(Pool2dGeom g, const T *gy, const int64_t *idx, T *gx, int64_t total) {
  using A = acc_t<T>;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, c, h, w;
    coords(g.nhwc, e, g.c, g.h, g.w, &n, &c, &h, &w);
    int64_t i0, i1, j0, j1;
    covering(g, true, h, &i0, &i1);
    covering(g, false, w, &j0, &j1);
    A acc = A(0);
    for (int64_t i = i0; i <= i1; ++i)
      for (int64_t j = j0; j <= j1; ++j) {
        const int64_t o = at(g.nhwc, n, c, i, j, g.c, g.oh, g.ow);
        if (g.kind == PoolKind::Max) {
          if (idx[o] == h * g.w + w) acc += ld(gy[o]);
          continue;
        }
        const Window wd = window(g, i, j);
        if (h >= wd.h0 && h < wd.h1 && w >= wd.w0 && w < wd.w1) acc += ld(gy[o]) / A(wd.div);
      }
    gx[e] = st<T>(acc);
  }
}

}  // namespace

void CudaBackend::pool2d(const Pool2dGeom &g, const View &x, const View &y, const View *indices) {
  const int64_t total = g.n * g.c * g.oh * g.ow;
  if (total == 0) return;
  if (g.kind == PoolKind::Max && !indices) fail(MIXP_ERR_INTERNAL, "cuda pool2d: max pooling needs an indices buffer");
  int64_t *idx = indices ? static_cast<int64_t *>(indices->data) : nullptr;
  dispatch_float_dt(x.dtype, "pool2d", [&](auto tag) {
    using T = decltype(tag);
    pool_forward_kernel<T><<<grid_for(total), kThreads, 0, stream()>>>(g, static_cast<const T *>(x.data),
                                                                       static_cast<T *>(y.data), idx, total);
  });
  MIXP_CUDA_LAUNCHED();
}

void CudaBackend::pool2d_backward(const Pool2dGeom &g, const View &gy, const View *indices, const View &gx) {
  const int64_t total = g.n * g.c * g.h * g.w;
  if (total == 0) return;
  if (g.kind == PoolKind::Max && !indices) fail(MIXP_ERR_INTERNAL, "cuda pool2d_backward: max pooling needs its indices");
  const int64_t *idx = indices ? static_cast<const int64_t *>(indices->data) : nullptr;
  dispatch_float_dt(gy.dtype, "pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    pool_backward_kernel<T><<<grid_for(total), kThreads, 0, stream()>>>(g, static_cast<const T *>(gy.data), idx,
                                                                        static_cast<T *>(gx.data), total);
  });
  MIXP_CUDA_LAUNCHED();
}

}  // namespace mixp::cuda
