// 2-D max/average/adaptive-average pooling on the CPU, as plain OpenMP loops
// over either layout: pooling reads each input a few times and does almost
// no arithmetic, so loops that stream memory in order are as fast as a
// library call. NCHW runs one thread per (n, c) plane; NHWC keeps the
// channels innermost so the loops vectorise across them. This file holds
// the forward passes (max pooling's NCHW kernels: padded planes and tiled
// 2-wide windows; NHWC across channels) and the index dtype; the backward
// passes are in pool_backward.cpp, the windows in pool_windows.hpp.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/half_convert.hpp"
#include "cpu/pool_windows.hpp"
#include "cpu/simd.hpp"

namespace mixp {
namespace {

using namespace cpu::pool;

// A NaN in a window wins (the first one), as in PyTorch; otherwise the first
// maximum. (isunordered(v, v) is isnan without a libm call, so the loops
// vectorise with blends.)
// (Bitwise | and &: one expression without jumps for the selects.)
template <class A>
inline bool takes_max(A v, A m) {
  return (v > m) | (std::isunordered(v, v) & !std::isunordered(m, m));
}

// Max over every window of one plane, from a copy of the plane bordered by
// pad_h/pad_w cells of -inf (so every window lies whole inside it, and -inf
// never displaces a maximum). Output cells are short rows (8 cells after
// ResNet's stem), so the loops run over the whole plane's cells at once,
// one window offset (dh, dw) at a time, in row-major window order so that
// the first maximum (or NaN) wins: window o's cell (dh, dw) is at
// start[o] + dh * padded width + dw in the copy and at pos[o] + dh * w + dw
// in the plane. Each window holds a real cell (pad <= kernel / 2); its
// first one is reported when every value is -inf. P: positions' type.
template <class P>
struct PaddedWindows {
  std::vector<P> start, pos, first;
  explicit PaddedWindows(const Pool2dGeom &g) {
    const int64_t n = g.oh * g.ow, width = g.w + 2 * g.pad_w;
    start.resize(size_t(n)), pos.resize(size_t(n)), first.resize(size_t(n));
    for (int64_t i = 0; i < g.oh; ++i)
      for (int64_t j = 0; j < g.ow; ++j) {
        const int64_t o = i * g.ow + j, top = i * g.stride_h, left = j * g.stride_w;
        start[size_t(o)] = P(top * width + left);
        pos[size_t(o)] = P((top - g.pad_h) * g.w + left - g.pad_w);
        first[size_t(o)] = P((std::max(top, g.pad_h) - g.pad_h) * g.w + std::max(left, g.pad_w) - g.pad_w);
      }
  }
};

template <class A, class P>
MIXP_KERNEL_BODY inline void max_plane_padded(const Pool2dGeom &g, const PaddedWindows<P> &pw, const A *padded,
                                              A *__restrict m, P *__restrict at) {
  const int64_t n = g.oh * g.ow, width = g.w + 2 * g.pad_w;
  const P *__restrict start = pw.start.data(), *__restrict pos = pw.pos.data();
  for (int64_t o = 0; o < n; ++o) {
    m[o] = -std::numeric_limits<A>::infinity();
    at[o] = pw.first[size_t(o)];
  }
  for (int64_t dh = 0; dh < g.kh; ++dh)
    for (int64_t dw = 0; dw < g.kw; ++dw) {
      const A *__restrict cell = padded + dh * width + dw;
      const P shift = P(dh * g.w + dw);
#pragma GCC ivdep
      for (int64_t o = 0; o < n; ++o) {
        const A v = cell[start[o]];
        const bool t = takes_max(v, m[o]);
        m[o] = t ? v : m[o];
        at[o] = t ? pos[o] + shift : at[o];
      }
    }
}

// Copies plane p (h x w of T) into the middle of `padded` (its border was
// set to -inf once), widened to A.
template <class A, class T>
void fill_padded(const Pool2dGeom &g, const T *xp, A *padded) {
  const int64_t pw_width = g.w + 2 * g.pad_w;
  for (int64_t h = 0; h < g.h; ++h) {
    A *dst = padded + (h + g.pad_h) * pw_width + g.pad_w;
    if constexpr (cpu::is_half_v<T>) cpu::widen(xp + h * g.w, dst, g.w);
    else std::copy_n(xp + h * g.w, g.w, dst);
  }
}

// Max pooling over windows of two columns, stepping two, that tile the
// plane without padding (the 2x2 pooling of most CNNs; any kernel_h equal to
// stride_h). Output rows are as short as 7 or 14 cells there, too short for
// the vectoriser, so a plane goes through three loops that are each long or
// a whole number of vectors:
// - stage: the used rows, widened for half types and split into even and
//   odd columns (rows of ow cells, packed; one flat loop when no column is
//   left over);
// - compare: per output row, one vector loop of `lanes` (ow rounded up to
//   whole vectors) over the staged rows; lanes past ow read the next row or
//   the zeroed tail and write cells that the next row overwrites, or the
//   tail;
// - store: the plane's maxima rounded and its indices widened, one loop.
// Visiting order and the first-maximum/NaN rule are those of max_plane_padded.
struct Tiled2 {
  static constexpr int64_t kVector = 16;  // output cells per vector, at most (AVX-512, fp32)
  int64_t lanes = 0, staged = 0, outputs = 0;
  explicit Tiled2(const Pool2dGeom &g)
      : lanes((g.ow + kVector - 1) / kVector * kVector), staged(g.oh * g.kh * g.ow), outputs(g.oh * g.ow) {}
  static bool applies(const Pool2dGeom &g) {
    return g.kind == PoolKind::Max && g.kw == 2 && g.stride_w == 2 && g.kh == g.stride_h && g.pad_h == 0 &&
           g.pad_w == 0 && g.oh * g.kh <= g.h && g.ow * 2 <= g.w &&
           g.h * g.w <= std::numeric_limits<int32_t>::max();  // in-plane indices fit the int32 lanes
  }
};

// One thread's buffers, each with a tail of `lanes` for the last row's
// padding lanes.
template <class A>
struct Tiled2Buffers {
  std::vector<A> even, odd, m;
  std::vector<int32_t> arg;
  std::vector<float> plane, out;  // a half plane widened, its maxima before rounding
  Tiled2Buffers(const Tiled2 &t, bool half, int64_t in_sz)
      : even(size_t(t.staged + t.lanes), A(0)), odd(even.size(), A(0)), m(size_t(t.outputs + t.lanes)),
        arg(m.size()), plane(half ? size_t(in_sz) : 0), out(half ? size_t(t.outputs) : 0) {}
};

template <class T, class I>
MIXP_KERNEL_BODY inline void max_plane_tiled2(const Pool2dGeom &g, const Tiled2 &t, const T *xp, T *y, I *idx,
                                              Tiled2Buffers<acc_t<T>> &b) {
  using A = acc_t<T>;
  const int64_t width = g.w, kh = g.kh, ow = g.ow;
  A *__restrict even = b.even.data(), *__restrict odd = b.odd.data(), *__restrict mx = b.m.data();
  int32_t *__restrict ax = b.arg.data();
  if (width == 2 * ow) {
    const int64_t pairs = t.staged;
    for (int64_t q = 0; q < pairs; ++q) {
      even[q] = load<T>(xp[2 * q]);
      odd[q] = load<T>(xp[2 * q + 1]);
    }
  } else {
    for (int64_t r = 0; r < g.oh * kh; ++r)
      for (int64_t j = 0; j < ow; ++j) {
        even[r * ow + j] = load<T>(xp[r * width + 2 * j]);
        odd[r * ow + j] = load<T>(xp[r * width + 2 * j + 1]);
      }
  }
  const int32_t lanes = int32_t(t.lanes);  // int32 lanes beside the fp32 ones: one vector of each
  for (int64_t i = 0; i < g.oh; ++i) {
    A *__restrict m_row = mx + i * ow;
    int32_t *__restrict a_row = ax + i * ow;
    const int32_t first = int32_t(i * kh * width);
    // (The buffers are distinct: ivdep spares each short loop a runtime
    // alias check.)
#pragma GCC ivdep
    for (int32_t j = 0; j < lanes; ++j) {
      m_row[j] = -std::numeric_limits<A>::infinity();
      a_row[j] = first + 2 * j;
    }
    for (int64_t dh = 0; dh < kh; ++dh)
      for (int32_t dw = 0; dw < 2; ++dw) {  // row-major within the window
        const A *__restrict col = (dw ? odd : even) + (i * kh + dh) * ow;
        const int32_t base = int32_t((i * kh + dh) * width) + dw;
#pragma GCC ivdep
        for (int32_t j = 0; j < lanes; ++j) {
          const A v = col[j];
          const bool take = takes_max(v, m_row[j]);
          m_row[j] = take ? v : m_row[j];
          a_row[j] = take ? base + 2 * j : a_row[j];
        }
      }
  }
  const int64_t outputs = t.outputs;
  for (int64_t o = 0; o < outputs; ++o) {
    y[o] = store<T>(mx[o]);
    idx[o] = ax[o];
  }
}

template <class T, class I>
void forward_nchw(const Pool2dGeom &g, const T *x, T *y, I *idx) {
  using A = acc_t<T>;
  const int64_t planes = g.n * g.c, in_sz = g.h * g.w, out_sz = g.oh * g.ow;
  // Half types: max pooling widens each plane first (one vectorised pass;
  // the maximum of the widened values is the widened maximum, exactly), so
  // the strided window loads read fp32.
  constexpr bool widen_first = !std::is_same_v<A, T>;
  if (Tiled2::applies(g)) {
    const Tiled2 t(g);
#pragma omp parallel
    {
      Tiled2Buffers<A> buffers(t, widen_first, in_sz);
#pragma omp for schedule(static)
      for (int64_t p = 0; p < planes; ++p) {
        if constexpr (widen_first) {  // F16C for f16 (half_convert.hpp)
          float *plane = buffers.plane.data(), *out = buffers.out.data();
          cpu::widen(x + p * in_sz, plane, in_sz);
          cpu::run_kernel([&]() MIXP_KERNEL_BODY {
            max_plane_tiled2(g, t, static_cast<const float *>(plane), out, idx + p * out_sz, buffers);
          });
          cpu::narrow(out, y + p * out_sz, out_sz);
        } else {
          cpu::run_kernel([&]() MIXP_KERNEL_BODY {
            max_plane_tiled2(g, t, x + p * in_sz, y + p * out_sz, idx + p * out_sz, buffers);
          });
        }
      }
    }
    return;
  }
  if (g.kind == PoolKind::Max) {
    // Positions in int32 beside fp32 maxima where they fit, so that the
    // selects stay in one register width.
    using P = std::conditional_t<std::is_same_v<I, int32_t>, int32_t, int64_t>;
    const int64_t padded_sz = (g.h + 2 * g.pad_h) * (g.w + 2 * g.pad_w);
    const PaddedWindows<P> pw(g);
#pragma omp parallel
    {
      std::vector<A> padded(static_cast<size_t>(padded_sz), -std::numeric_limits<A>::infinity());
      std::vector<A> m(static_cast<size_t>(out_sz));
      std::vector<P> at(static_cast<size_t>(out_sz));
#pragma omp for schedule(static)
      for (int64_t p = 0; p < planes; ++p) {
        fill_padded(g, x + p * in_sz, padded.data());
        cpu::run_kernel([&]() MIXP_KERNEL_BODY { max_plane_padded(g, pw, padded.data(), m.data(), at.data()); });
        T *yp = y + p * out_sz;
        I *ip = idx + p * out_sz;
        if constexpr (cpu::is_half_v<T>) cpu::narrow(m.data(), yp, out_sz);
        else std::copy(m.begin(), m.end(), yp);
        std::copy(at.begin(), at.end(), ip);
      }
    }
    return;
  }
  const Windows win(g);
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      const T *xp = x + p * in_sz;
      cpu::run_kernel([&]() MIXP_KERNEL_BODY {
        for (int64_t i = 0; i < g.oh; ++i) {
          const int64_t o = p * out_sz + i * g.ow;
          const Window &r = win.rows[size_t(i)];
          for (int64_t j = 0; j < g.ow; ++j) {
            const Window &c = win.cols[size_t(j)];
            A s = 0;
            for (int64_t h = r.h0; h < r.h1; ++h)
              for (int64_t w = c.w0; w < c.w1; ++w) s += load<T>(xp[h * g.w + w]);
            y[o + j] = store<T>(A(s / A(win.at(g, i, j).div)));
          }
        }
      });
    }
  }
}

// The maxima m[l] and first positions at[l] of channels l < n over window
// wd of an NHWC image (x: its first channel of interest, C channels per
// cell), in window order under the first-maximum/NaN rule. n is a
// compile-time count (std::integral_constant) for whole vectors, whose
// accumulators then stay in registers, or the run-time channel count.
template <class T, class A, class P, class N>
MIXP_KERNEL_BODY inline void window_max(const Pool2dGeom &g, const Window &wd, const T *x, int64_t C, N n,
                                        A *__restrict m, P *__restrict at) {
  const P first = P(wd.h0 * g.w + wd.w0);
  for (int64_t l = 0; l < int64_t(n); ++l) {
    m[l] = -std::numeric_limits<A>::infinity();
    at[l] = first;
  }
  for (int64_t h = wd.h0; h < wd.h1; ++h)
    for (int64_t w = wd.w0; w < wd.w1; ++w) {
      const T *__restrict xp = x + (h * g.w + w) * C;
      const P pos = P(h * g.w + w);
#pragma omp simd
      for (int64_t l = 0; l < int64_t(n); ++l) {
        const A v = load<T>(xp[l]);
        const bool t = takes_max(v, m[l]);
        m[l] = t ? v : m[l];
        at[l] = t ? pos : at[l];
      }
    }
}

// NHWC: an output cell's C channels are contiguous, and so are its window
// cells' (each at (h * W + w) * C), so every loop runs across the channels,
// in vectors, with the same first-maximum/NaN rule and window order as the
// NCHW loops. One output row per kernel call; the window tables are built
// once per call.
template <class T, class I>
void forward_nhwc(const Pool2dGeom &g, const T *x, T *y, I *idx) {
  using A = acc_t<T>;
  // The positions beside float maxima in int32 where the indices are
  // (pool_index_dtype), so that the selects stay in one register width.
  using P = std::conditional_t<std::is_same_v<I, int32_t>, int32_t, int64_t>;
  constexpr int kLanes = 16;  // one AVX-512 vector of fp32
  const int64_t C = g.c;
  const Windows win(g);
#pragma omp parallel
  {
    std::vector<A> acc(static_cast<size_t>(C));
    std::vector<P> arg(static_cast<size_t>(C));
#pragma omp for schedule(static) collapse(2)
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t i = 0; i < g.oh; ++i)
        cpu::run_kernel([&]() MIXP_KERNEL_BODY {
          A *__restrict m = acc.data();
          P *__restrict at = arg.data();
          const T *xn = x + n * g.h * g.w * C;
          for (int64_t j = 0; j < g.ow; ++j) {
            const Window wd = win.at(g, i, j);
            const int64_t o = ((n * g.oh + i) * g.ow + j) * C;
            if (g.kind == PoolKind::Max && C % kLanes == 0) {
              // Whole vectors of channels: each window's maxima stay in
              // registers while its cells are read.
              for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
                A mv[kLanes];
                P av[kLanes];
                window_max(g, wd, xn + c0, C, std::integral_constant<int64_t, kLanes>(), mv, av);
                for (int l = 0; l < kLanes; ++l) {
                  y[o + c0 + l] = store<T>(mv[l]);
                  idx[o + c0 + l] = I(av[l]);
                }
              }
            } else if (g.kind == PoolKind::Max) {
              window_max(g, wd, xn, C, C, m, at);
              for (int64_t c = 0; c < C; ++c) {
                y[o + c] = store<T>(m[c]);
                idx[o + c] = I(at[c]);
              }
            } else {
              for (int64_t c = 0; c < C; ++c) m[c] = 0;
              for (int64_t h = wd.h0; h < wd.h1; ++h)
                for (int64_t w = wd.w0; w < wd.w1; ++w) {
                  const T *__restrict xp = xn + (h * g.w + w) * C;
                  for (int64_t c = 0; c < C; ++c) m[c] += load<T>(xp[c]);
                }
              const A div = A(wd.div);
              for (int64_t c = 0; c < C; ++c) y[o + c] = store<T>(A(m[c] / div));
            }
          }
        });
  }
}

}  // namespace

DType CpuBackend::pool_index_dtype(const Pool2dGeom &g) const noexcept {
  // Half the bytes of I64 (the indices were as large as a bf16 input).
  // Positions in the padded copy (max_plane_padded) must fit too.
  const int64_t padded = (g.h + 2 * g.pad_h) * (g.w + 2 * g.pad_w);
  return padded <= std::numeric_limits<int32_t>::max() ? MIXP_I32 : MIXP_I64;
}

void CpuBackend::pool2d(const Pool2dGeom &g, const View &x, const View &y, const View *indices) {
  if (g.n * g.c * g.oh * g.ow == 0) return;
  if (g.kind == PoolKind::Max && !indices) fail(MIXP_ERR_INTERNAL, "pool2d: max pooling needs an indices buffer");
  with_indices<void>(indices, [&](auto *idx) {
    dispatch_float(x.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T *xp = static_cast<const T *>(x.data);
      T *yp = static_cast<T *>(y.data);
      if (g.nhwc) forward_nhwc<T>(g, xp, yp, idx);
      else forward_nchw<T>(g, xp, yp, idx);
    });
  });
}

}  // namespace mixp
