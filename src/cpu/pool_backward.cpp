// The backward passes of 2-D max/average/adaptive-average pooling on the
// CPU (the forward passes are in pool_forward.cpp): they scatter into a
// per-plane (per-image for NHWC) fp32/fp64 buffer owned by one thread, in a
// fixed order, so results are deterministic and half types round once.
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/half_convert.hpp"
#include "cpu/pool_windows.hpp"

namespace mixp {
namespace {

using namespace cpu::pool;

// A gradient buffer's n sums rounded into gx (half types in vector loops).
template <class T>
void store_plane(const acc_t<T> *buf, T *gx, int64_t n) {
  if constexpr (cpu::is_half_v<T>) cpu::narrow(buf, gx, n);
  else std::copy(buf, buf + n, gx);
}

template <class T, class I>
void backward_nchw(const Pool2dGeom &g, const T *gy, const I *idx, T *gx) {
  using A = acc_t<T>;
  const int64_t planes = g.n * g.c, in_sz = g.h * g.w, out_sz = g.oh * g.ow;
  const Windows win(g);
  if (g.kind == PoolKind::Max && g.stride_h >= g.kh && g.stride_w >= g.kw) {
    // Windows that do not overlap: each input cell receives at most one
    // gradient, so it is stored as it is, with no accumulation buffer.
    // (+0 turns a -0 gradient into the +0 that 0 + (-0) gives elsewhere.)
    if constexpr (cpu::is_half_v<T>) {
      // Through a float plane: widened and rounded in vector loops (F16C
      // for f16) instead of a conversion per scattered element.
#pragma omp parallel
      {
        std::vector<float> g32(static_cast<size_t>(out_sz)), x32(static_cast<size_t>(in_sz));
#pragma omp for schedule(static)
        for (int64_t p = 0; p < planes; ++p) {
          const I *ip = idx + p * out_sz;
          cpu::widen(gy + p * out_sz, g32.data(), out_sz);
          std::fill(x32.begin(), x32.end(), 0.0f);
          for (int64_t o = 0; o < out_sz; ++o) x32[size_t(ip[o])] = g32[size_t(o)] + 0.0f;
          cpu::narrow(x32.data(), gx + p * in_sz, in_sz);
        }
      }
      return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      T *xp = gx + p * in_sz;
      const T *gp = gy + p * out_sz;
      const I *ip = idx + p * out_sz;
      std::fill(xp, xp + in_sz, store<T>(A(0)));
      for (int64_t o = 0; o < out_sz; ++o) xp[ip[o]] = store<T>(A(load<T>(gp[o]) + A(0)));
    }
    return;
  }
#pragma omp parallel
  {
    std::vector<A> buf(static_cast<size_t>(in_sz));
#pragma omp for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      std::fill(buf.begin(), buf.end(), A(0));
      const T *gp = gy + p * out_sz;
      for (int64_t i = 0; i < g.oh; ++i)
        for (int64_t j = 0; j < g.ow; ++j) {
          const A v = load<T>(gp[i * g.ow + j]);
          if (g.kind == PoolKind::Max) {
            buf[size_t(idx[p * out_sz + i * g.ow + j])] += v;
            continue;
          }
          const Window wd = win.at(g, i, j);
          const A share = v / A(wd.div);
          for (int64_t h = wd.h0; h < wd.h1; ++h)
            for (int64_t w = wd.w0; w < wd.w1; ++w) buf[size_t(h * g.w + w)] += share;
        }
      store_plane(buf.data(), gx + p * in_sz, in_sz);
    }
  }
}

template <class T, class I>
void backward_nhwc(const Pool2dGeom &g, const T *gy, const I *idx, T *gx) {
  using A = acc_t<T>;
  const int64_t C = g.c, in_sz = g.h * g.w * C, out_sz = g.oh * g.ow * C;
  if (g.kind == PoolKind::Max && g.stride_h >= g.kh && g.stride_w >= g.kw) {
    // Windows that do not overlap: each input cell receives at most one
    // gradient, stored as it is (+0, as backward_nchw).
    if constexpr (cpu::is_half_v<T>) {
      // Through float images, widened and rounded in vector loops, as
      // backward_nchw does: no conversion per scattered element.
#pragma omp parallel
      {
        std::vector<float> g32(static_cast<size_t>(out_sz)), x32(static_cast<size_t>(in_sz));
#pragma omp for schedule(static)
        for (int64_t n = 0; n < g.n; ++n) {
          const I *ip = idx + n * out_sz;
          cpu::widen(gy + n * out_sz, g32.data(), out_sz);
          std::fill(x32.begin(), x32.end(), 0.0f);
          for (int64_t o = 0; o < out_sz; o += C)
            for (int64_t c = 0; c < C; ++c) x32[size_t(ip[o + c] * C + c)] = g32[size_t(o + c)] + 0.0f;
          cpu::narrow(x32.data(), gx + n * in_sz, in_sz);
        }
      }
    } else {
#pragma omp parallel for schedule(static)
      for (int64_t n = 0; n < g.n; ++n) {
        T *xp = gx + n * in_sz;
        const T *gp = gy + n * out_sz;
        const I *ip = idx + n * out_sz;
        std::fill(xp, xp + in_sz, T(0));
        for (int64_t o = 0; o < out_sz; o += C)
          for (int64_t c = 0; c < C; ++c) xp[ip[o + c] * C + c] = gp[o + c] + T(0);
      }
    }
    return;
  }
#pragma omp parallel
  {
    std::vector<A> buf(static_cast<size_t>(in_sz));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < g.n; ++n) {
      std::fill(buf.begin(), buf.end(), A(0));
      const T *gp = gy + n * out_sz;
      for (int64_t i = 0; i < g.oh; ++i)
        for (int64_t j = 0; j < g.ow; ++j) {
          const int64_t o = (i * g.ow + j) * C;
          if (g.kind == PoolKind::Max) {
            const I *ip = idx + n * out_sz + o;
            for (int64_t c = 0; c < C; ++c) buf[size_t(ip[c] * C + c)] += load<T>(gp[o + c]);
            continue;
          }
          const Window wd = window(g, i, j);
          const A div = A(wd.div);
          for (int64_t h = wd.h0; h < wd.h1; ++h)
            for (int64_t w = wd.w0; w < wd.w1; ++w) {
              A *bp = buf.data() + (h * g.w + w) * C;
              for (int64_t c = 0; c < C; ++c) bp[c] += load<T>(gp[o + c]) / div;
            }
        }
      store_plane(buf.data(), gx + n * in_sz, in_sz);
    }
  }
}

}  // namespace

void CpuBackend::pool2d_backward(const Pool2dGeom &g, const View &gy, const View *indices, const View &gx) {
  if (g.n * g.c * g.h * g.w == 0) return;
  if (g.kind == PoolKind::Max && !indices)
    fail(MIXP_ERR_INTERNAL, "pool2d_backward: max pooling needs its indices");
  with_indices<const void>(indices, [&](auto *idx) {
    dispatch_float(gy.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T *gp = static_cast<const T *>(gy.data);
      T *xp = static_cast<T *>(gx.data);
      if (g.nhwc) backward_nhwc<T>(g, gp, idx, xp);
      else backward_nchw<T>(g, gp, idx, xp);
    });
  });
}

}  // namespace mixp
