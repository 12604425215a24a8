// 2-D convolution on the CPU. F32 and BF16 run oneDNN's direct convolution
// (forward, backward data, backward weights; BF16 on AMX with fp32
// accumulation), one primitive per exact geometry. The primitives pick their
// own memory formats ("any"); the user's NCHW/NHWC buffers are reordered in
// and out when the chosen format differs. F16 (oneDNN 2.6 has no f16
// convolution) and BF16 on CPUs without a bf16 unit are widened to fp32,
// convolved, and rounded once. F64 uses plain loops: it serves gradient
// checks, so it favours obviousness over speed.
//
// This file holds the entry points and the choice of path, and the paths
// that are not oneDNN's convolution: the F64 loops, the single-tap and
// im2col matrix products. The oneDNN path and the fp32 widening are in
// conv_dnnl.cpp, the cache they share in conv_paths.hpp.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "cpu/conv_paths.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/precision_paths.hpp"

namespace mixp {
namespace {

using cpu::ConvCache;
using namespace cpu::conv;

// ---- plain loops (F64) ------------------------------------------------------------

// Element offsets of an activation tensor in either layout.
struct Act {
  int64_t sn, sc, sh, sw;
  Act(int64_t c, int64_t h, int64_t w, bool nhwc)
      : sn(c * h * w), sc(nhwc ? 1 : h * w), sh(nhwc ? w * c : w), sw(nhwc ? c : 1) {}
  int64_t at(int64_t n, int64_t c, int64_t h, int64_t w) const { return n * sn + c * sc + h * sh + w * sw; }
};

template <class T>
void fwd_loops(const Conv2dGeom &g, const T *x, const T *w, const T *b, T *y) {
  using A = acc_t<T>;
  const Act xa(g.c_in, g.h, g.w, g.nhwc), ya(g.c_out, g.oh, g.ow, g.nhwc);
  const int64_t cig = g.c_in / g.groups, cog = g.c_out / g.groups;
#pragma omp parallel for schedule(static) collapse(2)
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oc = 0; oc < g.c_out; ++oc) {
      const int64_t c0 = oc / cog * cig;
      for (int64_t oh = 0; oh < g.oh; ++oh)
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          A acc = b ? load<T>(b[oc]) : A(0);
          for (int64_t ic = 0; ic < cig; ++ic)
            for (int64_t i = 0; i < g.kh; ++i) {
              const int64_t ih = oh * g.stride_h - g.pad_h + i * g.dil_h;
              if (ih < 0 || ih >= g.h) continue;
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t iw = ow * g.stride_w - g.pad_w + j * g.dil_w;
                if (iw < 0 || iw >= g.w) continue;
                acc += load<T>(x[xa.at(n, c0 + ic, ih, iw)]) *
                       load<T>(w[((oc * cig + ic) * g.kh + i) * g.kw + j]);
              }
            }
          y[ya.at(n, oc, oh, ow)] = store<T>(acc);
        }
    }
}

// Gathers each input gradient from the outputs its element fed, so that
// every element is written by one thread in a fixed order.
template <class T>
void bwd_data_loops(const Conv2dGeom &g, const T *gy, const T *w, T *gx) {
  using A = acc_t<T>;
  const Act xa(g.c_in, g.h, g.w, g.nhwc), ya(g.c_out, g.oh, g.ow, g.nhwc);
  const int64_t cig = g.c_in / g.groups, cog = g.c_out / g.groups;
#pragma omp parallel for schedule(static) collapse(2)
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c_in; ++c) {
      const int64_t grp = c / cig, ic = c % cig;
      for (int64_t ih = 0; ih < g.h; ++ih)
        for (int64_t iw = 0; iw < g.w; ++iw) {
          A acc = 0;
          for (int64_t oc = grp * cog; oc < (grp + 1) * cog; ++oc)
            for (int64_t i = 0; i < g.kh; ++i) {
              const int64_t th = ih + g.pad_h - i * g.dil_h;
              if (th < 0 || th % g.stride_h != 0 || th / g.stride_h >= g.oh) continue;
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t tw = iw + g.pad_w - j * g.dil_w;
                if (tw < 0 || tw % g.stride_w != 0 || tw / g.stride_w >= g.ow) continue;
                acc += load<T>(gy[ya.at(n, oc, th / g.stride_h, tw / g.stride_w)]) *
                       load<T>(w[((oc * cig + ic) * g.kh + i) * g.kw + j]);
              }
            }
          gx[xa.at(n, c, ih, iw)] = store<T>(acc);
        }
    }
}

template <class T>
void bwd_weights_loops(const Conv2dGeom &g, const T *x, const T *gy, T *gw) {
  using A = acc_t<T>;
  const Act xa(g.c_in, g.h, g.w, g.nhwc), ya(g.c_out, g.oh, g.ow, g.nhwc);
  const int64_t cig = g.c_in / g.groups, cog = g.c_out / g.groups;
#pragma omp parallel for schedule(static) collapse(2)
  for (int64_t oc = 0; oc < g.c_out; ++oc)
    for (int64_t ic = 0; ic < cig; ++ic) {
      const int64_t c = oc / cog * cig + ic;
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          A acc = 0;
          for (int64_t n = 0; n < g.n; ++n)
            for (int64_t oh = 0; oh < g.oh; ++oh) {
              const int64_t ih = oh * g.stride_h - g.pad_h + i * g.dil_h;
              if (ih < 0 || ih >= g.h) continue;
              for (int64_t ow = 0; ow < g.ow; ++ow) {
                const int64_t iw = ow * g.stride_w - g.pad_w + j * g.dil_w;
                if (iw < 0 || iw >= g.w) continue;
                acc += load<T>(gy[ya.at(n, oc, oh, ow)]) * load<T>(x[xa.at(n, c, ih, iw)]);
              }
            }
          gw[((oc * cig + ic) * g.kh + i) * g.kw + j] = store<T>(acc);
        }
    }
}

// A convolution of a 1x1 input to a 1x1 output (a 3x3, padding-1 layer
// after the feature map has shrunk to one pixel, as in ResNet's last stage on
// 32x32 images) reads one tap of its kernel: the rest meets padding. It is a
// matrix product with that tap, [N, C_in] x [C_in, C_out]; run as one, not as
// a convolution that multiplies the padding (oneDNN's took ~9x the
// product's time there). The tap, strided by kh*kw in the weight, is
// gathered into (or, for the weight gradient, scattered from) a contiguous
// [C_out, C_in] matrix.
struct SingleTap {
  int64_t r = -1, s = -1;  // the kernel cell that meets input pixel (0, 0)
  explicit SingleTap(const Conv2dGeom &g) {
    if (g.h != 1 || g.w != 1 || g.oh != 1 || g.ow != 1 || g.groups != 1) return;
    if (g.pad_h % g.dil_h || g.pad_w % g.dil_w) return;
    if (g.pad_h / g.dil_h >= g.kh || g.pad_w / g.dil_w >= g.kw) return;
    r = g.pad_h / g.dil_h;
    s = g.pad_w / g.dil_w;
  }
  bool applies(DType dtype) const { return r >= 0 && dtype != MIXP_F64; }
  int64_t at(const Conv2dGeom &g, int64_t oc, int64_t ic) const {
    return ((oc * g.c_in + ic) * g.kh + r) * g.kw + s;
  }
};

template <class E>
void gather_tap(const Conv2dGeom &g, const SingleTap &t, const E *w, E *tap) {
#pragma omp parallel for schedule(static) if (g.c_out * g.c_in > (1 << 16))
  for (int64_t oc = 0; oc < g.c_out; ++oc)
    for (int64_t ic = 0; ic < g.c_in; ++ic) tap[oc * g.c_in + ic] = w[t.at(g, oc, ic)];
}

template <class E>
void scatter_tap(const Conv2dGeom &g, const SingleTap &t, const E *tap, E *w) {
  const int64_t cells = g.kh * g.kw;
#pragma omp parallel for schedule(static) if (g.c_out * g.c_in > (1 << 16))
  for (int64_t oc = 0; oc < g.c_out; ++oc)
    for (int64_t ic = 0; ic < g.c_in; ++ic) {
      E *cell = w + (oc * g.c_in + ic) * cells;
      std::fill(cell, cell + cells, E(0));  // all-zero bits: +0 in every float dtype
      cell[t.r * g.kw + t.s] = tap[oc * g.c_in + ic];
    }
}

void run_single_tap(CpuBackend &be, ConvCache &c, Dir dir, const Conv2dGeom &g, const SingleTap &t, DType dtype,
                    const void *in0, const void *in1, const void *bias, void *out) {
  const int64_t n = g.n, ci = g.c_in, co = g.c_out;
  const size_t bytes = size_t(co * ci) * dtype_size(dtype);
  void *tap = c.widened[0].get((bytes + sizeof(float) - 1) / sizeof(float));
  auto on_elements = [&](auto f) {
    if (dtype_size(dtype) == 2) f(uint16_t());
    else f(uint32_t());
  };
  GemmArgs a;
  a.dtype = dtype;
  if (dir == Dir::BwdWeights) {
    // gw[oc, ic] = sum over the batch of gy[b, oc] * x[b, ic]
    a.m = co, a.n = ci, a.k = n;
    a.a = in1, a.a_rs = 1, a.a_cs = co;
    a.b = in0, a.b_rs = ci, a.b_cs = 1;
    a.c = tap, a.c_rs = ci;
    be.gemm(a);
    on_elements([&](auto e) {
      using E = decltype(e);
      scatter_tap(g, t, static_cast<const E *>(tap), static_cast<E *>(out));
    });
    return;
  }
  on_elements([&](auto e) {
    using E = decltype(e);
    gather_tap(g, t, static_cast<const E *>(in1), static_cast<E *>(tap));
  });
  a.b = tap;
  if (dir == Dir::Fwd) {  // y[b, oc] = sum_ic x[b, ic] * tap[oc, ic] + bias[oc]
    a.m = n, a.n = co, a.k = ci;
    a.a = in0, a.a_rs = ci, a.a_cs = 1;
    a.b_rs = 1, a.b_cs = ci;
    a.c = out, a.c_rs = co;
    a.bias = bias;
  } else {  // gx[b, ic] = sum_oc gy[b, oc] * tap[oc, ic]
    a.m = n, a.n = ci, a.k = co;
    a.a = in0, a.a_rs = co, a.a_cs = 1;
    a.b_rs = ci, a.b_cs = 1;
    a.c = out, a.c_rs = ci;
  }
  be.gemm(a);
}

// Weight gradients of bf16 convolutions over small planes (16 output
// pixels or fewer: ResNet's last stages on 32x32 images) as one matrix
// product over im2col rows, gw[oc, (c, r, s)] = sum over (image, pixel) of
// gy[oc] * x at the pixel's cell (r, s). oneDNN's AMX kernels ran these at
// ~0.1 TFLOP/s (1.6 ms for 256 -> 256 channels on 2x2 pixels, batch 32),
// several times below its bf16 matrix product on the same operands.
constexpr int64_t kSmallPlane = 16;

bool im2col_weights_applies(const Conv2dGeom &g, DType dtype) {
  return dtype == MIXP_BF16 && cpu::precision_paths().bf16_faster && g.groups == 1 && g.oh * g.ow <= kSmallPlane;
}

// col[(image, pixel), (c, r, s)]: the input under cell (r, s) of the kernel
// placed at the pixel, or zero in the padding. E holds the elements' bits.
template <class E>
void im2col(const Conv2dGeom &g, const E *x, E *col) {
  const int64_t ckk = g.c_in * g.kh * g.kw, cells = g.kh * g.kw, pixels = g.oh * g.ow;
  // Channel c of the input at (ih, iw) of image n is at first + c * step.
  const int64_t step = g.nhwc ? 1 : g.h * g.w;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t p = 0; p < pixels; ++p) {
      E *row = col + (n * pixels + p) * ckk;
      const int64_t oi = p / g.ow, oj = p % g.ow;
      // One kernel cell at a time, its bounds check done once for all
      // channels.
      for (int64_t r = 0; r < g.kh; ++r)
        for (int64_t s = 0; s < g.kw; ++s) {
          const int64_t ih = oi * g.stride_h - g.pad_h + r * g.dil_h, iw = oj * g.stride_w - g.pad_w + s * g.dil_w;
          E *dst = row + r * g.kw + s;
          if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) {
            for (int64_t ch = 0; ch < g.c_in; ++ch) dst[ch * cells] = E(0);
            continue;
          }
          const E *src = x + (g.nhwc ? ((n * g.h + ih) * g.w + iw) * g.c_in : n * g.c_in * g.h * g.w + ih * g.w + iw);
          for (int64_t ch = 0; ch < g.c_in; ++ch) dst[ch * cells] = src[ch * step];
        }
    }
}

void run_im2col_weights(CpuBackend &be, ConvCache &c, const Conv2dGeom &g, const void *x, const void *gy,
                        void *gw) {
  using E = uint16_t;  // bf16 bits
  const int64_t ckk = g.c_in * g.kh * g.kw, rows = g.n * g.oh * g.ow, pixels = g.oh * g.ow;
  E *col = reinterpret_cast<E *>(c.widened[1].get(size_t(rows * ckk + 1) / 2));
  im2col(g, static_cast<const E *>(x), col);
  GemmArgs a;
  a.dtype = MIXP_BF16;
  a.m = g.c_out, a.n = ckk, a.k = rows;
  if (g.nhwc) {  // gy is [(image, pixel), oc] already
    a.a = gy, a.a_rs = 1, a.a_cs = g.c_out;
  } else {  // [image, oc, pixel] -> [oc, (image, pixel)]
    E *t = reinterpret_cast<E *>(c.widened[2].get(size_t(rows * g.c_out + 1) / 2));
    const E *src = static_cast<const E *>(gy);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t oc = 0; oc < g.c_out; ++oc)
        std::copy_n(src + (n * g.c_out + oc) * pixels, pixels, t + oc * rows + n * pixels);
    a.a = t, a.a_rs = rows, a.a_cs = 1;
  }
  a.b = col, a.b_rs = ckk, a.b_cs = 1;
  a.c = gw, a.c_rs = ckk;
  be.gemm(a);
}

void run(CpuBackend &be, ConvCache &c, Dir dir, const Conv2dGeom &g, DType dtype, const void *in0, const void *in1,
         const void *bias, void *out) {
  if (const SingleTap t(g); t.applies(dtype)) {
    run_single_tap(be, c, dir, g, t, dtype, in0, in1, bias, out);
    return;
  }
  if (dir == Dir::BwdWeights && im2col_weights_applies(g, dtype)) {
    run_im2col_weights(be, c, g, in0, in1, out);
    return;
  }
  switch (dtype) {
    case MIXP_F64: {
      const auto *a = static_cast<const double *>(in0);
      const auto *b = static_cast<const double *>(in1);
      auto *o = static_cast<double *>(out);
      if (dir == Dir::Fwd) fwd_loops<double>(g, a, b, static_cast<const double *>(bias), o);
      else if (dir == Dir::BwdData) bwd_data_loops<double>(g, a, b, o);
      else bwd_weights_loops<double>(g, a, b, o);
      return;
    }
    case MIXP_F32:
      run_dnnl(be, c, dir, g, MIXP_F32, in0, in1, static_cast<const float *>(bias), out);
      return;
    case MIXP_F16:
      run_widened<f16>(be, c, dir, g, in0, in1, bias, out);
      return;
    case MIXP_BF16: {
      // oneDNN takes an fp32 bias beside bf16 data.
      const float *bf = bias ? widen<bf16>(bias, g.c_out, c.widened[3]) : nullptr;
      if (!run_dnnl(be, c, dir, g, MIXP_BF16, in0, in1, bf, out))
        run_widened<bf16>(be, c, dir, g, in0, in1, bias, out);
      return;
    }
    default: fail(MIXP_ERR_DTYPE, "conv2d: unsupported dtype ", dtype_name(dtype));
  }
}

}  // namespace

// The cache lives on the backend (one per session) so that sessions running
// on different threads never share primitives.
cpu::ConvCache &CpuBackend::conv_cache() {
  if (!conv_cache_) conv_cache_ = std::make_shared<cpu::ConvCache>();
  return *conv_cache_;
}

void CpuBackend::conv2d(const Conv2dGeom &g, const View &x, const View &w, const View *bias, const View &y) {
  if (y_numel(g) == 0) return;
  run(*this, conv_cache(), Dir::Fwd, g, x.dtype, x.data, w.data, bias ? bias->data : nullptr, y.data);
}

void CpuBackend::conv2d_backward_data(const Conv2dGeom &g, const View &gy, const View &w, const View &gx) {
  if (x_numel(g) == 0) return;
  if (y_numel(g) == 0 || w_numel(g) == 0) {
    fill(gx, 0.0);
    return;
  }
  run(*this, conv_cache(), Dir::BwdData, g, gy.dtype, gy.data, w.data, nullptr, gx.data);
}

void CpuBackend::conv2d_backward_weights(const Conv2dGeom &g, const View &x, const View &gy, const View &gw) {
  if (w_numel(g) == 0) return;
  if (y_numel(g) == 0 || x_numel(g) == 0) {
    fill(gw, 0.0);
    return;
  }
  run(*this, conv_cache(), Dir::BwdWeights, g, x.dtype, x.data, gy.data, nullptr, gw.data);
}


}  // namespace mixp
