// 2-D convolution through cuDNN: forward (+bias), backward data and
// backward weights, NCHW and NHWC activations with [C_out, C_in/groups, kh,
// kw] weights, each direction run from its cached plan (conv_plan.hpp:
// descriptors, algorithm, workspace size). Where the session's mode allows
// no cuDNN backward algorithm (deterministic F64 on cuDNN 9: only
// atomics-based ones), the gradients come from direct kernels below that
// gather each output element's sum in a fixed order: slow, but reproducible
// bit for bit.
//
// NHWC: cuDNN's NHWC Tensor-Core engines want the filter in KRSC; mixp's
// weights are KCRS in both layouts, so an NHWC convolution reorders the
// (small) filter into scratch first, and the weight gradient back.
// cuDNN's legacy descriptors take int sizes and strides: a batch whose
// tensors pass 2^31 elements runs in pieces of whole images; an image
// above 2^31 elements is refused with MIXP_ERR_UNSUPPORTED.
#include <algorithm>
#include <cstdint>

#include "common.cuh"
#include "conv_plan.hpp"

namespace mixp::cuda {
namespace {

// cuDNN's scaling factors: double for F64 data, float otherwise.
struct Scales {
  float f1 = 1.0f, f0 = 0.0f;
  double d1 = 1.0, d0 = 0.0;
  bool dbl;
  explicit Scales(DType t) : dbl(t == MIXP_F64) {}
  const void *one() const { return dbl ? static_cast<const void *>(&d1) : &f1; }
  const void *zero() const { return dbl ? static_cast<const void *>(&d0) : &f0; }
};

// The filter between mixp's KCRS and cuDNN's NHWC (KRSC) order; rs = R*S,
// c = input channels per group.
template <class T>
__global__ void filter_layout_kernel(const T *src, T *dst, int64_t k, int64_t c, int64_t rs,
                                     bool to_krsc) {
  const int64_t total = k * c * rs;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t from;
    if (to_krsc) {  // e = (kk * rs + p) * c + cc
      const int64_t cc = e % c, p = (e / c) % rs, kk = e / (c * rs);
      from = (kk * c + cc) * rs + p;
    } else {  // e = (kk * c + cc) * rs + p
      const int64_t p = e % rs, cc = (e / rs) % c, kk = e / (c * rs);
      from = (kk * rs + p) * c + cc;
    }
    dst[e] = src[from];
  }
}

void filter_layout(CudaBackend &be, DType dt, const void *src, void *dst, const Conv2dGeom &g,
                   bool to_krsc) {
  dispatch_float_dt(dt, "conv2d filter layout", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = g.c_out * (g.c_in / g.groups) * g.kh * g.kw;
    filter_layout_kernel<T><<<grid_for(total), kThreads, 0, be.stream()>>>(
        static_cast<const T *>(src), static_cast<T *>(dst), g.c_out, g.c_in / g.groups,
        g.kh * g.kw, to_krsc);
    MIXP_CUDA_LAUNCHED();
  });
}

size_t filter_bytes(const Conv2dGeom &g, DType dt) {
  return size_t(g.c_out * (g.c_in / g.groups) * g.kh * g.kw) * dtype_size(dt);
}

// Calls f(piece, n0, first) over pieces of whole images such that no tensor
// of a piece passes 2^31 elements (cuDNN's int descriptors); one piece for
// any batch that fits, which is every batch in practice.
int64_t images_per_piece(const Conv2dGeom &g) {
  const int64_t per_image = std::max({g.c_in * g.h * g.w, g.c_out * g.oh * g.ow, int64_t(1)});
  return std::max<int64_t>(INT32_MAX / per_image, 1);
}

template <class F>
void for_batch_pieces(const Conv2dGeom &g, F &&f) {
  const int64_t max_n = images_per_piece(g);
  for (int64_t n0 = 0; n0 < g.n; n0 += max_n) {
    Conv2dGeom piece = g;
    piece.n = std::min(max_n, g.n - n0);
    f(piece, n0, n0 == 0);
  }
}

// Whether a backward direction takes the direct kernel: asked of the first
// piece, whose plan (timed on its buffers in benchmark mode) this makes
// (the others differ only in batch size, where the ranking does not change
// in practice; a later piece that still gets kConvDirect is refused).
bool direct_backward(CudaBackend &be, const Conv2dGeom &g, DType dt, ConvDir dir, const ConvOperands &first) {
  Conv2dGeom piece = g;
  piece.n = std::min(images_per_piece(g), g.n);
  return conv_plan(be, piece, dt, dir, first).algo == kConvDirect;
}

const ConvPlan &cudnn_plan(CudaBackend &be, const Conv2dGeom &piece, DType dt, ConvDir dir,
                           const ConvOperands &ops) {
  const ConvPlan &p = conv_plan(be, piece, dt, dir, ops);
  if (p.algo == kConvDirect)
    fail(MIXP_ERR_UNSUPPORTED, "cuda conv2d: cuDNN offers no ", piece.deterministic ? "deterministic " : "",
         "backward algorithm for a batch piece of ", piece.n, " images");
  return p;
}

const void *at_image(const View &v, int64_t n0, int64_t per_image) {
  return static_cast<const char *>(v.data) + size_t(n0 * per_image) * dtype_size(v.dtype);
}
void *at_image_mut(const View &v, int64_t n0, int64_t per_image) {
  return static_cast<char *>(v.data) + size_t(n0 * per_image) * dtype_size(v.dtype);
}

// Offsets of activation element (n, c, h, w) in NCHW or NHWC.
struct ActIndex {
  int64_t c, h, w;
  bool nhwc;
  __device__ int64_t operator()(int64_t n, int64_t ch, int64_t y, int64_t x) const {
    return nhwc ? ((n * h + y) * w + x) * c + ch : ((n * c + ch) * h + y) * w + x;
  }
};

// gx[n, ci, y, x] = sum over (co in ci's group, r, s) with y + pad - r*dil a
// multiple of stride landing in the output, of gy[n, co, oy, ox] * w[co, ci', r, s].
// One thread per gx element; the loop order fixes the rounding.
template <class T>
__global__ void conv_bwd_data_direct(const T *gy, const T *w, T *gx, Conv2dGeom g) {
  const int64_t total = g.n * g.c_in * g.h * g.w, cpg_in = g.c_in / g.groups,
                cpg_out = g.c_out / g.groups;
  const ActIndex xi{g.c_in, g.h, g.w, g.nhwc}, yi{g.c_out, g.oh, g.ow, g.nhwc};
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    int64_t n, ci, y, x;
    if (g.nhwc) {
      ci = e % g.c_in, x = (e / g.c_in) % g.w, y = (e / (g.c_in * g.w)) % g.h, n = e / (g.c_in * g.w * g.h);
    } else {
      x = e % g.w, y = (e / g.w) % g.h, ci = (e / (g.w * g.h)) % g.c_in, n = e / (g.w * g.h * g.c_in);
    }
    const int64_t grp = ci / cpg_in, cl = ci % cpg_in;
    acc_t<T> sum = 0;
    for (int64_t co = grp * cpg_out; co < (grp + 1) * cpg_out; ++co)
      for (int64_t r = 0; r < g.kh; ++r) {
        const int64_t ty = y + g.pad_h - r * g.dil_h;
        if (ty < 0 || ty % g.stride_h) continue;
        const int64_t oy = ty / g.stride_h;
        if (oy >= g.oh) continue;
        for (int64_t q = 0; q < g.kw; ++q) {
          const int64_t tx = x + g.pad_w - q * g.dil_w;
          if (tx < 0 || tx % g.stride_w) continue;
          const int64_t ox = tx / g.stride_w;
          if (ox >= g.ow) continue;
          sum += ld(gy[yi(n, co, oy, ox)]) * ld(w[((co * cpg_in + cl) * g.kh + r) * g.kw + q]);
        }
      }
    gx[xi(n, ci, y, x)] = st<T>(sum);
  }
}

// gw[co, ci', r, s] = sum over (n, oy, ox) of gy[n, co, oy, ox] * x[n, ci, iy, ix]
// with iy = oy*stride - pad + r*dil inside the image. One thread per gw
// element (KCRS, mixp's layout in both activation layouts).
template <class T>
__global__ void conv_bwd_weights_direct(const T *x, const T *gy, T *gw, Conv2dGeom g) {
  const int64_t cpg_in = g.c_in / g.groups, cpg_out = g.c_out / g.groups,
                total = g.c_out * cpg_in * g.kh * g.kw;
  const ActIndex xi{g.c_in, g.h, g.w, g.nhwc}, yi{g.c_out, g.oh, g.ow, g.nhwc};
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t q = e % g.kw, r = (e / g.kw) % g.kh, cl = (e / (g.kw * g.kh)) % cpg_in,
                  co = e / (g.kw * g.kh * cpg_in), ci = (co / cpg_out) * cpg_in + cl;
    acc_t<T> sum = 0;
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        const int64_t iy = oy * g.stride_h - g.pad_h + r * g.dil_h;
        if (iy < 0 || iy >= g.h) continue;
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const int64_t ix = ox * g.stride_w - g.pad_w + q * g.dil_w;
          if (ix < 0 || ix >= g.w) continue;
          sum += ld(gy[yi(n, co, oy, ox)]) * ld(x[xi(n, ci, iy, ix)]);
        }
      }
    gw[e] = st<T>(sum);
  }
}

template <class T>
__global__ void add_channel_bias(T *y, const T *bias, int64_t total, int64_t c, int64_t inner,
                                 bool nhwc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = nhwc ? i % c : (i / inner) % c;
    y[i] = st<T>(ld(y[i]) + ld(bias[ch]));
  }
}

}  // namespace

void CudaBackend::conv2d(const Conv2dGeom &g, const View &x, const View &w, const View *bias,
                         const View &y) {
  if (g.n == 0 || g.c_out == 0 || g.oh == 0 || g.ow == 0) return;
  if (g.c_in == 0 || g.kh == 0 || g.kw == 0) {  // empty sum: only the bias
    fill(y, 0.0);
  } else {
    Scratch krsc(*this, g.nhwc ? filter_bytes(g, w.dtype) : 0);
    if (g.nhwc) filter_layout(*this, w.dtype, w.data, krsc.p, g, true);
    const void *filter = g.nhwc ? krsc.p : w.data;
    for_batch_pieces(g, [&](const Conv2dGeom &pg, int64_t n0, bool) {
      const void *xp = at_image(x, n0, g.c_in * g.h * g.w);
      void *yp = at_image_mut(y, n0, g.c_out * g.oh * g.ow);
      const ConvPlan &p = conv_plan(*this, pg, x.dtype, ConvDir::Fwd, {xp, filter, yp});
      Scratch scratch(*this, p.workspace);
      Scales s(x.dtype);
      MIXP_CUDNN_CHECK(cudnnConvolutionForward(cudnn_handle(*this), s.one(), p.x, xp, p.w, filter, p.conv,
                                               cudnnConvolutionFwdAlgo_t(p.algo), scratch.p, p.workspace,
                                               s.zero(), p.y, yp));
    });
  }
  if (bias) {
    dispatch_float_dt(y.dtype, "conv2d bias", [&](auto tag) {
      using T = decltype(tag);
      const int64_t total = g.n * g.c_out * g.oh * g.ow;
      add_channel_bias<T><<<grid_for(total), kThreads, 0, stream()>>>(
          static_cast<T *>(y.data), static_cast<const T *>(bias->data), total, g.c_out,
          g.oh * g.ow, g.nhwc);
      MIXP_CUDA_LAUNCHED();
    });
  }
}

void CudaBackend::conv2d_backward_data(const Conv2dGeom &g, const View &gy, const View &w,
                                       const View &gx) {
  if (g.n == 0 || g.c_in == 0 || g.h == 0 || g.w == 0) return;
  if (g.c_out == 0 || g.oh == 0 || g.ow == 0 || g.kh == 0 || g.kw == 0) {
    fill(gx, 0.0);
    return;
  }
  Scratch krsc(*this, g.nhwc ? filter_bytes(g, w.dtype) : 0);
  if (g.nhwc) filter_layout(*this, w.dtype, w.data, krsc.p, g, true);
  const void *filter = g.nhwc ? krsc.p : w.data;
  if (direct_backward(*this, g, gy.dtype, ConvDir::BwdData, {filter, gy.data, gx.data})) {
    dispatch_float_dt(gy.dtype, "conv2d backward data", [&](auto tag) {
      using T = decltype(tag);
      conv_bwd_data_direct<T><<<grid_for(g.n * g.c_in * g.h * g.w), kThreads, 0, stream()>>>(
          static_cast<const T *>(gy.data), static_cast<const T *>(w.data), static_cast<T *>(gx.data), g);
      MIXP_CUDA_LAUNCHED();
    });
    return;
  }
  for_batch_pieces(g, [&](const Conv2dGeom &pg, int64_t n0, bool) {
    const void *gyp = at_image(gy, n0, g.c_out * g.oh * g.ow);
    void *gxp = at_image_mut(gx, n0, g.c_in * g.h * g.w);
    const ConvPlan &p = cudnn_plan(*this, pg, gy.dtype, ConvDir::BwdData, {filter, gyp, gxp});
    Scratch scratch(*this, p.workspace);
    Scales s(gy.dtype);
    MIXP_CUDNN_CHECK(cudnnConvolutionBackwardData(cudnn_handle(*this), s.one(), p.w, filter, p.y, gyp, p.conv,
                                                  cudnnConvolutionBwdDataAlgo_t(p.algo), scratch.p, p.workspace,
                                                  s.zero(), p.x, gxp));
  });
}

void CudaBackend::conv2d_backward_weights(const Conv2dGeom &g, const View &x, const View &gy,
                                          const View &gw) {
  if (g.c_out == 0 || g.c_in == 0 || g.kh == 0 || g.kw == 0) return;
  if (g.n == 0 || g.oh == 0 || g.ow == 0 || g.h == 0 || g.w == 0) {
    fill(gw, 0.0);
    return;
  }
  if (direct_backward(*this, g, x.dtype, ConvDir::BwdFilter, {x.data, gy.data, nullptr})) {
    dispatch_float_dt(x.dtype, "conv2d backward weights", [&](auto tag) {
      using T = decltype(tag);
      conv_bwd_weights_direct<T><<<grid_for(g.c_out * (g.c_in / g.groups) * g.kh * g.kw), kThreads, 0,
                                   stream()>>>(static_cast<const T *>(x.data),
                                               static_cast<const T *>(gy.data), static_cast<T *>(gw.data), g);
      MIXP_CUDA_LAUNCHED();
    });
    return;
  }
  // NHWC: the gradient is produced in KRSC and reordered into gw (KCRS).
  Scratch krsc(*this, g.nhwc ? filter_bytes(g, gw.dtype) : 0);
  void *filter = g.nhwc ? krsc.p : gw.data;
  for_batch_pieces(g, [&](const Conv2dGeom &pg, int64_t n0, bool first) {
    const void *xp = at_image(x, n0, g.c_in * g.h * g.w), *gyp = at_image(gy, n0, g.c_out * g.oh * g.ow);
    const ConvPlan &p = cudnn_plan(*this, pg, x.dtype, ConvDir::BwdFilter, {xp, gyp, nullptr});
    Scratch scratch(*this, p.workspace);
    Scales s(x.dtype);
    // Later pieces add their part of the sum over images (beta = 1).
    MIXP_CUDNN_CHECK(cudnnConvolutionBackwardFilter(cudnn_handle(*this), s.one(), p.x, xp, p.y, gyp, p.conv,
                                                    cudnnConvolutionBwdFilterAlgo_t(p.algo), scratch.p,
                                                    p.workspace, first ? s.zero() : s.one(), p.w, filter));
  });
  if (g.nhwc) filter_layout(*this, gw.dtype, krsc.p, gw.data, g, false);
}

}  // namespace mixp::cuda
